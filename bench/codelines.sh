#!/usr/bin/env bash
# The code a request runs, as cache lines: how many 64-byte lines hold instructions that run
# at least once per 32 requests, and how full of running code those lines are.
#
#   bench/codelines.sh [WRK_ARGS...] -- SERVER_COMMAND...
#   bench/codelines.sh -s bench/lua/pipeline.lua -c256 -- target/release/fibra hello --workers 1 --port 18095
#   bench/codelines.sh -c256 -- bench/target/pong 18095
#
# The server runs under `valgrind --tool=callgrind --dump-instr=yes`; wrk (pinned to CPU 1,
# 6 seconds) loads http://127.0.0.1:PORT/PATH as in bench/cachesim.sh (PORT is the server
# command's last argument, PATH is $CODELINES_PATH, default /plaintext).
#
# Two builds can run the same instructions on very different numbers of lines: a line also
# holding code this workload never runs (an error path, an untaken `match` arm) is fetched
# all the same. "Density" is the share of the bytes of the server binary's hot lines that are
# running code. Needs valgrind and objdump.
set -euo pipefail

# shellcheck source=bench/load.sh
source "$(dirname "$0")/load.sh"
parse_load_args "$@"
binary="$(command -v "${server[0]}")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

run_loaded 6 "${CODELINES_PATH:-/plaintext}" --tool=callgrind --dump-instr=yes \
    --callgrind-out-file="$out/cg.out"
objdump -d --no-show-raw-insn "$binary" >"$out/disasm.txt"
python3 - "$requests" "$out/cg.out" "$(realpath "$binary")" "$out/disasm.txt" <<'EOF'
import collections, re, sys

requests, cg, binary, disasm = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
# A line counts when its instructions run at least once per 32 requests.
HOT = 1 / 32

# callgrind's format: "ob=", "fn=" set the object and function of the cost lines that follow,
# with names compressed to "(id) name" the first time and "(id)" after; with --dump-instr the
# first field of a cost line is an address, absolute (0x...), relative (+n/-n) or repeated (*).
# A "calls=" line is followed by the inclusive cost of the call, which is skipped.
names = {"ob": {}, "fn": {}}

def name(kind, value):
    m = re.match(r"\((\d+)\)\s*(.*)", value)
    if not m:
        return value
    if m.group(2):
        names[kind][m.group(1)] = m.group(2)
    return names[kind].get(m.group(1), value)

cost = collections.Counter()
ob = fn = ""
last, skip = 0, False
for line in open(cg):
    if line.startswith(("ob=", "cob=")):
        value = name("ob", line.split("=", 1)[1].strip())
        if line.startswith("ob="):
            ob = value
    elif line.startswith(("fn=", "cfn=")):
        value = name("fn", line.split("=", 1)[1].strip())
        if line.startswith("fn="):
            fn = value
    elif line.startswith("calls="):
        skip = True
    else:
        m = re.match(r"^(0x[0-9a-f]+|[+-]\d+|\*)\s+\S+\s+(\d+)", line)
        if not m:
            continue
        a = m.group(1)
        last = int(a, 16) if a.startswith("0x") else last if a == "*" else last + int(a)
        if skip:
            skip = False
            continue
        cost[(ob, fn, last)] += int(m.group(2))

sizes, prev = {}, None
for line in open(disasm):
    m = re.match(r"^\s+([0-9a-f]+):", line)
    if m:
        addr = int(m.group(1), 16)
        if prev is not None and 0 < addr - prev < 16:
            sizes[prev] = addr - prev
        prev = addr

total = sum(cost.values())
own_lines, other_lines, own_bytes = set(), set(), 0
per_fn = collections.defaultdict(lambda: [set(), 0])
for (o, f, addr), c in cost.items():
    if c / requests < HOT:
        continue
    if o == binary:
        own_lines.add(addr >> 6)
        size = sizes.get(addr, 4)
        own_bytes += size
        per_fn[f][0].add(addr >> 6)
        per_fn[f][1] += size
    else:
        other_lines.add((o, addr >> 6))
print(f"requests {requests}")
print(f"instructions per request {total / requests:10.1f}")
print(f"code lines run           {len(own_lines) + len(other_lines):6d}"
      f"  ({len(own_lines)} in the server binary, {len(other_lines)} in libraries)")
if own_lines:
    print(f"server binary            {own_bytes:6d} bytes of running code in {len(own_lines)}"
          f" lines: {100 * own_bytes / (64 * len(own_lines)):.0f} % density"
          f" (fully packed: {-(-own_bytes // 64)} lines)")
    print("functions with the most lines (a line shared by two functions counts in both):")
    rows = sorted(per_fn.items(), key=lambda kv: -len(kv[1][0]))
    for f, (lines, size) in rows[:12]:
        print(f"  {len(lines):4d} lines {100 * size / (64 * len(lines)):4.0f} %  {f[:100]}")
EOF
