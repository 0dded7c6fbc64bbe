#!/usr/bin/env bash
# tiercache vs redis-server on the geo commands, the way issue 4 measures:
# both servers pinned to core 0, redis-benchmark (-c 10, 20,000 requests)
# on core 1, the two servers alternating within each round. The geo set is
# every station of ../shared/data/stations.csv (the iRail stations data
# set, CC0 1.0, iRail / Open Knowledge Belgium) four times over (as given,
# and three copies moved by up to 0.05 degrees): about 2,900 points.
# Workloads: GEOSEARCH of the 10 nearest within 100 km of Brussels,
# GEOSEARCH BYBOX of 50 x 50 km WITHDIST, GEOADD of one point.
#
#   scripts/bench-geo.sh [ROUNDS]
#
# TIERCACHE_BIN and TIERCACHE_CONFIG as in scripts/bench-vs-redis.sh
# (TIERCACHE_CONFIG=scripts/pure-cache.toml is the like-for-like with a
# redis-server that persists nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh
rounds=${1:-3}
stations=../shared/data/stations.csv
require_builds "${TIERCACHE_BIN:-target/release/tiercache}"
require_tools redis-server redis-benchmark taskset python3
[ -r "$stations" ] || { echo "missing $stations" >&2; exit 1; }

# run NAME PORT COMMAND...: the workloads against the server COMMAND starts.
run() {
  local name=$1 port=$2; shift 2
  start_pinned "$name" "$port" "$@"
  python3 - "$port" "$stations" <<'PY'
import csv, random, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
def cmd(*a):
    a = [x if isinstance(x, bytes) else str(x).encode() for x in a]
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
rng = random.Random(4)
args = []
with open(sys.argv[2], newline="") as f:
    for row in csv.DictReader(f):
        lon, lat = float(row["longitude"]), float(row["latitude"])
        sid = row["URI"].rsplit("/", 1)[-1]
        for copy in range(4):
            dx = dy = 0.0
            if copy:
                dx, dy = rng.uniform(-0.05, 0.05), rng.uniform(-0.05, 0.05)
            args += ["%.6f" % (lon + dx), "%.6f" % (lat + dy), "%s-%d" % (sid, copy)]
s.sendall(cmd(b"GEOADD", b"stations", *args))
got = b""
while not got.endswith(b"\r\n"):
    got += s.recv(100)
assert got.startswith(b":"), got
PY
  local line="$name"
  for t in "radius:GEOSEARCH stations FROMLONLAT 4.3517 50.8503 BYRADIUS 100 km ASC COUNT 10" \
           "box:GEOSEARCH stations FROMLONLAT 4.3517 50.8503 BYBOX 50 50 km WITHDIST" \
           "geoadd:GEOADD stations 4.3517 50.8503 bench"; do
    # shellcheck disable=SC2086
    r=$(bench_rps "$port" -n 20000 ${t#*:})
    line="$line | ${t%%:*}: $r"
  done
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  echo "$line"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
alternate_with_redis "$rounds" run
