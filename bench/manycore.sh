#!/usr/bin/env bash
# Many-core harness: fibra `hello`, nginx and the C epoll reference pong with W workers on
# CPUs 0..W-1 (W = 1, 2, 4, 8), loaded by wrk on CPUs 8-15, every response checked. `pack`
# puts every program it needs into one archive; `run` measures with nothing but that archive
# on a machine where none of the tools is installed.
#
#   bench/manycore.sh pack [--archive PATH] [--fibra BINARY]
#   bench/manycore.sh merge --out DIR RUN_DIR...
#   bench/manycore.sh run ARCHIVE|DIR [--out DIR] [--dry-run] [--self-test]
#       [--workers 1,2,4,8] [--load-cpus 8-15] [--duration SECS] [--rounds N]
#       [--warmup SECS] [--budget SECS] [--port N] [--servers LIST] [--workdir DIR] [--keep]
#
# pack builds the release `fibra` (cargo build --release -p fibra-cli; or takes --fibra) and
# pong (bench/pong/pong.c, cc -O2 -static), and packs them with nginx, wrk (with LuaJIT), awk,
# taskset and setsid as installed here, stripped, every shared library they load and the
# dynamic loader, into target/manycore/manycore.tar.gz (refused if 64 MiB or more). Each
# dynamic program runs through bin/NAME, a sh wrapper that starts it with the packed loader:
# lib/ld-linux-x86-64.so.2 --library-path lib libexec/NAME. It then runs the self-test below
# on what it packed.
#
# run extracts the archive (or takes an extracted DIR) and needs only bash, coreutils, tar
# and gzip. First a self-test: every packed program's libraries resolve inside the archive
# and it runs with `env -i PATH=/nonexistent`, nginx accepts its configuration, and taskset
# can pin to the CPUs of the layout (if it cannot, everything runs unpinned with a warning).
# --self-test stops there. Then, per W and round, each server in turn is started in its own
# session on CPUs 0..W-1 (taskset), warmed up (plain-c256 for --warmup s), measured in each
# scenario with wrk -tT on the load CPUs (T = how many there are), and stopped:
#   fibra-hello      fibra hello --workers W (one listener shared by the workers, the default)
#   nginx            worker_processes W, return 200 (bench/manycore/nginx.conf.in)
#   pong             pong -w W: W processes, one SO_REUSEPORT listener each
# (--servers fibra-hello,pong measures a subset, in that order; pong must be in it)
#   plain-c256       HTTP/1.1 keep-alive, 256 connections
#   plain-c1000      the same with 1,000 connections
#   pipeline16-c256  16 requests per write (bench/lua/pipeline.lua's pattern), 256 connections
# wrk runs bench/manycore/check.lua: a response other than 200 "Hello, World!" stops wrk at
# once; wrk's count of responses must equal the count checked, and wrk must report no socket
# error or timeout. A run that fails any of this is reported loudly, left out of the figures,
# and makes the exit status 1. Server CPU per request is utime+stime (/proc/PID/stat) of every
# process of the server's session, read before and after wrk, divided by the responses.
#
# Into --out (default target/manycore/out in a checkout, else ./manycore-out): runs.tsv (one
# row per measurement), summary.md (medians over rounds with ranges, req/s and CPU per
# request also as ratios to pong's in the same round), run.log, machine.txt (CPUs, topology),
# logs/ (server logs, failed runs).
#
# A real run needs 16 CPUs or more; the plan (W values x rounds x servers x (1 s start +
# warm-up + scenarios x (duration + 0.4 s))) must fit --budget (default 480 s): rounds, then
# duration, are lowered until it does, loudly. Defaults: --workers 1,2,4,8, --load-cpus 8-15,
# --duration 3, --rounds 3, --warmup 1 (about 440 s), --port 20000 (the first port tried).
# On the many-core machine, from a checkout that holds the archive:
#   bench/manycore.sh run target/manycore/manycore.tar.gz --out "$OUT"
# merge puts several runs' runs.tsv together, each run's rounds numbered after the last
# run's, into DIR/runs.tsv and DIR/summary.md: two short runs on a machine lent for a few
# minutes then count as one of their rounds added up.
# --dry-run is for a small machine: W=1, server on CPU 0, load on CPU 1, 2 s, 1 round (each
# can still be overridden, and servers may share CPUs with the load, to try W > 1), every
# response still checked; its figures are not results.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="${BASH_SOURCE[0]}"
MIB=$((1024 * 1024))
LIMIT_BYTES=$((64 * MIB))

usage() {
    local line
    while IFS= read -r line; do
        [[ $line == "set -euo pipefail" ]] && break
        [[ $line == "#!"* ]] && continue
        line=${line#\#}
        echo "${line# }"
    done <"$SELF"
}

die() {
    echo "manycore.sh: $*" >&2
    exit 2
}

need() {
    local t
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || die "needs $t"
    done
}

# ---------------------------------------------------------------------------------------
# pack

# copy_libs BINARY STAGE: copies every library BINARY loads (ldd) into STAGE/lib, and the
# dynamic loader as STAGE/lib/ld-linux-x86-64.so.2.
copy_libs() {
    local bin=$1 stage=$2 line name path
    while IFS= read -r line; do
        line=${line#"${line%%[![:space:]]*}"}
        case $line in
            *"not found"*) die "$bin: $line" ;;
            *" => "/*)
                name=${line%% =>*}
                path=${line#* => }
                path=${path%% (*}
                [[ -e $stage/lib/$name ]] || cp -L "$path" "$stage/lib/$name"
                ;;
            /*ld-linux*)
                path=${line%% (*}
                [[ -e $stage/lib/ld-linux-x86-64.so.2 ]] ||
                    cp -L "$path" "$stage/lib/ld-linux-x86-64.so.2"
                ;;
        esac
    done < <(ldd "$bin")
}

# wrapper NAME STAGE: bin/NAME, which runs libexec/NAME with the packed loader and libraries.
wrapper() {
    cat >"$2/bin/$1" <<EOF
#!/bin/sh
# Runs the packed $1 with the packed loader and libraries: nothing of the host's.
case \$0 in */*) d=\${0%/*} ;; *) d=. ;; esac
d=\$(cd "\$d/.." && pwd)
exec "\$d/lib/ld-linux-x86-64.so.2" --library-path "\$d/lib" "\$d/libexec/$1" "\$@"
EOF
    chmod 755 "$2/bin/$1"
}

pack() {
    local archive="$ROOT/target/manycore/manycore.tar.gz" fibra=""
    while [[ $# -gt 0 ]]; do
        case $1 in
            --archive) archive=$2; shift 2 ;;
            --fibra) fibra=$2; shift 2 ;;
            -h|--help) usage; exit 0 ;;
            *) die "pack: unknown argument $1 (--help)" ;;
        esac
    done
    need cc strip ldd tar gzip nginx wrk awk taskset setsid
    if [[ -z $fibra ]]; then
        need cargo
        (cd "$ROOT" && cargo build --release -p fibra-cli)
        fibra="${CARGO_TARGET_DIR:-$ROOT/target}/release/fibra"
    fi
    [[ -x $fibra ]] || die "no fibra binary at $fibra"
    mkdir -p "$(dirname "$archive")"
    archive="$(cd "$(dirname "$archive")" && pwd)/$(basename "$archive")"
    local stage="${archive%.tar.gz}.stage"
    rm -rf "$stage"
    local d="$stage/manycore"
    mkdir -p "$d/bin" "$d/libexec" "$d/lib" "$d/share"

    local -A tools=(
        [fibra]="$fibra"
        [nginx]="$(command -v nginx)"
        [wrk]="$(command -v wrk)"
        [awk]="$(readlink -f "$(command -v awk)")"
        [taskset]="$(command -v taskset)"
        [setsid]="$(command -v setsid)"
    )
    local name
    for name in "${!tools[@]}"; do
        strip -o "$d/libexec/$name" "${tools[$name]}"
        copy_libs "${tools[$name]}" "$d"
        wrapper "$name" "$d"
    done
    if cc -O2 -static -o "$d/bin/pong" "$ROOT/bench/pong/pong.c" 2>/dev/null; then
        strip "$d/bin/pong"
    else
        echo "manycore.sh: no static libc here: pong is packed as a dynamic program" >&2
        cc -O2 -o "$d/libexec/pong" "$ROOT/bench/pong/pong.c"
        strip "$d/libexec/pong"
        copy_libs "$d/libexec/pong" "$d"
        wrapper pong "$d"
    fi
    # The run step's parts and files, and the script: an extracted archive runs on its own.
    cp "$ROOT"/bench/manycore/{check.lua,nginx.conf.in,summary.awk,run.sh,servers.sh} "$d/share/"
    cp "$SELF" "$d/manycore.sh"
    chmod -R u+w,go+rX "$d"

    {
        echo "manycore archive, packed $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "source: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
            "($(git -C "$ROOT" status --porcelain 2>/dev/null | wc -l) files changed)"
        echo "packed on: $(uname -srm); $(ldd --version | head -1)"
        echo "fibra: $("$fibra" --version 2>&1 | head -1)"
        echo "nginx: $(nginx -v 2>&1 | head -1)"
        echo "wrk: $(wrk -v 2>&1 | head -1)"
        echo "awk: $(awk -W version 2>&1 | head -1)"
        echo "taskset: $(taskset -V 2>&1 | head -1)"
        echo "pong: bench/pong/pong.c, cc -O2$([[ -e $d/bin/pong && ! -e $d/libexec/pong ]] && echo ' -static')"
        echo
        (cd "$stage" && find manycore -type f ! -name MANIFEST -printf '%s\t%p\n' | sort -k2)
    } >"$d/MANIFEST"

    tar -C "$stage" -cf - manycore | gzip -9 >"$archive"
    local size
    size=$(stat -c %s "$archive")
    echo "archive: $archive ($((size / 1024)) KiB; unpacked $(du -sk "$d" | cut -f1) KiB)"
    ((size < LIMIT_BYTES)) || die "the archive is $size bytes: over 64 MiB"
    "$d/manycore.sh" run "$d" --dry-run --self-test --out "$stage/self-test"
    rm -rf "$stage"
}

# The run step's parts: bench/manycore/ in a checkout, share/ in an extracted archive.
PARTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/manycore"
[[ -f $PARTS/run.sh ]] || PARTS="${PARTS%/manycore}/share"
# shellcheck source=bench/manycore/servers.sh
source "$PARTS/servers.sh"
# shellcheck source=bench/manycore/run.sh
source "$PARTS/run.sh"

# merge --out DIR RUN_DIR...: see the header.
merge() {
    local out="" d
    local -a dirs=()
    while [[ $# -gt 0 ]]; do
        case $1 in
            --out) out=$2; shift 2 ;;
            -*) die "merge: unknown argument $1 (--help)" ;;
            *) dirs+=("$1"); shift ;;
        esac
    done
    [[ -n $out ]] || die "merge: --out DIR"
    ((${#dirs[@]} > 0)) || die "merge: which runs? (directories with runs.tsv)"
    for d in "${dirs[@]}"; do
        [[ -r $d/runs.tsv ]] || die "merge: no runs.tsv in $d"
    done
    need awk
    mkdir -p "$out"
    awk -F '\t' 'BEGIN { OFS = "\t" }
        FNR == 1 { base = last; if (NR == 1) print; next }
        { $1 += base; if ($1 > last) last = $1; print }' \
        "${dirs[@]/%//runs.tsv}" >"$out/runs.tsv"
    # Scenarios and servers in the order they first appear.
    local scenarios servers
    scenarios=$(awk -F '\t' 'NR > 1 && !s[$3]++ { printf "%s%s", n++ ? "," : "", $3 }' "$out/runs.tsv")
    servers=$(awk -F '\t' 'NR > 1 && !s[$4]++ { printf "%s%s", n++ ? "," : "", $4 }' "$out/runs.tsv")
    {
        echo "Merged from ${#dirs[@]} run(s), $(awk -F '\t' 'NR > 1 && $1 > m { m = $1 } END { print m }' "$out/runs.tsv") rounds in all:" \
            "medians (min–max) over rounds; the ratios are to pong's figure in the same round."
        echo
        awk -F '\t' -v scenarios="$scenarios" -v servers="$servers" \
            -f "$PARTS/summary.awk" "$out/runs.tsv"
    } >"$out/summary.md"
    cat "$out/summary.md"
}

case ${1:-} in
    pack) shift; pack "$@" ;;
    merge) shift; merge "$@" ;;
    run) shift; run "$@" ;;
    -h|--help) usage ;;
    *) usage >&2; exit 2 ;;
esac
