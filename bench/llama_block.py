"""llama_block.py - the norm on A (a_norm) and SwiGLU inside the GEMM against the bare GEMM and
the separate kernels, on one GPU, with the library of specs/examples/llama_block.json.

For the RMSNorm -> linear steps of Llama-style blocks (QKV; gate/up with SwiGLU) of an 8B and a
70B model at M tokens (default 16, 256, 8192), bf16, it checks and times:
  fused    torch.ops.fusegen.gemm(kernel, h, W'): qkv_rmsnorm (W' = fold_a_norm_gamma(W, gamma))
           or gate_up_rmsnorm_swiglu (W' = the same of pack_glu_weight(W_gate, W_up)): one kernel
  gemm     torch.ops.fusegen.gemm("linear", h, W): the library's bare GEMM of all N columns
  cublas   F.linear(h, W): the bare GEMM through cuBLAS
  eager    F.linear(rms_norm(h) * gamma, W) (gate/up: then silu(gate) * up): what a model runs
  compile  torch.compile of eager (Inductor: Triton kernels for the norm and silu * up, the GEMM
           on cuBLAS)
fused, eager and compile against a float64 reference (relative L2 <= 1e-2) before timing.
Times: torch_compare.time_side_by_side (medians of single-call CUDA-event timings, inputs
rotated out of L2, all ways side by side). Ratios: fused/gemm, fused/cublas, and eager/fused,
compile/fused (above 1: fused is faster).

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
# (name, spec kernel, output columns, K, gated): gate/up's GEMM has twice the output columns
PROBLEMS = [("8b qkv", "qkv_rmsnorm", 6144, 4096, False),
            ("8b gate_up", "gate_up_rmsnorm_swiglu", 14336, 4096, True),
            ("70b qkv", "qkv_rmsnorm", 10240, 8192, False),
            ("70b gate_up", "gate_up_rmsnorm_swiglu", 28672, 8192, True)]


def rms_norm(h, gamma):
    hf = h.float()
    return (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + EPS) * gamma.float()).to(h.dtype)


def eager(h, gamma, w):
    return F.linear(rms_norm(h, gamma), w)


def eager_swiglu(h, gamma, w):
    gu = F.linear(rms_norm(h, gamma), w)
    g, u = gu.chunk(2, dim=-1)
    return F.silu(g) * u


def reference(h, gamma, w, gated):
    h64 = h.double()
    y = (h64 * torch.rsqrt(h64.pow(2).mean(-1, keepdim=True) + EPS) * gamma.double()) @ w.double().t()
    if not gated:
        return y
    g, u = y.chunk(2, dim=-1)
    return g / (1 + torch.exp(-g)) * u


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
    compiled, compiled_swiglu = torch.compile(eager), torch.compile(eager_swiglu)
    reps, warmup = (20, 3) if opt.quick else (60, 5)
    print(f"device: {props.name}; torch {torch.__version__}; fusegen C++ path: {fusegen_torch.fast_path_status()}")
    hdr = ("problem", "M", "N", "K", "fused ms", "gemm ms", "cublas ms", "eager ms", "compile ms",
           "fused/gemm", "fused/cublas", "eager/fused", "compile/fused", "rel err", "kernel")
    print(" ".join(f"{h:>13}" for h in hdr))
    rows, bad = [], 0
    for name, kernel, n, k, gated in PROBLEMS:
        n_gemm = 2 * n if gated else n
        w = rand((n_gemm, k), -0.05, 0.05, gen)   # gated: [W_gate; W_up], as F.linear takes them
        gamma = rand((k,), 0.5, 1.5, gen)
        wk = fusegen_torch.pack_glu_weight(w[:n], w[n:]) if gated else w
        wk = fusegen_torch.fold_a_norm_gamma(wk, gamma)
        eg, cp = (eager_swiglu, compiled_swiglu) if gated else (eager, compiled)
        for m in [int(x) for x in opt.m.split(",")]:
            copies = copies_for(m * k * 2, l2, torch.cuda.mem_get_info()[0])
            hs = [rand((m, k), -2.0, 2.0, gen) for _ in range(copies)]
            ref = reference(hs[0], gamma, w, gated)
            out = torch.ops.fusegen.gemm(kernel, hs[0], wk, None, None, None, None, None, None, None)[0]
            err = rel_l2(out, ref)
            errs = [err, rel_l2(eg(hs[0], gamma, w), ref), rel_l2(cp(hs[0], gamma, w), ref)]
            del ref
            if not all(e <= TOL for e in errs):
                print(f"{name} M={m}: FAILED the check (fused, eager, compile relative L2: {errs})")
                bad += 1
                continue
            fns = [lambda i: torch.ops.fusegen.gemm(kernel, hs[i], wk, None, None, None, None, None, None, None),
                   lambda i: torch.ops.fusegen.gemm("linear", hs[i], w, None, None, None, None, None, None, None),
                   lambda i: F.linear(hs[i], w),
                   lambda i: eg(hs[i], gamma, w),
                   lambda i: cp(hs[i], gamma, w)]
            t = time_side_by_side(fns, copies, warmup, reps)
            sel = fusegen_torch.selected_kernel(kernel, m, n_gemm, k)
            row = [name, m, n_gemm, k] + [round(x, 4) for x in t] + [
                round(t[0] / t[1], 3), round(t[0] / t[2], 3), round(t[3] / t[0], 3), round(t[4] / t[0], 3),
                f"{err:.2e}", sel]
            rows.append(row)
            print(" ".join(f"{str(x):>13}" for x in row))
            del hs
        del w, wk
        torch.cuda.empty_cache()
    if rows:
        geo = lambda j: math.exp(sum(math.log(r[j]) for r in rows) / len(rows))
        print(f"geomean over {len(rows)}: fused/gemm {geo(9):.3f}, fused/cublas {geo(10):.3f}, "
              f"eager/fused {geo(11):.3f}, compile/fused {geo(12):.3f}; worst fused/gemm "
              f"{max(r[9] for r in rows):.3f}")
    if opt.csv:
        with open(opt.csv, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(hdr)
            wr.writerows(rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
