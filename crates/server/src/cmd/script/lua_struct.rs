//! Redis's `struct` Lua library (Roberto Ierusalimschy's struct.c 1.7,
//! Redis's `deps/lua/src/lua_struct.c`), ported function for function:
//! `struct.pack(fmt, ...)`, `struct.unpack(fmt, s [, pos])` and
//! `struct.size(fmt)`, as the x86-64 build of Redis runs them.
//!
//! Formats: `<` `>` (little, big endian; native is little), `![n]`
//! (alignment, default 8), `x` (a zero byte), `b B h H l L T` (integers
//! of 1, 2, 8, 8 bytes; lower case signed), `i[n] I[n]` (n bytes, 4 by
//! default, up to 32), `f d` (float, double), `c[n]` (n chars; `c0` is
//! the whole string when packing and the previous number when
//! unpacking), `s` (zero-terminated) and ` ` (ignored). What it is not:
//! Lua 5.3's `string.pack` (no `=`, no `j`, no `z`); an unknown option is
//! "invalid format option". The format ends at its first zero byte, as a
//! C string does. Integers are C's `long` and numbers doubles, so values
//! over 2^53 lose precision, and the conversions are x86's (`capi.rs`).
//!
//! The functions are C functions (`capi.rs` says why).

use super::capi::{self, c_i64, c_u64, check_bytes, check_number, check_stack, opt_integer};
use super::capi::{push_bytes, Raise};
use mlua::ffi::{self, lua_State};
use std::ffi::c_int;

/// The largest integer option, in bytes (`MAXINTSIZE`).
const MAX_INT_SIZE: i32 = 32;

/// `!` without a number: the alignment of a double in a struct on x86-64
/// (`MAXALIGN`).
const MAX_ALIGN: i32 = 8;

/// Builds the `struct` table.
pub fn library(lua: &mlua::Lua) -> mlua::Result<mlua::Table> {
    capi::table(
        lua,
        &[("pack", b_pack), ("unpack", b_unpack), ("size", b_size)],
        &[],
    )
}

/// The byte order and the largest alignment (`Header`).
struct Header {
    little: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            little: cfg!(target_endian = "little"),
            align: 1,
        }
    }
}

/// The format string up to its first zero byte.
unsafe fn format<'a>(l: *mut lua_State) -> Result<&'a [u8], Raise> {
    let fmt = check_bytes(l, 1)?;
    Ok(fmt.split(|&b| b == 0).next().unwrap_or_default())
}

/// The number at the front of `fmt` (consumed), or `df` (`getnum`).
fn getnum(fmt: &mut &[u8], df: i32) -> Result<i32, Raise> {
    if !fmt.first().is_some_and(u8::is_ascii_digit) {
        return Ok(df);
    }
    let mut a: i32 = 0;
    while let Some(&d) = fmt.first().filter(|d| d.is_ascii_digit()) {
        let d = (d - b'0') as i32;
        if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
            return Err(Raise::Error(b"integral size overflow".to_vec()));
        }
        a = a * 10 + d;
        *fmt = &fmt[1..];
    }
    Ok(a)
}

/// The size of option `opt`, reading its number (`optsize`); 0 for the
/// options without one.
fn optsize(opt: u8, fmt: &mut &[u8]) -> Result<usize, Raise> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'x' => 1,
        b'c' => getnum(fmt, 1)? as usize,
        b'i' | b'I' => {
            let sz = getnum(fmt, 4)?;
            if sz > MAX_INT_SIZE {
                let msg = format!("integral size {sz} is larger than limit of {MAX_INT_SIZE}");
                return Err(Raise::Error(msg.into_bytes()));
            }
            sz as usize
        }
        _ => 0,
    })
}

/// Padding before an item of `size` at `len` (`gettoalign`): to the
/// smaller of its size and the alignment, which C assumes is a power of
/// two (`i3` under `!8` pads by its own arithmetic).
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size.wrapping_sub(len & (size - 1))) & (size - 1)
}

/// The options that are not items: space, `>`, `<`, `!n`
/// (`controloptions`).
fn controloptions(opt: u8, fmt: &mut &[u8], h: &mut Header) -> Result<(), Raise> {
    match opt {
        b' ' => {}
        b'>' => h.little = false,
        b'<' => h.little = true,
        b'!' => {
            let a = getnum(fmt, MAX_ALIGN)?;
            if a <= 0 || a & (a - 1) != 0 {
                let msg = format!("alignment {a} is not a power of 2");
                return Err(Raise::Error(msg.into_bytes()));
            }
            h.align = a as usize;
        }
        _ => {
            let mut msg = b"invalid format option '".to_vec();
            msg.extend_from_slice(&[opt, b'\'']);
            return Err(Raise::Arg(1, msg));
        }
    }
    Ok(())
}

/// `size` bytes of the number, in the header's order (`putinteger`):
/// negative numbers through `long`, others through `unsigned long`, the
/// bytes past the eighth zero.
fn putinteger(out: &mut Vec<u8>, n: f64, little: bool, size: usize) {
    let mut value = if n < 0.0 { c_i64(n) as u64 } else { c_u64(n) };
    let mut buf = [0u8; MAX_INT_SIZE as usize];
    for i in 0..size {
        let at = if little { i } else { size - 1 - i };
        buf[at] = value as u8;
        value >>= 8;
    }
    out.extend_from_slice(&buf[..size]);
}

/// The integer of `bytes` (`getinteger`), as a double; signed ones
/// extend the sign from their top bit (C shifts by `size*8 - 1` mod 64).
fn getinteger(bytes: &[u8], little: bool, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let mut add = |b: u8| l = l.wrapping_shl(8) | b as u64;
    if little {
        bytes.iter().rev().for_each(|&b| add(b));
    } else {
        bytes.iter().for_each(|&b| add(b));
    }
    if !signed {
        return l as f64;
    }
    let shift = (bytes.len() as u32).wrapping_mul(8).wrapping_sub(1);
    let mask = (!0u64).wrapping_shl(shift);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

unsafe extern "C-unwind" fn b_pack(l: *mut lua_State) -> c_int {
    capi::run(l, pack)
}

unsafe extern "C-unwind" fn b_unpack(l: *mut lua_State) -> c_int {
    capi::run(l, unpack)
}

unsafe extern "C-unwind" fn b_size(l: *mut lua_State) -> c_int {
    capi::run(l, size)
}

/// `struct.pack(fmt, ...)`.
unsafe fn pack(l: *mut lua_State) -> Result<c_int, Raise> {
    let mut fmt = format(l)?;
    let mut h = Header::default();
    let mut arg: c_int = 2;
    let mut out = Vec::new();
    while let Some((&opt, rest)) = fmt.split_first() {
        fmt = rest;
        let mut size = optsize(opt, &mut fmt)?;
        let toalign = gettoalign(out.len(), &h, opt, size);
        out.resize(out.len() + toalign, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(l, arg)?;
                arg += 1;
                putinteger(&mut out, n, h.little, size);
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(l, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    f.to_le_bytes()
                } else {
                    f.to_be_bytes()
                });
            }
            b'd' => {
                let d = check_number(l, arg)?;
                arg += 1;
                out.extend_from_slice(&if h.little {
                    d.to_le_bytes()
                } else {
                    d.to_be_bytes()
                });
            }
            b'c' | b's' => {
                let s = check_bytes(l, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // (C checks after moving to the next argument, and
                    // names that one.)
                    return Err(Raise::Arg(arg, b"string too short".to_vec()));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => controloptions(opt, &mut fmt, &mut h)?,
        }
    }
    push_bytes(l, &out);
    Ok(1)
}

/// `struct.unpack(fmt, s [, pos])`: the values, then the position after
/// them (1-based).
unsafe fn unpack(l: *mut lua_State) -> Result<c_int, Raise> {
    let mut fmt = format(l)?;
    let data = check_bytes(l, 2)?;
    let ld = data.len();
    // C keeps the position in a size_t: a negative one wraps around and
    // is "too short" rather than "must be 1 or greater".
    let mut pos = opt_integer(l, 3, 1)? as usize;
    if pos == 0 {
        return Err(Raise::Arg(3, b"offset must be 1 or greater".to_vec()));
    }
    pos -= 1;
    let too_short = || Raise::Arg(2, b"data string too short".to_vec());
    let mut h = Header::default();
    let mut n: c_int = 0;
    while let Some((&opt, rest)) = fmt.split_first() {
        fmt = rest;
        let mut size = optsize(opt, &mut fmt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        check_stack(l, 2, "too many results")?;
        let at = &data[pos..];
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let v = getinteger(&at[..size], h.little, opt.is_ascii_lowercase());
                ffi::lua_pushnumber(l, v);
                n += 1;
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = at[..4].try_into().unwrap_or_default();
                let f = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                ffi::lua_pushnumber(l, f as f64);
                n += 1;
            }
            b'd' => {
                let b: [u8; 8] = at[..8].try_into().unwrap_or_default();
                let d = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                ffi::lua_pushnumber(l, d);
                n += 1;
            }
            b'c' => {
                if size == 0 {
                    // The length is the value just unpacked (a number or
                    // a numeric string), which it replaces.
                    if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                        return Err(Raise::Error(b"format 'c0' needs a previous size".to_vec()));
                    }
                    size = c_u64(ffi::lua_tonumber(l, -1)) as usize;
                    ffi::lua_settop(l, -2);
                    n -= 1;
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                push_bytes(l, &data[pos..pos + size]);
                n += 1;
            }
            b's' => {
                let Some(end) = at.iter().position(|&b| b == 0) else {
                    return Err(Raise::Error(b"unfinished string in data".to_vec()));
                };
                push_bytes(l, &at[..end]);
                size = end + 1;
                n += 1;
            }
            _ => controloptions(opt, &mut fmt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos.wrapping_add(1) as i64);
    Ok(n + 1)
}

/// `struct.size(fmt)`: the bytes `pack` makes of `fmt`; an option that is
/// a letter or digit and not an item is ignored (C's `isalnum` test).
unsafe fn size(l: *mut lua_State) -> Result<c_int, Raise> {
    let mut fmt = format(l)?;
    let mut h = Header::default();
    let mut pos: usize = 0;
    while let Some((&opt, rest)) = fmt.split_first() {
        fmt = rest;
        let size = optsize(opt, &mut fmt)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(Raise::Arg(1, b"option 's' has no fixed size".to_vec()));
        } else if opt == b'c' && size == 0 {
            return Err(Raise::Arg(1, b"option 'c0' has no fixed size".to_vec()));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(opt, &mut fmt, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    ffi::lua_pushinteger(l, pos as i64);
    Ok(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_pack_as_c_does() {
        let put = |n: f64, little: bool, size: usize| {
            let mut out = Vec::new();
            putinteger(&mut out, n, little, size);
            out
        };
        assert_eq!(put(1.0, true, 2), [1, 0]);
        assert_eq!(put(1.0, false, 2), [0, 1]);
        assert_eq!(put(-1.0, true, 3), [0xff; 3]);
        assert_eq!(put(300.0, true, 1), [44]);
        assert_eq!(
            put(-2.0, false, 10),
            [0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]
        );
        assert_eq!(put(2.5, true, 1), [2]);
    }

    #[test]
    fn integers_unpack_as_c_does() {
        assert_eq!(getinteger(&[0xff, 0xff], true, true), -1.0);
        assert_eq!(getinteger(&[0xff, 0xff], true, false), 65535.0);
        assert_eq!(getinteger(&[0x80, 0], false, true), -32768.0);
        assert_eq!(getinteger(&[], true, true), 0.0);
        assert_eq!(getinteger(&[0xff; 8], true, false), 18446744073709551615.0);
        // Past 8 bytes only the last 8 read count, and the sign comes from
        // bit 63 (C's shift wraps).
        assert_eq!(getinteger(&[0xff; 9], false, true), -1.0);
    }

    #[test]
    fn alignment() {
        let h = Header {
            little: true,
            align: 8,
        };
        assert_eq!(gettoalign(1, &h, b'i', 4), 3);
        assert_eq!(gettoalign(1, &h, b'd', 8), 7);
        assert_eq!(gettoalign(3, &h, b'c', 8), 0);
        assert_eq!(gettoalign(3, &Header::default(), b'd', 8), 0);
        let mut fmt: &[u8] = b"12x";
        assert_eq!(getnum(&mut fmt, 1).ok(), Some(12));
        assert_eq!(fmt, b"x");
        let mut fmt: &[u8] = b"99999999999";
        assert!(getnum(&mut fmt, 1).is_err());
    }
}
