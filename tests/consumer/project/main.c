/* main.c - the consumer's program: y = relu(x W^T + bias) in bf16 through the kernel library
 * generated from my.json, checked against a double-precision reference on every element.
 *
 * Exits 0 on success, 1 on failure, and 77 (skipped) when there is no usable CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "consumer_demo.h"
#include "fusegen.h"

#define EXIT_SKIP 77

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                   \
                    cudaGetErrorString(e_));                                                       \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* f32 -> bf16, round to nearest even (the inputs are finite). */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Deterministic values in [-1, 1) (a 32-bit LCG; the seed is fixed). */
static uint32_t g_state = 12345u;

static float next_value(void)
{
    g_state = g_state * 1664525u + 1013904223u;
    return (float)(g_state >> 8) / 8388608.0f - 1.0f;
}

int main(void)
{
    enum { M = 100, N = 96, K = 64 };   /* M is not a multiple of the tile */
    int devices = 0, rc = 1;
    uint16_t hx[M * K], hw[N * K], hb[N], hy[M * N];
    void *dx = NULL, *dw = NULL, *db = NULL, *dy = NULL;
    const fusegen_kernel *kernel = NULL;
    fusegen_problem p;
    fusegen_args args;
    fusegen_status st;
    size_t ws = 0;
    double num = 0.0, den = 0.0;
    int i, m, n, k;

    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("no CUDA device: skipped\n");
        return EXIT_SKIP;
    }

    memset(&p, 0, sizeof p);
    p.m = M; p.n = N; p.k = K;
    p.a = p.b = p.out = FUSEGEN_DTYPE_BF16;
    p.b_layout = FUSEGEN_LAYOUT_NK;
    p.epilogue = "bias+relu";
    st = fusegen_select(&consumer_demo_library, &p, &kernel);
    if (st == FUSEGEN_ERR_ARCH) {
        printf("no kernel for this device (%s): skipped\n", fusegen_last_detail());
        return EXIT_SKIP;
    }
    if (st != FUSEGEN_OK || fusegen_workspace_size(kernel, &p, &ws) != FUSEGEN_OK || ws != 0) {
        fprintf(stderr, "select: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        return 1;
    }
    printf("kernel %s\n", kernel->name);

    for (i = 0; i < M * K; i++) hx[i] = to_bf16(next_value());
    for (i = 0; i < N * K; i++) hw[i] = to_bf16(next_value() * 0.25f);
    for (i = 0; i < N; i++) hb[i] = to_bf16(next_value() * 0.5f);

    CUDA_CHECK(cudaMalloc(&dx, sizeof hx));
    CUDA_CHECK(cudaMalloc(&dw, sizeof hw));
    CUDA_CHECK(cudaMalloc(&db, sizeof hb));
    CUDA_CHECK(cudaMalloc(&dy, sizeof hy));
    CUDA_CHECK(cudaMemcpy(dx, hx, sizeof hx, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(dw, hw, sizeof hw, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(dy, 0xff, sizeof hy));   /* NaN everywhere: unwritten outputs fail */

    memset(&args, 0, sizeof args);
    args.a = dx;
    args.b = dw;
    args.bias = db;
    args.out = dy;
    st = fusegen_run(kernel, &p, &args, NULL, 0, 0);
    if (st != FUSEGEN_OK) {
        fprintf(stderr, "run: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        goto done;
    }
    CUDA_CHECK(cudaMemcpy(hy, dy, sizeof hy, cudaMemcpyDeviceToHost));

    for (m = 0; m < M; m++)
        for (n = 0; n < N; n++) {
            double ref = from_bf16(hb[n]), got = from_bf16(hy[m * N + n]);
            for (k = 0; k < K; k++)
                ref += (double)from_bf16(hx[m * K + k]) * (double)from_bf16(hw[n * K + k]);
            ref = ref > 0.0 ? ref : 0.0;
            if (isnan(got)) {
                fprintf(stderr, "y[%d][%d] is NaN (not written?)\n", m, n);
                goto done;
            }
            num += (got - ref) * (got - ref);
            den += ref * ref;
        }
    printf("relative L2 error %.3e\n", sqrt(num / den));
    rc = sqrt(num / den) <= 1e-2 ? 0 : 1;
    if (rc)
        fprintf(stderr, "the result does not match the reference\n");

done:
    cudaFree(dy);
    cudaFree(db);
    cudaFree(dw);
    cudaFree(dx);
    return rc;
}
