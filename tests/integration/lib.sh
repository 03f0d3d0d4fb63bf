# shellcheck shell=bash
# Shared by the interop scripts (source it after `cd` into the work dir, with $server set to the
# predrop-server binary): a free loopback port, and the server started, awaited and stopped.

# Prints a TCP port free on 127.0.0.1 now (the kernel picks it).
pick_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_server LOG ARGS...: runs "$server" ARGS in the background with its log in LOG, sets
# server_pid, and returns once it serves RTSP. Returns 1 with the log printed if it exits first or
# is not serving within 5 s (the log line is awaited, never a fixed sleep).
start_server() {
  local log="$1"
  shift
  "${server:?set server to the predrop-server binary}" "$@" 2>"$log" &
  server_pid=$!
  for _ in $(seq 50); do
    grep -q "serving rtsp" "$log" 2>/dev/null && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not start"
  cat "$log"
  stop_server
  return 1
}

# Stops the server start_server started (no-op when there is none).
stop_server() {
  [[ -n "${server_pid:-}" ]] || return 0
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}
