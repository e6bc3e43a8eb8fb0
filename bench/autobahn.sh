#!/usr/bin/env bash
# The Autobahn TestSuite's WebSocket cases against `fibra hello`'s /ws echo, run by kosoku
# (PyPI; Autobahn's case files in a native runner). The compression groups (12.*, 13.*) are
# left out: permessage-deflate is not implemented. Prints kosoku's verdict and the count of
# each behaviour (OK, NON-STRICT, INFORMATIONAL, FAILED) from its reports.
#
#   bench/autobahn.sh          (makes a venv in bench/target/kosoku-venv on first use)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$ROOT/bench/target/kosoku-venv"
if [ ! -x "$VENV/bin/kosoku" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q kosoku
fi
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
OUT="$(mktemp -d)"
"$ROOT/target/release/fibra" hello --workers 1 --port "$PORT" >/dev/null 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null || true; rm -rf "$OUT"' EXIT
sleep 0.5
status=0
"$VENV/bin/kosoku" -m fuzzingclient -x '12.*' -x '13.*' -p 2 -o "$OUT" "ws://127.0.0.1:$PORT/ws" || status=$?
python3 - "$OUT" <<'PY'
import collections, glob, json, sys
count = collections.Counter()
for path in glob.glob(sys.argv[1] + "/*.json"):
    for cases in json.load(open(path)).values():
        if isinstance(cases, dict):
            for case, r in cases.items():
                if isinstance(r, dict) and "behavior" in r:
                    count[r["behavior"]] += 1
                    if r["behavior"] not in ("OK", "INFORMATIONAL"):
                        print(f"  {case}: {r['behavior']} (close: {r.get('behaviorClose')})")
print("behaviours:", dict(count))
PY
exit $status
