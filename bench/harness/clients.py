"""Scenarios of the benchmark harness: which load generator runs, with which flags, and how
its output is turned into (requests completed, req/s, error notes).

Clients run pinned to their own CPU. wrk drives the keep-alive scenarios; httperf the
connection-churn ones (run with RLIMIT_NOFILE 1024: it uses select(), which misbehaves past
FD_SETSIZE); `fibra bench --batch` the Anon pattern, once it exists.
"""

import os
import re
import resource
import subprocess

from . import toolchain
from .servers import HELLO, STATIC


class Result:
    """One client run: requests completed, rate, and anything that makes it suspect."""

    def __init__(self, requests, rps, notes=""):
        self.requests = requests
        self.rps = rps
        self.notes = notes


class Scenario:
    """A named measurement: the kind of server it needs and the client command it runs."""

    def __init__(self, name, title, kind, client, describe, **params):
        self.name = name
        self.title = title
        self.kind = kind
        self.client = client
        self.describe = describe
        self.params = params

    def unavailable(self, ctx):
        """None if the client can run here, else why the scenario is skipped."""
        if self.client == "wrk":
            return None if toolchain.ensure(ctx, "wrk") else "wrk is not installed"
        if self.client == "httperf":
            return None if toolchain.ensure(ctx, "httperf") else "httperf is not installed"
        if self.client == "fibra-batch":
            binary = toolchain.fibra_binary(ctx)
            if binary is None:
                return "target/release/fibra is not built"
            text = toolchain.subcommand_help(binary, ["bench", "--help"])
            if text is None:
                return "`fibra bench` does not exist yet"
            if "--batch" not in text:
                return "`fibra bench --batch` does not exist yet"
            return None
        return f"unknown client {self.client}"

    def path(self):
        return "/index.html" if self.kind == STATIC else "/plaintext"

    def warm_up(self, ctx, port, cpu):
        """A short unmeasured run (JITs, caches, lazily built state)."""
        if self.client == "wrk" and ctx.warmup > 0:
            run_wrk(ctx, self, port, cpu, ctx.warmup)

    def run(self, ctx, port, cpu):
        if self.client == "wrk":
            return run_wrk(ctx, self, port, cpu, ctx.duration)
        if self.client == "httperf":
            return run_httperf(ctx, self, port, cpu)
        return run_fibra_batch(ctx, self, port, cpu)


def scenarios():
    """Every scenario, in report order."""
    return [
        Scenario("plaintext", "Plaintext keep-alive, 256 connections", HELLO, "wrk",
                 "`wrk -t1 -c256` GET /plaintext", conns=256),
        Scenario("c1000", "Plaintext keep-alive, 1,000 connections", HELLO, "wrk",
                 "`wrk -t1 -c1000` GET /plaintext", conns=1000),
        Scenario("pipeline", "Plaintext, 16-deep pipelining, 256 connections", HELLO, "wrk",
                 "`wrk -t1 -c256 -s bench/lua/pipeline.lua -- 16` GET /plaintext",
                 conns=256, script="pipeline.lua", script_args=["16"]),
        Scenario("static", "Static 151-byte index.html, 256 connections", STATIC, "wrk",
                 "`wrk -t1 -c256` GET /index.html", conns=256),
        Scenario("anon", "Anon pattern: 400 sockets, batch", HELLO, "fibra-batch",
                 "`fibra bench --batch -k -c400 -t1` GET /plaintext", conns=400),
        Scenario("close", "New connection per request", HELLO, "httperf",
                 "`httperf --num-conns N --num-calls 1` (one connection at a time) GET /plaintext",
                 calls=1, conns_per_sec=2500),
        Scenario("conn100", "1,000 connections x 100 requests", HELLO, "httperf",
                 "`httperf --num-conns 1000 --num-calls 100 --rate 1000` GET /plaintext",
                 calls=100, num_conns=1000, rate=1000),
    ]


def _client(ctx, cpu, args, timeout, limit_fds=None):
    def pre():
        if limit_fds:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit_fds, limit_fds))

    r = subprocess.run(["taskset", "-c", str(cpu)] + args, capture_output=True, text=True,
                       timeout=timeout, preexec_fn=pre)
    return r.stdout + r.stderr, r.returncode


def parse_wrk(out):
    """(requests, req/s, notes) from wrk's summary."""
    m = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if not m or not rate:
        raise RuntimeError("could not parse wrk output:\n" + out[-800:])
    notes = []
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if sock:
        names = ["connect", "read", "write", "timeout"]
        errs = [f"{n} {v}" for n, v in zip(names, sock.groups()) if int(v)]
        if errs:
            notes.append("socket errors: " + ", ".join(errs))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non2xx:
        notes.append(f"non-2xx: {non2xx.group(1)}")
    return int(m.group(1)), float(rate.group(1)), "; ".join(notes)


def run_wrk(ctx, sc, port, cpu, duration, extra_script=None, extra_args=None):
    url = f"http://127.0.0.1:{port}{sc.path()}"
    args = ["wrk", "-t1", f"-c{sc.params['conns']}", f"-d{duration}s", "--timeout", "10s"]
    script = extra_script or sc.params.get("script")
    if script:
        args += ["-s", os.path.join(ctx.bench_dir, "lua", script)]
    args.append(url)
    script_args = extra_args if extra_args is not None else sc.params.get("script_args")
    if script_args:
        args += ["--"] + script_args
    out, _ = _client(ctx, cpu, args, timeout=duration * 3 + 120)
    requests, rps, notes = parse_wrk(out)
    return Result(requests, rps, notes)


def parse_httperf(out):
    """(replies with status 2xx, replies/s, notes) from httperf's summary."""
    total = re.search(r"Total: connections (\d+) requests (\d+) replies (\d+) "
                      r"test-duration ([\d.]+) s", out)
    status = re.search(r"Reply status: 1xx=(\d+) 2xx=(\d+) 3xx=(\d+) 4xx=(\d+) 5xx=(\d+)", out)
    if not total or not status:
        raise RuntimeError("could not parse httperf output:\n" + out[-800:])
    ok = int(status.group(2))
    secs = float(total.group(4))
    notes = []
    errors = re.search(r"Errors: total (\d+)", out)
    if errors and int(errors.group(1)):
        notes.append(f"errors: {errors.group(1)}")
    if ok != int(total.group(3)):
        notes.append(f"non-2xx: {int(total.group(3)) - ok}")
    return ok, (ok / secs if secs > 0 else 0.0), "; ".join(notes)


def run_httperf(ctx, sc, port, cpu):
    p = sc.params
    num_conns = p.get("num_conns") or max(100, int(p["conns_per_sec"] * ctx.duration))
    # No --hog: it makes httperf bind() its own ports, which cannot reuse TIME_WAIT ports, so
    # connection churn exhausts them and httperf spins; the kernel's ephemeral ports can.
    args = ["httperf", "--server", "127.0.0.1", "--port", str(port),
            "--uri", sc.path(), "--num-conns", str(num_conns), "--num-calls", str(p["calls"]),
            "--timeout", "10"]
    if p.get("rate"):
        args += ["--rate", str(p["rate"])]
    out, _ = _client(ctx, cpu, args, timeout=max(120, ctx.duration * 20), limit_fds=1024)
    requests, rps, notes = parse_httperf(out)
    return Result(requests, rps, notes)


def parse_fibra_bench(out):
    """(succeeded, req/s, notes) from `fibra bench`'s weighttp-style summary."""
    rate = re.search(r"([\d.]+)\s*req/s", out)
    ok = re.search(r"(\d+)\s+succeeded", out)
    if not rate or not ok:
        raise RuntimeError("could not parse fibra bench output:\n" + out[-800:])
    notes = []
    for label in ("failed", "errored"):
        m = re.search(r"(\d+)\s+" + label, out)
        if m and int(m.group(1)):
            notes.append(f"{label}: {m.group(1)}")
    return int(ok.group(1)), float(rate.group(1)), "; ".join(notes)


def run_fibra_batch(ctx, sc, port, cpu):
    url = f"http://127.0.0.1:{port}{sc.path()}"
    args = [ctx.fibra_path, "bench", "--batch", "-k", "-t", "1", "-c", str(sc.params["conns"]),
            "-d", f"{ctx.duration}s", url]
    out, code = _client(ctx, cpu, args, timeout=ctx.duration * 3 + 120)
    if code != 0:
        raise RuntimeError(f"fibra bench exited with {code}:\n" + out[-800:])
    requests, rps, notes = parse_fibra_bench(out)
    return Result(requests, rps, notes)
