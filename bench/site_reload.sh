#!/usr/bin/env bash
# Reload acceptance: `fibra serve --config` with two HTTPS sites on one address, under load,
# reloaded with SIGHUP RELOADS times (every 1.5 s), each time with a new site file and a new
# certificate. Site a (hosts = ["localhost"], the default site) and site b (hosts =
# ["b.test"]) each have their own self-signed certificate (openssl, P-256). Generation G of
# the file:
#   a: "=/" answers "a G" (any other path 404), "=/gG" answers "route gG" (so each reload
#      adds one route and removes the one before), "=/odd" exists in odd generations only;
#   b: "/" answers "b G";
#   and a's certificate and key files are replaced (same paths) by a fresh pair.
# Load: `wrk -t1 -c50` on https://localhost:PORT/ (SNI localhost, keep-alive) and, so that
# handshakes meet the certificate swaps, `wrk -t1 -c4` with "Connection: close" (a new TLS
# connection per request), both for SECONDS, both counting answers by body: each must have
# had answers from every generation (the keep-alive connections opened before the first
# SIGHUP included).
#
#   bench/site_reload.sh [SECONDS] [RELOADS]     (defaults: 20, 10; the first SIGHUP at 2 s)
#
# After each SIGHUP the script waits for "SIGHUP, reloaded" in fibra's output (the time
# taken is printed) and checks with curl and openssl s_client: a's body, the added route
# (200) and the removed one (404), b's body (curl --resolve b.test), and the certificates
# sent for SNI localhost and b.test (fingerprints) against a's new file and b's file.
# Passes when both wrk runs saw 0 non-2xx, 0 socket errors and every generation's body,
# every reload was applied (no "configuration is unchanged" line) and every check passed,
# the last ones after the load stopped included.
#
# Not pinned. Needs wrk, curl and openssl; see bench/lib/site_ops.sh for FIBRA, NO_BUILD
# and where the results (fibra's output, site.toml, wrk-*.txt, reloads.txt, summary.txt)
# are kept.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SECS=${1:-20}
RELOADS=${2:-10}
EVERY=1.5
FIRST_AT=2
source "$ROOT/bench/lib/site_ops.sh"
site_ops_init site-reload wrk curl openssl awk setsid
PORT=$(free_port)
CERTS="$OUT/certs"
mkdir -p "$CERTS"

cert() { # NAME HOST : a fresh self-signed pair written as NAME.pem/NAME.key, each replaced at once
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$2" \
    -addext "subjectAltName=DNS:$2" -keyout "$CERTS/$1.key.new" -out "$CERTS/$1.pem.new" \
    -days 2 2>/dev/null
  mv "$CERTS/$1.key.new" "$CERTS/$1.key"
  mv "$CERTS/$1.pem.new" "$CERTS/$1.pem"
}
fingerprint() { openssl x509 -noout -fingerprint -sha256 | sed 's/.*=//'; }
file_fp() { fingerprint <"$CERTS/$1.pem"; }
served_fp() { # SNI : the fingerprint of the certificate fibra sends for SNI
  openssl s_client -connect "127.0.0.1:$PORT" -servername "$1" </dev/null 2>/dev/null | fingerprint
}

site_file() { # GENERATION : site.toml, replaced at once
  local g=$1 odd=""
  [ $((g % 2)) = 1 ] && odd=$'\n[[site.route]]\npath = "=/odd"\nrespond = { body = "odd" }\n'
  cat >"$OUT/site.toml.new" <<TOML
# generation $g
[server]
workers = 2

[[site]]
hosts = ["localhost"]
listen = ["127.0.0.1:$PORT"]
default = true
tls = { cert = "certs/a.pem", key = "certs/a.key" }

[[site.route]]
path = "=/"
respond = { body = "a $g\\n" }

[[site.route]]
path = "=/g$g"
respond = { body = "route g$g\\n" }
$odd
[[site]]
hosts = ["b.test"]
listen = ["127.0.0.1:$PORT"]
tls = { cert = "certs/b.pem", key = "certs/b.key" }

[[site.route]]
path = "/"
respond = { body = "b $g\\n" }
TOML
  mv "$OUT/site.toml.new" "$OUT/site.toml"
}

A="https://localhost:$PORT"
B=(--resolve "b.test:$PORT:127.0.0.1" "https://b.test:$PORT")
status_of() { curl -sk -o /dev/null -w '%{http_code}' -m 2 "$@"; }
body_of() { curl -sk -m 2 "$@"; }

# check G : the answers and certificate of generation G; prints one line, returns 1 on a miss.
check() {
  local g=$1 miss="" got
  got=$(body_of "$A/") ; [ "$got" = "a $g" ] || miss+=" a/=${got:-none}"
  got=$(status_of "$A/g$g") ; [ "$got" = 200 ] || miss+=" /g$g=$got"
  if [ "$g" -gt 0 ]; then got=$(status_of "$A/g$((g - 1))"); [ "$got" = 404 ] || miss+=" /g$((g - 1))=$got"; fi
  got=$(status_of "$A/odd"); [ "$got" = "$([ $((g % 2)) = 1 ] && echo 200 || echo 404)" ] || miss+=" /odd=$got"
  got=$(body_of "${B[@]}/") ; [ "$got" = "b $g" ] || miss+=" b/=${got:-none}"
  local want served
  want=$(file_fp a)
  served=$(served_fp localhost)
  [ "$served" = "$want" ] || miss+=" cert(served ${served:0:17}… file ${want:0:17}…)"
  served=$(served_fp b.test)
  [ "$served" = "$(file_fp b)" ] || miss+=" b-cert(served ${served:0:17}…)"
  echo "gen $g: a/ b/ /g$g$([ "$g" -gt 0 ] && echo " /g$((g - 1))") /odd, certs a ${want:0:17}… b: ${miss:-ok}"
  [ -z "$miss" ]
}

reloaded() { grep -c 'SIGHUP, reloaded' "$OUT/fibra.log" || true; }
refused() { grep -c 'configuration is unchanged' "$OUT/fibra.log" || true; }

cert a localhost
cert b b.test
site_file 0
spawn fibra "$FIBRA" serve --config "$OUT/site.toml"
FIBRA_PID=$SPAWNED
wait_ok "$A/" -k
fail=0
check 0 >"$OUT/reloads.txt" || fail=1
cat "$OUT/reloads.txt"

T0=$(now)
wrk -t1 -c50 -d"${SECS}s" -s "$ROOT/bench/lua/statuses.lua" "$A/" -- bodies >"$OUT/wrk-keepalive.txt" 2>&1 &
WRK1=$!
wrk -t1 -c4 -d"${SECS}s" -H "Connection: close" -s "$ROOT/bench/lua/statuses.lua" "$A/" \
  -- bodies >"$OUT/wrk-close.txt" 2>&1 &
WRK2=$!
at() { sleep "$(awk -v t0="$T0" -v s="$1" -v n="$(now)" 'BEGIN {d = t0 + s - n; print (d > 0 ? d : 0)}')"; }

for g in $(seq 1 "$RELOADS"); do
  at "$(awk -v f="$FIRST_AT" -v e="$EVERY" -v g="$g" 'BEGIN {print f + (g - 1) * e}')"
  cert a localhost
  site_file "$g"
  before=$(reloaded)
  t=$(now)
  kill -HUP "$FIBRA_PID"
  applied=""
  for _ in $(seq 500); do
    [ "$(reloaded)" -gt "$before" ] && { applied=$(now); break; }
    [ "$(refused)" -gt 0 ] && break
    sleep 0.01
  done
  if [ -z "$applied" ]; then
    echo "SIGHUP $g at $(awk -v t="$t" -v t0="$T0" 'BEGIN {printf "%+.3f", t - t0}') s: NOT applied" | tee -a "$OUT/reloads.txt"
    fail=1
    continue
  fi
  line=$(check "$g") || fail=1
  printf 'SIGHUP %2d at %+.3f s, applied in %3d ms; %s\n' "$g" \
    "$(awk -v t="$t" -v t0="$T0" 'BEGIN {print t - t0}')" \
    "$(awk -v a="$applied" -v t="$t" 'BEGIN {printf "%d", (a - t) * 1000}')" "$line" | tee -a "$OUT/reloads.txt"
done

rc1=0; rc2=0
wait "$WRK1" || rc1=$?
wait "$WRK2" || rc2=$?
after=$(check "$RELOADS") || fail=1
echo "after the load: $after" | tee -a "$OUT/reloads.txt"
echo "  a's last certificate file (SHA-256): $(file_fp a)" | tee -a "$OUT/reloads.txt"
echo "  sent for SNI localhost (s_client):   $(served_fp localhost)" | tee -a "$OUT/reloads.txt"

{
  echo
  echo "fibra: $FIBRA ($(cd "$ROOT" && git rev-parse --short HEAD)); https://127.0.0.1:$PORT"
  for w in keepalive close; do
    echo "wrk ($w):"
    sed -n '/Running/,/Transfer/p' "$OUT/wrk-$w.txt" | sed 's/^/  /'
    grep '^statuses:' "$OUT/wrk-$w.txt" | grep -v '^statuses: bad' | sed 's/^/  /' || true
  done
  echo "reloads applied: $(reloaded) of $RELOADS; refused: $(refused)"
  echo "fibra serve's output:"
  sed 's/^/  /' "$OUT/fibra.log"
} | tee -a "$OUT/summary.txt"
cat "$OUT/reloads.txt" >>"$OUT/summary.txt"
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
for w in keepalive close; do
  rc=$rc1; [ "$w" = close ] && rc=$rc2
  if [ "$rc" != 0 ] || ! wrk_counts "$OUT/wrk-$w.txt"; then
    say "FAIL: wrk ($w) failed (exit $rc)"; fail=1; continue
  fi
  [ "$NON2XX" = 0 ] || { say "FAIL: wrk ($w): $NON2XX non-2xx of $RESPONSES"; grep '^statuses: bad' "$OUT/wrk-$w.txt" | head -5; fail=1; }
  [ "$SOCKET_ERRORS" = 0 ] || { say "FAIL: wrk ($w): $SOCKET_ERRORS socket errors"; fail=1; }
  [ "$RESPONSES" -gt 0 ] || { say "FAIL: wrk ($w): no responses"; fail=1; }
  missing=""
  for g in $(seq 0 "$RELOADS"); do
    grep -q "^statuses: body [0-9]* a $g \?$" "$OUT/wrk-$w.txt" || missing+=" $g"
  done
  [ -z "$missing" ] || { say "FAIL: wrk ($w): no answer from generation(s)$missing"; fail=1; }
done
[ "$(reloaded)" = "$RELOADS" ] || { say "FAIL: $(reloaded) reloads applied, not $RELOADS"; fail=1; }
[ "$(refused)" = 0 ] || { say "FAIL: $(refused) reloads refused"; fail=1; }
grep -qi 'panic' "$OUT/fibra.log" && { say "FAIL: a panic in fibra's output"; fail=1; }
say "results in $OUT"
[ "$fail" = 0 ] && say PASS || { say FAIL; exit 1; }
