#!/usr/bin/env bash
# Many-core harness: fibra `hello`, nginx and the C epoll reference pong with W workers on
# CPUs 0..W-1 (W = 1, 2, 4, 8), loaded by wrk on CPUs 8-15, every response checked. `pack`
# puts every program it needs into one archive; `run` measures with nothing but that archive
# on a machine where none of the tools is installed.
#
#   bench/manycore.sh pack [--archive PATH] [--fibra BINARY]
#   bench/manycore.sh run ARCHIVE|DIR [--out DIR] [--dry-run] [--self-test]
#       [--workers 1,2,4,8] [--load-cpus 8-15] [--duration SECS] [--rounds N]
#       [--warmup SECS] [--budget SECS] [--port N] [--workdir DIR] [--keep]
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
# --dry-run is for a small machine: W=1, server on CPU 0, load on CPU 1, 2 s, 1 round (each
# can still be overridden, and servers may share CPUs with the load, to try W > 1), every
# response still checked; its figures are not results.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SELF="${BASH_SOURCE[0]}"
MIB=$((1024 * 1024))
LIMIT_BYTES=$((64 * MIB))
BODY='Hello, World!'
SERVERS=(fibra-hello nginx pong)
SCENARIOS=(plain-c256 plain-c1000 pipeline16-c256)
# Tenths of a second the plan counts per server start (start, wait for the port, stop) and
# per measurement beyond its duration (wrk's start and exit, the CPU samples, a pause).
START_DS=10
SETTLE_DS=4

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
    cp "$ROOT/bench/manycore/check.lua" "$ROOT/bench/manycore/nginx.conf.in" \
        "$ROOT/bench/manycore/summary.awk" "$d/share/"
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

# ---------------------------------------------------------------------------------------
# run

# cpu_count LIST: how many CPUs a taskset list ("8-15", "1", "0,2-3") names.
cpu_count() {
    local part n=0 IFS=,
    for part in $1; do
        if [[ $part == *-* ]]; then
            n=$((n + ${part#*-} - ${part%-*} + 1))
        else
            n=$((n + 1))
        fi
    done
    echo "$n"
}

# cpu_max LIST: the highest CPU a taskset list names.
cpu_max() {
    local part m=0 v IFS=,
    for part in $1; do
        v=${part#*-}
        ((v > m)) && m=$v
    done
    echo "$m"
}

# server_cpus W: the servers' CPUs, 0..W-1, as a taskset list.
server_cpus() { if (($1 == 1)); then echo 0; else echo "0-$(($1 - 1))"; fi; }

say() { echo "$*" | tee -a "$OUT/run.log"; }

loud() {
    {
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        echo "!!! $*"
        echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    } | tee -a "$OUT/run.log" >&2
}

now_ns() { date +%s%N; }

# calc FORMAT EXPR: a floating-point expression through the packed awk, printed with FORMAT.
calc() { "$P/bin/awk" "BEGIN { printf \"$1\", $2 }"; }

# self_test: the archive's programs work with nothing of the host's.
self_test() {
    local f line bad=0 v
    for f in "$P"/libexec/*; do
        while IFS= read -r line; do
            case $line in
                *"not found"*) echo "self-test: ${f##*/}: $line" >&2; bad=1 ;;
                *" => "*)
                    [[ ${line#* => } == "$P/lib/"* ]] || {
                        echo "self-test: ${f##*/} loads from outside the archive: $line" >&2
                        bad=1
                    }
                    ;;
            esac
        done < <(env -i PATH=/nonexistent "$P/lib/ld-linux-x86-64.so.2" --library-path "$P/lib" \
            --list "$f" 2>&1)
    done
    ((bad == 0)) || { loud "self-test failed: a library is missing or found outside $P/lib"; exit 1; }
    say "self-test: every library of $(cd "$P/libexec" && echo *) resolves inside the archive"
    # The first line a packed program prints with no environment (wrk -v exits 1).
    run_clean() {
        local o
        o=$(env -i PATH=/nonexistent "$@" 2>&1) || true
        echo "${o%%$'\n'*}"
    }
    v="fibra: $(run_clean "$P/bin/fibra" --version)"
    v+="; $(run_clean "$P/bin/nginx" -v)"
    v+="; $(run_clean "$P/bin/wrk" -v)"
    v+="; awk: $(run_clean "$P/bin/awk" -W version)"
    v+="; $(run_clean "$P/bin/taskset" -V)"
    say "self-test, with env -i PATH=/nonexistent: $v"
    [[ $v == *"fibra "* && $v == *"nginx version"* && $v == *"wrk "* && $v == *"util-linux"* ]] ||
        { loud "self-test failed: a packed program did not run"; exit 1; }
    local run="$WORK/nginx-test"
    nginx_conf "$run" 1 "$PORT"
    env -i PATH=/nonexistent "$P/bin/nginx" -t -p "$run" -c "$run/nginx.conf" -e "$run/error.log" \
        >"$run/test.log" 2>&1 || { cat "$run/test.log" >&2; loud "self-test failed: nginx -t"; exit 1; }
    say "self-test: nginx -t accepts the configuration ($(head -1 "$run/test.log"))"
    if [[ -e $P/libexec/pong ]]; then
        say "self-test: pong is a dynamic program (packed loader)"
    fi
    PIN=1
    local cpus
    for cpus in "$(server_cpus "$MAXW")" "$LOAD_CPUS"; do
        if ! env -i PATH=/nonexistent "$P/bin/taskset" -c "$cpus" "$P/bin/awk" 'BEGIN {}' \
            >"$WORK/pin.log" 2>&1; then
            loud "taskset cannot pin to CPUs $cpus ($(head -1 "$WORK/pin.log")): running UNPINNED"
            PIN=0
        fi
    done
    ((PIN == 0)) || say "self-test: taskset pins to CPUs $(server_cpus "$MAXW") and $LOAD_CPUS"
}

# nginx_conf DIR WORKERS PORT: nginx's run folder and configuration.
nginx_conf() {
    local run=$1 conf user=""
    mkdir -p "$run"
    chmod 755 "$run"
    # As root, nginx's workers would run as nobody; root keeps every path readable to them.
    [[ $(id -u) == 0 ]] && user="user root root;"
    conf=$(<"$P/share/nginx.conf.in")
    conf=${conf//@USER@/$user}
    conf=${conf//@WORKERS@/$2}
    conf=${conf//@RUN@/$run}
    conf=${conf//@PORT@/$3}
    echo "$conf" >"$run/nginx.conf"
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# next_port: the next free port from $PORT on, into $PORT_NOW.
next_port() {
    while ! port_free "$PORT"; do PORT=$((PORT + 1)); done
    PORT_NOW=$PORT
    PORT=$((PORT + 1))
}

# pinned CPUS CMD...: runs CMD on CPUS (unpinned if taskset could not pin).
pinned() {
    local cpus=$1
    shift
    if ((PIN)); then "$P/bin/taskset" -c "$cpus" "$@"; else "$@"; fi
}

# server_start NAME W PORT LOG: starts the server in a new session (its pid is its session
# id) on CPUs 0..W-1 and waits until it listens (at most 10 s); sets SERVER_PID and SID.
server_start() {
    local name=$1 w=$2 port=$3 log=$4 cmd
    case $name in
        fibra-hello) cmd=("$P/bin/fibra" hello --workers "$w" --port "$port") ;;
        nginx)
            local run="$WORK/nginx-$port"
            nginx_conf "$run" "$w" "$port"
            cmd=("$P/bin/nginx" -p "$run" -c "$run/nginx.conf" -e "$run/error.log")
            ;;
        pong) cmd=("$P/bin/pong" -w "$w" "$port") ;;
    esac
    local -a pin=()
    ((PIN)) && pin=("$P/bin/taskset" -c "$(server_cpus "$w")")
    # A plain command (not a function) in the background: $! is the process that setsid
    # turns into a session leader and the wrappers and loader exec into the server.
    "${pin[@]}" "$P/bin/setsid" "${cmd[@]}" >"$log" 2>&1 &
    SERVER_PID=$!
    SID=$SERVER_PID
    local i s
    for ((i = 0; i < 200; i++)); do
        kill -0 "$SERVER_PID" 2>/dev/null || return 1
        if ! port_free "$port"; then
            read -r s <"/proc/$SERVER_PID/stat"
            s=${s##*) }
            read -r _ _ _ s _ <<<"$s"
            [[ $s == "$SERVER_PID" ]] || { echo "session $s, not $SERVER_PID" >>"$log"; return 1; }
            return 0
        fi
        sleep 0.05
    done
    return 1
}

# session_ticks: sets TICKS_U and TICKS_S, the clock ticks of user and system time summed over
# the processes of session $SID (each process's figures include all its threads).
session_ticks() {
    local f s
    local -a fld
    TICKS_U=0
    TICKS_S=0
    for f in /proc/[0-9]*/stat; do
        read -r s 2>/dev/null <"$f" || continue
        # After the command name: fld[0] is field 3 (state), fld[3] field 6 (session),
        # fld[11] and fld[12] fields 14 and 15 (utime, stime).
        read -r -a fld <<<"${s##*) }"
        if [[ ${fld[3]} == "$SID" ]]; then
            TICKS_U=$((TICKS_U + fld[11]))
            TICKS_S=$((TICKS_S + fld[12]))
        fi
    done
}

# session_alive: some process of session $SID still runs (zombies aside).
session_alive() {
    local f s
    local -a fld
    for f in /proc/[0-9]*/stat; do
        read -r s 2>/dev/null <"$f" || continue
        read -r -a fld <<<"${s##*) }"
        [[ ${fld[3]} == "$SID" && ${fld[0]} != Z ]] && return 0
    done
    return 1
}

server_stop() {
    local i
    kill -TERM -- "-$SID" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        session_alive || break
        sleep 0.05
    done
    if session_alive; then
        say "server session $SID still running 5 s after SIGTERM: SIGKILL"
        kill -KILL -- "-$SID" 2>/dev/null || true
        sleep 0.2
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    SID=""
}

# cleanup: at exit, stops a server still running and removes the work folder.
cleanup() {
    if [[ -n ${SID:-} ]] && session_alive; then
        kill -KILL -- "-$SID" 2>/dev/null || true
    fi
    ((KEEP)) || rm -rf "$WORK"
}

# load SCENARIO PORT SECS OUTFILE: runs wrk on the load CPUs; its status.
load() {
    local conns depth
    case $1 in
        plain-c256) conns=256 depth=1 ;;
        plain-c1000) conns=1000 depth=1 ;;
        pipeline16-c256) conns=256 depth=16 ;;
    esac
    local rc=0
    pinned "$LOAD_CPUS" "$P/bin/wrk" -t"$THREADS" -c"$conns" -d"$3"s \
        -s "$P/share/check.lua" "http://127.0.0.1:$2/plaintext" -- "$depth" "$BODY" \
        >"$4" 2>&1 || rc=$?
    return "$rc"
}

# wrk_error FILE: what went wrong, from wrk's output: check.lua's line if there is one.
wrk_error() {
    local l
    while IFS= read -r l; do
        [[ $l == check.lua:* ]] && { echo "$l"; return; }
    done <"$1"
    head -c 300 "$1" | tr '\n\t' '  '
}

# check_output FILE: sets RESP and DUR_US from check.lua's line, or NOTE (and status 1).
check_output() {
    local line="" l
    while IFS= read -r l; do
        [[ $l == manycore-check* ]] && line=$l
    done <"$1"
    if [[ -z $line ]]; then
        NOTE="no summary line from check.lua: $(wrk_error "$1")"
        return 1
    fi
    local -A v
    local kv
    for kv in ${line#manycore-check }; do v[${kv%%=*}]=${kv#*=}; done
    RESP=${v[responses]}
    DUR_US=${v[duration_us]}
    local errs="connect=${v[connect]} read=${v[read]} write=${v[write]} status=${v[status]} timeout=${v[timeout]}"
    if ((RESP <= 0)); then
        NOTE="no responses"
    elif ((${v[checked]} != RESP)); then
        NOTE="wrk counted $RESP responses, check.lua checked ${v[checked]}"
    elif ((${v[connect]} + ${v[read]} + ${v[write]} + ${v[status]} + ${v[timeout]} > 0)); then
        NOTE="wrk errors: $errs"
    else
        NOTE=""
        return 0
    fi
    return 1
}

# measure ROUND W SERVER SCENARIO PORT: one measurement, one row of runs.tsv.
measure() {
    local round=$1 w=$2 server=$3 sc=$4 port=$5 out="$WORK/wrk.out" rc=0
    session_ticks
    local u0=$TICKS_U s0=$TICKS_S t0 t1
    t0=$(now_ns)
    load "$sc" "$port" "$DURATION" "$out" || rc=$?
    t1=$(now_ns)
    session_ticks
    local du=$((TICKS_U - u0)) ds=$((TICKS_S - s0))
    RESP=0 DUR_US=0 NOTE=""
    local status=ok
    if ((rc != 0)); then
        NOTE="wrk exit $rc: $(wrk_error "$out")"
        status=FAIL
    elif ! check_output "$out"; then
        status=FAIL
    fi
    local rps=0 cpu=0 user=0 busy=0
    if [[ $status == ok ]]; then
        rps=$(calc %.0f "$RESP / ($DUR_US / 1e6)")
        cpu=$(calc %.4f "($du + $ds) / $HZ * 1e6 / $RESP")
        user=$(calc %.4f "$du / $HZ * 1e6 / $RESP")
        busy=$(calc %.3f "($du + $ds) / $HZ / (($t1 - $t0) / 1e9)")
        say "$(printf 'W=%s round %s %-12s %-16s %10s req/s %8s CPU µs/req %6s cores busy  (%s responses, all checked)' \
            "$w" "$round" "$server" "$sc" "$rps" "$cpu" "$busy" "$RESP")"
    else
        FAILED=$((FAILED + 1))
        cp "$out" "$OUT/logs/failed-W$w-r$round-$server-$sc.txt"
        loud "FAILED: W=$w round $round $server $sc: $NOTE"
    fi
    printf '%s\n' "$round	$w	$sc	$server	$status	$RESP	$DUR_US	$rps	$((du + ds))	$du	$ds	$cpu	$user	$busy	$port	$NOTE" \
        >>"$OUT/runs.tsv"
}

machine_info() {
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
        echo "kernel: $(uname -srm)"
        echo "cpus available (nproc): $(nproc); online: $(cat /sys/devices/system/cpu/online 2>/dev/null)"
        local l
        while IFS= read -r l; do
            [[ $l == "model name"* ]] && { echo "cpu: ${l#*: }"; break; }
        done </proc/cpuinfo
        local c
        for c in /sys/devices/system/cpu/cpu[0-9]*; do
            [[ -r $c/topology/thread_siblings_list ]] || continue
            echo "${c##*/}: package $(<"$c/topology/physical_package_id") core $(<"$c/topology/core_id") siblings $(<"$c/topology/thread_siblings_list")"
        done
        for c in /sys/devices/system/node/node[0-9]*; do
            [[ -r $c/cpulist ]] && echo "numa ${c##*/}: cpus $(<"$c/cpulist")"
        done
        echo "open files: $(ulimit -n)"
        echo "somaxconn: $(cat /proc/sys/net/core/somaxconn 2>/dev/null)"
        echo "ephemeral ports: $(cat /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)"
        echo "archive:"
        head -9 "$P/MANIFEST"
    } >"$OUT/machine.txt"
}

run() {
    [[ $# -gt 0 ]] || die "run: which archive? (--help)"
    [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
    local src=$1
    shift
    local dry=0 only_test=0 keep=0 workdir=""
    local workers="" load_cpus="" duration="" rounds="" warmup=1 budget=480
    OUT="$PWD/manycore-out"
    [[ -f $ROOT/bench/manycore.sh ]] && OUT="$ROOT/target/manycore/out"
    PORT=20000
    while [[ $# -gt 0 ]]; do
        case $1 in
            --out) OUT=$2; shift 2 ;;
            --dry-run) dry=1; shift ;;
            --self-test) only_test=1; shift ;;
            --workers) workers=$2; shift 2 ;;
            --load-cpus) load_cpus=$2; shift 2 ;;
            --duration) duration=$2; shift 2 ;;
            --rounds) rounds=$2; shift 2 ;;
            --warmup) warmup=$2; shift 2 ;;
            --budget) budget=$2; shift 2 ;;
            --port) PORT=$2; shift 2 ;;
            --workdir) workdir=$2; shift 2 ;;
            --keep) keep=1; shift ;;
            -h|--help) usage; exit 0 ;;
            *) die "run: unknown argument $1 (--help)" ;;
        esac
    done
    if ((dry)); then
        : "${workers:=1}" "${load_cpus:=1}" "${duration:=2}" "${rounds:=1}"
    else
        : "${workers:=1,2,4,8}" "${load_cpus:=8-15}" "${duration:=3}" "${rounds:=3}"
    fi
    local n
    for n in "$duration" "$rounds" "$warmup" "$budget" "$PORT"; do
        [[ $n =~ ^[1-9][0-9]*$ ]] || die "run: $n is not a whole number of at least 1"
    done
    [[ $workers =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "run: --workers $workers: W,W,... (each 1 or more)"
    [[ $load_cpus =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] || die "run: --load-cpus $load_cpus: a taskset list"
    LOAD_CPUS=$load_cpus
    DURATION=$duration
    need tar gzip env id nproc date head tee tr mktemp
    unset LD_PRELOAD LD_LIBRARY_PATH

    # The layout: the servers' CPUs below every load CPU, all of them on this machine.
    local w maxw=0 cores
    for w in ${workers//,/ }; do ((w > maxw)) && maxw=$w; done
    MAXW=$maxw
    THREADS=$(cpu_count "$LOAD_CPUS")
    cores=$(nproc)
    if ((!dry && !only_test && cores < 16)); then
        die "run: this machine has $cores CPUs; a real run needs 16 or more (servers on 0-7, load on 8-15). Use --dry-run to check the harness here."
    fi
    local first_load=$LOAD_CPUS
    first_load=${first_load%%[-,]*}
    local overlap=""
    ((maxw - 1 < first_load)) ||
        overlap="servers on CPUs $(server_cpus "$maxw") would share CPUs with the load on $LOAD_CPUS"
    [[ -z $overlap || $dry == 1 ]] || die "run: $overlap"
    (($(cpu_max "$LOAD_CPUS") < cores)) ||
        die "run: the load CPUs $LOAD_CPUS are not all on this $cores-CPU machine (--load-cpus)"

    # The plan in tenths of a second, fitted into the budget by lowering rounds, then the
    # duration.
    local nw nsc=${#SCENARIOS[@]} nsv=${#SERVERS[@]} plan
    local -a wlist
    IFS=, read -r -a wlist <<<"$workers"
    nw=${#wlist[@]}
    plan_s() { echo $(((nw * $1 * nsv * (START_DS + 10 * warmup + nsc * (10 * $2 + SETTLE_DS)) + 9) / 10)); }
    plan=$(plan_s "$rounds" "$DURATION")
    mkdir -p "$OUT/logs"
    OUT="$(cd "$OUT" && pwd)"
    : >"$OUT/run.log"
    local plan0=$plan rounds0=$rounds duration0=$DURATION
    while ((!only_test && plan > budget)); do
        if ((rounds > 1)); then
            rounds=$((rounds - 1))
        elif ((DURATION > 1)); then
            DURATION=$((DURATION - 1))
        else
            die "run: even 1 round of 1 s takes $plan s, over the budget of $budget s"
        fi
        plan=$(plan_s "$rounds" "$DURATION")
    done
    ((plan == plan0)) || loud "the plan ($plan0 s) is over the budget ($budget s):" \
        "rounds $rounds0 -> $rounds, duration $duration0 -> $DURATION s ($plan s)"

    WORK=$(mktemp -d "${workdir:-${TMPDIR:-/tmp}}/manycore.XXXXXX")
    chmod 755 "$WORK"
    KEEP=$keep
    trap cleanup EXIT
    trap 'exit 130' INT TERM
    if [[ -d $src ]]; then
        P="$(cd "$src" && pwd)"
    else
        [[ -f $src ]] || die "run: no archive at $src"
        tar -C "$WORK" -xzf "$src"
        P="$WORK/manycore"
    fi
    [[ -x $P/lib/ld-linux-x86-64.so.2 && -r $P/share/check.lua ]] || die "run: $src is not a manycore archive"
    say "archive: $src -> $P"
    # wrk with 1,000 connections and nginx's workers need more than the usual 1,024 files.
    ulimit -n "$(ulimit -Hn)" 2>/dev/null || ulimit -n 65536 2>/dev/null || true
    if [[ $(ulimit -n) != unlimited ]] && (($(ulimit -n) < 4096)); then
        loud "only $(ulimit -n) open files allowed: 1,000 connections may fail"
    fi
    HZ=100
    command -v getconf >/dev/null 2>&1 && HZ=$(getconf CLK_TCK)

    machine_info
    self_test
    ((only_test)) && { say "self-test passed"; return 0; }

    ((dry)) && say "DRY RUN: checks the harness on a small machine; its figures are not results"
    [[ -z $overlap ]] || loud "$overlap (allowed in a dry run only)"
    say "plan: W=$workers; servers ${SERVERS[*]} on CPUs 0..W-1; wrk -t$THREADS on CPUs $LOAD_CPUS"
    say "plan: scenarios ${SCENARIOS[*]}; $rounds round(s); $warmup s warm-up per server start, ${DURATION} s per measurement"
    say "plan: $((nw * rounds * nsv)) server starts, $((nw * rounds * nsv * nsc)) measurements, about $plan s (budget $budget s)"

    printf 'round\tworkers\tscenario\tserver\tstatus\tresponses\tduration_us\treq_per_s\tserver_ticks\tuser_ticks\tsys_ticks\tcpu_us_per_req\tuser_us_per_req\tserver_cores_busy\tport\tnote\n' \
        >"$OUT/runs.tsv"
    FAILED=0
    local t_start round server sc log rc
    t_start=$(now_ns)
    for w in ${workers//,/ }; do
        for ((round = 1; round <= rounds; round++)); do
            for server in "${SERVERS[@]}"; do
                next_port
                log="$OUT/logs/W$w-r$round-$server.log"
                if ! server_start "$server" "$w" "$PORT_NOW" "$log"; then
                    loud "FAILED: W=$w round $round: $server did not start on port $PORT_NOW ($(head -c 300 "$log" | tr '\n' ' '))"
                    FAILED=$((FAILED + 1))
                    server_stop
                    for sc in "${SCENARIOS[@]}"; do
                        printf '%s\n' "$round	$w	$sc	$server	FAIL	0	0	0	0	0	0	0	0	0	$PORT_NOW	did not start" >>"$OUT/runs.tsv"
                    done
                    continue
                fi
                rc=0
                load plain-c256 "$PORT_NOW" "$warmup" "$WORK/warmup.out" || rc=$?
                NOTE=""
                if ((rc != 0)) || ! check_output "$WORK/warmup.out"; then
                    FAILED=$((FAILED + 1))
                    cp "$WORK/warmup.out" "$OUT/logs/failed-W$w-r$round-$server-warmup.txt"
                    loud "FAILED: the warm-up of $server (W=$w round $round): ${NOTE:-wrk exit $rc: $(wrk_error "$WORK/warmup.out")}"
                fi
                for sc in "${SCENARIOS[@]}"; do
                    measure "$round" "$w" "$server" "$sc" "$PORT_NOW"
                    sleep 0.2
                done
                server_stop
                [[ -s $log ]] || rm -f "$log"
            done
        done
    done
    local took
    took=$(calc %.0f "($(now_ns) - $t_start) / 1e9")
    say "measured in $took s (planned $plan s)"
    for log in "$WORK"/nginx-*/error.log; do
        [[ -s $log ]] && cp "$log" "$OUT/logs/nginx-$(basename "$(dirname "$log")")-error.log"
    done

    local scenarios servers
    scenarios=$(IFS=,; echo "${SCENARIOS[*]}")
    servers=$(IFS=,; echo "${SERVERS[*]}")
    {
        if ((dry)); then
            echo "**Dry run on a $cores-CPU machine: it checks the harness; its figures are not results.**"
            echo
        fi
        echo "W workers on CPUs 0..W-1, wrk -t$THREADS on CPUs $LOAD_CPUS, ${DURATION} s per" \
            "measurement, $rounds round(s): medians (min–max) over rounds; the ratios are to pong's" \
            "figure in the same round. CPU µs/req: utime+stime of all the server's processes per" \
            "response. Server cores busy: that CPU time over the measurement's wall time."
        echo
        "$P/bin/awk" -F '\t' -v scenarios="$scenarios" -v servers="$servers" \
            -f "$P/share/summary.awk" "$OUT/runs.tsv"
    } >"$OUT/summary.md"
    tee -a "$OUT/run.log" <"$OUT/summary.md"
    if ((FAILED > 0)); then
        loud "$FAILED measurement(s) FAILED: a wrong answer, a miscount, a wrk error or a server that did not start (see above and $OUT/logs)"
        return 1
    fi
    say "every response of every measurement was a 200 with the body \"$BODY\""
}

case ${1:-} in
    pack) shift; pack "$@" ;;
    run) shift; run "$@" ;;
    -h|--help) usage ;;
    *) usage >&2; exit 2 ;;
esac
