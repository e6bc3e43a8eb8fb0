#!/usr/bin/env bash
# fibra-web against a hand-written `match` and against axum 0.8 + tokio, side by side in one
# run (bench/web/run.py does the measuring; its docstring says how).
#
#   bench/web.sh [ROUNDS] [DURATION]        defaults: 3 rounds, 5 s per measurement
#
#   router: GET /plaintext and /json through a Router with 50 more routes (`bench_app --mode
#           router`) against the same answers from a `match` on the path (`--mode match`);
#           goal: CPU per request <= 1.03x.
#   app:    the same app on fibra-web (`--mode app`: request-id + CORS middleware) and on axum
#           0.8 + tower-http on a current-thread tokio runtime (bench/peers/axum-web):
#           /plaintext, /json, /users/42?fields=a,b, POST /echo (1 KiB JSON, bench/lua);
#           goals: CPU per request <= 0.75x axum's, req/s >= 1.2x.
#   middleware (only with ONLY=...,middleware): the fibra-web app against itself without its
#           two middlewares (`--mode app-bare`): what request-id + CORS cost.
#
# One server worker on CPU 0, wrk (-t1 -c256, keep-alive) on CPU 1, servers alternating in
# every round, medians of the per-round ratios. Every server/route is checked with curl first
# (status, body bytes, content type, request-id and CORS headers); a non-2xx response or a
# socket error in any run fails the script. Prints a markdown table of req/s, server CPU
# µs/request (user+system from /proc/PID/stat ÷ requests), its user part, CPU % and ratios.
#
# Environment: NO_BUILD=1 (use what is built), CACHESIM=0 (skip the instructions-per-request
# runs under valgrind, ~15 s each; on by default), ONLY=router,app,middleware (any of them;
# default router,app), ROUTES=plaintext,json,..., CONNS=256, CARGO_TARGET_DIR (where the
# example is built; default target/),
# CLIENT=fibra-bench (load with `fibra bench -k -t1` instead of wrk: a cheaper client, so a
# one-worker server is more often the limit and req/s compares servers; builds fibra-cli
# unless FIBRA=path/to/fibra).
# Needs wrk, curl, taskset, python3, cargo, and valgrind for CACHESIM.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS=${1:-3}
SECS=${2:-5}
for tool in wrk curl taskset python3 cargo; do
  command -v "$tool" >/dev/null || { echo "web.sh: $tool is missing" >&2; exit 2; }
done
CACHESIM=${CACHESIM:-1}
if [ "$CACHESIM" = 1 ] && ! command -v valgrind >/dev/null; then
  echo "web.sh: valgrind is missing (CACHESIM=0 skips the instruction counts)" >&2; exit 2
fi
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
PEER_DIR="$ROOT/bench/peers/axum-web"
if [ "${NO_BUILD:-0}" != 1 ]; then
  (cd "$ROOT" && cargo build --release -q -p fibra-web --example bench_app)
  (cd "$PEER_DIR" && cargo build --release -q --target-dir "$ROOT/bench/target/cargo")
fi
CLIENT=${CLIENT:-wrk}
if [ "$CLIENT" = fibra-bench ] && [ -z "${FIBRA:-}" ]; then
  [ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
  FIBRA="$TARGET/release/fibra"
fi
ARGS=(--bin "$TARGET/release/examples/bench_app" --axum "$ROOT/bench/target/cargo/release/bench-peer-axum-web"
      --rounds "$ROUNDS" --duration "$SECS" --conns "${CONNS:-256}" --only "${ONLY:-router,app}"
      --routes "${ROUTES:-}" --client "$CLIENT")
[ "$CLIENT" = fibra-bench ] && ARGS+=(--fibra "$FIBRA")
[ "$CACHESIM" = 1 ] && ARGS+=(--cachesim)
exec python3 "$ROOT/bench/web/run.py" "${ARGS[@]}"
