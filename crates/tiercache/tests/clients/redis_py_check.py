"""Drives a tiercache server with redis-py, over RESP2 and RESP3.

Usage: redis_py_check.py PORT PASSWORD. Exits non-zero (with a traceback)
on the first behaviour a redis-py user would notice.
"""

import sys
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

port, password = int(sys.argv[1]), sys.argv[2]


def expect_error(fn, cls, text):
    try:
        fn()
    except cls as e:
        assert text in str(e), f"{cls.__name__}: {e!r} lacks {text!r}"
    else:
        raise AssertionError(f"expected {cls.__name__} containing {text!r}")


# A failed login is not retried (redis-py would back off for seconds).
NO_RETRY = Retry(NoBackoff(), 0)

# Authentication as clients do it: AUTH, or HELLO 3 AUTH with RESP3.
for proto in (2, 3):
    expect_error(
        lambda: redis.Redis(port=port, protocol=proto, retry=NO_RETRY).get("k"),
        redis.exceptions.AuthenticationError,
        "",
    )
    expect_error(
        lambda: redis.Redis(port=port, password="wrong", protocol=proto, retry=NO_RETRY).ping(),
        redis.exceptions.AuthenticationError,
        "",
    )

for proto in (2, 3):
    r = redis.Redis(port=port, password=password, protocol=proto, decode_responses=True)
    assert r.ping() is True
    assert r.flushall() is True
    # Strings.
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.get("missing") is None
    assert r.set("k", "x", nx=True) is None
    assert r.set("k", "v2", xx=True, get=True) == "v"
    assert r.setnx("k", "y") is False
    assert r.setex("t", 100, "v") is True
    assert r.ttl("t") == 100
    assert 99_000 < r.pttl("t") <= 100_000
    assert r.psetex("pt", 5000, "v") is True
    assert r.getset("k", "v3") == "v2"
    assert r.getdel("k") == "v3" and r.exists("k") == 0
    r.set("g", "v")
    assert r.getex("g", ex=50) == "v" and r.ttl("g") == 50
    assert r.getex("g", persist=True) == "v" and r.ttl("g") == -1
    assert r.append("s", "ab") == 2 and r.append("s", "cd") == 4
    assert r.strlen("s") == 4 and r.getrange("s", 1, 2) == "bc"
    assert r.setrange("s", 6, "x") == 7 and r.get("s") == "abcd\x00\x00x"
    assert r.mset({"a": "1", "b": "2"}) is True
    assert r.mget("a", "nope", "b") == ["1", None, "2"]
    assert r.msetnx({"a": "9", "c": "3"}) is False and r.msetnx({"c": "3"}) is True
    # Counters.
    assert r.incr("n") == 1 and r.incrby("n", 5) == 6 and r.decr("n") == 5
    assert r.decrby("n", 10) == -5
    assert r.incrbyfloat("f", 10.5) == 10.5 and r.incrbyfloat("f", 0.1) == 10.6
    expect_error(lambda: r.incr("s"), redis.exceptions.ResponseError, "not an integer")
    r.set("big", 2**63 - 1)
    expect_error(lambda: r.incr("big"), redis.exceptions.ResponseError, "overflow")
    # Expiry.
    r.set("e", "v")
    assert r.expire("e", 100) is True and r.ttl("e") == 100
    assert r.expire("e", 200, nx=True) is False
    assert r.expire("e", 300, gt=True) is True and r.ttl("e") == 300
    assert r.pexpire("e", 100_000, lt=True) is True
    assert r.persist("e") is True and r.ttl("e") == -1
    assert r.expireat("e", 4102444800) is True
    assert r.pexpireat("e", 1) is True and r.exists("e") == 0
    assert r.ttl("missing") == -2
    # Lists, sets, sorted sets, and a blocking pop served by another client.
    assert r.rpush("l", "a", "b", "c") == 3 and r.lpush("l", "z") == 4
    assert r.lrange("l", 0, -1) == ["z", "a", "b", "c"]
    assert r.lpop("l") == "z" and r.rpop("l", 2) == ["c", "b"]
    assert r.lmove("l", "l2", "LEFT", "RIGHT") == "a" and r.exists("l") == 0
    assert r.type("l2") == "list"
    assert r.sadd("s1", "x", "y", "z") == 3 and r.sadd("s2", "y") == 1
    assert r.smembers("s1") == {"x", "y", "z"} and r.sismember("s1", "x")
    assert r.sinter("s1", "s2") == {"y"} and r.scard("s1") == 3
    assert r.zadd("board", {"ann": 3, "bob": 1.5}) == 2
    assert r.zadd("board", {"ann": 5}, xx=True, ch=True) == 1
    assert r.zincrby("board", 2, "bob") == 3.5
    # (RESP3 pairs come back as lists, RESP2 ones as tuples.)
    pairs = [tuple(p) for p in r.zrange("board", 0, -1, withscores=True)]
    assert pairs == [("bob", 3.5), ("ann", 5.0)], pairs
    assert r.zrevrank("board", "ann") == 0 and r.zscore("board", "ann") == 5.0
    assert r.zrangebyscore("board", "(3.5", "+inf") == ["ann"]
    assert r.zunionstore("u", ["board", "s2"], aggregate="MAX") == 3
    # One pop without a count: a flat [member, score] in RESP3, as Redis.
    popped = r.zpopmin("u")
    assert popped in ([("y", 1.0)], ["y", 1.0]), popped
    served = []
    waiter = redis.Redis(port=port, password=password, protocol=proto, decode_responses=True)
    thread = threading.Thread(target=lambda: served.append(waiter.blpop(["jobs"], timeout=10)))
    thread.start()
    time.sleep(0.2)
    r.rpush("jobs", "job-1")
    thread.join()
    assert tuple(served[0]) == ("jobs", "job-1"), served
    assert waiter.blpop(["jobs"], timeout=0.05) is None
    assert tuple(waiter.bzpopmin("board", timeout=1)) == ("board", "bob", 3.5)
    waiter.close()
    # Streams: a producer, a consumer group, claims, a blocking read.
    assert r.xadd("ev", {"kind": "login"}, id="1-1") == "1-1"
    r.xadd("ev", {"kind": "click"}, id="2-1")
    auto = r.xadd("ev", {"kind": "logout"}, maxlen=1000, approximate=True)
    assert auto.count("-") == 1 and r.xlen("ev") == 3
    entries = r.xrange("ev", "-", "+", count=2)
    assert [e[0] for e in entries] == ["1-1", "2-1"], entries
    assert entries[0][1] == {"kind": "login"}, entries
    assert [e[0] for e in r.xrevrange("ev", "+", "-", count=1)] == [auto]
    assert r.xgroup_create("ev", "workers", id="0") is True
    got = r.xreadgroup("workers", "w1", {"ev": ">"}, count=2)
    # RESP2: [[stream, [(id, fields)...]]]; RESP3: {stream: [[...]]}.
    batch = got["ev"][0] if isinstance(got, dict) else got[0][1]
    assert [e[0] for e in batch] == ["1-1", "2-1"], got
    pending = r.xpending("ev", "workers")
    assert pending["pending"] == 2 and pending["min"] == "1-1", pending
    assert r.xack("ev", "workers", "1-1") == 1
    claimed = r.xclaim("ev", "workers", "w2", min_idle_time=0, message_ids=["2-1"], justid=True)
    assert claimed == ["2-1"], claimed
    info = r.xinfo_stream("ev")
    assert info["length"] == 3 and info["last-generated-id"] == auto, info
    groups = r.xinfo_groups("ev")
    assert groups[0]["name"] == "workers" and groups[0]["pending"] == 1, groups
    served = []
    reader = redis.Redis(port=port, password=password, protocol=proto, decode_responses=True)
    thread = threading.Thread(target=lambda: served.append(reader.xread({"ev": "$"}, block=10000)))
    thread.start()
    time.sleep(0.2)
    r.xadd("ev", {"kind": "late"}, id="99999999999999-0")
    thread.join()
    out = served[0]
    late = out["ev"][0] if isinstance(out, dict) else out[0][1]
    assert [e[0] for e in late] == ["99999999999999-0"], out
    reader.close()
    expect_error(lambda: r.xadd("s1", {"a": 1}), redis.exceptions.ResponseError, "WRONGTYPE")
    expect_error(lambda: r.lpush("s1", "v"), redis.exceptions.ResponseError, "WRONGTYPE")
    # Geo: a sorted set of positions; redis-py parses distances and coordinates.
    sicily = [13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania"]
    assert r.geoadd("sicily", sicily) == 2
    assert r.geodist("sicily", "Palermo", "Catania", unit="km") == 166.2742
    (lon, lat), missing = r.geopos("sicily", "Palermo", "nobody")
    assert abs(lon - 13.361389) < 1e-5 and abs(lat - 38.115556) < 1e-5, (lon, lat)
    assert missing is None
    near = r.geosearch("sicily", longitude=15, latitude=37, radius=200, unit="km",
                       sort="ASC", withdist=True)
    assert [(m, d) for m, d in near] == [("Catania", 56.4413), ("Palermo", 190.4424)], near
    assert r.geosearchstore("near", "sicily", member="Palermo", radius=100, unit="km") == 1
    assert r.zrange("near", 0, -1) == ["Palermo"]
    r.delete("l2", "s1", "s2", "board", "u", "ev", "sicily", "near")
    # Keys.
    assert r.type("a") == "string" and r.type("missing") == "none"
    assert r.delete("a", "missing") == 1 and r.unlink("b") == 1
    r.flushdb()
    names = {f"user:{i}" for i in range(250)} | {f"other:{i}" for i in range(50)}
    pipe = r.pipeline(transaction=False)
    for name in names:
        pipe.set(name, "v")
    assert all(pipe.execute())
    assert r.dbsize() == 300
    assert set(r.keys("user:*")) == {n for n in names if n.startswith("user:")}
    assert set(r.scan_iter(count=7)) == names
    assert set(r.scan_iter(match="other:*", count=20)) == {n for n in names if n.startswith("other:")}
    assert set(r.scan_iter(_type="string")) == names
    assert r.object("encoding", "user:1") == "embstr"
    r.set("num", 12345)
    assert r.object("encoding", "num") == "int"
    # Transactions: redis-py's default pipeline is MULTI ... EXEC.
    pipe = r.pipeline()
    pipe.set("tx:n", 1).incr("tx:n").hset("tx:h", "f", "v").get("tx:n")
    assert pipe.execute() == [True, 2, 1, "2"]
    # Optimistic locking: another connection's write between WATCH and
    # EXEC makes EXEC run nothing (WatchError) ...
    other = redis.Redis(port=port, password=password, protocol=proto, decode_responses=True)
    r.set("tx:balance", 10)
    with r.pipeline() as p:
        p.watch("tx:balance")
        other.incr("tx:balance")
        p.multi()
        p.decr("tx:balance")
        expect_error(p.execute, redis.exceptions.WatchError, "")
    assert r.get("tx:balance") == "11"
    other.close()

    # ... and the check-and-set helper retries until it goes through.
    def spend(p):
        balance = int(p.get("tx:balance"))
        p.multi()
        p.set("tx:balance", balance - 1)

    r.transaction(spend, "tx:balance")
    assert r.get("tx:balance") == "10"
    # A queueing error discards the transaction.
    pipe = r.pipeline()
    pipe.set("tx:never", 1).execute_command("NOSUCHCOMMAND")
    expect_error(pipe.execute, redis.exceptions.ResponseError, "unknown command")
    assert r.exists("tx:never") == 0
    r.delete("tx:n", "tx:h", "tx:balance")
    # Pub/sub through redis-py's PubSub: confirmations, a channel and a
    # pattern message, then unsubscribing (RESP2 arrays, RESP3 pushes).
    ps = r.pubsub()
    ps.subscribe("ps:news")
    ps.psubscribe("ps:*")

    def next_message():
        deadline = time.time() + 5
        while time.time() < deadline:
            m = ps.get_message(timeout=1)
            if m is not None:
                return m
        raise AssertionError("no pub/sub message within 5 s")

    assert next_message()["type"] == "subscribe"
    assert next_message()["type"] == "psubscribe"
    assert r.pubsub_numsub("ps:news") == [("ps:news", 1)]
    assert r.pubsub_numpat() == 1
    assert r.publish("ps:news", "hello") == 2
    m = next_message()
    assert (m["type"], m["channel"], m["data"]) == ("message", "ps:news", "hello"), m
    m = next_message()
    assert (m["type"], m["pattern"], m["data"]) == ("pmessage", "ps:*", "hello"), m
    ps.unsubscribe()
    ps.punsubscribe()
    assert next_message()["type"] == "unsubscribe"
    assert next_message()["type"] == "punsubscribe"
    ps.close()
    assert r.publish("ps:news", "nobody") == 0
    # MONITOR through redis-py's Monitor, which parses Redis's line format.
    with r.monitor() as m:
        r.set("mon:k", 'say "hi"')
        seen = m.next_command()
        assert seen["command"] == 'SET mon:k say "hi"', seen
        assert seen["client_type"] == "tcp" and seen["db"] == 0, seen
    # Bit commands.
    r.set("bits", b"\xff\xf0\x00")
    assert r.bitcount("bits") == 12
    assert r.bitpos("bits", 0) == 12
    assert r.bitfield("bits").get("u4", 8).incrby("u8", 16, 5).execute() == [15, 5]
    r.delete("bits", "mon:k")
    # Introspection.
    info = r.info()
    assert info["redis_version"].startswith("7."), info
    assert r.info("keyspace")["db0"]["keys"] == 301
    assert "maxmemory" in r.config_get("maxmemory")
    assert r.config_get("save") == {"save": ""}
    assert r.config_set("timeout", 0) is True
    assert r.client_setname("py") is True and r.client_getname() == "py"
    assert r.client_id() > 0
    assert r.client_info()["name"] == "py"
    assert any(c["name"] == "py" for c in r.client_list())
    assert r.command_count() > 40
    assert r.flushall() is True and r.dbsize() == 0
    r.close()

print("redis-py", redis.__version__, "ok")
