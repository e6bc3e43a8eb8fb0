"""Entry point of the fibra side-by-side benchmark harness (run via bench/compare.sh).

Builds every server (release), then for each selected scenario runs `--rounds` rounds in
which every server is started fresh, pinned to one CPU, warmed up and measured with a client
pinned to another CPU (servers alternate A B C A B C ...). Reports medians of req/s and server
CPU µs per request, and their ratios to the C pong reference, as a table on stdout, in
docs/BENCHMARKS.generated.md and as a PNG chart (docs/bench.png).
"""

import argparse
import os
import resource
import subprocess
import sys

from . import clients, report, servers, syscalls, toolchain


class Context:
    """Settings and caches shared by one run of the harness."""

    def __init__(self, args, bench_dir):
        self.bench_dir = bench_dir
        self.repo_dir = os.path.dirname(bench_dir)
        self.target_dir = os.path.join(bench_dir, "target")
        self.duration = args.duration
        self.warmup = args.warmup
        self.rounds = args.rounds
        self.paired = args.paired
        self.server_cpu = args.server_cpu
        self.client_cpu = args.client_cpu
        self.build = not args.no_build
        self.install = not args.no_install
        self.tool_cache = {}
        self.apt_updated = False
        self.fibra_checked = False
        self.fibra_path = None
        self.loadavg_start = report.loadavg()


def _csv_list(text):
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def parse_args(argv):
    all_sc = [s.name for s in clients.scenarios()]
    all_srv = [s.name for s in servers.all_servers()]
    p = argparse.ArgumentParser(
        prog="bench/compare.sh",
        description="Side-by-side HTTP benchmark: fibra vs a C epoll reference and peers.",
        epilog=f"scenarios: {', '.join(all_sc)}\nservers: {', '.join(all_srv)}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", help="comma-separated scenarios to run (default: all)")
    p.add_argument("--peers", help="comma-separated servers (default: all; pong is always added "
                   "as the reference unless --no-pong)")
    p.add_argument("--no-pong", action="store_true", help="do not add the pong reference")
    p.add_argument("--duration", type=int, default=10, help="seconds per measurement (10)")
    p.add_argument("--warmup", type=int, default=1, help="unmeasured warm-up seconds (1)")
    p.add_argument("--rounds", type=int, default=3, help="rounds; medians are reported (3)")
    p.add_argument("--server-cpu", type=int, default=0)
    p.add_argument("--client-cpu", type=int, default=1)
    p.add_argument("--paired", action="store_true",
                   help="measure pong right before every other server and report the median "
                        "of the per-pair ratios (twice the runs; for drifting machines)")
    p.add_argument("--no-build", action="store_true", help="use what is already built")
    p.add_argument("--no-install", action="store_true", help="never run apt-get")
    p.add_argument("--md", default=None, help="markdown output (docs/BENCHMARKS.generated.md)")
    p.add_argument("--png", default=None, help="chart output (docs/bench.png)")
    p.add_argument("--no-report", action="store_true", help="print the table only")
    p.add_argument("--strace", action="store_true",
                   help="instead of benchmarking, count syscalls per keep-alive request")
    p.add_argument("--strace-requests", type=int, default=100000)
    p.add_argument("--list", action="store_true", help="list scenarios and servers, then exit")
    args = p.parse_args(argv)
    for name in _csv_list(args.only) or []:
        if name not in all_sc:
            p.error(f"unknown scenario {name!r} (known: {', '.join(all_sc)})")
    for name in _csv_list(args.peers) or []:
        if name not in all_srv:
            p.error(f"unknown server {name!r} (known: {', '.join(all_srv)})")
    if args.duration < 1 or args.rounds < 1 or args.warmup < 0:
        p.error("--duration and --rounds must be >= 1, --warmup >= 0")
    return args


def select_servers(args):
    wanted = _csv_list(args.peers)
    chosen = []
    for s in servers.all_servers():
        if s.name == "pong" and not args.no_pong:
            chosen.append(s)
        elif wanted is None or s.name in wanted:
            chosen.append(s)
    return chosen


def _raise_fd_limit():
    """1,000-connection scenarios need more than the common 1,024 descriptors."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _children_cpu():
    """User+system seconds of the harness's waited-for children (the client runs)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure_once(ctx, sc, server, round_no):
    """Starts server, warms up, runs the scenario's client, samples CPU around it."""
    m = {"scenario": sc.name, "server": server.name, "round": round_no, "notes": "",
         "error": None, "requests": 0, "rps": None, "cpu_s": None, "cpu_us": None,
         "user_us": None, "cpu_pct": None, "client_pct": None}
    try:
        running = servers.start(ctx, server, sc.kind, ctx.server_cpu)
    except (RuntimeError, OSError) as e:
        m["error"] = f"start failed: {str(e).splitlines()[0]}"
        print(f"[error] {e}", file=sys.stderr)
        return m
    try:
        sc.warm_up(ctx, running.port, ctx.client_cpu)
        user_before, sys_before = running.cpu_seconds()
        client_before = _children_cpu()
        t0 = os.times().elapsed
        result = sc.run(ctx, running.port, ctx.client_cpu)
        wall = os.times().elapsed - t0
        user_after, sys_after = running.cpu_seconds()
        user = user_after - user_before
        cpu = user + sys_after - sys_before
        client = _children_cpu() - client_before
        m.update(requests=result.requests, rps=result.rps, notes=result.notes, cpu_s=cpu,
                 cpu_pct=100.0 * cpu / wall if wall > 0 else None,
                 client_pct=100.0 * client / wall if wall > 0 else None)
        if result.requests > 0:
            m["cpu_us"] = cpu * 1e6 / result.requests
            m["user_us"] = user * 1e6 / result.requests
        else:
            m["error"] = "no requests completed"
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        m["error"] = f"run failed: {str(e).splitlines()[0]}"
        print(f"[error] {server.name}/{sc.name}: {e}", file=sys.stderr)
    finally:
        running.stop()
    return m


def _measure(ctx, sc, server, round_no, measurements):
    print(f"[run] {sc.name} round {round_no}/{ctx.rounds}: {server.name}", file=sys.stderr)
    m = measure_once(ctx, sc, server, round_no)
    measurements.append(m)
    if m["error"] is None:
        print(f"      {m['rps']:,.0f} req/s, {m['cpu_us']:.2f} µs CPU/req, "
              f"server {m['cpu_pct']:.0f}% CPU, client {m['client_pct']:.0f}% "
              f"{m['notes']}", file=sys.stderr)
    return m


def main(argv):
    args = parse_args(argv)
    bench_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ctx = Context(args, bench_dir)
    if args.list:
        for sc in clients.scenarios():
            print(f"scenario {sc.name:<10} {sc.describe}")
        for s in servers.all_servers():
            print(f"server   {s.name:<12} {s.describe}")
        return 0
    os.makedirs(ctx.target_dir, exist_ok=True)
    _raise_fd_limit()
    if not toolchain.ensure(ctx, "taskset"):
        print("taskset (util-linux) is required", file=sys.stderr)
        return 1
    chosen = select_servers(args)
    usable = []
    for s in chosen:
        print(f"[build] {s.name}", file=sys.stderr)
        if s.build(ctx):
            usable.append(s)
    if not usable:
        print("no server could be built", file=sys.stderr)
        return 1
    if args.strace:
        return syscalls.run(ctx, usable, args.strace_requests)

    only = _csv_list(args.only)
    wanted_sc = [sc for sc in clients.scenarios() if only is None or sc.name in only]
    run_sc, skipped_sc = [], []
    for sc in wanted_sc:
        reason = sc.unavailable(ctx)
        if reason:
            print(f"[skip] scenario {sc.name}: {reason}", file=sys.stderr)
            skipped_sc.append((sc.name, reason))
        else:
            run_sc.append(sc)

    measurements = []
    for sc in run_sc:
        participants = [s for s in usable if sc.kind in s.kinds]
        pong = next((s for s in participants if s.name == "pong"), None)
        for r in range(1, ctx.rounds + 1):
            if ctx.paired and pong is not None:
                # pong, A, pong, B, ...: each server's ratio comes from the pong run right
                # before it, so drift over a round (minutes) does not enter the ratio.
                for s in participants:
                    if s is pong:
                        continue
                    ref = _measure(ctx, sc, pong, r, measurements)
                    m = _measure(ctx, sc, s, r, measurements)
                    if ref["error"] is None and m["error"] is None:
                        m["pair_rps_ratio"] = m["rps"] / ref["rps"] if ref["rps"] else None
                        m["pair_cpu_ratio"] = m["cpu_us"] / ref["cpu_us"]
            else:
                for s in participants:
                    _measure(ctx, sc, s, r, measurements)

    order = [s.name for s in chosen]
    summary = report.summarize(measurements, run_sc, order)
    report.print_table(summary)
    report.write_raw_csv(os.path.join(ctx.target_dir, "raw.csv"), measurements)
    if args.no_report or not summary:
        return 0
    csv_path = os.path.join(ctx.target_dir, "results.csv")
    report.write_csv(csv_path, summary)
    docs = os.path.join(ctx.repo_dir, "docs")
    md = args.md or os.path.join(docs, "BENCHMARKS.generated.md")
    png = args.png or os.path.join(docs, "bench.png")
    png_ok = report.render_chart(ctx, csv_path, png)
    png_rel = os.path.relpath(png, os.path.dirname(os.path.abspath(md))) if png_ok else None
    report.write_markdown(ctx, md, summary, chosen, skipped_sc, png_rel, argv)
    print(f"\nwrote {md}" + (f" and {png}" if png_ok else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
