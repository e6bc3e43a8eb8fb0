#!/usr/bin/env bash
# h2spec (the HTTP/2 conformance suite) against `fibra hello`, cleartext (prior knowledge)
# and over TLS (ALPN h2), ROUNDS times each; prints each run's summary and the failed cases.
#
#   bench/h2spec.sh [ROUNDS]     (needs go and openssl; builds fibra unless NO_BUILD=1)
#
# h2spec is built with `go install github.com/summerwind/h2spec/cmd/h2spec@latest` (which a
# module proxy may resolve to 2.2.1, 145 cases); H2SPEC=PATH runs another build, e.g. 2.6.0
# (146 cases) built from its git tag with `go build ./cmd/h2spec`.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS="${1:-3}"
for tool in go openssl; do
  command -v "$tool" >/dev/null || { echo "h2spec.sh: $tool is missing" >&2; exit 2; }
done
H2SPEC="${H2SPEC:-$(go env GOPATH)/bin/h2spec}"
[ -x "$H2SPEC" ] || go install github.com/summerwind/h2spec/cmd/h2spec@latest
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
RUN="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$RUN"; }
trap cleanup EXIT
source "$ROOT/bench/lib/h2_servers.sh"
status=0
for round in $(seq "$ROUNDS"); do
  for mode in cleartext tls; do
    if [ "$mode" = tls ]; then args=(-p "$TLS" -t -k); else args=(-p "$PLAIN"); fi
    out=$("$H2SPEC" -h 127.0.0.1 "${args[@]}" -P /plaintext -o 5 2>&1 || true)
    echo "round $round, $mode: $(tail -1 <<<"$out")"
    grep "×" <<<"$out" | sed 's/^ */    /' || true
    tail -1 <<<"$out" | grep -q " 0 failed" || status=1
  done
done
exit "$status"
