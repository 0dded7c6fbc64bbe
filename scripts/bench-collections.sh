#!/usr/bin/env bash
# tiercache vs redis-server on collection workloads (streams, lists,
# hashes, sets, sorted sets), the way issue 4 measures: both servers
# pinned to core 0, redis-benchmark to core 1, the two servers alternating
# within each round, best of ROUNDS per server and workload.
#
#   scripts/bench-collections.sh [ROUNDS] [WORKLOAD ...]
#
# Workloads (all when none is named):
#   xadd-capped    XADD s MAXLEN ~ 1000 * f v           (a capped log)
#   xadd-grow      XADD s * f v, the stream growing to 100,000 entries
#   xrange-head    XRANGE s - + COUNT 10 on 100,000 entries
#   xrevrange-tail XREVRANGE s + - COUNT 10 on 100,000 entries
#   xread-tail     XREAD COUNT 10 STREAMS s <ID 10 before the end>
#   lpush-grow     LPUSH q x, the list growing to 100,000 elements
#   rpop-shrink    RPOP q on that list
#   lrange-head    LRANGE q 0 9 on a list of 100,000 elements
#   lindex-middle  LINDEX q 50000 on that list
#   lmove-queue    LMOVE q done RIGHT LEFT, q starting at 100,000 elements
#   hset-1000      HSET h field:__rand_int__ v, 1,000 fields
#   sadd-1000      SADD s member:__rand_int__, 1,000 members
#   zadd-1000      ZADD z __rand_int__ member:__rand_int__, 1,000 members
#   hget-1000      HGET h field:__rand_int__ on a hash of 1,000 fields
#   sismember-1000 SISMEMBER s member:__rand_int__ on a set of 1,000 members
#   zscore-1000    ZSCORE z member:__rand_int__ on a sorted set of 1,000
#   hincrby-1000   HINCRBY n field:__rand_int__ 1 on a hash of 1,000 counters
#   hget-60000     HGET g field:__rand_int__ on a hash of 60,000 fields
#   hset-60000     HSET g field:__rand_int__ v on that hash
#
# Each server is flushed and set up afresh before each of its runs, so both
# start from the same data. Needs a release build, redis-server and
# redis-benchmark. Prints a Markdown table; ratio = tiercache / redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

rounds=${1:-3}
shift || true
all=(xadd-capped xadd-grow xrange-head xrevrange-tail xread-tail lpush-grow rpop-shrink
  lrange-head lindex-middle lmove-queue hset-1000 sadd-1000 zadd-1000
  hget-1000 sismember-1000 zscore-1000 hincrby-1000 hget-60000 hset-60000)
workloads=("${@:-${all[@]}}")
[ $# -eq 0 ] && workloads=("${all[@]}")
bin=${TIERCACHE_BIN:-target/release/tiercache}
require_builds "$bin"
require_tools redis-server redis-benchmark redis-cli taskset

work=$(mktemp -d)
tc_port=$(free_port)
redis_port=$(free_port)
taskset -c 0 "$bin" serve --data-dir "$work/tc" --resp "127.0.0.1:$tc_port" \
  --memcache off --admin off 2>"$work/tiercache.log" &
tc_pid=$!
taskset -c 0 redis-server --port "$redis_port" --bind 127.0.0.1 --save '' \
  --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
redis_pid=$!
trap 'kill $tc_pid $redis_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
wait_for_port "$tc_port"
wait_for_port "$redis_port"

# send PORT: the inline commands on stdin (one per CRLF-ended line), in
# one pipeline; returns once every reply is in (redis-cli --pipe).
send() { redis-cli -p "$1" --pipe >/dev/null; }

# fill_stream PORT N: a stream "s" of N entries with IDs 1-0 .. N-0.
fill_stream() {
  seq 1 "$2" | awk '{ printf "XADD s %d-0 field value\r\n", $1 }' | send "$1"
}

# fill_members PORT: a hash "h", a set "s", a sorted set "z" and a hash of
# counters "n" of the 1,000 members redis-benchmark's -r 1000 names
# (__rand_int__ is 12 digits).
fill_members() {
  seq 0 999 | awk '{ m = sprintf("%012d", $1)
    printf "HSET h field:%s v\r\nSADD s member:%s\r\n", m, m
    printf "ZADD z %d member:%s\r\nHSET n field:%s 0\r\n", $1, m, m }' | send "$1"
}

# fill_big_hash PORT: a hash "g" of the 60,000 fields -r 60000 names.
fill_big_hash() {
  seq 0 59999 | awk '{ printf "HSET g field:%012d v\r\n", $1 }' | send "$1"
}

# setup WORKLOAD PORT: the data the workload starts from.
setup() {
  redis-cli -p "$2" flushall >/dev/null
  case $1 in
    xrange-head|xrevrange-tail|xread-tail) fill_stream "$2" 100000 ;;
    rpop-shrink|lrange-head|lindex-middle|lmove-queue)
      redis-benchmark -p "$2" -c 50 -n 100000 -q lpush q x >/dev/null 2>&1 ;;
    hget-1000|sismember-1000|zscore-1000|hincrby-1000) fill_members "$2" ;;
    hget-60000|hset-60000) fill_big_hash "$2" ;;
  esac
}

# bench WORKLOAD PORT -> requests per second
bench() {
  local args
  case $1 in
    xadd-capped) args=(-n 100000 xadd s maxlen '~' 1000 '*' field value) ;;
    xadd-grow) args=(-n 100000 xadd s '*' field value) ;;
    xrange-head) args=(-n 100000 xrange s - + count 10) ;;
    xrevrange-tail) args=(-n 100000 xrevrange s + - count 10) ;;
    xread-tail) args=(-n 100000 xread count 10 streams s 99990-0) ;;
    lpush-grow) args=(-n 100000 lpush q x) ;;
    rpop-shrink) args=(-n 100000 rpop q) ;;
    lrange-head) args=(-n 100000 lrange q 0 9) ;;
    lindex-middle) args=(-n 100000 lindex q 50000) ;;
    lmove-queue) args=(-n 100000 lmove q done right left) ;;
    hset-1000) args=(-n 200000 -r 1000 hset h field:__rand_int__ v) ;;
    sadd-1000) args=(-n 200000 -r 1000 sadd s member:__rand_int__) ;;
    zadd-1000) args=(-n 200000 -r 1000 zadd z __rand_int__ member:__rand_int__) ;;
    hget-1000) args=(-n 200000 -r 1000 hget h field:__rand_int__) ;;
    sismember-1000) args=(-n 200000 -r 1000 sismember s member:__rand_int__) ;;
    zscore-1000) args=(-n 200000 -r 1000 zscore z member:__rand_int__) ;;
    hincrby-1000) args=(-n 200000 -r 1000 hincrby n field:__rand_int__ 1) ;;
    hget-60000) args=(-n 100000 -r 60000 hget g field:__rand_int__) ;;
    hset-60000) args=(-n 20000 -r 60000 hset g field:__rand_int__ v) ;;
    *) echo "unknown workload $1" >&2; exit 2 ;;
  esac
  taskset -c 1 redis-benchmark -p "$2" -c 50 --csv "${args[@]}" 2>/dev/null |
    awk -F'","' 'NR > 1 { gsub(/"/, ""); split($0, f, ","); print f[2]; exit }'
}

declare -A best
for round in $(seq "$rounds"); do
  for w in "${workloads[@]}"; do
    for server in tiercache redis; do
      port=$tc_port
      [ "$server" = redis ] && port=$redis_port
      setup "$w" "$port"
      rps=$(bench "$w" "$port")
      if awk -v a="$rps" -v b="${best[$server/$w]:-0}" 'BEGIN { exit !(a > b) }'; then
        best[$server/$w]=$rps
      fi
    done
  done
  echo "round $round of $rounds done" >&2
done

echo "| workload | tiercache req/s | redis-server req/s | ratio |"
echo "| --- | --- | --- | --- |"
for w in "${workloads[@]}"; do
  t=${best[tiercache/$w]:-0} r=${best[redis/$w]:-0}
  ratio=$(awk -v a="$t" -v b="$r" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
  echo "| $w | $t | $r | **${ratio}×** |"
done
