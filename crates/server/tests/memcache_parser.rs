//! The memcached parser alone: framing, header checks, garbage, oversized
//! lengths (never allocated), and resumption across arbitrary splits.

use tiercache_server::memcache::{McParser, Parsed, StoreCmd};
use tiercache_server::Limits;

/// One parse result with its tokens and data block copied out.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Line(Vec<String>),
    Store(StoreCmd, u32, i32, u64, bool, Vec<u8>),
    MetaSet(Vec<String>, Vec<u8>),
    Reply(&'static str, bool, bool),
    Swallowed(usize),
}

fn limits(max_value: usize) -> Limits {
    Limits {
        max_bulk_len: max_value,
        ..Limits::default()
    }
}

/// Feeds `input` in chunks of `step` bytes, the way a connection does:
/// complete requests are consumed from the front, the rest waits for more.
fn parse_split(input: &[u8], step: usize, max_value: usize) -> (Vec<Got>, Option<String>) {
    let mut parser = McParser::new(&limits(max_value));
    let mut buf: Vec<u8> = Vec::new();
    let mut out = Vec::new();
    let mut fed = 0;
    loop {
        loop {
            match parser.parse(&mut buf) {
                Ok(None) => break,
                Ok(Some((n, parsed))) => {
                    let toks: Vec<String> = parser
                        .tokens()
                        .iter()
                        .map(|&(s, e)| String::from_utf8_lossy(&buf[s..e]).into_owned())
                        .collect();
                    out.push(match parsed {
                        Parsed::Line { .. } => Got::Line(toks),
                        Parsed::Store {
                            cmd,
                            flags,
                            exptime,
                            cas,
                            noreply,
                            data,
                        } => Got::Store(
                            cmd,
                            flags,
                            exptime,
                            cas,
                            noreply,
                            buf[data.0..data.1].to_vec(),
                        ),
                        Parsed::MetaSet { data, .. } => {
                            Got::MetaSet(toks, buf[data.0..data.1].to_vec())
                        }
                        Parsed::Reply {
                            text,
                            noreply,
                            delete_key,
                        } => Got::Reply(text, noreply, delete_key),
                        Parsed::Swallowed => Got::Swallowed(n),
                    });
                    buf.drain(..n);
                }
                Err(e) => return (out, Some(e.0.to_string())),
            }
        }
        if fed == input.len() {
            return (out, None);
        }
        let end = (fed + step).min(input.len());
        buf.extend_from_slice(&input[fed..end]);
        fed = end;
    }
}

/// Merges consecutive swallows (their split depends on the chunking).
fn normalise(got: Vec<Got>) -> Vec<Got> {
    let mut out: Vec<Got> = Vec::new();
    for g in got {
        match (out.last_mut(), g) {
            (Some(Got::Swallowed(a)), Got::Swallowed(b)) => *a += b,
            (_, g) => out.push(g),
        }
    }
    out
}

fn line(tokens: &[&str]) -> Got {
    Got::Line(tokens.iter().map(|s| s.to_string()).collect())
}

const INPUT: &[u8] = b"get a b\r\nset k 5 -1 3 noreply\r\na\r\n\r\ncas k 0 0 1 77\r\nx\r\n\
    ms mk 2 T0 F1\r\nhi\r\nmg  mk   v  \r\nversion\nset k 0 0 3\r\nabcde\r\n\
    set big 0 0 10\r\n0123456789\r\nget z\r\n";

fn expected() -> Vec<Got> {
    vec![
        line(&["get", "a", "b"]),
        Got::Store(StoreCmd::Set, 5, -1, 0, true, b"a\r\n".to_vec()),
        Got::Store(StoreCmd::Cas, 0, 0, 77, false, b"x".to_vec()),
        Got::MetaSet(
            vec![
                "ms".into(),
                "mk".into(),
                "2".into(),
                "T0".into(),
                "F1".into(),
            ],
            b"hi".to_vec(),
        ),
        line(&["mg", "mk", "v"]),
        line(&["version"]),
        // 3 bytes then `de` where `\r\n` should be; the `\r\n` left over
        // is an empty line, as in memcached.
        Got::Reply("CLIENT_ERROR bad data chunk", false, false),
        Got::Reply("ERROR", false, false),
        // Over the limit of 8: answered, then the value swallowed.
        Got::Reply("SERVER_ERROR object too large for cache", false, true),
        Got::Swallowed(12),
        line(&["get", "z"]),
    ]
}

#[test]
fn every_split_parses_the_same() {
    let (whole, err) = parse_split(INPUT, INPUT.len(), 8);
    assert_eq!(err, None);
    let want = expected();
    assert_eq!(normalise(whole), want);
    for step in 1..40 {
        let (got, err) = parse_split(INPUT, step, 8);
        assert_eq!(err, None, "step {step}");
        assert_eq!(normalise(got), want, "step {step}");
    }
}

#[test]
fn header_errors_use_memcached_wording_and_do_not_read_data() {
    let cases: Vec<(&[u8], Got)> = vec![
        (b"set k 0 0\r\n", Got::Reply("ERROR", false, false)),
        (
            b"set k 0 0 1 noreply x\r\n",
            Got::Reply("ERROR", false, false),
        ),
        (
            b"set k x 0 1\r\n",
            Got::Reply("CLIENT_ERROR bad command line format", false, false),
        ),
        (
            b"set k 0 0 -1 noreply\r\n",
            Got::Reply("CLIENT_ERROR bad command line format", true, false),
        ),
        (
            b"set k 0 0 2147483647\r\n",
            Got::Reply("CLIENT_ERROR bad command line format", false, false),
        ),
        (
            b"cas k 0 0 1 -1\r\n",
            Got::Reply("CLIENT_ERROR bad command line format", false, false),
        ),
        (b"x\r\n", Got::Reply("ERROR", false, false)),
        (b"\r\n", Got::Reply("ERROR", false, false)),
        (
            b"ms k\r\n",
            Got::Reply("CLIENT_ERROR bad command line format", false, false),
        ),
        (b"ms\r\n", Got::Reply("ERROR", false, false)),
    ];
    for (input, want) in cases {
        let (got, err) = parse_split(input, input.len(), 1 << 20);
        assert_eq!(err, None);
        assert_eq!(got, vec![want], "{:?}", String::from_utf8_lossy(input));
    }
    let long_key = format!("set {} 0 0 1\r\n", "k".repeat(251));
    let (got, _) = parse_split(long_key.as_bytes(), 1000, 1 << 20);
    assert_eq!(
        got,
        vec![Got::Reply(
            "CLIENT_ERROR bad command line format",
            false,
            false
        )]
    );
}

#[test]
fn meta_set_errors_swallow_the_value() {
    let input = b"ms k 3 zz\r\nabc\r\nms k 3 MQ\r\nabc\r\nms k 3 v v\r\nabc\r\nget a\r\n";
    let (got, err) = parse_split(input, 5, 1 << 20);
    assert_eq!(err, None);
    assert_eq!(
        normalise(got),
        vec![
            Got::Reply("CLIENT_ERROR invalid flag", false, false),
            Got::Swallowed(5),
            Got::Reply("CLIENT_ERROR invalid mode for ms M token", false, false),
            Got::Swallowed(5),
            Got::Reply("CLIENT_ERROR duplicate flag", false, false),
            Got::Swallowed(5),
            line(&["get", "a"]),
        ]
    );
}

#[test]
fn base64_meta_keys_are_decoded_in_place() {
    let (got, _) = parse_split(b"mg AAEC b v\r\nms AAEC 1 b\r\nx\r\n", 3, 1 << 20);
    assert_eq!(
        got,
        vec![
            Got::Line(vec![
                "mg".into(),
                "\0\x01\x02".into(),
                "b".into(),
                "v".into()
            ]),
            Got::MetaSet(
                vec!["ms".into(), "\0\x01\x02".into(), "1".into(), "b".into()],
                b"x".to_vec()
            ),
        ]
    );
}

#[test]
fn garbage_and_overlong_lines_close_the_connection() {
    // No newline within 2048 bytes: closed, whatever the chunking.
    for step in [1, 100, 5000] {
        let (_, err) = parse_split(&[b'z'; 5000], step, 1 << 20);
        assert_eq!(err.as_deref(), Some("line too long"), "step {step}");
    }
    // ... unless it is a multi-get, bounded by the request limit instead.
    let mut get = b"get".to_vec();
    for _ in 0..2000 {
        get.extend_from_slice(b" key");
    }
    get.extend_from_slice(b"\r\n");
    let (got, err) = parse_split(&get, 512, 1 << 20);
    assert_eq!(err, None);
    let Got::Line(tokens) = &got[0] else {
        panic!("{got:?}")
    };
    assert_eq!(tokens.len(), 2001);
    // The binary protocol's magic byte.
    let (_, err) = parse_split(&[0x80, 1, 0, 0], 4, 1 << 20);
    assert!(err.unwrap().contains("binary"));
    // Random bytes never panic and never loop: each call makes progress or stops.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..300 {
        let len = (seed % 3000) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Mostly printable with spaces and line ends, some binary.
                match seed % 10 {
                    0 => b'\n',
                    1 => b' ',
                    2 => (seed >> 8) as u8 | 1,
                    _ => b"setgmadn0123456789 kv\r"[(seed >> 16) as usize % 22],
                }
            })
            .collect();
        for step in [1, 7, 4096] {
            let _ = parse_split(&bytes, step, 64);
        }
    }
}

#[test]
fn a_huge_claimed_length_allocates_nothing() {
    // 2 GiB claimed, 8 bytes allowed: the reply comes from the header alone,
    // and the parser holds no buffer of its own.
    let (got, err) = parse_split(b"set k 0 0 2147483000\r\n", 64, 8);
    assert_eq!(err, None);
    assert_eq!(
        got,
        vec![Got::Reply(
            "SERVER_ERROR object too large for cache",
            false,
            true
        )]
    );
}
