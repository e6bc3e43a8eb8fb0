"""The faults of a soak run: a seeded schedule, and what each fault does and measures.

Each fault returns a result: its name, start and end (Unix time), a recovery time in ms where
the issue sets a goal for one (an upstream killed and restarted, PostgreSQL restarted, the
open-files limit hit), and the client's summary where a client drives it. `BLAST` says which
traffic a fault may fail: a failure in a window that overlaps a fault (plus `GRACE` seconds)
and depends on what the fault breaks is explained by it; any other failure is not.
"""

import json
import os
import random
import signal
import socket
import subprocess
import time

from procs import Proc, http_get, pid_from_file

# What each fault may break: the dependencies (see load.Kind.depends) of the traffic that may
# fail while it lasts. Nothing else may fail. A SIGUSR2 upgrade loses no request, but the old
# process ends the WebSocket tunnels it still carries when its drain times out (as nginx's
# old workers do at worker_shutdown_timeout): their clients reconnect to the new process.
BLAST = {
    "upstream_kill": {"a"},
    "pg_restart": {"pg"},
    "emfile": {"serve"},
    "reset_request": set(),
    "reset_response": set(),
    "slowloris": set(),
    "h2_rapid_reset": set(),
    "sighup": set(),
    "sigusr2": {"ws"},
}

# Seconds after a fault's end during which failures it caused may still show.
GRACE = 2.0

ORDER = list(BLAST)


def schedule(seed, total, warmup, tail, rounds):
    """[(offset_seconds, fault)]: every fault `rounds` times, each round in a seeded order,
    evenly spaced between the warm-up and the fault-free tail. The SIGUSR2 upgrade ends a
    round, and with several rounds not the first: so the first process sees every other
    fault twice, and the growth checks, which compare what a fault left behind with the
    plateau of the same process, have repeats to compare (the upgrade comes `rounds - 1`
    times)."""
    rng = random.Random(seed)
    others = [f for f in ORDER if f != "sigusr2"]
    faults = []
    for i in range(rounds):
        r = others[:]
        rng.shuffle(r)
        faults += r
        if rounds == 1 or i > 0:
            faults.append("sigusr2")
    span = total - warmup - tail
    gap = span / len(faults)
    return [(warmup + i * gap, f) for i, f in enumerate(faults)]


def _port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Faults:
    """The actions, on the run's context (`ctx`: run.Context)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def run(self, name):
        start = time.time()
        result = {"fault": name, "start": start}
        try:
            result.update(getattr(self, name)() or {})
        except Exception as e:  # a fault that could not be injected is a finding
            result["error"] = f"{type(e).__name__}: {e}"[:300]
        result["end"] = time.time()
        return result

    def _client(self, sub, *args, timeout=120):
        c = self.ctx
        argv = ["taskset", "-c", "1", c.python, os.path.join(c.here, "clients.py"), sub,
                *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        lines = p.stdout.strip().splitlines()
        if not lines:
            return {"client_error": p.stderr[-300:]}
        return {"client": json.loads(lines[-1])}

    def upstream_kill(self):
        c = self.ctx
        up = c.upstream_a
        up.kill(signal.SIGKILL)
        up.popen.wait(10)
        time.sleep(2.0)
        c.upstream_a = Proc(up.name, up.argv, c.run_dir, up.cpu).start()
        deadline = time.time() + 10
        while not _port_open(c.port_a) and time.time() < deadline:
            time.sleep(0.005)
        listening = time.time()
        # The proxy's backoff (at most 500 ms) decides when it dials again.
        url = f"{c.serve_url}/a/plaintext"
        while time.time() - listening < 10:
            if http_get(url, timeout=1)[0] == 200:
                return {"recovery_ms": round((time.time() - listening) * 1e3)}
            time.sleep(0.01)
        return {"recovery_ms": None}

    def pg_restart(self):
        c = self.ctx
        c.pg.restart()  # returns once PostgreSQL accepts connections (-w)
        ready = time.time()
        while time.time() - ready < 10:
            if http_get(f"{c.te_url}/db", timeout=1)[0] == 200:
                return {"recovery_ms": round((time.time() - ready) * 1e3)}
            time.sleep(0.01)
        return {"recovery_ms": None}

    def emfile(self):
        c = self.ctx
        out = self._client("emfile", "--pid", str(c.serve_pid()), "--addr", c.serve_addr,
                           "--tls", "--hold", "200", "--seconds", "5")
        rec = out.get("client", {}).get("recovery_ms")
        return {**out, "recovery_ms": None if rec is None else round(rec)}

    def reset_request(self):
        return self._client("reset", "--addr", self.ctx.serve_addr, "--tls", "--count",
                            "200", "--mode", "request", "--path", "/a/echo")

    def reset_response(self):
        return self._client("reset", "--addr", self.ctx.serve_addr, "--tls", "--count", "50",
                            "--mode", "response", "--path", "/big.bin")

    def slowloris(self):
        return self._client("slowloris", "--addr", self.ctx.serve_addr, "--tls", "--count",
                            "1000", "--seconds", "20")

    def h2_rapid_reset(self):
        return self._client("h2reset", "--addr", self.ctx.serve_addr, "--tls",
                            "--connections", "4", "--streams", "5000")

    def sighup(self):
        c = self.ctx
        os.kill(c.serve_pid(), signal.SIGHUP)
        time.sleep(0.5)
        status, _ = http_get(f"{c.serve_url}/small.txt")
        return {"answers_after": status}

    def sigusr2(self):
        c = self.ctx
        old = c.serve_pid()
        os.kill(old, signal.SIGUSR2)
        deadline = time.time() + 40
        new = old
        while time.time() < deadline and new == old:
            time.sleep(0.05)
            new = pid_from_file(c.pid_file) or old
        while time.time() < deadline and running(old):
            # The old process is our child only the first time: reap it then.
            try:
                os.waitpid(old, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        return {"old_pid": old, "new_pid": new, "old_exited": not running(old)}


def running(pid):
    """Whether `pid` runs (a zombie does not: it has exited)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(l.startswith("State:\tZ") for l in f)
    except OSError:
        return False
