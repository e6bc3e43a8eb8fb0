"""What a soak run records every 10 s about `fibra serve` (the process named by its pid file,
so a SIGUSR2 upgrade's new process is followed): RSS, open descriptors, threads, memory
mappings, the machine's TIME_WAIT sockets, and a few counters of its metrics endpoint."""

import os
import re
import subprocess
import threading
import time

from procs import http_get


def proc_sample(pid):
    """RSS (KiB), descriptors, threads and mappings of `pid`, or None if it is gone."""
    try:
        status = open(f"/proc/{pid}/status").read()
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        maps = sum(1 for _ in open(f"/proc/{pid}/maps"))
        return {"rss_kib": rss, "fds": fds, "threads": threads, "maps": maps}
    except (OSError, AttributeError):
        return None


def time_wait():
    """TIME_WAIT sockets on the machine."""
    out = subprocess.run(["ss", "-tanH", "state", "time-wait"], capture_output=True,
                         text=True).stdout
    return sum(1 for l in out.splitlines() if l.strip())


def metrics(url):
    """The metrics endpoint's samples without labels, and the server-errors series."""
    status, body = http_get(url, timeout=2)
    if status != 200:
        return {"metrics_status": status}
    out = {}
    for line in body.decode(errors="replace").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out


class Sampler:
    """Samples every `every` seconds in a thread until stopped."""

    def __init__(self, pid_of, metrics_url, every=10.0):
        self.pid_of = pid_of
        self.metrics_url = metrics_url
        self.every = every
        self.samples = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True, name="sampler")

    def sample(self):
        pid = self.pid_of()
        s = {"t": time.time(), "pid": pid, "time_wait": time_wait()}
        s.update(proc_sample(pid) or {"gone": True})
        s["metrics"] = metrics(self.metrics_url)
        return s

    def _loop(self):
        while not self.stopping.is_set():
            self.samples.append(self.sample())
            self.stopping.wait(self.every)

    def start(self):
        self.thread.start()

    def stop(self):
        self.stopping.set()
        self.thread.join(30)
