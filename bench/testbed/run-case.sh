#!/usr/bin/env bash
# One run of one case (RFC 8867 §5.x or one of the bed's own scenarios) on the bed: N flows, each
# with its own receiver namespace and delay class, through ONE bottleneck; the capacity schedule;
# captures at the router for the metrics (bed_metrics.py). Writes into OUT:
#   case.env          the resolved parameters (scale, queue, burst, delays, flows)
#   flows.tsv         one row per flow: index kind start stop owd_fwd owd_back rcv_ip extra
#   events            the schedule as executed (planned s, actual s since t0, what)
#   starts            each flow segment's actual start (flow segment seconds-since-t0)
#   r0.pcap, r1.pcap  the router's captures (sender side, receiver side; headers only)
#   client-<i>[-<seg>].csv, client-<i>[-<seg>].log   predrop media flows (per-block R, PSNR ...)
#   trace.csv, server.log (+ trace-back-<i>.csv, server-back-<i>.log for reverse media flows)
#   iperf-<i>.json, tcpshort-<i>.log, udp-<i>.log   cross traffic
#   delayline.stats, qdisc.txt, complete (written last: the run finished; run-suite.sh skips it)
#
#   run-case.sh --case FILE --out DIR [--policy FILE] [--clip FILE] [--media predrop|ext:SCRIPT]
#               [--seed N]
#
# A case file (cases/*.sh) is bash that sets:
#   CASE_DURATION=SECONDS     CASE_RATE=KBPS (bottleneck at t0)   CASE_QUEUE_MS=300
#   CASE_BURST=3000b          CASE_OWD=50 (one-way ms, each direction, every flow by default)
#   CASE_BACK_RATE=KBPS|open  the reverse path (receivers -> senders) at t0 (default open)
#   CASE_SCALE=1|rfc          rfc: every rate in the case is RFC 8867's, multiplied by
#                             BED_SCALE (clip rate on the wire / 1.5 Mbit/s; default 0.82)
#   CASE_EVENTS=("T rate KBPS|open" "T back KBPS|open" ...)   the capacity schedule
#   CASE_FLOWS=("KIND START STOP [owd=MS] [back=MS] [rate=KBPS] [pause=AT:SECONDS]" ...)
#     media       media from the sender side to receiver i (predrop: server in snd, client in
#                 rcv<i>; external: see below)
#     media-back  media from receiver namespace i to the sender side (a second server in rcv<i>,
#                 its client in snd): RFC 8867 §5.3's reverse flow
#     tcp         one long TCP NewReno flow (iperf3 -C reno, 1000-byte MSS) snd -> rcv<i>
#     tcpshort    RFC 8867 §5.7's short TCP flows (tcp_short.py: 10 connections, files of
#                 30-50 KB, OFF periods exponential with mean 10 s, two ON at the start)
#     udp         unresponsive UDP at rate=KBPS (iperf3) snd -> rcv<i>
#   pause=AT:SECONDS: the media flow pauses at AT for SECONDS: a predrop client pauses its RTSP
#   session (predrop-client --pause; the server keeps the session and its controller's state,
#   as RFC 8867 §5.8 means); an external pair (--media ext:) is stopped and started again.
#
# --media ext:SCRIPT runs every media flow as an external sender/receiver pair instead of predrop
# (docs/design.md §6 "External media flows"): at the flow's start
#   SCRIPT receiver --flow I --listen RCV_IP --peer SND_IP --out DIR --seconds N   (in rcv<i>)
#   SCRIPT sender   --flow I --listen SND_IP --peer RCV_IP --out DIR --seconds N   (in snd)
# and both are ended (SIGTERM to their process group) at the flow's stop. The captures and the
# metrics treat them exactly like predrop's flows.
#
# Needs PREDROP_BIN (predrop-server, predrop-client, predrop-delayline). Exit 0 with "SKIP: ..."
# where namespaces are not permitted.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=bed.sh
source "$here/bed.sh"

case_file="" out="" policy="" clip="" media=predrop seed=1
while (($#)); do
  case "$1" in
    --case) case_file="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --policy) policy="$2"; shift 2 ;;
    --clip) clip="$2"; shift 2 ;;
    --media) media="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    *) echo "run-case: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$case_file" && -n "$out" ]] || {
  echo "usage: $0 --case FILE --out DIR [--policy FILE] [--clip FILE] [--media predrop|ext:SCRIPT] [--seed N]" >&2
  exit 2
}
[[ -r "$case_file" ]] || { echo "run-case: no case file $case_file" >&2; exit 2; }
# CLIENT_ARGS: extra predrop-client arguments for every media flow (e.g. "--alert-ms 80"). The
# client sent interim alerts at 80 ms by default from a2d93eb to the commit after f8f83b8
# (2026-12-07); before and after, off.
client_extra=()
[[ -n "${CLIENT_ARGS:-}" ]] && read -ra client_extra <<<"$CLIENT_ARGS"
CASE_DURATION=0 CASE_RATE=open CASE_QUEUE_MS=300 CASE_BURST=3000b CASE_OWD=50 CASE_SCALE=rfc
CASE_BACK_QUEUE_MS="" CASE_BACK_RATE=open CASE_TITLE=""
CASE_EVENTS=() CASE_FLOWS=()
# shellcheck source=/dev/null
source "$case_file"
((CASE_DURATION > 0 && ${#CASE_FLOWS[@]} > 0)) || { echo "run-case: $case_file sets no duration or flows" >&2; exit 2; }
scale=1
[[ "$CASE_SCALE" == rfc ]] && scale="${BED_SCALE:-0.82}"
# RATE in kbit/s (or open) -> tc syntax, scaled.
scaled() {
  [[ "$1" == open ]] && { echo open; return; }
  awk -v r="$1" -v s="$scale" 'BEGIN { printf "%dkbit", r * s + 0.5 }'
}

bin="${PREDROP_BIN:?set PREDROP_BIN to the directory holding predrop-server, predrop-client and predrop-delayline}"
ext=""
if [[ "$media" == ext:* ]]; then
  ext="${media#ext:}"
  [[ -x "$ext" ]] || { echo "run-case: external media script $ext is not executable" >&2; exit 2; }
  # The external sender plays the same clip as predrop would (webrtc-peer/ext-media.sh reads it).
  [[ -n "$clip" ]] && export PREDROP_CLIP="$(readlink -f "$clip")"
elif [[ "$media" == predrop ]]; then
  [[ -x "$bin/predrop-server" && -x "$bin/predrop-client" ]] || { echo "run-case: no binaries in $bin" >&2; exit 1; }
  [[ -r "$policy" ]] || { echo "run-case: no policy file '$policy'" >&2; exit 2; }
  [[ -r "$clip" ]] || { echo "run-case: no clip '$clip'" >&2; exit 2; }
  clip="$(readlink -f "$clip")"
else
  echo "run-case: --media is predrop or ext:SCRIPT" >&2
  exit 2
fi
mkdir -p "$out"
out="$(readlink -f "$out")"
rm -f "$out"/{complete,events,starts,flows.tsv,case.env,*.csv,*.log,*.json,*.pcap}

# --- flows ----------------------------------------------------------------------------------------
# Parsed into arrays indexed by flow: kind, start, stop, delays, rate, pause.
F_KIND=() F_START=() F_STOP=() F_OWD=() F_BACK=() F_RATE=() F_PAUSE=()
for spec in "${CASE_FLOWS[@]}"; do
  read -r -a w <<<"$spec"
  k="${w[0]}" s="${w[1]}" e="${w[2]}" o="$CASE_OWD" b="" r="" p=""
  for kv in "${w[@]:3}"; do
    case "$kv" in
      owd=*) o="${kv#owd=}" ;;
      back=*) b="${kv#back=}" ;;
      rate=*) r="${kv#rate=}" ;;
      pause=*) p="${kv#pause=}" ;;
      *) echo "run-case: unknown flow option $kv in '$spec'" >&2; exit 2 ;;
    esac
  done
  case "$k" in media | media-back | tcp | tcpshort | udp) ;; *) echo "run-case: unknown flow kind $k" >&2; exit 2 ;; esac
  F_KIND+=("$k") F_START+=("$s") F_STOP+=("$e") F_OWD+=("$o") F_BACK+=("${b:-$o}") F_RATE+=("$r") F_PAUSE+=("$p")
done
nflows=${#F_KIND[@]}
{
  printf 'case\t%s\ntitle\t%s\nduration\t%s\nscale\t%s\nqueue_ms\t%s\nburst\t%s\nrate\t%s\nback_rate\t%s\nmedia\t%s\npolicy\t%s\nclip\t%s\nseed\t%s\n' \
    "$(basename "$case_file" .sh)" "$CASE_TITLE" "$CASE_DURATION" "$scale" "$CASE_QUEUE_MS" "$CASE_BURST" \
    "$(scaled "$CASE_RATE")" "$(scaled "$CASE_BACK_RATE")" "$media" "$(basename "${policy:-none}" .toml)" "$(basename "${clip:-none}")" "$seed"
} >"$out/case.env"
for ((i = 0; i < nflows; i++)); do
  printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "${F_KIND[$i]}" "${F_START[$i]}" "${F_STOP[$i]}" \
    "${F_OWD[$i]}" "${F_BACK[$i]}" "$(bed_rcv_ip "$i")" "${F_RATE[$i]:--}"
done >"$out/flows.tsv"

# --- server config (predrop media) ----------------------------------------------------------------
write_config() {
  cat <<EOF
# Written by bench/testbed/run-case.sh; the policy part comes from $(basename "$policy").
[server]
mode = "stream"
metrics_listen = ""
max_sessions = 16
log_level = "${SERVER_LOG_LEVEL:-warn}"
session_timeout_s = 20
rtsp_idle_timeout_s = 3600

[server.streams]
clip = "$clip"

[blocks]
duration_ms = ${BLOCK_MS:-1000}
pacing = "paced"

EOF
  cat "$policy"
}

# The flows' processes run slightly above normal priority (builds run at nice 15 here, bed.sh's
# delay line at real-time priority): pacing and receive timing are what the bed measures.
NICE=(nice -n "${BED_FLOW_NICE:--5}")

# One bed at a time on this machine: runs measure timing, two at once would disturb each other.
exec 9>/tmp/predrop-testbed.lock
flock 9

owd_f="" owd_b=""
for ((i = 0; i < nflows; i++)); do owd_f+="${F_OWD[$i]} " owd_b+="${F_BACK[$i]} "; done
BED_TBF_BURST="$CASE_BURST" BED_TBF_LATENCY="${CASE_QUEUE_MS}ms" \
  BED_BACK_LATENCY="${CASE_BACK_QUEUE_MS:-$CASE_QUEUE_MS}ms" BED_FLOW_OWD="$owd_f" BED_FLOW_OWD_BACK="$owd_b" \
  bed_up "$(scaled "$CASE_RATE" | sed 's/^open$/200mbit/')" "$nflows" || exit 1
# bed_rate / bed_schedule read these after bed_up.
BED_TBF_BURST="$CASE_BURST" BED_TBF_LATENCY="${CASE_QUEUE_MS}ms" BED_BACK_LATENCY="${CASE_BACK_QUEUE_MS:-$CASE_QUEUE_MS}ms"
[[ "$CASE_BACK_RATE" != open ]] && bed_rate_back "$(scaled "$CASE_BACK_RATE")"

port=8554
wait_port() {  # NS IP PORT PID LOG
  local _n
  for _n in $(seq 1 600); do
    bed_in "$1" bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null && return 0
    kill -0 "$4" 2>/dev/null || { echo "run-case: the server exited; see $5" >&2; return 1; }
    sleep 0.1
  done
  echo "run-case: the server did not listen within 60 s; see $5" >&2
  return 1
}
max_stages=$((CASE_DURATION + 5))
if [[ -z "$ext" ]]; then
  write_config >"$out/server.toml"
  need_fwd=0
  for ((i = 0; i < nflows; i++)); do [[ "${F_KIND[$i]}" == media ]] && need_fwd=1; done
  if ((need_fwd)); then
    bed_spawn snd "${NICE[@]}" "$bin/predrop-server" -c "$out/server.toml" --listen "$BED_SND_IP:$port" \
      --trace-csv "$out/trace.csv" --max-stages "$max_stages" >"$out/server.log" 2>&1
    wait_port snd "$BED_SND_IP" "$port" "$BED_LAST_PID" "$out/server.log" || exit 1
  fi
  for ((i = 0; i < nflows; i++)); do
    [[ "${F_KIND[$i]}" == media-back ]] || continue
    bed_spawn "rcv$i" "${NICE[@]}" "$bin/predrop-server" -c "$out/server.toml" --listen "$(bed_rcv_ip "$i"):$port" \
      --trace-csv "$out/trace-back-$i.csv" --max-stages "$max_stages" >"$out/server-back-$i.log" 2>&1
    wait_port "rcv$i" "$(bed_rcv_ip "$i")" "$port" "$BED_LAST_PID" "$out/server-back-$i.log" || exit 1
  done
fi
# Sinks of the cross traffic, before t0.
for ((i = 0; i < nflows; i++)); do
  case "${F_KIND[$i]}" in
    tcp | udp) bed_spawn "rcv$i" iperf3 -s -B "$(bed_rcv_ip "$i")" -p 5201 --logfile "$out/iperf-server-$i.log" ;;
    tcpshort) bed_spawn "rcv$i" python3 "$here/tcp_short.py" sink --listen "$(bed_rcv_ip "$i")" --port 5301 \
      --seconds "$((CASE_DURATION + 10))" >"$out/tcpshort-sink-$i.log" 2>&1 ;;
  esac
done
sleep 0.5

bed_capture_start "$out" || exit 1
# t0: now. Events and flow starts count from here.
echo "$EPOCHREALTIME" >"$BED_DIR/t0"
cp "$BED_DIR/t0" "$out/t0"
sched=()
for ev in "${CASE_EVENTS[@]}"; do
  read -r t what a rest <<<"$ev"
  case "$what" in rate | back) a="$(scaled "$a")" ;; esac
  sched+=("$t $what $a ${rest:-}")
done
BED_T0_NOW=1 bed_schedule "${sched[@]}"

# Runs flow I's segment SEG from START to STOP (seconds since t0), in the background.
# PAUSE ("AT,SECONDS", AT from the client's PLAY) makes a predrop media flow's client pause its
# session for SECONDS (RTSP PAUSE, then PLAY: the server keeps the session and its controller).
run_segment() {
  local i="$1" seg="$2" start="$3" stop="$4" pause="${5:-}" tag="$1"
  ((seg > 0)) && tag="$i-$seg"
  local secs=$((stop - start)) rip sip="$BED_SND_IP" blocks
  local pause_args=()
  blocks=$secs
  if [[ -n "$pause" ]]; then
    pause_args=(--pause "$pause")
    blocks=$((secs - ${pause#*,}))
  fi
  rip="$(bed_rcv_ip "$i")"
  (
    trap - EXIT INT TERM HUP
    bed_sleep_until "$start"
    awk -v f="$i" -v s="$seg" -v a="$(cat "$BED_DIR/t0")" -v n="$EPOCHREALTIME" \
      'BEGIN { printf "%s %s %.3f\n", f, s, n - a }' >>"$out/starts"
    local pids=()
    case "${F_KIND[$i]}" in
      media)
        if [[ -n "$ext" ]]; then
          setsid ip netns exec "$(bed_ns_name "rcv$i")" "$ext" receiver --flow "$i" --listen "$rip" --peer "$sip" \
            --out "$out" --seconds "$secs" >"$out/ext-receiver-$tag.log" 2>&1 &
          pids+=("$!")
          setsid ip netns exec "$BED_SND" "$ext" sender --flow "$i" --listen "$sip" --peer "$rip" \
            --out "$out" --seconds "$secs" >"$out/ext-sender-$tag.log" 2>&1 &
          pids+=("$!")
        else
          setsid ip netns exec "$(bed_ns_name "rcv$i")" "${NICE[@]}" "$bin/predrop-client" "rtsp://$sip:$port/clip" \
            --reference "$clip" -n "$blocks" "${pause_args[@]}" "${client_extra[@]}" --csv "$out/client-$tag.csv" --log-level warn \
            >"$out/client-$tag.log" 2>&1 &
          pids+=("$!")
        fi
        ;;
      media-back)
        if [[ -n "$ext" ]]; then
          setsid ip netns exec "$BED_SND" "$ext" receiver --flow "$i" --listen "$sip" --peer "$rip" \
            --out "$out" --seconds "$secs" >"$out/ext-receiver-$tag.log" 2>&1 &
          pids+=("$!")
          setsid ip netns exec "$(bed_ns_name "rcv$i")" "$ext" sender --flow "$i" --listen "$rip" --peer "$sip" \
            --out "$out" --seconds "$secs" >"$out/ext-sender-$tag.log" 2>&1 &
          pids+=("$!")
        else
          setsid ip netns exec "$BED_SND" "${NICE[@]}" "$bin/predrop-client" "rtsp://$rip:$port/clip" \
            --reference "$clip" -n "$secs" --csv "$out/client-$tag.csv" --log-level warn \
            >"$out/client-$tag.log" 2>&1 &
          pids+=("$!")
        fi
        ;;
      tcp)
        setsid ip netns exec "$BED_SND" "${NICE[@]}" iperf3 -c "$rip" -p 5201 -C reno -M 1000 -t "$secs" -i 1 -J \
          --logfile "$out/iperf-$tag.json" &
        pids+=("$!")
        ;;
      udp)
        setsid ip netns exec "$BED_SND" iperf3 -c "$rip" -p 5201 -u -b "$(scaled "${F_RATE[$i]}" | sed 's/kbit$/k/')" \
          -l 1200 -t "$secs" --logfile "$out/udp-$tag.log" &
        pids+=("$!")
        ;;
      tcpshort)
        setsid ip netns exec "$BED_SND" "${NICE[@]}" python3 "$here/tcp_short.py" source --connect "$rip" --port 5301 \
          --seconds "$secs" --seed "$seed" >"$out/tcpshort-$tag.log" 2>&1 &
        pids+=("$!")
        ;;
    esac
    # Media clients end by themselves after their blocks (a little after STOP: set-up time);
    # everything else, and any client still running 15 s after STOP, is ended.
    local p
    if [[ "${F_KIND[$i]}" == media* && -z "$ext" ]]; then
      local give_up=$((EPOCHSECONDS + stop - start + 20))
      while kill -0 "${pids[0]}" 2>/dev/null && ((EPOCHSECONDS < give_up)); do sleep 0.5; done
    else
      bed_sleep_until "$stop"
    fi
    for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
    # A predrop client's own exit status says whether its session worked; cross traffic and
    # external peers are ended by us, so their status (SIGTERM) says nothing.
    local rc=0
    wait "${pids[0]}" 2>/dev/null || rc=$?
    for p in "${pids[@]:1}"; do wait "$p" 2>/dev/null; done
    [[ "${F_KIND[$i]}" == media* && -z "$ext" ]] && exit "$rc"
    exit 0
  ) &
  SEG_PIDS+=("$!")
}

SEG_PIDS=()
for ((i = 0; i < nflows; i++)); do
  if [[ -n "${F_PAUSE[$i]}" ]]; then
    at="${F_PAUSE[$i]%%:*}" len="${F_PAUSE[$i]##*:}"
    if [[ "${F_KIND[$i]}" == media && -z "$ext" ]]; then
      # One session that pauses and resumes (RFC 8867 §5.8); the resume is marked as the flow's
      # second segment in `starts` (the metrics take each interval from its packets).
      run_segment "$i" 0 "${F_START[$i]}" "${F_STOP[$i]}" "$((at - F_START[i])),$len"
      (
        trap - EXIT INT TERM HUP
        bed_sleep_until "$((at + len))"
        awk -v f="$i" -v a="$(cat "$BED_DIR/t0")" -v n="$EPOCHREALTIME" \
          'BEGIN { printf "%s 1 %.3f\n", f, n - a }' >>"$out/starts"
      ) &
      SEG_PIDS+=("$!")
    else
      run_segment "$i" 0 "${F_START[$i]}" "$at"
      run_segment "$i" 1 "$((at + len))" "${F_STOP[$i]}"
    fi
  else
    run_segment "$i" 0 "${F_START[$i]}" "${F_STOP[$i]}"
  fi
done
# On a signal, bed_down ends these too (the flows' own processes die with their namespaces).
BED_PIDS+=("${SEG_PIDS[@]}")
bed_log "case $(basename "$case_file" .sh): $nflows flow(s), ${CASE_DURATION}s"
status=0
for pid in "${SEG_PIDS[@]}"; do wait "$pid" || status=1; done
# Every flow has ended; give the last packets time to cross the delay line and the queue.
bed_sleep_until "$((CASE_DURATION + 1))"
sleep 1
bed_capture_stop
cp "$BED_DIR/events" "$out/events" 2>/dev/null || : >"$out/events"
tc -s -n "$BED_RTR" qdisc show >"$out/qdisc.txt" 2>&1
bed_delay_stop
cp "$BED_DIR/delayline.stats" "$out/delayline.stats" 2>/dev/null
bed_down
# Complete when every predrop client wrote every block it was asked for.
if [[ -z "$ext" ]]; then
  for f in "$out"/client-*.csv; do
    [[ -e "$f" ]] || continue
    n=$(($(wc -l <"$f") - 1))
    ((n > 0)) || { echo "run-case: $f has no blocks" >&2; status=1; }
  done
fi
((status == 0)) && date -u +%FT%TZ >"$out/complete"
exit $status
