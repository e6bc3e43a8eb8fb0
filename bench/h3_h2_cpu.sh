#!/usr/bin/env bash
# HTTP/3 against HTTP/2 over TLS on the same fibra server: one process serving both (the TLS
# port over TCP, its UDP twin with --http3), pinned to CPU 0, and short runs on CPU 1 that
# alternate between `h2load -t1` (HTTP/2 over TLS, ALPN h2) and `fibra bench --h3 -t1` with
# the same connections x streams. The server's CPU per response comes from
# /proc/PID/task/*/schedstat (nanoseconds) around each run; the per-pair ratio is HTTP/3 over
# HTTP/2. A run with a non-2xx answer or a failed request stops the script.
#
#   bench/h3_h2_cpu.sh [--pairs N] [--secs S] [--conns C] [--streams M] [--path P] [--files]
#                      [--against-quic-go]
#
# Defaults: 12 pairs of 2-second runs, -c100 -m10, GET /plaintext of `fibra hello`. --files
# serves bench/static plus a 1 MiB file (/1m.bin) with `fibra serve` (use --path /index.html
# or --path /1m.bin --conns 32 --streams 1). Prints each protocol's median CPU per response
# and requests/s, and the medians and quartiles of the per-pair ratios (CPU and req/s).
# Needs target/release/fibra, h2load (nghttp2-client), openssl, python3, taskset.
#
# --against-quic-go: a spot check of `fibra bench --h3` instead. The first load is HTTP/3 too,
# from bench/h3/quicgo (quic-go's HTTP/3 client, GOMAXPROCS=1, built here with Go; every
# answer must be 2xx): the same server's CPU per response under either client, and the
# clients' req/s.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=bench/lib/measure.sh
source "$here/lib/measure.sh"
# shellcheck source=bench/lib/tls_site.sh
source "$here/lib/tls_site.sh"
pairs=12 secs=2 conns=100 streams=10 path=/plaintext files=0 quicgo=0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --pairs) pairs=$2; shift 2 ;;
        --secs) secs=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --streams) streams=$2; shift 2 ;;
        --path) path=$2; shift 2 ;;
        --files) files=1; shift ;;
        --against-quic-go) quicgo=1; shift ;;
        *) sed -n '2,16p' "$0" >&2; exit 2 ;;
    esac
done
fibra="$root/target/release/fibra"
for tool in h2load openssl python3 taskset; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 1; }
done
[[ -x "$fibra" ]] || { echo "$0: build target/release/fibra first" >&2; exit 1; }
h3load="$here/target/h3load-quicgo"
if [[ "$quicgo" = 1 ]]; then
    command -v go >/dev/null || { echo "$0: --against-quic-go needs go" >&2; exit 1; }
    (cd "$here/h3/quicgo" && GOFLAGS=-mod=mod GOTOOLCHAIN=local go build -o "$h3load" .)
fi
scratch

self_signed "$out"
port=$(free_port)
tls=(--tls-cert "$out/cert.pem" --tls-key "$out/key.pem" --http3)
if [[ "$files" = 1 ]]; then
    files_root "$out"
    taskset -c 0 "$fibra" serve "$out/root" --workers 1 --port "$port" "${tls[@]}" >"$out/server.log" 2>&1 &
else
    taskset -c 0 "$fibra" hello --workers 1 --port "$port" "${tls[@]}" >"$out/server.log" 2>&1 &
fi
pid=$!
wait_http3 "$out/server.log" || exit 1
url="https://127.0.0.1:$port$path"


# run h2|h3 SECS: prints "ns_per_response responses_per_sec".
run() {
    local before after report ok rate
    before=$(cpu_ns "$pid")
    if [[ "$1" = h2 && "$quicgo" = 1 ]]; then
        report=$(GOMAXPROCS=1 taskset -c 1 "$h3load" -c "$conns" -m "$streams" -d "${2}s" "$url" 2>&1) || {
            echo "$0: a quic-go run failed:" >&2; echo "$report" >&2; exit 1; }
        after=$(cpu_ns "$pid")
        ok=$(grep -oE "^[0-9]+ succeeded" <<<"$report" | grep -oE "[0-9]+")
    elif [[ "$1" = h2 ]]; then
        report=$(taskset -c 1 h2load -t1 -c"$conns" -m"$streams" -D "$2" "$url" 2>&1)
        after=$(cpu_ns "$pid")
        all_2xx "$report" || { echo "$0: an HTTP/2 run failed:" >&2; echo "$report" >&2; exit 1; }
        ok=$(grep -oE "status codes: [0-9]+ 2xx" <<<"$report" | grep -oE "[0-9]+" | head -1)
    else
        # (It exits non-zero when requests failed: the check below says so, with the report.)
        report=$(taskset -c 1 "$fibra" bench --h3 -t1 -c"$conns" -m"$streams" -d "${2}s" --insecure "$url" 2>&1) || true
        after=$(cpu_ns "$pid")
        all_2xx "$report" || { echo "$0: an HTTP/3 run failed:" >&2; echo "$report" >&2; exit 1; }
        ok=$(grep -oE "[0-9]+ succeeded" <<<"$report" | grep -oE "[0-9]+")
    fi
    [[ "$ok" -gt 0 ]] || { echo "$0: no responses ($1)" >&2; exit 1; }
    rate=$(python3 -c "print($ok / $2)")
    echo "$(((after - before) / ok)) $rate"
}

run h2 1 >/dev/null
run h3 1 >/dev/null
for i in $(seq "$pairs"); do
    if ((i % 2)); then
        a=$(run h2 "$secs"); b=$(run h3 "$secs")
    else
        b=$(run h3 "$secs"); a=$(run h2 "$secs")
    fi
    echo "$a $b" >>"$out/pairs"
done
python3 - "$out/pairs" "$path" "$conns" "$streams" "$quicgo" <<'EOF'
import statistics, sys
first = "HTTP/3 (quic-go)" if sys.argv[5] == "1" else "HTTP/2 over TLS"
h2c, h2r, h3c, h3r, rc, rr = [], [], [], [], [], []
for line in open(sys.argv[1]):
    a, ar, b, br = line.split()
    h2c.append(int(a)); h2r.append(float(ar)); h3c.append(int(b)); h3r.append(float(br))
    rc.append(int(b) / int(a)); rr.append(float(br) / float(ar))
def q(r):
    r = sorted(r)
    qs = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0]] * 3
    return f"median {statistics.median(r):.3f} (quartiles {qs[0]:.3f}-{qs[2]:.3f}, range {r[0]:.3f}-{r[-1]:.3f})"
print(f"GET {sys.argv[2]}, {sys.argv[3]} connections x {sys.argv[4]} streams, {len(rc)} pairs")
second = "HTTP/3 (fibra bench)"
print(f"{first}: {statistics.median(h2c):.0f} ns CPU per response, {statistics.median(h2r):,.0f} req/s")
print(f"{second}: {statistics.median(h3c):.0f} ns CPU per response, {statistics.median(h3r):,.0f} req/s")
print(f"{second} / {first}, CPU per response: {q(rc)}")
print(f"{second} / {first}, req/s: {q(rr)}")
EOF
