# Sourced by bench/h2spec.sh and bench/h2_clients.sh: a throw-away certificate in $RUN and two
# `fibra hello` servers with one worker each, cleartext on $PLAIN and TLS on $TLS, waited for
# until both answer; their pids go into PIDS for the caller's cleanup. Needs ROOT and RUN.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" -keyout "$RUN/key.pem" \
  -out "$RUN/cert.pem" -days 2 2>/dev/null
source "$ROOT/bench/lib/measure.sh"
PLAIN=$(free_port)
TLS=$(free_port)
"$ROOT/target/release/fibra" hello --workers 1 --port "$PLAIN" >"$RUN/plain.log" 2>&1 &
PIDS+=($!)
"$ROOT/target/release/fibra" hello --workers 1 --port "$TLS" \
  --tls-cert "$RUN/cert.pem" --tls-key "$RUN/key.pem" >"$RUN/tls.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$PLAIN/plaintext" >/dev/null 2>&1 && \
    curl -skf "https://127.0.0.1:$TLS/plaintext" >/dev/null 2>&1 && break
  sleep 0.1
done
