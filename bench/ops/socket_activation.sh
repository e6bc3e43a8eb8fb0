#!/usr/bin/env bash
# systemd socket activation without systemd: `systemd-socket-activate` listens, waits for the
# first connection, then starts `fibra hello` (or `fibra serve`) with the socket as fd 3,
# LISTEN_FDS=1 and LISTEN_PID set. The first request, queued before the server existed, is
# answered; so are the next ones; the server announces the activation socket's address.
#
#   bench/ops/socket_activation.sh [PORT]      (default 18180)
#
# Needs systemd-socket-activate (Debian: systemd) and curl; builds fibra unless NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PORT=${1:-18180}
for tool in systemd-socket-activate curl; do
  command -v "$tool" >/dev/null || { echo "socket_activation.sh: $tool is missing" >&2; exit 2; }
done
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
FIBRA="$ROOT/target/release/fibra"
RUN="$(mktemp -d)"
SA=""
cleanup() {
  [ -n "$SA" ] && kill "$SA" 2>/dev/null || true
  rm -rf "$RUN"
}
trap cleanup EXIT

systemd-socket-activate -l "127.0.0.1:$PORT" "$FIBRA" hello --workers 2 >"$RUN/out" 2>"$RUN/err" &
SA=$!
sleep 0.5
if pgrep -f "^$FIBRA hello" >/dev/null; then
  echo "FAIL: fibra started before the first connection" >&2; exit 1
fi
first=$(curl -s --max-time 10 "http://127.0.0.1:$PORT/plaintext")
[ "$first" = "Hello, World!" ] || { echo "FAIL: first request got '$first'" >&2; cat "$RUN/err" >&2; exit 1; }
ok=0
for _ in $(seq 1 200); do
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/json")
  [ "$code" = 200 ] && ok=$((ok + 1))
done
echo "stderr of systemd-socket-activate:"; sed 's/^/  /' "$RUN/err"
echo "fibra printed: $(head -1 "$RUN/out")"
echo "first request (queued before fibra started): $first"
echo "then $ok/200 requests answered 200"
grep -q "http://127.0.0.1:$PORT/" "$RUN/out" || { echo "FAIL: not serving on the activation socket" >&2; exit 1; }
[ "$ok" = 200 ] || { echo "FAIL" >&2; exit 1; }
echo PASS
