#!/usr/bin/env bash
# GETs of keys that exist nowhere, tiercache's durable default (SQLite below
# the memory tier) vs redis-server: `redis-benchmark -t get -r 1000000` on
# empty servers, so nearly every GET asks for a key never written. Servers
# pinned to core 0, the client to core 1, alternating, best of ROUNDS, p99
# beside each figure. Every BIN is a tiercache binary (e.g. before and after
# a change); the default is target/release/tiercache.
#
#   scripts/bench-absent-keys.sh [ROUNDS] [BIN...]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
rounds=${1:-3}
shift || true
bins=("$@")
[ ${#bins[@]} -eq 0 ] && bins=(target/release/tiercache)
require_tools redis-server redis-benchmark taskset
work=$(mktemp -d)
pids=()
ports=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
for i in "${!bins[@]}"; do
  port=$(free_port)
  taskset -c 0 "${bins[$i]}" serve --data-dir "$work/tc$i" --resp "127.0.0.1:$port" \
    --memcache off --admin off 2>"$work/tc$i.log" &
  pids+=($!)
  ports+=("$port")
done
redis_port=$(free_port)
taskset -c 0 redis-server --port "$redis_port" --save '' --appendonly no --dir "$work" \
  --daemonize no >"$work/redis.log" 2>&1 &
pids+=($!)
ports+=("$redis_port")
for port in "${ports[@]}"; do
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
done
declare -A best p99
for _ in $(seq "$rounds"); do
  for pipeline in 1 16; do
    for port in "${ports[@]}"; do
      line=$(taskset -c 1 redis-benchmark -p "$port" -t get -r 1000000 -c 50 -P "$pipeline" \
        -n 300000 --csv 2>/dev/null | tail -1)
      rps=$(echo "$line" | cut -d, -f2 | tr -d '"')
      lat=$(echo "$line" | cut -d, -f7 | tr -d '"')
      if awk -v a="$rps" -v b="${best[$port/$pipeline]:-0}" 'BEGIN { exit !(a > b) }'; then
        best[$port/$pipeline]=$rps
        p99[$port/$pipeline]=$lat
      fi
    done
  done
done
header="| pipeline |"
for b in "${bins[@]}"; do header+=" $b req/s (p99 ms) | ÷ redis |"; done
echo "$header redis-server req/s (p99 ms) |"
sep="| --- |"
for _ in "${bins[@]}"; do sep+=" --- | --- |"; done
echo "$sep --- |"
for pipeline in 1 16; do
  r=${best[$redis_port/$pipeline]}
  row="| $pipeline |"
  for port in "${ports[@]:0:${#bins[@]}}"; do
    t=${best[$port/$pipeline]}
    row+=" $(printf %.0f "$t") (${p99[$port/$pipeline]}) | $(awk -v t="$t" -v r="$r" 'BEGIN { printf "%.2f", t / r }') |"
  done
  echo "$row $(printf %.0f "$r") (${p99[$redis_port/$pipeline]}) |"
done
