/* fusegen.h - the fusegen runtime: status codes, the problem descriptor, and the calls that
 * query, select and run the kernels of a generated library through its dispatch table.
 *
 * A generated library <lib> provides `extern const fusegen_library <lib>_library;` in <lib>.h.
 * Nothing here allocates device memory, synchronizes, or copies between host and device:
 * fusegen_run is safe under CUDA graph capture. Every precondition is checked before launch;
 * a failed check returns a status, sets fusegen_last_detail(), and launches nothing. */
#ifndef FUSEGEN_H
#define FUSEGEN_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "fusegen_launch.h"
#include "fusegen_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FUSEGEN_VERSION_STRING "0.1.0"

typedef enum fusegen_status {
    FUSEGEN_OK = 0,
    FUSEGEN_ERR_INVALID_ARGUMENT,   /* NULL pointer, bad size, bad leading dimension, bad enum */
    FUSEGEN_ERR_MISALIGNED,         /* pointer or leading dimension breaks the kernel's alignment */
    FUSEGEN_ERR_NOT_SUPPORTED,      /* no kernel of the library can run this problem */
    FUSEGEN_ERR_NOT_FOUND,          /* no kernel of that name */
    FUSEGEN_ERR_WORKSPACE,          /* workspace NULL or smaller than fusegen_workspace_size */
    FUSEGEN_ERR_ARCH,               /* the kernel was not built for the device's architecture */
    FUSEGEN_ERR_CUDA,               /* a CUDA call failed; the detail names it */
    FUSEGEN_ERR_SPEC,               /* JIT: the spec has errors; the detail holds the diagnostics */
    FUSEGEN_ERR_COMPILE             /* JIT: NVRTC is missing or failed; the detail says why */
} fusegen_status;

const char *fusegen_status_name(fusegen_status s);     /* "FUSEGEN_ERR_MISALIGNED" */
const char *fusegen_status_message(fusegen_status s);  /* one sentence */
/* Why the last call on this thread failed (which argument, which constraint); "" after success. */
const char *fusegen_last_detail(void);

/* The enums below are expanded from the registry (fusegen_registry.h, beside this header), the
 * one definition that the generator and the generated code share. */
#define FUSEGEN__ENUM_DTYPE(id, word, value, bytes) FUSEGEN_DTYPE_##id = value,
typedef enum fusegen_dtype { FUSEGEN_REG_DTYPES(FUSEGEN__ENUM_DTYPE) } fusegen_dtype;   /* F16 1, BF16 2, F32 3 */
#define FUSEGEN__ENUM_LAYOUT(id, word, value) FUSEGEN_LAYOUT_##id = value,
typedef enum fusegen_layout { FUSEGEN_REG_LAYOUTS(FUSEGEN__ENUM_LAYOUT) } fusegen_layout;   /* NK 0, KN 1 */
#define FUSEGEN__ENUM_NORM(id, word, value) FUSEGEN_NORM_##id = value,
/* NONE 0, LAYERNORM 1, RMSNORM 2 */
typedef enum fusegen_norm { FUSEGEN_REG_NORMS(FUSEGEN__ENUM_NORM) } fusegen_norm;
/* NONE (0): no norm, or a split-K variant. ROW (1): one CTA spans N. CLUSTER (3): the CTAs of one
 * thread-block cluster span N and exchange row statistics through distributed shared memory
 * (sm_90a). SPLIT (2): any N, f32 pre-norm values and partial statistics in the workspace, then
 * a normalize kernel. */
#define FUSEGEN__ENUM_STRATEGY(id, public_id, word, value) FUSEGEN_STRATEGY_##public_id = value,
typedef enum fusegen_strategy { FUSEGEN_REG_STRATEGIES(FUSEGEN__ENUM_STRATEGY) } fusegen_strategy;

/* The code a kernel is made of (its identity, never read from its name). PORTABLE (0): cp.async,
 * ldmatrix and mma.sync, for sm_80 and later (the JIT also builds it for sm_90a alone, as
 * arch-specific code). HOPPER (1): TMA and wgmma, producer and consumer warpgroups, sm_90a only. */
#define FUSEGEN__ENUM_FAMILY(id, word, value) FUSEGEN_FAMILY_##id = value,
typedef enum fusegen_family { FUSEGEN_REG_FAMILIES(FUSEGEN__ENUM_FAMILY) } fusegen_family;
/* How a Hopper GEMM's two consumer warpgroups share the work. COOPERATIVE (1): both on one tile.
 * PINGPONG (2): each on its own tile, one's epilogue under the other's mainloop. NONE (0): the
 * portable family (and GEMM2 of a kernel that is not a chain). */
#define FUSEGEN__ENUM_SCHEDULE(id, public_id, word, value) FUSEGEN_SCHEDULE_##public_id = value,
typedef enum fusegen_schedule { FUSEGEN_REG_SCHEDULES(FUSEGEN__ENUM_SCHEDULE) } fusegen_schedule;

#define FUSEGEN_MAX_STORES FUSEGEN_REG_MAX_STORES   /* 4 */

/* The epilogue ops of a kernel, in order, with their constants (generated data; tests and
 * tools use it to reproduce exactly what a kernel computes). FUSEGEN_OP_<ID>, numbered in the
 * registry's order:
 *   SCALE 0       v *= value (alpha)
 *   BIAS 1        v += bias[n]
 *   RESIDUAL 2    v += value (beta) * residual[m, n]
 *   RELU 3
 *   GELU 4        erf form
 *   GELU_TANH 5   tanh approximation
 *   SILU 6
 *   STORE 7       store[index] = v (rounded to out)
 *   LAYERNORM 8   eps = value; affine: gamma, beta
 *   RMSNORM 9     eps = value; affine: gamma
 *   A_RMSNORM 10  first when present: v *= rstd of A's row m (eps = value), rstd =
 *                 1 / sqrt(mean over k of A[m, k]^2 + eps); gamma is folded into B beforehand
 *                 (fusegen_fold_a_norm_gamma)
 *   SWIGLU 11     first (after A_RMSNORM): out[m, j] = silu(gate) * up, gate and up the GEMM's
 *                 columns of B's rows 16 (j / 8) + j % 8 and that + 8 (fusegen_pack_glu_weight);
 *                 p->n counts B's rows, out and what follows have p->n / 2 columns
 *   GEGLU 12      the same with gelu (erf form) */
#define FUSEGEN__ENUM_OP(id, token, word, value, cls, key, dflt) FUSEGEN_OP_##id = value,
typedef enum fusegen_op_kind { FUSEGEN_REG_OPS(FUSEGEN__ENUM_OP) } fusegen_op_kind;

typedef struct fusegen_op {
    fusegen_op_kind kind;
    double value;           /* alpha, beta or eps; 0 for the others */
    int affine;             /* norms */
    int index;              /* store: which store[] slot */
} fusegen_op;

/* What is to be computed. Leading dimensions are in elements; 0 means "packed" (the row
 * length). A is [M,K] row-major; B is [N,K] ("nk") or [K,N] ("kn"); out and residual are [M,N].
 * For a chain, GEMM2 reads GEMM1's [M,N] result and B2 ([N2,N] or [N,N2]) into out2 [M,N2]. */
typedef struct fusegen_problem {
    int64_t m, n, k;
    int64_t n2;                     /* chains only; 0 otherwise */
    fusegen_dtype a, b, out;
    fusegen_layout b_layout;
    fusegen_layout b2_layout;       /* chains only */
    const char *epilogue;           /* signature, e.g. "bias+residual+store+layernorm+relu" */
    const char *epilogue2;          /* chains only: GEMM2's signature; NULL otherwise */
    int sm;                         /* target compute capability x10 (90 for an H200); 0: current device */
    int64_t lda, ldb, ldo, ldr;     /* A, B, out, residual */
    int64_t ld_store[FUSEGEN_MAX_STORES];
    int64_t ldb2, ldo2;             /* chains: B2, out2 */
} fusegen_problem;

/* The leading dimension to use: ld, or packed (the row length) when ld is 0. Launchers call
 * it for every ld of a problem the runtime has already checked. */
static inline int64_t fusegen_ld_or(int64_t ld, int64_t packed) { return ld != 0 ? ld : packed; }

/* Device pointers. Vectors (bias, gamma, beta) and residual and stores have the out dtype. */
typedef struct fusegen_args {
    const void *a, *b;
    void *out;
    const void *bias;               /* [N] */
    const void *residual;           /* [M, N] */
    const void *gamma, *beta;       /* [N] norm affine parameters */
    void *store[FUSEGEN_MAX_STORES];/* extra outputs, in the order the store ops appear */
    /* chains: GEMM2 */
    const void *b2;
    void *out2;
    const void *bias2;              /* [N2] */
    const void *residual2;          /* [M, N2] */
    void *store2[FUSEGEN_MAX_STORES];
} fusegen_args;

/* One kernel of a generated library. The dispatch table is an array of these (generated data).
 * The runtime checks every field-derived constraint before it calls launch. */
typedef struct fusegen_kernel {
    const char *name;               /* unique in the library */
    const char *spec_kernel;        /* the spec's kernel name it came from */
    int sm;                         /* built for this compute capability x10 (80: portable path) */
    int arch_specific;              /* 1 for sm_90a-only code */
    fusegen_family family;          /* the code it is made of */
    fusegen_dtype a, b, out;
    fusegen_layout b_layout;
    const char *epilogue;
    const fusegen_op *ops; int n_ops;
    int chain;
    fusegen_layout b2_layout;
    const char *epilogue2;
    const fusegen_op *ops2; int n_ops2;
    int tile_m, tile_n, tile_k, stages, threads;
    int tile2_m, tile2_n, tile2_k, stages2, threads2;
    fusegen_schedule schedule;      /* the Hopper schedule of its GEMM (GEMM1 of a chain); NONE: portable */
    fusegen_schedule schedule2;     /* the same for a chain's GEMM2 (NONE for single GEMMs) */
    fusegen_norm norm;
    fusegen_strategy strategy;      /* NONE for split-K variants (their reduce kernel sees whole rows) */
    int split_k;                    /* 1: a split-K variant: a partial kernel sums slices of K
                                       (fusegen_k_slices, fusegen_workspace.h) into the workspace,
                                       a reduce kernel applies the whole epilogue row by row */
    int64_t max_n;                  /* row and cluster strategies, split K with a norm: N <= max_n; 0: any */
    int align_elems;                /* K, N, N2, leading dims multiple of this; pointers 16-byte aligned */
    int n_stores, n_stores2;
    int uses_bias, uses_residual, uses_gamma, uses_beta;
    int uses_bias2, uses_residual2;
    int rank;                       /* the spec's preference (tile area, epilogue staging, pipeline
                                       depth; plan.c): larger goes first among eligible kernels that
                                       the dispatch's model ranks equal */
    /* How the runtime launches it (fusegen_launch.h, runtime/launch.c): GEMM1's record and a
     * chain's GEMM2's (zeros otherwise), the launcher's cache, and for compiled-in kernels the
     * function that gives their driver functions (CUfunction: GEMM1, its normalize or reduce
     * kernel, GEMM2; NULL where a variant has none) in the current context, compiled into the
     * kernel library so that its own CUDA runtime answers. */
    fusegen_launch_gemm launch1, launch2;
    fusegen_launch_cache *cache;
    cudaError_t (*functions)(void *fns[FUSEGEN_LAUNCH_FNS]);
    /* Kernels compiled at run time (fusegen_jit.h) launch through launch_jit instead (functions NULL),
     * with their own data in jit; it returns 0, or nonzero after writing why the launch failed
     * into why (why_len bytes). Generated tables leave both NULL. */
    int (*launch_jit)(const struct fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args,
                      void *workspace, cudaStream_t stream, char *why, size_t why_len);
    const void *jit;
} fusegen_kernel;

/* Measured winners compiled into a generated library (fusegen generate --tuning FILE; docs/api.md,
 * "Tuning files"): one tuning file's entries each, for the device it was measured on. */
typedef struct fusegen_tuned_entry {
    const char *spec_kernel;
    int64_t m_bucket, n, k, n2;     /* M rounded up to a power of two; n2 0 for single GEMMs */
    int winner;                     /* index into the library's kernels */
    double winner_ms, runner_up_ms; /* as measured; runner_up_ms < 0: there was none */
} fusegen_tuned_entry;

typedef struct fusegen_tuned_device {
    const char *name;               /* the CUDA device name, e.g. "NVIDIA H200" */
    int sms, cc;                    /* SM count, compute capability x10 */
    const fusegen_tuned_entry *entries;   /* sorted: spec_kernel (strcmp), m_bucket, n, k, n2 */
    size_t n_entries;
} fusegen_tuned_device;

typedef struct fusegen_library {
    const char *name;
    const char *generator_version;
    const char *spec_sha256;
    const fusegen_kernel *kernels;
    size_t n_kernels;
    /* Compiled-in tuning (appended; NULL and 0 when the library was generated without --tuning,
     * and in JIT libraries): used when the current device is one of these (name, SMs, cc) and no
     * tuning file is loaded for the library. */
    const fusegen_tuned_device *tuned;
    size_t n_tuned;
} fusegen_library;

/* The kernels of lib that can run problem p, best first (up to cap written to out; the count
 * of all eligible is returned through n_found). When none can, returns FUSEGEN_ERR_NOT_SUPPORTED
 * and the detail lists each kernel's reason. */
fusegen_status fusegen_query(const fusegen_library *lib, const fusegen_problem *p,
                             const fusegen_kernel **out, size_t cap, size_t *n_found);
/* Why kernel k cannot run p (NULL pointer when it can). Writes into buf. */
const char *fusegen_why_not(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t buf_len);
/* Best eligible kernel (the dispatch). */
fusegen_status fusegen_select(const fusegen_library *lib, const fusegen_problem *p, const fusegen_kernel **out);
/* Lookup by name. */
fusegen_status fusegen_find(const fusegen_library *lib, const char *name, const fusegen_kernel **out);
/* Bytes of device workspace kernel k needs for p (0 is possible). */
fusegen_status fusegen_workspace_size(const fusegen_kernel *k, const fusegen_problem *p, size_t *bytes);
/* Checks everything, then launches k on stream. workspace must be 256-byte aligned. */
fusegen_status fusegen_run(const fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args,
                           void *workspace, size_t workspace_bytes, cudaStream_t stream);

/* a_norm (docs/api.md, "Norm on A"): folds the norm's gamma into the weight of a kernel with an
 * "a_norm", once, in host memory, in place: B[n, k] ("nk") or B[k, n] ("kn") times gamma[k], each
 * product rounded to B's dtype (F16 or BF16). gamma [K] is F16, BF16 or F32; ldb in elements
 * (0: packed). The kernel then computes rstd(A's row) * (A . B), the norm's output times the
 * original weight. */
fusegen_status fusegen_fold_a_norm_gamma(void *b, fusegen_dtype b_dtype, fusegen_layout layout, int64_t n,
                                         int64_t k, int64_t ldb, const void *gamma, fusegen_dtype gamma_dtype);

/* A gated activation (swiglu, geglu; docs/api.md, "Gated activations"): the weight of such a
 * kernel from its gate and up weights, host memory: gate and up are [n, k] ("nk") or [k, n]
 * ("kn") each, packed; packed receives [2n, k] or [k, 2n], gate and up interleaved along N in
 * blocks of 8 (packed rows 16b .. 16b + 7 are gate rows 8b .., the next 8 up rows 8b ..).
 * n must be a multiple of 8; dtype F16 or BF16. The kernel's problem then has n = 2n. */
fusegen_status fusegen_pack_glu_weight(void *packed, const void *gate, const void *up, fusegen_dtype dtype,
                                       fusegen_layout layout, int64_t n, int64_t k);

/* Recording (docs/api.md, "Recording the dispatched problems"): while a file is open, each
 * problem fusegen_select dispatches is appended to it as one JSON line, once per file (library,
 * spec kernel, M, N, K, N2, dtypes, layouts, signatures). FUSEGEN_RECORD=path opens one at the
 * first select or recording call. Failing writes are reported once on stderr and stop the
 * recording; they never change a dispatch. Thread-safe. */
fusegen_status fusegen_record_open(const char *path);   /* appends; replaces the open recording */
void fusegen_record_close(void);
/* Records p as dispatched to k (what fusegen_select does itself), for callers that choose from
 * fusegen_query's list. */
void fusegen_record_problem(const fusegen_library *lib, const fusegen_problem *p, const fusegen_kernel *k);

/* Tuning files (docs/api.md, "Tuning files"; written by fusegen-tune): measured winners per spec
 * kernel and problem bucket (M rounded up to a power of two, N, K, N2). Loaded for lib, the
 * winner goes first in fusegen_query and fusegen_select wherever it is eligible; elsewhere the
 * dispatch's model decides. A file for another library, spec hash or device (name, SM count,
 * compute capability) is refused with the reason in the detail and nothing applied. A loaded
 * file takes the place of the library's compiled-in tuning (fusegen_library.tuned). */
fusegen_status fusegen_tuning_load(const fusegen_library *lib, const char *path);
void fusegen_tuning_clear(const fusegen_library *lib);   /* NULL: every library's */

#ifdef __cplusplus
}
#endif
#endif
