"""Finding, installing and invoking the tools the benchmark harness needs.

A tool that is missing is installed with apt-get (once `apt-get update` has run) when the
harness runs as root and `--no-install` was not given; otherwise the servers and scenarios that
need it are skipped with a message. Every install step is idempotent: present tools are left
alone.
"""

import os
import shutil
import subprocess
import sys

# tool -> Debian packages to try, in order (the first that installs wins).
APT_PACKAGES = {
    "cc": ["gcc"],
    "go": ["golang-go"],
    "node": ["nodejs"],
    "ghc": ["ghc"],
    "warp": ["libghc-warp-dev"],
    "nginx": ["nginx-light", "nginx"],
    "h2o": ["h2o"],
    "caddy": ["caddy"],
    "wrk": ["wrk"],
    "httperf": ["httperf"],
    "h2load": ["nghttp2-client"],
    "openssl": ["openssl"],
    "strace": ["strace"],
    "taskset": ["util-linux"],
    "font": ["fonts-dejavu-core"],
}

FONT_PATHS = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
]

_EXTRA_PATHS = ["/usr/local/go/bin", "/usr/sbin", os.path.expanduser("~/.cargo/bin")]


def which(tool):
    """Path of an executable, also looking where Go, nginx and cargo usually live."""
    found = shutil.which(tool)
    if found:
        return found
    for d in _EXTRA_PATHS:
        p = os.path.join(d, tool)
        if os.access(p, os.X_OK):
            return p
    return None


def font_path():
    return next((p for p in FONT_PATHS if os.path.exists(p)), None)


def _present(tool):
    if tool == "warp":
        ghc_pkg = which("ghc-pkg")
        if not ghc_pkg:
            return False
        out = subprocess.run([ghc_pkg, "list", "--simple-output", "warp"],
                             capture_output=True, text=True)
        return bool(out.stdout.strip())
    if tool == "font":
        return font_path() is not None
    return which(tool) is not None


def ensure(ctx, tool):
    """True if tool is available, installing its Debian package first when allowed."""
    if tool in ctx.tool_cache:
        return ctx.tool_cache[tool]
    ok = _present(tool)
    if not ok and ctx.install and tool in APT_PACKAGES:
        ok = _apt_install(ctx, tool)
    ctx.tool_cache[tool] = ok
    return ok


def _apt_install(ctx, tool):
    if os.geteuid() != 0 or not which("apt-get"):
        return False
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not ctx.apt_updated:
        print("[setup] apt-get update", file=sys.stderr)
        subprocess.run(["apt-get", "update"], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ctx.apt_updated = True
    for pkg in APT_PACKAGES[tool]:
        print(f"[setup] apt-get install {pkg} (for {tool})", file=sys.stderr)
        r = subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", pkg],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode == 0 and _present(tool):
            return True
        print(f"[setup] could not install {pkg}: {r.stderr.strip()[-300:]}", file=sys.stderr)
    return False


def run(cmd, cwd=None, env=None):
    """Runs a build step; raises with the tail of its output when it fails."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    r = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stdout + r.stderr).strip().splitlines()[-12:]
        raise RuntimeError(f"`{' '.join(cmd)}` failed:\n  " + "\n  ".join(tail))
    return r


def cargo_build(ctx, manifest):
    """cargo build --release of a standalone bench project into the shared bench target dir."""
    run([which("cargo"), "build", "--release", "--manifest-path", manifest,
         "--target-dir", os.path.join(ctx.target_dir, "cargo")])


def cargo_bin(ctx, name):
    return os.path.join(ctx.target_dir, "cargo", "release", name)


def fibra_binary(ctx):
    """target/release/fibra, built once per run; None if it cannot be built or found."""
    if ctx.fibra_checked:
        return ctx.fibra_path
    ctx.fibra_checked = True
    path = os.path.join(ctx.repo_dir, "target", "release", "fibra")
    if ctx.build and which("cargo"):
        print("[build] cargo build --release -p fibra-cli", file=sys.stderr)
        try:
            run([which("cargo"), "build", "--release", "-p", "fibra-cli"], cwd=ctx.repo_dir)
        except RuntimeError as e:
            if os.access(path, os.X_OK):
                print(f"[warn] fibra build failed, using the existing binary:\n{e}", file=sys.stderr)
            else:
                print(f"[skip] fibra build failed:\n{e}", file=sys.stderr)
    ctx.fibra_path = path if os.access(path, os.X_OK) else None
    return ctx.fibra_path


def subcommand_help(binary, args):
    """Output of `binary args...` (e.g. `bench --help`) if it exits 0, else None."""
    try:
        r = subprocess.run([binary] + args, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout + r.stderr if r.returncode == 0 else None
