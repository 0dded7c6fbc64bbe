//! The scripting script: `EVAL`'s conversions both ways (integers, bulk
//! strings, nil, arrays stopping at the first nil, status and error
//! tables, booleans, truncated numbers), `redis.pcall` error tables,
//! `redis.error_reply`/`status_reply`, `EVALSHA` after `SCRIPT LOAD`,
//! `NOSCRIPT`, `SCRIPT EXISTS`, wrong `numkeys`, writes read back, global
//! protection, command errors inside `redis.call` (with Redis's `script:`
//! suffix), refused commands, `EVAL_RO` refusing writes, RESP3 through
//! `redis.setresp(3)`, and `COMMAND GETKEYS` of `EVAL`.

use super::{c, Check, Step};

/// `EVAL script numkeys args...`, the script given whole.
fn eval(script: &str, rest: &[&str]) -> Step {
    cmd("EVAL", script, rest)
}

fn cmd(name: &str, script: &str, rest: &[&str]) -> Step {
    let mut args = vec![name.as_bytes().to_vec(), script.as_bytes().to_vec()];
    args.extend(rest.iter().map(|a| a.as_bytes().to_vec()));
    Step::Cmd(args, Check::Exact)
}

pub fn eval_script() -> Vec<Step> {
    let sha_one = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    vec![
        c("FLUSHALL"),
        c("SCRIPT FLUSH"),
        // Lua to RESP.
        eval("return 1", &["0"]),
        eval("return 3.99", &["0"]),
        eval("return -3.99", &["0"]),
        // Numbers out of int64 range, NaN and infinities: x86's cast.
        eval("return {1/0, -1/0, 0/0, 2^63, -2^70, 2^53, -0.0}", &["0"]),
        eval("return 'x'", &["0"]),
        eval("return true", &["0"]),
        eval("return false", &["0"]),
        eval("return nil", &["0"]),
        eval("return {1, 2, 3, 'x', nil, 5}", &["0"]),
        eval("return {1, false, 3}", &["0"]),
        eval("return {1, {2, {3, 'deep'}}, {}}", &["0"]),
        eval("return {ok='FINE'}", &["0"]),
        eval("return {err='MYERR went wrong'}", &["0"]),
        eval("return {err=''}", &["0"]),
        eval("return redis.status_reply('DONE')", &["0"]),
        eval("return redis.error_reply('My err')", &["0"]),
        eval("return redis.error_reply('-CODE with code')", &["0"]),
        eval("return redis.error_reply(1)", &["0"]),
        eval("return redis.sha1hex('')", &["0"]),
        eval("return redis.sha1hex()", &["0"]),
        eval("return redis.REDIS_VERSION", &["0"]),
        eval("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", &["2", "k1", "k2", "a1", "a2"]),
        eval("return 1, 2", &["0"]),
        eval("return pcall(redis.call, 'incr', 'nokey-s')", &["0"]),
        // RESP to Lua.
        c("SET s abc"),
        c("RPUSH l a b c"),
        eval("return redis.call('get', 's')", &["0"]),
        eval("return redis.call('get', 'missing')", &["0"]),
        eval("return type(redis.call('get', 'missing'))", &["0"]),
        eval("return redis.call('set', 's', 'v2')", &["0"]),
        eval("return redis.call('set', 's', 'v2').ok", &["0"]),
        eval("return redis.call('lrange', 'l', 0, -1)", &["0"]),
        eval("return redis.call('exists', 's', 'l', 'nope')", &["0"]),
        eval("return redis.call('incrbyfloat', 'f', '1.5')", &["0"]),
        eval("return redis.call('set', 'n', 10.5)", &["0"]),
        eval("return redis.call('get', 'n')", &["0"]),
        eval("return redis.call('hgetall', 'nohash')", &["0"]),
        // Errors from commands.
        eval("return redis.pcall('incr', 's')", &["0"]),
        eval("local e = redis.pcall('incr', 's') return e.err", &["0"]),
        eval("return redis.call('incr', 's')", &["0"]),
        eval("return redis.call('lpush', 's', 'x')", &["0"]),
        eval("return redis.call('nosuch')", &["0"]),
        eval("return redis.call('incr', 'a', 'b')", &["0"]),
        eval("return redis.call()", &["0"]),
        eval("return redis.call({})", &["0"]),
        eval("return redis.call('get', KEYS[1], nil)", &["1", "a"]),
        eval("return redis.pcall('nosuch')", &["0"]),
        eval("return redis.call('multi')", &["0"]),
        eval("return redis.call('blpop', 'l', 0)", &["0"]),
        eval("return redis.call('subscribe', 'ch')", &["0"]),
        eval("return redis.call('eval', 'return 1', 0)", &["0"]),
        eval("return redis.call('script', 'load', 'return 1')", &["0"]),
        eval("error('boom')", &["0"]),
        eval("error({err='XCODE boo'})", &["0"]),
        eval("local t = nil\nreturn t.x", &["0"]),
        eval("x=", &["0"]),
        eval("local function f() return f() + 1 end return f()", &["0"]),
        // Global protection and the sandbox.
        eval("x = 1", &["0"]),
        eval("return y", &["0"]),
        eval("return _G.y", &["0"]),
        eval("rawset(_G, 'z', 1) return 1", &["0"]),
        eval("redis = 1", &["0"]),
        eval("string.x = 1", &["0"]),
        eval("os.exit()", &["0"]),
        eval("return io", &["0"]),
        eval("return require", &["0"]),
        eval("return dofile", &["0"]),
        eval("local t = {} t.x = 1 return t.y", &["0"]),
        eval("return string.upper('abc') .. math.floor(2.5) .. table.concat({'a','b'}, '-')", &["0"]),
        eval("return tostring(loadstring ~= nil)", &["0"]),
        // cjson, bit, math.random.
        eval("return cjson.encode({1, 2, 'x', {a=1}})", &["0"]),
        eval("return cjson.encode({})", &["0"]),
        eval("return cjson.encode('a/b\\n\"')", &["0"]),
        eval("return cjson.encode({1.5, -0.25, 1e20, 100})", &["0"]),
        eval("return cjson.encode({[1]=1, [20]=2})", &["0"]),
        eval("return cjson.encode({f=function() end})", &["0"]),
        eval("local t = cjson.decode('{\"a\":[1,2,{\"b\":true}],\"c\":\"x\"}') return {t.a[1], t.a[3].b, t.c}", &["0"]),
        eval("return cjson.decode('[1,null,3]')[2] == cjson.null", &["0"]),
        eval("return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(3, 1), bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-16, 2), bit.tohex(255), bit.tohex(-1, -4), bit.bnot(0)}", &["0"]),
        eval("math.randomseed(ARGV[1]) return {tostring(math.random()), math.random(10), math.random(5, 7)}", &["0", "42"]),
        eval("math.randomseed(ARGV[1]) return {tostring(math.random()), math.random(10), math.random(5, 7)}", &["0", "42"]),
        eval("return math.random(0)", &["0"]),
        eval("local g = getmetatable(_G) g.__index = {}", &["0"]),
        eval("return loadstring(string.dump(function() return 1 end))()", &["0"]),
        eval("return loadstring('return 7')()", &["0"]),
        eval("return redis.pcall('xread', 'BLOCK', 0, 'STREAMS', 's', '$')", &["0"]),
        eval("cjson.encode_keep_buffer(false) return cjson.encode({1})", &["0"]),
        eval("cjson.encode_max_depth(1) local ok = pcall(cjson.encode, {{1}}) cjson.encode_max_depth(1000) return tostring(ok)", &["0"]),
        eval("cjson.decode_max_depth(1) local ok = pcall(cjson.decode, '[[1]]') cjson.decode_max_depth(1000) return tostring(ok)", &["0"]),
        eval("cjson.encode_invalid_numbers(true) local s = cjson.encode({0/0}) cjson.encode_invalid_numbers(false) return s", &["0"]),
        eval("return cjson.encode({0/0})", &["0"]),
        c("SADD myset a b c d e f g h i l m n o p q r s t u v z aa aaa azz"),
        eval("return redis.call('sort', KEYS[1], 'by', '_')", &["1", "myset"]),
        // Writes read back; an error mid-way keeps the earlier writes.
        eval(
            "redis.call('incr', KEYS[1]) redis.call('hset', KEYS[2], 'f', ARGV[1]) \
             redis.call('lpush', KEYS[3], ARGV[1], ARGV[2]) \
             return {redis.call('get', KEYS[1]), redis.call('hget', KEYS[2], 'f'), redis.call('lrange', KEYS[3], 0, -1)}",
            &["3", "cnt", "h", "lst", "v1", "v2"],
        ),
        eval("redis.call('set', 'partial', 1) redis.call('incr', 's') redis.call('set', 'never', 1)", &["0"]),
        c("GET partial"),
        c("EXISTS never"),
        // numkeys.
        eval("return 1", &["-1"]),
        eval("return 1", &["x"]),
        eval("return 1", &["3", "a"]),
        c("EVAL"),
        // The cache.
        cmd("SCRIPT", "LOAD", &["return 1"]),
        cmd("SCRIPT", "LOAD", &["x="]),
        cmd("EVALSHA", sha_one, &["0"]),
        cmd("EVALSHA", &sha_one.to_uppercase(), &["0"]),
        cmd("EVALSHA", "abc", &["0"]),
        cmd("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", &["0"]),
        cmd("SCRIPT", "EXISTS", &[sha_one, "ffffffffffffffffffffffffffffffffffffffff"]),
        c("SCRIPT FLUSH"),
        cmd("SCRIPT", "EXISTS", &[sha_one]),
        cmd("EVALSHA", sha_one, &["0"]),
        eval("return 1", &["0"]),
        cmd("EVALSHA_RO", sha_one, &["0"]),
        cmd("SCRIPT", "EXISTS", &[sha_one]),
        c("SCRIPT FLUSH ASYNC"),
        c("SCRIPT FLUSH SYNC"),
        c("SCRIPT FLUSH x"),
        c("SCRIPT KILL"),
        c("SCRIPT LOAD"),
        c("SCRIPT nope"),
        c("SCRIPT HELP"),
        // Read-only scripts.
        cmd("EVAL_RO", "return redis.call('get', 's')", &["0"]),
        cmd("EVAL_RO", "return redis.call('set', 'a', 'b')", &["0"]),
        cmd("EVAL_RO", "return redis.call('publish', 'a', 'b')", &["0"]),
        c("EXISTS a"),
        // RESP3 inside the script.
        c("HSET hh f v"),
        eval("redis.setresp(3) return redis.call('hgetall', 'hh')", &["0"]),
        eval("redis.setresp(3) return redis.call('hgetall', 'hh').map.f", &["0"]),
        eval("redis.setresp(3) return redis.call('get', 'missing') == nil", &["0"]),
        eval("redis.setresp(3) return {double=1.5}", &["0"]),
        eval("redis.setresp(3) return true", &["0"]),
        eval("redis.setresp(3) return false", &["0"]),
        eval("redis.setresp(3) return {map={a=1}}", &["0"]),
        eval("redis.setresp(3) return {set={a=true}}", &["0"]),
        eval("redis.setresp(4)", &["0"]),
        eval("return {double=2.5}", &["0"]),
        // The log.
        eval("redis.log(redis.LOG_WARNING, 'from a script') return redis.LOG_NOTICE", &["0"]),
        eval("redis.log(redis.LOG_WARNING)", &["0"]),
        eval("redis.log(9, 'x')", &["0"]),
        // Keys of EVAL.
        cmd("COMMAND", "GETKEYS", &["eval", "return 1", "2", "a", "b", "c"]),
        cmd("COMMAND", "GETKEYS", &["eval", "return 1", "0"]),
        cmd("COMMAND", "GETKEYS", &["evalsha_ro", "x", "1", "a"]),
        // Shebang lines.
        eval("#!lua flags=no-writes\nreturn redis.call('set', 'x', '1')", &["0"]),
        eval("#!lua flags=no-writes\nreturn redis.call('get', 's')", &["0"]),
        eval("#!lua\nerror('on line two')", &["0"]),
        eval("#!lua badger=data\nreturn 1", &["0"]),
        eval("#!lua flags=bad\nreturn 1", &["0"]),
        eval("#!python\nreturn 1", &["0"]),
        eval("#!lua", &["0"]),
        cmd("EVAL_RO", "#!lua\nreturn 1", &["0"]),
        cmd("EVAL_RO", "#!lua flags=no-writes\nreturn 1", &["0"]),
        cmd("SCRIPT", "LOAD", &["#!lua badger=data\nreturn 1"]),
        // Inside MULTI.
        c("MULTI"),
        eval("return redis.call('incr', 'cnt')", &["0"]),
        c("INCR cnt"),
        c("EXEC"),
    ]
}
