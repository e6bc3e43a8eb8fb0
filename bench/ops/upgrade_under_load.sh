#!/usr/bin/env bash
# Zero-downtime binary upgrade under load: `wrk -c50` runs against `fibra hello` while the
# server gets SIGUSR2 twice (each time it starts its binary again, hands over the listening
# socket and drains). Passes with 0 socket errors, 0 non-2xx responses, and one fibra process
# left serving afterwards.
#
#   bench/ops/upgrade_under_load.sh [SECONDS] [WORKERS]     (defaults: 12 s, 1 worker)
#
# Server pinned to CPU 0, wrk (1 thread, 50 connections, /plaintext) to CPU 1; the upgrades
# at 1/3 and 2/3 of the run. Needs wrk; builds fibra (release) unless NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SECS=${1:-12}
WORKERS=${2:-1}
PORT=18380
command -v wrk >/dev/null || { echo "upgrade_under_load.sh: wrk is missing" >&2; exit 2; }
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
FIBRA="$ROOT/target/release/fibra"
RUN="$(mktemp -d)"
cleanup() {
  for p in $(pgrep -f "^$FIBRA hello --port $PORT" || true); do kill "$p" 2>/dev/null || true; done
  # Not children of this script once upgraded: wait (at most 10 s) until they are gone.
  for _ in $(seq 1 200); do pgrep -f "^$FIBRA hello --port $PORT" >/dev/null || break; sleep 0.05; done
  rm -rf "$RUN"
}
trap cleanup EXIT

taskset -c 0 "$FIBRA" hello --port $PORT --workers "$WORKERS" --pid-file "$RUN/pid" >"$RUN/out" 2>"$RUN/err" &
for _ in $(seq 1 100); do [ -s "$RUN/pid" ] && break; sleep 0.05; done
P0=$(cat "$RUN/pid")
echo "server pid $P0"

taskset -c 1 wrk -t1 -c50 -d"${SECS}s" --latency "http://127.0.0.1:$PORT/plaintext" >"$RUN/wrk" 2>&1 &
WRK=$!
upgrade() {
  local old
  old=$(cat "$RUN/pid")
  kill -USR2 "$old"
  for _ in $(seq 1 200); do
    [ "$(cat "$RUN/pid" 2>/dev/null)" != "$old" ] && [ -s "$RUN/pid" ] && break
    sleep 0.05
  done
  echo "SIGUSR2 to $old: new pid $(cat "$RUN/pid")"
}
sleep "$(echo "$SECS / 3" | bc -l)"
upgrade
sleep "$(echo "$SECS / 3" | bc -l)"
upgrade
wait "$WRK"
sleep 2 # the last old process drains (1 s idle grace) and exits
cat "$RUN/wrk"
left=$(pgrep -f "^$FIBRA hello --port $PORT" | wc -l)
echo "fibra processes left: $left (pid file: $(cat "$RUN/pid"))"
echo "server stderr:"; sed 's/^/  /' "$RUN/err"
fail=0
grep -q "Socket errors" "$RUN/wrk" && { echo "FAIL: socket errors"; fail=1; }
grep -q "Non-2xx" "$RUN/wrk" && { echo "FAIL: non-2xx responses"; fail=1; }
[ "$left" = 1 ] || { echo "FAIL: $left processes left"; fail=1; }
[ "$P0" != "$(cat "$RUN/pid")" ] || { echo "FAIL: no upgrade happened"; fail=1; }
[ "$fail" = 0 ] && echo PASS || exit 1
