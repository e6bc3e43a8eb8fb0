# Sourced by bench/manycore.sh: its run step (see its --help). The self-test of the archive,
# one measurement (wrk with check.lua, the server's CPU time around it), and the loop over
# workers, rounds, servers and scenarios that writes runs.tsv and summary.md.

BODY='Hello, World!'
SERVERS=(fibra-hello nginx pong)
SCENARIOS=(plain-c256 plain-c1000 pipeline16-c256)
# Tenths of a second the plan counts per server start (start, wait for the port, stop) and
# per measurement beyond its duration (wrk's start and exit, the CPU samples, a pause).
START_DS=10
SETTLE_DS=4

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
    local dry=0 only_test=0 keep=0 workdir="" servers_arg=""
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
            --servers) servers_arg=$2; shift 2 ;;
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
    if [[ -n $servers_arg ]]; then
        local -a chosen
        IFS=, read -r -a chosen <<<"$servers_arg"
        local s
        for s in "${chosen[@]}"; do
            [[ " ${SERVERS[*]} " == *" $s "* ]] || die "run: --servers: no server $s (${SERVERS[*]})"
        done
        [[ " ${chosen[*]} " == *" pong "* ]] || die "run: --servers must include pong: every ratio is to its figure"
        SERVERS=("${chosen[@]}")
    fi
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
        loud "FAILED $FAILED time(s): a wrong answer, a miscount, a wrk error or a server that did not start (see above and $OUT/logs)"
        return 1
    fi
    say "every response of every measurement was a 200 with the body \"$BODY\""
}
