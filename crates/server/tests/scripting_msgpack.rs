//! `cmsgpack` and `struct` in scripts, as Redis 7.0's C libraries answer:
//! Redis's own test values (`unit/scripting.tcl`), every MessagePack form
//! lua-cmsgpack writes at its size boundaries, the forms it only reads,
//! `unpack_one`/`unpack_limit` offsets, its errors for truncated and
//! unknown data, `struct`'s formats, alignment and errors, the read-only
//! library tables, and both libraries inside functions.
//!
//! Scripts return hex (binary stays readable) and collect errors with
//! `pcall` (called directly, a C function's error has no position).

mod common;

use common::{Client, Reply, TestServer};

/// Helpers every script starts with: `hex`, `unhex`, `same` (deep
/// equality, NaN equal to itself), `rt` (pack, check the round trip,
/// answer the hex), `h` (the hex, no round trip), `head` (round trip,
/// answer the first `n` bytes' hex and the length), `err` (the error of
/// a call, or "no error"), `ser` (a value as text, keys sorted).
const PRELUDE: &str = r#"
local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end
local function unhex(x) return (x:gsub('%s', ''):gsub('..', function(b) return string.char(tonumber(b, 16)) end)) end
local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= 'table' then return a == b or (a ~= a and b ~= b) end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end
local function rt(v)
  local s = cmsgpack.pack(v)
  if not same(v, cmsgpack.unpack(s)) then error('no round trip: ' .. hex(s)) end
  return hex(s)
end
local function h(...) return hex(cmsgpack.pack(...)) end
local function head(v, n)
  local s = cmsgpack.pack(v)
  if not same(v, cmsgpack.unpack(s)) then error('no round trip') end
  return hex(s:sub(1, n)) .. ':' .. #s
end
local function fill(n, v) local t = {} for i = 1, n do t[i] = v end return t end
local function keys(n) local t = {} for i = 1, n do t['k' .. i] = true end return t end
local function err(f, ...)
  local ok, e = pcall(f, ...)
  if ok then return 'no error' end
  return e
end
local function ser(v)
  if type(v) ~= 'table' then return tostring(v) end
  local out = {}
  for k, x in pairs(v) do out[#out + 1] = ser(k) .. '=' .. ser(x) end
  table.sort(out)
  return '{' .. table.concat(out, ',') .. '}'
end
"#;

/// `user_script:N: `, N the line of a script's body (after the prelude).
fn at() -> String {
    format!("user_script:{}: ", PRELUDE.matches('\n').count() + 1)
}

async fn eval(c: &mut Client, body: &str) -> Reply {
    c.cmd(&["EVAL", &format!("{PRELUDE}{body}"), "0"]).await
}

/// Evaluates each Lua expression (in one script) and compares its text
/// with the expected one, naming every case that differs.
async fn check(c: &mut Client, cases: &[(&str, &str)]) {
    let list: Vec<String> = cases
        .iter()
        .map(|(e, _)| format!("tostring(({e}))"))
        .collect();
    let body = format!("return {{{}}}", list.join(", "));
    let r = eval(c, &body).await;
    let Reply::Array(Some(got)) = &r else {
        panic!("{r:?}");
    };
    assert_eq!(got.len(), cases.len(), "{r:?}");
    let bad: Vec<String> = cases
        .iter()
        .zip(got)
        .filter(|((_, want), got)| got.text() != *want)
        .map(|((e, want), got)| format!("{e}: want {want}, got {}", got.text()))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_suite_values() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    check(
        &mut c,
        &[
            ("h(0.1)", "cb3fb999999999999a"),
            ("h(-1099511627776)", "d3ffffff0000000000"),
        ],
    )
    .await;
    // Circular tables: nested copies down to 16 levels, then nil; map
    // keys in Lua's own order.
    let r = eval(
        &mut c,
        "local a = {x=nil,y=5} local b = {x=a} a['x'] = b
         local re = cmsgpack.unpack(cmsgpack.pack(a))
         assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.y == re.y)
         assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x == nil)
         return h(a)",
    )
    .await;
    let want = format!(
        "82a17905{}a178c0",
        "a17881a17882a17905".repeat(7) + "a17881"
    );
    assert_eq!(r, Reply::bulk(&want));
    // Redis's smoke test, in short: a map of every kind, and a stream of
    // long strings read back one by one.
    let r = eval(
        &mut c,
        "local big = string.rep('x', 100000)
         local m = {s1=string.rep('x', 30), s2=string.rep('x', 250), s3=string.rep('x', 65530),
           s4=big, d1=0.1, i1=1, i2=250, i3=65530, i4=100000, i5=2^40, i6=-1, i7=-120,
           i8=-32000, i9=-100000, i10=-3147483648, a1={1, 2, 3}, a3=fill(100000, 7),
           m2=keys(100000), b1=false, b2=true}
         assert(same(m, cmsgpack.unpack(cmsgpack.pack(m))))
         local off, one = cmsgpack.unpack_one(cmsgpack.pack(m), 0)
         assert(off == -1 and same(m, one))
         local s = cmsgpack.pack(m.s1, m.s2, m.s3, big)
         local o, obj = cmsgpack.unpack_limit(s, 1, 0) assert(obj == m.s1)
         o, obj = cmsgpack.unpack_limit(s, 1, o) assert(obj == m.s2)
         o, obj = cmsgpack.unpack_limit(s, 1, o) assert(obj == m.s3)
         o, obj = cmsgpack.unpack_limit(s, 1, o) assert(obj == big)
         return o",
    )
    .await;
    assert_eq!(r, Reply::Int(-1));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_take_redis_forms() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    check(
        &mut c,
        &[
            ("rt(0)", "00"),
            ("rt(127)", "7f"),
            ("rt(128)", "cc80"),
            ("rt(255)", "ccff"),
            ("rt(256)", "cd0100"),
            ("rt(65535)", "cdffff"),
            ("rt(65536)", "ce00010000"),
            ("rt(4294967295)", "ceffffffff"),
            ("rt(4294967296)", "cf0000000100000000"),
            ("rt(2^53)", "cf0020000000000000"),
            ("rt(-1)", "ff"),
            ("rt(-32)", "e0"),
            ("rt(-33)", "d0df"),
            ("rt(-128)", "d080"),
            ("rt(-129)", "d1ff7f"),
            ("rt(-32768)", "d18000"),
            ("rt(-32769)", "d2ffff7fff"),
            ("rt(-2147483648)", "d280000000"),
            ("rt(-2147483649)", "d3ffffffff7fffffff"),
            ("rt(-2^63)", "d38000000000000000"),
            // Not integers: a float when it holds the value exactly.
            ("rt(0.5)", "ca3f000000"),
            ("rt(1.5)", "ca3fc00000"),
            ("rt(1e300)", "cb7e37e43c8800759c"),
            ("rt(1/0)", "ca7f800000"),
            ("rt(-1/0)", "caff800000"),
            ("rt(2^63)", "ca5f000000"),
            ("rt(2^64)", "ca5f800000"),
            ("rt(0/0)", "cbfff8000000000000"),
            // Exact values, not rounded to the nearest integer on the way.
            ("rt(1e-20)", "cb3bc79ca10c924223"),
            ("rt(0.9999999999999999)", "cb3fefffffffffffff"),
            ("rt(-0.0)", "00"),
        ],
    )
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_tables_and_other_values() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    check(
        &mut c,
        &[
            ("rt(true)", "c3"),
            ("rt(false)", "c2"),
            ("rt(nil)", "c0"),
            ("h(function() end)", "c0"),
            ("h(cjson.null)", "c0"),
            ("h(1, 'a', true, nil)", "01a161c3c0"),
            ("head('', 1)", "a0:1"),
            ("head('abc', 4)", "a3616263:4"),
            ("head(('x'):rep(31), 1)", "bf:32"),
            ("head(('x'):rep(32), 2)", "d920:34"),
            ("head(('x'):rep(255), 2)", "d9ff:257"),
            ("head(('x'):rep(256), 3)", "da0100:259"),
            ("head(('x'):rep(65535), 3)", "daffff:65538"),
            ("head(('x'):rep(65536), 5)", "db00010000:65541"),
            ("head({}, 1)", "90:1"),
            ("head(fill(15, true), 1)", "9f:16"),
            ("head(fill(16, true), 3)", "dc0010:19"),
            ("head(fill(65535, true), 3)", "dcffff:65538"),
            ("head(fill(65536, true), 5)", "dd00010000:65541"),
            ("head(keys(1), 6)", "81a26b31c3:5"),
            ("head(keys(15), 1):sub(1, 2)", "8f"),
            ("head(keys(16), 3):sub(1, 6)", "de0010"),
            ("head(keys(65535), 3):sub(1, 6)", "deffff"),
            ("head(keys(65536), 5):sub(1, 10)", "df00010000"),
            // An array only when the keys are exactly 1..n.
            ("rt({[1]=1, [2]=2})", "920102"),
            ("rt({1, 2, nil, 4})", "83010102020404"),
            ("rt({[0]=1})", "810001"),
            ("rt({[-1]=1})", "81ff01"),
            ("rt({[1.5]=1})", "81ca3fc0000001"),
            ("rt({[2^31]=1})", "81ce8000000001"),
            ("rt({{}, {{}}})", "92909190"),
            // Tables 16 deep are nil.
            (
                "(function() local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return h(t) end)()",
                &("91".repeat(16) + "c0"),
            ),
        ],
    )
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpack_reads_every_form() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let u = |x: &str| format!("ser(cmsgpack.unpack(unhex('{x}')))");
    let cases = [
        ("cc05", "5"),
        ("cd0100", "256"),
        ("ce00010000", "65536"),
        ("cf0000000100000000", "4294967296"),
        // C pushes a uint64 through a signed lua_Integer.
        ("cfffffffffffffffff", "-1"),
        ("d005", "5"),
        ("d0fb", "-5"),
        ("d1fffb", "-5"),
        ("d2fffffffb", "-5"),
        ("d3fffffffffffffffb", "-5"),
        ("7f", "127"),
        ("e0", "-32"),
        ("ca3fc00000", "1.5"),
        ("cb3ff8000000000000", "1.5"),
        ("c0", "nil"),
        ("c2", "false"),
        ("c3", "true"),
        ("a3616263", "abc"),
        ("d903616263", "abc"),
        ("da0003616263", "abc"),
        ("db00000003616263", "abc"),
        ("920102", "{1=1,2=2}"),
        ("dc00020102", "{1=1,2=2}"),
        ("dd000000020102", "{1=1,2=2}"),
        ("92c001", "{2=1}"),
        ("82a16101a16202", "{a=1,b=2}"),
        ("de0001a16101", "{a=1}"),
        ("df00000001a16101", "{a=1}"),
        ("8101c0", "{}"),
        ("819101c3", "{{1=1}=true}"),
    ];
    let exprs: Vec<(String, &str)> = cases.iter().map(|(x, want)| (u(x), *want)).collect();
    let refs: Vec<(&str, &str)> = exprs.iter().map(|(e, w)| (e.as_str(), *w)).collect();
    check(&mut c, &refs).await;
    check(
        &mut c,
        &[
            ("select('#', cmsgpack.unpack(''))", "0"),
            ("select('#', cmsgpack.unpack(unhex('010203')))", "3"),
            (
                "ser({cmsgpack.unpack(unhex('01a16291c3'))})",
                "{1=1,2=b,3={1=true}}",
            ),
        ],
    )
    .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unpack_one_and_limit_answer_offsets() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    // s = 1, 'ab', {1}: objects at 0, 1 and 4, 6 bytes.
    let s = "cmsgpack.pack(1, 'ab', {1})";
    let cases: Vec<(String, &str)> = [
        ("unpack_one(S)", "{1=1,2=1}"),
        ("unpack_one(S, 1)", "{1=4,2=ab}"),
        ("unpack_one(S, 4)", "{1=-1,2={1=1}}"),
        ("unpack_one(S, 6)", "{1=-1}"),
        ("unpack_one(S, 1.9)", "{1=4,2=ab}"),
        ("unpack_one(S, '4')", "{1=-1,2={1=1}}"),
        ("unpack_limit(S, 2)", "{1=4,2=1,3=ab}"),
        ("unpack_limit(S, 2, 4)", "{1=-1,2={1=1}}"),
        ("unpack_limit(S, 9, 1)", "{1=-1,2=ab,3={1=1}}"),
        // Limit and offset 0: everything, without an offset.
        ("unpack_limit(S, 0)", "{1=1,2=ab,3={1=1}}"),
        ("unpack_limit(S, 0, 1)", "{1=1}"),
        ("unpack_one('')", "{1=-1}"),
    ]
    .iter()
    .map(|(e, want)| {
        let call = e.replace('S', s);
        (format!("ser({{cmsgpack.{call}}})"), *want)
    })
    .collect();
    let refs: Vec<(&str, &str)> = cases.iter().map(|(e, w)| (e.as_str(), *w)).collect();
    check(&mut c, &refs).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_in_redis_words() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let missing = [
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
        "da00036162",
        "db000000",
        "db000000036162",
        "9201",
        "dc00",
        "dc000201",
        "dd000000",
        "dd0000000201",
        "82a16101",
        "de00",
        "de0001a161",
        "df000000",
        "8101",
        "0191",
    ];
    let bad = ["c1", "c40100", "c7", "d40000", "d8", "9101c1", "01c1"];
    let mut cases: Vec<(String, &str)> = Vec::new();
    for x in missing {
        let e = format!("err(cmsgpack.unpack, unhex('{x}'))");
        cases.push((e, "Missing bytes in input."));
    }
    for x in bad {
        let e = format!("err(cmsgpack.unpack, unhex('{x}'))");
        cases.push((e, "Bad data format in input."));
    }
    let more = [
        (
            "err(cmsgpack.unpack, unhex('81c001'))",
            "table index is nil",
        ),
        (
            "err(cmsgpack.unpack, unhex('81ca7fc0000001'))",
            "table index is NaN",
        ),
        (
            "err(cmsgpack.unpack_one, 'x', 2)",
            "Start offset 2 greater than input length 1.",
        ),
        // (Redis shows the length where it says limit.)
        (
            "err(cmsgpack.unpack_one, 'xyz', -1)",
            "Invalid request to unpack with offset of -1 and limit of 3.",
        ),
        (
            "err(cmsgpack.unpack_limit, 'xyz', -1)",
            "Invalid request to unpack with offset of 0 and limit of 3.",
        ),
        (
            "err(cmsgpack.pack)",
            "bad argument #0 to '?' (MessagePack pack needs input.)",
        ),
        (
            "err(cmsgpack.unpack)",
            "bad argument #1 to '?' (string expected, got no value)",
        ),
        (
            "err(cmsgpack.unpack, {})",
            "bad argument #1 to '?' (string expected, got table)",
        ),
        (
            "err(cmsgpack.unpack_limit, 'x')",
            "bad argument #2 to '?' (number expected, got no value)",
        ),
        (
            "err(cmsgpack.unpack_one, 'x', 'y')",
            "bad argument #2 to '?' (number expected, got string)",
        ),
    ];
    cases.extend(more.iter().map(|(e, w)| (e.to_string(), *w)));
    // Called from the script, the error names the function and the line.
    let bad_format = format!("{}Bad data format in input.", at());
    let no_input = format!(
        "{}bad argument #0 to 'pack' (MessagePack pack needs input.)",
        at()
    );
    cases.push((
        "err(function() return cmsgpack.unpack('\\193') end)".into(),
        &bad_format,
    ));
    cases.push((
        "err(function() return cmsgpack.pack() end)".into(),
        &no_input,
    ));
    let refs: Vec<(&str, &str)> = cases.iter().map(|(e, w)| (e.as_str(), *w)).collect();
    check(&mut c, &refs).await;
    // The C function's 8000 stack slots bound results and nesting (keys
    // nest one slot a level, array items two).
    let overflow =
        "stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)";
    let limits = [
        ("select('#', cmsgpack.unpack(('\\1'):rep(7999)))", "7999"),
        ("err(cmsgpack.unpack, ('\\1'):rep(9000))", overflow),
        (
            "type(cmsgpack.unpack(('\\145'):rep(3998) .. '\\1'))",
            "table",
        ),
        (
            "err(cmsgpack.unpack, ('\\145'):rep(5000) .. '\\1')",
            "stack overflow (in function mp_decode_to_lua_array)",
        ),
        (
            "err(cmsgpack.unpack, ('\\129'):rep(8000) .. '\\1')",
            overflow,
        ),
    ];
    check(&mut c, &limits).await;
    // Uncaught, the error is the script's.
    let r = eval(&mut c, "return cmsgpack.unpack('\\205\\1')").await;
    let want = format!("ERR {}Missing bytes in input. script: ", at());
    assert!(r.is_error_starting(&want), "{r:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn struct_packs_unpacks_and_sizes() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let p = |e: &str| format!("hex(struct.pack({e}))");
    let u = |e: &str| format!("ser({{struct.unpack({e})}})");
    let cases: Vec<(String, &str)> = vec![
        (p("'<h>h', 1, 1"), "01000001"),
        (
            p("'bBhHlLT', -1, 255, -2, 65535, -3, 4, 5"),
            "ffff feffffff fdffffffffffffff 0400000000000000 0500000000000000",
        ),
        (p("'<i3>I5', -2, 258"), "feffff0000000102"),
        (p("'>i16', -2"), "0000000000000000fffffffffffffffe"),
        (p("'<f>d', 1.5, -0.0"), "0000c03f8000000000000000"),
        (p("'<d', 1e-20"), "234292 0ca19cc73b"),
        (p("'!4 b i', 1, 2"), "0100000002000000"),
        (p("'! b d', 1, 2"), "010000000000000000000000000000 40"),
        (
            p("'b x c3 s c0', 1, 'abcd', 'x', 'yz'"),
            "0100616263780079 7a",
        ),
        (p("'<L', 2^64"), "0000000000000000"),
        (p("'<L', 0/0"), "0000000000000080"),
        (p("'<l', 2.9"), "0200000000000000"),
        (p("'i', '12'"), "0c000000"),
        (p("'b\\0b', 1, 2"), "01"),
        (u("'<i2', '\\255\\255'"), "{1=-1,2=3}"),
        (u("'<I2', '\\255\\255'"), "{1=65535,2=3}"),
        (u("'>I2 c0', '\\0\\3abcd'"), "{1=abc,2=6}"),
        (u("'c1 c0', '3abcd'"), "{1=abc,2=5}"),
        (u("'s s', 'ab\\0cd\\0'"), "{1=ab,2=cd,3=7}"),
        (u("'b', 'ab', 2"), "{1=98,2=3}"),
        (u("'x', 'ab', 2.9"), "{1=3}"),
        (
            u("'!bd', 'x' .. ('\\0'):rep(7) .. struct.pack('d', 2.5)"),
            "{1=120,2=2.5,3=17}",
        ),
        (
            u("'!4 b i', struct.pack('!4 b i', 7, -9)"),
            "{1=7,2=-9,3=9}",
        ),
        (
            u("'<f>d', struct.pack('<f>d', 0.1, 0.1)"),
            "{1=0.10000000149012,2=0.1,3=13}",
        ),
        (
            u("'<L', struct.pack('<L', 2^63 + 2048)"),
            "{1=9.2233720368548e+18,2=9}",
        ),
        (u("'<i9', ('\\255'):rep(9)"), "{1=-1,2=10}"),
        ("struct.size('!bd')".into(), "16"),
        ("struct.size('i3x')".into(), "4"),
        ("struct.size('c4 <>')".into(), "4"),
        // Letters that are not options count nothing in size.
        ("struct.size('z')".into(), "0"),
    ];
    // (spaces in expectations only group bytes)
    let cases: Vec<(String, String)> = cases
        .into_iter()
        .map(|(e, w)| (e, w.replace(' ', "")))
        .collect();
    let refs: Vec<(&str, &str)> = cases
        .iter()
        .map(|(e, w)| (e.as_str(), w.as_str()))
        .collect();
    check(&mut c, &refs).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn struct_errors_are_redis_words() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let e = |call: &str| format!("err(function() return struct.{call} end)");
    let at = at();
    let cases: Vec<(String, String)> = [
        (
            "pack()",
            "bad argument #1 to 'pack' (string expected, got no value)",
        ),
        (
            "pack('z', 1)",
            "bad argument #1 to 'pack' (invalid format option 'z')",
        ),
        (
            "pack('=', 1)",
            "bad argument #1 to 'pack' (invalid format option '=')",
        ),
        (
            "pack('i', 'x')",
            "bad argument #2 to 'pack' (number expected, got string)",
        ),
        (
            "pack('c3', 'ab')",
            "bad argument #3 to 'pack' (string too short)",
        ),
        ("pack('!3')", "alignment 3 is not a power of 2"),
        (
            "pack('i33', 1)",
            "integral size 33 is larger than limit of 32",
        ),
        ("pack('i99999999999', 1)", "integral size overflow"),
        (
            "unpack('i', 'ab')",
            "bad argument #2 to 'unpack' (data string too short)",
        ),
        (
            "unpack('b', 'ab', 0)",
            "bad argument #3 to 'unpack' (offset must be 1 or greater)",
        ),
        (
            "unpack('b', 'ab', -1)",
            "bad argument #2 to 'unpack' (data string too short)",
        ),
        (
            "unpack('b', 'ab', 'x')",
            "bad argument #3 to 'unpack' (number expected, got string)",
        ),
        ("unpack('c0', 'abc')", "format 'c0' needs a previous size"),
        (
            "unpack('b c0', '9ab')",
            "bad argument #2 to 'unpack' (data string too short)",
        ),
        ("unpack('s', 'ab')", "unfinished string in data"),
        (
            "unpack('y', 'ab')",
            "bad argument #1 to 'unpack' (invalid format option 'y')",
        ),
        (
            "size('s')",
            "bad argument #1 to 'size' (option 's' has no fixed size)",
        ),
        (
            "size('c0')",
            "bad argument #1 to 'size' (option 'c0' has no fixed size)",
        ),
        (
            "size('=')",
            "bad argument #1 to 'size' (invalid format option '=')",
        ),
        ("size('!5')", "alignment 5 is not a power of 2"),
        (
            "size({})",
            "bad argument #1 to 'size' (string expected, got table)",
        ),
    ]
    .iter()
    .map(|(call, want)| (e(call), format!("{at}{want}")))
    .collect();
    let refs: Vec<(&str, &str)> = cases
        .iter()
        .map(|(e, w)| (e.as_str(), w.as_str()))
        .collect();
    check(&mut c, &refs).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn library_tables_are_read_only() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    for script in [
        "cmsgpack.pack = function() return 1 end",
        "struct.unpack = nil",
        "rawset(cmsgpack, 'x', 1)",
        "setmetatable(struct, {})",
    ] {
        let r = c.cmd(&["EVAL", script, "0"]).await;
        assert!(
            matches!(&r, Reply::Error(e) if e.contains("Attempt to modify a readonly table")),
            "{script}: {r:?}"
        );
    }
    let r = c
        .cmd(&["EVAL", "return {cmsgpack._VERSION, cmsgpack._NAME}", "0"])
        .await;
    assert_eq!(
        r,
        Reply::Array(Some(vec![
            Reply::bulk("lua-cmsgpack 0.4.0"),
            Reply::bulk("cmsgpack")
        ]))
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_have_both_libraries() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let lib = "#!lua name=packlib\n\
        redis.register_function('roundtrip', function(keys, args)\n\
          local s = cmsgpack.pack({args[1], struct.pack('>I2', tonumber(args[2]))})\n\
          local t = cmsgpack.unpack(s)\n\
          return {t[1], struct.unpack('>I2', t[2]), #s}\n\
        end)";
    assert_eq!(
        c.cmd(&["FUNCTION", "LOAD", lib]).await,
        Reply::bulk("packlib")
    );
    let r = c.cmd(&["FCALL", "roundtrip", "0", "hello", "513"]).await;
    assert_eq!(
        r,
        Reply::Array(Some(vec![
            Reply::bulk("hello"),
            Reply::Int(513),
            Reply::Int(10)
        ]))
    );
    server.shutdown().await;
}
