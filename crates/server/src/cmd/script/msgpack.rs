//! Redis's `cmsgpack` Lua library (lua-cmsgpack 0.4.0, Redis's
//! `deps/lua/src/lua_cmsgpack.c`), ported function for function:
//! `pack`, `unpack`, `unpack_one` and `unpack_limit`, with its encoding
//! choices, its limits and its error messages.
//!
//! What it is: lua-cmsgpack's subset of MessagePack. Numbers that are
//! integers within int64 take the smallest integer form, others a float
//! when the float holds them exactly, else a double; strings are raw
//! (fixstr, str8/16/32); a table is an array when its keys are exactly
//! 1..n, else a map in Lua's own `next` order; tables nested 16 deep
//! encode as nil (so circular tables end); functions and other values
//! encode as nil. What it is not: a MessagePack decoder of bin or ext
//! types (lua-cmsgpack answers "Bad data format in input.").
//!
//! The functions are C functions (`capi.rs` says why) that use the Lua
//! stack as the C code does, so stack limits (`LUAI_MAXCSTACK`) and the
//! VM's own errors (`table index is nil` for a nil map key) are Redis's.

use super::capi::{self, c_i32, c_i64, check_bytes, check_integer, check_stack, opt_integer};
use super::capi::{push_bytes, Raise};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// How deep tables nest before they encode as nil
/// (`LUACMSGPACK_MAX_NESTING`).
const MAX_NESTING: u32 = 16;

/// Builds the `cmsgpack` table.
pub fn cmsgpack(lua: &mlua::Lua) -> mlua::Result<mlua::Table> {
    capi::table(
        lua,
        &[
            ("pack", mp_pack),
            ("unpack", mp_unpack),
            ("unpack_one", mp_unpack_one),
            ("unpack_limit", mp_unpack_limit),
        ],
        &[
            ("_NAME", "cmsgpack"),
            ("_VERSION", "lua-cmsgpack 0.4.0"),
            ("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo"),
            ("_DESCRIPTION", "MessagePack C implementation for Lua"),
        ],
    )
}

// ----------------------------------------------------------------------
// Encoding of scalars: pure functions of the value.

/// A raw string (`mp_encode_bytes`): fixstr below 32 bytes, then str8,
/// str16, str32.
pub(super) fn encode_bytes(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        out.push(0xa0 | len as u8);
    } else if len <= 0xff {
        out.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        out.push(0xda);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0xdb);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
    out.extend_from_slice(s);
}

/// A non-integral number (`mp_encode_double`): a float when converting to
/// float and back gives the same double (so NaN is always a double).
pub(super) fn encode_double(out: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f as f64 {
        out.push(0xca);
        out.extend_from_slice(&f.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&d.to_be_bytes());
    }
}

/// An integer in its smallest form (`mp_encode_int`): non-negative ones
/// unsigned, negative ones signed.
pub(super) fn encode_int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            out.push(n as u8);
        } else if n <= 0xff {
            out.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A Lua number (`mp_encode_lua_number`): an integer when `(int64_t)n ==
/// n` (x86's conversion: only integral values in [-2^63, 2^63)).
pub(super) fn encode_number(out: &mut Vec<u8>, n: f64) {
    if !n.is_infinite() && c_i64(n) as f64 == n {
        encode_int(out, c_i64(n));
    } else {
        encode_double(out, n);
    }
}

/// An array header (`mp_encode_array`); a map's is `base` 0x80 and codes
/// 0xde/0xdf instead of 0x90 and 0xdc/0xdd.
fn encode_header(out: &mut Vec<u8>, n: u64, map: bool) {
    let (fix, c16, c32) = if map {
        (0x80, 0xde, 0xdf)
    } else {
        (0x90, 0xdc, 0xdd)
    };
    if n <= 15 {
        out.push(fix | n as u8);
    } else if n <= 65535 {
        out.push(c16);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(c32);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

// ----------------------------------------------------------------------
// Encoding of Lua values, off the stack.

/// Encodes the value on top of the stack and pops it
/// (`mp_encode_lua_type`).
unsafe fn encode_top(l: *mut lua_State, out: &mut Vec<u8>, level: u32) -> Result<(), Raise> {
    let mut t = ffi::lua_type(l, -1);
    // Past the nesting limit a table is nil: circular tables end.
    if t == ffi::LUA_TTABLE && level == MAX_NESTING {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => encode_bytes(out, capi::to_bytes(l, -1).unwrap_or_default()),
        ffi::LUA_TBOOLEAN => out.push(if ffi::lua_toboolean(l, -1) != 0 {
            0xc3
        } else {
            0xc2
        }),
        ffi::LUA_TNUMBER => encode_number(out, ffi::lua_tonumber(l, -1)),
        ffi::LUA_TTABLE => encode_table(l, out, level)?,
        _ => out.push(0xc0),
    }
    ffi::lua_settop(l, -2);
    Ok(())
}

/// `table_is_an_array`: every key a number that is a positive `int`, and
/// as many keys as the largest (so exactly 1..n; an empty table too).
unsafe fn is_array(l: *mut lua_State) -> Result<bool, Raise> {
    let (mut count, mut max) = (0i32, 0i32);
    let top = ffi::lua_gettop(l);
    check_stack(l, 2, "in function table_is_an_array")?;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_settop(l, -2);
        // A key that is not a number fails as 0 does (a key is never NaN).
        let n = match ffi::lua_type(l, -1) {
            ffi::LUA_TNUMBER => ffi::lua_tonumber(l, -1),
            _ => 0.0,
        };
        // (`(int)n == n` on x86: integral and within int.)
        if n <= 0.0 || c_i32(n) as f64 != n {
            ffi::lua_settop(l, top);
            return Ok(false);
        }
        if n > max as f64 {
            max = n as i32;
        }
        count = count.wrapping_add(1);
    }
    ffi::lua_settop(l, top);
    Ok(max == count)
}

/// `mp_encode_lua_table`: the table on top of the stack (left there).
unsafe fn encode_table(l: *mut lua_State, out: &mut Vec<u8>, level: u32) -> Result<(), Raise> {
    if is_array(l)? {
        let len = ffi::lua_objlen(l, -1);
        encode_header(out, len as u64, false);
        check_stack(l, 1, "in function mp_encode_lua_table_as_array")?;
        // Every key 1..len is there, so the raw read is C's `lua_gettable`.
        for j in 1..=len {
            ffi::lua_rawgeti_(l, -1, j as c_int);
            encode_top(l, out, level + 1)?;
        }
        return Ok(());
    }
    // The keys are counted first, then encoded in the same `next` order.
    check_stack(l, 3, "in function mp_encode_lua_table_as_map")?;
    let mut len = 0u64;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_settop(l, -2);
        len += 1;
    }
    encode_header(out, len, true);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pushvalue(l, -2);
        encode_top(l, out, level + 1)?; // the key's copy
        encode_top(l, out, level + 1)?; // the value
    }
    Ok(())
}

unsafe extern "C-unwind" fn mp_pack(l: *mut lua_State) -> c_int {
    capi::run(l, pack)
}

/// `cmsgpack.pack(...)`: every argument encoded, concatenated.
unsafe fn pack(l: *mut lua_State) -> Result<c_int, Raise> {
    let nargs = ffi::lua_gettop(l);
    if nargs == 0 {
        return Err(Raise::Arg(0, b"MessagePack pack needs input.".to_vec()));
    }
    if ffi::lua_checkstack(l, nargs) == 0 {
        return Err(Raise::Arg(
            0,
            b"Too many arguments for MessagePack pack.".to_vec(),
        ));
    }
    // One string per argument, then one concatenation, as the C code
    // does (its stack use decides when "stack overflow" comes).
    let mut buf = Vec::new();
    for i in 1..=nargs {
        check_stack(l, 1, "in function mp_check")?;
        ffi::lua_pushvalue(l, i);
        encode_top(l, &mut buf, 0)?;
        push_bytes(l, &buf);
        buf.clear();
    }
    ffi::lua_concat(l, nargs);
    Ok(1)
}

// ----------------------------------------------------------------------
// Decoding.

/// Why decoding stopped.
enum Stop {
    /// Not enough bytes (`MP_CUR_ERROR_EOF`).
    Eof,
    /// A type lua-cmsgpack does not know (`MP_CUR_ERROR_BADFMT`).
    BadFormat,
    /// A Lua error, raised as it is.
    Raise(Raise),
}

impl From<Raise> for Stop {
    fn from(r: Raise) -> Stop {
        Stop::Raise(r)
    }
}

/// Takes the next `n` bytes of the cursor.
fn take<'a>(c: &mut &'a [u8], n: usize) -> Result<&'a [u8], Stop> {
    if c.len() < n {
        return Err(Stop::Eof);
    }
    let (head, rest) = c.split_at(n);
    *c = rest;
    Ok(head)
}

/// The big-endian unsigned integer of `bytes` (at most 8).
fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |n, &b| n << 8 | b as u64)
}

/// One object's head: a scalar, or a collection's length (its items
/// follow).
#[derive(Debug)]
enum Item<'a> {
    Number(f64),
    Nil,
    Bool(bool),
    Str(&'a [u8]),
    Array(usize),
    Map(usize),
}

/// Reads the next object's head (the cases of `mp_decode_to_lua_type`);
/// kept apart from the recursion so each level's frame stays small
/// (nesting goes as deep as the Lua stack allows, some 8000 levels).
fn item<'a>(c: &mut &'a [u8]) -> Result<Item<'a>, Stop> {
    let first = *c.first().ok_or(Stop::Eof)?;
    // The head's bytes after the type byte, as a big-endian integer.
    let mut head = |n: usize| -> Result<u64, Stop> { Ok(be(&take(c, 1 + n)?[1..])) };
    Ok(match first {
        // Unsigned values go through C's `lua_pushinteger`: a uint64
        // above 2^63 comes back negative.
        0xcc..=0xce => Item::Number(head(1 << (first - 0xcc))? as f64),
        0xcf => Item::Number(head(8)? as i64 as f64),
        0xd0 => Item::Number(head(1)? as u8 as i8 as f64),
        0xd1 => Item::Number(head(2)? as u16 as i16 as f64),
        0xd2 => Item::Number(head(4)? as u32 as i32 as f64),
        0xd3 => Item::Number(head(8)? as i64 as f64),
        0xc0 => {
            take(c, 1)?;
            Item::Nil
        }
        0xc2 | 0xc3 => {
            take(c, 1)?;
            Item::Bool(first == 0xc3)
        }
        0xca => Item::Number(f32::from_bits(head(4)? as u32) as f64),
        0xcb => Item::Number(f64::from_bits(head(8)?)),
        0xd9..=0xdb => {
            let len = head(1 << (first - 0xd9))? as usize;
            Item::Str(take(c, len)?)
        }
        0xdc => Item::Array(head(2)? as usize),
        0xdd => Item::Array(head(4)? as usize),
        0xde => Item::Map(head(2)? as usize),
        0xdf => Item::Map(head(4)? as usize),
        // The fixed forms: the value or length is in the type byte.
        b if b & 0xe0 == 0xa0 => Item::Str(&take(c, 1 + (b & 0x1f) as usize)?[1..]),
        b if b & 0x80 == 0 || b & 0xe0 == 0xe0 || b & 0xe0 == 0x80 => {
            take(c, 1)?;
            match b {
                b if b & 0x80 == 0 => Item::Number(b as f64),
                b if b & 0xe0 == 0xe0 => Item::Number(b as i8 as f64),
                b if b & 0xf0 == 0x90 => Item::Array((b & 0xf) as usize),
                b => Item::Map((b & 0xf) as usize),
            }
        }
        // 0xc1, bin, ext and fixext.
        _ => return Err(Stop::BadFormat),
    })
}

/// Pushes the next object (`mp_decode_to_lua_type`).
unsafe fn decode(l: *mut lua_State, c: &mut &[u8]) -> Result<(), Stop> {
    if c.is_empty() {
        return Err(Stop::Eof);
    }
    // Every object may need a slot more than the C function has.
    check_stack(
        l,
        1,
        "too many return values at once; use unpack_one or unpack_limit instead.",
    )?;
    match item(c)? {
        Item::Number(n) => ffi::lua_pushnumber(l, n),
        Item::Nil => ffi::lua_pushnil(l),
        Item::Bool(b) => ffi::lua_pushboolean(l, b as c_int),
        Item::Str(s) => push_bytes(l, s),
        Item::Array(len) => decode_array(l, c, len)?,
        Item::Map(len) => decode_map(l, c, len)?,
    }
    Ok(())
}

/// `mp_decode_to_lua_array`: a table with keys 1..len (a nil element
/// leaves its key out).
unsafe fn decode_array(l: *mut lua_State, c: &mut &[u8], len: usize) -> Result<(), Stop> {
    ffi::lua_createtable(l, 0, 0);
    check_stack(l, 1, "in function mp_decode_to_lua_array")?;
    for index in 1..=len {
        ffi::lua_pushnumber(l, index as f64);
        decode(l, c)?;
        ffi::lua_rawset(l, -3);
    }
    Ok(())
}

/// `mp_decode_to_lua_hash`: a nil or NaN key is the VM's error, raised
/// once the pair is decoded, as C's `lua_settable` does.
unsafe fn decode_map(l: *mut lua_State, c: &mut &[u8], len: usize) -> Result<(), Stop> {
    ffi::lua_createtable(l, 0, 0);
    for _ in 0..len {
        decode(l, c)?;
        decode(l, c)?;
        match ffi::lua_type(l, -2) {
            ffi::LUA_TNIL => return Err(Raise::Plain(c"table index is nil").into()),
            ffi::LUA_TNUMBER if ffi::lua_tonumber(l, -2).is_nan() => {
                return Err(Raise::Plain(c"table index is NaN").into())
            }
            _ => ffi::lua_rawset(l, -3),
        }
    }
    Ok(())
}

/// `mp_unpack_full`: decodes from `offset` up to `limit` objects (all of
/// them when both are 0), answering the next offset first (-1 at the
/// end) unless it decoded all.
unsafe fn unpack_full(l: *mut lua_State, limit: i64, offset: i64) -> Result<c_int, Raise> {
    let s = check_bytes(l, 1)?;
    let len = s.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        // (Redis's message shows the length where it says limit.)
        let msg = format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32, len as i32
        );
        return Err(Raise::Error(msg.into_bytes()));
    } else if offset as u64 > len as u64 {
        let msg = format!(
            "Start offset {} greater than input length {}.",
            offset as i32, len as i32
        );
        return Err(Raise::Error(msg.into_bytes()));
    }
    let limit = if decode_all { i32::MAX as i64 } else { limit };
    let mut cur = &s[offset as usize..];
    let mut count: c_int = 0;
    while !cur.is_empty() && (count as i64) < limit {
        match decode(l, &mut cur) {
            Ok(()) => {}
            Err(Stop::Eof) => return Err(Raise::Error(b"Missing bytes in input.".to_vec())),
            Err(Stop::BadFormat) => {
                return Err(Raise::Error(b"Bad data format in input.".to_vec()))
            }
            Err(Stop::Raise(r)) => return Err(r),
        }
        count += 1;
    }
    if !decode_all {
        check_stack(l, 1, "in function mp_unpack_full")?;
        let next = if cur.is_empty() {
            -1
        } else {
            (len - cur.len()) as i64
        };
        ffi::lua_pushinteger(l, next);
        // The offset goes first, right after the string argument.
        ffi::lua_insert(l, 2);
        count += 1;
    }
    Ok(count)
}

unsafe extern "C-unwind" fn mp_unpack(l: *mut lua_State) -> c_int {
    capi::run(l, unpack)
}

unsafe extern "C-unwind" fn mp_unpack_one(l: *mut lua_State) -> c_int {
    capi::run(l, unpack_one)
}

unsafe extern "C-unwind" fn mp_unpack_limit(l: *mut lua_State) -> c_int {
    capi::run(l, unpack_limit)
}

/// `cmsgpack.unpack(s)`: every object, as values.
unsafe fn unpack(l: *mut lua_State) -> Result<c_int, Raise> {
    unpack_full(l, 0, 0)
}

/// `cmsgpack.unpack_one(s [, offset])`: the next offset, then one object.
unsafe fn unpack_one(l: *mut lua_State) -> Result<c_int, Raise> {
    let offset = opt_integer(l, 2, 0)?;
    ffi::lua_settop(l, ffi::lua_gettop(l).min(1));
    unpack_full(l, 1, offset)
}

/// `cmsgpack.unpack_limit(s, limit [, offset])`: the next offset, then up
/// to `limit` objects.
unsafe fn unpack_limit(l: *mut lua_State) -> Result<c_int, Raise> {
    let limit = check_integer(l, 2)?;
    let offset = opt_integer(l, 3, 0)?;
    ffi::lua_settop(l, ffi::lua_gettop(l).min(1));
    unpack_full(l, limit, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(n: i64) -> Vec<u8> {
        let mut out = Vec::new();
        encode_int(&mut out, n);
        out
    }

    fn num(n: f64) -> Vec<u8> {
        let mut out = Vec::new();
        encode_number(&mut out, n);
        out
    }

    #[test]
    fn integers_take_the_smallest_form() {
        assert_eq!(int(0), [0x00]);
        assert_eq!(int(127), [0x7f]);
        assert_eq!(int(128), [0xcc, 0x80]);
        assert_eq!(int(255), [0xcc, 0xff]);
        assert_eq!(int(256), [0xcd, 0x01, 0x00]);
        assert_eq!(int(65535), [0xcd, 0xff, 0xff]);
        assert_eq!(int(65536), [0xce, 0, 1, 0, 0]);
        assert_eq!(int(0xffff_ffff), [0xce, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(int(1 << 32), [0xcf, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(int(-1), [0xff]);
        assert_eq!(int(-32), [0xe0]);
        assert_eq!(int(-33), [0xd0, 0xdf]);
        assert_eq!(int(-128), [0xd0, 0x80]);
        assert_eq!(int(-129), [0xd1, 0xff, 0x7f]);
        assert_eq!(int(-32768), [0xd1, 0x80, 0x00]);
        assert_eq!(int(-32769), [0xd2, 0xff, 0xff, 0x7f, 0xff]);
        assert_eq!(int(-2147483648), [0xd2, 0x80, 0, 0, 0]);
        assert_eq!(
            int(-2147483649),
            [0xd3, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff]
        );
        assert_eq!(int(i64::MIN), [0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn numbers_are_integers_floats_or_doubles() {
        assert_eq!(
            num(0.1),
            [0xcb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a]
        );
        assert_eq!(num(0.5), [0xca, 0x3f, 0x00, 0x00, 0x00]);
        assert_eq!(num(-0.0), [0x00]);
        assert_eq!(num(-1099511627776.0), int(-1099511627776));
        assert_eq!(num(f64::INFINITY), [0xca, 0x7f, 0x80, 0x00, 0x00]);
        assert_eq!(num(f64::NAN)[0], 0xcb);
        // 2^63 does not fit int64: a float holds it exactly.
        assert_eq!(num(9_223_372_036_854_775_808.0), [0xca, 0x5f, 0, 0, 0]);
        assert_eq!(num(-9_223_372_036_854_775_808.0), int(i64::MIN));
        assert_eq!(num(1e-20)[0], 0xcb);
    }

    #[test]
    fn heads_read_as_c_does() {
        let read = |bytes: &[u8]| {
            let mut c = bytes;
            match item(&mut c) {
                Ok(i) => Ok((format!("{i:?}"), c.len())),
                Err(Stop::Eof) => Err("eof"),
                Err(Stop::BadFormat) => Err("bad"),
                Err(Stop::Raise(_)) => Err("raise"),
            }
        };
        let ok = |s: &str, left: usize| Ok((s.to_string(), left));
        assert_eq!(read(&[0x05, 1]), ok("Number(5.0)", 1));
        assert_eq!(read(&[0xe0]), ok("Number(-32.0)", 0));
        assert_eq!(
            read(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            ok("Number(-1.0)", 0)
        );
        assert_eq!(read(&[0xd1, 0xff, 0x7f]), ok("Number(-129.0)", 0));
        assert_eq!(read(&[0xca, 0x3f, 0xc0, 0, 0]), ok("Number(1.5)", 0));
        assert_eq!(read(&[0xa2, b'a', b'b', 9]), ok("Str([97, 98])", 1));
        assert_eq!(read(&[0xda, 0, 1, b'x']), ok("Str([120])", 0));
        assert_eq!(read(&[0x9f]), ok("Array(15)", 0));
        assert_eq!(read(&[0x8f]), ok("Map(15)", 0));
        assert_eq!(read(&[0xdd, 0, 1, 0, 0]), ok("Array(65536)", 0));
        assert_eq!(read(&[0xc3]), ok("Bool(true)", 0));
        assert_eq!(read(&[0xdb, 0, 0, 0, 2, b'x']), Err("eof"));
        assert_eq!(read(&[0xcd, 1]), Err("eof"));
        for bad in [0xc1, 0xc4, 0xc9, 0xd4, 0xd8] {
            assert_eq!(read(&[bad, 0, 0, 0, 0, 0]), Err("bad"), "{bad:x}");
        }
    }

    #[test]
    fn strings_and_headers() {
        let mut out = Vec::new();
        encode_bytes(&mut out, &[b'x'; 31]);
        assert_eq!(out[0], 0xbf);
        for (len, head) in [(32, vec![0xd9, 32]), (255, vec![0xd9, 255])] {
            let mut out = Vec::new();
            encode_bytes(&mut out, &vec![b'x'; len]);
            assert_eq!(out[..head.len()], head[..]);
        }
        let mut out = Vec::new();
        encode_bytes(&mut out, &[0; 256]);
        assert_eq!(out[..3], [0xda, 1, 0]);
        let mut out = Vec::new();
        encode_bytes(&mut out, &[0; 65536]);
        assert_eq!(out[..5], [0xdb, 0, 1, 0, 0]);
        let mut out = Vec::new();
        encode_header(&mut out, 15, false);
        encode_header(&mut out, 16, false);
        encode_header(&mut out, 65536, true);
        assert_eq!(out, [0x9f, 0xdc, 0, 16, 0xdf, 0, 1, 0, 0]);
    }
}
