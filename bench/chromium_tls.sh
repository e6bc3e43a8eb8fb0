#!/usr/bin/env bash
# A headless Chromium page load from `fibra serve` over HTTPS: a page whose stylesheet,
# script and image must all load (the script writes the computed colour from the stylesheet
# and the image's decoded size into the page). Prints the DOM Chromium ends with and the
# access log; exits non-zero unless the script ran with the stylesheet applied and the image
# decoded, and all four files were answered 200 over HTTP/2 (ALPN h2, as browsers negotiate
# it), the image with all its bytes.
#
#   bench/chromium_tls.sh            (needs chromium and openssl; builds fibra unless NO_BUILD=1)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NAME=chromium_tls.sh
TITLE="fibra over TLS"
# shellcheck source=bench/lib/chromium_site.sh
source "$ROOT/bench/lib/chromium_site.sh"
"$ROOT/target/release/fibra" serve "$RUN/site" --workers 1 --port "$PORT" \
  --tls-cert "$RUN/cert.pem" --tls-key "$RUN/key.pem" --access-log "$RUN/access.log" &
PID=$!
for _ in $(seq 100); do curl -skf "https://127.0.0.1:$PORT/" >/dev/null 2>&1 && break; sleep 0.1; done
: >"$RUN/access.log"
DOM=$(timeout 60 chromium --headless=new --no-sandbox --disable-gpu --ignore-certificate-errors \
  --dump-dom "https://127.0.0.1:$PORT/index.html" 2>/dev/null)
sleep 0.5
echo "$DOM"
cat "$RUN/access.log"
grep -q 'script ran, color rgb(1, 2, 3), image 400x300' <<<"$DOM" || { echo "chromium_tls.sh: the page did not load in full" >&2; exit 1; }
for f in index.html style.css app.js pic.png; do
  grep -q "\"GET /$f HTTP/2.0\" 200" "$RUN/access.log" || { echo "chromium_tls.sh: no HTTP/2 200 for /$f" >&2; exit 1; }
done
grep -q "\"GET /pic.png HTTP/2.0\" 200 $PNG_BYTES " "$RUN/access.log" || { echo "chromium_tls.sh: the image's bytes were not all sent" >&2; exit 1; }
echo "chromium_tls.sh: the page, its stylesheet, its script and a $PNG_BYTES-byte image loaded over HTTPS, HTTP/2"
