#!/usr/bin/env bash
# On-the-fly gzip, side by side: fibra serve (gzip level L, its compressed-result cache) and
# nginx (`gzip on`, gzip_comp_level L, open_file_cache) serving the same file to wrk with
# `Accept-Encoding: gzip`, one worker each pinned to CPU 0, wrk on CPU 1. Prints, per round,
# req/s and server CPU µs per request (utime+stime of the server's process group), and the
# medians with the fibra/nginx ratios. Each server's answer is checked first: gzip, and
# gunzipped equal to the file.
#
#   bench/gzip.sh [ROUNDS] [SECS] [FILE] [LEVEL] [CONNS]
#   bench/gzip.sh 5 5 /usr/share/javascript/jquery/jquery.min.js 6 64
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rounds=${1:-5}; secs=${2:-5}
file=${3:-/usr/share/javascript/jquery/jquery.min.js}   # Debian package libjs-jquery
level=${4:-6}; conns=${5:-64}
fibra=${FIBRA:-$here/../target/release/fibra}
name=$(basename "$file")
run=$(mktemp -d /tmp/fibra-gzip.XXXXXX)
chmod 755 "$run"   # nginx's worker runs as nobody when we are root
mkdir -p "$run/root" && cp "$file" "$run/root/$name" && chmod 644 "$run/root/$name"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$run"' EXIT
port_f=18931; port_n=18932

sed -e "s|@RUN@|$run|g" -e "s|@ROOT@|$run/root|g" -e "s|@PORT@|$port_n|g" \
    -e "s|@LEVEL@|$level|g" "$here/gzip/nginx.conf.in" > "$run/nginx.conf"

check() { # port
    curl -s -H 'Accept-Encoding: gzip' -D "$run/h" -o "$run/body.gz" "http://127.0.0.1:$1/$name"
    grep -qi '^content-encoding: gzip' "$run/h" || { echo "port $1: not gzip" >&2; exit 1; }
    gunzip -c "$run/body.gz" | cmp -s - "$file" || { echo "port $1: wrong bytes" >&2; exit 1; }
    echo "$(stat -c %s "$run/body.gz")"
}
# shellcheck source=bench/lib/pinned.sh
source "$here/lib/pinned.sh"
cpu() { server_cpu "$1" | awk '{print $1 + $2}'; }   # pgid -> clock ticks of the group
measure() { # label port pgid
    local t0 t1 out reqs rps non2xx
    t0=$(cpu "$3")
    out=$(taskset -c 1 wrk -t1 -c"$conns" -d"${secs}s" -H 'Accept-Encoding: gzip' \
          "http://127.0.0.1:$2/$name")
    t1=$(cpu "$3")
    reqs=$(echo "$out" | awk '/requests in/{print $1}')
    rps=$(echo "$out" | awk '/Requests\/sec/{print $2}')
    non2xx=$(echo "$out" | awk '/Non-2xx/{print $4}')
    [ -z "$non2xx" ] || { echo "$1: $non2xx non-2xx answers" >&2; exit 1; }
    echo "$1 $rps $(python3 -c "print(round(($t1-$t0)/$(getconf CLK_TCK)*1e6/$reqs, 2))")"
}

echo "file $file ($(stat -c %s "$file") bytes), gzip level $level, $conns conns, ${secs}s x $rounds rounds"
results=()
for r in $(seq "$rounds"); do
    pf=$(server_start 0 "$fibra" serve "$run/root" --workers 1 -p $port_f --gzip-level "$level")
    server_wait $port_f
    [ "$r" = 1 ] && echo "fibra gzip body: $(check $port_f) bytes"
    results+=("$(measure fibra $port_f "$pf")"); echo "round $r ${results[-1]}"
    server_stop "$pf" INT
    pn=$(server_start 0 nginx -p "$run" -c "$run/nginx.conf")
    server_wait $port_n
    [ "$r" = 1 ] && echo "nginx gzip body: $(check $port_n) bytes"
    results+=("$(measure nginx $port_n "$pn")"); echo "round $r ${results[-1]}"
    server_stop "$pn" QUIT
done
printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics as st
rows = [l.split() for l in sys.stdin if l.strip()]
m = {s: (st.median(float(r[1]) for r in rows if r[0] == s), st.median(float(r[2]) for r in rows if r[0] == s)) for s in ("fibra", "nginx")}
for s, (rps, cpu) in m.items(): print(f"median {s}: {rps:,.0f} req/s, {cpu:.2f} us CPU/request")
f, n = m["fibra"], m["nginx"]
print(f"fibra/nginx: req/s {f[0]/n[0]:.2f}x, CPU per request {f[1]/n[1]:.4f}x")'
