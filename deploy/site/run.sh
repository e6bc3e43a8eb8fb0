#!/bin/sh
# Runs the example site file (fibra.toml next to this script) in the foreground:
# builds fibra if needed, starts the two `fibra hello` upstreams its /api/ route proxies to
# (127.0.0.1:9001 and 127.0.0.1:9002, health path /healthz), then
# `fibra serve --config fibra.toml`. Ctrl-C stops all three.
#
#   deploy/site/run.sh                     # debug build
#   PROFILE=release deploy/site/run.sh     # release build
#
# Then, for instance:
#   curl http://app.localhost:8080/some/client/route     # the app's index.html (try_files)
#   curl http://app.localhost:8080/api/plaintext         # proxied: Hello, World!
#   curl -u alice:change-me http://app.localhost:8080/admin/
#   curl http://docs.localhost:8080/downloads/           # a directory listing
#   curl -i http://secure.localhost:8080/                # 301 to https://secure.localhost:8443/
#   curl -k https://secure.localhost:8443/               # self-signed test certificate
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
profile=${PROFILE:-debug}
target=${CARGO_TARGET_DIR:-$root/target}

case $profile in
release) (cd "$root" && cargo build --release -p fibra-cli) ;;
debug) (cd "$root" && cargo build -p fibra-cli) ;;
*) echo "run.sh: PROFILE is debug or release, not $profile" >&2; exit 2 ;;
esac
fibra=$target/$profile/fibra

pids=""
cleanup() {
    for p in $pids; do
        kill "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for port in 9001 9002; do
    "$fibra" hello --addr 127.0.0.1 --port "$port" --workers 1 --health /healthz >/dev/null &
    pids="$pids $!"
done

"$fibra" serve --config "$here/fibra.toml"
