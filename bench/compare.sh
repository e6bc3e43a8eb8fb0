#!/usr/bin/env bash
# fibra side-by-side benchmark harness: builds the C pong reference, fibra and the peer servers,
# runs each scenario with the server pinned to CPU 0 and the client pinned to CPU 1, and writes
# docs/BENCHMARKS.generated.md + docs/bench.png. The logic lives in bench/harness (Python 3,
# standard library only). See bench/README.md; `bench/compare.sh --help` lists the options.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v python3 >/dev/null 2>&1; then
    echo "bench/compare.sh needs python3" >&2
    exit 1
fi
export PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m harness "$@"
