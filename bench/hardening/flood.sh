#!/usr/bin/env bash
# Connection flood beyond the fd limit: `fibra hello` (1 worker) under
# `prlimit --nofile=256`, a client opening 2,000 connections at once (one GET each) and
# holding them WAIT seconds. Then: the server must be alive, its CPU near idle once the flood
# stops (ticks over 3 s), and a normal request must be served within a second.
#
# usage: bench/hardening/flood.sh [CONNECTIONS] [WAIT]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-2000}
WAIT=${2:-15}
build
PORT=$(free_port)
trap 'stop ${SPID:-0}' EXIT
prlimit --nofile=256 "$FIBRA" hello --port "$PORT" --workers 1 > "$OUT/flood-server.log" 2>&1 &
SPID=$!
wait_http "http://127.0.0.1:$PORT/plaintext"
log "server pid $SPID, fd limit $(prlimit --pid "$SPID" --nofile --output SOFT --noheadings)"

T0=$(cpu_ticks $SPID)
# the server's fd count halfway through (at the limit if accept hit EMFILE)
( sleep $((WAIT / 2)); fd_count $SPID > "$OUT/flood-mid-fds.txt" ) &
SAMPLER=$!
( ulimit -n 8192; python3 "$(dirname "$0")/flood_client.py" "$PORT" "$N" "$WAIT" ) \
  > "$OUT/flood-client.json"
T1=$(cpu_ticks $SPID)
wait $SAMPLER
log "flood: $(cat "$OUT/flood-client.json")"
log "server fds right after the flood: $(fd_count $SPID)"
# Service must resume within a second of the flood's end.
START=$(date +%s.%N)
CODE=000
for _ in $(seq 10); do
  CODE=$(curl -s -o /dev/null --max-time 1 -w '%{http_code}' "http://127.0.0.1:$PORT/plaintext" || true)
  [ "$CODE" = 200 ] && break
  sleep 0.1
done
RESUME=$(echo "$(date +%s.%N) - $START" | bc)
sleep 1
I0=$(cpu_ticks $SPID); sleep 3; I1=$(cpu_ticks $SPID)
ALIVE=$(kill -0 $SPID 2>/dev/null && echo yes || echo no)
HZ=$(getconf CLK_TCK)
{
  echo "flood: $N connections against nofile=256 -> $(cat "$OUT/flood-client.json")"
  echo "server alive: $ALIVE; CPU during flood: $((T1 - T0)) ticks; idle CPU over 3 s after: $((I1 - I0)) ticks (of $((3 * HZ)) for one busy core)"
  echo "first request after the flood: HTTP $CODE after ${RESUME}s; server fds now: $(fd_count $SPID)"
  echo "server fds halfway through the flood: $(cat "$OUT/flood-mid-fds.txt") (limit 256)"
} | tee "$OUT/flood.txt"
[ "$ALIVE" = yes ] && [ "$CODE" = 200 ]
