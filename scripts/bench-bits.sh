#!/usr/bin/env bash
# tiercache vs redis-server on the bit commands over 1 MiB strings, the
# way issue 4 measures: both servers pinned to core 0, redis-benchmark
# (-c 10, 2,000 requests) on core 1, the two servers alternating within
# each round. Workloads: BITCOUNT of random bytes, BITPOS 0 of all-ones
# bytes (the whole string is searched), BITOP AND of two random strings.
#
#   scripts/bench-bits.sh [ROUNDS]
#
# TIERCACHE_BIN and TIERCACHE_CONFIG as in scripts/bench-vs-redis.sh
# (TIERCACHE_CONFIG=scripts/pure-cache.toml is the like-for-like with a
# redis-server that persists nothing: in the durable default every BITOP
# journals and writes back its 1 MiB result).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
rounds=${1:-3}
require_builds "${TIERCACHE_BIN:-target/release/tiercache}"
require_tools redis-server redis-benchmark taskset python3

# run NAME PORT COMMAND...: the three workloads against the server COMMAND starts.
run() {
  local name=$1 port=$2; shift 2
  start_pinned "$name" "$port" "$@"
  python3 - "$port" <<'PY'
import os, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def cmd(*a):
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
s.sendall(cmd(b"SET", b"big", os.urandom(1 << 20)) + cmd(b"SET", b"big2", os.urandom(1 << 20))
          + cmd(b"SET", b"ones", b"\xff" * (1 << 20)))
got = b""
while got.count(b"\r\n") < 3:
    got += s.recv(100)
PY
  local line="$name"
  for t in "bitcount big" "bitpos ones 0" "bitop and dst big big2"; do
    # shellcheck disable=SC2086
    r=$(bench_rps "$port" -n 2000 $t)
    line="$line | $t: $r"
  done
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  echo "$line"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
alternate_with_redis "$rounds" run
