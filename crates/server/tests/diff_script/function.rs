//! The functions script: `FUNCTION LOAD`'s errors (metadata, names,
//! engine, compile errors, the load environment, `register_function`'s
//! two forms and their errors, flags, timeout, duplicates), `REPLACE`,
//! `FCALL`/`FCALL_RO` (arguments, errors with the function's name, flags,
//! `redis.call`, globals, RESP3 through `redis.setresp`), `FUNCTION
//! LIST|DELETE|FLUSH|STATS|DUMP|RESTORE|KILL|HELP`, `SCRIPT KILL`'s and
//! `FUNCTION KILL`'s `NOTBUSY`, and `SCRIPT FLUSH` leaving libraries alone.
//!
//! Libraries listed or dumped hold one function each: Redis lists
//! libraries and functions in its hash tables' order.

use super::{c, Check, Step};

/// `FUNCTION LOAD <code>`, the code given whole.
fn load(code: &str) -> Step {
    Step::Cmd(
        vec![
            b"FUNCTION".to_vec(),
            b"LOAD".to_vec(),
            code.as_bytes().to_vec(),
        ],
        Check::Exact,
    )
}

/// `FUNCTION LOAD REPLACE <code>`.
fn replace(code: &str) -> Step {
    Step::Cmd(
        vec![
            b"FUNCTION".to_vec(),
            b"LOAD".to_vec(),
            b"REPLACE".to_vec(),
            code.as_bytes().to_vec(),
        ],
        Check::Exact,
    )
}

/// `FUNCTION RESTORE` of a payload holding `codes` (as `FUNCTION DUMP`
/// writes them, uncompressed), with `policy`.
fn restore(codes: &[&str], policy: Option<&str>) -> Step {
    let payload = tiercache_server::rdb::dump_functions(codes.iter().map(|c| c.as_bytes()));
    let mut args = vec![b"FUNCTION".to_vec(), b"RESTORE".to_vec(), payload];
    args.extend(policy.map(|p| p.as_bytes().to_vec()));
    Step::Cmd(args, Check::Exact)
}

/// A library `lib` whose body is `body`.
fn lib(name: &str, body: &str) -> String {
    format!("#!lua name={name}\n{body}")
}

/// A library `lib` with one function `f` whose body is `body`.
fn one(name: &str, f: &str, body: &str) -> String {
    lib(
        name,
        &format!("redis.register_function('{f}', function(keys, args) {body} end)"),
    )
}

pub fn function_script() -> Vec<Step> {
    let mut s = vec![c("FLUSHALL"), c("FUNCTION FLUSH"), c("SCRIPT FLUSH")];
    // Metadata and names.
    for code in [
        "return 1",
        "#!lua",
        "#!lua\nreturn 1",
        "#!lua name=a name=b\nreturn 1",
        "#!lua foo=bar\nreturn 1",
        "#!lua name=bad-name\nreturn 1",
        "#!lua name=\nreturn 1",
        "#!python name=p\nreturn 1",
        "#!lua name=nofn\nreturn 1",
        "#!lua name=syntax\nlocal a = 1 +",
        "#!lua name=\"quoted\"\nredis.register_function('quoted', function() return 1 end)",
        "#!lua name=\"unbalanced\nreturn 1",
        "#!lua name='single'x\nreturn 1",
    ] {
        s.push(load(code));
    }
    // The load environment: only redis.register_function, log, levels, version.
    for body in [
        "redis.call('ping')",
        "redis.pcall('ping')",
        "redis.setresp(3)",
        "local x = string.len('x')",
        "local x = math.random()",
        "error('boom')",
        "local t = {} t.x = 1 x = 1",
        "redis.log(redis.LOG_NOTICE, 'loading') redis.register_function('logged', function() return redis.REDIS_VERSION_NUM end)",
        "while true do end",
        "redis.register_function()",
        "redis.register_function('a', 'b', 'c')",
        "redis.register_function(1)",
        "redis.register_function({}, function() end)",
        "redis.register_function('f', 'not a function')",
        "redis.register_function('bad name', function() end)",
        "redis.register_function('', function() end)",
        "redis.register_function('dup', function() end) redis.register_function('dup', function() end)",
        "redis.register_function{function_name='t1'}",
        "redis.register_function{callback=function() end}",
        "redis.register_function{function_name='t2', callback='x'}",
        "redis.register_function{function_name={}, callback=function() end}",
        "redis.register_function{function_name='t3', callback=function() end, flags='no-writes'}",
        "redis.register_function{function_name='t4', callback=function() end, flags={'no-such-flag'}}",
        "redis.register_function{function_name='t5', callback=function() end, description={}}",
        "redis.register_function{function_name='t6', callback=function() end, other=1}",
    ] {
        s.push(load(&lib("env", body)));
    }
    s.extend([
        c("FCALL logged 0"),
        c("FUNCTION DELETE env"),
        // Functions run.
        load(&one("lib1", "echo", "return {keys[1], keys[2], args[1], #keys, #args}")),
        load(&one("lib1", "other", "return 1")),
        replace(&one("lib1", "echo", "return {keys[1], keys[2], args[1], #keys, #args}")),
        load(&one("lib2", "echo", "return 2")),
        c("FCALL echo 2 k1 k2 a1 a2"),
        c("FCALL echo 0"),
        c("FCALL ECHO 0"),
        load(&one("lib6", "ECHO", "return 6")),
        c("FCALL nosuch 0"),
        c("FCALL echo x"),
        c("FCALL echo -1"),
        c("FCALL echo 3 a b"),
        c("FCALL echo"),
        c("FCALL_RO echo 0"),
        load(&lib(
            "lib3",
            "redis.register_function{function_name='ro', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads a key'}",
        )),
        load(&lib(
            "lib4",
            "redis.register_function{function_name='rw', callback=function(keys, args) return redis.call('set', keys[1], args[1]) end, flags={'allow-oom', 'ALLOW-STALE'}}",
        )),
        load(&lib(
            "lib5",
            "redis.register_function{function_name='badwrite', callback=function(keys, args) return redis.call('set', 'k', 'v') end, flags={'no-writes'}}",
        )),
        c("FCALL rw 1 k v1"),
        c("FCALL ro 1 k"),
        c("FCALL_RO ro 1 k"),
        c("FCALL_RO rw 1 k v2"),
        c("FCALL badwrite 0"),
        c("FCALL_RO badwrite 0"),
        c("GET k"),
        load(&one("errs", "err1", "return nosuchglobal")),
        load(&one("errs2", "err2", "error('my error')")),
        load(&one("errs3", "err3", "return redis.call('nosuchcmd')")),
        load(&one("errs4", "err4", "newglobal = 1")),
        load(&one("errs5", "err5", "return KEYS")),
        load(&one("errs6", "err6", "return redis.call('incr', 'k')")),
        load(&one("errs7", "err7", "return redis.pcall('incr', 'k')")),
        load(&one("errs8", "err8", "return redis.register_function('x', function() end)")),
        load(&one("errs9", "err9", "return {err='MYERR custom'}")),
        load(&one("errs10", "err10", "return redis.error_reply('My err')")),
        load(&one("errs11", "err11", "return redis.call('fcall', 'echo', 0)")),
        load(&one("errs12", "err12", "return redis.call('function', 'list')")),
    ]);
    for f in [
        "err1", "err2", "err3", "err4", "err5", "err6", "err7", "err8", "err9", "err10", "err11",
        "err12",
    ] {
        s.push(c(&format!("FCALL {f} 0")));
    }
    s.extend([
        // Replies through RESP2 and RESP3, with redis.setresp.
        load(&one(
            "resp",
            "types",
            "return {1, 'two', 3.5, true, false, {ok='OK'}, {double=1.5}}",
        )),
        load(&one(
            "resp3",
            "r3",
            "redis.setresp(3) return {redis.call('hgetall', 'h'), redis.call('smembers', 'one'), redis.call('get', 'missing')}",
        )),
        load(&one(
            "resp3b",
            "r3b",
            "redis.setresp(3) return redis.call('hgetall', 'h')",
        )),
        c("HSET h f v"),
        c("SADD one m"),
        c("FCALL types 0"),
        c("FCALL r3 0"),
        c("FCALL r3b 0"),
        // SCRIPT FLUSH leaves the libraries; FUNCTION FLUSH drops them.
        c("SCRIPT FLUSH"),
        c("FCALL echo 1 a"),
        c("FUNCTION FLUSH"),
        c("FCALL echo 1 a"),
        c("FUNCTION LIST"),
        c("FUNCTION STATS"),
        c("FUNCTION DUMP"),
        // LIST, STATS, DUMP of one library.
        load(&lib(
            "listed",
            "redis.register_function{function_name='lf', callback=function() return 1 end, flags={'no-writes', 'allow-cross-slot-keys', 'no-cluster'}, description='listed one'}",
        )),
        c("FUNCTION LIST"),
        c("FUNCTION LIST WITHCODE"),
        c("FUNCTION LIST LIBRARYNAME list*"),
        c("FUNCTION LIST LIBRARYNAME LIST*"),
        c("FUNCTION LIST LIBRARYNAME nomatch*"),
        c("FUNCTION LIST WITHCODE LIBRARYNAME listed"),
        c("FUNCTION LIST LIBRARYNAME"),
        c("FUNCTION LIST WITHCODE WITHCODE"),
        c("FUNCTION LIST bad"),
        c("FUNCTION STATS"),
        c("FUNCTION STATS extra"),
        load(&one("dumped", "df", "return 1")),
        c("FUNCTION DELETE listed"),
        c("FUNCTION DELETE listed"),
        c("FUNCTION DELETE"),
        c("FUNCTION DUMP"),
        restore(&[&one("dumped", "df", "return 'restored'")], None),
        restore(&[&one("dumped", "df", "return 'restored'")], Some("APPEND")),
        restore(&[&one("dumped", "df", "return 'restored'")], Some("REPLACE")),
        c("FCALL df 0"),
        restore(&[&one("other", "DF", "return 'x'")], Some("REPLACE")),
        restore(&[&one("r1", "x1", "return 1"), &one("r1", "x2", "return 2")], None),
        restore(&[&one("r1", "x1", "return 1"), &one("r2", "x1", "return 2")], None),
        restore(&[&lib("r3", "return 1")], None),
        restore(&[&one("r4", "r4f", "return 4")], Some("FLUSH")),
        c("FCALL df 0"),
        c("FCALL r4f 0"),
        c("FUNCTION STATS"),
        c("FUNCTION RESTORE bad"),
        c("FUNCTION RESTORE bad BADPOLICY"),
        c("FUNCTION RESTORE a b c"),
        c("FUNCTION FLUSH BAD"),
        c("FUNCTION FLUSH SYNC EXTRA"),
        c("FUNCTION FLUSH ASYNC"),
        c("FUNCTION KILL"),
        c("SCRIPT KILL"),
        c("FUNCTION HELP"),
        c("FUNCTION NOSUCH"),
        c("FUNCTION"),
        c("FUNCTION LOAD"),
        c("FUNCTION LOAD REPLACE"),
        c("FUNCTION LOAD BADOPT x"),
        // Inside a transaction.
        c("MULTI"),
        load(&one("m", "mf", "return redis.call('incr', keys[1])")),
        c("FCALL mf 1 cnt"),
        c("FCALL_RO mf 1 cnt"),
        c("FUNCTION LIST LIBRARYNAME m"),
        c("EXEC"),
        c("FCALL mf 1 cnt"),
        c("COMMAND GETKEYS FCALL f 2 k1 k2 a1"),
        c("COMMAND GETKEYS FCALL_RO f 0 a1"),
        c("COMMAND GETKEYS FCALL f 3 k1"),
        c("COMMAND GETKEYS FCALL f x k1"),
        c("COMMAND GETKEYS EVAL f -1 k1"),
        c("COMMAND GETKEYS EVAL f 2 k1"),
        c("COMMAND DOCS fcall"),
        c("FUNCTION FLUSH"),
    ]);
    s
}
