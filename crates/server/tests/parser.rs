//! The RESP request parser on its own: no sockets.

use tiercache_server::{Limits, RequestParser};

type Outcome = Result<Option<(usize, Vec<Vec<u8>>)>, String>;

fn parse(input: &[u8]) -> Outcome {
    parse_with(input, Limits::default())
}

fn parse_with(input: &[u8], limits: Limits) -> Outcome {
    let mut buf = input.to_vec();
    let mut p = RequestParser::new(limits);
    match p.parse(&mut buf) {
        Ok(Some(n)) => Ok(Some((
            n,
            p.args().iter().map(|&(s, e)| buf[s..e].to_vec()).collect(),
        ))),
        Ok(None) => Ok(None),
        Err(e) => Err(e.0),
    }
}

fn args(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

#[test]
fn multibulk() {
    let input = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
    assert_eq!(
        parse(input),
        Ok(Some((input.len(), args(&["SET", "k", "hello"]))))
    );
}

#[test]
fn multibulk_binary_and_empty_args() {
    let input = b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\n\r\n\x00\xff\r\n";
    let (n, a) = parse(input).unwrap().unwrap();
    assert_eq!(n, input.len());
    assert_eq!(a, vec![b"SET".to_vec(), vec![], b"\r\n\x00\xff".to_vec()]);
}

#[test]
fn two_requests_parse_one_at_a_time() {
    let input = b"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n";
    assert_eq!(parse(input).unwrap().unwrap().0, 14);
}

#[test]
fn empty_multibulk_is_skipped() {
    assert_eq!(parse(b"*0\r\n"), Ok(Some((4, vec![]))));
    assert_eq!(parse(b"*-1\r\n"), Ok(Some((5, vec![]))));
}

#[test]
fn inline_commands() {
    assert_eq!(parse(b"PING\r\n"), Ok(Some((6, args(&["PING"])))));
    assert_eq!(parse(b"SET a b\n"), Ok(Some((8, args(&["SET", "a", "b"])))));
    assert_eq!(
        parse(b"  set   a\t b  \r\n"),
        Ok(Some((16, args(&["set", "a", "b"]))))
    );
    assert_eq!(parse(b"\r\n"), Ok(Some((2, vec![]))));
    assert_eq!(parse(b"\n"), Ok(Some((1, vec![]))));
}

#[test]
fn inline_quoting_follows_redis() {
    let line = b"SET \"hello world\" 'it''s'\r\n";
    // A closing quote must be followed by a space or the end.
    assert_eq!(
        parse(line),
        Err("Protocol error: unbalanced quotes in request".into())
    );
    let (_, a) = parse(b"SET \"a\\tb\\x41\\\"\" 'don\\'t' \"\"\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(
        a,
        vec![
            b"SET".to_vec(),
            b"a\tbA\"".to_vec(),
            b"don't".to_vec(),
            vec![]
        ]
    );
    let (_, a) = parse(b"ECHO \"\\xzz\"\n").unwrap().unwrap();
    assert_eq!(a[1], b"xzz".to_vec());
    assert_eq!(
        parse(b"SET \"unterminated\r\n"),
        Err("Protocol error: unbalanced quotes in request".into())
    );
    assert_eq!(
        parse(b"SET 'unterminated\n"),
        Err("Protocol error: unbalanced quotes in request".into())
    );
}

#[test]
fn every_split_point_is_incomplete() {
    let requests: [&[u8]; 3] = [
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$11\r\nhello world\r\n",
        b"SET \"a b\" c\r\n",
        b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
    ];
    for req in requests {
        // A fresh parser per prefix, and one parser resumed byte by byte.
        for cut in 0..req.len() {
            assert_eq!(
                parse(&req[..cut]),
                Ok(None),
                "prefix {:?}",
                String::from_utf8_lossy(&req[..cut])
            );
        }
        let mut p = RequestParser::new(Limits::default());
        let mut buf = Vec::new();
        for (i, &b) in req.iter().enumerate() {
            buf.push(b);
            let r = p.parse(&mut buf).unwrap();
            if i + 1 < req.len() {
                assert_eq!(r, None, "resumed at {i}");
            } else {
                assert_eq!(r, Some(req.len()));
                assert!(!p.args().is_empty());
            }
        }
        assert_eq!(parse(req).unwrap().unwrap().0, req.len());
    }
}

#[test]
fn huge_claimed_lengths_fail_without_allocating() {
    // Were either length allocated, this test would abort on OOM.
    assert_eq!(
        parse(b"*1\r\n$999999999999\r\n"),
        Err("Protocol error: invalid bulk length".into())
    );
    assert_eq!(
        parse(b"*99999999999\r\n"),
        Err("Protocol error: invalid multibulk length".into())
    );
    assert_eq!(parse(b"*1048576\r\n"), Ok(None));
    let limits = Limits {
        max_bulk_len: 10,
        ..Limits::default()
    };
    assert_eq!(
        parse_with(b"*1\r\n$11\r\n", limits.clone()),
        Err("Protocol error: invalid bulk length".into())
    );
    assert_eq!(parse_with(b"*1\r\n$10\r\n", limits), Ok(None));
    let limits = Limits {
        max_request_len: 64,
        ..Limits::default()
    };
    assert_eq!(
        parse_with(b"*2\r\n$3\r\nSET\r\n$60\r\n", limits),
        Err("Protocol error: too big request".into())
    );
}

#[test]
fn garbage_lengths() {
    let bulk = "Protocol error: invalid bulk length";
    let multi = "Protocol error: invalid multibulk length";
    for input in [
        &b"*2\r\n$x\r\n"[..],
        b"*1\r\n$-1\r\n",
        b"*1\r\n$+3\r\n",
        b"*1\r\n$03\r\n",
        b"*1\r\n$\r\n",
        b"*1\r\n$3 \r\n",
    ] {
        assert_eq!(
            parse(input),
            Err(bulk.into()),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    for input in [
        &b"*x\r\n"[..],
        b"*\r\n",
        b"*1a\r\n",
        b"*18446744073709551616\r\n",
    ] {
        assert_eq!(
            parse(input),
            Err(multi.into()),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    assert_eq!(
        parse(b"*1\r\nx3\r\n"),
        Err("Protocol error: expected '$', got 'x'".into())
    );
    assert!(
        parse(b"*1\r\n$3\r\nabcde\r\n").is_err(),
        "bulk longer than claimed"
    );
}

#[test]
fn unterminated_headers_are_bounded() {
    let mut input = b"*1\r\n$".to_vec();
    input.extend(vec![b'1'; 70_000]);
    assert_eq!(
        parse(&input),
        Err("Protocol error: too big bulk count string".into())
    );
    let input = vec![b'a'; 70_000];
    assert_eq!(
        parse(&input),
        Err("Protocol error: too big inline request".into())
    );
}
