"""fusegen_torch: the fused kernels of a fusegen library as PyTorch custom ops.

    import torch, fusegen_torch
    y, pre_norm = fusegen_torch.linear_residual_layernorm(x, w, b, residual, gamma, beta, eps=1e-5)
    out2 = fusegen_torch.block_tail(x, w1, b1, residual, gamma, beta, w2, b2, eps=1e-5)
    y = fusegen_torch.gemm("proj_bias_rmsnorm_silu", x, w_kn, bias=b, gamma=g)   # any spec kernel
    w_g = fusegen_torch.fold_a_norm_gamma(w, gamma)   # once: a kernel with "a_norm" (RMSNorm of x)
    y = fusegen_torch.gemm("gate_up_rmsnorm", x, w_g)
    w_gu = fusegen_torch.pack_glu_weight(w_gate, w_up)   # once: a kernel with swiglu (N / 2 outputs)
    # or, equally (and what torch.compile sees): torch.ops.fusegen.linear_residual_layernorm(...)

The kernel library is loaded with ctypes on first use: $FUSEGEN_LIBRARY, else
libfusegen_default.so next to this package, in $FUSEGEN_BUILD_DIR, or in <repo>/build.
The package is Python; its one C++ file (_fast.cpp, the ops' happy path, which saves host
time a call) is compiled with torch.utils.cpp_extension on the first op call, and the ops
run in Python where it cannot be (FUSEGEN_TORCH_FAST=0 turns it off; fast_path_status()
says which). Without PyTorch only the library queries work (kernels(), load_library()); the ops
need PyTorch.
"""

from . import _capi
from ._capi import (FusegenError, FusegenLibraryError, KernelInfo, find_library_path,
                    load_library)

__version__ = "0.1.0"

try:
    import torch as _torch  # noqa: F401
except ImportError:  # the ctypes layer stays usable without PyTorch
    _torch = None

if _torch is not None:
    from .ops import block_tail, linear_residual_layernorm, selected_kernel
    from .generic import fold_a_norm_gamma, gemm, pack_glu_weight
    from . import _fast

    def fast_path_status():
        """'on' when the ops' C++ path is in use, else why not. Builds it (once) if no
        op call has yet."""
        _fast.module()
        return _fast.status()
else:
    def _needs_torch(*_args, **_kwargs):
        raise ImportError("fusegen_torch: the ops need PyTorch (pip install torch); only "
                          "kernels() and load_library() work without it")

    linear_residual_layernorm = block_tail = gemm = selected_kernel = fast_path_status = _needs_torch
    fold_a_norm_gamma = pack_glu_weight = _needs_torch


def kernels():
    """Every kernel of the loaded library, in table order, as KernelInfo named tuples
    (name, spec_kernel, strategy, tile, stages, tile2, sm, arch_specific, epilogue, epilogue2,
    eps, max_n, align_elems, rank, split_k, family, schedule)."""
    lib = load_library()
    return [_capi.kernel_info(k) for k in lib.kernel_ptrs()]


__all__ = ["linear_residual_layernorm", "block_tail", "gemm", "fold_a_norm_gamma", "pack_glu_weight", "kernels", "selected_kernel", "fast_path_status",
           "load_library", "find_library_path", "FusegenError", "FusegenLibraryError",
           "KernelInfo"]
