#!/usr/bin/env bash
# Where a memcached-protocol request's time goes, tiercache beside
# memcached 1.6: user and kernel CPU time, system calls by kind, scheduler
# switches and TCP segments, each per request. Both servers on core 0
# (memcached with one worker thread), `mc-load` on core 1, after a 2 s
# pipelined SET warm-up that stores every key.
#
#   scripts/mc-cost-per-request.sh [TEST] [PIPELINE] [SECONDS] [KEYS]
#
# Defaults: set, pipeline 1, 5 s, 100,000 keys. TIERCACHE_CONFIG=FILE runs
# tiercache with that config (e.g. scripts/pure-cache.toml); by default the
# durable default (write-back to SQLite). Needs perf (Debian: linux-perf),
# nstat (iproute2), memcached, root (for the perf tracepoints), and:
#   cargo build --release -p tiercache -p tiercache-bench --bin tiercache --bin mc-load
# CPU time comes from /proc/PID/stat (all threads, clock ticks), so short
# runs are coarse; the TCP counters are machine-wide, so run it on a quiet
# machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

test=${1:-set}
pipeline=${2:-1}
seconds=${3:-5}
keys=${4:-100000}
bin=${TIERCACHE_BIN:-target/release/tiercache}
load=target/release/mc-load
require_builds "$bin" "$load"
require_tools memcached taskset perf nstat

start_memcached_pair "$bin"

events=$(echo syscalls:sys_enter_{read,write,recvfrom,sendto,sendmsg,pwrite64,pread64,epoll_wait,futex,fdatasync} \
  sched:sched_switch | tr ' ' ,)
hz=$(getconf CLK_TCK)
for server in tiercache memcached; do
  port=$tc_port pid=$tc_pid
  [ "$server" = memcached ] && port=$mc_port pid=$mc_pid
  taskset -c 1 "$load" --addr "127.0.0.1:$port" --test set --connections 50 --pipeline 16 \
    --seconds 2 --keys "$keys" >/dev/null
  read -r u0 s0 < <(awk '{ print $14, $15 }' /proc/"$pid"/stat)
  nstat -n >/dev/null
  perf stat -e "$events" -p "$pid" -o "$work/perf" -- sleep "$seconds" &
  perf_pid=$!
  out=$(taskset -c 1 "$load" --addr "127.0.0.1:$port" --test "$test" --connections 50 \
    --pipeline "$pipeline" --seconds "$seconds" --keys "$keys")
  wait "$perf_pid"
  read -r u1 s1 < <(awk '{ print $14, $15 }' /proc/"$pid"/stat)
  requests=$(echo "$out" | awk -F, -v s="$seconds" '{ print $2 * s }')
  echo "$server: $out (test,req/s,p50 ms,p99 ms)"
  awk -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v n="$requests" -v hz="$hz" \
    'BEGIN { printf "  %-26s %.2f µs\n  %-26s %.2f µs\n", "user CPU", u / hz / n * 1e6, "kernel CPU", s / hz / n * 1e6 }'
  awk -v n="$requests" '$2 ~ /:/ && $1 + 0 > 0 { gsub(/,/, "", $1); sub(/.*:(sys_enter_)?/, "", $2); printf "  %-26s %.3f\n", $2, $1 / n }' "$work/perf"
  nstat -z 2>/dev/null | awk -v n="$requests" '$1 == "TcpInSegs" || $1 == "TcpOutSegs" { printf "  %-26s %.3f\n", $1 " (machine)", $2 / n }'
done
