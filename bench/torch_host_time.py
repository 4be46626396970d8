#!/usr/bin/env python3
"""Host time a call of the fusegen PyTorch ops, with their C++ path (fusegen_torch/_fast.cpp)
and without it, beside eager PyTorch doing the same work; in one process.

Back-to-back calls on a problem small enough that the GPU keeps up (M = 64, N = K = 320): the
wall time a call is then the host's. Each figure is the median of --rounds rounds of --calls
calls (microseconds a call). Needs PyTorch, a CUDA device and the kernel library
(FUSEGEN_LIBRARY or FUSEGEN_BUILD_DIR, as fusegen_torch finds it).

    PYTHONPATH=integrations/pytorch python3 bench/torch_host_time.py [--calls N] [--rounds R]
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integrations", "pytorch"))
import fusegen_torch  # noqa: E402
from fusegen_torch import _fast  # noqa: E402


def per_call_us(f, calls, rounds):
    for _ in range(200):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            f()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        times.append((t1 - t0) / calls * 1e6)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    opt = ap.parse_args()

    dev = torch.device("cuda", torch.cuda.current_device())
    bf = torch.bfloat16
    m, n, k, n2 = 64, 320, 320, 1280
    g = torch.Generator(device="cpu").manual_seed(1)

    def r(*shape, scale=1.0):
        return (torch.rand(shape, generator=g) * 2 * scale - scale).to(device=dev, dtype=bf)

    x, w, b, res = r(m, k), r(n, k, scale=k ** -0.5), r(n), r(m, n)
    gamma, beta = r(n) + 1, r(n)
    w2, b2 = r(n2, n, scale=n ** -0.5), r(n2)
    eps = 1e-5

    def eager_fused():
        pre = F.linear(x, w, b) + res
        return torch.relu(F.layer_norm(pre, (n,), gamma, beta, eps)), pre

    def eager_chain():
        h = F.layer_norm(F.linear(x, w, b) + res, (n,), gamma, beta, eps)
        return torch.relu(F.linear(h, w2, b2))

    cases = [
        ("eager: linear + add + layer_norm + relu", eager_fused, False),
        ("fusegen_torch.linear_residual_layernorm", lambda: fusegen_torch.linear_residual_layernorm(
            x, w, b, res, gamma, beta, eps), True),
        ("torch.ops.fusegen.linear_residual_layernorm", lambda: torch.ops.fusegen.linear_residual_layernorm(
            x, w, b, res, gamma, beta, eps), True),
        ("eager: the block tail (two linears, layer_norm)", eager_chain, False),
        ("fusegen_torch.block_tail", lambda: fusegen_torch.block_tail(
            x, w, b, res, gamma, beta, w2, b2, eps), True),
        ("torch.ops.fusegen.block_tail", lambda: torch.ops.fusegen.block_tail(
            x, w, b, res, gamma, beta, w2, b2, eps), True),
        # any spec kernel by name (the default spec's eps is 1e-5, as above)
        ("fusegen_torch.gemm (proj_bias_residual_layernorm)", lambda: fusegen_torch.gemm(
            "proj_bias_residual_layernorm", x, w, bias=b, residual=res, gamma=gamma, beta=beta), True),
        ("torch.ops.fusegen.gemm (proj_bias_residual_layernorm)", lambda: torch.ops.fusegen.gemm(
            "proj_bias_residual_layernorm", x, w, b, res, gamma, beta, None, None, None), True),
    ]
    fusegen_torch.linear_residual_layernorm(x, w, b, res, gamma, beta, eps)   # builds the C++ path
    mod = _fast.module()
    print(f"device {torch.cuda.get_device_name(dev)}, torch {torch.__version__}; M={m} N={n} K={k} N2={n2}; "
          f"median of {opt.rounds} rounds of {opt.calls} back-to-back calls; C++ path: {_fast.status()}")
    print(f"{'call':56s} {'C++ path us':>12s} {'Python us':>10s}")
    for name, f, is_fusegen in cases:
        fast = per_call_us(f, opt.calls, opt.rounds) if (is_fusegen and mod is not None) else None
        real_module = _fast.module
        if is_fusegen:
            _fast.module = lambda: None   # the Python path only
        try:
            slow = per_call_us(f, opt.calls, opt.rounds)
        finally:
            _fast.module = real_module
        fast_s = f"{fast:12.1f}" if fast is not None else f"{'-':>12s}"
        print(f"{name:56s} {fast_s} {slow:10.1f}")
    if mod is not None:
        print(f"calls run from C++: {mod.runs()}")


if __name__ == "__main__":
    main()
