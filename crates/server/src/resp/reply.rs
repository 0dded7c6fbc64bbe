//! Reply encoding (RESP2 and RESP3), straight into the connection's output
//! buffer.
//!
//! Every function appends one reply (or an aggregate header) to `out`; the
//! connection writes the whole buffer once per batch. Integers are
//! formatted on the stack, so encoding a reply allocates nothing beyond the
//! buffer's own growth.
//!
//! Replies whose encoding depends on the protocol the client chose with
//! `HELLO` take a [`Proto`]: RESP3 has its own null (`_`), maps (`%`),
//! sets (`~`), doubles (`,`), booleans (`#`) and verbatim strings (`=`);
//! RESP2 falls back to what Redis 7 sends there (`$-1` or `*-1`, flat
//! arrays, bulk strings, integers).

use bytes::{BufMut, BytesMut};

/// The protocol a connection speaks: RESP2 until `HELLO 3`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Proto {
    /// RESP2, the default.
    #[default]
    Resp2,
    /// RESP3.
    Resp3,
}

impl Proto {
    /// The protocol version number (`2` or `3`), as `HELLO` reports it.
    pub fn version(self) -> i64 {
        match self {
            Proto::Resp2 => 2,
            Proto::Resp3 => 3,
        }
    }
}

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

/// The null a missing key gets: `$-1` in RESP2, `_` in RESP3.
pub fn null(out: &mut BytesMut, proto: Proto) {
    out.put_slice(match proto {
        Proto::Resp2 => b"$-1\r\n",
        Proto::Resp3 => b"_\r\n",
    });
}

/// A bulk string, or null when absent.
pub fn bulk_or_null(out: &mut BytesMut, bytes: Option<&[u8]>, proto: Proto) {
    match bytes {
        Some(b) => bulk(out, b),
        None => null(out, proto),
    }
}

/// `*n\r\n`, followed by `n` replies the caller appends.
pub fn array(out: &mut BytesMut, n: usize) {
    let mut digits = [0u8; 20];
    out.put_u8(b'*');
    out.put_slice(format_i64(n as i64, &mut digits));
    out.put_slice(b"\r\n");
}

/// The null array: `*-1` in RESP2, `_` in RESP3.
pub fn null_array(out: &mut BytesMut, proto: Proto) {
    out.put_slice(match proto {
        Proto::Resp2 => b"*-1\r\n",
        Proto::Resp3 => b"_\r\n",
    });
}

fn header(out: &mut BytesMut, kind: u8, n: usize) {
    let mut digits = [0u8; 20];
    out.put_u8(kind);
    out.put_slice(format_i64(n as i64, &mut digits));
    out.put_slice(b"\r\n");
}

/// A map of `n` pairs (`%n`), whose `2n` elements the caller appends; a
/// flat array of `2n` elements in RESP2.
pub fn map(out: &mut BytesMut, n: usize, proto: Proto) {
    match proto {
        Proto::Resp2 => header(out, b'*', 2 * n),
        Proto::Resp3 => header(out, b'%', n),
    }
}

/// A set of `n` elements (`~n`); an array in RESP2.
pub fn set(out: &mut BytesMut, n: usize, proto: Proto) {
    header(out, if proto == Proto::Resp3 { b'~' } else { b'*' }, n);
}

/// A push of `n` elements (`>n`, pub/sub messages and confirmations); an
/// array in RESP2.
pub fn push(out: &mut BytesMut, n: usize, proto: Proto) {
    header(out, if proto == Proto::Resp3 { b'>' } else { b'*' }, n);
}

/// A double (`,1.5`); a bulk string in RESP2. Formatted as Redis 7.0's
/// `addReplyDouble` does ([`format_g17`]).
pub fn double(out: &mut BytesMut, v: f64, proto: Proto) {
    let text = format_g17(v);
    match proto {
        Proto::Resp2 => bulk(out, text.as_bytes()),
        Proto::Resp3 => {
            out.put_u8(b',');
            out.put_slice(text.as_bytes());
            out.put_slice(b"\r\n");
        }
    }
}

/// `v` as C's `printf("%.17g")` prints it (Redis 7.0's replies of
/// doubles: `0.1` is `0.10000000000000001`, `1e+21`), with `inf`, `-inf`
/// and `nan` spelled as Redis spells them.
///
/// ```
/// use tiercache_server::resp::reply::format_g17;
/// assert_eq!(format_g17(1.5), "1.5");
/// assert_eq!(format_g17(0.1), "0.10000000000000001");
/// assert_eq!(format_g17(1e21), "1e+21");
/// assert_eq!(format_g17(1e-5), "1.0000000000000001e-05");
/// assert_eq!(format_g17(123456789.0), "123456789");
/// assert_eq!(format_g17(123456789012345678.0), "1.2345678901234568e+17");
/// assert_eq!(format_g17(-0.0), "-0");
/// ```
pub fn format_g17(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // 17 significant digits, rounded once; %g then picks the notation from
    // that rounding's exponent.
    let sci = format!("{v:.16e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent");
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.abs())
    } else {
        strip(&format!("{v:.*}", (16 - exp) as usize))
    }
}

/// `v` as Redis 7.0's `d2string` writes it (the text of a score in a
/// listpack, which `ZSCAN` replies): an integral value within ±2^62 as an
/// integer, anything else as [`format_g17`].
///
/// ```
/// use tiercache_server::resp::reply::format_d2string;
/// assert_eq!(format_d2string(123456789012345678.0), "123456789012345680");
/// assert_eq!(format_d2string(1e21), "1e+21");
/// assert_eq!(format_d2string(0.5), "0.5");
/// ```
pub fn format_d2string(v: f64) -> String {
    // Redis's double2ll: within ±LLONG_MAX/2 and integral.
    let half = (i64::MAX / 2) as f64;
    if v != 0.0 && (-half..=half).contains(&v) && v == (v as i64) as f64 {
        return (v as i64).to_string();
    }
    format_g17(v)
}

/// A boolean (`#t` / `#f`); the integer 1 or 0 in RESP2.
pub fn boolean(out: &mut BytesMut, b: bool, proto: Proto) {
    match proto {
        Proto::Resp2 => integer(out, b as i64),
        Proto::Resp3 => out.put_slice(if b { b"#t\r\n" } else { b"#f\r\n" }),
    }
}

/// Human-readable text (`INFO`, `CLIENT LIST`): a verbatim string of
/// format `txt` in RESP3, a bulk string in RESP2.
pub fn verbatim(out: &mut BytesMut, text: &[u8], proto: Proto) {
    match proto {
        Proto::Resp2 => bulk(out, text),
        Proto::Resp3 => {
            header(out, b'=', text.len() + 4);
            out.put_slice(b"txt:");
            out.put_slice(text);
            out.put_slice(b"\r\n");
        }
    }
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
        null(&mut out, Proto::Resp2);
        array(&mut out, 2);
        null_array(&mut out, Proto::Resp2);
        assert_eq!(
            &out[..],
            b"+PONG\r\n-ERR bad  thing\r\n:-42\r\n$2\r\nhi\r\n$-1\r\n*2\r\n*-1\r\n"
        );
    }

    #[test]
    fn encodes_per_protocol() {
        let both = |f: &dyn Fn(&mut BytesMut, Proto)| {
            let (mut a, mut b) = (BytesMut::new(), BytesMut::new());
            f(&mut a, Proto::Resp2);
            f(&mut b, Proto::Resp3);
            (a, b)
        };
        assert_eq!(
            both(&|o, p| null(o, p)),
            (b"$-1\r\n"[..].into(), b"_\r\n"[..].into())
        );
        assert_eq!(
            both(&|o, p| null_array(o, p)),
            (b"*-1\r\n"[..].into(), b"_\r\n"[..].into())
        );
        assert_eq!(
            both(&|o, p| map(o, 2, p)),
            (b"*4\r\n"[..].into(), b"%2\r\n"[..].into())
        );
        assert_eq!(
            both(&|o, p| set(o, 2, p)),
            (b"*2\r\n"[..].into(), b"~2\r\n"[..].into())
        );
        assert_eq!(
            both(&|o, p| double(o, 1.5, p)),
            (b"$3\r\n1.5\r\n"[..].into(), b",1.5\r\n"[..].into())
        );
        assert_eq!(
            both(&|o, p| boolean(o, true, p)),
            (b":1\r\n"[..].into(), b"#t\r\n"[..].into())
        );
        assert_eq!(
            both(&|o, p| verbatim(o, b"a:1", p)),
            (b"$3\r\na:1\r\n"[..].into(), b"=7\r\ntxt:a:1\r\n"[..].into())
        );
    }
}
