#!/usr/bin/env bash
# Instructions per request of tiercache's RESP front end, counted by
# callgrind: repeatable for one binary (two runs of one build agree to
# 0.01%), however busy the machine. The server runs under valgrind pinned
# to core 0 with busy polling off (its polls would be counted as work);
# counting is on only for the measured `redis-benchmark -c 50` run, after a
# 5,000-request warm-up.
#
#   scripts/resp-callgrind.sh [TEST] [REQUESTS] [PIPELINE]
#
# TEST is a redis-benchmark test (set, get, incr...; default set),
# REQUESTS the measured count (default 20000), PIPELINE its -P (default 1).
# TIERCACHE_BIN=PATH counts that build (an A/B of two builds). HIT=1 sets
# the key first, so that GETs hit.
# Needs valgrind, redis-benchmark and redis-cli (Debian: valgrind,
# redis-tools) and a release build (cargo build --release -p tiercache).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

test=${1:-set}
requests=${2:-20000}
pipeline=${3:-1}
bin=${TIERCACHE_BIN:-target/release/tiercache}
require_builds "$bin"
require_tools valgrind callgrind_control redis-benchmark redis-cli taskset

work=$(mktemp -d)
port=$(free_port)
taskset -c 0 valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes \
  --callgrind-out-file="$work/callgrind.out.%p" "$bin" serve \
  --config scripts/busy-poll-off.toml --data-dir "$work/tc" \
  --resp "127.0.0.1:$port" --memcache off --admin off 2>"$work/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
# valgrind starts slowly: up to 30 s.
for _ in $(seq 60); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.5
done
bench() {
  taskset -c 1 redis-benchmark -p "$port" -t "$test" -c 50 -P "$pipeline" -n "$1" -q 2>/dev/null |
    tr '\r' '\n' | grep 'per second' || true
}
# HIT=1: the key redis-benchmark reads exists (its GETs hit; without it
# they miss).
if [ -n "${HIT:-}" ]; then
  redis-cli -p "$port" set key:__rand_int__ xxx >/dev/null
fi
bench 5000 >/dev/null
sleep 2
callgrind_control -i on "$pid" >/dev/null
bench "$requests"
callgrind_control -i off "$pid" >/dev/null
callgrind_control -d "$pid" >/dev/null
kill "$pid"
wait "$pid" 2>/dev/null || true
total=0
for f in "$work"/callgrind.out.*; do
  t=$(grep -hE '^(summary|totals):' "$f" | tail -1 | awk '{ print $2 }' || true)
  total=$((total + ${t:-0}))
done
echo "$test -P $pipeline: $total instructions, $((total / requests)) per request"
