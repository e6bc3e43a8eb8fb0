#!/usr/bin/env bash
# Graceful shutdown under load: `fibra bench -k -c 64` runs against the hardening server
# (1 worker; it counts handler calls and prints `handled N` after its graceful shutdown);
# SIGTERM arrives mid-run. No accepted request may be lost: every request the handler ran
# must have reached the client as a complete response, i.e. handled == responses received.
# Requests the client had sent on connections the server closed while idle were never read:
# they show up as the client's `closed` errors, not as lost responses. Repeated ROUNDS times.
#
# usage: bench/hardening/graceful_shutdown.sh [ROUNDS]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-5}
build
: > "$OUT/graceful.txt"
for round in $(seq "$ROUNDS"); do
  PORT=$(free_port)
  "$HSERVER" --port "$PORT" --workers 1 --grace 5 > "$OUT/graceful-server.log" 2>&1 &
  SPID=$!
  trap 'stop ${SPID:-0}' EXIT
  wait_http "http://127.0.0.1:$PORT/plaintext"
  "$FIBRA" bench -d 6s -c 64 -k --timeout 10 --json "http://127.0.0.1:$PORT/plaintext" \
    > "$OUT/graceful-bench.json" 2>/dev/null &
  BPID=$!
  sleep 2
  kill -TERM "$SPID"
  wait "$SPID" || true
  wait "$BPID" || true
  HANDLED=$(awk '/^handled/ {print $2}' "$OUT/graceful-server.log")
  # 1 request of wait_http's probe was handled too
  python3 - "$OUT/graceful-bench.json" "$HANDLED" "$round" <<'PY' | tee -a "$OUT/graceful.txt"
import json, sys
r = json.load(open(sys.argv[1]))
handled = int(sys.argv[2]) - 1
got = r["status"]["2xx"]
errs = {k: v["count"] for k, v in r["errors"].items() if v["count"]}
verdict = "OK" if got == handled else "LOST %d" % (handled - got)
print(f"round {sys.argv[3]}: handler ran {handled}, client got {got} complete responses, "
      f"client errors {errs or 'none'}: {verdict}")
PY
done
! grep -q LOST "$OUT/graceful.txt"
