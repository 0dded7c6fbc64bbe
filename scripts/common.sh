# Shared by the scripts/bench-*.sh and scripts/mc-*.sh comparisons and by
# .ci/run: source it, do not run it.

# require_builds FILE...: exits (2) naming the build command unless every
# FILE is an executable (the release binaries a script runs).
require_builds() {
  local b
  for b in "$@"; do
    [ -x "$b" ] || { echo "missing $b; build first: cargo build --release -p tiercache -p tiercache-bench" >&2; exit 2; }
  done
}

# require_tools TOOL...: exits (2) naming the first TOOL not on PATH.
require_tools() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "missing $t" >&2; exit 2; }
  done
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_for_port PORT: until something accepts on 127.0.0.1:PORT (10 s at most).
wait_for_port() {
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $1))" 2>/dev/null && return
    sleep 0.1
  done
}

# cpu_ns PID: CPU time of all the process's threads so far, in nanoseconds
# (printf, not print: mawk prints large sums as 3.05935e+09).
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# start_memcached_pair BIN: tiercache (memcached protocol only; the config
# in TIERCACHE_CONFIG if set) and memcached with one worker thread, both
# pinned to core 0, in a temporary directory removed on exit. Sets work,
# tc_port, tc_pid, mc_port and mc_pid, and returns once both accept.
start_memcached_pair() {
  work=$(mktemp -d)
  tc_port=$(free_port)
  mc_port=$(free_port)
  local config_args=()
  [ -n "${TIERCACHE_CONFIG:-}" ] && config_args=(--config "$TIERCACHE_CONFIG")
  taskset -c 0 "$1" serve "${config_args[@]}" --data-dir "$work/tc" --resp off \
    --memcache "127.0.0.1:$tc_port" --admin off 2>"$work/tiercache.log" &
  tc_pid=$!
  # -u root only matters (and is only needed) when running as root.
  taskset -c 0 memcached -p "$mc_port" -U 0 -l 127.0.0.1 -t 1 -m 1024 -u root \
    >"$work/memcached.log" 2>&1 &
  mc_pid=$!
  trap 'kill $tc_pid $mc_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
  wait_for_port "$tc_port"
  wait_for_port "$mc_port"
}

# alternate_with_redis ROUNDS FN: ROUNDS times, `FN NAME PORT COMMAND...`
# against a fresh tiercache (TIERCACHE_BIN or the release build, with the
# config in TIERCACHE_CONFIG if set; data under $work/tc), then against a
# fresh redis-server that persists nothing, each on a free port. FN starts
# COMMAND pinned to core 0 (`start_pinned`), runs its load, and stops it.
# Needs $work.
alternate_with_redis() {
  local rounds=$1 fn=$2 bin=${TIERCACHE_BIN:-target/release/tiercache} port
  local config_args=()
  [ -n "${TIERCACHE_CONFIG:-}" ] && config_args=(--config "$TIERCACHE_CONFIG")
  for _ in $(seq "$rounds"); do
    port=$(free_port)
    rm -rf "$work/tc"
    "$fn" tiercache "$port" "$bin" serve "${config_args[@]}" --data-dir "$work/tc" \
      --resp "127.0.0.1:$port" --memcache off --admin off
    port=$(free_port)
    "$fn" redis-server "$port" redis-server --port "$port" --save '' --appendonly no
  done
}

# bench_rps PORT ARGS...: the requests per second redis-benchmark (10
# clients, on core 1) reports for ARGS (its options, then the command).
bench_rps() {
  local port=$1; shift
  taskset -c 1 redis-benchmark -p "$port" -c 10 --csv "$@" 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"'
}

# start_pinned NAME PORT COMMAND...: COMMAND on core 0, its output in
# $work/NAME.log; sets server_pid and returns once PORT accepts.
start_pinned() {
  local name=$1 port=$2; shift 2
  taskset -c 0 "$@" >"$work/$name.log" 2>&1 &
  server_pid=$!
  wait_for_port "$port"
}
