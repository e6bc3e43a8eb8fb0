"""Connection flood client for flood.sh: opens N connections to HOST:PORT as fast as it can
(non-blocking connects, all kept open), sends one keep-alive GET on each, waits up to WAIT
seconds for answers, then closes them all. Prints one JSON line of counts.

usage: python3 flood_client.py PORT N WAIT
"""
import errno
import json
import selectors
import socket
import sys
import time

port, n, wait = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
REQ = b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"
sel = selectors.DefaultSelector()
counts = {"attempted": 0, "connect_failed": 0, "connected": 0, "answered": 0,
          "closed_by_server": 0}
socks = []
for _ in range(n):
    s = socket.socket()
    s.setblocking(False)
    counts["attempted"] += 1
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    except OSError:
        counts["connect_failed"] += 1
        s.close()
        continue
    socks.append(s)
    sel.register(s, selectors.EVENT_WRITE, "connecting")

deadline = time.time() + wait
open_ = len(socks)
while open_ and time.time() < deadline:
    for key, ev in sel.select(timeout=0.2):
        s = key.fileobj
        if key.data == "connecting":
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                counts["connect_failed"] += 1
                sel.unregister(s); open_ -= 1
                continue
            counts["connected"] += 1
            try:
                s.send(REQ)
            except OSError:
                sel.unregister(s); open_ -= 1
                continue
            sel.modify(s, selectors.EVENT_READ, b"")
        else:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                counts["closed_by_server"] += 1
                sel.unregister(s); open_ -= 1
                continue
            got = key.data + data
            if b"Hello, World!" in got:
                counts["answered"] += 1
                sel.unregister(s); open_ -= 1
            else:
                sel.modify(s, selectors.EVENT_READ, got)
counts["unanswered_at_deadline"] = open_
for s in socks:
    s.close()
print(json.dumps(counts))
