"""llama_block.py - RMSNorm on A inside the GEMM (a_norm) against its bare GEMM and the separate
kernels, on one GPU, with the library of specs/examples/llama_block.json.

For the RMSNorm -> linear steps of Llama-style blocks (QKV and gate/up of an 8B and a 70B model)
at M tokens (default 16, 256, 8192), bf16, it checks and times:
  a_norm   torch.ops.fusegen.gemm("gate_up_rmsnorm", h, fold_a_norm_gamma(W, gamma)): one kernel
  gemm     torch.ops.fusegen.gemm("linear", h, W): the library's bare GEMM, the same tiles
  cublas   F.linear(h, W): the bare GEMM through cuBLAS
  eager    F.linear(rms_norm(h) * gamma, W): what a model runs (RMSNorm, then the GEMM)
  compile  torch.compile of eager (Inductor: a Triton RMSNorm kernel, the GEMM on cuBLAS)
a_norm, eager and compile against a float64 reference (relative L2 <= 1e-2) before timing.
Times: torch_compare.time_side_by_side (medians of single-call CUDA-event timings, inputs
rotated out of L2, all ways side by side). The table's ratios: a_norm/gemm, a_norm/cublas and
eager/a_norm, compile/a_norm (above 1: a_norm is faster).

usage: FUSEGEN_LIBRARY=build/libllama_block.so PYTHONPATH=integrations/pytorch \\
           python3 bench/llama_block.py [--quick] [--m 16,256,8192] [--csv FILE]
"""

import argparse
import csv
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integrations", "pytorch"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import fusegen_torch  # noqa: E402
from torch_compare import copies_for, rand, rel_l2, time_side_by_side  # noqa: E402

EPS = 1e-5   # the spec's a_norm eps
TOL = 1e-2
# (name, the spec kernel with a_norm, N, K): N the GEMM's outputs (gate and up together)
PROBLEMS = [("8b qkv", "qkv_rmsnorm", 6144, 4096), ("8b gate_up", "gate_up_rmsnorm", 2 * 14336, 4096),
            ("70b qkv", "qkv_rmsnorm", 10240, 8192), ("70b gate_up", "gate_up_rmsnorm", 2 * 28672, 8192)]


def rms_norm(h, gamma):
    hf = h.float()
    return (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS) * gamma.float()).to(h.dtype)


def eager(h, gamma, w):
    return F.linear(rms_norm(h, gamma), w)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--m", default="16,256,8192", help="token counts, comma-separated")
    ap.add_argument("--csv", help="write the rows here")
    opt = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator(device="cuda").manual_seed(1)
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    compiled = torch.compile(eager)
    reps, warmup = (20, 3) if opt.quick else (60, 5)
    print(f"device: {props.name}; torch {torch.__version__}; fusegen C++ path: {fusegen_torch.fast_path_status()}")
    hdr = ("problem", "M", "N", "K", "a_norm ms", "gemm ms", "cublas ms", "eager ms", "compile ms",
           "a_norm/gemm", "a_norm/cublas", "eager/a_norm", "compile/a_norm", "rel err", "kernel")
    print(" ".join(f"{h:>13}" for h in hdr))
    rows, bad = [], 0
    for name, kernel, n, k in PROBLEMS:
        w = rand((n, k), -0.05, 0.05, gen)
        gamma = rand((k,), 0.5, 1.5, gen)
        wg = fusegen_torch.fold_a_norm_gamma(w, gamma)
        for m in [int(x) for x in opt.m.split(",")]:
            copies = copies_for(m * k * 2, l2, torch.cuda.mem_get_info()[0])
            hs = [rand((m, k), -2.0, 2.0, gen) for _ in range(copies)]
            # the reference in float64: RMSNorm with gamma, then the GEMM
            h64 = hs[0].double()
            ref = (h64 * torch.rsqrt(h64.pow(2).mean(-1, keepdim=True) + EPS) * gamma.double()) @ w.double().t()
            out = torch.ops.fusegen.gemm(kernel, hs[0], wg, None, None, None, None, None, None, None)[0]
            err = rel_l2(out, ref)
            errs = [err, rel_l2(eager(hs[0], gamma, w), ref), rel_l2(compiled(hs[0], gamma, w), ref)]
            if not all(e <= TOL for e in errs):
                print(f"{name} M={m}: FAILED the check (a_norm, eager, compile relative L2: {errs})")
                bad += 1
                continue
            fns = [lambda i: torch.ops.fusegen.gemm(kernel, hs[i], wg, None, None, None, None, None, None, None),
                   lambda i: torch.ops.fusegen.gemm("linear", hs[i], w, None, None, None, None, None, None, None),
                   lambda i: F.linear(hs[i], w),
                   lambda i: eager(hs[i], gamma, w),
                   lambda i: compiled(hs[i], gamma, w)]
            t = time_side_by_side(fns, copies, warmup, reps)
            sel = fusegen_torch.selected_kernel(kernel, m, n, k)
            row = [name, m, n, k] + [round(x, 4) for x in t] + [
                round(t[0] / t[1], 3), round(t[0] / t[2], 3), round(t[3] / t[0], 3), round(t[4] / t[0], 3),
                f"{err:.2e}", sel]
            rows.append(row)
            print(" ".join(f"{str(x):>13}" for x in row))
            del hs
        del w, wg
        torch.cuda.empty_cache()
    if rows:
        geo = lambda j: math.exp(sum(math.log(r[j]) for r in rows) / len(rows))
        print(f"geomean over {len(rows)}: a_norm/gemm {geo(9):.3f}, a_norm/cublas {geo(10):.3f}, "
              f"eager/a_norm {geo(11):.3f}, compile/a_norm {geo(12):.3f}; worst a_norm/gemm "
              f"{max(r[9] for r in rows):.3f}")
    if opt.csv:
        with open(opt.csv, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(hdr)
            wr.writerows(rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
