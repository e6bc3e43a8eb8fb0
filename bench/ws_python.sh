#!/usr/bin/env bash
# Python `websockets` against `fibra hello`'s /ws echo: text, a 1 MiB binary message, a ping,
# and a clean close with 1000 (bench/ws/python_echo.py). Exits non-zero unless all pass.
#
#   bench/ws_python.sh      (makes a venv with `websockets` in bench/target/ws-venv on first
#                            use; PYTHON=... to use another interpreter that has it)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/bench/target/ws-venv"
if [ -z "${PYTHON:-}" ]; then
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import websockets' 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q websockets
  fi
  PYTHON="$VENV/bin/python"
fi
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ROOT/target/release/fibra" hello --workers 1 --port "$PORT" >/dev/null 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done
"$PYTHON" -c 'import websockets; print("websockets", websockets.__version__)'
timeout 60 "$PYTHON" "$ROOT/bench/ws/python_echo.py" "ws://127.0.0.1:$PORT/ws"
echo "ws_python.sh: text, 1 MiB binary, ping and close 1000 between websockets and fibra hello /ws"
