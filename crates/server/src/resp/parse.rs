//! One-pass RESP2 request parser.
//!
//! A request is either a multibulk (`*N\r\n$len\r\narg\r\n...`) or an inline
//! line (`SET a "b c"\n`). The parser never builds a frame tree: it records
//! each argument as a `(start, end)` byte range into the caller's buffer, in a
//! `Vec` reused across requests. Inline arguments with quotes or escapes are
//! decoded *in place* (the decoded form is never longer than the raw form), so
//! they too are plain ranges.
//!
//! The parser is resumable: when a multibulk request is only partly in the
//! buffer it remembers how far it got, so a large request arriving in many
//! reads is scanned once, not once per read. Positions are relative to the
//! start of the request, which stays valid while the caller only consumes
//! whole requests from the front of its buffer.
//!
//! Safety: every claimed length is checked against [`Limits`] before anything
//! else happens, and the parser never reserves memory for a claimed length
//! (a client saying `$999999999999` costs nothing). Capacity for arguments is
//! reserved only up to a small bound; more grows as arguments actually arrive.

use std::fmt;

/// Size limits applied while parsing and executing requests (SPEC defaults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string (a value): 64 MiB.
    pub max_bulk_len: usize,
    /// Largest key, enforced by the commands: 64 KiB.
    pub max_key_len: usize,
    /// Largest single request (all its arguments and framing): 128 MiB.
    pub max_request_len: usize,
    /// Most arguments in one multibulk request.
    pub max_multibulk_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 64 << 20,
            max_key_len: 64 << 10,
            max_request_len: 128 << 20,
            max_multibulk_len: 1 << 20,
        }
    }
}

/// Redis's `PROTO_INLINE_MAX_SIZE`: the longest inline request, and the
/// longest `*N` / `$N` header line we wait for before calling it garbage.
pub const MAX_INLINE_LEN: usize = 64 << 10;

/// Arguments reserved up front at most, whatever `*N` claims.
const MAX_ARGS_PRESIZE: usize = 1024;

/// A malformed request. The message is in Redis's wording, without the
/// `ERR ` prefix; the connection replies with it and closes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn err(msg: &str) -> ProtocolError {
    ProtocolError(format!("Protocol error: {msg}"))
}

/// Where a partly received request stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Nothing parsed of the current request.
    Start,
    /// Inside a multibulk: `remaining` arguments still to read, the next at `pos`.
    Multibulk { remaining: usize, pos: usize },
    /// Inline request whose `\n` is not yet found in `buf[..scanned]`.
    Inline { scanned: usize },
}

/// A resumable RESP2 request parser; one per connection.
#[derive(Debug)]
pub struct RequestParser {
    limits: Limits,
    state: State,
    args: Vec<(usize, usize)>,
}

impl RequestParser {
    /// A parser enforcing `limits`.
    pub fn new(limits: Limits) -> Self {
        RequestParser {
            limits,
            state: State::Start,
            args: Vec::new(),
        }
    }

    /// The argument ranges of the request last returned complete, relative
    /// to the start of the buffer given to [`parse`](Self::parse).
    pub fn args(&self) -> &[(usize, usize)] {
        &self.args
    }

    /// Parses one request from the start of `buf`.
    ///
    /// - `Ok(None)`: incomplete; call again with the same request start and
    ///   more bytes appended.
    /// - `Ok(Some(n))`: a request of `n` bytes; its arguments are in
    ///   [`args`](Self::args). No arguments (an empty inline line, `*0`) means
    ///   there is nothing to run.
    /// - `Err`: the stream is not RESP; the connection must be closed.
    ///
    /// `buf` is mutable only so that inline quoting can be decoded in place.
    pub fn parse(&mut self, buf: &mut [u8]) -> Result<Option<usize>, ProtocolError> {
        let result = match self.state {
            State::Start => match buf.first() {
                None => return Ok(None),
                Some(b'*') => self.multibulk_header(buf),
                Some(_) => {
                    self.state = State::Inline { scanned: 0 };
                    self.inline(buf)
                }
            },
            State::Multibulk { .. } => self.multibulk_args(buf),
            State::Inline { .. } => self.inline(buf),
        };
        if !matches!(result, Ok(None)) {
            // Complete or broken: the next call starts a new request.
            self.state = State::Start;
        }
        result
    }

    fn multibulk_header(&mut self, buf: &[u8]) -> Result<Option<usize>, ProtocolError> {
        let (count, line_end) = match simple_length(buf, 1) {
            Some(found) => found,
            None => {
                let Some(line_end) = find_crlf(buf, 1) else {
                    if buf.len() > MAX_INLINE_LEN {
                        return Err(err("too big mbulk count string"));
                    }
                    return Ok(None);
                };
                let count =
                    parse_len(&buf[1..line_end]).ok_or_else(|| err("invalid multibulk length"))?;
                (count, line_end)
            }
        };
        if count > self.limits.max_multibulk_len as i64 {
            return Err(err("invalid multibulk length"));
        }
        self.args.clear();
        // Redis treats `*0` and `*-1` as an empty request.
        if count <= 0 {
            return Ok(Some(line_end + 2));
        }
        let count = count as usize;
        self.args.reserve(count.min(MAX_ARGS_PRESIZE));
        self.state = State::Multibulk {
            remaining: count,
            pos: line_end + 2,
        };
        self.multibulk_args(buf)
    }

    fn multibulk_args(&mut self, buf: &[u8]) -> Result<Option<usize>, ProtocolError> {
        let State::Multibulk {
            mut remaining,
            mut pos,
        } = self.state
        else {
            unreachable!("multibulk_args outside a multibulk")
        };
        while remaining > 0 {
            let Some(&first) = buf.get(pos) else { break };
            if first != b'$' {
                return Err(ProtocolError(format!(
                    "Protocol error: expected '$', got '{}'",
                    first.escape_ascii()
                )));
            }
            let (len, line_end) = match simple_length(buf, pos + 1) {
                Some(found) => found,
                None => {
                    let Some(line_end) = find_crlf(buf, pos + 1) else {
                        if buf.len() - pos > MAX_INLINE_LEN {
                            return Err(err("too big bulk count string"));
                        }
                        break;
                    };
                    let len = parse_len(&buf[pos + 1..line_end])
                        .ok_or_else(|| err("invalid bulk length"))?;
                    (len, line_end)
                }
            };
            if len < 0 || len > self.limits.max_bulk_len as i64 {
                return Err(err("invalid bulk length"));
            }
            let start = line_end + 2;
            // Both bounded by the limits above, so this cannot overflow.
            let end = start + len as usize;
            if end + 2 > self.limits.max_request_len {
                return Err(err("too big request"));
            }
            if buf.len() < end + 2 {
                break;
            }
            if &buf[end..end + 2] != b"\r\n" {
                return Err(err("bulk string not terminated by CRLF"));
            }
            self.args.push((start, end));
            pos = end + 2;
            remaining -= 1;
        }
        if remaining == 0 {
            return Ok(Some(pos));
        }
        self.state = State::Multibulk { remaining, pos };
        Ok(None)
    }

    fn inline(&mut self, buf: &mut [u8]) -> Result<Option<usize>, ProtocolError> {
        let State::Inline { scanned } = self.state else {
            unreachable!("inline outside an inline request")
        };
        let Some(nl) = buf[scanned..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| i + scanned)
        else {
            if buf.len() > MAX_INLINE_LEN {
                return Err(err("too big inline request"));
            }
            self.state = State::Inline { scanned: buf.len() };
            return Ok(None);
        };
        if nl > MAX_INLINE_LEN {
            return Err(err("too big inline request"));
        }
        let line_end = if nl > 0 && buf[nl - 1] == b'\r' {
            nl - 1
        } else {
            nl
        };
        self.args.clear();
        split_inline(&mut buf[..line_end], &mut self.args)?;
        Ok(Some(nl + 1))
    }
}

/// The common length line in one pass: 1 to 18 ASCII digits (so no
/// overflow), no leading zero but for "0" itself, then CRLF. Returns the
/// value and the index of the `\r`, as [`find_crlf`] and [`parse_len`]
/// would. Anything else (a sign, a leading zero, another byte, a line not
/// yet complete) is `None`, and the caller takes that general path, which
/// answers as Redis does; this only skips the second pass over the digits
/// (a fifth of an unpipelined GET's parsing, callgrind).
fn simple_length(buf: &[u8], from: usize) -> Option<(i64, usize)> {
    let limit = buf.len().min(from + 18);
    let mut v: i64 = 0;
    let mut i = from;
    while i < limit {
        let d = buf[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v * 10 + i64::from(d);
        i += 1;
    }
    if i == from || (buf[from] == b'0' && i > from + 1) {
        return None;
    }
    (buf.get(i) == Some(&b'\r') && buf.get(i + 1) == Some(&b'\n')).then_some((v, i))
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 1 < buf.len() {
        match buf[i..].iter().position(|&b| b == b'\r') {
            None => return None,
            Some(off) => {
                i += off;
                if buf.get(i + 1) == Some(&b'\n') {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

fn parse_len(s: &[u8]) -> Option<i64> {
    parse_i64(s)
}

pub use tiercache_engine::parse_i64;

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Redis's `sdssplitargs` of `line` (quotes and escapes decoded); `None`
/// for unbalanced quotes.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut copy = line.to_vec();
    let mut ranges = Vec::new();
    split_inline(&mut copy, &mut ranges).ok()?;
    Some(ranges.iter().map(|&(a, b)| copy[a..b].to_vec()).collect())
}

/// Redis's `sdssplitargs`, decoding in place: the write cursor never passes
/// the read cursor because every escape or quote shrinks the text.
fn split_inline(line: &mut [u8], args: &mut Vec<(usize, usize)>) -> Result<(), ProtocolError> {
    let unbalanced = || err("unbalanced quotes in request");
    let n = line.len();
    let mut r = 0;
    let mut w;
    loop {
        while r < n && is_space(line[r]) {
            r += 1;
        }
        if r == n {
            return Ok(());
        }
        w = r;
        let start = w;
        let (mut in_dq, mut in_sq) = (false, false);
        loop {
            if in_dq {
                if r == n {
                    return Err(unbalanced());
                }
                let c = line[r];
                if c == b'\\' && r + 3 < n && line[r + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex(line[r + 2]), hex(line[r + 3])) {
                        line[w] = h * 16 + l;
                        w += 1;
                        r += 4;
                        continue;
                    }
                }
                if c == b'\\' && r + 1 < n {
                    line[w] = match line[r + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    };
                    w += 1;
                    r += 2;
                } else if c == b'"' {
                    // The closing quote must end the argument.
                    if r + 1 < n && !is_space(line[r + 1]) {
                        return Err(unbalanced());
                    }
                    r += 1;
                    break;
                } else {
                    line[w] = c;
                    w += 1;
                    r += 1;
                }
            } else if in_sq {
                if r == n {
                    return Err(unbalanced());
                }
                let c = line[r];
                if c == b'\\' && r + 1 < n && line[r + 1] == b'\'' {
                    line[w] = b'\'';
                    w += 1;
                    r += 2;
                } else if c == b'\'' {
                    if r + 1 < n && !is_space(line[r + 1]) {
                        return Err(unbalanced());
                    }
                    r += 1;
                    break;
                } else {
                    line[w] = c;
                    w += 1;
                    r += 1;
                }
            } else {
                if r == n {
                    break;
                }
                match line[r] {
                    b' ' | b'\n' | b'\r' | b'\t' => break,
                    b'"' => in_dq = true,
                    b'\'' => in_sq = true,
                    c => {
                        line[w] = c;
                        w += 1;
                    }
                }
                r += 1;
            }
        }
        args.push((start, w));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Parsed = Result<Option<(usize, Vec<Vec<u8>>)>, ProtocolError>;

    fn parse_all(input: &[u8]) -> Parsed {
        let mut buf = input.to_vec();
        let mut p = RequestParser::new(Limits::default());
        Ok(p.parse(&mut buf)?.map(|n| {
            (
                n,
                p.args().iter().map(|&(s, e)| buf[s..e].to_vec()).collect(),
            )
        }))
    }

    #[test]
    fn quoted_inline() {
        let input = b"set \"a\\x41\\n\" 'it\\'s' x\"y z\"\r\n";
        let (n, args) = parse_all(input).unwrap().unwrap();
        assert_eq!(n, input.len());
        assert_eq!(
            args,
            vec![
                b"set".to_vec(),
                b"aA\n".to_vec(),
                b"it's".to_vec(),
                b"xy z".to_vec()
            ]
        );
    }

    #[test]
    fn the_one_pass_length_agrees_with_the_general_path() {
        // Every string up to 6 bytes over an alphabet with digits, a sign,
        // CR, LF and another byte, behind a one-byte prefix as in `$…`.
        let alphabet = b"019-\r\nx";
        let mut checked = 0;
        let mut fast = 0;
        for len in 0..=6u32 {
            for mut code in 0..alphabet.len().pow(len) {
                let mut buf = vec![b'$'];
                for _ in 0..len {
                    buf.push(alphabet[code % alphabet.len()]);
                    code /= alphabet.len();
                }
                checked += 1;
                if let Some((v, end)) = simple_length(&buf, 1) {
                    fast += 1;
                    assert_eq!(find_crlf(&buf, 1), Some(end), "{:?}", buf.escape_ascii());
                    assert_eq!(parse_len(&buf[1..end]), Some(v), "{:?}", buf.escape_ascii());
                }
            }
        }
        assert!(
            checked > 100_000 && fast > 100,
            "{checked} cases, {fast} fast"
        );
        // The usual shapes take the fast path; 19 digits do not.
        assert_eq!(simple_length(b"*3\r\n", 1), Some((3, 2)));
        assert_eq!(simple_length(b"$0\r\n", 1), Some((0, 2)));
        assert_eq!(
            simple_length(b"$123456789012345678\r\n", 1),
            Some((123456789012345678, 19))
        );
        assert_eq!(simple_length(b"$1234567890123456789\r\n", 1), None);
        assert_eq!(simple_length(b"$07\r\n", 1), None);
        assert_eq!(simple_length(b"$12\r", 1), None);
    }
}
