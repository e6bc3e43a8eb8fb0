#!/usr/bin/env bash
# Where a response's server CPU goes, by part, for HTTP/3 or for HTTP/2 over TLS on the same
# `fibra serve` (a 1 MiB file by default): the kernel, AES-GCM and the TLS/QUIC crypto around
# it, quinn-proto, fibra-quic's driver, fibra-http, the allocator, memmove, the runtime.
#
#   bench/h3_breakdown.sh [--h2] [--path P] [--conns C] [--streams M] [--secs S]
#   bench/h3_breakdown.sh                      # HTTP/3, /1m.bin, -c32 -m1
#   bench/h3_breakdown.sh --h2                 # the same over HTTP/2 (h2load)
#   bench/h3_breakdown.sh --path /index.html --conns 100 --streams 10
#
# The server (one worker, pinned to CPU 0) serves bench/static plus a 1 MiB file (/1m.bin)
# over TLS on TCP and its UDP twin. The load runs on CPU 1 for S seconds (default 12):
# `fibra bench --h3 -t1` or, with --h2, `h2load -t1`; every answer must be 2xx. For S - 4
# seconds of it, `perf record -e cpu-clock -F 5000` samples the server's threads, user and
# kernel. The server's CPU time over those seconds (its threads' /proc schedstat), divided
# by the responses of those seconds at the client's rate, gives the CPU per response (with
# the sampling's own cost in it, a few percent), and each part's share of the samples gives
# its microseconds; bench/h3_h2_cpu.sh is the tool for the HTTP/3 ÷ HTTP/2 ratio. Prints those, and the 12 functions with
# the most samples. Samples come from a timer (no hardware counters in this virtual machine):
# a part's figure carries a few percent of noise, and a sample that waited on a stall is
# counted where it waited, which is not what removing the stall saves
# (docs/lab/gaps-2026-11-30.md). Needs target/release/fibra, perf, openssl, python3,
# taskset, and h2load for --h2.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=bench/lib/measure.sh
source "$here/lib/measure.sh"
# shellcheck source=bench/lib/tls_site.sh
source "$here/lib/tls_site.sh"
h2=0 path=/1m.bin conns=32 streams=1 secs=12
while [[ $# -gt 0 ]]; do
    case "$1" in
        --h2) h2=1; shift ;;
        --path) path=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --streams) streams=$2; shift 2 ;;
        --secs) secs=$2; shift 2 ;;
        *) sed -n '2,22p' "$0" >&2; exit 2 ;;
    esac
done
(( secs >= 6 )) || { echo "$0: --secs must be at least 6" >&2; exit 2; }
fibra="$root/target/release/fibra"
tools=(perf openssl python3 taskset)
[[ "$h2" = 1 ]] && tools+=(h2load)
for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 1; }
done
[[ -x "$fibra" ]] || { echo "$0: build target/release/fibra first" >&2; exit 1; }
scratch

self_signed "$out"
files_root "$out"
port=$(free_port)
taskset -c 0 "$fibra" serve "$out/root" --workers 1 --port "$port" --tls-cert "$out/cert.pem" \
    --tls-key "$out/key.pem" --http3 >"$out/server.log" 2>&1 &
pid=$!
wait_http3 "$out/server.log" || exit 1

url="https://127.0.0.1:$port$path"
if [[ "$h2" = 1 ]]; then
    taskset -c 1 h2load -t1 -c"$conns" -m"$streams" -D "$secs" "$url" >"$out/load.txt" 2>&1 &
else
    taskset -c 1 "$fibra" bench --h3 -t1 -c"$conns" -m"$streams" -d "${secs}s" --insecure "$url" \
        >"$out/load.txt" 2>&1 &
fi
load=$!
sleep 2
before=$(cpu_ns "$pid")
start=$(date +%s%N)
perf record -q -e cpu-clock -F 5000 -p "$pid" -o "$out/perf.data" -- sleep $((secs - 4)) \
    >/dev/null 2>&1
after=$(cpu_ns "$pid")
window=$(( $(date +%s%N) - start ))
wait "$load" || true # a client with failed requests exits non-zero: its report says why
all_2xx "$(cat "$out/load.txt")" ||
    { echo "$0: the load did not get 2xx answers only:" >&2; cat "$out/load.txt" >&2; exit 1; }
perf report -i "$out/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null |
    grep -E '^ +[0-9]' >"$out/symbols.txt" || true

python3 - "$out/load.txt" "$out/symbols.txt" "$((after - before))" "$window" "$h2" <<'EOF'
import re
import sys

load, symbols, cpu_ns, window_ns, h2 = sys.argv[1:]
text = open(load).read()
# Both clients print "finished in …, N req/s".
rate = re.search(r"([\d.]+) req/s", text)
if not rate:
    sys.exit(f"no rate in the load's report:\n{text}")
rate = float(rate.group(1))
# The server's CPU while sampled, over the responses of that time at the client's rate.
per_response_us = int(cpu_ns) / 1e3 / (rate * int(window_ns) / 1e9)


def part(line):
    s = line
    if "[k]" in s:
        return "kernel"
    if "quinn_proto" in s:
        return "quinn-proto"
    if "fibra_quic" in s:
        return "fibra-quic"
    if any(k in s for k in ("aws_lc", "aead", "gcm", "rustls", "_IV", "ring::")):
        return "crypto (AES-GCM, TLS/QUIC wrappers)"
    if "fibra_http" in s:
        return "fibra-http"
    if "mi_" in s or "malloc" in s:
        return "allocator"
    if any(k in s for k in ("memmove", "memcpy", "memset")):
        return "memmove/memset"
    if "fibra::" in s or "corosensei" in s:
        return "runtime"
    return "other"


parts, top = {}, []
for line in open(symbols):
    share = float(line.split()[0].rstrip("%")) / 100
    name = " ".join(line.split()[2:]).replace(" - -", "").strip()
    parts[part(line)] = parts.get(part(line), 0) + share
    top.append((share, name))
proto = "HTTP/2 over TLS (h2load)" if h2 == "1" else "HTTP/3 (fibra bench --h3)"
print(f"{proto}: {rate:,.0f} responses/s; server CPU {per_response_us:,.1f} us per response")
for name, share in sorted(parts.items(), key=lambda kv: -kv[1]):
    if share >= 0.0005:
        print(f"  {name:<38} {share * per_response_us:9.1f} us  {share * 100:5.1f} %")
print("hottest functions:")
for share, name in sorted(top, reverse=True)[:12]:
    print(f"  {share * per_response_us:9.1f} us  {name[:90]}")
EOF
