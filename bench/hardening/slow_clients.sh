#!/usr/bin/env bash
# Slow-client attacks with slowhttptest against `fibra serve` while a probe keeps asking:
# slowloris (-H), slow body (-B) and slow read (-X). Each attack runs DURATION seconds
# (default 60) with 1,000 connections; the server has a 5 s header timeout and a 5 s idle
# timeout. `fibra serve` answers a POST without reading its body, so the slow body attack is
# also run against the hardening server's `/echo` (which reads it) with a 5 s body timeout. Outcome per attack: slowhttptest's verdict and connection counts (from its CSV),
# and the probe's successes, failures and worst latency. Loopback only, bounded in time.
#
# usage: bench/hardening/slow_clients.sh [DURATION]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
DURATION=${1:-60}
command -v slowhttptest >/dev/null || { apt-get install -y slowhttptest >/dev/null; }
build

DIR=$(mktemp -d)
trap 'stop ${SPID:-0}; stop ${HPID:-0}; stop ${PROBE:-0}; rm -rf "$DIR"' EXIT
echo hello > "$DIR/index.html"
head -c $((4 << 20)) /dev/zero > "$DIR/big.bin"
PORT=$(free_port)
ulimit -n "$(ulimit -Hn)"
"$FIBRA" serve "$DIR" --port "$PORT" --workers 1 --header-timeout 5 --idle-timeout 5 \
  > "$OUT/slow-serve.log" 2>&1 &
SPID=$!
wait_http "http://127.0.0.1:$PORT/"
HPORT=$(free_port)
"$HSERVER" --port "$HPORT" --workers 1 --header-timeout 5 --idle-timeout 5 --body-timeout 5 \
  > "$OUT/slow-hserver.log" 2>&1 &
HPID=$!
wait_http "http://127.0.0.1:$HPORT/plaintext"

# probe NAME URL: one request every 0.5 s until killed; one line per request.
probe() {
  while :; do
    curl -s -o /dev/null --max-time 5 -w '%{http_code} %{time_total}\n' "$2" || echo "000 5"
    sleep 0.5
  done > "$OUT/$1-probe.txt"
}

summary() { # NAME
  local csv="$OUT/$1.csv"
  local probe="$OUT/$1-probe.txt"
  local ok fail worst maxconn closed
  ok=$(awk '$1 == 200' "$probe" | wc -l)
  fail=$(awk '$1 != 200' "$probe" | wc -l)
  worst=$(awk 'BEGIN {m = 0} $1 == 200 && $2 > m {m = $2} END {printf "%.3f", m}' "$probe")
  # slowhttptest CSV: Seconds,Closed,Pending,Connected,Service Available
  maxconn=$(awk -F, 'NR > 1 && $4 > m {m = $4} END {print m + 0}' "$csv")
  closed=$(awk -F, 'NR > 1 {c = $2} END {print c + 0}' "$csv")
  printf '%-10s probe: %d ok, %d failed, worst %ss | attack: max %d connected, %d closed | server: %s | slowhttptest: %s\n' \
    "$1" "$ok" "$fail" "$worst" "$maxconn" "$closed" "$(paste -sd ' ' "$OUT/$1-mid.txt" 2>/dev/null)" \
    "$(sed 's/\x1b\[[0-9;]*m//g' "$OUT/$1.out" | grep -E 'service available:|Exit status' | tail -2 | tr -s ' ' | paste -sd ';')"
}

attack() { # NAME PROBE_URL SERVER_PID slowhttptest-args...
  local name=$1 url=$2 pid=$3; shift 3
  log "$name: slowhttptest $*"
  probe "$name" "$url" & PROBE=$!
  # the server's open fds and RSS 8 s into the attack (all attack connections are open by
  # then) and 5 s before its end
  ( sleep 8; echo "at 8 s $(fd_count "$pid") fds, $(rss_kb "$pid") KiB RSS;" > "$OUT/$name-mid.txt"
    sleep $((DURATION - 13)); echo "at $((DURATION - 5)) s $(fd_count "$pid") fds" >> "$OUT/$name-mid.txt" ) &
  local sampler=$!
  timeout $((DURATION + 60)) slowhttptest "$@" -c 1000 -r 200 -l "$DURATION" -g \
    -o "$OUT/$name" > "$OUT/$name.out" 2>&1 || true
  stop $PROBE; PROBE=0
  wait $sampler
  summary "$name" | tee -a "$OUT/slow_clients.txt"
}

: > "$OUT/slow_clients.txt"
FILE_PROBE="http://127.0.0.1:$PORT/index.html"
attack slowloris "$FILE_PROBE" "$SPID" -H -i 10 -u "http://127.0.0.1:$PORT/index.html"
attack slowbody "$FILE_PROBE" "$SPID" -B -i 10 -s 8192 -u "http://127.0.0.1:$PORT/index.html"
attack slowread "$FILE_PROBE" "$SPID" -X -w 512 -y 1024 -n 5 -z 32 -k 3 -u "http://127.0.0.1:$PORT/big.bin"
attack slowbody-echo "http://127.0.0.1:$HPORT/plaintext" "$HPID" -B -i 10 -s 8192 \
  -u "http://127.0.0.1:$HPORT/echo"
log "server still alive: $(curl -s --max-time 5 "http://127.0.0.1:$PORT/index.html")"
log "results in $OUT/slow_clients.txt"
