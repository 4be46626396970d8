"""ctypes bindings of the fusegen C runtime (runtime/fusegen.h) and the loader of a generated
kernel library (lib<library>.so). Plain ctypes: importing this module needs neither PyTorch nor
a GPU, so the struct layouts and the dispatch can be checked on any machine.

The structs below mirror runtime/fusegen.h field by field (order, types, array lengths); the
C enums are int-sized, so they are c_int here. tests/pytorch/check_layout.py compares every
offset and size with what a C compiler computes from the header.
"""

import collections
import ctypes
import os
import struct
import threading
import warnings
from ctypes import (POINTER, Structure, byref, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_void_p)

# ---- constants of fusegen.h ---------------------------------------------------------------------

FUSEGEN_MAX_STORES = 4

OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_MISALIGNED = 2
ERR_NOT_SUPPORTED = 3
ERR_NOT_FOUND = 4
ERR_WORKSPACE = 5
ERR_ARCH = 6
ERR_CUDA = 7
ERR_SPEC = 8       # the JIT (fusegen_jit.h) only
ERR_COMPILE = 9

DTYPE_F16 = 1
DTYPE_BF16 = 2
DTYPE_F32 = 3
DTYPE_NAMES = {DTYPE_F16: "f16", DTYPE_BF16: "bf16", DTYPE_F32: "f32"}

LAYOUT_NK = 0
LAYOUT_KN = 1
LAYOUT_NAMES = {LAYOUT_NK: "nk", LAYOUT_KN: "kn"}

NORM_NONE = 0
NORM_LAYERNORM = 1
NORM_RMSNORM = 2
NORM_NAMES = {NORM_NONE: "none", NORM_LAYERNORM: "layernorm", NORM_RMSNORM: "rmsnorm"}

STRATEGY_NONE = 0
STRATEGY_ROW = 1
STRATEGY_SPLIT = 2
STRATEGY_CLUSTER = 3
STRATEGY_NAMES = {STRATEGY_NONE: "none", STRATEGY_ROW: "row", STRATEGY_SPLIT: "split",
                  STRATEGY_CLUSTER: "cluster"}

FAMILY_PORTABLE = 0
FAMILY_HOPPER = 1
FAMILY_NAMES = {FAMILY_PORTABLE: "portable", FAMILY_HOPPER: "hopper"}

SCHEDULE_NONE = 0
SCHEDULE_COOPERATIVE = 1
SCHEDULE_PINGPONG = 2
SCHEDULE_NAMES = {SCHEDULE_NONE: "none", SCHEDULE_COOPERATIVE: "cooperative", SCHEDULE_PINGPONG: "pingpong"}

OP_SCALE = 0
OP_BIAS = 1
OP_RESIDUAL = 2
OP_RELU = 3
OP_GELU = 4
OP_GELU_TANH = 5
OP_SILU = 6
OP_STORE = 7
OP_LAYERNORM = 8
OP_RMSNORM = 9
OP_A_RMSNORM = 10
OP_SWIGLU = 11
OP_GEGLU = 12
OP_NAMES = {OP_SCALE: "scale", OP_BIAS: "bias", OP_RESIDUAL: "residual", OP_RELU: "relu",
            OP_GELU: "gelu", OP_GELU_TANH: "gelu_tanh", OP_SILU: "silu", OP_STORE: "store",
            OP_LAYERNORM: "layernorm", OP_RMSNORM: "rmsnorm", OP_A_RMSNORM: "a_rmsnorm",
            OP_SWIGLU: "swiglu", OP_GEGLU: "geglu"}


# ---- structs --------------------------------------------------------------------------------------

class Op(Structure):
    """fusegen_op: one epilogue op of a kernel and its constant (alpha, beta or eps)."""
    _fields_ = [
        ("kind", c_int),                # fusegen_op_kind
        ("value", c_double),
        ("affine", c_int),
        ("index", c_int),
    ]


class Problem(Structure):
    """fusegen_problem: what is to be computed."""
    _fields_ = [
        ("m", c_int64),
        ("n", c_int64),
        ("k", c_int64),
        ("n2", c_int64),
        ("a", c_int),                   # fusegen_dtype
        ("b", c_int),
        ("out", c_int),
        ("b_layout", c_int),            # fusegen_layout
        ("b2_layout", c_int),
        ("epilogue", c_char_p),
        ("epilogue2", c_char_p),
        ("sm", c_int),
        ("lda", c_int64),
        ("ldb", c_int64),
        ("ldo", c_int64),
        ("ldr", c_int64),
        ("ld_store", c_int64 * FUSEGEN_MAX_STORES),
        ("ldb2", c_int64),
        ("ldo2", c_int64),
    ]


class Args(Structure):
    """fusegen_args: device pointers."""
    _fields_ = [
        ("a", c_void_p),
        ("b", c_void_p),
        ("out", c_void_p),
        ("bias", c_void_p),
        ("residual", c_void_p),
        ("gamma", c_void_p),
        ("beta", c_void_p),
        ("store", c_void_p * FUSEGEN_MAX_STORES),
        ("b2", c_void_p),
        ("out2", c_void_p),
        ("bias2", c_void_p),
        ("residual2", c_void_p),
        ("store2", c_void_p * FUSEGEN_MAX_STORES),
    ]


class LaunchGemm(Structure):
    """fusegen_launch_gemm: how the runtime launches one GEMM of a kernel (read only)."""
    _fields_ = [(name, c_int) for name in (
        "hopper", "tile_m", "tile_n", "tile_k", "threads", "smem_bytes", "split", "split_k",
        "split_k_row_smem", "cluster", "persistent", "tma_box_a", "tma_box_b", "b_kn", "dt_ab", "dt_out",
        "out_bytes", "map_residual", "map_store_slot", "map_out", "epi_box_bytes")]


class Kernel(Structure):
    """fusegen_kernel: one entry of a library's dispatch table (read only)."""
    _fields_ = [
        ("name", c_char_p),
        ("spec_kernel", c_char_p),
        ("sm", c_int),
        ("arch_specific", c_int),
        ("family", c_int),              # fusegen_family
        ("a", c_int),
        ("b", c_int),
        ("out", c_int),
        ("b_layout", c_int),
        ("epilogue", c_char_p),
        ("ops", POINTER(Op)),
        ("n_ops", c_int),
        ("chain", c_int),
        ("b2_layout", c_int),
        ("epilogue2", c_char_p),
        ("ops2", POINTER(Op)),
        ("n_ops2", c_int),
        ("tile_m", c_int),
        ("tile_n", c_int),
        ("tile_k", c_int),
        ("stages", c_int),
        ("threads", c_int),
        ("tile2_m", c_int),
        ("tile2_n", c_int),
        ("tile2_k", c_int),
        ("stages2", c_int),
        ("threads2", c_int),
        ("schedule", c_int),            # fusegen_schedule
        ("schedule2", c_int),
        ("norm", c_int),                # fusegen_norm
        ("strategy", c_int),            # fusegen_strategy
        ("split_k", c_int),
        ("max_n", c_int64),
        ("align_elems", c_int),
        ("n_stores", c_int),
        ("n_stores2", c_int),
        ("uses_bias", c_int),
        ("uses_residual", c_int),
        ("uses_gamma", c_int),
        ("uses_beta", c_int),
        ("uses_bias2", c_int),
        ("uses_residual2", c_int),
        ("rank", c_int),
        ("launch1", LaunchGemm),        # how the runtime launches GEMM1
        ("launch2", LaunchGemm),        # ... and a chain's GEMM2
        ("cache", c_void_p),            # the launcher's (fusegen_launch_cache)
        ("functions", c_void_p),        # a function pointer; called by fusegen_run only
        ("launch_jit", c_void_p),       # JIT kernels (fusegen_jit.h): their launcher; NULL in generated tables
        ("jit", c_void_p),              # JIT kernels: their data
    ]


class TunedEntry(Structure):
    """fusegen_tuned_entry: one measured winner compiled into a library (fusegen generate --tuning)."""
    _fields_ = [
        ("spec_kernel", c_char_p),
        ("m_bucket", c_int64),
        ("n", c_int64),
        ("k", c_int64),
        ("n2", c_int64),
        ("winner", c_int),              # index into the library's kernels
        ("winner_ms", c_double),
        ("runner_up_ms", c_double),     # < 0: none
    ]


class TunedDevice(Structure):
    """fusegen_tuned_device: the compiled-in winners measured on one device."""
    _fields_ = [
        ("name", c_char_p),
        ("sms", c_int),
        ("cc", c_int),
        ("entries", POINTER(TunedEntry)),
        ("n_entries", c_size_t),
    ]


class Library(Structure):
    """fusegen_library: a generated library's table."""
    _fields_ = [
        ("name", c_char_p),
        ("generator_version", c_char_p),
        ("spec_sha256", c_char_p),
        ("kernels", POINTER(Kernel)),
        ("n_kernels", c_size_t),
        ("tuned", POINTER(TunedDevice)),   # compiled-in tuning; NULL without --tuning
        ("n_tuned", c_size_t),
    ]


KernelPtr = POINTER(Kernel)


# ---- errors ---------------------------------------------------------------------------------------

class FusegenLibraryError(RuntimeError):
    """The kernel library (or the runtime in it) cannot be found or loaded."""


class FusegenError(RuntimeError):
    """A fusegen runtime call returned a status other than FUSEGEN_OK."""

    def __init__(self, call, status, name, detail):
        self.call = call
        self.status = status
        self.status_name = name
        self.detail = detail
        super().__init__(f"{call}: {name}: {detail}" if detail else f"{call}: {name}")


# ---- finding and loading the library ------------------------------------------------------------

_RUNTIME_FUNCTIONS = ("fusegen_status_name", "fusegen_status_message", "fusegen_last_detail",
                      "fusegen_query", "fusegen_why_not", "fusegen_select", "fusegen_find",
                      "fusegen_workspace_size", "fusegen_run")

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# integrations/pytorch/fusegen_torch -> the repository root
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(_PACKAGE_DIR)))
_DEFAULT_FILE = "libfusegen_default.so"


def _candidates():
    """Where the library is looked for when FUSEGEN_LIBRARY is not set, in order."""
    out = [os.path.join(_PACKAGE_DIR, _DEFAULT_FILE),
           os.path.join(os.path.dirname(_PACKAGE_DIR), _DEFAULT_FILE)]
    build = os.environ.get("FUSEGEN_BUILD_DIR")
    if build:
        out.append(os.path.join(build, _DEFAULT_FILE))
    out.append(os.path.join(_REPO_ROOT, "build", _DEFAULT_FILE))
    return out


def find_library_path():
    """The path of the kernel library: $FUSEGEN_LIBRARY, else the first candidate that exists."""
    env = os.environ.get("FUSEGEN_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise FusegenLibraryError(f"FUSEGEN_LIBRARY={env}: no such file")
        return os.path.abspath(env)
    tried = _candidates()
    for path in tried:
        if os.path.isfile(path):
            return path
    raise FusegenLibraryError(
        "the fusegen kernel library was not found; build it (scripts/build.sh or cmake --build "
        "build --target fusegen_default_shared) and set FUSEGEN_LIBRARY=/path/to/"
        f"{_DEFAULT_FILE} or FUSEGEN_BUILD_DIR=/path/to/build. Looked in: " + ", ".join(tried))


def _table_symbol(path):
    """lib<name>.so holds <name>_library, unless FUSEGEN_LIBRARY_SYMBOL says otherwise."""
    env = os.environ.get("FUSEGEN_LIBRARY_SYMBOL")
    if env:
        return env
    base = os.path.basename(path)
    if base.startswith("lib"):
        base = base[3:]
    base = base.split(".so")[0].split(".")[0]
    return base + "_library"


def _declare(rt):
    rt.fusegen_status_name.argtypes = [c_int]
    rt.fusegen_status_name.restype = c_char_p
    rt.fusegen_status_message.argtypes = [c_int]
    rt.fusegen_status_message.restype = c_char_p
    rt.fusegen_last_detail.argtypes = []
    rt.fusegen_last_detail.restype = c_char_p
    rt.fusegen_query.argtypes = [POINTER(Library), POINTER(Problem), POINTER(KernelPtr), c_size_t,
                                 POINTER(c_size_t)]
    rt.fusegen_query.restype = c_int
    rt.fusegen_why_not.argtypes = [KernelPtr, POINTER(Problem), c_char_p, c_size_t]
    rt.fusegen_why_not.restype = c_char_p
    rt.fusegen_select.argtypes = [POINTER(Library), POINTER(Problem), POINTER(KernelPtr)]
    rt.fusegen_select.restype = c_int
    rt.fusegen_find.argtypes = [POINTER(Library), c_char_p, POINTER(KernelPtr)]
    rt.fusegen_find.restype = c_int
    rt.fusegen_workspace_size.argtypes = [KernelPtr, POINTER(Problem), POINTER(c_size_t)]
    rt.fusegen_workspace_size.restype = c_int
    rt.fusegen_run.argtypes = [KernelPtr, POINTER(Problem), POINTER(Args), c_void_p, c_size_t,
                               c_void_p]
    rt.fusegen_run.restype = c_int
    # recording and tuning files (runtimes before issue 35 lack them)
    if hasattr(rt, "fusegen_record_problem"):
        rt.fusegen_record_problem.argtypes = [POINTER(Library), POINTER(Problem), KernelPtr]
        rt.fusegen_record_problem.restype = None
    if hasattr(rt, "fusegen_tuning_load"):
        rt.fusegen_tuning_load.argtypes = [POINTER(Library), c_char_p]
        rt.fusegen_tuning_load.restype = c_int


def _has_runtime(dll):
    return all(hasattr(dll, f) for f in _RUNTIME_FUNCTIONS)


class FusegenLibrary:
    """A loaded kernel library and the runtime functions that drive it.

    The runtime is taken from the kernel library itself when it exports it; otherwise from
    $FUSEGEN_RUNTIME_LIBRARY, or libfusegen_runtime.so next to the kernel library (a shared
    build of the runtime's sources, FUSEGEN_RUNTIME_SOURCES in CMakeLists.txt). All methods
    raise FusegenError on a status other than OK."""

    def __init__(self, path):
        self.path = path
        try:
            self.dll = ctypes.CDLL(path)
        except OSError as e:
            raise FusegenLibraryError(f"cannot load the fusegen kernel library {path}: {e}") from e
        self.symbol = _table_symbol(path)
        try:
            self.table = Library.in_dll(self.dll, self.symbol)
        except ValueError as e:
            raise FusegenLibraryError(
                f"{path} has no symbol {self.symbol} (a generated library's table); set "
                "FUSEGEN_LIBRARY_SYMBOL to the library's <name>_library") from e
        self.table_ptr = ctypes.pointer(self.table)
        self.runtime_path = path
        rt = self.dll
        if not _has_runtime(rt):
            rt_path = os.environ.get("FUSEGEN_RUNTIME_LIBRARY") or os.path.join(
                os.path.dirname(path), "libfusegen_runtime.so")
            if not os.path.isfile(rt_path):
                raise FusegenLibraryError(
                    f"{path} holds the kernels but not the fusegen runtime (it exports no "
                    "fusegen_select, fusegen_run, ...): link the runtime into the shared library, "
                    "or set FUSEGEN_RUNTIME_LIBRARY to a shared build of the runtime "
                    "(FUSEGEN_RUNTIME_SOURCES in fusegen's CMakeLists.txt) "
                    f"(looked for {rt_path})")
            try:
                rt = ctypes.CDLL(rt_path)
            except OSError as e:
                raise FusegenLibraryError(f"cannot load the fusegen runtime {rt_path}: {e}") from e
            if not _has_runtime(rt):
                missing = [f for f in _RUNTIME_FUNCTIONS if not hasattr(rt, f)]
                raise FusegenLibraryError(f"{rt_path} lacks the runtime functions {missing}")
            self.runtime_path = rt_path
        self.rt = rt
        _declare(rt)
        self._load_tuning()
        # The table is constant: its entries, and each spec kernel's first entry, made once
        # (building the pointers took ~80 us a lookup, on every fusegen::gemm call).
        base = ctypes.addressof(self.table.kernels.contents) if self.table.n_kernels else 0
        size = ctypes.sizeof(Kernel)
        self._kernel_ptrs = tuple(ctypes.cast(c_void_p(base + i * size), KernelPtr)
                                  for i in range(self.table.n_kernels))
        self._spec_entries = {}
        for k in self._kernel_ptrs:
            self._spec_entries.setdefault(_s(k.contents.spec_kernel), k)

    def _load_tuning(self):
        """$FUSEGEN_TUNING: a tuning file (fusegen-tune) for this library on this device. A
        refused file (another library, spec or device; no device) is a warning, not an error:
        the dispatch's model then decides alone."""
        path = os.environ.get("FUSEGEN_TUNING")
        if not path:
            return
        if not hasattr(self.rt, "fusegen_tuning_load"):
            warnings.warn(f"FUSEGEN_TUNING={path}: this fusegen runtime cannot load tuning files")
            return
        st = self.rt.fusegen_tuning_load(self.table_ptr, os.fsencode(path))
        if st != OK:
            warnings.warn(f"FUSEGEN_TUNING={path} not applied: {self.status_name(st)}: {self.last_detail()}")

    def record(self, problem, kernel):
        """Records problem as dispatched to kernel when a recording is open (FUSEGEN_RECORD):
        what fusegen_select does itself, for a kernel chosen from query()."""
        if hasattr(self.rt, "fusegen_record_problem"):
            self.rt.fusegen_record_problem(self.table_ptr, byref(problem), kernel)

    # -- the library's metadata
    @property
    def name(self):
        return _s(self.table.name)

    @property
    def generator_version(self):
        return _s(self.table.generator_version)

    @property
    def spec_sha256(self):
        return _s(self.table.spec_sha256)

    def kernel_ptrs(self):
        """Pointers to every entry of the dispatch table, in table order (a tuple)."""
        return self._kernel_ptrs

    def spec_entry(self, name):
        """The first entry generated from spec kernel `name`, or None."""
        return self._spec_entries.get(name)

    # -- status strings
    def status_name(self, st):
        return _s(self.rt.fusegen_status_name(st))

    def status_message(self, st):
        return _s(self.rt.fusegen_status_message(st))

    def last_detail(self):
        return _s(self.rt.fusegen_last_detail())

    def check(self, call, st):
        """Raise FusegenError for a status other than OK; read the detail on this thread."""
        if st != OK:
            raise FusegenError(call, st, self.status_name(st), self.last_detail())

    # -- the calls of fusegen.h
    def select(self, problem):
        out = KernelPtr()
        self.check("fusegen_select", self.rt.fusegen_select(self.table_ptr, byref(problem), byref(out)))
        return out

    def query(self, problem):
        """All eligible kernels, best first."""
        n = c_size_t(0)
        cap = max(1, int(self.table.n_kernels))
        arr = (KernelPtr * cap)()
        self.check("fusegen_query", self.rt.fusegen_query(self.table_ptr, byref(problem), arr, cap,
                                                            byref(n)))
        return [arr[i] for i in range(min(n.value, cap))]

    def find(self, name):
        out = KernelPtr()
        self.check("fusegen_find", self.rt.fusegen_find(self.table_ptr, name.encode(), byref(out)))
        return out

    def why_not(self, kernel, problem):
        """None when kernel can run problem, else the first reason it cannot."""
        buf = ctypes.create_string_buffer(512)
        r = self.rt.fusegen_why_not(kernel, byref(problem), buf, len(buf))
        return None if r is None else _s(r)

    def workspace_size(self, kernel, problem):
        n = c_size_t(0)
        self.check("fusegen_workspace_size",
                   self.rt.fusegen_workspace_size(kernel, byref(problem), byref(n)))
        return n.value

    def run(self, kernel, problem, args, workspace, workspace_bytes, stream):
        self.check("fusegen_run", self.rt.fusegen_run(kernel, byref(problem), byref(args),
                                                      c_void_p(workspace or None), workspace_bytes,
                                                      c_void_p(stream or None)))


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else None


_lock = threading.Lock()
_loaded = None


def load_library():
    """The kernel library, loaded once (see find_library_path for where it is looked for)."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = FusegenLibrary(find_library_path())
        return _loaded


# ---- building problems, reading kernels ----------------------------------------------------------

def make_problem(m, n, k, epilogue, n2=0, epilogue2=None, dtype=DTYPE_BF16, sm=0):
    """A packed problem (all leading dimensions 0), B and B2 in the nk layout (nn.Linear's)."""
    p = Problem()
    p.m, p.n, p.k, p.n2 = int(m), int(n), int(k), int(n2)
    p.a = p.b = p.out = dtype
    p.b_layout = LAYOUT_NK
    p.b2_layout = LAYOUT_NK
    p.epilogue = epilogue if isinstance(epilogue, bytes) else epilogue.encode()
    if epilogue2 is not None:
        p.epilogue2 = epilogue2 if isinstance(epilogue2, bytes) else epilogue2.encode()
    p.sm = int(sm)
    return p


def spec_kernel_names(lib):
    """The spec's kernel names (fusegen_kernel.spec_kernel), each once, in table order."""
    return list(lib._spec_entries)


def spec_kernel_entry(lib, name):
    """The first table entry generated from the spec kernel `name` (its variants share dtypes,
    layouts and epilogues); ValueError naming the library's spec kernels when there is none."""
    k = lib.spec_entry(name)
    if k is not None:
        return k
    raise ValueError(f"library {lib.name} has no kernel {name!r} (its spec kernels: "
                     + ", ".join(spec_kernel_names(lib)) + ")")


def problem_for(kernel, m, n, k, n2=0, sm=0):
    """A packed problem with the dtypes, layouts and epilogue signatures of kernel's entry."""
    e = kernel.contents
    p = Problem()
    p.m, p.n, p.k, p.n2 = int(m), int(n), int(k), int(n2) if e.chain else 0
    p.a, p.b, p.out = e.a, e.b, e.out
    p.b_layout = e.b_layout
    p.b2_layout = e.b2_layout
    p.epilogue = e.epilogue
    if e.chain:
        p.epilogue2 = e.epilogue2
    p.sm = int(sm)
    return p


def select_spec_kernel(lib, name, problem):
    """The best kernel generated from the spec kernel `name` that can run problem. Another spec
    kernel with the same signature (other constants: eps, alpha, ...) is never taken. Raises
    FusegenError (FUSEGEN_ERR_NOT_SUPPORTED) with each variant's reason when none can."""
    try:
        eligible = lib.query(problem)
    except FusegenError as e:
        if e.status != ERR_NOT_SUPPORTED:
            raise
        eligible = []
    for k in eligible:
        if _s(k.contents.spec_kernel) == name:
            lib.record(problem, k)
            return k
    reasons = [f"{_s(k.contents.name)}: {lib.why_not(k, problem)}" for k in lib.kernel_ptrs()
               if _s(k.contents.spec_kernel) == name]
    raise FusegenError("fusegen_torch.gemm", ERR_NOT_SUPPORTED, "FUSEGEN_ERR_NOT_SUPPORTED",
                       f"no variant of {name} can run this problem: " + "; ".join(reasons))


def kernel_ops(kernel, second=False):
    """The (kind, value, affine, index) tuples of a kernel's epilogue (GEMM2's with second)."""
    k = kernel.contents
    ops, n = (k.ops2, k.n_ops2) if second else (k.ops, k.n_ops)
    return [(ops[i].kind, ops[i].value, ops[i].affine, ops[i].index) for i in range(n)]


def norm_eps(kernel):
    """The eps of the first LayerNorm or RMSNorm op of a kernel (GEMM1's for a chain), or None."""
    for kind, value, _, _ in kernel_ops(kernel):
        if kind in (OP_LAYERNORM, OP_RMSNORM):
            return value
    return None


def same_f32(a, b):
    """Whether two floats round to the same f32 (the precision in which the kernels use eps)."""
    return struct.pack("<f", float(a)) == struct.pack("<f", float(b))


KernelInfo = collections.namedtuple("KernelInfo", [
    "name", "spec_kernel", "strategy", "tile", "stages", "tile2", "sm", "arch_specific",
    "epilogue", "epilogue2", "eps", "max_n", "align_elems", "rank", "split_k", "family", "schedule"])
KernelInfo.__doc__ = "One kernel of the library, as fusegen_torch.kernels() lists it."


def kernel_info(kernel):
    k = kernel.contents
    return KernelInfo(
        _s(k.name), _s(k.spec_kernel), STRATEGY_NAMES.get(k.strategy, str(k.strategy)),
        (k.tile_m, k.tile_n, k.tile_k), k.stages,
        (k.tile2_m, k.tile2_n, k.tile2_k) if k.chain else None,
        k.sm, bool(k.arch_specific), _s(k.epilogue), _s(k.epilogue2), norm_eps(kernel),
        int(k.max_n), k.align_elems, k.rank, bool(k.split_k), FAMILY_NAMES.get(k.family, str(k.family)),
        SCHEDULE_NAMES.get(k.schedule, str(k.schedule)))
