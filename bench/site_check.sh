#!/usr/bin/env bash
# `fibra serve --check-config` as an operator meets it: three deliberately broken site files
# (one per pass of the checks: keys and values; sites against each other; files,
# certificates and roots), each refused with exit 1 and every one of its errors as
# FILE:LINE:COLUMN: KEY: MESSAGE (the positions and keys expected are listed below, and no
# other error line may appear), and the same errors when `--config` starts with it; a good
# file, `--print-config`'s output and every site file under deploy/ accepted (exit 0); and a
# SIGHUP with a broken file while serving: the errors logged, "the configuration is
# unchanged", the old answers still served, then a good file's SIGHUP applied.
#
#   bench/site_check.sh
#
# Needs curl and openssl; see bench/lib/site_ops.sh for FIBRA, NO_BUILD and where the results
# (the files, each run's output, summary.txt) are kept.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/lib/site_ops.sh"
site_ops_init site-check curl openssl setsid
P1=$(free_port)
P2=$(free_port)
cd "$OUT" # relative paths in the files below are taken from the file's folder
for c in a b; do
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$c.test" \
    -addext "subjectAltName=DNS:$c.test" -keyout "$c.key" -out "$c.pem" -days 2 2>/dev/null
done
mkdir -p www
echo "hello from www" >www/index.html
fail=0
say() { echo "$*" | tee -a "$OUT/summary.txt"; }

# Pass 1: keys and values (types, units, ranges, unknown keys, URLs, policies).
cat >broken-values.toml <<TOML
[server]
workers = "two"
idle_timeout = "10"

[[site]]
hosts = ["a.test"]
listne = ["127.0.0.1:$P1"]
listen = ["127.0.0.1:$P1"]
default = true

[[site.route]]
path = "/api/"
proxy = { upstreams = ["127.0.0.1:9001"], policy = "round_robbin", health = { path = "/health", interval = "1" } }

[[site.route]]
path = "/old"
redirect = { to = "/new", code = 305 }

[[site.route]]
path = "/teapot"
respond = { status = 999, body = "no" }
TOML
values_expected="2:11 server.workers
3:16 server.idle_timeout
7:1 site[0].listne
13:24 site[0].route[0].proxy.upstreams[0]
13:52 site[0].route[0].proxy.policy
13:108 site[0].route[0].proxy.health.interval
17:34 site[0].route[1].redirect.code
21:22 site[0].route[2].respond.status"

# Pass 2: sites against each other (a host twice on one address, two defaults, a route
# given twice).
cat >broken-sites.toml <<TOML
[[site]]
hosts = ["a.test"]
listen = ["127.0.0.1:$P1"]
default = true
[[site.route]]
path = "/"
respond = { body = "a" }
[[site.route]]
path = "/"
respond = { body = "a again" }

[[site]]
hosts = ["a.test", "b.test"]
listen = ["127.0.0.1:$P1"]
default = true
[[site.route]]
path = "/"
respond = { body = "b" }
TOML
sites_expected="8:1 site[0].route[1].path
12:1 site[1].hosts
12:1 site[1].default"

# Pass 3: what is on disk (a missing certificate, a certificate with another's key, a root
# that does not exist).
cat >broken-files.toml <<TOML
[[site]]
hosts = ["a.test"]
listen = ["127.0.0.1:$P1"]
default = true
tls = { cert = "missing.pem", key = "missing.key" }
[[site.route]]
path = "/"
files = { root = "no-such-dir" }

[[site]]
hosts = ["b.test"]
listen = ["127.0.0.1:$P1"]
tls = { cert = "a.pem", key = "b.key" }
[[site.route]]
path = "/"
respond = { body = "b" }
TOML
files_expected="5:7 site[0].tls
6:1 site[0].route[0].files.root
13:7 site[1].tls"

# broken NAME EXPECTED : --check-config and --config refuse NAME.toml with exactly the
# errors EXPECTED ("LINE:COLUMN KEY" lines).
broken() {
  local name=$1 expected=$2 rc=0 rc2=0 got want
  "$FIBRA" serve --check-config "$name.toml" >"$name.check.out" 2>"$name.check.err" || rc=$?
  timeout 10 "$FIBRA" serve --config "$name.toml" >"$name.start.out" 2>"$name.start.err" || rc2=$?
  say ""
  say "\$ fibra serve --check-config $name.toml    (exit $rc)"
  sed 's/^/  /' "$name.check.err" | tee -a "$OUT/summary.txt"
  [ "$rc" = 1 ] || { say "FAIL: exit $rc, not 1"; fail=1; }
  [ "$rc2" = 1 ] || { say "FAIL: --config $name.toml: exit $rc2, not 1"; fail=1; }
  cmp -s "$name.check.err" "$name.start.err" ||
    { say "FAIL: --config $name.toml reports otherwise:"; sed 's/^/  /' "$name.start.err"; fail=1; }
  # "FILE:LINE:COLUMN: KEY: MESSAGE", the first line after "fibra: error: ".
  got=$(sed 's/^fibra: error: //' "$name.check.err" | awk -F': ' -v f="$name.toml" '
    { split($1, p, ":"); if (p[1] == f && p[2] ~ /^[0-9]+$/ && p[3] ~ /^[0-9]+$/) print p[2] ":" p[3], $2; else print "unexpected:", $0 }' | sort)
  want=$(echo "$expected" | sort)
  if [ "$got" = "$want" ]; then
    say "  ok: $(echo "$want" | wc -l) errors, each at its FILE:LINE:COLUMN and key, the same at start"
  else
    say "FAIL: errors differ from the expected ones (< expected, > got):"
    diff <(echo "$want") <(echo "$got") | grep '^[<>]' | sed 's/^/  /' | tee -a "$OUT/summary.txt"
    fail=1
  fi
}
broken broken-values "$values_expected"
broken broken-sites "$sites_expected"
broken broken-files "$files_expected"

# good FILE : --check-config accepts it.
good() {
  local rc=0
  "$FIBRA" serve --check-config "$1" >"$OUT/check.out" 2>&1 || rc=$?
  say ""
  say "\$ fibra serve --check-config $1    (exit $rc)"
  sed 's/^/  /' "$OUT/check.out" | tee -a "$OUT/summary.txt"
  [ "$rc" = 0 ] || { say "FAIL: a good file refused"; fail=1; }
}

# A good file: two HTTPS sites by SNI, a balanced proxy with health checks, files, a
# redirect, a fixed answer; and a plain-HTTP address.
good_file() { # BODY : good.toml, "/hello" answering BODY
  cat >good.toml.new <<TOML
[server]
workers = 1
health = "/healthz"

[[site]]
hosts = ["a.test"]
listen = ["127.0.0.1:$P1"]
default = true
tls = { cert = "a.pem", key = "a.key" }

[[site.route]]
path = "/"
files = { root = "www" }

[[site.route]]
path = "/api/"
proxy = { upstreams = ["http://127.0.0.1:9001", "http://127.0.0.1:9002"], policy = "round_robin", health = { path = "/health", interval = "1s" } }

[[site]]
hosts = ["b.test"]
listen = ["127.0.0.1:$P1"]
tls = { cert = "b.pem", key = "b.key" }

[[site.route]]
path = "/old/"
redirect = { to = "https://a.test/{path}", code = 308 }

[[site]]
listen = ["127.0.0.1:$P2"]
default = true

[[site.route]]
path = "=/hello"
respond = { body = "$1\\n" }
TOML
  mv good.toml.new good.toml
}
good_file "first"
good good.toml
"$FIBRA" serve www --port "$P2" --workers 1 --proxy /api/=http://127.0.0.1:9001/ \
  --tls-cert a.pem --tls-key a.key --health /healthz --print-config >printed.toml
good printed.toml
deployed=$(cd "$ROOT" && find deploy -name '*.toml' 2>/dev/null | sort)
if [ -z "$deployed" ]; then say ""; say "(no site file under deploy/)"; fi
for f in $deployed; do good "$ROOT/$f"; done

# SIGHUP with a broken file while serving: refused as a whole, the old answers stay.
say ""
say "SIGHUP while serving good.toml:"
spawn serve "$FIBRA" serve --config "$OUT/good.toml"
SERVE=$SPAWNED
wait_ok "http://127.0.0.1:$P2/hello"
cp good.toml good.toml.saved
cp broken-values.toml good.toml
kill -HUP "$SERVE"
for _ in $(seq 250); do grep -q 'configuration is unchanged' serve.log && break; sleep 0.02; done
answer=$(curl -s -m 2 "http://127.0.0.1:$P2/hello")
tls=$(curl -sk -m 2 --resolve "a.test:$P1:127.0.0.1" "https://a.test:$P1/")
say "  a broken file (broken-values.toml's text), SIGHUP: /hello answers \"$answer\", https://a.test/ \"$tls\""
grep -q 'configuration is unchanged' serve.log || { say "FAIL: no \"configuration is unchanged\" line"; fail=1; }
[ "$answer" = first ] && [ "$tls" = "hello from www" ] || { say "FAIL: the old configuration does not answer"; fail=1; }
logged=$(grep -c "SIGHUP: $OUT/good.toml:[0-9]*:[0-9]*: " serve.log || true)
say "  error lines logged with $OUT/good.toml:LINE:COLUMN: $logged of $(echo "$values_expected" | wc -l)"
[ "$logged" = "$(echo "$values_expected" | wc -l)" ] || { say "FAIL: not every error logged"; fail=1; }
good_file "second"
kill -HUP "$SERVE"
for _ in $(seq 250); do grep -q 'SIGHUP, reloaded' serve.log && break; sleep 0.02; done
answer=$(curl -s -m 2 "http://127.0.0.1:$P2/hello")
say "  a good file with /hello changed, SIGHUP: /hello answers \"$answer\""
[ "$answer" = second ] || { say "FAIL: the good file's SIGHUP was not applied"; fail=1; }
say "  fibra serve's output:"
sed 's/^/    /' serve.log | tee -a "$OUT/summary.txt"

say ""
say "results in $OUT"
[ "$fail" = 0 ] && say PASS || { say FAIL; exit 1; }
