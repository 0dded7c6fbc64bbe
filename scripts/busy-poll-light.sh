#!/usr/bin/env bash
# What busy polling costs and gives under light load: tiercache pinned to
# core 0, redis-benchmark (unpipelined SETs) on core 1 with few clients, so
# that the server is idle part of the time. For each client count, one run
# with busy polling off and one with the default ("auto"), alternating;
# prints requests per second, the server's CPU per request and share of its
# core (all threads, from /proc/PID/task/*/schedstat), and the time busy
# polling found nothing to do (`tiercache_busy_poll_idle_seconds_total`),
# which the polling policy keeps below the time spent serving.
#
#   scripts/busy-poll-light.sh [CLIENTS...]      (default: 1 2 4 8 16)
#
# REQUESTS=N per run (default 100000); TIERCACHE_BIN=PATH as in the other
# scripts. Needs redis-benchmark (Debian: redis-tools), curl and a release
# build (cargo build --release -p tiercache).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

requests=${REQUESTS:-100000}
bin=${TIERCACHE_BIN:-target/release/tiercache}
require_builds "$bin"
require_tools redis-benchmark curl taskset
clients=("$@")
[ ${#clients[@]} -eq 0 ] && clients=(1 2 4 8 16)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| clients | busy_poll | req/s | server CPU µs/req | server core busy | idle polling (s) | wall (s) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for c in "${clients[@]}"; do
  for setting in off auto; do
    port=$(free_port)
    admin=$(free_port)
    printf '[server]\nbusy_poll = "%s"\n' "$setting" >"$work/config.toml"
    rm -rf "$work/data"
    taskset -c 0 "$bin" serve --config "$work/config.toml" --data-dir "$work/data" \
      --resp "127.0.0.1:$port" --memcache off --admin "127.0.0.1:$admin" 2>/dev/null &
    pid=$!
    wait_for_port "$port"
    before=$(cpu_ns "$pid")
    start=$(date +%s.%N)
    rps=$(taskset -c 1 redis-benchmark -p "$port" -t set -c "$c" -n "$requests" --csv 2>/dev/null |
      tail -1 | cut -d, -f2 | tr -d '"')
    end=$(date +%s.%N)
    used=$(($(cpu_ns "$pid") - before))
    idle=$(curl -s "127.0.0.1:$admin/metrics" |
      awk '/^tiercache_busy_poll_idle_seconds_total/ { print $2 }')
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    awk -v c="$c" -v s="$setting" -v r="$rps" -v u="$used" -v n="$requests" \
      -v t0="$start" -v t1="$end" -v i="${idle:-0}" 'BEGIN {
        w = t1 - t0
        printf "| %d | %s | %.0f | %.2f | %.0f%% | %.3f | %.2f |\n", c, s, r, u / n / 1000, u / 1e9 / w * 100, i, w
      }'
  done
done
