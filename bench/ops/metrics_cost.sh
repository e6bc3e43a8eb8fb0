#!/usr/bin/env bash
# What --metrics (and --health) cost on the plain keep-alive path: `fibra hello --workers 1`
# with and without them, alternating, ROUNDS rounds; server on CPU 0, `wrk -t1 -c256` on CPU
# 1 (1 s warm-up, 3 s measured) on /plaintext. Prints per run the requests, the server's CPU
# µs per request (user+system ticks from /proc/PID/stat over the measured run), req/s, and
# whether wrk reported socket errors or non-2xx responses (bad_lines, must be 0); with
# --metrics, the server's own request count.
#
#   bench/ops/metrics_cost.sh [ROUNDS]      (default 6; run it under /tmp/quiet.sh or alone)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
ROUNDS=${1:-6}
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
F="$ROOT/target/release/fibra"
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
for round in $(seq 1 "$ROUNDS"); do
  for mode in plain metrics; do
    extra=()
    [ $mode = metrics ] && extra=(--metrics /metrics --health /healthz)
    taskset -c 0 "$F" hello --port 18590 --workers 1 "${extra[@]}" >/dev/null 2>&1 &
    P=$!
    sleep 0.5
    taskset -c 1 wrk -t1 -c256 -d1s http://127.0.0.1:18590/plaintext >/dev/null 2>&1
    t0=$(ticks $P)
    out=$(taskset -c 1 wrk -t1 -c256 -d3s http://127.0.0.1:18590/plaintext 2>&1)
    t1=$(ticks $P)
    reqs=$(echo "$out" | awk '/requests in/{print $1}')
    bad=$(echo "$out" | grep -cE "Non-2xx|Socket errors" || true)
    echo "$round $mode reqs=$reqs cpu_us_per_req=$(echo "($t1-$t0)*10000/$reqs" | bc -l | cut -c1-5)" \
      "rps=$(echo "$out" | awk '/Requests\/sec/{print $2}') bad_lines=$bad"
    [ $mode = metrics ] && curl -s http://127.0.0.1:18590/metrics | grep 'class="2xx"' | sed 's/^/  /'
    kill $P
    wait $P 2>/dev/null || true
  done
done
