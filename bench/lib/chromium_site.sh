# Sourced by bench/chromium_tls.sh and bench/chromium_h3.sh: checks the tools, builds fibra
# (unless NO_BUILD=1), and makes $RUN (removed at exit, after killing $PID if set) with a
# throw-away certificate for localhost and 127.0.0.1 and a site in $RUN/site: index.html
# titled $TITLE, a stylesheet, and a script that writes the stylesheet's colour into the
# page. Picks a free $PORT. Needs ROOT, NAME (for messages) and TITLE.
for tool in chromium openssl curl; do
  command -v "$tool" >/dev/null || { echo "$NAME: $tool is missing" >&2; exit 2; }
done
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
RUN="$(mktemp -d)"
PID=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$RUN"; }
trap cleanup EXIT
mkdir "$RUN/site"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$RUN/key.pem" \
  -out "$RUN/cert.pem" -days 2 2>/dev/null
cat >"$RUN/site/index.html" <<HTML
<!doctype html><html><head><title>$TITLE</title><link rel="stylesheet" href="style.css"><script src="app.js"></script></head><body><p id="p">static</p></body></html>
HTML
echo 'body { color: rgb(1, 2, 3); }' >"$RUN/site/style.css"
echo 'document.addEventListener("DOMContentLoaded", () => { document.getElementById("p").textContent = "script ran, color " + getComputedStyle(document.body).color; });' >"$RUN/site/app.js"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
