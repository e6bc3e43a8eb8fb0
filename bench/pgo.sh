#!/usr/bin/env bash
# Profile-guided build of the `fibra` binary: target/pgo/release/fibra.
#
#   bench/pgo.sh
#
# 1. builds an instrumented binary (target/pgo-gen),
# 2. trains it with wrk on loopback: `fibra hello` (plaintext at 256 and 1,000 connections,
#    16-deep pipelining, /json, /echo with a body, a 404) and `fibra serve` (bench/static), each
#    for a few seconds,
# 3. merges the profile with the toolchain's own `llvm-profdata` (rustup component
#    `llvm-tools`, installed here if missing) and builds with it (target/pgo).
#
# The plain `cargo build --release` binary is what the README runs; the PGO binary is an extra
# the benchmark harness measures beside it (`bench/compare.sh` lists it as `fibra-hello-pgo`
# when target/pgo/release/fibra exists). Needs wrk.
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
command -v wrk >/dev/null || { echo "bench/pgo.sh needs wrk" >&2; exit 1; }

data="$root/target/pgo-data"
rm -rf "$data"
mkdir -p "$data"
RUSTFLAGS="-Cprofile-generate=$data" \
    cargo build --release -p fibra-cli --target-dir "$root/target/pgo-gen"
bin="$root/target/pgo-gen/release/fibra"

# shellcheck source=bench/load.sh
source "$root/bench/load.sh"

# Runs "$@" as the server, wrk against each URL spec given on stdin ("WRK_ARGS... URL"),
# then stops it with SIGTERM so the profile is written.
train() {
    "$@" >/dev/null 2>&1 &
    local pid=$!
    wait_port "$port" 100 0.1 || { echo "server did not start on port $port" >&2; return 1; }
    while read -r line; do
        # shellcheck disable=SC2086
        wrk -t1 -d"${train_secs}s" $line >/dev/null
    done
    kill -TERM "$pid"
    wait "$pid" || true
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
train "$bin" serve --workers 1 --port "$port" "$static" <<EOF
-c256 $base/index.html
-c16 $base/
EOF

"$profdata" merge -o "$data/merged.profdata" "$data"
RUSTFLAGS="-Cprofile-use=$data/merged.profdata" \
    cargo build --release -p fibra-cli --target-dir "$root/target/pgo"
echo "built target/pgo/release/fibra"
