#!/usr/bin/env bash
# tiercache vs redis-server on PUBLISH, the way issue 4 measures: both
# servers pinned to core 0, redis-benchmark (-c 50) and the subscribers
# (redis-cli SUBSCRIBE, output discarded) on core 1, the two servers
# alternating within each round.
#
#   scripts/bench-pubsub.sh [ROUNDS] [SUBSCRIBERS] [PIPELINE]
#
# Prints each run's redis-benchmark CSV line (req/s, then latencies in ms:
# avg, min, p50, p95, p99, max) and how many subscribers were still
# subscribed at the end (a subscriber over its output limit is cut off).
# TIERCACHE_BIN and TIERCACHE_CONFIG as in scripts/bench-vs-redis.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
rounds=${1:-3} subs=${2:-2} pipeline=${3:-1}
require_builds "${TIERCACHE_BIN:-target/release/tiercache}"
require_tools redis-server redis-cli redis-benchmark taskset

# run NAME PORT COMMAND...: one benchmark against the server COMMAND starts.
run() {
  local name=$1 port=$2; shift 2
  start_pinned "$name" "$port" "$@"
  local spids=()
  for _ in $(seq "$subs"); do
    taskset -c 1 redis-cli -p "$port" subscribe ch >/dev/null &
    spids+=($!)
  done
  sleep 0.5
  local line
  line=$(taskset -c 1 redis-benchmark -p "$port" -c 50 -n 300000 -P "$pipeline" --csv \
    publish ch hello-world-payload 2>/dev/null | tail -1)
  local left
  left=$(redis-cli -p "$port" pubsub numsub ch | tail -1)
  kill "${spids[@]}" 2>/dev/null || true
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  echo "$name $line subscribed=$left"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
alternate_with_redis "$rounds" run
