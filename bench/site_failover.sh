#!/usr/bin/env bash
# Failover acceptance: `fibra serve --config` with one proxy route balanced over two
# `fibra hello` upstreams (round robin, active health checks of /health every 1 s), under
# `wrk -t1 -c50` for SECONDS on /plaintext through fibra. At KILL_AT s upstream 1 gets
# SIGKILL; at BACK_AT s it starts again on the same port.
#
#   bench/site_failover.sh [SECONDS] [KILL_AT] [BACK_AT]     (defaults: 20, 5, 12)
#
# Passes when
#   - wrk saw no socket errors, and every non-2xx answer (if any) came within IN_FLIGHT s
#     (default 0.5) of the kill: a request already in flight on the killed upstream. With
#     idempotent GETs retried on the other upstream the count is 0; STRICT=1 demands that;
#   - both upstreams served before the kill, and upstream 2 alone while 1 was down;
#   - the restarted upstream served again within one health interval (+ SLACK s, default
#     0.2, for the sampling and the check's own round trip) of answering its /health.
# Proof of the last: each upstream runs with --metrics; a sampler reads both upstreams'
# fibra_requests_total{class="2xx"} (proxied requests only: /health and /metrics are not
# counted) every 20 ms into samples.txt with the time. The restarted process counts from 0,
# so its first non-zero sample is the first request it got.
#
# Not pinned: fibra, the upstreams and wrk share the cores; rates are not performance
# figures. Needs wrk, curl and python3; see bench/lib/site_ops.sh for FIBRA, NO_BUILD and
# where the results (logs, site.toml, samples.txt, wrk.txt, summary.txt) are kept.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECS=${1:-20}
KILL_AT=${2:-5}
BACK_AT=${3:-12}
IN_FLIGHT=${IN_FLIGHT:-0.5}
SLACK=${SLACK:-0.2}
INTERVAL=1
source "$ROOT/bench/lib/site_ops.sh"
site_ops_init site-failover wrk curl awk setsid python3

FRONT=$(free_port)
U1=$(free_port)
U2=$(free_port)
cat >"$OUT/site.toml" <<TOML
[server]
workers = 1

[[site]]
listen = ["127.0.0.1:$FRONT"]
default = true

[[site.route]]
path = "/"
proxy = { upstreams = ["http://127.0.0.1:$U1", "http://127.0.0.1:$U2"], policy = "round_robin", health = { path = "/health", interval = "${INTERVAL}s" } }
TOML

upstream() { # NAME PORT
  spawn "$1" "$FIBRA" hello --port "$2" --workers 1 --health /health --metrics /metrics
}
upstream up1 "$U1"
UP1=$SPAWNED
upstream up2 "$U2"
wait_ok "http://127.0.0.1:$U1/health"
wait_ok "http://127.0.0.1:$U2/health"
spawn front "$FIBRA" serve --config "$OUT/site.toml"
wait_ok "http://127.0.0.1:$FRONT/plaintext"
sleep $((INTERVAL + 1)) # a health check of each upstream has run

# Every 20 ms: the time, upstream 1's and 2's 2xx counters ("-": not answering), read over
# one keep-alive connection each; the time is taken right after upstream 1's reading.
sampler() {
  python3 -u - "$U1" "$U2" <<'PY'
import http.client, re, sys, time
ports = [int(p) for p in sys.argv[1:]]
conns = {}
count = re.compile(rb'^fibra_requests_total\{class="2xx"\} (\d+)', re.M)
def read(port):
    try:
        c = conns.get(port) or http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
        conns[port] = c
        c.request("GET", "/metrics")
        m = count.search(c.getresponse().read())
        return m.group(1).decode() if m else "-"
    except Exception:
        conns.pop(port, None)
        return "-"
while True:
    first = read(ports[0])
    t = time.time()
    print("%.3f %s %s" % (t, first, read(ports[1])))
    time.sleep(0.02)
PY
}
sampler >"$OUT/samples.txt" &
SAMPLER=$!
PIDS+=("$SAMPLER")

T0=$(now)
wrk -t1 -c50 -d"${SECS}s" -s "$ROOT/bench/lua/statuses.lua" \
  "http://127.0.0.1:$FRONT/plaintext" >"$OUT/wrk.txt" 2>&1 &
WRK=$!
at() { sleep "$(awk -v t0="$T0" -v s="$1" -v n="$(now)" 'BEGIN {d = t0 + s - n; print (d > 0 ? d : 0)}')"; }

at "$KILL_AT"
T_KILL=$(now)
kill -KILL "$UP1"
wait "$UP1" 2>/dev/null || true
at "$BACK_AT"
T_BACK=$(now)
upstream up1 "$U1"
wait_ok "http://127.0.0.1:$U1/health"
T_READY=$(now)

wrk_rc=0
wait "$WRK" || wrk_rc=$?
sleep 0.3
kill "$SAMPLER" 2>/dev/null || true
wait "$SAMPLER" 2>/dev/null || true

rel() { awk -v t="$1" -v t0="$T0" 'BEGIN {printf "%+.3f", t - t0}'; }
{
  echo "fibra: $FIBRA ($(cd "$ROOT" && git rev-parse --short HEAD))"
  echo "front 127.0.0.1:$FRONT, upstream 1 :$U1, upstream 2 :$U2; times from wrk's start ($T0)"
  echo "kill -9 upstream 1 at $(rel "$T_KILL") s; started again at $(rel "$T_BACK") s; its /health answered at $(rel "$T_READY") s"
  echo
  sed -n '/Running/,/Transfer/p' "$OUT/wrk.txt"
  grep '^statuses:' "$OUT/wrk.txt" | grep -v '^statuses: bad' || true
} | tee "$OUT/summary.txt"

fail=0
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
if [ "$wrk_rc" != 0 ] || ! wrk_counts "$OUT/wrk.txt"; then
  say "FAIL: wrk failed (exit $wrk_rc):"; tail -5 "$OUT/wrk.txt"; exit 1
fi

# Non-2xx answers: when they came, against the kill (each status's first and last, then
# the first few one by one).
say ""
say "non-2xx: $NON2XX of $RESPONSES responses"
late=0
if [ "$NON2XX" -gt 0 ]; then
  grep '^statuses: span ' "$OUT/wrk.txt" | awk -v k="$T_KILL" -v t0="$T0" '
    { printf "  %s: %d, the first %+.3f s after the kill (%+.3f s), the last %+.3f s after it (%+.3f s)\n",
        $3, $4, $5 - k, $5 - t0, $6 - k, $6 - t0 }' | tee -a "$OUT/summary.txt"
  grep '^statuses: bad ' "$OUT/wrk.txt" | head -5 | awk -v k="$T_KILL" '
    { body = $5; for (i = 6; i <= NF; i++) body = body " " $i
      printf "    %+.3f s after the kill: %s %s\n", $3 - k, $4, body }' | tee -a "$OUT/summary.txt"
  late=$(grep '^statuses: span ' "$OUT/wrk.txt" |
    awk -v k="$T_KILL" -v w="$IN_FLIGHT" '$5 - k < -0.05 || $6 - k > w {n += $4} END {print n + 0}')
  [ "$late" -gt 0 ] && { say "FAIL: non-2xx of statuses answered outside $IN_FLIGHT s after the kill: not (only) requests in flight on the killed upstream"; fail=1; }
  [ "${STRICT:-0}" = 1 ] && { say "FAIL: STRICT=1 and $NON2XX non-2xx (idempotent GETs should be retried on the other upstream)"; fail=1; }
fi
[ "$SOCKET_ERRORS" = 0 ] || { say "FAIL: $SOCKET_ERRORS socket errors"; fail=1; }

# Who served when: requests per second of each upstream, from the samples.
say ""
say "requests per second by upstream (from the 20 ms samples; - : not answering)"
awk -v t0="$T0" -v secs="$SECS" '
  { s = int($1 - t0); if (s < 0 || s >= secs) next
    for (i = 2; i <= 3; i++) {
      if ($i == "-") { down[s, i] = 1; continue }
      if (last[i] != "" && $i >= last[i]) n[s, i] += $i - last[i]
      if (last[i] != "" && $i < last[i]) n[s, i] += $i   # restarted: counts from 0
      last[i] = $i
    }
    if ($2 == "-") last[2] = "" }
  END { printf "  %4s %9s %9s\n", "s", "up1", "up2"
        for (s = 0; s < secs; s++)
          printf "  %4d %9s %9s\n", s, (down[s, 2] && !n[s, 2] ? "-" : n[s, 2] + 0), (down[s, 3] && !n[s, 3] ? "-" : n[s, 3] + 0) }
' "$OUT/samples.txt" | tee -a "$OUT/summary.txt"

before=$(awk -v k="$T_KILL" '$1 < k && $2 != "-" {a = $2; b = $3} END {print a + 0, b + 0}' "$OUT/samples.txt")
read -r before1 before2 <<<"$before"
say "before the kill: upstream 1 served $before1, upstream 2 $before2"
[ "$before1" -gt 0 ] && [ "$before2" -gt 0 ] || { say "FAIL: not balanced over both upstreams before the kill"; fail=1; }
down=$(awk -v k="$T_KILL" -v b="$T_BACK" '$1 > k + 0.3 && $1 < b {if ($3 != "-") {if (f == "") f = $3; l = $3}} END {print l - f}' "$OUT/samples.txt")
say "while upstream 1 was down: upstream 2 served $down"
[ "$down" -gt 0 ] || { say "FAIL: upstream 2 served nothing while upstream 1 was down"; fail=1; }

# The restarted upstream: its first sample with a request, against its /health answering.
first=$(awk -v b="$T_BACK" '$1 > b && $2 != "-" && $2 > 0 {print $1, $2; exit}' "$OUT/samples.txt")
say ""
say "samples around the restart (time from wrk's start, upstream 1's and 2's counters): the"
say "last before it, the first after /health answered, and those from 0.2 s before the first"
say "request to 0.1 s after it"
awk -v b="$T_BACK" -v r="$T_READY" -v f="${first%% *}" -v t0="$T0" '
  $1 < b {last = $0; next}
  !shown && $1 > r {split(last, l, " "); printf "  %+.3f %s %s\n", l[1] - t0, l[2], l[3]
                    printf "  %+.3f %s %s\n", $1 - t0, $2, $3; shown = 1; next}
  f != "" && $1 >= f - 0.2 && $1 <= f + 0.1 {printf "  %+.3f %s %s\n", $1 - t0, $2, $3}' \
  "$OUT/samples.txt" | tee -a "$OUT/summary.txt"
if [ -z "$first" ]; then
  say "FAIL: the restarted upstream 1 got no request before the end"
  fail=1
else
  read -r t_first n_first <<<"$first"
  prev=$(awk -v t="$t_first" '$1 < t {p = $1} END {print p}' "$OUT/samples.txt")
  lag=$(awk -v a="$t_first" -v r="$T_READY" 'BEGIN {printf "%.3f", a - r}')
  say "restarted upstream 1: /health answered at $(rel "$T_READY") s; first requests ($n_first) seen at $(rel "$t_first") s (sample before: $(rel "$prev") s): $lag s after /health answered"
  awk -v l="$lag" -v max="$(awk -v i="$INTERVAL" -v s="$SLACK" 'BEGIN {print i + s}')" 'BEGIN {exit !(l <= max)}' ||
    { say "FAIL: used again $lag s after it was healthy: more than one health interval ($INTERVAL s + $SLACK s)"; fail=1; }
fi

say ""
say "fibra serve's output:"
sed 's/^/  /' "$OUT/front.log" | tee -a "$OUT/summary.txt"
say "results in $OUT"
[ "$fail" = 0 ] && say PASS || { say FAIL; exit 1; }
