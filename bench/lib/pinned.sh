# Sourced by the side-by-side scripts (gzip.sh, site.sh): start a server in its own session
# pinned to a CPU, wait until it answers, read its CPU time, stop it. Needs $run (a directory
# for the server's log).

# server_start CPU CMD... : starts CMD in a new session (so its pgid is its pid) on CPU; prints the pid.
server_start() {
    local cpu=$1; shift
    setsid taskset -c "$cpu" "$@" > "$run/server.log" 2>&1 &
    echo $!
}

# server_wait PORT [PATH] : until the server answers PATH (any status), at most 5 s.
server_wait() {
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$1${2:-/}" && return 0
        sleep 0.05
    done
    echo "port $1: no answer after 5 s; $(tail -3 "$run/server.log")" >&2
    return 1
}

# server_pids SID : the processes of the server's session (nginx's master and worker, ...).
server_pids() { ps -o pid= -s "$1"; }

# server_cpu SID : "UTIME STIME", clock ticks summed over the session's processes.
server_cpu() {
    server_pids "$1" | while read -r p; do
        awk '{print $14, $15}' "/proc/$p/stat" 2>/dev/null
    done | awk '{u+=$1; s+=$2} END {print u+0, s+0}'
}

# server_stop PID SIGNAL : signals the server and waits up to 10 s for it to exit (it was
# started in a command substitution, so it is not this shell's child to `wait` for).
server_stop() {
    kill "-$2" "$1" 2>/dev/null || true
    for _ in $(seq 200); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done
    echo "pid $1 still running 10 s after SIG$2" >&2
}
