"""bench/web.sh's measurements: fibra-web against a hand-written `match` and against axum.

Two comparisons, each as same-run ratios (candidate / baseline), servers alternating within
every round, medians over the rounds:

- router: `/plaintext` and `/json` through a fibra-web Router with 50 more routes
  (`bench_app --mode router`) against the hand-written `match` (`--mode match`);
- app: the same app on fibra-web (`--mode app`, request-id + CORS middleware) and on axum 0.8 +
  tokio current_thread + tower-http (`bench/peers/axum-web`): `/plaintext`, `/json`,
  `/users/42?fields=a,b`, `POST /echo` (1 KiB JSON), every request with an allowed `Origin`.

Each server runs alone on its CPU (`taskset`), one worker, started fresh for every
measurement; wrk (`-t1 -c256`, keep-alive) on the other CPU. Before measuring, every
server/route pair is checked with curl (status, body bytes, content type; request id and CORS
headers on the app); a run with a socket error or a non-2xx response fails the script.
Figures: server CPU µs per request (user+system of the server's process group from
/proc/PID/stat over the wrk run, divided by the requests wrk completed), its user part, the
server's CPU % of its core, and wrk's req/s. With `--cachesim`, bench/cachesim.sh also counts
user-space instructions per request of each server/route under valgrind (nearly
deterministic: the figure to compare when wall-clock runs are noisy).
"""

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
from harness.clients import parse_fibra_bench, parse_wrk  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
ORIGIN = "http://localhost"
ECHO_BODY = os.path.join(BENCH, "lua", "web_echo.json")

# route -> (wrk script or None, URL path, expected body, content types accepted)
ROUTES = {
    "plaintext": (None, "/plaintext", b"Hello, World!", ("text/plain", "text/plain; charset=utf-8")),
    "json": (None, "/json", b'{"message":"Hello, World!"}', ("application/json",)),
    "users": ("web_users.lua", "/users/42?fields=a,b", b'{"id":42,"name":"user 42","fields":["a","b"]}',
              ("application/json",)),
    "echo": ("web_echo.lua", "/echo", None, ("application/json",)),
}

# comparison -> (baseline, candidate, routes, send Origin)
COMPARISONS = {
    "router": ("match", "router", ["plaintext", "json"], False),
    "app": ("axum", "fibra-web", ["plaintext", "json", "users", "echo"], True),
    # What fibra-web's two middlewares cost: the app without them as the baseline.
    "middleware": ("fibra-bare", "fibra-web", ["plaintext", "json", "users", "echo"], True),
}
# Servers whose answers carry the request-id and CORS headers.
WITH_MIDDLEWARE = {"axum", "fibra-web"}


def server_argv(args, name, port):
    if name == "axum":
        return [args.axum, str(port)]
    mode = {"match": "match", "router": "router", "fibra-web": "app", "fibra-bare": "app-bare"}[name]
    return [args.bin, "--mode", mode, "--workers", "1", "--port", str(port)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server process, pinned, in its own session (process group)."""

    def __init__(self, args, name):
        self.name = name
        self.port = free_port()
        self.log = open(f"/tmp/bench-web-{name}-{os.getpid()}.log", "w")
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(args.server_cpu)] + server_argv(args, name, self.port),
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, cwd=ROOT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{name} did not listen within 30 s")

    def cpu(self):
        """(user, system) seconds of every process in the server's group."""
        user = system = 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    data = f.read()
            except OSError:
                continue
            fields = data[data.rfind(")") + 2:].split()
            if int(fields[2]) == self.proc.pid:  # field 5: process group
                user += int(fields[11])
                system += int(fields[12])
        return user / CLK_TCK, system / CLK_TCK

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.log.close()


def curl_check(server, route, origin):
    """One request with curl: status 200, the right body bytes and content type; on the app,
    an x-request-id and (with an Origin) Access-Control-Allow-Origin. Returns the response."""
    _, path, body, types = ROUTES[route]
    cmd = ["curl", "-s", "-i", "--max-time", "10"]
    if origin:
        cmd += ["-H", f"Origin: {ORIGIN}"]
    if route == "echo":
        cmd += ["-H", "Content-Type: application/json", "--data-binary", "@" + ECHO_BODY]
        with open(ECHO_BODY, "rb") as f:
            body = f.read()
    out = subprocess.run(cmd + [f"http://127.0.0.1:{server.port}{path}"],
                         capture_output=True, check=True, timeout=30).stdout
    head, _, got = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    problems = []
    if not lines[0].startswith("HTTP/1.1 200"):
        problems.append(f"status line {lines[0]!r}")
    if got != body:
        problems.append(f"body {got[:80]!r}… ({len(got)} bytes, want {len(body)})")
    if headers.get("content-type") not in types:
        problems.append(f"content-type {headers.get('content-type')!r}")
    if origin and server.name in WITH_MIDDLEWARE:
        if not headers.get("x-request-id"):
            problems.append("no x-request-id")
        if headers.get("access-control-allow-origin") != ORIGIN:
            problems.append("no access-control-allow-origin")
        if "origin" not in headers.get("vary", "").lower():
            problems.append("no vary: origin")
    if problems:
        raise RuntimeError(f"{server.name} {route}: " + "; ".join(problems))
    return head.decode("latin-1"), len(out)


def wrk(args, server, route, origin, secs):
    script, path, _, _ = ROUTES[route]
    cmd = ["taskset", "-c", str(args.client_cpu), "wrk", "-t1", f"-c{args.conns}",
           f"-d{secs}s", "--timeout", "10s"]
    if origin:
        cmd += ["-H", f"Origin: {ORIGIN}"]
    if script:
        cmd += ["-s", os.path.join(BENCH, "lua", script)]
        url = f"http://127.0.0.1:{server.port}/"
    else:
        url = f"http://127.0.0.1:{server.port}{path}"
    cmd.append(url)
    if route == "echo":
        cmd += ["--", ECHO_BODY]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=secs * 3 + 60, cwd=ROOT)
    return parse_wrk(out.stdout + out.stderr)


def fibra_bench(args, server, route, origin, secs):
    """`fibra bench` (a cheaper client than wrk: it keeps a one-worker server busier)."""
    _, path, _, _ = ROUTES[route]
    cmd = ["taskset", "-c", str(args.client_cpu), args.fibra, "bench", "-k", "-t1",
           "-c", str(args.conns), "-d", f"{secs}s"]
    if origin:
        cmd += ["-H", f"Origin: {ORIGIN}"]
    if route == "echo":
        cmd += ["-H", "Content-Type: application/json", "--body", ECHO_BODY]
    cmd.append(f"http://127.0.0.1:{server.port}{path}")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=secs * 3 + 60, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"fibra bench exited with {out.returncode}:\n{out.stderr[-800:]}")
    return parse_fibra_bench(out.stdout + out.stderr)


def load(args, server, route, origin, secs):
    if args.client == "fibra-bench":
        return fibra_bench(args, server, route, origin, secs)
    return wrk(args, server, route, origin, secs)


def measure(args, name, route, origin):
    """One fresh server, checked, warmed up, measured: a dict of figures."""
    server = Server(args, name)
    try:
        curl_check(server, route, origin)
        if args.warmup > 0:
            load(args, server, route, origin, args.warmup)
        u0, s0 = server.cpu()
        t0 = time.time()
        requests, rps, notes = load(args, server, route, origin, args.duration)
        wall = time.time() - t0
        u1, s1 = server.cpu()
    finally:
        server.stop()
    if notes:
        raise RuntimeError(f"{name} {route}: {args.client} reported {notes}")
    if requests == 0:
        raise RuntimeError(f"{name} {route}: no request completed")
    cpu = (u1 - u0) + (s1 - s0)
    return {"rps": rps, "cpu_us": cpu * 1e6 / requests, "user_us": (u1 - u0) * 1e6 / requests,
            "busy": 100 * cpu / wall, "requests": requests}


def cachesim(args, name, route, origin):
    """User-space instructions per request (bench/cachesim.sh)."""
    script, path, _, _ = ROUTES[route]
    wrk_args = [f"-c{args.conns}"]
    if origin:
        wrk_args += ["-H", f"Origin: {ORIGIN}"]
    if script:
        wrk_args += ["-s", os.path.join(BENCH, "lua", script)]
    port = free_port()
    env = dict(os.environ, CACHESIM_PATH=path if not script else "/")
    out = subprocess.run([os.path.join(BENCH, "cachesim.sh")] + wrk_args + ["--"]
                         + server_argv(args, name, port), capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=600)
    m = re.search(r"instructions\s+([\d.]+) per request", out.stdout)
    n = re.search(r"requests (\d+)", out.stdout)
    if not m or not n or int(n.group(1)) == 0:
        raise RuntimeError(f"cachesim {name} {route} failed:\n{out.stdout[-500:]}{out.stderr[-1500:]}")
    return float(m.group(1))


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="the bench_app example binary")
    p.add_argument("--axum", required=True, help="the bench-peer-axum-web binary")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--conns", type=int, default=256)
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--client-cpu", type=int, default=1)
    p.add_argument("--only", default="router,app", help="comparisons: router,app,middleware")
    p.add_argument("--routes", default="", help="only these routes (plaintext,json,users,echo)")
    p.add_argument("--cachesim", action="store_true", help="also instructions per request")
    p.add_argument("--client", choices=["wrk", "fibra-bench"], default="wrk")
    p.add_argument("--fibra", help="the fibra binary, for --client fibra-bench")
    a = p.parse_args()
    if a.client == "fibra-bench" and not a.fibra:
        p.error("--client fibra-bench needs --fibra PATH")
    only = [c for c in a.only.split(",") if c]
    routes_only = set(r for r in a.routes.split(",") if r)
    plan = []  # (comparison, route, baseline, candidate, origin)
    for comp in only:
        base, cand, routes, origin = COMPARISONS[comp]
        for route in routes:
            if not routes_only or route in routes_only:
                plan.append((comp, route, base, cand, origin))

    print("== checks (curl, one request each)")
    for comp, route, base, cand, origin in plan:
        for name in (base, cand):
            server = Server(a, name)
            try:
                head, size = curl_check(server, route, origin)
            finally:
                server.stop()
            print(f"-- {name} {route}: ok, {size} bytes; " + " | ".join(head.split("\r\n")))

    results = {}  # (comp, route, name) -> list of dicts
    for rnd in range(1, a.rounds + 1):
        print(f"== round {rnd}/{a.rounds}")
        for comp, route, base, cand, origin in plan:
            order = (base, cand) if rnd % 2 else (cand, base)
            for name in order:
                r = measure(a, name, route, origin)
                results.setdefault((comp, route, name), []).append(r)
                print(f"{comp:7} {route:10} {name:10} {r['rps']:10.0f} req/s  {r['cpu_us']:6.2f} µs/req"
                      f" (user {r['user_us']:5.2f})  cpu {r['busy']:5.1f} %", flush=True)

    instr = {}
    if a.cachesim:
        print("== cachesim (instructions per request, user space)")
        for comp, route, base, cand, origin in plan:
            for name in (base, cand):
                instr[(comp, route, name)] = cachesim(a, name, route, origin)
                print(f"{comp:7} {route:10} {name:10} {instr[(comp, route, name)]:10.0f}", flush=True)

    print()
    print(f"## Medians of {a.rounds} rounds x {a.duration} s ({a.client} -t1 -c{a.conns}, server on CPU "
          f"{a.server_cpu}, client on CPU {a.client_cpu}); ratio = candidate / baseline, "
          "median of the per-round ratios")
    print()
    print("| comparison | route | server | req/s | CPU µs/req | user µs/req | server CPU % |"
          " CPU ratio | req/s ratio | instr/req | instr ratio |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for comp, route, base, cand, origin in plan:
        rb, rc = results[(comp, route, base)], results[(comp, route, cand)]
        for name, rs in ((base, rb), (cand, rc)):
            row = [comp, route, name, f"{med([r['rps'] for r in rs]):.0f}",
                   f"{med([r['cpu_us'] for r in rs]):.2f}", f"{med([r['user_us'] for r in rs]):.2f}",
                   f"{med([r['busy'] for r in rs]):.0f}"]
            if name == cand:
                row += [f"{med([c['cpu_us'] / b['cpu_us'] for b, c in zip(rb, rc)]):.3f}",
                        f"{med([c['rps'] / b['rps'] for b, c in zip(rb, rc)]):.3f}"]
            else:
                row += ["", ""]
            if instr:
                i = instr[(comp, route, name)]
                row.append(f"{i:.0f}")
                row.append(f"{i / instr[(comp, route, base)]:.3f}" if name == cand else "")
            else:
                row += ["", ""]
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
