//! The `cmsgpack` and `struct` script: what both libraries write (as hex)
//! and read, at their size and number boundaries, with tables whose map
//! keys come in Lua's own order, and their errors (called from the script
//! and through `pcall`), compared with redis-server's byte for byte.

use super::{Check, Step};

/// `hex(s)`: a string's bytes as hex; `unhex(x)` the other way; `e(f,
/// ...)`: a call's error message, or its first result.
const PRELUDE: &str = "local function hex(s) return (s:gsub('.', function(c) \
    return string.format('%02x', c:byte()) end)) end \
    local function unhex(x) return (x:gsub('..', function(b) \
    return string.char(tonumber(b, 16)) end)) end \
    local function e(f, ...) local ok, r = pcall(f, ...) return r end ";

/// `EVAL <prelude><body> 0`.
fn run(body: &str) -> Step {
    let script = format!("{PRELUDE}{body}");
    Step::Cmd(
        vec![b"EVAL".to_vec(), script.into_bytes(), b"0".to_vec()],
        Check::Exact,
    )
}

/// `return hex(cmsgpack.pack(<args>))`.
fn pack(args: &str) -> Step {
    run(&format!("return hex(cmsgpack.pack({args}))"))
}

/// `return {cmsgpack.unpack(unhex('<hex>'))}`, numbers as text.
fn unpack(hex: &str) -> Step {
    run(&format!(
        "local t = {{cmsgpack.unpack(unhex('{hex}'))}} \
         for i, v in ipairs(t) do if type(v) == 'number' then t[i] = tostring(v) end end \
         return t"
    ))
}

pub fn msgpack_script() -> Vec<Step> {
    let mut s = Vec::new();
    // Numbers: every integer width at its edges, floats, doubles, and
    // values mlua would round (1e-20, -0.0, 1 - 2^-53).
    for n in [
        "0",
        "127",
        "128",
        "255",
        "256",
        "65535",
        "65536",
        "4294967295",
        "4294967296",
        "2^53",
        "-1",
        "-32",
        "-33",
        "-128",
        "-129",
        "-32768",
        "-32769",
        "-2147483648",
        "-2147483649",
        "-2^63",
        "2^63",
        "2^64",
        "0.1",
        "0.5",
        "1e300",
        "1e-20",
        "-0.0",
        "0.9999999999999999",
        "1/0",
        "-1/0",
        "0/0",
        "3.4028234663852886e38",
        "1e39",
    ] {
        s.push(pack(n));
    }
    // Strings, booleans, nil, other values, several arguments.
    for v in [
        "''",
        "'abc'",
        "('x'):rep(31)",
        "('x'):rep(32)",
        "('x'):rep(255)",
        "('x'):rep(256)",
        "true",
        "false",
        "nil",
        "function() end",
        "cjson.null",
        "1, 'a', true, nil, {}",
    ] {
        s.push(pack(v));
    }
    for v in ["('x'):rep(65535)", "('x'):rep(65536)"] {
        s.push(run(&format!("return hex(cmsgpack.pack({v}):sub(1, 8))")));
    }
    // Tables: arrays only for keys exactly 1..n; maps in `next` order.
    for t in [
        "{}",
        "{1, 2, 3}",
        "{[1]=1, [2]=2}",
        "{1, 2, nil, 4}",
        "{[0]=1}",
        "{[-1]=1}",
        "{[1.5]=1}",
        "{[2^31]=1}",
        "{[2^31-1]=1}",
        "{x=1, [1]=2, y={a=1, b=2}, z=true, [3]=4}",
        "{{}, {{}}, {a={b={c={}}}}}",
        "{[true]=1, [false]=0}",
    ] {
        s.push(pack(t));
    }
    for build in [
        "local t = {} for i = 1, 15 do t[i] = i end",
        "local t = {} for i = 1, 16 do t[i] = i end",
        "local t = {} for i = 1, 40 do t['k' .. i] = i end",
        "local t = {} for i = 1, 40 do t[i * 1.5] = -i end",
        "local t = {} for i = 1, 20 do t[i] = i end t[10] = nil",
        "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end",
        "local t = {} local c = t for i = 1, 20 do c.k = {v = i} c = c.k end",
        "local a = {x=nil, y=5} local b = {x=a} a['x'] = b local t = a",
    ] {
        s.push(run(&format!("{build} return hex(cmsgpack.pack(t))")));
    }
    // Unpacking every form, including those pack never writes.
    for x in [
        "cc05",
        "cd0100",
        "ce00010000",
        "cf0000000100000000",
        "cfffffffffffffffff",
        "cf8000000000000000",
        "d0fb",
        "d1fffb",
        "d2fffffffb",
        "d3fffffffffffffffb",
        "7f",
        "e0",
        "ca3fc00000",
        "cb3ff8000000000000",
        "c0c2c3",
        "a3616263",
        "d903616263",
        "da0003616263",
        "db00000003616263",
        "",
        "010203",
    ] {
        s.push(unpack(x));
    }
    for x in [
        "920102",
        "dc00020102",
        "dd000000020102",
        "92c001",
        "82a16101a16202",
        "de0001a16101",
        "df00000001a16101",
        "8101c0",
    ] {
        s.push(run(&format!(
            "return cjson.encode(cmsgpack.unpack(unhex('{x}')))"
        )));
    }
    // Offsets.
    let stream = "local s = cmsgpack.pack(1, 'ab', {1}) ";
    for call in [
        "cmsgpack.unpack_one(s)",
        "cmsgpack.unpack_one(s, 1)",
        "cmsgpack.unpack_one(s, 4)",
        "cmsgpack.unpack_one(s, 6)",
        "cmsgpack.unpack_one(s, 1.9)",
        "cmsgpack.unpack_limit(s, 2)",
        "cmsgpack.unpack_limit(s, 2, 4)",
        "cmsgpack.unpack_limit(s, 9, 1)",
        "cmsgpack.unpack_limit(s, 0)",
        "cmsgpack.unpack_limit(s, 0, 1)",
        "cmsgpack.unpack_one('')",
    ] {
        s.push(run(&format!(
            "{stream}local t = {{{call}}} t[#t + 1] = #t return cjson.encode(t)"
        )));
    }
    // Errors: uncaught (the script's error reply), then through pcall.
    for call in [
        "cmsgpack.pack()",
        "cmsgpack.unpack()",
        "cmsgpack.unpack({})",
        "cmsgpack.unpack('\\193')",
        "cmsgpack.unpack('\\205\\1')",
        "cmsgpack.unpack('\\129\\192\\1')",
        "cmsgpack.unpack('\\129\\202\\127\\192\\0\\0\\1')",
        "cmsgpack.unpack_one('x', 2)",
        "cmsgpack.unpack_one('x', 'y')",
        "cmsgpack.unpack_one('xyz', -1)",
        "cmsgpack.unpack_limit('x')",
        "cmsgpack.unpack_limit('xyz', -1)",
    ] {
        s.push(run(&format!("return {call}")));
    }
    for x in [
        "cc",
        "cd01",
        "ce000000",
        "cf00000000000000",
        "d0",
        "d100",
        "d2000000",
        "d300000000000000",
        "ca000000",
        "cb00000000000000",
        "a36162",
        "d9",
        "d9036162",
        "da00",
        "db000000036162",
        "9201",
        "dc000201",
        "dd000000",
        "82a16101",
        "de0001a161",
        "df000000",
        "c1",
        "c40100",
        "c7",
        "d40000",
        "d8",
        "9101c1",
    ] {
        s.push(run(&format!("return e(cmsgpack.unpack, unhex('{x}'))")));
    }
    s.push(run("return e(cmsgpack.pack)"));
    // The C function's 8000 stack slots (LUAI_MAXCSTACK): results,
    // arguments and nesting, and which check fails first.
    for body in [
        "return select('#', cmsgpack.unpack(string.rep('\\1', 7999)))",
        "return select('#', cmsgpack.unpack(string.rep('\\1', 9000)))",
        "local t = {} for i = 1, 4001 do t[i] = i end return #cmsgpack.pack(unpack(t))",
        "local t = {} for i = 1, 3998 do t[i] = {} end return #cmsgpack.pack(unpack(t))",
        "local t = {} for i = 1, 4000 do t[i] = {} end return #cmsgpack.pack(unpack(t))",
        "return type(cmsgpack.unpack(string.rep('\\145', 3998) .. '\\1'))",
        "return type(cmsgpack.unpack(string.rep('\\145', 5000) .. '\\1'))",
        "return type(cmsgpack.unpack(string.rep('\\129', 8000) .. '\\1'))",
        "return select('#', struct.unpack(string.rep('b', 7997), string.rep('x', 8000)))",
        "return select('#', struct.unpack(string.rep('b', 8000), string.rep('x', 8000)))",
    ] {
        s.push(run(body));
    }
    s.push(run("cmsgpack.pack = function() return 1 end"));
    s.push(run("struct.pack = nil"));
    s.extend(struct_steps());
    s
}

fn struct_steps() -> Vec<Step> {
    let mut s = Vec::new();
    for args in [
        "'<h>h', 1, 1",
        "'bBhHlLT', -1, 255, -2, 65535, -3, 4, 5",
        "'<i3>I5', -2, 258",
        "'>i16', -2",
        "'<i0', -2",
        "'<f>d', 1.5, -0.0",
        "'<d>d', 1e-20, 0.9999999999999999",
        "'<f', 1e300",
        "'!4 b i', 1, 2",
        "'! b d', 1, 2",
        "'!i3 b d', 1, 2, 3.5",
        "'!8 b i3', 1, 2",
        "'!2 b d b h', 1, 2, 3, 4",
        "'b x c3 s c0', 1, 'abcd', 'x', 'yz'",
        "'<L', 2^64",
        "'<L', 1/0",
        "'<L', 0/0",
        "'<l', -1/0",
        "'<L', 2^63",
        "'<L', -2^64",
        "'<L', 2^63 + 4096",
        "'<l', 2.9",
        "'<l', -2.9",
        "'i', '12'",
        "'b\\0b', 1, 2",
        "'c3', 'ab'",
        "'z', 1",
        "'=', 1",
        "'!3', 1",
        "'i33', 1",
        "'i99999999999', 1",
        "'i', 'x'",
        "12",
        "",
    ] {
        s.push(run(&format!("return hex(struct.pack({args}))")));
    }
    for args in [
        "'<i2', '\\255\\255'",
        "'<I2', '\\255\\255'",
        "'>I2 c0', '\\0\\3abcd'",
        "'b c0', '3abcd'",
        "'c1 c0', '3abcd'",
        "'c0', '3abcd'",
        "'s s', 'ab\\0cd\\0'",
        "'s', 'ab'",
        "'i', 'ab'",
        "'b', 'ab', 0",
        "'b', 'ab', -1",
        "'b', 'ab', 2",
        "'b', 'ab', 3",
        "'x', 'ab', 2.9",
        "'b', 'a', 'x'",
        "'!bd', 'x' .. ('\\0'):rep(7) .. struct.pack('d', 2.5)",
        "'<f>d', struct.pack('<f>d', 0.1, 0.1)",
        "'<L', struct.pack('<L', 2^63 + 2048)",
        "'<l', struct.pack('<l', -2^53 - 1)",
        "'<i9', ('\\255'):rep(9)",
        "'<i9', '\\0\\128\\0\\0\\0\\0\\0\\0\\0'",
        "'<i16', ('\\1'):rep(16)",
        "'<i0', ''",
        "'y', 'ab'",
    ] {
        s.push(run(&format!(
            "local t = {{struct.unpack({args})}} \
             for i, v in ipairs(t) do t[i] = tostring(v) end return t"
        )));
    }
    for fmt in [
        "'!bd'", "'i3x'", "'z'", "'c4 <>'", "'s'", "'c0'", "'='", "4", "'!5'", "{}", "'!2 b d'",
    ] {
        s.push(run(&format!("return struct.size({fmt})")));
    }
    s.push(run("return e(struct.pack, 'i', {})"));
    s.push(run("return e(struct.unpack, 'c0', 'x')"));
    s
}
