#!/usr/bin/env bash
# Splits a server's CPU time per pipelined request into a part paid per request and a part
# paid per batch (per read/write round trip), by measuring at several pipelining depths.
#
#   bench/depth.sh [DEPTHS] -- SERVER_COMMAND...
#   bench/depth.sh 4,16,64 -- target/release/fibra hello --workers 1 --port 18098
#   bench/depth.sh 4,16,64 -- bench/target/pong 18098
#
# The server runs pinned to CPU 0 and wrk (one thread, 256 connections, bench/lua/pipeline.lua)
# to CPU 1, 2 s of warm-up then 5 s measured per depth; PORT is the server command's last
# argument. For each depth it prints the server's user and system CPU µs per request (from
# /proc/PID/stat, all threads). Then it fits user = a + b / depth by least squares: `a` is
# user time per request, `b` user time per batch of `depth` requests. Timings on a shared
# machine drift: compare servers with runs made back to back, and repeat.
set -euo pipefail

depths=4,16,64
if [[ $# -gt 0 && "$1" != "--" ]]; then
    depths=$1
    shift
fi
[[ $# -gt 1 && "$1" == "--" ]] || { echo "usage: $0 [DEPTHS] -- SERVER_COMMAND..." >&2; exit 2; }
shift
server=("$@")
port="${server[-1]}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
url="http://127.0.0.1:$port/plaintext"
hz=$(getconf CLK_TCK)
# shellcheck source=bench/load.sh
source "$here/load.sh"

taskset -c 0 "${server[@]}" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
wait_port "$port" 50 0.1 || true

ticks() { awk '{print $14, $15}' "/proc/$pid/stat"; }
rows=()
for d in ${depths//,/ }; do
    taskset -c 1 wrk -t1 -c256 -d2s -s "$here/lua/pipeline.lua" "$url" -- "$d" >/dev/null
    read -r u0 s0 < <(ticks)
    requests=$(taskset -c 1 wrk -t1 -c256 -d5s -s "$here/lua/pipeline.lua" "$url" -- "$d" |
        awk '/requests in/ {print $1}')
    read -r u1 s1 < <(ticks)
    rows+=("$d $requests $((u1 - u0)) $((s1 - s0))")
done

printf '%s\n' "${rows[@]}" | python3 -c '
import sys
hz = float(sys.argv[1])
pts = []
print("depth  requests    user µs/req  system µs/req")
for line in sys.stdin:
    d, n, u, s = (int(x) for x in line.split())
    user, sys_ = u / hz * 1e6 / n, s / hz * 1e6 / n
    pts.append((1.0 / d, user))
    print(f"{d:5d} {n:9d}   {user:11.4f}  {sys_:13.4f}")
if len(pts) >= 2:
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    b = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    a = my - b * mx
    print(f"user = {a:.4f} µs per request + {b:.4f} µs per batch / depth")
' "$hz"
