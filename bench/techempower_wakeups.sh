#!/usr/bin/env bash
# How a server of the TechEmpower comparison waits and where its kernel time goes, per
# request: sleeps (voluntary context switches), `epoll_wait` calls and the events each
# returned, system calls, and a profile of CPU 0 split by system call.
#
#   bench/techempower_wakeups.sh OUTDIR SECONDS TEST NAME=BINARY...
#       TEST: db, fortunes, queries (20) or json. NAME=BINARY: a build of the `techempower`
#       example (any NAME), or axum=PATH for bench/peers/axum-pg's binary.
#
# The cluster and the pinning are bench/techempower.sh's (PostgreSQL and h2load --h1 -t1
# -c256 on CPU 1, the server alone on CPU 0 with one worker and one database connection).
# For each server in turn: a 2-second warm-up, then two runs of SECONDS each:
#   A. `perf stat` on the server (context switches, system calls, `epoll_wait` calls and
#      those with a zero timeout), `perf record` of `epoll_wait`'s return values (events per
#      call), `perf record` of CPU 0's context switches, and the server threads' voluntary
#      and involuntary switches from /proc. The tracing costs the server some CPU.
#   B. `perf record -a -C 0 -g -F 2999` (everything on CPU 0, idle included), split into
#      the server's kernel and user time and the time under each system call, per request.
# RATE=N holds the load at N requests per second (h2load --rps), as in techempower.sh.
# Every response must be a 2xx. Data files stay in OUTDIR; the summary is OUTDIR/summary.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 4 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
OUT=$1; SECS=$2; TEST=$3; shift 3
mkdir -p "$OUT"
for tool in h2load curl python3 taskset perf; do
  command -v "$tool" >/dev/null || { echo "techempower_wakeups.sh: $tool is missing" >&2; exit 2; }
done
RPS_ARG=()
[ -n "${RATE:-}" ] && RPS_ARG=(--rps "$(python3 -c "print(max(0.1, ${RATE} / 256))")")
case $TEST in
  db) P=/db ;; fortunes) P=/fortunes ;; queries) P="/queries?queries=20" ;; json) P=/json ;;
  *) echo "techempower_wakeups.sh: unknown test $TEST" >&2; exit 2 ;;
esac
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$PGBIN/initdb" ] || { echo "techempower_wakeups.sh: PostgreSQL is not installed" >&2; exit 2; }
source "$ROOT/bench/lib/pg_cluster.sh"
pg_run_dir
source "$ROOT/bench/lib/measure.sh"

pg_cluster_start

ctx_switches() { # PID -> "voluntary involuntary" context switches of all its threads
  local v=0 n=0 f
  for f in /proc/"$1"/task/*/status; do
    v=$((v + $(awk '/^voluntary_ctxt_switches/{print $2}' "$f")))
    n=$((n + $(awk '/^nonvoluntary_ctxt_switches/{print $2}' "$f")))
  done
  echo "$v $n"
}

load() { # URL SECONDS -> sets DONE (requests), fails unless every response was a 2xx
  local out ok
  out=$(taskset -c 1 h2load --h1 -t1 -c256 -D "$2" "${RPS_ARG[@]}" "$1" 2>&1)
  DONE=$(sed -n 's/^requests: .* \([0-9]*\) done, .*/\1/p' <<<"$out")
  ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' <<<"$out")
  if [ -z "$DONE" ] || [ "$DONE" = 0 ] || [ "${ok:-0}" != "$DONE" ]; then
    echo "techempower_wakeups.sh: ${ok:-0} of ${DONE:-0} responses were 2xx" >&2; exit 1
  fi
}

for spec in "$@"; do
  name=${spec%%=*}; bin=${spec#*=}
  port=$(free_port)
  if [ "$name" = axum ]; then
    setsid taskset -c 0 "$bin" "$port" "$URL" 1 >"$OUT/$name.log" 2>&1 &
  else
    setsid taskset -c 0 "$bin" --addr 127.0.0.1 --port "$port" --workers 1 --pool-size 1 \
      --database-url "$URL" >"$OUT/$name.log" 2>&1 &
  fi
  SPID=$!
  PIDS=("$SPID")
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/json" >/dev/null 2>&1 && break; sleep 0.1; done
  url="http://127.0.0.1:$port$P"
  curl -sf "$url" >/dev/null || { echo "techempower_wakeups.sh: $name does not answer $P" >&2; exit 1; }
  taskset -c 1 h2load --h1 -t1 -c256 -D 2 "${RPS_ARG[@]}" "$url" >/dev/null 2>&1

  # A: waits and system calls.
  perf stat -x, -o "$OUT/$name.stat" -p "$SPID" -e context-switches,raw_syscalls:sys_enter \
    -e syscalls:sys_enter_epoll_wait -e syscalls:sys_enter_epoll_wait --filter 'timeout == 0' \
    -e syscalls:sys_enter_recvfrom -e syscalls:sys_enter_sendto -e syscalls:sys_enter_writev \
    -e syscalls:sys_enter_setsockopt &
  PS=$!
  perf record -q -o "$OUT/$name.epoll.data" -e syscalls:sys_exit_epoll_wait -p "$SPID" >/dev/null 2>&1 &
  PR=$!
  perf record -q -C 0 -e sched:sched_switch -o "$OUT/$name.switch.data" -- sleep "$SECS" >/dev/null 2>&1 &
  PW=$!
  c0=$(ctx_switches "$SPID"); t0=$(cpu_ticks "$SPID")
  load "$url" "$SECS"
  c1=$(ctx_switches "$SPID"); t1=$(cpu_ticks "$SPID")
  kill -INT "$PS" "$PR"; wait "$PS" "$PR" "$PW" || true
  python3 - "$name" "$DONE" "$((t1 - t0))" "$(getconf CLK_TCK)" $c0 $c1 "$OUT" <<'EOF' | tee -a "$OUT/summary"
import subprocess, sys
name, n, ticks, hz, v0, i0, v1, i1, out = sys.argv[1], *map(int, sys.argv[2:9]), sys.argv[9]
stat = {}
for line in open(f"{out}/{name}.stat"):
    f = line.strip().split(',')
    if len(f) > 2 and f[0].isdigit():
        key = f[2].split(':')[-1].replace('sys_enter_', '').replace('sys_enter', 'syscalls')
        key = key + '(timeout 0)' if key in stat else key
        stat[key] = int(f[0]) / n
calls = events = 0
script = subprocess.run(['perf', 'script', '-i', f"{out}/{name}.epoll.data", '-F', 'trace'],
                        capture_output=True, text=True).stdout
for line in script.splitlines():
    calls += 1
    events += int(line.split()[-1], 16)
print(f"{name} A: {n} requests, {ticks / hz * 1e6 / n:.2f} us CPU/req (traced); per request: "
      f"sleeps {(v1 - v0) / n:.4f} preempted {(i1 - i0) / n:.4f} "
      + ' '.join(f"{k} {v:.3f}" for k, v in stat.items())
      + f"; epoll_wait events per call {events / max(calls, 1):.2f}")
EOF

  # B: profile of CPU 0.
  perf record -q -a -C 0 -g -F 2999 -o "$OUT/$name.cpu0.data" -- sleep "$SECS" >/dev/null 2>&1 &
  PB=$!
  t0=$(cpu_ticks "$SPID")
  load "$url" "$SECS"
  t1=$(cpu_ticks "$SPID")
  wait "$PB" || true
  python3 - "$name" "$DONE" "$((t1 - t0))" "$(getconf CLK_TCK)" "$OUT/$name.cpu0.data" "$SPID" <<'EOF' | tee -a "$OUT/summary"
import collections, subprocess, sys
name, n, ticks, hz, data, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
us = 1e6 / 2999 / n  # one sample, per request
script = subprocess.run(['perf', 'script', '-i', data, '-F', 'pid,ip,sym'],
                        capture_output=True, text=True).stdout
roots = ['__x64_sys_sendto', 'do_writev', '__x64_sys_recvfrom', '__x64_sys_epoll_wait',
         '__x64_sys_setsockopt']
split = collections.Counter()
for sample in script.split('\n\n'):
    lines = sample.strip().split('\n')
    if len(lines) < 2:
        continue
    who = lines[0].strip()
    syms = [l.split()[1] if len(l.split()) > 1 else '' for l in lines[1:]]
    if who == '0':
        split['idle'] += 1
        continue
    if who != pid:
        split['other tasks'] += 1
        continue
    ip = lines[1].split()[0]
    split['kernel' if ip.startswith('ffff') else 'user'] += 1
    root = next((r for r in roots if r in syms), None)
    if root:
        split[root] += 1
    if '__schedule' in syms:  # blocking, wherever it happened
        split['__schedule'] += 1
print(f"{name} B: {n} requests, {ticks / hz * 1e6 / n:.2f} us CPU/req (profiled); us per request: "
      f"server {(split['kernel'] + split['user']) * us:.2f} = kernel {split['kernel'] * us:.2f}"
      f" + user {split['user'] * us:.2f}; idle {split['idle'] * us:.2f}; under "
      + ', '.join(f"{r.replace('__x64_sys_', '')} {split[r] * us:.2f}" for r in roots + ['__schedule']))
EOF
  kill -- "-$SPID"; wait "$SPID" 2>/dev/null || true; PIDS=()
done
