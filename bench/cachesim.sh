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
# geometry: with a tiny one (2048,2,64) its misses approximate the code lines a request touches. Deterministic enough to compare builds where
# wall-clock runs on a shared machine are not (counts move by ~1 % between runs).
set -euo pipefail

wrk_args=()
while [[ $# -gt 0 && "$1" != "--" ]]; do
    wrk_args+=("$1")
    shift
done
[[ $# -gt 1 ]] || { echo "usage: $0 [WRK_ARGS...] -- SERVER_COMMAND..." >&2; exit 2; }
shift
server=("$@")
port="${server[-1]}"
path="${CACHESIM_PATH:-/plaintext}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --I1="${CACHESIM_I1:-32768,8,64}" \
    --LL=524288,8,64 --cachegrind-out-file="$out/cg.out" "${server[@]}" \
    >"$out/server.log" 2>&1 &
vg=$!
# Wait for the port (valgrind start-up is slow).
for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.2
done
requests=$(taskset -c 1 wrk -t1 -d8s "${wrk_args[@]}" "http://127.0.0.1:$port$path" |
    awk '/requests in/ {print $1}')
kill -TERM "$vg"
wait "$vg" || true
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
