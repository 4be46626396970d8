"""GPU tests of the pre-norm and gated kernels through PyTorch, on the library of
specs/examples/llama_block.json (CTest: pytorch_llama_block): fusegen::gemm with a norm on A
(qkv_rmsnorm) and with RMSNorm -> SwiGLU (gate_up_rmsnorm_swiglu) against float64 references,
opcheck on both, the packing helpers against their C twins in the library (the same bits), and
the refusal of a gated weight whose rows are not whole blocks.

Run: FUSEGEN_LIBRARY=build/libllama_block.so PYTHONPATH=integrations/pytorch \
         python3 -m pytest -q tests/pytorch/llama
Skipped unless the loaded library has those spec kernels (the default library's run of
tests/pytorch collects this file too)."""

import ctypes
import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "integrations", "pytorch"))
import fusegen_torch  # noqa: E402
from fusegen_torch import _capi  # noqa: E402

try:
    LIB = fusegen_torch.load_library()
except fusegen_torch.FusegenLibraryError as e:
    pytest.skip(f"the fusegen kernel library cannot be loaded: {e}", allow_module_level=True)
if not {"qkv_rmsnorm", "gate_up_rmsnorm_swiglu"} <= set(_capi.spec_kernel_names(LIB)):
    pytest.skip("not the llama_block library (specs/examples/llama_block.json)", allow_module_level=True)

EPS = 1e-5   # the example's a_norm eps
TOL = 1e-2
DEV = torch.device("cuda", torch.cuda.current_device())


def rel_l2(got, ref):
    got = got.double()
    assert torch.isfinite(got).all(), "non-finite values in the output"
    return ((got - ref).norm() / ref.norm()).item()


def inputs(m, n_out, k, gated, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)

    def u(shape, lo, hi):
        return (torch.rand(shape, generator=g) * (hi - lo) + lo).to(device=DEV, dtype=torch.bfloat16)

    ws = 1.0 / k ** 0.5
    n = 2 * n_out if gated else n_out
    return u((m, k), -2, 2), u((n, k), -ws, ws), u((k,), 0.5, 1.5)


def reference(x, w, gamma, gated):
    x64 = x.double()
    y = (x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + EPS) * gamma.double()) @ w.double().t()
    if not gated:
        return y
    gate, up = y.chunk(2, dim=-1)
    return gate / (1 + torch.exp(-gate)) * up


def gemm(kernel, x, w):
    return torch.ops.fusegen.gemm(kernel, x, w, None, None, None, None, None, None, None)


@pytest.mark.parametrize("m,n,k", [(1, 256, 512), (33, 384, 1000), (300, 1024, 2048)])
def test_a_norm(m, n, k):
    x, w, gamma = inputs(m, n, k, False, seed=m + n)
    out = gemm("qkv_rmsnorm", x, fusegen_torch.fold_a_norm_gamma(w, gamma))
    assert len(out) == 1 and out[0].shape == (m, n)
    assert rel_l2(out[0], reference(x, w, gamma, False)) <= TOL


@pytest.mark.parametrize("m,n_out,k", [(1, 128, 512), (33, 192, 1000), (300, 1024, 2048)])
def test_a_norm_swiglu(m, n_out, k):
    x, w, gamma = inputs(m, n_out, k, True, seed=m + n_out)
    packed = fusegen_torch.pack_glu_weight(w[:n_out], w[n_out:])
    out = gemm("gate_up_rmsnorm_swiglu", x, fusegen_torch.fold_a_norm_gamma(packed, gamma))
    assert len(out) == 1 and out[0].shape == (m, n_out)
    assert rel_l2(out[0], reference(x, w, gamma, True)) <= TOL


def test_opcheck():
    x, w, gamma = inputs(17, 128, 256, True, seed=5)
    packed = fusegen_torch.fold_a_norm_gamma(fusegen_torch.pack_glu_weight(w[:128], w[128:]), gamma)
    torch.library.opcheck(torch.ops.fusegen.gemm.default,
                          ("gate_up_rmsnorm_swiglu", x, packed, None, None, None, None, None, None, None))
    torch.library.opcheck(torch.ops.fusegen.gemm.default,
                          ("qkv_rmsnorm", x, w, None, None, None, None, None, None, None))


def test_helpers_match_c():
    """fold_a_norm_gamma and pack_glu_weight give the bits of fusegen_fold_a_norm_gamma and
    fusegen_pack_glu_weight (the runtime in the loaded library)."""
    rt = LIB.rt
    n, k = 48, 40
    g = torch.Generator(device="cpu").manual_seed(9)
    w = (torch.randn((2 * n, k), generator=g) * 3).to(torch.bfloat16)
    gamma = (torch.rand((k,), generator=g) * 2).to(torch.bfloat16)
    c = w.clone()
    st = rt.fusegen_fold_a_norm_gamma(ctypes.c_void_p(c.data_ptr()), _capi.DTYPE_BF16, _capi.LAYOUT_NK,
                                      ctypes.c_int64(2 * n), ctypes.c_int64(k), ctypes.c_int64(0),
                                      ctypes.c_void_p(gamma.data_ptr()), _capi.DTYPE_BF16)
    assert st == 0
    assert torch.equal(fusegen_torch.fold_a_norm_gamma(w, gamma).view(torch.int16), c.view(torch.int16))
    packed = torch.empty_like(w)
    st = rt.fusegen_pack_glu_weight(ctypes.c_void_p(packed.data_ptr()), ctypes.c_void_p(w[:n].data_ptr()),
                                    ctypes.c_void_p(w[n:].data_ptr()), _capi.DTYPE_BF16, _capi.LAYOUT_NK,
                                    ctypes.c_int64(n), ctypes.c_int64(k))
    assert st == 0
    assert torch.equal(fusegen_torch.pack_glu_weight(w[:n], w[n:]).view(torch.int16), packed.view(torch.int16))


def test_gated_rows_not_whole_blocks():
    x, w, _ = inputs(4, 132, 256, True, seed=3)   # 264 rows: not a multiple of 16
    with pytest.raises(ValueError, match="multiple of 16"):
        gemm("gate_up_rmsnorm_swiglu", x, w)
