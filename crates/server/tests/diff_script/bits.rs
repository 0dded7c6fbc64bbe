//! The bit commands' script: `BITCOUNT` and `BITPOS` (byte and bit
//! ranges, negative, huge and reversed indexes, missing and empty keys,
//! all-ones strings with and without an explicit end), `BITOP` (every
//! operation, missing sources deleting the destination, a destination of
//! another type, sources of another type), `BITFIELD` (every subcommand,
//! every overflow mode at the `i64`/`u63` edges, `#` offsets, bad types
//! and offsets) and `BITFIELD_RO`, with the errors in Redis's order and
//! `WRONGTYPE`; `COMMAND GETKEYS` of `BITOP`.
//!
//! Offsets stay under both servers' bulk length limits (tiercache's 64 MiB
//! default, Redis's 512 MB) or over both.

use super::{c, Step};

pub fn bits_script() -> Vec<Step> {
    let mut s = vec![c("FLUSHALL")];
    s.extend(bitcount());
    s.extend(bitpos());
    s.extend(bitop());
    s.extend(bitfield());
    s.extend(range_sweep());
    s
}

/// Every pair of a set of indexes (negative, inside, at and past the
/// byte and word edges, reversed) over a string of runs of zeros and
/// ones, in bits and in bytes.
fn range_sweep() -> Vec<Step> {
    let mut s = vec![
        c("DEL mix"),
        c("BITFIELD mix SET u8 0 0 SET u8 8 255 SET u8 16 240 SET u8 24 15 SET u8 32 0 SET u8 40 255"),
        c("BITFIELD mix SET i64 48 0 SET i64 112 -1 SET u8 176 1"),
        c("STRLEN mix"),
    ];
    let at = [
        -200, -97, -9, -8, -1, 0, 1, 7, 8, 15, 23, 47, 48, 111, 176, 183, 184, 500,
    ];
    for start in at {
        for end in at {
            for unit in ["BIT", "BYTE"] {
                s.push(c(&format!("BITCOUNT mix {start} {end} {unit}")));
                s.push(c(&format!("BITPOS mix 0 {start} {end} {unit}")));
                s.push(c(&format!("BITPOS mix 1 {start} {end} {unit}")));
            }
        }
        s.push(c(&format!("BITPOS mix 0 {start}")));
        s.push(c(&format!("BITPOS mix 1 {start}")));
    }
    s
}

fn bitcount() -> Vec<Step> {
    vec![
        c("BITCOUNT"),
        c("BITCOUNT nokey"),
        // The key is looked up first: a missing key ignores bad ranges.
        c("BITCOUNT nokey a b"),
        c("BITCOUNT nokey 0"),
        c("BITCOUNT nokey 0 1 BOGUS"),
        c("SET s foobar"),
        c("BITCOUNT s"),
        c("BITCOUNT s 0"),
        c("BITCOUNT s 0 1 2"),
        c("BITCOUNT s 0 1 BIT x"),
        c("BITCOUNT s a 1"),
        c("BITCOUNT s 0 b"),
        c("BITCOUNT s 0 1 BOGUS"),
        // Two negative indexes in the wrong order answer 0 before the unit.
        c("BITCOUNT s -1 -2 BOGUS"),
        c("BITCOUNT s 0 0"),
        c("BITCOUNT s 1 1"),
        c("BITCOUNT s 0 -1"),
        c("BITCOUNT s -3 -1"),
        c("BITCOUNT s 4 2"),
        c("BITCOUNT s -100 100"),
        c("BITCOUNT s 100 200"),
        c("BITCOUNT s -9223372036854775808 9223372036854775807"),
        c("BITCOUNT s 9223372036854775807 -9223372036854775808"),
        c("BITCOUNT s 0 9223372036854775808"),
        c("BITCOUNT s 1 1 BYTE"),
        c("BITCOUNT s 1 1 byte"),
        c("BITCOUNT s 5 30 BIT"),
        c("BITCOUNT s 5 30 bit"),
        c("BITCOUNT s 0 -1 BIT"),
        c("BITCOUNT s -5 -1 BIT"),
        c("BITCOUNT s 7 7 BIT"),
        c("BITCOUNT s 8 7 BIT"),
        c("BITCOUNT s -1 -2 BIT"),
        c("BITCOUNT s 0 1000 BIT"),
        c("BITCOUNT s 47 47 BIT"),
        c("BITCOUNT s 48 100 BIT"),
        c("SET empty \"\""),
        c("BITCOUNT empty"),
        c("BITCOUNT empty 0 -1"),
        c("BITCOUNT empty 0 -1 BIT"),
        c("SET num 12345"),
        c("BITCOUNT num"),
        c("BITCOUNT num 1 2 BIT"),
        // A long string: whole words and an odd tail.
        c("SET long \"the quick brown fox jumps over the lazy dog, 0123456789\""),
        c("BITCOUNT long"),
        c("BITCOUNT long 3 50"),
        c("BITCOUNT long 13 419 BIT"),
        c("RPUSH list a"),
        c("BITCOUNT list"),
        c("BITCOUNT list a b"),
    ]
}

fn bitpos() -> Vec<Step> {
    vec![
        c("BITPOS"),
        c("BITPOS k"),
        // The bit is checked before the key.
        c("BITPOS nokey 2"),
        c("BITPOS nokey x"),
        c("BITPOS nokey -1"),
        c("BITPOS nokey 1"),
        c("BITPOS nokey 0"),
        c("BITPOS nokey 0 a b"),
        c("BITPOS list 1"),
        c("BITPOS list 2"),
        c("BITPOS list 1 x"),
        c("SET s foobar"),
        c("BITPOS s 1"),
        c("BITPOS s 0"),
        c("BITPOS s 1 x"),
        c("BITPOS s 1 0 y"),
        c("BITPOS s 1 0 1 BOGUS"),
        // The unit is read before the end.
        c("BITPOS s 1 0 y BOGUS"),
        c("BITPOS s 1 0 y BIT"),
        c("BITPOS s 1 0 1 BIT x"),
        c("BITPOS s 1 2"),
        c("BITPOS s 0 2"),
        c("BITPOS s 1 2 -1"),
        c("BITPOS s 1 -2 -1"),
        c("BITPOS s 1 3 2"),
        c("BITPOS s 1 -100 100"),
        c("BITPOS s 1 100"),
        c("BITPOS s 0 100"),
        c("BITPOS s 1 7 15 BIT"),
        c("BITPOS s 0 7 15 bit"),
        c("BITPOS s 1 7 15 BYTE"),
        c("BITPOS s 1 9 9 BIT"),
        c("BITPOS s 0 9 9 BIT"),
        c("BITPOS s 1 -5 -1 BIT"),
        c("BITPOS s 0 -9223372036854775808 9223372036854775807 BIT"),
        c("BITPOS s 1 9223372036854775807 -9223372036854775808"),
        // All ones: a clear bit past the end without an explicit end, -1 with.
        c("SETBIT z 23 0"),
        c("BITOP NOT ones z"),
        c("BITPOS ones 0"),
        c("BITPOS ones 0 0"),
        c("BITPOS ones 0 1"),
        c("BITPOS ones 0 -1"),
        c("BITPOS ones 0 0 -1"),
        c("BITPOS ones 0 0 2"),
        c("BITPOS ones 0 0 100"),
        c("BITPOS ones 0 3 BIT"),
        c("BITPOS ones 0 3 23 BIT"),
        c("BITPOS ones 0 3 5 BIT"),
        c("BITPOS ones 0 9 BYTE"),
        c("BITPOS ones 1"),
        c("BITPOS ones 1 2 2"),
        // All zeros.
        c("BITPOS z 1"),
        c("BITPOS z 0"),
        c("BITPOS z 1 1"),
        c("BITPOS z 1 0 -1 BIT"),
        c("BITPOS z 0 5 BIT"),
        c("BITPOS z 0 5 6 BIT"),
        // Empty strings hold neither bit.
        c("SET empty \"\""),
        c("BITPOS empty 0"),
        c("BITPOS empty 1"),
        c("BITPOS empty 0 0"),
        c("BITPOS empty 0 0 -1 BIT"),
        // Long runs: whole words skipped, then the bit.
        c("SETBIT long0 333 1"),
        c("BITPOS long0 1"),
        c("BITPOS long0 1 3"),
        c("BITPOS long0 1 41"),
        c("BITPOS long0 1 42"),
        c("BITPOS long0 1 1 332 BIT"),
        c("BITPOS long0 1 1 333 BIT"),
        c("BITPOS long0 1 334 BIT"),
        c("BITOP NOT long1 long0"),
        c("BITPOS long1 0"),
        c("BITPOS long1 0 8 -1"),
        c("BITPOS long1 0 334 BIT"),
        c("BITPOS long1 0 334 -1 BIT"),
        c("BITPOS long1 1 333 333 BIT"),
        c("SET num 255"),
        c("BITPOS num 0"),
        c("BITPOS num 1 1"),
    ]
}

fn bitop() -> Vec<Step> {
    vec![
        c("BITOP"),
        c("BITOP AND"),
        c("BITOP AND dest"),
        c("BITOP BOGUS dest a"),
        c("BITOP andx dest a"),
        c("BITOP NOT dest a b"),
        c("BITOP not dest"),
        c("MSET a foobar b abcdef c xyz"),
        c("BITOP AND dest a b"),
        c("GET dest"),
        c("BITOP and dest a b c"),
        c("GET dest"),
        c("BITOP OR dest a c"),
        c("GET dest"),
        c("BITOP Xor dest a b c"),
        c("GET dest"),
        c("BITOP XOR dest a a"),
        c("GET dest"),
        c("BITOP NOT dest c"),
        c("GET dest"),
        c("STRLEN dest"),
        // Missing sources read as empty; AND pads with zeros.
        c("BITOP AND dest a nosuch"),
        c("GET dest"),
        c("BITOP OR dest nosuch c"),
        c("GET dest"),
        // An empty result deletes the destination, whatever its type.
        c("BITOP AND dest nosuch1 nosuch2"),
        c("EXISTS dest"),
        c("RPUSH dlist x"),
        c("BITOP OR dlist nosuch"),
        c("EXISTS dlist"),
        c("BITOP NOT dest nosuch"),
        c("EXISTS dest"),
        c("SET e \"\""),
        c("BITOP OR dest e e"),
        c("EXISTS dest"),
        // A destination of another type is replaced; its expiry is dropped.
        c("HSET dh f v"),
        c("BITOP OR dh a"),
        c("TYPE dh"),
        c("GET dh"),
        c("SET dttl v EX 100"),
        c("BITOP OR dttl c"),
        c("TTL dttl"),
        // A source of another type: WRONGTYPE, nothing written.
        c("SET keep v"),
        c("BITOP OR keep a list"),
        c("GET keep"),
        c("BITOP OR keep list nosuch"),
        c("BITOP NOT keep list"),
        c("BITOP AND keep a list"),
        c("GET keep"),
        // The destination as a source.
        c("SET self ab"),
        c("BITOP XOR self self c"),
        c("GET self"),
        c("BITOP NOT self self"),
        c("GET self"),
        // Long strings: words and tails.
        c("SET la \"the quick brown fox jumps over the lazy dog, 0123456789\""),
        c("SET lb \"PACK MY BOX WITH FIVE DOZEN LIQUOR JUGS!\""),
        c("BITOP AND dest la lb"),
        c("GET dest"),
        c("BITOP OR dest la lb c"),
        c("GET dest"),
        c("BITOP XOR dest lb la"),
        c("GET dest"),
        c("BITOP NOT dest la"),
        c("GET dest"),
        c("BITCOUNT dest"),
        c("COMMAND GETKEYS BITOP AND d a b"),
        c("COMMAND GETKEYS BITOP NOT d a"),
        c("COMMAND GETKEYS BITCOUNT k 0 1"),
        c("COMMAND GETKEYS BITFIELD_RO k GET i8 0"),
    ]
}

fn bitfield() -> Vec<Step> {
    vec![
        c("BITFIELD"),
        c("BITFIELD_RO"),
        c("BITFIELD nokey"),
        c("EXISTS nokey"),
        c("BITFIELD_RO nokey"),
        c("BITFIELD nokey GET u8 0"),
        c("EXISTS nokey"),
        c("BITFIELD list"),
        c("BITFIELD list GET u8 0"),
        c("BITFIELD_RO list GET u8 0"),
        c("BITFIELD list SET u8 0 1"),
        // Syntax and argument errors, parsed before anything runs.
        c("BITFIELD k BOGUS"),
        c("BITFIELD k GET"),
        c("BITFIELD k GET u8"),
        c("BITFIELD k SET u8 0"),
        c("BITFIELD k INCRBY u8 0"),
        c("BITFIELD k OVERFLOW"),
        c("BITFIELD k OVERFLOW BOGUS"),
        c("BITFIELD k OVERFLOW BOGUS GET x 0"),
        c("BITFIELD k GET i65 0"),
        c("BITFIELD k GET u64 0"),
        c("BITFIELD k GET i0 0"),
        c("BITFIELD k GET u0 0"),
        c("BITFIELD k GET I8 0"),
        c("BITFIELD k GET x8 0"),
        c("BITFIELD k GET i 0"),
        c("BITFIELD k GET i08 0"),
        c("BITFIELD k GET i-8 0"),
        c("BITFIELD k GET \"\" 0"),
        c("BITFIELD k GET u8 -1"),
        c("BITFIELD k GET u8 x"),
        c("BITFIELD k GET u8 #"),
        c("BITFIELD k GET u8 #-1"),
        c("BITFIELD k GET u8 ##1"),
        c("BITFIELD k GET u8 4294967296"),
        c("BITFIELD k GET u8 #1073741824"),
        c("BITFIELD k GET i64 #4611686018427387904"),
        c("BITFIELD k GET i64 #9223372036854775807"),
        c("BITFIELD k GET u8 9223372036854775808"),
        c("BITFIELD k SET u8 0 x"),
        c("BITFIELD k SET u8 0 9223372036854775808"),
        c("BITFIELD k INCRBY u8 0 1.5"),
        c("BITFIELD k GET u8 0 SET i65 0 1"),
        c("BITFIELD k SET u8 0 1 GET u8 x"),
        c("EXISTS k"),
        // The first error wins.
        c("BITFIELD k GET u64 x"),
        c("BITFIELD k SET i8 x y"),
        c("BITFIELD k OVERFLOW WRAP BOGUS"),
        // BITFIELD_RO: GET only, refused after the parse.
        c("BITFIELD_RO k SET u8 0 1"),
        c("BITFIELD_RO k INCRBY u8 0 1"),
        c("BITFIELD_RO k GET u8 0 INCRBY u8 0 1"),
        c("BITFIELD_RO k SET u8 0 x"),
        c("BITFIELD_RO k OVERFLOW SAT"),
        c("BITFIELD_RO k OVERFLOW SAT GET u8 0"),
        c("BITFIELD_RO list SET u8 0 1"),
        c("EXISTS k"),
        // SET, GET, INCRBY.
        c("BITFIELD k SET u8 0 255 GET u8 0 GET i8 0 GET u4 4 GET i4 4"),
        c("GET k"),
        c("BITFIELD k SET i5 3 -7 GET i5 3 GET u5 3 GET u16 0"),
        c("BITFIELD k INCRBY u2 100 1 INCRBY u2 100 1 INCRBY u2 100 1 GET u2 100"),
        c("STRLEN k"),
        c("BITFIELD k GET u8 #1 SET u8 #1 65 GET u8 #1 GET u8 8"),
        c("BITFIELD k set u8 #2 66 incrby u8 #2 1 get u8 16"),
        c("GET k"),
        c("BITFIELD_RO k GET u8 #1 GET i16 4 GET u63 1 GET i64 0"),
        c("BITFIELD k GET u8 1000 GET i64 1000"),
        // Overflow modes, per operation, WRAP by default.
        c("DEL o"),
        c("BITFIELD o INCRBY u8 0 255 INCRBY u8 0 1"),
        c("BITFIELD o OVERFLOW SAT INCRBY u8 0 300 INCRBY u8 0 -1000"),
        c("BITFIELD o OVERFLOW FAIL INCRBY u8 0 300 INCRBY u8 0 5 OVERFLOW WRAP INCRBY u8 0 300"),
        c("BITFIELD o OVERFLOW fail SET u8 0 256 SET u8 0 -1 SET u8 0 7 GET u8 0"),
        c("BITFIELD o overflow sat SET u8 0 256 SET u8 0 -1 SET i8 0 200 SET i8 0 -200"),
        c("BITFIELD o SET u8 0 256 SET u8 0 -1 SET i8 0 200 SET i8 0 -200 GET u8 0"),
        c("BITFIELD o SET i8 0 127 INCRBY i8 0 1 INCRBY i8 0 -1 OVERFLOW SAT INCRBY i8 0 -200"),
        c("BITFIELD o OVERFLOW FAIL INCRBY i8 0 1 INCRBY i8 0 -1 INCRBY i8 0 300"),
        c("BITFIELD o SET i1 0 1 GET i1 0 SET i1 0 -1 INCRBY i1 0 1 INCRBY u1 0 1"),
        // The i64 edges.
        c("BITFIELD e SET i64 0 9223372036854775807 INCRBY i64 0 1 GET i64 0"),
        c("BITFIELD e OVERFLOW SAT SET i64 0 9223372036854775807 INCRBY i64 0 1 INCRBY i64 0 9223372036854775807"),
        c("BITFIELD e OVERFLOW FAIL INCRBY i64 0 1 INCRBY i64 0 -1 GET i64 0"),
        c("BITFIELD e SET i64 0 -9223372036854775808 INCRBY i64 0 -1 GET i64 0"),
        c("BITFIELD e OVERFLOW SAT SET i64 0 -9223372036854775808 INCRBY i64 0 -1 INCRBY i64 0 -9223372036854775808"),
        c("BITFIELD e OVERFLOW FAIL SET i64 0 -9223372036854775808 INCRBY i64 0 -1 INCRBY i64 0 9223372036854775807 INCRBY i64 0 9223372036854775807"),
        c("BITFIELD e OVERFLOW WRAP SET i64 0 -1 INCRBY i64 0 -9223372036854775808 INCRBY i64 0 -9223372036854775808"),
        c("BITFIELD e OVERFLOW SAT SET i64 0 5 INCRBY i64 0 -9223372036854775808 INCRBY i64 0 -9223372036854775808"),
        c("BITFIELD e SET i64 3 -2 GET i64 3 GET u63 4 GET u63 3 GET i64 #1"),
        // The u63 edges.
        c("BITFIELD f SET u63 0 9223372036854775807 INCRBY u63 0 1 GET u63 0"),
        c("BITFIELD f OVERFLOW SAT SET u63 0 9223372036854775807 INCRBY u63 0 1 INCRBY u63 0 9223372036854775807"),
        c("BITFIELD f OVERFLOW FAIL INCRBY u63 0 1 INCRBY u63 0 -9223372036854775808 GET u63 0"),
        c("BITFIELD f OVERFLOW SAT SET u63 0 0 INCRBY u63 0 -1 INCRBY u63 0 -9223372036854775808"),
        c("BITFIELD f OVERFLOW WRAP SET u63 0 0 INCRBY u63 0 -1 INCRBY u63 0 -9223372036854775808"),
        c("BITFIELD f SET u63 0 -1 OVERFLOW SAT SET u63 0 -1 OVERFLOW FAIL SET u63 0 -1"),
        c("BITFIELD f SET u63 5 12345678901234 GET u63 5 GET u63 #1"),
        // FAIL writes nothing but still creates (and pads) the string.
        c("DEL g"),
        c("BITFIELD g OVERFLOW FAIL SET u8 80 256"),
        c("EXISTS g"),
        c("STRLEN g"),
        c("BITFIELD g OVERFLOW FAIL INCRBY i4 #40 100"),
        c("STRLEN g"),
        // A write keeps the expiry; unchanged bits are no write.
        c("SET h ab EX 100"),
        c("BITFIELD h SET u8 0 99"),
        c("TTL h"),
        c("GET h"),
        c("BITFIELD h SET u8 0 99 INCRBY u8 8 0"),
        c("GET h"),
        c("BITFIELD h INCRBY u16 #2 256 GET u16 #2"),
        c("TTL h"),
        c("GET h"),
        c("BITFIELD_RO h GET u8 0 GET u16 #2 GET i64 #0"),
        c("BITFIELD num SET u4 0 15"),
        c("BITFIELD nokey2 SET u8 #1 1"),
        c("GET nokey2"),
        // Inside a transaction.
        c("MULTI"),
        c("BITFIELD m SET u8 0 65 GET u8 0"),
        c("BITFIELD_RO m GET u8 0"),
        c("BITFIELD m GET u65 0"),
        c("BITCOUNT m"),
        c("BITPOS m 1"),
        c("BITOP NOT mn m"),
        c("EXEC"),
        c("GET mn"),
    ]
}
