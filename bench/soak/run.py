"""A soak run with faults (bench/soak_faults.sh runs it): `fibra serve` (files, two proxied
`fibra hello` upstreams, TLS, HTTP/2, health and metrics) and the `techempower` example on a
throw-away PostgreSQL, under a steady mixed load at about 70 % of what `serve` answers alone,
while faults are injected on a seeded schedule. Records every 10 s, checks the goals, writes
`summary.md`, `run.json` and `soak.png` to the output directory, and exits 1 when a goal is
missed. It leaves nothing running.

usage: run.py --minutes M [--seed N] [--out DIR] --fibra BIN --techempower BIN --python BIN
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import faults as faults_mod  # noqa: E402
import load  # noqa: E402
import report  # noqa: E402
from procs import (Postgres, Proc, free_port, make_cert, make_site, pid_from_file,  # noqa: E402
                   wait_until_ok)
from record import Sampler  # noqa: E402

WINDOW = 10  # seconds per load window, and between two samples
TARGET = 0.7  # of the mix's capacity

# The serve-side mix: share of requests per kind (they add up to 1).
MIX = {"h1_keepalive": 0.35, "h1_pipelined": 0.25, "h2": 0.10, "h3": 0.05, "tls_new_conn": 0.10,
       "proxy_a": 0.075, "proxy_b": 0.075}


class Context:
    """Everything the faults and the load need to find."""

    def __init__(self, args, run_dir):
        self.args = args
        self.run_dir = run_dir
        self.here = HERE
        self.python = args.python
        self.procs = []

    def serve_pid(self):
        return pid_from_file(self.pid_file) or self.serve.pid


def log(msg):
    print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", flush=True)


def start_servers(c, a):
    run = c.run_dir
    c.site = make_site(run, 32)
    c.cert, c.key = make_cert(run)
    c.pg = Postgres(run, a.pgbin, os.path.join(
        a.root, "crates/fibra-postgres/examples/techempower/schema.sql"))
    c.pg.start()
    c.port_a, c.port_b, c.port_te, c.port_serve = (free_port() for _ in range(4))
    c.upstream_a = Proc("upstream-a", [a.fibra, "hello", "--port", str(c.port_a),
                                        "--workers", "1"], run, 1).start()
    c.upstream_b = Proc("upstream-b", [a.fibra, "hello", "--port", str(c.port_b),
                                        "--workers", "1"], run, 1).start()
    c.te = Proc("techempower", [a.techempower, "--port", str(c.port_te), "--workers", "1",
                                "--database-url", c.pg.url], run, 1).start()
    c.pid_file = os.path.join(run, "serve.pid")
    c.serve = Proc("serve", [
        a.fibra, "serve", c.site, "--port", str(c.port_serve), "--workers", "1",
        "--tls-cert", c.cert, "--tls-key", c.key, "--http3",
        "--proxy", f"/a/=http://127.0.0.1:{c.port_a}/",
        "--proxy", f"/b/=http://127.0.0.1:{c.port_b}/",
        "--health", "/healthz", "--metrics", "/metrics", "--pid-file", c.pid_file,
        "--error-log", os.path.join(run, "serve-error.log")], run, 0).start()
    c.serve_addr = f"127.0.0.1:{c.port_serve}"
    c.serve_url = f"https://{c.serve_addr}"
    c.te_url = f"http://127.0.0.1:{c.port_te}"
    for url in (f"{c.serve_url}/small.txt", f"{c.serve_url}/a/plaintext",
                f"{c.serve_url}/b/json", f"{c.te_url}/db"):
        if wait_until_ok(url, 30) is None:
            raise RuntimeError(f"{url} did not come up")


def kinds_for(c, a, rates, window):
    f, s = a.fibra, c.serve_url
    k = [
        load.bench_kind("h1_keepalive", f, f"{s}/small.txt", rates["h1_keepalive"], window,
                        32, ["-k"], {"serve"}),
        load.bench_kind("h1_pipelined", f, f"{s}/small.txt", rates["h1_pipelined"], window,
                        4, ["-k", "--pipeline", "16"], {"serve"}),
        load.h2load_kind("h2", f"{s}/small.txt", rates["h2"], window, 4, 10, {"serve"}),
        load.bench_kind("h3", f, f"{s}/small.txt", rates["h3"], window, 4,
                        ["--h3", "-m", "4"], {"serve"}, "HTTP/3 on the UDP twin of the port"),
        load.bench_kind("tls_new_conn", f, f"{s}/small.txt", rates["tls_new_conn"], window,
                        8, [], {"serve"}, "a TLS handshake per request"),
        load.bench_kind("proxy_a", f, f"{s}/a/plaintext", rates["proxy_a"], window, 8,
                        ["-k"], {"serve", "a"}),
        load.bench_kind("proxy_b", f, f"{s}/b/json", rates["proxy_b"], window, 8, ["-k"],
                        {"serve", "b"}),
        load.bench_kind("ranges", f, f"{s}/big.bin", 100, window, 4,
                        ["-k", "-H", "Range: bytes=1048576-1114111"], {"serve"},
                        "64 KiB ranges of a 32 MiB file"),
        load.bench_kind("db", f, f"{c.te_url}/db", 300, window, 8, ["-k"], {"pg"}),
        load.bench_kind("updates", f, f"{c.te_url}/updates?queries=5", 50, window, 4, ["-k"],
                        {"pg"}),
        load.clients_kind("ws_proxied", c.python, "ws",
                          ["--addr", c.serve_addr, "--tls", "--path", "/a/ws", "--rate", "200",
                           "--connections", "4"], 200, window, {"serve", "a", "ws"}),
        load.clients_kind("upload_proxied", c.python, "upload",
                          ["--addr", c.serve_addr, "--tls", "--count", "20", "--bytes",
                           "65536", "--path", "/a/echo"], None, window, {"serve", "a"}),
    ]
    return k


def calibrate(c, a):
    """Each serve-side kind alone, closed loop, 3 s: its capacity in requests per second."""
    import subprocess
    caps = {}
    kinds = {k.name: k for k in kinds_for(c, a, {n: 1 for n in MIX}, 3)}
    for name in MIX:
        argv = kinds[name].argv
        if argv[3] == "h2load":
            argv = [x for x in argv]
            i = argv.index("--rps")
            del argv[i:i + 2]
        else:
            i = argv.index("--rate")
            argv = argv[:i] + argv[i + 2:]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        r = kinds[name].parse(p.stdout, p.stderr)
        caps[name] = r["done"] / 3.0
        log(f"calibration: {name} alone {caps[name]:.0f}/s")
    mix = 1.0 / sum(share / max(caps[n], 1.0) for n, share in MIX.items())
    return caps, mix


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    ap.add_argument("--fibra", required=True)
    ap.add_argument("--techempower", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--pgbin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--command", default="")
    a = ap.parse_args()
    quick = a.minutes <= 5
    total = a.minutes * 60
    warmup, tail, rounds = (20, 20, 1) if quick else (60, 60, 3)
    os.makedirs(a.out, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="fibra-soak-")
    os.chmod(run_dir, 0o777)
    c = Context(a, run_dir)
    runner = sampler = idle = None
    status = 2

    def on_signal(sig, _frame):
        raise KeyboardInterrupt(f"signal {sig}")
    signal.signal(signal.SIGTERM, on_signal)
    try:
        start_servers(c, a)
        caps, mix = calibrate(c, a)
        rates = {n: TARGET * mix * share for n, share in MIX.items()}
        kinds = kinds_for(c, a, rates, WINDOW)
        log(f"steady load: {TARGET * mix:.0f} req/s on serve's mix "
            + ", ".join(f"{n} {r:.0f}/s" for n, r in rates.items()))
        idle = Proc("idle", ["taskset", "-c", "1", a.python, os.path.join(HERE, "clients.py"),
                             "idle", "--addr", c.serve_addr, "--tls", "--count", "500",
                             "--seconds", str(int(total + 30))], run_dir, 1).start()
        runner = load.Runner(kinds, WINDOW)
        sampler = Sampler(c.serve_pid, f"{c.serve_url}/metrics", WINDOW)
        t0 = time.time()
        runner.start()
        sampler.start()
        plan = faults_mod.schedule(a.seed, total, warmup, tail, rounds)
        fx = faults_mod.Faults(c)
        results = []
        for offset, name in plan:
            time.sleep(max(0.0, t0 + offset - time.time()))
            log(f"fault {name} (at {offset:.0f} s)")
            r = fx.run(name)
            log(f"  {name}: {json.dumps({k: v for k, v in r.items() if k not in ('start', 'end')})[:300]}")
            results.append(r)
        time.sleep(max(0.0, t0 + total - time.time()))
        runner.stop()
        sampler.stop()
        run = {
            "command": a.command, "minutes": a.minutes, "seed": a.seed,
            "started": datetime.datetime.fromtimestamp(t0).isoformat(timespec="seconds"),
            "t0": t0, "warmup": warmup, "capacity": caps["h1_keepalive"], "capacities": caps,
            "mix_capacity": mix, "rates": rates,
            "kinds": {k.name: k for k in kinds}, "records": runner.snapshot(),
            "samples": sampler.samples, "faults": results,
            "log_hits": report.scan_logs(run_dir),
        }
        goals = report.check(run, quick)
        summary = report.markdown(run, goals)
        with open(os.path.join(a.out, "summary.md"), "w") as f:
            f.write(summary)
        run["kinds"] = {k.name: {"argv": k.argv, "depends": sorted(k.depends), "rate": k.rate,
                                 "note": k.note} for k in kinds}
        with open(os.path.join(a.out, "run.json"), "w") as f:
            json.dump(run, f, indent=1, default=str)
        run["kinds"] = {k.name: k for k in kinds}
        if not report.plot(run, os.path.join(a.out, "soak.png")):
            log("no plot: matplotlib is missing")
        print(summary)
        status = 0 if all(ok for _, ok, _ in goals) else 1
        log("all goals met" if status == 0 else "goals missed: " + ", ".join(
            g for g, ok, _ in goals if not ok))
    finally:
        if runner:
            runner.stop()
        if sampler:
            sampler.stop()
        for p in (idle, getattr(c, "serve", None), getattr(c, "upstream_a", None),
                  getattr(c, "upstream_b", None), getattr(c, "te", None)):
            if p:
                p.stop(5)
        if getattr(c, "pg", None):
            c.pg.stop()
        logs = os.path.join(a.out, "logs")
        os.makedirs(logs, exist_ok=True)
        for name in os.listdir(run_dir):
            if name.endswith((".err", ".out", ".log")):
                shutil.copy(os.path.join(run_dir, name), logs)
        shutil.rmtree(run_dir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
