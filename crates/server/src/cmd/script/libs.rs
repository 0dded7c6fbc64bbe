//! The libraries Redis adds to Lua, in Rust: `cjson` (`encode`, `decode`,
//! `null`, through `serde_json` for parsing), `bit` (LuaBitOp's 32-bit
//! operations) and Redis's `math.random`/`math.randomseed` (its drand48,
//! the same sequence on every machine).
//!
//! `cmsgpack` and `struct` are in `msgpack.rs` and `lua_struct.rs`.

use mlua::{LightUserData, Lua, Table, Value, Variadic};
use std::cell::Cell;
use std::fmt::Write;
use std::rc::Rc;

/// Raises a plain (string) Lua error through the VM's pending-error slot.
pub type Raise = Rc<dyn Fn(Value) -> mlua::Error>;

/// Raises `msg` as `luaL_error` does from a C function: prefixed with
/// where the calling Lua code is (`user_script:1: `).
fn fail(lua: &Lua, raise: &Raise, msg: &str) -> mlua::Error {
    let at = lua
        .inspect_stack(1)
        .and_then(|d| {
            let line = d.curr_line();
            let src = d.source().short_src.map(|s| s.into_owned())?;
            (line > 0).then(|| format!("{src}:{line}: "))
        })
        .unwrap_or_default();
    match lua.create_string(format!("{at}{msg}")) {
        Ok(s) => raise(Value::String(s)),
        Err(e) => e,
    }
}

/// `cjson.null`: a light userdata holding NULL, as lua-cjson's.
fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// lua-cjson's `%.14g`.
fn format_number(n: f64) -> String {
    if n == n.trunc() && n.abs() < 1e15 {
        return format!("{}", n as i64);
    }
    let s = format!("{:.13e}", n);
    // Shortest of %.14g: strip trailing zeros of the mantissa.
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-5..14).contains(&exp) {
        let digits = (13 - exp).max(0) as usize;
        let mut f = format!("{:.*}", digits, n);
        if f.contains('.') {
            while f.ends_with('0') {
                f.pop();
            }
            if f.ends_with('.') {
                f.pop();
            }
        }
        f
    } else {
        let mut m = mant.to_string();
        if m.contains('.') {
            while m.ends_with('0') {
                m.pop();
            }
            if m.ends_with('.') {
                m.pop();
            }
        }
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

fn encode_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 || b == 0x7f => {
                let mut hex = String::new();
                let _ = write!(hex, "\\u{:04x}", b);
                out.extend_from_slice(hex.as_bytes());
            }
            b => out.push(b),
        }
    }
    out.push(b'"');
}

/// lua-cjson's settings that change results.
#[derive(Clone, Copy)]
struct Settings {
    encode_max_depth: usize,
    decode_max_depth: usize,
    /// `encode_invalid_numbers(true)`: NaN and infinities as `nan`/`inf`.
    encode_invalid: bool,
}

fn encode(out: &mut Vec<u8>, v: &Value, depth: usize, cfg: Settings) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::Number(n) => {
            if !n.is_finite() {
                if !cfg.encode_invalid {
                    return Err("Cannot serialise number: must not be NaN or Inf".into());
                }
                let text = if n.is_nan() {
                    "nan"
                } else if *n > 0.0 {
                    "inf"
                } else {
                    "-inf"
                };
                out.extend_from_slice(text.as_bytes());
            } else {
                out.extend_from_slice(format_number(*n).as_bytes());
            }
        }
        Value::String(s) => encode_string(out, &s.as_bytes()),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Table(t) => {
            if depth >= cfg.encode_max_depth {
                return Err(format!(
                    "Cannot serialise, excessive nesting ({})",
                    depth + 1
                ));
            }
            encode_table(out, t, depth + 1, cfg)?;
        }
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            ))
        }
    }
    Ok(())
}

fn encode_table(out: &mut Vec<u8>, t: &Table, depth: usize, cfg: Settings) -> Result<(), String> {
    let pairs: Vec<(Value, Value)> = t.pairs::<Value, Value>().flatten().collect();
    // An array when every key is a positive integer (lua-cjson's rule).
    let mut max = 0usize;
    let mut array = !pairs.is_empty();
    for (k, _) in &pairs {
        let n = match k {
            Value::Integer(i) => *i as f64,
            Value::Number(n) => *n,
            _ => {
                array = false;
                break;
            }
        };
        if n < 1.0 || n != n.trunc() {
            array = false;
            break;
        }
        max = max.max(n as usize);
    }
    if array && max > pairs.len() * 2 && max > 10 {
        return Err("Cannot serialise table: excessively sparse array".into());
    }
    if array {
        out.push(b'[');
        for i in 1..=max {
            if i > 1 {
                out.push(b',');
            }
            encode(
                out,
                &t.raw_get::<Value>(i).unwrap_or(Value::Nil),
                depth,
                cfg,
            )?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match k {
            Value::String(s) => encode_string(out, &s.as_bytes()),
            Value::Integer(n) => encode_string(out, n.to_string().as_bytes()),
            Value::Number(n) => encode_string(out, format_number(*n).as_bytes()),
            other => {
                return Err(format!(
                    "Cannot serialise {}: table key must be a number or string",
                    other.type_name()
                ))
            }
        }
        out.push(b':');
        encode(out, v, depth, cfg)?;
    }
    out.push(b'}');
    Ok(())
}

fn decode(lua: &Lua, v: &serde_json::Value, depth: usize, max: usize) -> mlua::Result<Value> {
    let container = matches!(
        v,
        serde_json::Value::Array(_) | serde_json::Value::Object(_)
    );
    if container && depth + 1 > max {
        return Err(mlua::Error::runtime(format!(
            "Found too many nested data structures ({})",
            depth + 1
        )));
    }
    Ok(match v {
        serde_json::Value::Null => null(),
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => Value::Number(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::String(lua.create_string(s)?),
        serde_json::Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, decode(lua, item, depth + 1, max)?)?;
            }
            Value::Table(t)
        }
        serde_json::Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, item) in map {
                t.raw_set(lua.create_string(k)?, decode(lua, item, depth + 1, max)?)?;
            }
            Value::Table(t)
        }
    })
}

/// The `cjson` table.
pub fn cjson(lua: &Lua, raise: &Raise) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let settings = Rc::new(Cell::new(Settings {
        encode_max_depth: 1000,
        decode_max_depth: 1000,
        encode_invalid: false,
    }));
    let (r, cfg) = (raise.clone(), settings.clone());
    t.set(
        "encode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err(fail(
                    lua,
                    &r,
                    "bad argument #1 to 'encode' (expected 1 argument)",
                ));
            }
            let mut out = Vec::new();
            encode(&mut out, &args[0], 0, cfg.get()).map_err(|e| fail(lua, &r, &e))?;
            lua.create_string(out)
        })?,
    )?;
    let (r, cfg) = (raise.clone(), settings.clone());
    t.set(
        "decode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let text = match args.first() {
                Some(Value::String(s)) if args.len() == 1 => s.as_bytes().to_vec(),
                Some(Value::Integer(_) | Value::Number(_)) if args.len() == 1 => {
                    super::lua::lua_arg(&args[0]).unwrap_or_default()
                }
                _ => {
                    return Err(fail(
                        lua,
                        &r,
                        "bad argument #1 to 'decode' (string expected)",
                    ))
                }
            };
            match serde_json::from_slice::<serde_json::Value>(&text) {
                Ok(v) => decode(lua, &v, 0, cfg.get().decode_max_depth).map_err(|e| match e {
                    mlua::Error::RuntimeError(m) => fail(lua, &r, &m),
                    other => other,
                }),
                Err(e) => Err(fail(
                    lua,
                    &r,
                    &format!(
                        "Expected value but found invalid token at character {}",
                        e.column()
                    ),
                )),
            }
        })?,
    )?;
    t.set("null", null())?;
    // lua-cjson's settings: the depths and invalid numbers kept, the
    // others accepted and ignored.
    for name in [
        "encode_keep_buffer",
        "encode_max_depth",
        "decode_max_depth",
        "encode_number_precision",
        "encode_sparse_array",
        "encode_invalid_numbers",
        "decode_invalid_numbers",
    ] {
        let cfg = settings.clone();
        let f = lua.create_function(move |_, args: Variadic<Value>| {
            let mut c = cfg.get();
            let arg = args.first();
            let depth = arg
                .and_then(super::convert::lua_number)
                .map(|n| n.max(1.0) as usize);
            match (name, depth) {
                ("encode_max_depth", Some(d)) => c.encode_max_depth = d,
                ("decode_max_depth", Some(d)) => c.decode_max_depth = d,
                ("encode_invalid_numbers", _) => {
                    c.encode_invalid = matches!(arg, Some(Value::Boolean(true)))
                        || matches!(arg, Some(Value::String(s)) if s.as_bytes().as_ref() == b"on");
                }
                _ => {}
            }
            cfg.set(c);
            Ok(())
        })?;
        t.set(name, f)?;
    }
    Ok(t)
}

/// LuaBitOp's argument conversion: a number to its low 32 bits.
fn tobit(v: &Value) -> Option<i32> {
    let n = super::convert::lua_number(v)?;
    // LuaBitOp adds 2^52+2^51 and takes the low word: modular, rounding.
    let n = n + 6755399441055744.0;
    Some(n.to_bits() as u32 as i32)
}

/// The `bit` table.
pub fn bit(lua: &Lua, raise: &Raise) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    type Op = fn(&[i32]) -> i32;
    let ops: [(&str, Op, usize); 12] = [
        ("tobit", |a| a[0], 1),
        ("bnot", |a| !a[0], 1),
        ("band", |a| a.iter().fold(-1, |x, y| x & y), 1),
        ("bor", |a| a.iter().fold(0, |x, y| x | y), 1),
        ("bxor", |a| a.iter().fold(0, |x, y| x ^ y), 1),
        ("lshift", |a| ((a[0] as u32) << (a[1] & 31)) as i32, 2),
        ("rshift", |a| ((a[0] as u32) >> (a[1] & 31)) as i32, 2),
        ("arshift", |a| a[0] >> (a[1] & 31), 2),
        (
            "rol",
            |a| (a[0] as u32).rotate_left((a[1] & 31) as u32) as i32,
            2,
        ),
        (
            "ror",
            |a| (a[0] as u32).rotate_right((a[1] & 31) as u32) as i32,
            2,
        ),
        ("bswap", |a| a[0].swap_bytes(), 1),
        ("tohex", |a| a[0], 1),
    ];
    for (name, op, min) in ops {
        let r = raise.clone();
        let f = lua.create_function(move |lua, args: Variadic<Value>| {
            let mut nums = Vec::with_capacity(args.len());
            for (i, a) in args.iter().enumerate() {
                match tobit(a) {
                    Some(n) => nums.push(n),
                    None => {
                        let msg = format!(
                            "bad argument #{} to '{name}' (number expected, got {})",
                            i + 1,
                            a.type_name()
                        );
                        return Err(fail(lua, &r, &msg));
                    }
                }
            }
            if nums.len() < min {
                let msg = format!(
                    "bad argument #{} to '{name}' (number expected, got no value)",
                    nums.len() + 1
                );
                return Err(fail(lua, &r, &msg));
            }
            if name == "tohex" {
                let n = nums.get(1).copied().unwrap_or(8);
                let (upper, width) = (n < 0, n.unsigned_abs().min(8) as usize);
                let hex = format!("{:08x}", nums[0] as u32);
                let hex = &hex[8 - width..];
                let s = if upper {
                    hex.to_uppercase()
                } else {
                    hex.to_string()
                };
                return Ok(Value::String(lua.create_string(s)?));
            }
            Ok(Value::Number(op(&nums) as f64))
        })?;
        t.set(name, f)?;
    }
    Ok(t)
}

/// Redis's `redisLrand48`: drand48's generator, from drand48's default
/// state until `math.randomseed`.
#[derive(Clone, Copy)]
pub struct Rand48(u64);

impl Default for Rand48 {
    fn default() -> Self {
        Rand48(0x1234_ABCD_330E)
    }
}

impl Rand48 {
    fn next(&mut self) -> i32 {
        self.0 = (self.0.wrapping_mul(0x5_DEEC_E66D).wrapping_add(0xB)) & ((1 << 48) - 1);
        (self.0 >> 17) as i32
    }

    fn seed(seed: i32) -> Self {
        Rand48(((seed as u32 as u64) << 16) | 0x330E)
    }
}

/// Replaces `math.random` and `math.randomseed` with Redis's.
pub fn random(lua: &Lua, math: &Table, raise: &Raise) -> mlua::Result<()> {
    let state = Rc::new(Cell::new(Rand48::default()));
    let (st, r) = (state.clone(), raise.clone());
    let int = |v: &Value| super::convert::lua_number(v).map(|n| n as i32);
    math.raw_set(
        "random",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let mut g = st.get();
            let n = g.next();
            st.set(g);
            let r01 = (n % i32::MAX) as f64 / i32::MAX as f64;
            let bad = |i: usize, what: &str| {
                fail(lua, &r, &format!("bad argument #{i} to 'random' ({what})"))
            };
            match args.len() {
                0 => Ok(r01),
                1 => {
                    let u = int(&args[0]).ok_or_else(|| bad(1, "number expected"))?;
                    if u < 1 {
                        return Err(bad(1, "interval is empty"));
                    }
                    Ok((r01 * u as f64).floor() + 1.0)
                }
                2 => {
                    let l = int(&args[0]).ok_or_else(|| bad(1, "number expected"))?;
                    let u = int(&args[1]).ok_or_else(|| bad(2, "number expected"))?;
                    if l > u {
                        return Err(bad(2, "interval is empty"));
                    }
                    Ok((r01 * (u as f64 - l as f64 + 1.0)).floor() + l as f64)
                }
                _ => Err(fail(lua, &r, "wrong number of arguments")),
            }
        })?,
    )?;
    let r = raise.clone();
    math.raw_set(
        "randomseed",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let seed = args.first().and_then(|v| match v {
                Value::String(s) => s.to_str().ok()?.trim().parse::<f64>().ok(),
                v => super::convert::lua_number(v),
            });
            let Some(seed) = seed else {
                return Err(fail(
                    lua,
                    &r,
                    "bad argument #1 to 'randomseed' (number expected)",
                ));
            };
            state.set(Rand48::seed(seed as i32));
            Ok(())
        })?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_as_cjson() {
        assert_eq!(format_number(1.0), "1");
        assert_eq!(format_number(-12.0), "-12");
        assert_eq!(format_number(1.5), "1.5");
        assert_eq!(format_number(0.1), "0.1");
        assert_eq!(format_number(1e20), "1e+20");
        assert_eq!(format_number(1.0 / 3.0), "0.33333333333333");
    }

    #[test]
    fn rand48_is_drand48() {
        // glibc: srand48(0); lrand48() x3
        let mut g = Rand48::seed(0);
        assert_eq!(
            [g.next(), g.next(), g.next()],
            [366850414, 1610402240, 206956554]
        );
    }
}
