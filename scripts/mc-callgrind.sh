#!/usr/bin/env bash
# Instructions per request of tiercache's memcached front end, counted by
# callgrind: repeatable for one binary and load, however busy the machine
# (req/s on these shared 2-core machines is not). The server runs under
# `valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes`,
# pinned to core 0; counting is switched on only for the measured `mc-load`
# run (50 connections, 100,000 keys, 3-byte values), after a 3 s warm-up.
#
#   scripts/mc-callgrind.sh [TEST] [PIPELINE] [SECONDS] [OUTDIR]
#
# Prints each thread's instructions and their total per request. Requests
# are mc-load's rate × seconds (about ±1%); for an exact count, count the
# calls of a function run once per request in the profiles left in OUTDIR
# (default target/callgrind), e.g. `tiercache_engine::journal::encode` for
# durable SETs. TIERCACHE_CONFIG=FILE and TIERCACHE_BIN=PATH as in
# scripts/bench-vs-memcached.sh. SERVER=memcached counts memcached 1.6
# (`-t 1`, as the comparisons run it) instead of tiercache, for the same
# load. Extra valgrind options go in VALGRIND_OPTS, e.g. the cache
# simulator: VALGRIND_OPTS="--cache-sim=yes --LL=33554432,16,64", or
# per-instruction counts for scripts/code-footprint.py (the code lines a
# request touches): VALGRIND_OPTS=--dump-instr=yes.
# SETTLE=N waits N seconds between the warm-up and the count (default 0),
# so that the warm-up's writes are flushed first and the count sees the
# steady state of a server whose keys are all written; LOAD_OPTS adds
# mc-load options to both runs (e.g. LOAD_OPTS=--vary-values).
# Needs valgrind (Debian: valgrind; taskset is in util-linux) and release builds:
#   cargo build --release -p tiercache -p tiercache-bench --bin tiercache --bin mc-load
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

test=${1:-set}
pipeline=${2:-1}
seconds=${3:-10}
out=${4:-target/callgrind}
bin=${TIERCACHE_BIN:-target/release/tiercache}
load=target/release/mc-load
require_builds "$bin" "$load"
require_tools valgrind callgrind_control taskset

mkdir -p "$out"
rm -f "$out"/callgrind.out.*
work=$(mktemp -d)
port=$(free_port)
config_args=()
[ -n "${TIERCACHE_CONFIG:-}" ] && config_args=(--config "$TIERCACHE_CONFIG")
if [ "${SERVER:-tiercache}" = memcached ]; then
  # memcached sets its file limit to exactly -c, and valgrind allows only
  # its own hard limit, which is 12 below the soft one.
  ulimit -n 1024
  server=(memcached -p "$port" -U 0 -l 127.0.0.1 -t 1 -m 1024 -c 1012 -u root)
else
  server=("$bin" serve "${config_args[@]}" --data-dir "$work/tc" --resp off
    --memcache "127.0.0.1:$port" --admin off)
fi
taskset -c 0 valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes \
  --callgrind-out-file="$out/callgrind.out.%p" "${server[@]}" 2>"$work/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
# valgrind starts slowly: up to 30 s.
for _ in 1 2 3; do wait_for_port "$port"; done

mc_load() {
  taskset -c 1 "$load" --addr "127.0.0.1:$port" --test "$test" --connections 50 \
    --pipeline "$pipeline" ${LOAD_OPTS:-} "$@"
}
mc_load --seconds 3 >/dev/null
sleep "${SETTLE:-0}"
callgrind_control -i on "$pid" >/dev/null 2>&1
IFS=, read -r _name rps _p50 _p99 < <(mc_load --seconds "$seconds" --no-preload)
callgrind_control -i off "$pid" >/dev/null 2>&1
kill -INT "$pid"
wait "$pid" 2>/dev/null || true

requests=$(awk -v r="$rps" -v s="$seconds" 'BEGIN { printf "%.0f", r * s }')
total=0
for f in "$out"/callgrind.out.*-*; do
  n=$(awk '/^totals:/ { print $2; exit }' "$f")
  [ -n "$n" ] || continue
  echo "$(basename "$f"): $n instructions"
  total=$((total + n))
done
echo "requests $requests, instructions $total, per request $((total / requests))"
