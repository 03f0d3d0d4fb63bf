#!/usr/bin/python3
"""Fashion-MNIST with PyTorch DDP, gradients averaged through the predrop relay.

One command runs the relay (predrop-server --mode ddl, a fresh job key) and N ranks as separate
processes (torch.multiprocessing, gloo for the rendezvous and DDP's start-up broadcast only),
prints rank 0's stages (R, L, loss, probe loss, P, test accuracy) and writes one CSV of every
rank's stages plus the relay's own per-(stage, rank) trace.

    /usr/bin/python3 python/examples/train_fmnist.py --workers 2 --stages 300 --policy history
    /usr/bin/python3 python/examples/train_fmnist.py --backend gloo     # DDP's all-reduce instead

The library and the server are found in build/release (else the newest build/*), or through
PREDROP_DDL_CAPI and PREDROP_SERVER (docs/ddl-torch.md).
"""

import argparse
import csv
import glob
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--stages", type=int, default=300)
    ap.add_argument("--backend", choices=["relay", "gloo"], default="relay")
    ap.add_argument("--policy", choices=["basic", "history", "adaptive", "capacity", "fixed"],
                    default="history", help="the relay's per-peer controller ([control].policy)")
    ap.add_argument("--rate", type=float, default=0.0, help="fixed_rate of --policy fixed")
    ap.add_argument("--rmax", type=float, default=0.3)
    # 200 ms rather than the adaptive rule: with two ranks L is near 0, so D sits at its 25 ms
    # floor, and on a shared CPU a rank that is preempted longer misses the stage.
    ap.add_argument("--deadline", default="200", help="stage deadline: adaptive or ms")
    ap.add_argument("--fill", choices=["zero", "own", "feedback", "model"], default="zero",
                    help="missing chunks: zeros, the rank's own gradient, zeros with error "
                         "feedback (the rank's undelivered gradient goes into its next stage), or "
                         "model: average the parameters instead, keeping own where missing")
    ap.add_argument("--idle-close-ms", type=int, default=0,
                    help="close a stage this long after its last chunk came (the rest was lost "
                         "on the way) instead of at the deadline; 0: off")
    ap.add_argument("--final-sync", action="store_true",
                    help="average the ranks' models exactly (over gloo) after the last stage")
    ap.add_argument("--final-test-subset", type=int, default=0,
                    help="test images for the final accuracy (default: --test-subset)")
    ap.add_argument("--timeline", action="store_true",
                    help="with --backend gloo: time the all-reduce in a comm hook (the relay's "
                         "timeline columns are always written)")
    ap.add_argument("--pacing", choices=["paced", "burst"], default="paced",
                    help="the relay's [ddl].pacing")
    ap.add_argument("--chunk-bytes", type=int, default=1024,
                    help="the relay's [ddl].chunk_bytes (values per packet x 4)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train-subset", type=int, default=12000)
    ap.add_argument("--test-subset", type=int, default=2000)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--target-acc", type=float, default=None,
                    help="also report the wall time to this test accuracy")
    ap.add_argument("--relay", default=None,
                    help="use a running relay host:port (key in PREDROP_DDL_KEY) instead")
    ap.add_argument("--out", default="build/ddl-torch")
    ap.add_argument("--server", default=None, help="predrop-server (default: build dirs)")
    ap.add_argument("--lib", default=None, help="libpredrop_ddl_capi.so (default: build dirs)")
    a = ap.parse_args()

    import torch.multiprocessing as mp
    from predrop import fmnist_job, relay

    os.makedirs(a.out, exist_ok=True)
    for f in glob.glob(os.path.join(a.out, "rank-*.csv")):
        os.remove(f)
    r = None
    cfg = dict(backend=a.backend, stages=a.stages, batch=a.batch, lr=a.lr, seed=a.seed,
               train_subset=a.train_subset, test_subset=a.test_subset, eval_every=a.eval_every,
               out=a.out, gloo_port=relay.free_port(), library=a.lib, target_acc=a.target_acc,
               feedback=a.fill == "feedback",
               average="model" if a.fill == "model" else "gradient",
               idle_close_ms=a.idle_close_ms, final_sync=a.final_sync,
               final_test_subset=a.final_test_subset, timeline=a.timeline)
    if a.backend == "relay":
        if a.relay:
            cfg.update(relay=a.relay, key=os.environ.get("PREDROP_DDL_KEY"))
        else:
            deadline = a.deadline if a.deadline == "adaptive" else int(a.deadline)
            r = relay.start(a.out, a.workers, server=a.server, policy=a.policy,
                            fixed_rate=a.rate, rmax=a.rmax, stage_deadline_ms=deadline,
                            missing_fill="own" if a.fill in ("own", "model") else "zero",
                            discard="random" if a.fill == "model" else "priority",
                            pacing=a.pacing, chunk_bytes=a.chunk_bytes,
                            trace_csv=os.path.abspath(os.path.join(a.out, "relay-trace.csv")))
            cfg.update(relay=r.address, key=r.key)
            print(f"relay {r.address} ({a.policy}), {a.workers} ranks x {a.stages} stages, "
                  f"output in {a.out}", flush=True)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=fmnist_job.run_rank, args=(k, a.workers, cfg, queue))
             for k in range(a.workers)]
    for p in procs:
        p.start()
    summaries = []
    for _ in procs:
        summaries.append(queue.get())
    for p in procs:
        p.join()
    if r:
        r.stop(timeout=15)

    rows = []
    for k in range(a.workers):
        path = os.path.join(a.out, f"rank-{k}.csv")
        if os.path.exists(path):
            with open(path, newline="") as f:
                rows += list(csv.DictReader(f))
    rows.sort(key=lambda x: (int(x["stage"]), int(x["rank"])))
    merged = os.path.join(a.out, "train.csv")
    with open(merged, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fmnist_job.COLUMNS)
        w.writeheader()
        w.writerows(rows)
    status = 0
    for s in sorted(summaries, key=lambda x: x["rank"]):
        acc = "-" if s["final_acc"] is None else f"{s['final_acc']:.4f}"
        line = (f"rank {s['rank']}: {s['stages']} stages in {s['wall_s']:.1f} s, "
                f"final test accuracy {acc}")
        if s.get("time_to_target") is not None:
            line += f", {a.target_acc:.2f} reached after {s['time_to_target']:.1f} s"
        if s["error"]:
            line += f", FAILED at stage {s.get('failed_stage')}: {s['error']}"
            status = 1
        print(line)
    print(f"CSV: {merged}" + (f", relay trace {os.path.join(a.out, 'relay-trace.csv')}"
                              if r else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
