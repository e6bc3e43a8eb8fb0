#!/usr/bin/env bash
# A headless Chromium page talks WebSocket to `fibra hello`'s /ws echo: a text message and a
# 1 MiB binary message come back intact, then a clean close with 1000. Prints what the page
# saw; exits non-zero unless it is exactly that.
#
#   bench/chromium_ws.sh      (needs chromium and python3 with the `websockets` package, e.g.
#                              in a venv: python3 -m venv v && v/bin/pip install websockets
#                              && PYTHON=v/bin/python bench/chromium_ws.sh)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON=${PYTHON:-python3}
command -v chromium >/dev/null || { echo "chromium_ws.sh: chromium is missing" >&2; exit 2; }
"$PYTHON" -c 'import websockets' 2>/dev/null || { echo "chromium_ws.sh: $PYTHON has no websockets package" >&2; exit 2; }
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
source "$ROOT/bench/lib/measure.sh"
PORT=$(free_port)
DEBUG=$(free_port)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
"$ROOT/target/release/fibra" hello --workers 1 --port "$PORT" >/dev/null 2>&1 &
PIDS+=($!)
chromium --headless=new --no-sandbox --disable-gpu --remote-debugging-port="$DEBUG" \
  about:blank >/dev/null 2>&1 &
PIDS+=($!)
GOT=$(timeout 60 "$PYTHON" "$ROOT/bench/ws/cdp_page_result.py" "$DEBUG" \
  "file://$ROOT/bench/ws/echo.html?port=$PORT")
echo "$GOT"
[ "$GOT" = "text:hello from chromium binary:1048576:true close:1000" ] || {
  echo "chromium_ws.sh: unexpected result" >&2; exit 1; }
echo "chromium_ws.sh: text, 1 MiB binary and close 1000 between Chromium and fibra hello /ws"
