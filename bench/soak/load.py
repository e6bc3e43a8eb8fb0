"""The steady mixed load of a soak run: one thread per kind of traffic, each running its
client for one window after another and keeping a record per window.

A record: kind, start and end (Unix time), requests done, by status class, failed and
errored requests (with the client's error kinds), latency p50/p99/max in ms (p99 is None
where the client gives no percentiles: h2load), and the client's own words when it broke.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class Kind:
    """One kind of traffic: the command of one window, and what answers it depends on (an
    upstream, the database), which decides which faults may explain its failures."""

    def __init__(self, name, argv, parse, depends=(), rate=None, note=""):
        self.name = name
        self.argv = argv
        self.parse = parse
        self.depends = set(depends)
        self.rate = rate
        self.note = note


def bench_kind(name, fibra, url, rate, window, conns, extra=(), depends=(), note=""):
    """A `fibra bench` window: `-d WINDOW --rate RATE --json`, on CPU 1. Requests time out
    after 5 s, but over HTTP/3 (`--h3`), where a dead connection ends at QUIC's idle
    timeout instead."""
    tls = ["--insecure"] if url.startswith("https://") else []
    timeout = [] if "--h3" in extra else ["--timeout", "5"]
    argv = ["taskset", "-c", "1", fibra, "bench", "-d", f"{window}s", "-c", str(conns),
            "--rate", str(max(rate, 1)), *timeout, "--json", *tls, *extra, url]
    return Kind(name, argv, parse_bench, depends, rate, note)


def parse_bench(out, err):
    j = json.loads(out)
    lat = j.get("latency_us") or {}
    st = j["status"]
    q = j["requests"]
    errors = {k: v["count"] for k, v in j["errors"].items() if v["count"]}
    firsts = {k: v["first"] for k, v in j["errors"].items() if v["count"]}
    return {
        "done": q["done"], "ok": st["2xx"] + st["3xx"], "s4xx": st["4xx"],
        "s5xx": st["5xx"] + st["other"], "failed": q["failed"], "errored": q["errored"],
        "errors": errors, "first_errors": firsts,
        "p50_ms": lat.get("p50", 0) / 1e3 if lat else None,
        "p99_ms": lat.get("p99", 0) / 1e3 if lat else None,
        "max_ms": lat.get("max", 0) / 1e3 if lat else None,
        "rps": j["requests_per_sec"],
    }


def h2load_kind(name, url, rate, window, conns, streams, depends=()):
    """An `h2load` window over TLS (ALPN h2), paced with `--rps` (per connection)."""
    argv = ["taskset", "-c", "1", "h2load", "-c", str(conns), "-m", str(streams), "-D",
            str(window), "--rps", f"{max(rate / conns, 1):.1f}", url]
    return Kind(name, argv, parse_h2load, depends, rate)


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def _ms(text):
    m = re.match(r"([\d.]+)(us|ms|s)$", text)
    return float(m.group(1)) * _UNITS[m.group(2)] if m else None


def parse_h2load(out, err):
    req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                    r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
    st = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    lat = re.search(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)", out)
    if not req or not st:
        raise ValueError("no h2load summary")
    total, started, done, ok, failed, errored, timeout = map(int, req.groups())
    s2, s3, s4, s5 = map(int, st.groups())
    return {
        "done": done, "ok": s2 + s3, "s4xx": s4, "s5xx": s5,
        # h2load counts a non-2xx/3xx response as failed; errored and timed out are ours.
        "failed": max(failed - s4 - s5, 0), "errored": errored + timeout,
        "errors": {"errored": errored, "timeout": timeout} if errored or timeout else {},
        "first_errors": {},
        "p50_ms": _ms(lat.group(3)) if lat else None,  # the mean: h2load has no percentiles
        "p99_ms": None,
        "max_ms": _ms(lat.group(2)) if lat else None,
        "rps": done / max(float(re.search(r"finished in ([\d.]+)s", out).group(1)), 1e-9)
        if re.search(r"finished in ([\d.]+)s", out) else None,
    }


def clients_kind(name, python, sub, args, rate, window, depends=()):
    """A window of one of clients.py's steady loads (ws, upload)."""
    argv = ["taskset", "-c", "1", python, os.path.join(HERE, "clients.py"), sub, *args]
    if sub == "ws":
        argv += ["--seconds", str(window)]
    return Kind(name, argv, parse_clients(sub), depends, rate)


def parse_clients(sub):
    def parse(out, err):
        j = json.loads(out.strip().splitlines()[-1])
        if sub == "ws":
            bad = j.get("mismatched", 0)
            failed = j.get("failed", 0)
            return {"done": j.get("echoed", 0) + failed + bad, "ok": j.get("echoed", 0),
                    "s4xx": 0, "s5xx": 0, "failed": bad, "errored": failed,
                    "errors": {k: j[k] for k in ("mismatched", "failed", "reconnects")
                               if j.get(k)},
                    "first_errors": j.get("errors", {}),
                    "p50_ms": j.get("p50_ms"), "p99_ms": j.get("p99_ms"),
                    "max_ms": j.get("max_ms"), "rps": None}
        statuses = j.get("statuses", {})
        ok = sum(v for k, v in statuses.items() if str(k)[:1] in "23")
        s4 = sum(v for k, v in statuses.items() if str(k)[:1] == "4")
        s5 = sum(v for k, v in statuses.items() if str(k)[:1] == "5")
        errs = j.get("errors", {})
        nerr = sum(errs.values()) if isinstance(errs, dict) else len(errs)
        return {"done": ok + s4 + s5 + nerr, "ok": ok, "s4xx": s4, "s5xx": s5,
                "failed": j.get("mismatched", 0), "errored": nerr,
                "errors": {"mismatched": j.get("mismatched", 0)} if j.get("mismatched")
                else {}, "first_errors": errs if isinstance(errs, dict) else {},
                "p50_ms": None, "p99_ms": None, "max_ms": None, "rps": None}
    return parse


class Runner:
    """Runs every kind's windows in its own thread until stopped; records go to `records`."""

    def __init__(self, kinds, window):
        self.kinds = kinds
        self.window = window
        self.records = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.threads = []
        self.running = {}

    def start(self):
        for k in self.kinds:
            t = threading.Thread(target=self._loop, args=(k,), daemon=True, name=k.name)
            t.start()
            self.threads.append(t)

    def _loop(self, kind):
        while not self.stopping.is_set():
            t0 = time.time()
            rec = {"kind": kind.name, "start": t0}
            try:
                p = subprocess.Popen(kind.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
                with self.lock:
                    self.running[kind.name] = p
                out, err = p.communicate(timeout=self.window + 60)
                rec.update(kind.parse(out, err))
            except Exception as e:  # a client that broke is recorded, not fatal
                rec.update({"done": 0, "ok": 0, "s4xx": 0, "s5xx": 0, "failed": 0,
                            "errored": 0, "errors": {}, "first_errors": {},
                            "p50_ms": None, "p99_ms": None, "max_ms": None, "rps": None,
                            "client_broke": f"{type(e).__name__}: {e}"[:300]})
                try:
                    p.kill()
                except Exception:
                    pass
            rec["end"] = time.time()
            with self.lock:
                self.records.append(rec)
            # A window that ended at once (a client that cannot start) must not spin.
            if rec["end"] - t0 < 1:
                time.sleep(1)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(self.window + 90)
        with self.lock:
            for p in self.running.values():
                try:
                    os.killpg(p.pid, 9)
                except Exception:
                    pass

    def snapshot(self):
        with self.lock:
            return list(self.records)


if __name__ == "__main__":
    sys.exit("load.py is a module of bench/soak/run.py")
