#!/usr/bin/env bash
# Soak: `fibra bench` against `fibra hello` (1 worker): 1,000,000 keep-alive requests, then
# 9,000,000 more on the same server (10,000,000 in all), then 1,000,000 without keep-alive.
# Each run must end with 0 failed and 0 errored; the server's RSS after 10M must be within 5%
# of its RSS after 1M. Server on CPU 0, client on CPU 1.
#
# usage: bench/hardening/soak.sh [KEEPALIVE_TOTAL] [CLOSE_TOTAL] [CONNECTIONS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
TOTAL=${1:-10000000}
CLOSE_TOTAL=${2:-1000000}
C=${3:-64}
FIRST=$((TOTAL / 10))
build
PORT=$(free_port)
trap 'stop ${SPID:-0}' EXIT
taskset -c 0 "$FIBRA" hello --port "$PORT" --workers 1 > "$OUT/soak-server.log" 2>&1 &
SPID=$!
URL="http://127.0.0.1:$PORT/plaintext"
wait_http "$URL"
RSS0=$(rss_kb $SPID)

# run NAME N ARGS...: one bench run; prints "failed errored succeeded req/s"
run() {
  local name=$1 n=$2; shift 2
  log "$name: fibra bench -n $n -c $C $* $URL"
  taskset -c 1 "$FIBRA" bench -n "$n" -c "$C" --timeout 10 --json "$@" "$URL" > "$OUT/soak-$name.json"
  python3 - "$OUT/soak-$name.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
q = r["requests"]
errs = {k: v["count"] for k, v in r["errors"].items() if v["count"]}
print(q["failed"], q["errored"], q["succeeded"], round(r["requests_per_sec"]), errs or "")
PY
}

T0=$(cpu_ticks $SPID)
R1=$(run keepalive-1 "$FIRST" -k);          RSS1=$(rss_kb $SPID)
R2=$(run keepalive-2 $((TOTAL - FIRST)) -k); RSS10=$(rss_kb $SPID)
R3=$(run close "$CLOSE_TOTAL");             RSS_END=$(rss_kb $SPID)
T1=$(cpu_ticks $SPID)
{
  echo "fibra hello, 1 worker, $C connections; columns: failed errored succeeded req/s"
  echo "keep-alive, first $FIRST:        $R1   RSS after: $RSS1 KiB (at start: $RSS0 KiB)"
  echo "keep-alive, next $((TOTAL - FIRST)):      $R2   RSS after: $RSS10 KiB"
  echo "no keep-alive, $CLOSE_TOTAL:      $R3   RSS after: $RSS_END KiB"
  python3 -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); print(f'RSS after {sys.argv[3]} vs after {sys.argv[4]}: {100 * (b - a) / a:+.2f}%')" \
    "$RSS1" "$RSS10" "$FIRST" "$TOTAL"
  echo "server CPU: $((T1 - T0)) ticks ($(getconf CLK_TCK)/s)"
} | tee "$OUT/soak.txt"
