#!/usr/bin/env bash
# The kernel floor under an unpipelined memcached load: what a server that
# stores nothing costs per request on this machine, beside memcached and
# tiercache in the same run. Four "floor" responders answer mc-load's set
# and get tests without storing anything (scripts/floor/): C on epoll, C on
# io_uring (liburing), Rust on tokio (epoll) and Rust on tokio-uring. Every
# server is pinned to core 0 and mc-load to core 1 (50 connections,
# pipeline 1), one server after another in each round.
#
#   scripts/bench-floor.sh [ROUNDS] [SECONDS] [TEST]      (TEST: set or get)
#
# Reports per server the best req/s (p99 of that run), the lowest CPU time
# per request (all threads, /proc/PID/task/*/schedstat) and the mean user
# and kernel time per request (/proc/PID/stat). The floors are not product
# code; they show how much of a request is the kernel's, and what an event
# loop other than tokio's could save. Needs gcc, liburing-dev, memcached,
# network access for the tokio-uring crate on the first build, and:
#   cargo build --release -p tiercache -p tiercache-bench --bin tiercache --bin mc-load
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

rounds=${1:-5}
seconds=${2:-4}
test=${3:-set}
bin=${TIERCACHE_BIN:-target/release/tiercache}
load=target/release/mc-load
require_builds "$bin" "$load"
require_tools gcc memcached taskset

floor=target/floor
mkdir -p "$floor"
gcc -O2 -Wall -Wextra -Werror -o "$floor/floor-epoll" scripts/floor/epoll.c
gcc -O2 -Wall -Wextra -Werror -o "$floor/floor-uring" scripts/floor/uring.c -luring
cargo build --quiet --release --manifest-path scripts/floor/rust/Cargo.toml --target-dir "$floor"

work=$(mktemp -d)
declare -A port pid
servers=(epoll uring tokio tokio-uring memcached tiercache)
for s in "${servers[@]}"; do
  port[$s]=$(free_port)
  case $s in
    memcached) taskset -c 0 memcached -p "${port[$s]}" -U 0 -l 127.0.0.1 -t 1 -m 1024 -u root \
                 >"$work/$s.log" 2>&1 & ;;
    tiercache) taskset -c 0 "$bin" serve --data-dir "$work/tc" --resp off \
                 --memcache "127.0.0.1:${port[$s]}" --admin off 2>"$work/$s.log" & ;;
    tokio*) taskset -c 0 "$floor/release/floor-$s" "${port[$s]}" >"$work/$s.log" 2>&1 & ;;
    *) taskset -c 0 "$floor/floor-$s" "${port[$s]}" >"$work/$s.log" 2>&1 & ;;
  esac
  pid[$s]=$!
done
trap 'kill "${pid[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
for s in "${servers[@]}"; do wait_for_port "${port[$s]}"; done

tick=$(getconf CLK_TCK)
# user and kernel ticks of a process, all threads
ticks() { awk '{ print $14, $15 }' /proc/"$1"/stat; }
declare -A best p99 cpu user sys
for round in $(seq "$rounds"); do
  for s in "${servers[@]}"; do
    read -r u0 k0 < <(ticks "${pid[$s]}")
    c0=$(cpu_ns "${pid[$s]}")
    IFS=, read -r _ rps _p50 lat < <(taskset -c 1 "$load" --addr "127.0.0.1:${port[$s]}" \
      --test "$test" --connections 50 --pipeline 1 --seconds "$seconds")
    c1=$(cpu_ns "${pid[$s]}")
    read -r u1 k1 < <(ticks "${pid[$s]}")
    n=$(awk -v r="$rps" -v s="$seconds" 'BEGIN { print r * s }')
    per=$(awk -v c=$((c1 - c0)) -v n="$n" 'BEGIN { printf "%.2f", c / n / 1000 }')
    if awk -v a="$rps" -v b="${best[$s]:-0}" 'BEGIN { exit !(a > b) }'; then
      best[$s]=$rps
      p99[$s]=$lat
    fi
    if awk -v a="$per" -v b="${cpu[$s]:-1e9}" 'BEGIN { exit !(a < b) }'; then
      cpu[$s]=$per
    fi
    user[$s]=$(awk -v a="${user[$s]:-0}" -v t=$((u1 - u0)) -v n="$n" -v k="$tick" 'BEGIN { print a + t / k * 1e6 / n }')
    sys[$s]=$(awk -v a="${sys[$s]:-0}" -v t=$((k1 - k0)) -v n="$n" -v k="$tick" 'BEGIN { print a + t / k * 1e6 / n }')
    echo "round $round: $s $rps req/s, $per µs CPU per request" >&2
  done
done

echo "| server ($test, pipeline 1) | best req/s | p99 ms | CPU µs/req (lowest) | user µs/req (mean) | kernel µs/req (mean) |"
echo "| --- | --- | --- | --- | --- | --- |"
for s in "${servers[@]}"; do
  awk -v s="$s" -v b="${best[$s]}" -v p="${p99[$s]}" -v c="${cpu[$s]}" -v u="${user[$s]}" \
    -v k="${sys[$s]}" -v r="$rounds" \
    'BEGIN { printf "| %s | %.0f | %s | %s | %.2f | %.2f |\n", s, b, p, c, u / r, k / r }'
done
