#!/usr/bin/env bash
# User-space instructions (and, with --cache, simulated cache misses) per HTTP/3 response of
# one fibra build: the quiet check beside bench/ab_cpu.sh --h3 and bench/h3_h2_cpu.sh, whose
# CPU times drift by ±10 % between runs on this machine (the kernel is not counted).
#
#   bench/h3_instr.sh [--fibra PATH] [--client PATH] [--files] [--path P] [--conns C]
#                     [--streams M] [--requests N] [--cache]
#
# Defaults: `fibra hello` (GET /plaintext), 100 connections x 10 streams, 200,000 requests
# measured (a fixed count, not a duration: a faster build would otherwise spread the same
# handshakes over more responses).
# --files serves bench/static's index.html (151 bytes) and a 1 MiB file (/1m.bin) with
# `fibra serve` instead (--path /index.html, or --path /1m.bin --conns 32 --streams 1).
# --fibra is the server's binary and --client the load's (`fibra bench --h3`), both by
# default target/release/fibra; keep --client the same when comparing two servers.
#
# The server (one worker) runs under `valgrind --tool=callgrind` pinned to CPU 0, `fibra bench
# --h3 -t1` on CPU 1: N/4 requests of warm-up, the counters zeroed (`callgrind_control -z`),
# then the N measured, on new connections (their handshakes are counted, the same for every
# build). Every answer must be 2xx with none failed, else the script fails. Prints responses,
# instructions and instructions per response. --cache runs `valgrind --tool=cachegrind
# --cache-sim=yes` instead (32 KiB L1s, 512 KiB last level, as bench/cachesim.sh) for the
# whole run, warm-up and start-up included, and prints each event per response.
# H3_INSTR_OUT=FILE keeps valgrind's output there (for `callgrind_annotate FILE`; divide by
# the response count printed first).
# Needs valgrind, openssl, python3, taskset.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
source "$here/lib/measure.sh"
source "$here/lib/tls_site.sh"
fibra="$root/target/release/fibra" client="" files=0 path="" conns=100 streams=10
requests=200000
cache=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --fibra) fibra=$2; shift 2 ;;
        --client) client=$2; shift 2 ;;
        --files) files=1; shift ;;
        --path) path=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --streams) streams=$2; shift 2 ;;
        --requests) requests=$2; shift 2 ;;
        --cache) cache=1; shift ;;
        *) sed -n '2,22p' "$0" >&2; exit 2 ;;
    esac
done
client=${client:-$root/target/release/fibra}
if [[ -z "$path" ]]; then
    if [[ "$files" = 1 ]]; then path=/index.html; else path=/plaintext; fi
fi
for tool in valgrind callgrind_control openssl python3 taskset; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 1; }
done
for bin in "$fibra" "$client"; do
    [[ -x "$bin" ]] || { echo "$0: no fibra binary at $bin (build target/release/fibra)" >&2; exit 1; }
done
scratch

self_signed "$out"
port=$(free_port)
tls=(--workers 1 --port "$port" --tls-cert "$out/cert.pem" --tls-key "$out/key.pem" --http3)
if [[ "$files" = 1 ]]; then
    files_root "$out"
    server=("$fibra" serve "$out/root" "${tls[@]}")
else
    server=("$fibra" hello "${tls[@]}")
fi
if [[ "$cache" = 1 ]]; then
    tool=(--tool=cachegrind --cache-sim=yes --D1=32768,8,64 --I1=32768,8,64 --LL=524288,8,64
        --cachegrind-out-file="$out/vg.out")
else
    tool=(--tool=callgrind --callgrind-out-file="$out/vg.out")
fi
taskset -c 0 valgrind "${tool[@]}" "${server[@]}" >"$out/server.log" 2>&1 &
pid=$!
# Under valgrind the server takes a few seconds to come up.
wait_http3 "$out/server.log" 40 || exit 1

url="https://127.0.0.1:$port$path"
load() {
    taskset -c 1 "$client" bench --h3 -t1 -c"$conns" -m"$streams" -n "$1" --insecure "$url" 2>&1 ||
        true # a client with failed requests exits non-zero: its report says why
}
warm=$(load $((requests / 4)))
all_2xx "$warm" || { echo "$0: the warm-up did not get 2xx answers only:" >&2; echo "$warm" >&2; exit 1; }
[[ "$cache" = 1 ]] || callgrind_control -z "$pid" >/dev/null
report=$(load "$requests")
all_2xx "$report" || { echo "$0: the load did not get 2xx answers only:" >&2; echo "$report" >&2; exit 1; }
kill -TERM "$pid"
wait "$pid" || true
pid=""
[[ -z ${H3_INSTR_OUT:-} ]] || cp "$out/vg.out" "$H3_INSTR_OUT"
measured=$(grep -oE "[0-9]+ succeeded" <<<"$report" | grep -oE "[0-9]+")
# With --cache the whole run counts: the warm-up's answers too.
responses=$measured
[[ "$cache" = 1 ]] && responses=$(( measured + $(grep -oE "[0-9]+ succeeded" <<<"$warm" | grep -oE "[0-9]+") ))
python3 - "$out/vg.out" "$responses" "$cache" <<'EOF'
import sys
path, responses, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
events, totals = [], None
for line in open(path):
    if line.startswith("events:"):
        events = line.split()[1:]
    elif line.startswith(("summary:", "totals:")):
        totals = [int(x) for x in line.split()[1:]]
if not totals:
    sys.exit("no totals in valgrind's output")
print(f"responses {responses}")
if cache:
    for ev, total in zip(events, totals):
        print(f"{ev:<6} {total / responses:10.1f} per response")
else:
    print(f"instructions {totals[0]} ({totals[0] / responses:.0f} per response)")
EOF
