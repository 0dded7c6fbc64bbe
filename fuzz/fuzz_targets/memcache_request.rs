//! Fuzzes the memcached text/meta request parser with the same oracle as
//! `resp_request`: the first input byte picks a read size, and the stream
//! must parse identically whole and in 1–16-byte reads (requests, their
//! tokens, their parsed headers and data ranges, and where it turns fatal;
//! consecutive `Swallowed` pieces of one over-size value are summed).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tiercache_server::memcache::{McParser, Parsed};
use tiercache_server::Limits;

type Outcome = (Vec<(usize, Vec<Vec<u8>>, Parsed)>, Option<&'static str>);

fn small_limits() -> Limits {
    // Small limits so the fuzzer reaches the over-size paths.
    Limits {
        max_bulk_len: 64,
        max_key_len: 250,
        max_request_len: 4096,
        max_multibulk_len: 8,
    }
}

fn parse(stream: &[u8], chunk: usize) -> Outcome {
    let mut parser = McParser::new(&small_limits());
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut requests = Vec::new();
    loop {
        match parser.parse(&mut buf) {
            Ok(Some((n, parsed))) => {
                assert!(n > 0 && n <= buf.len(), "consumed {n} of {}", buf.len());
                if let Parsed::Store { data: (s, e), .. } | Parsed::MetaSet { data: (s, e), .. } =
                    parsed
                {
                    assert!(s <= e && e <= n, "data {s}..{e} outside request of {n}");
                }
                let tokens = parser
                    .tokens()
                    .iter()
                    .map(|&(s, e)| {
                        assert!(s <= e && e <= n, "token {s}..{e} outside request of {n}");
                        buf[s..e].to_vec()
                    })
                    .collect();
                // Swallowing an over-size value consumes whatever has
                // arrived, so reads split it into several `Swallowed`:
                // compare the total.
                match (requests.last_mut(), parsed) {
                    (Some((m, _, Parsed::Swallowed)), Parsed::Swallowed) => *m += n,
                    _ => requests.push((n, tokens, parsed)),
                }
                buf.drain(..n);
            }
            Ok(None) => {
                if fed == stream.len() {
                    return (requests, None);
                }
                let end = (fed + chunk).min(stream.len());
                buf.extend_from_slice(&stream[fed..end]);
                fed = end;
            }
            Err(fatal) => return (requests, Some(fatal.0)),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, stream)) = data.split_first() else {
        return;
    };
    let chunk = usize::from(first % 16) + 1;
    let whole = parse(stream, stream.len().max(1));
    let pieces = parse(stream, chunk);
    assert_eq!(whole, pieces, "chunked parse ({chunk}-byte reads) disagrees");
});
