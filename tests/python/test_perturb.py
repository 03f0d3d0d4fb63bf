"""fmnist_job's start perturbation (--perturb EPS --perturb-seed K; bench/README.md "How much the
final accuracy moves"): EPS 0 leaves the seeded model bit-identical (every earlier row stays
the same job); one seed gives every rank the same perturbed start (DDP's start-up broadcast
would hide a difference, the relay arms would not); another seed another start; the change is
relative, at most a few EPS of each parameter."""

import sys

import common


def main():
    common.require_torch()
    import torch
    from predrop.fmnist_job import make_model, perturb_model

    def params(eps, seed):
        m = make_model(1)
        perturb_model(m, eps, seed)
        return [p.detach().clone() for p in m.parameters()]

    base = params(0.0, 1)
    ok = True

    def check(what, cond):
        nonlocal ok
        print(("ok   " if cond else "FAIL ") + what)
        ok = ok and cond

    check("eps 0: the seeded model, bit for bit",
          all(torch.equal(a, b) for a, b in zip(base, [p.detach() for p in
                                                        make_model(1).parameters()])))
    a, b, c = params(1e-6, 1), params(1e-6, 1), params(1e-6, 2)
    check("one perturbation seed: the same start on every rank",
          all(torch.equal(x, y) for x, y in zip(a, b)))
    check("another perturbation seed: another start",
          any(not torch.equal(x, y) for x, y in zip(a, c)))
    rel = max(((x - y).abs() / y.abs().clamp_min(1e-30)).max().item() for x, y in zip(a, base))
    changed = sum(int((x != y).sum()) for x, y in zip(a, base))
    total = sum(y.numel() for y in base)
    check(f"relative change at most 8 eps (max {rel:.2e}), most parameters moved "
          f"({changed} of {total})", 0 < rel <= 8e-6 and changed > total // 2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
