#!/usr/bin/env bash
# PROXY protocol behind a real HAProxy: `fibra serve --proxy-protocol --access-log` behind
# HAProxy (Debian's package) with `send-proxy-v2` on one backend and `send-proxy` (v1) on
# another. curl connects to HAProxy from 127.0.0.2 (a loopback address HAProxy itself does
# not use); the access log must show 127.0.0.2, not HAProxy's address (127.0.0.1). A
# client that skips HAProxy and connects to fibra directly (no header) gets its connection
# closed without an answer.
#
#   bench/ops/haproxy_proxy_protocol.sh        (ports 18281-18284)
#
# Needs haproxy and curl; builds fibra unless NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
for tool in haproxy curl; do
  command -v "$tool" >/dev/null || { echo "haproxy_proxy_protocol.sh: $tool is missing" >&2; exit 2; }
done
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
FIBRA="$ROOT/target/release/fibra"
RUN="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$RUN"
}
trap cleanup EXIT

mkdir "$RUN/site"
echo "behind haproxy" >"$RUN/site/index.html"
"$FIBRA" serve "$RUN/site" --port 18283 --workers 1 --proxy-protocol --access-log "$RUN/access.log" >/dev/null &
PIDS+=($!)
cat >"$RUN/haproxy.cfg" <<CFG
global
    maxconn 1000
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend v2
    bind 127.0.0.1:18281
    default_backend fibra_v2
frontend v1
    bind 127.0.0.1:18282
    default_backend fibra_v1
backend fibra_v2
    server s1 127.0.0.1:18283 send-proxy-v2
backend fibra_v1
    server s1 127.0.0.1:18283 send-proxy
CFG
haproxy -f "$RUN/haproxy.cfg" -db >"$RUN/haproxy.out" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do
  curl -s -o /dev/null --max-time 1 http://127.0.0.1:18281/ && break
  sleep 0.1
done

fail=0
for port in 18281 18282; do
  out=$(curl -s --interface 127.0.0.2 -w '\n%{local_ip}:%{local_port}' "http://127.0.0.1:$port/?via=$port")
  body=$(echo "$out" | head -1)
  client=$(echo "$out" | tail -1)
  sleep 1.5 # the access log is flushed once a second
  entry=$(grep "GET /?via=$port " "$RUN/access.log" | head -1)
  echo "via $port: curl from $client got '$body'; access log: $entry"
  [ "$body" = "behind haproxy" ] || fail=1
  # The combined format logs the address without the port.
  case "$entry" in
    "${client%:*} "*) ;;
    *) echo "FAIL: the access log does not start with the client's address ${client%:*}" >&2; fail=1 ;;
  esac
done
# Straight to fibra, without a header: closed, nothing answered (curl: empty reply, 52).
set +e
direct=$(curl -s --max-time 10 -w '%{http_code}' http://127.0.0.1:18283/)
rc=$?
set -e
echo "direct, without a PROXY header: curl exit $rc, status '$direct'"
[ "$rc" = 52 ] || fail=1
[ "$fail" = 0 ] && echo PASS || { echo FAIL; exit 1; }
