"""Scenarios of the benchmark harness: which load generator runs, with which flags, and how
its output is turned into (requests completed, req/s, error notes).

Clients run pinned to their own CPU. wrk drives the keep-alive scenarios; httperf the
connection-churn ones (run with RLIMIT_NOFILE 1024: it uses select(), which misbehaves past
FD_SETSIZE); `fibra bench --batch` the Anon pattern, once it exists. Over HTTPS: `h2load
--h1` (OpenSSL) for keep-alive, `fibra bench` (rustls, a cheaper client) for a second
keep-alive row, and `openssl s_time -new` for full handshakes (one connection at a time; it
does not check statuses, so the server's answer is checked when it starts, and the bytes it
read per connection are noted). Over HTTP/3: `fibra bench --h3` (quinn-proto and rustls; no
packaged client here speaks HTTP/3).
"""

import json
import os
import re
import resource
import subprocess

from . import toolchain
from .servers import (BIG_FILE, HELLO, HELLO_H2C, HELLO_H3, HELLO_TLS, STATIC, STATIC_H2C,
                      STATIC_H3, STATIC_TLS, TLS_KINDS)


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
        if self.client == "h2load":
            return None if toolchain.ensure(ctx, "h2load") else "h2load is not installed"
        if self.client == "s_time":
            return None if toolchain.ensure(ctx, "openssl") else "openssl is not installed"
        if self.client == "fibra-bench":
            return None if toolchain.fibra_binary(ctx) else "target/release/fibra is not built"
        if self.client == "fibra-bench-h3":
            binary = toolchain.fibra_binary(ctx)
            if binary is None:
                return "target/release/fibra is not built"
            text = toolchain.subcommand_help(binary, ["bench", "--help"])
            return None if text and "--h3" in text else "`fibra bench --h3` does not exist yet"
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
        if "path" in self.params:
            return self.params["path"]
        return ("/index.html" if self.kind in (STATIC, STATIC_TLS, STATIC_H2C, STATIC_H3)
                else "/plaintext")

    def url(self, port):
        scheme = "https" if self.kind in TLS_KINDS else "http"
        return f"{scheme}://127.0.0.1:{port}{self.path()}"

    def warm_up(self, ctx, port, cpu):
        """A short unmeasured run (JITs, caches, lazily built state)."""
        if ctx.warmup <= 0:
            return
        if self.client == "wrk":
            run_wrk(ctx, self, port, cpu, ctx.warmup)
        elif self.client == "h2load":
            if "bytes" in self.params:
                check_h2load_bodies(ctx, self, port, cpu)
            run_h2load(ctx, self, port, cpu, ctx.warmup)
        elif self.client == "fibra-bench":
            if "bytes" in self.params and toolchain.ensure(ctx, "h2load"):
                check_h2load_bodies(ctx, self, port, cpu)
            run_fibra_bench(ctx, self, port, cpu, ctx.warmup)
        elif self.client == "fibra-bench-h3":
            if "bytes" in self.params:
                check_h3_bodies(ctx, self, port, cpu)
            run_fibra_bench_h3(ctx, self, port, cpu, ctx.warmup)

    def run(self, ctx, port, cpu):
        if self.client == "wrk":
            return run_wrk(ctx, self, port, cpu, ctx.duration)
        if self.client == "httperf":
            return run_httperf(ctx, self, port, cpu)
        if self.client == "h2load":
            return run_h2load(ctx, self, port, cpu, ctx.duration)
        if self.client == "fibra-bench":
            return run_fibra_bench(ctx, self, port, cpu, ctx.duration)
        if self.client == "fibra-bench-h3":
            return run_fibra_bench_h3(ctx, self, port, cpu, ctx.duration)
        if self.client == "s_time":
            return run_s_time(ctx, self, port, cpu)
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
        Scenario("tls-plaintext", "HTTPS keep-alive, 256 connections (h2load)", HELLO_TLS,
                 "h2load", "`h2load --h1 -t1 -c256` GET /plaintext over TLS", conns=256),
        Scenario("tls-plaintext-rustls", "HTTPS keep-alive, 256 connections (fibra bench)",
                 HELLO_TLS, "fibra-bench",
                 "`fibra bench -k -c256 --insecure` (rustls client) GET /plaintext over TLS",
                 conns=256),
        Scenario("tls-static", "HTTPS static 151-byte index.html, 256 connections",
                 STATIC_TLS, "h2load", "`h2load --h1 -t1 -c256` GET /index.html over TLS",
                 conns=256),
        Scenario("tls-static-rustls", "HTTPS static 151-byte index.html, 256 connections "
                 "(fibra bench)", STATIC_TLS, "fibra-bench",
                 "`fibra bench -k -c256 --insecure` (rustls client) GET /index.html over TLS",
                 conns=256),
        Scenario("tls-static-1m", "HTTPS static 1 MiB file, 32 connections", STATIC_TLS,
                 "h2load", f"`h2load --h1 -t1 -c32` GET /{BIG_FILE} over TLS", conns=32,
                 path=f"/{BIG_FILE}", bytes=1 << 20),
        Scenario("tls-static-1m-rustls", "HTTPS static 1 MiB file, 32 connections "
                 "(fibra bench)", STATIC_TLS, "fibra-bench",
                 f"`fibra bench -k -c32 --insecure` (rustls client) GET /{BIG_FILE} over TLS",
                 conns=32, path=f"/{BIG_FILE}", bytes=1 << 20),
        Scenario("h2c-plaintext", "HTTP/2 cleartext, 100 connections x 10 streams", HELLO_H2C,
                 "h2load", "`h2load -t1 -c100 -m10` GET /plaintext, h2c prior knowledge",
                 conns=100, streams=10),
        Scenario("h2c-plaintext-m100", "HTTP/2 cleartext, 10 connections x 100 streams",
                 HELLO_H2C, "h2load",
                 "`h2load -t1 -c10 -m100` GET /plaintext, h2c prior knowledge",
                 conns=10, streams=100),
        Scenario("h2c-static", "HTTP/2 cleartext, static 151-byte index.html, 100 x 10",
                 STATIC_H2C, "h2load",
                 "`h2load -t1 -c100 -m10` GET /index.html, h2c prior knowledge",
                 conns=100, streams=10),
        Scenario("h2c-static-m100", "HTTP/2 cleartext, static 151-byte index.html, 10 x 100",
                 STATIC_H2C, "h2load",
                 "`h2load -t1 -c10 -m100` GET /index.html, h2c prior knowledge",
                 conns=10, streams=100),
        Scenario("h2-plaintext", "HTTP/2 over TLS, 100 connections x 10 streams", HELLO_TLS,
                 "h2load", "`h2load -t1 -c100 -m10` GET /plaintext, h2 via ALPN",
                 conns=100, streams=10),
        Scenario("h2-plaintext-m100", "HTTP/2 over TLS, 10 connections x 100 streams",
                 HELLO_TLS, "h2load", "`h2load -t1 -c10 -m100` GET /plaintext, h2 via ALPN",
                 conns=10, streams=100),
        Scenario("h2-static", "HTTP/2 over TLS, static 151-byte index.html, 100 x 10",
                 STATIC_TLS, "h2load", "`h2load -t1 -c100 -m10` GET /index.html, h2 via ALPN",
                 conns=100, streams=10),
        Scenario("h2-static-m100", "HTTP/2 over TLS, static 151-byte index.html, 10 x 100",
                 STATIC_TLS, "h2load", "`h2load -t1 -c10 -m100` GET /index.html, h2 via ALPN",
                 conns=10, streams=100),
        Scenario("h2-static-1m", "HTTP/2 over TLS, static 1 MiB file, 32 connections",
                 STATIC_TLS, "h2load", f"`h2load -t1 -c32 -m1` GET /{BIG_FILE}, h2 via ALPN",
                 conns=32, streams=1, path=f"/{BIG_FILE}", bytes=1 << 20),
        Scenario("h3-plaintext", "HTTP/3, 100 connections x 10 streams", HELLO_H3,
                 "fibra-bench-h3", "`fibra bench --h3 -t1 -c100 -m10` GET /plaintext over QUIC",
                 conns=100, streams=10),
        Scenario("h3-static", "HTTP/3, static 151-byte index.html, 100 x 10", STATIC_H3,
                 "fibra-bench-h3", "`fibra bench --h3 -t1 -c100 -m10` GET /index.html over QUIC",
                 conns=100, streams=10),
        Scenario("h3-static-1m", "HTTP/3, static 1 MiB file, 32 connections", STATIC_H3,
                 "fibra-bench-h3", f"`fibra bench --h3 -t1 -c32 -m1` GET /{BIG_FILE} over QUIC",
                 conns=32, streams=1, path=f"/{BIG_FILE}", bytes=1 << 20),
        Scenario("tls-handshake", "HTTPS full handshake + request per connection", HELLO_TLS,
                 "s_time", "`openssl s_time -new` (one connection at a time) GET /plaintext",
                 conns=1),
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


def parse_h2load(out):
    """(2xx responses, req/s, notes) from h2load's summary."""
    rate = re.search(r"finished in [\d.]+\w+, ([\d.]+) req/s", out)
    status = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    reqs = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                     r"(\d+) failed, (\d+) errored", out)
    if not rate or not status or not reqs:
        raise RuntimeError("could not parse h2load output:\n" + out[-800:])
    ok = int(status.group(1))
    notes = []
    if int(reqs.group(5)) or int(reqs.group(6)):
        notes.append(f"failed {reqs.group(5)}, errored {reqs.group(6)}")
    other = sum(int(status.group(i)) for i in (2, 3, 4))
    if other:
        notes.append(f"non-2xx: {other}")
    done = int(reqs.group(3))
    rps = float(rate.group(1))
    # req/s of 2xx responses only.
    return ok, (rps * ok / done if done else 0.0), "; ".join(notes)


def h2load_protocol(sc):
    """h2load's protocol flags: HTTP/1.1 unless the scenario has HTTP/2 streams."""
    streams = sc.params.get("streams")
    return ["-m", str(streams)] if streams else ["--h1"]


def run_h2load(ctx, sc, port, cpu, duration):
    args = (["h2load"] + h2load_protocol(sc)
            + ["-t1", f"-c{sc.params['conns']}", "-D", str(duration), sc.url(port)])
    out, _ = _client(ctx, cpu, args, timeout=duration * 3 + 120)
    requests, rps, notes = parse_h2load(out)
    return Result(requests, rps, notes)


def check_h2load_bodies(ctx, sc, port, cpu):
    """A fixed number of requests whose body bytes h2load must count exactly (a duration run
    also counts the bytes of responses cut off at its end, so it cannot be checked)."""
    n = sc.params["conns"] * 2
    args = (["h2load"] + h2load_protocol(sc)
            + ["-t1", f"-c{sc.params['conns']}", "-n", str(n), sc.url(port)])
    out, _ = _client(ctx, cpu, args, timeout=300)
    ok, _, notes = parse_h2load(out)
    body = re.search(r"traffic: .*? \((\d+)\) data", out)
    want = n * sc.params["bytes"]
    if ok != n or notes or not body or int(body.group(1)) != want:
        raise RuntimeError(f"{sc.url(port)}: expected {n} 2xx responses of "
                           f"{sc.params['bytes']} bytes:\n" + out[-800:])


def run_fibra_bench(ctx, sc, port, cpu, duration):
    args = [ctx.fibra_path, "bench", "-k", "-t", "1", "-c", str(sc.params["conns"]),
            "-d", f"{duration}s", "--insecure", sc.url(port)]
    out, code = _client(ctx, cpu, args, timeout=duration * 3 + 120)
    if code != 0:
        raise RuntimeError(f"fibra bench exited with {code}:\n" + out[-800:])
    requests, rps, notes = parse_fibra_bench(out)
    return Result(requests, rps, notes)


def _h3_args(ctx, sc, port):
    p = sc.params
    return [ctx.fibra_path, "bench", "--h3", "-t", "1", "-c", str(p["conns"]),
            "-m", str(p["streams"]), "--insecure"]


def run_fibra_bench_h3(ctx, sc, port, cpu, duration):
    args = _h3_args(ctx, sc, port) + ["-d", f"{duration}s", sc.url(port)]
    out, code = _client(ctx, cpu, args, timeout=duration * 3 + 120)
    if code != 0:
        raise RuntimeError(f"fibra bench --h3 exited with {code}:\n" + out[-800:])
    requests, rps, notes = parse_fibra_bench(out)
    return Result(requests, rps, notes)


def check_h3_bodies(ctx, sc, port, cpu):
    """A fixed number of HTTP/3 requests whose body bytes must add up exactly."""
    n = sc.params["conns"] * 2
    args = _h3_args(ctx, sc, port) + ["-n", str(n), "--json", sc.url(port)]
    out, code = _client(ctx, cpu, args, timeout=300)
    want = n * sc.params["bytes"]
    try:
        v = json.loads(out[out.index("{"):])
        ok = v["requests"]["succeeded"] == n and v["traffic"]["body"] == want
    except (ValueError, KeyError):
        ok = False
    if code != 0 or not ok:
        raise RuntimeError(f"{sc.url(port)}: expected {n} 2xx HTTP/3 responses of "
                           f"{sc.params['bytes']} bytes:\n" + out[-800:])


def parse_s_time(out):
    """(connections, connections/s, bytes read per connection) from openssl s_time."""
    m = re.findall(r"^(\d+) connections in (\d+) real seconds, (\d+) bytes read per connection",
                   out, re.M)
    if not m:
        raise RuntimeError("could not parse openssl s_time output:\n" + out[-800:])
    n, secs, per = (int(x) for x in m[-1])
    return n, (n / secs if secs else 0.0), per


def run_s_time(ctx, sc, port, cpu):
    args = ["openssl", "s_time", "-connect", f"127.0.0.1:{port}", "-new", "-time",
            str(ctx.duration), "-www", sc.path()]
    out, _ = _client(ctx, cpu, args, timeout=ctx.duration * 3 + 120)
    n, rate, per = parse_s_time(out)
    # A response too short to be the hello answer (headers + 13 bytes) is an error page.
    notes = "" if per >= 60 else f"only {per} bytes read per connection"
    return Result(n, rate, notes)
