#!/usr/bin/env bash
# tiercache vs redis-server on SET with keyspace notifications on
# (`notify-keyspace-events KEA`, one `PSUBSCRIBE *` subscriber reading
# every event), the way issue 4 measures: both servers pinned to core 0,
# redis-benchmark (-c 50) and the subscriber on core 1, the two servers
# alternating within each round. Also with notifications off, for the
# cost of raising them.
#
#   scripts/bench-notify.sh [ROUNDS] [PIPELINE]
#
# Prints, per run, whether events were on, the redis-benchmark CSV line
# (req/s, then latencies in ms: avg, min, p50, p95, p99, max) and how many
# event messages the subscriber had received when the run ended (each SET
# raises two: its keyspace and its keyevent message).
# TIERCACHE_BIN and TIERCACHE_CONFIG as in scripts/bench-vs-redis.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
rounds=${1:-3} pipeline=${2:-1}
require_builds "${TIERCACHE_BIN:-target/release/tiercache}"
require_tools redis-server redis-cli redis-benchmark taskset python3

# run NAME PORT COMMAND...: SET with events off, then on, against the
# server COMMAND starts.
run() {
  local name=$1 port=$2; shift 2
  start_pinned "$name" "$port" "$@"
  local off on
  off=$(taskset -c 1 redis-benchmark -p "$port" -c 50 -n 200000 -P "$pipeline" \
    -r 100000 --csv set key:__rand_int__ v 2>/dev/null | tail -1)
  redis-cli -p "$port" config set notify-keyspace-events KEA >/dev/null
  # The subscriber counts the messages it reads (a line-oriented RESP2
  # reader: each message is an array of 4 bulk strings).
  taskset -c 1 python3 - "$port" >"$work/$name.count" <<'PY' &
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"*2\r\n$10\r\nPSUBSCRIBE\r\n$1\r\n*\r\n")
buf = b""; n = 0
s.settimeout(3)
try:
    while True:
        d = s.recv(1 << 20)
        if not d:
            break
        n += d.count(b"$8\r\npmessage\r\n")
except socket.timeout:
    pass
print(n)
PY
  local sub=$!
  sleep 0.5
  on=$(taskset -c 1 redis-benchmark -p "$port" -c 50 -n 200000 -P "$pipeline" \
    -r 100000 --csv set key:__rand_int__ v 2>/dev/null | tail -1)
  wait "$sub" || true
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  echo "$name events=off $off"
  echo "$name events=on $on received=$(cat "$work/$name.count")"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
alternate_with_redis "$rounds" run
