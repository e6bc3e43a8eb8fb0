#!/usr/bin/env bash
# Instructions per request of two fibra builds, side by side, on the paths an architecture
# change must not make dearer: plaintext keep-alive, 16-deep pipelining, a hot 151-byte file,
# h2c hello and TLS keep-alive.
#
#   bench/arch_gate.sh OLD_FIBRA NEW_FIBRA [ROUNDS]
#   bench/arch_gate.sh /tmp/fibra-old target/release/fibra 2
#   GATE_SCENARIOS="pipelining h2c" bench/arch_gate.sh OLD NEW 3     # some of them
#
# Each server (`fibra hello` or `fibra serve`, one worker, pinned to CPU 0) runs under
# `valgrind --tool=cachegrind` (user-space instructions; the kernel is not counted), the
# client pinned to CPU 1: wrk -t1 -c256 for 8 seconds (keep-alive, the file), the same with
# bench/lua/pipeline.lua 16 (pipelining); h2load -n 20000 -c16 -m10 (h2c with prior
# knowledge; TLS keep-alive with --h1, 16 handshakes: a fixed count, so that their cost is
# spread the same way over both builds, which a timed run under valgrind does not do).
# Every response must be 2xx (checked; a run with errors fails). Prints instructions per request
# for each build and new/old per round. Needs valgrind, wrk, h2load (nghttp2-client), openssl.
set -euo pipefail
old="$1" new="$2" rounds="${3:-1}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
head -c 151 /dev/urandom | base64 | head -c 151 >"$work/f151.txt"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
    -days 1 -subj /CN=localhost >/dev/null 2>&1
port=18471

wait_port() {
    for _ in $(seq 150); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.2
    done
    echo "port $1 never opened" >&2
    return 1
}

# run BINARY SCENARIO: prints instructions per request.
run() {
    local bin="$1" scenario="$2" server client requests
    local url="http://127.0.0.1:$port/plaintext"
    case "$scenario" in
        file) server=("$bin" serve "$work" --workers 1 --port "$port")
              url="http://127.0.0.1:$port/f151.txt" ;;
        tls) server=("$bin" hello --workers 1 --port "$port" --tls-cert "$work/cert.pem"
                     --tls-key "$work/key.pem")
             url="https://127.0.0.1:$port/plaintext" ;;
        *) server=("$bin" hello --workers 1 --port "$port") ;;
    esac
    taskset -c 0 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$work/cg.out" \
        "${server[@]}" >"$work/server.log" 2>&1 &
    local vg=$!
    wait_port "$port"
    case "$scenario" in
        h2c|tls) local h1=()
             [[ "$scenario" == tls ]] && h1=(--h1)
             taskset -c 1 h2load "${h1[@]}" -n 20000 -c16 -m10 "$url" >"$work/client.log" 2>&1
             requests=$(awk '/^status codes:/ {print $3}' "$work/client.log")
             grep -q "^requests: 20000 total, 20000 started, 20000 done, 20000 succeeded" \
                 "$work/client.log" || { cat "$work/client.log" >&2; return 1; } ;;
        *) local extra=()
           [[ "$scenario" == pipelining ]] && extra=(-s "$here/lua/pipeline.lua")
           taskset -c 1 wrk -t1 -c256 -d8s "${extra[@]}" "$url" ${extra:+-- 16} \
               >"$work/client.log" 2>&1
           requests=$(awk '/requests in/ {print $1}' "$work/client.log")
           if grep -q "Non-2xx\|Socket errors: connect [1-9]" "$work/client.log"; then
               cat "$work/client.log" >&2
               return 1
           fi ;;
    esac
    kill -TERM "$vg"
    wait "$vg" || true
    local ir
    ir=$(awk '/^summary:/ {print $2}' "$work/cg.out")
    awk -v ir="$ir" -v n="$requests" 'BEGIN {printf "%.1f", ir / n}'
}

printf '%-11s %5s %12s %12s %8s\n' scenario round old new new/old
for round in $(seq "$rounds"); do
    for scenario in ${GATE_SCENARIOS:-keepalive pipelining file h2c tls}; do
        o=$(run "$old" "$scenario")
        n=$(run "$new" "$scenario")
        printf '%-11s %5s %12s %12s %8s\n' "$scenario" "$round" "$o" "$n" \
            "$(awk -v o="$o" -v n="$n" 'BEGIN {printf "%.3f", n / o}')"
    done
done
