# Sourced by bench/manycore.sh for its run step: CPU lists, and the servers' processes: start
# one in its own session on CPUs 0..W-1, add up its session's CPU time, stop it. $P is the
# extracted archive, $WORK the run's scratch folder, $PIN 0 when taskset cannot pin.

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
