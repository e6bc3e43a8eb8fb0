#!/usr/bin/env bash
# HTTPS, fibra against nginx + OpenSSL, side by side in one run: keep-alive requests, then full
# handshakes (a new connection and a full TLS 1.3 handshake per request).
#
#   bench/tls.sh [ROUNDS] [REQUESTS]        (defaults: 5 rounds, 300,000 requests per run)
#
# One ECDSA P-256 certificate (made here with openssl) for both servers; TLS 1.2 and 1.3,
# session cache on for nginx (`ssl_session_cache shared:SSL:10m`), one worker each, the
# server pinned to CPU 0 and the load (`h2load --h1 -t1 -c256`, on /plaintext) to CPU 1.
# Each run is preceded by a 20,000-request warm-up on fresh connections to the same server
# process. Servers alternate; prints per run and the medians: req/s, server CPU µs per
# request (user+system of the server's process group over the measured run, from
# /proc/PID/stat), the ratio fibra ÷ nginx, and checks every response was a 2xx.
# Handshakes: `openssl s_time -new -time 5 -www /plaintext` (one client process, pinned to CPU
# 1), server CPU µs per connection (handshake + one request); s_time does not check statuses,
# so each server's answer is checked with curl when it starts, and the bytes read per
# connection are printed.
#
# Needs nginx, h2load (nghttp2-client) and openssl; builds fibra (release) unless NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS=${1:-5}
REQUESTS=${2:-300000}
CONNS=256
for tool in nginx h2load openssl taskset; do
  command -v "$tool" >/dev/null || { echo "tls.sh: $tool is missing" >&2; exit 2; }
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

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$RUN/key.pem" \
  -out "$RUN/cert.pem" -days 2 2>/dev/null
chmod 644 "$RUN/key.pem" "$RUN/cert.pem"

source "$ROOT/bench/lib/measure.sh"

nginx_conf() { # PORT
  mkdir -p "$RUN/nginx"
  cat >"$RUN/nginx/nginx.conf" <<EOF
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
    server {
        listen 127.0.0.1:$1 ssl backlog=4096;
        ssl_certificate $RUN/cert.pem;
        ssl_certificate_key $RUN/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache shared:SSL:10m;
        location = /plaintext { default_type text/plain; return 200 "Hello, World!"; }
    }
}
EOF
}

start() { # NAME PORT -> sets SPID (process group leader)
  case $1 in
    nginx) nginx_conf "$2"; setsid taskset -c 0 nginx -c "$RUN/nginx/nginx.conf" >/dev/null 2>&1 & ;;
    fibra) setsid taskset -c 0 "$FIBRA" hello --workers 1 --port "$2" \
             --tls-cert "$RUN/cert.pem" --tls-key "$RUN/key.pem" >/dev/null 2>&1 & ;;
  esac
  SPID=$!
  PIDS+=("$SPID")
  for _ in $(seq 100); do
    curl -skf "https://127.0.0.1:$2/plaintext" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "tls.sh: $1 did not come up" >&2; exit 1
}

HZ=$(getconf CLK_TCK)
declare -A RPS CPU
for r in $(seq "$ROUNDS"); do
  for s in fibra nginx; do
    port=$(free_port)
    start "$s" "$port"
    url="https://127.0.0.1:$port/plaintext"
    taskset -c 1 h2load --h1 -t1 -c$CONNS -n 20000 "$url" >/dev/null 2>&1
    t0=$(cpu_ticks "$SPID")
    out=$(taskset -c 1 h2load --h1 -t1 -c$CONNS -n "$REQUESTS" "$url" 2>&1)
    t1=$(cpu_ticks "$SPID")
    kill -- "-$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' <<<"$out")
    rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
    if [ "${ok:-0}" != "$REQUESTS" ]; then
      echo "tls.sh: $s answered ${ok:-0} of $REQUESTS with 2xx" >&2
      grep -E "^requests:|^status codes:" <<<"$out" >&2
      exit 1
    fi
    us=$(python3 -c "print(f'{($t1-$t0)/$HZ*1e6/$REQUESTS:.2f}')")
    RPS[$s]+="$rps "
    CPU[$s]+="$us "
    printf 'round %d %-6s %10.0f req/s  %6s us CPU/req  (all %s responses 2xx)\n' "$r" "$s" "$rps" "$us" "$ok"
  done
done

summary() { # LABEL UNIT: the medians and ratios of RPS/CPU
  python3 - "$1" "$2" "${RPS[fibra]}" "${CPU[fibra]}" "${RPS[nginx]}" "${CPU[nginx]}" <<'EOF'
import statistics as st, sys
label, unit = sys.argv[1:3]
fr, fc, nr, nc = ([float(x) for x in a.split()] for a in sys.argv[3:])
print(f"{label}: median  fibra {st.median(fr):10.0f} {unit}/s {st.median(fc):7.2f} us CPU per {unit}")
print(f"{label}: median  nginx {st.median(nr):10.0f} {unit}/s {st.median(nc):7.2f} us CPU per {unit}")
print(f"{label}: fibra / nginx: {unit}/s {st.median(fr)/st.median(nr):.2f}, CPU per {unit} {st.median(fc)/st.median(nc):.2f}"
      f" (per-round CPU ratios: {' '.join(f'{a/b:.2f}' for a, b in zip(fc, nc))})")
EOF
}
summary keep-alive request

# Full handshakes: a new connection per request.
RPS=([fibra]="" [nginx]="")
CPU=([fibra]="" [nginx]="")
for r in $(seq "$ROUNDS"); do
  for s in fibra nginx; do
    port=$(free_port)
    start "$s" "$port"
    t0=$(cpu_ticks "$SPID")
    out=$(taskset -c 1 openssl s_time -connect "127.0.0.1:$port" -new -time 5 -www /plaintext 2>&1)
    t1=$(cpu_ticks "$SPID")
    kill -- "-$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    line=$(grep -E '^[0-9]+ connections in [0-9]+ real seconds' <<<"$out" | tail -1)
    n=$(awk '{print $1}' <<<"$line")
    secs=$(awk '{print $4}' <<<"$line")
    bytes=$(awk '{print $7}' <<<"$line")
    if [ -z "$n" ] || [ "$n" = 0 ]; then
      echo "tls.sh: s_time made no connection to $s" >&2; tail -3 <<<"$out" >&2; exit 1
    fi
    us=$(python3 -c "print(f'{($t1-$t0)/$HZ*1e6/$n:.1f}')")
    RPS[$s]+="$(python3 -c "print($n/$secs)") "
    CPU[$s]+="$us "
    printf 'round %d %-6s %6d handshakes in %ss  %7s us CPU/handshake  (%s bytes read each)\n' \
      "$r" "$s" "$n" "$secs" "$us" "$bytes"
  done
done
summary handshake handshake
