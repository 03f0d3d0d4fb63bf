#!/usr/bin/env bash
# Issue 13 item 5, shown on the test bed: the relay and two ranks on two "hosts" (the bed's
# sender and receiver namespaces, docs/ddl-torch.md "Across hosts"), each rank started by its
# host's own torchrun (torch 1.13's static rendezvous: --node_rank, --master_addr), the job key
# from the environment:
#
#   sender ns   198.18.0.1: predrop-server --mode ddl (UDP 9300), torchrun node 0 (rendezvous
#                           store and gloo's process group on TCP 29500), rank 0
#   receiver ns 198.18.1.2: torchrun node, rank 1 (behind the router; RATE on the way to it)
#
#   run-ddl-torchrun.sh --out DIR [--rate 200mbit] [--stages 60] [--policy adaptive]
#                       [--fill model|zero]
#
# Needs PREDROP_BIN (predrop-server) and PREDROP_DDL_CAPI (libpredrop_ddl_capi.so), root for the
# namespaces; one bed at a time (/tmp/predrop-testbed.lock). Writes torchrun-<node>.out/.log
# (each rank's JSON summary is the SUMMARY line), rank-<r>.csv, relay files. Exit 0 when both
# ranks finished every stage with the same final accuracy; "SKIP: ..." where namespaces are not
# permitted.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=bed.sh
source "$here/bed.sh"

out="" rate=200mbit stages=60 policy=adaptive fill=model
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --stages) stages="$2"; shift 2 ;;
    --policy) policy="$2"; shift 2 ;;
    --fill) fill="$2"; shift 2 ;;
    *) echo "run-ddl-torchrun: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$out" ]] || { echo "usage: $0 --out DIR [--rate R] [--stages S]" >&2; exit 2; }
bin="${PREDROP_BIN:?set PREDROP_BIN}"
lib="$(readlink -f "${PREDROP_DDL_CAPI:?set PREDROP_DDL_CAPI}")"
py=/usr/bin/python3
mkdir -p "$out"
out="$(readlink -f "$out")"
rm -rf "$out"/*.csv "$out"/*.log "$out"/*.out "$out"/tr-*
relay_port=9300 master_port=29500

exec 9>"${BED_LOCK:-/tmp/predrop-testbed.lock}"
flock 9
bed_up "$rate" || exit 1

relay_fill=zero average=gradient discard=priority
[[ "$fill" == model ]] && relay_fill=own average=model discard=random
PYTHONPATH="$repo/python" "$py" -c "
import sys; from predrop import relay
sys.stdout.write(relay.job_config(2, listen='$BED_SND_IP:$relay_port', policy='$policy',
    missing_fill='$relay_fill', discard='$discard', stage_deadline_ms='adaptive',
    trace_csv='$out/relay-trace.csv'))" >"$out/job.toml"
# The relay prints a fresh job key; the ranks get it through the environment only.
bed_spawn snd env -u PREDROP_DDL_KEY "$bin/predrop-server" -c "$out/job.toml" \
  >"$out/relay.out" 2>"$out/relay.log"
relay_pid=$BED_LAST_PID
key=""
for _ in $(seq 1 300); do
  key=$(sed -n 's/^PREDROP_DDL_KEY=//p' "$out/relay.out" 2>/dev/null | head -1)
  [[ -n "$key" ]] && grep -q 'listening on' "$out/relay.log" && break
  kill -0 "$relay_pid" 2>/dev/null || { echo "run-ddl-torchrun: the relay exited" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$key" ]] || { echo "run-ddl-torchrun: no job key from the relay" >&2; exit 1; }

# One torchrun per host. Static rendezvous: node 0 hosts the store at --master_addr, and every
# rank's gloo process group meets there (torchrun sets RANK / WORLD_SIZE / MASTER_ADDR /
# MASTER_PORT; fmnist_job takes them when no --rank is given, init_method env://). torch 1.13's
# c10d rendezvous would hand the ranks MASTER_ADDR = node 0's host name, which the namespaces
# share and which resolves to neither of them (docs/ddl-torch.md "Across hosts").
# GLOO_SOCKET_IFNAME names the interface gloo uses for DDP's start-up broadcast. --redirects 1
# --tee 1: Debian's torch 1.13 under Python 3.11 cannot parse torchrun's default "0" (the enum
# lookup misses the zero member and start_processes fails with "'NoneType' object has no
# attribute 'get'"); redirecting stdout to torchrun's log dir and teeing it back works.
pids=()
for node in snd rcv; do
  if [[ "$node" == snd ]]; then ifname=s0 node_rank=0; else ifname=c0 node_rank=1; fi
  bed_spawn "$node" env PYTHONPATH="$repo/python" PREDROP_DDL_CAPI="$lib" PREDROP_DDL_KEY="$key" \
    GLOO_SOCKET_IFNAME="$ifname" OMP_NUM_THREADS=1 /usr/bin/torchrun --nnodes=2 \
    --nproc_per_node=1 --node_rank="$node_rank" --master_addr="$BED_SND_IP" \
    --master_port="$master_port" --max_restarts=0 --redirects 1 --tee 1 --log_dir "$out/tr-$node" \
    -m predrop.fmnist_job --backend relay \
    --relay "$BED_SND_IP:$relay_port" --stages "$stages" --average "$average" --out "$out" \
    --eval-every 20 --final-sync 1 --final-test-subset 10000 --idle-close-ms 30 \
    >"$out/torchrun-$node.out" 2>"$out/torchrun-$node.log"
  pids+=("$BED_LAST_PID")
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
bed_down
grep -ho 'SUMMARY .*' "$out"/torchrun-*.out
/usr/bin/python3 - "$out" <<'PY' || status=1
import json, sys, glob
# torchrun's tee prefixes each line with the local rank ("[default0]:").
s = [json.loads(l[l.index("SUMMARY ") + 8:]) for f in glob.glob(sys.argv[1] + "/torchrun-*.out")
     for l in open(f) if "SUMMARY " in l]
ok = (len(s) == 2 and sorted(x["rank"] for x in s) == [0, 1]
      and all(not x["error"] and x["stages"] == s[0]["stages"] for x in s)
      and s[0]["final_acc"] == s[1]["final_acc"])
print("torchrun across two namespaces:", "OK" if ok else "FAILED",
      [(x["rank"], x["stages"], x["final_acc"], x["error"]) for x in s])
sys.exit(0 if ok else 1)
PY
exit $status
