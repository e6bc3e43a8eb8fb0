"""The processes of a soak run: the servers under test, the throw-away PostgreSQL cluster, and
the clean-up that leaves nothing running.

Every child is started in a session of its own, so that it and whatever it starts (the new
process of a SIGUSR2 upgrade, a load generator's helpers) are one process group, killed as
one at the end.
"""

import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request


def free_port():
    """A TCP port on 127.0.0.1 on which nothing listens."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """A child process pinned to a CPU, its output in files under the run directory."""

    def __init__(self, name, argv, run_dir, cpu, env=None):
        self.name = name
        self.argv = argv
        self.cpu = cpu
        self.out_path = os.path.join(run_dir, f"{name}.out")
        self.err_path = os.path.join(run_dir, f"{name}.err")
        self.env = env
        self.popen = None

    def start(self):
        with open(self.out_path, "ab") as out, open(self.err_path, "ab") as err:
            self.popen = subprocess.Popen(
                ["taskset", "-c", str(self.cpu)] + self.argv,
                stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                start_new_session=True, env=self.env)
        return self

    @property
    def pid(self):
        return self.popen.pid

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def kill(self, sig=signal.SIGKILL):
        """Signals the whole process group (the child and what it started)."""
        if self.popen is None:
            return
        try:
            os.killpg(self.popen.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, timeout=10):
        """SIGTERM, then SIGKILL after `timeout` seconds; reaps the child."""
        if self.popen is None:
            return
        self.kill(signal.SIGTERM)
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill(signal.SIGKILL)
        try:
            self.popen.wait(5)
        except subprocess.TimeoutExpired:
            pass


def insecure_tls():
    """A client context for the run's self-signed certificate."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def http_get(url, timeout=2.0):
    """(status, body) of GET url, or (None, error text)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=insecure_tls()) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception as e:  # the server down or refusing is data here
        return None, str(e).encode()


def wait_until_ok(url, seconds=20.0, step=0.02):
    """Polls url until it answers 200; returns the seconds it took, or None."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        status, _ = http_get(url, timeout=1.0)
        if status == 200:
            return time.monotonic() - start
        time.sleep(step)
    return None


def make_site(run_dir, big_mib):
    """The served directory: a small text file, an index page and a large file for ranges."""
    site = os.path.join(run_dir, "site")
    os.makedirs(site)
    with open(os.path.join(site, "small.txt"), "w") as f:
        f.write("Hello, World!")
    with open(os.path.join(site, "index.html"), "w") as f:
        f.write("<!doctype html><title>soak</title>" + "<p>fibra soak run</p>\n" * 40)
    with open(os.path.join(site, "big.bin"), "wb") as f:
        f.write(os.urandom(big_mib << 20))
    return site


def make_cert(run_dir):
    """A self-signed ECDSA P-256 certificate for 127.0.0.1 and localhost (cert, key)."""
    cert, key = os.path.join(run_dir, "cert.pem"), os.path.join(run_dir, "key.pem")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        check=True, capture_output=True)
    return cert, key


class Postgres:
    """A throw-away cluster with TechEmpower's schema, on CPU 1, run as the postgres user."""

    def __init__(self, run_dir, pgbin, schema):
        self.dir = os.path.join(run_dir, "pg")
        self.sock = run_dir
        self.pgbin = pgbin
        self.schema = schema
        self.port = free_port()
        self.log = os.path.join(run_dir, "pg.log")

    def _as_pg(self, argv, **kw):
        if os.getuid() == 0:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        return subprocess.run(argv, check=True, capture_output=True, **kw)

    def ctl(self, *args):
        opts = (f"-p {self.port} -k {self.sock} -c listen_addresses=127.0.0.1 "
                "-c max_connections=200 -c shared_buffers=128MB -c synchronous_commit=off")
        self._as_pg(["taskset", "-c", "1", f"{self.pgbin}/pg_ctl", "-D", self.dir, "-l",
                     self.log, "-w", "-o", opts] + list(args))

    def start(self):
        self._as_pg([f"{self.pgbin}/initdb", "-D", self.dir, "-U", "postgres",
                     "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                     "--locale=C", "--no-sync"])
        self.ctl("start")
        psql = [f"{self.pgbin}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", self.sock,
                "-p", str(self.port)]
        self._as_pg(psql + ["-U", "postgres", "-d", "postgres", "-c",
                            "CREATE USER benchmarkdbuser WITH PASSWORD 'benchmarkdbpass'"])
        self._as_pg(psql + ["-U", "postgres", "-d", "postgres", "-c",
                            "CREATE DATABASE hello_world OWNER benchmarkdbuser"])
        schema = os.path.join(self.sock, "schema.sql")
        shutil.copy(self.schema, schema)
        os.chmod(schema, 0o644)
        self._as_pg(psql + ["-U", "benchmarkdbuser", "-d", "hello_world", "-f", schema])

    @property
    def url(self):
        return (f"postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:{self.port}"
                "/hello_world")

    def restart(self):
        """`pg_ctl restart -m fast`, returning once it accepts connections again."""
        self.ctl("restart", "-m", "fast")

    def stop(self):
        if os.path.exists(os.path.join(self.dir, "postmaster.pid")):
            try:
                self._as_pg([f"{self.pgbin}/pg_ctl", "-D", self.dir, "-m", "immediate", "-w",
                             "stop"])
            except subprocess.CalledProcessError:
                pass


def pid_from_file(path):
    """The pid in a pid file, or None."""
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None
