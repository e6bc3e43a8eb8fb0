"""Sites for bench/site.sh, and the check that a server answers every file of one.

    site_files.py small ROOT LIST [COUNT] [SEED]   generate COUNT files of 1-8 KB under ROOT
    site_files.py copy SRC ROOT LIST EXT[,EXT]      copy SRC (symlinks resolved) to ROOT
    site_files.py check PORT ROOT LIST              GET every path, compare status and bytes

LIST is written (or read) as one URL path a line, relative to ROOT. The small site is the
same for the same COUNT and SEED: CSS, JS, SVG, JSON (text) and WOFF2 (random bytes), spread
over 100 directories, sizes uniform in 1024..8192 bytes.
"""

import http.client
import os
import random
import shutil
import sys

WORDS = ("color margin padding border function return const let var width height path "
         "fill stroke viewBox transform value name id items display flex grid none auto "
         "true false null export import default async await").split()
KINDS = ("css", "js", "svg", "json", "woff2")


def text(rng, size, kind):
    """size bytes of text that looks a little like a file of this kind."""
    head = {"css": ".c{", "js": "export const a=", "svg": '<svg xmlns="http://www.w3.org/2000/svg">',
            "json": '{"k":"'}[kind]
    out = [head]
    n = len(head)
    while n < size:
        w = rng.choice(WORDS) + rng.choice(" ;:,\n")
        out.append(w)
        n += len(w)
    return "".join(out)[:size].encode()


def small(root, listing, count=10000, seed=1):
    rng = random.Random(seed)
    paths = []
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        size = rng.randint(1024, 8192)
        rel = f"assets/{i % 100:02d}/f{i:05d}.{kind}"
        body = rng.randbytes(size) if kind == "woff2" else text(rng, size, kind)
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)
        paths.append("/" + rel)
    write_list(root, listing, paths)


def copy(src, root, listing, exts):
    """Copies src to root with symlinks resolved; lists the files with one of exts."""
    shutil.copytree(src, root, symlinks=False, dirs_exist_ok=True)
    exts = tuple("." + e for e in exts.split(","))
    paths = []
    for d, _, files in os.walk(root):
        for name in files:
            if name.endswith(exts) and not name.startswith("."):
                paths.append("/" + os.path.relpath(os.path.join(d, name), root))
    paths.sort()
    write_list(root, listing, paths)


def write_list(root, listing, paths):
    with open(listing, "w") as f:
        f.write("\n".join(paths) + "\n")
    sizes = [os.path.getsize(root + p) for p in paths]
    print(f"{len(paths)} files, {sum(sizes) / len(sizes) / 1024:.1f} KiB mean, "
          f"{min(sizes)}..{max(sizes)} bytes")


def check(port, root, listing):
    """Every path answers 200 with the file's bytes, over one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
    bad = 0
    paths = [p for p in open(listing).read().split("\n") if p]
    for p in paths:
        conn.request("GET", p)
        r = conn.getresponse()
        body = r.read()
        with open(root + p, "rb") as f:
            want = f.read()
        if r.status != 200 or body != want:
            bad += 1
            if bad <= 3:
                print(f"port {port}: {p}: {r.status}, {len(body)} bytes, want 200 and "
                      f"{len(want)}", file=sys.stderr)
    conn.close()
    if bad:
        sys.exit(f"port {port}: {bad} of {len(paths)} files answered wrongly")
    print(f"port {port}: all {len(paths)} files 200 with the right bytes")


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "small":
        small(args[0], args[1], *(int(a) for a in args[2:]))
    elif cmd == "copy":
        copy(*args)
    elif cmd == "check":
        check(*args)
    else:
        sys.exit(__doc__)
