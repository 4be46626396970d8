/* test_runtime.c - CPU tests of the fusegen runtime against a hand-made dispatch table.
 *
 * The fake kernels' launch functions only count calls, and every problem sets p->sm, so no
 * test here touches a GPU (except the last one, which accepts either outcome of sm = 0). */
#include "fusegen.h"
#include "fusegen_internal.h"
#include "fusegen_workspace.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int g_passed, g_failed;
static int g_launches;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            g_passed++;                                                                            \
        } else {                                                                                   \
            g_failed++;                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

/* The call returned want, the detail mentions every given substring, and nothing launched. */
#define EXPECT_FAIL(call, want, sub1, sub2) expect_fail((call), (want), (sub1), (sub2), #call, __LINE__)

static void expect_fail(fusegen_status got, fusegen_status want, const char *sub1, const char *sub2,
                        const char *text, int line)
{
    const char *d = fusegen_last_detail();
    int ok = got == want && (!sub1 || strstr(d, sub1)) && (!sub2 || strstr(d, sub2)) && g_launches == 0;
    if (ok) {
        g_passed++;
        return;
    }
    g_failed++;
    fprintf(stderr, "%s:%d: %s\n  got %s, want %s; launches %d\n  detail: \"%s\"\n  expected to contain: \"%s\"%s%s%s\n",
            __FILE__, line, text, fusegen_status_name(got), fusegen_status_name(want), g_launches, d,
            sub1 ? sub1 : "", sub2 ? " and \"" : "", sub2 ? sub2 : "", sub2 ? "\"" : "");
}

static int fake_launch(const fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args, void *workspace,
                       cudaStream_t stream, char *why, size_t len)
{
    (void)k; (void)p; (void)args; (void)workspace; (void)stream; (void)why; (void)len;
    g_launches++;
    return 0;
}

static int fake_launch_fails(const fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args,
                             void *workspace, cudaStream_t stream, char *why, size_t len)
{
    (void)k; (void)p; (void)args; (void)workspace; (void)stream;
    g_launches++;
    snprintf(why, len, "GEMM1 (grid 4x1x1): cudaErrorInvalidValue: invalid argument");
    return 1;
}

static int fake_launch_jit_fails(const fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args,
                                 void *workspace, cudaStream_t stream, char *why, size_t len)
{
    (void)k; (void)p; (void)args; (void)workspace; (void)stream;
    g_launches++;
    snprintf(why, len, "cuLaunchKernelEx: CUDA_ERROR_INVALID_CLUSTER_SIZE");
    return 1;
}

#define LN_SIG "bias+residual+store+layernorm+relu"

/* index names of the table below */
enum { K_ROW80, K_ROW90A, K_SPLIT_A, K_F16_GELU, K_F32_KN, K_CHAIN, K_SPLIT_B, K_BROKEN, N_KERNELS };

static const fusegen_kernel g_kernels[N_KERNELS] = {
    [K_ROW80] = {
        .name = "ln_sm80_128x128x64_s3_row", .spec_kernel = "ln", .sm = 80,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = LN_SIG,
        .tile_m = 128, .tile_n = 128, .tile_k = 64, .stages = 3, .threads = 256,
        .norm = FUSEGEN_NORM_LAYERNORM, .strategy = FUSEGEN_STRATEGY_ROW, .max_n = 1024,
        .align_elems = 8, .n_stores = 1,
        .uses_bias = 1, .uses_residual = 1, .uses_gamma = 1, .uses_beta = 1,
        .rank = 30, .launch_jit = fake_launch },
    [K_ROW90A] = {
        .name = "ln_sm90a_128x128x64_s3_row", .spec_kernel = "ln", .sm = 90, .arch_specific = 1,
        .family = FUSEGEN_FAMILY_HOPPER, .schedule = FUSEGEN_SCHEDULE_COOPERATIVE,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = LN_SIG,
        .tile_m = 128, .tile_n = 128, .tile_k = 64, .stages = 3, .threads = 384,
        .norm = FUSEGEN_NORM_LAYERNORM, .strategy = FUSEGEN_STRATEGY_ROW, .max_n = 1024,
        .align_elems = 8, .n_stores = 1,
        .uses_bias = 1, .uses_residual = 1, .uses_gamma = 1, .uses_beta = 1,
        .rank = 40, .launch_jit = fake_launch },
    [K_SPLIT_A] = {
        .name = "ln_sm80_128x128x64_s3_split", .spec_kernel = "ln", .sm = 80,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = LN_SIG,
        .tile_m = 128, .tile_n = 128, .tile_k = 64, .stages = 3, .threads = 256,
        .norm = FUSEGEN_NORM_LAYERNORM, .strategy = FUSEGEN_STRATEGY_SPLIT, .max_n = 0,
        .align_elems = 8, .n_stores = 1,
        .uses_bias = 1, .uses_residual = 1, .uses_gamma = 1, .uses_beta = 1,
        .rank = 10, .launch_jit = fake_launch },
    [K_F16_GELU] = {
        .name = "gelu_sm80_128x128x32_s4", .spec_kernel = "gelu", .sm = 80,
        .a = FUSEGEN_DTYPE_F16, .b = FUSEGEN_DTYPE_F16, .out = FUSEGEN_DTYPE_F16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = "scale+bias+gelu",
        .tile_m = 128, .tile_n = 128, .tile_k = 32, .stages = 4, .threads = 256,
        .strategy = FUSEGEN_STRATEGY_NONE, .align_elems = 8,
        .uses_bias = 1, .rank = 10, .launch_jit = fake_launch },
    [K_F32_KN] = {
        .name = "res_sm80_64x128x64_s3", .spec_kernel = "res", .sm = 80,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_F32,
        .b_layout = FUSEGEN_LAYOUT_KN, .epilogue = "residual+gelu_tanh",
        .tile_m = 64, .tile_n = 128, .tile_k = 64, .stages = 3, .threads = 128,
        .strategy = FUSEGEN_STRATEGY_NONE, .align_elems = 4,
        .uses_residual = 1, .rank = 5, .launch_jit = fake_launch_fails },
    [K_CHAIN] = {
        .name = "tail_sm80_128x128x64_s3_row", .spec_kernel = "tail", .sm = 80,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = "bias+residual+layernorm",
        .chain = 1, .b2_layout = FUSEGEN_LAYOUT_NK, .epilogue2 = "bias+relu",
        .tile_m = 128, .tile_n = 128, .tile_k = 64, .stages = 3, .threads = 256,
        .tile2_m = 64, .tile2_n = 128, .tile2_k = 64, .stages2 = 3, .threads2 = 128,
        .norm = FUSEGEN_NORM_LAYERNORM, .strategy = FUSEGEN_STRATEGY_ROW, .max_n = 1024,
        .align_elems = 8, .n_stores = 0, .n_stores2 = 1,
        .uses_bias = 1, .uses_residual = 1, .uses_gamma = 1, .uses_beta = 1, .uses_bias2 = 1,
        .rank = 20, .launch_jit = fake_launch },
    [K_SPLIT_B] = {
        .name = "ln_sm80_64x256x32_s4_split", .spec_kernel = "ln", .sm = 80,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = LN_SIG,
        .tile_m = 64, .tile_n = 256, .tile_k = 32, .stages = 4, .threads = 256,
        .norm = FUSEGEN_NORM_LAYERNORM, .strategy = FUSEGEN_STRATEGY_SPLIT, .max_n = 0,
        .align_elems = 8, .n_stores = 1,
        .uses_bias = 1, .uses_residual = 1, .uses_gamma = 1, .uses_beta = 1,
        .rank = 10, .launch_jit = fake_launch },
    [K_BROKEN] = {  /* a table entry without a launch function; never eligible by dtype */
        .name = "broken_f32", .spec_kernel = "broken", .sm = 80,
        .a = FUSEGEN_DTYPE_F32, .b = FUSEGEN_DTYPE_F32, .out = FUSEGEN_DTYPE_F32,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = "relu",
        .tile_m = 64, .tile_n = 64, .tile_k = 32, .stages = 2, .threads = 128,
        .align_elems = 4, .rank = 1 },
};

static const fusegen_library g_lib = {
    .name = "fake", .generator_version = "0.1.0", .spec_sha256 = "0", .kernels = g_kernels,
    .n_kernels = N_KERNELS,
};

static const fusegen_kernel *K(int i) { return &g_kernels[i]; }

/* A problem for the layernorm family: M x N x K, bf16, nk, sm 90. */
static fusegen_problem ln_problem(int64_t m, int64_t n, int64_t k)
{
    fusegen_problem p;
    memset(&p, 0, sizeof p);
    p.m = m; p.n = n; p.k = k;
    p.a = p.b = p.out = FUSEGEN_DTYPE_BF16;
    p.b_layout = FUSEGEN_LAYOUT_NK;
    p.epilogue = LN_SIG;
    p.sm = 90;
    return p;
}

static fusegen_problem chain_problem(void)
{
    fusegen_problem p = ln_problem(100, 1000, 256);
    p.epilogue = "bias+residual+layernorm";
    p.n2 = 512;
    p.b2_layout = FUSEGEN_LAYOUT_NK;
    p.epilogue2 = "bias+relu";
    return p;
}

/* Distinct, 16-byte aligned fake device addresses (never dereferenced). */
#define FAKE_PTR(i) ((void *)(uintptr_t)(0x10000u * (unsigned)(i)))

static fusegen_args good_args(void)
{
    fusegen_args a;
    memset(&a, 0, sizeof a);
    a.a = FAKE_PTR(1); a.b = FAKE_PTR(2); a.out = FAKE_PTR(3);
    a.bias = FAKE_PTR(4); a.residual = FAKE_PTR(5); a.gamma = FAKE_PTR(6); a.beta = FAKE_PTR(7);
    a.store[0] = FAKE_PTR(8);
    a.b2 = FAKE_PTR(9); a.out2 = FAKE_PTR(10); a.bias2 = FAKE_PTR(11); a.store2[0] = FAKE_PTR(12);
    return a;
}

static size_t align256(size_t x) { return (x + 255u) / 256u * 256u; }

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_status_strings(void)
{
    static const struct { fusegen_status s; const char *name; } all[] = {
        {FUSEGEN_OK, "FUSEGEN_OK"},
        {FUSEGEN_ERR_INVALID_ARGUMENT, "FUSEGEN_ERR_INVALID_ARGUMENT"},
        {FUSEGEN_ERR_MISALIGNED, "FUSEGEN_ERR_MISALIGNED"},
        {FUSEGEN_ERR_NOT_SUPPORTED, "FUSEGEN_ERR_NOT_SUPPORTED"},
        {FUSEGEN_ERR_NOT_FOUND, "FUSEGEN_ERR_NOT_FOUND"},
        {FUSEGEN_ERR_WORKSPACE, "FUSEGEN_ERR_WORKSPACE"},
        {FUSEGEN_ERR_ARCH, "FUSEGEN_ERR_ARCH"},
        {FUSEGEN_ERR_CUDA, "FUSEGEN_ERR_CUDA"},
    };
    size_t i, j;
    for (i = 0; i < sizeof all / sizeof all[0]; i++) {
        CHECK(strcmp(fusegen_status_name(all[i].s), all[i].name) == 0);
        CHECK(fusegen_status_message(all[i].s) != NULL && strlen(fusegen_status_message(all[i].s)) > 5);
        for (j = 0; j < i; j++)
            CHECK(strcmp(fusegen_status_message(all[i].s), fusegen_status_message(all[j].s)) != 0);
    }
    CHECK(strcmp(fusegen_status_name((fusegen_status)99), "FUSEGEN_STATUS_UNKNOWN") == 0);
    CHECK(strcmp(fusegen_status_name((fusegen_status)-1), "FUSEGEN_STATUS_UNKNOWN") == 0);
    CHECK(strstr(fusegen_status_message((fusegen_status)99), "nknown") != NULL);
    CHECK(fusegen_last_detail() != NULL);
}

/* A split LayerNorm kernel of the test table with another tile and rank; sm 90 makes it an
 * sm_90a (arch-specific) kernel of the Hopper family (cooperative; tests set the schedule), 80
 * a portable one. */
static fusegen_kernel split_variant(const char *name, int tile_m, int tile_n, int rank, int sm)
{
    fusegen_kernel k = g_kernels[K_SPLIT_A];
    k.name = name;
    k.tile_m = tile_m;
    k.tile_n = tile_n;
    k.rank = rank;
    k.sm = sm;
    k.arch_specific = sm == 90;
    k.family = sm == 90 ? FUSEGEN_FAMILY_HOPPER : FUSEGEN_FAMILY_PORTABLE;
    k.schedule = sm == 90 ? FUSEGEN_SCHEDULE_COOPERATIVE : FUSEGEN_SCHEDULE_NONE;
    return k;
}

/* The first kernel fusegen__query_sms lists for p on a device of 132 SMs, or NULL when the query
 * fails or lists fewer than `want` kernels. */
static const fusegen_kernel *first_on_132(const fusegen_library *lib, const fusegen_problem *p, size_t want)
{
    const fusegen_kernel *out[4];
    size_t n = 0;
    if (fusegen__query_sms(lib, p, out, 4, &n, 132) != FUSEGEN_OK || n < want) return NULL;
    return out[0];
}

/* Between kernels of one strategy and family, fewer padded columns (over the tile's rate) beat
 * a larger tile: N = 640 goes to the 128-column tile, N = 1024 to the 256-column one; on rows
 * of 512 columns or fewer the large tile counts x 91, behind the medium ones. */
static void test_query_column_cost(void)
{
    const fusegen_kernel wide = split_variant("ln_sm80_128x256x64_s3_split", 128, 256, 32771, 80);
    const fusegen_kernel narrow = split_variant("ln_sm80_128x128x64_s5_split", 128, 128, 16389, 80);
    const fusegen_kernel pingpong = split_variant("ln_sm80_64x256x64_s4_split", 64, 256, 16388, 80);
    const fusegen_kernel table[] = {wide, pingpong, narrow};
    const fusegen_library lib = {.name = "cost", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 3};
    const fusegen_kernel *out[3];
    size_t n = 0;
    fusegen_problem p = ln_problem(256, 640, 512);
    p.sm = 80;
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[2] && out[1] == &table[0] && out[2] == &table[1]);   /* 640*90 < 768*80 < 768*90 */
    p = ln_problem(256, 512, 512);
    p.sm = 80;
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[2] && out[1] == &table[1] && out[2] == &table[0]);   /* 512*90 (by rank) < 512*91 */
    p = ln_problem(256, 1024, 512);
    p.sm = 80;
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[0] && out[1] == &table[2] && out[2] == &table[1]);   /* 1024*80, then 1024*90 by rank */
    /* a higher class (strategy, family) wins whatever its columns cost */
    fusegen_kernel row = g_kernels[K_ROW80];
    row.tile_n = 256;
    row.rank = 32771;
    const fusegen_kernel with_row[] = {narrow, row};
    const fusegen_library lib2 = {.name = "cost", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = with_row, .n_kernels = 2};
    p = ln_problem(256, 320, 512);
    p.sm = 80;
    CHECK(fusegen_query(&lib2, &p, out, 3, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &with_row[1] && out[1] == &with_row[0]);
}

/* A Hopper split kernel with the ping-pong schedule goes first at K <= 1024 when it wastes no
 * more columns than the others; above, and where it wastes columns, it does not. */
static void test_query_pingpong_short_k(void)
{
    const fusegen_kernel wide = split_variant("ln_sm90a_128x256x64_s3_split", 128, 256, 32771, 90);
    const fusegen_kernel narrow = split_variant("ln_sm90a_128x128x64_s5_split", 128, 128, 16389, 90);
    fusegen_kernel pingpong = split_variant("ln_sm90a_64x256x64_s4_split", 64, 256, 16388, 90);
    pingpong.schedule = FUSEGEN_SCHEDULE_PINGPONG;
    const fusegen_kernel table[] = {wide, narrow, pingpong};
    const fusegen_library lib = {.name = "pp", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 3};
    const fusegen_kernel *out[3];
    size_t n = 0;
    fusegen_problem p = ln_problem(256, 1024, 1024);   /* 1024 * 78 < 1024 * 80 < 1024 * 90 */
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[2] && out[1] == &table[0] && out[2] == &table[1]);
    p = ln_problem(256, 1024, 1032);                    /* K > 1024: the cooperative tile */
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[0]);
    p = ln_problem(256, 640, 512);                      /* 640 * 90 < 768 * 78 < 768 * 80 */
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[1] && out[1] == &table[2] && out[2] == &table[0]);
    p = ln_problem(256, 320, 320);                      /* 384 * 90 < 512 * 78 */
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[1]);
    /* the portable family's 64-row tiles are not the ping-pong schedule: no exception */
    fusegen_kernel portable[] = {wide, pingpong};
    portable[0].arch_specific = portable[1].arch_specific = 0;
    portable[0].family = portable[1].family = FUSEGEN_FAMILY_PORTABLE;
    portable[0].schedule = portable[1].schedule = FUSEGEN_SCHEDULE_NONE;
    portable[0].sm = portable[1].sm = 80;
    const fusegen_library lib2 = {.name = "pp", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = portable, .n_kernels = 2};
    p = ln_problem(256, 1024, 1024);
    CHECK(fusegen_query(&lib2, &p, out, 3, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &portable[0]);
}

/* Chain variants that differ in GEMM2 alone: the one whose GEMM2 has a 128-row ping-pong tile
 * goes first where GEMM2's K (the chain's N) is at most 3072, whatever the table order;
 * beyond, the keys tie and the table order stands. */
static void test_query_gemm2_pingpong(void)
{
    fusegen_kernel coop2 = g_kernels[K_CHAIN], pp2 = g_kernels[K_CHAIN];
    coop2.name = "tail_sm90a_128x128x64_s3_row_g2_128x256x64_s3";
    pp2.name = "tail_sm90a_128x128x64_s3_row_g2_128x128x64_s5_pingpong";
    coop2.sm = pp2.sm = 90;
    coop2.arch_specific = pp2.arch_specific = 1;
    coop2.family = pp2.family = FUSEGEN_FAMILY_HOPPER;
    coop2.schedule = pp2.schedule = coop2.schedule2 = FUSEGEN_SCHEDULE_COOPERATIVE;
    coop2.tile2_m = pp2.tile2_m = 128;
    coop2.tile2_n = 256;
    pp2.tile2_n = 128;
    pp2.schedule2 = FUSEGEN_SCHEDULE_PINGPONG;
    const fusegen_kernel table[] = {coop2, pp2};
    const fusegen_library lib = {.name = "g2", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 2};
    const fusegen_kernel *out[2];
    size_t n = 0;
    fusegen_problem p = chain_problem();                /* N = 1000 */
    p.sm = 90;
    CHECK(fusegen_query(&lib, &p, out, 2, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &table[1] && out[1] == &table[0]);
    /* a ping-pong GEMM2 of 64 rows (tile2_m 64) gets no such preference */
    fusegen_kernel pp64[] = {coop2, pp2};
    pp64[1].tile2_m = 64;
    const fusegen_library lib64 = {.name = "g2", .generator_version = "0.1.0", .spec_sha256 = "0",
                                   .kernels = pp64, .n_kernels = 2};
    CHECK(fusegen_query(&lib64, &p, out, 2, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &pp64[0]);
    /* past K = 3072 for GEMM2 (N > 3072; a split GEMM1, as a row one holds at most 1024) */
    fusegen_kernel split[] = {coop2, pp2};
    split[0].strategy = split[1].strategy = FUSEGEN_STRATEGY_SPLIT;
    split[0].max_n = split[1].max_n = 0;
    const fusegen_library libs = {.name = "g2", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = split, .n_kernels = 2};
    p.n = 3072;
    CHECK(fusegen_query(&libs, &p, out, 2, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &split[1]);
    p.n = 3080;
    CHECK(fusegen_query(&libs, &p, out, 2, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &split[0]);
    /* on 132 SMs: first up to 16 waves of its GEMM2 tiles (2000 x 4096: 512 tiles), not past
     * them (16384 x 4096: 4096 tiles) */
    p = chain_problem();
    p.m = 2000;
    p.n2 = 4096;
    CHECK(first_on_132(&lib, &p, 2) == &table[1]);
    p.m = 16384;
    CHECK(first_on_132(&lib, &p, 2) == &table[0]);
}

/* The Hopper 128x128 ping-pong split tile goes first for 640 < N <= 1280 and K <= 1024 (ahead
 * of 64x256 ping-pong, 128x256 cooperative and 128x160), and nowhere else. */
static void test_query_pingpong128_split(void)
{
    const fusegen_kernel wide = split_variant("ln_sm90a_128x256x64_s3_split", 128, 256, 32771, 90);
    fusegen_kernel pp64 = split_variant("ln_sm90a_64x256x64_s4_split", 64, 256, 16388, 90);
    fusegen_kernel pp128 = split_variant("ln_sm90a_128x128x64_s5_pingpong_split", 128, 128, 16381, 90);
    const fusegen_kernel n160 = split_variant("ln_sm90a_128x160x64_s5_split", 128, 160, 20485, 90);
    pp64.schedule = pp128.schedule = FUSEGEN_SCHEDULE_PINGPONG;
    const fusegen_kernel table[] = {wide, pp64, pp128, n160};
    const fusegen_library lib = {.name = "pp128", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 4};
    const fusegen_kernel *out[4];
    size_t n = 0;
    fusegen_problem p = ln_problem(256, 768, 1024);     /* 768 * 77 < 768 * 78 (64x256 ping-pong) < 768 * 80 */
    CHECK(fusegen_query(&lib, &p, out, 4, &n) == FUSEGEN_OK && n == 4);
    CHECK(out[0] == &table[2] && out[1] == &table[1] && out[2] == &table[0]);
    p = ln_problem(256, 768, 1032);                     /* K > 1024: the cooperative 128x256 tile (x80) */
    CHECK(fusegen_query(&lib, &p, out, 4, &n) == FUSEGEN_OK && n == 4);
    CHECK(out[0] == &table[0]);
    p = ln_problem(256, 1024, 1024);                    /* 1024 * 77 < 1024 * 78 (64x256 ping-pong) */
    CHECK(fusegen_query(&lib, &p, out, 4, &n) == FUSEGEN_OK && n == 4);
    CHECK(out[0] == &table[2] && out[1] == &table[1] && out[2] == &table[0]);
    p = ln_problem(256, 1024, 3072);                    /* K > 1024: the cooperative 128x256 tile */
    CHECK(fusegen_query(&lib, &p, out, 4, &n) == FUSEGEN_OK && n == 4);
    CHECK(out[0] == &table[0]);
    p = ln_problem(256, 1280, 1024);                    /* 1280 * 77 < 1280 * 78 < 1280 * 80 */
    CHECK(fusegen_query(&lib, &p, out, 4, &n) == FUSEGEN_OK && n == 4);
    CHECK(out[0] == &table[2] && out[1] == &table[1]);
    p = ln_problem(256, 1408, 1280);                    /* N > 1280: 128x256 (1536 * 80 < 1408 * 90) */
    CHECK(fusegen_query(&lib, &p, out, 4, &n) == FUSEGEN_OK && n == 4);
    CHECK(out[0] == &table[0]);
    p = ln_problem(256, 640, 2560);                     /* N = 640: 128x160 (640 * 90, the larger tile) */
    CHECK(fusegen_query(&lib, &p, out, 4, &n) == FUSEGEN_OK && n == 4);
    CHECK(out[0] == &table[3]);
    p = ln_problem(256, 1280, 5120);                    /* K > 3072: 128x256 (1280 * 80 < 1280 * 90) */
    CHECK(fusegen_query(&lib, &p, out, 4, &n) == FUSEGEN_OK && n == 4);
    CHECK(out[0] == &table[0]);
    /* a cooperative 128x128 tile gets no such rate */
    fusegen_kernel coop[] = {wide, pp128};
    coop[1].schedule = FUSEGEN_SCHEDULE_COOPERATIVE;
    const fusegen_library lib2 = {.name = "pp128", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = coop, .n_kernels = 2};
    p = ln_problem(256, 768, 3072);
    CHECK(fusegen_query(&lib2, &p, out, 4, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &coop[0]);
}

/* A Hopper row kernel of the given tile (rank as the generator makes it: tile area, stages). */
static fusegen_kernel hopper_row(const char *name, int tile_m, int tile_n, int stages, int pingpong)
{
    fusegen_kernel k = g_kernels[K_ROW90A];
    k.name = name;
    k.tile_m = tile_m;
    k.tile_n = tile_n;
    k.stages = stages;
    k.max_n = tile_n;
    k.schedule = pingpong ? FUSEGEN_SCHEDULE_PINGPONG : FUSEGEN_SCHEDULE_COOPERATIVE;
    k.rank = tile_m * tile_n + stages;
    return k;
}

/* A 64-row Hopper row kernel as wide as a row of 320 (cooperative, the consumers splitting the
 * columns, or the 64x320 ping-pong one) goes first up to K = 1024; past it, after the Hopper
 * split kernels and before the portable ones. */
static void test_query_col_split_long_k(void)
{
    const fusegen_kernel table[] = {
        hopper_row("ln_sm90a_64x320x64_s3_row", 64, 320, 3, 0),
        split_variant("ln_sm80_128x256x64_s3_split", 128, 256, 32771, 80),
        split_variant("ln_sm90a_128x160x64_s5_split", 128, 160, 20485, 90),
    };
    const fusegen_library lib = {.name = "cs", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 3};
    const fusegen_kernel *out[3];
    size_t n = 0;
    fusegen_problem p = ln_problem(256, 320, 320);
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[0] && out[1] == &table[2] && out[2] == &table[1]);
    p = ln_problem(256, 320, 1024);
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[0]);
    p = ln_problem(256, 320, 1032);
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[2] && out[1] == &table[0] && out[2] == &table[1]);
    /* off sm_90 only the portable kernel is eligible, whatever K */
    p.sm = 80;
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 1 && out[0] == &table[1]);
    /* the same for the 64x320 ping-pong row kernel, which goes before the cooperative one at
     * K <= 1024 (column rate 78) */
    const fusegen_kernel wide[] = {
        hopper_row("ln_sm90a_64x320x64_s3_cooperative_row", 64, 320, 3, 0),
        hopper_row("ln_sm90a_64x320x64_s3_row", 64, 320, 3, 1),
        split_variant("ln_sm90a_128x160x64_s5_split", 128, 160, 20485, 90),
    };
    const fusegen_library lib3 = {.name = "cs", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = wide, .n_kernels = 3};
    p = ln_problem(256, 320, 640);
    CHECK(fusegen_query(&lib3, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &wide[1] && out[1] == &wide[0] && out[2] == &wide[2]);
    p = ln_problem(256, 320, 2560);
    CHECK(fusegen_query(&lib3, &p, out, 3, &n) == FUSEGEN_OK && n == 3 && out[0] == &wide[2]);
    /* a 64-row ping-pong row tile up to 256 wide (each consumer holds a whole tile) keeps its class
     * up to K = 2048, and drops below the split kernels past it */
    const fusegen_kernel pp[] = {
        hopper_row("ln_sm90a_64x256x64_s4_row", 64, 256, 4, 1),
        split_variant("ln_sm90a_128x256x64_s3_split", 128, 256, 32771, 90),
    };
    const fusegen_library lib2 = {.name = "cs", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = pp, .n_kernels = 2};
    p = ln_problem(256, 256, 2048);
    CHECK(fusegen_query(&lib2, &p, out, 3, &n) == FUSEGEN_OK && n == 2 && out[0] == &pp[0]);
    p = ln_problem(256, 256, 4096);
    CHECK(fusegen_query(&lib2, &p, out, 3, &n) == FUSEGEN_OK && n == 2 && out[0] == &pp[1]);
    /* on a known device, a row tile that leaves most SMs idle on a long mainloop drops below the
     * split kernels (4 tiles on 132 SMs at K 2048); at K 1024 it keeps its class */
    p = ln_problem(256, 256, 2048);
    CHECK(fusegen__query_sms(&lib2, &p, out, 3, &n, 132) == FUSEGEN_OK && n == 2 && out[0] == &pp[1]);
    p = ln_problem(256, 256, 1024);
    CHECK(fusegen__query_sms(&lib2, &p, out, 3, &n, 132) == FUSEGEN_OK && n == 2 && out[0] == &pp[0]);
}

/* A portable kernel compiled for sm_90a (the JIT's, arch-specific code but not the Hopper
 * family) keeps its class up to K = 1024 and is demoted below its family's split kernels past
 * it, as a cooperative Hopper 64-row row tile is (each below its own family's split class).
 * The family is the kernel's field, never its name: a spec kernel named a_sm90a_b gets portable
 * variants named a_sm90a_b_sm80_..., which are not Hopper kernels. */
static void test_query_jit_portable_row(void)
{
    fusegen_kernel row = hopper_row("ln_sm80_64x256x32_s4_row", 64, 256, 4, 0);
    fusegen_kernel split = split_variant("ln_sm80_64x256x32_s4_split", 64, 256, 16388, 90);
    row.family = split.family = FUSEGEN_FAMILY_PORTABLE;
    row.schedule = split.schedule = FUSEGEN_SCHEDULE_NONE;
    const fusegen_kernel table[] = {row, split};
    const fusegen_library lib = {.name = "jit", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 2};
    const fusegen_kernel *out[2];
    size_t n = 0;
    CHECK(table[0].arch_specific && table[1].arch_specific);
    fusegen_problem p = ln_problem(256, 256, 1024);
    CHECK(fusegen_query(&lib, &p, out, 2, &n) == FUSEGEN_OK && n == 2 && out[0] == &table[0]);
    p = ln_problem(256, 256, 2048);
    CHECK(fusegen_query(&lib, &p, out, 2, &n) == FUSEGEN_OK && n == 2 && out[0] == &table[1]);
    /* of the Hopper family, the same entry is demoted below a Hopper split kernel, before the
     * portable split one */
    fusegen_kernel hopper[3] = {table[0], table[1], table[1]};
    const fusegen_kernel *out3[3];
    hopper[0].family = hopper[2].family = FUSEGEN_FAMILY_HOPPER;
    hopper[0].schedule = hopper[2].schedule = FUSEGEN_SCHEDULE_COOPERATIVE;
    const fusegen_library lib2 = {.name = "jit", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = hopper, .n_kernels = 3};
    CHECK(fusegen_query(&lib2, &p, out3, 3, &n) == FUSEGEN_OK && n == 3 && out3[0] == &hopper[2] &&
          out3[1] == &hopper[0] && out3[2] == &hopper[1]);
    /* a spec kernel named a_sm90a_b: its portable variants' names hold "_sm90a_", and they are
     * ranked (and checked) as the portable family they are: its row tile goes after a Hopper
     * one of the same shape listed after it (taken as Hopper, the two would tie: table order) */
    fusegen_kernel named[2] = {table[0], hopper[0]};
    named[0].name = "a_sm90a_b_sm80_64x256x32_s4_row";
    named[0].spec_kernel = named[1].spec_kernel = "a_sm90a_b";
    const fusegen_library lib3 = {.name = "jit", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = named, .n_kernels = 2};
    p = ln_problem(256, 256, 1024);
    CHECK(fusegen_query(&lib3, &p, out, 2, &n) == FUSEGEN_OK && n == 2 && out[0] == &named[1]);
    /* nor does its name put a portable kernel under the Hopper family's TMA stride limit */
    p = ln_problem(2, 256, 512);
    p.lda = (int64_t)1 << 39;   /* bf16: 2^40 bytes */
    CHECK(fusegen_why_not(&named[0], &p, NULL, 0) == NULL);
}

/* Row kernels: the ping-pong schedule counts 78 at K <= 1024 as it does for split kernels. */
static void test_query_pingpong_row(void)
{
    const fusegen_kernel table[] = {
        hopper_row("ln_sm90a_128x256x64_s3_row", 128, 256, 3, 0),
        hopper_row("ln_sm90a_64x256x64_s4_row", 64, 256, 4, 1),
    };
    const fusegen_library lib = {.name = "ppr", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 2};
    const fusegen_kernel *out[2];
    size_t n = 0;
    fusegen_problem p = ln_problem(256, 256, 1024);   /* 256 * 78 < 256 * 80 */
    CHECK(fusegen_query(&lib, &p, out, 2, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &table[1] && out[1] == &table[0]);
    p = ln_problem(256, 256, 1032);                    /* 256 * 80 < 256 * 90 */
    CHECK(fusegen_query(&lib, &p, out, 2, &n) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &table[0] && out[1] == &table[1]);
}

/* The Hopper 128x160 tile: first where N is a multiple of 160 and not of 256 (it pads nothing
 * and, at equal column cost, is the larger tile), never where a 256-column tile pads nothing. */
static void test_query_tile_n160(void)
{
    const fusegen_kernel wide = split_variant("ln_sm90a_128x256x64_s3_split", 128, 256, 32771, 90);
    const fusegen_kernel narrow = split_variant("ln_sm90a_128x128x64_s5_split", 128, 128, 16389, 90);
    const fusegen_kernel n160 = split_variant("ln_sm90a_128x160x64_s5_split", 128, 160, 20485, 90);
    const fusegen_kernel table[] = {wide, narrow, n160};
    const fusegen_library lib = {.name = "n160", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 3};
    const fusegen_kernel *out[3];
    size_t n = 0;
    fusegen_problem p = ln_problem(256, 640, 2560);     /* 640 * 90 twice (160 the larger), < 768 * 80 */
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[2] && out[1] == &table[1] && out[2] == &table[0]);
    p = ln_problem(256, 320, 320);                      /* 320 * 90 < 384 * 90 < 512 * 80 */
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[2] && out[1] == &table[1] && out[2] == &table[0]);
    p = ln_problem(256, 768, 3072);                     /* 768 * 80 < 768 * 90 < 800 * 90 */
    CHECK(fusegen_query(&lib, &p, out, 3, &n) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[0] && out[1] == &table[1] && out[2] == &table[2]);
}

/* Split-K variants of both families follow one rule (dispatch.c): first where the device would
 * sit mostly idle without them, then fewer slices first, and at equal slices and column cost
 * (here: the same tiles) the Hopper one. */
static void test_query_split_k_families(void)
{
    fusegen_kernel portable = split_variant("ln_sm80_64x128x64_s4_splitk", 64, 128, 8196, 80);
    fusegen_kernel hopper = split_variant("ln_sm90a_64x128x64_s4_splitk", 64, 128, 8196, 90);
    const fusegen_kernel split = split_variant("ln_sm90a_128x256x64_s3_split", 128, 256, 32771, 90);
    const fusegen_kernel *out[3];
    size_t n = 0;
    portable.split_k = hopper.split_k = 1;
    portable.strategy = hopper.strategy = FUSEGEN_STRATEGY_NONE;
    portable.tile_k = hopper.tile_k = 64;
    const fusegen_kernel table[] = {portable, hopper, split};
    const fusegen_library lib = {.name = "sk", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 3};
    /* M = 1, N = 1024, K = 4096 on 132 SMs: 8 tiles, 16 slices each */
    fusegen_problem p = ln_problem(1, 1024, 4096);
    CHECK(fusegen__query_sms(&lib, &p, out, 3, &n, 132) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[1] && out[1] == &table[0] && out[2] == &table[2]);
    /* an unknown device: split K last, the Hopper variant still first of the two */
    CHECK(fusegen__query_sms(&lib, &p, out, 3, &n, 0) == FUSEGEN_OK && n == 3);
    CHECK(out[0] == &table[2] && out[1] == &table[1] && out[2] == &table[0]);
    /* tiles that fill the device: last */
    p = ln_problem(4096, 1024, 4096);
    CHECK(fusegen__query_sms(&lib, &p, out, 3, &n, 132) == FUSEGEN_OK && n == 3 && out[0] == &table[2]);
    /* fewer slices (longer k tiles: 8 slices against 16) before the family */
    fusegen_kernel fewer[] = {portable, hopper};
    fewer[0].tile_k = 128;
    const fusegen_library lib2 = {.name = "sk", .generator_version = "0.1.0", .spec_sha256 = "0",
                                  .kernels = fewer, .n_kernels = 2};
    p = ln_problem(1, 1024, 4096);
    CHECK(fusegen__query_sms(&lib2, &p, out, 3, &n, 132) == FUSEGEN_OK && n == 2);
    CHECK(out[0] == &fewer[0] && out[1] == &fewer[1]);
    /* off sm_90 only the portable one */
    p.sm = 80;
    CHECK(fusegen__query_sms(&lib, &p, out, 3, &n, 108) == FUSEGEN_OK && n == 1 && out[0] == &table[0]);
}

/* A plain GEMM (no norm) where split K would go first: an unsliced Hopper tile whose waves keep
 * more than two thirds of the SMs busy goes before it (dispatch.c, unsliced_fill_*), not at long K,
 * not when its tiles leave the SMs idle. */
static fusegen_kernel plain_variant(const char *name, int tile_m, int tile_n, int split_k)
{
    fusegen_kernel k = g_kernels[K_F16_GELU];
    k.name = name;
    k.sm = 90;
    k.arch_specific = 1;
    k.family = FUSEGEN_FAMILY_HOPPER;
    k.schedule = FUSEGEN_SCHEDULE_COOPERATIVE;
    k.tile_m = tile_m;
    k.tile_n = tile_n;
    k.tile_k = 64;
    k.split_k = split_k;
    k.rank = tile_m * tile_n / 4;
    return k;
}

static void test_query_plain_fill(void)
{
    fusegen_kernel table[] = {plain_variant("gelu_sm90a_64x256x64_s4_splitk", 64, 256, 1),
                              plain_variant("gelu_sm90a_64x128x64_s4", 64, 128, 0)};
    const fusegen_library lib = {.name = "pf", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 2};
    fusegen_problem p = ln_problem(256, 4096, 4096);
    p.a = p.b = p.out = FUSEGEN_DTYPE_F16;
    p.epilogue = "scale+bias+gelu";
    /* 256 x 4096: 128 tiles of 64 x 128 on 132 SMs (97%): unsliced first */
    CHECK(first_on_132(&lib, &p, 2) == &table[1]);
    /* K 11008: split K first */
    p.k = 11008;
    CHECK(first_on_132(&lib, &p, 2) == &table[0]);
    /* M 64: 32 tiles (24%): split K first; M 16, N 8192 with a 64 x 64 tile: 128 tiles, unsliced
     * first (128 x 128 tiles would fill half the SMs: split K's zone) */
    p.k = 4096;
    p.m = 64;
    CHECK(first_on_132(&lib, &p, 2) == &table[0]);
    p.m = 16;
    p.n = 8192;
    table[1].tile_n = 64;
    CHECK(first_on_132(&lib, &p, 2) == &table[1]);
    table[1].tile_n = 128;
    p.n = 4096;
    /* without a norm split K needs K >= 2048 (split_k_plain_min_k): at M 64, K 1024 unsliced first */
    p.m = 64;
    p.k = 1024;
    CHECK(first_on_132(&lib, &p, 2) == &table[1]);
    p.k = 2048;
    CHECK(first_on_132(&lib, &p, 2) == &table[0]);
    p.k = 4096;
    /* 128 x 5120: 80 tiles, 61% of the SMs: split K first */
    p.m = 128;
    p.n = 5120;
    CHECK(first_on_132(&lib, &p, 2) == &table[0]);
}

/* With a norm: a split-K variant of 8 stages or more whose slices come to one in a single wave
 * goes before one of two slices (dispatch.c, unsliced_fill_norm_*); not one of 4 stages, not
 * over two waves. */
static void test_query_one_slice_norm(void)
{
    fusegen_kernel two = split_variant("ln_sm90a_128x128x64_s5_splitk", 128, 128, 16389, 90);
    fusegen_kernel one = split_variant("ln_sm90a_128x64x64_s8_splitk", 128, 64, 8200, 90);
    two.split_k = one.split_k = 1;
    two.strategy = one.strategy = FUSEGEN_STRATEGY_NONE;
    two.tile_k = one.tile_k = 64;
    two.stages = 5;
    one.stages = 8;
    fusegen_kernel table[] = {two, one};
    const fusegen_library lib = {.name = "os", .generator_version = "0.1.0", .spec_sha256 = "0",
                                 .kernels = table, .n_kernels = 2};
    /* 256 x 4096: 128 tiles of 128 x 64 (one slice, 97%) against 64 of 128 x 128 (two slices) */
    fusegen_problem p = ln_problem(256, 4096, 4096);
    CHECK(first_on_132(&lib, &p, 2) == &table[1]);
    /* 4 stages: two slices first */
    table[1].stages = 4;
    CHECK(first_on_132(&lib, &p, 2) == &table[0]);
    /* a 64 x 64 tile of 12 stages: 256 tiles, one slice in two waves: two slices of 128 x 128 first */
    table[1].stages = 12;
    table[1].tile_m = 64;
    CHECK(first_on_132(&lib, &p, 2) == &table[0]);
}

static void test_query_order(void)
{
    const fusegen_kernel *out[8];
    size_t n = 99;
    fusegen_problem p = ln_problem(256, 1024, 512);

    /* sm 90: the sm_90a row kernel first, then the sm_80 row kernel, then both split kernels in
     * table order (equal rank) */
    CHECK(fusegen_query(&g_lib, &p, out, 8, &n) == FUSEGEN_OK);
    CHECK(n == 4);
    CHECK(out[0] == K(K_ROW90A) && out[1] == K(K_ROW80) && out[2] == K(K_SPLIT_A) && out[3] == K(K_SPLIT_B));
    CHECK(fusegen_last_detail()[0] == '\0');

    /* cap smaller than the count: best first, n_found still counts all */
    out[0] = out[1] = out[2] = NULL;
    CHECK(fusegen_query(&g_lib, &p, out, 2, &n) == FUSEGEN_OK);
    CHECK(n == 4 && out[0] == K(K_ROW90A) && out[1] == K(K_ROW80) && out[2] == NULL);

    /* counting only */
    CHECK(fusegen_query(&g_lib, &p, NULL, 0, &n) == FUSEGEN_OK && n == 4);

    /* sm 80: the arch-specific kernel drops out */
    p.sm = 80;
    CHECK(fusegen_query(&g_lib, &p, out, 8, &n) == FUSEGEN_OK);
    CHECK(n == 3 && out[0] == K(K_ROW80) && out[1] == K(K_SPLIT_A) && out[2] == K(K_SPLIT_B));

    /* N beyond the row kernels' max_n: only split kernels */
    p = ln_problem(256, 2048, 512);
    CHECK(fusegen_query(&g_lib, &p, out, 8, &n) == FUSEGEN_OK);
    CHECK(n == 2 && out[0] == K(K_SPLIT_A) && out[1] == K(K_SPLIT_B));

    /* a chain problem matches only the chain kernel */
    p = chain_problem();
    CHECK(fusegen_query(&g_lib, &p, out, 8, &n) == FUSEGEN_OK);
    CHECK(n == 1 && out[0] == K(K_CHAIN));

    /* nothing eligible: the detail lists each kernel with its reason */
    p = ln_problem(256, 1024, 512);
    p.sm = 75;
    EXPECT_FAIL(fusegen_query(&g_lib, &p, out, 8, &n), FUSEGEN_ERR_NOT_SUPPORTED, "ln_sm80_128x128x64_s3_row: ",
                "p->sm = 75 but the kernel needs sm_80");
    CHECK(n == 0);
    CHECK(strstr(fusegen_last_detail(), "gelu_sm80_128x128x32_s4: p->a = bf16 but the kernel takes a = f16") != NULL);
    CHECK(strstr(fusegen_last_detail(), "library 'fake'") != NULL);
    CHECK(strlen(fusegen_last_detail()) < 1024);

    /* bad arguments */
    EXPECT_FAIL(fusegen_query(NULL, &p, out, 8, &n), FUSEGEN_ERR_INVALID_ARGUMENT, "lib", NULL);
    EXPECT_FAIL(fusegen_query(&g_lib, NULL, out, 8, &n), FUSEGEN_ERR_INVALID_ARGUMENT, "p ", NULL);
    EXPECT_FAIL(fusegen_query(&g_lib, &p, NULL, 8, &n), FUSEGEN_ERR_INVALID_ARGUMENT, "out is NULL", "cap = 8");
}

static void test_query_truncates(void)
{
    /* many ineligible kernels with long names: the listing stays within the detail and says
     * how many it left out */
    enum { MANY = 40 };
    static fusegen_kernel many[MANY];
    static char names[MANY][80];
    fusegen_library lib = {"many", "0.1.0", "0", many, MANY, NULL, 0};
    fusegen_problem p = ln_problem(64, 64, 64);
    const fusegen_kernel *out[1];
    size_t n;
    int i;
    for (i = 0; i < MANY; i++) {
        many[i] = g_kernels[K_F16_GELU];
        snprintf(names[i], sizeof names[i], "a_rather_long_kernel_name_for_listing_tests_number_%02d", i);
        many[i].name = names[i];
    }
    EXPECT_FAIL(fusegen_query(&lib, &p, out, 1, &n), FUSEGEN_ERR_NOT_SUPPORTED, "number_00: p->a = bf16",
                "more (fusegen_why_not gives each reason)");
    CHECK(strlen(fusegen_last_detail()) < 1024);
    CHECK(strstr(fusegen_last_detail(), "number_39") == NULL);
}

static void test_why_not(void)
{
    char buf[256];
    fusegen_problem p = ln_problem(256, 1024, 512);
    fusegen_problem c = chain_problem();
    const char *r;

    CHECK(fusegen_why_not(K(K_ROW80), &p, buf, sizeof buf) == NULL);
    r = fusegen_why_not(K(K_ROW80), NULL, buf, sizeof buf);
    CHECK(r == buf && strstr(r, "problem is NULL"));
    r = fusegen_why_not(K(K_F16_GELU), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "p->a = bf16 but the kernel takes a = f16"));
    p.out = FUSEGEN_DTYPE_F32;
    r = fusegen_why_not(K(K_ROW80), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "p->out = f32"));
    p.out = (fusegen_dtype)9;
    r = fusegen_why_not(K(K_ROW80), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "p->out = 9 is not a fusegen_dtype"));
    p = ln_problem(256, 1024, 512);
    p.b_layout = FUSEGEN_LAYOUT_KN;
    r = fusegen_why_not(K(K_ROW80), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "p->b_layout = kn but the kernel takes b_layout = nk"));
    p = ln_problem(256, 1024, 512);
    p.epilogue = "bias+residual+layernorm+relu";
    r = fusegen_why_not(K(K_ROW80), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "p->epilogue = \"bias+residual+layernorm+relu\"") && strstr(r, LN_SIG));
    p.epilogue = NULL;
    r = fusegen_why_not(K(K_ROW80), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "p->epilogue is NULL"));

    /* chain-ness both ways, and GEMM2's fields */
    p = ln_problem(256, 1024, 512);
    p.n2 = 256;
    p.epilogue2 = "bias+relu";
    r = fusegen_why_not(K(K_ROW80), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "single GEMM"));
    p.epilogue2 = NULL;   /* n2 > 0 makes a chain, which needs GEMM2's signature */
    r = fusegen_why_not(K(K_ROW80), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "p->epilogue2 is NULL"));
    p.epilogue = "bias+residual+layernorm";
    p.n2 = 0;
    p.epilogue2 = "bias+relu";
    r = fusegen_why_not(K(K_CHAIN), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "p->epilogue2 is set, which makes a chain, but p->n2 = 0"));
    p.epilogue2 = NULL;
    r = fusegen_why_not(K(K_CHAIN), &p, buf, sizeof buf);
    CHECK(r && strstr(r, "chain") && strstr(r, "one GEMM"));
    CHECK(fusegen_why_not(K(K_CHAIN), &c, buf, sizeof buf) == NULL);
    c.b2_layout = FUSEGEN_LAYOUT_KN;
    r = fusegen_why_not(K(K_CHAIN), &c, buf, sizeof buf);
    CHECK(r && strstr(r, "p->b2_layout = kn"));
    c = chain_problem();
    c.epilogue2 = "bias+gelu";
    r = fusegen_why_not(K(K_CHAIN), &c, buf, sizeof buf);
    CHECK(r && strstr(r, "p->epilogue2 = \"bias+gelu\""));
    c = chain_problem();
    c.epilogue2 = NULL;   /* n2 > 0 still makes it a chain */
    r = fusegen_why_not(K(K_CHAIN), &c, buf, sizeof buf);
    CHECK(r && strstr(r, "p->epilogue2 is NULL"));

    /* no buffer: a thread-local one is used */
    p = ln_problem(256, 1024, 512);
    p.sm = 75;
    r = fusegen_why_not(K(K_ROW80), &p, NULL, 0);
    CHECK(r && strstr(r, "sm_80"));

    /* a tiny buffer is cut, not overrun */
    {
        char tiny[8];
        memset(tiny, 'x', sizeof tiny);
        r = fusegen_why_not(K(K_ROW80), &p, tiny, sizeof tiny);
        CHECK(r == tiny && strlen(tiny) == 7 && strcmp(tiny + 4, "...") == 0);
    }
}

static void test_select_find(void)
{
    const fusegen_kernel *k = NULL;
    fusegen_problem p = ln_problem(256, 1024, 512);

    CHECK(fusegen_select(&g_lib, &p, &k) == FUSEGEN_OK && k == K(K_ROW90A));
    p.sm = 86;
    CHECK(fusegen_select(&g_lib, &p, &k) == FUSEGEN_OK && k == K(K_ROW80));
    p.n = 4096;
    CHECK(fusegen_select(&g_lib, &p, &k) == FUSEGEN_OK && k == K(K_SPLIT_A));
    p.sm = 70;
    k = K(0);
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_NOT_SUPPORTED, "sm_80", NULL);
    CHECK(k == NULL);
    EXPECT_FAIL(fusegen_select(&g_lib, &p, NULL), FUSEGEN_ERR_INVALID_ARGUMENT, "out", NULL);

    CHECK(fusegen_find(&g_lib, "ln_sm80_64x256x32_s4_split", &k) == FUSEGEN_OK && k == K(K_SPLIT_B));
    CHECK(fusegen_last_detail()[0] == '\0');
    EXPECT_FAIL(fusegen_find(&g_lib, "ln_sm80_64x256x32_s4", &k), FUSEGEN_ERR_NOT_FOUND,
                "'ln_sm80_64x256x32_s4'", "library 'fake'");
    CHECK(k == NULL);
    EXPECT_FAIL(fusegen_find(&g_lib, "ln", &k), FUSEGEN_ERR_NOT_FOUND, "4 variant(s)", "fusegen_select");
    EXPECT_FAIL(fusegen_find(&g_lib, NULL, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "name", NULL);
    EXPECT_FAIL(fusegen_find(NULL, "ln", &k), FUSEGEN_ERR_INVALID_ARGUMENT, "lib", NULL);
    EXPECT_FAIL(fusegen_find(&g_lib, "ln", NULL), FUSEGEN_ERR_INVALID_ARGUMENT, "out", NULL);
}

static void test_workspace_size(void)
{
    fusegen_problem p = ln_problem(100, 1000, 256);
    fusegen_problem c = chain_problem();
    size_t bytes = 1;
    fusegen_ws_layout l;

    CHECK(fusegen_workspace_size(K(K_ROW80), &p, &bytes) == FUSEGEN_OK && bytes == 0);
    /* split, tile_n 128: prenorm 100*1000 f32, then 100 rows x 8 tiles of (mean, M2) */
    CHECK(fusegen_workspace_size(K(K_SPLIT_A), &p, &bytes) == FUSEGEN_OK);
    CHECK(bytes == align256(100u * 1000u * 4u) + align256(100u * 8u * 8u));
    CHECK(bytes == 406528u);
    /* tile_n 256: 4 tiles */
    CHECK(fusegen_workspace_size(K(K_SPLIT_B), &p, &bytes) == FUSEGEN_OK);
    CHECK(bytes == align256(400000u) + align256(100u * 4u * 8u));
    l = fusegen_ws_layout_for(1, 128, 0, 2, 100, 1000);
    CHECK(l.prenorm == 0 && l.stats == 400128u && l.total == 406528u);
    /* chain: the bf16 hidden [M, N], its rows 1024 elements apart (N rounded up to 64) */
    CHECK(fusegen_workspace_size(K(K_CHAIN), &c, &bytes) == FUSEGEN_OK);
    CHECK(bytes == align256(100u * 1024u * 2u) && bytes == 204800u);
    CHECK(fusegen_ws_hidden_ld(1000) == 1024 && fusegen_ws_hidden_ld(1024) == 1024 && fusegen_ws_hidden_ld(1) == 64);

    /* ineligible problems and bad arguments report like run does */
    p.sm = 75;
    bytes = 7;
    EXPECT_FAIL(fusegen_workspace_size(K(K_SPLIT_A), &p, &bytes), FUSEGEN_ERR_ARCH, "p->sm = 75", NULL);
    CHECK(bytes == 0);
    p = ln_problem(0, 1000, 256);
    EXPECT_FAIL(fusegen_workspace_size(K(K_SPLIT_A), &p, &bytes), FUSEGEN_ERR_INVALID_ARGUMENT, "p->m = 0", NULL);
    EXPECT_FAIL(fusegen_workspace_size(NULL, &p, &bytes), FUSEGEN_ERR_INVALID_ARGUMENT, "k ", NULL);
    EXPECT_FAIL(fusegen_workspace_size(K(K_SPLIT_A), NULL, &bytes), FUSEGEN_ERR_INVALID_ARGUMENT, "p ", NULL);
    EXPECT_FAIL(fusegen_workspace_size(K(K_SPLIT_A), &p, NULL), FUSEGEN_ERR_INVALID_ARGUMENT, "bytes", NULL);
}

/* Runs k on p with args and a workspace; expects want with the given detail substrings and no
 * launch. */
#define RUN_FAIL(k, p, args, ws, ws_bytes, want, sub1, sub2)                                       \
    do {                                                                                           \
        g_launches = 0;                                                                            \
        EXPECT_FAIL(fusegen_run((k), (p), (args), (ws), (ws_bytes), (cudaStream_t)0), (want), (sub1), (sub2)); \
    } while (0)

static void test_run_problem_errors(void)
{
    const fusegen_kernel *k = K(K_ROW80);
    fusegen_args a = good_args();
    fusegen_problem p;

#define BAD(field_assign, want, sub1, sub2)                                                        \
    do {                                                                                           \
        p = ln_problem(256, 1024, 512);                                                            \
        field_assign;                                                                              \
        RUN_FAIL(k, &p, &a, NULL, 0, want, sub1, sub2);                                            \
    } while (0)

    /* sizes */
    BAD(p.m = 0, FUSEGEN_ERR_INVALID_ARGUMENT, "p->m = 0 must be > 0", NULL);
    BAD(p.n = 0, FUSEGEN_ERR_INVALID_ARGUMENT, "p->n = 0", NULL);
    BAD(p.k = 0, FUSEGEN_ERR_INVALID_ARGUMENT, "p->k = 0", NULL);
    BAD(p.m = -3, FUSEGEN_ERR_INVALID_ARGUMENT, "p->m = -3", NULL);
    BAD(p.n = -8, FUSEGEN_ERR_INVALID_ARGUMENT, "p->n = -8", NULL);
    BAD(p.k = -1, FUSEGEN_ERR_INVALID_ARGUMENT, "p->k = -1", NULL);
    BAD(p.m = (int64_t)1 << 31, FUSEGEN_ERR_INVALID_ARGUMENT, "p->m = 2147483648 must be < 2^31", NULL);
    BAD(p.k = INT64_MAX, FUSEGEN_ERR_INVALID_ARGUMENT, "p->k", "2^31");
    BAD(p.n2 = -1, FUSEGEN_ERR_INVALID_ARGUMENT, "p->n2 = -1", NULL);
    BAD(p.m = 65535 * 128 + 1, FUSEGEN_ERR_NOT_SUPPORTED, "row tiles", "65535");
    BAD(p.n = 2048, FUSEGEN_ERR_NOT_SUPPORTED, "p->n = 2048 exceeds the kernel's max_n = 1024", NULL);
    /* alignment of sizes */
    BAD(p.k = 516, FUSEGEN_ERR_MISALIGNED, "p->k = 516 is not a multiple of 8", NULL);
    BAD(p.n = 1020, FUSEGEN_ERR_MISALIGNED, "p->n = 1020", NULL);
    /* leading dimensions */
    BAD(p.lda = 256, FUSEGEN_ERR_INVALID_ARGUMENT, "p->lda = 256 is less than the row length k = 512", NULL);
    BAD(p.lda = 516, FUSEGEN_ERR_MISALIGNED, "p->lda = 516 is not a multiple of 8", NULL);
    BAD(p.lda = -512, FUSEGEN_ERR_INVALID_ARGUMENT, "p->lda = -512 is negative", NULL);
    BAD(p.lda = (int64_t)1 << 61, FUSEGEN_ERR_INVALID_ARGUMENT, "p->lda", "2^63 bytes");
    BAD(p.ldb = 504, FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldb = 504", "k = 512");   /* nk: row length is k */
    BAD(p.ldo = 1000, FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldo = 1000", "n = 1024");
    BAD(p.ldr = 1028, FUSEGEN_ERR_MISALIGNED, "p->ldr = 1028", NULL);
    BAD(p.ld_store[0] = 8, FUSEGEN_ERR_INVALID_ARGUMENT, "p->ld_store[0] = 8", NULL);
    /* dtype, epilogue */
    BAD(p.a = FUSEGEN_DTYPE_F16, FUSEGEN_ERR_NOT_SUPPORTED, "p->a = f16", NULL);
    BAD(p.b = (fusegen_dtype)0, FUSEGEN_ERR_INVALID_ARGUMENT, "p->b = 0 is not a fusegen_dtype", NULL);
    BAD(p.b_layout = (fusegen_layout)5, FUSEGEN_ERR_INVALID_ARGUMENT, "p->b_layout = 5", NULL);
    BAD(p.epilogue = "bias", FUSEGEN_ERR_NOT_SUPPORTED, "p->epilogue = \"bias\"", NULL);
    BAD(p.epilogue = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "p->epilogue is NULL", NULL);
    /* architecture */
    BAD(p.sm = 75, FUSEGEN_ERR_ARCH, "p->sm = 75 but the kernel needs sm_80 or newer", NULL);
    BAD(p.sm = -1, FUSEGEN_ERR_INVALID_ARGUMENT, "p->sm = -1", NULL);
    k = K(K_ROW90A);
    BAD(p.sm = 80, FUSEGEN_ERR_ARCH, "p->sm = 80", "sm_90a only");
    BAD(p.sm = 100, FUSEGEN_ERR_ARCH, "p->sm = 100", "sm_90a only");
    /* the failing kernel is named */
    BAD(p.sm = 80, FUSEGEN_ERR_ARCH, "kernel ln_sm90a_128x128x64_s3_row cannot run", NULL);

    /* sizes whose products overflow: the split workspace (m * n * 4 + stats) passes SIZE_MAX */
    k = K(K_SPLIT_A);
    BAD((p.m = 2147482624, p.n = 2147482624), FUSEGEN_ERR_INVALID_ARGUMENT, "workspace", "size_t");
    /* the kn kernel: ldb's row length is n, and its align is 4 */
    k = K(K_F32_KN);
    p = ln_problem(64, 256, 128);
    p.epilogue = "residual+gelu_tanh";
    p.out = FUSEGEN_DTYPE_F32;
    p.b_layout = FUSEGEN_LAYOUT_KN;
    p.ldb = 200;
    RUN_FAIL(k, &p, &a, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldb = 200 is less than the row length n = 256", NULL);
    p.ldb = 258;
    RUN_FAIL(k, &p, &a, NULL, 0, FUSEGEN_ERR_MISALIGNED, "p->ldb = 258 is not a multiple of 4", NULL);

    /* chain sizes and leading dims */
    k = K(K_CHAIN);
    p = chain_problem();
    p.n2 = 500;
    RUN_FAIL(k, &p, &a, FAKE_PTR(20), 1u << 20, FUSEGEN_ERR_MISALIGNED, "p->n2 = 500", NULL);
    p = chain_problem();
    p.ldb2 = 512;   /* nk: B2 is [N2, N], row length n = 1000 */
    RUN_FAIL(k, &p, &a, FAKE_PTR(20), 1u << 20, FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldb2 = 512", "n = 1000");
    p = chain_problem();
    p.ldo2 = 256;
    RUN_FAIL(k, &p, &a, FAKE_PTR(20), 1u << 20, FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldo2 = 256", "n2 = 512");
    p = chain_problem();
    p.m = 64 * 65535 + 1;   /* GEMM1 tiles of 128 fit, GEMM2 tiles of 64 do not */
    RUN_FAIL(k, &p, &a, FAKE_PTR(20), (size_t)1 << 40, FUSEGEN_ERR_NOT_SUPPORTED, "GEMM2", "65535");
#undef BAD
}

/* A gated activation (swiglu): out, the residual and the stores have N / 2 columns, which the
 * leading dimensions' checks use, and N must be whole blocks of 8 gate and 8 up columns. */
static void test_run_gated(void)
{
    static const fusegen_op ops[] = {{FUSEGEN_OP_A_RMSNORM, 1e-5, 0, 0}, {FUSEGEN_OP_SWIGLU, 0.0, 0, 0},
                                     {FUSEGEN_OP_RESIDUAL, 1.0, 0, 0}};
    const fusegen_kernel k = {
        .name = "gate_sm80_128x128x64_s4", .spec_kernel = "gate", .sm = 80,
        .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,
        .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = "a_rmsnorm+swiglu+residual", .ops = ops, .n_ops = 3,
        .tile_m = 128, .tile_n = 128, .tile_k = 64, .stages = 4, .threads = 256,
        .strategy = FUSEGEN_STRATEGY_NONE, .align_elems = 8, .uses_residual = 1, .rank = 1,
        .launch_jit = fake_launch };
    fusegen_args a = good_args();
    fusegen_problem p = ln_problem(64, 1024, 512);
    p.epilogue = k.epilogue;
    g_launches = 0;
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);
    p.ldo = 512;   /* the output's row: n / 2 */
    p.ldr = 520;
    g_launches = 0;
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);
    p.ldo = 504;
    RUN_FAIL(&k, &p, &a, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldo = 504", "n / 2 = 512");
    p.ldo = 0;
    p.ldr = 256;
    RUN_FAIL(&k, &p, &a, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldr = 256", "n / 2 = 512");
    p = ln_problem(64, 1032, 512);   /* a multiple of 8, not of 16 */
    p.epilogue = k.epilogue;
    RUN_FAIL(&k, &p, &a, NULL, 0, FUSEGEN_ERR_MISALIGNED, "p->n = 1032 is not a multiple of 16", NULL);
}

static void test_run_arg_errors(void)
{
    fusegen_problem p = ln_problem(256, 1024, 512);
    fusegen_problem s = ln_problem(100, 1000, 256);
    fusegen_problem c = chain_problem();
    const fusegen_kernel *row = K(K_ROW80), *split = K(K_SPLIT_A), *chain = K(K_CHAIN);
    fusegen_args a = good_args();
    size_t need = 0;

#define BADARG(field_assign, want, sub1, sub2)                                                     \
    do {                                                                                           \
        a = good_args();                                                                           \
        field_assign;                                                                              \
        RUN_FAIL(row, &p, &a, NULL, 0, want, sub1, sub2);                                          \
    } while (0)

    RUN_FAIL(NULL, &p, &a, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "k ", NULL);
    RUN_FAIL(row, NULL, &a, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "p ", NULL);
    RUN_FAIL(row, &p, NULL, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "args is NULL", NULL);

    BADARG(a.a = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "args.a is NULL", NULL);
    BADARG(a.b = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "args.b is NULL", NULL);
    BADARG(a.out = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "args.out is NULL", NULL);
    BADARG(a.bias = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "args.bias is NULL", NULL);
    BADARG(a.residual = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "args.residual is NULL", NULL);
    BADARG(a.gamma = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "args.gamma is NULL", NULL);
    BADARG(a.beta = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "args.beta is NULL", NULL);
    BADARG(a.store[0] = NULL, FUSEGEN_ERR_INVALID_ARGUMENT, "args.store[0] is NULL", NULL);
    BADARG(a.a = (const void *)0x1008, FUSEGEN_ERR_MISALIGNED, "args.a = 0x1008 is not 16-byte aligned", NULL);
    BADARG(a.out = (void *)0x2004, FUSEGEN_ERR_MISALIGNED, "args.out = 0x2004", NULL);
    BADARG(a.residual = (const void *)0x3008, FUSEGEN_ERR_MISALIGNED, "args.residual = 0x3008 is not 16-byte aligned",
           NULL);
    BADARG(a.gamma = (const void *)0x4002, FUSEGEN_ERR_MISALIGNED, "args.gamma = 0x4002", NULL);
    BADARG(a.store[0] = (void *)0x5001, FUSEGEN_ERR_MISALIGNED, "args.store[0] = 0x5001", NULL);

    /* pointers a kernel does not use are ignored, whatever they hold */
    a = good_args();
    a.b2 = (const void *)0x7;
    a.store[1] = (void *)0x9;
    g_launches = 0;
    CHECK(fusegen_run(row, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);
    /* a kernel without bias/residual does not need them */
    {
        fusegen_problem r = ln_problem(64, 256, 128);
        r.epilogue = "residual+gelu_tanh";
        r.out = FUSEGEN_DTYPE_F32;
        r.b_layout = FUSEGEN_LAYOUT_KN;
        a = good_args();
        a.bias = NULL;
        a.residual = NULL;
        RUN_FAIL(K(K_F32_KN), &r, &a, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "args.residual is NULL", NULL);
    }

    /* chain pointers */
    a = good_args();
    a.b2 = NULL;
    RUN_FAIL(chain, &c, &a, FAKE_PTR(20), 1u << 20, FUSEGEN_ERR_INVALID_ARGUMENT, "args.b2 is NULL", NULL);
    a = good_args();
    a.out2 = (void *)0x1108;
    RUN_FAIL(chain, &c, &a, FAKE_PTR(20), 1u << 20, FUSEGEN_ERR_MISALIGNED, "args.out2 = 0x1108", NULL);
    a = good_args();
    a.bias2 = NULL;
    RUN_FAIL(chain, &c, &a, FAKE_PTR(20), 1u << 20, FUSEGEN_ERR_INVALID_ARGUMENT, "args.bias2 is NULL", NULL);
    a = good_args();
    a.store2[0] = NULL;
    RUN_FAIL(chain, &c, &a, FAKE_PTR(20), 1u << 20, FUSEGEN_ERR_INVALID_ARGUMENT, "args.store2[0] is NULL", NULL);

    /* workspace */
    a = good_args();
    CHECK(fusegen_workspace_size(split, &s, &need) == FUSEGEN_OK && need == 406528u);
    RUN_FAIL(split, &s, &a, NULL, need, FUSEGEN_ERR_WORKSPACE, "workspace is NULL", "406528 bytes");
    RUN_FAIL(split, &s, &a, FAKE_PTR(20), need - 1, FUSEGEN_ERR_WORKSPACE, "workspace_bytes = 406527", "406528 bytes");
    RUN_FAIL(split, &s, &a, FAKE_PTR(20), 0, FUSEGEN_ERR_WORKSPACE, "workspace_bytes = 0", "406528");
    RUN_FAIL(split, &s, &a, (void *)(0x200000 + 128), need, FUSEGEN_ERR_MISALIGNED,
             "workspace = 0x200080 is not 256-byte aligned", NULL);
    RUN_FAIL(chain, &c, &a, NULL, 0, FUSEGEN_ERR_WORKSPACE, "workspace is NULL", "204800 bytes");

    /* unknown kernel name: nothing to run */
    {
        const fusegen_kernel *k = NULL;
        g_launches = 0;
        EXPECT_FAIL(fusegen_find(&g_lib, "ln_sm80_256x128x64_s3_row", &k), FUSEGEN_ERR_NOT_FOUND,
                    "ln_sm80_256x128x64_s3_row", NULL);
        RUN_FAIL(k, &p, &a, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "k (the kernel) is NULL", NULL);
    }

    /* a table entry without kernel functions */
    {
        fusegen_problem b = ln_problem(64, 64, 64);
        b.a = b.b = b.out = FUSEGEN_DTYPE_F32;
        b.epilogue = "relu";
        RUN_FAIL(K(K_BROKEN), &b, &a, NULL, 0, FUSEGEN_ERR_INVALID_ARGUMENT, "has no kernel functions", NULL);
    }
#undef BADARG
}

static void test_run_good(void)
{
    fusegen_problem p = ln_problem(256, 1024, 512);
    fusegen_problem s = ln_problem(100, 1000, 256);
    fusegen_problem c = chain_problem();
    fusegen_args a = good_args();
    size_t need = 0;

    /* success clears an earlier failure's detail */
    p.sm = 75;
    CHECK(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_ERR_ARCH);
    CHECK(fusegen_last_detail()[0] != '\0');
    p.sm = 90;
    g_launches = 0;
    CHECK(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK);
    CHECK(g_launches == 1);
    CHECK(fusegen_last_detail()[0] == '\0');

    /* explicit, padded leading dimensions */
    p.lda = 520; p.ldb = 640; p.ldo = 1032; p.ldr = 2048; p.ld_store[0] = 1024;
    p.ld_store[1] = -5;   /* the kernel has one store: other slots are not looked at */
    g_launches = 0;
    CHECK(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);

    /* split with exactly enough workspace; workspace given to a kernel that needs none */
    CHECK(fusegen_workspace_size(K(K_SPLIT_A), &s, &need) == FUSEGEN_OK);
    g_launches = 0;
    CHECK(fusegen_run(K(K_SPLIT_A), &s, &a, FAKE_PTR(32), need, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);
    g_launches = 0;
    CHECK(fusegen_run(K(K_ROW80), &s, &a, (void *)0x11, 3, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);

    /* chain */
    CHECK(fusegen_workspace_size(K(K_CHAIN), &c, &need) == FUSEGEN_OK);
    g_launches = 0;
    CHECK(fusegen_run(K(K_CHAIN), &c, &a, FAKE_PTR(32), need, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);

    /* a launch that reports a CUDA error */
    {
        fusegen_problem r = ln_problem(64, 256, 128);
        r.epilogue = "residual+gelu_tanh";
        r.out = FUSEGEN_DTYPE_F32;
        r.b_layout = FUSEGEN_LAYOUT_KN;
        g_launches = 0;
        CHECK(fusegen_run(K(K_F32_KN), &r, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_ERR_CUDA);
        CHECK(g_launches == 1);
        CHECK(strstr(fusegen_last_detail(), "cudaErrorInvalidValue") != NULL);
        CHECK(strstr(fusegen_last_detail(), "res_sm80_64x128x64_s3") != NULL);
    }

    /* ... from a cluster kernel: past 8 thread blocks a cluster (a non-portable size) the detail
     * says that the device may not fit it */
    {
        fusegen_kernel cl = *K(K_ROW80);
        cl.name = "ln_sm90_128x128x64_s3_cluster";
        cl.sm = 90;
        cl.strategy = FUSEGEN_STRATEGY_CLUSTER;
        cl.max_n = 2048;
        cl.launch_jit = fake_launch_fails;
        fusegen_problem q = ln_problem(256, 1152, 512);   /* 9 column tiles */
        CHECK(fusegen_run(&cl, &q, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_ERR_CUDA);
        CHECK(strstr(fusegen_last_detail(), "cudaErrorInvalidValue") != NULL);
        CHECK(strstr(fusegen_last_detail(), "non-portable size") != NULL);
        q.n = 1024;   /* 8: a portable cluster, no such remark */
        CHECK(fusegen_run(&cl, &q, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_ERR_CUDA);
        CHECK(strstr(fusegen_last_detail(), "cudaErrorInvalidValue") != NULL);
        CHECK(strstr(fusegen_last_detail(), "non-portable") == NULL);
        /* the same through the JIT's launcher */
        cl.launch_jit = fake_launch_jit_fails;
        q.n = 1152;
        CHECK(fusegen_run(&cl, &q, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_ERR_CUDA);
        CHECK(strstr(fusegen_last_detail(), "CUDA_ERROR_INVALID_CLUSTER_SIZE") != NULL);
        CHECK(strstr(fusegen_last_detail(), "non-portable size") != NULL);
        /* a split kernel that fails at that N: no cluster, no remark */
        fusegen_kernel sp = cl;
        sp.strategy = FUSEGEN_STRATEGY_SPLIT;
        sp.max_n = 0;
        CHECK(fusegen_run(&sp, &q, &a, FAKE_PTR(32), (size_t)1 << 30, (cudaStream_t)0) == FUSEGEN_ERR_CUDA);
        CHECK(strstr(fusegen_last_detail(), "CUDA_ERROR_INVALID_CLUSTER_SIZE") != NULL);
        CHECK(strstr(fusegen_last_detail(), "non-portable") == NULL);
    }
}

/* fusegen_run remembers the last kernel and problem that passed their checks; it must never
 * let another pass unchecked: the same kernel address with other fields (a caller's own kernel
 * rebuilt in place), the same problem struct with another size, or another signature text in
 * the same buffer. */
static void test_run_memo(void)
{
    fusegen_problem p = ln_problem(256, 1024, 512);
    fusegen_args a = good_args();
    fusegen_kernel k = *K(K_ROW80);
    char sig[64];
    p.sm = 90;
    g_launches = 0;
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK);
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 2);
    k.max_n = 512;   /* the same address, a row limit the problem exceeds */
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_ERR_NOT_SUPPORTED);
    CHECK(strstr(fusegen_last_detail(), "max_n = 512") != NULL);
    k = *K(K_ROW80);
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK);
    p.k = 513;   /* the same struct, K no longer a multiple of 8 */
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) != FUSEGEN_OK);
    p.k = 512;
    snprintf(sig, sizeof sig, "%s", p.epilogue);
    p.epilogue = sig;
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK);
    snprintf(sig, sizeof sig, "bias+relu");   /* the same buffer, another signature */
    CHECK(fusegen_run(&k, &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_ERR_NOT_SUPPORTED);
    CHECK(g_launches == 4);
}

/* p->sm = 0 asks the current device. Without a GPU (CI) that is a CUDA error naming the query;
 * with one it resolves to the device's compute capability. Either way nothing else changes. */
static void test_current_device(void)
{
    fusegen_problem p = ln_problem(256, 1024, 512);
    fusegen_args a = good_args();
    const fusegen_kernel *k = NULL;
    fusegen_status st;
    int count = 0;
    int have_gpu = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    (void)cudaGetLastError();

    p.sm = 0;
    st = fusegen_select(&g_lib, &p, &k);
    if (have_gpu) {
        CHECK(st == FUSEGEN_OK || st == FUSEGEN_ERR_NOT_SUPPORTED);
    } else {
        CHECK(st == FUSEGEN_ERR_CUDA);
        CHECK(strstr(fusegen_last_detail(), "p->sm = 0") != NULL);
        g_launches = 0;
        EXPECT_FAIL(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0), FUSEGEN_ERR_CUDA,
                    "compute capability", NULL);
        /* kernels rejected before the arch check never ask the device */
        p.a = FUSEGEN_DTYPE_F16;
        EXPECT_FAIL(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0), FUSEGEN_ERR_NOT_SUPPORTED,
                    "p->a = f16", NULL);
    }
    printf("current device: %s (%s)\n", have_gpu ? "present" : "none", fusegen_status_name(st));
}

/* A bad problem is INVALID_ARGUMENT from every entry point, never "no kernel can run it" (which
 * would send fusegen_select_or_jit to the JIT), and is found before any CUDA call: with p->sm = 0
 * and no GPU the device query would fail with FUSEGEN_ERR_CUDA. */
static void test_bad_problem_first(void)
{
    fusegen_problem p = ln_problem(0, 1024, 512);
    fusegen_args a = good_args();
    const fusegen_kernel *k = NULL, *out[4];
    size_t n = 7, bytes = 1;

    p.sm = 0;
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->m = 0 must be > 0", NULL);
    CHECK(k == NULL);
    CHECK(strstr(fusegen_last_detail(), "no kernel") == NULL);
    EXPECT_FAIL(fusegen_query(&g_lib, &p, out, 4, &n), FUSEGEN_ERR_INVALID_ARGUMENT, "p->m = 0", NULL);
    CHECK(n == 0);
    EXPECT_FAIL(fusegen_workspace_size(K(K_SPLIT_A), &p, &bytes), FUSEGEN_ERR_INVALID_ARGUMENT, "p->m = 0", NULL);
    g_launches = 0;
    EXPECT_FAIL(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0), FUSEGEN_ERR_INVALID_ARGUMENT,
                "p->m = 0", NULL);
    CHECK(g_launches == 0);
    p = ln_problem(256, 1024, (int64_t)1 << 31);
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->k = 2147483648", "2^31");
    p = ln_problem(256, 1024, 512);
    p.out = (fusegen_dtype)9;
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->out = 9", NULL);
    p = ln_problem(256, 1024, 512);
    p.sm = -1;
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->sm = -1", NULL);
    p = ln_problem(256, 1024, 512);
    p.lda = 100;   /* shorter than K whatever the kernel */
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->lda = 100", NULL);

    /* the other leading dimensions that every kernel computing the problem reads: out, the
     * residual and stores its signature lists, a chain's B2 and out2; the rest are not looked at */
    p = ln_problem(256, 1024, 512);
    p.ldo = -8;
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldo = -8", NULL);
    CHECK(strstr(fusegen_last_detail(), "no kernel") == NULL);
    p = ln_problem(256, 1024, 512);
    p.ldr = 999;
    EXPECT_FAIL(fusegen_query(&g_lib, &p, out, 4, &n), FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldr = 999",
                "row length n = 1024");
    p = ln_problem(256, 1024, 512);
    p.ld_store[0] = -1;
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->ld_store[0] = -1", NULL);
    p.ld_store[0] = 0;
    p.ld_store[1] = -1;   /* the signature has one store op */
    CHECK(fusegen_select(&g_lib, &p, &k) == FUSEGEN_OK);
    p = ln_problem(256, 1024, 512);
    p.a = p.b = p.out = FUSEGEN_DTYPE_F16;
    p.epilogue = "scale+bias+gelu";
    p.ldr = -8;           /* no residual op */
    CHECK(fusegen_select(&g_lib, &p, &k) == FUSEGEN_OK && k == K(K_F16_GELU));
    p = chain_problem();
    p.ldo2 = 500;
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldo2 = 500", "n2 = 512");
    p = chain_problem();
    p.ldb2 = 10;
    EXPECT_FAIL(fusegen_select(&g_lib, &p, &k), FUSEGEN_ERR_INVALID_ARGUMENT, "p->ldb2 = 10", "n = 1000");
    p = chain_problem();
    p.ldo = -8;           /* a chain has no out */
    CHECK(fusegen_select(&g_lib, &p, &k) == FUSEGEN_OK);
    /* fusegen_workspace_size reports a bad problem as itself, as fusegen_run does */
    p = ln_problem(256, 1024, 512);
    p.a = (fusegen_dtype)7;
    EXPECT_FAIL(fusegen_workspace_size(K(K_SPLIT_A), &p, &bytes), FUSEGEN_ERR_INVALID_ARGUMENT, "p->a = 7", NULL);
    CHECK(strstr(fusegen_last_detail(), "cannot run") == NULL);

    /* with p->sm = 0, the kernel's own checks and the pointers also come before the device */
    p = ln_problem(256, 1024, 512);
    p.sm = 0;
    a.a = NULL;
    EXPECT_FAIL(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0), FUSEGEN_ERR_INVALID_ARGUMENT,
                "args.a is NULL", NULL);
    a = good_args();
    EXPECT_FAIL(fusegen_run(K(K_SPLIT_A), &p, &a, NULL, 0, (cudaStream_t)0), FUSEGEN_ERR_WORKSPACE,
                "workspace is NULL", NULL);
}

/* Sizes in range whose tiles the kernels' 32-bit counters cannot hold, and a Hopper kernel's
 * TMA stride limit. */
static void test_kernel_size_limits(void)
{
    fusegen_problem p = ln_problem(256, 1024, 2147483640);   /* K + 63 passes 2^31 - 1 */
    fusegen_args a = good_args();
    fusegen_kernel hopper = g_kernels[K_ROW90A];

    g_launches = 0;
    EXPECT_FAIL(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0), FUSEGEN_ERR_NOT_SUPPORTED,
                "p->k = 2147483640 rounded up to k tiles of 64", "32-bit");
    p = ln_problem(256, 2147483528, 64);   /* N + 127 passes it */
    EXPECT_FAIL(fusegen_run(K(K_SPLIT_A), &p, &a, FAKE_PTR(32), (size_t)1 << 62, (cudaStream_t)0),
                FUSEGEN_ERR_NOT_SUPPORTED, "p->n = 2147483528 rounded up to column tiles of 128", NULL);
    p = ln_problem(128 * 65535, 2147482624, 64);   /* 65535 x 16777208 tiles */
    EXPECT_FAIL(fusegen_run(K(K_SPLIT_A), &p, &a, FAKE_PTR(32), SIZE_MAX, (cudaStream_t)0),
                FUSEGEN_ERR_NOT_SUPPORTED, "tiles of 128x128", "2^31 - 1");
    CHECK(g_launches == 0);

    /* a row stride of 2^40 bytes: fine for the portable kernel, not for a TMA descriptor */
    p = ln_problem(2, 1024, 512);
    p.lda = (int64_t)1 << 39;   /* bf16: 2^40 bytes */
    hopper.launch_jit = fake_launch;
    g_launches = 0;
    EXPECT_FAIL(fusegen_run(&hopper, &p, &a, NULL, 0, (cudaStream_t)0), FUSEGEN_ERR_NOT_SUPPORTED,
                "p->lda = 549755813888", "TMA");
    hopper.family = FUSEGEN_FAMILY_PORTABLE;   /* arch-specific code of the portable family (the JIT's) */
    hopper.schedule = FUSEGEN_SCHEDULE_NONE;
    CHECK(fusegen_why_not(&hopper, &p, NULL, 0) == NULL);
    CHECK(fusegen_run(K(K_ROW80), &p, &a, NULL, 0, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);
}

/* A chain kernel's GEMM1 writes into the workspace: args.out and p->ldo are not looked at. */
static void test_chain_ignores_out(void)
{
    fusegen_problem c = chain_problem();
    fusegen_args a = good_args();
    size_t need = 0;
    a.out = NULL;
    c.ldo = 7;
    CHECK(fusegen_workspace_size(K(K_CHAIN), &c, &need) == FUSEGEN_OK);
    g_launches = 0;
    CHECK(fusegen_run(K(K_CHAIN), &c, &a, FAKE_PTR(32), need, (cudaStream_t)0) == FUSEGEN_OK && g_launches == 1);
    a.out2 = NULL;
    g_launches = 0;
    EXPECT_FAIL(fusegen_run(K(K_CHAIN), &c, &a, FAKE_PTR(32), need, (cudaStream_t)0), FUSEGEN_ERR_INVALID_ARGUMENT,
                "args.out2 is NULL", NULL);
}

/* An arch-specific kernel is checked against the current device even when p->sm names one:
 * without a GPU that is a CUDA error, on an sm_90 device a launch, elsewhere FUSEGEN_ERR_ARCH. */
static void test_run_checks_device(void)
{
    fusegen_problem p = ln_problem(256, 1024, 512);
    fusegen_args a = good_args();
    fusegen_kernel hopper = g_kernels[K_ROW90A];
    int count = 0, dev = 0, major = 0, minor = 0;
    int have_gpu = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    fusegen_status st;
    (void)cudaGetLastError();

    hopper.launch_jit = fake_launch;
    p.sm = 90;
    g_launches = 0;
    st = fusegen_run(&hopper, &p, &a, NULL, 0, (cudaStream_t)0);
    if (!have_gpu) {
        CHECK(st == FUSEGEN_ERR_CUDA && g_launches == 0);
        CHECK(strstr(fusegen_last_detail(), "sm_90a only") != NULL);
        return;
    }
    CHECK(cudaGetDevice(&dev) == cudaSuccess);
    CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess);
    CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess);
    if (major * 10 + minor == 90) {
        CHECK(st == FUSEGEN_OK && g_launches == 1);
    } else {
        CHECK(st == FUSEGEN_ERR_ARCH && g_launches == 0);
        CHECK(strstr(fusegen_last_detail(), "p->sm = 90 but the current device is sm_") != NULL);
    }
}

int main(void)
{
    test_status_strings();
    test_query_order();
    test_query_column_cost();
    test_query_pingpong_short_k();
    test_query_pingpong128_split();
    test_query_gemm2_pingpong();
    test_query_col_split_long_k();
    test_query_pingpong_row();
    test_query_jit_portable_row();
    test_query_tile_n160();
    test_query_split_k_families();
    test_query_plain_fill();
    test_query_one_slice_norm();
    test_query_truncates();
    test_why_not();
    test_select_find();
    test_workspace_size();
    test_run_problem_errors();
    test_run_gated();
    test_run_arg_errors();
    test_run_good();
    test_run_memo();
    test_current_device();
    test_bad_problem_first();
    test_kernel_size_limits();
    test_chain_ignores_out();
    test_run_checks_device();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
