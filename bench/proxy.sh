#!/usr/bin/env bash
# Reverse proxy, fibra against nginx, side by side in one run.
#
#   bench/proxy.sh [ROUNDS] [SECONDS]        (defaults: 5 rounds of 10 s)
#   FIBRA_KEEPALIVE=N NGINX_KEEPALIVE=N      idle upstream connections kept per worker
#                                            (defaults: 64, fibra's default; 32)
#
# The backend is `fibra hello --workers 1`, pinned to CPU 1 together with the load generator
# (`wrk -t1 -c64`, on /plaintext through the front); the front, pinned alone to CPU 0, is
# either `fibra serve --workers 1 --proxy /=http://127.0.0.1:BACKEND --proxy-keepalive N` or
# nginx (one worker) with `proxy_pass` to `upstream { keepalive N; }`, `proxy_http_version
# 1.1` and `proxy_set_header Connection ""`. With fewer idle connections kept than the 64
# requests in flight, both fronts close and reopen upstream connections all the time (the
# TCP connections opened during each run are printed, from nstat's TcpActiveOpens, wrk's own
# 64 included). Fronts alternate within each round, which goes first alternating too (closed
# connections linger in TIME_WAIT and slow the next run's connects); each measured run
# follows a 2 s warm-up of the same front process. Prints per run and the medians: req/s,
# front CPU µs per request (user+system of the front's process group over the measured run,
# from /proc/PID/stat, divided by the requests wrk completed), and the ratios fibra ÷ nginx.
# Every run must be free of socket errors and non-2xx answers (wrk's counts), and each
# front's answer is checked with curl (status 200, body "Hello, World!") when it starts.
#
# Needs nginx and wrk; builds fibra (release) unless NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS=${1:-5}
SECS=${2:-10}
CONNS=64
FIBRA_KEEPALIVE=${FIBRA_KEEPALIVE:-64}
NGINX_KEEPALIVE=${NGINX_KEEPALIVE:-32}
for tool in nginx wrk taskset curl nstat; do
  command -v "$tool" >/dev/null || { echo "proxy.sh: $tool is missing" >&2; exit 2; }
done
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
FIBRA="$ROOT/target/release/fibra"

RUN="$(mktemp -d)"
chmod 755 "$RUN" # nginx's worker drops privileges: it must read what is here
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; done
  rm -rf "$RUN"
}
trap cleanup EXIT

source "$ROOT/bench/lib/measure.sh"

nginx_conf() { # PORT BACKEND_PORT
  mkdir -p "$RUN/nginx"
  cat >"$RUN/nginx/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
pid $RUN/nginx/nginx.pid;
error_log $RUN/nginx/error.log warn;
events { worker_connections 4096; use epoll; multi_accept on; }
http {
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 65;
    client_body_temp_path $RUN/nginx/body;
    proxy_temp_path $RUN/nginx/proxy;
    fastcgi_temp_path $RUN/nginx/fastcgi;
    uwsgi_temp_path $RUN/nginx/uwsgi;
    scgi_temp_path $RUN/nginx/scgi;
    upstream backend {
        server 127.0.0.1:$2;
        keepalive $NGINX_KEEPALIVE;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:$1 backlog=4096;
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CONF
}

wait_up() { # NAME URL
  for _ in $(seq 100); do
    body=$(curl -sf "$2" 2>/dev/null) && [ "$body" = "Hello, World!" ] && return 0
    sleep 0.1
  done
  echo "proxy.sh: $1 did not answer Hello, World! at $2" >&2; exit 1
}

BACKEND_PORT=$(free_port)
setsid taskset -c 1 "$FIBRA" hello --workers 1 --port "$BACKEND_PORT" >/dev/null 2>&1 &
BPID=$!
PIDS+=("$BPID")
wait_up backend "http://127.0.0.1:$BACKEND_PORT/plaintext"

start() { # NAME PORT -> sets SPID (process group leader)
  case $1 in
    nginx) nginx_conf "$2" "$BACKEND_PORT"
           setsid taskset -c 0 nginx -c "$RUN/nginx/nginx.conf" >/dev/null 2>&1 & ;;
    fibra) setsid taskset -c 0 "$FIBRA" serve "$RUN" --workers 1 --port "$2" \
             --proxy "/=http://127.0.0.1:$BACKEND_PORT" --proxy-keepalive "$FIBRA_KEEPALIVE" >/dev/null 2>&1 & ;;
  esac
  SPID=$!
  PIDS+=("$SPID")
  wait_up "$1" "http://127.0.0.1:$2/plaintext"
}

active_opens() { nstat -az TcpActiveOpens | awk '/TcpActiveOpens/ {print $2}'; }

HZ=$(getconf CLK_TCK)
declare -A RPS CPU
echo "fibra --proxy-keepalive $FIBRA_KEEPALIVE, nginx keepalive $NGINX_KEEPALIVE, wrk -c$CONNS"
for r in $(seq "$ROUNDS"); do
  order="fibra nginx"
  [ $((r % 2)) = 0 ] && order="nginx fibra"
  for s in $order; do
    port=$(free_port)
    start "$s" "$port"
    url="http://127.0.0.1:$port/plaintext"
    taskset -c 1 wrk -t1 -c$CONNS -d2s "$url" >/dev/null 2>&1
    o0=$(active_opens)
    t0=$(cpu_ticks "$SPID")
    out=$(taskset -c 1 wrk -t1 -c$CONNS -d"${SECS}s" "$url" 2>&1)
    t1=$(cpu_ticks "$SPID")
    opens=$(( $(active_opens) - o0 ))
    kill -- "-$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    if grep -qE "Socket errors|Non-2xx" <<<"$out"; then
      echo "proxy.sh: $s had errors:" >&2; echo "$out" >&2; exit 1
    fi
    n=$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' <<<"$out")
    rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' <<<"$out")
    us=$(python3 -c "print(f'{($t1-$t0)/$HZ*1e6/$n:.2f}')")
    RPS[$s]+="$rps "
    CPU[$s]+="$us "
    printf 'round %d %-6s %10.0f req/s  %6s us front CPU/req  %d requests, no errors, %d connections opened\n' \
      "$r" "$s" "$rps" "$us" "$n" "$opens"
  done
done

python3 - "${RPS[fibra]}" "${CPU[fibra]}" "${RPS[nginx]}" "${CPU[nginx]}" <<'PY'
import statistics as st, sys
fr, fc, nr, nc = ([float(x) for x in a.split()] for a in sys.argv[1:])
print(f"median  fibra {st.median(fr):10.0f} req/s {st.median(fc):7.2f} us front CPU per request")
print(f"median  nginx {st.median(nr):10.0f} req/s {st.median(nc):7.2f} us front CPU per request")
print(f"fibra / nginx: req/s {st.median(fr)/st.median(nr):.2f}, front CPU per request {st.median(fc)/st.median(nc):.2f}"
      f" (per-round CPU ratios: {' '.join(f'{a/b:.2f}' for a, b in zip(fc, nc))})")
PY
