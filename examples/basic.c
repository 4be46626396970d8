/* basic.c - run one fused kernel of the default library:
 *
 *     pre = x W^T + bias + residual            (kept: the store op writes it to pre_norm)
 *     y   = relu(LayerNorm(pre) * gamma + beta)
 *
 * in bf16 with f32 accumulation, through the runtime API: describe the problem, let
 * fusegen_select pick the kernel, size the workspace, and run on our own stream. Then check two
 * rows against a double-precision reference and print a checksum.
 *
 * Exits 0 on success, 1 on failure, and 77 (skipped) when there is no usable GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fusegen.h"
#include "fusegen_default.h"

#define EXIT_SKIP 77

/* Prints the failed call with CUDA's name and text for the error, then leaves through `fail`. */
#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,               \
                    cudaGetErrorName(e_), cudaGetErrorString(e_));                                 \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* ---- bf16 on the host --------------------------------------------------------------------- */

/* f32 -> bf16 with round-to-nearest-even on the 16 bits dropped; NaN stays a (quiet) NaN. */
static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A small deterministic generator (splitmix64), so every run sees the same inputs. */
static uint64_t g_rng = 0x5eed2024u;

static float uniform(float lo, float hi)
{
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * (float)((double)(z >> 11) / 9007199254740992.0);
}

/* n bf16 values drawn from [lo, hi) */
static uint16_t *random_bf16(size_t n, float lo, float hi)
{
    uint16_t *h = malloc(n * sizeof *h);
    size_t i;
    if (!h)
        return NULL;
    for (i = 0; i < n; i++)
        h[i] = f32_to_bf16(uniform(lo, hi));
    return h;
}

/* ---- reference for one row ----------------------------------------------------------------- */

/* ||got - ref|| / ||ref|| of row m, in double from the same bf16 inputs. */
static double row_error(int64_t m, int64_t n_dim, int64_t k_dim, const uint16_t *x, const uint16_t *w,
                        const uint16_t *bias, const uint16_t *res, const uint16_t *gamma, const uint16_t *beta,
                        const uint16_t *y, double eps)
{
    double *pre = malloc((size_t)n_dim * sizeof *pre);
    double mean = 0.0, var = 0.0, num = 0.0, den = 0.0;
    int64_t n, k;
    if (!pre)
        return INFINITY;
    for (n = 0; n < n_dim; n++) {
        double acc = 0.0;
        for (k = 0; k < k_dim; k++)
            acc += (double)bf16_to_f32(x[m * k_dim + k]) * (double)bf16_to_f32(w[n * k_dim + k]);
        pre[n] = acc + bf16_to_f32(bias[n]) + bf16_to_f32(res[m * n_dim + n]);
        mean += pre[n];
    }
    mean /= (double)n_dim;
    for (n = 0; n < n_dim; n++)
        var += (pre[n] - mean) * (pre[n] - mean);
    var /= (double)n_dim;
    for (n = 0; n < n_dim; n++) {
        double ref = (pre[n] - mean) / sqrt(var + eps) * bf16_to_f32(gamma[n]) + bf16_to_f32(beta[n]);
        double got = bf16_to_f32(y[m * n_dim + n]);
        ref = ref > 0.0 ? ref : 0.0;
        num += (got - ref) * (got - ref);
        den += ref * ref;
    }
    free(pre);
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(void)
{
    const int64_t M = 1000, N = 1024, K = 768;   /* M need not be a multiple of any tile */
    const double eps = 1e-5;                    /* the spec's layernorm eps */

    int rc = 1, devices = 0;
    uint16_t *hx = NULL, *hw = NULL, *hbias = NULL, *hres = NULL, *hgamma = NULL, *hbeta = NULL, *hy = NULL;
    void *dx = NULL, *dw = NULL, *dbias = NULL, *dres = NULL, *dgamma = NULL, *dbeta = NULL;
    void *dy = NULL, *dpre = NULL, *dws = NULL;
    cudaStream_t stream = NULL;
    const fusegen_kernel *kernel = NULL;
    fusegen_problem p;
    fusegen_args args;
    fusegen_status st;
    size_t ws_bytes = 0, i;
    double checksum = 0.0, err0, err1;
    const size_t mk = (size_t)(M * K), nk = (size_t)(N * K), mn = (size_t)(M * N);

    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("no CUDA device: skipped\n");
        return EXIT_SKIP;
    }

    /* 1. The problem: what to compute, its shape and the device (sm = 0: the current one).
     *    Leading dimensions left at 0 mean packed rows. */
    memset(&p, 0, sizeof p);
    p.m = M; p.n = N; p.k = K;
    p.a = p.b = p.out = FUSEGEN_DTYPE_BF16;
    p.b_layout = FUSEGEN_LAYOUT_NK;             /* W is [N, K], as in a linear layer */
    p.epilogue = "bias+residual+store+layernorm+relu";
    p.sm = 0;

    /* 2. The dispatch: the best kernel of the library for this problem on this device. */
    st = fusegen_select(&fusegen_default_library, &p, &kernel);
    if (st == FUSEGEN_ERR_NOT_SUPPORTED || st == FUSEGEN_ERR_ARCH) {
        printf("no kernel for this device: %s: skipped\n", fusegen_last_detail());
        return EXIT_SKIP;
    }
    if (st != FUSEGEN_OK) {
        fprintf(stderr, "fusegen_select: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        return 1;
    }

    /* 3. The workspace the kernel needs for this problem (0 for the row strategy). */
    st = fusegen_workspace_size(kernel, &p, &ws_bytes);
    if (st != FUSEGEN_OK) {
        fprintf(stderr, "fusegen_workspace_size: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        return 1;
    }
    printf("kernel %s (rank %d), workspace %zu bytes\n", kernel->name, kernel->rank, ws_bytes);

    /* Inputs on the host: x and W scaled so that x W^T is O(1). */
    hx = random_bf16(mk, -1.0f, 1.0f);
    hw = random_bf16(nk, -1.0f / sqrtf((float)K), 1.0f / sqrtf((float)K));
    hbias = random_bf16((size_t)N, -0.5f, 0.5f);
    hres = random_bf16(mn, -1.0f, 1.0f);
    hgamma = random_bf16((size_t)N, 0.5f, 1.5f);
    hbeta = random_bf16((size_t)N, -0.2f, 0.2f);
    hy = malloc(mn * sizeof *hy);
    if (!hx || !hw || !hbias || !hres || !hgamma || !hbeta || !hy) {
        fprintf(stderr, "out of host memory\n");
        goto fail;
    }

    /* Device buffers. cudaMalloc returns 256-byte aligned memory, which satisfies both the
     * 16-byte pointer rule and the workspace's 256-byte rule. */
    CUDA_CHECK(cudaMalloc(&dx, mk * 2));
    CUDA_CHECK(cudaMalloc(&dw, nk * 2));
    CUDA_CHECK(cudaMalloc(&dbias, (size_t)N * 2));
    CUDA_CHECK(cudaMalloc(&dres, mn * 2));
    CUDA_CHECK(cudaMalloc(&dgamma, (size_t)N * 2));
    CUDA_CHECK(cudaMalloc(&dbeta, (size_t)N * 2));
    CUDA_CHECK(cudaMalloc(&dy, mn * 2));
    CUDA_CHECK(cudaMalloc(&dpre, mn * 2));
    if (ws_bytes > 0)
        CUDA_CHECK(cudaMalloc(&dws, ws_bytes));
    CUDA_CHECK(cudaMemcpy(dx, hx, mk * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dw, hw, nk * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dbias, hbias, (size_t)N * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dres, hres, mn * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dgamma, hgamma, (size_t)N * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dbeta, hbeta, (size_t)N * 2, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaStreamCreate(&stream));

    /* 4. Run on our stream. Vectors, residual and stores have the out dtype (bf16 here). */
    memset(&args, 0, sizeof args);
    args.a = dx;
    args.b = dw;
    args.out = dy;
    args.bias = dbias;
    args.residual = dres;
    args.gamma = dgamma;
    args.beta = dbeta;
    args.store[0] = dpre;                      /* the "store" op: pre-norm values */
    st = fusegen_run(kernel, &p, &args, dws, ws_bytes, stream);
    if (st != FUSEGEN_OK) {
        fprintf(stderr, "fusegen_run: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        goto fail;
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpy(hy, dy, mn * 2, cudaMemcpyDeviceToHost));

    for (i = 0; i < mn; i++) {
        float v = bf16_to_f32(hy[i]);
        if (!isfinite(v) || v < 0.0f) {
            fprintf(stderr, "y[%zu] = %g: expected a finite value >= 0 after relu\n", i, (double)v);
            goto fail;
        }
        checksum += v;
    }
    err0 = row_error(0, N, K, hx, hw, hbias, hres, hgamma, hbeta, hy, eps);
    err1 = row_error(M - 1, N, K, hx, hw, hbias, hres, hgamma, hbeta, hy, eps);
    printf("checksum %.6f, relative L2 error of rows 0 and %lld: %.2e %.2e\n", checksum, (long long)(M - 1),
           err0, err1);
    if (!(err0 <= 1e-2 && err1 <= 1e-2)) {
        fprintf(stderr, "the result does not match the reference\n");
        goto fail;
    }
    rc = 0;

fail:
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(dws);
    cudaFree(dpre);
    cudaFree(dy);
    cudaFree(dbeta);
    cudaFree(dgamma);
    cudaFree(dres);
    cudaFree(dbias);
    cudaFree(dw);
    cudaFree(dx);
    free(hy);
    free(hbeta);
    free(hgamma);
    free(hres);
    free(hbias);
    free(hw);
    free(hx);
    return rc;
}
