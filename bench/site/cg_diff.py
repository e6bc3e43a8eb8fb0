#!/usr/bin/env python3
"""Where two callgrind profiles of the same server differ, per request: each function's
instructions per request in A and in B and the difference, largest differences first.

    python3 bench/site/cg_diff.py A.out REQUESTS_A B.out REQUESTS_B [--inclusive] [--top N]

Functions are named as callgrind_annotate names them, without the source file (inlined code
is charged to the function it was inlined into, under each source file it came from; the
names are merged here). Exclusive costs (the default) add up to the totals; inclusive ones
are right for leaf functions and for calls that stay on one fiber, but not across fiber
switches (callgrind sees a switch as a call that never returns).
"""
import argparse
import re
import subprocess


def profile(path, requests, inclusive):
    out = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--auto=no", "--tree=none",
         "--inclusive=" + ("yes" if inclusive else "no"), path],
        capture_output=True, text=True, check=True).stdout
    costs = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r" \[.*\]$", "", m.group(2))
        name = re.sub(r"^\S+?\.(rs|S|c|h):", "", name)
        costs[name] = costs.get(name, 0) + int(m.group(1).replace(",", "")) / requests
    return costs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("requests_a", type=int)
    ap.add_argument("b")
    ap.add_argument("requests_b", type=int)
    ap.add_argument("--inclusive", action="store_true")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    a = profile(args.a, args.requests_a, args.inclusive)
    b = profile(args.b, args.requests_b, args.inclusive)
    if not args.inclusive:
        ta, tb = sum(a.values()), sum(b.values())
        print(f"instructions per request: A {ta:.0f}, B {tb:.0f}, A - B {ta - tb:+.0f}")
    print(f"{'A':>9} {'B':>9} {'A - B':>9}  function")
    for name in sorted(set(a) | set(b), key=lambda k: -abs(a.get(k, 0) - b.get(k, 0)))[:args.top]:
        x, y = a.get(name, 0), b.get(name, 0)
        print(f"{x:9.1f} {y:9.1f} {x - y:+9.1f}  {name[:170]}")


if __name__ == "__main__":
    main()
