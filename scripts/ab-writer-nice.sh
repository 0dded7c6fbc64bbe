#!/usr/bin/env bash
# A/B of the SQLite writer thread's niceness on one running server: the
# durable default (write-back to SQLite) on core 0, `mc-load` SETs on core
# 1, and between rounds the `sqlite-writer` thread is re-niced, so both
# settings run in the same process, on the same data, alternating.
#
#   scripts/ab-writer-nice.sh [PIPELINE] [SECONDS] [ROUNDS] [NICE_A] [NICE_B]
#
# Defaults: pipeline 1, 3 s, 2 rounds, niceness 10 against 19 (absolute
# values; the server runs at 0). Raising a thread's priority again (19 ->
# 10) needs root or CAP_SYS_NICE. Prints mc-load's line per run:
# test,req/s,p50 ms,p99 ms. Needs release builds:
#   cargo build --release -p tiercache -p tiercache-bench --bin tiercache --bin mc-load
set -euo pipefail
cd "$(dirname "$0")/.."

pipeline=${1:-1}
seconds=${2:-3}
rounds=${3:-2}
nice_a=${4:-10}
nice_b=${5:-19}
bin=${TIERCACHE_BIN:-target/release/tiercache}
load=target/release/mc-load
for b in "$bin" "$load"; do
  [ -x "$b" ] || { echo "build first: cargo build --release -p tiercache -p tiercache-bench" >&2; exit 2; }
done

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 0 "$bin" serve --data-dir "$work/data" --resp off \
  --memcache "127.0.0.1:$port" --admin off 2>"$work/log" &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do
  (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

# The writer thread starts with the first write.
"$load" --addr "127.0.0.1:$port" --test set --connections 50 --pipeline 1 --seconds 2 >/dev/null
writer=""
for t in /proc/$server/task/*; do
  [ "$(cat "$t/comm")" = sqlite-writer ] && writer=$(basename "$t")
done
[ -n "$writer" ] || { echo "no sqlite-writer thread found" >&2; exit 1; }

for _ in $(seq "$rounds"); do
  for nice in "$nice_a" "$nice_b"; do
    renice -n "$nice" -p "$writer" >/dev/null
    echo "nice $nice: $(taskset -c 1 "$load" --addr "127.0.0.1:$port" --test set \
      --connections 50 --pipeline "$pipeline" --seconds "$seconds")"
  done
done
