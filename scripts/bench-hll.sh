#!/usr/bin/env bash
# tiercache vs redis-server on the HyperLogLog commands, the way
# scripts/bench-bits.sh measures: both servers pinned to core 0,
# redis-benchmark (-c 10) on core 1, the two servers alternating within
# each round. Workloads, on HLLs made dense first (20,000 elements each):
# PFADD of random elements (-r 1000000), PFCOUNT of one key (the cached
# cardinality, after the first), PFCOUNT of two keys (the union, computed
# every time).
#
#   scripts/bench-hll.sh [ROUNDS]
#
# TIERCACHE_BIN and TIERCACHE_CONFIG as in scripts/bench-vs-redis.sh
# (TIERCACHE_CONFIG=scripts/pure-cache.toml is the like-for-like with a
# redis-server that persists nothing: in the durable default every PFADD
# that changes a register journals and writes back the 12 KB value).
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
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def cmd(*a):
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
n = 0
for key in (b"hll", b"hll2"):
    for start in range(0, 20000, 1000):
        s.sendall(cmd(b"PFADD", key, *[b"%s-%d" % (key, i) for i in range(start, start + 1000)]))
        n += 1
got = b""
while got.count(b"\r\n") < n:
    got += s.recv(4096)
PY
  local line="$name"
  for t in "-n 100000 -r 1000000 PFADD hll __rand_int__" "-n 100000 PFCOUNT hll" \
           "-n 20000 PFCOUNT hll hll2"; do
    # shellcheck disable=SC2086
    r=$(bench_rps "$port" $t)
    line="$line | ${t#-n * }: $r"
  done
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  echo "$line"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
alternate_with_redis "$rounds" run
