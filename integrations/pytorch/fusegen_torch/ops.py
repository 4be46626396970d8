"""The PyTorch custom ops over the fusegen kernel library (torch.library.custom_op).

    fusegen::linear_residual_layernorm(x, weight, bias, residual, gamma, beta, eps) -> (y, pre_norm)
        pre_norm = x @ weight.T + bias + residual;  y = relu(layer_norm(pre_norm) * gamma + beta)
    fusegen::block_tail(x, w1, b1, residual, gamma, beta, w2, b2, eps) -> out2
        h = layer_norm(x @ w1.T + b1 + residual) * gamma + beta;  out2 = relu(h @ w2.T + b2)

Outputs and workspace come from PyTorch's allocator on the inputs' device; the kernels run on
torch.cuda.current_stream() of that device. A repeated valid call (a shape whose plan exists,
every argument as required) runs from C++ (_fast.py, _fast.cpp) where that path could be
built; every other call, and every error, takes the Python path below. No autograd formula is
registered: the ops are for inference (calling backward through them raises PyTorch's "no
autograd formula" error).
"""

import contextlib
import threading
from typing import Tuple

import torch

from . import _capi, _fast

LINEAR_RESIDUAL_LAYERNORM = "fusegen::linear_residual_layernorm"
BLOCK_TAIL = "fusegen::block_tail"

# The epilogue signatures of the default library's kernels (specs/default.json).
EPILOGUE_FUSED = b"bias+residual+store+layernorm+relu"
EPILOGUE_CHAIN1 = b"bias+residual+layernorm"
EPILOGUE_CHAIN2 = b"bias+relu"

ALIGN_ELEMS = 8          # K, N and N2 must be multiples of this (every kernel's align_elems)
WORKSPACE_ALIGN = 256    # fusegen_run's requirement on the workspace pointer


class _Plan:
    """A kernel chosen for one problem on one device, and what a run needs besides pointers."""
    __slots__ = ("lib", "kernel", "problem", "workspace_bytes", "eps", "name", "in_fast")

    def __init__(self, lib, kernel, problem, workspace_bytes, eps, name):
        self.lib = lib
        self.kernel = kernel
        self.problem = problem
        self.workspace_bytes = workspace_bytes
        self.eps = eps
        self.name = name
        self.in_fast = False   # handed to the C++ path


_MAX_PLANS = 4096
_plans = {}
_plans_lock = threading.Lock()


def _plan(key, make_problem, fast_key=None, spec_kernel=None):
    """fusegen_select + fusegen_workspace_size, once per (op, device, shape); make_problem()
    builds the problem on the first call only. The caller has made the tensors' device
    current (problem.sm is 0: the current device). fast_key (op code, device, m, n, k, n2; for
    fusegen::gemm _fast.OP_GEMM's key): the plan is handed to the C++ path too (once), which
    runs later calls of that shape.
    spec_kernel: choose among that spec kernel's variants only (fusegen::gemm)."""
    plan = _plans.get(key)
    if plan is not None:
        if fast_key is not None and not plan.in_fast:   # made by selected_kernel, or before the C++ path
            with _plans_lock:
                plan.in_fast = _fast.add_plan(fast_key, plan)
        return plan
    problem = make_problem()
    lib = _capi.load_library()
    kernel = lib.select(problem) if spec_kernel is None else _capi.select_spec_kernel(lib, spec_kernel, problem)
    ws = lib.workspace_size(kernel, problem)
    plan = _Plan(lib, kernel, problem, ws, _capi.norm_eps(kernel), _capi._s(kernel.contents.name))
    with _plans_lock:
        if len(_plans) >= _MAX_PLANS:   # many distinct shapes (e.g. varying M): start over
            _plans.clear()
            _fast.clear_plans()
        _plans[key] = plan
        if fast_key is not None:
            plan.in_fast = _fast.add_plan(fast_key, plan)
    return plan


def _op_name(op):
    return op.split("::")[1]


def _check(op, name, t, dtype, device, shape, why="the fusegen kernels of this library take bf16",
           align=ALIGN_ELEMS):
    """dtype, device, contiguity and shape of one input, with messages that say which. A matrix
    may have its rows further apart than their length (a slice of a wider tensor, the runtime's
    leading dimension), by a multiple of align elements: returns that row stride in elements,
    or 0 for a packed tensor."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != dtype:
        raise TypeError(f"{op}: {name} must be {dtype} ({why}), got {t.dtype}")
    if t.device.type != "cuda":
        raise ValueError(f"{op}: {name} must be a CUDA tensor, got device {t.device}")
    if device is not None and t.device != device:
        raise ValueError(f"{op}: {name} is on {t.device} but x is on {device}; all inputs "
                         "must be on one device")
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{op}: {name} must have shape {list(shape)}, got {list(t.shape)}")
    if t.is_contiguous():
        return 0
    if t.dim() == 2 and t.stride(1) == 1 and t.stride(0) >= t.shape[1]:
        if t.stride(0) % align != 0:
            raise ValueError(f"{op}: {name}'s rows are {t.stride(0)} elements apart, not a multiple of "
                             f"{align} (the kernels load 16-byte vectors): call .contiguous()")
        return t.stride(0)
    rows = " (rows may be further apart, as in a slice of a wider matrix)" if t.dim() == 2 else ""
    raise ValueError(f"{op}: {name} must be row-major with adjacent elements in a row{rows}; got "
                     f"strides {list(t.stride())} for shape {list(t.shape)}: call .contiguous()")


def _strided_key(key, lds):
    """The plan key of a call whose matrices have these leading dimensions: a packed call's
    key is the plain one (selected_kernel's, and the C++ path's plans are packed only)."""
    return key + (lds,) if any(lds) else key


def _with_lds(problem, **lds):
    """problem with its leading dimensions set (fusegen_problem's lda, ldb, ...; 0: packed)."""
    for field, v in lds.items():
        setattr(problem, field, v)
    return problem


def _check_2d(op, name, t):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{op}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 2:
        raise ValueError(f"{op}: {name} must be 2-D, got shape {list(t.shape)}")


def _check_multiple(op, what, value):
    if value % ALIGN_ELEMS != 0:
        raise ValueError(f"{op}: {what} = {value} must be a multiple of {ALIGN_ELEMS} (the "
                         "fusegen kernels load 16-byte vectors of 8 bf16 elements)")


def _check_eps(op, plan, eps):
    if plan.eps is None:
        raise RuntimeError(f"{op}: kernel {plan.name} has no LayerNorm op in its table")
    if not _capi.same_f32(eps, plan.eps):
        raise ValueError(f"{op}: eps = {eps!r} but kernel {plan.name} was generated with "
                         f"eps = {plan.eps!r} (eps is fixed in the spec at generation time; pass "
                         f"eps={plan.eps!r} or generate a library with the eps you need)")


def _workspace(op, nbytes, device):
    """A uint8 tensor of nbytes from the caching allocator (None for 0 bytes)."""
    if nbytes == 0:
        return None, 0
    ws = torch.empty(nbytes, dtype=torch.uint8, device=device)
    if ws.data_ptr() % WORKSPACE_ALIGN != 0:
        raise RuntimeError(f"{op}: the workspace from PyTorch's allocator at {ws.data_ptr():#x} "
                           f"is not {WORKSPACE_ALIGN}-byte aligned")
    return ws, ws.data_ptr()


# The current stream's handle without building a torch.cuda.Stream object (0.2 us against 5 a
# call on the H200 machine: docs/decisions.md v52); the public call where this build lacks it.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(device):
    if _raw_stream is not None:
        return _raw_stream(device.index)
    return torch.cuda.current_stream(device).cuda_stream


def _on_device(dev):
    """The device made current for the call: a no-op when it already is (the common case;
    entering torch.cuda.device costs more than the check)."""
    if dev.index == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(dev)


_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", None)


def _direct(*tensors):
    """Whether an eager call may run the implementation without the dispatcher, whose custom-op
    path costs more host time than the rest of a call: not while torch.compile traces, not under
    a dispatch mode (or where that cannot be told), and only for plain tensors none of which
    needs a gradient (those go through the registered op, whose missing autograd formula is
    then PyTorch's error). The result is the same either way."""
    if torch.compiler.is_compiling() or _dispatch_modes is None or _dispatch_modes() > 0:
        return False
    grad = torch.is_grad_enabled()
    for t in tensors:
        if type(t) is not torch.Tensor or (grad and t.requires_grad):
            return False
    return True


# ---- fusegen::linear_residual_layernorm ---------------------------------------------------------

def _lrl_shapes(x, weight, bias, residual, gamma, beta):
    op = LINEAR_RESIDUAL_LAYERNORM
    _check_2d(op, "x", x)
    _check_2d(op, "weight", weight)
    m, k = x.shape
    n = weight.shape[0]
    bf16 = torch.bfloat16
    lda = _check(op, "x", x, bf16, None, (m, k))
    dev = x.device
    ldb = _check(op, "weight", weight, bf16, dev, (n, k))
    _check(op, "bias", bias, bf16, dev, (n,))
    ldr = _check(op, "residual", residual, bf16, dev, (m, n))
    _check(op, "gamma", gamma, bf16, dev, (n,))
    _check(op, "beta", beta, bf16, dev, (n,))
    if n == 0 or k == 0:
        raise ValueError(f"{op}: N = {n} and K = {k} must be at least 1")
    _check_multiple(op, "N (weight.shape[0])", n)
    _check_multiple(op, "K (x.shape[1])", k)
    return m, n, k, (lda, ldb, ldr)


def _lrl_impl(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor,
              gamma: torch.Tensor, beta: torch.Tensor, eps: float) -> Tuple[torch.Tensor, torch.Tensor]:
    fast = _fast.module()
    if fast is not None:   # a valid call of a shape seen before: the same run, from C++
        out = fast.linear_residual_layernorm(x, weight, bias, residual, gamma, beta, eps)
        if out is not None:
            return out
    op = LINEAR_RESIDUAL_LAYERNORM
    m, n, k, lds = _lrl_shapes(x, weight, bias, residual, gamma, beta)
    lda, ldb, ldr = lds
    dev = x.device
    with _on_device(dev):
        # new_empty: x's dtype (bf16, checked) and device, a little cheaper than torch.empty
        y = x.new_empty((m, n))
        pre_norm = x.new_empty((m, n))
        plan = _plan(_strided_key((op, dev.index, n, k, m), lds),
                     lambda: _with_lds(_capi.make_problem(max(m, 1), n, k, EPILOGUE_FUSED), lda=lda, ldb=ldb,
                                       ldr=ldr),
                     None if any(lds) else (_fast.OP_LINEAR_RESIDUAL_LAYERNORM, dev.index, m, n, k, 0))
        _check_eps(op, plan, eps)
        if m == 0:
            return y, pre_norm
        ws, ws_ptr = _workspace(op, plan.workspace_bytes, dev)
        args = _capi.Args()
        args.a = x.data_ptr()
        args.b = weight.data_ptr()
        args.out = y.data_ptr()
        args.bias = bias.data_ptr()
        args.residual = residual.data_ptr()
        args.gamma = gamma.data_ptr()
        args.beta = beta.data_ptr()
        args.store[0] = pre_norm.data_ptr()
        plan.lib.run(plan.kernel, plan.problem, args, ws_ptr, plan.workspace_bytes, _stream(dev))
        del ws  # back to the caching allocator, in order on this stream
    return y, pre_norm


_linear_residual_layernorm = torch.library.custom_op(LINEAR_RESIDUAL_LAYERNORM, mutates_args=())(_lrl_impl)


@_linear_residual_layernorm.register_fake
def _linear_residual_layernorm_fake(x, weight, bias, residual, gamma, beta, eps):
    op = LINEAR_RESIDUAL_LAYERNORM
    _check_2d(op, "x", x)
    _check_2d(op, "weight", weight)
    torch._check(x.dtype == torch.bfloat16,
                 lambda: f"{op}: x must be torch.bfloat16, got {x.dtype}")
    m = x.shape[0]
    n = weight.shape[0]
    y = x.new_empty((m, n))
    pre_norm = x.new_empty((m, n))
    return y, pre_norm


# ---- fusegen::block_tail ---------------------------------------------------------------------------

def _tail_shapes(x, w1, b1, residual, gamma, beta, w2, b2):
    op = BLOCK_TAIL
    _check_2d(op, "x", x)
    _check_2d(op, "w1", w1)
    _check_2d(op, "w2", w2)
    m, k = x.shape
    n = w1.shape[0]
    n2 = w2.shape[0]
    bf16 = torch.bfloat16
    lda = _check(op, "x", x, bf16, None, (m, k))
    dev = x.device
    ldb = _check(op, "w1", w1, bf16, dev, (n, k))
    _check(op, "b1", b1, bf16, dev, (n,))
    ldr = _check(op, "residual", residual, bf16, dev, (m, n))
    _check(op, "gamma", gamma, bf16, dev, (n,))
    _check(op, "beta", beta, bf16, dev, (n,))
    ldb2 = _check(op, "w2", w2, bf16, dev, (n2, n))
    _check(op, "b2", b2, bf16, dev, (n2,))
    if n == 0 or k == 0 or n2 == 0:
        raise ValueError(f"{op}: N = {n}, K = {k} and N2 = {n2} must be at least 1")
    _check_multiple(op, "N (w1.shape[0])", n)
    _check_multiple(op, "K (x.shape[1])", k)
    _check_multiple(op, "N2 (w2.shape[0])", n2)
    return m, n, k, n2, (lda, ldb, ldr, ldb2)


def _tail_impl(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, residual: torch.Tensor,
               gamma: torch.Tensor, beta: torch.Tensor, w2: torch.Tensor, b2: torch.Tensor,
               eps: float) -> torch.Tensor:
    fast = _fast.module()
    if fast is not None:   # a valid call of a shape seen before: the same run, from C++
        out2 = fast.block_tail(x, w1, b1, residual, gamma, beta, w2, b2, eps)
        if out2 is not None:
            return out2
    op = BLOCK_TAIL
    m, n, k, n2, lds = _tail_shapes(x, w1, b1, residual, gamma, beta, w2, b2)
    lda, ldb, ldr, ldb2 = lds
    dev = x.device
    with _on_device(dev):
        out2 = x.new_empty((m, n2))
        plan = _plan(_strided_key((op, dev.index, n, k, n2, m), lds),
                     lambda: _with_lds(_capi.make_problem(max(m, 1), n, k, EPILOGUE_CHAIN1, n2=n2,
                                                          epilogue2=EPILOGUE_CHAIN2),
                                       lda=lda, ldb=ldb, ldr=ldr, ldb2=ldb2),
                     None if any(lds) else (_fast.OP_BLOCK_TAIL, dev.index, m, n, k, n2))
        _check_eps(op, plan, eps)
        if m == 0:
            return out2
        ws, ws_ptr = _workspace(op, plan.workspace_bytes, dev)
        # args.out stays NULL: a chain keeps GEMM1's [M, N] result in the workspace
        args = _capi.Args()
        args.a = x.data_ptr()
        args.b = w1.data_ptr()
        args.bias = b1.data_ptr()
        args.residual = residual.data_ptr()
        args.gamma = gamma.data_ptr()
        args.beta = beta.data_ptr()
        args.b2 = w2.data_ptr()
        args.out2 = out2.data_ptr()
        args.bias2 = b2.data_ptr()
        plan.lib.run(plan.kernel, plan.problem, args, ws_ptr, plan.workspace_bytes, _stream(dev))
        del ws
    return out2


_block_tail = torch.library.custom_op(BLOCK_TAIL, mutates_args=())(_tail_impl)


@_block_tail.register_fake
def _block_tail_fake(x, w1, b1, residual, gamma, beta, w2, b2, eps):
    op = BLOCK_TAIL
    _check_2d(op, "x", x)
    _check_2d(op, "w2", w2)
    torch._check(x.dtype == torch.bfloat16,
                 lambda: f"{op}: x must be torch.bfloat16, got {x.dtype}")
    return x.new_empty((x.shape[0], w2.shape[0]))


# ---- Python wrappers ---------------------------------------------------------------------------------

def linear_residual_layernorm(x, weight, bias, residual, gamma, beta, eps=1e-5):
    """y, pre_norm for x of shape [..., K] and residual [..., N] (leading dims flattened).

    pre_norm = x @ weight.T + bias + residual        (bf16, rounded once)
    y = relu(layer_norm(pre_norm_f32, eps) * gamma + beta)   (statistics in f32)
    """
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x
    r2 = residual.reshape(-1, residual.shape[-1]) if residual.dim() != 2 else residual
    if _direct(x2, weight, bias, r2, gamma, beta):
        y, pre_norm = _lrl_impl(x2, weight, bias, r2, gamma, beta, float(eps))
    else:
        y, pre_norm = torch.ops.fusegen.linear_residual_layernorm(x2, weight, bias, r2, gamma, beta,
                                                                 float(eps))
    if x.dim() != 2:
        y = y.reshape(*lead, y.shape[-1])
        pre_norm = pre_norm.reshape(*lead, pre_norm.shape[-1])
    return y, pre_norm


def block_tail(x, w1, b1, residual, gamma, beta, w2, b2, eps=1e-5):
    """out2 for x of shape [..., K] and residual [..., N] (leading dims flattened).

    h = layer_norm(x @ w1.T + b1 + residual, eps) * gamma + beta   (bf16, in the workspace)
    out2 = relu(h @ w2.T + b2)
    """
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x
    r2 = residual.reshape(-1, residual.shape[-1]) if residual.dim() != 2 else residual
    if _direct(x2, w1, b1, r2, gamma, beta, w2, b2):
        out2 = _tail_impl(x2, w1, b1, r2, gamma, beta, w2, b2, float(eps))
    else:
        out2 = torch.ops.fusegen.block_tail(x2, w1, b1, r2, gamma, beta, w2, b2, float(eps))
    if x.dim() != 2:
        out2 = out2.reshape(*lead, out2.shape[-1])
    return out2


def selected_kernel(op, m, n, k, n2=0, device=None):
    """The name of the kernel that runs this shape on device (default: the current one), for op:
    a spec kernel's name (what fusegen_torch.gemm(op, ...) runs), or "linear_residual_layernorm"
    or "block_tail" (what those ops run; "fusegen::block_tail" means the op where the library
    also has a spec kernel of that name, as the default one does: both run the same kernel)."""
    from . import generic   # (imports this module)
    dev = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    with torch.cuda.device(dev):
        spec_kernels = _capi.spec_kernel_names(_capi.load_library())
        if op in spec_kernels:
            plan = generic.plan(op, dev, m, n, k, n2)
        elif op in ("linear_residual_layernorm", LINEAR_RESIDUAL_LAYERNORM):
            plan = _plan((LINEAR_RESIDUAL_LAYERNORM, dev.index, n, k, m),
                         lambda: _capi.make_problem(max(m, 1), n, k, EPILOGUE_FUSED))
        elif op in ("block_tail", BLOCK_TAIL):
            plan = _plan((BLOCK_TAIL, dev.index, n, k, n2, m),
                         lambda: _capi.make_problem(max(m, 1), n, k, EPILOGUE_CHAIN1, n2=n2,
                                                    epilogue2=EPILOGUE_CHAIN2))
        else:
            raise ValueError(f"unknown op {op!r}: give linear_residual_layernorm, block_tail or a spec "
                             "kernel of the library (" + ", ".join(spec_kernels) + ")")
    return plan.name
