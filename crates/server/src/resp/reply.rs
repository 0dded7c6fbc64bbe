//! RESP2 reply encoding, straight into the connection's output buffer.
//!
//! Every function appends one reply (or an array header) to `out`; the
//! connection writes the whole buffer once per batch. Integers are
//! formatted on the stack, so encoding a reply allocates nothing beyond the
//! buffer's own growth.

use bytes::{BufMut, BytesMut};

/// `+s\r\n`. `s` must not contain CR or LF (callers pass constants).
pub fn simple(out: &mut BytesMut, s: &str) {
    out.reserve(s.len() + 3);
    out.put_u8(b'+');
    out.put_slice(s.as_bytes());
    out.put_slice(b"\r\n");
}

/// `+OK\r\n`.
pub fn ok(out: &mut BytesMut) {
    out.put_slice(b"+OK\r\n");
}

/// `-msg\r\n`. `msg` starts with the error code (`ERR`, `OOM`, ...). CR and
/// LF would end the reply early and desynchronise the client, so they
/// become spaces, as Redis does.
pub fn error(out: &mut BytesMut, msg: &str) {
    out.reserve(msg.len() + 3);
    out.put_u8(b'-');
    for &b in msg.as_bytes() {
        out.put_u8(if b == b'\r' || b == b'\n' { b' ' } else { b });
    }
    out.put_slice(b"\r\n");
}

/// `:n\r\n`.
pub fn integer(out: &mut BytesMut, n: i64) {
    let mut digits = [0u8; 20];
    out.put_u8(b':');
    out.put_slice(format_i64(n, &mut digits));
    out.put_slice(b"\r\n");
}

/// `$len\r\nbytes\r\n`.
pub fn bulk(out: &mut BytesMut, bytes: &[u8]) {
    let mut digits = [0u8; 20];
    let len = format_i64(bytes.len() as i64, &mut digits);
    out.reserve(bytes.len() + len.len() + 5);
    out.put_u8(b'$');
    out.put_slice(len);
    out.put_slice(b"\r\n");
    out.put_slice(bytes);
    out.put_slice(b"\r\n");
}

/// `$-1\r\n`: the RESP2 null (a missing key).
pub fn null(out: &mut BytesMut) {
    out.put_slice(b"$-1\r\n");
}

/// A bulk string, or null when absent.
pub fn bulk_or_null(out: &mut BytesMut, bytes: Option<&[u8]>) {
    match bytes {
        Some(b) => bulk(out, b),
        None => null(out),
    }
}

/// `*n\r\n`, followed by `n` replies the caller appends.
pub fn array(out: &mut BytesMut, n: usize) {
    let mut digits = [0u8; 20];
    out.put_u8(b'*');
    out.put_slice(format_i64(n as i64, &mut digits));
    out.put_slice(b"\r\n");
}

/// `*-1\r\n`: the RESP2 null array.
pub fn null_array(out: &mut BytesMut) {
    out.put_slice(b"*-1\r\n");
}

/// Formats `n` in decimal into `buf`, returning the used tail.
pub fn format_i64(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    // unsigned_abs handles i64::MIN, whose absolute value does not fit in i64.
    let mut v = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_extremes() {
        let mut b = [0u8; 20];
        assert_eq!(format_i64(0, &mut b), b"0");
        assert_eq!(format_i64(i64::MIN, &mut b), b"-9223372036854775808");
        assert_eq!(format_i64(i64::MAX, &mut b), b"9223372036854775807");
    }

    #[test]
    fn encodes_replies() {
        let mut out = BytesMut::new();
        simple(&mut out, "PONG");
        error(&mut out, "ERR bad\r\nthing");
        integer(&mut out, -42);
        bulk(&mut out, b"hi");
        null(&mut out);
        array(&mut out, 2);
        null_array(&mut out);
        assert_eq!(
            &out[..],
            b"+PONG\r\n-ERR bad  thing\r\n:-42\r\n$2\r\nhi\r\n$-1\r\n*2\r\n*-1\r\n"
        );
    }
}
