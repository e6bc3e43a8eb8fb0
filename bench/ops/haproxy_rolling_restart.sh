#!/usr/bin/env bash
# Rolling restart behind HAProxy under load: two `fibra serve` instances behind HAProxy with
# deploy/haproxy/haproxy.cfg (health checks on --health /healthz), `wrk -c50` through
# HAProxy, and meanwhile each instance in turn is stopped (SIGTERM: 503 on /healthz for
# --drain-delay, then a graceful shutdown) and started again. Passes with 0 socket errors
# and 0 non-2xx responses, and requests served by both instances.
#
#   bench/ops/haproxy_rolling_restart.sh [SECONDS]     (default 20)
#
# Ports 18480 (HAProxy), 18481, 18482. Needs haproxy and wrk; builds fibra unless NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SECS=${1:-20}
for tool in haproxy wrk curl; do
  command -v "$tool" >/dev/null || { echo "haproxy_rolling_restart.sh: $tool is missing" >&2; exit 2; }
done
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
FIBRA="$ROOT/target/release/fibra"
RUN="$(mktemp -d)"
declare -A PID
HAPROXY=""
cleanup() {
  for p in "${PID[@]}" $HAPROXY; do kill "$p" 2>/dev/null || true; done
  # The instances drain for --drain-delay before they exit: wait, so none outlives the script.
  for p in "${PID[@]}" $HAPROXY; do wait "$p" 2>/dev/null || true; done
  rm -rf "$RUN"
}
trap cleanup EXIT

mkdir "$RUN/site"
head -c 2000 /dev/zero | tr '\0' x >"$RUN/site/index.html"
start() { # NAME PORT
  "$FIBRA" serve "$RUN/site" --port "$2" --workers 1 --health /healthz \
    --drain-delay 1 --grace 5 --access-log "$RUN/$1.log" >>"$RUN/$1.out" 2>&1 &
  PID[$1]=$!
  for _ in $(seq 1 100); do
    curl -sf -o /dev/null "http://127.0.0.1:$2/healthz" && return
    sleep 0.05
  done
  echo "instance $1 did not start" >&2; exit 1
}
start a 18481
start b 18482
sed -e 's/127.0.0.1:8080/127.0.0.1:18480/' -e 's/127.0.0.1:8081/127.0.0.1:18481/' \
    -e 's/127.0.0.1:8082/127.0.0.1:18482/' "$ROOT/deploy/haproxy/haproxy.cfg" >"$RUN/haproxy.cfg"
haproxy -f "$RUN/haproxy.cfg" -db >"$RUN/haproxy.out" 2>&1 &
HAPROXY=$!
for _ in $(seq 1 100); do curl -sf -o /dev/null http://127.0.0.1:18480/ && break; sleep 0.05; done
curl -sf -o /dev/null http://127.0.0.1:18480/ || { echo "HAProxy did not start:" >&2; cat "$RUN/haproxy.out" >&2; exit 1; }
sleep 1 # both servers seen up (rise 2 at 200 ms)

wrk -t1 -c50 -d"${SECS}s" http://127.0.0.1:18480/index.html >"$RUN/wrk" 2>&1 &
WRK=$!
restart() { # NAME PORT
  local t0=$SECONDS
  kill -TERM "${PID[$1]}"
  wait "${PID[$1]}" || true
  start "$1" "$2"
  echo "restarted $1 (stopped and serving again in $((SECONDS - t0)) s)"
}
sleep "$(echo "$SECS / 4" | bc -l)"
restart a 18481
sleep 2 # a seen up again before b goes down
restart b 18482
wrk_rc=0
wait "$WRK" || wrk_rc=$?
cat "$RUN/wrk"
sleep 1.5 # access logs flush once a second
served_a=$(cat "$RUN/a.log" | wc -l)
served_b=$(cat "$RUN/b.log" | wc -l)
echo "access log lines: a $served_a, b $served_b"
echo "instance output:"; cat "$RUN/a.out" "$RUN/b.out" | grep -v "^fibra serve: serving" | sed 's/^/  /'
fail=0
[ "$wrk_rc" = 0 ] && grep -q "requests in" "$RUN/wrk" || { echo "FAIL: wrk failed ($wrk_rc)"; fail=1; }
grep -q "Socket errors" "$RUN/wrk" && { echo "FAIL: socket errors"; fail=1; }
grep -q "Non-2xx" "$RUN/wrk" && { echo "FAIL: non-2xx responses"; fail=1; }
[ "$served_a" -gt 0 ] && [ "$served_b" -gt 0 ] || { echo "FAIL: one instance served nothing"; fail=1; }
[ "$fail" = 0 ] && echo PASS || exit 1
