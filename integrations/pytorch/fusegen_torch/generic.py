"""fusegen::gemm: any kernel of the loaded library, named by its spec kernel, as one custom op.

    fusegen::gemm(str kernel, Tensor x, Tensor weight, Tensor? bias, Tensor? residual,
                  Tensor? gamma, Tensor? beta, Tensor? weight2, Tensor? bias2,
                  Tensor? residual2) -> Tensor[]

`kernel` is a kernel's "name" in the spec (fusegen_torch.kernels() lists them as spec_kernel);
the op runs the best of that spec kernel's variants for the shape and device, so the constants
the spec gave it (eps, alpha, beta) are the ones used, never another kernel's with the same
signature. The inputs it needs follow from the kernel's epilogue: bias for a bias op, residual
for a residual op, gamma (and beta) for an affine norm; weight2, bias2, residual2 for a chain's
GEMM2. Giving one the kernel does not read is an error, as is leaving out one it reads. The
result is [out] (a chain: [out2]) followed by the store ops' outputs in their order, GEMM1's
([M, N]) before GEMM2's ([M, N2]).

dtypes are the spec kernel's: x has its `a` dtype, weight (and weight2) its `b` dtype, and
every other tensor, input or output, its `out` dtype. weight is [N, K] for b_layout "nk"
(nn.Linear's) and [K, N] for "kn"; weight2 is [N2, N] or [N, N2] by the chain's layout.
A repeated valid call with packed tensors (sizes seen before) runs from the C++ path
(_fast.cpp) as the named ops do; every other call, and every error, takes the Python path.
"""

from typing import List, Optional

import torch

from . import _capi, _fast
from .ops import _check, _check_2d, _direct, _on_device, _plan, _strided_key, _stream, _with_lds, _workspace

GEMM = "fusegen::gemm"

_TORCH_DTYPES = {_capi.DTYPE_F16: torch.float16, _capi.DTYPE_BF16: torch.bfloat16,
                 _capi.DTYPE_F32: torch.float32}


def _entry(kernel):
    if not isinstance(kernel, str):
        raise TypeError(f"{GEMM}: kernel must be a spec kernel's name (str), got {type(kernel).__name__}")
    return _capi.spec_kernel_entry(_capi.load_library(), kernel)


def _dims(e, x, weight, weight2):
    """m, n, k, n2 as x, weight and weight2 give them under the kernel's layouts (n2 0 unless a
    chain)."""
    m, k = x.shape
    n = weight.shape[1] if e.b_layout == _capi.LAYOUT_KN else weight.shape[0]
    n2 = 0
    if e.chain and weight2 is not None:
        n2 = weight2.shape[1] if e.b2_layout == _capi.LAYOUT_KN else weight2.shape[0]
    return m, n, k, n2


def _check_present(name, e, bias, residual, gamma, beta, weight2, bias2, residual2):
    """The optional inputs given are exactly those the kernel reads (ValueError naming the
    epilogue otherwise). Shapes and dtypes are not looked at: the fake kernel runs this too."""
    op = f"{GEMM}({name})"
    # the messages' epilogue names, made only for a message (this runs on every call)
    first = lambda: f"{'GEMM1 ' if e.chain else ''}epilogue {_capi._s(e.epilogue) or 'none'}"
    second = lambda: f"GEMM2 epilogue {_capi._s(e.epilogue2) or 'none'}"
    wanted = [("bias", bias, e.uses_bias, first), ("residual", residual, e.uses_residual, first),
              ("gamma", gamma, e.uses_gamma, first), ("beta", beta, e.uses_beta, first)]
    if e.chain:
        if weight2 is None:
            raise ValueError(f"{op}: kernel {name} is a chain (GEMM -> {_capi._s(e.epilogue)} -> "
                             f"GEMM -> {_capi._s(e.epilogue2)}): weight2 is required")
        wanted += [("bias2", bias2, e.uses_bias2, second), ("residual2", residual2, e.uses_residual2, second)]
    else:
        for arg, t in (("weight2", weight2), ("bias2", bias2), ("residual2", residual2)):
            if t is not None:
                raise ValueError(f"{op}: kernel {name} is a single GEMM: {arg} is only for a chain's GEMM2")
    for arg, t, used, epilogue in wanted:
        if t is None and used:
            raise ValueError(f"{op}: kernel {name} needs {arg} (its {epilogue()})")
        if t is not None and not used:
            raise ValueError(f"{op}: kernel {name} does not read {arg} (its {epilogue()}); leave it out")


def _check_operand_dtypes(name, e, x, weight, weight2):
    op = f"{GEMM}({name})"
    for arg, t, want in (("x", x, e.a), ("weight", weight, e.b), ("weight2", weight2, e.b)):
        if t is not None and t.dtype != _TORCH_DTYPES[want]:
            raise TypeError(f"{op}: {arg} must be {_TORCH_DTYPES[want]} (kernel {name} takes "
                            f"{'a' if arg == 'x' else 'b'} = {_capi.DTYPE_NAMES[want]}), got {t.dtype}")


def _check_known(name, e, x, weight, bias, residual, gamma, beta, weight2, bias2, residual2):
    """What a trace can know too (the fake kernel runs this): the operands' ranks and dtypes and
    which optional inputs are given. Returns m, n, k, n2 as the operands give them."""
    op = f"{GEMM}({name})"
    _check_2d(op, "x", x)
    _check_2d(op, "weight", weight)
    _check_present(name, e, bias, residual, gamma, beta, weight2, bias2, residual2)
    if e.chain:
        _check_2d(op, "weight2", weight2)
    _check_operand_dtypes(name, e, x, weight, weight2)
    return _dims(e, x, weight, weight2)


def _check_inputs(name, entry, x, weight, bias, residual, gamma, beta, weight2, bias2, residual2):
    """Every input against the spec kernel: present exactly when its epilogue reads it, with its
    dtype, device, shape and layout. Returns m, n, k, n2 and the leading dimensions (lda, ldb,
    ldr, ldb2; 0 where packed: matrices may be row slices of wider ones)."""
    op = f"{GEMM}({name})"
    e = entry.contents
    m, n, k, n2 = _check_known(name, e, x, weight, bias, residual, gamma, beta, weight2, bias2, residual2)
    t_a, t_b, t_out = (_TORCH_DTYPES[d] for d in (e.a, e.b, e.out))
    al = e.align_elems
    why_a = f"kernel {name} takes a = {_capi.DTYPE_NAMES[e.a]}"
    why_b = f"kernel {name} takes b = {_capi.DTYPE_NAMES[e.b]}"
    why_out = (f"kernel {name} has out = {_capi.DTYPE_NAMES[e.out]}, the dtype of its vectors, residuals "
               "and outputs")
    kn = e.b_layout == _capi.LAYOUT_KN
    lda = _check(op, "x", x, t_a, None, (m, k), why_a, al)
    dev = x.device
    # N is read from weight, so a weight of the other layout shows as a K that differs from x's
    if (weight.shape[0] if kn else weight.shape[1]) != k:
        raise ValueError(f"{op}: weight must be {'[K, N]' if kn else '[N, K]'} (kernel {name} has b_layout "
                         f"{_capi.LAYOUT_NAMES[e.b_layout]}) with K = {k} as in x, got shape {list(weight.shape)}")
    ldb = _check(op, "weight", weight, t_b, dev, (k, n) if kn else (n, k), why_b, al)
    n_out = _out_cols(e, n)
    if n_out != n and n % 16 != 0:
        raise ValueError(f"{op}: kernel {name} has a gated activation: weight's {n} gate and up rows must be a "
                         "multiple of 16 (they interleave in blocks of 8: pack_glu_weight)")
    for arg, t in (("bias", bias), ("gamma", gamma), ("beta", beta)):
        if t is not None:
            _check(op, arg, t, t_out, dev, (n_out,), why_out, al)
    ldr = _check(op, "residual", residual, t_out, dev, (m, n_out), why_out, al) if residual is not None else 0
    ldb2 = 0
    if e.chain:
        kn2 = e.b2_layout == _capi.LAYOUT_KN
        if (weight2.shape[0] if kn2 else weight2.shape[1]) != n:
            raise ValueError(f"{op}: weight2 must be {'[N, N2]' if kn2 else '[N2, N]'} (kernel {name}'s GEMM2 has "
                             f"b_layout {_capi.LAYOUT_NAMES[e.b2_layout]}) with N = {n} as GEMM1's output, got "
                             f"shape {list(weight2.shape)}")
        ldb2 = _check(op, "weight2", weight2, t_b, dev, (n, n2) if kn2 else (n2, n), why_b, al)
        if bias2 is not None:
            _check(op, "bias2", bias2, t_out, dev, (n2,), why_out, al)
        if residual2 is not None and _check(op, "residual2", residual2, t_out, dev, (m, n2), why_out, al):
            raise ValueError(f"{op}: residual2 must be contiguous (GEMM2's residual is packed [M, N2], "
                             f"fusegen_problem has no leading dimension for it); got strides "
                             f"{list(residual2.stride())}: call .contiguous()")
    dims = [("N", n), ("K", k)] + ([("N2", n2)] if e.chain else [])
    for what, v in dims:
        if v == 0:
            raise ValueError(f"{op}: " + ", ".join(f"{w} = {d}" for w, d in dims) + " must be at least 1")
        if v % al != 0:
            raise ValueError(f"{op}: {what} = {v} must be a multiple of {al} (kernel {name} loads "
                             "16-byte vectors)")
    return m, n, k, n2, (lda, ldb, ldr, ldb2)


def _out_cols(e, n):
    """The columns of out, the residual, the stores and the vectors: n, or n / 2 after a gated
    activation (swiglu, geglu: weight holds gate and up rows, pack_glu_weight)."""
    glu = any(e.ops[i].kind in (_capi.OP_SWIGLU, _capi.OP_GEGLU) for i in range(e.n_ops))
    return n // 2 if glu else n


def _outputs(entry, x, m, n, n2):
    """Empty outputs: out (a chain: out2), then the stores of GEMM1, then those of GEMM2."""
    e = entry.contents
    dt = _TORCH_DTYPES[e.out]
    n_out = _out_cols(e, n)
    first = (m, n2) if e.chain else (m, n_out)
    outs = [x.new_empty(first, dtype=dt)]
    outs += [x.new_empty((m, n_out), dtype=dt) for _ in range(e.n_stores)]
    outs += [x.new_empty((m, n2), dtype=dt) for _ in range(e.n_stores2 if e.chain else 0)]
    return outs


def plan(name, device, m, n, k, n2=0, lds=(0, 0, 0, 0), fast_key=None):
    """The plan (kernel, problem, workspace) of spec kernel `name` at this shape and these leading
    dimensions (lda, ldb, ldr, ldb2) on device; the caller has made device current. fast_key:
    hand it to the C++ path under that key (packed calls only)."""
    entry = _entry(name)
    chain = bool(entry.contents.chain)
    n2 = int(n2) if chain else 0
    if chain and n2 <= 0:
        raise ValueError(f"{GEMM}({name}): kernel {name} is a chain: give N2 (its GEMM2's N)")
    lda, ldb, ldr, ldb2 = lds
    return _plan(_strided_key((GEMM, name, device.index, m, n, k, n2), lds),
                 lambda: _with_lds(_capi.problem_for(entry, max(m, 1), n, k, n2), lda=lda, ldb=ldb, ldr=ldr,
                                   ldb2=ldb2),
                 None if any(lds) else fast_key, spec_kernel=name)


def _gemm_impl(kernel: str, x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor],
               residual: Optional[torch.Tensor], gamma: Optional[torch.Tensor],
               beta: Optional[torch.Tensor], weight2: Optional[torch.Tensor],
               bias2: Optional[torch.Tensor], residual2: Optional[torch.Tensor]) -> List[torch.Tensor]:
    fast = _fast.module()
    if fast is not None and isinstance(kernel, str) and isinstance(x, torch.Tensor) and \
            isinstance(weight, torch.Tensor) and all(t is None or isinstance(t, torch.Tensor) for t in
                                                     (bias, residual, gamma, beta, weight2, bias2, residual2)):
        outs = fast.gemm(kernel, x, weight, bias, residual, gamma, beta, weight2, bias2, residual2)
        if outs is not None:   # a valid call of sizes seen before: the same run, from C++
            return outs
    entry = _entry(kernel)
    m, n, k, n2, lds = _check_inputs(kernel, entry, x, weight, bias, residual, gamma, beta, weight2, bias2,
                                     residual2)
    e = entry.contents
    dev = x.device
    with _on_device(dev):
        outs = _outputs(entry, x, m, n, n2)
        w2_sizes = tuple(weight2.shape) if weight2 is not None else (0, 0)
        p = plan(kernel, dev, m, n, k, n2, lds,
                 (_fast.OP_GEMM, dev.index, kernel, m, k, weight.shape[0], weight.shape[1]) + w2_sizes)
        if m == 0:
            return outs
        ws, ws_ptr = _workspace(f"{GEMM}({kernel})", p.workspace_bytes, dev)
        args = _capi.Args()
        ptr = (lambda t: t.data_ptr() if t is not None else None)
        args.a = x.data_ptr()
        args.b = weight.data_ptr()
        args.bias, args.residual = ptr(bias), ptr(residual)
        args.gamma, args.beta = ptr(gamma), ptr(beta)
        stores = outs[1:1 + e.n_stores]
        for i, t in enumerate(stores):
            args.store[i] = t.data_ptr()
        if e.chain:   # GEMM1's [M, N] result stays in the workspace (args.out NULL)
            args.b2 = weight2.data_ptr()
            args.out2 = outs[0].data_ptr()
            args.bias2, args.residual2 = ptr(bias2), ptr(residual2)
            for i, t in enumerate(outs[1 + e.n_stores:]):
                args.store2[i] = t.data_ptr()
        else:
            args.out = outs[0].data_ptr()
        p.lib.run(p.kernel, p.problem, args, ws_ptr, p.workspace_bytes, _stream(dev))
        del ws   # back to the caching allocator, in order on this stream
    return outs


_gemm_op = torch.library.custom_op(GEMM, mutates_args=())(_gemm_impl)


@_gemm_op.register_fake
def _gemm_fake(kernel, x, weight, bias, residual, gamma, beta, weight2, bias2, residual2):
    entry = _entry(kernel)   # shapes and layouts are checked at run time
    m, n, _, n2 = _check_known(kernel, entry.contents, x, weight, bias, residual, gamma, beta, weight2, bias2,
                               residual2)
    return _outputs(entry, x, m, n, n2)


def gemm(kernel, x, weight, *, bias=None, residual=None, gamma=None, beta=None, weight2=None,
         bias2=None, residual2=None):
    """Runs spec kernel `kernel` of the loaded library: x [..., K] (leading dims flattened, as
    residual [..., N] and residual2 [..., N2]) times weight, then the kernel's epilogue (and, for
    a chain, its GEMM2). Returns the output alone when the kernel has no store ops, else a tuple
    (out, *stores) in the order of the store ops. See the module's docstring."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{GEMM}({kernel}): x must be a torch.Tensor, got {type(x).__name__}")
    lead = x.shape[:-1]

    def flat(t):
        return t.reshape(-1, t.shape[-1]) if isinstance(t, torch.Tensor) and t.dim() != 2 else t

    x2, r2, r22 = flat(x), flat(residual), flat(residual2)
    args = (kernel, x2, weight, bias, r2, gamma, beta, weight2, bias2, r22)
    if _direct(*(t for t in args[1:] if t is not None)):
        outs = _gemm_impl(*args)
    else:
        outs = torch.ops.fusegen.gemm(*args)
    if x.dim() != 2:
        outs = [o.reshape(*lead, o.shape[-1]) for o in outs]
    return outs[0] if len(outs) == 1 else tuple(outs)


def fold_a_norm_gamma(weight, gamma, b_layout="nk"):
    """The weight of a kernel with an "a_norm" (docs/api.md, "Norm on A"): weight times the norm's
    gamma along K (weight [N, K] for b_layout "nk", [K, N] for "kn"), each product formed in f32
    and rounded to weight's dtype, as fusegen_fold_a_norm_gamma does. Once, when the model loads."""
    if b_layout not in ("nk", "kn"):
        raise ValueError(f"fold_a_norm_gamma: b_layout must be 'nk' or 'kn', got {b_layout!r}")
    if weight.dim() != 2 or gamma.dim() != 1:
        raise ValueError("fold_a_norm_gamma: weight must be 2-D and gamma 1-D")
    k = weight.shape[1] if b_layout == "nk" else weight.shape[0]
    if gamma.shape[0] != k:
        raise ValueError(f"fold_a_norm_gamma: gamma has {gamma.shape[0]} elements, K is {k}")
    g = gamma.float()
    g = g[None, :] if b_layout == "nk" else g[:, None]
    return (weight.float() * g).to(weight.dtype)


def pack_glu_weight(gate, up, b_layout="nk"):
    """The weight of a kernel with a gated activation (swiglu, geglu): gate and up ([N, K] each
    for b_layout "nk", [K, N] for "kn") interleaved in blocks of 8 along N, [2N, K] (or [K, 2N]),
    as fusegen_pack_glu_weight does. N must be a multiple of 8. Once, when the model loads."""
    if b_layout not in ("nk", "kn"):
        raise ValueError(f"pack_glu_weight: b_layout must be 'nk' or 'kn', got {b_layout!r}")
    if gate.shape != up.shape or gate.dim() != 2 or gate.dtype != up.dtype:
        raise ValueError("pack_glu_weight: gate and up must be 2-D, of one shape and dtype")
    if b_layout == "nk":
        n, k = gate.shape
        if n % 8:
            raise ValueError(f"pack_glu_weight: N = {n} must be a multiple of 8")
        return torch.stack([gate.reshape(n // 8, 8, k), up.reshape(n // 8, 8, k)], dim=1).reshape(2 * n, k)
    k, n = gate.shape
    if n % 8:
        raise ValueError(f"pack_glu_weight: N = {n} must be a multiple of 8")
    return torch.stack([gate.reshape(k, n // 8, 8), up.reshape(k, n // 8, 8)], dim=2).reshape(k, 2 * n)
