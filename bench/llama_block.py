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

With --block, also the block's linear path in four kernels (RMSNorm -> QKV; o_proj + residual;
RMSNorm -> gate/up -> SwiGLU; down + residual; the attention's output is an input) against the
same in eager PyTorch and torch.compile.

usage: FUSEGEN_LIBRARY=build/libllama_block.so PYTHONPATH=integrations/pytorch \\
           python3 bench/llama_block.py [--quick] [--block] [--m 16,256,8192] [--csv FILE]
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


# The linear path of a block (--block): (name, hidden, QKV outputs, intermediate)
BLOCKS = [("8b block", 4096, 6144, 14336), ("70b block", 8192, 10240, 28672)]


def block_eager(x, attn, g1, wqkv, wo, g2, wgu, wd):
    """The block's linear path as a model runs it; attn stands for the attention's output."""
    qkv = F.linear(rms_norm(x, g1), wqkv)
    h = x + F.linear(attn, wo)
    g, u = F.linear(rms_norm(h, g2), wgu).chunk(2, dim=-1)
    return qkv, h + F.linear(F.silu(g) * u, wd)


def block_fused(x, attn, wqkv_f, wo, wgu_f, wd):
    """The same in four fusegen kernels: RMSNorm -> QKV; o_proj + residual; RMSNorm -> gate/up ->
    SwiGLU; down + residual."""
    gemm = torch.ops.fusegen.gemm
    qkv = gemm("qkv_rmsnorm", x, wqkv_f, None, None, None, None, None, None, None)[0]
    h = gemm("o_proj_residual", attn, wo, None, x, None, None, None, None, None)[0]
    a = gemm("gate_up_rmsnorm_swiglu", h, wgu_f, None, None, None, None, None, None, None)[0]
    return qkv, gemm("down_residual", a, wd, None, h, None, None, None, None, None)[0]


def block_rows(opt, gen, l2, reps, warmup):
    """--block: the linear path against eager and torch.compile; rows (name, M, fused ms, eager
    ms, compile ms, eager/fused, compile/fused, rel err of out)."""
    compiled = torch.compile(block_eager)
    rows, bad = [], 0
    for name, hid, nqkv, inter in BLOCKS:
        s = 0.05
        wqkv, wo = rand((nqkv, hid), -s, s, gen), rand((hid, hid), -s, s, gen)
        wgu, wd = rand((2 * inter, hid), -s, s, gen), rand((hid, inter), -s, s, gen)
        g1, g2 = rand((hid,), 0.5, 1.5, gen), rand((hid,), 0.5, 1.5, gen)
        wqkv_f = fusegen_torch.fold_a_norm_gamma(wqkv, g1)
        wgu_f = fusegen_torch.fold_a_norm_gamma(fusegen_torch.pack_glu_weight(wgu[:inter], wgu[inter:]), g2)
        for m in [int(v) for v in opt.m.split(",")]:
            copies = copies_for(2 * m * hid * 2, l2, torch.cuda.mem_get_info()[0])
            xs = [rand((m, hid), -2.0, 2.0, gen) for _ in range(copies)]
            ats = [rand((m, hid), -2.0, 2.0, gen) for _ in range(copies)]
            # the reference: the eager path in float64
            d = lambda t: t.double()
            _, ref = block_eager(d(xs[0]), d(ats[0]), d(g1), d(wqkv), d(wo), d(g2), d(wgu), d(wd))
            got = block_fused(xs[0], ats[0], wqkv_f, wo, wgu_f, wd)[1]
            errs = [rel_l2(got, ref), rel_l2(block_eager(xs[0], ats[0], g1, wqkv, wo, g2, wgu, wd)[1], ref),
                    rel_l2(compiled(xs[0], ats[0], g1, wqkv, wo, g2, wgu, wd)[1], ref)]
            del ref
            if not all(e <= TOL for e in errs):
                print(f"{name} M={m}: FAILED the check (fused, eager, compile relative L2: {errs})")
                bad += 1
                continue
            fns = [lambda i: block_fused(xs[i], ats[i], wqkv_f, wo, wgu_f, wd),
                   lambda i: block_eager(xs[i], ats[i], g1, wqkv, wo, g2, wgu, wd),
                   lambda i: compiled(xs[i], ats[i], g1, wqkv, wo, g2, wgu, wd)]
            t = time_side_by_side(fns, copies, warmup, reps)
            row = [name, m] + [round(v, 4) for v in t] + [round(t[1] / t[0], 3), round(t[2] / t[0], 3),
                                                          f"{errs[0]:.2e}"]
            rows.append(row)
            print(" ".join(f"{str(v):>13}" for v in row))
            del xs, ats
        del wqkv, wo, wgu, wd, wqkv_f, wgu_f
        torch.cuda.empty_cache()
    return rows, bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    ap.add_argument("--m", default="16,256,8192", help="token counts, comma-separated")
    ap.add_argument("--csv", help="write the rows here")
    ap.add_argument("--block", action="store_true",
                    help="also the block's linear path (four kernels) against eager and torch.compile")
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
    if opt.block:
        print(" ".join(f"{h:>13}" for h in ("block", "M", "fused ms", "eager ms", "compile ms", "eager/fused",
                                           "compile/fused", "rel err")))
        brows, bbad = block_rows(opt, gen, l2, reps, warmup)
        bad += bbad
    if opt.csv:
        with open(opt.csv, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(hdr)
            wr.writerows(rows)
            if opt.block:
                wr.writerow(("block", "M", "fused ms", "eager ms", "compile ms", "eager/fused", "compile/fused",
                             "rel err"))
                wr.writerows(brows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
