"""Idle keep-alive client for idle_keepalive.sh: opens N connections to 127.0.0.1:PORT from
several source addresses (127.0.0.1-4, so ephemeral ports never run short), sends one GET on
each and reads every answer (the connections are now idle keep-alive), holds them HOLD
seconds, then sends a second GET on every one and reads every answer again. Reads the
server's RSS (/proc/SERVER_PID/status) at each step. Prints one JSON line.

usage: python3 idle_client.py PORT N SERVER_PID HOLD
"""
import json
import selectors
import socket
import sys
import time

port, n, pid, hold = (int(a) for a in sys.argv[1:5])
REQ = b"GET /plaintext HTTP/1.1\r\nHost: x\r\n\r\n"
RESP_END = b"Hello, World!"


def rss_kb():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def round_trip(socks, deadline_s):
    """Sends REQ on every socket, reads one answer from each; returns how many answered."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(True)
        s.sendall(REQ)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, b"")
    answered, pending = 0, len(socks)
    deadline = time.time() + deadline_s
    while pending and time.time() < deadline:
        for key, _ in sel.select(timeout=0.5):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            got = key.data + data
            if not data or got.endswith(RESP_END):
                answered += bool(data)
                pending -= 1
                sel.unregister(key.fileobj)
            else:
                sel.modify(key.fileobj, selectors.EVENT_READ, got)
    sel.close()
    return answered


result = {"connections": n, "rss_kb_before": rss_kb()}
socks = []
t0 = time.time()
for i in range(n):
    s = socket.socket()
    s.bind((f"127.0.0.{1 + i % 4}", 0))
    s.connect(("127.0.0.1", port))
    socks.append(s)
result["connect_secs"] = round(time.time() - t0, 2)
t0 = time.time()
result["first_round_answered"] = round_trip(socks, 120)
result["first_round_secs"] = round(time.time() - t0, 2)
time.sleep(2)
result["rss_kb_idle"] = rss_kb()
time.sleep(max(0, hold - 2))
t0 = time.time()
result["second_round_answered"] = round_trip(socks, 120)
result["second_round_secs"] = round(time.time() - t0, 2)
result["rss_kb_after"] = rss_kb()
result["rss_bytes_per_idle_connection"] = round(
    (result["rss_kb_idle"] - result["rss_kb_before"]) * 1024 / n)
for s in socks:
    s.close()
print(json.dumps(result))
