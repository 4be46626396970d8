/* test_launch.c - the runtime's launcher (runtime/launch.c) without a GPU: fusegen_run on a
 * hand-made table with launch records, against a stand-in device (fusegen__device_override:
 * 132 SMs, sm 90) and a stand-in driver (fusegen__cu_override) that records each launch's grid,
 * block, shared memory, attributes and parameter block, each tensor-map encode and each
 * attribute set. Checks the grid of every launch form (portable, split with its normalize
 * kernel, Hopper persistent and cluster, split K with its reduce, a chain), the workspace
 * carving, and what is done once (functions found, attributes set, cluster occupancy asked,
 * tensor maps encoded). */
#include <stdio.h>
#include <string.h>

#include "fusegen.h"
#include "fusegen_internal.h"
#include "fusegen_workspace.h"

static int g_failed, g_passed;
#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (cond) {                                                                           \
            g_passed++;                                                                       \
        } else {                                                                              \
            g_failed++;                                                                       \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; detail: %s\n", __FILE__, __LINE__, #cond, \
                    fusegen_last_detail());                                                   \
        }                                                                                     \
    } while (0)

/* ---- the stand-in driver ---------------------------------------------------------------------- */

typedef struct launch_log {
    CUfunction f;
    unsigned grid[3], block, smem;
    int cluster_x, dependent, n_params;
    fusegen_params params;
} launch_log;

static launch_log g_launches[8];
static int g_n_launches, g_n_encodes, g_n_attributes, g_n_occupancy, g_n_functions, g_occupancy = 5;
static CUtensorMap g_last_map;
static long long g_encode_rows[8], g_encode_cols[8], g_encode_box_rows[8];
static const void *g_encode_base[8];

static CUresult fake_ctx_get_current(CUcontext *ctx)
{
    *ctx = (CUcontext)(uintptr_t)0x5000;
    return CUDA_SUCCESS;
}

static CUresult fake_func_set_attribute(CUfunction f, CUfunction_attribute a, int v)
{
    (void)f, (void)a, (void)v;
    g_n_attributes++;
    return CUDA_SUCCESS;
}

static CUresult fake_launch_kernel_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    (void)extra;
    launch_log *l = &g_launches[g_n_launches < 8 ? g_n_launches : 7];
    memset(l, 0, sizeof *l);
    l->f = f;
    l->grid[0] = c->gridDimX, l->grid[1] = c->gridDimY, l->grid[2] = c->gridDimZ;
    l->block = c->blockDimX;
    l->smem = c->sharedMemBytes;
    for (unsigned i = 0; i < c->numAttrs; ++i) {
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) l->cluster_x = (int)c->attrs[i].value.clusterDim.x;
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) l->dependent = 1;
    }
    memcpy(&l->params, params[0], sizeof l->params);
    g_n_launches++;
    return CUDA_SUCCESS;
}

static CUresult fake_occupancy(int *n, CUfunction f, const CUlaunchConfig *c)
{
    (void)f;
    g_n_occupancy++;
    *n = c->numAttrs == 1 && c->attrs[0].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION ? g_occupancy : -1;
    return CUDA_SUCCESS;
}

static CUresult fake_encode(CUtensorMap *map, CUtensorMapDataType t, cuuint32_t rank, void *base,
                            const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                            const cuuint32_t *es, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                            CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)
{
    (void)t, (void)rank, (void)strides, (void)es, (void)il, (void)sw, (void)l2, (void)oob;
    memset(map, 0, sizeof *map);
    memcpy(map, &base, sizeof base);   /* distinct maps for distinct tensors */
    g_encode_rows[g_n_encodes % 8] = (long long)dims[1];
    g_encode_cols[g_n_encodes % 8] = (long long)dims[0];
    g_encode_box_rows[g_n_encodes % 8] = (long long)box[1];
    g_encode_base[g_n_encodes % 8] = base;
    g_last_map = *map;
    g_n_encodes++;
    return CUDA_SUCCESS;
}

static const fusegen__driver g_driver = {
    .ctx_get_current = fake_ctx_get_current,
    .func_set_attribute = fake_func_set_attribute,
    .launch_kernel_ex = fake_launch_kernel_ex,
    .occupancy_max_active_clusters = fake_occupancy,
    .tensor_map_encode_tiled = fake_encode,
};

/* A kernel library's function finder: three distinct fake functions. */
static cudaError_t fake_functions(void *fns[FUSEGEN_LAUNCH_FNS])
{
    g_n_functions++;
    for (int i = 0; i < FUSEGEN_LAUNCH_FNS; ++i) fns[i] = (void *)(uintptr_t)(0x100 + i);
    return cudaSuccess;
}

static void reset(void)
{
    g_n_launches = g_n_encodes = g_n_attributes = g_n_occupancy = g_n_functions = 0;
}

/* ---- kernels ---------------------------------------------------------------------------------- */

#define LN_SIG "bias+residual+store+layernorm+relu"
#define FAKE_PTR(i) ((void *)(uintptr_t)(0x10000u * (unsigned)(i)))

static fusegen_launch_cache g_caches[6];

/* Portable GEMM, f16, scale+bias+gelu, tile 128x128x32. */
static fusegen_kernel k_portable(void)
{
    fusegen_kernel k = {
        .name = "gelu_sm80_128x128x32_s4", .spec_kernel = "gelu", .sm = 80,
        .a = FUSEGEN_DTYPE_F16, .b = FUSEGEN_DTYPE_F16, .out = FUSEGEN_DTYPE_F16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = "scale+bias+gelu",
        .tile_m = 128, .tile_n = 128, .tile_k = 32, .stages = 4, .threads = 256,
        .align_elems = 8, .uses_bias = 1, .rank = 1,
        .launch1 = {.tile_m = 128, .tile_n = 128, .tile_k = 32, .threads = 256, .smem_bytes = 73728,
                    .dt_ab = FUSEGEN_DTYPE_F16, .dt_out = FUSEGEN_DTYPE_F16, .out_bytes = 2, .map_store_slot = -1},
        .cache = &g_caches[0], .functions = fake_functions};
    return k;
}

/* A LayerNorm kernel of the given family, strategy and tile (bf16, LN_SIG). */
static fusegen_kernel k_ln(const char *name, int hopper, fusegen_strategy strategy, int tm, int tn, int64_t max_n,
                           fusegen_launch_cache *cache)
{
    fusegen_kernel k = {
        .name = name, .spec_kernel = "ln", .sm = hopper ? 90 : 80, .arch_specific = hopper,
        .family = hopper ? FUSEGEN_FAMILY_HOPPER : FUSEGEN_FAMILY_PORTABLE,
        .schedule = hopper ? FUSEGEN_SCHEDULE_COOPERATIVE : FUSEGEN_SCHEDULE_NONE,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = LN_SIG,
        .tile_m = tm, .tile_n = tn, .tile_k = 64, .stages = 3, .threads = hopper ? 384 : 256,
        .norm = FUSEGEN_NORM_LAYERNORM, .strategy = strategy, .max_n = max_n,
        .align_elems = 8, .n_stores = 1, .uses_bias = 1, .uses_residual = 1, .uses_gamma = 1, .uses_beta = 1,
        .rank = 1, .cache = cache, .functions = fake_functions};
    fusegen_launch_gemm *r = &k.launch1;
    r->hopper = hopper;
    r->tile_m = tm, r->tile_n = tn, r->tile_k = 64;
    r->threads = k.threads, r->smem_bytes = 100000;
    r->split = strategy == FUSEGEN_STRATEGY_SPLIT;
    r->cluster = strategy == FUSEGEN_STRATEGY_CLUSTER;
    r->persistent = hopper && !r->cluster;
    r->tma_box_a = hopper ? tm : 0, r->tma_box_b = hopper ? tn : 0;
    r->dt_ab = r->dt_out = FUSEGEN_DTYPE_BF16, r->out_bytes = 2;
    r->map_residual = hopper, r->map_store_slot = hopper ? 0 : -1, r->map_out = hopper ? (r->split ? 2 : 1) : 0;
    r->epi_box_bytes = hopper ? 128 : 0;
    return k;
}

static fusegen_problem ln_problem(int64_t m, int64_t n, int64_t k)
{
    fusegen_problem p;
    memset(&p, 0, sizeof p);
    p.m = m, p.n = n, p.k = k;
    p.a = p.b = p.out = FUSEGEN_DTYPE_BF16;
    p.b_layout = FUSEGEN_LAYOUT_NK;
    p.epilogue = LN_SIG;
    p.sm = 90;
    return p;
}

static fusegen_args args_all(void)
{
    fusegen_args a;
    memset(&a, 0, sizeof a);
    a.a = FAKE_PTR(1), a.b = FAKE_PTR(2), a.out = FAKE_PTR(3);
    a.bias = FAKE_PTR(4), a.residual = FAKE_PTR(5), a.gamma = FAKE_PTR(6), a.beta = FAKE_PTR(7);
    a.store[0] = FAKE_PTR(8);
    a.b2 = FAKE_PTR(9), a.out2 = FAKE_PTR(10), a.bias2 = FAKE_PTR(11), a.store2[0] = FAKE_PTR(12);
    return a;
}

static void *const g_ws = FAKE_PTR(100);
enum { WS_BYTES = 1 << 30 };

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_portable(void)
{
    fusegen_kernel k = k_portable();
    fusegen_problem p = ln_problem(300, 512, 256);
    p.a = p.b = p.out = FUSEGEN_DTYPE_F16;
    p.epilogue = "scale+bias+gelu";
    fusegen_args a = args_all();
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 1 && g_n_functions == 1 && g_n_attributes == 1 && g_n_encodes == 0);
    const launch_log *l = &g_launches[0];
    CHECK(l->grid[0] == 4 && l->grid[1] == 3 && l->grid[2] == 1);   /* 512 / 128 columns, 300 rows */
    CHECK(l->block == 256 && l->smem == 73728 && !l->dependent && !l->cluster_x);
    CHECK(l->f == (CUfunction)(uintptr_t)0x100);
    CHECK(l->params.m == 300 && l->params.n == 512 && l->params.k == 256);
    CHECK(l->params.lda == 256 && l->params.ldb == 256 && l->params.ldo == 512 && l->params.ldr == 512);
    CHECK(l->params.a == a.a && l->params.b == a.b && l->params.out == a.out && l->params.bias == a.bias);
    CHECK(l->params.k_slices == 0 && l->params.prenorm == NULL);
    /* inputs the kernel does not read stay out of the block, whatever the arguments hold */
    CHECK(l->params.residual == NULL && l->params.gamma == NULL && l->params.beta == NULL);
    /* again: the functions and their attributes come from the cache */
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 1 && g_n_functions == 0 && g_n_attributes == 0);
    /* explicit leading dimensions pass through */
    p.lda = 320, p.ldo = 640;
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_launches[0].params.lda == 320 && g_launches[0].params.ldo == 640);
}

static void test_split(void)
{
    fusegen_kernel k = k_ln("ln_sm80_128x128x64_s3_split", 0, FUSEGEN_STRATEGY_SPLIT, 128, 128, 0, &g_caches[1]);
    fusegen_problem p = ln_problem(100, 1000, 256);
    fusegen_args a = args_all();
    size_t need = 0;
    CHECK(fusegen_workspace_size(&k, &p, &need) == FUSEGEN_OK && need > 0);
    reset();
    CHECK(fusegen_run(&k, &p, &a, g_ws, need, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 2);
    const fusegen_ws_layout l = fusegen_ws_layout_for(1, 128, 0, 0, 100, 1000);
    const launch_log *g = &g_launches[0], *nrm = &g_launches[1];
    CHECK(g->grid[0] == 8 && g->grid[1] == 1 && !g->dependent);
    CHECK(g->params.prenorm == (float *)((char *)g_ws + l.prenorm) && g->params.stats == (float *)((char *)g_ws + l.stats));
    CHECK(g->params.stats_ld == 8);
    /* the normalize kernel: a warp a row, 8 rows a block of 256 threads; plain stream order */
    CHECK(nrm->f == (CUfunction)(uintptr_t)0x101 && nrm->grid[0] == 13 && nrm->block == 256 && nrm->smem == 0);
    CHECK(!nrm->dependent && nrm->params.prenorm == g->params.prenorm);
}

static void test_hopper_persistent(void)
{
    fusegen_kernel k = k_ln("ln_sm90a_128x128x64_s3_row", 1, FUSEGEN_STRATEGY_ROW, 128, 128, 128, &g_caches[2]);
    fusegen_problem p = ln_problem(1024, 128, 512);
    fusegen_args a = args_all();
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 1);
    const launch_log *l = &g_launches[0];
    /* 8 tiles, fewer than the 132 SMs: a CTA each, as a programmatic dependent launch */
    CHECK(l->grid[0] == 8 && l->grid[1] == 1 && l->grid[2] == 1 && l->block == 384 && l->dependent);
    /* A, B, then the residual, the store op and out */
    CHECK(g_n_encodes == 5);
    CHECK(g_encode_rows[0] == 1024 && g_encode_cols[0] == 512);   /* A: [M, K] */
    CHECK(g_encode_rows[1] == 128 && g_encode_cols[1] == 512);    /* B: [N, K] */
    /* the same call again: every map from this thread's memo */
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 1 && g_n_encodes == 0);
    /* another output buffer: one encode */
    a.out = FAKE_PTR(30);
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_encodes == 1);
    /* more tiles than SMs: one CTA per SM */
    p.m = 65536;
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_launches[0].grid[0] == 132);
    /* M that the tile's 128 rows do not divide: A's map, then its tail map, a box of the 72
     * rows left */
    p.m = 1000;
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_encodes >= 2 && g_encode_base[0] == a.a && g_encode_box_rows[0] == 128 && g_encode_rows[0] == 1000);
    CHECK(g_encode_base[1] == a.a && g_encode_box_rows[1] == 1000 % 128 && g_encode_rows[1] == 1000);
    /* M below the tile: the tail map holds all of A's rows */
    p.m = 5;
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_encodes >= 2 && g_encode_base[1] == a.a && g_encode_box_rows[1] == 5 && g_encode_rows[1] == 5);
    /* 256 rows: no tail, A encoded once */
    p.m = 256;
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_encodes >= 2 && g_encode_base[0] == a.a && g_encode_box_rows[0] == 128 && g_encode_base[1] != a.a);
}

static void test_hopper_cluster(void)
{
    fusegen_kernel k = k_ln("ln_sm90a_128x128x64_s3_cluster", 1, FUSEGEN_STRATEGY_CLUSTER, 128, 128, 2048, &g_caches[3]);
    fusegen_problem p = ln_problem(1024, 1152, 512);
    fusegen_args a = args_all();
    reset();
    g_occupancy = 5;
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    const launch_log *l = &g_launches[0];
    /* clusters of 9 CTAs, one per row of tiles; 5 fit at once, so 5 rows of clusters walk the 8 */
    CHECK(l->cluster_x == 9 && l->grid[0] == 9 && l->grid[1] == 5 && l->dependent);
    CHECK(g_n_occupancy == 1);
    CHECK(g_n_attributes == 2);   /* shared memory, and clusters past the portable 8 */
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_n_occupancy == 0 && g_launches[0].grid[1] == 5);   /* asked once per device and size */
    /* fewer row tiles than clusters that fit: the grid stays */
    p.m = 256;
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_OK);
    CHECK(g_launches[0].grid[1] == 2);
    /* not one cluster fits: the launch fails, naming the size, and nothing runs */
    fusegen_launch_cache fresh;
    memset(&fresh, 0, sizeof fresh);
    k.cache = &fresh;
    g_occupancy = 0;
    reset();
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, 0) == FUSEGEN_ERR_CUDA);
    CHECK(strstr(fusegen_last_detail(), "not one cluster of 9 CTAs") != NULL && g_n_launches == 0);
    g_occupancy = 5;
}

static void test_split_k(void)
{
    fusegen_kernel k = k_ln("ln_sm90a_64x128x64_s4_splitk", 1, FUSEGEN_STRATEGY_NONE, 64, 128, 16384, &g_caches[4]);
    k.split_k = 1;
    k.launch1.split_k = 1, k.launch1.split_k_row_smem = 1;
    k.launch1.map_residual = 0, k.launch1.map_store_slot = -1, k.launch1.map_out = 0;
    fusegen_problem p = ln_problem(64, 4096, 4096);
    fusegen_args a = args_all();
    size_t need = 0;
    CHECK(fusegen_workspace_size(&k, &p, &need) == FUSEGEN_OK);
    reset();
    CHECK(fusegen_run(&k, &p, &a, g_ws, need, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 2);
    const int slices = fusegen_k_slices(64, 4096, 4096, 64, 128, 64, 132);
    const launch_log *part = &g_launches[0], *red = &g_launches[1];
    CHECK(slices > 1 && part->params.k_slices == slices);
    CHECK(part->params.partials == (float *)((char *)g_ws + fusegen_ws_layout_for_split_k(slices, 64, 4096).partials));
    /* the persistent partial kernel: min(32 tiles x slices, 132 SMs) CTAs */
    CHECK(part->grid[0] == (unsigned)(32 * slices < 132 ? 32 * slices : 132) && part->dependent);
    CHECK(g_n_encodes == 2);   /* A and B only: the sums leave from registers */
    /* the reduce: rows of 4096 at most take a block each (no cluster), the whole row in shared
     * memory and a lane for every 8 of its columns; a dependent launch on sm_90 */
    CHECK(red->f == (CUfunction)(uintptr_t)0x101 && red->grid[0] == 64 && red->cluster_x == 0);
    CHECK(red->block == 512 && red->grid[1] == 1);
    CHECK(red->smem == 4096 * 4 && red->dependent && red->params.partials == part->params.partials);
    /* 16 rows of 8192: a row a cluster of 8 CTAs (16 x 8 fill one wave of 132 SMs at most), each
     * with 1024 columns in shared memory and a lane for every 4 of them */
    p = ln_problem(16, 8192, 4096);
    CHECK(fusegen_workspace_size(&k, &p, &need) == FUSEGEN_OK);
    reset();
    CHECK(fusegen_run(&k, &p, &a, g_ws, need, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 2 && red->grid[0] == 16 * 8 && red->cluster_x == 8 && red->block == 256 &&
          red->smem == 1024 * 4 && red->dependent);
    /* 128 rows of 8192: one wave holds no two CTAs a row, a block a row */
    p = ln_problem(128, 8192, 4096);
    CHECK(fusegen_workspace_size(&k, &p, &need) == FUSEGEN_OK);
    reset();
    CHECK(fusegen_run(&k, &p, &a, g_ws, need, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 2 && red->grid[0] == 128 && red->cluster_x == 0 && red->block == 512 && red->smem == 8192 * 4);
    /* a row's CTAs: powers of two up to 8 while rows x CTAs fit one wave, 1024 columns each at
     * least, rows over 4096 only; an odd share for the last */
    CHECK(fusegen_split_k_reduce_ranks(1, 8192, 132) == 8 && fusegen_split_k_reduce_ranks(64, 8192, 132) == 2);
    CHECK(fusegen_split_k_reduce_ranks(1, 4096, 132) == 1 && fusegen_split_k_reduce_ranks(1, 4104, 132) == 4);
    CHECK(fusegen_split_k_reduce_ranks(1, 16384, 132) == 8 && fusegen_split_k_reduce_ranks(40, 16384, 132) == 2);
    CHECK(fusegen_split_k_reduce_ranks(67, 8192, 132) == 1 && fusegen_split_k_reduce_ranks(1, 8192, 0) == 1);
    CHECK(fusegen_split_k_reduce_columns(1000, 4) == 252);   /* 250 groups of 4: 63 + 63 + 63 + 61 */
}

/* A split-K chain: GEMM1's partial and reduce kernels (into hidden), then GEMM2's, whose partial
 * sums reuse GEMM1's region. */
static void test_chain_split_k(void)
{
    fusegen_launch_cache fresh;
    memset(&fresh, 0, sizeof fresh);
    fusegen_kernel k = k_ln("tail_sm90a_64x256x64_s4_splitk_g2_128x256x64_s3", 1, FUSEGEN_STRATEGY_NONE, 64, 256, 16384, &fresh);
    k.epilogue = "bias+residual+layernorm", k.n_stores = 0;
    k.chain = 1, k.split_k = 1, k.b2_layout = FUSEGEN_LAYOUT_NK, k.epilogue2 = "bias+relu", k.uses_bias2 = 1;
    k.tile2_m = 128, k.tile2_n = 256, k.tile2_k = 64, k.stages2 = 3, k.threads2 = 384;
    k.launch1.split_k = 1, k.launch1.split_k_row_smem = 1;
    k.launch1.map_residual = 0, k.launch1.map_store_slot = -1, k.launch1.map_out = 0;
    k.launch2 = k.launch1;
    k.launch2.tile_m = 128, k.launch2.tile_n = 256, k.launch2.tma_box_a = 128, k.launch2.split_k_row_smem = 0;
    fusegen_problem p = ln_problem(64, 2048, 2048);
    p.epilogue = "bias+residual+layernorm";
    p.n2 = 8192, p.b2_layout = FUSEGEN_LAYOUT_NK, p.epilogue2 = "bias+relu";
    fusegen_args a = args_all();
    size_t need = 0;
    CHECK(fusegen_workspace_size(&k, &p, &need) == FUSEGEN_OK);
    const int s1 = fusegen_k_slices(64, 2048, 2048, 64, 256, 64, 132), s2 = fusegen_k_slices(64, 8192, 2048, 128, 256, 64, 132);
    CHECK(s1 == 8 && s2 == 4);   /* 8 tiles x 8 slices (32 k tiles, at least 4 a slice); 32 tiles x 4 */
    const fusegen_ws_chain_split_k c = fusegen_ws_layout_for_chain_split_k(s1, s2, 64, 2048, 8192, 2);
    /* hidden (bf16 [64, 2048]), then the larger of the two GEMMs' partial sums (GEMM2's) */
    CHECK(c.partials == 64 * 2048 * 2 && need == c.total && c.total == c.partials + (size_t)4 * 64 * 8192 * 4);
    reset();
    CHECK(fusegen_run(&k, &p, &a, g_ws, need, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 4);
    const char *ws = (const char *)g_ws;
    const launch_log *p1 = &g_launches[0], *r1 = &g_launches[1], *p2 = &g_launches[2], *r2 = &g_launches[3];
    CHECK(p1->f == (CUfunction)(uintptr_t)0x100 && p1->grid[0] == 64 && p1->params.k_slices == s1);
    CHECK(p1->params.partials == (float *)(ws + c.partials));
    /* GEMM1's reduce (the norm): a block a row of 2048 */
    CHECK(r1->f == (CUfunction)(uintptr_t)0x101 && r1->grid[0] == 64 && r1->cluster_x == 0 && r1->smem == 2048 * 4 &&
          r1->dependent);
    CHECK(r1->params.out == (void *)ws && r1->params.ldo == 2048);
    CHECK(p2->f == (CUfunction)(uintptr_t)0x102 && p2->grid[0] == 128 && p2->params.k_slices == s2 && p2->dependent);
    CHECK(p2->params.a == (const void *)ws && p2->params.k == 2048 && p2->params.n == 8192 &&
          p2->params.partials == (float *)(ws + c.partials));
    /* GEMM2's reduce: no norm, so no row in shared memory, blocks of 256 threads over each row */
    CHECK(r2->f == (CUfunction)(uintptr_t)0x103 && r2->grid[0] == 64 && r2->cluster_x == 0 && r2->smem == 0 &&
          r2->params.out == a.out2);
    CHECK(r2->grid[1] == (unsigned)fusegen_split_k_reduce_blocks_y(8192, 0, FUSEGEN_REG_SPLIT_K_REDUCE_THREADS));
}

static void test_chain(void)
{
    fusegen_kernel k = {
        .name = "tail_sm80_128x128x64_s3_row", .spec_kernel = "tail", .sm = 80,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = "bias+residual+layernorm",
        .chain = 1, .b2_layout = FUSEGEN_LAYOUT_NK, .epilogue2 = "bias+relu",
        .tile_m = 128, .tile_n = 128, .tile_k = 64, .stages = 3, .threads = 256,
        .tile2_m = 64, .tile2_n = 128, .tile2_k = 64, .stages2 = 3, .threads2 = 128,
        .norm = FUSEGEN_NORM_LAYERNORM, .strategy = FUSEGEN_STRATEGY_ROW, .max_n = 1024,
        .align_elems = 8, .n_stores2 = 1,
        .uses_bias = 1, .uses_residual = 1, .uses_gamma = 1, .uses_beta = 1, .uses_bias2 = 1, .rank = 1,
        .launch1 = {.tile_m = 128, .tile_n = 128, .tile_k = 64, .threads = 256, .smem_bytes = 90000,
                    .dt_ab = FUSEGEN_DTYPE_BF16, .dt_out = FUSEGEN_DTYPE_BF16, .out_bytes = 2, .map_store_slot = -1},
        .launch2 = {.tile_m = 64, .tile_n = 128, .tile_k = 64, .threads = 128, .smem_bytes = 70000,
                    .dt_ab = FUSEGEN_DTYPE_BF16, .dt_out = FUSEGEN_DTYPE_BF16, .out_bytes = 2, .map_store_slot = -1},
        .cache = &g_caches[5], .functions = fake_functions};
    fusegen_problem p = ln_problem(100, 1000, 256);
    p.epilogue = "bias+residual+layernorm";
    p.n2 = 512, p.b2_layout = FUSEGEN_LAYOUT_NK, p.epilogue2 = "bias+relu";
    fusegen_args a = args_all();
    a.residual2 = FAKE_PTR(13);   /* GEMM2 reads no residual: it stays out of GEMM2's block */
    size_t need = 0;
    CHECK(fusegen_workspace_size(&k, &p, &need) == FUSEGEN_OK);
    reset();
    CHECK(fusegen_run(&k, &p, &a, g_ws, need, 0) == FUSEGEN_OK);
    CHECK(g_n_launches == 2 && g_n_attributes == 2);   /* both GEMMs' shared memory */
    void *hidden = (char *)g_ws + fusegen_ws_layout_for(0, 128, 1, 2, 100, 1000).hidden;
    const launch_log *g1 = &g_launches[0], *g2 = &g_launches[1];
    /* hidden's rows 1024 elements apart: GEMM2's A rows start on 128-byte boundaries */
    CHECK(g1->params.out == hidden && g1->params.ldo == 1024 && g1->grid[0] == 8 && g1->grid[1] == 1);
    CHECK(g2->f == (CUfunction)(uintptr_t)0x102 && g2->block == 128 && g2->smem == 70000);
    CHECK(g2->grid[0] == 4 && g2->grid[1] == 2);   /* 512 / 128 columns, 100 rows of 64 */
    CHECK(g2->params.a == hidden && g2->params.b == a.b2 && g2->params.out == a.out2);
    CHECK(g2->params.m == 100 && g2->params.n == 512 && g2->params.k == 1000 && g2->params.lda == 1024);
    CHECK(g2->params.ldb == 1000 && g2->params.ldo == 512 && g2->params.bias == a.bias2 && g2->params.residual == NULL);
    CHECK(g2->params.store[0] == a.store2[0] && g2->params.ld_store[0] == 512);
}

/* A finder that lacks a function the records need: the launch fails, nothing runs. */
static cudaError_t fake_functions_no_norm(void *fns[FUSEGEN_LAUNCH_FNS])
{
    fns[0] = (void *)(uintptr_t)0x100, fns[1] = NULL, fns[2] = NULL;
    return cudaSuccess;
}

static cudaError_t fake_functions_fail(void *fns[FUSEGEN_LAUNCH_FNS])
{
    (void)fns;
    return cudaErrorInvalidDeviceFunction;
}

static void test_bad_functions(void)
{
    fusegen_launch_cache fresh;
    memset(&fresh, 0, sizeof fresh);
    fusegen_kernel k = k_ln("ln_sm80_128x128x64_s3_split", 0, FUSEGEN_STRATEGY_SPLIT, 128, 128, 0, &fresh);
    k.functions = fake_functions_no_norm;
    fusegen_problem p = ln_problem(100, 1000, 256);
    fusegen_args a = args_all();
    size_t need = 0;
    CHECK(fusegen_workspace_size(&k, &p, &need) == FUSEGEN_OK);
    reset();
    CHECK(fusegen_run(&k, &p, &a, g_ws, need, 0) == FUSEGEN_ERR_CUDA);
    CHECK(strstr(fusegen_last_detail(), "corrupt dispatch table") != NULL && g_n_launches == 0);
    k.functions = fake_functions_fail;
    reset();
    CHECK(fusegen_run(&k, &p, &a, g_ws, need, 0) == FUSEGEN_ERR_CUDA);
    CHECK(strstr(fusegen_last_detail(), "cudaErrorInvalidDeviceFunction") != NULL && g_n_launches == 0);
}

int main(void)
{
    fusegen__device_override("Stand-in GPU", 132, 90);
    fusegen__cu_override(&g_driver);
    test_portable();
    test_split();
    test_hopper_persistent();
    test_hopper_cluster();
    test_split_k();
    test_chain_split_k();
    test_chain();
    test_bad_functions();
    fusegen__cu_override(NULL);
    fusegen__device_override(NULL, 0, 0);
    printf("test_launch: %d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
