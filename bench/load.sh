# Sourced by the bench/ scripts that load one server with wrk: bench/cachesim.sh,
# bench/codelines.sh, bench/hotspots.sh, bench/depth.sh and bench/pgo.sh.
#
#   parse_load_args "$@"      # [WRK_ARGS...] -- SERVER_COMMAND...; sets wrk_args, server, port
#   wait_port PORT TRIES SECS # until 127.0.0.1:PORT accepts; at most TRIES tries SECS apart;
#                             # returns 1 if it never did
#   run_loaded SECS PATH VALGRIND_ARGS...
#
# run_loaded starts `valgrind VALGRIND_ARGS... SERVER_COMMAND` (its output in $out/server.log;
# $out must be a directory), waits for the port (valgrind start-up is slow), runs wrk pinned
# to CPU 1 for SECS seconds against http://127.0.0.1:PORT/PATH, stops the server with SIGTERM
# (so the tool writes its output) and sets `requests` to the number wrk completed.

parse_load_args() {
    wrk_args=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do
        wrk_args+=("$1")
        shift
    done
    [[ $# -gt 1 ]] || { echo "usage: $0 [WRK_ARGS...] -- SERVER_COMMAND..." >&2; exit 2; }
    shift
    server=("$@")
    port="${server[-1]}"
}

wait_port() {
    local _
    for _ in $(seq "$2"); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep "$3"
    done
    return 1
}

run_loaded() {
    local secs="$1" path="$2"
    shift 2
    valgrind "$@" "${server[@]}" >"$out/server.log" 2>&1 &
    local vg=$!
    wait_port "$port" 100 0.2 || true
    requests=$(taskset -c 1 wrk -t1 -d"${secs}s" "${wrk_args[@]}" "http://127.0.0.1:$port$path" |
        awk '/requests in/ {print $1}')
    kill -TERM "$vg"
    wait "$vg" || true
}
