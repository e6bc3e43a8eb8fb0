#!/usr/bin/env bash
# Syscalls per keep-alive request: `strace -c -f` attached to each server while wrk sends
# ~100,000 requests (default). Same options as compare.sh, e.g.
#   bench/syscalls.sh --peers fibra-hello,hyper --strace-requests 100000
exec "$(dirname "${BASH_SOURCE[0]}")/compare.sh" --strace "$@"
