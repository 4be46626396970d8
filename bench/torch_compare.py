#!/usr/bin/env python3
"""torch_compare.py - fusegen's fused ops against eager PyTorch and torch.compile, on one GPU.

For every problem of a shapes file (default: bench/shapes.json):
  fused:  pre = x W^T + b + r;  y = relu(layer_norm(pre) * gamma + beta)   (y and pre kept)
  chains: out2 = relu(layer_norm(x W1^T + b1 + r) W2^T + b2)
it times
  eager    F.linear (bias in the GEMM) + residual add, F.layer_norm, relu: what a model runs
  compile  torch.compile of the same function (mode "default" unless --compile-mode: Inductor
           keeps the GEMM on cuBLAS and fuses add + LayerNorm + ReLU into one Triton kernel;
           "max-autotune-no-cudagraphs" also autotunes Triton GEMMs, at minutes per shape)
  fusegen  torch.ops.fusegen.linear_residual_layernorm / block_tail (the dispatch's kernel)
after checking fusegen (and compile) against eager (relative L2 <= 1e-2). Times are medians of
CUDA-event timings of single calls, inputs (x and the residual) rotated among enough copies that
they do not sit in L2, the three ways side by side (300 ms of untimed load on each in turn, then
5 rotating rounds, each block queued before it runs: see time_side_by_side). Host time per
call is torch_host_time.py's measure. All bf16.

usage: FUSEGEN_LIBRARY=build/libfusegen_default.so PYTHONPATH=integrations/pytorch \\
           python3 bench/torch_compare.py [--quick] [--csv FILE] [--shapes FILE]
"""

import argparse
import csv
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integrations", "pytorch"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import fusegen_torch  # noqa: E402
from fusegen_torch import _fast  # noqa: E402


def _fast_status():
    """Whether the ops run their C++ path (built here if it was not yet)."""
    _fast.module()
    return _fast.status()


EPS = 1e-5
TOL = 1e-2
HOLD_CYCLES_PER_S = 2.0e9   # torch.cuda._sleep counts cycles; the H200's top SM clock is 1.98 GHz


# ---- the three ways ---------------------------------------------------------------------------------

def eager_fused(x, w, b, r, g, be):
    pre = F.linear(x, w, b) + r
    y = torch.relu(F.layer_norm(pre, (pre.shape[-1],), g, be, EPS))
    return y, pre


def eager_chain(x, w1, b1, r, g, be, w2, b2):
    h = F.layer_norm(F.linear(x, w1, b1) + r, (w1.shape[0],), g, be, EPS)
    return torch.relu(F.linear(h, w2, b2))


def fusegen_fused(x, w, b, r, g, be):
    return torch.ops.fusegen.linear_residual_layernorm(x, w, b, r, g, be, EPS)


def fusegen_chain(x, w1, b1, r, g, be, w2, b2):
    return torch.ops.fusegen.block_tail(x, w1, b1, r, g, be, w2, b2, EPS)


def fusegen_fused_wrapper(x, w, b, r, g, be):
    return fusegen_torch.linear_residual_layernorm(x, w, b, r, g, be, eps=EPS)


def fusegen_chain_wrapper(x, w1, b1, r, g, be, w2, b2):
    return fusegen_torch.block_tail(x, w1, b1, r, g, be, w2, b2, eps=EPS)


# ---- measuring --------------------------------------------------------------------------------------

def rel_l2(got, ref):
    got, ref = got.double(), ref.double()
    if not torch.isfinite(got).all():
        return math.inf
    return ((got - ref).norm() / ref.norm()).item()


def time_side_by_side(fns, n_sets, warmup, reps, rounds=5, settle_ms=300.0):
    """Median ms of reps single-call CUDA-event timings of each fn(i) (call i uses input set
    i % n_sets), all of them side by side: every fn runs untimed, in turn, for settle_ms, then
    the repetitions are taken in `rounds` rotating rounds of one block per fn. Large GEMMs run
    against the power cap and get a full-clock burst after an idle stretch (docs/decisions.md v92):
    timed one after the other, the first would get it."""
    nxt = [0] * len(fns)
    host_runs = [[] for _ in fns]   # the host's time a call, per settling round
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < settle_ms:
        for j, fn in enumerate(fns):
            h0 = time.perf_counter()
            for _ in range(warmup):
                fn(nxt[j] % n_sets)
                nxt[j] += 1
            host_runs[j].append((time.perf_counter() - h0) / warmup)
            torch.cuda.synchronize()
    # The median, not the most: one slow first round (a lazy initialization) would make the
    # holds long enough for the GPU to idle into its full-clock burst.
    host_s = [statistics.median(h) for h in host_runs]
    # Each block is queued behind a sleep kernel long enough for the host to enqueue all of it,
    # so its calls are timed on the GPU, not at the host's launch rate (torch_host_time.py
    # measures that); without it a block starting on an empty queue timed the launches too.
    times = [[] for _ in fns]
    rounds = max(1, min(rounds, reps))
    for r in range(rounds):
        block = reps // rounds + (1 if r < reps % rounds else 0)
        for k in range(len(fns)):
            j = (r + k) % len(fns)
            for _ in range(warmup if r == 0 else min(warmup, 3)):
                fns[j](nxt[j] % n_sets)
                nxt[j] += 1
            pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                     for _ in range(block)]
            torch.cuda.synchronize()
            torch.cuda._sleep(int(2 * block * host_s[j] * HOLD_CYCLES_PER_S))
            for start, end in pairs:
                start.record()
                fns[j](nxt[j] % n_sets)
                end.record()
                nxt[j] += 1
            torch.cuda.synchronize()
            times[j] += [a.elapsed_time(b) for a, b in pairs]
    return [statistics.median(t) for t in times]


def copies_for(set_bytes, l2_bytes, free_bytes):
    """Enough copies of the rotated inputs to cover 3x L2, within a quarter of free memory."""
    want = max(2, math.ceil(3 * l2_bytes / max(set_bytes, 1)))
    fit = max(1, int(free_bytes // 4 // max(set_bytes, 1)))
    return max(1, min(want, fit, 64))


def rand(shape, lo, hi, gen):
    t = torch.empty(shape, dtype=torch.float32, device="cuda")
    t.uniform_(lo, hi, generator=gen)
    return t.to(torch.bfloat16)


def bench_problem(prob, chain, opt, l2_bytes):
    m, n, k = prob["m"], prob["n"], prob["k"]
    n2 = prob.get("n2", 0) if chain else 0
    gen = torch.Generator(device="cuda").manual_seed(opt.seed)
    set_bytes = (m * k + m * n) * 2
    free, _ = torch.cuda.mem_get_info()
    R = copies_for(set_bytes, l2_bytes, free)
    xs = [rand((m, k), -1, 1, gen) for _ in range(R)]
    rs = [rand((m, n), -1, 1, gen) for _ in range(R)]
    w = rand((n, k), -1 / math.sqrt(k), 1 / math.sqrt(k), gen)
    b = rand((n,), -1, 1, gen)
    g = rand((n,), 0.5, 1.5, gen)
    be = rand((n,), -0.5, 0.5, gen)
    if chain:
        w2 = rand((n2, n), -1 / math.sqrt(n), 1 / math.sqrt(n), gen)
        b2 = rand((n2,), -1, 1, gen)

        def call(fn, i):
            return fn(xs[i], w, b, rs[i], g, be, w2, b2)
        eager_fn, fg_fn = eager_chain, fusegen_chain_wrapper if opt.via == "wrapper" else fusegen_chain
        kernel = fusegen_torch.selected_kernel("block_tail", m, n, k, n2)
    else:

        def call(fn, i):
            return fn(xs[i], w, b, rs[i], g, be)
        eager_fn, fg_fn = eager_fused, fusegen_fused_wrapper if opt.via == "wrapper" else fusegen_fused
        kernel = fusegen_torch.selected_kernel("linear_residual_layernorm", m, n, k)

    row = dict(problem=prob["name"], kind="chain" if chain else "fused", m=m, n=n, k=k, n2=n2,
               copies=R, kernel=kernel)

    # correctness first: fusegen (and compile) against eager, on copy 0
    ref = call(eager_fn, 0)
    got = call(fg_fn, 0)
    torch.cuda.synchronize()
    if chain:
        err = rel_l2(got, ref)
    else:
        err = max(rel_l2(got[0], ref[0]), rel_l2(got[1], ref[1]))
    row["fusegen_rel_err"] = err
    row["status"] = "ok" if err <= TOL else "FAIL"

    sides = [lambda i: call(eager_fn, i), lambda i: call(fg_fn, i)]
    row["compile_ms"] = math.nan
    row["compile_rel_err"] = math.nan
    if not opt.no_compile:
        cfn = torch.compile(eager_fn, mode=opt.compile_mode, dynamic=False)
        cgot = call(cfn, 0)
        torch.cuda.synchronize()
        if chain:
            row["compile_rel_err"] = rel_l2(cgot, ref)
        else:
            row["compile_rel_err"] = max(rel_l2(cgot[0], ref[0]), rel_l2(cgot[1], ref[1]))
        sides.append(lambda i: call(cfn, i))
    ms = time_side_by_side(sides, R, opt.warmup, opt.reps)
    row["eager_ms"], row["fusegen_ms"] = ms[0], ms[1]
    if not opt.no_compile:
        row["compile_ms"] = ms[2]
    row["eager_over_fusegen"] = row["eager_ms"] / row["fusegen_ms"]
    row["compile_over_fusegen"] = row["compile_ms"] / row["fusegen_ms"]
    xs.clear()
    rs.clear()
    del ref, got
    torch.cuda.empty_cache()
    return row


def print_row(r):
    shape = f"{r['m']}x{r['n']}x{r['k']}" + (f"->{r['n2']}" if r["n2"] else "")
    print(f"{r['problem']:24s} {shape:22s} {r['eager_ms']:9.4f} {r['compile_ms']:9.4f} "
          f"{r['fusegen_ms']:9.4f} {r['eager_over_fusegen']:8.2f}x {r['compile_over_fusegen']:8.2f}x"
          f"  {r['fusegen_rel_err']:.1e} {r['status']:4s} {r['kernel']}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default=os.path.join(HERE, "shapes.json"),
                    help="shapes file (default: bench/shapes.json)")
    ap.add_argument("--quick", action="store_true",
                    help="the first two fused problems and the first chain, fewer repetitions")
    ap.add_argument("--csv", metavar="FILE", help="also write the rows as CSV")
    ap.add_argument("--compile-mode", default="default",
                    help='torch.compile mode (default "default"; e.g. max-autotune-no-cudagraphs)')
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--via", choices=("op", "wrapper"), default="op",
                    help="call fusegen through torch.ops.fusegen.* (op, the default: what "
                         "torch.compile sees) or the fusegen_torch functions (wrapper: eager calls "
                         "that need no gradient skip the dispatcher)")
    ap.add_argument("--no-chains", action="store_true", help="only the fused problems")
    ap.add_argument("--reps", type=int, default=None, help="timed repetitions (default 100, quick 20)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up calls (default 20, quick 5)")
    ap.add_argument("--seed", type=int, default=1234)
    opt = ap.parse_args()
    opt.reps = opt.reps or (20 if opt.quick else 100)
    opt.warmup = opt.warmup or (5 if opt.quick else 20)

    if not torch.cuda.is_available():
        print("torch_compare: no CUDA device", file=sys.stderr)
        return 77
    with open(opt.shapes) as f:
        shapes = json.load(f)
    fused = shapes.get("fused", [])
    chains = [] if opt.no_chains else shapes.get("chains", [])
    if opt.quick:
        fused, chains = fused[:2], chains[:1]

    # one compiled function meets every shape: allow that many recompilations
    import torch._dynamo as dynamo
    for attr in ("cache_size_limit", "recompile_limit"):
        if hasattr(dynamo.config, attr):
            setattr(dynamo.config, attr, max(getattr(dynamo.config, attr), 64))

    prop = torch.cuda.get_device_properties(0)
    l2 = getattr(prop, "L2_cache_size", 0) or 64 << 20
    lib = fusegen_torch.load_library()
    print(f"device {prop.name} (sm_{prop.major}{prop.minor}, L2 {l2 >> 20} MiB), torch "
          f"{torch.__version__}, CUDA {torch.version.cuda}, library {lib.name} ({lib.path})")
    print(f"compile mode: {'off' if opt.no_compile else opt.compile_mode}; median of {opt.reps} "
          f"single-call CUDA-event timings after {opt.warmup} warm-up calls, the ways side by side "
          f"(300 ms settle, 5 rotating rounds); fusegen via "
          f"{'the fusegen_torch wrappers' if opt.via == 'wrapper' else 'torch.ops.fusegen'} "
          f"(C++ path: {_fast_status()})")
    print(f"{'problem':24s} {'MxNxK[->N2]':22s} {'eager ms':>9s} {'compile':>9s} {'fusegen':>9s} "
          f"{'eager/fg':>9s} {'comp/fg':>9s}  {'rel err':7s} {'ok':4s} kernel")
    rows = []
    for prob in fused:
        rows.append(bench_problem(prob, False, opt, l2))
        print_row(rows[-1])
    for prob in chains:
        rows.append(bench_problem(prob, True, opt, l2))
        print_row(rows[-1])

    if opt.csv:
        with open(opt.csv, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()) if rows else ["problem"])
            wr.writeheader()
            for r in rows:
                wr.writerow(r)
        print(f"wrote {opt.csv}")
    if _fast.module() is not None:
        print(f"fusegen calls run from C++: {_fast.module().runs()} (the rest took the Python path)")
    bad = [r["problem"] for r in rows if r["status"] != "ok"]
    if bad:
        print(f"torch_compare: fusegen differs from eager beyond {TOL}: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
