# Sourced by bench/chromium_tls.sh and bench/chromium_h3.sh: checks the tools, builds fibra
# (unless NO_BUILD=1), and makes $RUN (removed at exit, after killing $PID if set) with a
# throw-away certificate for localhost and 127.0.0.1 and a site in $RUN/site: index.html
# titled $TITLE, a stylesheet, a 400x300 PNG of noise ($PNG_BYTES bytes: it does not
# compress, so it crosses many packets and frames), and a script that writes the
# stylesheet's colour and the image's decoded size into the page once everything has
# loaded. Picks a free $PORT. Needs ROOT, NAME (for messages) and TITLE.
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
<!doctype html><html><head><title>$TITLE</title><link rel="stylesheet" href="style.css"><script src="app.js"></script></head><body><p id="p">static</p><img id="i" src="pic.png"></body></html>
HTML
echo 'body { color: rgb(1, 2, 3); }' >"$RUN/site/style.css"
echo 'window.addEventListener("load", () => { const i = document.getElementById("i"); document.getElementById("p").textContent = "script ran, color " + getComputedStyle(document.body).color + ", image " + i.naturalWidth + "x" + i.naturalHeight; });' >"$RUN/site/app.js"
python3 - "$RUN/site/pic.png" <<'PY'
import random, struct, sys, zlib
w, h = 400, 300
rnd = random.Random(7)
raw = b"".join(b"\0" + bytes(rnd.getrandbits(8) for _ in range(w * 3)) for _ in range(h))
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
open(sys.argv[1], "wb").write(png)
PY
PNG_BYTES=$(stat -c %s "$RUN/site/pic.png")
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
