#!/usr/bin/env bash
# User-space instructions and simulated cache misses per request, for one server under wrk.
#
#   bench/cachesim.sh [WRK_ARGS...] -- SERVER_COMMAND...
#   bench/cachesim.sh -c256 -- target/release/fibra hello --workers 1 --port 18095
#   bench/cachesim.sh -c256 -- bench/target/pong 18095
#
# The server runs under `valgrind --tool=cachegrind --cache-sim=yes` with 32 KiB L1 caches and
# a 512 KiB last level (one core's share of this machine's caches); wrk (pinned to CPU 1,
# 8 seconds) loads http://127.0.0.1:PORT/PATH, where PORT is the server command's last
# argument and PATH is $CACHESIM_PATH (default /plaintext). Prints the totals divided by the
# requests wrk completed. The kernel is not simulated: these are the figures that differ
# between servers making the same system calls. CACHESIM_I1=SIZE,WAYS,LINE overrides the L1i
# geometry: with a tiny one (2048,2,64) its misses approximate the code lines a request touches.
# CACHESIM_D1 does the same for the L1d; with one fully associative set of 64 lines
# (CACHESIM_I1=4096,64,64 CACHESIM_D1=4096,64,64) the misses count the code and data lines a
# keep-alive wake-up touches beyond the 64 it used last, a proxy for what it refetches after
# the kernel's TCP path has run through L1. Deterministic enough to compare builds where
# wall-clock runs on a shared machine are not (counts move by ~1 % between runs).
# CACHESIM_OUT=FILE keeps cachegrind's output there, for `cg_annotate FILE` (where the
# misses are, by function and line; divide by the request count printed first).
set -euo pipefail

# shellcheck source=bench/load.sh
source "$(dirname "$0")/load.sh"
parse_load_args "$@"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

run_loaded 8 "${CACHESIM_PATH:-/plaintext}" --tool=cachegrind --cache-sim=yes \
    --D1="${CACHESIM_D1:-32768,8,64}" --I1="${CACHESIM_I1:-32768,8,64}" --LL=524288,8,64 \
    --cachegrind-out-file="$out/cg.out"
[[ -z ${CACHESIM_OUT:-} ]] || cp "$out/cg.out" "$CACHESIM_OUT"
python3 - "$requests" "$out/cg.out" <<'EOF'
import sys
requests = int(sys.argv[1])
events, totals = [], []
for line in open(sys.argv[2]):
    if line.startswith("events:"):
        events = line.split()[1:]
    elif line.startswith("summary:"):
        totals = [int(x) for x in line.split()[1:]]
names = {"Ir": "instructions", "I1mr": "L1i misses", "D1mr": "L1d read misses",
         "D1mw": "L1d write misses", "DLmr": "LL data read misses",
         "DLmw": "LL data write misses"}
print(f"requests {requests}")
for ev, total in zip(events, totals):
    if ev in names:
        print(f"{names[ev]:<22} {total / requests:10.1f} per request")
EOF
