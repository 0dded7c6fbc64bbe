//! The HyperLogLog script: `PFADD`, `PFCOUNT` (one key, its cached
//! cardinality written back; several keys), `PFMERGE` (missing, sparse
//! and dense sources and destinations, the destination as a source),
//! `PFDEBUG` (every subcommand and its errors), the sparse → dense
//! promotion at Redis's default and a `CONFIG SET hll-sparse-max-bytes`,
//! expiries kept by every write, `WRONGTYPE` on other kinds and on
//! strings that are not HLLs, and corrupt values (broken by `APPEND`,
//! `SETRANGE`, or `SET` from random bytes after a valid header), which
//! must answer Redis's errors. Plus `COMMAND GETKEYS` of each command.
//!
//! Raw values are read back with `GET` after each kind of write, so the
//! bytes (opcodes, header, cached cardinality) are compared with
//! Redis's. Elements and corruptions come from a fixed pseudo-random
//! sequence, so the script is the same on every run.

use super::{c, ck, words, Check, Step};

/// A fixed pseudo-random sequence (Knuth's MMIX LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A command from byte arguments, compared exactly.
fn cb(args: Vec<Vec<u8>>) -> Step {
    Step::Cmd(args, Check::Exact)
}

/// `PFADD key` with elements `prefix0..prefixN` from `from`.
fn pfadd_range(key: &str, prefix: &str, from: usize, n: usize) -> Step {
    let mut args = words(&format!("PFADD {key}"));
    args.extend((from..from + n).map(|i| format!("{prefix}{i}").into_bytes()));
    cb(args)
}

pub fn hll_script() -> Vec<Step> {
    let mut s = vec![c("FLUSHALL")];
    s.extend(basics());
    s.extend(promotion());
    s.extend(merge_and_union());
    s.extend(debug());
    s.extend(types_and_expiry());
    s.extend(corrupt());
    s.extend(fuzz());
    s
}

fn basics() -> Vec<Step> {
    vec![
        c("PFADD"),
        c("PFCOUNT"),
        c("PFMERGE"),
        c("PFCOUNT nokey"),
        c("PFCOUNT nokey nokey2"),
        c("EXISTS nokey"),
        c("PFADD h"),
        c("GET h"),
        c("OBJECT ENCODING h"),
        c("PFCOUNT h"),
        c("GET h"),
        c("PFADD h a b c"),
        c("GET h"),
        c("OBJECT ENCODING h"),
        c("PFADD h a b c"),
        c("PFADD h \"\""),
        c("GETRANGE h 15 15"),
        c("PFCOUNT h"),
        c("GETRANGE h 15 15"),
        c("GET h"),
        c("PFCOUNT h"),
        c("PFADD h a"),
        c("GETRANGE h 15 15"),
        c("PFADD h 1 2 3"),
        c("GETRANGE h 15 15"),
        c("PFCOUNT h"),
        c("PFADD h2 a b c d e f g h i j k l m n o p"),
        c("PFCOUNT h2"),
        c("GET h2"),
        c("PFCOUNT h h2"),
        // The union is not written back.
        c("GET h2"),
        c("PFCOUNT h2 h nokey h2"),
        c("COMMAND GETKEYS PFMERGE d s1 s2"),
        c("COMMAND GETKEYS PFCOUNT a b c"),
        c("COMMAND GETKEYS PFADD k e1 e2"),
        c("COMMAND GETKEYS PFDEBUG GETREG k"),
        c("COMMAND GETKEYS PFSELFTEST"),
    ]
}

/// Adds in batches to a sparse HLL until it turns dense (about 3000
/// bytes), reading the value and its count as it grows.
fn promotion() -> Vec<Step> {
    let mut s = vec![c("DEL p"), c("CONFIG GET hll-sparse-max-bytes")];
    let mut at = 0;
    for batch in [1, 10, 50, 100, 200, 300, 400, 500, 700, 1000, 2000, 5000] {
        s.push(pfadd_range("p", "el-", at, batch));
        at += batch;
        s.push(c("PFDEBUG ENCODING p"));
        s.push(c("STRLEN p"));
        s.push(c("PFCOUNT p"));
        s.push(c("GET p"));
    }
    // A lower limit promotes sooner; 0 at the first split.
    for limit in ["100", "0", "1kb"] {
        s.push(c(&format!("CONFIG SET hll-sparse-max-bytes {limit}")));
        s.push(c("CONFIG GET hll-sparse-max-bytes"));
        s.push(c("DEL q"));
        for batch in [1, 5, 20, 80] {
            s.push(pfadd_range("q", "x", batch * 7, batch));
            s.push(c("PFDEBUG ENCODING q"));
            s.push(c("GET q"));
        }
    }
    s.extend([
        c("CONFIG SET hll-sparse-max-bytes -1"),
        c("CONFIG SET hll-sparse-max-bytes abc"),
        c("CONFIG SET hll-sparse-max-bytes 3000"),
        // Big counts (over 32) promote at once: many elements in one
        // register are likely among 20000.
        c("DEL big"),
        pfadd_range("big", "big-", 0, 20000),
        c("PFCOUNT big"),
        c("GET big"),
    ]);
    s
}

fn merge_and_union() -> Vec<Step> {
    vec![
        c("DEL m1 m2 m3 md"),
        c("PFADD m1 a b c"),
        c("PFADD m2 b c d"),
        c("PFADD m3 c d e"),
        c("PFMERGE md m1 m2 m3"),
        c("GET md"),
        c("PFCOUNT md"),
        c("PFCOUNT m1 m2 m3"),
        // The destination is a source too.
        c("PFMERGE m1 m2"),
        c("GET m1"),
        c("PFCOUNT m1"),
        c("PFMERGE m1"),
        c("GET m1"),
        c("PFMERGE fresh"),
        c("GET fresh"),
        c("PFMERGE fresh2 nokey nokey2"),
        c("GET fresh2"),
        // A dense source makes the destination dense.
        c("PFMERGE md p m1"),
        c("PFDEBUG ENCODING md"),
        c("PFCOUNT md"),
        c("GET md"),
        c("PFMERGE md2 m1 m2"),
        c("PFDEBUG TODENSE md2"),
        c("PFMERGE md3 md2"),
        c("PFDEBUG ENCODING md3"),
        c("GET md3"),
        // Sparse sources whose union passes the sparse limit.
        pfadd_range("s1", "s1-", 0, 600),
        pfadd_range("s2", "s2-", 0, 600),
        c("PFDEBUG ENCODING s1"),
        c("PFMERGE s12 s1 s2"),
        c("PFDEBUG ENCODING s12"),
        c("GET s12"),
        c("PFCOUNT s1 s2"),
        c("PFCOUNT s12"),
        c("PFCOUNT s1 s2 p big"),
        c("PFMERGE s1 s1 s1"),
        c("GET s1"),
    ]
}

fn debug() -> Vec<Step> {
    vec![
        c("PFDEBUG"),
        c("PFDEBUG ENCODING"),
        c("PFDEBUG GETREG d extra"),
        c("PFDEBUG ENCODING nokey"),
        c("PFDEBUG BOGUS nokey"),
        c("DEL d"),
        c("PFADD d a b c d e"),
        c("PFDEBUG BOGUS d"),
        c("PFDEBUG encoding d"),
        c("PFDEBUG DECODE d"),
        c("PFDEBUG TODENSE d"),
        c("PFDEBUG TODENSE d"),
        c("PFDEBUG DECODE d"),
        c("GET d"),
        c("PFADD d2 a b c d e"),
        c("PFCOUNT d2"),
        c("PFDEBUG GETREG d2"),
        // GETREG made it dense.
        c("PFDEBUG ENCODING d2"),
        c("GET d2"),
        c("PFDEBUG GETREG d2"),
        c("SET notd foo"),
        c("PFDEBUG ENCODING notd"),
        c("LPUSH ld x"),
        c("PFDEBUG ENCODING ld"),
    ]
}

fn types_and_expiry() -> Vec<Step> {
    vec![
        c("SET foo bar"),
        c("PFADD foo 1"),
        c("PFCOUNT foo"),
        c("PFCOUNT h foo"),
        c("PFCOUNT foo nokey"),
        c("PFMERGE bar foo"),
        c("EXISTS bar"),
        c("PFMERGE foo h"),
        c("SET num 12345"),
        c("PFADD num x"),
        c("LPUSH l x"),
        c("PFADD l x"),
        c("PFCOUNT l"),
        c("PFCOUNT h l"),
        c("PFMERGE h l"),
        c("PFMERGE l h"),
        c("HSET hs f v"),
        c("PFCOUNT hs h"),
        // The first bad key answers: a list before a non-HLL string.
        c("PFCOUNT h l foo"),
        c("PFCOUNT h foo l"),
        // Writes keep the expiry.
        c("DEL t"),
        c("PFADD t a"),
        c("EXPIRE t 1000"),
        c("PFADD t b c"),
        ck("TTL t", Check::Near(2)),
        c("PFCOUNT t"),
        ck("TTL t", Check::Near(2)),
        c("PFMERGE t h"),
        ck("TTL t", Check::Near(2)),
        c("PFDEBUG TODENSE t"),
        ck("TTL t", Check::Near(2)),
        c("PFADD t many more elements here"),
        ck("TTL t", Check::Near(2)),
        c("GET t"),
    ]
}

/// Values broken on purpose, as Redis's own suite breaks them.
fn corrupt() -> Vec<Step> {
    let mut s = vec![
        c("DEL c"),
        c("PFADD c a b c"),
        c("APPEND c hello"),
        c("PFCOUNT c"),
        c("PFCOUNT c h"),
        c("PFADD c x y z"),
        c("PFMERGE cd c"),
        c("EXISTS cd"),
        c("PFDEBUG DECODE c"),
        c("PFDEBUG GETREG c"),
        c("PFDEBUG TODENSE c"),
        c("DEL c"),
        c("PFADD c a b c"),
        c("SETRANGE c 0 0123"),
        c("PFCOUNT c"),
        c("PFADD c a"),
        c("DEL c"),
        c("PFADD c a b c"),
        c("SETRANGE c 4 x"),
        c("PFCOUNT c"),
        c("DEL c"),
        c("PFADD c a b c"),
        cb(vec![
            b"SETRANGE".to_vec(),
            b"c".to_vec(),
            b"4".to_vec(),
            vec![0],
        ]),
        c("PFCOUNT c"),
        c("SET short HYLL"),
        c("PFCOUNT short"),
        c("PFADD short a"),
        // A dense header on a value one byte short.
        c("PFADD dd a"),
        c("PFDEBUG TODENSE dd"),
        c("SETRANGE dd 12303 \"\""),
        c("GETRANGE dd 12303 -1"),
        c("STRLEN dd"),
    ];
    // A sparse header followed by opcodes that cover too few registers,
    // too many, or end half way in an XZERO; a cached cardinality that is
    // valid but wrong is believed.
    let header = |card: &[u8; 8]| {
        let mut v = b"HYLL\x01\0\0\0".to_vec();
        v.extend_from_slice(card);
        v
    };
    let invalid = [0, 0, 0, 0, 0, 0, 0, 0x80];
    let bodies: Vec<Vec<u8>> = vec![
        vec![],
        vec![0x7f, 0xff, 0x00],
        vec![0x7f, 0xfe],
        vec![0x7f, 0xfe, 0x80],
        vec![0x7f, 0xfb, 0x9f],
        vec![0x7f, 0xff, 0xfc],
        vec![0x7f, 0xff, 0xfc, 0x00],
        vec![0x7f, 0x00, 0x41],
        vec![0x7f, 0x00, 0x40],
        vec![0x40, 0x00, 0x7f, 0xfe],
    ];
    for body in bodies {
        for card in [invalid, [5, 0, 0, 0, 0, 0, 0, 0]] {
            let mut v = header(&card);
            v.extend_from_slice(&body);
            s.push(cb(vec![b"SET".to_vec(), b"raw".to_vec(), v]));
            s.push(c("PFCOUNT raw"));
            s.push(c("PFCOUNT raw h"));
            s.push(c("PFMERGE rawd raw"));
            s.push(c("GET rawd"));
            s.push(c("DEL rawd"));
            s.push(c("PFDEBUG DECODE raw"));
            s.push(c("PFADD raw a b c d e f"));
            s.push(c("GET raw"));
            s.push(c("PFDEBUG TODENSE raw"));
            s.push(c("GET raw"));
        }
    }
    s
}

/// Redis's "fuzzing dense/sparse encoding" test, replayed: valid HLLs
/// of random sizes with random bytes overwritten, then read and written.
fn fuzz() -> Vec<Step> {
    let mut rng = Lcg(0x5eed);
    let mut s = Vec::new();
    for round in 0..150 {
        let n = rng.next(if round % 10 == 0 { 3000 } else { 300 }) as usize;
        s.push(c("DEL fz"));
        s.push(pfadd_range("fz", &format!("r{round}-"), 0, n));
        s.push(c("PFDEBUG ENCODING fz"));
        s.push(c("STRLEN fz"));
        // Positions mostly among the opcodes (past the end pads with
        // zeros, the same on both), sometimes in the header's encoding
        // and cached cardinality.
        for _ in 0..1 + rng.next(4) {
            let pos = if rng.next(4) == 0 {
                4 + rng.next(12)
            } else {
                16 + rng.next(2 + 2 * (n as u64).min(1500))
            };
            s.push(cb(vec![
                b"SETRANGE".to_vec(),
                b"fz".to_vec(),
                pos.to_string().into_bytes(),
                vec![rng.next(256) as u8],
            ]));
        }
        s.push(c("GET fz"));
        s.push(c("PFCOUNT fz"));
        s.push(c("PFCOUNT fz h"));
        s.push(pfadd_range("fz", "more-", round, 5));
        s.push(c("GET fz"));
        s.push(c("PFDEBUG DECODE fz"));
        s.push(c("PFMERGE fzd fz"));
        s.push(c("GET fzd"));
        s.push(c("DEL fzd"));
    }
    s
}
