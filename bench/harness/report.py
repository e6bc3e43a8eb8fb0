"""Turns the harness's measurements into docs/BENCHMARKS.generated.md, a CSV and a PNG chart.

Per scenario and server the report gives the median over the rounds of req/s and of server
CPU µs per request, and both as ratios to the C pong reference measured in the same run.
"""

import csv
import datetime
import os
import platform
import statistics
import subprocess
import sys

from . import toolchain


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(measurements, scenario_order, server_order):
    """[(scenario, [row dict, ...]), ...] with medians and ratios to pong."""
    out = []
    for sc in scenario_order:
        rows = []
        for srv in server_order:
            ms = [m for m in measurements if m["scenario"] == sc.name and m["server"] == srv]
            if not ms:
                continue
            good = [m for m in ms if m.get("error") is None]
            rows.append({
                "server": srv,
                "rps": _median([m["rps"] for m in good]),
                "cpu_us": _median([m["cpu_us"] for m in good]),
                "user_us": _median([m["user_us"] for m in good
                                    if m.get("user_us") is not None]),
                "cpu_pct": _median([m["cpu_pct"] for m in good]),
                "client_pct": _median([m["client_pct"] for m in good]),
                "rounds": len(good),
                "notes": "; ".join(sorted({m["notes"] for m in ms if m.get("notes")}
                                          | {m["error"] for m in ms if m.get("error")})),
            })
        pong = next((r for r in rows if r["server"] == "pong"), None)
        for r in rows:
            r["rps_ratio"] = _ratio(r["rps"], pong and pong["rps"])
            r["cpu_ratio"] = _ratio(r["cpu_us"], pong and pong["cpu_us"])
            # --paired: the median of the ratios to the pong run just before each round.
            ms = [m for m in measurements if m["scenario"] == sc.name
                  and m["server"] == r["server"] and m.get("pair_cpu_ratio") is not None]
            if ms:
                r["rps_ratio"] = _median([m["pair_rps_ratio"] for m in ms
                                          if m["pair_rps_ratio"] is not None])
                r["cpu_ratio"] = _median([m["pair_cpu_ratio"] for m in ms])
        if rows:
            out.append((sc, rows))
    return out


def _ratio(value, ref):
    if value is None or not ref:
        return None
    return value / ref


def _fmt(v, spec):
    return "—" if v is None else format(v, spec)


def write_csv(path, summary):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scenario", "server", "rps", "cpu_us", "rps_ratio", "cpu_ratio"])
        for sc, rows in summary:
            for r in rows:
                w.writerow([sc.name, r["server"], _fmt(r["rps"], ".1f"), _fmt(r["cpu_us"], ".3f"),
                            _fmt(r["rps_ratio"], ".4f"), _fmt(r["cpu_ratio"], ".4f")])


def write_raw_csv(path, measurements):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    keys = ["scenario", "round", "server", "requests", "rps", "cpu_s", "cpu_us", "user_us",
            "cpu_pct", "client_pct",
            "notes", "error"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for m in measurements:
            w.writerow(m)


def render_chart(ctx, csv_path, png_path):
    """Builds and runs bench/chart; returns True if the PNG was written."""
    if not toolchain.ensure(ctx, "cargo"):
        print("[skip] chart: no cargo", file=sys.stderr)
        return False
    toolchain.ensure(ctx, "font")
    try:
        if ctx.build:
            toolchain.cargo_build(ctx, os.path.join(ctx.bench_dir, "chart", "Cargo.toml"))
        args = [toolchain.cargo_bin(ctx, "bench-chart"), csv_path, png_path]
        font = toolchain.font_path()
        if font:
            args.append(font)
        toolchain.run(args)
        return True
    except RuntimeError as e:
        print(f"[skip] chart: {e}", file=sys.stderr)
        return False


def _machine():
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} cores" + (f" ({model})" if model else "")


def loadavg():
    """The 1-minute load average: other work on a shared machine skews the figures."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def _version(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (r.stdout + r.stderr).strip().splitlines()
    return text[0].strip() if text else None


def write_markdown(ctx, path, summary, servers, skipped_scenarios, png_name, argv):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "<!-- Generated by bench/compare.sh; do not edit by hand (re-run the script). -->",
        "## Measured results",
        "",
        f"- Date: {now}",
        f"- Machine: {_machine()}, kernel {platform.release()}; 1-minute load average "
        f"{ctx.loadavg_start} at the start, {loadavg()} at the end (the benchmark itself "
        "accounts for up to ~2; more means other work shared the cores)",
        f"- Command: `bench/compare.sh {' '.join(argv)}`",
        f"- Duration {ctx.duration} s per measurement (warm-up {ctx.warmup} s), "
        f"{ctx.rounds} round(s), servers alternating; figures are medians over the rounds.",
        f"- Server pinned to CPU {ctx.server_cpu}, client pinned to CPU {ctx.client_cpu}; "
        "one worker/thread per server.",
        "- **CPU µs/req** = user+system time of the server's whole process group across the "
        "run (`/proc/PID/stat` fields 14+15) ÷ requests completed; **of which user** is the "
        "user-space part (field 14), the part a server's own code decides. **CPU %** is the server's "
        "busy share of its core and the client's (server/client): a server near 100 % is "
        "server-bound; a client near 100 % with the server below it means client-bound, and "
        "then CPU µs/req is the figure that shows efficiency.",
        "- Ratios are to the C pong reference (`bench/pong/pong.c`) in the same run: "
        "req/s higher is better, CPU lower is better."
        + (" **Paired** (`--paired`): pong was measured right before every other server, and "
           "each ratio is the median over the rounds of the ratio to that pong run (pong's "
           "own row: all its runs)." if ctx.paired else ""),
        "",
    ]
    wrk = _version(["wrk", "-v"])
    if wrk:
        lines.append(f"- Client: {wrk}")
    lines.append("")
    lines.append("| server | what |")
    lines.append("|---|---|")
    for s in servers:
        what = s.describe + (f" — skipped: {s.skip_reason}" if s.skip_reason else "")
        lines.append(f"| {s.name} | {what} |")
    lines.append("")
    for sc, rows in summary:
        lines.append(f"### {sc.title} (`{sc.name}`)")
        lines.append("")
        lines.append(f"Client: {sc.describe}.")
        lines.append("")
        lines.append("| server | req/s | CPU µs/req | of which user | req/s ÷ pong | CPU ÷ pong "
                     "| CPU % srv/cli | notes |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|---|")
        for r in rows:
            lines.append(
                f"| {r['server']} | {_fmt(r['rps'], ',.0f')} | {_fmt(r['cpu_us'], '.2f')} "
                f"| {_fmt(r.get('user_us'), '.2f')} "
                f"| {_fmt(r['rps_ratio'], '.2f')} | {_fmt(r['cpu_ratio'], '.2f')} "
                f"| {_fmt(r['cpu_pct'], '.0f')}/{_fmt(r['client_pct'], '.0f')} "
                f"| {r['notes'].replace('|', '/')} |")
        lines.append("")
    for name, reason in skipped_scenarios:
        lines.append(f"- Scenario `{name}` skipped: {reason}.")
    if skipped_scenarios:
        lines.append("")
    if png_name:
        lines.append(f"![req/s and server CPU per request, per scenario]({png_name})")
        lines.append("")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines))


def print_table(summary):
    for sc, rows in summary:
        print(f"\n== {sc.name}: {sc.title}")
        print(f"{'server':<12} {'req/s':>11} {'CPU us/req':>10} {'rps/pong':>8} "
              f"{'cpu/pong':>8} {'srv/cli CPU%':>12}  notes")
        for r in rows:
            print(f"{r['server']:<12} {_fmt(r['rps'], ',.0f'):>11} {_fmt(r['cpu_us'], '.2f'):>10} "
                  f"{_fmt(r['rps_ratio'], '.2f'):>8} {_fmt(r['cpu_ratio'], '.2f'):>8} "
                  f"{_fmt(r['cpu_pct'], '.0f') + '/' + _fmt(r['client_pct'], '.0f'):>12}  "
                  f"{r['notes']}")
