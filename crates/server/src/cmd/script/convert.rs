//! Conversions between RESP replies and Lua values, as Redis 7.0's
//! `script_lua.c` makes them.
//!
//! A command run by `redis.call` answers RESP bytes (in the protocol the
//! script chose with `redis.setresp`); [`parse_reply`] reads them back into
//! a [`Reply`] and [`reply_to_lua`] turns it into a Lua value: integer ->
//! number, bulk -> string, null bulk or null array -> `false`, array ->
//! table, status -> `{ok=...}`, error -> `{err=...}`, and in RESP3 null ->
//! `nil`, map -> `{map={...}}`, set -> `{set={...}}`, double ->
//! `{double=...}`, boolean -> boolean, big number -> `{big_number=...}`,
//! verbatim string -> `{verbatim_string={format=..., string=...}}`.
//!
//! The script's return value goes the other way ([`lua_to_resp`]): number
//! -> integer (truncated as x86's `(long long)`: NaN, infinities and
//! numbers out of range are the minimum), string -> bulk, `true` -> 1 (a RESP3 boolean when
//! the script chose RESP3), `false` and `nil` -> null, a table with `err`
//! -> error, with `ok` -> status, then the RESP3 forms above, else an array
//! of the table's items from 1 up to the first `nil`.

use crate::resp::reply::{self, Proto};
use bytes::{BufMut, BytesMut};
use mlua::{Lua, Table, Value};

/// A reply as RESP2 or RESP3 carries it (attributes dropped).
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// `+text`.
    Status(Vec<u8>),
    /// `-CODE message`.
    Error(Vec<u8>),
    /// `:n`.
    Int(i64),
    /// `$n` bulk string.
    Bulk(Vec<u8>),
    /// `$-1` or `*-1` (RESP2 null bulk, null array).
    NullBulk,
    /// `_` (the RESP3 null).
    Null,
    /// `*n`.
    Array(Vec<Reply>),
    /// `,d` (RESP3 double).
    Double(f64),
    /// `#t` / `#f` (RESP3 boolean).
    Bool(bool),
    /// `(digits` (RESP3 big number).
    BigNumber(Vec<u8>),
    /// `=n` (RESP3 verbatim string): format and text.
    Verbatim(Vec<u8>, Vec<u8>),
    /// `%n` (RESP3 map).
    Map(Vec<(Reply, Reply)>),
    /// `~n` (RESP3 set).
    Set(Vec<Reply>),
}

/// The deepest nesting converted; deeper answers Redis's stack error.
const MAX_DEPTH: usize = 1000;

/// The deepest reply [`parse_reply`] reads (commands' replies nest a few
/// levels).
const PARSE_MAX_DEPTH: usize = 128;

/// Parses one complete reply at the start of `buf`: the reply and the
/// bytes it took, or `None` when `buf` holds no complete valid reply.
pub fn parse_reply(buf: &[u8]) -> Option<(Reply, usize)> {
    parse_at(buf, 0, 0)
}

fn line(buf: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let end = at + memchr::memchr(b'\r', buf.get(at..)?)?;
    (buf.get(end + 1) == Some(&b'\n')).then(|| (&buf[at..end], end + 2))
}

fn number(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn parse_at(buf: &[u8], at: usize, depth: usize) -> Option<(Reply, usize)> {
    if depth > PARSE_MAX_DEPTH {
        return None;
    }
    let kind = *buf.get(at)?;
    let (text, next) = line(buf, at + 1)?;
    let items = |n: i64, next: usize| -> Option<(Vec<Reply>, usize)> {
        let mut items = Vec::with_capacity(n.clamp(0, 1024) as usize);
        let mut at = next;
        for _ in 0..n {
            let (item, end) = parse_at(buf, at, depth + 1)?;
            items.push(item);
            at = end;
        }
        Some((items, at))
    };
    let blob = |n: i64, next: usize| -> Option<(&[u8], usize)> {
        let n = usize::try_from(n).ok()?;
        let body = buf.get(next..next.checked_add(n)?)?;
        (buf.get(next + n..next + n + 2)? == b"\r\n").then_some((body, next + n + 2))
    };
    Some(match kind {
        b'+' => (Reply::Status(text.to_vec()), next),
        b'-' => (Reply::Error(text.to_vec()), next),
        b':' => (Reply::Int(number(text)?), next),
        b'_' => (Reply::Null, next),
        b'#' => (Reply::Bool(text == b"t"), next),
        b',' => {
            let t = std::str::from_utf8(text).ok()?;
            let d = match t {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" => f64::NAN,
                t => t.parse().ok()?,
            };
            (Reply::Double(d), next)
        }
        b'(' => (Reply::BigNumber(text.to_vec()), next),
        b'$' | b'=' => {
            let n = number(text)?;
            if n < 0 {
                (Reply::NullBulk, next)
            } else {
                let (body, end) = blob(n, next)?;
                if kind == b'=' {
                    let (format, text) = (body.get(..3)?, body.get(4..)?);
                    (Reply::Verbatim(format.to_vec(), text.to_vec()), end)
                } else {
                    (Reply::Bulk(body.to_vec()), end)
                }
            }
        }
        b'*' | b'~' | b'>' => {
            let n = number(text)?;
            if n < 0 {
                (Reply::NullBulk, next)
            } else {
                let (items, end) = items(n, next)?;
                if kind == b'~' {
                    (Reply::Set(items), end)
                } else {
                    (Reply::Array(items), end)
                }
            }
        }
        b'%' | b'|' => {
            let n = number(text)?;
            let (flat, end) = items(n.checked_mul(2)?, next)?;
            let mut pairs = Vec::with_capacity(flat.len() / 2);
            let mut it = flat.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            if kind == b'|' {
                // An attribute: dropped, the reply it annotates follows.
                return parse_at(buf, end, depth + 1);
            }
            (Reply::Map(pairs), end)
        }
        _ => return None,
    })
}

/// Redis's `{err="CODE message"}` table for an error message: a leading
/// `-` is dropped, a message without a code gets `ERR`, and trailing CR/LF
/// are trimmed (`luaPushErrorBuff`).
pub fn error_table(lua: &Lua, msg: &[u8]) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", lua.create_string(error_text(msg))?)?;
    Ok(t)
}

/// The text of [`error_table`]'s `err` field.
pub fn error_text(msg: &[u8]) -> Vec<u8> {
    let (code, rest): (&[u8], &[u8]) = match msg.strip_prefix(b"-") {
        Some(m) => match m.iter().position(|&b| b == b' ') {
            Some(sp) => (&m[..sp], &m[sp + 1..]),
            None => (b"ERR", m),
        },
        None => (b"ERR", msg),
    };
    let trim = |s: &[u8]| -> Vec<u8> {
        let s = s
            .iter()
            .position(|b| !b"\r\n".contains(b))
            .map_or(&[][..], |i| &s[i..]);
        let end = s
            .iter()
            .rposition(|b| !b"\r\n".contains(b))
            .map_or(0, |i| i + 1);
        s[..end].to_vec()
    };
    let mut out = code.to_vec();
    out.push(b' ');
    out.extend(trim(rest));
    out
}

/// A command's reply as the Lua value `redis.call` returns.
pub fn reply_to_lua(lua: &Lua, r: &Reply) -> mlua::Result<Value> {
    Ok(match r {
        Reply::Int(n) => Value::Number(*n as f64),
        Reply::Bulk(b) => Value::String(lua.create_string(b)?),
        Reply::NullBulk => Value::Boolean(false),
        Reply::Null => Value::Nil,
        Reply::Bool(b) => Value::Boolean(*b),
        Reply::Status(s) => single(lua, "ok", Value::String(lua.create_string(s)?))?,
        Reply::Error(e) => {
            let mut msg = b"-".to_vec();
            msg.extend_from_slice(e);
            let t = error_table(lua, &msg)?;
            t.raw_set("ignore_error_stats_update", true)?;
            Value::Table(t)
        }
        Reply::Double(d) => single(lua, "double", Value::Number(*d))?,
        Reply::BigNumber(b) => single(lua, "big_number", Value::String(lua.create_string(b)?))?,
        Reply::Verbatim(format, text) => {
            let inner = lua.create_table()?;
            inner.raw_set("string", lua.create_string(text)?)?;
            inner.raw_set("format", lua.create_string(format)?)?;
            single(lua, "verbatim_string", Value::Table(inner))?
        }
        Reply::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, reply_to_lua(lua, item)?)?;
            }
            Value::Table(t)
        }
        Reply::Map(pairs) => {
            let inner = lua.create_table()?;
            for (k, v) in pairs {
                let k = reply_to_lua(lua, k)?;
                if !matches!(k, Value::Nil) {
                    inner.raw_set(k, reply_to_lua(lua, v)?)?;
                }
            }
            single(lua, "map", Value::Table(inner))?
        }
        Reply::Set(items) => {
            let inner = lua.create_table()?;
            for item in items {
                let k = reply_to_lua(lua, item)?;
                if !matches!(k, Value::Nil) {
                    inner.raw_set(k, true)?;
                }
            }
            single(lua, "set", Value::Table(inner))?
        }
    })
}

fn single(lua: &Lua, field: &str, v: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(field, v)?;
    Ok(Value::Table(t))
}

/// A Lua number as Redis turns it into an integer reply: truncated
/// (saturating, where C's cast is undefined).
pub fn lua_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// Encodes a script's Lua value as the reply to a client speaking
/// `client`; `script_resp3` is the protocol the script chose (booleans
/// are RESP3 booleans only then), as `luaReplyToRedisReply`.
pub fn lua_to_resp(out: &mut BytesMut, v: &Value, client: Proto, script_resp3: bool) {
    encode(out, v, client, script_resp3, 0);
}

fn string_field(t: &Table, name: &str) -> Option<mlua::String> {
    match t.raw_get::<Value>(name).ok()? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Replaces CR and LF with spaces (status lines and big numbers).
fn one_line(b: &[u8]) -> Vec<u8> {
    b.iter()
        .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
        .collect()
}

fn encode(out: &mut BytesMut, v: &Value, client: Proto, resp3: bool, depth: usize) {
    if depth > MAX_DEPTH {
        reply::error(out, "ERR reached lua stack limit");
        return;
    }
    match v {
        Value::String(s) => reply::bulk(out, &s.as_bytes()),
        Value::Boolean(b) => {
            if resp3 {
                reply::boolean(out, *b, client);
            } else if *b {
                reply::integer(out, 1);
            } else {
                reply::null(out, client);
            }
        }
        Value::Integer(_) | Value::Number(_) => {
            let n = lua_number(v).unwrap_or(0.0);
            // `(long long)n` on x86: NaN and out-of-range numbers give the minimum.
            reply::integer(out, super::capi::c_i64(n));
        }
        Value::Table(t) => encode_table(out, t, client, resp3, depth),
        _ => reply::null(out, client),
    }
}

fn encode_table(out: &mut BytesMut, t: &Table, client: Proto, resp3: bool, depth: usize) {
    if let Some(e) = string_field(t, "err") {
        out.put_u8(b'-');
        out.put_slice(&one_line(&e.as_bytes()));
        out.put_slice(b"\r\n");
        return;
    }
    if let Some(s) = string_field(t, "ok") {
        out.put_u8(b'+');
        out.put_slice(&one_line(&s.as_bytes()));
        out.put_slice(b"\r\n");
        return;
    }
    if let Some(d) = t
        .raw_get::<Value>("double")
        .ok()
        .as_ref()
        .and_then(lua_number)
    {
        reply::double(out, d, client);
        return;
    }
    if let Some(b) = string_field(t, "big_number") {
        let b = one_line(&b.as_bytes());
        if client == Proto::Resp3 {
            out.put_u8(b'(');
            out.put_slice(&b);
            out.put_slice(b"\r\n");
        } else {
            reply::bulk(out, &b);
        }
        return;
    }
    if let Ok(Value::Table(vt)) = t.raw_get::<Value>("verbatim_string") {
        if let (Some(format), Some(text)) =
            (string_field(&vt, "format"), string_field(&vt, "string"))
        {
            let (format, text) = (format.as_bytes(), text.as_bytes());
            if client == Proto::Resp3 {
                let mut body = format[..format.len().min(3)].to_vec();
                body.resize(3, b' ');
                body.push(b':');
                body.extend_from_slice(&text);
                out.put_slice(format!("={}\r\n", body.len()).as_bytes());
                out.put_slice(&body);
                out.put_slice(b"\r\n");
            } else {
                reply::bulk(out, &text);
            }
            return;
        }
    }
    if let Ok(Value::Table(map)) = t.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> = map.pairs::<Value, Value>().flatten().collect();
        reply::map(out, pairs.len(), client);
        for (k, v) in &pairs {
            encode(out, k, client, resp3, depth + 1);
            encode(out, v, client, resp3, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(set)) = t.raw_get::<Value>("set") {
        let keys: Vec<Value> = set
            .pairs::<Value, Value>()
            .flatten()
            .map(|(k, _)| k)
            .collect();
        reply::set(out, keys.len(), client);
        for k in &keys {
            encode(out, k, client, resp3, depth + 1);
        }
        return;
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    reply::array(out, items.len());
    for item in &items {
        encode(out, item, client, resp3, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Reply {
        let (r, n) = parse_reply(s.as_bytes()).expect("a complete reply");
        assert_eq!(n, s.len(), "the whole of {s:?} is one reply");
        r
    }

    #[test]
    fn parses_resp2_replies() {
        assert_eq!(parse("+OK\r\n"), Reply::Status(b"OK".to_vec()));
        assert_eq!(parse("-ERR bad\r\n"), Reply::Error(b"ERR bad".to_vec()));
        assert_eq!(parse(":-42\r\n"), Reply::Int(-42));
        assert_eq!(parse("$3\r\na\r\n\r\n"), Reply::Bulk(b"a\r\n".to_vec()));
        assert_eq!(parse("$0\r\n\r\n"), Reply::Bulk(Vec::new()));
        assert_eq!(parse("$-1\r\n"), Reply::NullBulk);
        assert_eq!(parse("*-1\r\n"), Reply::NullBulk);
        assert_eq!(
            parse("*3\r\n:1\r\n*1\r\n$1\r\nx\r\n$-1\r\n"),
            Reply::Array(vec![
                Reply::Int(1),
                Reply::Array(vec![Reply::Bulk(b"x".to_vec())]),
                Reply::NullBulk
            ])
        );
    }

    #[test]
    fn parses_resp3_replies() {
        assert_eq!(parse("_\r\n"), Reply::Null);
        assert_eq!(parse("#t\r\n"), Reply::Bool(true));
        assert_eq!(parse("#f\r\n"), Reply::Bool(false));
        assert_eq!(parse(",1.5\r\n"), Reply::Double(1.5));
        assert_eq!(parse(",-inf\r\n"), Reply::Double(f64::NEG_INFINITY));
        assert_eq!(parse("(123\r\n"), Reply::BigNumber(b"123".to_vec()));
        assert_eq!(
            parse("=7\r\ntxt:a b\r\n"),
            Reply::Verbatim(b"txt".to_vec(), b"a b".to_vec())
        );
        assert_eq!(
            parse("%1\r\n+k\r\n:1\r\n"),
            Reply::Map(vec![(Reply::Status(b"k".to_vec()), Reply::Int(1))])
        );
        assert_eq!(parse("~1\r\n:2\r\n"), Reply::Set(vec![Reply::Int(2)]));
        assert_eq!(parse("|1\r\n+a\r\n+b\r\n:5\r\n"), Reply::Int(5));
    }

    #[test]
    fn rejects_incomplete_or_bad_replies() {
        for bad in [
            "",
            "+OK",
            "$3\r\nab\r\n",
            "*2\r\n:1\r\n",
            ":x\r\n",
            "?\r\n",
            "$2\r\nabcd\r\n",
        ] {
            assert_eq!(parse_reply(bad.as_bytes()), None, "{bad:?}");
        }
    }

    #[test]
    fn error_text_is_code_and_message() {
        assert_eq!(error_text(b"-WRONGTYPE bad\r\n"), b"WRONGTYPE bad");
        assert_eq!(error_text(b"-NOCODE"), b"ERR NOCODE");
        assert_eq!(error_text(b"plain words"), b"ERR plain words");
    }

    fn roundtrip(script: &str, client: Proto, resp3: bool) -> String {
        let lua = Lua::new();
        let v: Value = lua.load(script).eval().unwrap();
        let mut out = BytesMut::new();
        lua_to_resp(&mut out, &v, client, resp3);
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn lua_values_become_redis_replies() {
        let r2 = |s| roundtrip(s, Proto::Resp2, false);
        assert_eq!(r2("return 3.99"), ":3\r\n");
        assert_eq!(r2("return -3.99"), ":-3\r\n");
        for big in ["1/0", "-1/0", "0/0", "2^63", "-2^70"] {
            let min = format!(":{}\r\n", i64::MIN);
            let script = format!("return {big}");
            assert_eq!(roundtrip(&script, Proto::Resp2, false), min, "{big}");
        }
        assert_eq!(r2("return 'x'"), "$1\r\nx\r\n");
        assert_eq!(r2("return true"), ":1\r\n");
        assert_eq!(r2("return false"), "$-1\r\n");
        assert_eq!(r2("return nil"), "$-1\r\n");
        assert_eq!(r2("return {1, 'a', nil, 3}"), "*2\r\n:1\r\n$1\r\na\r\n");
        assert_eq!(r2("return {err='E bad\\nline'}"), "-E bad line\r\n");
        assert_eq!(r2("return {ok='FINE'}"), "+FINE\r\n");
        assert_eq!(r2("return {double=1.5}"), "$3\r\n1.5\r\n");
        assert_eq!(r2("return {map={a=1}}"), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(r2("return {set={a=true}}"), "*1\r\n$1\r\na\r\n");
        let r3 = |s| roundtrip(s, Proto::Resp3, true);
        assert_eq!(r3("return false"), "#f\r\n");
        assert_eq!(r3("return {double=1.5}"), ",1.5\r\n");
        assert_eq!(r3("return {map={a=1}}"), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(r3("return {set={a=true}}"), "~1\r\n$1\r\na\r\n");
        assert_eq!(r3("return {big_number='12'}"), "(12\r\n");
        assert_eq!(
            r3("return {verbatim_string={format='txt', string='hi'}}"),
            "=6\r\ntxt:hi\r\n"
        );
        // A RESP3 client, a script left in RESP2: booleans as RESP2's.
        assert_eq!(roundtrip("return false", Proto::Resp3, false), "_\r\n");
    }

    #[test]
    fn replies_become_lua_values() {
        let lua = Lua::new();
        let check = |reply: &str, expect: &str| {
            let (r, _) = parse_reply(reply.as_bytes()).unwrap();
            let v = reply_to_lua(&lua, &r).unwrap();
            lua.globals().set("v", v).unwrap();
            let ok: bool = lua.load(expect).eval().unwrap();
            assert!(ok, "{reply:?} should satisfy {expect}");
        };
        check(":5\r\n", "return v == 5");
        check("$2\r\nab\r\n", "return v == 'ab'");
        check("$-1\r\n", "return v == false");
        check("*-1\r\n", "return v == false");
        check("_\r\n", "return v == nil");
        check("+OK\r\n", "return v.ok == 'OK'");
        check("-WRONGTYPE x\r\n", "return v.err == 'WRONGTYPE x'");
        check(
            "*2\r\n:1\r\n$1\r\nb\r\n",
            "return #v == 2 and v[1] == 1 and v[2] == 'b'",
        );
        check("%1\r\n$1\r\nk\r\n:7\r\n", "return v.map.k == 7");
        check("~1\r\n$1\r\nm\r\n", "return v.set.m == true");
        check(",2.5\r\n", "return v.double == 2.5");
        check("#t\r\n", "return v == true");
    }

    #[test]
    fn deep_tables_do_not_overflow() {
        // On a stack like the VM thread's (a test thread's 2 MB is less).
        let deep = std::thread::Builder::new()
            .stack_size(32 << 20)
            .spawn(|| {
                let lua = Lua::new();
                let v: Value = lua
                    .load("local t = {} local c = t for i = 1, 5000 do c[1] = {} c = c[1] end return t")
                    .eval()
                    .unwrap();
                let mut out = BytesMut::new();
                lua_to_resp(&mut out, &v, Proto::Resp2, false);
                out
            })
            .unwrap()
            .join()
            .unwrap();
        // Well formed: one-element arrays down to the limit, then the error.
        let err = b"-ERR reached lua stack limit\r\n";
        assert!(deep.ends_with(err));
        let headers = &deep[..deep.len() - err.len()];
        assert_eq!(headers, "*1\r\n".repeat(MAX_DEPTH + 1).as_bytes());
    }
}
