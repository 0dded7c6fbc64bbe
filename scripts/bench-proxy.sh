#!/usr/bin/env bash
# HTTP micro-cache hit throughput, the way issue 6 measures it: tiercache
# proxy vs nginx proxy_cache vs Varnish, each in front of the same slow
# origin (a Python server that takes DELAY seconds per response), each
# proxy pinned to core 0 (nginx with one worker), wrk -t1 -c50 pinned to
# core 1, alternating runs, best of N per proxy and body size, p99 beside
# each figure.
#
#   scripts/bench-proxy.sh [ROUNDS] [DURATION]
#
# Needs nginx, varnishd, wrk, python3, curl, taskset and a release build
# (cargo build --release -p tiercache). Every server runs as the current
# user from a temporary directory with its own config; nothing system-wide
# is touched. Prints a Markdown table; ratios are against nginx in the
# same run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/common.sh

rounds=${1:-3}
duration=${2:-10s}
delay=${DELAY:-0.5}
bin=${TIERCACHE_BIN:-target/release/tiercache}
require_builds "$bin"
require_tools nginx varnishd wrk python3 curl taskset

work=$(mktemp -d)
chmod 755 "$work"
origin_port=$(free_port)
tc_port=$(free_port)
nginx_port=$(free_port)
varnish_port=$(free_port)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$work/nginx.pid" ] && kill "$(cat "$work/nginx.pid" 2>/dev/null)" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The slow origin: /1k (1 KiB) and /672k (a 672,864-byte JSON list, the
# size of seed 002's /api/v1/places), Cache-Control: max-age=3600, ETag,
# after DELAY seconds. HTTP/1.1 keep-alive so proxies can pool.
cat >"$work/origin.py" <<'EOF'
import http.server, json, sys, time
delay = float(sys.argv[2])
small = b"x" * 1024
item = {"id": 0, "name": "Ciudad de Mexico - Terminal Norte", "slug": "ciudad-de-mexico-terminal-norte", "country": "MX", "lat": 19.4326, "lon": -99.1332}
big = json.dumps([dict(item, id=i) for i in range(10000)]).encode()[:672863] + b"]"
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        time.sleep(delay)
        body = big if self.path.startswith("/672k") else small
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "public, max-age=3600")
        self.send_header("ETag", '"v1"')
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
EOF
python3 "$work/origin.py" "$origin_port" "$delay" &
pids+=($!)

# tiercache: the default setup (memory tier + SQLite in the data dir).
taskset -c 0 "$bin" proxy --upstream "http://127.0.0.1:$origin_port" \
  --listen "127.0.0.1:$tc_port" --data-dir "$work/tc" 2>"$work/tiercache.log" &
pids+=($!)

# nginx 1.22 proxy_cache as issue 6 states it, one worker.
mkdir -p "$work/nginx-cache" "$work/nginx-tmp"
user_line=""
[ "$(id -u)" = 0 ] && user_line="user root;"
cat >"$work/nginx.conf" <<EOF
$user_line
worker_processes 1;
daemon off;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  client_body_temp_path $work/nginx-tmp/body;
  proxy_temp_path $work/nginx-tmp/proxy;
  fastcgi_temp_path $work/nginx-tmp/fastcgi;
  uwsgi_temp_path $work/nginx-tmp/uwsgi;
  scgi_temp_path $work/nginx-tmp/scgi;
  proxy_cache_path $work/nginx-cache levels=1:2 keys_zone=micro:10m max_size=1g inactive=60m use_temp_path=off;
  upstream origin { server 127.0.0.1:$origin_port; keepalive 16; }
  server {
    listen 127.0.0.1:$nginx_port;
    location / {
      proxy_pass http://origin;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_cache micro;
      proxy_cache_lock on;
      proxy_cache_use_stale updating;
      proxy_cache_background_update on;
      add_header X-Cache \$upstream_cache_status;
    }
  }
}
EOF
taskset -c 0 nginx -p "$work" -c "$work/nginx.conf" 2>>"$work/nginx-error.log" &
pids+=($!)

# Varnish 7: malloc storage, one thread pool, no jail (runs as this user).
taskset -c 0 varnishd -F -j none -n "$work/varnish" -a "127.0.0.1:$varnish_port" \
  -b "127.0.0.1:$origin_port" -s malloc,512m -p thread_pools=1 >"$work/varnish.log" 2>&1 &
pids+=($!)

for port in "$tc_port" "$nginx_port" "$varnish_port"; do
  for _ in $(seq 200); do
    curl -s -o /dev/null "http://127.0.0.1:$port/1k" && break
    sleep 0.1
  done
done
# Warm every cache (the first request is the slow miss).
for port in "$tc_port" "$nginx_port" "$varnish_port"; do
  for path in /1k /672k; do
    curl -s -o /dev/null "http://127.0.0.1:$port$path"
    curl -s -o /dev/null -D "$work/h" "http://127.0.0.1:$port$path"
    grep -qiE '^(x-cache: (HIT)|age: [0-9])' "$work/h" || { echo "port $port $path: not a hit:" >&2; cat "$work/h" >&2; }
  done
done

# run PORT PATH -> "rps p99_ms"
run() {
  taskset -c 1 wrk -t1 -c50 -d"$duration" --latency "http://127.0.0.1:$1$2" 2>/dev/null | awk '
    /Requests\/sec/ { rps = $2 }
    $1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v *= 1000 }; p99 = v }
    END { printf "%s %.2f\n", rps, p99 }'
}

declare -A best p99
for round in $(seq "$rounds"); do
  for path in /1k /672k; do
    for proxy in tiercache nginx varnish; do
      case $proxy in
        tiercache) port=$tc_port ;;
        nginx) port=$nginx_port ;;
        varnish) port=$varnish_port ;;
      esac
      read -r rps lat < <(run "$port" "$path")
      key="$proxy$path"
      if awk -v a="$rps" -v b="${best[$key]:-0}" 'BEGIN { exit !(a > b) }'; then
        best[$key]=$rps
        p99[$key]=$lat
      fi
    done
  done
  echo "round $round of $rounds done" >&2
done

echo "| body | tiercache req/s | p99 ms | nginx req/s | p99 ms | varnish req/s | p99 ms | tiercache / nginx | varnish / nginx |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for path in /1k /672k; do
  t=${best[tiercache$path]:-0}
  n=${best[nginx$path]:-0}
  v=${best[varnish$path]:-0}
  rt=$(awk -v a="$t" -v b="$n" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
  rv=$(awk -v a="$v" -v b="$n" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
  echo "| ${path#/} | $t | ${p99[tiercache$path]:-} | $n | ${p99[nginx$path]:-} | $v | ${p99[varnish$path]:-} | **${rt}×** | ${rv}× |"
done
