//! The least a memcached server can do for `mc-load`'s `set` and `get`
//! tests (the Rust twin of `../responder.h`): STORED for a `set` with its
//! data block, END for any other line; nothing is stored.

/// Consumes every complete command at the front of `input`, appending its
/// reply to `out`.
pub fn process(input: &mut Vec<u8>, out: &mut Vec<u8>) {
    let mut pos = 0;
    while let Some(nl) = input[pos..].iter().position(|&b| b == b'\n') {
        let line = &input[pos..pos + nl + 1];
        if line[0] == b's' {
            let words = line.trim_ascii_end();
            let n: usize = words
                .rsplit(|&b| b == b' ')
                .next()
                .and_then(|w| std::str::from_utf8(w).ok()?.parse().ok())
                .unwrap_or(0);
            if input.len() - pos < nl + 1 + n + 2 {
                break;
            }
            pos += nl + 1 + n + 2;
            out.extend_from_slice(b"STORED\r\n");
        } else {
            pos += nl + 1;
            out.extend_from_slice(b"END\r\n");
        }
    }
    input.drain(..pos);
}

/// The port from the command line (`floor-* PORT`).
pub fn port() -> u16 {
    std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("usage: floor-* PORT")
}
