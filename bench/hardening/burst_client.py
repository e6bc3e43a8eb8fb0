#!/usr/bin/env python3
"""Bursts of half-sent requests against one server, and its RSS around them.

usage: burst_client.py PORT PID ROUNDS CONNS

Each round opens CONNS connections, each sending a request head without its end (a 300-byte
field), holds them 1 s, closes them, waits 3 s, then sends 200 ordinary requests (each must
be answered 200). Prints the server's RSS and the part of it in transparent huge pages
(`AnonHugePages`) at the start, during each burst and after it.
"""
import socket
import sys
import time

port, pid, rounds, conns = (int(a) for a in sys.argv[1:5])


def memory():
    rss = next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS:")).split()[1]
    huge = next(l for l in open(f"/proc/{pid}/smaps_rollup")
                if l.startswith("AnonHugePages:")).split()[1]
    return f"RSS {int(rss) / 1024:.1f} MiB ({int(huge) / 1024:.1f} MiB in huge pages)"


print("start:", memory(), flush=True)
for r in range(rounds):
    held = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port), timeout=20)
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 300)
        held.append(s)
    time.sleep(1)
    during = memory()
    for s in held:
        s.close()
    time.sleep(3)
    for _ in range(200):
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := s.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
    print(f"round {r + 1}: during the burst {during}; after it {memory()}", flush=True)
