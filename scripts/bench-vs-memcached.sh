#!/usr/bin/env bash
# tiercache's memcached front end vs memcached 1.6, the way issue 4
# measures it: both servers pinned to core 0 (memcached with one worker
# thread, -t 1), the load generator to core 1, alternating runs, best of N
# per server and setting, p99 beside each figure.
#
#   scripts/bench-vs-memcached.sh [ROUNDS] [SECONDS]
#
# The load generator is `mc-load` from the bench crate (memaslap cannot
# pipeline and reports latency only as a log2 histogram): 50 connections,
# 3-byte values (redis-benchmark's default), 100,000 keys, pipeline 1 and
# 16. Needs memcached (Debian: memcached) and release builds:
#   cargo build --release -p tiercache -p tiercache-bench --bin tiercache --bin mc-load
#
# TIERCACHE_BIN=PATH runs that build instead of target/release/tiercache
# (an A/B of two builds; e.g. target/pgo/release/tiercache, the
# profile-guided build of scripts/pgo-build.sh).
#
# VARY_VALUES=1 makes every SET's value random letters (`mc-load
# --vary-values`) instead of the same `xxx`, so that nearly every SET
# changes its key and must reach the store.
#
# TIERCACHE_CONFIG=FILE runs tiercache with that config (e.g.
# scripts/pure-cache.toml: memory tier only, no store, like a server with
# persistence off); by default it runs the durable default (write-back to
# SQLite).
#
# Beside requests per second it reports each server's CPU time per request
# (all its threads, user and kernel, from /proc/PID/task/*/schedstat over
# the run, divided by req/s × seconds; the lowest over the rounds) and
# "CPU ratio" = memcached's CPU per request / tiercache's.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

rounds=${1:-5}
seconds=${2:-5}
bin=${TIERCACHE_BIN:-target/release/tiercache}
load=target/release/mc-load
require_builds "$bin" "$load"
require_tools memcached taskset

start_memcached_pair "$bin"

declare -A best p99 cpu
for round in $(seq "$rounds"); do
  for pipeline in 1 16; do
    for test in set get; do
      for server in tiercache memcached; do
        port=$tc_port pid=$tc_pid
        [ "$server" = memcached ] && port=$mc_port pid=$mc_pid
        before=$(cpu_ns "$pid")
        IFS=, read -r name rps _p50 lat < <(taskset -c 1 "$load" --addr "127.0.0.1:$port" \
          --test "$test" --connections 50 --pipeline "$pipeline" --seconds "$seconds" \
          ${VARY_VALUES:+--vary-values})
        key="$server/$name/$pipeline"
        if awk -v a="$rps" -v b="${best[$key]:-0}" 'BEGIN { exit !(a > b) }'; then
          best[$key]=$rps
          p99[$key]=$lat
        fi
        used=$(( $(cpu_ns "$pid") - before ))
        per=$(awk -v c="$used" -v r="$rps" -v s="$seconds" 'BEGIN { printf "%.3f", c / (r * s) / 1000 }')
        if awk -v a="$per" -v b="${cpu[$key]:-1e9}" 'BEGIN { exit !(a < b) }'; then
          cpu[$key]=$per
        fi
      done
    done
  done
  echo "round $round of $rounds done" >&2
done

echo "| test | pipeline | tiercache req/s | p99 ms | CPU µs/req | memcached req/s | p99 ms | CPU µs/req | ratio | CPU ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for pipeline in 1 16; do
  for test in SET GET; do
    t=${best[tiercache/$test/$pipeline]:-0}
    m=${best[memcached/$test/$pipeline]:-0}
    tc=${cpu[tiercache/$test/$pipeline]:-0}
    mc=${cpu[memcached/$test/$pipeline]:-0}
    ratio=$(awk -v a="$t" -v b="$m" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    cratio=$(awk -v a="$mc" -v b="$tc" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    echo "| $test | $pipeline | $t | ${p99[tiercache/$test/$pipeline]:-} | $tc | $m | ${p99[memcached/$test/$pipeline]:-} | $mc | **${ratio}×** | ${cratio}× |"
  done
done
