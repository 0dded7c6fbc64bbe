#!/usr/bin/env bash
# tiercache vs redis-server as a primary with one replica attached: a
# redis-server started with --replicaof follows each in turn, and
# redis-benchmark measures SET (-c 50) with it attached and, first, before
# it attaches (the cost of feeding it). Both primaries on core 0, the
# replica and redis-benchmark on core 1, the two primaries alternating
# within each round.
#
#   scripts/bench-replication.sh [ROUNDS] [PIPELINE] [REQUESTS]
#
# Prints, per run: the primary, whether a replica was attached, the
# redis-benchmark CSV line (req/s, then latencies in ms: avg, min, p50,
# p95, p99, max) and, with the replica, its DBSIZE and the primary's once
# WAIT 1 returned (they should agree).
# TIERCACHE_BIN and TIERCACHE_CONFIG as in scripts/bench-vs-redis.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
rounds=${1:-3} pipeline=${2:-1} requests=${3:-200000}
require_builds "${TIERCACHE_BIN:-target/release/tiercache}"
require_tools redis-server redis-cli redis-benchmark taskset

# run NAME PORT COMMAND...: SET without, then with, a replica of the
# server COMMAND starts.
run() {
  local name=$1 port=$2; shift 2
  start_pinned "$name" "$port" "$@"
  local alone attached rport
  alone=$(taskset -c 1 redis-benchmark -p "$port" -c 50 -n "$requests" -P "$pipeline" \
    -r 100000 --csv set key:__rand_int__ v 2>/dev/null | tail -1)
  rport=$(free_port)
  mkdir -p "$work/replica"
  taskset -c 1 redis-server --port "$rport" --dir "$work/replica" --save '' \
    --appendonly no --replicaof 127.0.0.1 "$port" >"$work/replica.log" 2>&1 &
  local replica_pid=$!
  wait_for_port "$rport"
  until redis-cli -p "$rport" info replication | grep -q master_link_status:up; do
    sleep 0.1
  done
  attached=$(taskset -c 1 redis-benchmark -p "$port" -c 50 -n "$requests" -P "$pipeline" \
    -r 100000 --csv set key:__rand_int__ v 2>/dev/null | tail -1)
  redis-cli -p "$port" wait 1 10000 >/dev/null
  local keys primary_keys
  keys=$(redis-cli -p "$rport" dbsize)
  primary_keys=$(redis-cli -p "$port" dbsize)
  kill "$replica_pid" "$server_pid"
  wait "$replica_pid" "$server_pid" 2>/dev/null || true
  rm -rf "$work/replica"
  echo "$name replica=none $alone"
  echo "$name replica=attached $attached replica_keys=$keys primary_keys=$primary_keys"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
alternate_with_redis "$rounds" run
