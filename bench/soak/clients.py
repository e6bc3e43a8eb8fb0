"""Fault clients and side loads for the soak harness (bench/soak/run.py runs them as
subprocesses). Each subcommand runs to completion, bounded by its arguments, prints one
JSON summary object as its last stdout line (with "command" and "seconds", its duration)
and exits 0: a misbehaving server is data in that JSON. Only when the client's own setup
fails does it exit 1, its JSON then holding "setup_error". Every "errors" field counts
failures by kind: an errno name, "timeout", "eof", "ssl:REASON" or an exception class.
--tls wraps in TLS without verifying the certificate (SNI and Host: localhost); the
connections' source addresses rotate over 127.0.0.1-8 when --addr is a 127.x address.

usage: python3 clients.py SUBCOMMAND --addr 127.0.0.1:PORT [--tls] [options]

idle --count 500 --seconds S
    Opens COUNT keep-alive connections, one GET /small.txt on each, then holds them idle;
    one the server closes (its idle timeout) is reopened (same GET), until S seconds.
    JSON: opened, responses_ok, reopened, closed_by_server, idle_closed_after_s {median,
    max}, still_open_at_end, failed_connects, statuses, errors.
ws --path /a/ws --rate R --seconds S --connections N
    WebSocket echo (wss:// with --tls): N connections share R binary messages/s of 64 random
    bytes, pipelined; each must come back identical (a mismatch, or an echo missing for 5 s,
    fails the connection). A failed connection is reopened after 100 ms. One JSON line per
    second: t, sent, echoed, mismatched, lost (sent, never echoed), failed (connects or
    connections that failed), reconnects, p50_ms, p99_ms, max_ms; then the same fields over
    the whole run with "final": true.
slowloris --count 1000 --seconds S
    Opens COUNT connections (TLS handshake done), sends "GET / HTTP/1.1\\r\\nHost: x\\r\\n"
    then trickles header lines a byte a second, never ending the head, until S seconds or
    the server closes. JSON: opened, refused, closed_by_server, lasted_s {median, max} (of
    those the server closed, from the handshake's end), responses (statuses the server
    sent), still_open_at_end, errors.
reset --count N --mode request|response --path /big.bin
    N times, one after another: "request" sends half a POST head (odd rounds) or a whole head
    announcing 1 MiB plus 32 KiB of body (even rounds) to PATH; "response" sends GET PATH and
    reads up to 64 KiB of the body; then closes with SO_LINGER {1,0}: a TCP RST.
    JSON: done, connect_errors, statuses, errors.
h2reset --connections 4 --streams 5000 --seconds 30
    HTTP/2 rapid reset (CVE-2023-44487), ALPN h2 (prior-knowledge h2c without --tls): per
    connection, HEADERS for GET /small.txt then RST_STREAM(CANCEL) at once, up to STREAMS
    streams, as fast as the socket takes them, stopping at GOAWAY or close; then waits 2 s
    for the server to close. JSON: connections [{alpn, streams_sent, goaway, goaway_code,
    last_stream_id, closed, responses, bytes_sent, bytes_received, seconds, errors}],
    totals {streams_sent, goaways, closed, responses}.
emfile --pid PID --hold 200 --seconds S
    Lowers the server's soft RLIMIT_NOFILE (prlimit) to its open fds + 20, opens HOLD plain
    TCP connections (the kernel completes them, the server hits EMFILE accepting), holds
    them S seconds, closes them, restores the limit (in a finally, SIGTERM included), then
    times until a new connection's GET /small.txt answers 200 (every 20 ms, at most 10 s).
    Mid-hold, a connection opened before sends a GET and a new connection tries one.
    JSON: fds_before, soft_limit_before, soft_limit_set, hard_limit, held,
    fds_max_during_hold, server_cpu_s_during_hold, existing_conn_during_hold,
    new_conn_during_hold, restored_limit, recovery_ms (null: not recovered), errors.
upload --count N --bytes B --path /a/echo
    N sequential POSTs of B random bytes (Content-Length) on a keep-alive connection
    (reopened after an error or a Connection: close); the echoed body must match.
    JSON: ok, mismatched (200 with another body), statuses, reconnects, errors.
"""
import argparse
import asyncio
import asyncio.sslproto
import json
import resource
import signal
import sys
import time


from attacks import cmd_emfile, cmd_h2reset, cmd_reset, cmd_slowloris, restore_limits
from steady import cmd_idle, cmd_upload, cmd_ws
from wire import SetupError


# ---------------------------------------------------------------------------------- main

def address(text):
    host, _, port = text.rpartition(":")
    return host, int(port)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    def command(name, **ints):
        c = sub.add_parser(name)
        c.add_argument("--addr", type=address, required=True, help="HOST:PORT")
        c.add_argument("--tls", action="store_true")
        for flag, default in ints.items():
            c.add_argument(f"--{flag}", type=int, default=default)
        return c

    command("idle", count=500, seconds=30)
    command("ws", rate=200, seconds=30, connections=4).add_argument("--path", default="/a/ws")
    command("slowloris", count=1000, seconds=30)
    reset = command("reset", count=100)
    reset.add_argument("--mode", choices=("request", "response"), required=True)
    reset.add_argument("--path", default="/big.bin")
    command("h2reset", connections=4, streams=5000, seconds=30)
    command("emfile", pid=None, hold=200, seconds=10)
    command("upload", count=100, bytes=65536).add_argument("--path", default="/a/echo")
    args = p.parse_args(argv)
    if args.command == "emfile" and args.pid is None:
        p.error("emfile needs --pid")
    return args


COMMANDS = {"idle": cmd_idle, "ws": cmd_ws, "slowloris": cmd_slowloris, "reset": cmd_reset,
            "h2reset": cmd_h2reset, "emfile": cmd_emfile, "upload": cmd_upload}


def interrupt(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv):
    args = parse_args(argv)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    signal.signal(signal.SIGTERM, interrupt)  # so that finally blocks run (emfile's restore)
    started, rc = time.monotonic(), 0
    try:
        res = asyncio.run(COMMANDS[args.command](args))
    except SetupError as e:
        res, rc = {"setup_error": str(e)}, 1
    except KeyboardInterrupt as e:
        res, rc = {"interrupted": str(e) or "SIGINT"}, 130
    finally:
        restore_limits()  # emfile interrupted where its own finally could not run
    res.update(command=args.command, seconds=round(time.monotonic() - started, 3))
    print(json.dumps(res), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
