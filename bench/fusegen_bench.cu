// fusegen_bench.cu - fusegen-bench: the kernels of the default fusegen library against cuBLASLt,
// side by side in one process, on the problems of a shapes file (bench/shapes.json).
//
// For every problem it measures, in this order:
//   floors   FLOPs over the measured bf16 matrix rate, bytes over the measured copy bandwidth
//   gemm     cuBLASLt GEMM alone (D = x W^T), best of the heuristic's top candidates
//   unfused  cuBLASLt GEMM with bias and beta * residual (D is the pre-norm tensor), then the
//            LayerNorm kernel below (the best practice without fusion)
//   fusegen  the kernel fusegen_select picks (and, with --all-variants, every eligible kernel),
//            checked against the unfused result before it is timed; from the default library,
//            or (--spec FILE) from the kernels of FILE compiled for this GPU by the JIT
// Chains (GEMM1 -> LayerNorm -> GEMM2) are measured the same way against two GEMMs alone and the
// unfused chain (GEMM1 bias+residual, LayerNorm, GEMM2 with bias and ReLU).
//
// Timing: CUDA events around every repetition, after warm-up, median of --reps repetitions,
// taken in interleaved blocks (every side of a problem in turn, five rounds) so that all sides
// share the GPU's power state (--sequential: each side in one block); the SM clock of each
// side is sampled through NVML when the driver's library is there.
// The inputs x and residual are rotated among enough copies that the copies together are at
// least twice the L2 cache, so no repetition finds its activations in L2.
//
// Exit status: 0 when every check passed, 1 when a check failed or a problem could not be
// measured, 2 for a usage error, 77 when there is no CUDA device.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fusegen.h"
#include "fusegen_default.h"
#include "fusegen_jit.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef FUSEGEN_BENCH_SHAPES
#define FUSEGEN_BENCH_SHAPES "bench/shapes.json"
#endif

namespace {

constexpr int kExitSkip = 77;
constexpr double kTolerance = 1e-2;          // relative L2, 16-bit outputs
constexpr float kLayerNormEps = 1e-5f;       // the layernorm eps of specs/default.json
constexpr size_t kLtWorkspaceBytes = 32u << 20;
constexpr int kLtCandidates = 8;             // heuristic results tried per cuBLASLt GEMM
constexpr int kTuneWarmup = 3;               // per candidate, when choosing an algorithm
constexpr int kTuneReps = 10;
constexpr int kWarmup = 10;                  // before every measurement
constexpr int kRounds = 5;                   // interleaved blocks a measurement's repetitions are split into
constexpr int kBlockWarmup = 3;              // before each later block
constexpr double kSettleMs = 300;            // untimed load on every side before a problem's timing
constexpr int kFloorReps = 20;
constexpr int64_t kFloorGemmDim = 8192;
constexpr size_t kCopyBytes = size_t(2) << 30;
constexpr int kMaxCopies = 64;
constexpr uint16_t kPoisonBf16 = 0x7fc0;     // a quiet NaN: an element never written stays NaN
constexpr const char *kFusedEpilogue = "bias+residual+store+layernorm+relu";
constexpr const char *kChainEpilogue1 = "bias+residual+layernorm";
constexpr const char *kChainEpilogue2 = "bias+relu";

// ---- errors ------------------------------------------------------------------------------------

struct BenchError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

__attribute__((format(printf, 1, 2))) std::string strprintf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

[[noreturn]] void throw_cuda(cudaError_t e, const char *call, const char *file, int line)
{
    throw BenchError(strprintf("%s:%d: %s failed: %s: %s", file, line, call, cudaGetErrorName(e),
                               cudaGetErrorString(e)));
}

[[noreturn]] void throw_lt(cublasStatus_t s, const char *call, const char *file, int line)
{
    throw BenchError(strprintf("%s:%d: %s failed: %s: %s", file, line, call, cublasLtGetStatusName(s),
                               cublasLtGetStatusString(s)));
}

[[noreturn]] void throw_fg(fusegen_status s, const char *call, const char *file, int line)
{
    throw BenchError(strprintf("%s:%d: %s failed: %s: %s", file, line, call, fusegen_status_name(s),
                               fusegen_last_detail()));
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t ck_err_ = (call);                                                              \
        if (ck_err_ != cudaSuccess)                                                                \
            throw_cuda(ck_err_, #call, __FILE__, __LINE__);                                        \
    } while (0)

// A kernel launch (in parentheses, for the commas of <<<...>>>), then its launch error, if any.
#define CK_LAUNCH(launch)                                                                          \
    do {                                                                                           \
        launch;                                                                                    \
        CK(cudaGetLastError());                                                                    \
    } while (0)

#define LT(call)                                                                                   \
    do {                                                                                           \
        cublasStatus_t lt_st_ = (call);                                                            \
        if (lt_st_ != CUBLAS_STATUS_SUCCESS)                                                       \
            throw_lt(lt_st_, #call, __FILE__, __LINE__);                                           \
    } while (0)

#define FG(call)                                                                                   \
    do {                                                                                           \
        fusegen_status fg_st_ = (call);                                                            \
        if (fg_st_ != FUSEGEN_OK)                                                                  \
            throw_fg(fg_st_, #call, __FILE__, __LINE__);                                           \
    } while (0)

// ---- owners of CUDA and cuBLASLt objects --------------------------------------------------------

class DevBuf {
public:
    DevBuf() = default;
    explicit DevBuf(size_t bytes) : bytes_(bytes)
    {
        if (bytes > 0)
            CK(cudaMalloc(&ptr_, bytes));
    }
    ~DevBuf() { reset(); }
    DevBuf(const DevBuf &) = delete;
    DevBuf &operator=(const DevBuf &) = delete;
    DevBuf(DevBuf &&o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
    DevBuf &operator=(DevBuf &&o) noexcept
    {
        if (this != &o) {
            reset();
            std::swap(ptr_, o.ptr_);
            std::swap(bytes_, o.bytes_);
        }
        return *this;
    }
    void *get() const { return ptr_; }
    size_t bytes() const { return bytes_; }

private:
    void reset()
    {
        if (ptr_)
            (void)cudaFree(ptr_);   // nothing useful to do with a failure while freeing
        ptr_ = nullptr;
        bytes_ = 0;
    }
    void *ptr_ = nullptr;
    size_t bytes_ = 0;
};

class Events {
public:
    explicit Events(size_t n)
    {
        ev_.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            cudaEvent_t e = nullptr;
            CK(cudaEventCreate(&e));
            ev_.push_back(e);
        }
    }
    ~Events()
    {
        for (cudaEvent_t e : ev_)
            (void)cudaEventDestroy(e);
    }
    Events(const Events &) = delete;
    Events &operator=(const Events &) = delete;
    cudaEvent_t operator[](size_t i) const { return ev_[i]; }

private:
    std::vector<cudaEvent_t> ev_;
};

struct LtOpDeleter {
    void operator()(cublasLtMatmulDesc_t d) const { (void)cublasLtMatmulDescDestroy(d); }
};
struct LtLayoutDeleter {
    void operator()(cublasLtMatrixLayout_t l) const { (void)cublasLtMatrixLayoutDestroy(l); }
};
struct LtPrefDeleter {
    void operator()(cublasLtMatmulPreference_t p) const { (void)cublasLtMatmulPreferenceDestroy(p); }
};
using LtOp = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, LtOpDeleter>;
using LtLayout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, LtLayoutDeleter>;
using LtPref = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, LtPrefDeleter>;

// ---- device kernels: random fill, poison, a delay, and the reference LayerNorm ------------------

__device__ __forceinline__ uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// p[i] = lo + (hi - lo) * u, u uniform in [0, 1) from a hash of (seed, i).
__global__ void fill_uniform_bf16(__nv_bfloat16 *p, size_t n, uint64_t seed, float lo, float hi)
{
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull + (i + 1) * 0xd1b54a32d192ed03ull);
        const float u = float(h >> 40) * (1.0f / 16777216.0f);
        p[i] = __float2bfloat16_rn(lo + (hi - lo) * u);
    }
}

__global__ void fill_bits_u16(uint16_t *p, size_t n, uint16_t bits)
{
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = bits;
}

// Holds the stream for ns nanoseconds, so that the host can queue a whole timed series before
// the first repetition starts: the events then time the GPU, not the host's launch rate.
__global__ void hold_stream(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(2000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

constexpr int kLnVec = 8;              // bf16 values per 16-byte access
constexpr int kLnMaxVecPerThread = 4;  // 16-byte vectors each thread keeps in registers
constexpr int kLnWarpMaxN = 1024;      // up to this N: one warp per row
constexpr int kLnMaxN = 1024 * kLnMaxVecPerThread * kLnVec;   // a block of 1024 threads a row
constexpr int kLnRowsPerBlock = 4;     // warps (rows) per block in the warp-per-row kernel

struct LnParams {
    const __nv_bfloat16 *in;           // [m, n]: the pre-norm tensor
    const __nv_bfloat16 *gamma, *beta; // [n]
    __nv_bfloat16 *out;                // [m, n]
    int m, n;
    float eps;
    int relu;
};

__device__ __forceinline__ void unpack8(const uint4 &u, float (&f)[kLnVec])
{
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
    for (int j = 0; j < kLnVec / 2; ++j) {
        const float2 t = __bfloat1622float2(h[j]);
        f[2 * j] = t.x;
        f[2 * j + 1] = t.y;
    }
}

__device__ __forceinline__ uint4 pack8(const float (&f)[kLnVec])
{
    uint4 u;
    __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&u);
#pragma unroll
    for (int j = 0; j < kLnVec / 2; ++j)
        h[j] = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);
    return u;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// Sum over the block; red holds 33 floats. Every thread gets the total.
__device__ float block_sum(float v, float *red)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < warps ? red[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0)
            red[32] = t;
    }
    __syncthreads();
    const float total = red[32];
    __syncthreads();   // red may be reused right away
    return total;
}

// y = (v - mean) * rstd * gamma + beta (then ReLU) for the vectors this thread holds.
__device__ __forceinline__ void ln_write(const LnParams &p, long long row, const float (&v)[kLnMaxVecPerThread][kLnVec],
                                         int first, int step, int vecs, float mean, float rstd)
{
    const uint4 *g4 = reinterpret_cast<const uint4 *>(p.gamma);
    const uint4 *b4 = reinterpret_cast<const uint4 *>(p.beta);
    uint4 *o4 = reinterpret_cast<uint4 *>(p.out + row * p.n);
#pragma unroll
    for (int i = 0; i < kLnMaxVecPerThread; ++i) {
        const int c = first + i * step;
        if (c < vecs) {
            float g[kLnVec], b[kLnVec], y[kLnVec];
            unpack8(g4[c], g);
            unpack8(b4[c], b);
#pragma unroll
            for (int j = 0; j < kLnVec; ++j) {
                float t = (v[i][j] - mean) * rstd * g[j] + b[j];
                y[j] = p.relu ? fmaxf(t, 0.0f) : t;
            }
            o4[c] = pack8(y);
        }
    }
}

// N <= 1024: one warp per row. Two passes over registers: the mean, then the centered squares.
__global__ void __launch_bounds__(32 * kLnRowsPerBlock) layernorm_warp_rows(LnParams p)
{
    const int lane = threadIdx.x & 31;
    const long long row = (long long)blockIdx.x * kLnRowsPerBlock + (threadIdx.x >> 5);
    if (row >= p.m)
        return;   // the whole warp leaves together
    const int vecs = p.n / kLnVec;
    const uint4 *in4 = reinterpret_cast<const uint4 *>(p.in + row * p.n);
    float v[kLnMaxVecPerThread][kLnVec] = {};
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kLnMaxVecPerThread; ++i) {
        const int c = lane + i * 32;
        if (c < vecs) {
            unpack8(in4[c], v[i]);
#pragma unroll
            for (int j = 0; j < kLnVec; ++j)
                s += v[i][j];
        }
    }
    const float mean = warp_sum(s) / float(p.n);
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < kLnMaxVecPerThread; ++i) {
        if (lane + i * 32 < vecs) {
#pragma unroll
            for (int j = 0; j < kLnVec; ++j) {
                const float d = v[i][j] - mean;
                q += d * d;
            }
        }
    }
    const float rstd = rsqrtf(warp_sum(q) / float(p.n) + p.eps);
    ln_write(p, row, v, lane, 32, vecs, mean, rstd);
}

// N > 1024: one block per row, the same two passes with block reductions.
__global__ void __launch_bounds__(1024) layernorm_block_rows(LnParams p)
{
    __shared__ float red[33];
    const long long row = blockIdx.x;
    const int vecs = p.n / kLnVec;
    const uint4 *in4 = reinterpret_cast<const uint4 *>(p.in + row * p.n);
    float v[kLnMaxVecPerThread][kLnVec] = {};
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kLnMaxVecPerThread; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        if (c < vecs) {
            unpack8(in4[c], v[i]);
#pragma unroll
            for (int j = 0; j < kLnVec; ++j)
                s += v[i][j];
        }
    }
    const float mean = block_sum(s, red) / float(p.n);
    float q = 0.0f;
#pragma unroll
    for (int i = 0; i < kLnMaxVecPerThread; ++i) {
        if (int(threadIdx.x + i * blockDim.x) < vecs) {
#pragma unroll
            for (int j = 0; j < kLnVec; ++j) {
                const float d = v[i][j] - mean;
                q += d * d;
            }
        }
    }
    const float rstd = rsqrtf(block_sum(q, red) / float(p.n) + p.eps);
    ln_write(p, row, v, threadIdx.x, blockDim.x, vecs, mean, rstd);
}

// ---- host side ----------------------------------------------------------------------------------

unsigned grid_for(size_t n, unsigned threads)
{
    const size_t blocks = (n + threads - 1) / threads;
    return unsigned(std::min<size_t>(std::max<size_t>(blocks, 1), size_t(1) << 20));
}

// The reference LayerNorm: in, gamma, beta, out bf16; n a multiple of 8; pointers 16-byte aligned.
void layernorm_bf16(const void *in, const void *gamma, const void *beta, void *out, int64_t m, int64_t n,
                    bool relu, cudaStream_t s)
{
    if (n % kLnVec != 0)
        throw BenchError(strprintf("LayerNorm: n = %lld is not a multiple of %d", (long long)n, kLnVec));
    LnParams p;
    p.in = static_cast<const __nv_bfloat16 *>(in);
    p.gamma = static_cast<const __nv_bfloat16 *>(gamma);
    p.beta = static_cast<const __nv_bfloat16 *>(beta);
    p.out = static_cast<__nv_bfloat16 *>(out);
    p.m = int(m);
    p.n = int(n);
    p.eps = kLayerNormEps;
    p.relu = relu ? 1 : 0;
    const int64_t vecs = n / kLnVec;
    if (n <= kLnWarpMaxN) {
        const unsigned blocks = unsigned((m + kLnRowsPerBlock - 1) / kLnRowsPerBlock);
        CK_LAUNCH((layernorm_warp_rows<<<blocks, 32 * kLnRowsPerBlock, 0, s>>>(p)));
        return;
    }
    // about two vectors per thread, at least two warps, at most 1024 threads
    int64_t threads = ((vecs + 1) / 2 + 31) / 32 * 32;
    threads = std::min<int64_t>(std::max<int64_t>(threads, 64), 1024);
    if (vecs > threads * kLnMaxVecPerThread)
        throw BenchError(strprintf("LayerNorm: n = %lld is above the %d this kernel holds in registers",
                                   (long long)n, kLnMaxN));
    CK_LAUNCH((layernorm_block_rows<<<unsigned(m), unsigned(threads), 0, s>>>(p)));
}

// ---- options and shapes ---------------------------------------------------------------------

struct Options {
    std::string shapes = FUSEGEN_BENCH_SHAPES;
    int reps = 100;
    bool reps_given = false;
    std::string csv, json, only, plot;
    std::string spec;   // a spec to compile with the JIT and measure instead of the default library
    bool all_variants = false;
    bool quick = false;
    bool sequential = false;   // each side in one block instead of interleaved rounds
    bool b_kn = false;         // the weights stored [K, N] (--b-layout kn) instead of [N, K]
    bool cold_weights = false; // the weights rotated among copies too (--cold-weights)
    int64_t sweep_n = 0, sweep_k = 0;   // --sweep-m N,K: the fused problem at M = 1 ... 65536
};

void usage(FILE *f)
{
    fprintf(f,
            "usage: fusegen-bench [options]\n"
            "  --shapes FILE        problems to run (default: %s)\n"
            "  --reps N             timed repetitions per measurement, median reported (default 100)\n"
            "  --quick              20 repetitions, for smoke runs\n"
            "  --sweep-m N,K        instead of a shapes file: the fused problem of this N and K at\n"
            "                       M = 1, 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024 ... 65536\n"
            "  --sequential         time each side of a problem in one block, one side after the other,\n"
            "                       instead of in interleaved rounds (see the method line)\n"
            "  --b-layout nk|kn     how every side stores the weights: nk, [N, K] like torch.nn.Linear\n"
            "                       (default), or kn, [K, N]\n"
            "  --cold-weights       rotate every side's weights among copies too (together >= 2x L2, as\n"
            "                       the inputs): each repetition reads them from DRAM, as a decode step\n"
            "                       does; by default weights that fit stay in L2 between repetitions\n"
            "  --only SUBSTRING     only the problems whose name contains SUBSTRING (any case)\n"
            "  --all-variants       also time every eligible kernel of the library, not only the selected one\n"
            "                       (the fused kernels and the plain GEMM's)\n"
            "  --spec FILE          measure the kernels of this spec (compiled for this GPU by the JIT)\n"
            "                       instead of the default library\n"
            "  --csv FILE           write the results as CSV\n"
            "  --json FILE          write the results as JSON\n"
            "  --plot FILE.png      write a gnuplot script and data next to FILE.png and run gnuplot if present\n"
            "  -h, --help           this text\n",
            FUSEGEN_BENCH_SHAPES);
}

// 0: parsed; 1: --help; 2: usage error (already reported).
int parse_options(int argc, char **argv, Options &o)
{
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](std::string &dst) {
            if (i + 1 >= argc) {
                fprintf(stderr, "fusegen-bench: %s needs a value\n", a.c_str());
                return false;
            }
            dst = argv[++i];
            return true;
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            return 1;
        } else if (a == "--shapes") {
            if (!value(o.shapes))
                return 2;
        } else if (a == "--csv") {
            if (!value(o.csv))
                return 2;
        } else if (a == "--json") {
            if (!value(o.json))
                return 2;
        } else if (a == "--only") {
            if (!value(o.only))
                return 2;
        } else if (a == "--plot") {
            if (!value(o.plot))
                return 2;
        } else if (a == "--spec") {
            if (!value(o.spec))
                return 2;
        } else if (a == "--reps") {
            std::string v;
            if (!value(v))
                return 2;
            char *end = nullptr;
            errno = 0;
            const long r = strtol(v.c_str(), &end, 10);
            if (errno != 0 || end == v.c_str() || *end != '\0' || r < 1 || r > 100000) {
                fprintf(stderr, "fusegen-bench: --reps '%s': give a whole number from 1 to 100000\n", v.c_str());
                return 2;
            }
            o.reps = int(r);
            o.reps_given = true;
        } else if (a == "--sweep-m") {
            std::string v;
            if (!value(v))
                return 2;
            long long n = 0, k = 0;
            char tail = 0;
            if (sscanf(v.c_str(), "%lld,%lld%c", &n, &k, &tail) != 2 || n < kLnVec || n > kLnMaxN || n % kLnVec ||
                k < 8 || k > (1 << 20) || k % 8) {
                fprintf(stderr,
                        "fusegen-bench: --sweep-m '%s': give N,K: N a multiple of %d up to %d (the reference "
                        "LayerNorm's rows), K a multiple of 8 up to 1048576\n", v.c_str(), kLnVec, kLnMaxN);
                return 2;
            }
            o.sweep_n = n;
            o.sweep_k = k;
        } else if (a == "--all-variants") {
            o.all_variants = true;
        } else if (a == "--quick") {
            o.quick = true;
        } else if (a == "--sequential") {
            o.sequential = true;
        } else if (a == "--cold-weights") {
            o.cold_weights = true;
        } else if (a == "--b-layout") {
            std::string v;
            if (!value(v))
                return 2;
            if (v != "nk" && v != "kn") {
                fprintf(stderr, "fusegen-bench: --b-layout takes nk or kn, not '%s'\n", v.c_str());
                return 2;
            }
            o.b_kn = v == "kn";
        } else {
            fprintf(stderr, "fusegen-bench: unknown option '%s'\n", a.c_str());
            usage(stderr);
            return 2;
        }
    }
    if (o.quick && !o.reps_given)
        o.reps = 20;
    if (!o.plot.empty() && o.plot.find('\'') != std::string::npos) {
        fprintf(stderr, "fusegen-bench: --plot '%s': the path may not contain a single quote\n", o.plot.c_str());
        return 2;
    }
    return 0;
}

struct Shape {
    std::string name;
    bool chain = false;
    int64_t m = 0, n = 0, k = 0, n2 = 0;
};

// Shapes files and specs are small: anything larger (a device file, a wrong path) is refused
// before it takes the host's memory.
constexpr size_t kMaxInputBytes = size_t(16) << 20;

std::string read_file(const std::string &path)
{
    FILE *f = fopen(path.c_str(), "rb");
    if (!f)
        throw BenchError(strprintf("%s: cannot open: %s", path.c_str(), strerror(errno)));
    std::string text;
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        text.append(buf, got);
        if (text.size() > kMaxInputBytes) {
            fclose(f);
            throw BenchError(strprintf("%s: larger than %zu MiB: not a shapes file or spec", path.c_str(),
                                       kMaxInputBytes >> 20));
        }
    }
    const bool bad = ferror(f) != 0;
    fclose(f);
    if (bad)
        throw BenchError(strprintf("%s: read error", path.c_str()));
    return text;
}

int64_t shape_dim(const std::string &path, const cJSON *obj, const char *key, const std::string &where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v))
        throw BenchError(strprintf("%s: %s/%s: missing, or not a number", path.c_str(), where.c_str(), key));
    const double d = v->valuedouble;
    if (!(d >= 1.0 && d < 2147483648.0) || std::floor(d) != d)
        throw BenchError(strprintf("%s: %s/%s = %g: expected a whole number from 1 to 2^31 - 1", path.c_str(),
                                   where.c_str(), key, d));
    return int64_t(d);
}

// The keys an object may have: a misspelt one ("chain", "n2" in a fused problem) would drop a
// problem or a size without a word.
void only_keys(const std::string &path, const cJSON *obj, const std::string &where,
               std::initializer_list<const char *> allowed)
{
    for (const cJSON *it = obj->child; it; it = it->next) {
        bool known = false;
        for (const char *a : allowed)
            known = known || (it->string && strcmp(it->string, a) == 0);
        if (!known) {
            std::string list;
            for (const char *a : allowed)
                list += std::string(list.empty() ? "" : ", ") + a;
            throw BenchError(strprintf("%s: %s/%s: unknown key (expected: %s)", path.c_str(), where.c_str(),
                                       it->string ? it->string : "", list.c_str()));
        }
    }
}

// {"fused": [{"name", "m", "n", "k"}...], "chains": [{"name", "m", "n", "k", "n2"}...], "about"}
std::vector<Shape> load_shapes(const std::string &path)
{
    const std::string text = read_file(path);
    const char *end = nullptr;
    std::unique_ptr<cJSON, void (*)(cJSON *)> root(cJSON_ParseWithOpts(text.c_str(), &end, 1), cJSON_Delete);
    if (!root) {
        const char *at = end ? end : cJSON_GetErrorPtr();
        int line = 1, col = 1;
        if (at && at >= text.c_str() && at <= text.c_str() + text.size()) {
            for (const char *c = text.c_str(); c < at; ++c) {
                if (*c == '\n') {
                    ++line;
                    col = 1;
                } else {
                    ++col;
                }
            }
        }
        throw BenchError(strprintf("%s:%d:%d: JSON syntax error", path.c_str(), line, col));
    }
    if (!cJSON_IsObject(root.get()))
        throw BenchError(strprintf("%s: the top level must be an object", path.c_str()));
    only_keys(path, root.get(), "", {"about", "fused", "chains"});
    std::vector<Shape> shapes;
    for (int chain = 0; chain < 2; ++chain) {
        const char *section = chain ? "chains" : "fused";
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root.get(), section);
        if (!arr)
            continue;
        if (!cJSON_IsArray(arr))
            throw BenchError(strprintf("%s: /%s must be an array", path.c_str(), section));
        int idx = 0;
        for (const cJSON *it = arr->child; it; it = it->next, ++idx) {
            const std::string where = strprintf("/%s/%d", section, idx);
            if (!cJSON_IsObject(it))
                throw BenchError(strprintf("%s: %s must be an object", path.c_str(), where.c_str()));
            if (chain)
                only_keys(path, it, where, {"name", "m", "n", "k", "n2", "about"});
            else
                only_keys(path, it, where, {"name", "m", "n", "k", "about"});
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
            if (!cJSON_IsString(name) || !name->valuestring || !name->valuestring[0])
                throw BenchError(strprintf("%s: %s/name: missing, or not a non-empty string", path.c_str(),
                                           where.c_str()));
            Shape s;
            s.name = name->valuestring;
            for (const char ch : s.name)   // names go into tables, CSV and the plot's data lines
                if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
                    throw BenchError(strprintf("%s: %s/name: control characters are not allowed", path.c_str(),
                                               where.c_str()));
            for (const Shape &other : shapes)   // results are keyed by name (bench/ab_compare.py)
                if (other.name == s.name)
                    throw BenchError(strprintf("%s: %s/name: '%s' is the name of an earlier problem", path.c_str(),
                                               where.c_str(), s.name.c_str()));
            s.chain = chain != 0;
            s.m = shape_dim(path, it, "m", where);
            s.n = shape_dim(path, it, "n", where);
            s.k = shape_dim(path, it, "k", where);
            if (s.chain)
                s.n2 = shape_dim(path, it, "n2", where);
            // the reference LayerNorm (unfused side) reads rows of 16-byte vectors held in registers
            if (s.n % kLnVec != 0 || s.n > kLnMaxN)
                throw BenchError(strprintf("%s: %s/n = %lld: the LayerNorm needs a multiple of %d up to %d",
                                           path.c_str(), where.c_str(), (long long)s.n, kLnVec, kLnMaxN));
            shapes.push_back(s);
        }
    }
    if (shapes.empty())
        throw BenchError(strprintf("%s: no problems (expected arrays \"fused\" and/or \"chains\")", path.c_str()));
    return shapes;
}

bool contains_nocase(const std::string &hay, const std::string &needle)
{
    auto lower = [](std::string s) {
        for (char &c : s)
            c = char(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    return lower(hay).find(lower(needle)) != std::string::npos;
}

// ---- clock telemetry (NVML, loaded at run time) ------------------------------------------------
//
// The large GEMMs run against the board's power cap (docs/decisions.md v91), so a time means more
// with the clock it ran at. While a block of repetitions is timed, a thread samples the SM
// clock and the clock event reasons through the driver's NVML every 2 ms; each side of a problem
// then reports the mean SM clock of its busy samples, and the problem the share of them held
// down by power. NVML is opened with dlopen: without it (no driver library) the bench runs as
// before and says why once.
class ClockProbe {
public:
    // Busy samples (the GPU-idle reason not set) of a stretch of time; adds up over stretches.
    struct Summary {
        int samples = 0, capped = 0;   // capped: with a power reason (software cap or brake)
        double mhz_sum = 0;
        void add(const Summary &o)
        {
            samples += o.samples;
            capped += o.capped;
            mhz_sum += o.mhz_sum;
        }
        double mean_mhz() const { return samples ? mhz_sum / samples : NAN; }
        double capped_share() const { return samples ? double(capped) / samples : NAN; }
    };

    static constexpr int kPeriodMs = 2;   // sampling period

    explicit ClockProbe(int cuda_device)
    {
        lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib_) {
            why_ = "libnvidia-ml.so.1 does not load";
            return;
        }
        init_ = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlInit_v2"));
        shutdown_ = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlShutdown"));
        by_bus_ = reinterpret_cast<ByBusFn>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
        clock_ = reinterpret_cast<ClockFn>(dlsym(lib_, "nvmlDeviceGetClockInfo"));
        reasons_ = reinterpret_cast<ReasonsFn>(dlsym(lib_, "nvmlDeviceGetCurrentClocksEventReasons"));
        if (!reasons_)
            reasons_ = reinterpret_cast<ReasonsFn>(dlsym(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons"));
        limit_ = reinterpret_cast<ClockFnU>(dlsym(lib_, "nvmlDeviceGetEnforcedPowerLimit"));
        char bus[32] = {0};
        if (!init_ || !shutdown_ || !by_bus_ || !clock_ || !reasons_ || !limit_) {
            why_ = "libnvidia-ml.so.1 lacks a function this bench uses";
        } else if (init_() != 0) {
            why_ = "nvmlInit failed";
        } else if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_device) != cudaSuccess ||
                   by_bus_(bus, &dev_) != 0) {
            (void)cudaGetLastError();
            why_ = "NVML does not know the CUDA device's PCI bus id";
            shutdown_();
        } else {
            unsigned mw = 0;
            if (limit_(dev_, &mw) == 0)
                power_limit_w_ = mw / 1000;
            ready_ = true;
            sampler_ = std::thread([this] { sample_loop(); });
            return;
        }
        dlclose(lib_);
        lib_ = nullptr;
    }
    ~ClockProbe()
    {
        if (ready_) {
            {
                std::lock_guard<std::mutex> g(mu_);
                quit_ = true;
            }
            cv_.notify_all();
            sampler_.join();
            shutdown_();
        }
        if (lib_)
            dlclose(lib_);
    }
    ClockProbe(const ClockProbe &) = delete;
    ClockProbe &operator=(const ClockProbe &) = delete;

    bool available() const { return ready_; }
    const std::string &why_unavailable() const { return why_; }
    unsigned power_limit_w() const { return power_limit_w_; }   // 0: unknown

    // Samples from begin() to end() (one timed block).
    void begin()
    {
        std::lock_guard<std::mutex> g(mu_);
        acc_ = Summary();
        active_ = true;
        cv_.notify_all();
    }
    Summary end()
    {
        std::lock_guard<std::mutex> g(mu_);
        active_ = false;
        return acc_;
    }

private:
    using Device = void *;   // nvmlDevice_t
    using InitFn = int (*)();
    using ByBusFn = int (*)(const char *, Device *);
    using ClockFn = int (*)(Device, int, unsigned *);
    using ClockFnU = int (*)(Device, unsigned *);
    using ReasonsFn = int (*)(Device, unsigned long long *);
    static constexpr int kSmClock = 1;                            // NVML_CLOCK_SM
    static constexpr unsigned long long kIdle = 0x1;              // GpuIdle
    static constexpr unsigned long long kPower = 0x4 | 0x80;      // SwPowerCap, HwPowerBrakeSlowdown

    void sample_loop()
    {
        std::unique_lock<std::mutex> g(mu_);
        while (!quit_) {
            if (!active_) {
                cv_.wait(g, [this] { return quit_ || active_; });
                continue;
            }
            g.unlock();
            unsigned mhz = 0;
            unsigned long long why = 0;
            const bool ok = clock_(dev_, kSmClock, &mhz) == 0 && reasons_(dev_, &why) == 0;
            g.lock();
            if (ok && active_ && !(why & kIdle)) {
                acc_.samples++;
                acc_.mhz_sum += mhz;
                acc_.capped += (why & kPower) ? 1 : 0;
            }
            cv_.wait_for(g, std::chrono::milliseconds(kPeriodMs), [this] { return quit_; });
        }
    }

    void *lib_ = nullptr;
    InitFn init_ = nullptr, shutdown_ = nullptr;
    ByBusFn by_bus_ = nullptr;
    ClockFn clock_ = nullptr;
    ReasonsFn reasons_ = nullptr;
    ClockFnU limit_ = nullptr;
    Device dev_ = nullptr;
    bool ready_ = false;
    std::string why_;
    unsigned power_limit_w_ = 0;
    std::thread sampler_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool active_ = false, quit_ = false;
    Summary acc_;
};

// ---- the bench context -------------------------------------------------------------------------

struct Ctx {
    Options opt;
    const fusegen_library *lib = &fusegen_default_library;   // the kernels measured
    fusegen_jit *jit = nullptr;                               // with --spec: where lib comes from
    cudaStream_t stream = nullptr;
    cublasLtHandle_t lt = nullptr;
    DevBuf lt_ws;
    size_t l2_bytes = 0;
    double matrix_tflops = NAN;   // floors
    double copy_tbs = NAN;
    uint64_t next_seed = 1;
    std::unique_ptr<ClockProbe> probe;   // set in run(); may be unavailable
};

void fill_random(Ctx &c, const DevBuf &b, float lo, float hi)
{
    const size_t n = b.bytes() / 2;
    CK_LAUNCH((fill_uniform_bf16<<<grid_for(n, 256), 256, 0, c.stream>>>(static_cast<__nv_bfloat16 *>(b.get()), n,
                                                                          c.next_seed++, lo, hi)));
}

void poison(Ctx &c, const DevBuf &b)
{
    const size_t n = b.bytes() / 2;
    CK_LAUNCH((fill_bits_u16<<<grid_for(n, 256), 256, 0, c.stream>>>(static_cast<uint16_t *>(b.get()), n,
                                                                      kPoisonBf16)));
}

double median(std::vector<double> v)
{
    if (v.empty())
        return NAN;
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Runs enqueue(first + i) warmup times, then reps times between events, and appends each
// repetition's ms to samples. launches is about how many launches one repetition makes: the
// stream is held until every repetition is queued, so that none waits on the host.
template <class F>
void time_block(Ctx &c, int warmup, int reps, int launches, int first, F &&enqueue, std::vector<double> &samples)
{
    for (int i = 0; i < warmup; ++i)
        enqueue(first + i);
    CK(cudaStreamSynchronize(c.stream));
    Events ev(size_t(reps) + 1);
    const unsigned long long hold_ns =
        std::min<unsigned long long>(std::max<unsigned long long>(20000ull * launches * reps, 200000ull),
                                     200000000ull);
    CK_LAUNCH((hold_stream<<<1, 1, 0, c.stream>>>(hold_ns)));
    CK(cudaEventRecord(ev[0], c.stream));
    for (int i = 0; i < reps; ++i) {
        enqueue(first + warmup + i);
        CK(cudaEventRecord(ev[size_t(i) + 1], c.stream));
    }
    CK(cudaStreamSynchronize(c.stream));
    for (int i = 0; i < reps; ++i) {
        float ms = 0.0f;
        CK(cudaEventElapsedTime(&ms, ev[size_t(i)], ev[size_t(i) + 1]));
        samples.push_back(ms);
    }
}

// The median ms of one repetition over one block (for tuning and the floors).
template <class F>
double time_median_ms(Ctx &c, int warmup, int reps, int launches, F &&enqueue)
{
    std::vector<double> t;
    time_block(c, warmup, reps, launches, 0, enqueue, t);
    return median(t);
}

// Side-by-side timing of one problem's measurements. Large GEMMs run against the board's power
// cap, and the clock they get depends on what ran in the last tens of milliseconds (docs/
// decisions.md v91, v92): timed one side after the other, a side could run at another clock than
// the side before it (the one timed first after an idle stretch got the full clock). By
// default the repetitions are split into kRounds blocks, and round r runs one block of every
// measurement, starting from measurement r mod n: every side sees the same mix of power states,
// as kernels in a model do. --sequential times each side in one block instead. Each reports the
// median of all its repetitions. Both start after kSettleMs of untimed load (settle()).
//
// Every block runs inside two NVTX ranges, the problem's name and the side's, so a profiler can
// pick one side: ncu --nvtx --nvtx-include "llm-70b o-proj/cublaslt-gemm/" (docs/performance.md).
class Interleaved {
public:
    Interleaved(Ctx &c, std::string problem) : c_(c), problem_(std::move(problem)) {}

    // Registers a measurement named side (launches: about how many launches one repetition
    // makes); returns its index in run()'s result.
    size_t add(std::string side, int launches, std::function<void(int)> enqueue)
    {
        items_.push_back(Item{std::move(side), launches, std::move(enqueue), 0, {}});
        return items_.size() - 1;
    }

    std::vector<double> run()
    {
        const size_t n = items_.size();
        const int reps = c_.opt.reps;
        const int rounds = c_.opt.sequential ? 1 : std::min(kRounds, reps);
        std::vector<std::vector<double>> samples(n);
        ClockProbe *probe = c_.probe && c_.probe->available() ? c_.probe.get() : nullptr;
        settle();
        for (int r = 0; r < rounds; ++r) {
            const int block = reps / rounds + (r < reps % rounds ? 1 : 0);
            for (size_t j = 0; j < n; ++j) {
                const size_t at = (size_t(r) + j) % n;
                Item &it = items_[at];
                // the first block warms up fully; later ones only refill the caches
                const int warmup = r == 0 ? kWarmup : kBlockWarmup;
                if (probe)
                    probe->begin();
                nvtxRangePushA(problem_.c_str());
                nvtxRangePushA(it.side.c_str());
                time_block(c_, warmup, block, it.launches, it.next, it.enqueue, samples[at]);
                nvtxRangePop();
                nvtxRangePop();
                if (probe)
                    it.clocks.add(probe->end());
                it.next += warmup + block;   // the rotation over input copies carries on
            }
        }
        std::vector<double> medians;
        for (const std::vector<double> &t : samples)
            medians.push_back(median(t));
        return medians;
    }

    // The SM clock while measurement i ran, and over all of them (no samples without NVML).
    const ClockProbe::Summary &clocks(size_t i) const { return items_[i].clocks; }
    ClockProbe::Summary clocks() const
    {
        ClockProbe::Summary all;
        for (const Item &it : items_)
            all.add(it.clocks);
        return all;
    }

private:
    // The checks before the timing leave the GPU idle, and after an idle stretch large GEMMs run
    // at the full clock for a while (over 70 ms) before the power cap pulls it down (decisions.md v92):
    // the side timed first would get that burst. So every side runs untimed, in turn, until
    // kSettleMs have passed; the timing then starts in the loaded state, as in a model.
    void settle()
    {
        const auto t0 = std::chrono::steady_clock::now();
        auto elapsed_ms = [&] {
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        };
        while (!items_.empty() && elapsed_ms() < kSettleMs) {
            for (Item &it : items_) {
                for (int i = 0; i < kWarmup; ++i)
                    it.enqueue(it.next + i);
                it.next += kWarmup;
                CK(cudaStreamSynchronize(c_.stream));
            }
        }
    }

    struct Item {
        std::string side;
        int launches;
        std::function<void(int)> enqueue;
        int next;   // the repetition index the next block starts from
        ClockProbe::Summary clocks;
    };
    Ctx &c_;
    std::string problem_;
    std::vector<Item> items_;
};

// Copies of x and residual so that together they are at least twice the L2.
int copies_for(const Ctx &c, size_t bytes_per_copy)
{
    if (bytes_per_copy == 0)
        return 1;
    const size_t need = (2 * c.l2_bytes + bytes_per_copy - 1) / bytes_per_copy;
    return int(std::min<size_t>(std::max<size_t>(need, 2), kMaxCopies));
}

// A weight matrix, in one copy, or with --cold-weights in copies_for() copies of the same
// values (so every check holds whichever copy a side reads), repetition i reading copy i mod n.
struct Weights {
    std::vector<DevBuf> copies;
    Weights(Ctx &c, size_t bytes, float lo, float hi)
    {
        const int n = c.opt.cold_weights ? copies_for(c, bytes) : 1;
        copies.emplace_back(bytes);
        fill_random(c, copies[0], lo, hi);
        for (int i = 1; i < n; ++i) {
            copies.emplace_back(bytes);
            CK(cudaMemcpyAsync(copies.back().get(), copies[0].get(), bytes, cudaMemcpyDeviceToDevice, c.stream));
        }
    }
    void *at(int i) const { return copies[size_t(i) % copies.size()].get(); }
    int count() const { return int(copies.size()); }
};

// ---- cuBLASLt GEMM in the row-major convention of the problems ----------------------------------
//
// D[M,N] = x[M,K] W[N,K]^T (+ bias[N]) (+ C[M,N]) (then ReLU), bf16 in and out, f32 compute.
// Row-major D is column-major D^T [N,M]; so cuBLASLt computes D^T = W x^T with A = W (stored
// column-major as [K,N], transposed) and B = x (column-major [K,M], not transposed): the "TN"
// layout. The bias runs along D^T's rows, that is along n. With w_kn (W stored [K,N]), A is W
// as it lies, column-major [N,K], not transposed: "NN".
class LtGemm {
public:
    LtGemm(Ctx &c, int64_t m, int64_t n, int64_t k, cublasLtEpilogue_t epi, const void *bias, bool add_c,
           bool w_kn = false)
        : c_(c), beta_(add_c ? 1.0f : 0.0f)
    {
        cublasLtMatmulDesc_t op = nullptr;
        LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        op_.reset(op);
        const cublasOperation_t ta = w_kn ? CUBLAS_OP_N : CUBLAS_OP_T, tb = CUBLAS_OP_N;
        LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        if (bias) {
            // the bias has D's type (bf16), cuBLASLt's default for a bf16 D
            LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
        }
        cublasLtMatrixLayout_t l = nullptr;
        if (w_kn)
            LT(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, uint64_t(n), uint64_t(k), n));
        else
            LT(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, uint64_t(k), uint64_t(n), k));
        a_.reset(l);
        LT(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, uint64_t(k), uint64_t(m), k));
        b_.reset(l);
        LT(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, uint64_t(n), uint64_t(m), n));
        d_.reset(l);

        cublasLtMatmulPreference_t pref = nullptr;
        LT(cublasLtMatmulPreferenceCreate(&pref));
        LtPref pref_owner(pref);
        const uint64_t ws = kLtWorkspaceBytes;
        LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
        cublasLtMatmulHeuristicResult_t res[kLtCandidates];
        memset(res, 0, sizeof res);
        int found = 0;
        LT(cublasLtMatmulAlgoGetHeuristic(c.lt, op, a_.get(), b_.get(), d_.get(), d_.get(), pref, kLtCandidates,
                                          res, &found));
        for (int i = 0; i < found && i < kLtCandidates; ++i)
            if (res[i].state == CUBLAS_STATUS_SUCCESS && res[i].workspaceSize <= kLtWorkspaceBytes)
                cands_.push_back(res[i]);
        if (cands_.empty())
            throw BenchError(strprintf("cuBLASLt has no algorithm for M=%lld N=%lld K=%lld (epilogue %d)",
                                       (long long)m, (long long)n, (long long)k, int(epi)));
    }

    // One GEMM with the current algorithm; c is ignored unless the GEMM adds C.
    void run(const void *x, const void *w, const void *c, void *d) const
    {
        const float alpha = 1.0f;
        const void *cptr = beta_ != 0.0f ? c : d;
        LT(cublasLtMatmul(c_.lt, op_.get(), &alpha, w, a_.get(), x, b_.get(), &beta_, cptr, d_.get(), d, d_.get(),
                          &cands_[cur_].algo, c_.lt_ws.get(), kLtWorkspaceBytes, c_.stream));
        CK(cudaGetLastError());
    }

    // Times every candidate briefly with time_current() (which runs this GEMM through run())
    // and keeps the fastest. A candidate that fails to run is left out.
    template <class F>
    void tune(F &&time_current)
    {
        double best = INFINITY;
        size_t best_i = cands_.size();
        std::string last_error;
        for (size_t i = 0; i < cands_.size(); ++i) {
            cur_ = i;
            double t;
            try {
                t = time_current();
            } catch (const BenchError &e) {
                last_error = e.what();
                (void)cudaGetLastError();
                CK(cudaStreamSynchronize(c_.stream));
                continue;
            }
            if (t < best) {
                best = t;
                best_i = i;
            }
        }
        if (best_i == cands_.size())
            throw BenchError("no cuBLASLt candidate ran: " + last_error);
        cur_ = best_i;
    }

    // "algo id A (candidate i of n)"
    std::string describe() const
    {
        int id = -1;
        size_t written = 0;
        if (cublasLtMatmulAlgoConfigGetAttribute(&cands_[cur_].algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id,
                                                 &written) != CUBLAS_STATUS_SUCCESS)
            id = -1;
        return strprintf("algo id %d, candidate %zu of %zu", id, cur_ + 1, cands_.size());
    }

private:
    Ctx &c_;
    float beta_;
    LtOp op_;
    LtLayout a_, b_, d_;
    std::vector<cublasLtMatmulHeuristicResult_t> cands_;
    size_t cur_ = 0;
};

// ---- floors ------------------------------------------------------------------------------------

double measure_matrix_tflops(Ctx &c)
{
    const int64_t d = kFloorGemmDim;
    const size_t bytes = size_t(d) * size_t(d) * 2;
    DevBuf x(bytes), w(bytes), out(bytes);
    fill_random(c, x, -1.0f, 1.0f);
    const float s = 1.0f / std::sqrt(float(d));
    fill_random(c, w, -s, s);
    LtGemm g(c, d, d, d, CUBLASLT_EPILOGUE_DEFAULT, nullptr, false);
    auto rep = [&](int) { g.run(x.get(), w.get(), nullptr, out.get()); };
    g.tune([&] { return time_median_ms(c, kTuneWarmup, kTuneReps, 1, rep); });
    const double ms = time_median_ms(c, kWarmup, kFloorReps, 1, rep);
    return 2.0 * double(d) * double(d) * double(d) / (ms * 1e-3) / 1e12;
}

double measure_copy_tbs(Ctx &c)
{
    DevBuf src(kCopyBytes), dst(kCopyBytes);
    fill_random(c, src, -1.0f, 1.0f);
    auto rep = [&](int) {
        CK(cudaMemcpyAsync(dst.get(), src.get(), kCopyBytes, cudaMemcpyDeviceToDevice, c.stream));
    };
    const double ms = time_median_ms(c, kWarmup, kFloorReps, 1, rep);
    return 2.0 * double(kCopyBytes) / (ms * 1e-3) / 1e12;   // read + written
}

double compute_floor_ms(const Ctx &c, double flops, double bytes)
{
    return std::max(flops / (c.matrix_tflops * 1e12), bytes / (c.copy_tbs * 1e12)) * 1e3;
}

// ---- checks ------------------------------------------------------------------------------------

float bf16_to_float(uint16_t h)
{
    const uint32_t u = uint32_t(h) << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

std::vector<uint16_t> to_host(const DevBuf &b)
{
    std::vector<uint16_t> h(b.bytes() / 2);
    CK(cudaMemcpy(h.data(), b.get(), b.bytes(), cudaMemcpyDeviceToHost));
    return h;
}

size_t count_nonfinite(const std::vector<uint16_t> &v)
{
    size_t bad = 0;
    for (uint16_t h : v)
        bad += (h & 0x7f80u) == 0x7f80u ? 1 : 0;
    return bad;
}

// ||got - ref|| / ||ref|| in double; NaN when got holds a NaN.
double rel_l2(const std::vector<uint16_t> &got, const std::vector<uint16_t> &ref)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < got.size() && i < ref.size(); ++i) {
        const double g = bf16_to_float(got[i]), r = bf16_to_float(ref[i]);
        num += (g - r) * (g - r);
        den += r * r;
    }
    if (got.size() != ref.size())
        return NAN;
    if (den == 0.0)
        return num == 0.0 ? 0.0 : INFINITY;
    return std::sqrt(num / den);
}

double worst(double a, double b)
{
    if (std::isnan(a) || std::isnan(b))
        return NAN;
    return std::max(a, b);
}

// The reference itself must be finite, or a failure would be blamed on fusegen.
void require_finite_reference(const std::vector<uint16_t> &ref, const char *what)
{
    const size_t bad = count_nonfinite(ref);
    if (bad)
        throw BenchError(strprintf("the unfused reference %s has %zu non-finite values of %zu", what, bad, ref.size()));
}

// ---- results -----------------------------------------------------------------------------------

struct Row {
    Shape shape;
    std::string kernel;       // "-" when fusegen did not run
    bool selected = false;    // the kernel fusegen_select picked
    double floor_ms = NAN, gemm_ms = NAN, unfused_ms = NAN, fused_ms = NAN;
    // fusegen's own GEMM without an epilogue (the library's plain kernel, when it has one):
    // fusegen_gemm_ms / gemm_ms is the mainloop's share of fused/gemm, fused_ms / fusegen_gemm_ms
    // the epilogue's.
    double fusegen_gemm_ms = NAN;
    // the SM clock while each side was timed (NVML; NaN without it): mean MHz of the busy
    // samples, and the share of all the problem's samples held down by the power cap
    double gemm_mhz = NAN, fusegen_gemm_mhz = NAN, unfused_mhz = NAN, fused_mhz = NAN, power_capped = NAN;
    double tflops = NAN, fused_over_gemm = NAN, unfused_over_fused = NAN, rel_err = NAN;
    std::string status;       // ok, FAIL, skipped, error
    std::string note;         // why skipped / error text
};

double problem_flops(const Shape &s)
{
    double f = 2.0 * double(s.m) * double(s.n) * double(s.k);
    if (s.chain)
        f += 2.0 * double(s.m) * double(s.n) * double(s.n2);
    return f;
}

double problem_bytes(const Shape &s)
{
    const double m = double(s.m), n = double(s.n), k = double(s.k), n2 = double(s.n2);
    if (!s.chain)   // x, W, bias, residual, gamma, beta, out, pre_norm
        return 2.0 * (m * k + n * k + n + m * n + n + n + m * n + m * n);
    // x, W1, b1, residual, gamma, beta, W2, b2, out2
    return 2.0 * (m * k + n * k + n + m * n + n + n + n2 * n + n2 + m * n2);
}

void finish_row(Row &r)
{
    if (std::isfinite(r.fused_ms) && r.fused_ms > 0) {
        r.tflops = problem_flops(r.shape) / (r.fused_ms * 1e-3) / 1e12;
        r.fused_over_gemm = r.fused_ms / r.gemm_ms;
        r.unfused_over_fused = r.unfused_ms / r.fused_ms;
    }
}

// The kernels to time: the selected one first, then (with --all-variants) the other eligible
// ones. Empty, with the reason in skip, when the library cannot run the problem here.
std::vector<const fusegen_kernel *> fusegen_kernels_for(const Ctx &c, const fusegen_problem &p, std::string &skip)
{
    std::vector<const fusegen_kernel *> ks;
    const fusegen_kernel *best = nullptr;
    const fusegen_status st = fusegen_select(c.lib, &p, &best);
    if (st == FUSEGEN_ERR_NOT_SUPPORTED || st == FUSEGEN_ERR_ARCH || st == FUSEGEN_ERR_MISALIGNED) {
        skip = strprintf("%s: %s", fusegen_status_name(st), fusegen_last_detail());
        return ks;
    }
    if (st != FUSEGEN_OK)
        throw_fg(st, "fusegen_select", __FILE__, __LINE__);
    ks.push_back(best);
    if (c.opt.all_variants && c.lib->n_kernels > 1) {
        std::vector<const fusegen_kernel *> all(c.lib->n_kernels, nullptr);
        size_t found = 0;
        FG(fusegen_query(c.lib, &p, all.data(), all.size(), &found));
        for (size_t i = 0; i < found && i < all.size(); ++i)
            if (all[i] && all[i] != best)
                ks.push_back(all[i]);
    }
    return ks;
}

// A bf16 problem in the benchmark's layout (x [M,K] row-major, W [N,K], or [K,N] with w_kn),
// for the device at hand.
fusegen_problem bf16_problem(int64_t M, int64_t N, int64_t K, const char *epilogue, bool w_kn)
{
    fusegen_problem p;
    memset(&p, 0, sizeof p);
    p.m = M;
    p.n = N;
    p.k = K;
    p.a = p.b = p.out = FUSEGEN_DTYPE_BF16;
    p.b_layout = w_kn ? FUSEGEN_LAYOUT_KN : FUSEGEN_LAYOUT_NK;
    p.epilogue = epilogue;
    p.sm = 0;
    return p;
}

// " at 1700 MHz": the mean SM clock of a side, for its line of output (empty without samples).
std::string at_clock(double mhz)
{
    return std::isfinite(mhz) ? strprintf("  at %.0f MHz", mhz) : std::string();
}

// The library's plain GEMM kernel (no epilogue) on a fused problem's shape, checked at
// construction against cuBLASLt's result (computed into scratch): the one fusegen_select picks,
// or the given one. usable() is false when the library has none for this device or its result
// is off; then it is not timed.
class PlainGemm {
public:
    PlainGemm(Ctx &c, int64_t M, int64_t N, int64_t K, int R, const std::vector<DevBuf> &xs, const Weights &w,
              DevBuf &scratch, const fusegen_kernel *given = nullptr)
        : c_(c), R_(R), xs_(xs), w_(w), out_(size_t(M) * size_t(N) * 2), p_(bf16_problem(M, N, K, "", c.opt.b_kn))
    {
        kernel_ = given;
        if (!kernel_ && fusegen_select(c.lib, &p_, &kernel_) != FUSEGEN_OK) {
            kernel_ = nullptr;
            return;
        }
        size_t ws_bytes = 0;   // as the API asks, though no plain kernel needs any today
        FG(fusegen_workspace_size(kernel_, &p_, &ws_bytes));
        ws_ = DevBuf(ws_bytes);
        memset(&args_, 0, sizeof args_);
        args_.b = w.at(0);
        args_.out = out_.get();
        LtGemm g(c, M, N, K, CUBLASLT_EPILOGUE_DEFAULT, nullptr, false, c.opt.b_kn);
        g.run(xs[0].get(), w.at(0), nullptr, scratch.get());
        poison(c, out_);
        enqueue(0);
        CK(cudaStreamSynchronize(c.stream));
        err_ = rel_l2(to_host(out_), to_host(scratch));
    }
    bool usable() const { return kernel_ != nullptr && err_ <= kTolerance; }
    const fusegen_kernel *kernel() const { return kernel_; }
    const fusegen_problem &problem() const { return p_; }
    void enqueue(int i)
    {
        args_.a = xs_[size_t(i % R_)].get();
        args_.b = w_.at(i);
        FG(fusegen_run(kernel_, &p_, &args_, ws_.get(), ws_.bytes(), c_.stream));
        CK(cudaGetLastError());
    }
    void report(double ms, double mhz) const
    {
        if (!kernel_)
            return;
        if (usable())
            printf("  fusegen GEMM alone (%s)  %9.4f ms  rel err %.2e%s\n", kernel_->name, ms, err_,
                   at_clock(mhz).c_str());
        else
            printf("  fusegen GEMM alone (%s)  rel err %.2e  FAIL (not timed)\n", kernel_->name, err_);
    }

private:
    Ctx &c_;
    int R_;
    const std::vector<DevBuf> &xs_;
    const Weights &w_;
    DevBuf out_, ws_;
    fusegen_problem p_;
    fusegen_args args_;
    const fusegen_kernel *kernel_ = nullptr;
    double err_ = NAN;
};

// One fusegen kernel of a problem, between its check and its timing.
struct FusedRun {
    Row row;
    std::string detail;   // the check's details, printed with the time
    const fusegen_kernel *kernel = nullptr;
    DevBuf ws;
    fusegen_args args;
    size_t timer_index = 0;
};

void print_kernel_result(const Row &r, const std::string &detail)
{
    printf("  fusegen %-40s %s  rel err %.2e%s  %9.4f ms%s\n", r.kernel.c_str(), r.selected ? "(selected)" : "(variant) ",
           r.rel_err, detail.c_str(), r.fused_ms, at_clock(r.fused_mhz).c_str());
    if (r.status == "FAIL")
        printf("  FAIL: relative L2 error above %.0e\n", kTolerance);
    fflush(stdout);
}

// The host's time a call, fusegen_select + fusegen_run back to back (what a decode step pays
// per layer): the median of kHostCalls calls, few enough that the launch queue never fills (the
// GPU time would then show instead).
void report_host_time(Ctx &c, const fusegen_problem &p, FusedRun &f)
{
    constexpr int kHostCalls = 200;
    std::vector<double> us;
    us.reserve(kHostCalls);
    CK(cudaStreamSynchronize(c.stream));
    for (int i = 0; i < kHostCalls; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const fusegen_kernel *k = nullptr;
        FG(fusegen_select(c.lib, &p, &k));
        FG(fusegen_run(k, &p, &f.args, f.ws.get(), f.ws.bytes(), c.stream));
        const auto t1 = std::chrono::steady_clock::now();
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(c.stream));
    std::sort(us.begin(), us.end());
    printf("  host time a call (fusegen_select + fusegen_run)  %.2f us  (median of %d back to back)\n",
           us[us.size() / 2], kHostCalls);
}

// Registers every checked kernel of a problem with the timer; each repetition uses input copy
// i mod R (x and the residual).
void add_fused_runs(Ctx &c, Interleaved &timer, const fusegen_problem &p, std::deque<FusedRun> &runs,
                    const std::vector<DevBuf> &xs, const std::vector<DevBuf> &rs, const Weights &w,
                    const Weights *w2, int launches)
{
    const int R = int(xs.size());
    for (FusedRun &f : runs) {
        f.timer_index = timer.add("fusegen:" + f.row.kernel, launches, [&c, &p, &f, &xs, &rs, &w, w2, R](int i) {
            f.args.a = xs[size_t(i % R)].get();
            f.args.residual = rs[size_t(i % R)].get();
            f.args.b = w.at(i);
            if (w2) f.args.b2 = w2->at(i);
            FG(fusegen_run(f.kernel, &p, &f.args, f.ws.get(), f.ws.bytes(), c.stream));
            CK(cudaGetLastError());
        });
    }
}

// A problem's rows once timed: one a kernel, or one saying why fusegen was skipped.
std::vector<Row> timed_rows(const Row &base, const std::deque<FusedRun> &runs, const Interleaved &timer,
                            const std::vector<double> &ms, const std::string &skip)
{
    if (std::isfinite(base.power_capped))
        printf("  power-capped in %.0f%% of the busy clock samples (%d)\n", 100.0 * base.power_capped,
               timer.clocks().samples);
    std::vector<Row> rows;
    if (runs.empty()) {
        printf("  fusegen: skipped: %s\n", skip.c_str());
        Row r = base;
        r.kernel = "-";
        r.selected = true;
        r.status = "skipped";
        r.note = skip;
        rows.push_back(r);
        return rows;
    }
    for (const FusedRun &f : runs) {
        Row r = f.row;
        r.gemm_ms = base.gemm_ms;
        r.fusegen_gemm_ms = base.fusegen_gemm_ms;
        r.unfused_ms = base.unfused_ms;
        r.gemm_mhz = base.gemm_mhz;
        r.fusegen_gemm_mhz = base.fusegen_gemm_mhz;
        r.unfused_mhz = base.unfused_mhz;
        r.power_capped = base.power_capped;
        r.fused_ms = ms[f.timer_index];
        r.fused_mhz = timer.clocks(f.timer_index).mean_mhz();
        finish_row(r);
        print_kernel_result(r, f.detail);
        rows.push_back(r);
    }
    return rows;
}

// ---- one fused problem: y = relu(LN(x W^T + bias + residual)), pre_norm kept -------------------

std::vector<Row> bench_fused(Ctx &c, const Shape &sh)
{
    const int64_t M = sh.m, N = sh.n, K = sh.k;
    const size_t bx = size_t(M) * size_t(K) * 2, bw = size_t(N) * size_t(K) * 2, bv = size_t(N) * 2;
    const size_t bmn = size_t(M) * size_t(N) * 2;
    const int R = copies_for(c, bx + bmn);
    printf("  x and residual rotated among %d copies (%.1f MB each set)\n", R, double(bx + bmn) / 1e6);

    std::vector<DevBuf> xs, rs;
    for (int i = 0; i < R; ++i) {
        xs.emplace_back(bx);
        rs.emplace_back(bmn);
        fill_random(c, xs.back(), -1.0f, 1.0f);
        fill_random(c, rs.back(), -1.0f, 1.0f);
    }
    const float ws = 1.0f / std::sqrt(float(K));
    const Weights w(c, bw, -ws, ws);
    if (w.count() > 1) printf("  weights rotated among %d copies (%.1f MB each)\n", w.count(), double(bw) / 1e6);
    DevBuf bias(bv), gamma(bv), beta(bv);
    fill_random(c, bias, -1.0f, 1.0f);
    fill_random(c, gamma, 0.5f, 1.5f);
    fill_random(c, beta, -0.5f, 0.5f);
    DevBuf d_gemm(bmn), pre_u(bmn), y_u(bmn), pre_f(bmn), y_f(bmn);
    CK(cudaStreamSynchronize(c.stream));

    Row base;
    base.shape = sh;
    base.floor_ms = compute_floor_ms(c, problem_flops(sh), problem_bytes(sh));

    // Each side is tuned and checked first; the timing of all of them comes last, interleaved.
    // 1. cuBLASLt GEMM alone
    LtGemm g0(c, M, N, K, CUBLASLT_EPILOGUE_DEFAULT, nullptr, false, c.opt.b_kn);
    auto gemm_rep = [&](int i) { g0.run(xs[size_t(i % R)].get(), w.at(i), nullptr, d_gemm.get()); };
    g0.tune([&] { return time_median_ms(c, kTuneWarmup, kTuneReps, 1, gemm_rep); });
    PlainGemm plain(c, M, N, K, R, xs, w, d_gemm);
    // with --all-variants, the library's other plain kernels for this shape too
    std::deque<PlainGemm> plain_others;   // stable addresses: the timer's closures point into them
    if (c.opt.all_variants && plain.kernel()) {
        std::vector<const fusegen_kernel *> all(c.lib->n_kernels, nullptr);
        size_t found = 0;
        FG(fusegen_query(c.lib, &plain.problem(), all.data(), all.size(), &found));
        for (size_t i = 0; i < found && i < all.size(); ++i)
            if (all[i] && all[i] != plain.kernel())
                plain_others.emplace_back(c, M, N, K, R, xs, w, d_gemm, all[i]);
    }

    // 2. unfused: GEMM + bias + residual (D = pre_norm), then LayerNorm + ReLU
    LtGemm g1(c, M, N, K, CUBLASLT_EPILOGUE_BIAS, bias.get(), true, c.opt.b_kn);
    auto epi_rep = [&](int i) { g1.run(xs[size_t(i % R)].get(), w.at(i), rs[size_t(i % R)].get(), pre_u.get()); };
    g1.tune([&] { return time_median_ms(c, kTuneWarmup, kTuneReps, 1, epi_rep); });
    auto unfused_rep = [&](int i) {
        epi_rep(i);
        layernorm_bf16(pre_u.get(), gamma.get(), beta.get(), y_u.get(), M, N, true, c.stream);
    };

    // the reference: the unfused path on copy 0, outputs poisoned first
    poison(c, pre_u);
    poison(c, y_u);
    unfused_rep(0);
    CK(cudaStreamSynchronize(c.stream));
    const std::vector<uint16_t> ref_y = to_host(y_u), ref_pre = to_host(pre_u);
    require_finite_reference(ref_y, "output");
    require_finite_reference(ref_pre, "pre-norm tensor");

    // 3. fusegen
    const fusegen_problem p = bf16_problem(M, N, K, kFusedEpilogue, c.opt.b_kn);
    std::string skip;
    const std::vector<const fusegen_kernel *> kernels = fusegen_kernels_for(c, p, skip);
    std::deque<FusedRun> runs;   // stable addresses: the timer's closures point into them
    for (size_t ki = 0; ki < kernels.size(); ++ki) {
        FusedRun &f = runs.emplace_back();
        f.kernel = kernels[ki];
        f.row = base;
        f.row.kernel = f.kernel->name ? f.kernel->name : "(unnamed)";
        f.row.selected = ki == 0;
        size_t ws_bytes = 0;
        FG(fusegen_workspace_size(f.kernel, &p, &ws_bytes));
        f.ws = DevBuf(ws_bytes);
        memset(&f.args, 0, sizeof f.args);
        f.args.a = xs[0].get();
        f.args.b = w.at(0);
        f.args.out = y_f.get();
        f.args.bias = bias.get();
        f.args.residual = rs[0].get();
        f.args.gamma = gamma.get();
        f.args.beta = beta.get();
        f.args.store[0] = pre_f.get();

        poison(c, pre_f);
        poison(c, y_f);
        FG(fusegen_run(f.kernel, &p, &f.args, f.ws.get(), f.ws.bytes(), c.stream));
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(c.stream));
        const std::vector<uint16_t> got_y = to_host(y_f), got_pre = to_host(pre_f);
        const double err_y = rel_l2(got_y, ref_y), err_pre = rel_l2(got_pre, ref_pre);
        f.row.rel_err = worst(err_y, err_pre);
        f.row.status = f.row.rel_err <= kTolerance ? "ok" : "FAIL";
        f.detail = strprintf(" (y %.2e, pre_norm %.2e)", err_y, err_pre);
        const size_t bad_y = count_nonfinite(got_y), bad_pre = count_nonfinite(got_pre);
        if (bad_y || bad_pre) {
            f.row.note = strprintf("non-finite (unwritten?) elements: y %zu, pre_norm %zu", bad_y, bad_pre);
            f.detail += " [" + f.row.note + "]";
        }
    }

    // the timing, every side interleaved with the others
    Interleaved timer(c, sh.name);
    const size_t t_gemm = timer.add("cublaslt-gemm", 1, gemm_rep);
    const size_t t_plain = plain.usable() ? timer.add("fusegen-gemm", 1, [&](int i) { plain.enqueue(i); }) : SIZE_MAX;
    std::vector<size_t> t_plain_others;
    for (PlainGemm &o : plain_others)
        t_plain_others.push_back(o.usable() ? timer.add(std::string("fusegen-gemm:") + o.kernel()->name, 1,
                                                        [&o](int i) { o.enqueue(i); })
                                            : SIZE_MAX);
    const size_t t_unfused = timer.add("unfused", 2, unfused_rep);
    add_fused_runs(c, timer, p, runs, xs, rs, w, nullptr, 1);
    const std::vector<double> ms = timer.run();
    base.gemm_ms = ms[t_gemm];
    base.fusegen_gemm_ms = t_plain == SIZE_MAX ? NAN : ms[t_plain];
    base.unfused_ms = ms[t_unfused];
    base.gemm_mhz = timer.clocks(t_gemm).mean_mhz();
    base.fusegen_gemm_mhz = t_plain == SIZE_MAX ? NAN : timer.clocks(t_plain).mean_mhz();
    base.unfused_mhz = timer.clocks(t_unfused).mean_mhz();
    base.power_capped = timer.clocks().capped_share();
    printf("  cuBLASLt GEMM                       %9.4f ms  (%s)%s\n", base.gemm_ms, g0.describe().c_str(),
           at_clock(base.gemm_mhz).c_str());
    plain.report(base.fusegen_gemm_ms, base.fusegen_gemm_mhz);
    for (size_t i = 0; i < plain_others.size(); ++i) {
        const size_t t = t_plain_others[i];
        plain_others[i].report(t == SIZE_MAX ? NAN : ms[t], t == SIZE_MAX ? NAN : timer.clocks(t).mean_mhz());
    }
    printf("  unfused (GEMM+bias+residual, LN)    %9.4f ms  (%s)%s\n", base.unfused_ms, g1.describe().c_str(),
           at_clock(base.unfused_mhz).c_str());
    if (!runs.empty())
        report_host_time(c, p, runs.front());

    return timed_rows(base, runs, timer, ms, skip);
}

// ---- one chain: out2 = relu(LN(x W1^T + b1 + residual) W2^T + b2) -----------------------------

std::vector<Row> bench_chain(Ctx &c, const Shape &sh)
{
    const int64_t M = sh.m, N = sh.n, K = sh.k, N2 = sh.n2;
    const size_t bx = size_t(M) * size_t(K) * 2, bw1 = size_t(N) * size_t(K) * 2, bw2 = size_t(N2) * size_t(N) * 2;
    const size_t bv = size_t(N) * 2, bv2 = size_t(N2) * 2;
    const size_t bmn = size_t(M) * size_t(N) * 2, bmn2 = size_t(M) * size_t(N2) * 2;
    const int R = copies_for(c, bx + bmn);
    printf("  x and residual rotated among %d copies (%.1f MB each set)\n", R, double(bx + bmn) / 1e6);

    std::vector<DevBuf> xs, rs;
    for (int i = 0; i < R; ++i) {
        xs.emplace_back(bx);
        rs.emplace_back(bmn);
        fill_random(c, xs.back(), -1.0f, 1.0f);
        fill_random(c, rs.back(), -1.0f, 1.0f);
    }
    const float s1 = 1.0f / std::sqrt(float(K)), s2 = 1.0f / std::sqrt(float(N));
    const Weights w1(c, bw1, -s1, s1);
    DevBuf b1(bv), gamma(bv), beta(bv), b2(bv2);
    fill_random(c, b1, -1.0f, 1.0f);
    fill_random(c, gamma, 0.5f, 1.5f);
    fill_random(c, beta, -0.5f, 0.5f);
    const Weights w2(c, bw2, -s2, s2);
    fill_random(c, b2, -1.0f, 1.0f);
    if (w1.count() > 1)
        printf("  weights rotated among %d and %d copies (%.1f and %.1f MB each)\n", w1.count(), w2.count(),
               double(bw1) / 1e6, double(bw2) / 1e6);
    DevBuf h_plain(bmn), out2_plain(bmn2), pre_u(bmn), h_u(bmn), out2_u(bmn2), out_f(bmn), out2_f(bmn2);
    CK(cudaStreamSynchronize(c.stream));

    Row base;
    base.shape = sh;
    base.floor_ms = compute_floor_ms(c, problem_flops(sh), problem_bytes(sh));

    // Each side is tuned and checked first; the timing of all of them comes last, interleaved.
    // 1. the two GEMMs alone
    LtGemm ga(c, M, N, K, CUBLASLT_EPILOGUE_DEFAULT, nullptr, false, c.opt.b_kn);
    LtGemm gb(c, M, N2, N, CUBLASLT_EPILOGUE_DEFAULT, nullptr, false, c.opt.b_kn);
    auto ga_rep = [&](int i) { ga.run(xs[size_t(i % R)].get(), w1.at(i), nullptr, h_plain.get()); };
    auto gb_rep = [&](int i) { gb.run(h_plain.get(), w2.at(i), nullptr, out2_plain.get()); };
    ga.tune([&] { return time_median_ms(c, kTuneWarmup, kTuneReps, 1, ga_rep); });
    gb.tune([&] { return time_median_ms(c, kTuneWarmup, kTuneReps, 1, gb_rep); });
    auto gemms_rep = [&](int i) {
        ga_rep(i);
        gb_rep(i);
    };

    // 2. unfused: GEMM1 + bias + residual, LayerNorm, GEMM2 + bias + ReLU
    LtGemm g1(c, M, N, K, CUBLASLT_EPILOGUE_BIAS, b1.get(), true, c.opt.b_kn);
    LtGemm g2(c, M, N2, N, CUBLASLT_EPILOGUE_RELU_BIAS, b2.get(), false, c.opt.b_kn);
    auto g1_rep = [&](int i) { g1.run(xs[size_t(i % R)].get(), w1.at(i), rs[size_t(i % R)].get(), pre_u.get()); };
    auto g2_rep = [&](int i) { g2.run(h_u.get(), w2.at(i), nullptr, out2_u.get()); };
    g1.tune([&] { return time_median_ms(c, kTuneWarmup, kTuneReps, 1, g1_rep); });
    // GEMM2 is tuned on a finite h: one LayerNorm first
    layernorm_bf16(pre_u.get(), gamma.get(), beta.get(), h_u.get(), M, N, false, c.stream);
    g2.tune([&] { return time_median_ms(c, kTuneWarmup, kTuneReps, 1, g2_rep); });
    auto unfused_rep = [&](int i) {
        g1_rep(i);
        layernorm_bf16(pre_u.get(), gamma.get(), beta.get(), h_u.get(), M, N, false, c.stream);
        g2_rep(i);
    };

    poison(c, pre_u);
    poison(c, h_u);
    poison(c, out2_u);
    unfused_rep(0);
    CK(cudaStreamSynchronize(c.stream));
    const std::vector<uint16_t> ref = to_host(out2_u);
    require_finite_reference(ref, "chain output");

    // 3. fusegen's chain
    fusegen_problem p = bf16_problem(M, N, K, kChainEpilogue1, c.opt.b_kn);
    p.n2 = N2;
    p.b2_layout = p.b_layout;
    p.epilogue2 = kChainEpilogue2;
    std::string skip;
    const std::vector<const fusegen_kernel *> kernels = fusegen_kernels_for(c, p, skip);
    std::deque<FusedRun> runs;   // stable addresses: the timer's closures point into them
    for (size_t ki = 0; ki < kernels.size(); ++ki) {
        FusedRun &f = runs.emplace_back();
        f.kernel = kernels[ki];
        f.row = base;
        f.row.kernel = f.kernel->name ? f.kernel->name : "(unnamed)";
        f.row.selected = ki == 0;
        size_t ws_bytes = 0;
        FG(fusegen_workspace_size(f.kernel, &p, &ws_bytes));
        f.ws = DevBuf(ws_bytes);
        memset(&f.args, 0, sizeof f.args);
        f.args.a = xs[0].get();
        f.args.b = w1.at(0);
        f.args.out = out_f.get();   // required by the runtime; the chain keeps GEMM1's result in the workspace
        f.args.bias = b1.get();
        f.args.residual = rs[0].get();
        f.args.gamma = gamma.get();
        f.args.beta = beta.get();
        f.args.b2 = w2.at(0);
        f.args.out2 = out2_f.get();
        f.args.bias2 = b2.get();

        poison(c, out2_f);
        FG(fusegen_run(f.kernel, &p, &f.args, f.ws.get(), f.ws.bytes(), c.stream));
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(c.stream));
        const std::vector<uint16_t> got = to_host(out2_f);
        f.row.rel_err = rel_l2(got, ref);
        f.row.status = f.row.rel_err <= kTolerance ? "ok" : "FAIL";
        const size_t bad = count_nonfinite(got);
        if (bad) {
            f.row.note = strprintf("non-finite (unwritten?) elements in out2: %zu", bad);
            f.detail = " [" + f.row.note + "]";
        }
    }

    // the timing, every side interleaved with the others
    Interleaved timer(c, sh.name);
    const size_t t_gemms = timer.add("cublaslt-gemms", 2, gemms_rep);
    const size_t t_unfused = timer.add("unfused", 3, unfused_rep);
    add_fused_runs(c, timer, p, runs, xs, rs, w1, &w2, 3);
    const std::vector<double> ms = timer.run();
    base.gemm_ms = ms[t_gemms];
    base.unfused_ms = ms[t_unfused];
    base.gemm_mhz = timer.clocks(t_gemms).mean_mhz();
    base.unfused_mhz = timer.clocks(t_unfused).mean_mhz();
    base.power_capped = timer.clocks().capped_share();
    printf("  cuBLASLt GEMM1 + GEMM2              %9.4f ms  (%s; %s)%s\n", base.gemm_ms, ga.describe().c_str(),
           gb.describe().c_str(), at_clock(base.gemm_mhz).c_str());
    printf("  unfused (GEMM1+bias+res, LN, GEMM2+bias+relu) %9.4f ms  (%s; %s)%s\n", base.unfused_ms,
           g1.describe().c_str(), g2.describe().c_str(), at_clock(base.unfused_mhz).c_str());

    return timed_rows(base, runs, timer, ms, skip);
}

// ---- reports -----------------------------------------------------------------------------------

std::string num(double v, const char *fmt)
{
    return std::isfinite(v) ? strprintf(fmt, v) : std::string("-");
}

// The error column: "-" when nothing was checked, "nan" when the output held a NaN.
std::string err_text(const Row &r)
{
    if (r.status != "ok" && r.status != "FAIL")
        return "-";
    if (std::isnan(r.rel_err))
        return "nan";
    return std::isinf(r.rel_err) ? "inf" : strprintf("%.2e", r.rel_err);
}

void print_table(const std::vector<Row> &rows, bool chains)
{
    bool any = false;
    for (const Row &r : rows)
        any = any || r.shape.chain == chains;
    if (!any)
        return;
    printf("\n%s\n", chains ? "GEMM -> LayerNorm -> GEMM chains (gemm = the two GEMMs alone)"
                            : "fused GEMM + bias + residual + LayerNorm + ReLU (pre_norm stored)");
    printf("%-26s %6s %6s %6s", "problem", "m", "n", "k");
    if (chains)
        printf(" %6s", "n2");
    printf(" %9s %9s %10s %10s %8s %10s %13s %8s %-7s %s\n", "floor ms", "gemm ms", "unfused ms", "fusegen ms",
           "TFLOP/s", "fused/gemm", "unfused/fused", "rel err", "check", "kernel");
    for (const Row &r : rows) {
        if (r.shape.chain != chains)
            continue;
        std::string name = r.shape.name;
        if (!r.selected)
            name = "  (variant)";
        printf("%-26s %6lld %6lld %6lld", name.c_str(), (long long)r.shape.m, (long long)r.shape.n,
               (long long)r.shape.k);
        if (chains)
            printf(" %6lld", (long long)r.shape.n2);
        printf(" %9s %9s %10s %10s %8s %10s %13s %8s %-7s %s\n", num(r.floor_ms, "%.4f").c_str(),
               num(r.gemm_ms, "%.4f").c_str(), num(r.unfused_ms, "%.4f").c_str(), num(r.fused_ms, "%.4f").c_str(),
               num(r.tflops, "%.1f").c_str(), num(r.fused_over_gemm, "%.3f").c_str(),
               num(r.unfused_over_fused, "%.3f").c_str(), err_text(r).c_str(), r.status.c_str(),
               r.kernel.c_str());
    }
}

struct Summary {
    double geo_fused_over_gemm_k1024 = NAN, max_fused_over_gemm_k1024 = NAN;
    std::string max_problem;
    int n_k1024 = 0;
    double geo_speedup_unfused = NAN;
    int n_fused = 0;
    double chain_geo_fused_over_gemms = NAN, chain_geo_speedup_unfused = NAN;
    int n_chains = 0;
    int n_skipped = 0, n_failed = 0, n_errors = 0;
};

double geomean(const std::vector<double> &v)
{
    if (v.empty())
        return NAN;
    double s = 0.0;
    for (double x : v)
        s += std::log(x);
    return std::exp(s / double(v.size()));
}

// Over the selected kernels whose check passed.
Summary summarize(const std::vector<Row> &rows)
{
    Summary s;
    std::vector<double> ratio_k, speed, chain_ratio, chain_speed;
    for (const Row &r : rows) {
        s.n_skipped += r.status == "skipped" ? 1 : 0;
        s.n_failed += r.status == "FAIL" ? 1 : 0;
        s.n_errors += r.status == "error" ? 1 : 0;
        if (!r.selected || r.status != "ok" || !std::isfinite(r.fused_over_gemm) || !(r.fused_over_gemm > 0) ||
            !std::isfinite(r.unfused_over_fused) || !(r.unfused_over_fused > 0))
            continue;
        if (r.shape.chain) {
            chain_ratio.push_back(r.fused_over_gemm);
            chain_speed.push_back(r.unfused_over_fused);
            continue;
        }
        speed.push_back(r.unfused_over_fused);
        if (r.shape.k >= 1024) {
            ratio_k.push_back(r.fused_over_gemm);
            if (!(r.fused_over_gemm <= s.max_fused_over_gemm_k1024)) {
                s.max_fused_over_gemm_k1024 = r.fused_over_gemm;
                s.max_problem = r.shape.name;
            }
        }
    }
    s.geo_fused_over_gemm_k1024 = geomean(ratio_k);
    s.n_k1024 = int(ratio_k.size());
    s.geo_speedup_unfused = geomean(speed);
    s.n_fused = int(speed.size());
    s.chain_geo_fused_over_gemms = geomean(chain_ratio);
    s.chain_geo_speedup_unfused = geomean(chain_speed);
    s.n_chains = int(chain_ratio.size());
    return s;
}

void print_summary(const std::vector<Row> &rows, const Summary &s)
{
    printf("\nsummary (selected kernels whose check passed)\n");
    printf("  fused/gemm, K >= 1024:   geometric mean %s over %d problems; max %s (%s)\n",
           num(s.geo_fused_over_gemm_k1024, "%.3f").c_str(), s.n_k1024,
           num(s.max_fused_over_gemm_k1024, "%.3f").c_str(),
           s.max_problem.empty() ? "-" : s.max_problem.c_str());
    printf("  speed-up over unfused:   geometric mean %s over %d fused problems\n",
           num(s.geo_speedup_unfused, "%.3f").c_str(), s.n_fused);
    for (const Row &r : rows)
        if (r.shape.chain && r.selected)
            printf("  chain %-26s fused/(two GEMMs) %s, unfused/fused %s\n", r.shape.name.c_str(),
                   num(r.fused_over_gemm, "%.3f").c_str(), num(r.unfused_over_fused, "%.3f").c_str());
    printf("  chains:                  fused/(two GEMMs) geometric mean %s, speed-up over unfused %s, over %d chains\n",
           num(s.chain_geo_fused_over_gemms, "%.3f").c_str(), num(s.chain_geo_speedup_unfused, "%.3f").c_str(),
           s.n_chains);
    printf("  checks failed: %d; problems not measured (error): %d; fusegen skipped (no kernel here): %d\n",
           s.n_failed, s.n_errors, s.n_skipped);
}

std::string csv_text(const std::string &s)
{
    std::string out = "\"";
    for (char ch : s) {
        if (ch == '"')
            out += '"';
        out += ch;
    }
    return out + "\"";
}

std::string csv_num(double v)
{
    return std::isfinite(v) ? strprintf("%.6g", v) : std::string();
}

// A result file, written as PATH.tmp and renamed into place once complete: a run that fails
// while writing leaves no partial file, and an earlier run's file stays whole until then.
struct ResultFile {
    std::string path, tmp;
    FILE *f = nullptr;
    explicit ResultFile(const std::string &p) : path(p), tmp(p + ".tmp")
    {
        f = fopen(tmp.c_str(), "w");
        if (!f)
            fprintf(stderr, "fusegen-bench: %s: cannot write: %s\n", tmp.c_str(), strerror(errno));
    }
    ResultFile(const ResultFile &) = delete;
    ResultFile &operator=(const ResultFile &) = delete;
    // Closes and renames; false (said why, nothing left behind) on any error.
    bool commit()
    {
        bool ok = ferror(f) == 0;
        ok = fclose(f) == 0 && ok;
        f = nullptr;
        if (ok && rename(tmp.c_str(), path.c_str()) == 0)
            return true;
        fprintf(stderr, "fusegen-bench: %s: write error: %s\n", path.c_str(), strerror(errno));
        remove(tmp.c_str());
        return false;
    }
    ~ResultFile()
    {
        if (f) {
            fclose(f);
            remove(tmp.c_str());
        }
    }
};

bool write_csv(const std::string &path, const std::vector<Row> &rows)
{
    ResultFile out(path);
    FILE *f = out.f;
    if (!f)
        return false;
    fprintf(f, "kind,problem,m,n,k,n2,floor_ms,gemm_ms,unfused_ms,fusegen_ms,fusegen_tflops,fused_over_gemm,"
               "unfused_over_fused,rel_err,kernel,selected,check,note,fusegen_gemm_ms,gemm_mhz,fusegen_gemm_mhz,unfused_mhz,fusegen_mhz,power_capped\n");
    for (const Row &r : rows)
        fprintf(f, "%s,%s,%lld,%lld,%lld,%lld,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s\n", r.shape.chain ? "chain" : "fused",
                csv_text(r.shape.name).c_str(), (long long)r.shape.m, (long long)r.shape.n, (long long)r.shape.k,
                (long long)r.shape.n2, csv_num(r.floor_ms).c_str(), csv_num(r.gemm_ms).c_str(),
                csv_num(r.unfused_ms).c_str(), csv_num(r.fused_ms).c_str(), csv_num(r.tflops).c_str(),
                csv_num(r.fused_over_gemm).c_str(), csv_num(r.unfused_over_fused).c_str(), csv_num(r.rel_err).c_str(),
                csv_text(r.kernel).c_str(), r.selected ? 1 : 0, r.status.c_str(), csv_text(r.note).c_str(),
                csv_num(r.fusegen_gemm_ms).c_str(), csv_num(r.gemm_mhz).c_str(), csv_num(r.fusegen_gemm_mhz).c_str(),
                csv_num(r.unfused_mhz).c_str(), csv_num(r.fused_mhz).c_str(), csv_num(r.power_capped).c_str());
    if (!out.commit())
        return false;
    printf("wrote %s\n", path.c_str());
    return true;
}

void json_num(cJSON *o, const char *key, double v)
{
    if (std::isfinite(v))
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

struct DeviceInfo {
    std::string name, module_version;
    int cc_major = 0, cc_minor = 0, driver = 0, runtime = 0, sms = 0;
    size_t lt_version = 0, memory = 0;
    unsigned power_limit_w = 0;   // enforced board power limit (NVML; 0: unknown)
};

bool write_json(const std::string &path, const Ctx &c, const DeviceInfo &dev, const std::vector<Row> &rows,
                const Summary &s)
{
    std::unique_ptr<cJSON, void (*)(cJSON *)> root(cJSON_CreateObject(), cJSON_Delete);
    if (!root) {
        fprintf(stderr, "fusegen-bench: out of memory building JSON\n");
        return false;
    }
    cJSON *d = cJSON_AddObjectToObject(root.get(), "device");
    cJSON_AddStringToObject(d, "name", dev.name.c_str());
    cJSON_AddStringToObject(d, "compute_capability", strprintf("%d.%d", dev.cc_major, dev.cc_minor).c_str());
    cJSON_AddNumberToObject(d, "sms", dev.sms);
    cJSON_AddNumberToObject(d, "memory_bytes", double(dev.memory));
    cJSON_AddNumberToObject(d, "l2_bytes", double(c.l2_bytes));
    cJSON_AddStringToObject(d, "nvidia_driver", dev.module_version.c_str());
    cJSON_AddNumberToObject(d, "cuda_driver_api", dev.driver);
    cJSON_AddNumberToObject(d, "cuda_runtime", dev.runtime);
    cJSON_AddNumberToObject(d, "cublaslt", double(dev.lt_version));
    if (dev.power_limit_w)
        cJSON_AddNumberToObject(d, "power_limit_w", dev.power_limit_w);
    cJSON *lib = cJSON_AddObjectToObject(root.get(), "library");
    cJSON_AddStringToObject(lib, "name", c.lib->name ? c.lib->name : "");
    cJSON_AddStringToObject(lib, "generator_version",
                            c.lib->generator_version ? c.lib->generator_version : "");
    cJSON_AddStringToObject(lib, "spec_sha256",
                            c.lib->spec_sha256 ? c.lib->spec_sha256 : "");
    if (c.jit) {   // --spec: compiled by the JIT
        cJSON_AddStringToObject(lib, "spec", c.opt.spec.c_str());
        cJSON_AddStringToObject(lib, "jit_arch", fusegen_jit_arch(c.jit));
    }
    cJSON *fl = cJSON_AddObjectToObject(root.get(), "floors");
    json_num(fl, "matrix_tflops", c.matrix_tflops);
    json_num(fl, "copy_tb_per_s", c.copy_tbs);
    cJSON *m = cJSON_AddObjectToObject(root.get(), "method");
    cJSON_AddNumberToObject(m, "reps", c.opt.reps);
    cJSON_AddNumberToObject(m, "warmup", kWarmup);
    cJSON_AddNumberToObject(m, "rounds", c.opt.sequential ? 1 : std::min(kRounds, c.opt.reps));
    cJSON_AddNumberToObject(m, "block_warmup", kBlockWarmup);
    cJSON_AddNumberToObject(m, "settle_ms", kSettleMs);
    cJSON_AddNumberToObject(m, "tolerance", kTolerance);
    cJSON_AddStringToObject(m, "shapes", c.opt.shapes.c_str());
    cJSON_AddStringToObject(m, "b_layout", c.opt.b_kn ? "kn" : "nk");
    cJSON_AddBoolToObject(m, "cold_weights", c.opt.cold_weights ? 1 : 0);
    cJSON *arr = cJSON_AddArrayToObject(root.get(), "results");
    for (const Row &r : rows) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "kind", r.shape.chain ? "chain" : "fused");
        cJSON_AddStringToObject(o, "problem", r.shape.name.c_str());
        cJSON_AddNumberToObject(o, "m", double(r.shape.m));
        cJSON_AddNumberToObject(o, "n", double(r.shape.n));
        cJSON_AddNumberToObject(o, "k", double(r.shape.k));
        cJSON_AddNumberToObject(o, "n2", double(r.shape.n2));
        json_num(o, "floor_ms", r.floor_ms);
        json_num(o, "gemm_ms", r.gemm_ms);
        json_num(o, "fusegen_gemm_ms", r.fusegen_gemm_ms);
        json_num(o, "unfused_ms", r.unfused_ms);
        json_num(o, "fusegen_ms", r.fused_ms);
        json_num(o, "fusegen_tflops", r.tflops);
        json_num(o, "fused_over_gemm", r.fused_over_gemm);
        json_num(o, "unfused_over_fused", r.unfused_over_fused);
        json_num(o, "rel_err", r.rel_err);
        json_num(o, "gemm_mhz", r.gemm_mhz);
        json_num(o, "fusegen_gemm_mhz", r.fusegen_gemm_mhz);
        json_num(o, "unfused_mhz", r.unfused_mhz);
        json_num(o, "fusegen_mhz", r.fused_mhz);
        json_num(o, "power_capped", r.power_capped);
        cJSON_AddStringToObject(o, "kernel", r.kernel.c_str());
        cJSON_AddBoolToObject(o, "selected", r.selected ? 1 : 0);
        cJSON_AddStringToObject(o, "check", r.status.c_str());
        cJSON_AddStringToObject(o, "note", r.note.c_str());
    }
    cJSON *sm = cJSON_AddObjectToObject(root.get(), "summary");
    json_num(sm, "geomean_fused_over_gemm_k_ge_1024", s.geo_fused_over_gemm_k1024);
    json_num(sm, "max_fused_over_gemm_k_ge_1024", s.max_fused_over_gemm_k1024);
    cJSON_AddNumberToObject(sm, "problems_k_ge_1024", s.n_k1024);
    json_num(sm, "geomean_unfused_over_fused", s.geo_speedup_unfused);
    cJSON_AddNumberToObject(sm, "fused_problems", s.n_fused);
    json_num(sm, "chains_geomean_fused_over_gemms", s.chain_geo_fused_over_gemms);
    json_num(sm, "chains_geomean_unfused_over_fused", s.chain_geo_speedup_unfused);
    cJSON_AddNumberToObject(sm, "chains", s.n_chains);
    cJSON_AddNumberToObject(sm, "checks_failed", s.n_failed);
    cJSON_AddNumberToObject(sm, "errors", s.n_errors);
    cJSON_AddNumberToObject(sm, "skipped", s.n_skipped);

    char *text = cJSON_Print(root.get());
    if (!text) {
        fprintf(stderr, "fusegen-bench: out of memory printing JSON\n");
        return false;
    }
    bool ok = false;
    {
        ResultFile out(path);
        if (out.f) {
            fputs(text, out.f);
            fputc('\n', out.f);
            ok = out.commit();
        }
    }
    cJSON_free(text);
    if (ok)
        printf("wrote %s\n", path.c_str());
    return ok;
}

// FILE.png -> FILE.gp (script) and FILE.dat (data): time of each method over the GEMM alone.
bool write_plot(const std::string &png, const std::vector<Row> &rows)
{
    std::string stem = png;
    if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".png") == 0)
        stem.resize(stem.size() - 4);
    const std::string dat = stem + ".dat", gp = stem + ".gp";
    ResultFile dat_out(dat), gp_out(gp);
    if (!dat_out.f || !gp_out.f)
        return false;
    FILE *f = dat_out.f;
    fprintf(f, "# problem floor/gemm unfused/gemm fusegen/gemm\n");
    for (const Row &r : rows) {
        if (!r.selected || !std::isfinite(r.gemm_ms))
            continue;
        std::string label = r.shape.name + (r.shape.chain ? " (chain)" : "");
        std::replace(label.begin(), label.end(), '"', '\'');
        fprintf(f, "\"%s\" %.6g %.6g %s\n", label.c_str(), r.floor_ms / r.gemm_ms, r.unfused_ms / r.gemm_ms,
                std::isfinite(r.fused_ms) ? strprintf("%.6g", r.fused_ms / r.gemm_ms).c_str() : "NaN");
    }
    f = gp_out.f;
    fprintf(f,
            "set terminal png size 1200,560\n"
            "set output '%s'\n"
            "set title 'time relative to the cuBLASLt GEMM alone (lower is better)'\n"
            "set style data histograms\n"
            "set style histogram clustered gap 1\n"
            "set style fill solid 0.85 border -1\n"
            "set boxwidth 0.9\n"
            "set grid ytics\n"
            "set yrange [0:*]\n"
            "set xtics rotate by -35 scale 0\n"
            "set key top left\n"
            "set datafile missing 'NaN'\n"
            "set bmargin 9\n"
            "plot '%s' using 2:xtic(1) title 'floor', '' using 3 title 'unfused (cuBLASLt + LayerNorm)', "
            "'' using 4 title 'fusegen'\n",
            png.c_str(), dat.c_str());
    if (!dat_out.commit() || !gp_out.commit())
        return false;
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("gnuplot is not available: wrote %s and %s; run 'gnuplot %s' elsewhere to draw %s\n", gp.c_str(),
               dat.c_str(), gp.c_str(), png.c_str());
        return true;
    }
    const std::string cmd = "gnuplot '" + gp + "'";
    if (std::system(cmd.c_str()) != 0) {
        fprintf(stderr, "fusegen-bench: gnuplot failed on %s\n", gp.c_str());
        return false;
    }
    printf("wrote %s (script %s, data %s)\n", png.c_str(), gp.c_str(), dat.c_str());
    return true;
}

std::string nvidia_module_version()
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return "unknown";
    char line[512] = {0};
    const bool got = fgets(line, sizeof line, f) != nullptr;
    fclose(f);
    if (!got)
        return "unknown";
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  ..." -> the first token
    // that starts with a digit and holds a dot
    const char *p = line;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            ++p;
        const char *q = p;
        while (*q && *q != ' ' && *q != '\t' && *q != '\n')
            ++q;
        const std::string tok(p, size_t(q - p));
        if (!tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0])) && tok.find('.') != std::string::npos)
            return tok;
        if (!*q)
            break;
        p = q;
    }
    return "unknown";
}

std::string cuda_version(int v)
{
    return strprintf("%d.%d", v / 1000, (v % 1000) / 10);
}

// The folder a path's last component lies in ("." for a bare name).
std::string parent_folder(const std::string &path)
{
    const size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// A path as one spelling: its folder resolved (symbolic links, "..") plus its last component,
// so that two spellings of one file compare equal whether or not it exists yet.
std::string same_file_key(const std::string &path)
{
    const size_t slash = path.find_last_of('/');
    const std::string dir = parent_folder(path);
    const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
    char *real = realpath(dir.c_str(), nullptr);
    const std::string key = (real ? std::string(real) : dir) + "/" + base;
    free(real);
    return key;
}

// --csv, --json and --plot's three files: each distinct from the others and from the inputs,
// not a folder, and in a folder that exists and can be written. Checked before any GPU work,
// since a result that cannot be written is otherwise found only after the run. 0, or 2.
int check_outputs(const Options &o)
{
    struct Named {
        std::string what, path;
        bool output;
    };
    std::vector<Named> files;
    if (!o.csv.empty())
        files.push_back({"--csv", o.csv, true});
    if (!o.json.empty())
        files.push_back({"--json", o.json, true});
    if (!o.plot.empty()) {
        std::string stem = o.plot;
        if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".png") == 0)
            stem.resize(stem.size() - 4);
        files.push_back({"--plot", o.plot, true});
        files.push_back({"--plot's data file", stem + ".dat", true});
        files.push_back({"--plot's gnuplot script", stem + ".gp", true});
    }
    files.push_back({"--shapes", o.shapes, false});
    if (!o.spec.empty())
        files.push_back({"--spec", o.spec, false});
    for (size_t i = 0; i < files.size(); ++i) {
        const Named &a = files[i];
        if (!a.output)
            continue;
        struct stat st;
        if (stat(a.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
            fprintf(stderr, "fusegen-bench: %s %s: is a folder\n", a.what.c_str(), a.path.c_str());
            return 2;
        }
        const std::string dir = parent_folder(a.path);
        if (access(dir.c_str(), W_OK) != 0) {
            fprintf(stderr, "fusegen-bench: %s %s: its folder %s cannot be written: %s\n", a.what.c_str(),
                    a.path.c_str(), dir.c_str(), strerror(errno));
            return 2;
        }
        for (size_t j = i + 1; j < files.size(); ++j)   // the inputs come last: every pair with an output
            if (same_file_key(a.path) == same_file_key(files[j].path)) {
                fprintf(stderr, "fusegen-bench: %s and %s name the same file (%s): one would overwrite the other\n",
                        a.what.c_str(), files[j].what.c_str(), a.path.c_str());
                return 2;
            }
    }
    return 0;
}

// The problems of the shapes file that --only keeps; 0, or 2 after reporting an error.
int select_shapes(const Options &o, std::vector<Shape> &shapes)
{
    if (o.sweep_n > 0) {
        static const int64_t ms[] = {1, 8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536};
        for (int64_t m : ms) {
            Shape s;
            s.name = strprintf("sweep m=%lld n=%lld k=%lld", (long long)m, (long long)o.sweep_n, (long long)o.sweep_k);
            s.m = m;
            s.n = o.sweep_n;
            s.k = o.sweep_k;
            shapes.push_back(s);
        }
        return 0;
    }
    try {
        shapes = load_shapes(o.shapes);
    } catch (const BenchError &e) {
        fprintf(stderr, "fusegen-bench: %s\n", e.what());
        return 2;
    } catch (const std::bad_alloc &) {
        fprintf(stderr, "fusegen-bench: %s: out of host memory reading it\n", o.shapes.c_str());
        return 2;
    }
    if (!o.only.empty()) {
        std::vector<Shape> keep;
        for (const Shape &s : shapes)
            if (contains_nocase(s.name, o.only))
                keep.push_back(s);
        if (keep.empty()) {
            fprintf(stderr, "fusegen-bench: no problem in %s matches '%s'\n", o.shapes.c_str(), o.only.c_str());
            return 2;
        }
        shapes.swap(keep);
    }
    return 0;
}

int run(Ctx &c, const std::vector<Shape> &shapes)
{
    // the device
    DeviceInfo dev;
    int device = 0;
    CK(cudaGetDevice(&device));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, device));
    dev.name = prop.name;
    dev.cc_major = prop.major;
    dev.cc_minor = prop.minor;
    dev.sms = prop.multiProcessorCount;
    dev.memory = prop.totalGlobalMem;
    int l2 = 0;
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    c.l2_bytes = size_t(l2 > 0 ? l2 : 0);
    CK(cudaDriverGetVersion(&dev.driver));
    CK(cudaRuntimeGetVersion(&dev.runtime));
    dev.lt_version = cublasLtGetVersion();
    dev.module_version = nvidia_module_version();
    c.probe = std::make_unique<ClockProbe>(device);
    dev.power_limit_w = c.probe->power_limit_w();

    printf("fusegen-bench %s: library %s (%zu kernels, generator %s)\n", FUSEGEN_VERSION_STRING,
           c.lib->name ? c.lib->name : "?", c.lib->n_kernels,
           c.lib->generator_version ? c.lib->generator_version : "?");
    printf("GPU:      %s (sm_%d%d, %d SMs, %.1f GB, L2 %.1f MB)\n", dev.name.c_str(), dev.cc_major, dev.cc_minor,
           dev.sms, double(dev.memory) / 1e9, double(c.l2_bytes) / 1e6);
    printf("driver:   NVIDIA %s, CUDA driver API %s; CUDA runtime %s; cuBLASLt %zu\n", dev.module_version.c_str(),
           cuda_version(dev.driver).c_str(), cuda_version(dev.runtime).c_str(), dev.lt_version);
    if (c.probe->available())
        printf("clocks:   SM clock and clock event reasons sampled every %d ms while timing (NVML); power limit %s\n",
               ClockProbe::kPeriodMs, dev.power_limit_w ? strprintf("%u W", dev.power_limit_w).c_str() : "unknown");
    else
        printf("clocks:   not sampled (%s)\n", c.probe->why_unavailable().c_str());
    printf("method:   %.0f ms of untimed load on every side in turn, then ", kSettleMs);
    if (c.opt.sequential)
        printf("the median of %d repetitions after %d warm-up runs, CUDA\n          events per repetition, each side of a "
               "problem in one block (--sequential)", c.opt.reps, kWarmup);
    else
        printf("the median of %d repetitions, CUDA events\n          per repetition, in %d interleaved rounds (every side "
               "in turn; %d warm-up runs first, %d before later blocks)", c.opt.reps,
               std::min(kRounds, c.opt.reps), kWarmup, kBlockWarmup);
    printf("; inputs%s rotated over >= 2x L2;\n          check: relative L2 error against the unfused result <= %.0e\n",
           c.opt.cold_weights ? " and weights (--cold-weights)" : "",
           kTolerance);
    printf("weights:  %s on every side\n", c.opt.b_kn ? "[K, N] (--b-layout kn)" : "[N, K], like torch.nn.Linear");
    fflush(stdout);

    CK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    LT(cublasLtCreate(&c.lt));
    c.lt_ws = DevBuf(kLtWorkspaceBytes);

    c.matrix_tflops = measure_matrix_tflops(c);
    c.copy_tbs = measure_copy_tbs(c);
    printf("floors:   bf16 matrix rate %.1f TFLOP/s (cuBLASLt %lld^3, median of %d); copy bandwidth %.3f TB/s "
           "(device-to-device %.0f GiB, read + written)\n",
           c.matrix_tflops, (long long)kFloorGemmDim, kFloorReps, c.copy_tbs, double(kCopyBytes) / double(1u << 30));
    fflush(stdout);

    std::vector<Row> rows;
    bool any_error = false;
    size_t idx = 0;
    for (const Shape &sh : shapes) {
        ++idx;
        if (sh.chain)
            printf("\n[%zu/%zu] chain %s: m=%lld n=%lld k=%lld n2=%lld\n", idx, shapes.size(), sh.name.c_str(),
                   (long long)sh.m, (long long)sh.n, (long long)sh.k, (long long)sh.n2);
        else
            printf("\n[%zu/%zu] %s: m=%lld n=%lld k=%lld\n", idx, shapes.size(), sh.name.c_str(), (long long)sh.m,
                   (long long)sh.n, (long long)sh.k);
        fflush(stdout);
        std::string error;
        try {
            std::vector<Row> got = sh.chain ? bench_chain(c, sh) : bench_fused(c, sh);
            rows.insert(rows.end(), got.begin(), got.end());
        } catch (const BenchError &e) {
            error = e.what();
        } catch (const std::bad_alloc &) {
            error = "out of host memory";
        }
        if (error.empty())
            continue;
        any_error = true;
        printf("  error: %s\n", error.c_str());
        Row r;
        r.shape = sh;
        r.kernel = "-";
        r.selected = true;
        r.status = "error";
        r.note = error;
        rows.push_back(r);
        (void)cudaGetLastError();
        const cudaError_t e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            printf("  the CUDA context is unusable after this error (%s); the remaining problems are not run\n",
                   cudaGetErrorName(e));
            break;
        }
    }

    print_table(rows, false);
    print_table(rows, true);
    const Summary s = summarize(rows);
    print_summary(rows, s);

    bool failed = any_error;
    for (const Row &r : rows)
        failed = failed || r.status == "FAIL";
    bool files_ok = true;
    if (!c.opt.csv.empty())
        files_ok = write_csv(c.opt.csv, rows) && files_ok;
    if (!c.opt.json.empty())
        files_ok = write_json(c.opt.json, c, dev, rows, s) && files_ok;
    if (!c.opt.plot.empty())
        files_ok = write_plot(c.opt.plot, rows) && files_ok;
    if (failed)
        printf("\nresult: FAILED (a check failed or a problem could not be measured)\n");
    else if (!files_ok)
        printf("\nresult: all checks passed, but a result file could not be written (see above)\n");
    else
        printf("\nresult: all checks passed\n");
    return failed || !files_ok ? 1 : 0;
}

}  // namespace

// --spec: reads and checks the spec (no GPU needed yet). 0, or 2 after saying why.
int open_spec(Ctx &c)
{
    std::string text;
    try {
        text = read_file(c.opt.spec);
    } catch (const BenchError &e) {
        fprintf(stderr, "fusegen-bench: --spec: %s\n", e.what());
        return 2;
    } catch (const std::bad_alloc &) {
        fprintf(stderr, "fusegen-bench: --spec: %s: out of host memory reading it\n", c.opt.spec.c_str());
        return 2;
    }
    const fusegen_status st = fusegen_jit_create(text.data(), text.size(), c.opt.spec.c_str(), &c.jit);
    if (st != FUSEGEN_OK) {
        fprintf(stderr, "fusegen-bench: --spec: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    Ctx c;
    const int parsed = parse_options(argc, argv, c.opt);
    if (parsed == 1)
        return 0;
    if (parsed != 0)
        return 2;

    std::vector<Shape> shapes;
    if (select_shapes(c.opt, shapes) != 0 || check_outputs(c.opt) != 0)
        return 2;
    // A spec is read and checked before anything needs a GPU: its errors are usage errors.
    if (!c.opt.spec.empty() && open_spec(c) != 0)
        return 2;

    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        printf("fusegen-bench: no CUDA device (%s): skipped\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        fusegen_jit_destroy(c.jit);
        return kExitSkip;
    }

    int rc = 1;
    try {
        if (c.jit) {
            // for the current device; the disk cache makes a second run start at once
            fusegen_jit_cache_result cache = FUSEGEN_JIT_CACHE_OFF;
            FG(fusegen_jit_compile(c.jit, nullptr, &cache));
            c.lib = fusegen_jit_library(c.jit);
            printf("spec:     %s, compiled by the JIT for %s (%s)\n", c.opt.spec.c_str(), fusegen_jit_arch(c.jit),
                   cache == FUSEGEN_JIT_CACHE_HIT ? "from the disk cache" : "compiled now");
        }
        rc = run(c, shapes);
    } catch (const BenchError &err) {
        fprintf(stderr, "fusegen-bench: %s\n", err.what());
        rc = 1;
    } catch (const std::bad_alloc &) {
        fprintf(stderr, "fusegen-bench: out of host memory\n");
        rc = 1;
    }
    c.lt_ws = DevBuf();
    if (c.lt)
        (void)cublasLtDestroy(c.lt);
    if (c.stream)
        (void)cudaStreamDestroy(c.stream);
    fusegen_jit_destroy(c.jit);
    return rc;
}
