"""The harness's `--strace` mode: syscalls per keep-alive request, per server.

The server is started and warmed up as usual, then `strace -c -f` attaches to every process of
its group (so start-up syscalls are not counted), `wrk -t1 -c256` sends a fixed number of
requests (bench/lua/count.lua exits it), strace is interrupted and its summary divided by the
requests wrk completed. Goal for fibra hello (issue 3): at most 2.1 syscalls per request.
"""

import os
import re
import signal
import subprocess
import sys
import time

from . import clients, servers, toolchain


def parse_strace_summary(text):
    """{syscall: calls} and the total from `strace -c` output."""
    calls = {}
    total = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or not re.match(r"^[\d.]+$", parts[0]):
            continue
        name = parts[-1]
        # Columns: % time, seconds, usecs/call, calls, [errors], syscall.
        count = int(parts[3])
        if name == "total":
            total = count
        else:
            calls[name] = count
    if total is None:
        total = sum(calls.values())
    return calls, total


def measure(ctx, server, requests):
    """Returns (requests completed, {syscall: calls}, total calls) for one server."""
    sc = clients.Scenario("strace", "strace", servers.HELLO, "wrk", "", conns=256)
    running = servers.start(ctx, server, servers.HELLO, ctx.server_cpu)
    try:
        sc.warm_up(ctx, running.port, ctx.client_cpu)
        out_path = os.path.join(running.rundir, "strace.txt")
        args = [toolchain.which("strace"), "-c", "-f", "-o", out_path]
        for pid in running.pids():
            args += ["-p", str(pid)]
        tracer = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        time.sleep(1.0)  # let strace attach to every thread
        url = f"http://127.0.0.1:{running.port}/plaintext"
        wrk = subprocess.run(
            ["taskset", "-c", str(ctx.client_cpu), "wrk", "-t1", "-c256", "-d600s",
             "-s", os.path.join(ctx.bench_dir, "lua", "count.lua"), url, "--", str(requests)],
            capture_output=True, text=True, timeout=900)
        m = re.search(r"count.lua: (\d+) responses", wrk.stdout)
        if not m:
            raise RuntimeError("wrk did not finish its requests:\n" + wrk.stdout[-500:])
        tracer.send_signal(signal.SIGINT)
        try:
            tracer.wait(timeout=60)
        except subprocess.TimeoutExpired:
            tracer.kill()
            tracer.wait()
        with open(out_path) as f:
            calls, total = parse_strace_summary(f.read())
        return int(m.group(1)), calls, total
    finally:
        running.stop()


def run(ctx, selected, requests):
    if not toolchain.ensure(ctx, "strace") or not toolchain.ensure(ctx, "wrk"):
        print("strace mode needs strace and wrk", file=sys.stderr)
        return 1
    rows = []
    for server in selected:
        if servers.HELLO not in server.kinds:
            continue
        print(f"[strace] {server.name}: {requests} keep-alive requests", file=sys.stderr)
        try:
            done, calls, total = measure(ctx, server, requests)
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            print(f"[error] {server.name}: {e}", file=sys.stderr)
            continue
        if done == 0:
            print(f"[error] {server.name}: no requests completed", file=sys.stderr)
            continue
        top = sorted(calls.items(), key=lambda kv: -kv[1])[:6]
        detail = ", ".join(f"{name} {n / done:.2f}" for name, n in top)
        rows.append((server.name, done, total, total / done, detail))
    print(f"\n{'server':<12} {'requests':>9} {'syscalls':>9} {'per req':>8}  top syscalls per request")
    for name, done, total, per, detail in rows:
        print(f"{name:<12} {done:>9} {total:>9} {per:>8.2f}  {detail}")
    return 0
