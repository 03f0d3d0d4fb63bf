#!/usr/bin/env bash
# The congestion test bed (docs/design.md §6): a real bottleneck with a real queue on this machine,
# propagation delay per flow and direction, and packet captures on both sides of the bottleneck.
#
#   sender ns ─s0──r0─ router ns ─r1──w0─ switch ns (bridge) ─p<i>──c0─ receiver ns <i>
#   198.18.0.1        198.18.0.2 | 198.18.1.1                         198.18.1.(2+i)
#                     tbf on r0's egress (reverse path), tbf on r1's egress (THE bottleneck),
#                     predrop-delayline (NFQUEUE verdicts delayed per flow and direction)
#
# Flow i (0-based) is everything to and from receiver namespace i (`<tag>-rcv` for i = 0, as
# before, `<tag>-rcv<i>` after): its own address, so the router's iptables rules classify it into
# its own delay class. All receivers share ONE bottleneck, the tbf on r1 toward the switch; the
# switch (a bridge in its own namespace) fans out at line rate. Why a switch namespace rather than
# address aliases in one receiver namespace: every client then owns its addresses and ports as on
# its own host (predrop-client binds wildcard ports; iperf3 servers need their own port space),
# and an external peer (a browser) gets a host of its own.
#
# The tbf sits on the router's egress, not on the sender's veth: there, packets waiting in the
# qdisc would count against the sending socket's buffer and slow the sender instead of being
# dropped. The delay is applied in the router's FORWARD hook, before the tbf: a packet waits D,
# then queues. Captures on r0 and r1 (tcpdump, router namespace) see each packet before the delay
# and after the bottleneck, so per-packet queueing = (egress - ingress) - D of its class.
# Endpoint veths have TSO/GSO off so that TCP and UDP GSO leave as wire packets (one captured
# packet in = one out); the router's have GRO/GSO/TSO off so the tbf sees wire packets.
#
# Only addresses of the benchmarking range 198.18.0.0/15 (RFC 2544), only inside namespaces created
# here; every namespace, veth, iptables rule and background process is removed on exit, also on
# SIGINT/SIGTERM/HUP (the rules live in the router namespace and go with it).
#
# Use as a library (source it, then bed_up / bed_* / bed_down; bed_up installs the trap) or as a
# command:
#   bench/testbed/bed.sh selftest     builds a 3-receiver bed with delays, checks with ping and a
#                                     UDP probe that each flow sees its configured delay (±1 ms),
#                                     no loss and no reordering below the bottleneck's rate, and
#                                     the tbf's loss at 0.7x and 1.5x of it; exits 1 on a failure
#   bench/testbed/bed.sh check        are namespaces/veth/tbf/NFQUEUE permitted here?
#   bench/testbed/bed.sh cleanup      deletes namespaces left by a killed run: every pdb<pid>-*
#                                     one, or with BED_TAG set that tag's (its processes killed)
# Exit 0 with "SKIP: ..." where network namespaces or tc are not permitted.
#
# Settings (environment, read by bed_up):
#   BED_FLOWS=N             receiver namespaces (default 1)
#   BED_OWD_MS=D            one-way propagation delay of every flow, each direction (default 0)
#   BED_FLOW_OWD="d0 d1 ..."  per-flow one-way delay (overrides BED_OWD_MS for the flows listed)
#   BED_FLOW_OWD_BACK="..." per-flow delay of the receiver->sender direction (default: the same)
#   BED_TBF_BURST, BED_TBF_LATENCY  the bottleneck's bucket and queue (latency = queue in time)
#   BED_BACK_LATENCY        the reverse tbf's queue (default: BED_TBF_LATENCY)
#   BED_DELAYLINE=EXE       predrop-delayline (default $PREDROP_BIN/predrop-delayline, then the
#                           release build)

BED_TAG="${BED_TAG:-pdb$$}"
BED_SND="${BED_TAG}-snd"
BED_RTR="${BED_TAG}-rtr"
BED_SW="${BED_TAG}-sw"
BED_RCV="${BED_TAG}-rcv"
BED_SND_IP=198.18.0.1
BED_RTR_IP_S=198.18.0.2
BED_RTR_IP_R=198.18.1.1
BED_RCV_IP=198.18.1.2
# tbf as in docs/design.md §6; the queue holds `latency` worth of the rate plus the burst.
BED_TBF_BURST="${BED_TBF_BURST:-32kbit}"
BED_TBF_LATENCY="${BED_TBF_LATENCY:-100ms}"
BED_BACK_LATENCY="${BED_BACK_LATENCY:-$BED_TBF_LATENCY}"
# "No bottleneck" is a tbf far above any stream rate used here, so that a bottleneck can appear
# and go away with `tc qdisc change` alone and the qdisc is the same object throughout.
BED_OPEN_RATE="${BED_OPEN_RATE:-200mbit}"
# NFQUEUE queue numbers: flow i's forward (sender -> receiver i) class, and its backward class.
BED_QUEUE_FWD_BASE=1000
BED_QUEUE_BACK_BASE=2000
# Packets the delay line holds per class at most (kernel queue and daemon ring): 200 Mbit/s of
# 1500-byte packets for 150 ms is 2500; 16384 leaves room for 1 s at that rate.
BED_DELAY_MAXLEN="${BED_DELAY_MAXLEN:-16384}"
BED_DIR=""
BED_PIDS=()
BED_CREATED=()
BED_IS_UP=0
BED_NFLOWS=0
BED_OWD_FWD=()
BED_OWD_BACK=()
BED_DELAY_PID=""
BED_CAPTURE_PIDS=()

# Real-time priority for the delay line (and the selftest's probes), where permitted.
BED_RT=(chrt -f 50)
chrt -f 50 true 2>/dev/null || BED_RT=()

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

# Namespace name of a place: snd, rtr, sw, rcv (= rcv0), rcv<i>.
bed_ns_name() {
  case "$1" in
    snd) echo "$BED_SND" ;;
    rtr) echo "$BED_RTR" ;;
    sw) echo "$BED_SW" ;;
    rcv | rcv0) echo "$BED_RCV" ;;
    rcv[0-9]*) echo "${BED_RCV}${1#rcv}" ;;
    *) echo "bed: unknown place $1" >&2; return 2 ;;
  esac
}

# Address of receiver namespace I (flow I).
bed_rcv_ip() { echo "198.18.1.$((2 + $1))"; }

# Deletes everything this bed created, in reverse order. Safe to call twice.
bed_down() {
  local pid
  bed_capture_stop
  for pid in "${BED_PIDS[@]}"; do
    # Each background job was started as its own process group (setsid); end the group.
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${BED_PIDS[@]}"; do
    wait "$pid" 2>/dev/null
  done
  BED_PIDS=()
  bed_delay_stop
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

# Runs a command in a namespace: bed_in snd|rtr|sw|rcv|rcv<i> CMD...
bed_in() {
  local ns
  ns="$(bed_ns_name "$1")" || return 2
  shift
  ip netns exec "$ns" "$@"
}

# Starts a command in a namespace in the background as its own process group, so that bed_down
# ends it and its children. Prints nothing; the pid is in BED_LAST_PID.
bed_spawn() {
  local where ns
  where="$1"
  shift
  ns="$(bed_ns_name "$where")" || return 2
  setsid bash -c 'exec "$@"' _ ip netns exec "$ns" "$@" &
  BED_LAST_PID=$!
  BED_PIDS+=("$BED_LAST_PID")
}

bed_add_ns() {
  if ip netns list | grep -qw "$1"; then
    echo "bed: namespace $1 exists already (a killed run's? BED_TAG=$BED_TAG $0 cleanup deletes it)" >&2
    return 1
  fi
  ip netns add "$1" || return 1
  BED_CREATED+=("$1")
  BED_IS_UP=1
  ip -n "$1" link set lo up
}

# Turns off the offloads that would let one captured/queued packet stand for many.
bed_no_offload() {
  ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx-udp-segmentation off >/dev/null 2>&1 || true
}

# The delay line's executable.
bed_delayline_exe() {
  local c
  for c in "${BED_DELAYLINE:-}" "${PREDROP_BIN:+$PREDROP_BIN/predrop-delayline}" \
    "$(dirname "${BASH_SOURCE[0]}")/../../build/release/bench/delayline/predrop-delayline"; do
    [[ -n "$c" && -x "$c" ]] && { readlink -f "$c"; return 0; }
  done
  return 1
}

# Starts predrop-delayline in the router namespace for every flow with a non-zero delay and
# installs the iptables rules that send each flow's packets to its queue. Real-time priority
# (chrt -f 50) keeps other work on the machine out of the verdicts' timing.
bed_delay_start() {
  local i args=() rules=() ip
  for ((i = 0; i < BED_NFLOWS; i++)); do
    ip="$(bed_rcv_ip "$i")"
    if [[ "${BED_OWD_FWD[$i]}" != 0 ]]; then
      args+=(--queue "$((BED_QUEUE_FWD_BASE + i))=${BED_OWD_FWD[$i]}ms")
      rules+=("-i r0 -d $ip -j NFQUEUE --queue-num $((BED_QUEUE_FWD_BASE + i))")
    fi
    if [[ "${BED_OWD_BACK[$i]}" != 0 ]]; then
      args+=(--queue "$((BED_QUEUE_BACK_BASE + i))=${BED_OWD_BACK[$i]}ms")
      rules+=("-i r1 -s $ip -j NFQUEUE --queue-num $((BED_QUEUE_BACK_BASE + i))")
    fi
  done
  ((${#args[@]})) || return 0
  local exe
  exe="$(bed_delayline_exe)" || {
    echo "bed: predrop-delayline not found (build bench/delayline: cmake --build --preset release --target predrop-delayline, needs libnetfilter-queue-dev; or set BED_DELAYLINE)" >&2
    return 1
  }
  command -v iptables >/dev/null || { echo "bed: iptables missing (apt-get install -y iptables)" >&2; return 1; }
  local rt=("${BED_RT[@]}")
  ((${#rt[@]})) || bed_log "warning: no real-time priority here (chrt -f refused); delays may jitter under load"
  rm -f "$BED_DIR/delayline.ready"
  # The daemon binds its queues before the rules exist, so no packet meets an unbound queue
  # (fail-open is off: such packets would be dropped).
  setsid "${rt[@]}" ip netns exec "$BED_RTR" "$exe" "${args[@]}" --maxlen "$BED_DELAY_MAXLEN" \
    --ready "$BED_DIR/delayline.ready" --stats "$BED_DIR/delayline.stats" \
    2>"$BED_DIR/delayline.log" &
  BED_DELAY_PID=$!
  local n
  for n in $(seq 1 100); do
    [[ -e "$BED_DIR/delayline.ready" ]] && break
    kill -0 "$BED_DELAY_PID" 2>/dev/null || { cat "$BED_DIR/delayline.log" >&2; return 1; }
    sleep 0.05
  done
  [[ -e "$BED_DIR/delayline.ready" ]] || { echo "bed: predrop-delayline did not start" >&2; return 1; }
  local r
  for r in "${rules[@]}"; do
    # shellcheck disable=SC2086
    ip netns exec "$BED_RTR" iptables -t mangle -A FORWARD $r || return 1
  done
  bed_log "delay line: ${args[*]} (pid $BED_DELAY_PID${rt[0]:+, SCHED_FIFO 50})"
}

# Stops the delay line: the rules first (so nothing new is queued), then the daemon, which
# releases what it holds and writes its statistics.
bed_delay_stop() {
  [[ -n "$BED_DELAY_PID" ]] || return 0
  ip netns exec "$BED_RTR" iptables -t mangle -F FORWARD 2>/dev/null
  kill -TERM "$BED_DELAY_PID" 2>/dev/null
  wait "$BED_DELAY_PID" 2>/dev/null
  BED_DELAY_PID=""
}

# Builds the bed with the bottleneck at RATE (tc syntax, e.g. 1mbit; default: open) and
# BED_FLOWS receiver namespaces (or NFLOWS given as the second argument).
bed_up() {
  local rate="${1:-$BED_OPEN_RATE}"
  BED_NFLOWS="${2:-${BED_FLOWS:-1}}"
  bed_check_permitted
  bed_install_trap
  BED_DIR="$(mktemp -d "/tmp/${BED_TAG}.XXXXXX")"
  local i ns owd_list owd_back_list
  read -r -a owd_list <<<"${BED_FLOW_OWD:-}"
  read -r -a owd_back_list <<<"${BED_FLOW_OWD_BACK:-}"
  BED_OWD_FWD=()
  BED_OWD_BACK=()
  for ((i = 0; i < BED_NFLOWS; i++)); do
    BED_OWD_FWD+=("${owd_list[$i]:-${BED_OWD_MS:-0}}")
    BED_OWD_BACK+=("${owd_back_list[$i]:-${BED_OWD_FWD[$i]}}")
  done
  for ns in "$BED_SND" "$BED_RTR" "$BED_SW"; do bed_add_ns "$ns" || return 1; done
  for ((i = 0; i < BED_NFLOWS; i++)); do bed_add_ns "$(bed_ns_name "rcv$i")" || return 1; done
  # veth ends are created directly inside their namespaces: nothing appears in the root namespace.
  ip link add s0 netns "$BED_SND" type veth peer name r0 netns "$BED_RTR" || return 1
  ip link add r1 netns "$BED_RTR" type veth peer name w0 netns "$BED_SW" || return 1
  ip -n "$BED_SW" link add br0 type bridge || return 1
  ip -n "$BED_SW" link set w0 master br0
  ip -n "$BED_SND" addr add "$BED_SND_IP/24" dev s0
  ip -n "$BED_RTR" addr add "$BED_RTR_IP_S/24" dev r0
  ip -n "$BED_RTR" addr add "$BED_RTR_IP_R/24" dev r1
  for ((i = 0; i < BED_NFLOWS; i++)); do
    ns="$(bed_ns_name "rcv$i")"
    ip link add "p$i" netns "$BED_SW" type veth peer name c0 netns "$ns" || return 1
    ip -n "$BED_SW" link set "p$i" master br0
    ip -n "$BED_SW" link set "p$i" up
    ip -n "$ns" addr add "$(bed_rcv_ip "$i")/24" dev c0
    ip -n "$ns" link set c0 up
    ip -n "$ns" route add default via "$BED_RTR_IP_R"
    bed_no_offload "$ns" c0
  done
  ip -n "$BED_SW" link set w0 up
  ip -n "$BED_SW" link set br0 up
  ip -n "$BED_SND" link set s0 up
  ip -n "$BED_RTR" link set r0 up
  ip -n "$BED_RTR" link set r1 up
  ip -n "$BED_SND" route add default via "$BED_RTR_IP_S"
  ip netns exec "$BED_RTR" sysctl -qw net.ipv4.ip_forward=1
  bed_no_offload "$BED_SND" s0
  bed_no_offload "$BED_RTR" r0
  bed_no_offload "$BED_RTR" r1
  tc -n "$BED_RTR" qdisc add dev r1 root tbf rate "$rate" burst "$BED_TBF_BURST" \
    latency "$BED_TBF_LATENCY" || return 1
  # The reverse path (receivers -> senders) has its own tbf, open unless a case shapes it.
  tc -n "$BED_RTR" qdisc add dev r0 root tbf rate "$BED_OPEN_RATE" burst "$BED_TBF_BURST" \
    latency "$BED_BACK_LATENCY" || return 1
  BED_RATE="$rate"
  bed_delay_start || return 1
  # Make sure routing works before anyone relies on it.
  if command -v ping >/dev/null 2>&1; then
    for ((i = 0; i < BED_NFLOWS; i++)); do
      ip netns exec "$BED_SND" ping -c1 -W3 -q "$(bed_rcv_ip "$i")" >/dev/null 2>&1 ||
        { echo "bed: no route sender -> receiver $i" >&2; return 1; }
    done
  fi
  bed_log "up ($BED_TAG): $BED_NFLOWS receiver(s), bottleneck tbf rate $rate burst $BED_TBF_BURST latency $BED_TBF_LATENCY, one-way delay ms fwd [${BED_OWD_FWD[*]}] back [${BED_OWD_BACK[*]}]"
}

# Changes the bottleneck rate in place (the queue keeps its packets).
bed_rate() {
  [[ "$1" == open ]] && set -- "$BED_OPEN_RATE"
  tc -n "$BED_RTR" qdisc change dev r1 root tbf rate "$1" burst "$BED_TBF_BURST" \
    latency "$BED_TBF_LATENCY" && BED_RATE="$1"
  bed_log "bottleneck rate -> $1"
}

# Changes the reverse path's rate (receivers -> senders) in place.
bed_rate_back() {
  [[ "$1" == open ]] && set -- "$BED_OPEN_RATE"
  tc -n "$BED_RTR" qdisc change dev r0 root tbf rate "$1" burst "$BED_TBF_BURST" \
    latency "$BED_BACK_LATENCY"
  bed_log "reverse path rate -> $1"
}

# Packets the bottleneck has forwarded so far.
bed_sent_packets() {
  tc -s -n "$BED_RTR" qdisc show dev r1 | awk '/Sent/ {print $4; exit}'
}

# Packets the bottleneck has dropped so far.
bed_dropped_packets() {
  tc -s -n "$BED_RTR" qdisc show dev r1 | awk '/dropped/ {gsub(",", "", $7); print $7; exit}'
}

# Captures on both router ports into DIR/r0.pcap and DIR/r1.pcap (headers only: 128 bytes
# hold Ethernet, IP, UDP + RTP or TCP with options; nanosecond stamps). The analysis
# (bed_metrics.py) matches each packet in to its copy out.
bed_capture_start() {
  local dir="$1" dev
  command -v tcpdump >/dev/null || { echo "bed: tcpdump missing (apt-get install -y tcpdump)" >&2; return 1; }
  mkdir -p "$dir"
  for dev in r0 r1; do
    setsid ip netns exec "$BED_RTR" tcpdump -i "$dev" -n -s 128 -B 16384 \
      --time-stamp-precision=nano -w "$dir/$dev.pcap" ip 2>"$dir/$dev.tcpdump.log" &
    BED_CAPTURE_PIDS+=("$!")
  done
  # tcpdump prints "listening on" once its socket is open.
  local n
  for n in $(seq 1 100); do
    grep -q listening "$dir/r0.tcpdump.log" 2>/dev/null && grep -q listening "$dir/r1.tcpdump.log" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "bed: tcpdump did not start (see $dir/r*.tcpdump.log)" >&2
  return 1
}

# Stops the captures (SIGTERM: tcpdump flushes its file and prints its drop counts).
bed_capture_stop() {
  local pid
  for pid in "${BED_CAPTURE_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${BED_CAPTURE_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  BED_CAPTURE_PIDS=()
}

# Starts the cross-traffic sink (iperf3 server) in receiver namespace I (default 0).
bed_cross_sink() {
  local i="${1:-0}"
  command -v iperf3 >/dev/null || { echo "bed: iperf3 missing" >&2; return 1; }
  bed_spawn "rcv$i" iperf3 -s -B "$(bed_rcv_ip "$i")" -p 5201 --logfile "$BED_DIR/iperf3-server-$i.log"
  sleep 0.3
}

# Cross traffic: UDP at BW (e.g. 600k) for SECONDS from the sender namespace through the
# bottleneck to receiver 0, in the background. Needs bed_cross_sink first.
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

# Runs one schedule event now (see bed_schedule).
bed_event() {
  local what="$1" a="${2:-}" b="${3:-}"
  case "$what" in
    rate) bed_rate "$a" 2>/dev/null ;;
    back) bed_rate_back "$a" 2>/dev/null ;;
    cross)
      ip netns exec "$BED_SND" iperf3 -c "$BED_RCV_IP" -p 5201 -u -b "$a" -l 1200 -t "$b" \
        --logfile "$BED_DIR/iperf3-client.$EPOCHSECONDS.log" &
      ;;
  esac
}

# Runs a schedule of events relative to t0, in the background:
#   bed_schedule "20 rate 1mbit" "40 rate open" "15 cross 700k 10" "35 back 800kbit"
# Events: "T rate RATE|open" changes the bottleneck; "T back RATE|open" the reverse path;
# "T cross BW SECONDS" starts a UDP burst. t0 is the stream's start seen at the router
# (bed_wait_stream_start) unless BED_T0_NOW=1 (t0 = now, for cases that start flows themselves).
# Each event is logged to $BED_DIR/events as "T_planned T_actual_since_t0 what".
bed_schedule() {
  (
    trap - EXIT INT TERM HUP
    if [[ "${BED_T0_NOW:-0}" == 1 ]]; then
      [[ -s "$BED_DIR/t0" ]] || echo "$EPOCHREALTIME" >"$BED_DIR/t0"
    else
      bed_wait_stream_start 20 60 || exit 1
    fi
    local ev t what a b t0
    t0="$(cat "$BED_DIR/t0")"
    for ev in "$@"; do
      read -r t what a b <<<"$ev"
      bed_sleep_until "$t"
      bed_event "$what" "$a" "$b"
      awk -v t="$t" -v a="$t0" -v n="$EPOCHREALTIME" -v w="$what $a $b" \
        'BEGIN { printf "%s %.3f %s\n", t, n - a, w }' >>"$BED_DIR/events"
      bed_log "event at +${t}s: $what $a $b"
    done
    wait
  ) &
  BED_PIDS+=("$!")
}

# The delay check of `selftest`: one-way delay, loss and reordering of a paced UDP probe from the
# sender to receiver I at KBPS (bed_probe.py; kernel receive stamps), and ping's RTT. Prints one
# table row and returns 1 when a check fails: any loss or reordering, the probe's median one-way
# delay or ping's minimum RTT more than 1 ms off. The tails (p95..max) are printed, not checked:
# they follow the machine's real-time wake-up lateness, which selftest prints beside them
# (bench/README.md "Propagation delay").
bed_check_flow() {
  local i="$1" kbps="$2" seconds="$3" want_fwd want_back here res ok=0
  here="$(dirname "${BASH_SOURCE[0]}")"
  want_fwd="${BED_OWD_FWD[$i]}"
  want_back="${BED_OWD_BACK[$i]}"
  local ip port=$((7000 + i))
  ip="$(bed_rcv_ip "$i")"
  "${BED_RT[@]}" ip netns exec "$(bed_ns_name "rcv$i")" python3 "$here/bed_probe.py" recv --port "$port" \
    --seconds "$((seconds + 3))" >"$BED_DIR/probe-$i-$kbps.json" &
  local rpid=$!
  sleep 0.3
  # The probe's sender runs at real-time priority too: its own scheduling delays would show as
  # bursts into the bottleneck (measured: p99 +15 ms at 0.9x of 4 Mbit/s on a loaded machine).
  "${BED_RT[@]}" ip netns exec "$BED_SND" python3 "$here/bed_probe.py" send --dst "$ip" --port "$port" \
    --kbps "$kbps" --seconds "$seconds" >/dev/null
  wait "$rpid"
  local ping_out
  ping_out="$("${BED_RT[@]}" ip netns exec "$BED_SND" ping -n -q -c 20 -i 0.1 "$ip" 2>/dev/null | awk -F'[/ =]+' '/^rtt/ {print $6, $7, $8}')"
  res="$(python3 - "$BED_DIR/probe-$i-$kbps.json" "$want_fwd" "$want_back" "$kbps" "$i" "$ping_out" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
fwd, back, kbps, flow = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
ping = [float(x) for x in sys.argv[6].split()] if sys.argv[6].strip() else [float("nan")] * 3
want_rtt = fwd + back
ok = (p["received"] > 0 and p["lost"] == 0 and p["reordered"] == 0
      and abs(p["owd_p50_ms"] - fwd) <= 1.0 and abs(ping[0] - want_rtt) <= 1.0)
print(f"| {flow} | {fwd:g} / {back:g} | {kbps} | {p['sent']} | {p['lost']} | {p['reordered']} | "
      f"{p['owd_min_ms']:.2f} / {p['owd_p50_ms']:.2f} / {p['owd_p95_ms']:.2f} / {p['owd_p99_ms']:.2f} / {p['owd_max_ms']:.2f} | "
      f"{ping[0]:.2f} / {ping[1]:.2f} / {ping[2]:.2f} | {'ok' if ok else 'FAIL'} |")
EOF
)"
  echo "$res"
  [[ "$res" == *"| ok |" ]]
}

# Calibration: per-flow delay (ping, UDP probe below the bottleneck's rate: no loss, no
# reordering, delay within 1 ms) on a 4 Mbit/s bottleneck with a 300 ms queue (RFC 8867's
# defaults), a 20 Mbit/s probe through the open bottleneck (the delay line's own rate limit), and
# the tbf's loss at 0.7x and 1.5x of a 1 Mbit/s bottleneck (iperf3, as docs/design.md §6).
bed_selftest() {
  local here
  here="$(dirname "${BASH_SOURCE[0]}")"
  command -v iperf3 >/dev/null || bed_skip "iperf3 is not installed (apt-get install -y iperf3)"
  command -v ping >/dev/null || bed_skip "ping is not installed (apt-get install -y iputils-ping)"
  local fail=0
  BED_TBF_BURST=3000b BED_TBF_LATENCY=300ms BED_FLOW_OWD="0 10 50 150" BED_FLOW_OWD_BACK="0 10 50 25" \
    bed_up 4mbit 4 || return 1
  echo "| flow | one-way delay ms fwd / back | probe kbit/s | packets | lost | reordered | one-way delay min / p50 / p95 / p99 / max ms | ping RTT min / avg / max ms | check |"
  echo "|---|---|---|---|---|---|---|---|---|"
  local i
  for i in 0 1 2 3; do
    bed_check_flow "$i" 2000 10 || fail=1
    bed_check_flow "$i" 3600 10 || fail=1
  done
  bed_rate open
  bed_check_flow 3 20000 5 || fail=1
  bed_check_flow 2 20000 5 || fail=1
  # The kernel's own count of packets its queues dropped (a full queue, fail-open off) or that
  # could not reach the daemon: /proc/net/netfilter/nfnetlink_queue, fields 6 and 7.
  local kdrop
  kdrop="$(ip netns exec "$BED_RTR" awk '{ d += $6 + $7 } END { print d + 0 }' /proc/net/netfilter/nfnetlink_queue)"
  bed_delay_stop
  echo
  echo "delay line statistics (per queue; refused = dropped for a full ring; late = batches released > 1 ms after their deadline):"
  cat "$BED_DIR/delayline.stats"
  echo "kernel queue drops: $kdrop"
  ((kdrop == 0)) || fail=1
  awk 'NR > 1 && $4 != 0 { bad = 1 } END { exit bad }' "$BED_DIR/delayline.stats" || fail=1
  # What the platform allows: a real-time 1 ms sleeper's wake-up lateness over 5 s. Spikes here
  # are the kernel's/VM's, and the delay line cannot be more punctual than this.
  "${BED_RT[@]}" python3 "$here/bed_probe.py" wakeup --seconds 5
  bed_down
  bed_up 1mbit 1 || return 1
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
  if ((fail)); then
    echo "selftest FAILED"
    return 1
  fi
  echo "selftest done: every check ok"
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
      # default pdb<pid> ones. Processes still inside (a server, a client, the delay line) are
      # killed first, or the namespace's veth and addresses would live on with them. The
      # iptables rules live in the router namespace and go with it.
      pattern='^pdb[0-9]+-(snd|rtr|sw|rcv[0-9]*|probe)$'
      [[ "$BED_TAG" != "pdb$$" ]] && pattern="^${BED_TAG}-(snd|rtr|sw|rcv[0-9]*|probe)\$"
      for ns in $(ip netns list | awk '{print $1}' | grep -E "$pattern"); do
        echo "deleting $ns"
        ip netns pids "$ns" | xargs -r kill -9
        ip netns del "$ns"
      done
      ;;
    *)
      echo "usage: $0 selftest|check|cleanup   (or source it: bed_up RATE [FLOWS]; ...; bed_down)" >&2
      exit 2
      ;;
  esac
fi
