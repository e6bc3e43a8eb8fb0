#!/usr/bin/env bash
# Reverse proxy memory: 1 GiB up and 1 GiB down through `fibra serve --proxy`, with the
# front's resident size (VmRSS, and its peak VmHWM) from /proc/PID/status before and after.
#
#   bench/proxy_memory.sh [MiB]        (default 1024)
#
# The upstream is a small Python server: `PUT /sink` reads and counts the body and answers
# the count; `GET /source` sends MiB mebibytes (Content-Length); the client (Python too) sends
# the upload with Content-Length and then chunked, and counts the download. Every count is
# checked. Builds fibra (release) unless NO_BUILD=1.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MIB=${1:-1024}
[ "${NO_BUILD:-0}" = 1 ] || (cd "$ROOT" && cargo build --release -q -p fibra-cli)
FIBRA="$ROOT/target/release/fibra"
RUN="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$RUN"
}
trap cleanup EXIT
source "$ROOT/bench/lib/measure.sh"
UP=$(free_port)
FRONT=$(free_port)

cat >"$RUN/upstream.py" <<'PY'
import socket, sys, threading
port, total = int(sys.argv[1]), int(sys.argv[2]) << 20
def serve(c):
    f = c.makefile("rb")
    while True:
        head = []
        while True:
            line = f.readline()
            if not line:
                return
            if line in (b"\r\n", b"\n"):
                break
            head.append(line.decode().strip())
        method, path, _ = head[0].split(" ")
        fields = {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in head[1:])}
        if path == "/sink":
            got = 0
            if "content-length" in fields:
                left = int(fields["content-length"])
                while left:
                    n = len(f.read1(min(left, 1 << 20)))
                    if n == 0:
                        return
                    got += n; left -= n
            else:  # chunked
                while True:
                    size = int(f.readline().split(b";")[0], 16)
                    if size == 0:
                        f.readline(); break
                    left = size
                    while left:
                        n = len(f.read1(min(left, 1 << 20))); got += n; left -= n
                    f.readline()
            body = str(got).encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        else:
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
            piece = bytes(1 << 20)
            for _ in range(total >> 20):
                c.sendall(piece)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port)); s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY

cat >"$RUN/client.py" <<'PY'
import socket, sys
port, total = int(sys.argv[1]), int(sys.argv[2]) << 20
c = socket.create_connection(("127.0.0.1", port))
f = c.makefile("rb")
def response():
    status = f.readline()
    length = 0
    while True:
        line = f.readline()
        if line == b"\r\n":
            break
        k, v = line.decode().split(":", 1)
        if k.lower() == "content-length":
            length = int(v)
    return status.split()[1], length
piece = bytes(1 << 20)
c.sendall(b"PUT /sink HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % total)
for _ in range(total >> 20):
    c.sendall(piece)
status, n = response(); got = f.read(n)
assert status == b"200" and int(got) == total, (status, got)
print(f"upload {total} bytes (Content-Length): upstream counted {int(got)}")
c.sendall(b"PUT /sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
for _ in range(total >> 20):
    c.sendall(b"100000\r\n" + piece + b"\r\n")
c.sendall(b"0\r\n\r\n")
status, n = response(); got = f.read(n)
assert status == b"200" and int(got) == total, (status, got)
print(f"upload {total} bytes (chunked): upstream counted {int(got)}")
c.sendall(b"GET /source HTTP/1.1\r\nHost: x\r\n\r\n")
status, n = response()
left = n
while left:
    k = len(f.read1(min(left, 1 << 20)))
    assert k, "download cut short"
    left -= k
assert status == b"200" and n == total, (status, n)
print(f"download {n} bytes: all arrived")
PY

python3 "$RUN/upstream.py" "$UP" "$MIB" & PIDS+=($!)
"$FIBRA" serve "$RUN" --workers 1 --port "$FRONT" --proxy "/=http://127.0.0.1:$UP" >/dev/null 2>&1 &
FPID=$!
PIDS+=("$FPID")
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$FRONT/" && break; sleep 0.1; done
mem() { awk '/^VmRSS|^VmHWM/ {printf "%s %d KiB  ", $1, $2} END {print ""}' "/proc/$FPID/status"; }
echo "front before: $(mem)"
python3 "$RUN/client.py" "$FRONT" "$MIB"
echo "front after:  $(mem)"
