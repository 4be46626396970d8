/* test_gpu_jit.c - the runtime's JIT on a GPU: a spec whose kernels the default library does
 * not have (f16 GEMM + bias + relu; bf16 GEMM + residual + RMSNorm + gelu with a 64x128 tile, row
 * and split variants; an f16 chain with a split LayerNorm; and on a compute capability 9.0
 * device a Hopper kernel with row, cluster and split LayerNorm variants) is compiled for the
 * current device, and every kernel of the JIT library runs through fusegen_run on random inputs
 * and is compared with a float64 reference: ||out - ref|| / ||ref|| <= 1e-2 for 16-bit outputs
 * (every output: the main one, stores, GEMM2's). Outputs are poisoned first (an unwritten
 * element reads as NaN) and the bytes past them must stay untouched. Then the opt-in fallback:
 * fusegen_select_or_jit takes the default library's kernel when one fits (and compiles nothing),
 * and the JIT's otherwise. On a compute capability 9.0 device, last: twins, a spec that plans
 * some of the default library's Hopper variants (the same code, checked below by name) is
 * compiled, and each twin pair runs on the same inputs through the JIT and through the compiled-in
 * library: their outputs must be equal bit for bit (one record, one device code; the two
 * launchers must agree on grids, slices and workspace).
 *
 *   fusegen_test_gpu_jit CACHE_DIR
 * Exit status 77 (skipped) without a CUDA device or without NVRTC. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fusegen.h"
#include "fusegen_default.h"
#include "fusegen_jit.h"
#include "gpu_util.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static int g_pass, g_fail;

/* Tiles and epilogues of specs/default.json's own, for sm_90a only: every variant it plans is
 * one of fusegen_default's, with the same device code (names without the library agree). */
static const char spec_twins[] =
    "{\n"
    "  \"library\": \"jit_twin\",\n"
    "  \"kernels\": [\n"
    "    {\n"
    "      \"name\": \"proj_bias_residual_layernorm\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", \"b_layout\": \"nk\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 5, \"schedule\": \"pingpong\"},\n"
    "                 {\"m\": 64, \"n\": 128, \"k\": 64, \"stages\": 4} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"residual\"}, {\"op\": \"store\", \"as\": \"pre_norm\"},\n"
    "                    {\"op\": \"layernorm\", \"eps\": 1e-05}, {\"op\": \"relu\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"proj\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", \"b_layout\": \"nk\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 3} ],\n"
    "      \"epilogue\": []\n"
    "    }\n"
    "  ]\n"
    "}\n";
/* the variants spec_twins plans: row and split for each LayerNorm tile, split K for the 64x128
 * one and for the plain 128x256 one */
#define FG_TWIN_VARIANTS 7

static void report(int ok, const char *what, const char *detail)
{
    printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail ? ": " : "", detail ? detail : "");
    if (ok)
        g_pass++;
    else
        g_fail++;
}

static const char spec_portable[] =
    "{\n"
    "  \"library\": \"jit_gpu\",\n"
    "  \"kernels\": [\n"
    "    {\n"
    "      \"name\": \"f16_bias_relu\", \"arch\": [\"sm_80\"],\n"
    "      \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f16\",\n"
    "      \"tiles\": [ {\"m\": 64, \"n\": 64, \"k\": 32, \"stages\": 3} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"relu\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"bf16_residual_rmsnorm_gelu\", \"arch\": [\"sm_80\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\",\n"
    "      \"tiles\": [ {\"m\": 64, \"n\": 128, \"k\": 32, \"stages\": 3} ],\n"
    "      \"epilogue\": [ {\"op\": \"residual\", \"beta\": 0.5}, {\"op\": \"store\", \"as\": \"pre\"},\n"
    "                    {\"op\": \"rmsnorm\"}, {\"op\": \"gelu\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"f16_chain\", \"arch\": [\"sm_80\"],\n"
    "      \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f16\", \"b_layout\": \"kn\",\n"
    "      \"tiles\": [ {\"m\": 64, \"n\": 64, \"k\": 32, \"stages\": 3} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"layernorm\", \"strategy\": \"split\"} ],\n"
    "      \"then\": { \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"relu\"} ] }\n"
    "    }%s\n"
    "  ]\n"
    "}\n";

/* Added on a 9.0 device: Hopper row, cluster and split variants (bf16 out), a split variant
 * with f16 out (its store goes through the shared-memory tile buffer, its f32 pre-norm values
 * do not), f32 out (f32 rows in the tile buffer) with row, cluster and split variants, a
 * 160-column split variant (64-byte tile-buffer boxes; its normalize kernel reads the store),
 * a 64x320 row variant (cooperative, its warpgroups splitting the columns; B in two TMA
 * boxes of 160 rows, as the JIT's launch record says), two Hopper chains with a split
 * GEMM1 (RMSNorm with a ping-pong GEMM2, LayerNorm without gamma and beta), and B stored
 * [K, N] ("kn": TMA blocks of 64 columns that the wgmmas read N-major): a LayerNorm kernel
 * with cooperative 128x256 (row, cluster, split), ping-pong 128x128 (row, split) and
 * column-split 64x256 (row) variants, a plain f16 128x64 GEMM, and a chain with both B's
 * [K, N]; and the split-K forms of the cooperative and 64-row tiles of the single GEMMs (bf16,
 * f32 and f16 out, B either way: five). */
#define FG_HOPPER_VARIANTS 24
static const char spec_hopper[] =
    ",\n"
    "    {\n"
    "      \"name\": \"bf16_hopper_layernorm\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"residual\"}, {\"op\": \"layernorm\"}, {\"op\": \"silu\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"f16_hopper_store_layernorm\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f16\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 3} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"residual\"}, {\"op\": \"store\", \"as\": \"pre\"},\n"
    "                    {\"op\": \"layernorm\", \"strategy\": \"split\"}, {\"op\": \"relu\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"f32_hopper_residual_rmsnorm\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"f32\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3} ],\n"
    "      \"epilogue\": [ {\"op\": \"residual\", \"beta\": 0.5}, {\"op\": \"store\", \"as\": \"pre\"},\n"
    "                    {\"op\": \"rmsnorm\"}, {\"op\": \"gelu\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"bf16_hopper_n160_store_layernorm\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 160, \"k\": 64, \"stages\": 4} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"residual\"}, {\"op\": \"store\", \"as\": \"pre\"},\n"
    "                    {\"op\": \"layernorm\", \"strategy\": \"split\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"bf16_hopper_n320_row_layernorm\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\",\n"
    "      \"tiles\": [ {\"m\": 64, \"n\": 320, \"k\": 64, \"stages\": 3, \"schedule\": \"cooperative\"} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"residual\"}, {\"op\": \"store\", \"as\": \"pre\"},\n"
    "                    {\"op\": \"layernorm\"}, {\"op\": \"relu\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"bf16_hopper_rmsnorm_chain\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"rmsnorm\", \"strategy\": \"split\"} ],\n"
    "      \"then\": { \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4, \"schedule\": \"pingpong\"} ],\n"
    "                \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"silu\"} ] }\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"bf16_hopper_plain_layernorm_chain\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4} ],\n"
    "      \"epilogue\": [ {\"op\": \"residual\"}, {\"op\": \"layernorm\", \"affine\": false, \"strategy\": \"split\"} ],\n"
    "      \"then\": { \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4} ], \"epilogue\": [ {\"op\": \"relu\"} ] }\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"bf16_hopper_kn_layernorm\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", \"b_layout\": \"kn\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 3},\n"
    "                 {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 5, \"schedule\": \"pingpong\"},\n"
    "                 {\"m\": 64, \"n\": 256, \"k\": 64, \"stages\": 4, \"schedule\": \"cooperative\"} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"residual\"}, {\"op\": \"layernorm\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"f16_hopper_kn_plain\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f16\", \"b_layout\": \"kn\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 64, \"k\": 64, \"stages\": 4} ], \"epilogue\": []\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"bf16_hopper_kn_chain\", \"arch\": [\"sm_90a\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", \"b_layout\": \"kn\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"layernorm\", \"strategy\": \"split\"} ],\n"
    "      \"then\": { \"b_layout\": \"kn\", \"tiles\": [ {\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 3} ],\n"
    "                \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"relu\"} ] }\n"
    "    }";

/* ---- float64 reference ------------------------------------------------------------------------ */

static double ref_act(fusegen_op_kind kind, double v)
{
    switch (kind) {
    case FUSEGEN_OP_RELU: return v < 0 ? 0 : v;
    case FUSEGEN_OP_GELU: return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    case FUSEGEN_OP_GELU_TANH: return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    case FUSEGEN_OP_SILU: return v / (1.0 + exp(-v));
    default: return v;
    }
}

/* The epilogue ops on one row of n values (acc), in place; stores[i] gets row values of store i.
 * bias, res, gamma, beta: packed value arrays of the case (res: row r of [M, n]). */
static void ref_epilogue(const fusegen_op *ops, int n_ops, double *v, int64_t n, int64_t r, const double *bias,
                         const double *res, const double *gamma, const double *beta, double **stores)
{
    for (int o = 0; o < n_ops; ++o) {
        const fusegen_op *op = &ops[o];
        if (op->kind == FUSEGEN_OP_LAYERNORM || op->kind == FUSEGEN_OP_RMSNORM) {
            double mean = 0, var = 0;
            for (int64_t c = 0; c < n; ++c) mean += v[c];
            mean /= (double)n;
            for (int64_t c = 0; c < n; ++c) {
                double d = op->kind == FUSEGEN_OP_LAYERNORM ? v[c] - mean : v[c];
                var += d * d;
            }
            var /= (double)n;
            double rstd = 1.0 / sqrt(var + op->value);
            for (int64_t c = 0; c < n; ++c) {
                double x = (op->kind == FUSEGEN_OP_LAYERNORM ? v[c] - mean : v[c]) * rstd;
                if (op->affine) {
                    x *= gamma[c];
                    if (op->kind == FUSEGEN_OP_LAYERNORM) x += beta[c];
                }
                v[c] = x;
            }
            continue;
        }
        for (int64_t c = 0; c < n; ++c) {
            switch (op->kind) {
            case FUSEGEN_OP_SCALE: v[c] *= op->value; break;
            case FUSEGEN_OP_BIAS: v[c] += bias[c]; break;
            case FUSEGEN_OP_RESIDUAL: v[c] += op->value * res[r * n + c]; break;
            case FUSEGEN_OP_STORE: stores[op->index][r * n + c] = v[c]; break;
            default: v[c] = ref_act(op->kind, v[c]); break;
            }
        }
    }
}

/* out[M, N] = A[M, K] . B (nk: B is [N, K]; kn: [K, N]); packed value arrays. */
static void ref_gemm(const double *a, const double *b, int nk, int64_t M, int64_t N, int64_t K, double *out)
{
    for (int64_t r = 0; r < M; ++r)
        for (int64_t c = 0; c < N; ++c) {
            double s = 0;
            for (int64_t k = 0; k < K; ++k) s += a[r * K + k] * (nk ? b[c * K + k] : b[k * N + c]);
            out[r * N + c] = s;
        }
}

static double *xcalloc(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static void compare(const char *kname, const char *shape, const char *what, const gpu_tensor *t, const double *ref)
{
    gpu_l2 e;
    char msg[512];
    memset(&e, 0, sizeof e);
    for (int64_t i = 0; i < t->rows * t->cols; ++i) gpu_l2_add(&e, t->val[i], ref[i]);
    double err = gpu_l2_rel(&e);
    double tol = t->dtype == FUSEGEN_DTYPE_F32 ? 1e-5 : 1e-2;
    size_t stray = gpu_tensor_stray_bytes(t);
    snprintf(msg, sizeof msg, "rel L2 %.3g (tol %.0e), %ld non-finite, %zu stray bytes", err, tol, e.nonfinite, stray);
    char what_full[256];
    snprintf(what_full, sizeof what_full, "%s %s %s", kname, shape, what);
    report(err <= tol && stray == 0, what_full, msg);
}

/* Runs kernel k on one shape and checks every output. */
static void run_kernel(const fusegen_kernel *k, const gpu_shape *s, gpu_rng *rng, cudaStream_t stream)
{
    gpu_case c;
    gpu_case_init(&c, k, s, rng);
    fusegen_status st = gpu_case_upload(&c);
    if (st != FUSEGEN_OK) {
        report(0, k->name, fusegen_last_detail());
        gpu_case_free(&c);
        return;
    }
    gpu_case_poison(&c, stream);
    st = gpu_case_run(&c, stream);
    if (st != FUSEGEN_OK) {
        char msg[1200];
        snprintf(msg, sizeof msg, "%s: %s", fusegen_status_name(st), fusegen_last_detail());
        report(0, k->name, msg);
        gpu_case_free(&c);
        return;
    }
    GPU_CHECK(cudaStreamSynchronize(stream));
    gpu_case_download(&c);

    const int64_t M = c.p.m, N = c.p.n, K = c.p.k;
    double *acc = xcalloc((size_t)(M * N));
    double *stores[FUSEGEN_MAX_STORES] = {0};
    for (int i = 0; i < k->n_stores; ++i) stores[i] = xcalloc((size_t)(M * N));
    ref_gemm(c.a.val, c.b.val, k->b_layout == FUSEGEN_LAYOUT_NK, M, N, K, acc);
    for (int64_t r = 0; r < M; ++r)
        ref_epilogue(k->ops, k->n_ops, acc + r * N, N, r, c.bias.val, c.res.val, c.gamma.val, c.beta.val, stores);

    char shape[96];
    snprintf(shape, sizeof shape, "[%s M=%lld N=%lld K=%lld%s]", s->label, (long long)M, (long long)N, (long long)K,
             k->chain ? " +chain" : "");
    if (!k->chain) {
        compare(k->name, shape, "out", &c.out, acc);
    } else {
        /* GEMM1's result is rounded to the out dtype (the hidden tensor), then GEMM2 */
        const int64_t N2 = c.p.n2;
        for (int64_t i = 0; i < M * N; ++i) acc[i] = gpu_round_to(k->out, acc[i]);
        double *acc2 = xcalloc((size_t)(M * N2));
        double *stores2[FUSEGEN_MAX_STORES] = {0};
        for (int i = 0; i < k->n_stores2; ++i) stores2[i] = xcalloc((size_t)(M * N2));
        ref_gemm(acc, c.b2.val, k->b2_layout == FUSEGEN_LAYOUT_NK, M, N2, N, acc2);
        for (int64_t r = 0; r < M; ++r)
            ref_epilogue(k->ops2, k->n_ops2, acc2 + r * N2, N2, r, c.bias2.val, c.res2.val, NULL, NULL, stores2);
        compare(k->name, shape, "out2", &c.out2, acc2);
        for (int i = 0; i < k->n_stores2; ++i) {
            compare(k->name, shape, "store2", &c.store2[i], stores2[i]);
            free(stores2[i]);
        }
        free(acc2);
    }
    for (int i = 0; i < k->n_stores; ++i) {
        compare(k->name, shape, "store", &c.store[i], stores[i]);
        free(stores[i]);
    }
    free(acc);
    gpu_case_free(&c);
}

/* N for a kernel: within its max_n, a tail past its tile when it can. */
static void shapes_for(const fusegen_kernel *k, gpu_shape out[2])
{
    int64_t n_full = k->max_n > 0 ? k->max_n : 3 * (int64_t)k->tile_n + 40;
    int64_t n_small = k->max_n > 0 ? (k->max_n > 64 ? k->max_n - 40 : k->max_n) : (int64_t)k->tile_n / 2 + 8;
    out[0] = (gpu_shape){"tails", 203, n_full, 264, 72, 0};
    out[1] = (gpu_shape){"padded", 64, n_small, 128, 136, 1};
}

/* Equal bytes (elements, padding and guard) of two downloaded tensors of one shape. */
static int same_bytes(const gpu_tensor *x, const gpu_tensor *y)
{
    return x->bytes == y->bytes && (x->bytes == 0 || memcmp(x->host, y->host, x->bytes) == 0);
}

/* One twin pair on one shape: the same inputs (the same random stream) through each. */
static void run_twins(const fusegen_kernel *jit_k, const fusegen_kernel *aot_k, const gpu_shape *s, gpu_rng *rng,
                      cudaStream_t stream)
{
    gpu_rng again = *rng;
    gpu_case cj, ca;
    gpu_case_init(&cj, jit_k, s, rng);
    gpu_case_init(&ca, aot_k, s, &again);
    char what[200];
    snprintf(what, sizeof what, "twins %s [%s M=%lld N=%lld K=%lld]", jit_k->name, s->label, (long long)s->m,
             (long long)s->n, (long long)s->k);
    fusegen_status sj = gpu_case_upload(&cj), sa = gpu_case_upload(&ca);
    if (sj == FUSEGEN_OK && sa == FUSEGEN_OK) {
        gpu_case_poison(&cj, stream);
        gpu_case_poison(&ca, stream);
        sj = gpu_case_run(&cj, stream);
        sa = gpu_case_run(&ca, stream);
    }
    if (sj != FUSEGEN_OK || sa != FUSEGEN_OK) {
        char msg[1200];
        snprintf(msg, sizeof msg, "JIT %s, AOT %s: %s", fusegen_status_name(sj), fusegen_status_name(sa),
                 fusegen_last_detail());
        report(0, what, msg);
    } else {
        GPU_CHECK(cudaStreamSynchronize(stream));
        gpu_case_download(&cj);
        gpu_case_download(&ca);
        int same = same_bytes(&cj.out, &ca.out) && !gpu_tensor_all_poison(&cj.out);
        for (int i = 0; i < jit_k->n_stores; ++i) same = same && same_bytes(&cj.store[i], &ca.store[i]);
        report(same, what, same ? NULL : "the JIT's and the library's outputs differ");
    }
    gpu_case_free(&cj);
    gpu_case_free(&ca);
}

/* The twins spec: every variant it plans has a twin of the same name and epilogue in the default
 * library, and each pair agrees bit for bit (a shape with tails, and a decode-sized one whose
 * split-K variants run several slices). */
static void twins(const char *cache_dir, gpu_rng *rng, cudaStream_t stream)
{
    fusegen_jit *jit = NULL;
    fusegen_status st = fusegen_jit_create(spec_twins, strlen(spec_twins), "jit_twin.json", &jit);
    report(st == FUSEGEN_OK, "twins: create", st == FUSEGEN_OK ? NULL : fusegen_last_detail());
    if (st != FUSEGEN_OK) return;
    fusegen_jit_options opts;
    memset(&opts, 0, sizeof opts);
    opts.cache_dir = cache_dir;
    st = fusegen_jit_compile(jit, &opts, NULL);
    report(st == FUSEGEN_OK, "twins: compile", st == FUSEGEN_OK ? NULL : fusegen_last_detail());
    const fusegen_library *lib = st == FUSEGEN_OK ? fusegen_jit_library(jit) : NULL;
    size_t paired = 0;
    for (size_t i = 0; lib && i < lib->n_kernels; ++i) {
        const fusegen_kernel *k = &lib->kernels[i], *twin = NULL;
        for (size_t j = 0; j < fusegen_default_library.n_kernels && !twin; ++j) {
            const fusegen_kernel *d = &fusegen_default_library.kernels[j];
            if (strcmp(d->name, k->name) == 0 && strcmp(d->epilogue, k->epilogue) == 0) twin = d;
        }
        if (!twin) {
            report(0, k->name, "twins: no variant of this name and epilogue in the default library");
            continue;
        }
        ++paired;
        int64_t n = k->max_n > 0 ? k->max_n : 512;
        gpu_shape shapes[2] = {{"tails", 203, k->max_n > 0 ? k->max_n : 3 * (int64_t)k->tile_n + 40, 264, 0, 0},
                               {"decode", 64, n, 2048, 0, 0}};
        for (int s = 0; s < 2; ++s) run_twins(k, twin, &shapes[s], rng, stream);
    }
    report(paired == FG_TWIN_VARIANTS, "twins: every planned variant has its twin", NULL);
    fusegen_jit_destroy(jit);
}

/* A bad call launches nothing: a misaligned output pointer. */
static void bad_call(const fusegen_kernel *k, gpu_rng *rng, cudaStream_t stream)
{
    gpu_shape s = {"bad call", 64, 64, 64, 64, 0};
    gpu_case c;
    gpu_case_init(&c, k, &s, rng);
    if (gpu_case_upload(&c) != FUSEGEN_OK) {
        report(0, "bad call setup", fusegen_last_detail());
        gpu_case_free(&c);
        return;
    }
    gpu_case_poison(&c, stream);
    fusegen_args a = c.args;
    a.out = (char *)a.out + 2;
    fusegen_status st = fusegen_run(k, &c.p, &a, c.ws, c.ws_alloc, stream);
    GPU_CHECK(cudaStreamSynchronize(stream));
    gpu_case_download(&c);
    report(st == FUSEGEN_ERR_MISALIGNED && gpu_tensor_all_poison(&c.out), "a misaligned output launches nothing",
           fusegen_last_detail());
    gpu_case_free(&c);
}

int main(int argc, char **argv)
{
    if (!gpu_have_device()) return GPU_SKIP_EXIT;
    const char *cache_dir = argc > 1 ? argv[1] : NULL;
    int dev = 0, major = 0, minor = 0;
    GPU_CHECK(cudaGetDevice(&dev));
    GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    GPU_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    uint64_t seed = gpu_test_seed();
    printf("device sm_%d%d, seed %llu (FUSEGEN_TEST_SEED repeats it)\n", major, minor, (unsigned long long)seed);
    gpu_rng rng;
    gpu_rng_seed(&rng, seed);

    static char spec[sizeof spec_portable + sizeof spec_hopper];
    snprintf(spec, sizeof spec, spec_portable, major == 9 && minor == 0 ? spec_hopper : "");

    fusegen_jit *jit = NULL;
    fusegen_status st = fusegen_jit_create(spec, strlen(spec), "jit_gpu.json", &jit);
    if (st != FUSEGEN_OK) {
        fprintf(stderr, "fusegen_jit_create: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        return 1;
    }
    fusegen_jit_options opts;
    memset(&opts, 0, sizeof opts);
    opts.cache_dir = cache_dir;   /* arch NULL: the current device's */
    fusegen_jit_cache_result cr;
    st = fusegen_jit_compile(jit, &opts, &cr);
    if (st == FUSEGEN_ERR_COMPILE && strstr(fusegen_last_detail(), "not available")) {
        printf("NVRTC is not available: skipping (%s)\n", fusegen_last_detail());
        fusegen_jit_destroy(jit);
        return GPU_SKIP_EXIT;
    }
    if (st != FUSEGEN_OK) {
        fprintf(stderr, "fusegen_jit_compile: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        fusegen_jit_destroy(jit);
        return 1;
    }
    const fusegen_library *lib = fusegen_jit_library(jit);
    printf("compiled for %s (cache: %s, entry %s), %zu kernels\n", fusegen_jit_arch(jit),
           cr == FUSEGEN_JIT_CACHE_HIT ? "hit" : cr == FUSEGEN_JIT_CACHE_MISS ? "miss" : cr == FUSEGEN_JIT_CACHE_CORRUPT ? "corrupt" : "off",
           fusegen_jit_cache_entry(jit) ? fusegen_jit_cache_entry(jit) : "-", lib->n_kernels);

    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    size_t hopper = 0;
    for (size_t i = 0; i < lib->n_kernels; ++i) {
        const fusegen_kernel *k = &lib->kernels[i];
        gpu_shape shapes[2];
        hopper += k->threads == 384;
        shapes_for(k, shapes);
        for (int s = 0; s < 2; ++s) run_kernel(k, &shapes[s], &rng, stream);
    }
    if (major == 9 && minor == 0) report(hopper == FG_HOPPER_VARIANTS, "every Hopper variant was run", NULL);
    bad_call(&lib->kernels[0], &rng, stream);

    /* the opt-in fallback (it compiles with the default options: the cache folder from the
     * environment, pointed at the test's) */
    if (cache_dir) setenv("FUSEGEN_CACHE_DIR", cache_dir, 1);
    fusegen_jit *fallback = NULL;
    st = fusegen_jit_create(spec, strlen(spec), "jit_gpu.json", &fallback);
    report(st == FUSEGEN_OK, "fallback: create", fusegen_last_detail());
    if (fallback) {
        const fusegen_kernel *k = NULL;
        fusegen_problem p;
        /* a problem the default library has a kernel for: no compile */
        const fusegen_kernel *aot = &fusegen_default_library.kernels[0];
        gpu_shape s = {"aot", 128, aot->max_n > 0 ? aot->max_n : 256, 256, 256, 0};
        gpu_make_problem(aot, &s, &p);
        st = fusegen_select_or_jit(&fusegen_default_library, fallback, &p, &k);
        int in_default = k && k >= fusegen_default_library.kernels &&
                         k < fusegen_default_library.kernels + fusegen_default_library.n_kernels;
        report(st == FUSEGEN_OK && in_default && fusegen_jit_library(fallback) == NULL,
               "fallback: the default library's kernel when one fits, nothing compiled", fusegen_last_detail());
        /* f16 bias + relu: only the JIT has it */
        memset(&p, 0, sizeof p);
        p.m = 150; p.n = 96; p.k = 128;
        p.a = p.b = p.out = FUSEGEN_DTYPE_F16;
        p.b_layout = FUSEGEN_LAYOUT_NK;
        p.epilogue = "bias+relu";
        st = fusegen_select_or_jit(&fusegen_default_library, fallback, &p, &k);
        const fusegen_library *flib = fusegen_jit_library(fallback);
        int in_jit = k && flib && k >= flib->kernels && k < flib->kernels + flib->n_kernels;
        report(st == FUSEGEN_OK && in_jit, "fallback: the JIT's kernel when the default library has none",
               fusegen_last_detail());
        if (in_jit) {
            gpu_shape fs = {"fallback", 150, 96, 128, 0, 0};
            run_kernel(k, &fs, &rng, stream);
        }
        fusegen_jit_destroy(fallback);
    }

    if (major == 9 && minor == 0) twins(cache_dir, &rng, stream);

    GPU_CHECK(cudaStreamDestroy(stream));
    fusegen_jit_destroy(jit);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
