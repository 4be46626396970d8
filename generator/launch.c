/* launch.c - see launch.h. Threads and shared memory are the plan's (fg_plan_gemm, sized by
 * arch.c after the family templates); the static_asserts written into every kernel source keep
 * them honest. */
#include "launch.h"

#include <stdio.h>
#include <string.h>

#include "arch.h"

static const char *launch__strategy_name(const fg_plan_kernel *pk, const fg_plan_gemm *g)
{
    if (g->norm == FG_NORM_NONE || pk->split_k) return "STRATEGY_NONE";   /* split K: the partial kernel's */
    return g->strategy == FG_STRATEGY_SPLIT ? "STRATEGY_SPLIT" : g->strategy == FG_STRATEGY_CLUSTER ? "STRATEGY_CLUSTER"
                                                                                                  : "STRATEGY_ROW";
}

static const char *launch__dt_name(fg_dtype t)
{
    return t == FG_DTYPE_F16 ? "DT_F16" : t == FG_DTYPE_BF16 ? "DT_BF16" : "DT_F32";
}

void fg_launch_record(const fg_plan_kernel *pk, int index, fusegen_launch_gemm *out)
{
    const fg_plan_gemm *g = index == 2 ? &pk->g2 : &pk->g1;
    const int norm = g->norm != FG_NORM_NONE;
    memset(out, 0, sizeof *out);
    out->hopper = pk->family == FG_FAMILY_SM90;
    out->tile_m = (int)g->bm;
    out->tile_n = (int)g->bn;
    out->split = norm && !pk->split_k && g->strategy == FG_STRATEGY_SPLIT;
    out->split_k = pk->split_k;   /* a split-K chain slices both GEMMs */
    out->tile_k = (int)g->bk;
    out->split_k_row_smem = out->split_k && norm;
    out->cluster = norm && g->strategy == FG_STRATEGY_CLUSTER;
    out->persistent = pk->family == FG_FAMILY_SM90 && !out->cluster;
    out->dt_ab = (int)pk->spec->a;   /* fg_dtype has fusegen_dtype's values (the registry's) */
    out->dt_out = (int)pk->spec->out;
    out->out_bytes = pk->spec->out == FG_DTYPE_F32 ? 4 : 2;
    out->map_residual = pk->family == FG_FAMILY_SM90 && g->stage_residual;
    out->map_store_slot = pk->family == FG_FAMILY_SM90 ? g->staged_store_slot : -1;
    out->map_out = pk->family == FG_FAMILY_SM90 && g->stage_out ? (out->split ? 2 : 1) : 0;
    out->threads = g->threads;
    out->smem_bytes = (int)g->smem_bytes;
    out->tma_box_a = pk->family == FG_FAMILY_SM90 ? (int)g->bm : 0;
    /* a TMA box spans at most 256 rows: B of a 320-column tile comes in two boxes */
    out->b_kn = g->b_layout == FG_LAYOUT_KN;
    out->tma_box_b = pk->family != FG_FAMILY_SM90 ? 0 : out->b_kn ? (int)g->bk : (int)(g->bn > 256 ? g->bn / 2 : g->bn);
    /* a split-K partial kernel's epilogue writes f32 sums */
    out->epi_box_bytes =
        pk->family == FG_FAMILY_SM90 ? fg_arch_sm90_epilogue_row_bytes(g->bn, out->split_k ? 4 : out->out_bytes) : 0;
}

static void launch__checks(fg_buf *b, const char *library, const fg_plan_kernel *pk, int index)
{
    const fg_plan_gemm *g = index == 2 ? &pk->g2 : &pk->g1;
    fusegen_launch_gemm r;
    fg_launch_record(pk, index, &r);
    /* the variant's namespace: <library>_<variant>, as the kernel template names it (names are
     * at most FG_SPEC_MAX_NAME characters, the variant's suffixes a few dozen) */
    char n[4 * FG_SPEC_MAX_NAME + 128];
    snprintf(n, sizeof n, "%s_%s", library, pk->name);
    fg_buf_printf(b, "static_assert(%s::Gemm%d::kTileM == %d && %s::Gemm%d::kTileN == %d, "
                     "\"fusegen: the tile of %s GEMM%d differs from its launch record\");\n",
                  n, index, r.tile_m, n, index, r.tile_n, n, index);
    fg_buf_printf(b, "static_assert(%s::Gemm%d::kThreads == %d, "
                     "\"fusegen: the block size of %s GEMM%d differs from its launch record\");\n",
                  n, index, r.threads, n, index);
    fg_buf_printf(b, "static_assert(%s::Gemm%d::kSmemBytes == %d, "
                     "\"fusegen: the shared memory of %s GEMM%d differs from its launch record\");\n",
                  n, index, r.smem_bytes, n, index);
    fg_buf_printf(b, "static_assert(%s::Gemm%d::kStrategy == fusegen_sm80::%s, "
                     "\"fusegen: the strategy of %s GEMM%d differs from its launch record\");\n",
                  n, index, launch__strategy_name(pk, g), n, index);
    /* a split-K partial kernel writes f32 sums whatever the output's dtype */
    fg_buf_printf(b, "static_assert(%s::Gemm%d::kOutBytes == %d && %s::Gemm%d::kDtAB == fusegen_sm80::%s, "
                     "\"fusegen: the dtypes of %s GEMM%d differ from its launch record\");\n",
                  n, index, r.split_k ? 4 : r.out_bytes, n, index, launch__dt_name((fg_dtype)r.dt_ab), n, index);
    fg_buf_printf(b, "static_assert(%s::Gemm%d::kSplitK == %s && %s::Gemm%d::kTileK == %d, "
                     "\"fusegen: the K slicing of %s GEMM%d differs from its launch record\");\n",
                  n, index, r.split_k ? "true" : "false", n, index, r.tile_k, n, index);
    fg_buf_printf(b, "static_assert(%s::Gemm%d::kHopper == %s, "
                     "\"fusegen: the family of %s GEMM%d differs from its launch record\");\n",
                  n, index, r.hopper ? "true" : "false", n, index);
    if (r.hopper) {
        fg_buf_printf(b, "static_assert(%s::Gemm%d::kTmaBoxA == %d && %s::Gemm%d::kTmaBoxB == %d && "
                         "%s::Gemm%d::kBKn == %s, "
                         "\"fusegen: the TMA boxes of %s GEMM%d differ from its launch record\");\n",
                      n, index, r.tma_box_a, n, index, r.tma_box_b, n, index, r.b_kn ? "true" : "false", n, index);
        fg_buf_printf(b, "static_assert(%s::Gemm%d::kPersistent == %s, "
                         "\"fusegen: the grid of %s GEMM%d differs from its launch record\");\n",
                      n, index, r.persistent ? "true" : "false", n, index);
        fg_buf_printf(b, "static_assert(%s::Gemm%d::kMapResidual == %s && %s::Gemm%d::kMapStoreSlot == %d && "
                         "%s::Gemm%d::kMapOut == %d && %s::Gemm%d::kDtOut == fusegen_sm80::%s && "
                         "%s::Gemm%d::kTmaBoxEpi == %d && %s::Gemm%d::kTmaBoxEpiBytes == %d, "
                         "\"fusegen: the epilogue maps of %s GEMM%d differ from its launch record\");\n",
                      n, index, r.map_residual ? "true" : "false", n, index, r.map_store_slot, n, index, r.map_out,
                      n, index, r.split_k ? "DT_F32" : launch__dt_name((fg_dtype)r.dt_out), n, index, r.tile_m, n, index,
                      r.epi_box_bytes, n, index);
    }
}

/* The fields of fusegen_params in order, with their C++ types. */
_Static_assert(FUSEGEN_REG_MAX_STORES == 4, "the store arrays below are written as [4]");
static const struct {
    const char *name, *type;
} launch__param_fields[] = {
    {"a", "const void *"}, {"b", "const void *"}, {"out", "void *"},
    {"m", "int"}, {"n", "int"}, {"k", "int"},
    {"lda", "long long"}, {"ldb", "long long"}, {"ldo", "long long"}, {"ldr", "long long"},
    {"bias", "const void *"}, {"residual", "const void *"}, {"gamma", "const void *"}, {"beta", "const void *"},
    {"store", "void *[4]"}, {"ld_store", "long long[4]"},
    {"prenorm", "float *"}, {"stats", "float *"}, {"stats_ld", "int"},
    {"partials", "float *"}, {"k_slices", "int"},
};

/* The parameter block the launcher passes: the same size, the same field names and types, in
 * the same order (NVRTC has no offsetof; the order is compared through the addresses of the
 * family header's constexpr probe). Same types in the same order under the same ABI give the
 * same offsets. */
static void launch__layout_checks(fg_buf *b, int hopper)
{
    const size_t n = sizeof launch__param_fields / sizeof launch__param_fields[0];
    fg_buf_printf(b, "static_assert(sizeof(fusegen_sm80::Params) == %zu, \"fusegen: fusegen_sm80::Params is not "
                     "fusegen_params\");\n",
                  sizeof(fusegen_params));
    for (size_t i = 0; i < n; ++i) {
        fg_buf_printf(b, "static_assert(fusegen_sm80::same_type<decltype(fusegen_sm80::Params::%s), %s>::value, "
                         "\"fusegen: the type of fusegen_sm80::Params::%s changed\");\n",
                      launch__param_fields[i].name, launch__param_fields[i].type, launch__param_fields[i].name);
        if (i + 1 < n)
            fg_buf_printf(b, "static_assert(static_cast<const void *>(&fusegen_sm80::kParamsProbe.%s) < "
                             "static_cast<const void *>(&fusegen_sm80::kParamsProbe.%s), "
                             "\"fusegen: fusegen_sm80::Params::%s no longer comes before %s\");\n",
                          launch__param_fields[i].name, launch__param_fields[i + 1].name, launch__param_fields[i].name,
                          launch__param_fields[i + 1].name);
    }
    /* the Hopper kernels' other parameters: CUtensorMap is 128 bytes */
    if (hopper)
        fg_buf_puts(b, "static_assert(sizeof(fusegen_sm90::TensorMap) == 128 && sizeof(fusegen_sm90::EpilogueMaps) == "
                       "3 * 128, \"fusegen: the Hopper kernels' tensor maps are not CUtensorMaps\");\n");
}

void fg_launch_append_checks(fg_buf *b, const fg_plan *plan, const fg_kernel_spec *k)
{
    int hopper = 0;
    for (size_t i = 0; i < plan->n_kernels; ++i)
        hopper |= plan->kernels[i].spec == k && plan->kernels[i].family == FG_FAMILY_SM90;
    fg_buf_puts(b, "// The runtime's launcher takes these numbers from the dispatch table, not from the types above:\n"
                   "// checked here, so that the two cannot drift apart (generator/launch.c).\n");
    fg_buf_printf(b, "static_assert(fusegen_sm80::NORMALIZE_THREADS == %d, "
                     "\"fusegen: the normalize kernel's block size differs\");\n",
                  FG_LAUNCH_NORMALIZE_THREADS);
    fg_buf_printf(b, "static_assert(fusegen_sm80::SPLIT_K_REDUCE_THREADS == %d, "
                     "\"fusegen: the split-K reduce kernel's block size differs\");\n",
                  FG_LAUNCH_SPLIT_K_REDUCE_THREADS);
    fg_buf_printf(b, "static_assert(fusegen_sm80::SPLIT_K_REDUCE_ROW_THREADS == %d, "
                     "\"fusegen: the split-K reduce kernel's largest block differs\");\n",
                  FG_LAUNCH_SPLIT_K_REDUCE_ROW_THREADS);
    fg_buf_printf(b, "static_assert(fusegen_sm80::MAX_STORES == %d, \"fusegen: MAX_STORES differs\");\n",
                  FUSEGEN_REG_MAX_STORES);
    launch__layout_checks(b, hopper);
    for (size_t i = 0; i < plan->n_kernels; ++i) {
        const fg_plan_kernel *pk = &plan->kernels[i];
        if (pk->spec != k) continue;
        launch__checks(b, plan->spec->library, pk, 1);
        if (pk->chain) launch__checks(b, plan->spec->library, pk, 2);
    }
}
