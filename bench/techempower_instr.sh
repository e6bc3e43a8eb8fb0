#!/usr/bin/env bash
# Instructions per request of two builds of the `techempower` example, side by side, against
# a throw-away PostgreSQL cluster (bench/lib/pg_cluster.sh): the deterministic companion of
# `BASELINE=OLD bench/techempower.sh`, whose CPU figures swing by ±5 % a round.
#
#   bench/techempower_instr.sh OLD NEW [ROUNDS] [TESTS...]     tests: db fortunes (default),
#                                                              queries, updates, json, plaintext
#   bench/techempower_instr.sh /tmp/techempower-old target/release/examples/techempower 2
#
# Each server (one worker, one pool connection, CPU 0) runs under `valgrind --tool=cachegrind`
# (user-space instructions; the kernel and PostgreSQL are not counted); h2load --h1 -t1 -c16
# -n 20000 on CPU 1 with the cluster. Every response must be 2xx. Prints instructions per
# request (the process's total, start-up included, ÷ 20,000) and new/old per round.
# Needs valgrind, h2load, curl, taskset and PostgreSQL.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OLD=${1:?usage: techempower_instr.sh OLD NEW [ROUNDS] [TESTS...]}
NEW=${2:?usage: techempower_instr.sh OLD NEW [ROUNDS] [TESTS...]}
ROUNDS=${3:-1}
shift $(( $# < 3 ? $# : 3 ))
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=(db fortunes)
N=20000
for tool in valgrind h2load curl taskset; do
  command -v "$tool" >/dev/null || { echo "techempower_instr.sh: $tool is missing" >&2; exit 2; }
done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$PGBIN/initdb" ] || { echo "techempower_instr.sh: PostgreSQL is not installed" >&2; exit 2; }

source "$ROOT/bench/lib/measure.sh"
source "$ROOT/bench/lib/pg_cluster.sh"
for t in "${TESTS[@]}"; do tfb_path "$t" >/dev/null; done
pg_run_dir
pg_cluster_start

run() { # BINARY TEST -> instructions per request
  local bin=$1 port out="$RUN/cg.$RANDOM"
  port=$(free_port)
  setsid taskset -c 0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out" \
    "$bin" --addr 127.0.0.1 --port "$port" --workers 1 --pool-size 1 --database-url "$URL" \
    >"$RUN/server.log" 2>&1 &
  local vg=$!
  PIDS+=("$vg")
  local up=0
  for _ in $(seq 300); do
    curl -sf "http://127.0.0.1:$port/json" >/dev/null 2>&1 && { up=1; break; }
    sleep 0.1
  done
  [ $up = 1 ] || { echo "techempower_instr.sh: $bin did not come up" >&2; cat "$RUN/server.log" >&2; exit 1; }
  local log
  log=$(taskset -c 1 h2load --h1 -t1 -c16 -n $N "http://127.0.0.1:$port$(tfb_path "$2")" 2>&1)
  if ! grep -q "^requests: $N total, $N started, $N done, $N succeeded" <<<"$log" \
     || ! grep -q "status codes: $N 2xx" <<<"$log"; then
    echo "$log" >&2; exit 1
  fi
  kill -TERM "$vg"; wait "$vg" 2>/dev/null || true
  awk -v n=$N '/^summary:/ {printf "%.1f", $2 / n}' "$out"
}

printf '%-10s %5s %12s %12s %8s\n' test round old new new/old
for round in $(seq "$ROUNDS"); do
  for t in "${TESTS[@]}"; do
    o=$(run "$OLD" "$t")
    n=$(run "$NEW" "$t")
    printf '%-10s %5s %12s %12s %8s\n' "$t" "$round" "$o" "$n" "$(awk -v o="$o" -v n="$n" 'BEGIN {printf "%.3f", n / o}')"
  done
done
