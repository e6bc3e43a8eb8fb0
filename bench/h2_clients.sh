#!/usr/bin/env bash
# HTTP/2 interop against `fibra hello`, cleartext (prior knowledge) and TLS (ALPN h2): curl,
# Python httpx (in its own venv), and h2load; each must get HTTP/2 answers with the right
# bytes (a 1 MiB POST to /echo comes back whole).
#
#   bench/h2_clients.sh      (needs curl, python3, h2load, openssl; builds fibra unless NO_BUILD=1)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
for tool in curl python3 h2load openssl; do
  command -v "$tool" >/dev/null || { echo "h2_clients.sh: $tool is missing" >&2; exit 2; }
done
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
VENV="$ROOT/bench/target/httpx-venv"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'httpx[http2]'
fi
RUN="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$RUN"; }
trap cleanup EXIT
source "$ROOT/bench/lib/h2_servers.sh"
head -c 1048576 /dev/urandom >"$RUN/body"
check() { # name, expected, actual
  if [ "$2" != "$3" ]; then echo "h2_clients.sh: $1: expected $2, got $3" >&2; exit 1; fi
  echo "ok: $1"
}
out=$(curl -s --http2-prior-knowledge -o "$RUN/plain.out" -w '%{http_version} %{http_code}' "http://127.0.0.1:$PLAIN/plaintext")
check "curl --http2-prior-knowledge GET" "2 200 Hello, World!" "$out $(cat "$RUN/plain.out")"
out=$(curl -sk --http2 -o "$RUN/tls.out" -w '%{http_version} %{http_code}' "https://127.0.0.1:$TLS/plaintext")
check "curl --http2 (TLS, ALPN) GET" "2 200 Hello, World!" "$out $(cat "$RUN/tls.out")"
out=$(curl -sk --http2 --data-binary "@$RUN/body" -o "$RUN/echo.out" -w '%{http_version} %{http_code}' "https://127.0.0.1:$TLS/echo")
cmp -s "$RUN/body" "$RUN/echo.out" && echoed=same || echoed=differs
check "curl --http2 (TLS) POST 1 MiB /echo" "2 200 same" "$out $echoed"
"$VENV/bin/python" - "$PLAIN" "$TLS" "$RUN/body" <<'PY'
import sys, httpx
plain, tls, body_path = sys.argv[1], sys.argv[2], sys.argv[3]
body = open(body_path, "rb").read()
for name, client, base in [
    ("httpx h2 prior knowledge", httpx.Client(http1=False, http2=True), f"http://127.0.0.1:{plain}"),
    ("httpx h2 over TLS", httpx.Client(http2=True, verify=False), f"https://127.0.0.1:{tls}"),
]:
    with client:
        r = client.get(base + "/plaintext")
        assert (r.http_version, r.status_code, r.text) == ("HTTP/2", 200, "Hello, World!"), (name, r)
        r = client.post(base + "/echo", content=body)
        assert (r.http_version, r.status_code) == ("HTTP/2", 200) and r.content == body, (name, r)
        print(f"ok: {name} (GET, 1 MiB POST /echo)")
PY
for url in "http://127.0.0.1:$PLAIN/plaintext" "https://127.0.0.1:$TLS/plaintext"; do
  out=$(h2load -c10 -m10 -n20000 "$url" 2>&1)
  grep -q "20000 succeeded, 0 failed, 0 errored" <<<"$out" || { echo "$out" >&2; exit 1; }
  grep -q "status codes: 20000 2xx" <<<"$out" || { echo "$out" >&2; exit 1; }
  grep -q "Application protocol: h2" <<<"$out" || { echo "$out" >&2; exit 1; }
  echo "ok: h2load -c10 -m10 -n20000 $url"
done
echo "h2_clients.sh: every client spoke HTTP/2 and got the right bytes"
