//! Fuzzes the RESP request parser with a resumption oracle.
//!
//! The first byte of the input chooses a chunk size; the rest is the
//! stream. The stream is parsed twice: all at once, and fed `chunk` bytes
//! at a time as a socket would deliver it (appending to the buffer and
//! resuming). Both must agree on every request (its length and its
//! arguments) and on where the stream stops being RESP, and every argument
//! range must lie inside its request. Panics, overflows and hangs are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tiercache_server::{Limits, RequestParser};

/// What parsing a stream produced: each request's arguments, then whether
/// it ended in a protocol error.
type Outcome = (Vec<Vec<Vec<u8>>>, bool);

fn small_limits() -> Limits {
    // Small limits so the fuzzer reaches the over-limit paths.
    Limits {
        max_bulk_len: 64,
        max_key_len: 16,
        max_request_len: 256,
        max_multibulk_len: 8,
    }
}

/// Parses `stream` delivered `chunk` bytes at a time.
fn parse(stream: &[u8], chunk: usize) -> Outcome {
    let mut parser = RequestParser::new(small_limits());
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut requests = Vec::new();
    loop {
        match parser.parse(&mut buf) {
            Ok(Some(n)) => {
                assert!(n > 0 && n <= buf.len(), "consumed {n} of {}", buf.len());
                let args = parser
                    .args()
                    .iter()
                    .map(|&(s, e)| {
                        assert!(s <= e && e <= n, "range {s}..{e} outside request of {n}");
                        buf[s..e].to_vec()
                    })
                    .collect();
                requests.push(args);
                buf.drain(..n);
            }
            Ok(None) => {
                if fed == stream.len() {
                    return (requests, false);
                }
                let end = (fed + chunk).min(stream.len());
                buf.extend_from_slice(&stream[fed..end]);
                fed = end;
            }
            Err(_) => return (requests, true),
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
