#!/usr/bin/env bash
# A whole site, side by side: fibra serve and nginx (sendfile, open_file_cache holding the
# whole site) serving the same files to wrk, 64 keep-alive connections requesting paths in
# random order (bench/lua/paths.lua), one worker each pinned to CPU 0, wrk on CPU 1.
#
#   bench/site.sh small [ROUNDS] [SECS] [CONNS]   10,000 files of 1-8 KB (CSS, JS, SVG, JSON,
#                                                 WOFF2), generated with a fixed seed
#   bench/site.sh docs  [ROUNDS] [SECS] [CONNS]   the Python 3 documentation from Debian's
#                                                 python3-doc (HTML, CSS, JS, PNG, SVG)
#
# Both servers run for the whole script; every server first answers every file of the site
# (status 200, bytes compared with the file) and gets a warm-up pass, then the rounds
# alternate between them (the order flips every round; round r draws paths with seed r for
# both). Prints per round req/s and server CPU µs per request, user and system apart
# (/proc/PID/stat utime and stime of the server's processes), then the medians, the
# fibra/nginx ratios of the medians and the medians of the per-round ratios. Last,
# `strace -c -f` on each server during a STRACE_SECS run gives syscalls per request, failing
# ones apart (STRACE_SECS=0 skips it).
# Environment: CLIENT (wrk, the default, or fibra-bench: `fibra bench --paths`, the same random
# draw over the list, cheaper per response than wrk, which saturates its core on the docs site),
# BENCH_ARGS (extra fibra bench flags, e.g. --drop-bodies), FIBRA (binary), SITE_FILES and SITE_SEED (small site), FIBRA_ARGS (extra flags),
# FIBRA_BASE (a second fibra binary, e.g. a build before a change, measured in the same rounds
# as "base", with the fibra/base ratios), PERF=1 (see perf_sample below), CACHE_TTL (seconds,
# see ttl below).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
site=${1:?usage: bench/site.sh small|docs [ROUNDS] [SECS] [CONNS]}
rounds=${2:-5}; secs=${3:-10}; conns=${4:-64}
fibra=${FIBRA:-$here/../target/release/fibra}
strace_secs=${STRACE_SECS:-3}
client=${CLIENT:-wrk}
case $client in wrk|fibra-bench) ;; *) echo "CLIENT: wrk or fibra-bench, not $client" >&2; exit 1 ;; esac
run=$(mktemp -d /tmp/fibra-site.XXXXXX)
chmod 755 "$run"   # nginx's worker runs as nobody when we are root
pids=()
trap 'for p in "${pids[@]}"; do server_stop "$p" TERM; done; rm -rf "$run"' EXIT
# shellcheck source=bench/lib/pinned.sh
source "$here/lib/pinned.sh"
# shellcheck source=bench/lib/site_make.sh
source "$here/lib/site_make.sh"
files="python3 $here/lib/site_files.py"
site_make "$site" "$run"
# How long both servers trust a cached file before they look at it again (fibra re-opens it,
# nginx stats it): longer than the whole run, so that the rounds and the strace window measure
# the steady state rather than a burst of revalidations 60 s (both defaults) into the run.
# Nothing changes under the benchmark; fibra sees changes through inotify anyway.
ttl=${CACHE_TTL:-3600}

port_f=18941; port_n=18942
sed -e "s|@RUN@|$run|g" -e "s|@ROOT@|$run/root|g" -e "s|@PORT@|$port_n|g" -e "s|@CACHE@|$cache|g" -e "s|@TTL@|$ttl|g" \
    "$here/site/nginx.conf.in" > "$run/nginx.conf"
# shellcheck disable=SC2086
pf=$(server_start 0 "$fibra" serve "$run/root" --workers 1 -p $port_f --cache-entries "$cache" --cache-ttl "$ttl" ${FIBRA_ARGS:-})
pids+=("$pf")
pn=$(server_start 0 nginx -p "$run" -c "$run/nginx.conf")
pids+=("$pn")
server_wait $port_f; server_wait $port_n
declare -A pgid=([fibra]=$pf [nginx]=$pn) port=([fibra]=$port_f [nginx]=$port_n)
servers="fibra nginx"
if [ -n "${FIBRA_BASE:-}" ]; then
    # shellcheck disable=SC2086
    pb=$(server_start 0 "$FIBRA_BASE" serve "$run/root" --workers 1 -p 18943 --cache-entries "$cache" --cache-ttl "$ttl" ${FIBRA_ARGS:-})
    pids+=("$pb"); server_wait 18943
    pgid[base]=$pb; port[base]=18943; servers="fibra nginx base"
fi

load() { # port secs seed -> "N requests in" and "Requests/sec: R" lines; fails on any non-2xx
    local out
    if [ "$client" = fibra-bench ]; then
        out=$(/usr/bin/time -f %P -o "$run/client_cpu" taskset -c 1 "$fibra" bench -k -c"$conns" -d"${2}s" --paths "$run/list" --seed "$3" ${BENCH_ARGS:-} \
              --json "http://127.0.0.1:$1/") || { echo "port $1: fibra bench failed" >&2; exit 1; }
        python3 -c '
import json, sys
r = json.load(sys.stdin)
q = r["requests"]
if q["failed"] or q["errored"] or not q["succeeded"]:
    sys.exit(f"port {sys.argv[1]}: {q}")
print(q["succeeded"], "requests in", r["duration_secs"])
print("Requests/sec:", round(r["requests_per_sec"], 2))' "$1" <<< "$out" || exit 1
        return
    fi
    out=$(/usr/bin/time -f %P -o "$run/client_cpu" taskset -c 1 wrk -t1 -c"$conns" -d"${2}s" -s "$here/lua/paths.lua" \
          "http://127.0.0.1:$1" -- "$run/list" "$3")
    if grep -qE 'Non-2xx|Socket errors' <<< "$out"; then
        echo "port $1: $(grep -E 'Non-2xx|Socket errors' <<< "$out")" >&2; exit 1
    fi
    echo "$out"
}
# With PERF=1, each round also samples the server at 10 kHz (perf record -e cpu-clock) from
# its second second to one second before its end: user and system CPU per request from ~40x
# more samples than the kernel's 250 Hz utime/stime ticks, the same split (a sample is user
# time when it interrupted user code). Printed as two more columns; both estimates get medians.
perf_sample() { # sid secs -> "user_samples kernel_samples" of a perf record over the session's processes
    perf record -q -e cpu-clock -F 10000 -p "$(server_pids "$1" | xargs | tr ' ' ,)" -o "$run/perf.data" -- sleep "$2" > /dev/null 2>&1
    perf report -q -i "$run/perf.data" --sort dso -g none -n 2> /dev/null \
        | awk '{if ($3 == "[kernel.kallsyms]") k += $2; else u += $2} END {print u+0, k+0}'
}
measure() { # name seed -> "name req/s user_us sys_us client_cpu_% [perf_user_us perf_sys_us]"
    local c0 c1 out window perf=""
    c0=$(server_cpu "${pgid[$1]}")
    if [ "${PERF:-0}" = 1 ]; then
        window=$((secs - 2))
        (sleep 1; perf_sample "${pgid[$1]}" "$window" > "$run/perf.counts") &
    fi
    out=$(load "${port[$1]}" "$secs" "$2")
    c1=$(server_cpu "${pgid[$1]}")
    if [ "${PERF:-0}" = 1 ]; then
        wait
        perf=$(awk -v rps="$(awk '/Requests\/sec/{print $2}' <<< "$out")" -v w="$window" \
            '{printf "%.2f %.2f", $1 * 100 / (rps * w), $2 * 100 / (rps * w)}' "$run/perf.counts")
    fi
    echo "$1 $c0 $c1 $(awk '/requests in/{print $1}' <<< "$out") $(awk '/Requests\/sec/{print $2}' <<< "$out") $(tr -d '%' < "$run/client_cpu")" \
        | awk -v tck="$(getconf CLK_TCK)" -v perf="$perf" '{printf "%s %s %.2f %.2f %s %s\n", $1, $7, ($4-$2)/tck*1e6/$6, ($5-$3)/tck*1e6/$6, $8, perf}'
}

echo "$site site, $conns conns, ${secs}s x $rounds rounds, caches of $cache entries, client $client"
for s in $servers; do
    $files check "${port[$s]}" "$run/root" "$run/list"
    load "${port[$s]}" 2 0 > /dev/null   # warm-up: fills both caches
done
results=()
for r in $(seq "$rounds"); do
    order=$servers; [ $((r % 2)) = 0 ] && order=$(tr ' ' '\n' <<< "$servers" | tac | xargs)
    for s in $order; do
        results+=("$(measure "$s" "$r")"); echo "round $r ${results[-1]}"
    done
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics as st
rows = [l.split() for l in sys.stdin if l.strip()]
names = [s for s in ("fibra", "nginx", "base") if any(r[0] == s for r in rows)]
m = {s: [st.median(float(r[i]) for r in rows if r[0] == s) for i in (1, 2, 3, 4)] for s in names}
for s, (rps, u, k, c) in m.items():
    print(f"median {s}: {rps:,.0f} req/s, CPU/request {u + k:.2f} us (user {u:.2f}, system {k:.2f}), client {c:.0f}% CPU")
# PERF=1: user and system per request from the 10 kHz samples.
if all(len(r) == 7 for r in rows):
    pm = {s: [st.median(float(r[i]) for r in rows if r[0] == s) for i in (5, 6)] for s in names}
    for s, (u, k) in pm.items():
        print(f"median {s} (perf samples): user {u:.2f} us, system {k:.2f} us per request")
    for s in names[1:]:
        pr = [float(f[5]) / float(n[5]) for f, n in zip([r for r in rows if r[0] == "fibra"], [r for r in rows if r[0] == s])]
        ratio = pm["fibra"][0] / pm[s][0]
        print(f"fibra/{s} (perf samples): user {ratio:.2f}x; per-round median {st.median(pr):.2f}x")
# Ratios of the medians, then the median of the per-round ratios (the servers of a round ran
# back to back: steadier when the machine drifts between rounds).
per = {s: [r for r in rows if r[0] == s] for s in names}
def ratios(a, b):
    return (a[0] / b[0], (a[1] + a[2]) / (b[1] + b[2]), a[1] / b[1], a[2] / b[2])
for s in names[1:]:
    r = ratios(m["fibra"], m[s])
    pr = [ratios([float(x) for x in f[1:]], [float(x) for x in n[1:]]) for f, n in zip(per["fibra"], per[s])]
    pm = [st.median(p[i] for p in pr) for i in range(4)]
    print(f"fibra/{s}: req/s {r[0]:.2f}x, CPU/request {r[1]:.2f}x, user {r[2]:.2f}x, system {r[3]:.2f}x; "
          f"per-round medians {pm[0]:.2f}x, {pm[1]:.2f}x, {pm[2]:.2f}x, {pm[3]:.2f}x")'

[ "$strace_secs" = 0 ] && exit 0
for s in $servers; do
    args=()
    for p in $(server_pids "${pgid[$s]}"); do args+=(-p "$p"); done
    strace -c -f -o "$run/strace.$s" "${args[@]}" 2> /dev/null &
    tracer=$!
    sleep 1   # strace attaches to every thread
    reqs=$(load "${port[$s]}" "$strace_secs" 99 | awk '/requests in/{print $1}')
    kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
    python3 - "$s" "$reqs" "$run/strace.$s" <<'PY'
import re, sys
name, reqs, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
calls, errors = {}, {}
for line in open(path):
    p = line.split()
    if len(p) >= 5 and re.match(r"^[\d.]+$", p[0]) and p[-1] != "total":
        calls[p[-1]] = int(p[3])
        errors[p[-1]] = int(p[4]) if len(p) == 6 else 0
top = sorted(calls, key=calls.get, reverse=True)[:6]
print(f"strace {name}: {sum(calls.values()) / reqs:.2f} syscalls/request, "
      f"{sum(errors.values()) / reqs:.3f} failing ({reqs} requests): "
      + ", ".join(f"{c} {calls[c] / reqs:.2f}" + (f" ({errors[c] / reqs:.2f} failing)" if errors[c] else "")
                  for c in top))
PY
done
