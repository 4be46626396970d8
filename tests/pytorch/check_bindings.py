"""Drives the real kernel library through fusegen_torch's ctypes layer, on the CPU.

usage: FUSEGEN_LIBRARY=build/libfusegen_default.so [FUSEGEN_RUNTIME_LIBRARY=...] \
           python3 check_bindings.py
Needs neither PyTorch nor a GPU: every problem says sm = 90 (an H200), so the runtime never asks
a device; nothing is launched. Checks that the table reads as the generated dispatch table
says, that find / select / query / workspace_size / why_not answer as docs/api.md says, and that
a failed call carries its status name and detail. Exit 0 when all hold, 1 otherwise."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "integrations", "pytorch"))
import fusegen_torch  # noqa: E402
from fusegen_torch import _capi  # noqa: E402

FUSED = b"bias+residual+store+layernorm+relu"
SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "specs", "default.json")
CHAIN1 = b"bias+residual+layernorm"
CHAIN2 = b"bias+relu"

failures = []


def expect(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def main():
    lib = fusegen_torch.load_library()
    print(f"library {lib.name} from {lib.path} (runtime from {lib.runtime_path}), "
          f"generator {lib.generator_version}, spec sha256 {lib.spec_sha256}")
    ks = fusegen_torch.kernels()
    for k in ks:
        print(f"  {k.name:62s} {k.strategy:8s} tile {k.tile} s{k.stages} sm{k.sm} "
              f"eps {k.eps} max_n {k.max_n} rank {k.rank} {k.family} {k.schedule}")
    expect(len(ks) == lib.table.n_kernels and len(ks) > 0,
           f"{len(ks)} kernels in the table of {lib.name}")
    names = [k.name for k in ks]
    expect(len(set(names)) == len(names), "kernel names are unique")
    fused = [k for k in ks if k.spec_kernel == "proj_bias_residual_layernorm"]
    chain = [k for k in ks if k.spec_kernel == "block_tail"]
    expect(len(fused) > 0 and len(chain) > 0,
           f"{len(fused)} fused (proj_bias_residual_layernorm) and {len(chain)} chain (block_tail) "
           "kernels: the ones fusegen_torch's ops run")
    expect(all(k.epilogue == FUSED.decode() and k.eps == 1e-5 for k in fused),
           "fused kernels: epilogue bias+residual+store+layernorm+relu, eps 1e-5")
    with open(SPEC) as f:
        spec_tail = [k for k in json.load(f)["kernels"] if k["name"] == "block_tail"][0]
    tiles2 = {(t["m"], t["n"], t["k"]) for t in spec_tail["then"]["tiles"]}
    expect(all(k.epilogue == CHAIN1.decode() and k.epilogue2 == CHAIN2.decode() and
               k.eps == 1e-5 and k.tile2 in tiles2 for k in chain),
           "chain kernels: epilogues bias+residual+layernorm / bias+relu, eps 1e-5, g2 tile from the spec")
    rms = [k for k in ks if k.spec_kernel == "proj_bias_rmsnorm_silu"]
    expect(all(k.eps == 1e-6 for k in rms), "rmsnorm kernels read eps 1e-6")

    # find, by name
    name = "proj_bias_residual_layernorm_sm90a_128x128x64_s5_split"
    k = lib.find(name)
    expect(_capi.kernel_info(k).name == name, f"fusegen_find({name})")
    try:
        lib.find("no_such_kernel")
        expect(False, "fusegen_find of an unknown name fails")
    except fusegen_torch.FusegenError as e:
        expect(e.status_name == "FUSEGEN_ERR_NOT_FOUND" and "no_such_kernel" in e.detail,
               f"fusegen_find of an unknown name: {e}")

    # workspace of a split kernel, by the documented layout: align256(M*N*4) + align256(M*tiles*8)
    m, n, kk = 100, 1000, 64
    p = _capi.make_problem(m, n, kk, FUSED, sm=90)
    ws = lib.workspace_size(k, p)
    def a256(x):
        return (x + 255) // 256 * 256
    want = a256(m * n * 4) + a256(m * ((n + 127) // 128) * 8)
    expect(ws == want, f"workspace of {name} at {m}x{n}x{kk}: {ws} bytes (want {want})")

    # selection on an H200 (sm 90): row kernel for small N, split beyond
    sel = lib.select(_capi.make_problem(1003, 128, 1024, FUSED, sm=90))
    info = _capi.kernel_info(sel)
    expect(info.strategy == "row" and info.sm == 90,
           f"select N=128 on sm 90: {info.name} (a Hopper row kernel)")
    sel = lib.select(_capi.make_problem(1003, 1024, 1024, FUSED, sm=90))
    info = _capi.kernel_info(sel)
    expect(info.strategy == "split" and info.sm == 90,
           f"select N=1024 on sm 90: {info.name} (a Hopper split kernel)")
    sel = lib.select(_capi.make_problem(1003, 1024, 1024, FUSED, sm=80))
    info = _capi.kernel_info(sel)
    expect(info.sm == 80, f"select N=1024 on sm 80: {info.name} (a portable kernel)")
    # best first: by class (strategy, family), then padded columns, then rank
    # (split-K variants rank by the device's SM count, which is not read here: they come last)
    q = lib.query(_capi.make_problem(64, 768, 1024, FUSED, sm=90))
    infos = [_capi.kernel_info(x) for x in q]
    tail = [i.split_k for i in infos]
    expect(any(tail) and tail == sorted(tail), f"query 64x768x1024: split-K variants last without a device: {tail}")
    infos = [i for i in infos if not i.split_k]
    strategy_rank = {"cluster": 0, "split": 1}
    classes = [2 * strategy_rank.get(i.strategy, 2) + (i.family == "hopper") for i in infos]
    # (N = 768, K <= 1024: the 128x128 ping-pong split tile, the dispatch model's column cost)
    expect(len(q) >= 2 and classes == sorted(classes, reverse=True) and infos[0].tile == (128, 128, 64)
           and infos[0].schedule == "pingpong" and infos[0].family == "hopper",
           f"query 64x768x1024: {len(q)} eligible, best first ({infos[0].name if infos else None})")
    # ... and past K = 1024 the cooperative 128x256 one
    q = lib.query(_capi.make_problem(64, 768, 3072, FUSED, sm=90))
    first = _capi.kernel_info(q[0]) if q else None
    expect(first is not None and first.tile == (128, 256, 64) and first.schedule != "pingpong",
           f"query 64x768x3072: best first {first.name if first else None} (the 128x256 tile)")

    # the chain
    pc = _capi.make_problem(517, 320, 320, CHAIN1, n2=520, epilogue2=CHAIN2, sm=90)
    kc = lib.select(pc)
    wsc = lib.workspace_size(kc, pc)
    expect(_capi.kernel_info(kc).spec_kernel == "block_tail" and wsc >= 517 * 320 * 2,
           f"chain 517x320x320 -> 520: {_capi.kernel_info(kc).name}, workspace {wsc} bytes")

    # fusegen_torch.gemm's choice: a spec kernel's variants only, problems from its entry
    spec_names = _capi.spec_kernel_names(lib)
    expect(sorted(spec_names) == sorted(["proj_bias_residual_layernorm", "proj", "proj_scale_bias_gelu",
                                         "proj_residual_gelu_tanh_f32", "proj_bias_rmsnorm_silu",
                                         "block_tail"]),
           f"spec kernel names, each once: {spec_names}")
    rms_entry = _capi.spec_kernel_entry(lib, "proj_bias_rmsnorm_silu")
    pr = _capi.problem_for(rms_entry, 100, 768, 512, sm=90)
    expect(pr.b_layout == _capi.LAYOUT_KN and pr.epilogue == b"bias+rmsnorm+silu" and
           (pr.a, pr.b, pr.out) == (_capi.DTYPE_BF16,) * 3 and pr.epilogue2 is None and pr.n2 == 0,
           "problem_for(proj_bias_rmsnorm_silu): kn, bias+rmsnorm+silu, bf16")
    kr = _capi.kernel_info(_capi.select_spec_kernel(lib, "proj_bias_rmsnorm_silu", pr))
    expect(kr.spec_kernel == "proj_bias_rmsnorm_silu" and kr.sm == 90,
           f"select_spec_kernel(proj_bias_rmsnorm_silu) 100x768x512 on sm 90: {kr.name}")
    f32_entry = _capi.spec_kernel_entry(lib, "proj_residual_gelu_tanh_f32")
    pf = _capi.problem_for(f32_entry, 64, 128, 64, sm=90)
    kf = _capi.kernel_info(_capi.select_spec_kernel(lib, "proj_residual_gelu_tanh_f32", pf))
    expect(pf.out == _capi.DTYPE_F32 and pf.a == _capi.DTYPE_BF16 and kf.sm == 80,
           f"select_spec_kernel(proj_residual_gelu_tanh_f32) on sm 90: {kf.name} (portable, f32 out)")
    pt = _capi.problem_for(_capi.spec_kernel_entry(lib, "block_tail"), 517, 320, 320, n2=520, sm=90)
    kt = _capi.kernel_info(_capi.select_spec_kernel(lib, "block_tail", pt))
    expect(pt.n2 == 520 and pt.epilogue2 == CHAIN2 and kt.spec_kernel == "block_tail",
           f"select_spec_kernel(block_tail) 517x320x320 -> 520: {kt.name}")
    try:
        _capi.spec_kernel_entry(lib, "proj_bias_rmsnorm_silo")
        expect(False, "spec_kernel_entry of an unknown name fails")
    except ValueError as e:
        expect("proj_bias_rmsnorm_silo" in str(e) and "proj_bias_rmsnorm_silu" in str(e),
               f"spec_kernel_entry of an unknown name: {e}")
    # the proj kernels can run a problem without an epilogue, but they are not the one asked for
    p_proj = _capi.problem_for(_capi.spec_kernel_entry(lib, "proj"), 64, 256, 64, sm=90)
    expect(lib.query(p_proj) != [], "query of a plain GEMM problem finds the proj kernels")
    try:
        _capi.select_spec_kernel(lib, "proj_bias_rmsnorm_silu", p_proj)
        expect(False, "select_spec_kernel refuses another spec kernel's problem")
    except fusegen_torch.FusegenError as e:
        expect(e.status_name == "FUSEGEN_ERR_NOT_SUPPORTED" and "no variant of proj_bias_rmsnorm_silu" in e.detail
               and "proj_bias_rmsnorm_silu_sm90a" in e.detail,
               f"select_spec_kernel(proj_bias_rmsnorm_silu) of a plain GEMM problem: {str(e)[:200]}...")
    try:
        _capi.select_spec_kernel(lib, "proj_bias_rmsnorm_silu", _capi.problem_for(rms_entry, 64, 1001, 64, sm=90))
        expect(False, "select_spec_kernel at N=1001 fails")
    except fusegen_torch.FusegenError as e:
        expect(e.status_name == "FUSEGEN_ERR_NOT_SUPPORTED" and "1001" in e.detail,
               f"select_spec_kernel(proj_bias_rmsnorm_silu) at N=1001: {str(e)[:200]}...")

    # why_not and failures with details
    row = lib.find("proj_bias_residual_layernorm_sm80_128x256x64_s3_row")
    reason = lib.why_not(row, _capi.make_problem(64, 1024, 64, FUSED, sm=90))
    expect(reason is not None and "max_n" in reason, f"why_not row kernel at N=1024: {reason}")
    expect(lib.why_not(row, _capi.make_problem(64, 128, 64, FUSED, sm=90)) is None,
           "why_not row kernel at N=128: None (it can)")
    hopper = lib.find(name)
    reason = lib.why_not(hopper, _capi.make_problem(64, 1024, 64, FUSED, sm=80))
    expect(reason is not None, f"why_not a Hopper kernel on sm 80: {reason}")
    try:
        lib.select(_capi.make_problem(64, 1001, 64, FUSED, sm=90))
        expect(False, "select N=1001 fails")
    except fusegen_torch.FusegenError as e:
        expect(e.status_name == "FUSEGEN_ERR_NOT_SUPPORTED" and e.detail,
               f"select N=1001: {str(e)[:160]}...")
    try:
        lib.workspace_size(hopper, _capi.make_problem(64, 1024, 64, FUSED, sm=80))
        expect(False, "workspace_size of a Hopper kernel on sm 80 fails")
    except fusegen_torch.FusegenError as e:
        expect(e.status_name == "FUSEGEN_ERR_ARCH", f"workspace_size on sm 80: {e}")
    # fusegen_run checks everything before it launches: NULL pointers are refused on the CPU
    try:
        lib.run(hopper, _capi.make_problem(64, 1024, 64, FUSED, sm=90), _capi.Args(), 0, 0, 0)
        expect(False, "run with NULL pointers fails")
    except fusegen_torch.FusegenError as e:
        expect(e.status_name == "FUSEGEN_ERR_INVALID_ARGUMENT", f"run with NULL args: {e}")

    print(f"check_bindings: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
