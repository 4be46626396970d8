/* test_kernels.c - every kernel of the default library against a float64 CPU reference.
 *
 * For each kernel entry of fusegen_default_library and several shapes (odd M, N and K tails,
 * a single row, one tile plus a tail, padded leading dimensions, and for norm kernels rows with
 * a large mean and constant rows) the test builds random inputs (seed printed; set
 * FUSEGEN_TEST_SEED to repeat a run), rounds them to their dtypes on the host, runs the kernel
 * through fusegen_run on poisoned outputs and workspace, and compares every output (the main
 * one, each store, and for chains GEMM2's output) with a reference that follows the kernel's
 * ops[] list in double precision. It also checks the dispatch (fusegen_select, fusegen_query),
 * that a bad call launches nothing, and that a split and a row kernel are deterministic.
 *
 * Exit status: 0 when every check passed, 1 otherwise, 77 without a CUDA device. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fusegen.h"
/* The library under test: the default one, or another (FUSEGEN_TEST_LIBRARY_HEADER, a quoted
 * header, and FUSEGEN_TEST_LIBRARY, its fusegen_library; tests/gpu/CMakeLists.txt). */
#ifdef FUSEGEN_TEST_LIBRARY_HEADER
#include FUSEGEN_TEST_LIBRARY_HEADER
#else
#include "fusegen_default.h"
#define FUSEGEN_TEST_LIBRARY fusegen_default_library
#endif
#include "gpu_util.h"

/* Tolerances on ||out - ref|| / ||ref||, the reference being exact (float64) on the rounded
 * inputs.
 * 16-bit outputs: the final rounding alone gives about 2^-9 relative error per element; chains
 * add the rounding of GEMM1's result, which GEMM2 reads in the out dtype. 1e-2 leaves room for
 * f32 accumulation and f32 statistics while catching any wrong op, constant or index.
 * f32 outputs: the inputs are 16-bit but exact in f32, so the only error is f32 arithmetic:
 * the accumulation over K (here up to 1000 terms, summed in an order the tiling chooses, about
 * sqrt(K) * 2^-24 relative to the terms' magnitude) and the f32 epilogue functions (tanh, erf,
 * exp), measured at about 1e-6 on an H200; the bound is the design's 1e-5, and a rounding of
 * the result to a 16-bit type (about 1e-3) fails it by two orders of magnitude. */
#define TOL_16BIT 1e-2
#define TOL_F32 1e-5

#define SQRT1_2 0.70710678118654752440
#define SQRT_2_OVER_PI 0.79788456080286535588

static double tol_for(fusegen_dtype t)
{
    return t == FUSEGEN_DTYPE_F32 ? TOL_F32 : TOL_16BIT;
}

/* ---- reporting ---------------------------------------------------------------------------- */

static int g_pass, g_fail, g_skip;
static double g_worst[4];        /* by fusegen_dtype; -1 when nothing of that dtype was checked */
static int g_dev_sms;   /* multiprocessors: the "many-tiles" case gives each CTA several tiles */
static int g_dev_sm;

static void report(int ok, const char *kname, const char *where, const char *check, double err,
                   double tol, int dtype, const char *note)
{
    printf("%s  %-44s %-40s %-22s err=%.3e tol=%.0e%s%s\n", ok ? "PASS" : "FAIL", kname, where,
           check, err, tol, note && *note ? "  " : "", note ? note : "");
    if (ok)
        g_pass++;
    else
        g_fail++;
    if (dtype >= 1 && dtype <= 3 && !isnan(g_worst[dtype]) && (isnan(err) || err > g_worst[dtype]))
        g_worst[dtype] = err;   /* NaN and inf count as worst, and stay */
    fflush(stdout);
}

static void report_plain(int ok, const char *kname, const char *where, const char *check,
                         const char *note)
{
    printf("%s  %-44s %-40s %-22s %s\n", ok ? "PASS" : "FAIL", kname, where, check,
           note ? note : "");
    if (ok)
        g_pass++;
    else
        g_fail++;
    fflush(stdout);
}

/* ---- the float64 reference ------------------------------------------------------------------ */

typedef struct ref_gemm {
    int64_t m, n, k;
    int64_t n_out;               /* out's (and the residual's, the stores') columns: n, or n / 2 */
    const double *a;             /* [m, k] */
    const double *bt;            /* [n, k]: B in nk order whatever the layout on the device */
    const fusegen_op *ops;
    int n_ops;
    const double *bias, *res;    /* [n], [m, n] */
    const double *gamma, *beta;  /* [n] */
    double *out;                 /* [m, n] */
    double *store[FUSEGEN_MAX_STORES];
} ref_gemm;

typedef struct ref_worker {
    ref_gemm *g;
    int64_t first, step;         /* blocks of REF_ROWS rows */
} ref_worker;

#define REF_ROWS 4
#define REF_MAX_THREADS 64

static double dot(const double *x, const double *y, int64_t k)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= k; i += 4) {
        s0 += x[i] * y[i];
        s1 += x[i + 1] * y[i + 1];
        s2 += x[i + 2] * y[i + 2];
        s3 += x[i + 3] * y[i + 3];
    }
    for (; i < k; i++)
        s0 += x[i] * y[i];
    return (s0 + s1) + (s2 + s3);
}

/* Applies the ops, in order, to row r (v holds the accumulator values of the row; after a
 * gated activation its first n / 2 hold the row). */
static void ref_epilogue_row(const ref_gemm *g, int64_t r, double *v)
{
    int64_t N = g->n;
    for (int o = 0; o < g->n_ops; o++) {
        const fusegen_op *op = &g->ops[o];
        switch (op->kind) {
        case FUSEGEN_OP_SCALE:
            for (int64_t j = 0; j < N; j++)
                v[j] *= op->value;
            break;
        case FUSEGEN_OP_BIAS:
            for (int64_t j = 0; j < N; j++)
                v[j] += g->bias[j];
            break;
        case FUSEGEN_OP_RESIDUAL:
            for (int64_t j = 0; j < N; j++)
                v[j] += op->value * g->res[r * N + j];
            break;
        case FUSEGEN_OP_RELU:
            for (int64_t j = 0; j < N; j++)
                v[j] = v[j] > 0.0 ? v[j] : 0.0;
            break;
        case FUSEGEN_OP_GELU:
            for (int64_t j = 0; j < N; j++)
                v[j] = 0.5 * v[j] * (1.0 + erf(v[j] * SQRT1_2));
            break;
        case FUSEGEN_OP_GELU_TANH:
            for (int64_t j = 0; j < N; j++) {
                double x = v[j];
                v[j] = 0.5 * x * (1.0 + tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
            }
            break;
        case FUSEGEN_OP_SILU:
            for (int64_t j = 0; j < N; j++)
                v[j] = v[j] / (1.0 + exp(-v[j]));
            break;
        case FUSEGEN_OP_STORE:
            /* the index was validated against n_stores before any reference ran */
            if (g->store[op->index])
                memcpy(g->store[op->index] + r * N, v, (size_t)N * sizeof(double));
            break;
        case FUSEGEN_OP_LAYERNORM: {
            double mean = 0.0, var = 0.0;
            for (int64_t j = 0; j < N; j++)
                mean += v[j];
            mean /= (double)N;
            for (int64_t j = 0; j < N; j++) {
                double d = v[j] - mean;
                var += d * d;
            }
            var /= (double)N;
            double rstd = 1.0 / sqrt(var + op->value);
            for (int64_t j = 0; j < N; j++) {
                v[j] = (v[j] - mean) * rstd;
                if (op->affine && g->gamma)
                    v[j] *= g->gamma[j];
                if (op->affine && g->beta)
                    v[j] += g->beta[j];
            }
            break;
        }
        case FUSEGEN_OP_SWIGLU:
        case FUSEGEN_OP_GEGLU:
            /* output j: gate column 16 (j / 8) + j % 8, up column 8 past it (fusegen_pack_glu_weight);
             * both lie at or past j, so the row compacts in place */
            for (int64_t j = 0; j < N / 2; j++) {
                const double gate = v[16 * (j / 8) + j % 8], up = v[16 * (j / 8) + 8 + j % 8];
                const double act = op->kind == FUSEGEN_OP_SWIGLU ? gate / (1.0 + exp(-gate))
                                                                 : 0.5 * gate * (1.0 + erf(gate * SQRT1_2));
                v[j] = act * up;
            }
            N /= 2;
            break;
        case FUSEGEN_OP_A_RMSNORM: {
            /* the norm of A's row r, applied as a scale (B holds gamma) */
            double ms = 0.0;
            for (int64_t j = 0; j < g->k; j++)
                ms += g->a[r * g->k + j] * g->a[r * g->k + j];
            ms = g->k > 0 ? ms / (double)g->k : 0.0;
            const double rstd = 1.0 / sqrt(ms + op->value);
            for (int64_t j = 0; j < N; j++)
                v[j] *= rstd;
            break;
        }
        case FUSEGEN_OP_RMSNORM: {
            double ms = 0.0;
            for (int64_t j = 0; j < N; j++)
                ms += v[j] * v[j];
            ms /= (double)N;
            double rstd = 1.0 / sqrt(ms + op->value);
            for (int64_t j = 0; j < N; j++) {
                v[j] *= rstd;
                if (op->affine && g->gamma)
                    v[j] *= g->gamma[j];
            }
            break;
        }
        }
    }
}

static double *xcalloc(size_t n);

static void *ref_worker_main(void *arg)
{
    const ref_worker *w = arg;
    const ref_gemm *g = w->g;
    const int64_t M = g->m, N = g->n, K = g->k, NO = g->n_out;
    double *rows = xcalloc((size_t)REF_ROWS * (size_t)N);   /* the block's rows, N columns each */
    for (int64_t blk = w->first; blk * REF_ROWS < M; blk += w->step) {
        int64_t r0 = blk * REF_ROWS;
        int64_t nr = M - r0 < REF_ROWS ? M - r0 : REF_ROWS;
        for (int64_t j = 0; j < N; j++) {
            const double *y = g->bt + j * K;   /* stays in L1 for the rows of the block */
            for (int64_t i = 0; i < nr; i++)
                rows[i * N + j] = dot(g->a + (r0 + i) * K, y, K);
        }
        for (int64_t i = 0; i < nr; i++) {
            ref_epilogue_row(g, r0 + i, rows + i * N);
            memcpy(g->out + (r0 + i) * NO, rows + i * N, (size_t)NO * sizeof(double));
        }
    }
    free(rows);
    return NULL;
}

static int ref_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > REF_MAX_THREADS)
        n = REF_MAX_THREADS;
    return (int)n;
}

static void ref_run(ref_gemm *g)
{
    int64_t blocks = (g->m + REF_ROWS - 1) / REF_ROWS;
    int nt = ref_threads();
    if (nt > blocks)
        nt = (int)blocks;
    pthread_t th[REF_MAX_THREADS];
    ref_worker w[REF_MAX_THREADS];
    int started[REF_MAX_THREADS];
    for (int t = 0; t < nt; t++) {
        w[t].g = g;
        w[t].first = t;
        w[t].step = nt;
        started[t] = nt > 1 && pthread_create(&th[t], NULL, ref_worker_main, &w[t]) == 0;
    }
    for (int t = 0; t < nt; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            ref_worker_main(&w[t]);   /* rows are disjoint; running it here is equivalent */
    }
}

static double *xcalloc(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof(double));
    if (!p) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    return p;
}

/* [rows, cols] -> [cols, rows] */
static double *transpose(const double *x, int64_t rows, int64_t cols)
{
    double *t = xcalloc((size_t)rows * (size_t)cols);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            t[c * rows + r] = x[r * cols + c];
    return t;
}

/* The reference outputs of one case. */
typedef struct ref_result {
    double *out, *store[FUSEGEN_MAX_STORES];
    double *out2, *store2[FUSEGEN_MAX_STORES];
} ref_result;

static void ref_compute(const gpu_case *c, ref_result *rr)
{
    const fusegen_kernel *k = c->kern;
    const int64_t M = c->p.m, N = c->p.n, K = c->p.k;
    memset(rr, 0, sizeof *rr);

    double *bt_owned = NULL;
    const double *bt = c->b.val;
    if (k->b_layout == FUSEGEN_LAYOUT_KN)
        bt = bt_owned = transpose(c->b.val, K, N);
    const int64_t NO = gpu_out_cols(k, N);
    rr->out = xcalloc((size_t)M * (size_t)NO);
    for (int i = 0; i < k->n_stores; i++)
        rr->store[i] = xcalloc((size_t)M * (size_t)NO);
    ref_gemm g1 = {
        .m = M, .n = N, .k = K, .n_out = NO, .a = c->a.val, .bt = bt, .ops = k->ops, .n_ops = k->n_ops,
        .bias = c->bias.val, .res = c->res.val, .gamma = c->gamma.val, .beta = c->beta.val,
        .out = rr->out,
    };
    memcpy(g1.store, rr->store, sizeof g1.store);
    ref_run(&g1);
    free(bt_owned);

    if (!k->chain)
        return;
    const int64_t N2 = c->p.n2;
    /* GEMM2 reads GEMM1's result in the out dtype. */
    double *h = xcalloc((size_t)M * (size_t)N);
    for (size_t i = 0; i < (size_t)M * (size_t)N; i++)
        h[i] = gpu_round_to(k->out, rr->out[i]);
    double *bt2_owned = NULL;
    const double *bt2 = c->b2.val;
    if (k->b2_layout == FUSEGEN_LAYOUT_KN)
        bt2 = bt2_owned = transpose(c->b2.val, N, N2);
    rr->out2 = xcalloc((size_t)M * (size_t)N2);
    for (int i = 0; i < k->n_stores2; i++)
        rr->store2[i] = xcalloc((size_t)M * (size_t)N2);
    ref_gemm g2 = {
        .m = M, .n = N2, .k = N, .n_out = N2, .a = h, .bt = bt2, .ops = k->ops2, .n_ops = k->n_ops2,
        .bias = c->bias2.val, .res = c->res2.val, .gamma = NULL, .beta = NULL,
        .out = rr->out2,
    };
    memcpy(g2.store, rr->store2, sizeof g2.store);
    ref_run(&g2);
    free(bt2_owned);
    free(h);
}

static void ref_free(ref_result *rr)
{
    free(rr->out);
    free(rr->out2);
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++) {
        free(rr->store[i]);
        free(rr->store2[i]);
    }
    memset(rr, 0, sizeof *rr);
}

/* ---- the dispatch-table entry itself --------------------------------------------------------- */

static int is_norm(fusegen_op_kind kind)
{
    return kind == FUSEGEN_OP_LAYERNORM || kind == FUSEGEN_OP_RMSNORM;
}

static int has_norm(const fusegen_op *ops, int n)
{
    for (int i = 0; i < n; i++)
        if (is_norm(ops[i].kind))
            return 1;
    return 0;
}

/* Checks that an ops[] list can be reproduced and agrees with the entry's flags. Writes the
 * first problem into why and returns 0, or returns 1. */
static int check_ops(const fusegen_op *ops, int n_ops, int n_stores, int uses_bias,
                     int uses_residual, int second, char *why, size_t len)
{
    int n_bias = 0, n_res = 0, n_norm = 0, seen_store[FUSEGEN_MAX_STORES] = {0}, n_store = 0;
    if (n_ops < 0 || (n_ops > 0 && !ops)) {
        snprintf(why, len, "n_ops %d with ops %p", n_ops, (const void *)ops);
        return 0;
    }
    if (n_stores < 0 || n_stores > FUSEGEN_MAX_STORES) {
        snprintf(why, len, "n_stores %d out of range", n_stores);
        return 0;
    }
    for (int i = 0; i < n_ops; i++) {
        const fusegen_op *op = &ops[i];
        if ((int)op->kind < (int)FUSEGEN_OP_SCALE || (int)op->kind > (int)FUSEGEN_OP_GEGLU) {
            snprintf(why, len, "op %d has unknown kind %d", i, (int)op->kind);
            return 0;
        }
        if (op->kind == FUSEGEN_OP_A_RMSNORM && (i != 0 || second || !(op->value > 0.0))) {
            snprintf(why, len, "op %d: a_rmsnorm not first of GEMM1's ops, or eps %g not positive", i, op->value);
            return 0;
        }
        n_bias += op->kind == FUSEGEN_OP_BIAS;
        n_res += op->kind == FUSEGEN_OP_RESIDUAL;
        n_norm += is_norm(op->kind);
        if (op->kind == FUSEGEN_OP_STORE) {
            if (op->index < 0 || op->index >= n_stores || seen_store[op->index]) {
                snprintf(why, len, "op %d stores to index %d (n_stores %d)", i, op->index, n_stores);
                return 0;
            }
            seen_store[op->index] = 1;
            n_store++;
        }
        if (is_norm(op->kind) && !(op->value > 0.0)) {
            snprintf(why, len, "op %d: norm eps %g is not positive", i, op->value);
            return 0;
        }
        if (is_norm(op->kind) && op->affine && second) {
            snprintf(why, len, "op %d: an affine norm in GEMM2 has no gamma/beta arguments", i);
            return 0;
        }
    }
    if (n_store != n_stores) {
        snprintf(why, len, "%d store ops but n_stores %d", n_store, n_stores);
        return 0;
    }
    if ((n_bias > 0) != (uses_bias != 0) || (n_res > 0) != (uses_residual != 0)) {
        snprintf(why, len, "bias/residual ops (%d/%d) disagree with uses flags (%d/%d)", n_bias,
                 n_res, uses_bias, uses_residual);
        return 0;
    }
    if (n_norm > 1) {
        snprintf(why, len, "%d norm ops", n_norm);
        return 0;
    }
    return 1;
}

static int check_entry(const fusegen_kernel *k, char *why, size_t len)
{
    if (!k->name || !k->epilogue || (!k->functions && !k->launch_jit)) {
        snprintf(why, len, "name, epilogue or launch is NULL");
        return 0;
    }
    if (k->align_elems < 1 || k->tile_m < 1 || k->tile_n < 1 || k->tile_k < 1) {
        snprintf(why, len, "align_elems %d, tile %dx%dx%d", k->align_elems, k->tile_m, k->tile_n,
                 k->tile_k);
        return 0;
    }
    if (!check_ops(k->ops, k->n_ops, k->n_stores, k->uses_bias, k->uses_residual, 0, why, len))
        return 0;
    for (int i = 0; i < k->n_ops; i++) {
        const fusegen_op *op = &k->ops[i];
        if (!is_norm(op->kind))
            continue;
        fusegen_norm want = op->kind == FUSEGEN_OP_LAYERNORM ? FUSEGEN_NORM_LAYERNORM
                                                             : FUSEGEN_NORM_RMSNORM;
        if (k->norm != want) {
            snprintf(why, len, "ops has a %s but norm is %d",
                     want == FUSEGEN_NORM_LAYERNORM ? "layernorm" : "rmsnorm", (int)k->norm);
            return 0;
        }
        /* a split-K variant's reduce sees whole rows: strategy NONE */
        if (k->split_k ? k->strategy != FUSEGEN_STRATEGY_NONE
                       : k->strategy != FUSEGEN_STRATEGY_ROW && k->strategy != FUSEGEN_STRATEGY_SPLIT &&
                             k->strategy != FUSEGEN_STRATEGY_CLUSTER) {
            snprintf(why, len, "norm kernel with strategy %d (split_k %d)", (int)k->strategy, k->split_k);
            return 0;
        }
        if (op->affine && !k->uses_gamma) {
            snprintf(why, len, "affine norm without uses_gamma");
            return 0;
        }
        if (op->affine && op->kind == FUSEGEN_OP_LAYERNORM && !k->uses_beta) {
            snprintf(why, len, "affine layernorm without uses_beta");
            return 0;
        }
    }
    if (k->chain) {
        if (!k->epilogue2) {
            snprintf(why, len, "chain without epilogue2");
            return 0;
        }
        if (!check_ops(k->ops2, k->n_ops2, k->n_stores2, k->uses_bias2, k->uses_residual2, 1,
                       why, len))
            return 0;
    }
    return 1;
}

/* ---- shapes ------------------------------------------------------------------------------- */

#define MAX_SHAPES 10   /* kernel_shapes adds at most 9 */

typedef struct test_shape {
    gpu_shape s;
    int special;        /* large-mean and constant rows */
} test_shape;

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static int64_t round_down(int64_t x, int64_t to)
{
    return x / to * to;
}

/* Row and cluster kernels take N up to max_n: they are tested at max_n and below. */
static int is_row(const fusegen_kernel *k)
{
    return (k->strategy == FUSEGEN_STRATEGY_ROW || k->strategy == FUSEGEN_STRATEGY_CLUSTER) && k->max_n > 0;
}

/* The largest N a row kernel is tested at (max_n itself unless it is huge). */
static int64_t row_n(const fusegen_kernel *k, int64_t al)
{
    int64_t n = k->max_n < 8192 ? k->max_n : 8192;
    n = round_down(n, al);
    return n > 0 ? n : al;
}

/* M for at least twice as many tiles as the device has SMs at this N, plus a last row tile of 5
 * rows: a persistent CTA works through several tiles, the last one a tail. */
static int64_t many_tiles_m(const fusegen_kernel *k, int64_t n)
{
    int64_t tiles_n = (n + k->tile_n - 1) / k->tile_n;
    int64_t tiles_m = (2 * (int64_t)g_dev_sms + tiles_n - 1) / tiles_n;
    return tiles_m * k->tile_m + 5;
}

static int kernel_shapes(const fusegen_kernel *k, test_shape *out, int cap)
{
    /* (a gated activation's N: whole blocks of 8 gate and 8 up columns) */
    const int64_t al = gpu_out_cols(k, 2) == 1 ? 16 : k->align_elems > 0 ? k->align_elems : 1;
    const int row = is_row(k);
    const int64_t nmax = row ? row_n(k, al) : 0;
    const int64_t n2_big = round_up(520, al), n2 = round_up(264, al);
    int n = 0;
#define ADD(label_, m_, n_, k_, n2_, padded_, special_)                                            \
    do {                                                                                           \
        if (n < cap) {                                                                             \
            out[n].s.label = (label_);                                                             \
            out[n].s.m = (m_);                                                                     \
            out[n].s.n = (n_);                                                                     \
            out[n].s.k = (k_);                                                                     \
            out[n].s.n2 = (n2_);                                                                   \
            out[n].s.padded = (padded_);                                                           \
            out[n].special = (special_);                                                           \
            n++;                                                                                   \
        }                                                                                          \
    } while (0)

    const int64_t K = round_up(1000, al);
    if (row) {
        ADD("big", 1003, nmax, K, n2_big, 0, 0);
        if (nmax - 8 >= al)
            ADD("big-8", 1003, round_down(nmax - 8, al), K, n2, 0, 0);
    } else {
        ADD("big", 1003, round_up(1000, al), K, n2_big, 0, 0);
    }
    ADD("small", 1, round_up(8, al), round_up(8, al), n2, 0, 0);
    {
        int64_t tn = round_up(k->tile_n + 8, al);
        if (row && tn > nmax)
            tn = nmax;
        ADD("tile+1", k->tile_m + 1, tn, round_up(k->tile_k + 8, al), n2, 0, 0);
    }
    {
        int64_t pn = round_up(264, al);
        if (row)
            pn = nmax - 16 >= al ? round_down(nmax - 16, al) : nmax;
        ADD("padded-ld", 2 * (int64_t)k->tile_m + 3, pn, round_up(136, al), round_up(136, al), 1, 0);
    }
    if (has_norm(k->ops, k->n_ops))
        ADD("special-rows", 517, row ? nmax : round_up(1000, al), K, n2_big, 0, 1);
    /* split K: few rows and a long K, so that the device's SMs take several slices (unequal
     * ones: 33 k tiles of 64); large-mean and constant rows through the reduce kernel's norm */
    if (k->split_k) {
        ADD("split-k", 37, round_up(1000, al), round_up(2056, al), n2, 0, 0);
        if (has_norm(k->ops, k->n_ops))
            ADD("split-k-special", 45, round_up(1000, al), round_up(2056, al), n2, 0, 1);
    }
    /* a cluster of 9 CTAs, the first size past the portable 8 (a non-portable cluster) */
    if (k->strategy == FUSEGEN_STRATEGY_CLUSTER && k->max_n > 8 * (int64_t)k->tile_n)
        ADD("cluster-9", 300, round_up(8 * (int64_t)k->tile_n + 8, al), round_up(200, al), n2, 0, 0);
    {
        /* twice as many tiles as the device has SMs, so a persistent CTA (Hopper family)
         * works through several tiles and reuses its stages and staged inputs; short K keeps
         * the host reference cheap */
        int64_t mn = row ? nmax : round_up(1032, al);
        ADD("many-tiles", many_tiles_m(k, mn), mn, round_up(72, al), n2, 0, 0);
        /* The shapes above have rows of A that start off 128-byte boundaries (K = 1000,
         * 72, ...), which TMA reads more slowly than aligned rows (decisions.md, "Unaligned
         * rows"): this one aligns them (K = 128, N = 1024), with several tiles a CTA and a last
         * row tile of 5 rows (the tail map) */
        int64_t an = row ? nmax : 1024;
        ADD("aligned", many_tiles_m(k, an), an, 128, n2, 0, 0);
    }
#undef ADD
    return n;
}

static void describe(const fusegen_kernel *k, const gpu_shape *s, char *buf, size_t len)
{
    if (k->chain)
        snprintf(buf, len, "%s M=%lld N=%lld K=%lld N2=%lld", s->label, (long long)s->m,
                 (long long)s->n, (long long)s->k, (long long)s->n2);
    else
        snprintf(buf, len, "%s M=%lld N=%lld K=%lld", s->label, (long long)s->m,
                 (long long)s->n, (long long)s->k);
}

/* ---- comparisons ---------------------------------------------------------------------------- */

static void check_output(const char *kname, const char *where, const char *what,
                         const gpu_tensor *t, const double *ref)
{
    gpu_l2 e = {0};
    size_t n = (size_t)t->rows * (size_t)t->cols;
    for (size_t i = 0; i < n; i++)
        gpu_l2_add(&e, t->val[i], ref[i]);
    long unwritten = gpu_tensor_poison_elems(t);
    size_t stray = gpu_tensor_stray_bytes(t);
    double rel = gpu_l2_rel(&e), tol = tol_for(t->dtype);
    char note[160] = "";
    size_t used = 0;
    if (unwritten)
        used += (size_t)snprintf(note + used, sizeof note - used, "%ld elements not written; ",
                                 unwritten);
    if (e.nonfinite)
        used += (size_t)snprintf(note + used, sizeof note - used, "%ld not finite; ", e.nonfinite);
    if (stray && used < sizeof note)
        snprintf(note + used, sizeof note - used, "%zu bytes written out of bounds", stray);
    int ok = e.nonfinite == 0 && stray == 0 && rel <= tol;
    report(ok, kname, where, what, rel, tol, (int)t->dtype, note);
}

/* Relative L2 over a few rows. */
static void check_rows_rel(const char *kname, const char *where, const char *what,
                           const gpu_tensor *t, const double *ref, const int64_t *rows, int nrows)
{
    gpu_l2 e = {0};
    for (int i = 0; i < nrows; i++)
        for (int64_t j = 0; j < t->cols; j++)
            gpu_l2_add(&e, t->val[rows[i] * t->cols + j], ref[rows[i] * t->cols + j]);
    double rel = gpu_l2_rel(&e), tol = tol_for(t->dtype);
    report(rel <= tol, kname, where, what, rel, tol, (int)t->dtype, NULL);
}

/* Rows whose reference is about beta (or a constant): the relative L2 norm means little there,
 * so each element is held to |out - ref| <= tol * (1 + |ref|). */
static void check_rows_abs(const char *kname, const char *where, const char *what,
                           const gpu_tensor *t, const double *ref, const int64_t *rows, int nrows)
{
    double worst = 0.0;
    for (int i = 0; i < nrows; i++)
        for (int64_t j = 0; j < t->cols; j++) {
            double o = t->val[rows[i] * t->cols + j], r = ref[rows[i] * t->cols + j];
            double d = isfinite(o) ? fabs(o - r) / (1.0 + fabs(r)) : INFINITY;
            if (!(d <= worst))
                worst = d;
        }
    double tol = tol_for(t->dtype);
    report(worst <= tol, kname, where, what, worst, tol, -1, "max |out-ref|/(1+|ref|)");
}

/* ---- one kernel, one shape ------------------------------------------------------------------ */

typedef struct snapshot {
    unsigned char *bytes[2 + 2 * FUSEGEN_MAX_STORES];
} snapshot;

static gpu_tensor *case_output(gpu_case *c, int i)
{
    if (i == 0)
        return &c->out;
    if (i == 1)
        return &c->out2;
    if (i < 2 + FUSEGEN_MAX_STORES)
        return &c->store[i - 2];
    return &c->store2[i - 2 - FUSEGEN_MAX_STORES];
}

static void snapshot_take(gpu_case *c, snapshot *s)
{
    for (int i = 0; i < 2 + 2 * FUSEGEN_MAX_STORES; i++) {
        gpu_tensor *t = case_output(c, i);
        s->bytes[i] = NULL;
        if (!t->host)
            continue;
        s->bytes[i] = malloc(t->bytes);
        if (!s->bytes[i]) {
            fprintf(stderr, "out of host memory\n");
            exit(1);
        }
        memcpy(s->bytes[i], t->host, t->bytes);
    }
}

/* Number of bytes that differ. */
static size_t snapshot_diff(gpu_case *c, const snapshot *s)
{
    size_t diff = 0;
    for (int i = 0; i < 2 + 2 * FUSEGEN_MAX_STORES; i++) {
        gpu_tensor *t = case_output(c, i);
        if (!t->host || !s->bytes[i])
            continue;
        for (size_t j = 0; j < t->bytes; j++)
            diff += t->host[j] != s->bytes[i][j];
    }
    return diff;
}

static void snapshot_free(snapshot *s)
{
    for (int i = 0; i < 2 + 2 * FUSEGEN_MAX_STORES; i++)
        free(s->bytes[i]);
}

static void sync_or_die(cudaStream_t stream)
{
    GPU_CHECK(cudaStreamSynchronize(stream));
    GPU_CHECK(cudaGetLastError());
}

/* Inputs whose pre-norm rows have a large mean and a small spread, and rows that are constant:
 *   large-mean rows: A's row drawn from U(-0.17,0.17), so the GEMM part has std about 0.1; the
 *     residual row is 100 (or, without a residual, the bias is 100 everywhere), so the pre-norm
 *     row has mean ~100 and std ~0.1, where E[x^2] - E[x]^2 in f32 loses most digits;
 *   constant rows: A's row is zero and the bias constant along n, the residual row 100, so the
 *     pre-norm row is one value (variance 0): layernorm gives beta, rmsnorm gamma * sign.
 * With a residual the bias is the constant 0.25 (exact in every dtype). Returns 0 when the
 * kernel has neither bias nor residual (no large mean can be made; constant rows are zero). */
/* Rows with a large mean (large[0..2]; large[3]: offset only in its first half of columns, the
 * rest random, so a split kernel's tiles of one row differ in whether they keep their own
 * pre-norm copy) and constant rows (cons). */
static int make_special_rows(gpu_case *c, gpu_rng *rng, int64_t large[4], int64_t cons[3])
{
    const fusegen_kernel *k = c->kern;
    const int64_t M = c->p.m, N = c->p.n, K = c->p.k;
    large[0] = 1;
    large[1] = M / 2;
    large[2] = M - 1;
    large[3] = M / 4;
    cons[0] = 2;
    cons[1] = M / 2 + 1;
    cons[2] = M - 2;
    if (k->uses_bias)
        for (int64_t j = 0; j < N; j++)
            gpu_tensor_set(&c->bias, 0, j, k->uses_residual ? 0.25 : 100.0);
    for (int i = 0; i < 3; i++) {
        for (int64_t kk = 0; kk < K; kk++) {
            gpu_tensor_set(&c->a, large[i], kk, gpu_rng_uniform(rng, -0.17, 0.17));
            gpu_tensor_set(&c->a, cons[i], kk, 0.0);
        }
        if (k->uses_residual)
            for (int64_t j = 0; j < N; j++) {
                gpu_tensor_set(&c->res, large[i], j, 100.0);
                gpu_tensor_set(&c->res, cons[i], j, 100.0);
            }
    }
    for (int64_t kk = 0; kk < K; kk++) gpu_tensor_set(&c->a, large[3], kk, gpu_rng_uniform(rng, -0.17, 0.17));
    if (k->uses_residual)
        for (int64_t j = 0; j < N / 2; j++) gpu_tensor_set(&c->res, large[3], j, 100.0);   /* the rest: random */
    return k->uses_bias || k->uses_residual;
}

static void run_case(const fusegen_kernel *k, const test_shape *ts, int determinism, gpu_rng *rng,
                     cudaStream_t stream, int *ran, int *ran_tail)
{
    const gpu_shape *s = &ts->s;
    char where[160], why[512];
    describe(k, s, where, sizeof where);
    fusegen_problem p;
    gpu_make_problem(k, s, &p);
    const char *wn = fusegen_why_not(k, &p, why, sizeof why);
    if (wn) {
        printf("SKIP  %-44s %-40s (%s)\n", k->name, where, wn);
        g_skip++;
        return;
    }

    gpu_case c;
    gpu_case_init(&c, k, s, rng);
    int64_t large[4] = {0, 0, 0, 0}, cons[3] = {0, 0, 0};
    int special = ts->special && s->m >= 8 && has_norm(k->ops, k->n_ops);
    int have_large = special ? make_special_rows(&c, rng, large, cons) : 0;

    fusegen_status st = gpu_case_upload(&c);
    if (st != FUSEGEN_OK) {
        char note[600];
        snprintf(note, sizeof note, "fusegen_workspace_size: %s: %s", fusegen_status_name(st),
                 fusegen_last_detail());
        report_plain(0, k->name, where, "workspace", note);
        gpu_case_free(&c);
        return;
    }
    st = gpu_case_run(&c, stream);
    if (st != FUSEGEN_OK) {
        char note[600];
        snprintf(note, sizeof note, "fusegen_run: %s: %s", fusegen_status_name(st),
                 fusegen_last_detail());
        report_plain(0, k->name, where, "run", note);
        sync_or_die(stream);
        gpu_case_free(&c);
        return;
    }
    sync_or_die(stream);
    gpu_case_download(&c);
    (*ran)++;
    if (s->m % k->tile_m != 0)
        *ran_tail = 1;

    ref_result rr;
    ref_compute(&c, &rr);

    char what[48];
    if (k->chain) {
        /* GEMM1's result may stay in the workspace; when out is written it must be right. */
        if (gpu_tensor_all_poison(&c.out))
            printf("INFO  %-44s %-40s out not written (GEMM1's result only in the workspace)\n",
                   k->name, where);
        else
            check_output(k->name, where, "out (GEMM1)", &c.out, rr.out);
        check_output(k->name, where, "out2", &c.out2, rr.out2);
    } else {
        check_output(k->name, where, "out", &c.out, rr.out);
    }
    for (int i = 0; i < k->n_stores; i++) {
        snprintf(what, sizeof what, "store[%d]", i);
        check_output(k->name, where, what, &c.store[i], rr.store[i]);
    }
    for (int i = 0; i < k->n_stores2; i++) {
        snprintf(what, sizeof what, "store2[%d]", i);
        check_output(k->name, where, what, &c.store2[i], rr.store2[i]);
    }

    if (special) {
        const gpu_tensor *t = k->chain ? &c.out2 : &c.out;
        const double *ref = k->chain ? rr.out2 : rr.out;
        if (have_large)
            check_rows_rel(k->name, where, "large-mean rows", t, ref, large, 4);
        else
            printf("INFO  %-44s %-40s no bias or residual: no large-mean rows\n", k->name, where);
        check_rows_abs(k->name, where, "constant rows", t, ref, cons, 3);
        if (k->chain && !gpu_tensor_all_poison(&c.out)) {
            if (have_large)
                check_rows_rel(k->name, where, "large-mean rows out", &c.out, rr.out, large, 4);
            check_rows_abs(k->name, where, "constant rows out", &c.out, rr.out, cons, 3);
        }
    }

    if (determinism) {
        snapshot first;
        snapshot_take(&c, &first);
        gpu_case_poison(&c, stream);
        st = gpu_case_run(&c, stream);
        if (st != FUSEGEN_OK) {
            char note[600];
            snprintf(note, sizeof note, "second fusegen_run: %s: %s", fusegen_status_name(st),
                     fusegen_last_detail());
            report_plain(0, k->name, where, "determinism", note);
        } else {
            sync_or_die(stream);
            gpu_case_download(&c);
            size_t diff = snapshot_diff(&c, &first);
            char note[96];
            snprintf(note, sizeof note, "%zu bytes differ between two runs", diff);
            report_plain(diff == 0, k->name, where, "determinism", note);
        }
        snapshot_free(&first);
    }

    ref_free(&rr);
    gpu_case_free(&c);
}

static int runnable_here(const fusegen_kernel *k)
{
    return k->arch_specific ? k->sm == g_dev_sm : k->sm <= g_dev_sm;
}

static const char *strategy_name(fusegen_strategy s)
{
    return s == FUSEGEN_STRATEGY_ROW       ? "row"
           : s == FUSEGEN_STRATEGY_SPLIT   ? "split"
           : s == FUSEGEN_STRATEGY_CLUSTER ? "cluster"
                                           : "none";
}

static void test_kernel(const fusegen_kernel *k, gpu_rng *rng, cudaStream_t stream,
                        int *det_split, int *det_row)
{
    char why[512];
    if (!check_entry(k, why, sizeof why)) {
        report_plain(0, k->name ? k->name : "(null)", "-", "table entry", why);
        return;
    }
    report_plain(1, k->name, "-", "table entry", NULL);

    test_shape shapes[MAX_SHAPES];
    int n = kernel_shapes(k, shapes, MAX_SHAPES);
    int ran = 0, ran_tail = 0;
    for (int i = 0; i < n; i++) {
        int det = 0;
        if (i == 0 && k->strategy == FUSEGEN_STRATEGY_SPLIT && !*det_split)
            det = *det_split = 1;
        if (i == 0 && k->strategy == FUSEGEN_STRATEGY_ROW && !*det_row)
            det = *det_row = 1;
        /* every cluster kernel: its CTAs add their partials through distributed shared memory */
        if (i == 0 && k->strategy == FUSEGEN_STRATEGY_CLUSTER)
            det = 1;
        /* every split-K kernel: its reduce adds the slices' sums in a fixed order */
        if (k->split_k && strcmp(shapes[i].s.label, "split-k") == 0)
            det = 1;
        int before = ran;
        run_case(k, &shapes[i], det, rng, stream, &ran, &ran_tail);
        if (det && ran == before) {   /* skipped: let a later kernel do it */
            if (k->strategy == FUSEGEN_STRATEGY_SPLIT)
                *det_split = 0;
            else if (k->strategy == FUSEGEN_STRATEGY_ROW)
                *det_row = 0;
        }
    }
    char note[160];
    snprintf(note, sizeof note, "%d shapes ran%s", ran,
             ran_tail ? ", one with M not a multiple of tile_m" : ", none with an M tail");
    if (ran == 0 && !runnable_here(k)) {
        printf("SKIP  %-44s %-40s (built for sm_%d%s, device is sm_%d)\n", k->name, "-", k->sm,
               k->arch_specific ? "a" : "", g_dev_sm);
        g_skip++;
        return;
    }
    report_plain(ran >= 2 && ran_tail, k->name, "-", "coverage", note);
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static void check_dispatch(const fusegen_library *lib)
{
    static const gpu_shape shapes[] = {
        {"d-big", 1003, 1000, 1000, 520, 0},  {"d-row128", 1003, 128, 1000, 264, 0},
        {"d-row120", 1003, 120, 1000, 264, 0}, {"d-row256", 1003, 256, 512, 264, 0},
        {"d-small", 65, 64, 64, 264, 0},       {"d-one", 1, 8, 8, 264, 0},
        {"d-decode", 16, 1024, 4096, 264, 0},
    };
    char why[512];
    for (size_t i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = lib->kernels[j].spec_kernel && k->spec_kernel &&
                   strcmp(lib->kernels[j].spec_kernel, k->spec_kernel) == 0;
        if (seen)
            continue;
        const char *label = k->spec_kernel ? k->spec_kernel : k->name;
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            fusegen_problem p;
            gpu_make_problem(k, &shapes[si], &p);
            char where[160];
            describe(k, &shapes[si], where, sizeof where);
            size_t n_elig = 0;
            int any_row = 0, any_split = 0, any_split_k = 0;
            for (size_t j = 0; j < lib->n_kernels; j++) {
                const fusegen_kernel *kj = &lib->kernels[j];
                if (fusegen_why_not(kj, &p, why, sizeof why))
                    continue;
                n_elig++;
                any_row |= kj->strategy == FUSEGEN_STRATEGY_ROW;
                any_split |= kj->strategy == FUSEGEN_STRATEGY_SPLIT;
                any_split_k |= kj->split_k;
            }
            /* 16 rows, N = 1024, K = 4096: a split-K variant's 8 tiles fill few SMs of any GPU
             * this runs on, and its partial sums cost a quarter of the weight read */
            const int want_split_k = any_split_k && strcmp(shapes[si].label, "d-decode") == 0;
            const fusegen_kernel *sel = NULL;
            fusegen_status st = fusegen_select(lib, &p, &sel);
            char note[700];
            int ok;
            if (n_elig == 0) {
                ok = st == FUSEGEN_ERR_NOT_SUPPORTED;
                snprintf(note, sizeof note, "none eligible; select: %s", fusegen_status_name(st));
            } else if (st != FUSEGEN_OK || !sel) {
                ok = 0;
                snprintf(note, sizeof note, "%zu eligible but select: %s: %s", n_elig,
                         fusegen_status_name(st), fusegen_last_detail());
            } else {
                const char *sel_why = fusegen_why_not(sel, &p, why, sizeof why);
                int want_row = any_row && any_split && !want_split_k;
                ok = !sel_why && (!want_row || sel->strategy == FUSEGEN_STRATEGY_ROW) &&
                     (!want_split_k || sel->split_k);
                snprintf(note, sizeof note, "%zu eligible; selected %s (%s)%s%s", n_elig,
                         sel->name, strategy_name(sel->strategy),
                         sel_why ? "; but why_not: " : "",
                         sel_why ? sel_why : (want_row && !ok ? "; expected a row kernel"
                                              : want_split_k && !ok ? "; expected a split-K kernel" : ""));
            }
            report_plain(ok, label, where, "select", note);

            const fusegen_kernel *list[64];
            size_t n_found = 0;
            fusegen_status qst = fusegen_query(lib, &p, list, 64, &n_found);
            if (n_elig == 0) {
                ok = qst == FUSEGEN_ERR_NOT_SUPPORTED;
                snprintf(note, sizeof note, "query: %s", fusegen_status_name(qst));
            } else {
                ok = qst == FUSEGEN_OK && n_found == n_elig && (st != FUSEGEN_OK || list[0] == sel);
                snprintf(note, sizeof note, "query: %s, %zu found, %zu eligible, first %s",
                         fusegen_status_name(qst), n_found, n_elig,
                         qst == FUSEGEN_OK && n_found ? list[0]->name : "-");
            }
            report_plain(ok, label, where, "query", note);
        }
    }
}

/* ---- bad calls launch nothing --------------------------------------------------------------- */

static int case_untouched(gpu_case *c)
{
    int ok = 1;
    for (int i = 0; i < 2 + 2 * FUSEGEN_MAX_STORES; i++) {
        gpu_tensor *t = case_output(c, i);
        if (t->host)
            ok &= gpu_tensor_all_poison(t);
    }
    if (c->ws) {
        unsigned char *w = malloc(c->ws_alloc);
        if (!w) {
            fprintf(stderr, "out of host memory\n");
            exit(1);
        }
        GPU_CHECK(cudaMemcpy(w, c->ws, c->ws_alloc, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < c->ws_alloc; i++)
            ok &= w[i] == 0xFF;
        free(w);
    }
    return ok;
}

static void bad_call(gpu_case *c, cudaStream_t stream, const char *what, fusegen_status want,
                     const fusegen_args *args, size_t ws_bytes)
{
    gpu_case_poison(c, stream);
    sync_or_die(stream);
    fusegen_status st = fusegen_run(c->kern, &c->p, args, c->ws, ws_bytes, stream);
    char detail[400];
    snprintf(detail, sizeof detail, "%s", fusegen_last_detail());
    GPU_CHECK(cudaStreamSynchronize(stream));
    cudaError_t err = cudaGetLastError();
    gpu_case_download(c);
    int untouched = case_untouched(c);
    char where[160], note[700];
    describe(c->kern, &(gpu_shape){"bad-call", c->p.m, c->p.n, c->p.k, c->p.n2, 0}, where,
             sizeof where);
    snprintf(note, sizeof note, "got %s (want %s)%s; detail \"%s\"; cuda %s", fusegen_status_name(st),
             fusegen_status_name(want), untouched ? "; outputs untouched" : "; OUTPUTS WRITTEN",
             detail, cudaGetErrorName(err));
    report_plain(st == want && err == cudaSuccess && untouched && detail[0] != '\0', c->kern->name,
                 where, what, note);
}

/* On the first kernel with a residual (a split one first: it has a workspace to get wrong). */
static void check_bad_calls(const fusegen_library *lib, gpu_rng *rng, cudaStream_t stream)
{
    for (size_t ii = 0; ii < 2 * lib->n_kernels; ii++) {
        const fusegen_kernel *k = &lib->kernels[ii % lib->n_kernels];
        int want_split = ii < lib->n_kernels;
        if (!k->uses_residual || !runnable_here(k) ||
            (want_split && k->strategy != FUSEGEN_STRATEGY_SPLIT))
            continue;
        test_shape shapes[MAX_SHAPES];
        int n = kernel_shapes(k, shapes, MAX_SHAPES);
        for (int si = 0; si < n; si++) {
            fusegen_problem p;
            char why[512];
            gpu_make_problem(k, &shapes[si].s, &p);
            if (shapes[si].s.m < 2 || fusegen_why_not(k, &p, why, sizeof why))
                continue;
            gpu_case c;
            gpu_case_init(&c, k, &shapes[si].s, rng);
            if (gpu_case_upload(&c) != FUSEGEN_OK) {
                gpu_case_free(&c);
                continue;
            }
            fusegen_args args = c.args;
            args.residual = (const unsigned char *)c.res.dev + 2;
            bad_call(&c, stream, "misaligned residual", FUSEGEN_ERR_MISALIGNED, &args, c.ws_alloc);
            args = c.args;
            args.a = NULL;
            bad_call(&c, stream, "NULL A", FUSEGEN_ERR_INVALID_ARGUMENT, &args, c.ws_alloc);
            if (c.ws_bytes > 0)
                bad_call(&c, stream, "small workspace", FUSEGEN_ERR_WORKSPACE, &c.args,
                         c.ws_bytes - 1);
            gpu_case_free(&c);
            return;
        }
    }
    report_plain(0, "-", "-", "bad call", "no kernel with a residual could be set up");
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(void)
{
    uint64_t seed = gpu_test_seed();
    printf("fusegen GPU kernel test; seed %llu (set FUSEGEN_TEST_SEED=%llu to repeat)\n",
           (unsigned long long)seed, (unsigned long long)seed);
    if (!gpu_have_device())
        return GPU_SKIP_EXIT;

    int dev = 0, major = 0, minor = 0;
    GPU_CHECK(cudaGetDevice(&dev));
    GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    GPU_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    g_dev_sm = major * 10 + minor;
    GPU_CHECK(cudaDeviceGetAttribute(&g_dev_sms, cudaDevAttrMultiProcessorCount, dev));
    struct cudaDeviceProp prop;
    GPU_CHECK(cudaGetDeviceProperties(&prop, dev));

    const fusegen_library *lib = &FUSEGEN_TEST_LIBRARY;
    printf("device %d: %s (sm_%d); library %s, generator %s, %zu kernels; %d reference threads\n",
           dev, prop.name, g_dev_sm, lib->name ? lib->name : "?",
           lib->generator_version ? lib->generator_version : "?", lib->n_kernels, ref_threads());
    for (size_t i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        printf("  %-44s sm_%d%s %s/%s->%s %s tile %dx%dx%d %s max_n %lld align %d  %s%s%s\n",
               k->name ? k->name : "(null)", k->sm, k->arch_specific ? "a" : "",
               gpu_dtype_name(k->a), gpu_dtype_name(k->b), gpu_dtype_name(k->out),
               k->b_layout == FUSEGEN_LAYOUT_NK ? "nk" : "kn", k->tile_m, k->tile_n, k->tile_k,
               strategy_name(k->strategy), (long long)k->max_n, k->align_elems,
               k->epilogue ? k->epilogue : "?", k->chain ? " then " : "",
               k->chain && k->epilogue2 ? k->epilogue2 : "");
    }
    for (int i = 0; i < 4; i++)
        g_worst[i] = -1.0;

    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    gpu_rng rng;
    gpu_rng_seed(&rng, seed);

    /* FUSEGEN_TEST_ONLY=SUBSTRING: only the kernels whose names contain it (a sanitizer run
     * that cannot afford every kernel); the others count as skipped. */
    const char *only = getenv("FUSEGEN_TEST_ONLY");
    if (only && !*only)
        only = NULL;
    int det_split = 0, det_row = 0, has_split = 0, has_row = 0;
    for (size_t i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        has_split |= k->strategy == FUSEGEN_STRATEGY_SPLIT;
        has_row |= k->strategy == FUSEGEN_STRATEGY_ROW;
        if (only && (!k->name || !strstr(k->name, only))) {
            g_skip++;
            continue;
        }
        test_kernel(k, &rng, stream, &det_split, &det_row);
    }
    if (only)
        printf("FUSEGEN_TEST_ONLY=%s: kernels without it in their names skipped\n", only);
    /* (the determinism checks run on the split and row strategies' kernels, where a library has them) */
    if (!det_split && has_split && !only)
        report_plain(0, "-", "-", "determinism", "no split kernel ran");
    if (!det_row && has_row && !only)
        report_plain(0, "-", "-", "determinism", "no row kernel ran");

    check_dispatch(lib);
    check_bad_calls(lib, &rng, stream);

    GPU_CHECK(cudaStreamDestroy(stream));

    printf("%d skipped\n", g_skip);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    printf("worst relative error:");
    for (int t = 1; t <= 3; t++) {
        if (g_worst[t] >= 0.0 || isnan(g_worst[t]))
            printf(" %s %.3e (tol %.0e)", gpu_dtype_name((fusegen_dtype)t), g_worst[t],
                   tol_for((fusegen_dtype)t));
        else
            printf(" %s -", gpu_dtype_name((fusegen_dtype)t));
    }
    printf("\nseed %llu\n", (unsigned long long)seed);
    return g_fail == 0 ? 0 : 1;
}
