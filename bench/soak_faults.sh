#!/usr/bin/env bash
# Soak with faults: `fibra serve` (files, two proxied `fibra hello` upstreams, TLS, HTTP/2,
# --health, --metrics) and the `techempower` example on a throw-away PostgreSQL, under a steady
# mixed load at about 70 % of serve's capacity, while upstreams are killed, PostgreSQL
# restarts, clients reset and flood, EMFILE is hit, SIGHUP and SIGUSR2 arrive — on a seeded
# schedule. Records every 10 s, checks the goals, exits non-zero when one is missed, and
# leaves nothing running. `fibra serve` on CPU 0, everything else on CPU 1.
#
# usage: bench/soak_faults.sh [MINUTES] [SEED]
#   MINUTES  30 by default; 5 or less is the quick mode: every fault once, statuses and
#            recovery checked (not growth or latency)
#   SEED     the fault schedule's seed (1)
# Results: target/soak-results/<date>-<minutes>min/ (summary.md, run.json, soak.png, logs/).
# NO_BUILD=1 skips the release builds.
set -euo pipefail
MINUTES=${1:-30}
SEED=${2:-1}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

need_apt() {  # need_apt COMMAND PACKAGE: installs PACKAGE when COMMAND is missing
  command -v "$1" >/dev/null 2>&1 && return 0
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2") >/dev/null
}
need_apt h2load nghttp2-client
need_apt openssl openssl
need_apt ss iproute2
need_apt prlimit util-linux
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null
fi
PGBIN=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")

VENV="$ROOT/target/soak-venv"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q -r bench/soak/requirements.txt matplotlib

if [ "${NO_BUILD:-0}" != 1 ]; then
  cargo build --release -q -p fibra-cli
  cargo build --release -q -p fibra-postgres --example techempower
fi

OUT="$ROOT/target/soak-results/$(date +%Y%m%d-%H%M%S)-${MINUTES}min"
exec "$VENV/bin/python" bench/soak/run.py --minutes "$MINUTES" --seed "$SEED" --out "$OUT" \
  --fibra "$ROOT/target/release/fibra" \
  --techempower "$ROOT/target/release/examples/techempower" \
  --python "$VENV/bin/python" --pgbin "$PGBIN" --root "$ROOT" \
  --command "bench/soak_faults.sh $MINUTES $SEED"
