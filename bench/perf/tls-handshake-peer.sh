#!/usr/bin/env bash
# The peer for a WHEP join's server CPU (bench/perf/README.md §5c, "What a join costs"): OpenSSL's
# own server doing the handshake DTLS-SRTP does, over TLS 1.2 on loopback (ECDHE on P-256, an
# ECDSA P-256 certificate on both sides, the client's required), `openssl s_server` on CPU 0 and
# `openssl s_time -new` on CPU 1; the server's CPU time per handshake from /proc. Also prints the
# crypto floor (`openssl speed`: one ECDSA sign, one verify, two ECDH operations per handshake).
#
#   bench/perf/tls-handshake-peer.sh [SECONDS]     (default 10; loopback only, temp files removed)
set -euo pipefail
seconds="${1:-10}"
dir="$(mktemp -d)"
port=$((20000 + RANDOM % 20000))
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT INT TERM
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$dir/key.pem" \
  -out "$dir/cert.pem" -days 1 -subj /CN=peer 2>/dev/null
taskset -c 0 openssl s_server -accept "127.0.0.1:$port" -cert "$dir/cert.pem" -key "$dir/key.pem" \
  -Verify 1 -tls1_2 -quiet > "$dir/server.log" 2>&1 &
server_pid=$!
sleep 1
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
t0=$(cpu_ticks)
out=$(taskset -c 1 openssl s_time -connect "127.0.0.1:$port" -new -time "$seconds" -tls1_2 \
  -cert "$dir/cert.pem" -key "$dir/key.pem" -cipher ECDHE-ECDSA-AES128-GCM-SHA256 2>&1)
t1=$(cpu_ticks)
n=$(grep -o '^[0-9]* connections in' <<< "$out" | head -1 | cut -d' ' -f1)
[[ -n "$n" && "$n" -gt 0 ]] || { echo "s_time made no connection:"; echo "$out"; exit 1; }
hz=$(getconf CLK_TCK)
echo "openssl s_server: $n handshakes, server CPU per handshake $(awk -v t="$((t1 - t0))" \
  -v hz="$hz" -v n="$n" 'BEGIN { printf "%.2f", t / hz / n * 1e3 }') ms (load $(cut -d' ' -f1-3 /proc/loadavg))"
taskset -c 0 openssl speed -seconds 2 ecdsap256 ecdhp256 2>/dev/null | awk '
  /ecdsa \(nistp256\)/ { sign = $7; verify = $8 }
  /ecdh \(nistp256\)/ { ecdh = $6 }
  END { printf "crypto floor: sign %.0f us + verify %.0f us + 2 x ECDH %.0f us = %.2f ms\n",
        1e6 / sign, 1e6 / verify, 1e6 / ecdh, (1 / sign + 1 / verify + 2 / ecdh) * 1e3 }'
