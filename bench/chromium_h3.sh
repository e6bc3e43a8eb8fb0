#!/usr/bin/env bash
# A headless Chromium page load from `fibra serve --http3` over HTTP/3 (QUIC): a page whose
# stylesheet, script and image must all load (the script writes the computed colour from the
# stylesheet and the image's decoded size into the page). Chromium is told to use QUIC for
# the origin (--origin-to-force-quic-on), trusts the self-signed certificate by its key's
# pin (--ignore-certificate-errors-spki-list) and maps localhost to 127.0.0.1. Prints the
# DOM Chromium ends with, the access log and the QUIC sessions in Chromium's net log; exits
# non-zero unless the script ran with the stylesheet applied and the image decoded, and all
# four files were answered 200 over HTTP/3, the image with all its bytes.
#
#   bench/chromium_h3.sh             (needs chromium and openssl; builds fibra unless NO_BUILD=1)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NAME=chromium_h3.sh
TITLE="fibra over HTTP/3"
# shellcheck source=bench/lib/chromium_site.sh
source "$ROOT/bench/lib/chromium_site.sh"
"$ROOT/target/release/fibra" serve "$RUN/site" --workers 1 --port "$PORT" \
  --tls-cert "$RUN/cert.pem" --tls-key "$RUN/key.pem" --access-log "$RUN/access.log" --http3 &
PID=$!
for _ in $(seq 100); do curl -skf "https://127.0.0.1:$PORT/" >/dev/null 2>&1 && break; sleep 0.1; done
: >"$RUN/access.log"
PIN=$(openssl x509 -pubkey -noout -in "$RUN/cert.pem" | openssl pkey -pubin -outform der |
  openssl dgst -sha256 -binary | base64)
DOM=$(timeout 60 chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$RUN/profile" \
  --enable-quic --origin-to-force-quic-on="localhost:$PORT" \
  --ignore-certificate-errors-spki-list="$PIN" --host-resolver-rules="MAP localhost 127.0.0.1" \
  --log-net-log="$RUN/netlog.json" --dump-dom "https://localhost:$PORT/index.html" 2>/dev/null)
# The access log is written out once a second.
sleep 1.5
echo "$DOM"
cat "$RUN/access.log"
echo "QUIC sessions in the net log: $(grep -o '"QUIC_SESSION[A-Z_]*' "$RUN/netlog.json" | sort | uniq -c | tr -s ' ' | head -5 | tr '\n' ';')"
grep -q 'script ran, color rgb(1, 2, 3), image 400x300' <<<"$DOM" || { echo "chromium_h3.sh: the page did not load in full" >&2; exit 1; }
for f in index.html style.css app.js pic.png; do
  grep -q "\"GET /$f HTTP/3.0\" 200" "$RUN/access.log" || { echo "chromium_h3.sh: no HTTP/3 200 for /$f" >&2; exit 1; }
done
grep -q "\"GET /pic.png HTTP/3.0\" 200 $PNG_BYTES " "$RUN/access.log" || { echo "chromium_h3.sh: the image's bytes were not all sent" >&2; exit 1; }
echo "chromium_h3.sh: the page, its stylesheet, its script and a $PNG_BYTES-byte image loaded over HTTP/3"

