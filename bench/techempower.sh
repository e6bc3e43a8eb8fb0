#!/usr/bin/env bash
# The TechEmpower test types with PostgreSQL: fibra's `techempower` example (fibra-http +
# fibra-postgres) against axum 0.8 + tokio-postgres (bench/peers/axum-pg), side by side in
# one run, against a throw-away PostgreSQL cluster made here.
#
#   bench/techempower.sh [ROUNDS] [SECONDS] [TESTS...]
#       defaults: 5 rounds, 10 s per run, tests: db queries fortunes updates json plaintext
#
# The cluster: initdb in a temporary directory (as the postgres user when run as root), on a
# free loopback port, TFB's user, database and data (World 10,000 rows, Fortune 12 rows,
# crates/fibra-postgres/examples/techempower/schema.sql), synchronous_commit off and 256 MB of
# shared buffers (TFB's settings), removed at exit. PostgreSQL runs on CPU 1 with the load
# generator (`h2load --h1 -t1 -c256`), the server under test alone on CPU 0, with one worker
# (one thread) and the same number of database connections (POOL, default 1; fibra's
# --pool-size, the peer's third argument). One connection: PostgreSQL has one core, and both
# servers pipelined best on one in a first try (/db: both ~20% faster than with 4).
# `queries` and `updates` ask for 20 rows.
#
# Each run: the server is started, every test's answer is checked (status 200, JSON shape,
# 13 fortunes), a 2-second warm-up, then h2load for SECONDS. Servers alternate within each
# round. Prints per run and the medians: req/s, server CPU µs per request (user+system of the
# server's process group over the measured run, from /proc/PID/stat), PostgreSQL's CPU µs per
# request likewise, and the ratios fibra ÷ axum; a run in which any response is not 2xx fails.
#
# RATE=N holds the load at N requests per second in total (h2load --rps, N/256 per
# connection) instead of as fast as the servers answer: both servers then do the same work
# per second, PostgreSQL and the load generator are not saturated, and the CPU per request
# compares the servers alone (req/s then only shows that both kept up).
#
# SYSCALLS=1 also counts, with `perf stat` on the server's process over each measured run,
# its system calls per request (all of them, and `recvfrom`, `sendto`, `writev`,
# `epoll_wait`, `setsockopt` alone), the packets it sends (`net:net_dev_xmit`: responses,
# queries and pure ACKs) and its context switches, and prints their medians. Tracing those
# calls costs the server some CPU: compare the CPU figures of runs without it. It also reads
# the server threads' voluntary and involuntary context switches from /proc per request
# (`sleeps`: times a thread blocked, in `epoll_wait` or elsewhere; `preempted`).
#
# BASELINE=PATH compares the example with another build of itself (PATH: an older
# `techempower` binary, run with the same flags) instead of axum: a paired before/after.
#
# Needs h2load (nghttp2-client), curl, python3 and PostgreSQL's server binaries (Debian's
# postgresql package); builds both servers (release) unless NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS=${1:-5}
SECS=${2:-10}
shift 2 2>/dev/null || shift $#
TESTS=("$@")
[ ${#TESTS[@]} -gt 0 ] || TESTS=(db queries fortunes updates json plaintext)
CONNS=256
RPS_ARG=()
if [ -n "${RATE:-}" ]; then
  RPS_ARG=(--rps "$(python3 -c "print(max(0.1, ${RATE} / ${CONNS}))")")
fi
POOL=${POOL:-1}
PERF_EVENTS=raw_syscalls:sys_enter,syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto
PERF_EVENTS+=,syscalls:sys_enter_writev,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_setsockopt
PERF_EVENTS+=,net:net_dev_xmit,context-switches
if [ "${SYSCALLS:-0}" = 1 ] && ! command -v perf >/dev/null; then
  echo "techempower.sh: SYSCALLS=1 needs perf" >&2; exit 2
fi
for tool in h2load curl python3 taskset; do
  command -v "$tool" >/dev/null || { echo "techempower.sh: $tool is missing" >&2; exit 2; }
done
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$PGBIN/initdb" ] || { echo "techempower.sh: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 2; }

PEER_DIR="$ROOT/bench/peers/axum-pg"
PEER=axum
if [ -n "${BASELINE:-}" ]; then
  [ -x "$BASELINE" ] || { echo "techempower.sh: BASELINE $BASELINE is not an executable" >&2; exit 2; }
  PEER=base
fi
if [ "${NO_BUILD:-0}" != 1 ]; then
  (cd "$ROOT" && cargo build --release -q -p fibra-postgres --example techempower)
  [ $PEER = base ] || (cd "$PEER_DIR" && cargo build --release -q --target-dir "$ROOT/bench/target/cargo")
fi
FIBRA="$ROOT/target/release/examples/techempower"
AXUM="$ROOT/bench/target/cargo/release/bench-peer-axum-pg"

source "$ROOT/bench/lib/pg_cluster.sh"
pg_run_dir

source "$ROOT/bench/lib/measure.sh"

# The cluster, on CPU 1.
pg_cluster_start

start() { # NAME PORT -> sets SPID (process group leader)
  case $1 in
    fibra) setsid taskset -c 0 "$FIBRA" --addr 127.0.0.1 --port "$2" --workers 1 \
             --pool-size "$POOL" --database-url "$URL" >"$RUN/$1.log" 2>&1 & ;;
    base) setsid taskset -c 0 "$BASELINE" --addr 127.0.0.1 --port "$2" --workers 1 \
             --pool-size "$POOL" --database-url "$URL" >"$RUN/$1.log" 2>&1 & ;;
    axum) setsid taskset -c 0 "$AXUM" "$2" "$URL" "$POOL" >"$RUN/$1.log" 2>&1 & ;;
  esac
  SPID=$!
  PIDS+=("$SPID")
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$2/json" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "techempower.sh: $1 did not come up" >&2; cat "$RUN/$1.log" >&2; exit 1
}

check() { # NAME PORT: every test's answer has the right status and shape
  python3 - "$1" "http://127.0.0.1:$2" <<'EOF'
import json, sys, urllib.request
name, base = sys.argv[1:]
def get(p):
    with urllib.request.urlopen(base + p) as r:
        assert r.status == 200, (name, p, r.status)
        assert r.headers["Server"] and r.headers["Date"], (name, p, "Server/Date")
        return r.headers["Content-Type"], r.read()
def world(w):
    assert set(w) == {"id", "randomNumber"} and 1 <= w["id"] <= 10000, (name, w)
ct, b = get("/json"); assert json.loads(b) == {"message": "Hello, World!"}, (name, b)
ct, b = get("/plaintext"); assert b == b"Hello, World!", (name, b)
ct, b = get("/db"); world(json.loads(b))
for p, n in (("/queries?queries=20", 20), ("/updates?queries=20", 20), ("/queries?queries=abc", 1)):
    ct, b = get(p); rows = json.loads(b); assert len(rows) == n, (name, p); [world(w) for w in rows]
ct, b = get("/fortunes")
assert ct.startswith("text/html") and b.count(b"<tr><td>") == 13 and b"&lt;script&gt;" in b, (name, b)
EOF
}

ctx_switches() { # PID -> "voluntary involuntary" context switches of all its threads
  local v=0 n=0 a b f
  for f in /proc/"$1"/task/*/status; do
    a=$(awk '/^voluntary_ctxt_switches/{print $2}' "$f" 2>/dev/null) || continue
    b=$(awk '/^nonvoluntary_ctxt_switches/{print $2}' "$f" 2>/dev/null) || continue
    v=$((v + ${a:-0})); n=$((n + ${b:-0}))
  done
  echo "$v $n"
}

pg_ticks() { # the postmaster and its children (backends included)
  local sum=0
  for p in "$PGPID" $(pgrep -P "$PGPID"); do
    read -r -a f <"/proc/$p/stat" || continue
    sum=$((sum + f[13] + f[14]))
  done
  echo "$sum"
}

HZ=$(getconf CLK_TCK)
for t in "${TESTS[@]}"; do
  path=$(tfb_path "$t")
  declare -A RPS=() CPU=() DBCPU=() SYS=()
  for r in $(seq "$ROUNDS"); do
    for s in fibra $PEER; do
      port=$(free_port)
      start "$s" "$port"
      check "$s" "$port"
      url="http://127.0.0.1:$port$path"
      taskset -c 1 h2load --h1 -t1 -c$CONNS -D 2 "${RPS_ARG[@]}" "$url" >/dev/null 2>&1
      if [ "${SYSCALLS:-0}" = 1 ]; then
        perf stat -x, -o "$RUN/perf.txt" -p "$SPID" -e "$PERF_EVENTS" &
        PERF=$!
      fi
      [ "${SYSCALLS:-0}" = 1 ] && c0=$(ctx_switches "$SPID")
      t0=$(cpu_ticks "$SPID"); d0=$(pg_ticks)
      out=$(taskset -c 1 h2load --h1 -t1 -c$CONNS -D "$SECS" "${RPS_ARG[@]}" "$url" 2>&1)
      t1=$(cpu_ticks "$SPID"); d1=$(pg_ticks)
      if [ "${SYSCALLS:-0}" = 1 ]; then
        c1=$(ctx_switches "$SPID")
        kill -INT "$PERF"; wait "$PERF" || true
      fi
      kill -- "-$SPID" 2>/dev/null || true
      wait "$SPID" 2>/dev/null || true
      done_=$(sed -n 's/^requests: .* \([0-9]*\) done, .*/\1/p' <<<"$out")
      ok=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' <<<"$out")
      rps=$(sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p' <<<"$out")
      if [ -z "$done_" ] || [ "$done_" = 0 ] || [ "${ok:-0}" != "$done_" ]; then
        echo "techempower.sh: $s $path: ${ok:-0} of ${done_:-0} responses were 2xx" >&2
        grep -E "^requests:|^status codes:" <<<"$out" >&2
        exit 1
      fi
      us=$(python3 -c "print(f'{($t1-$t0)/$HZ*1e6/$done_:.2f}')")
      dbus=$(python3 -c "print(f'{($d1-$d0)/$HZ*1e6/$done_:.2f}')")
      RPS[$s]+="$rps "
      CPU[$s]+="$us "
      DBCPU[$s]+="$dbus "
      printf '%-9s round %d %-5s %9.0f req/s  %7s us server CPU/req  %7s us PostgreSQL CPU/req  (%s responses, all 2xx)\n' \
        "$t" "$r" "$s" "$rps" "$us" "$dbus" "$done_"
      if [ "${SYSCALLS:-0}" = 1 ]; then
        # perf counts from its start to its end, around the measured run: per request of
        # the run (a slight overcount, alike for both servers).
        calls=$(python3 - "$done_" "$RUN/perf.txt" $c0 $c1 <<'EOF'
import sys
n = int(sys.argv[1])
out = []
for line in open(sys.argv[2]):
    f = line.strip().split(',')
    if len(f) > 2 and f[0].replace('.', '').isdigit():
        name = f[2].split(':')[-1].replace('sys_enter_', '').replace('sys_enter', 'syscalls')
        out.append(f"{name}={float(f[0]) / n:.3f}")
v0, i0, v1, i1 = (int(x) for x in sys.argv[3:7])
out.append(f"sleeps={(v1 - v0) / n:.4f} preempted={(i1 - i0) / n:.4f}")
print(' '.join(out))
EOF
)
        SYS[$s]+="$calls;"
        echo "          per request: $calls"
      fi
    done
  done
  python3 - "$t" "$PEER" "${RPS[fibra]}" "${CPU[fibra]}" "${DBCPU[fibra]}" "${RPS[$PEER]}" "${CPU[$PEER]}" "${DBCPU[$PEER]}" <<'EOF'
import statistics as st, sys
t, peer = sys.argv[1:3]
fr, fc, fd, ar, ac, ad = ([float(x) for x in a.split()] for a in sys.argv[3:])
m = st.median
print(f"{t}: median  fibra {m(fr):9.0f} req/s {m(fc):7.2f} us CPU/req (PostgreSQL {m(fd):.2f})")
print(f"{t}: median  {peer:5} {m(ar):9.0f} req/s {m(ac):7.2f} us CPU/req (PostgreSQL {m(ad):.2f})")
print(f"{t}: fibra / {peer}: req/s {m(fr)/m(ar):.2f}, server CPU per request {m(fc)/m(ac):.2f}"
      f" (per-round CPU ratios: {' '.join(f'{a/b:.2f}' for a, b in zip(fc, ac))})")
EOF
  if [ "${SYSCALLS:-0}" = 1 ]; then
    python3 - "$t" "${SYS[fibra]}" "$PEER" "${SYS[$PEER]}" <<'EOF'
import statistics as st, sys
t = sys.argv[1]
for name, runs in (("fibra", sys.argv[2]), (sys.argv[3], sys.argv[4])):
    per = {}
    for run in filter(None, runs.split(';')):
        for kv in run.split():
            k, v = kv.split('=')
            per.setdefault(k, []).append(float(v))
    print(f"{t}: median per request, {name}: " + ' '.join(f"{k} {st.median(v):.3f}" for k, v in per.items()))
EOF
  fi
  unset RPS CPU DBCPU SYS
done
