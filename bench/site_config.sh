#!/usr/bin/env bash
# A site file of many sites against the one-site flags setup, nginx and Caddy: per request CPU
# and req/s on the hot file and on a proxied /plaintext, and the per-request cost of a cached
# basic-auth check and of a rate limit that never trips.
#
#   bench/site_config.sh [--rounds N] [--duration S] [--rows LIST] [--clients LIST]
#                        [--conns C] [--sites N] [--instr] [--instr-secs S] [--out DIR]
#                        [--no-build]
#
#   --rounds N      alternating rounds (default 5)
#   --duration S    seconds per measured run (default 5)
#   --rows LIST     comma-separated, default flags,nginx,caddy,access:
#                     flags   `fibra serve --config` (N sites x 10 routes) against the one-site
#                             flags setup `fibra serve DIR --proxy /v1/=...`: the hot file and
#                             /v1/plaintext (one upstream)
#                     nginx   the same site file against nginx (N server blocks): the hot file
#                             and /api/plaintext (two upstreams, round robin); with flags too,
#                             /v1/plaintext (one upstream) on all three
#                     caddy   the same against Caddy (N site blocks, GOMAXPROCS=1)
#                     access  /auth/ (basic auth, a valid Authorization header on every
#                             request) and /rate/ (a rate limit that never trips) against
#                             /open/ (the same answer without a check), on the site file
#   --clients LIST  wrk and/or fibra-bench (default both): wrk -t1 -cC with bench/site/check.lua
#                   (every response 200 with the exact body, else the run fails), `fibra bench
#                   -k -t1 -cC --json` (every response 2xx, body bytes = responses x the body's
#                   length, else the run fails)
#   --conns C       keep-alive connections (default 64)
#   --sites N       sites in the generated file (default 50); requests go to the middle one
#                   (Host: siteN/2.test) on routes that are not the first of the site
#   --instr         also user-space instructions per request of the fibra targets, from
#                   callgrind counters zeroed after a warm-up and dumped after INSTR_SECS
#                   (--instr-secs, default 8) of wrk load (check.lua on every response); the
#                   dumps and a callgrind_annotate of each go to --out
#   --out DIR       keep results.tsv, the generated configurations, server logs and the
#                   callgrind dumps there (default: a temporary directory, removed)
#   --no-build      use the fibra binary as it is (FIBRA=path, default
#                   ${CARGO_TARGET_DIR:-target}/release/fibra)
#
# Pinning: every front server on CPU 0 (fibra with one worker, nginx with worker_processes 1,
# Caddy with GOMAXPROCS=1); the load generator and the two upstreams (`fibra hello --workers
# 1`, the proxied /plaintext) on CPU 1: a 2-core machine has no third core for them. All
# servers run for the whole script; each was first checked with curl (status and exact body
# of every route, and fibra's site-file answers against the flags setup's, byte for byte but
# the Date), then warmed up, then the rounds alternate the targets (a rotated order each
# round). CPU per request: utime+stime of the server's session (every process and thread:
# nginx's master and worker, Caddy's threads) from /proc/PID/stat before and after, divided
# by the requests completed. Before each run the script waits (up to QUIET_WAIT seconds,
# default 120) for the machine to be quiet (QUIET_PCT, default 15: % of one core busy
# outside us), and each line says how busy CPU 0 was outside the server ("other0").
# Needs wrk, curl, nginx, caddy, htpasswd (apache2-utils), python3; valgrind for --instr.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

rounds=5 secs=5 rows=flags,nginx,caddy,access clients=wrk,fibra-bench conns=64 sites=50
instr=0 instr_secs=8 keep="" build=1
while [ $# -gt 0 ]; do
    case $1 in
        --rounds) rounds=$2; shift 2 ;;
        --duration) secs=$2; shift 2 ;;
        --rows) rows=$2; shift 2 ;;
        --clients) clients=$2; shift 2 ;;
        --conns) conns=$2; shift 2 ;;
        --sites) sites=$2; shift 2 ;;
        --instr) instr=1; shift ;;
        --instr-secs) instr_secs=$2; shift 2 ;;
        --out) keep=$2; shift 2 ;;
        --no-build) build=0; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "site_config.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
has() { [[ ",$1," == *",$2,"* ]]; }
for tool in wrk curl python3 htpasswd taskset; do
    command -v "$tool" >/dev/null || { echo "site_config.sh: $tool is missing" >&2; exit 2; }
done
has "$rows" nginx && { command -v nginx >/dev/null || { echo "site_config.sh: nginx is missing" >&2; exit 2; }; }
has "$rows" caddy && { command -v caddy >/dev/null || { echo "site_config.sh: caddy is missing" >&2; exit 2; }; }
[ "$instr" = 0 ] || command -v callgrind_control >/dev/null || { echo "site_config.sh: valgrind is missing" >&2; exit 2; }

if [ "$build" = 1 ]; then (cd "$repo" && cargo build --release -q -p fibra-cli); fi
fibra=${FIBRA:-${CARGO_TARGET_DIR:-$repo/target}/release/fibra}
[ -x "$fibra" ] || { echo "site_config.sh: no $fibra" >&2; exit 2; }

run=$(mktemp -d /tmp/fibra-siteconf.XXXXXX)
chmod 755 "$run"   # nginx's worker runs as nobody when we are root: it must read the roots
sids=()
cleanup() {
    for s in "${sids[@]}"; do kill -TERM -- "-$s" 2>/dev/null || true; done
    sleep 0.5
    if [ -n "$keep" ]; then mkdir -p "$keep" && cp -r "$run"/. "$keep"/ 2>/dev/null || true; fi
    rm -rf "$run"
}
trap cleanup EXIT
# shellcheck source=bench/lib/measure.sh
source "$here/lib/measure.sh"

start() { # NAME CPU CMD... : a new session pinned to CPU, output in $run/NAME.log; sets SID
    local name=$1 cpu=$2; shift 2
    setsid taskset -c "$cpu" "$@" >"$run/$name.log" 2>&1 &
    SID=$!
    sids+=("$SID")
}
wait_port() { # NAME PORT
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "site_config.sh: $1 never listened on $2; $(tail -5 "$run/$1.log")" >&2
    exit 1
}
session_cpu() { # SID -> "UTIME STIME" in ticks, every process of the session
    ps -o pid= -s "$1" | while read -r p; do awk '{print $14, $15}' "/proc/$p/stat" 2>/dev/null; done |
        awk '{u+=$1; s+=$2} END {print u+0, s+0}'
}
cpu_busy() { # -> "BUSY0 BUSY1 TOTAL0" ticks since boot (busy: not idle, not iowait)
    awk '/^cpu0 /{b0=$2+$3+$4+$7+$8+$9; t0=b0+$5+$6} /^cpu1 /{b1=$2+$3+$4+$7+$8+$9}
         END {print b0, b1, t0}' /proc/stat
}
wait_quiet() { # until both cores together are busy less than QUIET_PCT % of one core
    local limit=${QUIET_PCT:-15} waited=0 a b pct
    while :; do
        read -r -a a < <(cpu_busy); sleep 1; read -r -a b < <(cpu_busy)
        pct=$(( (b[0] - a[0] + b[1] - a[1]) * 100 / hz ))
        [ "$pct" -lt "$limit" ] && return 0
        [ "$waited" -ge "${QUIET_WAIT:-120}" ] && { echo "  (machine still ${pct}% busy after ${waited}s; measuring anyway)"; return 0; }
        waited=$((waited + 1))
    done
}
hz=$(getconf CLK_TCK)

# --- the sites, the servers -------------------------------------------------------------------
mid=$((sites / 2)); host="site$mid.test"
up1=$(free_port); up2=$(free_port)
port_config=$(free_port); port_flags=$(free_port); port_nginx=$(free_port); port_caddy=$(free_port)
hash_line=$(htpasswd -nbB -C 4 alice secret)
auth="Authorization: Basic $(printf alice:secret | base64 -w0)"
python3 "$here/site/many_sites.py" "$run" --sites "$sites" --port-config "$port_config" \
    --port-nginx "$port_nginx" --port-caddy "$port_caddy" --upstreams "127.0.0.1:$up1,127.0.0.1:$up2" \
    --htpasswd-line "$hash_line" --caddy-hash "$(printf %s "${hash_line#alice:}" | base64 -w0)" \
    --static "$here/static/index.html" --keepalive "$conns"
root="$run/root/site$mid"
printf 'Hello, World!' >"$run/body.plaintext"
printf 'admin\n' >"$run/body.admin"
cp "$here/static/index.html" "$run/body.file"

declare -A SIDOF PORTOF
start up1 1 "$fibra" hello --workers 1 --port "$up1"; wait_port up1 "$up1"
start up2 1 "$fibra" hello --workers 1 --port "$up2"; wait_port up2 "$up2"
start config 0 "$fibra" serve --config "$run/fibra.toml"; SIDOF[config]=$SID; PORTOF[config]=$port_config
wait_port config "$port_config"
if has "$rows" flags; then
    start flags 0 "$fibra" serve "$root" --workers 1 --port "$port_flags" --cache-ttl 3600 \
        --proxy "/v1/=http://127.0.0.1:$up1/"
    SIDOF[flags]=$SID; PORTOF[flags]=$port_flags; wait_port flags "$port_flags"
fi
if has "$rows" nginx; then
    nginx -t -q -c "$run/nginx.conf" 2>"$run/nginx-t.log" || { cat "$run/nginx-t.log" >&2; exit 1; }
    start nginx 0 nginx -c "$run/nginx.conf"; SIDOF[nginx]=$SID; PORTOF[nginx]=$port_nginx
    wait_port nginx "$port_nginx"
fi
if has "$rows" caddy; then
    start caddy 0 env GOMAXPROCS=1 XDG_DATA_HOME="$run/caddy-data" XDG_CONFIG_HOME="$run/caddy-config" \
        caddy run --config "$run/Caddyfile" --adapter caddyfile
    SIDOF[caddy]=$SID; PORTOF[caddy]=$port_caddy; wait_port caddy "$port_caddy"
fi

# --- every server's answers, checked ----------------------------------------------------------
fails=0
expect() { # SERVER PATH STATUS WHAT [CURL_ARGS...]: WHAT is body=FILE, location=URL,
           # header=NAME:VALUE (exact, NAME in lower case) or - (status only)
    local s=$1 path=$2 want=$3 what=$4; shift 4
    local got body loc ok=1
    got=$(curl -s -o "$run/answer" -D "$run/head" -w '%{http_code}' -H "Host: $host" "$@" \
          "http://127.0.0.1:${PORTOF[$s]}$path")
    body=$(od -An -c "$run/answer" | tr -s ' ' | head -c 60)
    loc=$(tr -d '\r' <"$run/head" | awk 'tolower($1)=="location:" {print $2}')
    [ "$got" = "$want" ] || ok=0
    case $what in
        body=*) cmp -s "$run/answer" "${what#body=}" || ok=0 ;;
        location=*) [ "$loc" = "${what#location=}" ] || ok=0 ;;
        header=*) tr -d '\r' <"$run/head" | awk -v h="${what#header=}" '
                      { split(h, nv, ":"); n = index($0, ":") }
                      n && tolower(substr($0, 1, n - 1)) == nv[1] && substr($0, n + 2) == nv[2] { found = 1 }
                      END { exit !found }' || ok=0 ;;
    esac
    if [ $ok = 1 ]; then
        printf '  %-6s %-22s %s %s\n' "$s" "$path${*:+ (auth)}" "$got" "${what%%=*}${loc:+ $loc}$([[ $what == header=* ]] && echo " ${what#header=}")"
    else
        printf '  %-6s %-22s %s FAILED: want %s %s, got body [%s] location [%s]\n' "$s" "$path" "$got" "$want" "$what" "$body" "$loc"
        fails=$((fails + 1))
    fi
}
echo "== answers (Host: $host; fibra $("$fibra" --version 2>/dev/null || echo "?"), $(nginx -v 2>&1 | sed 's/.*: //'), caddy $(caddy version 2>/dev/null | cut -d' ' -f1))"
for s in config nginx caddy; do
    [ -n "${SIDOF[$s]:-}" ] || continue
    expect "$s" /static/index.html 200 "body=$run/body.file"
    expect "$s" /index.html 200 "body=$run/body.file"
    expect "$s" /index.html 200 "header=x-site:site$mid"
    expect "$s" /index.html 200 "header=x-frame-options:DENY"
    expect "$s" /api/plaintext 200 "body=$run/body.plaintext"
    expect "$s" /api/plaintext 200 "body=$run/body.plaintext"   # the other upstream
    expect "$s" /v1/plaintext 200 "body=$run/body.plaintext"
    expect "$s" /open/x 200 "body=$run/body.admin"
    expect "$s" /auth/x 401 -
    expect "$s" /auth/x 200 "body=$run/body.admin" -H "$auth"
    expect "$s" /rate/x 200 "body=$run/body.admin"
    expect "$s" "/old?a=1" 301 "location=/new?a=1"
    expect "$s" /docs/x 302 "location=https://docs.$host/docs/x"
    expect "$s" /internal/x 403 -
done
[ -n "${SIDOF[flags]:-}" ] && { expect flags /static/index.html 200 "body=$run/body.file"; expect flags /v1/plaintext 200 "body=$run/body.plaintext"; }
# The site file's answers on the measured routes are the flags setup's, byte for byte.
if [ -n "${SIDOF[flags]:-}" ]; then
    for path in /static/index.html /v1/plaintext; do
        a=$(curl -si -H "Host: $host" "http://127.0.0.1:$port_config$path" | grep -v '^Date:')
        b=$(curl -si -H "Host: $host" "http://127.0.0.1:$port_flags$path" | grep -v '^Date:')
        if [ "$a" = "$b" ]; then echo "  config = flags on $path (all but Date)"; else
            echo "  config and flags differ on $path:"; diff <(echo "$a") <(echo "$b") || true; fails=$((fails + 1)); fi
    done
fi
echo "  response heads on the hot file:"
for s in config flags nginx caddy; do
    [ -n "${SIDOF[$s]:-}" ] || continue
    printf '    %-6s %s\n' "$s" "$(curl -sI -H "Host: $host" "http://127.0.0.1:${PORTOF[$s]}/static/index.html" | tr -d '\r' | tr '\n' '|')"
done
[ "$fails" = 0 ] || { echo "site_config.sh: $fails answers were wrong" >&2; exit 1; }

# --- targets: NAME=SERVER PATH BODY [auth] ---------------------------------------------------
declare -A T_SERVER T_PATH T_BODY T_AUTH
target() { T_SERVER[$1]=$2; T_PATH[$1]=$3; T_BODY[$1]=$4; T_AUTH[$1]=${5:-}; }
scenarios=()
declare -A S_TARGETS
if has "$rows" flags || has "$rows" nginx || has "$rows" caddy; then
    list="config"
    for s in flags nginx caddy; do has "$rows" $s && list+=" $s"; done
    scenarios+=(file); S_TARGETS[file]=$list
    for s in $list; do target "file:$s" "$s" /static/index.html "$run/body.file"; done
fi
if has "$rows" nginx || has "$rows" caddy; then
    list="config"
    for s in nginx caddy; do has "$rows" $s && list+=" $s"; done
    scenarios+=(proxy); S_TARGETS[proxy]=$list
    for s in $list; do target "proxy:$s" "$s" /api/plaintext "$run/body.plaintext"; done
fi
if has "$rows" flags; then
    # With nginx too when asked for both: its one-upstream proxy against the flags setup's.
    list="config flags"; has "$rows" nginx && list+=" nginx"
    scenarios+=(proxy1); S_TARGETS[proxy1]=$list
    for s in $list; do target "proxy1:$s" "$s" /v1/plaintext "$run/body.plaintext"; done
fi
if has "$rows" access; then
    scenarios+=(access); S_TARGETS[access]="open auth rate"
    for p in open auth rate; do target "access:$p" config "/$p/x" "$run/body.admin" auth; done
fi

results="$run/results.tsv"
printf 'round\tscenario\tclient\ttarget\trps\tcpu_us\tuser_us\tsys_us\trequests\tother0_pct\topens\n' >"$results"
opens() { awk '/^Tcp:/ {n++; if (n == 2) print $6}' /proc/net/snmp; }

load() { # CLIENT TARGET SECS -> "REQUESTS RPS" on stdout; exits on any wrong answer
    local client=$1 t=$2 d=$3 server=${T_SERVER[$2]}
    local url="http://127.0.0.1:${PORTOF[$server]}${T_PATH[$t]}" out
    local hdr=(-H "Host: $host")
    [ -n "${T_AUTH[$t]}" ] && hdr+=(-H "$auth")
    case $client in
        wrk)
            out=$(taskset -c 1 wrk -t1 -c"$conns" -d"${d}s" "${hdr[@]}" -s "$here/site/check.lua" \
                  "$url" -- "${T_BODY[$t]}" 2>&1) || { echo "site_config.sh: $t (wrk): $out" >&2; exit 1; }
            if grep -qE "Socket errors|Non-2xx" <<<"$out"; then echo "site_config.sh: $t (wrk): $out" >&2; exit 1; fi
            awk '/requests in/ {n=$1} /^Requests\/sec/ {r=$2} END {print n, r}' <<<"$out" ;;
        fibra-bench)
            taskset -c 1 "$fibra" bench -k -t1 -c"$conns" -d"${d}s" "${hdr[@]}" --json "$url" \
                >"$run/bench.json" 2>&1 || { echo "site_config.sh: $t (fibra bench): $(cat "$run/bench.json")" >&2; exit 1; }
            python3 - "$t" "$(stat -c %s "${T_BODY[$t]}")" "$run/bench.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[3]))
q, st, tr = r["requests"], r["status"], r["traffic"]
n, size = q["succeeded"], int(sys.argv[2])
bad = q["failed"] or q["errored"] or st["2xx"] != n or not n or tr["body"] != n * size
if bad:
    sys.exit(f"site_config.sh: {sys.argv[1]} (fibra bench): {q} {st} body bytes {tr['body']} for {n} x {size}")
print(n, round(r["requests_per_sec"], 1))
PY
            ;;
    esac
}

measure() { # ROUND SCENARIO CLIENT TARGET: one run, again (at most TRIES times, default 3)
    # while CPU 0 was more than OTHER_MAX % (default 10) busy with something else
    local r=$1 sc=$2 client=$3 t=$4 server=${T_SERVER[$4]}
    local c0 c1 b0 b1 o0 o1 res n rps try last
    for try in $(seq "${TRIES:-3}"); do
        last=0; [ "$try" = "${TRIES:-3}" ] && last=1
        wait_quiet
        read -r -a c0 < <(session_cpu "${SIDOF[$server]}"); read -r -a b0 < <(cpu_busy); o0=$(opens)
        res=$(load "$client" "$t" "$secs")
        read -r -a c1 < <(session_cpu "${SIDOF[$server]}"); read -r -a b1 < <(cpu_busy); o1=$(opens)
        read -r n rps <<<"$res"
        python3 - "$r" "$sc" "$client" "${t#*:}" "$n" "$rps" "${c0[@]}" "${c1[@]}" "${b0[@]}" "${b1[@]}" \
            "$hz" "$((o1 - o0))" "$results" "${OTHER_MAX:-10}" "$last" <<'PY' && return 0
import sys
r, sc, client, t, n, rps = sys.argv[1:7]
u0, s0, u1, s1 = map(int, sys.argv[7:11])
b00, b10, t00, b01, b11, t01 = map(int, sys.argv[11:17])
hz, opens, out = int(sys.argv[17]), int(sys.argv[18]), sys.argv[19]
other_max, last = float(sys.argv[20]), sys.argv[21] == "1"
n, rps = int(n), float(rps)
us = lambda ticks: ticks / hz * 1e6 / n
cpu, user, sys_ = us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0)
# CPU 0's busy time not spent by the server (other processes, interrupts), % of the run.
other0 = max(0.0, (b01 - b00) - (u1 - u0 + s1 - s0)) * 100 / max(1, t01 - t00)
line = (f"round {r} {sc:<6} {client:<11} {t:<6} {rps:>9.0f} req/s {cpu:6.2f} us CPU/req "
        f"(user {user:5.2f} sys {sys_:5.2f}) {n:>8} requests, other0 {other0:4.1f}%, {opens} connects")
if other0 > other_max and not last:
    print(line + " -- discarded, measuring again")
    sys.exit(10)
print(line + (" (kept: last try)" if other0 > other_max else ""))
with open(out, "a") as f:
    f.write(f"{r}\t{sc}\t{client}\t{t}\t{rps}\t{cpu:.4f}\t{user:.4f}\t{sys_:.4f}\t{n}\t{other0:.1f}\t{opens}\n")
PY
    done
}

IFS=, read -r -a client_list <<<"$clients"
if [ "$rounds" -gt 0 ]; then
    echo "== warm-up (2 s each, checked)"
    for sc in "${scenarios[@]}"; do
        for s in ${S_TARGETS[$sc]}; do load wrk "$sc:$s" 2 >/dev/null; done
    done
    echo "== $rounds rounds of ${secs}s, c=$conns, ${sites} sites (Host: $host); servers on CPU 0, clients and upstreams on CPU 1"
fi
for r in $(seq "$rounds"); do
    for sc in "${scenarios[@]}"; do
        read -r -a ts <<<"${S_TARGETS[$sc]}"
        k=$(( (r - 1) % ${#ts[@]} ))
        order=("${ts[@]:$k}" "${ts[@]:0:$k}")     # rotated one further every round
        for client in "${client_list[@]}"; do
            for s in "${order[@]}"; do measure "$r" "$sc" "$client" "$sc:$s"; done
        done
    done
done

# --- summary ------------------------------------------------------------------------------------
if [ "$rounds" -gt 0 ]; then
python3 - "$results" <<'PY'
import csv, statistics as st, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
data = defaultdict(dict)          # (scenario, client, target) -> round -> row
for x in rows:
    data[(x["scenario"], x["client"], x["target"])][x["round"]] = x
def rng(v): return f"{min(v):.2f}-{max(v):.2f}"
print("\n== medians (ranges) per target")
print(f"{'scenario':<7} {'client':<11} {'target':<7} {'req/s':>9} {'range':>15} {'CPU us/req':>10} {'range':>11} {'user':>6} {'sys':>6}")
for (sc, cl, t), byr in data.items():
    rps = [float(x["rps"]) for x in byr.values()]
    cpu = [float(x["cpu_us"]) for x in byr.values()]
    print(f"{sc:<7} {cl:<11} {t:<7} {st.median(rps):9.0f} {min(rps):7.0f}-{max(rps):<7.0f} {st.median(cpu):10.2f} {rng(cpu):>11}"
          f" {st.median(float(x['user_us']) for x in byr.values()):6.2f} {st.median(float(x['sys_us']) for x in byr.values()):6.2f}")
print("\n== ratios within each round: medians (ranges); per-round values in order")
for (sc, cl, t), byr in data.items():
    if sc == "access":
        if t == "open":
            continue
        base = data[(sc, cl, "open")]
        d = [float(byr[r]["cpu_us"]) - float(base[r]["cpu_us"]) for r in byr if r in base]
        print(f"{sc:<7} {cl:<11} {t} - open: CPU {st.median(d):+.3f} us/req ({min(d):+.3f} to {max(d):+.3f}); "
              + " ".join(f"{v:+.2f}" for v in d))
        continue
    for b in ("config", "flags"):
        if t == b or (b == "flags" and t not in ("nginx", "caddy")) or (sc, cl, b) not in data:
            continue
        base = data[(sc, cl, b)]
        rs = [r for r in byr if r in base]
        cpu = [float(base[r]["cpu_us"]) / float(byr[r]["cpu_us"]) for r in rs]
        rps = [float(base[r]["rps"]) / float(byr[r]["rps"]) for r in rs]
        print(f"{sc:<7} {cl:<11} {b} / {t:<6}: CPU {st.median(cpu):.3f} ({rng(cpu)}), req/s {st.median(rps):.3f} ({rng(rps)})"
              f"; CPU per round " + " ".join(f"{v:.3f}" for v in cpu))
PY
fi

# --- instructions per request (callgrind, counters zeroed after a warm-up) -------------------
if [ "$instr" = 1 ]; then
    echo "== user-space instructions per request (callgrind; wrk -t1 -c$conns, ${instr_secs}s after a 2 s warm-up)"
    mkdir -p "$run/callgrind"
    vg_start() { # NAME CMD... : the server under callgrind on CPU 0
        local name=$1; shift
        start "vg-$name" 0 valgrind --tool=callgrind --callgrind-out-file="$run/callgrind/$name.%p" "$@"
    }
    instr_of() { # NAME SID TARGET
        local name=$1 sid=$2 t=$3 n ir f
        load wrk "$t" 2 >/dev/null
        callgrind_control -z "$sid" >/dev/null
        n=$(load wrk "$t" "$instr_secs"); n=${n%% *}
        callgrind_control -d "$sid" >/dev/null
        f=$(ls -t "$run/callgrind/$name".*.* | head -1)
        ir=$(awk '/^summary:|^totals:/ {print $2; exit}' "$f")
        callgrind_annotate --inclusive=no "$f" 2>/dev/null | head -60 >"$f.txt" || true
        printf '%-14s %10.0f instructions/request (%d requests)\n' "$t" "$(python3 -c "print($ir/$n)")" "$n"
        printf '%s\t%s\t%s\t%s\n' "$t" "$n" "$ir" "$f" >>"$run/instr.tsv"
    }
    for s in config flags; do
        [ -n "${SIDOF[$s]:-}" ] || continue
        kill -TERM -- "-${SIDOF[$s]}"; while kill -0 "${SIDOF[$s]}" 2>/dev/null; do sleep 0.1; done
    done
    itargets=()
    for sc in "${scenarios[@]}"; do
        for s in ${S_TARGETS[$sc]}; do
            case ${T_SERVER[$sc:$s]} in config|flags) itargets+=("$sc:$s") ;; esac
        done
    done
    for t in "${itargets[@]}"; do
        server=${T_SERVER[$t]}
        case $server in
            config) vg_start "${t/:/-}" "$fibra" serve --config "$run/fibra.toml" ;;
            flags) vg_start "${t/:/-}" "$fibra" serve "$root" --workers 1 --port "$port_flags" \
                       --cache-ttl 3600 --proxy "/v1/=http://127.0.0.1:$up1/" ;;
        esac
        sid=$SID
        for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/${PORTOF[$server]}") 2>/dev/null && break; sleep 0.1; done
        instr_of "${t/:/-}" "$sid" "$t"
        kill -TERM -- "-$sid"; while kill -0 "$sid" 2>/dev/null; do sleep 0.1; done
    done
    # Where the differences go: per function, per request (bench/site/cg_diff.py).
    for pair in file:config,file:flags proxy1:config,proxy1:flags access:auth,access:open access:rate,access:open; do
        a=${pair%,*} b=${pair#*,}
        ra=$(awk -v t="$a" '$1 == t' "$run/instr.tsv"); rb=$(awk -v t="$b" '$1 == t' "$run/instr.tsv")
        [ -n "$ra" ] && [ -n "$rb" ] || continue
        read -r _ na _ fa <<<"$ra"; read -r _ nb _ fb <<<"$rb"
        d="$run/callgrind/diff-${a/:/-}-vs-${b#*:}.txt"
        python3 "$here/site/cg_diff.py" "$fa" "$na" "$fb" "$nb" --top 60 >"$d"
        echo "-- $a - $b, the largest differences per request (all: callgrind/$(basename "$d"))"
        head -16 "$d"
    done
fi
