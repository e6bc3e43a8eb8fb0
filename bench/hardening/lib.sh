# Shared helpers for the hardening scripts (sourced, not run). Loopback only.
# Every script: `set -euo pipefail`, cleans up its servers on exit, bounds every wait.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FIBRA="$ROOT/target/release/fibra"
HSERVER="$ROOT/target/hardening/release/fibra-hardening-server"
OUT="${OUT:-$ROOT/target/hardening-results}"
mkdir -p "$OUT"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Builds `fibra` (release) and the hardening server unless NO_BUILD=1.
build() {
  [ "${NO_BUILD:-0}" = 1 ] && return 0
  (cd "$ROOT" && cargo build --release -q -p fibra-cli)
  (cd "$ROOT" && cargo build --release -q --manifest-path bench/hardening/server/Cargo.toml \
      --target-dir target/hardening)
}

# A free TCP port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_http URL: polls until URL answers (10 s at most).
wait_http() {
  for _ in $(seq 100); do
    curl -s -o /dev/null --max-time 1 "$1" && return 0
    sleep 0.1
  done
  log "server at $1 did not come up"; return 1
}

# RSS of a process in KiB.
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }

# user+system CPU ticks of a process (fields 14 and 15 of /proc/PID/stat).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Open fds of a process.
fd_count() { ls "/proc/$1/fd" | wc -l; }

# Stops a process started by the script (by its pid), waiting up to 10 s.
stop() {
  local pid=$1
  # No process (an unset PID defaults to 0): `kill 0` would signal this whole process group.
  [[ "$pid" =~ ^[1-9][0-9]*$ ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
