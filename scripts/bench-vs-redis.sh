#!/usr/bin/env bash
# tiercache vs redis-server under redis-benchmark, the way issue 4 measures
# it: both servers pinned to core 0, the client to core 1, alternating
# runs, best of N per server and setting, p99 beside each figure.
#
#   scripts/bench-vs-redis.sh [ROUNDS] [REQUESTS]
#
# Needs redis-server and redis-benchmark (Debian: redis-server, redis-tools)
# and a release build (cargo build --release -p tiercache). Prints a
# Markdown table; ratios are tiercache / redis-server in the same run.
#
# Beside requests per second it reports each server's CPU time per request
# (all its threads, user and kernel, from /proc/PID/task/*/schedstat, the
# lowest over the rounds). At -P 16 the single-core client is the limit and
# both servers idle part of the time, so req/s cannot tell them apart; CPU
# per request says which server would go further with a faster client
# ("CPU ratio" = redis-server's CPU per request / tiercache's).
#
# "client busy" is how much of its core redis-benchmark used during the
# best run against each server (its user + system time over the run's
# wall time). Near 100%, the client is the limit of that line, not the
# server (BENCHMARKS.md, session 32).
#
# TIERCACHE_BIN=PATH runs that build instead of target/release/tiercache
# (an A/B of two builds).
#
# TIERCACHE_CONFIG=FILE runs tiercache with that config (e.g.
# scripts/pure-cache.toml: memory tier only, no store, like a server with
# persistence off); by default it runs the durable default (write-back to
# SQLite).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

rounds=${1:-5}
requests=${2:-200000}
bin=${TIERCACHE_BIN:-target/release/tiercache}
require_builds "$bin"
require_tools redis-server redis-benchmark taskset

work=$(mktemp -d)
tc_port=$(free_port)
redis_port=$(free_port)

config_args=()
[ -n "${TIERCACHE_CONFIG:-}" ] && config_args=(--config "$TIERCACHE_CONFIG")
taskset -c 0 "$bin" serve "${config_args[@]}" --data-dir "$work/tc" --resp "127.0.0.1:$tc_port" \
  --memcache off --admin off 2>"$work/tiercache.log" &
tc_pid=$!
taskset -c 0 redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
  --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
redis_pid=$!
trap 'kill $tc_pid $redis_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
for port in "$tc_port" "$redis_port"; do
  for _ in $(seq 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
done


# run PORT TEST PIPELINE -> "TEST rps p99 client-busy-%"
run() {
  local times
  times=$( { TIMEFORMAT='%R %U %S'
    time taskset -c 1 redis-benchmark -p "$1" -t "$2" -c 50 -n "$requests" -P "$3" \
      --csv >"$work/bench.csv" 2>/dev/null; } 2>&1)
  awk -F'","' -v t="$times" 'NR > 1 {
      gsub(/"/, ""); split($0, f, ","); split(t, w, " ")
      printf "%s %s %s %.0f\n", f[1], f[2], f[7], (w[1] > 0 ? 100 * (w[2] + w[3]) / w[1] : 0)
    }' "$work/bench.csv"
}

declare -A best p99 cpu busy
for round in $(seq "$rounds"); do
  for pipeline in 1 16; do
    for t in set get; do
      for server in tiercache redis; do
        port=$tc_port pid=$tc_pid
        [ "$server" = redis ] && port=$redis_port pid=$redis_pid
        before=$(cpu_ns "$pid")
        read -r test rps lat client < <(run "$port" "$t" "$pipeline")
        used=$(( $(cpu_ns "$pid") - before ))
        key="$server/$test/$pipeline"
        if awk -v a="$rps" -v b="${best[$key]:-0}" 'BEGIN { exit !(a > b) }'; then
          best[$key]=$rps
          p99[$key]=$lat
          busy[$key]=$client
        fi
        per=$(awk -v c="$used" -v n="$requests" 'BEGIN { printf "%.3f", c / n / 1000 }')
        if awk -v a="$per" -v b="${cpu[$key]:-1e9}" 'BEGIN { exit !(a < b) }'; then
          cpu[$key]=$per
        fi
      done
    done
  done
  echo "round $round of $rounds done" >&2
done

echo "| test | pipeline | tiercache req/s | p99 ms | CPU µs/req | client busy | redis-server req/s | p99 ms | CPU µs/req | client busy | ratio | CPU ratio |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for pipeline in 1 16; do
  for test in SET GET; do
    t=${best[tiercache/$test/$pipeline]:-0}
    r=${best[redis/$test/$pipeline]:-0}
    tc=${cpu[tiercache/$test/$pipeline]:-0}
    rc=${cpu[redis/$test/$pipeline]:-0}
    ratio=$(awk -v a="$t" -v b="$r" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    cratio=$(awk -v a="$rc" -v b="$tc" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
    tb=${busy[tiercache/$test/$pipeline]:-?} rb=${busy[redis/$test/$pipeline]:-?}
    echo "| $test | $pipeline | $t | ${p99[tiercache/$test/$pipeline]:-} | $tc | $tb% | $r | ${p99[redis/$test/$pipeline]:-} | $rc | $rb% | **${ratio}×** | ${cratio}× |"
  done
done
