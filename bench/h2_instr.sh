#!/usr/bin/env bash
# User-space instructions per HTTP/2 request, fibra against h2o serving the same bytes from a
# file: the quieter check beside bench/compare.sh's CPU time (the kernel is not counted).
#
#   bench/h2_instr.sh [--requests N] [--loads LIST] [--targets LIST] [--fibra PATH]
#
#   --requests N   requests measured per run (default 100000), after a warm-up of N/4
#   --loads LIST   h2load shapes CONNSxSTREAMS, comma-separated (default 100x10,10x100)
#   --targets LIST comma-separated, default all of:
#                    h2c-hello   cleartext, prior knowledge: `fibra hello` /plaintext against
#                                h2o's 13-byte file with the same bytes
#                    h2c-file    cleartext: `fibra serve` /index.html (151 bytes) against h2o
#                    tls-hello   the same over TLS (ALPN h2; one ECDSA P-256 certificate)
#                    tls-file
#   --fibra PATH   the fibra binary (default ${CARGO_TARGET_DIR:-target}/release/fibra)
#
# Each server (one worker/thread) runs under `valgrind --tool=callgrind` pinned to CPU 0;
# h2load -t1 on CPU 1 sends the warm-up, the counters are zeroed (`callgrind_control -z`),
# h2load sends N requests, the counters are dumped. Every response must be 2xx and carry the
# expected bytes (h2load's count of data bytes = N x the body's length), else the script
# fails. Prints one line per target, load and server, and fibra ÷ h2o. The handshakes of
# the measured run's connections are counted (100 or 10 per N requests; the same for both).
# Needs valgrind, h2load (nghttp2-client), h2o, openssl.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
requests=100000 loads=100x10,10x100 targets=h2c-hello,h2c-file,tls-hello,tls-file
fibra="${CARGO_TARGET_DIR:-$repo/target}/release/fibra"
while [ $# -gt 0 ]; do
    case $1 in
        --requests) requests=$2; shift 2 ;;
        --loads) loads=$2; shift 2 ;;
        --targets) targets=$2; shift 2 ;;
        --fibra) fibra=$2; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "h2_instr.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
for tool in valgrind callgrind_control h2load h2o openssl taskset; do
    command -v "$tool" >/dev/null || { echo "h2_instr.sh: $tool is missing" >&2; exit 2; }
done
[ -x "$fibra" ] || { echo "h2_instr.sh: no fibra binary at $fibra (cargo build --release)" >&2; exit 2; }

work="$(mktemp -d)"
chmod 755 "$work"
pid=""
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/root"
printf 'Hello, World!' >"$work/root/plaintext"
head -c 151 /dev/zero | tr '\0' 'x' >"$work/root/index.html"
chmod 644 "$work/root/"*
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -keyout "$work/key.pem" -out "$work/cert.pem" -days 1 >/dev/null 2>&1
chmod 644 "$work/key.pem" "$work/cert.pem"
port=18731

# shellcheck source=bench/load.sh
source "$here/load.sh"   # wait_port PORT TRIES SECS

# h2o's configuration: one thread, the root as files, TLS if asked.
h2o_conf() { # TLS(0|1)
    {
        echo "num-threads: 1"
        echo "error-log: $work/h2o-error.log"
        # As root h2o would drop to nobody, who cannot write the callgrind dumps.
        [ "$(id -u)" != 0 ] || echo "user: root"
        echo "listen:"
        echo "  port: $port"
        echo "  host: 127.0.0.1"
        if [ "$1" = 1 ]; then
            echo "  ssl:"
            echo "    certificate-file: $work/cert.pem"
            echo "    key-file: $work/key.pem"
            echo "    minimum-version: TLSv1.2"
        fi
        echo "hosts:"
        echo "  default:"
        echo "    paths:"
        echo "      /:"
        echo "        file.dir: $work/root"
    } >"$work/h2o.conf"
}

# measure TARGET LOAD SERVER: prints instructions per request.
measure() {
    local target=$1 load=$2 server=$3 tls=0 path=/plaintext bytes=13 cmd scheme=http
    local conns=${load%x*} streams=${load#*x}
    case $target in tls-*) tls=1; scheme=https ;; esac
    case $target in *-file) path=/index.html; bytes=151 ;; esac
    case $server in
        fibra)
            case $target in
                *-hello) cmd=("$fibra" hello --workers 1 --port "$port") ;;
                *-file) cmd=("$fibra" serve "$work/root" --workers 1 --port "$port") ;;
            esac
            [ "$tls" = 0 ] || cmd+=(--tls-cert "$work/cert.pem" --tls-key "$work/key.pem")
            ;;
        h2o) h2o_conf "$tls"; cmd=(h2o -c "$work/h2o.conf") ;;
    esac
    taskset -c 0 valgrind --tool=callgrind --callgrind-out-file="$work/cg.%p" "${cmd[@]}" \
        >"$work/server.log" 2>&1 &
    pid=$!
    wait_port "$port" 300 0.1 || {
        echo "h2_instr.sh: nothing listens on $port; the server's log:" >&2
        tail -5 "$work/server.log" >&2
        exit 1
    }
    local url="$scheme://127.0.0.1:$port$path" h2=(-m "$streams" -c "$conns" -t1)
    taskset -c 1 h2load "${h2[@]}" -n $((requests / 4)) "$url" >"$work/warm.log" 2>&1
    rm -f "$work"/cg.*
    callgrind_control -z "$pid" >/dev/null
    taskset -c 1 h2load "${h2[@]}" -n "$requests" "$url" >"$work/client.log" 2>&1
    callgrind_control -d "$pid" >/dev/null
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
    local ok data
    ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$work/client.log")
    data=$(sed -n 's/^traffic: .*(\([0-9]*\)) data.*/\1/p' "$work/client.log")
    if [ "$ok" != "$requests" ] || [ "$data" != $((requests * bytes)) ]; then
        echo "h2_instr.sh: $server $target $load: $ok of $requests 2xx, $data data bytes (want $((requests * bytes))):" >&2
        tail -12 "$work/client.log" >&2
        exit 1
    fi
    # The dump asked for after zeroing (all threads in one file); the one written at exit
    # holds the shutdown only.
    local ir
    ir=$(awk '/^summary:|^totals:/ {print $2; exit}' "$work"/cg.*.1)
    python3 -c "print(round($ir / $requests))"
}

printf '%-10s %-7s %10s %10s %8s\n' target load fibra h2o fibra/h2o
for target in ${targets//,/ }; do
    for load in ${loads//,/ }; do
        f=$(measure "$target" "$load" fibra)
        h=$(measure "$target" "$load" h2o)
        printf '%-10s %-7s %10s %10s %8s\n' "$target" "$load" "$f" "$h" \
            "$(python3 -c "print(f'{$f / $h:.2f}')")"
    done
done
