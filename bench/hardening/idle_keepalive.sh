#!/usr/bin/env bash
# Many concurrent idle keep-alive connections on ONE worker: the client (a separate process)
# opens N connections, sends one request on each, leaves them idle HOLD seconds, then sends a
# second request on each; every one must be answered both times. Reports the server's RSS
# per idle connection. N defaults to 19,900: this machine's hard fd limit is 20,000 per
# process (no CAP_SYS_RESOURCE to raise it), and the server needs one fd per connection.
#
# usage: bench/hardening/idle_keepalive.sh [N] [HOLD]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
N=${1:-19900}
HOLD=${2:-15}
build
PORT=$(free_port)
trap 'stop ${SPID:-0}' EXIT
LIMIT=$(ulimit -Hn)
prlimit --nofile="$LIMIT" "$HSERVER" --port "$PORT" --workers 1 --max-connections 100000 \
  --idle-timeout 600 --header-timeout 600 > "$OUT/idle-server.log" 2>&1 &
SPID=$!
wait_http "http://127.0.0.1:$PORT/plaintext"
sleep 1
( ulimit -n "$LIMIT"; python3 "$(dirname "$0")/idle_client.py" "$PORT" "$N" "$SPID" "$HOLD" ) \
  | tee "$OUT/idle_keepalive.json"
log "server threads: $(ls /proc/$SPID/task | wc -l), fds: $(fd_count $SPID)"
