#!/usr/bin/env bash
# One PyTorch DDP run on the test bed (docs/ddl-torch.md "On the bed"): 2 ranks of the
# Fashion-MNIST CNN (python/predrop/fmnist_job.py), rank 0 in the sender namespace, rank 1 in the
# receiver namespace behind the bottleneck (tbf on the router's egress toward the receiver), so
# that both backends push the same bytes through it per stage:
#   gloo:  DDP's all-reduce between the two ranks (ring of 2: one gradient's worth toward rank 1)
#   relay: the relay (predrop-server --mode ddl) next to rank 0 in the sender namespace; its
#          aggregate toward rank 1 crosses the bottleneck (one gradient's worth, minus R)
# gloo also does the rendezvous and DDP's start-up broadcast in both cases.
#
#   run-ddl-torch.sh --out DIR --rate RATE --backend gloo|relay [--policy fixed|history|adaptive]
#                    [--fixed-rate R] [--fill zero|own|feedback|model] [--stages S] [--target-acc A]
#                    [--deadline MS|adaptive]   (the relay's stage deadline, default 400 ms;
#                    adaptive: docs/ddl-torch.md "An adaptive deadline that sees late ranks")
#                    [--pacing paced|burst]     ([ddl].pacing, default paced: each path at its
#                    own rate, docs/ddl-torch.md "Pacing at the path's rate")
#                    [--rmax R]                 ([control].rmax, default 0.5)
#                    [--owd MS]                 (one-way propagation delay of rank 1's path,
#                                                each direction: the bed's delay line)
#                    [--profile steady|bursts|tcpshort|straggler|cpustraggler] [--seed N]
#                    [--profile-args "..."]     (a tail-latency regime, below)
#                    [--world N]                (ranks, default 2; below)
#                    [--relays K]               (relay processes the gradient is sharded
#                                                over, default 1; below)
#
# Four ranks and more (--world N > 2; issue 26 item 2): rank 0 and the relay stay in the sender
# namespace, rank i (1..N-1) is in receiver namespace i-1 behind ITS OWN bottleneck: a tbf at
# RATE on the switch port toward it (p<i-1>), the router's r1 left open (BED_OPEN_RATE). So
# every rank's downlink is shaped alike whether it comes from the relay (through the router) or
# from a neighbour of gloo's ring (rank to rank through the switch, which the one tbf on r1 would
# not see). The delay line (--owd) sits in the router: ring hops between receiver namespaces
# bypass it, so use --owd 0 to compare gloo and the relay at N > 2. Every rank runs with one
# torch thread (OMP_NUM_THREADS=1, torch.set_num_threads(1)). bursts: one burst source per rank
# behind a bottleneck, toward that rank, seed+i; tcpshort: toward rank 1 only; straggler: rank
# 1's port tbf.
#
# Sharded relays (--relays K > 1; issue 26 item 6): K relay processes in the sender namespace
# on ports 9300.. with one job key (the first relay's, handed to the others through
# PREDROP_DDL_KEY); each rank splits its flat gradient into K contiguous slices, slice k through
# relay k with its own controllers (RelayState(relay=[...]), docs/ddl-torch.md "Sharded
# relays"). Relay k's files are relay<k>.log/.out/-trace.csv for k > 0.
#
# Tail-latency regimes (issue 26 item 1; bench/README.md "Tail-latency regimes"), started once
# both ranks are spawned and ended with the bed; the schedule depends on --seed only, so every arm
# of a comparison meets the same one (tail_traffic.py, tcp_short.py; the event log is
# profile.log):
#   steady     nothing but the bottleneck (the default)
#   bursts     on/off UDP microbursts from the sender namespace toward rank 1's namespace through
#              the bottleneck: 40 Mbit/s for 50-200 ms every 0.5-2 s (tail_traffic.py bursts;
#              --profile-args "--rate-mbit 60 --on-ms 50,100" changes them)
#   tcpshort   10 on/off users of short TCP NewReno flows (30-50 KB) toward rank 1's namespace,
#              mean OFF 1 s (tcp_short.py; RFC 8867 §5.7's are 10 s)
#   straggler  rank 1's path slowed now and then: the bottleneck's tbf changed to 1/10 of RATE
#              for 200-600 ms every 1-3 s (tail_traffic.py straggler --low; RATE must be NNmbit
#              or NNkbit)
#   cpustraggler  rank 1's CPU slowed now and then: its process group held to 1/10 of a core
#              (cgroup-v1 CFS quota) for 200-600 ms every 1-3 s (tail_traffic.py cpu; its path
#              as in steady). Needs a writable /sys/fs/cgroup/cpu (root, cgroup v1 cpu).
#
# --fill feedback: the relay fills missing chunks with zeros and each rank keeps what it did not
# get back for its next stage (error feedback, RelayState(error_feedback=True)). --fill model:
# the ranks average their parameters through the relay instead of their gradients, keeping their
# own where a chunk is missing (RelayState(average="model"), relay fill own).
#
# Needs PREDROP_BIN (predrop-server) and PREDROP_DDL_CAPI (libpredrop_ddl_capi.so). Writes
# rank-<r>.csv, rank-<r>.out/.log (the last line of .out is the rank's JSON summary), relay
# files, qdisc.txt. Exit 0 with "SKIP: ..." where namespaces are not permitted.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=bed.sh
source "$here/bed.sh"

out="" rate="" backend="" policy="history" fixed_rate=0 stages=300 target=0.7 fill=zero
deadline=400 pacing=paced rmax=0.5 owd=0 profile=steady seed=1 profile_args="" world=2 relays=1
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --policy) policy="$2"; shift 2 ;;
    --fixed-rate) fixed_rate="$2"; shift 2 ;;
    --stages) stages="$2"; shift 2 ;;
    --fill) fill="$2"; shift 2 ;;
    --target-acc) target="$2"; shift 2 ;;
    --deadline) deadline="$2"; shift 2 ;;
    --pacing) pacing="$2"; shift 2 ;;
    --rmax) rmax="$2"; shift 2 ;;
    --owd) owd="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --profile-args) profile_args="$2"; shift 2 ;;
    --world) world="$2"; shift 2 ;;
    --relays) relays="$2"; shift 2 ;;
    *) echo "run-ddl-torch: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" && -n "$rate" && ( "$backend" == gloo || "$backend" == relay ) ]] || {
  echo "usage: $0 --out DIR --rate RATE --backend gloo|relay [--policy P] [--stages S]" >&2
  exit 2
}
((world >= 2 && relays >= 1)) || { echo "run-ddl-torch: --world >= 2, --relays >= 1" >&2; exit 2; }
case "$profile" in
  steady | bursts | tcpshort | straggler | cpustraggler) ;;
  *) echo "run-ddl-torch: unknown profile $profile" >&2; exit 2 ;;
esac
bin="${PREDROP_BIN:?set PREDROP_BIN}"
lib="$(readlink -f "${PREDROP_DDL_CAPI:?set PREDROP_DDL_CAPI}")"
py=/usr/bin/python3
mkdir -p "$out"
out="$(readlink -f "$out")"
rm -f "$out"/*.csv "$out"/*.log "$out"/*.out "$out"/params-*.pt "$out"/profile.* "$out"/job*.toml
relay_port=9300
gloo_port=29500

exec 9>"${BED_LOCK:-/tmp/predrop-testbed.lock}"
flock 9
if ((world == 2)); then
  BED_OWD_MS="$owd" bed_up "$rate" || exit 1
else
  # One bottleneck per rank: a tbf on each switch port, the router's r1 open.
  BED_OWD_MS="$owd" bed_up "$BED_OPEN_RATE" "$((world - 1))" || exit 1
  for ((i = 0; i < world - 1; i++)); do
    tc -n "$BED_SW" qdisc add dev "p$i" root tbf rate "$rate" burst "$BED_TBF_BURST" \
      latency "$BED_TBF_LATENCY" || exit 1
  done
fi

key=""
relay_fill=$fill feedback=0 average=gradient discard=priority
if [[ "$fill" == feedback ]]; then relay_fill=zero feedback=1; fi
# Parameters have no "importance" (the priority rule would leave out the same small-valued chunks
# at every stage): model averaging discards a random subset.
if [[ "$fill" == model ]]; then relay_fill=own average=model discard=random; fi
# Starts relay K (port relay_port + K; files relay.* for K = 0, relay<K>.* after) with the job
# key in $key (empty: the relay makes one) and waits until it listens; sets key.
start_relay() {
  local k="$1" tag="" rpid kenv=(-u PREDROP_DDL_KEY)
  ((k > 0)) && tag="$k"
  PYTHONPATH="$repo/python" "$py" -c "
import sys; from predrop import relay
sys.stdout.write(relay.job_config($world, listen='$BED_SND_IP:$((relay_port + k))',
    policy='$policy', fixed_rate=$fixed_rate, rmax=max($rmax, $fixed_rate),
    missing_fill='$relay_fill', trace_csv='$out/relay$tag-trace.csv', discard='$discard',
    pacing='$pacing',
    stage_deadline_ms='$deadline' if '$deadline' == 'adaptive' else int('$deadline')))" \
    >"$out/job$tag.toml"
  [[ -n "$key" ]] && kenv=("PREDROP_DDL_KEY=$key")
  bed_spawn snd env "${kenv[@]}" "$bin/predrop-server" -c "$out/job$tag.toml" \
    >"$out/relay$tag.out" 2>"$out/relay$tag.log"
  rpid=$BED_LAST_PID
  for _ in $(seq 1 300); do
    if [[ -z "$key" ]]; then
      key=$(sed -n 's/^PREDROP_DDL_KEY=//p' "$out/relay$tag.out" 2>/dev/null | head -1)
    fi
    [[ -n "$key" ]] && grep -q 'listening on' "$out/relay$tag.log" && return 0
    kill -0 "$rpid" 2>/dev/null || { echo "run-ddl-torch: relay $k exited" >&2; return 1; }
    sleep 0.1
  done
  echo "run-ddl-torch: relay $k did not start" >&2
  return 1
}
relay_list=""
if [[ "$backend" == relay ]]; then
  for ((k = 0; k < relays; k++)); do
    start_relay "$k" || exit 1
    relay_list+="${relay_list:+,}$BED_SND_IP:$((relay_port + k))"
  done
  [[ -n "$key" ]] || { echo "run-ddl-torch: no job key from the relay" >&2; exit 1; }
fi

common=(--world "$world" --backend "$backend" --gloo-addr "$BED_SND_IP" --gloo-port "$gloo_port"
        --relay "${relay_list:-$BED_SND_IP:$relay_port}" --stages "$stages" --target-acc "$target"
        --out "$out" --eval-every 25 --feedback "$feedback" --average "$average")
# More fmnist_job options for both ranks, e.g. "--final-sync 1 --final-test-subset 10000".
read -r -a extra <<<"${DDL_TORCH_RANK_ARGS:-}"
common+=("${extra[@]}")
pids=()
for ((r = 0; r < world; r++)); do
  if ((r == 0)); then where=snd ifname=s0; else where="rcv$((r - 1))" ifname=c0; fi
  bed_spawn "$where" env PYTHONPATH="$repo/python" PREDROP_DDL_CAPI="$lib" PREDROP_DDL_KEY="$key" \
    GLOO_SOCKET_IFNAME="$ifname" OMP_NUM_THREADS=1 "$py" -m predrop.fmnist_job --rank "$r" \
    "${common[@]}" >"$out/rank-$r.out" 2>"$out/rank-$r.log"
  pids+=("$BED_LAST_PID")
done
read -r -a pargs <<<"$profile_args"
tail_py="$here/tail_traffic.py"
case "$profile" in
  bursts)
    for ((i = 0; i < world - 1; i++)); do
      log="$out/profile.log"
      ((i > 0)) && log="$out/profile-$i.log"
      bed_spawn "rcv$i" "$py" "$tail_py" sink --listen "$(bed_rcv_ip "$i")" --port 5301
      bed_spawn snd "$py" "$tail_py" bursts --dst "$(bed_rcv_ip "$i")" --port 5301 \
        --seed "$((seed + i))" --log "$log" "${pargs[@]}"
    done
    ;;
  tcpshort)
    bed_spawn rcv "$py" "$here/tcp_short.py" sink --listen "$BED_RCV_IP" --port 5302 --seconds 3600
    sleep 0.3
    bed_spawn snd "$py" "$here/tcp_short.py" source --connect "$BED_RCV_IP" --port 5302 \
      --seconds 3600 --flows 10 --mean-off-s 1 --seed "$seed" "${pargs[@]}" >"$out/profile.log"
    ;;
  straggler)
    low=$(awk -v r="$rate" 'BEGIN { n = r + 0; u = substr(r, length(n "") + 1); printf "%g%s", n / 10, u }')
    where=rtr dev=r1
    ((world > 2)) && where=sw dev=p0
    bed_spawn "$where" "$py" "$tail_py" straggler --dev "$dev" --normal "$rate" --low "$low" \
      --burst "$BED_TBF_BURST" --latency "$BED_TBF_LATENCY" --seed "$seed" \
      --log "$out/profile.log" "${pargs[@]}"
    ;;
  cpustraggler)
    # Not through bed_spawn: `ip netns exec` remounts /sys, hiding the cgroup tree. Its own
    # process group, so bed_down's TERM reaches it (and it lifts the quota).
    setsid "$py" "$tail_py" cpu --pid "${pids[1]}" --seed "$seed" --log "$out/profile.log" \
      "${pargs[@]}" &
    BED_PIDS+=("$!")
    ;;
esac
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
echo "profile $profile seed $seed owd ${owd}ms rate $rate args ${profile_args:-none} world $world relays $relays" >"$out/profile.txt"
tc -s -n "$BED_RTR" qdisc show dev r1 >"$out/qdisc.txt" 2>&1
for ((i = 0; i < world - 1 && world > 2; i++)); do
  tc -s -n "$BED_SW" qdisc show dev "p$i" >>"$out/qdisc.txt" 2>&1
done
bed_down
grep -h '^SUMMARY' "$out"/rank-*.out
exit $status
