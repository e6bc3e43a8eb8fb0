# Sourced by the site-file acceptance scripts (bench/site_failover.sh, bench/site_reload.sh,
# bench/site_check.sh): the fibra binary, a results folder that is kept, servers started in
# sessions of their own and stopped at exit, and wrk's counts read back from
# bench/lua/statuses.lua. Needs ROOT; site_ops_init NAME TOOL... sets FIBRA, OUT and the
# exit trap.
#
# The binary is $FIBRA if set, else release/fibra under $CARGO_TARGET_DIR (or target/),
# built first unless NO_BUILD=1. Results go to $SITE_OPS_OUT (default target/site-ops)
# /NAME-YYYYmmdd-HHMMSS/.

source "$ROOT/bench/lib/measure.sh" # free_port

# site_ops_init NAME TOOL... : checks the tools, builds fibra, makes OUT, sets the exit trap.
site_ops_init() {
  local name=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$name: $tool is missing" >&2; exit 2; }
  done
  if [ -z "${FIBRA:-}" ]; then
    [ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
    FIBRA="${CARGO_TARGET_DIR:-$ROOT/target}/release/fibra"
  fi
  [ -x "$FIBRA" ] || { echo "$name: no binary at $FIBRA" >&2; exit 2; }
  OUT="${SITE_OPS_OUT:-$ROOT/target/site-ops}/$name-$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$OUT"
  PIDS=()
  trap site_ops_cleanup EXIT
}

# Every session started with spawn, SIGKILLed if still there 5 s after SIGTERM.
site_ops_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 100); do alive "$p" || break; sleep 0.05; done
    kill -KILL -- "-$p" 2>/dev/null || true
  done
}

# alive PID : whether PID runs (a zombie does not).
alive() { local s; s=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${s:0:1}" != Z ]; }

# spawn NAME CMD... : runs CMD in a session of its own (its pid is the session's and the
# group's id), output appended to $OUT/NAME.log; the pid goes to PIDS and to SPAWNED.
spawn() {
  local name=$1
  shift
  setsid "$@" >>"$OUT/$name.log" 2>&1 &
  SPAWNED=$!
  PIDS+=("$SPAWNED")
}

# wait_ok URL [CURL_ARGS...] : until URL answers 2xx, at most 5 s.
wait_ok() {
  local url=$1
  shift
  for _ in $(seq 250); do
    curl -sf -o /dev/null -m 1 "$@" "$url" && return 0
    sleep 0.02
  done
  echo "$url: no 2xx answer after 5 s" >&2
  return 1
}

# now : wall-clock time, Unix seconds with milliseconds (what statuses.lua prints too).
now() { date +%s.%3N; }

# wrk_counts FILE : sets RESPONSES, NON2XX and SOCKET_ERRORS (their sum) from the
# "statuses:" lines of a wrk run with bench/lua/statuses.lua; 1 if they are missing.
wrk_counts() {
  RESPONSES=$(awk '/^statuses: responses /{print $3}' "$1")
  NON2XX=$(awk '/^statuses: non-2xx /{print $3}' "$1")
  SOCKET_ERRORS=$(awk '/^statuses: socket errors /{print $5 + $7 + $9 + $11}' "$1")
  [ -n "$RESPONSES" ] && [ -n "$NON2XX" ] && [ -n "$SOCKET_ERRORS" ]
}
