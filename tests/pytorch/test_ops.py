"""GPU tests of the PyTorch integration: fusegen::linear_residual_layernorm,
fusegen::block_tail and fusegen::gemm (every other kind of kernel of the default library: kn
weights, RMSNorm, f16, f32 out) against eager PyTorch in float64 on the same inputs, opcheck,
torch.compile(fullgraph=True), bad inputs, and a non-default stream.

Run: FUSEGEN_LIBRARY=build/libfusegen_default.so PYTHONPATH=integrations/pytorch \
         python3 -m pytest -q tests/pytorch
Skipped (with the reason) without PyTorch, without a CUDA device, or when the kernel library
cannot be found; with FUSEGEN_TORCH_REQUIRE_LIBRARY=1 (as CTest runs it) a library that cannot
be loaded is an error instead. The seed of each case is printed (pytest -s shows it)."""

import os
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)
if torch.cuda.get_device_capability() < (8, 0):
    pytest.skip("the default library's kernels need compute capability 8.0 or later",
                allow_module_level=True)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "integrations", "pytorch"))
import fusegen_torch  # noqa: E402

try:
    LIB = fusegen_torch.load_library()
except fusegen_torch.FusegenLibraryError as e:
    if os.environ.get("FUSEGEN_TORCH_REQUIRE_LIBRARY") == "1":
        raise
    pytest.skip(f"the fusegen kernel library cannot be loaded: {e}", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

TOL = 1e-2          # relative L2 error for bf16 outputs (docs/testing.md)
EPS = 1e-5          # the default spec's LayerNorm eps
DEV = torch.device("cuda", torch.cuda.current_device())


def rel_l2(got, ref):
    got = got.double()
    assert torch.isfinite(got).all(), "non-finite values in the output"
    return ((got - ref).norm() / ref.norm()).item()


def make_fused(m, n, k, seed, device=DEV):
    """bf16 inputs of the fused op: x [M,K], weight [N,K], bias/gamma/beta [N], residual [M,N]."""
    g = torch.Generator(device="cpu").manual_seed(seed)

    def u(shape, lo, hi):
        return (torch.rand(shape, generator=g, dtype=torch.float32) * (hi - lo) + lo).to(
            device=device, dtype=torch.bfloat16)

    ws = 1.0 / k ** 0.5
    return dict(x=u((m, k), -1, 1), weight=u((n, k), -ws, ws), bias=u((n,), -1, 1),
                residual=u((m, n), -1, 1), gamma=u((n,), 0.5, 1.5), beta=u((n,), -0.5, 0.5))


def make_chain(m, n, k, n2, seed, device=DEV):
    t = make_fused(m, n, k, seed, device)
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    ws = 1.0 / n ** 0.5
    w2 = (torch.rand((n2, n), generator=g) * 2 * ws - ws).to(device=device, dtype=torch.bfloat16)
    b2 = (torch.rand((n2,), generator=g) * 2 - 1).to(device=device, dtype=torch.bfloat16)
    return dict(x=t["x"], w1=t["weight"], b1=t["bias"], residual=t["residual"], gamma=t["gamma"],
                beta=t["beta"], w2=w2, b2=b2)


def ref_fused(t, eps=EPS):
    """Eager PyTorch in float64 on the same (bf16) inputs."""
    d = {k: v.double() for k, v in t.items()}
    pre = F.linear(d["x"], d["weight"], d["bias"]) + d["residual"]
    y = torch.relu(F.layer_norm(pre, (pre.shape[-1],), d["gamma"], d["beta"], eps))
    return y, pre


def ref_chain(t, eps=EPS):
    d = {k: v.double() for k, v in t.items()}
    pre = F.linear(d["x"], d["w1"], d["b1"]) + d["residual"]
    h = F.layer_norm(pre, (pre.shape[-1],), d["gamma"], d["beta"], eps)
    return torch.relu(F.linear(h, d["w2"], d["b2"]))


def fused_args(t, eps=EPS):
    return (t["x"], t["weight"], t["bias"], t["residual"], t["gamma"], t["beta"], eps)


def chain_args(t, eps=EPS):
    return (t["x"], t["w1"], t["b1"], t["residual"], t["gamma"], t["beta"], t["w2"], t["b2"], eps)


# ---- the library --------------------------------------------------------------------------------

def test_kernels_listed():
    ks = fusegen_torch.kernels()
    assert ks, "the library lists no kernels"
    names = {k.name for k in ks}
    assert any(k.spec_kernel == "proj_bias_residual_layernorm" for k in ks)
    assert any(k.spec_kernel == "block_tail" for k in ks)
    for k in ks:
        assert k.strategy in ("none", "row", "split", "cluster")
        assert len(k.tile) == 3 and all(v > 0 for v in k.tile)
    chosen = fusegen_torch.selected_kernel("linear_residual_layernorm", 1003, 1024, 1024)
    assert chosen in names
    print(f"{len(ks)} kernels; 1003x1024x1024 runs {chosen}")


# ---- correctness against float64 ----------------------------------------------------------------

FUSED_SHAPES = [  # (M, N, K)
    (1003, 1024, 1024),
    (64, 768, 3072),
    (517, 320, 320),
    (100, 128, 64),      # a row kernel (N within one tile)
    (129, 4096, 512),    # wide rows: split
    (1, 256, 64),        # one row
]


@pytest.mark.parametrize("m,n,k", FUSED_SHAPES)
def test_linear_residual_layernorm(m, n, k):
    seed = 1000 + m + n + k
    t = make_fused(m, n, k, seed)
    y, pre = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    torch.cuda.synchronize()
    ry, rpre = ref_fused(t)
    ey, epre = rel_l2(y, ry), rel_l2(pre, rpre)
    kernel = fusegen_torch.selected_kernel("linear_residual_layernorm", m, n, k)
    print(f"seed {seed} {m}x{n}x{k} {kernel}: rel L2 y {ey:.2e} pre_norm {epre:.2e}")
    assert y.shape == (m, n) and pre.shape == (m, n)
    assert y.dtype == torch.bfloat16 and pre.dtype == torch.bfloat16
    assert ey <= TOL, f"y: relative L2 error {ey:.3e} > {TOL} (seed {seed}, {kernel})"
    assert epre <= TOL, f"pre_norm: relative L2 error {epre:.3e} > {TOL} (seed {seed}, {kernel})"


CHAIN_SHAPES = [  # (M, N, K, N2)
    (517, 320, 320, 520),
    (1003, 768, 768, 3072),
    (256, 1024, 1024, 4096),
    (77, 128, 256, 520),   # a row kernel for GEMM1
]


@pytest.mark.parametrize("m,n,k,n2", CHAIN_SHAPES)
def test_block_tail(m, n, k, n2):
    seed = 2000 + m + n + k + n2
    t = make_chain(m, n, k, n2, seed)
    out2 = torch.ops.fusegen.block_tail(*chain_args(t))
    torch.cuda.synchronize()
    e = rel_l2(out2, ref_chain(t))
    kernel = fusegen_torch.selected_kernel("block_tail", m, n, k, n2)
    print(f"seed {seed} {m}x{n}x{k} -> {n2} {kernel}: rel L2 {e:.2e}")
    assert out2.shape == (m, n2) and out2.dtype == torch.bfloat16
    assert e <= TOL, f"out2: relative L2 error {e:.3e} > {TOL} (seed {seed}, {kernel})"


def test_wrappers_flatten_leading_dims():
    t = make_fused(2 * 37, 256, 128, 7)
    x3 = t["x"].view(2, 37, 128)
    r3 = t["residual"].view(2, 37, 256)
    y, pre = fusegen_torch.linear_residual_layernorm(x3, t["weight"], t["bias"], r3, t["gamma"],
                                                     t["beta"])
    y2, pre2 = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    assert y.shape == (2, 37, 256) and pre.shape == (2, 37, 256)
    assert torch.equal(y.view(-1, 256), y2) and torch.equal(pre.view(-1, 256), pre2)
    c = make_chain(2 * 37, 256, 128, 520, 8)
    out = fusegen_torch.block_tail(c["x"].view(2, 37, 128), c["w1"], c["b1"],
                                   c["residual"].view(2, 37, 256), c["gamma"], c["beta"], c["w2"],
                                   c["b2"])
    assert out.shape == (2, 37, 520)
    assert torch.equal(out.view(-1, 520), torch.ops.fusegen.block_tail(*chain_args(c)))


def test_empty_batch():
    t = make_fused(0, 256, 128, 9)
    y, pre = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    assert y.shape == (0, 256) and pre.shape == (0, 256)


def test_deterministic():
    t = make_fused(333, 1024, 512, 11)
    a = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    b = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


# ---- opcheck ------------------------------------------------------------------------------------
# opcheck's default tests: test_schema, test_autograd_registration, test_faketensor,
# test_aot_dispatch_dynamic. None needs an autograd formula here: the inputs do not require
# grad, so test_autograd_registration returns early and test_aot_dispatch_dynamic (which uses
# check_gradients="auto") compares forward outputs only. So the default list runs as is.

def test_opcheck_linear_residual_layernorm():
    for m, n, k in [(64, 256, 128), (203, 1024, 256)]:
        t = make_fused(m, n, k, 21 + m)
        torch.library.opcheck(torch.ops.fusegen.linear_residual_layernorm.default, fused_args(t))


def test_opcheck_block_tail():
    for m, n, k, n2 in [(64, 256, 128, 520), (203, 1024, 256, 1024)]:
        t = make_chain(m, n, k, n2, 31 + m)
        torch.library.opcheck(torch.ops.fusegen.block_tail.default, chain_args(t))


def test_fake_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    t = {k: mode.from_tensor(v) for k, v in make_fused(40, 256, 128, 41).items()}
    c = {k: mode.from_tensor(v) for k, v in make_chain(40, 256, 128, 520, 42).items()}
    with mode:
        y, pre = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
        out2 = torch.ops.fusegen.block_tail(*chain_args(c))
    assert y.shape == (40, 256) and pre.shape == (40, 256) and y.dtype == torch.bfloat16
    assert out2.shape == (40, 520) and out2.dtype == torch.bfloat16
    assert y.device == DEV and out2.device == DEV


# ---- torch.compile ----------------------------------------------------------------------------------

class TailBlock(torch.nn.Module):
    """A transformer block tail: y, pre = fused(x, residual); out = block_tail(y, pre)."""

    def __init__(self, n, k, n2, seed):
        super().__init__()
        f = make_fused(1, n, k, seed)
        c = make_chain(1, n, n, n2, seed + 1)
        self.w, self.b, self.g, self.be = f["weight"], f["bias"], f["gamma"], f["beta"]
        self.w1, self.b1, self.g1, self.be1 = c["w1"], c["b1"], c["gamma"], c["beta"]
        self.w2, self.b2 = c["w2"], c["b2"]

    def forward(self, x, residual):
        y, pre = fusegen_torch.linear_residual_layernorm(x, self.w, self.b, residual, self.g,
                                                         self.be, EPS)
        out = fusegen_torch.block_tail(y, self.w1, self.b1, pre, self.g1, self.be1, self.w2,
                                       self.b2, EPS)
        return y, pre, out


def test_torch_compile_fullgraph():
    torch._dynamo.reset()
    n, k, n2 = 256, 128, 520
    block = TailBlock(n, k, n2, 51)
    x = make_fused(2 * 61, n, k, 52)
    xin = x["x"].view(2, 61, k)
    rin = x["residual"].view(2, 61, n)
    eager = block(xin, rin)
    compiled = torch.compile(block, fullgraph=True)
    got = compiled(xin, rin)
    torch.cuda.synchronize()
    for e, g in zip(eager, got):
        assert e.shape == g.shape and e.dtype == g.dtype
        assert torch.equal(e, g), "torch.compile gave other values than eager calls of the op"
    # and once more with other inputs (no recompilation needed, same result as eager)
    x2 = make_fused(2 * 61, n, k, 53)
    xin2, rin2 = x2["x"].view(2, 61, k), x2["residual"].view(2, 61, n)
    for e, g in zip(block(xin2, rin2), compiled(xin2, rin2)):
        assert torch.equal(e, g)


def test_torch_compile_with_surrounding_ops():
    torch._dynamo.reset()
    t = make_fused(96, 512, 256, 61)

    def f(x, w, b, r, g, be):
        y, pre = torch.ops.fusegen.linear_residual_layernorm(x * 0.5, w, b, r, g, be, EPS)
        return y.float().sum(dim=-1), pre

    args = (t["x"], t["weight"], t["bias"], t["residual"], t["gamma"], t["beta"])
    eager = f(*args)
    got = torch.compile(f, fullgraph=True)(*args)
    torch.cuda.synchronize()
    assert torch.equal(eager[1], got[1])
    torch.testing.assert_close(got[0], eager[0], rtol=1e-4, atol=1e-3)


# ---- bad inputs -------------------------------------------------------------------------------------

def test_bad_dtype():
    t = make_fused(64, 256, 128, 71)
    t["x"] = t["x"].float()
    with pytest.raises(Exception, match=r"x must be torch\.bfloat16.*float32"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    c = make_chain(64, 256, 128, 520, 72)
    c["w2"] = c["w2"].half()
    with pytest.raises(Exception, match=r"w2 must be torch\.bfloat16.*float16"):
        torch.ops.fusegen.block_tail(*chain_args(c))


def test_not_row_major():
    t = make_fused(64, 256, 128, 74)
    t["weight"] = t["weight"].t().contiguous().t()   # [N,K] shape, column-major strides
    with pytest.raises(Exception, match=r"weight must be row-major with adjacent elements in a row"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    t = make_fused(64, 256, 128, 75)
    t["bias"] = torch.stack([t["bias"], t["bias"]], dim=1)[:, 0]   # stride 2
    with pytest.raises(Exception, match=r"bias must be row-major with adjacent elements in a row; got strides \[2\]"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))


def _wide(t, extra):
    """t as the first columns of a wider matrix: rows t.shape[1] + extra elements apart."""
    w = torch.zeros((t.shape[0], t.shape[1] + extra), dtype=t.dtype, device=t.device)
    w[:, :t.shape[1]] = t
    v = w[:, :t.shape[1]]
    assert not v.is_contiguous() and v.stride(0) == t.shape[1] + extra
    return v


def test_row_strided_views():
    # Slices of wider matrices run as they are (the runtime's leading dimensions), with the
    # same kernel and so the same bits as packed copies; the C++ path leaves them to Python.
    t = make_fused(203, 256, 128, 73)
    ref = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    views = dict(t, x=_wide(t["x"], 24), weight=_wide(t["weight"], 8), residual=_wide(t["residual"], 64))
    got = torch.ops.fusegen.linear_residual_layernorm(*fused_args(views))
    assert torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1])
    got = fusegen_torch.linear_residual_layernorm(*fused_args(views))   # the wrapper, twice
    got = fusegen_torch.linear_residual_layernorm(*fused_args(views))
    assert torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1])
    c = make_chain(203, 256, 128, 520, 76)
    ref2 = torch.ops.fusegen.block_tail(*chain_args(c))
    cv = dict(c, x=_wide(c["x"], 8), w1=_wide(c["w1"], 16), residual=_wide(c["residual"], 8), w2=_wide(c["w2"], 8))
    assert torch.equal(torch.ops.fusegen.block_tail(*chain_args(cv)), ref2)
    # fusegen::gemm too, with weights stored [K, N]
    x, w = rand((100, 64), 77, -1, 1), rand((64, 256), 78, -0.1, 0.1)     # w: [K, N]
    b, g = t["bias"], t["gamma"]
    y = fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w, bias=b, gamma=g)
    assert torch.equal(fusegen_torch.gemm("proj_bias_rmsnorm_silu", _wide(x, 8), _wide(w, 40), bias=b, gamma=g), y)
    # a row stride the kernels cannot take (not a multiple of 8 elements, 16 bytes)
    with pytest.raises(ValueError, match=r"x's rows are 132 elements apart, not a multiple of 8"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(dict(t, x=_wide(t["x"], 4))))
    with pytest.raises(ValueError, match=r"w2's rows are 260 elements apart, not a multiple of 8"):
        torch.ops.fusegen.block_tail(*chain_args(dict(c, w2=_wide(c["w2"], 4))))
    with pytest.raises(ValueError, match=r"weight's rows are 260 elements apart"):
        fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, _wide(w, 4), bias=b, gamma=g)


def test_wrong_eps():
    t = make_fused(64, 256, 128, 75)
    with pytest.raises(Exception, match=r"eps = 1e-06 but kernel \S+ was generated with eps"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t, eps=1e-6))
    c = make_chain(64, 256, 128, 520, 76)
    with pytest.raises(Exception, match=r"eps = 0\.001 but kernel"):
        torch.ops.fusegen.block_tail(*chain_args(c, eps=1e-3))


def test_n_not_multiple_of_8():
    t = make_fused(64, 100, 128, 77)
    with pytest.raises(Exception, match=r"N \(weight.shape\[0\]\) = 100 must be a multiple of 8"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    t = make_fused(64, 256, 100, 78)
    with pytest.raises(Exception, match=r"K \(x.shape\[1\]\) = 100 must be a multiple of 8"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    c = make_chain(64, 256, 128, 500, 79)
    with pytest.raises(Exception, match=r"N2 \(w2.shape\[0\]\) = 500 must be a multiple of 8"):
        torch.ops.fusegen.block_tail(*chain_args(c))


def test_bad_shape_and_device():
    t = make_fused(64, 256, 128, 80)
    t["residual"] = t["residual"][:32].contiguous()
    with pytest.raises(Exception, match=r"residual must have shape \[64, 256\], got \[32, 256\]"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    t = make_fused(64, 256, 128, 81)
    t["bias"] = t["bias"].cpu()
    with pytest.raises(Exception, match=r"bias must be a CUDA tensor"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    t = make_fused(64, 256, 128, 82, device="cpu")
    with pytest.raises(Exception, match=r"x must be a CUDA tensor"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))


def test_misaligned_view_reports_fusegen_status():
    # A contiguous view that starts 2 elements into its storage: not 16-byte aligned. The
    # runtime refuses it before launch; the op raises with the status name and the detail.
    t = make_fused(64, 256, 128, 83)
    flat = torch.empty(64 * 128 + 2, dtype=torch.bfloat16, device=DEV)
    flat[2:] = t["x"].reshape(-1)
    t["x"] = flat[2:].view(64, 128)
    assert t["x"].is_contiguous() and t["x"].data_ptr() % 16 != 0
    with pytest.raises(RuntimeError, match=r"FUSEGEN_ERR_MISALIGNED.*args\.a"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))


def test_no_autograd_formula():
    # Inference ops: no backward is registered, so backward through them is PyTorch's error.
    t = make_fused(64, 256, 128, 84)
    t["weight"].requires_grad_(True)
    y, _ = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    with pytest.raises(RuntimeError, match=r"no autograd formula"):
        y.float().sum().backward()


def test_wrapper_with_grad_goes_through_the_op():
    # The wrappers skip the dispatcher in plain eager calls; an input that needs a gradient
    # takes the registered op, so the same error comes back instead of a silent no-grad result.
    t = make_fused(64, 256, 128, 85)
    t["weight"].requires_grad_(True)
    y, _ = fusegen_torch.linear_residual_layernorm(t["x"], t["weight"], t["bias"], t["residual"],
                                                   t["gamma"], t["beta"])
    assert y.requires_grad
    with pytest.raises(RuntimeError, match=r"no autograd formula"):
        y.float().sum().backward()
    with torch.no_grad():   # no gradient wanted: the direct call, bitwise the op's result
        y2, _ = fusegen_torch.linear_residual_layernorm(t["x"], t["weight"], t["bias"],
                                                        t["residual"], t["gamma"], t["beta"])
    assert not y2.requires_grad and torch.equal(y2, y.detach())


# ---- streams and devices ----------------------------------------------------------------------------

def test_non_default_stream():
    """The op runs on the current stream: on a side stream it sees writes queued before it
    there (after a long sleep), which a launch on another stream would race past."""
    m, n, k = 1003, 1024, 1024
    t = make_fused(m, n, k, 91)
    fresh = make_fused(m, n, k, 92)
    ry, rpre = ref_fused(dict(t, x=fresh["x"], residual=fresh["residual"]))
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(main)
    with torch.cuda.stream(side):
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(200_000_000)     # ~0.1 s of GPU time on the side stream
        t["x"].copy_(fresh["x"])
        t["residual"].copy_(fresh["residual"])
        y, pre = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    main.wait_stream(side)
    torch.cuda.synchronize()
    ey, epre = rel_l2(y, ry), rel_l2(pre, rpre)
    print(f"side stream: rel L2 y {ey:.2e} pre_norm {epre:.2e}")
    assert ey <= TOL and epre <= TOL, "the op did not run in order on the current (side) stream"
    c = make_chain(517, 320, 320, 520, 93)
    with torch.cuda.stream(side):
        out2 = torch.ops.fusegen.block_tail(*chain_args(c))
    main.wait_stream(side)
    torch.cuda.synchronize()
    assert rel_l2(out2, ref_chain(c)) <= TOL


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_second_device():
    dev = torch.device("cuda", 1)
    t = make_fused(203, 1024, 256, 95, device=dev)
    y, pre = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    assert y.device == dev
    torch.cuda.synchronize(dev)
    ry, rpre = ref_fused(t)
    assert rel_l2(y, ry) <= TOL and rel_l2(pre, rpre) <= TOL



# ---- fusegen::gemm: any spec kernel of the library ---------------------------------------------

def rand(shape, seed, lo, hi, dtype=torch.bfloat16):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float32) * (hi - lo) + lo).to(DEV, dtype)


def gemm_tol(dtype):
    return 1e-5 if dtype == torch.float32 else TOL   # docs/testing.md


@pytest.mark.parametrize("m,n,k", [(1003, 768, 512), (77, 256, 64), (1, 4096, 256)])
def test_gemm_rmsnorm_silu_kn(m, n, k):
    # proj_bias_rmsnorm_silu: weight stored [K, N] (b_layout kn), eps 1e-6 from the spec
    seed = 3000 + m + n + k
    x, w = rand((m, k), seed, -1, 1), rand((k, n), seed + 1, -k ** -0.5, k ** -0.5)
    b, g = rand((n,), seed + 2, -1, 1), rand((n,), seed + 3, 0.5, 1.5)
    y = fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w, bias=b, gamma=g)
    torch.cuda.synchronize()
    pre = x.double() @ w.double() + b.double()
    ref = F.silu(pre * torch.rsqrt(pre.pow(2).mean(-1, keepdim=True) + 1e-6) * g.double())
    e = rel_l2(y, ref)
    kernel = fusegen_torch.selected_kernel("proj_bias_rmsnorm_silu", m, n, k)
    print(f"seed {seed} {m}x{n}x{k} {kernel}: rel L2 {e:.2e}")
    assert kernel.startswith("proj_bias_rmsnorm_silu_")
    assert y.shape == (m, n) and y.dtype == torch.bfloat16
    assert e <= TOL, f"relative L2 error {e:.3e} > {TOL} (seed {seed}, {kernel})"


def test_gemm_plain_f16_and_f32_kernels():
    m, n, k = 300, 512, 256
    x, w = rand((m, k), 3101, -1, 1), rand((n, k), 3102, -0.1, 0.1)
    out = fusegen_torch.gemm("proj", x, w)                      # no epilogue
    ref = x.double() @ w.double().t()
    assert out.dtype == torch.bfloat16 and rel_l2(out, ref) <= TOL
    # f16 in and out, alpha 0.5 from the spec, then bias and erf GELU (a portable kernel)
    xh, wh, bh = x.half(), w.half(), rand((n,), 3103, -1, 1, torch.float16)
    out = fusegen_torch.gemm("proj_scale_bias_gelu", xh, wh, bias=bh)
    ref = F.gelu(0.5 * (xh.double() @ wh.double().t()) + bh.double())
    e = rel_l2(out, ref)
    assert out.dtype == torch.float16 and e <= TOL, f"f16: {e:.3e}"
    # bf16 in, f32 out: x @ W ([K, N]) + 0.5 * residual (f32, the out dtype), tanh GELU
    wkn = rand((k, n), 3104, -0.1, 0.1)
    r = rand((m, n), 3105, -1, 1, torch.float32)
    out = fusegen_torch.gemm("proj_residual_gelu_tanh_f32", x, wkn, residual=r)
    ref = F.gelu(x.double() @ wkn.double() + 0.5 * r.double(), approximate="tanh")
    e = rel_l2(out, ref)
    assert out.dtype == torch.float32 and e <= gemm_tol(torch.float32), f"f32: {e:.3e}"


def test_gemm_matches_the_named_ops_bitwise():
    # The same spec kernel and shape select the same kernel: the results are the same bits.
    t = make_fused(517, 1024, 512, 3201)
    y, pre = fusegen_torch.gemm("proj_bias_residual_layernorm", t["x"], t["weight"], bias=t["bias"],
                                residual=t["residual"], gamma=t["gamma"], beta=t["beta"])
    y2, pre2 = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    assert torch.equal(y, y2) and torch.equal(pre, pre2)
    c = make_chain(300, 768, 768, 3072, 3202)
    out2 = fusegen_torch.gemm("block_tail", c["x"], c["w1"], bias=c["b1"], residual=c["residual"],
                              gamma=c["gamma"], beta=c["beta"], weight2=c["w2"], bias2=c["b2"])
    assert out2.shape == (300, 3072)
    assert torch.equal(out2, torch.ops.fusegen.block_tail(*chain_args(c)))
    # leading dimensions flattened, as in the named wrappers
    y3, pre3 = fusegen_torch.gemm("proj_bias_residual_layernorm", t["x"].view(11, 47, 512), t["weight"],
                                  bias=t["bias"], residual=t["residual"].view(11, 47, 1024),
                                  gamma=t["gamma"], beta=t["beta"])
    assert y3.shape == (11, 47, 1024) and torch.equal(y3.view(517, 1024), y)


def test_selected_kernel_names():
    # a spec kernel's name (block_tail is one in the default library), or the op's own name
    assert fusegen_torch.selected_kernel("block_tail", 512, 768, 768, 3072) == \
        fusegen_torch.selected_kernel("fusegen::block_tail", 512, 768, 768, 3072)
    assert fusegen_torch.selected_kernel("proj_bias_rmsnorm_silu", 512, 256, 64).startswith("proj_bias_rmsnorm_silu_")
    with pytest.raises(ValueError, match=r"kernel block_tail is a chain: give N2"):
        fusegen_torch.selected_kernel("block_tail", 512, 768, 768)
    with pytest.raises(ValueError, match=r"unknown op 'layer_norm'.*proj_bias_rmsnorm_silu"):
        fusegen_torch.selected_kernel("layer_norm", 512, 768, 768)


def test_gemm_bad_inputs():
    x, w = rand((64, 128), 3301, -1, 1), rand((128, 256), 3302, -0.1, 0.1)    # w: [K, N]
    b, g = rand((256,), 3303, -1, 1), rand((256,), 3304, 0.5, 1.5)
    with pytest.raises(ValueError, match=r"has no kernel 'proj_rmsnorm'.*proj_bias_rmsnorm_silu"):
        fusegen_torch.gemm("proj_rmsnorm", x, w, bias=b, gamma=g)
    with pytest.raises(ValueError, match=r"needs gamma \(its epilogue bias\+rmsnorm\+silu\)"):
        fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w, bias=b)
    with pytest.raises(ValueError, match=r"does not read beta"):
        fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w, bias=b, gamma=g, beta=g)
    with pytest.raises(ValueError, match=r"weight must be \[K, N\] \(kernel proj_bias_rmsnorm_silu has b_layout kn\) "
                                         r"with K = 128 as in x, got shape \[256, 128\]"):
        fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w.t().contiguous(), bias=b, gamma=g)
    with pytest.raises(ValueError, match=r"residual must have shape \[64, 256\], got \[64, 128\]"):
        fusegen_torch.gemm("proj_residual_gelu_tanh_f32", x, w, residual=rand((64, 128), 3308, -1, 1, torch.float32))
    c = make_chain(64, 256, 128, 520, 3309)
    with pytest.raises(ValueError, match=r"weight2 must be \[N2, N\] .* with N = 256 as GEMM1's output, got shape \[256, 520\]"):
        fusegen_torch.gemm("block_tail", c["x"], c["w1"], bias=c["b1"], residual=c["residual"], gamma=c["gamma"],
                           beta=c["beta"], weight2=c["w2"].t().contiguous(), bias2=c["b2"])
    with pytest.raises(TypeError, match=r"x must be torch\.float16 \(kernel proj_scale_bias_gelu takes a = f16\)"):
        fusegen_torch.gemm("proj_scale_bias_gelu", x, w.t().contiguous().half(), bias=b.half())
    with pytest.raises(TypeError, match=r"residual must be torch\.float32"):
        fusegen_torch.gemm("proj_residual_gelu_tanh_f32", x, w, residual=rand((64, 256), 3305, -1, 1))
    with pytest.raises(ValueError, match=r"weight2 is required"):
        fusegen_torch.gemm("block_tail", x, w.t().contiguous(), bias=b, residual=rand((64, 256), 3306, -1, 1),
                           gamma=g, beta=g)
    with pytest.raises(ValueError, match=r"single GEMM: weight2"):
        fusegen_torch.gemm("proj", x, w.t().contiguous(), weight2=w)
    with pytest.raises(ValueError, match=r"N = 100 must be a multiple of 8"):
        fusegen_torch.gemm("proj", x, rand((100, 128), 3307, -1, 1))


def test_gemm_opcheck_fake_and_compile():
    x, w = rand((96, 256), 3401, -1, 1), rand((256, 512), 3402, -0.1, 0.1)
    b, g = rand((512,), 3403, -1, 1), rand((512,), 3404, 0.5, 1.5)
    args = ("proj_bias_rmsnorm_silu", x, w, b, None, g, None, None, None, None)
    torch.library.opcheck(torch.ops.fusegen.gemm.default, args)
    c = make_chain(64, 256, 128, 520, 3405)
    torch.library.opcheck(torch.ops.fusegen.gemm.default,
                          ("block_tail", c["x"], c["w1"], c["b1"], c["residual"], c["gamma"], c["beta"],
                           c["w2"], c["b2"], None))
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode()
    fx, fw, fb, fg = (mode.from_tensor(t) for t in (x, w, b, g))
    with mode:
        (y,) = torch.ops.fusegen.gemm("proj_bias_rmsnorm_silu", fx, fw, fb, None, fg, None, None, None, None)
        # the fake refuses what the op would: inputs the kernel does not read, wrong operand dtypes
        with pytest.raises(ValueError, match=r"single GEMM: weight2"):
            torch.ops.fusegen.gemm("proj", fx, fw, None, None, None, None, fw, None, None)
        with pytest.raises(ValueError, match=r"needs gamma"):
            torch.ops.fusegen.gemm("proj_bias_rmsnorm_silu", fx, fw, fb, None, None, None, None, None, None)
        with pytest.raises(TypeError, match=r"x must be torch\.float16"):
            torch.ops.fusegen.gemm("proj_scale_bias_gelu", fx, fw, fb, None, None, None, None, None, None)
    assert y.shape == (96, 512) and y.dtype == torch.bfloat16 and y.device == DEV
    torch._dynamo.reset()

    def f(x, w, b, g):
        return fusegen_torch.gemm("proj_bias_rmsnorm_silu", x * 2, w, bias=b, gamma=g).float().sum(-1)

    eager = f(x, w, b, g)
    got = torch.compile(f, fullgraph=True)(x, w, b, g)
    torch.cuda.synchronize()
    torch.testing.assert_close(got, eager, rtol=1e-4, atol=1e-3)


# ---- the C++ happy path (fusegen_torch/_fast.cpp) ---------------------------------------------------
# A repeated valid call runs from C++; anything else falls back to the Python path. With
# FUSEGEN_TORCH_REQUIRE_FAST=1 (scripts/gpu-check.sh sets it) the C++ path must be in use.

from fusegen_torch import _fast  # noqa: E402


def _fast_module():
    status = fusegen_torch.fast_path_status()   # builds the C++ path if no op call has
    mod = _fast.module()
    assert (mod is not None) == (status == "on"), status
    if mod is None:
        if os.environ.get("FUSEGEN_TORCH_REQUIRE_FAST") == "1":
            pytest.fail(f"FUSEGEN_TORCH_REQUIRE_FAST=1 but the C++ path is not in use: {_fast.status()}")
        pytest.skip(f"the C++ path is not in use: {_fast.status()}")
    return mod


def test_fast_path_bitwise_as_python(monkeypatch):
    mod = _fast_module()
    t = make_fused(517, 768, 384, 101)
    c = make_chain(517, 768, 384, 1040, 102)
    # The plans, made in Python: the first by selected_kernel (which does not hand it on), the
    # op's first call hands it to the C++ path.
    fusegen_torch.selected_kernel("linear_residual_layernorm", 517, 768, 384)
    torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    torch.ops.fusegen.block_tail(*chain_args(c))
    before = mod.runs()
    y, pre = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    y_w, pre_w = fusegen_torch.linear_residual_layernorm(*fused_args(t))
    out2 = torch.ops.fusegen.block_tail(*chain_args(c))
    assert mod.runs() == before + 3, f"a call of a seen shape fell back: {mod.last_fallback()}"
    with monkeypatch.context() as mp:
        mp.setattr(_fast, "module", lambda: None)   # the Python path only
        y_py, pre_py = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
        out2_py = torch.ops.fusegen.block_tail(*chain_args(c))
    assert mod.runs() == before + 3
    torch.cuda.synchronize()
    assert torch.equal(y, y_py) and torch.equal(pre, pre_py)
    assert torch.equal(y_w, y_py) and torch.equal(pre_w, pre_py)
    assert torch.equal(out2, out2_py)
    ry, rpre = ref_fused(t)
    assert rel_l2(y, ry) <= TOL and rel_l2(pre, rpre) <= TOL
    assert rel_l2(out2, ref_chain(c)) <= TOL


def test_fast_path_gemm():
    mod = _fast_module()
    x, w = rand((300, 256), 3501, -1, 1), rand((256, 768), 3502, -0.1, 0.1)    # w: [K, N]
    b, g = rand((768,), 3503, -1, 1), rand((768,), 3504, 0.5, 1.5)
    c = make_chain(300, 256, 128, 520, 3505)
    tail = dict(bias=c["b1"], residual=c["residual"], gamma=c["gamma"], beta=c["beta"], weight2=c["w2"],
                bias2=c["b2"])
    y0 = fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w, bias=b, gamma=g)       # plans made here
    o0 = fusegen_torch.gemm("block_tail", c["x"], c["w1"], **tail)
    before = mod.runs()
    y1 = fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w, bias=b, gamma=g)
    (y2,) = torch.ops.fusegen.gemm("proj_bias_rmsnorm_silu", x, w, b, None, g, None, None, None, None)
    o1 = fusegen_torch.gemm("block_tail", c["x"], c["w1"], **tail)
    assert mod.runs() == before + 3, f"a call of seen sizes fell back: {mod.last_fallback()}"
    assert torch.equal(y0, y1) and torch.equal(y0, y2) and torch.equal(o0, o1)
    # what the C++ path does not take runs in Python, with Python's results and errors
    assert torch.equal(fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, _wide(w, 8), bias=b, gamma=g), y0)
    with pytest.raises(ValueError, match=r"does not read beta"):
        fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w, bias=b, gamma=g, beta=b)
    with pytest.raises(TypeError, match=r"gamma must be torch\.bfloat16"):
        fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w, bias=b, gamma=g.float())
    with pytest.raises(ValueError, match=r"needs bias2"):
        fusegen_torch.gemm("block_tail", c["x"], c["w1"], **dict(tail, bias2=None))
    assert mod.runs() == before + 3, "a call the C++ path should leave to Python ran from C++"


def test_fast_path_falls_back_with_the_python_errors():
    mod = _fast_module()
    t = make_fused(96, 256, 128, 103)
    torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))   # the plan exists from here on
    before = mod.runs()
    with pytest.raises(Exception, match=r"eps = 1e-06 but kernel \S+ was generated with eps"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(t, eps=1e-6))
    bad = dict(t, residual=t["residual"][:, :128])
    with pytest.raises(Exception, match=r"residual must have shape \[96, 256\], got \[96, 128\]"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(bad))
    bad = dict(t, gamma=t["gamma"].float())
    with pytest.raises(Exception, match=r"gamma must be torch\.bfloat16.*float32"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(bad))
    # 2 bytes past a 16-byte boundary: the runtime refuses it (nothing launched), then Python
    # runs the call again and raises with the status and its detail.
    flat = torch.empty(96 * 128 + 8, dtype=torch.bfloat16, device=DEV)
    x_off = flat[1:1 + 96 * 128].view(96, 128)
    x_off.copy_(t["x"])
    with pytest.raises(RuntimeError, match=r"FUSEGEN_ERR_MISALIGNED.*args\.a"):
        torch.ops.fusegen.linear_residual_layernorm(*fused_args(dict(t, x=x_off)))
    assert mod.runs() == before, "a call that raised ran from C++"


def test_fast_path_on_a_side_stream():
    """The C++ path launches on the current stream too (see test_non_default_stream)."""
    mod = _fast_module()
    m, n, k = 1003, 1024, 1024
    t = make_fused(m, n, k, 104)
    fresh = make_fused(m, n, k, 105)
    torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))   # the plan
    torch.cuda.synchronize()
    ry, rpre = ref_fused(dict(t, x=fresh["x"], residual=fresh["residual"]))
    before = mod.runs()
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(main)
    with torch.cuda.stream(side):
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(200_000_000)
        t["x"].copy_(fresh["x"])
        t["residual"].copy_(fresh["residual"])
        y, pre = torch.ops.fusegen.linear_residual_layernorm(*fused_args(t))
    main.wait_stream(side)
    torch.cuda.synchronize()
    assert mod.runs() == before + 1, f"fell back to Python: {mod.last_fallback()}"
    assert rel_l2(y, ry) <= TOL and rel_l2(pre, rpre) <= TOL, "not in order on the side stream"


def test_fast_path_can_be_turned_off():
    """FUSEGEN_TORCH_FAST=0: the ops run in Python and say so (a fresh process: the choice is
    made once)."""
    import subprocess
    code = "import fusegen_torch; print(fusegen_torch.fast_path_status())"
    env = dict(os.environ, FUSEGEN_TORCH_FAST="0",
               PYTHONPATH=os.pathsep.join([os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                        "integrations", "pytorch"),
                                           os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "off (FUSEGEN_TORCH_FAST=0)"
