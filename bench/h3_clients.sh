#!/usr/bin/env bash
# HTTP/3 clients against `fibra hello --http3`: Python aioquic (pinned, in a venv under
# bench/target) sends GETs, a POST echoed back and a request for a missing path over one
# QUIC connection, with datagrams capped at 1,452 bytes; curl checks that HTTPS answers carry
# `Alt-Svc: h3=":PORT"`. Exit status 1 on any wrong answer.
#
#   bench/h3_clients.sh [PORT]
#
# Needs python3 (with venv), openssl, curl; pip fetches aioquic the first time. (aioquic's
# client takes a HEAD answer's Content-Length for its body's and closes the connection with
# H3_MESSAGE_ERROR, so HEAD is left to tests/http3.rs.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
port="${1:-18443}"
venv="$root/bench/target/h3-venv"
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "aioquic==1.7.2"
fi
cargo build --release -p fibra-cli --manifest-path "$root/Cargo.toml" 2>&1 | tail -1
tmp="$(mktemp -d)"
server=""
cleanup() {
    [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost 2>/dev/null
"$root/target/release/fibra" hello --workers 1 --port "$port" --tls-cert "$tmp/cert.pem" \
    --tls-key "$tmp/key.pem" --http3 >"$tmp/server.log" 2>&1 &
server=$!
for _ in $(seq 50); do
    grep -q "HTTP/3 on" "$tmp/server.log" && break
    sleep 0.1
done
cat "$tmp/server.log"
status=0
"$venv/bin/python" "$root/bench/h3/client.py" 127.0.0.1 "$port" \
    "GET:/plaintext:200:Hello, World!" \
    'GET:/json:200:{"message":"Hello, World!"}' \
    "POST:/echo:200:a body sent over HTTP/3" \
    "GET:/nothing:404" \
    "GET:/plaintext:200:Hello, World!" || status=1
alt=$(curl -sk -D - -o /dev/null "https://127.0.0.1:$port/plaintext" | tr -d '\r' | grep -i '^alt-svc:' || true)
if [[ "$alt" == "alt-svc: h3=\":$port\"; ma=86400" ]]; then
    echo "ok  HTTPS answer carries $alt"
else
    echo "FAILED  HTTPS answer's Alt-Svc: '$alt'"
    status=1
fi
exit "$status"
