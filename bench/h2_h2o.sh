#!/usr/bin/env bash
# HTTP/2: fibra against h2o serving the same bytes from files, both ways the project checks a
# performance goal: CPU per request (bench/compare.sh, rounds alternating the servers,
# medians and ranges) and user-space instructions per request (bench/h2_instr.sh).
#
#   bench/h2_h2o.sh [ROUNDS] [SECONDS]      # default 8 rounds of 4 s
#
# Scenarios: hello and the 151-byte file, cleartext (prior knowledge) and TLS, h2load -t1
# -c100 -m10 and -c10 -m100; the 1 MiB file over TLS with -c32 -m1. One worker/thread each
# on CPU 0, h2load on CPU 1; h2o's /plaintext is a 13-byte file (H2O_PLAINTEXT=file), its
# cheapest hello. Every response is checked 2xx (and the 1 MiB file's bytes). Needs what
# bench/compare.sh needs for these (h2load, h2o, openssl) and valgrind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rounds="${1:-8}" secs="${2:-4}"
H2O_PLAINTEXT=file "$here/compare.sh" --no-pong --peers fibra-hello,fibra-serve,h2o \
    --only h2c-plaintext,h2c-plaintext-m100,h2c-static,h2c-static-m100,h2-plaintext,h2-plaintext-m100,h2-static,h2-static-m100,h2-static-1m \
    --rounds "$rounds" --duration "$secs" --no-report
echo
echo "== user-space instructions per request (callgrind, after a warm-up)"
"$here/h2_instr.sh"
