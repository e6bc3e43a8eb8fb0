# Sourced by the scripts that load one fibra server over TLS and HTTP/3 (bench/h3_h2_cpu.sh,
# bench/h3_breakdown.sh, bench/h3_instr.sh): a scratch directory cleaned up on exit, a
# throw-away certificate, a root of files, the wait for the server's HTTP/3 listener, and the
# check of a load's report.

# scratch : sets `out` to a new temporary directory and `pid` to empty (the caller sets it to
# the server's process ID); on exit, the server is stopped and the directory removed.
scratch() {
  out="$(mktemp -d)"
  pid=
  trap scratch_cleanup EXIT
}

scratch_cleanup() {
  if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$out"
}

# self_signed DIR : DIR/cert.pem and DIR/key.pem, an EC certificate for localhost and
# 127.0.0.1, valid two days.
self_signed() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -addext "basicConstraints=CA:FALSE" \
    -keyout "$1/key.pem" -out "$1/cert.pem" -days 2 2>/dev/null
}

# files_root DIR : DIR/root with bench/static's index.html (151 bytes) and 1m.bin (1 MiB of
# random bytes).
files_root() {
  mkdir -p "$1/root"
  cp "$(dirname "${BASH_SOURCE[0]}")/../static/index.html" "$1/root/"
  head -c $((1 << 20)) /dev/urandom >"$1/root/1m.bin"
}

# wait_http3 LOG [SECS] : waits (SECS, default 10, at most) until the server's log LOG says
# its HTTP/3 listener is up; otherwise prints the log and fails.
wait_http3() {
  local _
  for _ in $(seq $((${2:-10} * 10))); do
    grep -q "HTTP/3 on udp://" "$1" && return 0
    sleep 0.1
  done
  cat "$1" >&2
  return 1
}

# all_2xx REPORT : whether a load's report (h2load's, or `fibra bench`'s, which prints the same
# lines) shows answers, every one 2xx, and no request failed, errored or timed out (both count
# a non-2xx answer as failed).
all_2xx() {
  grep -qE "status codes: [1-9][0-9]* 2xx, 0 3xx, 0 4xx, 0 5xx" <<<"$1" \
    && ! grep -qE "\b[1-9][0-9]* (failed|errored|timeout)" <<<"$1"
}
