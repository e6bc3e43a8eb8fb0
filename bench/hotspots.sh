#!/usr/bin/env bash
# Where one server's time goes, per instruction: sampled CPU time per million requests.
#
#   bench/hotspots.sh [WRK_ARGS...] -- SERVER_COMMAND...
#   bench/hotspots.sh -s bench/lua/pipeline.lua -c256 -- target/release/fibra hello --workers 1 --port 18096
#   HOTSPOTS_FUNCS=3 HOTSPOTS_TOP=8 bench/hotspots.sh -c256 -- bench/target/pong 18096
#
# The server runs pinned to CPU 0, wrk (one thread, pinned to CPU 1, 12 s) loads
# http://127.0.0.1:PORT/plaintext (PORT: the server command's last argument; the path from
# $HOTSPOTS_PATH), and `perf record -e cpu-clock -F 10000` samples the server's threads for
# 10 s of it, user and kernel. Prints samples per million requests for each binary and for
# the hottest functions, then, for the $HOTSPOTS_FUNCS (default 2) hottest functions of the
# server's own binary, the $HOTSPOTS_TOP (default 6) instructions with the most samples, each
# with the instruction before it.
#
# This is the tool for stalls, which instruction counts (bench/cachesim.sh) do not show. A
# sample lands on the instruction after the one that waited: a load that waits on the
# stores before it (store-to-load forwarding failed: a value built field by field and then
# copied whole with wider loads) shows as a hot plain store or move right after that load.
# Those samples say where the core waited, not what removing the wait saves: the out-of-order
# core overlaps much of it (docs/lab/gaps-2026-11-30.md); check a fix with bench/ab_cpu.sh.
# Samples come from a timer (no hardware counters in this virtual machine), so each function's
# figure carries a few percent of noise; compare builds with runs made back to back.
set -euo pipefail

# shellcheck source=bench/load.sh
source "$(dirname "$0")/load.sh"
parse_load_args "$@"
command -v perf >/dev/null || { echo "$0: needs perf (apt-get install linux-perf)" >&2; exit 1; }
out="$(mktemp -d)"

taskset -c 0 "${server[@]}" >/dev/null 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; rm -rf "$out"' EXIT
wait_port "$port" 50 0.1 || true

taskset -c 1 wrk -t1 -d12s "${wrk_args[@]}" "http://127.0.0.1:$port${HOTSPOTS_PATH:-/plaintext}" \
    >"$out/wrk.txt" &
load=$!
sleep 1
perf record -q -e cpu-clock -F 10000 -p "$pid" -o "$out/perf.data" -- sleep 10 2>/dev/null
wait "$load"
requests=$(awk '/requests in/ {print $1}' "$out/wrk.txt")
# Requests completed while perf sampled: 10 of wrk's 12 seconds.
sampled=$((requests * 10 / 12))
binary=$(readlink -f "/proc/$pid/exe")

perf report -i "$out/perf.data" --no-children -g none --sort dso,sym -q -F sample,dso,sym \
    2>/dev/null >"$out/flat.txt"
# Samples per million requests, per binary and for the hottest functions; then the hottest
# functions of the server's own binary, one per line, into funcs.txt.
python3 - "$sampled" "$(basename "$binary")" "${HOTSPOTS_FUNCS:-2}" "$out" <<'EOF'
import re, sys
per, exe, nfuncs, out = 1e6 / int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
dsos, syms = {}, []
for line in open(f"{out}/flat.txt"):
    m = re.match(r"\s*(\d+)\s+(\S+)\s+\[(.)\]\s+(.*\S)", line)
    if m:
        n = int(m[1])
        dsos[m[2]] = dsos.get(m[2], 0) + n
        syms.append((n, m[2], m[4]))
syms.sort(reverse=True)
print(f"requests sampled {sys.argv[1]}; samples (100 µs each) per million requests:")
print(f"  {sum(dsos.values()) * per:8.0f}  total")
for d, n in sorted(dsos.items(), key=lambda x: -x[1])[:5]:
    print(f"  {n * per:8.0f}  {d}")
print("hottest functions:")
for n, d, s in syms[:15]:
    print(f"  {n * per:8.1f}  {d[:18]:18s} {s[:90]}")
with open(f"{out}/funcs.txt", "w") as f:
    for _, _, s in [x for x in syms if x[1] == exe][:nfuncs]:
        f.write(s + "\n")
EOF
while IFS= read -r func; do
    echo "hottest instructions of $func (% of its samples; the instruction before):"
    perf annotate -i "$out/perf.data" --stdio -s "$func" 2>/dev/null |
        python3 -c '
import re, sys
ins = []
for line in sys.stdin:
    m = re.match(r"\s+(\d+\.\d+) :\s+([0-9a-f]+):\s+(.*\S)", line)
    if m:
        ins.append((float(m[1]), m[2], m[3]))
for i, (p, addr, text) in sorted(enumerate(ins), key=lambda x: -x[1][0])[: int(sys.argv[1])]:
    before = ins[i - 1][2] if i > 0 else ""
    print(f"  {p:5.1f}%  {addr}: {text[:48]:48s}  after: {before[:48]}")
' "${HOTSPOTS_TOP:-6}"
done <"$out/funcs.txt"
