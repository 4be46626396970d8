/* gpu_util.h - shared helpers of the GPU tests: 16-bit float conversion (round to nearest
 * even), CUDA error checks, a seeded random generator, relative L2 error, host/device tensors
 * that remember the exact values the device sees, and a "case": one kernel of a library with
 * one problem, its inputs, outputs and workspace, ready to run.
 *
 * Every input value is rounded to its dtype on the host before upload, and the rounded value is
 * kept (as double) for the CPU reference. Outputs, their padding and a guard area after each
 * output allocation are filled with 0xFF bytes (NaN in f16, bf16 and f32) before a run, so an
 * element the kernel did not write reads as NaN and a write out of bounds is visible. */
#ifndef FUSEGEN_TESTS_GPU_UTIL_H
#define FUSEGEN_TESTS_GPU_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "fusegen.h"

/* A failed CUDA call ends the test: after a device fault the context is unusable anyway. */
#define GPU_CHECK(call)                                                                       \
    do {                                                                                      \
        cudaError_t gpu_check_err_ = (call);                                                  \
        if (gpu_check_err_ != cudaSuccess) {                                                  \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,         \
                    cudaGetErrorName(gpu_check_err_), cudaGetErrorString(gpu_check_err_));    \
            fflush(stdout);                                                                   \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* Exit status of a test that found no device (CTest SKIP_RETURN_CODE). */
#define GPU_SKIP_EXIT 77

/* Bytes after every output allocation that must stay untouched. */
#define GPU_GUARD_BYTES 512

/* ---- 16-bit floats ------------------------------------------------------------------------ */
uint16_t gpu_f32_to_bf16(float f);   /* round to nearest even; NaN stays NaN */
float gpu_bf16_to_f32(uint16_t h);
uint16_t gpu_f32_to_f16(float f);    /* round to nearest even; overflow to inf; subnormals kept */
float gpu_f16_to_f32(uint16_t h);

size_t gpu_dtype_size(fusegen_dtype t);
const char *gpu_dtype_name(fusegen_dtype t);
/* v rounded to dtype t (through f32 first; both steps round to nearest even). */
double gpu_round_to(fusegen_dtype t, double v);
void gpu_encode(fusegen_dtype t, double v, void *dst);
double gpu_decode(fusegen_dtype t, const void *src);

/* ---- random numbers (splitmix64) ---------------------------------------------------------- */
typedef struct gpu_rng {
    uint64_t state;
} gpu_rng;

void gpu_rng_seed(gpu_rng *r, uint64_t seed);
uint64_t gpu_rng_next(gpu_rng *r);
double gpu_rng_uniform(gpu_rng *r, double lo, double hi);   /* [lo, hi) */
/* FUSEGEN_TEST_SEED from the environment when set (decimal or 0x hex), else from the clock. */
uint64_t gpu_test_seed(void);

/* ---- errors ------------------------------------------------------------------------------- */
typedef struct gpu_l2 {
    double num, den;      /* sum (out - ref)^2, sum ref^2 */
    long nonfinite;       /* outputs that were NaN or inf */
    long count;
} gpu_l2;

void gpu_l2_add(gpu_l2 *e, double out, double ref);
/* ||out - ref|| / ||ref|| (the absolute norm when ref is all zero); INFINITY when any output
 * was not finite, so NaN never passes a comparison with a tolerance. */
double gpu_l2_rel(const gpu_l2 *e);

/* 1 when cudaGetDeviceCount reports a device; otherwise prints "no CUDA device: skipping". */
int gpu_have_device(void);

/* ---- tensors ------------------------------------------------------------------------------ */
typedef struct gpu_tensor {
    fusegen_dtype dtype;
    int64_t rows, cols, ld;       /* row-major, ld >= cols, in elements */
    size_t bytes;                 /* rows * ld * size + GPU_GUARD_BYTES */
    unsigned char *host;          /* encoded elements; padding and guard are 0xFF */
    double *val;                  /* rows * cols packed: the exact values of the elements */
    void *dev;
} gpu_tensor;

void gpu_tensor_init(gpu_tensor *t, fusegen_dtype dtype, int64_t rows, int64_t cols, int64_t ld);
/* Rounds v to the dtype and stores it (host only). */
void gpu_tensor_set(gpu_tensor *t, int64_t r, int64_t c, double v);
void gpu_tensor_fill_uniform(gpu_tensor *t, gpu_rng *rng, double lo, double hi);
void gpu_tensor_upload(gpu_tensor *t);          /* allocates the device copy */
void gpu_tensor_alloc_output(gpu_tensor *t);    /* allocates, fills with 0xFF */
void gpu_tensor_poison(gpu_tensor *t, cudaStream_t s);
void gpu_tensor_download(gpu_tensor *t);        /* synchronous; decodes into val */
/* Bytes of padding or guard that are no longer 0xFF (written out of bounds). */
size_t gpu_tensor_stray_bytes(const gpu_tensor *t);
/* Logical elements that are not finite. */
long gpu_tensor_nonfinite(const gpu_tensor *t);
/* 1 when every byte of the host copy is 0xFF (nothing was written). */
int gpu_tensor_all_poison(const gpu_tensor *t);
/* Elements whose bytes are still all 0xFF. */
long gpu_tensor_poison_elems(const gpu_tensor *t);
void gpu_tensor_free(gpu_tensor *t);

/* ---- cases -------------------------------------------------------------------------------- */
typedef struct gpu_shape {
    const char *label;
    int64_t m, n, k, n2;          /* n2 is used by chains only */
    int padded;                   /* leading dimensions larger than the row lengths */
} gpu_shape;

typedef struct gpu_case {
    const fusegen_kernel *kern;
    fusegen_problem p;
    fusegen_args args;
    gpu_tensor a, b, bias, res, gamma, beta, out, store[FUSEGEN_MAX_STORES];
    gpu_tensor b2, bias2, res2, out2, store2[FUSEGEN_MAX_STORES];
    void *ws;
    size_t ws_bytes;              /* what the runtime asked for */
    size_t ws_alloc;              /* what was allocated (at least 256) */
} gpu_case;

/* The problem kernel k would be asked to run for shape s (dtypes, layouts and epilogue
 * signatures from k; sm 0 = current device; leading dimensions 0 = packed unless padded). */
/* The columns of a kernel's out, residual, stores and vectors for GEMM columns n: n, or n / 2
 * after a gated activation (swiglu, geglu). */
int64_t gpu_out_cols(const fusegen_kernel *k, int64_t n);
void gpu_make_problem(const fusegen_kernel *k, const gpu_shape *s, fusegen_problem *p);
/* Host inputs with random values: A ~ U(-1,1), B ~ U(-1,1) * sqrt(3/K) (so a dot product has
 * variance about 1/3), bias and residual ~ U(-1,1), gamma ~ U(0.5,1.5), beta ~ U(-0.5,0.5);
 * chains: B2 ~ U(-1,1) * sqrt(3/N), bias2, residual2 ~ U(-1,1). Output tensors are created
 * too. All tensors exist on the host whether the kernel uses them or not. */
void gpu_case_init(gpu_case *c, const fusegen_kernel *k, const gpu_shape *s, gpu_rng *rng);
/* Device buffers: inputs uploaded, outputs and workspace allocated and poisoned; args filled
 * with the buffers the kernel uses (NULL for the others). Returns the runtime's status of
 * fusegen_workspace_size (the case is unusable unless FUSEGEN_OK). */
fusegen_status gpu_case_upload(gpu_case *c);
void gpu_case_poison(gpu_case *c, cudaStream_t s);
fusegen_status gpu_case_run(gpu_case *c, cudaStream_t s);
void gpu_case_download(gpu_case *c);
void gpu_case_free(gpu_case *c);

#endif
