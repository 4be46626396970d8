/* plan.c - see plan.h. Turns each spec kernel into its variants:
 *   families x tiles (x GEMM2 tiles for chains) x norm strategies (row and/or split).
 * The Hopper family is planned for kernels that list sm_90a, for the tiles it can take; the
 * portable family for every other arch listed, and for sm_90a tiles the Hopper family cannot
 * take. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "spills.h"

/* Operands are 16-bit and loaded 16 bytes at a time, so rows must hold whole 8-element chunks. */
#define PLAN_ALIGN_ELEMS FUSEGEN_REG_ALIGN_ELEMS
/* Most CTAs in a cluster of a cluster variant: 16, past the 8 every sm_90 device schedules (the
 * portable size), as Hopper GPUs do for a kernel that allows non-portable sizes (H100, H200; a
 * GPU or MIG slice with too few SMs a GPC fits none that large, and the launch says so). The
 * exchange slots for 16 cost 8 KB more than for 8 (128-row tiles); every cooperative 128-row
 * tile keeps at 16 the staging it would have at 8. */
#define FG_PLAN_MAX_CLUSTER FUSEGEN_REG_MAX_CLUSTER
/* Split-K variants are planned for tiles of this many rows (either family; Hopper tiles of n up
 * to 256, and its cooperative 128-row ones too: plan__sm90_split_k_tile): a problem with few
 * rows (decode) is the one whose tiles cannot fill the device, and a narrow tile wastes the
 * least of a partial sum's rows. */
#define PLAN_SPLIT_K_TILE_M 64
#define PLAN_SPLIT_K_SM90_MAX_N 256
/* The split-K reduce kernel keeps a row's f32 values in shared memory for the norm: at most
 * this many columns (64 KB, within every arch's limit for one block). */
#define PLAN_SPLIT_K_MAX_NORM_N 16384

static const char *plan__signature(fg_arena *a, const fg_gemm *g)
{
    size_t len = 1;
    for (size_t i = 0; i < g->n_ops; ++i) len += strlen(fg_spec_op_token(&g->ops[i])) + 1;
    char *s = fg_arena_alloc(a, len);
    if (!s) return NULL;
    for (size_t i = 0; i < g->n_ops; ++i) {
        if (i) strcat(s, "+");
        strcat(s, fg_spec_op_token(&g->ops[i]));
    }
    return s;
}

static bool plan__has_op(const fg_op *ops, size_t n, fg_op_kind kind)
{
    for (size_t i = 0; i < n; ++i)
        if (ops[i].kind == kind) return true;
    return false;
}

static bool plan__has_glu(const fg_gemm *g)
{
    for (size_t i = 0; i < g->n_ops; ++i)
        if (fg_spec_op_is_glu(g->ops[i].kind)) return true;
    return false;
}

/* Hopper epilogue staging, decided once the norm has cut the ops. The producer warpgroup's
 * spare warps copy the tile's residual and bias into shared memory while the mainloop runs
 * (read from global memory, with 128 accumulators a thread few reads fit in flight, and each
 * waits a memory latency), and outputs go out through the same tile buffer by bulk copies of
 * whole rows (a warp's direct stores cover 8 rows x 16 bytes). Only the ops the GEMM kernel
 * runs count: a split kernel's ops after the norm run in its normalize kernel. */
static void plan__sm90_staging(fg_plan_gemm *pg, const fg_tile *t, fg_dtype out, int cluster_ranks)
{
    const bool split = pg->norm != FG_NORM_NONE && pg->strategy == FG_STRATEGY_SPLIT;
    pg->cluster_ranks = cluster_ranks;
    pg->smem_bytes = fg_arch_sm90_smem_bytes(t->m, t->n, t->stages, pg->pingpong, cluster_ranks, 0);
    /* A gated activation's epilogue writes half the tile's columns: nothing staged (the tile
     * buffer and its bulk copies are laid out for the GEMM's columns). */
    if (pg->glu) return;
    const fg_op *ops = pg->spec->ops;
    const size_t n_ops = split ? pg->n_pre : pg->spec->n_ops;   /* the ops of the GEMM kernel */
    const bool residual = plan__has_op(ops, n_ops, FG_OP_RESIDUAL), bias = plan__has_op(ops, n_ops, FG_OP_BIAS);

    /* The tile buffer holds the residual until the epilogue has read it: a store op goes
     * through it only when no residual op follows (each thread reads its pair's residual, then
     * writes its pair's value, at the same place). The first such store before the norm. */
    int store_slot = -1;
    for (size_t i = 0, slot = 0; i < pg->n_pre && store_slot < 0; ++i) {
        if (ops[i].kind != FG_OP_STORE) continue;
        if (!plan__has_op(ops + i + 1, n_ops - i - 1, FG_OP_RESIDUAL)) store_slot = (int)slot;
        ++slot;
    }
    /* The split strategy's pre-norm values fit the buffer's f16 rows only as bf16 (f16 out keeps
     * f32 values): those go out directly. */
    const bool out_through = !(split && out == FG_DTYPE_F16);

    size_t base = pg->smem_bytes;
    const bool tile = residual || store_slot >= 0 || out_through;
    const int out_bytes = out == FG_DTYPE_F32 ? 4 : 2;
    /* The staged bias shares the tile buffer's copy and handshake (the template asserts
     * "staging needs the tile buffer"): with nothing for the tile buffer to do (a split kernel
     * with f16 out, no residual and no store before its norm), nothing is staged and the
     * epilogue reads the bias from global memory, as where the staging does not fit. */
    size_t staged = tile ? fg_arch_sm90_staged_inputs_bytes(t->m, t->n, out_bytes, tile, bias, pg->pingpong, 0) : 0;
    /* Where the whole tile does not fit beside the stages (128x256 with 4), a kernel whose
     * buffer only carries out (no norm, no residual, no store op) keeps a ring of two column
     * blocks: the epilogue writes and sends out one block while the copy of the one before
     * reads the other (a warp's direct stores cover 8 rows x 16 bytes; docs/decisions.md, v95).
     * Tiles whose warps split the columns keep their whole buffer (a warp's blocks would depend
     * on its column). */
    const int ring = 2;
    if (staged > 0 && base + staged > fg_arch_smem_limit(FG_ARCH_SM90A) && out_through && !residual &&
        store_slot < 0 && pg->norm == FG_NORM_NONE && !fg_arch_sm90_col_split(t->m, pg->pingpong) &&
        t->n * out_bytes / fg_arch_sm90_epilogue_row_bytes(t->n, out_bytes) > ring) {
        size_t ringed = fg_arch_sm90_staged_inputs_bytes(t->m, t->n, out_bytes, tile, bias, pg->pingpong, ring);
        if (base + ringed <= fg_arch_smem_limit(FG_ARCH_SM90A)) {
            staged = ringed;
            pg->stage_ring = ring;
        }
    }
    if (staged > 0 && base + staged <= fg_arch_smem_limit(FG_ARCH_SM90A)) {
        pg->stage_tile = tile;
        pg->stage_residual = residual;
        pg->stage_bias = bias;
        pg->staged_store_slot = store_slot;
        pg->stage_out = out_through;
        base += staged;
    }
    pg->smem_bytes = base;
}

/* The Hopper tiles with a split-K form: 64 rows, or 128 with the cooperative schedule (for
 * M up to a few hundred: fewer operand bytes a flop than 64-row tiles), n up to 256. */
static bool plan__sm90_split_k_tile(const fg_tile *t)
{
    const bool rows = t->m == PLAN_SPLIT_K_TILE_M || (t->m == 128 && !fg_arch_sm90_pingpong(t->m, t->schedule));
    return rows && t->n <= PLAN_SPLIT_K_SM90_MAX_N;
}

/* A Hopper split-K partial kernel writes raw f32 sums from its registers: nothing is staged (the
 * reduce kernel runs the epilogue), so its shared memory is the stages and the row scratch. */
static void plan__sm90_partial(fg_plan_gemm *pg, const fg_tile *t)
{
    pg->stage_tile = pg->stage_residual = pg->stage_bias = pg->stage_out = false;
    pg->staged_store_slot = -1;
    pg->stage_ring = 0;
    pg->cluster_ranks = 0;
    pg->smem_bytes = fg_arch_sm90_smem_bytes(t->m, t->n, t->stages, pg->pingpong, 0, 0);
}

/* The norm a norm op computes: the registry's norm of the op's word. */
static fg_norm plan__norm_of(fg_op_kind kind)
{
#define PLAN__NORM_WORD(id, word, value) if (strcmp(word, fg_spec_op_name(kind)) == 0) return FG_NORM_##id;
    FUSEGEN_REG_NORMS(PLAN__NORM_WORD)
#undef PLAN__NORM_WORD
    return FG_NORM_NONE;
}

/* Fills the parts of a planned GEMM that depend on the tile and on where the norm is. */
static void plan__gemm(fg_plan_gemm *pg, fg_family family, const fg_gemm *g, fg_dtype out, const fg_tile *t,
                       fg_strategy strategy, const char *sig)
{
    memset(pg, 0, sizeof *pg);
    pg->spec = g;
    pg->bm = t->m; pg->bn = t->n; pg->bk = t->k; pg->stages = t->stages;
    pg->staged_store_slot = -1;
    pg->prenorm_store_slot = -1;
    pg->b_layout = g->b_layout;
    pg->signature = sig;
    pg->pre = g->ops;
    pg->n_pre = g->n_ops;
    pg->a_norm = g->n_ops && g->ops[0].kind == FG_OP_A_RMSNORM ? &g->ops[0] : NULL;
    for (size_t i = 0; i < g->n_ops && !pg->glu; ++i)
        if (fg_spec_op_is_glu(g->ops[i].kind)) pg->glu = &g->ops[i];
    for (size_t i = 0; i < g->n_ops; ++i) {
        const fg_op *op = &g->ops[i];
        if (!fg_spec_op_is_norm(op->kind)) continue;
        pg->norm = plan__norm_of(op->kind);
        pg->norm_op = op;
        pg->strategy = strategy;
        pg->n_pre = i;
        pg->post = g->ops + i + 1;
        pg->n_post = g->n_ops - i - 1;
        break;
    }
    if (family == FG_FAMILY_SM90) {
        /* a producer and two consumer warpgroups; a tile's warps (both consumers' 8, or one's 4
         * in ping-pong) own 16 rows of each 64-row block and all columns */
        pg->pingpong = fg_arch_sm90_pingpong(t->m, t->schedule);
        pg->warps_m = pg->pingpong ? 4 : 8;
        pg->warps_n = 1;
        pg->threads = 3 * 128;
        plan__sm90_staging(pg, t, out, strategy == FG_STRATEGY_CLUSTER ? FG_PLAN_MAX_CLUSTER : 0);
    } else {
        fg_arch_sm80_warps(t->m, t->n, &pg->warps_m, &pg->warps_n);
        pg->threads = pg->warps_m * pg->warps_n * 32;
        pg->smem_bytes = fg_arch_sm80_layout_smem_bytes(t->m, t->n, t->k, t->stages, g->b_layout == FG_LAYOUT_KN);
    }
}

static const fg_op *plan__norm_op(const fg_gemm *g)
{
    for (size_t i = 0; i < g->n_ops; ++i)
        if (fg_spec_op_is_norm(g->ops[i].kind)) return &g->ops[i];
    return NULL;
}

/* The lowest arch the portable family serves for k (sm_90a counts only when `with_90a`). */
static fg_arch plan__lowest_arch(const fg_kernel_spec *k, bool with_90a)
{
    fg_arch best = FG_ARCH_NONE;
    for (size_t i = 0; i < k->n_archs; ++i) {
        if (k->archs[i] == FG_ARCH_SM90A && !with_90a) continue;
        if (best == FG_ARCH_NONE || fg_spec_arch_sm(k->archs[i]) < fg_spec_arch_sm(best)) best = k->archs[i];
    }
    return best;
}

static bool plan__lists(const fg_kernel_spec *k, fg_arch a)
{
    for (size_t i = 0; i < k->n_archs; ++i)
        if (k->archs[i] == a) return true;
    return false;
}

bool fg_plan_sm80_builds(const fg_kernel_spec *k, const fg_gemm *g, const fg_tile *t, size_t smem_limit)
{
    if (smem_limit == 0) {
        smem_limit = fg_arch_smem_limit(FG_ARCH_SM90A);
        for (size_t i = 0; i < k->n_archs; ++i)
            if (k->archs[i] != FG_ARCH_NONE && fg_arch_smem_limit(k->archs[i]) < smem_limit)
                smem_limit = fg_arch_smem_limit(k->archs[i]);
    }
    if (!fg_arch_sm80_tile_m_ok(t->m) || !fg_arch_sm80_tile_n_ok(t->n) || !fg_arch_sm80_tile_k_ok(t->k) ||
        !fg_arch_stages_ok(t->stages, false) || t->m * t->n > FG_ARCH_SM80_MAX_TILE_ELEMS)
        return false;
    if (fg_arch_sm90_only(t->n, t->schedule)) return false;   /* the Hopper family's alone */
    return fg_arch_sm80_layout_smem_bytes(t->m, t->n, t->k, t->stages, g->b_layout == FG_LAYOUT_KN) <= smem_limit;
}

bool fg_plan_sm90_builds(const fg_kernel_spec *k, const fg_gemm *g, const fg_tile *t)
{
    return plan__lists(k, FG_ARCH_SM90A) && fg_arch_sm90_b_layout_ok(g->b_layout, t->n) &&
           fg_arch_sm90_builds(t->m, t->n, t->k, t->stages, fg_arch_sm90_pingpong(t->m, t->schedule));
}

/* Whether a portable variant of these tiles (GEMM1's, and GEMM2's for a chain) exists: both fit
 * the shared memory of every listed arch (check lets a tile exceed an arch's only where the
 * Hopper family builds the tile and another tile fits that arch). */
static bool plan__sm80_fits(const fg_kernel_spec *k, const fg_tile *t1, const fg_tile *t2)
{
    return fg_plan_sm80_builds(k, &k->gemm, t1, 0) && (!k->has_then || fg_plan_sm80_builds(k, &k->then, t2, 0));
}

/* Whether the Hopper family can run this variant's GEMMs: their tile shapes and B layouts. */
static bool plan__sm90_ok(const fg_kernel_spec *k, const fg_tile *t1, const fg_tile *t2)
{
    return fg_plan_sm90_builds(k, &k->gemm, t1) && (!k->has_then || fg_plan_sm90_builds(k, &k->then, t2));
}

/* The cluster strategy's exchange serves one tile of each CTA at a time, so not the ping-pong
 * schedule (two tiles in flight), and it needs its shared memory (two slots of 16 ranks x m
 * floats) beside the stages. (Row and cluster norms over 256-column tiles fit the consumers'
 * 224 registers since setmaxnreg: no spills.) */
static bool plan__sm90_strategy_ok(const fg_tile *t1, fg_strategy s, bool auto_strategy)
{
    /* A 64-row cooperative tile (its consumers split the columns) exists to hold whole rows
     * of up to 320 columns in one CTA: the row strategy (no normalize pass) alone. */
    if (fg_arch_sm90_col_split(t1->m, fg_arch_sm90_pingpong(t1->m, t1->schedule)) && (s == FG_STRATEGY_SPLIT || s == FG_STRATEGY_CLUSTER)) return false;
    /* So does the 64x320 ping-pong tile, unless a spec asks for split: as a split kernel it was
     * never faster than 128x160 split (docs/decisions.md v45). Nor does it take a kernel without
     * a norm. */
    if (auto_strategy && t1->m == 64 && t1->n == 320 && s != FG_STRATEGY_ROW) return false;
    if (s != FG_STRATEGY_CLUSTER) return true;
    return !fg_arch_sm90_pingpong(t1->m, t1->schedule) &&
           fg_arch_sm90_smem_bytes(t1->m, t1->n, t1->stages, false, FG_PLAN_MAX_CLUSTER, 0) <=
               fg_arch_smem_limit(FG_ARCH_SM90A);
}

/* The spec's preference among variants that the runtime's dispatch model ranks equal (its
 * strategy, family and cost terms are fields of the kernel: runtime/dispatch.c): larger tiles
 * first, then a staged epilogue, then deeper pipelines. */
static int plan__rank(const fg_tile *t, const fg_plan_gemm *g)
{
    /* a 128-row ping-pong tile after the other tiles of its area: it was slower than the
     * cooperative 128x128 one at K >= 2560 and no faster than 64x256 ping-pong at N = 1024 (the
     * dispatch's column cost still lets it win at K <= 1024 where it wastes fewer columns) */
    int schedule_penalty = g->pingpong && t->m == 128 ? 8 : 0;
    /* a Hopper epilogue staged in shared memory before a deeper pipeline without it (64x320:
     * 3 staged stages beat 4 unstaged; docs/decisions.md v39) */
    int staging_bonus = g->stage_tile ? 8 : 0;
    return (int)(t->m * t->n) + (int)t->stages - schedule_penalty + staging_bonus;
}

static const char *plan__constraints(fg_arena *a, const fg_plan_kernel *pk)
{
    const char *row = pk->max_n ? fg_arena_printf(a, ", N <= %ld", pk->max_n) : "";
    const char *chain = pk->chain ? ", N2 % 8 == 0" : "";
    /* a gated activation: whole blocks of 8 gate and 8 up columns, out rows of N / 2 */
    const int n_align = pk->g1.glu ? 2 * (pk->align_elems > 8 ? pk->align_elems : 8) : pk->align_elems;
    return fg_arena_printf(a, "K %% %d == 0, N %% %d == 0%s%s, 16-byte aligned pointers", pk->align_elems, n_align,
                           chain, row ? row : "");
}

/* A split GEMM whose last op before the norm is a store keeps the norm's input in that
 * store's output (bf16, rounded like the split's own pre-norm copy). The normalize kernel then
 * reads it there, and a tile writes its deviations from the tile mean (the precise copy) only
 * where some row's mean is larger than its spread (Epilogue::norm_epilogue). A chain's GEMM2
 * reads GEMM1's pre-norm values itself: chains keep the copy. */
static void plan__prenorm_store(fg_plan_gemm *pg)
{
    if (pg->norm == FG_NORM_NONE || pg->strategy != FG_STRATEGY_SPLIT || pg->n_pre == 0) return;
    if (pg->pre[pg->n_pre - 1].kind != FG_OP_STORE) return;
    int slot = 0;
    for (size_t i = 0; i + 1 < pg->n_pre; ++i) slot += pg->pre[i].kind == FG_OP_STORE;
    pg->prenorm_store_slot = slot;
}

/* Names mark a schedule only where it is not the one tile m implies (ping-pong for 64,
 * cooperative for 128), so that a spec may list both schedules of one shape. */
static const char *plan__schedule_suffix(fg_family family, const fg_plan_gemm *g)
{
    if (family != FG_FAMILY_SM90 || g->pingpong == (g->bm == 64)) return "";
    return g->pingpong ? "_pingpong" : "_cooperative";
}

static int plan__add(fg_arena *a, fg_plan *plan, size_t cap, fg_family family, const fg_kernel_spec *k,
                     const fg_tile *t1, const fg_tile *t2, fg_strategy strategy, bool split_k, const char *sig1,
                     const char *sig2, fg_diag *d)
{
    if (plan->n_kernels >= cap) {
        fg_diag_error(d, k->ptr, "internal error: too many variants planned");
        return -1;
    }
    fg_plan_kernel *pk = &plan->kernels[plan->n_kernels++];
    pk->spec = k;
    pk->family = family;
    if (family == FG_FAMILY_SM90) {
        pk->arch = FG_ARCH_SM90A;
        pk->arch_specific = true;
    } else {
        /* sm_90a counts for the portable family only when no other arch is listed */
        pk->arch = plan__lowest_arch(k, false);
        if (pk->arch == FG_ARCH_NONE) pk->arch = plan__lowest_arch(k, true);
    }
    pk->sm = fg_spec_arch_sm(pk->arch);
    plan__gemm(&pk->g1, family, &k->gemm, k->out, t1, strategy, sig1);
    if (!k->has_then && k->out == FG_DTYPE_BF16) plan__prenorm_store(&pk->g1);
    pk->chain = k->has_then;
    if (pk->chain) plan__gemm(&pk->g2, family, &k->then, k->out, t2, FG_STRATEGY_AUTO, sig2);
    pk->align_elems = PLAN_ALIGN_ELEMS;
    /* row: one CTA spans N; cluster: one cluster of up to cluster_ranks CTAs does */
    pk->max_n = strategy == FG_STRATEGY_ROW       ? t1->n
                : strategy == FG_STRATEGY_CLUSTER ? pk->g1.cluster_ranks * t1->n
                                                  : 0;
    pk->split_k = split_k;
    if (split_k && pk->g1.norm != FG_NORM_NONE) pk->max_n = PLAN_SPLIT_K_MAX_NORM_N;
    if (split_k && family == FG_FAMILY_SM90) plan__sm90_partial(&pk->g1, t1);
    if (split_k && pk->chain) plan__sm90_partial(&pk->g2, t2);   /* (split-K chains are Hopper only) */
    pk->rank = plan__rank(t1, &pk->g1);

    const char *suffix = split_k                           ? "_splitk"
                         : strategy == FG_STRATEGY_ROW     ? "_row"
                         : strategy == FG_STRATEGY_CLUSTER ? "_cluster"
                         : strategy == FG_STRATEGY_SPLIT   ? "_split"
                                                           : "";
    const char *second = "";
    if (pk->chain && k->then.n_tiles > 0)
        second = fg_arena_printf(a, "_g2_%ldx%ldx%ld_s%ld%s", t2->m, t2->n, t2->k, t2->stages,
                                 plan__schedule_suffix(family, &pk->g2));
    pk->name = fg_arena_printf(a, "%s_%s_%ldx%ldx%ld_s%ld%s%s%s", k->name, family == FG_FAMILY_SM90 ? "sm90a" : "sm80",
                               t1->m, t1->n, t1->k, t1->stages, plan__schedule_suffix(family, &pk->g1), suffix,
                               second ? second : "");
    pk->constraints = plan__constraints(a, pk);
    if (!pk->name || !pk->constraints || !second) {
        fg_diag_error(d, k->ptr, "out of memory while planning");
        return -1;
    }
    return 0;
}

/* A variant that the spill table (spills.def) holds for an arch it is compiled for: an error at
 * its tile. The table holds what was measured by compiling, exactly; register use depends on the
 * whole op list, so nothing is inferred from it (docs/spec.md#spills). */
static void plan__spills(const fg_kernel_spec *k, const fg_plan_kernel *pk, const fg_tile *t1, fg_diag *d)
{
    for (size_t i = 0; i < k->n_archs; ++i) {
        if (pk->family == FG_FAMILY_SM90 && k->archs[i] != FG_ARCH_SM90A) continue;
        const fg_spill_entry *e = fg_spill_find(pk, k->archs[i]);
        if (!e) continue;
        const bool norm = pk->g1.norm != FG_NORM_NONE;
        fg_diag_error(d, t1->ptr,
                      "this tile with epilogue '%s' spills %ld bytes of registers on %s as variant %s (measured by "
                      "compiling; docs/spec.md#spills): use another tile%s, or other ops",
                      e->epilogue, e->bytes, e->arch, pk->name,
                      !norm ? ""
                      : pk->split_k ? ", a norm strategy other than auto (no split-K form)"
                                    : ", another strategy for the norm");
    }
}

/* Why two tiles of a chain may not run together: both GEMMs of a variant are one family's. */
#define PLAN_FAMILY_PAIRING                                                                                  \
    "(the Hopper family builds tiles of k 64 alone; the portable family no tile that names a schedule, has " \
    "n 160 or 320, or needs more shared memory than a listed arch has)"

/* Whether tiles t1 and t2 make a variant of some family, whatever the norm's strategy. */
static bool plan__tiles_pair(const fg_kernel_spec *k, const fg_tile *t1, const fg_tile *t2)
{
    return plan__sm90_ok(k, t1, t2) || plan__sm80_fits(k, t1, t2);
}

/* Whether some tile of GEMM1 and some of GEMM2 (or GEMM1's own, without then.tiles) pair. */
static bool plan__some_tiles_pair(const fg_kernel_spec *k)
{
    const bool chain_tiles = k->has_then && k->then.n_tiles > 0;
    for (size_t t = 0; t < k->gemm.n_tiles; ++t)
        for (size_t u = 0; u < (chain_tiles ? k->then.n_tiles : 1); ++u)
            if (plan__tiles_pair(k, &k->gemm.tiles[t], chain_tiles ? &k->then.tiles[u] : &k->gemm.tiles[t])) return true;
    return false;
}

/* After a spec kernel's variants are planned: every tile it lists, and every arch, got at least
 * one variant. The planner skips pairs it cannot build, so without this a tile or an arch could
 * drop out of the library with no word (a chain whose then.tiles fit only the other family; a
 * norm forced to the cluster strategy on a kernel that lists another arch than sm_90a). */
static void plan__check_coverage(const fg_kernel_spec *k, const fg_op *norm, const bool *t1_used, const bool *t2_used,
                                 bool portable_used, fg_diag *d)
{
    const bool chain_tiles = k->has_then && k->then.n_tiles > 0;
    const char *strategy = norm ? fg_spec_strategy_name(norm->strategy) : "auto";
    for (size_t t = 0; t < k->gemm.n_tiles; ++t) {
        if (t1_used[t]) continue;
        const fg_tile *t1 = &k->gemm.tiles[t];
        bool pairs = !chain_tiles;
        for (size_t u = 0; chain_tiles && u < k->then.n_tiles && !pairs; ++u)
            pairs = plan__tiles_pair(k, t1, &k->then.tiles[u]);
        if (!pairs)
            fg_diag_error(d, t1->ptr, "tile %ldx%ldx%ld gives no kernel: no tile of then.tiles runs with it in the "
                          "same family " PLAN_FAMILY_PAIRING, t1->m, t1->n, t1->k);
        else if (norm && norm->strategy != FG_STRATEGY_AUTO)
            fg_diag_error(d, t1->ptr, "tile %ldx%ldx%ld gives no kernel: it cannot take strategy '%s' (cluster: a "
                          "cooperative tile of m 128 on sm_90a; a 64-row cooperative tile: row alone)",
                          t1->m, t1->n, t1->k, strategy);
        else if (!norm && t1->m == 64 && t1->n == 320)
            fg_diag_error(d, t1->ptr, "tile 64x320x64 gives no kernel: it exists for the row strategy of a norm "
                          "(whole rows of up to 320 columns in one CTA), and this GEMM has no norm: use 128x160 or "
                          "64x256");
        else
            fg_diag_error(d, t1->ptr, "tile %ldx%ldx%ld gives no kernel for the listed archs", t1->m, t1->n, t1->k);
    }
    for (size_t u = 0; chain_tiles && u < k->then.n_tiles; ++u) {
        if (t2_used[u]) continue;
        const fg_tile *t2 = &k->then.tiles[u];
        bool pairs = false;
        for (size_t t = 0; t < k->gemm.n_tiles && !pairs; ++t) pairs = plan__tiles_pair(k, &k->gemm.tiles[t], t2);
        if (pairs && norm && norm->strategy != FG_STRATEGY_AUTO)
            fg_diag_error(d, t2->ptr, "GEMM2 tile %ldx%ldx%ld gives no kernel: the GEMM1 tiles it runs with cannot "
                          "take strategy '%s' in its family (cluster: the Hopper family's alone)", t2->m, t2->n, t2->k,
                          strategy);
        else
            fg_diag_error(d, t2->ptr, "GEMM2 tile %ldx%ldx%ld gives no kernel: no GEMM1 tile runs with it in the "
                          "same family " PLAN_FAMILY_PAIRING, t2->m, t2->n, t2->k);
    }
    const fg_arch other = plan__lowest_arch(k, false);   /* an arch other than sm_90a */
    if (other != FG_ARCH_NONE && !portable_used) {
        if (norm && norm->strategy == FG_STRATEGY_CLUSTER)
            fg_diag_error(d, norm->ptr, "strategy 'cluster' is the Hopper family's alone, so %s (listed) gets no "
                          "kernel: use strategy 'auto' (cluster on sm_90a, row or split elsewhere) or list sm_90a alone",
                          fg_spec_arch_name(other));
        else
            fg_diag_error(d, k->ptr, "no tile gives %s (listed) a kernel", fg_spec_arch_name(other));
    }
}

static int plan__by_name(const void *x, const void *y)
{
    const fg_plan_kernel *a = *(const fg_plan_kernel *const *)x, *b = *(const fg_plan_kernel *const *)y;
    int c = strcmp(a->name, b->name);
    return c ? c : (a > b) - (a < b);
}

int fg_plan_build(fg_arena *arena, const fg_spec *spec, fg_plan *out, fg_diag *d)
{
    memset(out, 0, sizeof *out);
    out->spec = spec;

    /* Upper bound of variants: 2 families x tiles x GEMM2 tiles x (3 strategies + split K) per
     * kernel. */
    size_t cap = 0;
    for (size_t i = 0; i < spec->n_kernels; ++i) {
        const fg_kernel_spec *k = &spec->kernels[i];
        size_t t2 = k->has_then && k->then.n_tiles ? k->then.n_tiles : 1;
        cap += 2 * k->gemm.n_tiles * t2 * 4;
    }
    out->kernels = fg_arena_alloc(arena, (cap ? cap : 1) * sizeof *out->kernels);
    if (!out->kernels) {
        fg_diag_error(d, "", "out of memory while planning");
        return -1;
    }

    for (size_t i = 0; i < spec->n_kernels; ++i) {
        const fg_kernel_spec *k = &spec->kernels[i];
        const char *sig1 = plan__signature(arena, &k->gemm);
        const char *sig2 = k->has_then ? plan__signature(arena, &k->then) : NULL;
        if (!sig1 || (k->has_then && !sig2)) {
            fg_diag_error(d, k->ptr, "out of memory while planning");
            return -1;
        }

        fg_strategy strategies[3];
        size_t n_strategies = 0;
        const fg_op *norm = plan__norm_op(&k->gemm);
        if (!norm) {
            strategies[n_strategies++] = FG_STRATEGY_AUTO;   /* no norm: the strategy is moot */
        } else {
            static const fg_strategy all[] = {FG_STRATEGY_ROW, FG_STRATEGY_CLUSTER, FG_STRATEGY_SPLIT};
            for (size_t a = 0; a < 3; ++a)
                if (norm->strategy == FG_STRATEGY_AUTO || norm->strategy == all[a]) strategies[n_strategies++] = all[a];
        }
        size_t first_variant = out->n_kernels;
        bool t1_used[FG_SPEC_MAX_TILES] = {false}, t2_used[FG_SPEC_MAX_TILES] = {false}, portable_used = false;

        /* Hopper variants first, so that they come first in the table too. */
        bool portable_archs = plan__lowest_arch(k, false) != FG_ARCH_NONE;
        for (int pass = 0; pass < 2; ++pass) {
            for (size_t t = 0; t < k->gemm.n_tiles; ++t) {
                const fg_tile *t1 = &k->gemm.tiles[t];
                size_t n_t2 = k->has_then && k->then.n_tiles ? k->then.n_tiles : 1;
                for (size_t u = 0; u < n_t2; ++u) {
                    const fg_tile *t2 = k->has_then && k->then.n_tiles ? &k->then.tiles[u] : t1;
                    bool sm90 = plan__sm90_ok(k, t1, t2);
                    fg_family family;
                    if (pass == 0) {
                        if (!sm90) continue;
                        family = FG_FAMILY_SM90;
                    } else {
                        /* not a tile that names a schedule, or has n 160 or 320 (the Hopper family's
                         * alone), and fitting every listed arch */
                        if (!plan__sm80_fits(k, t1, t2)) continue;
                        family = FG_FAMILY_SM80;
                    }
                    for (size_t s = 0; s < n_strategies; ++s) {
                        bool hopper = sm90 && plan__sm90_strategy_ok(t1, strategies[s], !norm || norm->strategy == FG_STRATEGY_AUTO);
                        if (family == FG_FAMILY_SM90 && !hopper) continue;
                        /* clusters exchange statistics through distributed shared memory: sm_90 */
                        if (family == FG_FAMILY_SM80 && strategies[s] == FG_STRATEGY_CLUSTER) continue;
                        /* sm_90a alone is served by Hopper code where there is some */
                        if (family == FG_FAMILY_SM80 && hopper && !portable_archs) continue;
                        if (plan__add(arena, out, cap, family, k, t1, t2, strategies[s], false, sig1, sig2, d))
                            return -1;
                        plan__spills(k, &out->kernels[out->n_kernels - 1], t1, d);
                        t1_used[t] = true;
                        if (k->has_then && k->then.n_tiles) t2_used[u] = true;
                        portable_used |= family == FG_FAMILY_SM80;
                    }
                    /* the split-K form of a narrow tile: its reduce kernel sees whole rows, so any
                     * epilogue runs there; the norm's strategy is moot. A chain's (Hopper only,
                     * where both tiles have one): both GEMMs split K, each with its reduce kernel.
                     * With a norm on A, the reduce kernel takes its rows' rstd from A. None with
                     * a gated activation (the reduce works on the GEMM's columns four at a time). */
                    const bool sm90_split_k =
                        sm90 && plan__sm90_split_k_tile(t1) && (!k->has_then || plan__sm90_split_k_tile(t2));
                    if ((!norm || norm->strategy == FG_STRATEGY_AUTO) && !plan__has_glu(&k->gemm) &&
                        (family == FG_FAMILY_SM90 ? sm90_split_k
                                                  : !k->has_then && t1->m == PLAN_SPLIT_K_TILE_M &&
                                                        (portable_archs || !sm90_split_k))) {
                        if (plan__add(arena, out, cap, family, k, t1, t2, FG_STRATEGY_AUTO, true, sig1, sig2, d))
                            return -1;
                        plan__spills(k, &out->kernels[out->n_kernels - 1], t1, d);
                        t1_used[t] = true;
                        if (k->has_then && k->then.n_tiles) t2_used[u] = true;
                        portable_used |= family == FG_FAMILY_SM80;
                    }
                }
            }
        }
        /* No variant at all although the tiles pair: the forced strategy is the cause, said once. */
        if (out->n_kernels == first_variant && norm && norm->strategy != FG_STRATEGY_AUTO && plan__some_tiles_pair(k))
            fg_diag_error(d, norm->ptr,
                          "no kernel can be built: no tile takes strategy '%s' (cluster is the Hopper family's: "
                          "sm_90a listed, a cooperative tile of m 128 (with b_layout \"kn\": n 64, 128 or 256) "
                          "whose exchange fits in shared memory)", fg_spec_strategy_name(norm->strategy));
        else
            plan__check_coverage(k, norm, t1_used, t2_used, portable_used, d);
    }

    if (out->n_kernels > FG_PLAN_MAX_VARIANTS) {
        fg_diag_error(d, "/kernels", "the spec plans %zu kernel variants, more than the limit of %d (fewer tiles, "
                      "GEMM2 tiles or strategies)", out->n_kernels, FG_PLAN_MAX_VARIANTS);
        return -1;
    }

    /* Variant names are derived, so two spec kernels can only collide through a bug in check.
     * Sorted by name, a duplicate sits next to its twin. */
    const fg_plan_kernel **by_name = fg_arena_alloc(arena, (out->n_kernels ? out->n_kernels : 1) * sizeof *by_name);
    if (!by_name) {
        fg_diag_error(d, "", "out of memory while planning");
        return -1;
    }
    for (size_t i = 0; i < out->n_kernels; ++i) by_name[i] = &out->kernels[i];
    qsort(by_name, out->n_kernels, sizeof *by_name, plan__by_name);
    for (size_t i = 1; i < out->n_kernels; ++i)
        if (strcmp(by_name[i - 1]->name, by_name[i]->name) == 0) {
            fg_diag_error(d, by_name[i]->spec->ptr, "kernel variant '%s' is planned twice", by_name[i]->name);
            return -1;
        }
    return fg_diag_errors(d) ? -1 : 0;
}
