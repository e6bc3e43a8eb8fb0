# A throw-away PostgreSQL cluster with TFB's schema and data, on CPU 1, for the TechEmpower
# scripts. Needs PGBIN and ROOT set, and free_port (bench/lib/measure.sh). pg_run_dir makes
# RUN (a temp dir PostgreSQL can write) and the exit trap that cleans up after the script;
# pg_cluster_start then sets PGPORT, PGPID and URL and defines psql_. tfb_path TEST: the
# path a TechEmpower test asks for.

# Runs a command as the postgres user when we are root (initdb refuses root).
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# pg_run_dir: RUN, and an exit trap that kills the process groups listed in PIDS (the
# script's servers, each started with setsid; PIDS starts empty), stops the cluster and
# removes RUN.
pg_run_dir() {
  RUN="$(mktemp -d)"
  chmod 777 "$RUN"
  PIDS=()
  trap pg_run_cleanup EXIT
}

pg_run_cleanup() {
  for p in "${PIDS[@]}"; do kill -- "-$p" 2>/dev/null || true; done
  pg_cluster_stop
  rm -rf "$RUN"
}

pg_cluster_stop() {
  if [ -f "$RUN/data/postmaster.pid" ]; then
    as_pg "$PGBIN/pg_ctl" -D "$RUN/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
}

pg_cluster_start() {
  PGPORT=$(free_port)
  as_pg "$PGBIN/initdb" -D "$RUN/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C --no-sync >/dev/null
  as_pg taskset -c 1 "$PGBIN/pg_ctl" -D "$RUN/data" -l "$RUN/pg.log" -w start -o \
    "-p $PGPORT -k $RUN -c listen_addresses=127.0.0.1 -c max_connections=200 \
     -c shared_buffers=256MB -c synchronous_commit=off" >/dev/null
  psql_() { as_pg "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$RUN" -p "$PGPORT" "$@"; }
  psql_ -U postgres -d postgres -c "CREATE USER benchmarkdbuser WITH PASSWORD 'benchmarkdbpass'"
  psql_ -U postgres -d postgres -c "CREATE DATABASE hello_world OWNER benchmarkdbuser"
  cp "$ROOT/crates/fibra-postgres/examples/techempower/schema.sql" "$RUN/schema.sql"
  chmod 644 "$RUN/schema.sql"
  psql_ -U benchmarkdbuser -d hello_world -f "$RUN/schema.sql" >/dev/null
  PGPID=$(head -1 "$RUN/data/postmaster.pid")
  URL="postgres://benchmarkdbuser:benchmarkdbpass@127.0.0.1:$PGPORT/hello_world"
}

# tfb_path TEST: the path of a TechEmpower test type (`queries` and `updates` ask for 20 rows).
tfb_path() {
  case $1 in
    db) echo /db ;; queries) echo "/queries?queries=20" ;; fortunes) echo /fortunes ;;
    updates) echo "/updates?queries=20" ;; json) echo /json ;; plaintext) echo /plaintext ;;
    *) echo "unknown TechEmpower test: $1" >&2; return 2 ;;
  esac
}
