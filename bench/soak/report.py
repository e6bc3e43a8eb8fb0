"""A soak run's verdict: the goals checked against what was recorded, a summary in Markdown,
and a plot of RSS, descriptors and p99 latency over time with the faults marked.

`python3 report.py RESULTS_DIR` gives the verdict of a saved run again from its run.json
(rewriting summary.md and soak.png), e.g. after a change to a check."""

import json
import os
import re
import statistics
import sys

from faults import BLAST, GRACE

GROWTH = 1.05  # later occurrences of a fault end within 5 % of the plateau
P99_FACTOR = 2.0


def bad_of(r):
    """Requests of a window that did not get a 2xx/3xx answer."""
    return r["s4xx"] + r["s5xx"] + r["failed"] + r["errored"]


def overlaps(a0, a1, b0, b1):
    return a0 < b1 and b0 < a1


def explaining(rec, kind, faults):
    """The faults that explain the failures of window `rec` of `kind`."""
    return [f["fault"] for f in faults
            if overlaps(rec["start"], rec["end"], f["start"], f["end"] + GRACE)
            and BLAST[f["fault"]] & kind.depends]


def fault_free(rec, faults):
    return not any(overlaps(rec["start"], rec["end"], f["start"], f["end"] + GRACE)
                   for f in faults)


def scan_logs(run_dir):
    """Lines of any log of the run that tell of a panic, an abort or a crash."""
    hits = []
    pat = re.compile(r"panick|panic:|abort|SIGSEGV|stack overflow|double free", re.I)
    for name in sorted(os.listdir(run_dir)):
        if not (name.endswith(".err") or name.endswith(".log")) or name == "pg.log":
            continue
        with open(os.path.join(run_dir, name), errors="replace") as f:
            for line in f:
                if pat.search(line):
                    hits.append(f"{name}: {line.strip()[:200]}")
    return hits


def settled_after(samples, f, faults):
    """The first sample at least 10 s after fault `f` ended and before the next fault began
    (what the fault left behind), or None."""
    nxt = min((g["start"] for g in faults if g["start"] > f["end"]), default=float("inf"))
    return next((s for s in samples if f["end"] + 10 <= s["t"] < nxt), None)


def plateau_check(run, samples, key):
    """Whether each later occurrence of a fault left `key` within 5 % of the plateau: the
    most it settled at after the first occurrences (and the warm-up) before it. Per process:
    a SIGUSR2 upgrade starts a new one, whose plateau is its own (its pooled stacks and
    caches start empty). Returns (ok, detail)."""
    faults = sorted(run["faults"], key=lambda f: f["start"])
    warm_end = run["t0"] + run["warmup"]
    worst, checked, plateaus = None, 0, {}
    for pid in dict.fromkeys(s["pid"] for s in samples):
        mine = [s for s in samples if s["pid"] == pid]
        life = (mine[0]["t"], mine[-1]["t"])
        warm = [s[key] for s in mine if s["t"] < warm_end]
        top = max(warm) if warm else None
        seen = set()
        for f in faults:
            if not (life[0] <= f["end"] <= life[1]) or f["fault"] == "sigusr2":
                continue
            s = settled_after(mine, f, faults)
            if s is None:
                continue
            if f["fault"] in seen and top is not None:
                checked += 1
                ratio = s[key] / top if top else 1.0
                if worst is None or ratio > worst[0]:
                    worst = (ratio, f["fault"], round(f["start"] - run["t0"]), s[key], top)
            seen.add(f["fault"])
            top = s[key] if top is None else max(top, s[key])
        plateaus[pid] = top
    if worst is None:
        return True, f"no repeated fault within one process; plateaus by process {plateaus}"
    ratio, name, at, value, top = worst
    return ratio <= GROWTH, (f"{checked} later occurrences; worst: {name} at {at} s left "
                             f"{value} against a plateau of {top} ({ratio - 1:+.1%}); "
                             f"plateaus by process {plateaus}")


def fds_before(run, samples, fault, pid):
    """A fault's descriptor baseline: the most the process had open in the 30 s before the
    fault began, outside any other fault (the load's own connections: their number varies
    with the mix, and the warm-up, which is shorter than the windows after it, may see
    fewer); the warm-up's most where there are no such samples."""
    faults = run["faults"]
    before = [s["fds"] for s in samples
              if s["pid"] == pid and fault["start"] - 30 <= s["t"] < fault["start"]
              and not any(g["start"] <= s["t"] <= g["end"] + 10 for g in faults)]
    if before:
        return max(before)
    warm = [s["fds"] for s in samples
            if s["pid"] == pid and s["t"] < run["t0"] + run["warmup"]]
    return max(warm, default=None)


def check(run, quick):
    """[(goal, passed, detail)] for the run (`run`: the dict run.py saves)."""
    kinds = run["kinds"]
    faults = run["faults"]
    records = run["records"]
    goals = []

    unexplained = []
    for r in records:
        k = kinds[r["kind"]]
        if (bad_of(r) or r.get("client_broke")) and not explaining(r, k, faults):
            unexplained.append(r)
    detail = "; ".join(
        f"{r['kind']} @{r['start'] - run['t0']:.0f}s: 4xx {r['s4xx']} 5xx {r['s5xx']} "
        f"failed {r['failed']} errored {r['errored']} {r.get('first_errors') or ''}"
        f"{r.get('client_broke') or ''}"[:300] for r in unexplained[:8])
    goals.append(("every failure explained by the fault active then", not unexplained,
                  f"{len(unexplained)} windows with unexplained failures" +
                  (f": {detail}" if detail else "")))

    slow = [f for f in faults if "recovery_ms" in f
            and (f["recovery_ms"] is None or f["recovery_ms"] > 1000)]
    recs = [f"{f['fault']} {f['recovery_ms']} ms" for f in faults if "recovery_ms" in f]
    goals.append(("recovery within 1 s (upstream, database, EMFILE)", not slow,
                  ", ".join(recs) or "no recovery measured"))

    broken = [f for f in faults if f.get("error")]
    goals.append(("every fault injected", not broken,
                  "; ".join(f"{f['fault']}: {f['error']}" for f in broken) or "all"))

    panics = run["log_hits"]
    goals.append(("no panic or abort in any log", not panics, "; ".join(panics[:5]) or "none"))

    if quick:
        return goals

    samples = [s for s in run["samples"] if not s.get("gone")]
    for key in ("rss_kib", "fds", "maps", "threads"):
        ok, detail = plateau_check(run, samples, key)
        goals.append((f"{key}: later occurrences of a fault end within 5 % of the plateau",
                      ok, detail))

    late, worst = [], None
    for f in faults:
        after = [s for s in samples if f["end"] + 10 <= s["t"] <= f["end"] + 25]
        if not after:
            continue
        base = fds_before(run, samples, f, after[0]["pid"])
        if base is None:
            continue
        ratio = after[0]["fds"] / base if base else 1.0
        if worst is None or ratio > worst[0]:
            worst = (ratio, f["fault"], after[0]["fds"], base)
        if after[0]["fds"] > base * GROWTH + 5:
            late.append(f"{f['fault']}: {after[0]['fds']} (baseline {base})")
    goals.append(("descriptors back to baseline within 10 s of each fault", not late,
                  "; ".join(late) or (f"{len(faults)} faults; closest: {worst[1]} left "
                                      f"{worst[2]} against {worst[3]}" if worst else "")))

    main = [r for r in records if r["kind"] == "h1_keepalive" and r["p99_ms"] is not None]
    first = [r for r in main if r["end"] <= run["t0"] + run["warmup"] + 1
             and fault_free(r, faults)]
    rest = [r for r in main if r not in first and fault_free(r, faults)]
    if first and rest:
        # The first minute's p99, as the median of its 10-second windows' (the client
        # reports no histogram to merge): stricter than their maximum.
        base = statistics.median(r["p99_ms"] for r in first)
        worst = max(r["p99_ms"] for r in rest)
        goals.append(("p99 of the steady HTTP/1.1 load in fault-free windows <= 2x the "
                      "first minute's", worst <= P99_FACTOR * base,
                      f"first minute {base:.2f} ms (median of its windows), fault-free "
                      f"windows at most {worst:.2f} ms (median "
                      f"{statistics.median(r['p99_ms'] for r in rest):.2f} ms)"))
    else:
        goals.append(("p99 of the steady HTTP/1.1 load", False, "no fault-free windows"))
    return goals


def totals(run):
    """Per kind: sums over its windows, and its latency figures."""
    out = {}
    for name, k in run["kinds"].items():
        rs = [r for r in run["records"] if r["kind"] == name]
        t = {f: sum(r[f] for r in rs) for f in ("done", "ok", "s4xx", "s5xx", "failed",
                                                  "errored")}
        span = sum(r["end"] - r["start"] for r in rs) or 1
        t["rate"] = t["done"] / span
        t["target"] = k.rate
        t["unexplained"] = sum(bad_of(r) for r in rs
                               if bad_of(r) and not explaining(r, k, run["faults"]))
        p50 = [r["p50_ms"] for r in rs if r["p50_ms"] is not None]
        p99 = [r["p99_ms"] for r in rs if r["p99_ms"] is not None]
        mx = [r["max_ms"] for r in rs if r["max_ms"] is not None]
        t["p50"] = statistics.median(p50) if p50 else None
        t["p99"] = statistics.median(p99) if p99 else None
        t["max"] = max(mx) if mx else None
        t["note"] = k.note
        out[name] = t
    return out


def fmt(x, digits=2):
    return "—" if x is None else f"{x:.{digits}f}"


def markdown(run, goals):
    t0 = run["t0"]
    lines = [f"Command: `{run['command']}`; {run['minutes']} min, seed {run['seed']}, "
             f"started {run['started']}; `fibra serve` on CPU 0, everything else on CPU 1.",
             f"Calibration: `fibra serve` alone answered {run['capacity']:.0f} req/s "
             f"(HTTP/1.1 keep-alive over TLS, closed loop); the steady load aims at 70 % of "
             f"the mix's capacity.", "",
             "| traffic | target/s | done/s | requests | 2xx/3xx | 4xx | 5xx | failed | "
             "errored | unexplained | p50 ms | p99 ms | max ms |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, t in totals(run).items():
        lines.append(f"| {name} | {fmt(t['target'], 0)} | {t['rate']:.0f} | {t['done']} | "
                     f"{t['ok']} | {t['s4xx']} | {t['s5xx']} | {t['failed']} | "
                     f"{t['errored']} | {t['unexplained']} | {fmt(t['p50'])} | "
                     f"{fmt(t['p99'])} | {fmt(t['max'], 1)} |")
    lines += ["", "| at s | fault | took s | recovery ms | what the fault's client saw |",
              "|---|---|---|---|---|"]
    for f in run["faults"]:
        seen = f.get("client") or f.get("error") or {
            k: v for k, v in f.items() if k not in ("fault", "start", "end", "recovery_ms")}
        lines.append(f"| {f['start'] - t0:.0f} | {f['fault']} | {f['end'] - f['start']:.1f} | "
                     f"{f.get('recovery_ms', '—')} | {str(seen)[:160]} |")
    samples = [s for s in run["samples"] if not s.get("gone")]
    if samples:
        lines += ["", "| sample | RSS MiB | fds | threads | maps | TIME_WAIT |",
                  "|---|---|---|---|---|---|"]
        warm = [s for s in samples if s["t"] < t0 + run["warmup"]] or samples[:1]
        for label, s in (("first", samples[0]), ("end of warm-up", warm[-1]),
                         ("max", None), ("last", samples[-1])):
            if s is None:
                lines.append("| max | " + " | ".join(
                    fmt(max(x[k] for x in samples) / (1024 if k == "rss_kib" else 1),
                        1 if k == "rss_kib" else 0)
                    for k in ("rss_kib", "fds", "threads", "maps", "time_wait")) + " |")
            else:
                lines.append(f"| {label} | {s['rss_kib'] / 1024:.1f} | {s['fds']} | "
                             f"{s['threads']} | {s['maps']} | {s['time_wait']} |")
    lines += ["", "| goal | result | detail |", "|---|---|---|"]
    for g, ok, d in goals:
        lines.append(f"| {g} | {'PASS' if ok else 'FAIL'} | {d} |")
    return "\n".join(lines) + "\n"


def plot(run, path):
    """RSS, descriptors and the steady load's p99 over time, faults marked. False without
    matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    t0 = run["t0"]
    samples = [s for s in run["samples"] if not s.get("gone")]
    main = sorted((r for r in run["records"] if r["kind"] == "h1_keepalive"
                   and r["p99_ms"] is not None), key=lambda r: r["end"])
    fig, axes = plt.subplots(3, 1, figsize=(11, 7.5), sharex=True)
    series = [
        ([(s["t"] - t0) / 60 for s in samples], [s["rss_kib"] / 1024 for s in samples],
         "RSS (MiB)"),
        ([(s["t"] - t0) / 60 for s in samples], [s["fds"] for s in samples],
         "open descriptors"),
        ([(r["end"] - t0) / 60 for r in main], [r["p99_ms"] for r in main],
         "p99, HTTP/1.1 keep-alive (ms)"),
    ]
    for ax, (x, y, label) in zip(axes, series):
        ax.plot(x, y, marker=".", linewidth=1)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        for f in run["faults"]:
            ax.axvspan((f["start"] - t0) / 60, (f["end"] - t0) / 60, color="tab:red",
                       alpha=0.12)
    for f in run["faults"]:
        axes[0].annotate(f["fault"], ((f["start"] - t0) / 60, 1.0),
                         xycoords=("data", "axes fraction"), rotation=90, fontsize=6,
                         va="top")
    axes[-1].set_xlabel("minutes (faults shaded)")
    fig.suptitle(f"fibra serve soak, {run['minutes']} min, seed {run['seed']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


class SavedKind:
    """A kind of traffic as run.json keeps it."""

    def __init__(self, saved):
        self.depends = set(saved["depends"])
        self.rate = saved["rate"]
        self.note = saved.get("note", "")


def main(results):
    with open(os.path.join(results, "run.json")) as f:
        run = json.load(f)
    run["kinds"] = {name: SavedKind(k) for name, k in run["kinds"].items()}
    goals = check(run, run["minutes"] <= 5)
    summary = markdown(run, goals)
    with open(os.path.join(results, "summary.md"), "w") as f:
        f.write(summary)
    plot(run, os.path.join(results, "soak.png"))
    print(summary)
    return 0 if all(ok for _, ok, _ in goals) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
