//! The Lua C API glue of the libraries ported from Redis's C sources
//! (`cmsgpack` in `msgpack.rs`, `struct` in `lua_struct.rs`): their
//! functions are `lua_CFunction`s that read their arguments off the Lua
//! stack and raise errors the way `lauxlib` does. It is not a general
//! binding; the other libraries (`libs.rs`) are mlua callbacks.
//!
//! Why not mlua callbacks: mlua turns a Lua number within `f64::EPSILON`
//! of an integer into that integer (`1e-20` and `-0.0` arrive as 0,
//! `0.9999999999999999` as 1), and those libraries encode the exact bits;
//! a C function sees the number itself, and its errors are the plain
//! strings Redis's are (`user_script:1: Missing bytes in input.`).
//!
//! Why errors are returned, then raised: `lua_error` longjmps out of the
//! Rust frames without running destructors. A body returns [`Raise`];
//! [`run`] raises it once the body's values are dropped, from a frame
//! that owns nothing. Inside a body, the Lua API calls made can raise only
//! on out-of-memory (which would leak the body's buffers, nothing worse).

use mlua::ffi::{self, lua_State};
use std::ffi::{c_int, CStr};

/// An error to raise, in the words and at the place `lauxlib` gives it.
pub(super) enum Raise {
    /// `luaL_error`: the calling script's `source:line: `, then this.
    Error(Vec<u8>),
    /// `luaL_argerror`: `bad argument #n to 'name' (this)`.
    Arg(c_int, Vec<u8>),
    /// `luaL_typerror`: `<this> expected, got <type of argument n>`.
    Type(c_int, &'static CStr),
    /// The VM's own error from inside a C function, without position
    /// (`table index is nil`).
    Plain(&'static CStr),
}

/// A library function's body: its results' count, or the error to raise.
pub(super) type Body = unsafe fn(*mut lua_State) -> Result<c_int, Raise>;

/// Runs `body` for the C function being called, raising its error.
///
/// # Safety
/// `l` is the state calling the C function.
pub(super) unsafe fn run(l: *mut lua_State, body: Body) -> c_int {
    let args = ffi::lua_gettop(l);
    match body(l) {
        Ok(n) => n,
        Err(e) => {
            // What the body pushed is dropped (nothing reads it), so the
            // message has the room a C function starts with even when
            // the error is that the stack is full: C's `luaL_error` pushes
            // past the checked top, which Lua's API checks refuse.
            ffi::lua_settop(l, args.min(ffi::lua_gettop(l)));
            raise(l, e)
        }
    }
}

unsafe fn raise(l: *mut lua_State, e: Raise) -> ! {
    match e {
        Raise::Error(msg) => {
            ffi::luaL_where(l, 1);
            push_bytes(l, &msg);
            drop(msg);
            ffi::lua_concat(l, 2);
        }
        Raise::Arg(narg, msg) => {
            push_bytes(l, &msg);
            drop(msg);
            ffi::luaL_argerror(l, narg, ffi::lua_tolstring(l, -1, std::ptr::null_mut()));
        }
        Raise::Type(narg, tname) => {
            ffi::luaL_typerror(l, narg, tname.as_ptr());
        }
        Raise::Plain(msg) => {
            ffi::lua_pushstring_(l, msg.as_ptr());
        }
    }
    ffi::lua_error(l)
}

/// Pushes `bytes` as a Lua string.
pub(super) unsafe fn push_bytes(l: *mut lua_State, bytes: &[u8]) {
    ffi::lua_pushlstring_(l, bytes.as_ptr().cast(), bytes.len());
}

/// The string (or number, converted in place) at `idx`; the bytes live
/// as long as the value stays on the stack.
pub(super) unsafe fn to_bytes<'a>(l: *mut lua_State, idx: c_int) -> Option<&'a [u8]> {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    (!p.is_null()).then(|| std::slice::from_raw_parts(p.cast::<u8>(), len))
}

/// `luaL_checklstring`.
pub(super) unsafe fn check_bytes<'a>(l: *mut lua_State, narg: c_int) -> Result<&'a [u8], Raise> {
    to_bytes(l, narg).ok_or(Raise::Type(narg, c"string"))
}

/// `luaL_checknumber`: numbers and numeric strings.
pub(super) unsafe fn check_number(l: *mut lua_State, narg: c_int) -> Result<f64, Raise> {
    let n = ffi::lua_tonumber(l, narg);
    if n == 0.0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(Raise::Type(narg, c"number"));
    }
    Ok(n)
}

/// `luaL_checkinteger`: C's `lua_tointeger`, truncating (mlua's compat
/// `lua_tointeger` answers 0 for a fraction).
pub(super) unsafe fn check_integer(l: *mut lua_State, narg: c_int) -> Result<i64, Raise> {
    let n = ffi::lua_tointeger_(l, narg);
    if n == 0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(Raise::Type(narg, c"number"));
    }
    Ok(n)
}

/// `luaL_optinteger`.
pub(super) unsafe fn opt_integer(l: *mut lua_State, narg: c_int, def: i64) -> Result<i64, Raise> {
    if ffi::lua_type(l, narg) <= ffi::LUA_TNIL {
        return Ok(def);
    }
    check_integer(l, narg)
}

/// `luaL_checkstack`: room for `n` more values, within the 8000 slots a
/// C function may use (`LUAI_MAXCSTACK`).
pub(super) unsafe fn check_stack(l: *mut lua_State, n: c_int, what: &str) -> Result<(), Raise> {
    if ffi::lua_checkstack(l, n) == 0 {
        return Err(Raise::Error(
            format!("stack overflow ({what})").into_bytes(),
        ));
    }
    Ok(())
}

/// The libraries' C conversions of a double to an integer type, as x86-64
/// computes them (`cvttsd2si`): NaN and out-of-range values give the
/// "integer indefinite", the type's minimum.
pub(super) fn c_i64(x: f64) -> i64 {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if x.is_nan() || !(-LIMIT..LIMIT).contains(&x) {
        return i64::MIN;
    }
    x as i64
}

/// `(int)x` on x86-64.
pub(super) fn c_i32(x: f64) -> i32 {
    if x.is_nan() || x <= i32::MIN as f64 - 1.0 || x >= i32::MAX as f64 + 1.0 {
        return i32::MIN;
    }
    x as i32
}

/// `(uint64_t)x` as gcc compiles it for x86-64: below 2^63 through the
/// signed conversion, above it through `x - 2^63` with the top bit
/// flipped (so 2^64 and up, and +inf, give 0).
pub(super) fn c_u64(x: f64) -> u64 {
    const TOP: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if x >= TOP {
        (c_i64(x - TOP) as u64) ^ (1 << 63)
    } else {
        c_i64(x) as u64
    }
}

/// Creates a library table of C functions and string fields.
pub(super) fn table(
    lua: &mlua::Lua,
    functions: &[(&str, ffi::lua_CFunction)],
    fields: &[(&str, &str)],
) -> mlua::Result<mlua::Table> {
    let t = lua.create_table()?;
    for &(name, f) in functions {
        // SAFETY: the functions follow the C API's protocol (`run`).
        t.raw_set(name, unsafe { lua.create_c_function(f)? })?;
    }
    for &(name, value) in fields {
        t.raw_set(name, value)?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_x86s() {
        assert_eq!(c_i64(-1.9), -1);
        assert_eq!(c_i64(9.3e18), i64::MIN);
        assert_eq!(c_i64(-9_223_372_036_854_775_808.0), i64::MIN);
        assert_eq!(c_i64(f64::NAN), i64::MIN);
        assert_eq!(c_i32(2147483647.9), i32::MAX);
        assert_eq!(c_i32(2147483648.0), i32::MIN);
        assert_eq!(c_i32(-2147483648.9), i32::MIN);
        assert_eq!(c_u64(1.5), 1);
        assert_eq!(c_u64(-1.0), u64::MAX);
        assert_eq!(c_u64(9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(c_u64(18_446_744_073_709_551_616.0), 0);
        assert_eq!(c_u64(f64::INFINITY), 0);
        assert_eq!(c_u64(f64::NAN), 1 << 63);
    }
}
