#!/usr/bin/env bash
# Profile-guided build of the `fibra` binary: target/pgo/release/fibra.
#
#   bench/pgo.sh
#
# 1. builds an instrumented binary (target/pgo-gen),
# 2. trains it on loopback: `fibra hello` with wrk (plaintext at 256 and 1,000 connections,
#    16-deep pipelining, /json, /echo with a body, a 404), over TLS (wrk, https) and over
#    HTTP/2 (h2c, the instrumented binary's own `fibra bench --h2` as the client), and
#    `fibra serve` (bench/static), each for a few seconds,
# 3. merges the profile with the toolchain's own `llvm-profdata` (rustup component
#    `llvm-tools`, installed here if missing) and builds with it (target/pgo).
#
# The plain `cargo build --release` binary is what the README runs; the PGO binary is an extra
# the benchmark harness measures beside it (`bench/compare.sh` lists it as `fibra-hello-pgo`
# when target/pgo/release/fibra exists). Needs wrk and openssl (a throw-away certificate for
# the TLS training).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
port="${PGO_PORT:-18097}"
train_secs="${PGO_SECS:-4}"

sysroot="$(rustc --print sysroot)"
host="$(rustc -vV | awk '/^host:/ {print $2}')"
profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
if [[ ! -x "$profdata" ]]; then
    rustup component add llvm-tools
fi
for tool in wrk openssl; do
    command -v "$tool" >/dev/null || { echo "bench/pgo.sh needs $tool" >&2; exit 1; }
done

data="$root/target/pgo-data"
rm -rf "$data"
mkdir -p "$data"
RUSTFLAGS="-Cprofile-generate=$data" \
    cargo build --release -p fibra-cli --target-dir "$root/target/pgo-gen"
bin="$root/target/pgo-gen/release/fibra"

# shellcheck source=bench/load.sh
source "$root/bench/load.sh"

# Starts "$@" as the server (its pid in server_pid) and waits until its port accepts.
start_server() {
    "$@" >/dev/null 2>&1 &
    server_pid=$!
    wait_port "$port" 100 0.1 || { echo "server did not start on port $port" >&2; return 1; }
}

# Stops the server with SIGTERM, so that its profile is written.
stop_server() {
    kill -TERM "$server_pid"
    wait "$server_pid" || true
}

# Runs "$@" as the server, wrk against each URL spec given on stdin ("WRK_ARGS... URL"),
# then stops it.
train() {
    start_server "$@"
    while read -r line; do
        # shellcheck disable=SC2086
        wrk -t1 -d"${train_secs}s" $line >/dev/null
    done
    stop_server
}

base="http://127.0.0.1:$port"
train "$bin" hello --workers 1 --port "$port" <<EOF
-c256 $base/plaintext
-c1000 $base/plaintext
-c256 -s $root/bench/lua/pipeline.lua $base/plaintext
-c64 $base/json
-c64 -s $root/bench/lua/post.lua $base/echo
-c16 $base/missing
EOF
static="$(mktemp -d)"
trap 'rm -rf "$static"' EXIT
cp "$root/bench/static/index.html" "$static/"
# TLS: the handshake once per connection, then records (wrk does not check the certificate).
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
    -keyout "$static/key.pem" -out "$static/cert.pem" 2>/dev/null
train "$bin" hello --workers 1 --port "$port" --tls-cert "$static/cert.pem" \
    --tls-key "$static/key.pem" <<EOF
-c64 https://127.0.0.1:$port/plaintext
EOF
# HTTP/2 with prior knowledge, the instrumented binary as the client too: its profile goes
# into the same data, so the code the client shares with the server (the runtime, HPACK)
# is weighted by both.
start_server "$bin" hello --workers 1 --port "$port"
"$bin" bench --h2 -t1 -c10 -m10 -d "${train_secs}s" "$base/plaintext" >/dev/null
stop_server
train "$bin" serve --workers 1 --port "$port" "$static" <<EOF
-c256 $base/index.html
-c16 $base/
EOF

"$profdata" merge -o "$data/merged.profdata" "$data"
RUSTFLAGS="-Cprofile-use=$data/merged.profdata" \
    cargo build --release -p fibra-cli --target-dir "$root/target/pgo"
echo "built target/pgo/release/fibra"
