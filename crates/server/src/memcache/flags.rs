//! Token-level helpers shared by the parser and the commands: numbers read
//! the way memcached reads them (`safe_strtoul` & co., quirks included),
//! base64 for binary meta keys, and the meta-command flag pre-pass.

/// `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C `strtoull`/`strtoll` core: leading space, optional sign, decimal
/// digits. Returns `(negative, magnitude, rest)`, or `None` when no digit
/// was read or the magnitude overflows `u64` (`ERANGE`). Redis's
/// `string2ull` (stream IDs) reads numbers with it too.
pub(crate) fn strto(s: &[u8]) -> Option<(bool, u64, &[u8])> {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let start = i;
    let mut v: u64 = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        v = v.checked_mul(10)?.checked_add(u64::from(s[i] - b'0'))?;
        i += 1;
    }
    if i == start {
        return None;
    }
    Some((neg, v, &s[i..]))
}

/// What may follow a number: the end of the token or a space.
fn ends_ok(rest: &[u8]) -> bool {
    rest.first().map_or(true, |&b| is_c_space(b))
}

/// memcached's `safe_strtoull`: a 64-bit unsigned decimal. `-N` wraps as C
/// does unless the result looks negative as a signed number.
pub fn strtoull(s: &[u8]) -> Option<u64> {
    let (neg, mag, rest) = strto(s)?;
    if !ends_ok(rest) {
        return None;
    }
    let v = if neg { mag.wrapping_neg() } else { mag };
    if (v as i64) < 0 && neg {
        return None;
    }
    Some(v)
}

/// memcached's `safe_strtoul` into a `uint32_t` on a 64-bit build: parsed
/// as 64 bits, then truncated (`set k 4294967296 ...` stores flags 0).
pub fn strtoul32(s: &[u8]) -> Option<u32> {
    strtoull(s).map(|v| v as u32)
}

/// memcached's `safe_strtol` into an `int32_t`: parsed as a C `long`, then
/// truncated to 32 bits.
pub fn strtol32(s: &[u8]) -> Option<i32> {
    let (neg, mag, rest) = strto(s)?;
    if !ends_ok(rest) {
        return None;
    }
    let v: i64 = if neg {
        if mag > 1 << 63 {
            return None;
        }
        (mag as i64).wrapping_neg()
    } else {
        i64::try_from(mag).ok()?
    };
    Some(v as i32)
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64_value(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes standard padded base64 in place; returns the decoded length, or
/// `None` when the text is not base64 or decodes to nothing.
pub fn base64_decode_in_place(buf: &mut [u8]) -> Option<usize> {
    if buf.is_empty() || buf.len() % 4 != 0 {
        return None;
    }
    let mut out = 0;
    let quads = buf.len() / 4;
    for q in 0..quads {
        let chunk = [buf[4 * q], buf[4 * q + 1], buf[4 * q + 2], buf[4 * q + 3]];
        let last = q + 1 == quads;
        let pad = match (chunk[2], chunk[3]) {
            (b'=', b'=') if last => 2,
            (_, b'=') if last => 1,
            _ => 0,
        };
        let mut n: u32 = 0;
        for &c in &chunk[..4 - pad] {
            n = (n << 6) | b64_value(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        // The write cursor (3 per 4 read) never passes the read cursor.
        for &b in &bytes[..3 - pad] {
            buf[out] = b;
            out += 1;
        }
    }
    (out > 0).then_some(out)
}

/// Appends the standard padded base64 encoding of `data`.
pub fn base64_encode(data: &[u8], out: &mut Vec<u8>) {
    for chunk in data.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        let sextets = [(n >> 18) & 63, (n >> 12) & 63, (n >> 6) & 63, n & 63];
        for (i, s) in sextets.iter().enumerate() {
            out.push(if i <= chunk.len() {
                B64[*s as usize]
            } else {
                b'='
            });
        }
    }
}

/// Longest opaque (`O`) token echoed back.
pub const MAX_OPAQUE_LEN: usize = 32;

/// The options of a meta command (`mg ms md ma`), read in one pass over
/// its flag tokens as memcached's `_meta_flag_preparse` does: each flag at
/// most once, unknown flags refused. Values that need the item (which
/// flags to echo, in which order) are taken from the tokens again when the
/// reply is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaFlags {
    /// `b`: the key token was base64 and has been decoded in place.
    pub key_binary: bool,
    /// `q`: quiet mode (nominal replies suppressed).
    pub quiet: bool,
    /// `v`: return the value.
    pub value: bool,
    /// `N<ttl>`: create on miss (autovivify) with this exptime.
    pub vivify: Option<i32>,
    /// `T<ttl>`: update the exptime.
    pub ttl: Option<i32>,
    /// `C<cas>`: compare against this cas unique.
    pub cas: Option<u64>,
    /// `F<flags>`: client flags for `ms`.
    pub client_flags: u32,
    /// `M<mode>`: the mode switch character of `ms`/`ma`, if given.
    pub mode: Option<u8>,
    /// `D<delta>` for `ma` (default 1).
    pub delta: u64,
    /// `J<initial>` for `ma` autovivify (default 0).
    pub initial: u64,
    /// `I`: invalidate (`md`, `ms` with `C`).
    pub invalidate: bool,
}

impl MetaFlags {
    /// Pre-parses the flag tokens `tokens[start..]` of the line `line`,
    /// decoding the key (`tokens[1]`) in place when `b` is present (and
    /// updating its range). The error is memcached's message.
    pub fn parse(
        line: &mut [u8],
        tokens: &mut [(usize, usize)],
        start: usize,
    ) -> Result<MetaFlags, &'static str> {
        let mut f = MetaFlags {
            delta: 1,
            ..MetaFlags::default()
        };
        let mut seen = [false; 128];
        let mut error: Option<&'static str> = None;
        let bad_token = "CLIENT_ERROR bad token in command line format";
        for i in start..tokens.len() {
            let (s, e) = tokens[i];
            let o = line[s];
            if o >= 127 || seen[o as usize] {
                return Err("CLIENT_ERROR duplicate flag");
            }
            seen[o as usize] = true;
            let arg = &line[s + 1..e];
            match o {
                b'b' => {
                    let (ks, ke) = tokens[1];
                    match base64_decode_in_place(&mut line[ks..ke]) {
                        Some(n) => tokens[1] = (ks, ks + n),
                        None => {
                            error = Some("CLIENT_ERROR error decoding key");
                            tokens[1] = (ks, ks);
                        }
                    }
                    f.key_binary = true;
                }
                b'N' => match strtol32(arg) {
                    Some(t) => f.vivify = Some(t),
                    None => error = Some(bad_token),
                },
                b'T' => match strtol32(arg) {
                    Some(t) => f.ttl = Some(t),
                    None => error = Some(bad_token),
                },
                b'R' => {
                    if strtol32(arg).is_none() {
                        error = Some(bad_token);
                    }
                }
                b'C' => match strtoull(arg) {
                    Some(c) => f.cas = Some(c),
                    None => error = Some(bad_token),
                },
                b'F' => match strtoul32(arg) {
                    Some(v) => f.client_flags = v,
                    None => {
                        error.get_or_insert("CLIENT_ERROR bad command line format");
                    }
                },
                b'M' => {
                    if e - s != 2 {
                        error = Some("CLIENT_ERROR incorrect length for M token");
                    } else {
                        f.mode = Some(line[s + 1]);
                    }
                }
                b'J' => match strtoull(arg) {
                    Some(v) => f.initial = v,
                    None => error = Some("CLIENT_ERROR invalid numeric initial value"),
                },
                b'D' => match strtoull(arg) {
                    Some(v) => f.delta = v,
                    None => error = Some("CLIENT_ERROR invalid numeric delta value"),
                },
                b'v' => f.value = true,
                b'q' => f.quiet = true,
                b'I' => f.invalidate = true,
                b'l' | b'O' | b'P' | b'L' | b'k' | b's' | b't' | b'c' | b'f' | b'h' | b'u' => {}
                _ => return Err("CLIENT_ERROR invalid flag"),
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_parse_like_memcached() {
        assert_eq!(strtoull(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(strtoull(b"18446744073709551616"), None);
        assert_eq!(strtoull(b"+5"), Some(5));
        assert_eq!(strtoull(b"05"), Some(5));
        assert_eq!(strtoull(b"-5"), None);
        assert_eq!(strtoull(b"-0"), Some(0));
        assert_eq!(strtoull(b" 12 3"), Some(12));
        assert_eq!(strtoull(b"12abc"), None);
        assert_eq!(strtoull(b""), None);
        assert_eq!(strtoull(b"0x5"), None);
        assert_eq!(strtoul32(b"4294967296"), Some(0));
        assert_eq!(strtoul32(b"9223372036854775808"), Some(0));
        assert_eq!(strtoul32(b"-1"), None);
        assert_eq!(strtol32(b"-1"), Some(-1));
        assert_eq!(strtol32(b"2147483648"), Some(i32::MIN));
        assert_eq!(strtol32(b"9999999999"), Some(9_999_999_999i64 as i32));
        assert_eq!(strtol32(b"99999999999999999999"), None);
        assert_eq!(strtol32(b"1x"), None);
    }

    #[test]
    fn base64_round_trips_and_rejects_garbage() {
        for data in [&b"a"[..], b"ab", b"abc", b"\x00\xff\r\n key", b"abcdef"] {
            let mut enc = Vec::new();
            base64_encode(data, &mut enc);
            let n = base64_decode_in_place(&mut enc).unwrap();
            assert_eq!(&enc[..n], data);
        }
        let mut enc = Vec::new();
        base64_encode(b"a", &mut enc);
        assert_eq!(enc, b"YQ==");
        for bad in [&b"!!!"[..], b"YQ=", b"Y===", b"YQ==YQ==", b"", b"a b="] {
            assert_eq!(base64_decode_in_place(&mut bad.to_vec()), None, "{bad:?}");
        }
    }

    fn flags(line: &str, start: usize) -> Result<MetaFlags, &'static str> {
        let mut buf = line.as_bytes().to_vec();
        let mut tokens = Vec::new();
        let mut s = 0;
        for part in line.split(' ') {
            tokens.push((s, s + part.len()));
            s += part.len() + 1;
        }
        MetaFlags::parse(&mut buf, &mut tokens, start)
    }

    #[test]
    fn meta_flags_follow_memcached_precedence() {
        let f = flags("mg k v q T30 N-1 C7 D9 J3 MI F1", 2).unwrap();
        assert!(f.value && f.quiet);
        assert_eq!(
            (
                f.ttl,
                f.vivify,
                f.cas,
                f.delta,
                f.initial,
                f.mode,
                f.client_flags
            ),
            (Some(30), Some(-1), Some(7), 9, 3, Some(b'I'), 1)
        );
        assert_eq!(flags("mg k v v", 2), Err("CLIENT_ERROR duplicate flag"));
        assert_eq!(flags("mg k x", 2), Err("CLIENT_ERROR invalid flag"));
        assert_eq!(
            flags("mg k Tx", 2),
            Err("CLIENT_ERROR bad token in command line format")
        );
        // An unknown flag wins over an earlier value error.
        assert_eq!(flags("mg k Tx z", 2), Err("CLIENT_ERROR invalid flag"));
        assert_eq!(
            flags("ma k D-1", 2),
            Err("CLIENT_ERROR invalid numeric delta value")
        );
        assert_eq!(
            flags("ms k 2 MXY", 3),
            Err("CLIENT_ERROR incorrect length for M token")
        );
        assert_eq!(flags("mg !!! b", 2), Err("CLIENT_ERROR error decoding key"));
        assert!(flags("mg YQ== b", 2).unwrap().key_binary);
    }
}
