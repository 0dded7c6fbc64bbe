#!/usr/bin/env bash
# A profile-guided (PGO) release build of the `tiercache` binary, for
# servers that want the last few percent: build an instrumented binary,
# run it under the server's hot loads, then rebuild with that profile.
#
#   scripts/pgo-build.sh            # prints the path of the optimised binary
#   TIERCACHE_BIN=$(scripts/pgo-build.sh | tail -1) scripts/bench-vs-memcached.sh 5 5
#
# Why: the request path (tokio's event loop, the protocol parser, the engine,
# the memory tier, the journal) spans more code than a 32 KiB instruction
# cache holds. Callgrind's cache simulation of an unpipelined durable SET
# (scripts/mc-callgrind.sh set 1, SETTLE=20) counts 230 instruction-cache
# misses and 5,140 instructions per request for the plain release build,
# 19 misses and 4,218 instructions for this one: the profile lets LLVM lay
# the hot blocks out together and inline by measured frequency. On the wall
# clock that is a few percent of an unpipelined request, whose larger part
# is the kernel's TCP work (BENCHMARKS.md, session 28).
#
# The training load is the benchmarks' own mix, on both protocols and both
# the durable default and a pure in-memory config: SET and GET, pipelined
# and not, 100,000 keys, 3-byte values (mc-load; redis-benchmark too when
# installed). The profile covers the serve path only: LLVM treats code the
# training never ran (the HTTP proxy, the SQL stores other than SQLite) as
# cold and optimises it for size, so that code may run a little slower
# than in the plain build. Use this build for a server whose load is like
# the training's; `cargo build --release` stays the default.
#
# Needs: llvm-profdata matching rustc's LLVM (`rustup component add
# llvm-tools`) and taskset; builds the bench crate's load generator,
# mc-load. About 15 minutes on a 2-core machine (two release builds with
# fat LTO and a 40-second training run). Output goes to target/pgo-gen
# (instrumented) and target/pgo (optimised), beside the plain build in
# target/release.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "missing $profdata: run 'rustup component add llvm-tools' (a system llvm-profdata" >&2
  echo "must match rustc's LLVM version, so this script does not use one)" >&2
  exit 2
fi
command -v taskset >/dev/null || { echo "missing taskset (Debian: util-linux)" >&2; exit 2; }

root=$PWD
profiles="$root/target/pgo-profiles"
rm -rf "$profiles"
mkdir -p "$profiles"

echo "1/4 instrumented build (target/pgo-gen)" >&2
# RUSTFLAGS instruments the build scripts and proc macros too: their
# profiles land in $profiles/build and are not merged (the training run
# writes serve-*.profraw).
RUSTFLAGS="-Cprofile-generate=$profiles/build" CARGO_TARGET_DIR=target/pgo-gen \
  cargo build --release --locked -p tiercache --bin tiercache >&2
# The load generator, built the way the benchmark scripts document (one
# command for both binaries, so that the crates' features agree and nothing
# is rebuilt twice).
cargo build --release --locked -p tiercache -p tiercache-bench --bin tiercache --bin mc-load >&2
instrumented=target/pgo-gen/release/tiercache
load=target/release/mc-load

echo "2/4 training run" >&2
pid=
work=
# A failed load step must not leave the instrumented server running.
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; [ -n "$work" ] && rm -rf "$work"' EXIT
for config in default scripts/pure-cache.toml; do
  work=$(mktemp -d)
  mc_port=$(free_port)
  resp_port=$(free_port)
  config_args=()
  [ "$config" != default ] && config_args=(--config "$config")
  LLVM_PROFILE_FILE="$profiles/serve-%p.profraw" taskset -c 0 "$instrumented" serve \
    "${config_args[@]}" --data-dir "$work/tc" --resp "127.0.0.1:$resp_port" \
    --memcache "127.0.0.1:$mc_port" --admin off 2>"$work/log" &
  pid=$!
  wait_for_port "$mc_port"
  wait_for_port "$resp_port"
  for pipeline in 1 16; do
    for test in set get; do
      taskset -c 1 "$load" --addr "127.0.0.1:$mc_port" --test "$test" --connections 50 \
        --pipeline "$pipeline" --seconds 3 >/dev/null
    done
  done
  taskset -c 1 "$load" --addr "127.0.0.1:$mc_port" --test set --connections 50 \
    --pipeline 1 --seconds 3 --vary-values >/dev/null
  if command -v redis-benchmark >/dev/null; then
    for pipeline in 1 16; do
      taskset -c 1 redis-benchmark -p "$resp_port" -t set,get -c 50 -n 300000 \
        -r 100000 -P "$pipeline" -q >/dev/null
    done
  else
    echo "redis-benchmark not installed: training the memcached protocol only" >&2
  fi
  # SIGTERM: a clean exit writes the profile.
  kill -TERM "$pid"
  wait "$pid" || { echo "the instrumented server failed; its log:" >&2; cat "$work/log" >&2; exit 1; }
  pid=
  rm -rf "$work"
done
ls "$profiles"/serve-*.profraw >/dev/null

echo "3/4 merging the profiles" >&2
"$profdata" merge -o "$profiles/merged.profdata" "$profiles"/serve-*.profraw

echo "4/4 optimised build (target/pgo)" >&2
RUSTFLAGS="-Cprofile-use=$profiles/merged.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
  CARGO_TARGET_DIR=target/pgo cargo build --release --locked -p tiercache --bin tiercache >&2
echo "$root/target/pgo/release/tiercache"
