#!/usr/bin/env bash
# A/B of two tiercache builds on the memcached protocol (or, with
# PROTOCOL=resp, the Redis protocol): both servers pinned to core 0, the
# load (mc-load; redis-benchmark -c 50 for RESP) on core 1, alternating
# runs (A then B) of each test.
#
#   BIN_A=old/tiercache BIN_B=target/release/tiercache scripts/ab-builds.sh [ROUNDS] [SECONDS] [TESTS]
#   PROTOCOL=resp BIN_A=... BIN_B=... scripts/ab-builds.sh [ROUNDS] [SECONDS] [TESTS]
#
# TESTS is a list of TEST_PIPELINE words (default "set_1 get_1 set_16
# get_16"). Prints, per test, the median over rounds of B's req/s over A's,
# and of B's (user / kernel) CPU ratio over A's in the same pair of runs,
# with the mean user and kernel µs per request of each build (from
# /proc/PID/stat, all threads).
#
# Why user/kernel: on this shared machine a build's req/s moves by ±10%
# from one run to the next, far more than a change to the user-side code
# does, and its user time per request moves with it (memory latency
# varies). Kernel time per request is the same for both builds (the same
# system calls), so user time relative to kernel time, paired run by run,
# shows a user-side change that req/s alone cannot.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

rounds=${1:-8}
secs=${2:-3}
tests=${3:-set_1 get_1 set_16 get_16}
: "${BIN_A:?set BIN_A to the first build}" "${BIN_B:?set BIN_B to the second build}"
require_builds "$BIN_A" "$BIN_B"
require_tools taskset

proto=${PROTOCOL:-memcache}
if [ "$proto" = resp ]; then require_tools redis-benchmark; else require_builds target/release/mc-load; fi

# listen PORT: the serve arguments for the protocol under test.
listen() {
  if [ "$proto" = resp ]; then
    echo --resp "127.0.0.1:$1" --memcache off
  else
    echo --resp off --memcache "127.0.0.1:$1"
  fi
}

# load TEST PIPELINE PORT [preload] -> "req/s requests" of one run.
load() {
  if [ "$proto" = resp ]; then
    local n=$((secs * ($2 == 1 ? 100000 : 1000000)))
    local rps
    rps=$(taskset -c 1 redis-benchmark -p "$3" -c 50 -P "$2" -t "$1" -n "$n" -r 100000 --csv |
      awk -F'","' 'NR > 1 { gsub(/"/, ""); split($0, f, ","); print f[2]; exit }')
    echo "$rps $n"
  else
    local extra=--no-preload
    [ "${4:-}" = preload ] && extra=
    taskset -c 1 target/release/mc-load --addr "127.0.0.1:$3" --test "$1" \
      --pipeline "$2" --connections 50 --seconds "$secs" $extra |
      awk -F, -v s="$secs" '{ print $2, $2 * s }'
  fi
}

work=$(mktemp -d)
port_a=$(free_port)
port_b=$(free_port)
# shellcheck disable=SC2046 # listen's words are separate arguments
taskset -c 0 "$BIN_A" serve --data-dir "$work/a" $(listen "$port_a") --admin off 2>"$work/a.log" &
pid_a=$!
# shellcheck disable=SC2046
taskset -c 0 "$BIN_B" serve --data-dir "$work/b" $(listen "$port_b") --admin off 2>"$work/b.log" &
pid_b=$!
trap 'kill $pid_a $pid_b 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
wait_for_port "$port_a"
wait_for_port "$port_b"

# Every key written (and flushed) once before measuring, in both.
for port in "$port_a" "$port_b"; do
  load set 16 "$port" preload >/dev/null
done
sleep 2

# ticks PID -> "user kernel" clock ticks so far
ticks() { awk '{ print $14, $15 }' /proc/"$1"/stat; }
hz=$(getconf CLK_TCK)

for _ in $(seq "$rounds"); do
  for t in $tests; do
    test=${t%_*} pipeline=${t#*_}
    for build in A B; do
      port=$port_a pid=$pid_a
      [ "$build" = B ] && port=$port_b pid=$pid_b
      read -r u0 k0 < <(ticks "$pid")
      read -r rps n < <(load "$test" "$pipeline" "$port")
      read -r u1 k1 < <(ticks "$pid")
      awk -v b="$build" -v t="$test P$pipeline" -v r="$rps" -v u=$((u1 - u0)) -v k=$((k1 - k0)) \
        -v n="$n" -v hz="$hz" \
        'BEGIN { printf "%s %s %d %.4f %.4f\n", b, t, r, u * 1e6 / hz / n, k * 1e6 / hz / n }'
    done
  done
done >"$work/runs"

python3 - "$work/runs" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    build, test, p, rps, user, kernel = line.split()
    runs.setdefault(f"{test} {p}", []).append((build, float(rps), float(user), float(kernel)))
print("| test | req/s B/A (median) | user/kernel B/A (median, min..max) | user µs A | user µs B | kernel µs A | kernel µs B |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for test, rows in sorted(runs.items()):
    pairs = list(zip(rows[0::2], rows[1::2]))
    rps = [b[1] / a[1] for a, b in pairs]
    ratio = [(b[2] / b[3]) / (a[2] / a[3]) for a, b in pairs if a[2] and a[3] and b[3]]
    mean = lambda i, side: statistics.mean(pair[side][i] for pair in pairs)
    print(f"| {test} | {statistics.median(rps):.3f} | {statistics.median(ratio):.3f} "
          f"({min(ratio):.3f}..{max(ratio):.3f}) | {mean(2, 0):.2f} | {mean(2, 1):.2f} "
          f"| {mean(3, 0):.2f} | {mean(3, 1):.2f} |")
PY
