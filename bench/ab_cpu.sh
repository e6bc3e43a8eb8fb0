#!/usr/bin/env bash
# CPU per request of two servers, interleaved: both run at once (pinned to the same CPU, only
# one loaded at a time), and short wrk runs alternate between them, so the drift of a shared
# machine falls on both alike. For differences of a few percent, which compare.sh's rounds of
# one server after another cannot resolve here.
#
#   bench/ab_cpu.sh [--pairs N] [--secs S] [--path P] [--https | --h2 CLIENT | --h3 CLIENT] "SERVER_A" "SERVER_B" [LOAD_ARGS...]
#   bench/ab_cpu.sh "bench/target/pong PORT" "target/release/fibra hello --workers 1 --port PORT" -c256
#   bench/ab_cpu.sh --pairs 40 "OLD hello --workers 1 --port PORT" "NEW hello --workers 1 --port PORT" \
#       -c256 -s bench/lua/pipeline.lua
#
# Each server command has the word PORT where its port goes (A gets 18201, B 18202). Both
# start on CPU 0 (taskset), wrk (one thread) on CPU 1 loads http://127.0.0.1:PORT$PATH
# (default /plaintext). After a 1 s warm-up of each, N pairs (default 30) of S-second runs
# (default 2), A first in odd pairs and B first in even ones. A server's CPU time is the sum
# of its threads' run time in /proc/PID/task/*/schedstat (nanoseconds), read before and after
# its run, divided by the responses wrk counted. A run with socket errors, timeouts or a
# non-2xx answer stops the script (exit 1): a server answering errors would look cheap.
# Prints each server's median ns per request and the median and quartiles of the per-pair
# ratios B/A.
#
# --https: wrk loads https://127.0.0.1:PORT$PATH instead (servers started with
# --tls-cert/--tls-key; wrk does not check the certificate).
#
# --h3 CLIENT: the load is HTTP/3 instead, `CLIENT bench --h3 -t1 LOAD_ARGS -d S --insecure
# https://127.0.0.1:PORT$PATH` (CLIENT a fibra binary, the same for both servers; e.g.
# LOAD_ARGS -c100 -m10), against servers started with --tls-cert/--tls-key/--http3 (the TCP
# port is how the script sees them up). A run with a failed or errored request stops it.
#   bench/ab_cpu.sh --h3 target/release/fibra "OLD hello --workers 1 --port PORT $TLS --http3" \
#       "NEW hello --workers 1 --port PORT $TLS --http3" -c100 -m10
#
# --h2 CLIENT: the load is HTTP/2 with prior knowledge (h2c), `CLIENT bench --h2 -t1 LOAD_ARGS
# -d S http://127.0.0.1:PORT$PATH`, checked the same way.
set -euo pipefail

pairs=30
secs=2
path=/plaintext
h3_client=
bench_flag=--h3
scheme=https
wrk_scheme=http
while [[ $# -gt 0 ]]; do
    case "$1" in
        --h3) h3_client="$2"; shift 2 ;;
        --h2) h3_client="$2"; bench_flag=--h2; scheme=http; shift 2 ;;
        --https) wrk_scheme=https; shift ;;
        --pairs) pairs="$2"; shift 2 ;;
        --secs) secs="$2"; shift 2 ;;
        --path) path="$2"; shift 2 ;;
        *) break ;;
    esac
done
[[ $# -ge 2 ]] || { sed -n '2,20p' "$0" >&2; exit 2; }
cmd_a="${1//PORT/18201}"
cmd_b="${2//PORT/18202}"
shift 2
wrk_args=("$@")
for tool in $([[ -n "$h3_client" ]] || echo wrk) taskset python3; do
    command -v "$tool" >/dev/null || { echo "$0: needs $tool" >&2; exit 1; }
done
out="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$out"
}
trap cleanup EXIT

# shellcheck disable=SC2086 # the server commands are split into words on purpose
taskset -c 0 $cmd_a >"$out/a.log" 2>&1 &
pids+=($!)
# shellcheck disable=SC2086
taskset -c 0 $cmd_b >"$out/b.log" 2>&1 &
pids+=($!)

wait_port() {
    local _
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "$0: nothing listens on port $1" >&2
    exit 1
}
wait_port 18201
wait_port 18202

# shellcheck source=bench/lib/measure.sh
source "$(dirname "$0")/lib/measure.sh"

# run_h3 PID PORT SECS: as run, with `fibra bench --h3` (or --h2).
run_h3() {
    local before after report responses
    before=$(cpu_ns "$1")
    report=$(taskset -c 1 "$h3_client" bench "$bench_flag" -t1 "${wrk_args[@]}" -d "$3s" \
        $([[ $scheme == https ]] && echo --insecure) "$scheme://127.0.0.1:$2$path")
    after=$(cpu_ns "$1")
    if grep -qE "\b[1-9][0-9]* (failed|errored)" <<<"$report"; then
        echo "$0: the server on port $2 failed a run:" >&2
        echo "$report" >&2
        exit 1
    fi
    responses=$(grep -oE "[0-9]+ succeeded" <<<"$report" | awk '{print $1}')
    [[ "$responses" -gt 0 ]] || { echo "$0: no responses from port $2" >&2; exit 1; }
    echo $(((after - before) / responses))
}

# run PID PORT SECS: prints the server's CPU nanoseconds per response of one wrk run.
run() {
    if [[ -n "$h3_client" ]]; then
        run_h3 "$@"
        return
    fi
    local before after report responses
    before=$(cpu_ns "$1")
    report=$(taskset -c 1 wrk -t1 -d"$3s" "${wrk_args[@]}" "$wrk_scheme://127.0.0.1:$2$path")
    after=$(cpu_ns "$1")
    if grep -qE "Socket errors|Non-2xx" <<<"$report"; then
        echo "$0: the server on port $2 failed a run:" >&2
        echo "$report" >&2
        exit 1
    fi
    responses=$(awk '/requests in/ {print $1}' <<<"$report")
    [[ "$responses" -gt 0 ]] || { echo "$0: no responses from port $2" >&2; exit 1; }
    echo $(((after - before) / responses))
}

run "${pids[0]}" 18201 1 >/dev/null
run "${pids[1]}" 18202 1 >/dev/null
for i in $(seq "$pairs"); do
    if ((i % 2)); then
        a=$(run "${pids[0]}" 18201 "$secs")
        b=$(run "${pids[1]}" 18202 "$secs")
    else
        b=$(run "${pids[1]}" 18202 "$secs")
        a=$(run "${pids[0]}" 18201 "$secs")
    fi
    echo "$a $b" >>"$out/pairs"
done
python3 - "$out/pairs" <<'EOF'
import statistics, sys
a, b, r = [], [], []
for line in open(sys.argv[1]):
    x, y = map(int, line.split())
    a.append(x); b.append(y); r.append(y / x)
r.sort()
q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0], r[0], r[0]]
print(f"A: median {statistics.median(a):.0f} ns of CPU per response")
print(f"B: median {statistics.median(b):.0f} ns of CPU per response")
print(f"B/A: median of {len(r)} per-pair ratios {statistics.median(r):.3f}"
      f" (quartiles {q[0]:.3f}-{q[2]:.3f}, range {r[0]:.3f}-{r[-1]:.3f})")
EOF
