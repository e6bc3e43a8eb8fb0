"""The servers the fibra benchmark harness compares: how to build, start, probe and stop each.

Every server gets one worker/thread and is started pinned to one CPU (`taskset -c`) in a new
session, so its whole process group (nginx's master and worker, h2o's helpers, every runtime
thread) can be sampled for CPU time and stopped together. A server whose toolchain is missing
or whose build fails is skipped with a message, never a failure of the whole run.
"""

import http.client
import os
import ssl
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from . import toolchain

HELLO = "hello"  # serves GET /plaintext -> "Hello, World!"
STATIC = "static"  # serves the 151-byte index.html at /index.html (and /1m.bin, 1 MiB)
HELLO_TLS = "hello-tls"  # HELLO over HTTPS (the run's ECDSA P-256 certificate)
STATIC_TLS = "static-tls"  # STATIC over HTTPS
HELLO_H2C = "hello-h2c"  # HELLO over cleartext HTTP/2 with prior knowledge
STATIC_H2C = "static-h2c"  # STATIC over cleartext HTTP/2 with prior knowledge
HELLO_H3 = "hello-h3"  # HELLO_TLS that also answers HTTP/3 on the port's UDP twin
STATIC_H3 = "static-h3"  # STATIC_TLS that also answers HTTP/3 on the port's UDP twin
H2C_KINDS = {HELLO_H2C, STATIC_H2C}
H3_KINDS = {HELLO_H3, STATIC_H3}
TLS_KINDS = {HELLO_TLS, STATIC_TLS} | H3_KINDS
PLAIN_KIND = {HELLO_TLS: HELLO, STATIC_TLS: STATIC, HELLO_H2C: HELLO, STATIC_H2C: STATIC,
              HELLO_H3: HELLO, STATIC_H3: STATIC}

# The 1 MiB file of the STATIC kinds (served at /1m.bin).
BIG_FILE = "1m.bin"
BIG_SIZE = 1 << 20

CLK_TCK = os.sysconf("SC_CLK_TCK")


class Server:
    """One comparable server: name, which scenario kinds it serves, and how to build/run it."""

    def __init__(self, name, kinds, build, command, env=None, describe="", tls_command=None,
                 h2c_command=None, h3_command=None):
        self.name = name
        self.kinds = kinds
        self._build = build
        self._command = command
        # (ctx, port, rundir) -> argv serving HTTPS with rundir/cert.pem and rundir/key.pem;
        # needed for the TLS kinds.
        self._tls_command = tls_command
        # (ctx, port, rundir) -> argv for the h2c kind, when it differs from the plain one
        # (nginx needs `http2` on its listen line, which then takes no HTTP/1.1).
        self._h2c_command = h2c_command
        # (ctx, port, rundir) -> argv serving HTTPS on TCP and HTTP/3 on UDP, both on port,
        # when it differs from the TLS one.
        self._h3_command = h3_command
        self.env = env or {}
        self.describe = describe
        self.skip_reason = None

    def build(self, ctx):
        """Builds the server; on failure records why it is skipped. Returns True if usable."""
        try:
            reason = self._build(ctx)
        except Exception as e:  # a broken toolchain must not stop the other servers
            reason = f"build error: {e}"
        self.skip_reason = reason
        if reason:
            print(f"[skip] {self.name}: {reason}", file=sys.stderr)
        return reason is None

    def command(self, ctx, port, rundir, tls=False, h2c=False, h3=False):
        if h3 and self._h3_command:
            return self._h3_command(ctx, port, rundir)
        if tls:
            return self._tls_command(ctx, port, rundir)
        if h2c and self._h2c_command:
            return self._h2c_command(ctx, port, rundir)
        return self._command(ctx, port, rundir)


class Running:
    """A started server: its process group, port and log."""

    def __init__(self, server, proc, port, rundir, log_path):
        self.server = server
        self.proc = proc
        self.port = port
        self.rundir = rundir
        self.log_path = log_path

    @property
    def pgid(self):
        return self.proc.pid

    def pids(self):
        """Pids of every live process in the server's process group."""
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            fields = _stat_fields(entry)
            if fields and int(fields[4]) == self.pgid:
                out.append(int(entry))
        return out

    def cpu_seconds(self):
        """(user, system) CPU seconds of the whole process group (fields 14 and 15 of
        /proc/PID/stat)."""
        user = system = 0
        for pid in self.pids():
            fields = _stat_fields(str(pid))
            if fields:
                user += int(fields[13])
                system += int(fields[14])
        return user / CLK_TCK, system / CLK_TCK

    def log_tail(self, n=15):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self):
        """Stops the whole process group this harness started (TERM, then KILL)."""
        try:
            os.killpg(self.pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        # Helpers of the group may outlive the leader by a moment.
        deadline = time.time() + 5
        while self.pids() and time.time() < deadline:
            time.sleep(0.05)
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.rundir, ignore_errors=True)


def _stat_fields(pid):
    """Fields of /proc/PID/stat (1-based field N is index N-1), comm parsed safely."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    rparen = data.rfind(")")
    if rparen < 0:
        return None
    head = data[: data.find("(")].strip()
    return [head, data[data.find("(") + 1 : rparen]] + data[rparen + 2 :].split()


def free_port():
    """A loopback port free now for TCP and for UDP (other people's servers may be on the
    usual ones; an HTTP/3 server takes both)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            try:
                u.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port


def probe(port, path, timeout=1.0, tls=False, h2c=False):
    """True when GET path answers 200 on 127.0.0.1:port (over HTTPS if tls, certificate
    not checked: it is the run's self-signed one; over cleartext HTTP/2 if h2c, with curl)."""
    if h2c:
        r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                            "--http2-prior-knowledge", "--max-time", str(timeout),
                            f"http://127.0.0.1:{port}{path}"], capture_output=True, text=True)
        return r.stdout.strip() == "200 2"
    try:
        if tls:
            context = ssl._create_unverified_context()
            conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=timeout,
                                               context=context)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("GET", path)
        ok = conn.getresponse().status == 200
        conn.close()
        return ok
    except (OSError, http.client.HTTPException):
        return False


def start(ctx, server, kind, cpu):
    """Starts server pinned to cpu on a free port; waits until it answers the kind's path."""
    rundir = tempfile.mkdtemp(prefix=f"fibra-bench-{server.name}-")
    os.chmod(rundir, 0o755)  # nginx/h2o workers run as nobody when we are root
    root = os.path.join(rundir, "root")
    os.mkdir(root)
    shutil.copy(os.path.join(ctx.bench_dir, "static", "index.html"), root)
    os.chmod(os.path.join(root, "index.html"), 0o644)
    big = os.path.join(root, BIG_FILE)
    with open(big, "wb") as f:
        f.write(big_file_bytes())
    os.chmod(big, 0o644)
    os.chmod(root, 0o755)
    tls = kind in TLS_KINDS
    if tls:
        cert, key = tls_certificate(ctx)
        for src, name in ((cert, "cert.pem"), (key, "key.pem")):
            shutil.copy(src, os.path.join(rundir, name))
            os.chmod(os.path.join(rundir, name), 0o644)
    port = free_port()
    h2c = kind in H2C_KINDS
    cmd = server.command(ctx, port, rundir, tls, h2c, h3=kind in H3_KINDS)
    env = dict(os.environ)
    env.update(server.env)
    log_path = os.path.join(rundir, "server.log")
    log = open(log_path, "w")
    proc = subprocess.Popen(
        ["taskset", "-c", str(cpu)] + cmd,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=rundir,
        start_new_session=True,
    )
    log.close()
    running = Running(server, proc, port, rundir, log_path)
    path = "/index.html" if PLAIN_KIND.get(kind, kind) == STATIC else "/plaintext"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            tail = running.log_tail()
            running.stop()
            raise RuntimeError(f"{server.name} exited with {proc.returncode}:\n{tail}")
        if probe(port, path, tls=tls, h2c=h2c):
            return running
        time.sleep(0.1)
    tail = running.log_tail()
    running.stop()
    raise RuntimeError(f"{server.name} did not answer GET {path} within 60 s:\n{tail}")


def big_file_bytes():
    """The 1 MiB file's content: deterministic, not compressible by accident."""
    out = bytearray()
    x = 0x9E3779B97F4A7C15
    while len(out) < BIG_SIZE:
        x ^= (x << 13) & 0xFFFFFFFFFFFFFFFF
        x ^= x >> 7
        x ^= (x << 17) & 0xFFFFFFFFFFFFFFFF
        out += x.to_bytes(8, "little")
    return bytes(out[:BIG_SIZE])


def tls_certificate(ctx):
    """(cert.pem, key.pem) of the run: one self-signed ECDSA P-256 certificate for localhost
    and 127.0.0.1, made once with openssl, the same for every server."""
    if "tls-cert" not in ctx.tool_cache:
        out = os.path.join(ctx.target_dir, "tls")
        os.makedirs(out, exist_ok=True)
        cert, key = os.path.join(out, "cert.pem"), os.path.join(out, "key.pem")
        toolchain.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                       "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
                       "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                       "-keyout", key, "-out", cert, "-days", "2"])
        ctx.tool_cache["tls-cert"] = (cert, key)
    return ctx.tool_cache["tls-cert"]


# ---- the servers -------------------------------------------------------------------------


def _target(ctx, *parts):
    return os.path.join(ctx.target_dir, *parts)


def _prebuilt(path):
    """With --no-build: None if the binary exists, else why the server is skipped."""
    return None if os.access(path, os.X_OK) else f"{path} is not built (--no-build)"


def _build_pong(ctx):
    if not ctx.build:
        return _prebuilt(_target(ctx, "pong"))
    if not toolchain.ensure(ctx, "cc"):
        return "no C compiler (cc)"
    src = os.path.join(ctx.bench_dir, "pong", "pong.c")
    toolchain.run(["cc", "-O2", "-o", _target(ctx, "pong"), src])
    return None


def _fibra_cmd(sub):
    def build(ctx):
        binary = toolchain.fibra_binary(ctx)
        if binary is None:
            return "target/release/fibra could not be built"
        text = toolchain.subcommand_help(binary, [sub, "--help"])
        if text is None or "--workers" not in text or "--port" not in text:
            return f"`fibra {sub} --workers N --port P` does not exist yet"
        return None

    return build


def _build_fibra_pgo(ctx):
    """target/pgo/release/fibra, the profile-guided build made by bench/pgo.sh."""
    # Built once per run for both fibra-*-pgo servers (the result is kept in the tool cache).
    if "fibra-pgo" not in ctx.tool_cache:
        ctx.tool_cache["fibra-pgo"] = _run_pgo_build(ctx)
    return ctx.tool_cache["fibra-pgo"]


def _run_pgo_build(ctx):
    path = _fibra_pgo_path(ctx)
    if not ctx.build:
        return _prebuilt(path)
    if toolchain.fibra_binary(ctx) is None:
        return "target/release/fibra could not be built"
    if not toolchain.ensure(ctx, "wrk"):
        return "bench/pgo.sh needs wrk"
    print("[build] bench/pgo.sh (instrumented build, training run, PGO build)", file=sys.stderr)
    try:
        toolchain.run([os.path.join(ctx.bench_dir, "pgo.sh")], cwd=ctx.repo_dir)
    except RuntimeError as e:
        return f"bench/pgo.sh failed: {str(e)[-300:]}"
    return None if os.access(path, os.X_OK) else "bench/pgo.sh did not produce a binary"


def _fibra_pgo_path(ctx):
    return os.path.join(ctx.repo_dir, "target", "pgo", "release", "fibra")


def _build_go(ctx):
    if not ctx.build:
        return _prebuilt(_target(ctx, "peer-go"))
    if not toolchain.ensure(ctx, "go"):
        return "no Go toolchain"
    toolchain.run(
        [toolchain.which("go"), "build", "-o", _target(ctx, "peer-go"), "."],
        cwd=os.path.join(ctx.bench_dir, "peers", "go"),
        env={"GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"},
    )
    return None


def _build_node(ctx):
    return None if toolchain.ensure(ctx, "node") else "no node"


def _build_cargo_peer(name):
    def build(ctx):
        if not ctx.build:
            return _prebuilt(toolchain.cargo_bin(ctx, f"bench-peer-{name}"))
        if not toolchain.ensure(ctx, "cargo"):
            return "no cargo"
        toolchain.cargo_build(ctx, os.path.join(ctx.bench_dir, "peers", name, "Cargo.toml"))
        return None

    return build


def _build_warp(ctx):
    if not ctx.build:
        return _prebuilt(_target(ctx, "peer-warp"))
    if not toolchain.ensure(ctx, "ghc") or not toolchain.ensure(ctx, "warp"):
        return "no ghc / libghc-warp-dev"
    obj = _target(ctx, "warp-obj")
    os.makedirs(obj, exist_ok=True)
    src = os.path.join(ctx.bench_dir, "peers", "warp", "Hello.hs")
    toolchain.run(
        ["ghc", "-O2", "-threaded", "-rtsopts", "-outputdir", obj, "-o", _target(ctx, "peer-warp"), src]
    )
    return None


def _build_nginx(ctx):
    return None if toolchain.ensure(ctx, "nginx") else "no nginx"


def _build_h2o(ctx):
    return None if toolchain.ensure(ctx, "h2o") else "no h2o"


def _build_caddy(ctx):
    return None if toolchain.ensure(ctx, "caddy") else "no caddy"


def _caddy_cmd(ctx, port, rundir):
    conf = os.path.join(rundir, "Caddyfile")
    _fill(os.path.join(ctx.bench_dir, "peers", "caddy", "Caddyfile.in"), conf,
          {"PORT": str(port), "RUN": rundir, "ROOT": os.path.join(rundir, "root")})
    return [toolchain.which("caddy"), "run", "--config", conf, "--adapter", "caddyfile"]


def _fill(template_path, out_path, values):
    with open(template_path) as f:
        text = f.read()
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    with open(out_path, "w") as f:
        f.write(text)


def _nginx_cmd(ctx, port, rundir, tls=False, h2c=False):
    conf = os.path.join(rundir, "nginx.conf")
    # Over TLS: the run's certificate, TLS 1.2 and 1.3, a session cache (as a site would
    # have; it does not serve full handshakes).
    tls_lines = (
        f"ssl_certificate {rundir}/cert.pem;\n        ssl_certificate_key {rundir}/key.pem;\n"
        "        ssl_protocols TLSv1.2 TLSv1.3;\n        ssl_session_cache shared:SSL:10m;"
        if tls else ""
    )
    _fill(
        os.path.join(ctx.bench_dir, "peers", "nginx", "nginx.conf.in"),
        conf,
        {"PORT": str(port), "RUN": rundir, "ROOT": os.path.join(rundir, "root"),
         # HTTP/2 through ALPN over TLS; with prior knowledge (only) on the h2c kind.
         "SSL": " ssl http2" if tls else (" http2" if h2c else ""), "TLS": tls_lines},
    )
    return [toolchain.which("nginx"), "-p", rundir, "-c", conf]


_H2O_MRUBY = (
    'mruby.handler: Proc.new { |env| [200, {"content-type" => "text/plain"},'
    ' ["Hello, World!"]] }'
)


def _h2o_cmd(ctx, port, rundir, tls=False):
    conf = os.path.join(rundir, "h2o.conf")
    template = os.path.join(ctx.bench_dir, "peers", "h2o", "h2o.conf.in")
    user = "nobody" if os.geteuid() == 0 else ""
    # Over TLS: the run's certificate, TLS 1.2 and 1.3 (h2o keeps a session cache and
    # tickets by default).
    tls_lines = (
        f"  ssl:\n    certificate-file: {rundir}/cert.pem\n    key-file: {rundir}/key.pem\n"
        "    minimum-version: TLSv1.2\n"
        if tls else ""
    )
    values = {"PORT": str(port), "RUN": rundir, "ROOT": os.path.join(rundir, "root"),
              "USER": user, "TLS": tls_lines}
    _fill(template, conf, dict(values, PLAINTEXT=_H2O_MRUBY))
    h2o = toolchain.which("h2o")
    test = subprocess.run([h2o, "-t", "-c", conf], capture_output=True)
    # H2O_PLAINTEXT=file: /plaintext from the 13-byte file even where mruby exists (h2o's
    # file handler is its cheapest way to say hello).
    if test.returncode != 0 or os.environ.get("H2O_PLAINTEXT") == "file":
        # No mruby in this build: serve /plaintext from a 13-byte file instead.
        hello = os.path.join(rundir, "plaintext.txt")
        with open(hello, "w") as f:
            f.write("Hello, World!")
        os.chmod(hello, 0o644)
        _fill(template, conf, dict(values, PLAINTEXT=f"file.file: {hello}"))
    if not user:
        with open(conf) as f:
            text = f.read().replace("user: \n", "")
        with open(conf, "w") as f:
            f.write(text)
    return [h2o, "-c", conf]


def all_servers():
    """Every server the harness knows, in table order (pong first: it is the reference)."""
    fibra = lambda ctx: ctx.fibra_path  # noqa: E731

    def tls_args(d):
        return ["--tls-cert", os.path.join(d, "cert.pem"), "--tls-key", os.path.join(d, "key.pem")]

    def fibra_hello(ctx, p, d):
        return [fibra(ctx), "hello", "--workers", "1", "--port", str(p)]

    def fibra_serve(ctx, p, d):
        return [fibra(ctx), "serve", os.path.join(d, "root"), "--workers", "1", "--port", str(p)]

    def caddy_env_dir(key):
        # Caddy writes its storage under $XDG_DATA_HOME (and config under
        # $XDG_CONFIG_HOME): keep both in the harness's target dir.
        return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "..", "target", "caddy", key))

    return [
        Server("pong", {HELLO, STATIC}, _build_pong,
               lambda ctx, p, d: [_target(ctx, "pong"), str(p)],
               describe="C epoll reference (bench/pong/pong.c)"),
        Server("fibra-hello", {HELLO, HELLO_TLS, HELLO_H2C, HELLO_H3}, _fibra_cmd("hello"),
               fibra_hello,
               tls_command=lambda ctx, p, d: fibra_hello(ctx, p, d) + tls_args(d),
               h3_command=lambda ctx, p, d: fibra_hello(ctx, p, d) + tls_args(d) + ["--http3"],
               describe="fibra hello --workers 1 (over TLS: --tls-cert/--tls-key; "
                        "HTTP/3: --http3)"),
        Server("fibra-hello-pgo", {HELLO, HELLO_TLS, HELLO_H2C}, _build_fibra_pgo,
               lambda ctx, p, d: [_fibra_pgo_path(ctx), "hello", "--workers", "1",
                                  "--port", str(p)],
               tls_command=lambda ctx, p, d: [_fibra_pgo_path(ctx), "hello", "--workers", "1",
                                              "--port", str(p)] + tls_args(d),
               describe="fibra hello --workers 1, profile-guided build (bench/pgo.sh)"),
        Server("fibra-serve", {STATIC, STATIC_TLS, STATIC_H2C, STATIC_H3}, _fibra_cmd("serve"),
               fibra_serve,
               tls_command=lambda ctx, p, d: fibra_serve(ctx, p, d) + tls_args(d),
               h3_command=lambda ctx, p, d: fibra_serve(ctx, p, d) + tls_args(d) + ["--http3"],
               describe="fibra serve --workers 1 (over TLS: --tls-cert/--tls-key; "
                        "HTTP/3: --http3)"),
        Server("fibra-serve-pgo", {STATIC, STATIC_TLS, STATIC_H2C}, _build_fibra_pgo,
               lambda ctx, p, d: [_fibra_pgo_path(ctx), "serve", os.path.join(d, "root"),
                                  "--workers", "1", "--port", str(p)],
               tls_command=lambda ctx, p, d: [_fibra_pgo_path(ctx), "serve",
                                              os.path.join(d, "root"), "--workers", "1",
                                              "--port", str(p)] + tls_args(d),
               describe="fibra serve --workers 1, profile-guided build (bench/pgo.sh)"),
        Server("nginx", {HELLO, STATIC, HELLO_TLS, STATIC_TLS, HELLO_H2C, STATIC_H2C}, _build_nginx,
               _nginx_cmd, tls_command=lambda ctx, p, d: _nginx_cmd(ctx, p, d, tls=True),
               h2c_command=lambda ctx, p, d: _nginx_cmd(ctx, p, d, h2c=True),
               describe="nginx, 1 worker, return 200 / sendfile + open_file_cache "
                        "(over TLS: OpenSSL, ssl_session_cache)"),
        Server("h2o", {HELLO, STATIC, HELLO_TLS, STATIC_TLS, HELLO_H2C, STATIC_H2C}, _build_h2o, _h2o_cmd,
               tls_command=lambda ctx, p, d: _h2o_cmd(ctx, p, d, tls=True),
               describe="h2o, num-threads 1 (mruby handler for /plaintext; over TLS: OpenSSL)"),
        Server("caddy", {HELLO_TLS, STATIC_TLS, HELLO_H3, STATIC_H3}, _build_caddy,
               _caddy_cmd, tls_command=_caddy_cmd, h3_command=_caddy_cmd,
               env={"GOMAXPROCS": "1", "XDG_DATA_HOME": caddy_env_dir("data"),
                    "XDG_CONFIG_HOME": caddy_env_dir("config")},
               describe="Caddy 2 (Go), GOMAXPROCS=1, respond / file_server, HTTPS with "
                        "h1, h2 and h3"),
        Server("hyper", {HELLO}, _build_cargo_peer("hyper"),
               lambda ctx, p, d: [toolchain.cargo_bin(ctx, "bench-peer-hyper"), str(p)],
               describe="hyper 1.x, current-thread tokio"),
        Server("may", {HELLO}, _build_cargo_peer("may"),
               lambda ctx, p, d: [toolchain.cargo_bin(ctx, "bench-peer-may"), str(p)],
               describe="may_minihttp, 1 may worker"),
        Server("go", {HELLO}, _build_go,
               lambda ctx, p, d: [_target(ctx, "peer-go"), str(p)],
               env={"GOMAXPROCS": "1"}, describe="Go net/http, GOMAXPROCS=1"),
        Server("node", {HELLO}, _build_node,
               lambda ctx, p, d: [toolchain.which("node"),
                                  os.path.join(ctx.bench_dir, "peers", "node", "server.js"), str(p)],
               describe="Node http, one process"),
        Server("warp", {HELLO}, _build_warp,
               lambda ctx, p, d: [_target(ctx, "peer-warp"), str(p), "+RTS", "-N1", "-RTS"],
               describe="Warp (ghc -O2 -threaded, +RTS -N1)"),
    ]
