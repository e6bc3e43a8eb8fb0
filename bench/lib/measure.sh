# Sourced by the side-by-side scripts: a free loopback port, and the CPU time of a server
# started in a process group of its own.

# free_port : a TCP port on 127.0.0.1 that nothing listens on now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# cpu_ticks PGID : user+system clock ticks of every process in the group.
cpu_ticks() {
  local sum=0
  for p in $(pgrep -g "$1"); do
    read -r -a f <"/proc/$p/stat" || continue
    sum=$((sum + f[13] + f[14]))
  done
  echo "$sum"
}

# cpu_ns PID : nanoseconds of CPU the process's threads have run, from
# /proc/PID/task/*/schedstat (finer than clock ticks, for short interleaved runs).
cpu_ns() {
  local sum=0 v _ f
  for f in /proc/"$1"/task/*/schedstat; do
    read -r v _ <"$f"
    sum=$((sum + v))
  done
  echo "$sum"
}
