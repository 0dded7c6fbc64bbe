#!/usr/bin/env bash
# How long one DBSIZE takes while the write-back queue holds 100,000 dirty
# keys over a 100,000-key SQLite store (session 24 in BENCHMARKS.md):
# 100,000 keys are written and flushed by a clean shutdown, then the server
# restarts with `flush_interval = "1h"`, 100,000 more are written (50,000
# rewrites, 50,000 new), and one DBSIZE is timed.
#
#   scripts/dbsize-time.sh [BUSY]
#
# BUSY (default 0) busy loops run meanwhile, for a machine short of CPU.
# TIERCACHE_BIN=PATH as in scripts/bench-vs-memcached.sh. Needs redis-cli
# (Debian: redis-tools) and: cargo build --release -p tiercache
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

busy=${1:-0}
bin=${TIERCACHE_BIN:-target/release/tiercache}
require_builds "$bin"
command -v redis-cli >/dev/null || { echo "missing redis-cli" >&2; exit 2; }
work=$(mktemp -d)
port=$(free_port)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
printf '[namespace.default]\nflush_interval = "1h"\nflush_batch = 10000000\n' >"$work/slow.toml"

# sets FROM TO: RESP SET commands for key:FROM .. key:TO-1.
sets() {
  python3 - "$1" "$2" <<'PY'
import sys
out = sys.stdout.buffer
for i in range(int(sys.argv[1]), int(sys.argv[2])):
    k, v = b"key:%d" % i, b"value-%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
}

serve() {
  "$bin" serve "$@" --data-dir "$work/data" --resp "127.0.0.1:$port" --memcache off --admin off \
    2>>"$work/tiercache.log" &
  server=$!
  pids+=("$server")
  wait_for_port "$port"
}

serve
sets 0 100000 | redis-cli -p "$port" --pipe >/dev/null
kill "$server"
wait "$server"
serve --config "$work/slow.toml"
sets 50000 150000 | redis-cli -p "$port" --pipe >/dev/null
for _ in $(seq "$busy"); do
  (while :; do :; done) &
  pids+=("$!")
done
start=$(date +%s.%N)
n=$(redis-cli -p "$port" dbsize)
end=$(date +%s.%N)
echo "DBSIZE $n in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s ($busy busy loops)"
