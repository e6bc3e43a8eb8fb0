#!/usr/bin/env bash
# RSS of `fibra serve` (one worker) around bursts of half-sent requests, with transparent huge
# pages off (fibra's default) and allowed (MIMALLOC_ALLOW_THP=1): the soak's RSS steps were
# huge pages of mimalloc's heap, mostly zeros (docs/lab/soak-rss-2026-11-30.md).
#
# usage: bench/hardening/burst_rss.sh [ROUNDS] [CONNS]     (3 and 2,000 by default)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-3}
CONNS=${2:-2000}
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
SPID=0
trap 'stop $SPID' EXIT
for thp in off allowed; do
  PORT=$(free_port)
  if [ "$thp" = allowed ]; then thp_env=(MIMALLOC_ALLOW_THP=1); else thp_env=(-u MIMALLOC_ALLOW_THP); fi
  env "${thp_env[@]}" taskset -c 0 "$FIBRA" serve "$ROOT/bench/static" --workers 1 --port "$PORT" >/dev/null 2>&1 &
  SPID=$!
  wait_http "http://127.0.0.1:$PORT/index.html"
  echo "huge pages $thp ($(grep THP_enabled "/proc/$SPID/status" | tr -s '\t' ' '))"
  taskset -c 1 python3 "$(dirname "$0")/burst_client.py" "$PORT" "$SPID" "$ROUNDS" "$CONNS"
  stop $SPID
  SPID=0
done
