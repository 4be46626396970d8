// _fast.cpp - the happy path of the fusegen ops in C++ (built on first use by _fast.py).
//
// The Python ops (ops.py) stay the definition: they check every argument, choose and cache a
// plan per shape, and raise the errors users see. This file only repeats their run for a call
// that Python has already seen the plan of and whose arguments all pass: it checks the same
// conditions, allocates the outputs and the workspace from PyTorch's caching allocator, and
// calls fusegen_run on the current stream. Whenever anything is off (no plan yet, a bad
// argument, another current device, a runtime status other than OK, which launches nothing)
// it returns None and the caller runs the Python path, which raises the precise error or
// registers the missing plan. So the results and the errors are the Python path's by
// construction; only the host time differs (docs/decisions.md, v57).
//
// Every entry point runs with the GIL held (pybind11 functions that do not release it), which
// also serializes access to the plan table.

#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAFunctions.h>

#include <cstring>
#include <map>
#include <string>
#include <tuple>

#include "fusegen.h"

namespace {

using RunFn = fusegen_status (*)(const fusegen_kernel *, const fusegen_problem *, const fusegen_args *, void *,
                                 size_t, cudaStream_t);
using NameFn = const char *(*)(fusegen_status);
using DetailFn = const char *(*)();

constexpr int64_t kAlignElems = 8;         // ops.py ALIGN_ELEMS
constexpr uintptr_t kWorkspaceAlign = 256;  // ops.py WORKSPACE_ALIGN

// One plan as ops.py made it: the kernel, a copy of its problem (with its own copies of the
// epilogue strings), the workspace size and the eps the kernel was generated with (as f32).
struct Plan {
    const fusegen_kernel *kernel = nullptr;
    fusegen_problem problem{};
    std::string epilogue, epilogue2;
    size_t workspace_bytes = 0;
    float eps = 0.0f;
};

// (op, device, m, n, k, n2): op 0 is linear_residual_layernorm, 1 block_tail.
using Key = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t>;
// fusegen::gemm: (spec kernel, device, m, k, weight's two sizes, weight2's (0, 0 if none)), the
// tensors' own sizes, since which of them is N follows from the kernel's layouts.
using GemmKey = std::tuple<std::string, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

RunFn g_run = nullptr;
NameFn g_status_name = nullptr;
DetailFn g_last_detail = nullptr;
std::string g_fallback = "no call yet";   // why the last call fell back to Python ("" if it did not)
std::map<Key, Plan> g_plans;
std::map<GemmKey, Plan> g_gemm_plans;
uint64_t g_runs = 0;   // calls this path ran (tests check that it is taken)

bool bf16_on(const at::Tensor &t, const at::Device &dev)
{
    return t.scalar_type() == at::kBFloat16 && t.device() == dev && t.is_contiguous();
}

bool is_vector(const at::Tensor &t, const at::Device &dev, int64_t n)
{
    return bf16_on(t, dev) && t.dim() == 1 && t.size(0) == n;
}

bool is_matrix(const at::Tensor &t, const at::Device &dev, int64_t rows, int64_t cols)
{
    return bf16_on(t, dev) && t.dim() == 2 && t.size(0) == rows && t.size(1) == cols;
}

// The plan for key, if ops.py registered one and eps matches it (as f32).
const Plan *find_plan(const Key &key, double eps)
{
    auto it = g_plans.find(key);
    if (it == g_plans.end() || static_cast<float>(eps) != it->second.eps) return nullptr;
    return &it->second;
}

// x's device is current (ops.py makes it so for other devices; here that case falls back).
bool on_current_device(const at::Tensor &x)
{
    return x.is_cuda() && x.get_device() == static_cast<int>(c10::cuda::current_device());
}

// Runs the plan; false (nothing launched) on a status other than OK or a misaligned workspace.
bool run(const Plan &plan, fusegen_args &args, const at::Tensor &x)
{
    at::Tensor ws;
    void *ws_ptr = nullptr;
    if (plan.workspace_bytes != 0) {
        ws = at::empty({static_cast<int64_t>(plan.workspace_bytes)}, x.options().dtype(at::kByte));
        ws_ptr = ws.data_ptr();
        if (reinterpret_cast<uintptr_t>(ws_ptr) % kWorkspaceAlign != 0) {
            g_fallback = "the workspace from the caching allocator is not 256-byte aligned";
            return false;
        }
    }
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream(x.get_device()).stream();
    // ws goes back to the caching allocator when it leaves scope: in order on this stream.
    const fusegen_status st = g_run(plan.kernel, &plan.problem, &args, ws_ptr, plan.workspace_bytes, stream);
    if (st != FUSEGEN_OK) {
        g_fallback = std::string("fusegen_run: ") + g_status_name(st) + ": " + g_last_detail();
        return false;
    }
    ++g_runs;
    g_fallback.clear();
    return true;
}

// ---- the entry points ------------------------------------------------------------------------

void set_runtime(uintptr_t run_fn, uintptr_t status_name_fn, uintptr_t last_detail_fn)
{
    g_run = reinterpret_cast<RunFn>(run_fn);
    g_status_name = reinterpret_cast<NameFn>(status_name_fn);
    g_last_detail = reinterpret_cast<DetailFn>(last_detail_fn);
}

// Records why a call falls back (tests and users read it with last_fallback()).
py::object fall_back(const char *why)
{
    g_fallback = why;
    return py::none();
}

// Fills slot from a ctypes fusegen_problem at problem_addr, copied with its strings.
void store_plan(Plan &slot, uintptr_t kernel, uintptr_t problem_addr, size_t workspace_bytes, double eps)
{
    slot = Plan{};
    slot.kernel = reinterpret_cast<const fusegen_kernel *>(kernel);
    std::memcpy(&slot.problem, reinterpret_cast<const void *>(problem_addr), sizeof(fusegen_problem));
    slot.epilogue = slot.problem.epilogue ? slot.problem.epilogue : "";
    slot.epilogue2 = slot.problem.epilogue2 ? slot.problem.epilogue2 : "";
    slot.workspace_bytes = workspace_bytes;
    slot.eps = static_cast<float>(eps);
    // The copies' strings, not the ctypes object's (which Python may free).
    slot.problem.epilogue = slot.epilogue.c_str();
    slot.problem.epilogue2 = slot.problem.epilogue2 ? slot.epilogue2.c_str() : nullptr;
}

void add_plan(int op, int device, int64_t m, int64_t n, int64_t k, int64_t n2, uintptr_t kernel,
              uintptr_t problem_addr, size_t workspace_bytes, double eps)
{
    store_plan(g_plans[Key{op, device, m, n, k, n2}], kernel, problem_addr, workspace_bytes, eps);
}

// A packed plan of fusegen::gemm for spec kernel name, keyed by the tensors' sizes.
void add_gemm_plan(const std::string &name, int device, int64_t m, int64_t k, int64_t w0, int64_t w1, int64_t w20,
                   int64_t w21, uintptr_t kernel, uintptr_t problem_addr, size_t workspace_bytes)
{
    store_plan(g_gemm_plans[GemmKey{name, device, m, k, w0, w1, w20, w21}], kernel, problem_addr, workspace_bytes,
               0.0);
}

void clear_plans()
{
    g_plans.clear();
    g_gemm_plans.clear();
}

size_t plan_count() { return g_plans.size() + g_gemm_plans.size(); }

at::ScalarType scalar_type(fusegen_dtype d)
{
    return d == FUSEGEN_DTYPE_F16 ? at::kHalf : d == FUSEGEN_DTYPE_BF16 ? at::kBFloat16 : at::kFloat;
}

// An optional input of fusegen::gemm: given exactly when the kernel reads it, then with the
// dtype, device, shape and packed layout the Python checks require.
bool optional_ok(const c10::optional<at::Tensor> &t, int used, at::ScalarType st, const at::Device &dev,
                 at::IntArrayRef shape)
{
    if (!t.has_value()) return !used;
    return used && t->scalar_type() == st && t->device() == dev && t->is_contiguous() && t->sizes().equals(shape);
}

// (y, pre_norm), or None: the caller runs the Python path.
py::object linear_residual_layernorm(const at::Tensor &x, const at::Tensor &weight, const at::Tensor &bias,
                                     const at::Tensor &residual, const at::Tensor &gamma, const at::Tensor &beta,
                                     double eps)
{
    if (g_run == nullptr) return fall_back("no runtime");
    if (!on_current_device(x)) return fall_back("x is not on the current CUDA device");
    if (x.dim() != 2 || weight.dim() != 2) return fall_back("x or weight is not 2-D");
    const int64_t m = x.size(0), k = x.size(1), n = weight.size(0);
    const at::Device dev = x.device();
    if (m == 0 || n % kAlignElems != 0 || k % kAlignElems != 0 || n == 0 || k == 0)
        return fall_back("M is 0, or N or K is 0 or not a multiple of 8");
    if (!is_matrix(x, dev, m, k) || !is_matrix(weight, dev, n, k) || !is_vector(bias, dev, n) ||
        !is_matrix(residual, dev, m, n) || !is_vector(gamma, dev, n) || !is_vector(beta, dev, n))
        return fall_back("an argument's dtype, device, shape or layout");
    const Plan *plan = find_plan(Key{0, dev.index(), m, n, k, 0}, eps);
    if (plan == nullptr) return fall_back("no plan for this shape and eps yet");
    at::Tensor y = at::empty({m, n}, x.options());
    at::Tensor pre_norm = at::empty({m, n}, x.options());
    fusegen_args args{};
    args.a = x.data_ptr();
    args.b = weight.data_ptr();
    args.out = y.data_ptr();
    args.bias = bias.data_ptr();
    args.residual = residual.data_ptr();
    args.gamma = gamma.data_ptr();
    args.beta = beta.data_ptr();
    args.store[0] = pre_norm.data_ptr();
    if (!run(*plan, args, x)) return py::none();
    return py::make_tuple(y, pre_norm);
}

// out2, or None: the caller runs the Python path.
py::object block_tail(const at::Tensor &x, const at::Tensor &w1, const at::Tensor &b1, const at::Tensor &residual,
                      const at::Tensor &gamma, const at::Tensor &beta, const at::Tensor &w2, const at::Tensor &b2,
                      double eps)
{
    if (g_run == nullptr) return fall_back("no runtime");
    if (!on_current_device(x)) return fall_back("x is not on the current CUDA device");
    if (x.dim() != 2 || w1.dim() != 2 || w2.dim() != 2) return fall_back("x, w1 or w2 is not 2-D");
    const int64_t m = x.size(0), k = x.size(1), n = w1.size(0), n2 = w2.size(0);
    const at::Device dev = x.device();
    if (m == 0 || n == 0 || k == 0 || n2 == 0 || n % kAlignElems != 0 || k % kAlignElems != 0 ||
        n2 % kAlignElems != 0)
        return fall_back("M is 0, or N, K or N2 is 0 or not a multiple of 8");
    if (!is_matrix(x, dev, m, k) || !is_matrix(w1, dev, n, k) || !is_vector(b1, dev, n) ||
        !is_matrix(residual, dev, m, n) || !is_vector(gamma, dev, n) || !is_vector(beta, dev, n) ||
        !is_matrix(w2, dev, n2, n) || !is_vector(b2, dev, n2))
        return fall_back("an argument's dtype, device, shape or layout");
    const Plan *plan = find_plan(Key{1, dev.index(), m, n, k, n2}, eps);
    if (plan == nullptr) return fall_back("no plan for this shape and eps yet");
    at::Tensor out2 = at::empty({m, n2}, x.options());
    // args.out stays NULL: a chain keeps GEMM1's [M, N] result in the workspace (as in ops.py)
    fusegen_args args{};
    args.a = x.data_ptr();
    args.b = w1.data_ptr();
    args.bias = b1.data_ptr();
    args.residual = residual.data_ptr();
    args.gamma = gamma.data_ptr();
    args.beta = beta.data_ptr();
    args.b2 = w2.data_ptr();
    args.out2 = out2.data_ptr();
    args.bias2 = b2.data_ptr();
    if (!run(*plan, args, x)) return py::none();
    return py::cast(out2);
}

// fusegen::gemm's outputs as a list (out or out2, then the stores), or None: the caller runs
// the Python path.
py::object gemm(const std::string &name, const at::Tensor &x, const at::Tensor &weight,
                const c10::optional<at::Tensor> &bias, const c10::optional<at::Tensor> &residual,
                const c10::optional<at::Tensor> &gamma, const c10::optional<at::Tensor> &beta,
                const c10::optional<at::Tensor> &weight2, const c10::optional<at::Tensor> &bias2,
                const c10::optional<at::Tensor> &residual2)
{
    if (g_run == nullptr) return fall_back("no runtime");
    if (!on_current_device(x)) return fall_back("x is not on the current CUDA device");
    if (x.dim() != 2 || weight.dim() != 2 || (weight2.has_value() && weight2->dim() != 2))
        return fall_back("x, weight or weight2 is not 2-D");
    const int64_t m = x.size(0), k = x.size(1);
    const int64_t w20 = weight2.has_value() ? weight2->size(0) : 0, w21 = weight2.has_value() ? weight2->size(1) : 0;
    const at::Device dev = x.device();
    auto it = g_gemm_plans.find(GemmKey{name, dev.index(), m, k, weight.size(0), weight.size(1), w20, w21});
    if (it == g_gemm_plans.end() || m == 0) return fall_back("no plan for this kernel and these sizes yet");
    const Plan &plan = it->second;
    const fusegen_kernel &e = *plan.kernel;
    const int64_t n = plan.problem.n, n2 = plan.problem.n2;
    // out, residual, stores and vectors: N / 2 columns after a gated activation
    int64_t n_out = n;
    for (int i = 0; i < e.n_ops; ++i)
        if (e.ops[i].kind == FUSEGEN_OP_SWIGLU || e.ops[i].kind == FUSEGEN_OP_GEGLU) n_out = n / 2;
    const at::ScalarType st_out = scalar_type(e.out), st_b = scalar_type(e.b);
    const bool chain = e.chain != 0;
    if (x.scalar_type() != scalar_type(e.a) || !x.is_contiguous() || weight.scalar_type() != st_b ||
        weight.device() != dev || !weight.is_contiguous() || weight2.has_value() != chain ||
        (chain && (weight2->scalar_type() != st_b || weight2->device() != dev || !weight2->is_contiguous())))
        return fall_back("x, weight or weight2: dtype, device or layout");
    if (!optional_ok(bias, e.uses_bias, st_out, dev, {n_out}) ||
        !optional_ok(residual, e.uses_residual, st_out, dev, {m, n_out}) ||
        !optional_ok(gamma, e.uses_gamma, st_out, dev, {n}) || !optional_ok(beta, e.uses_beta, st_out, dev, {n}) ||
        !optional_ok(bias2, chain && e.uses_bias2, st_out, dev, {n2}) ||
        !optional_ok(residual2, chain && e.uses_residual2, st_out, dev, {m, n2}))
        return fall_back("an optional input: given or not, dtype, device, shape or layout");
    const auto opts = x.options().dtype(st_out);
    py::list outs;
    fusegen_args args{};
    args.a = x.data_ptr();
    args.b = weight.data_ptr();
    args.bias = bias.has_value() ? bias->data_ptr() : nullptr;
    args.residual = residual.has_value() ? residual->data_ptr() : nullptr;
    args.gamma = gamma.has_value() ? gamma->data_ptr() : nullptr;
    args.beta = beta.has_value() ? beta->data_ptr() : nullptr;
    at::Tensor first = at::empty({m, chain ? n2 : n_out}, opts);
    outs.append(first);
    for (int i = 0; i < e.n_stores && i < FUSEGEN_MAX_STORES; ++i) {
        at::Tensor t = at::empty({m, n_out}, opts);
        args.store[i] = t.data_ptr();
        outs.append(t);
    }
    if (chain) {   // GEMM1's [M, N] result stays in the workspace (args.out NULL), as in generic.py
        args.b2 = weight2->data_ptr();
        args.out2 = first.data_ptr();
        args.bias2 = bias2.has_value() ? bias2->data_ptr() : nullptr;
        args.residual2 = residual2.has_value() ? residual2->data_ptr() : nullptr;
        for (int i = 0; i < e.n_stores2 && i < FUSEGEN_MAX_STORES; ++i) {
            at::Tensor t = at::empty({m, n2}, opts);
            args.store2[i] = t.data_ptr();
            outs.append(t);
        }
    } else {
        args.out = first.data_ptr();
    }
    if (!run(plan, args, x)) return py::none();
    return std::move(outs);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.doc() = "fusegen_torch's C++ happy path (see _fast.py)";
    m.def("set_runtime", &set_runtime, "the address of fusegen_run");
    m.def("add_plan", &add_plan, "register a plan ops.py made");
    m.def("clear_plans", &clear_plans);
    m.def("plan_count", &plan_count);
    m.def("runs", [] { return g_runs; });
    m.def("last_fallback", [] { return g_fallback; }, "why the last call fell back to Python (empty: it did not)");
    m.def("sizeof_problem", [] { return sizeof(fusegen_problem); });
    m.def("sizeof_args", [] { return sizeof(fusegen_args); });
    m.def("linear_residual_layernorm", &linear_residual_layernorm);
    m.def("block_tail", &block_tail);
    m.def("add_gemm_plan", &add_gemm_plan, "register a plan of fusegen::gemm");
    m.def("gemm", &gemm);
}
