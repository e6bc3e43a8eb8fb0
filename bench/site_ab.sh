#!/usr/bin/env bash
# Two builds of fibra serve on one site at the same time, for changes of a few percent:
#
#   bench/site_ab.sh small|docs ROUNDS OLD_BINARY NEW_BINARY [CONNS]
#
# Both servers run on CPU 0 together, each loaded by its own `fibra bench --paths --drop-bodies
# -cCONNS` (default 32) on CPU 1, and one `perf record -e cpu-clock -F 10000` samples both for
# 5 s of each 7 s round. Both builds see the same machine at the same moment, so the drift that
# moves whole rounds on a shared VM cancels out, and the 10 kHz samples resolve what the
# kernel's 250 Hz utime ticks cannot. A/A runs (one binary in both slots) gave new/old user
# time 0.975-1.026 per round, median 1.02: the second slot reads ~2 % high, so a change of a
# few percent is best checked with the builds swapped too. Prints
# per round each build's req/s and user and system CPU per request (samples x 100 us ÷ requests)
# and new/old user time, then the median. Not a comparison with another server: two servers of
# different kinds sharing a core do not get equal shares of it (see docs/lab/site-2026-11-26c.md).
# Needs perf; the docs site needs Debian's python3-doc.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
site=${1:?usage: bench/site_ab.sh small|docs ROUNDS OLD NEW [CONNS]}
rounds=${2:?rounds}; old=${3:?old binary}; new=${4:?new binary}; conns=${5:-32}
run=$(mktemp -d /tmp/fibra-site-ab.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$run"' EXIT
# shellcheck source=bench/lib/site_make.sh
source "$here/lib/site_make.sh"
files="python3 $here/lib/site_files.py"
site_make "$site" "$run"
bench=$new  # the load generator: the new build's `fibra bench`
declare -A port=([old]=18951 [new]=18952) bin=([old]=$old [new]=$new) pid
for b in old new; do
    taskset -c 0 "${bin[$b]}" serve "$run/root" --workers 1 -p "${port[$b]}" \
        --cache-entries "$cache" --cache-ttl 3600 > "$run/$b.log" 2>&1 &
    pid[$b]=$!; pids+=("$!")
done
sleep 1
for b in old new; do
    $files check "${port[$b]}" "$run/root" "$run/list"
    taskset -c 1 "$bench" bench -k -c"$conns" -d2s --paths "$run/list" --seed 0 --drop-bodies \
        "http://127.0.0.1:${port[$b]}/" > /dev/null
done
tids() { echo " $(ls "/proc/$1/task" | xargs) "; }
ratios=()
for r in $(seq "$rounds"); do
    for b in old new; do
        taskset -c 1 "$bench" bench -k -c"$conns" -d7s --paths "$run/list" --seed "$r" \
            --drop-bodies --json "http://127.0.0.1:${port[$b]}/" > "$run/$b.json" &
        pids+=("$!")
    done
    sleep 1
    perf record -q -e cpu-clock -F 10000 -p "${pid[old]},${pid[new]}" -o "$run/perf.data" \
        -- sleep 5 > /dev/null 2>&1
    wait "${pids[@]:2}"; pids=("${pids[@]:0:2}")
    line=$(python3 - "$run" "$(tids "${pid[old]}")" "$(tids "${pid[new]}")" "$r" <<'PY'
import json, re, subprocess, sys
run, old_tids, new_tids, r = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4]
rps = {}
for b in ("old", "new"):
    q = json.load(open(f"{run}/{b}.json"))
    if q["requests"]["failed"] or q["requests"]["errored"] or not q["requests"]["succeeded"]:
        sys.exit(f"{b}: {q['requests']}")
    rps[b] = q["requests_per_sec"]
out = subprocess.run(["perf", "report", "-q", "-i", f"{run}/perf.data", "--sort", "pid,dso",
                      "-g", "none", "-n"], capture_output=True, text=True).stdout
user = {"old": 0, "new": 0}; kernel = {"old": 0, "new": 0}
for l in out.splitlines():
    m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\d+):\S*\s+(\S+)", l)
    if not m:
        continue
    n, tid, dso = int(m.group(1)), m.group(2), m.group(3)
    b = "old" if tid in old_tids else "new" if tid in new_tids else None
    if b:
        (kernel if dso == "[kernel.kallsyms]" else user)[b] += n
ns = lambda b, c: c[b] * 1e5 / (rps[b] * 5)  # samples of 100 us over 5 s of requests
ratio = ns("new", user) / ns("old", user)
print(f"round {r}: old {rps['old']:,.0f} req/s user {ns('old', user):.0f} ns system "
      f"{ns('old', kernel):.0f} ns | new {rps['new']:,.0f} req/s user {ns('new', user):.0f} ns "
      f"system {ns('new', kernel):.0f} ns | new/old user {ratio:.3f}")
PY
)
    echo "$line"; ratios+=("${line##* }")
done
printf '%s\n' "${ratios[@]}" | python3 -c '
import sys, statistics as st
v = [float(x) for x in sys.stdin]
print(f"new/old user time per request: median {st.median(v):.3f} of {len(v)} rounds")'
