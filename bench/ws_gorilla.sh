#!/usr/bin/env bash
# WebSocket echo, fibra hello's /ws against a gorilla/websocket echo server
# (bench/peers/gorilla, built here with the Go toolchain), side by side in one run.
#
#   bench/ws_gorilla.sh [ROUNDS] [MESSAGES] [SIZE]   (defaults: 5 rounds, 1,000,000 messages,
#                                                     64-byte messages)
#
# One server worker (fibra --workers 1; Go GOMAXPROCS=1) pinned to CPU 0; the load,
# `fibra bench --ws -t 1 -c 256` (one message in flight per connection, each echo checked byte
# for byte), pinned to CPU 1. Each measured run is preceded by a 100,000-message warm-up on the
# same server process. Servers alternate; prints per run and the medians: messages/s, server
# CPU µs per message (user+system of the server's process group over the measured run, from
# /proc/PID/stat), and the ratios fibra ÷ gorilla. Fails unless every message was echoed.
#
# With PONG=1 a third server joins each round: bench/pong/ws_pong.c, a minimal C epoll echo
# server (one read and one write per message), the floor any server's CPU per message meets.
#
# Needs go and taskset (and cc with libcrypto for PONG=1); builds fibra (release) unless
# NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS=${1:-5}
MESSAGES=${2:-1000000}
SIZE=${3:-64}
CONNS=256
for tool in go taskset python3; do
  command -v "$tool" >/dev/null || { echo "ws_gorilla.sh: $tool is missing" >&2; exit 2; }
done
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
FIBRA="$ROOT/target/release/fibra"
mkdir -p "$ROOT/bench/target"
GORILLA="$ROOT/bench/target/gorilla-echo"
(cd "$ROOT/bench/peers/gorilla" && go build -o "$GORILLA" .)
SERVERS="fibra gorilla"
if [ "${PONG:-0}" = 1 ]; then
  WS_PONG="$ROOT/bench/target/ws_pong"
  cc -O2 -o "$WS_PONG" "$ROOT/bench/pong/ws_pong.c" -lcrypto
  SERVERS="fibra gorilla pong"
fi

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; done; }
trap cleanup EXIT

source "$ROOT/bench/lib/measure.sh"

start() { # NAME PORT -> sets SPID (process group leader)
  case $1 in
    fibra) setsid taskset -c 0 "$FIBRA" hello --workers 1 --port "$2" >/dev/null 2>&1 & ;;
    gorilla) GOMAXPROCS=1 setsid taskset -c 0 "$GORILLA" -addr "127.0.0.1:$2" >/dev/null 2>&1 & ;;
    pong) setsid taskset -c 0 "$WS_PONG" "$2" >/dev/null 2>&1 & ;;
  esac
  SPID=$!
  PIDS+=("$SPID")
  for _ in $(seq 100); do
    "$FIBRA" bench --ws -n 1 -c 1 --json "ws://127.0.0.1:$2/ws" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "ws_gorilla.sh: $1 did not come up" >&2; exit 1
}

load() { # URL N -> JSON summary of fibra bench --ws
  taskset -c 1 "$FIBRA" bench --ws --size "$SIZE" -t 1 -c $CONNS -n "$2" --timeout 30 --json "$1"
}

HZ=$(getconf CLK_TCK)
declare -A MPS CPU
for r in $(seq "$ROUNDS"); do
  for s in $SERVERS; do
    port=$(free_port)
    start "$s" "$port"
    url="ws://127.0.0.1:$port/ws"
    load "$url" 100000 >/dev/null
    t0=$(cpu_ticks "$SPID")
    out=$(load "$url" "$MESSAGES")
    t1=$(cpu_ticks "$SPID")
    kill -- "-$SPID" 2>/dev/null || true
    wait "$SPID" 2>/dev/null || true
    read -r ok mps p50 p99 < <(python3 -c 'import json,sys; v=json.load(sys.stdin)
print(v["requests"]["succeeded"], v["ws"]["messages_per_sec"], v["latency_us"]["p50"], v["latency_us"]["p99"])' <<<"$out")
    if [ "$ok" != "$MESSAGES" ]; then
      echo "ws_gorilla.sh: $s echoed $ok of $MESSAGES messages" >&2
      echo "$out" >&2
      exit 1
    fi
    us=$(python3 -c "print(f'{($t1-$t0)/$HZ*1e6/$MESSAGES:.2f}')")
    MPS[$s]+="$mps "
    CPU[$s]+="$us "
    printf 'round %d %-8s %9.0f messages/s  %6s us CPU/message  p50 %6.0f us  p99 %6.0f us  (all %s echoed)\n' \
      "$r" "$s" "$mps" "$us" "$p50" "$p99" "$ok"
  done
done

python3 - "${MPS[fibra]}" "${CPU[fibra]}" "${MPS[gorilla]}" "${CPU[gorilla]}" "${MPS[pong]:-}" "${CPU[pong]:-}" <<'PY'
import statistics as st, sys
fr, fc, gr, gc, pr, pc = ([float(x) for x in a.split()] for a in sys.argv[1:])
print(f"median  fibra   {st.median(fr):9.0f} messages/s {st.median(fc):6.2f} us CPU per message")
print(f"median  gorilla {st.median(gr):9.0f} messages/s {st.median(gc):6.2f} us CPU per message")
print(f"fibra / gorilla: messages/s {st.median(fr)/st.median(gr):.2f}, CPU per message {st.median(fc)/st.median(gc):.2f}"
      f" (per-round CPU ratios: {' '.join(f'{a/b:.2f}' for a, b in zip(fc, gc))})")
if pc:
    print(f"median  pong    {st.median(pr):9.0f} messages/s {st.median(pc):6.2f} us CPU per message")
    print(f"pong / gorilla: CPU per message {st.median(pc)/st.median(gc):.2f}"
          f" (per round: {' '.join(f'{a/b:.2f}' for a, b in zip(pc, gc))});"
          f" fibra / pong: {st.median(fc)/st.median(pc):.2f}")
PY
