/* kernel_record.c - the kernel record of a planned variant (kernel_record.h). */
#include "kernel_record.h"

#include <string.h>

/* fusegen_family's values, from the registry */
#define KERNEL_RECORD__FAMILY(id, word, value) enum { KERNEL_RECORD__FAMILY_##id = value };
FUSEGEN_REG_FAMILIES(KERNEL_RECORD__FAMILY)
#undef KERNEL_RECORD__FAMILY

static int kernel_record__schedule(fg_family family, const fg_plan_gemm *g)
{
    if (family != FG_FAMILY_SM90) return FG_SCHEDULE_AUTO;   /* NONE: the registry's 0 */
    return g->pingpong ? FG_SCHEDULE_PINGPONG : FG_SCHEDULE_COOPERATIVE;
}

static int kernel_record__gemm(fg_arena *a, fg_family family, const fg_plan_gemm *g, fg_kernel_record_gemm *out)
{
    const fg_gemm *spec = g->spec;
    memset(out, 0, sizeof *out);
    out->b_layout = (int)g->b_layout;
    out->epilogue = g->signature;
    out->tile_m = (int)g->bm;
    out->tile_n = (int)g->bn;
    out->tile_k = (int)g->bk;
    out->stages = (int)g->stages;
    out->threads = g->threads;
    out->schedule = kernel_record__schedule(family, g);
    out->n_ops = (int)spec->n_ops;
    if (spec->n_ops == 0) return 0;
    fg_kernel_record_op *ops = fg_arena_alloc(a, spec->n_ops * sizeof *ops);
    if (!ops) return -1;
    for (size_t i = 0; i < spec->n_ops; ++i) {
        const fg_op *op = &spec->ops[i];
        ops[i].kind = (int)op->kind;
        ops[i].value = op->value;
        ops[i].affine = fg_spec_op_is_norm(op->kind) && op->affine;
        ops[i].index = op->kind == FG_OP_STORE ? out->n_stores++ : 0;
        out->uses_bias |= op->kind == FG_OP_BIAS;
        out->uses_residual |= op->kind == FG_OP_RESIDUAL;
    }
    out->ops = ops;
    return 0;
}

int fg_kernel_record_build(fg_arena *a, const fg_plan_kernel *pk, fg_kernel_record *out)
{
    const fg_kernel_spec *ks = pk->spec;
    const fg_op *norm = pk->g1.norm_op;
    memset(out, 0, sizeof *out);
    out->name = pk->name;
    out->spec_kernel = ks->name;
    out->sm = pk->sm;
    out->arch_specific = pk->arch_specific;
    out->family = pk->family == FG_FAMILY_SM90 ? KERNEL_RECORD__FAMILY_HOPPER : KERNEL_RECORD__FAMILY_PORTABLE;
    out->a = (int)ks->a;
    out->b = (int)ks->b;
    out->out = (int)ks->out;
    out->chain = pk->chain;
    if (kernel_record__gemm(a, pk->family, &pk->g1, &out->g1) != 0) return -1;
    if (pk->chain) {
        if (kernel_record__gemm(a, pk->family, &pk->g2, &out->g2) != 0) return -1;
    } else {
        out->g2.b_layout = (int)FG_LAYOUT_NK;
    }
    out->norm = (int)pk->g1.norm;
    out->strategy = pk->g1.norm == FG_NORM_NONE || pk->split_k ? (int)FG_STRATEGY_AUTO : (int)pk->g1.strategy;
    out->split_k = pk->split_k;
    out->max_n = pk->max_n;
    out->align_elems = pk->align_elems;
    out->uses_gamma = norm && norm->affine;
    out->uses_beta = norm && norm->affine && norm->kind == FG_OP_LAYERNORM;
    out->rank = pk->rank;
    fg_launch_record(pk, 1, &out->launch1);
    if (pk->chain) fg_launch_record(pk, 2, &out->launch2);
    return 0;
}
