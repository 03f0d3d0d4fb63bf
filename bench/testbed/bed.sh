#!/usr/bin/env bash
# The congestion test bed (docs/design.md §6): a real bottleneck with a real queue on this machine.
#
#   sender ns  --veth-->  router ns  --veth (tbf on its egress)-->  receiver ns
#   198.18.0.1            198.18.0.2 | 198.18.1.1                    198.18.1.2
#
# The tbf sits on the router's egress toward the receiver, not on the sender's own veth: there,
# packets waiting in the qdisc would count against the sending socket's buffer and slow the sender
# down instead of being dropped, which is not what a real network does (docs/design.md §6).
# Only addresses of the benchmarking range 198.18.0.0/15 (RFC 2544) are used, only inside the
# namespaces created here, and every namespace and veth is deleted on exit, also on SIGINT/SIGTERM.
#
# Use as a library (source it, then bed_up / bed_* / bed_down; bed_up installs the trap) or as a
# command:
#   bench/testbed/bed.sh selftest     builds the bed, checks loss and delay of UDP at 0.7x and 1.5x
#                                     the bottleneck with iperf3, and tears it down
#   bench/testbed/bed.sh cleanup      deletes namespaces left by a killed run: every pdb<pid>-*
#                                     one, or with BED_TAG set that tag's (its processes killed)
# Exit 0 with "SKIP: ..." where network namespaces or tc are not permitted.

BED_TAG="${BED_TAG:-pdb$$}"
BED_SND="${BED_TAG}-snd"
BED_RTR="${BED_TAG}-rtr"
BED_RCV="${BED_TAG}-rcv"
BED_SND_IP=198.18.0.1
BED_RTR_IP_S=198.18.0.2
BED_RTR_IP_R=198.18.1.1
BED_RCV_IP=198.18.1.2
# tbf as in docs/design.md §6; the queue holds `latency` worth of the rate plus the burst.
BED_TBF_BURST="${BED_TBF_BURST:-32kbit}"
BED_TBF_LATENCY="${BED_TBF_LATENCY:-100ms}"
# "No bottleneck" is a tbf far above any stream rate used here, so that a bottleneck can appear
# and go away with `tc qdisc change` alone and the qdisc is the same object throughout.
BED_OPEN_RATE="${BED_OPEN_RATE:-200mbit}"
BED_DIR=""
BED_PIDS=()
BED_CREATED=()
BED_IS_UP=0

bed_log() { printf '[bed %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

bed_skip() {
  echo "SKIP: $*"
  exit 0
}

# Checks that we may create namespaces, veth pairs and tbf; skips (exit 0) if not.
bed_check_permitted() {
  command -v ip >/dev/null 2>&1 || bed_skip "iproute2 (ip) is not installed"
  command -v tc >/dev/null 2>&1 || bed_skip "tc (iproute2) is not installed"
  local probe="${BED_TAG}-probe"
  if ! ip netns add "$probe" 2>/dev/null; then
    bed_skip "network namespaces are not permitted here (ip netns add failed; needs root/CAP_SYS_ADMIN)"
  fi
  local ok=1
  ip -n "$probe" link add pa type veth peer name pb 2>/dev/null || ok=0
  if ((ok)); then
    ip -n "$probe" link set pa up 2>/dev/null
    tc -n "$probe" qdisc add dev pa root tbf rate 1mbit burst 32kbit latency 100ms 2>/dev/null || ok=2
  fi
  ip netns del "$probe" 2>/dev/null
  ((ok == 0)) && bed_skip "veth pairs cannot be created in a namespace"
  ((ok == 2)) && bed_skip "tc tbf is not available (sch_tbf)"
  return 0
}

# Deletes everything this bed created, in reverse order. Safe to call twice.
bed_down() {
  local pid
  for pid in "${BED_PIDS[@]}"; do
    # Each background job was started as its own process group (setsid); end the group.
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${BED_PIDS[@]}"; do
    wait "$pid" 2>/dev/null
  done
  BED_PIDS=()
  if ((BED_IS_UP)); then
    # veth ends go away with their namespace, but delete them explicitly first so nothing is
    # left if a namespace delete fails (e.g. a process still holds it).
    ip -n "$BED_SND" link del s0 2>/dev/null
    ip -n "$BED_RTR" link del r1 2>/dev/null
    local i
    for ((i = ${#BED_CREATED[@]} - 1; i >= 0; i--)); do
      ip netns pids "${BED_CREATED[$i]}" 2>/dev/null | xargs -r kill -TERM 2>/dev/null
      ip netns del "${BED_CREATED[$i]}" 2>/dev/null
    done
    BED_CREATED=()
    BED_IS_UP=0
    bed_log "torn down ($BED_TAG)"
  fi
}

bed_on_signal() {
  bed_log "interrupted: cleaning up"
  bed_down
  exit 130
}

bed_install_trap() {
  trap bed_down EXIT
  trap bed_on_signal INT TERM HUP
}

# Runs a command in a namespace: bed_in snd|rtr|rcv CMD...
bed_in() {
  local ns
  case "$1" in
    snd) ns="$BED_SND" ;;
    rtr) ns="$BED_RTR" ;;
    rcv) ns="$BED_RCV" ;;
    *) echo "bed_in: unknown namespace $1" >&2; return 2 ;;
  esac
  shift
  ip netns exec "$ns" "$@"
}

# Starts a command in a namespace in the background as its own process group, so that bed_down
# ends it and its children. Prints nothing; the pid is in BED_LAST_PID.
bed_spawn() {
  local where="$1"
  shift
  setsid bash -c 'exec "$@"' _ ip netns exec "$(bed_ns_name "$where")" "$@" &
  BED_LAST_PID=$!
  BED_PIDS+=("$BED_LAST_PID")
}

bed_ns_name() {
  case "$1" in
    snd) echo "$BED_SND" ;;
    rtr) echo "$BED_RTR" ;;
    rcv) echo "$BED_RCV" ;;
  esac
}

# Builds the bed with the bottleneck at RATE (tc syntax, e.g. 1mbit; default: open).
bed_up() {
  local rate="${1:-$BED_OPEN_RATE}"
  bed_check_permitted
  bed_install_trap
  BED_DIR="$(mktemp -d "/tmp/${BED_TAG}.XXXXXX")"
  local ns
  for ns in "$BED_SND" "$BED_RTR" "$BED_RCV"; do
    if ip netns list | grep -qw "$ns"; then
      echo "bed: namespace $ns exists already (a killed run's? BED_TAG=$BED_TAG $0 cleanup deletes it)" >&2
      return 1
    fi
    ip netns add "$ns" || return 1
    BED_CREATED+=("$ns")
    BED_IS_UP=1
    ip -n "$ns" link set lo up
  done
  # veth ends are created directly inside their namespaces: nothing appears in the root namespace.
  ip link add s0 netns "$BED_SND" type veth peer name r0 netns "$BED_RTR" || return 1
  ip link add r1 netns "$BED_RTR" type veth peer name c0 netns "$BED_RCV" || return 1
  ip -n "$BED_SND" addr add "$BED_SND_IP/24" dev s0
  ip -n "$BED_RTR" addr add "$BED_RTR_IP_S/24" dev r0
  ip -n "$BED_RTR" addr add "$BED_RTR_IP_R/24" dev r1
  ip -n "$BED_RCV" addr add "$BED_RCV_IP/24" dev c0
  local dev
  for dev in s0; do ip -n "$BED_SND" link set "$dev" up; done
  for dev in r0 r1; do ip -n "$BED_RTR" link set "$dev" up; done
  ip -n "$BED_RCV" link set c0 up
  ip -n "$BED_SND" route add default via "$BED_RTR_IP_S"
  ip -n "$BED_RCV" route add default via "$BED_RTR_IP_R"
  ip netns exec "$BED_RTR" sysctl -qw net.ipv4.ip_forward=1
  # No offloads: tbf must see the packets as they are on the wire (GRO would merge them).
  ip netns exec "$BED_RTR" ethtool -K r0 gro off >/dev/null 2>&1 || true
  ip netns exec "$BED_RTR" ethtool -K r1 gso off tso off >/dev/null 2>&1 || true
  tc -n "$BED_RTR" qdisc add dev r1 root tbf rate "$rate" burst "$BED_TBF_BURST" \
    latency "$BED_TBF_LATENCY" || return 1
  BED_RATE="$rate"
  # Make sure routing works before anyone relies on it (ping is not always installed).
  if command -v ping >/dev/null 2>&1; then
    ip netns exec "$BED_SND" ping -c1 -W2 -q "$BED_RCV_IP" >/dev/null 2>&1 ||
      { echo "bed: no route sender -> receiver" >&2; return 1; }
  fi
  bed_log "up ($BED_TAG): bottleneck tbf rate $rate burst $BED_TBF_BURST latency $BED_TBF_LATENCY"
}

# Changes the bottleneck rate in place (the queue keeps its packets).
bed_rate() {
  tc -n "$BED_RTR" qdisc change dev r1 root tbf rate "$1" burst "$BED_TBF_BURST" \
    latency "$BED_TBF_LATENCY" && BED_RATE="$1"
  bed_log "bottleneck rate -> $1"
}

# Packets the bottleneck has forwarded so far.
bed_sent_packets() {
  tc -s -n "$BED_RTR" qdisc show dev r1 | awk '/Sent/ {print $4; exit}'
}

# Packets the bottleneck has dropped so far.
bed_dropped_packets() {
  tc -s -n "$BED_RTR" qdisc show dev r1 | awk '/dropped/ {gsub(",", "", $7); print $7; exit}'
}

# Starts the cross-traffic sink (iperf3 server) in the receiver namespace.
bed_cross_sink() {
  command -v iperf3 >/dev/null || { echo "bed: iperf3 missing" >&2; return 1; }
  bed_spawn rcv iperf3 -s -B "$BED_RCV_IP" -p 5201 --logfile "$BED_DIR/iperf3-server.log"
  sleep 0.3
}

# Cross traffic: UDP at BW (e.g. 600k) for SECONDS from the sender namespace through the
# bottleneck, in the background. Needs bed_cross_sink first.
bed_cross_burst() {
  local bw="$1" seconds="$2"
  bed_spawn snd iperf3 -c "$BED_RCV_IP" -p 5201 -u -b "$bw" -l 1200 -t "$seconds" \
    --logfile "$BED_DIR/iperf3-client.$EPOCHSECONDS.log"
  bed_log "cross traffic on: UDP $bw for ${seconds}s"
}

# Waits until the stream has started: the bottleneck has forwarded more than THRESHOLD packets
# (the RTSP exchange is about 10), then writes the wall time (EPOCHREALTIME) to $BED_DIR/t0.
# Resolution about one video frame (33 ms). Gives up after TIMEOUT seconds (default 30).
bed_wait_stream_start() {
  local threshold="${1:-20}" timeout="${2:-30}" base n deadline
  base="$(bed_sent_packets)"
  deadline=$((EPOCHSECONDS + timeout))
  while ((EPOCHSECONDS < deadline)); do
    n="$(bed_sent_packets)"
    if ((n - base > threshold)); then
      echo "$EPOCHREALTIME" >"$BED_DIR/t0"
      return 0
    fi
    sleep 0.02
  done
  echo "bed: the stream did not start within ${timeout}s" >&2
  return 1
}

# Sleeps until t0 + SECONDS (fractional).
bed_sleep_until() {
  local t0 now
  t0="$(cat "$BED_DIR/t0")"
  now="$EPOCHREALTIME"
  local d
  d="$(awk -v a="$t0" -v b="$1" -v n="$now" 'BEGIN { d = a + b - n; if (d < 0) d = 0; printf "%.3f", d }')"
  sleep "$d"
}

# Runs a schedule of events relative to stream start, in the background:
#   bed_schedule "20 rate 1mbit" "40 rate open" "15 cross 700k 10"
# Events: "T rate RATE|open" changes the bottleneck; "T cross BW SECONDS" starts a burst.
# Each event is logged to $BED_DIR/events as "T_planned T_actual_since_t0 what".
bed_schedule() {
  (
    trap - EXIT INT TERM HUP
    bed_wait_stream_start 20 60 || exit 1
    local ev t what a b t0
    t0="$(cat "$BED_DIR/t0")"
    for ev in "$@"; do
      read -r t what a b <<<"$ev"
      bed_sleep_until "$t"
      case "$what" in
        rate)
          [[ "$a" == open ]] && a="$BED_OPEN_RATE"
          tc -n "$BED_RTR" qdisc change dev r1 root tbf rate "$a" burst "$BED_TBF_BURST" \
            latency "$BED_TBF_LATENCY"
          ;;
        cross)
          ip netns exec "$BED_SND" iperf3 -c "$BED_RCV_IP" -p 5201 -u -b "$a" -l 1200 -t "$b" \
            --logfile "$BED_DIR/iperf3-client.$t.log" &
          ;;
      esac
      awk -v t="$t" -v a="$t0" -v n="$EPOCHREALTIME" -v w="$what $a $b" \
        'BEGIN { printf "%s %.3f %s\n", t, n - a, w }' >>"$BED_DIR/events"
      bed_log "event at +${t}s: $what $a $b"
    done
    wait
  ) &
  BED_PIDS+=("$!")
}

# Calibration: UDP at 0.7x and 1.5x of a 1 Mbit/s bottleneck, as docs/design.md §6 reports for 20 Mbit/s.
bed_selftest() {
  command -v iperf3 >/dev/null || bed_skip "iperf3 is not installed (apt-get install -y iperf3)"
  bed_up 1mbit || return 1
  bed_cross_sink || return 1
  local bw out
  for bw in 700k 1500k; do
    out="$(ip netns exec "$BED_SND" iperf3 -c "$BED_RCV_IP" -p 5201 -u -b "$bw" -l 1200 -t 5 -J 2>/dev/null)"
    # Loss and jitter as iperf3 reports them at the receiving end.
    echo "$out" | awk -v bw="$bw" -F'[:,]' '
      /"lost_percent"/ && !l { l = $2 + 0 }
      /"jitter_ms"/ && !j { j = $2 + 0 }
      END { printf "UDP %s into tbf 1mbit: loss %.1f %%, jitter %.2f ms\n", bw, l, j }'
  done
  bed_down
  echo "selftest done"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -u
  case "${1:-}" in
    selftest) bed_selftest ;;
    check)
      bed_check_permitted
      echo "namespaces, veth and tbf are permitted"
      ;;
    cleanup)
      # Namespaces left by a run that was killed with SIGKILL (no trap could run).
      # With BED_TAG given (a named run such as BED_TAG=cap1), that tag's namespaces; else the
      # default pdb<pid> ones. Processes still inside (a server, a client) are killed first, or
      # the namespace's veth and addresses would live on with them.
      pattern='^pdb[0-9]+-(snd|rtr|rcv|probe)$'
      [[ "$BED_TAG" != "pdb$$" ]] && pattern="^${BED_TAG}-(snd|rtr|rcv|probe)\$"
      for ns in $(ip netns list | awk '{print $1}' | grep -E "$pattern"); do
        echo "deleting $ns"
        ip netns pids "$ns" | xargs -r kill -9
        ip netns del "$ns"
      done
      ;;
    *)
      echo "usage: $0 selftest|check|cleanup   (or source it: bed_up RATE; ...; bed_down)" >&2
      exit 2
      ;;
  esac
fi
