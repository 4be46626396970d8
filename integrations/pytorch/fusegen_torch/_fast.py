"""The C++ happy path of the ops (_fast.cpp), built with torch.utils.cpp_extension on first use.

The ops in ops.py are the definition; this module only makes a repeated, valid call cheaper on
the host (the Python checks, allocations and ctypes: 28.5 -> 12.2 us a call in one measurement,
docs/decisions.md v57). It is optional: FUSEGEN_TORCH_FAST=0 turns it off, and where it cannot be
built (no C++ compiler, no CUDA headers, the runtime header not found) the ops run in Python as
before, after one warning that says why. status() tells which is in use.
"""

import ctypes
import os
import threading
import warnings

from . import _capi

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_fast.cpp")
# The runtime's header (fusegen.h) next to the package in a source tree; $FUSEGEN_INCLUDE_DIR
# where the package was installed elsewhere.
_DEFAULT_INCLUDE = os.path.join(_capi._REPO_ROOT, "runtime")

_lock = threading.Lock()
_module = None
_tried = False
_why_not = "not built yet (it is built on the first op call)"

OP_LINEAR_RESIDUAL_LAYERNORM = 0
OP_BLOCK_TAIL = 1
OP_GEMM = 2   # its key: (OP_GEMM, device, spec kernel, m, k, weight's sizes, weight2's or (0, 0))


def _build():
    """The compiled module, or None with _why_not set."""
    global _why_not
    if os.environ.get("FUSEGEN_TORCH_FAST", "1") == "0":
        _why_not = "off (FUSEGEN_TORCH_FAST=0)"
        return None
    include = os.environ.get("FUSEGEN_INCLUDE_DIR", _DEFAULT_INCLUDE)
    if not os.path.isfile(os.path.join(include, "fusegen.h")):
        _why_not = (f"fusegen.h not found in {include} (set FUSEGEN_INCLUDE_DIR to the runtime/ "
                    "folder of the fusegen source tree)")
        return None
    try:
        from torch.utils import cpp_extension
        mod = cpp_extension.load(name="fusegen_torch_fast", sources=[_SOURCE],
                                 extra_include_paths=[include], extra_cflags=["-O2"],
                                 with_cuda=True, verbose=False)
    except Exception as e:  # noqa: BLE001 - any build failure means: run in Python
        _why_not = f"the C++ path could not be built: {type(e).__name__}: {str(e).strip()[:500]}"
        return None
    # The header the module was built with must describe the library's structures as _capi does.
    if mod.sizeof_problem() != ctypes.sizeof(_capi.Problem) or mod.sizeof_args() != ctypes.sizeof(_capi.Args):
        _why_not = ("fusegen.h and _capi.py disagree on the size of fusegen_problem or fusegen_args "
                    f"({mod.sizeof_problem()}/{ctypes.sizeof(_capi.Problem)}, "
                    f"{mod.sizeof_args()}/{ctypes.sizeof(_capi.Args)})")
        return None
    lib = _capi.load_library()
    mod.set_runtime(*(ctypes.cast(f, ctypes.c_void_p).value for f in
                      (lib.rt.fusegen_run, lib.rt.fusegen_status_name, lib.rt.fusegen_last_detail)))
    _why_not = None
    return mod


def module():
    """The compiled module, building it on the first call; None where it is off or failed
    (warned once)."""
    global _module, _tried
    if _tried:
        return _module
    with _lock:
        if not _tried:
            _module = _build()
            _tried = True
            if _module is None and not _why_not.startswith("off"):
                warnings.warn(f"fusegen_torch: the ops run in Python: {_why_not}", RuntimeWarning,
                              stacklevel=3)
    return _module


def status():
    """'on' when the C++ path is in use, else why not."""
    return "on" if _module is not None else _why_not


def add_plan(key, plan):
    """Hands a plan ops.py made to the C++ path; whether it did. key: (op, device, m, n, k, n2) for
    the named ops (whose kernels have a LayerNorm eps), or OP_GEMM's."""
    mod = _module
    if mod is None:
        return False
    kernel = ctypes.cast(plan.kernel, ctypes.c_void_p).value
    if key[0] == OP_GEMM:
        _, device, name, m, k, w0, w1, w20, w21 = key
        mod.add_gemm_plan(name, device, m, k, w0, w1, w20, w21, kernel, ctypes.addressof(plan.problem),
                          plan.workspace_bytes)
        return True
    if plan.eps is None:
        return False
    mod.add_plan(*key, kernel, ctypes.addressof(plan.problem), plan.workspace_bytes, float(plan.eps))
    return True


def clear_plans():
    if _module is not None:
        _module.clear_plans()
