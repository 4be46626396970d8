/* spills.c - see spills.h. */
#include "spills.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const fg_spill_entry fg_spill_table[] = {
#define FG_SPILL(arch, family, m, n, k, stages, schedule, strategy, a, b, out, b_layout, epilogue, bytes) \
    {arch, family, m, n, k, stages, schedule, strategy, a, b, out, b_layout, epilogue, bytes},
#include "spills.def"
#undef FG_SPILL
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0}};
const size_t fg_spill_table_len = sizeof fg_spill_table / sizeof fg_spill_table[0] - 1;

/* Appends one op as the epilogue column writes it; returns -1 when it does not fit. */
static int spills__op(char *buf, size_t size, size_t *len, const fg_op *op)
{
    char tok[128];
    /* the signature token, with the op's constant (and a norm's ",no_affine") in parentheses */
    const fg_op_info *info = fg_spec_op_info(op->kind);
    if (info && info->key[0])
        snprintf(tok, sizeof tok, "%s(%.9g%s)", info->token, op->value,
                 info->cls == FUSEGEN_REG_OPCLASS_NORM && !op->affine ? ",no_affine" : "");
    else
        snprintf(tok, sizeof tok, "%s", fg_spec_op_token(op));
    int n = snprintf(buf + *len, size - *len, "%s%s", *len ? "+" : "", tok);
    if (n < 0 || (size_t)n >= size - *len) return -1;
    *len += (size_t)n;
    return 0;
}

int fg_spill_key_of(const fg_plan_kernel *pk, fg_arch arch, fg_spill_key *key)
{
    memset(key, 0, sizeof *key);
    if (pk->chain) return -1;
    const fg_plan_gemm *g = &pk->g1;
    const fg_kernel_spec *k = pk->spec;
    fg_spill_entry *e = &key->e;
    e->arch = fg_spec_arch_name(arch);
    e->family = pk->family == FG_FAMILY_SM90 ? "sm90a" : "sm80";
    e->m = g->bm; e->n = g->bn; e->k = g->bk; e->stages = g->stages;
    e->schedule = pk->family != FG_FAMILY_SM90 ? "-" : g->pingpong ? "pingpong" : "cooperative";
    e->strategy = pk->split_k                          ? "splitk"
                  : g->norm == FG_NORM_NONE            ? "none"
                  : g->strategy == FG_STRATEGY_ROW     ? "row"
                  : g->strategy == FG_STRATEGY_CLUSTER ? "cluster"
                                                       : "split";
    e->a = fg_spec_dtype_name(k->a);
    e->b = fg_spec_dtype_name(k->b);
    e->out = fg_spec_dtype_name(k->out);
    e->b_layout = fg_spec_layout_name(g->b_layout);
    size_t len = 0;
    for (size_t i = 0; i < g->spec->n_ops; ++i)
        if (spills__op(key->epilogue, sizeof key->epilogue, &len, &g->spec->ops[i])) return -1;
    e->epilogue = key->epilogue;
    return 0;
}

static int spills__same(const fg_spill_entry *x, const fg_spill_entry *y)
{
    return strcmp(x->arch, y->arch) == 0 && strcmp(x->family, y->family) == 0 && x->m == y->m && x->n == y->n &&
           x->k == y->k && x->stages == y->stages && strcmp(x->schedule, y->schedule) == 0 &&
           strcmp(x->strategy, y->strategy) == 0 && strcmp(x->a, y->a) == 0 && strcmp(x->b, y->b) == 0 &&
           strcmp(x->out, y->out) == 0 && strcmp(x->b_layout, y->b_layout) == 0 &&
           strcmp(x->epilogue, y->epilogue) == 0;
}

const fg_spill_entry *fg_spill_find(const fg_plan_kernel *pk, fg_arch arch)
{
    const char *env = getenv("FUSEGEN_SPILL_TABLE");
    if (env && strcmp(env, "ignore") == 0) return NULL;
    if (fg_spill_table_len == 0) return NULL;
    fg_spill_key key;
    if (fg_spill_key_of(pk, arch, &key)) return NULL;
    for (size_t i = 0; i < fg_spill_table_len; ++i)
        if (spills__same(&fg_spill_table[i], &key.e)) return &fg_spill_table[i];
    return NULL;
}

void fg_spill_row(const fg_spill_key *key, long bytes, char *buf, size_t size)
{
    const fg_spill_entry *e = &key->e;
    snprintf(buf, size, "FG_SPILL(\"%s\", \"%s\", %ld, %ld, %ld, %ld, \"%s\", \"%s\", \"%s\", \"%s\", \"%s\", \"%s\", \"%s\", %ld)",
             e->arch, e->family, e->m, e->n, e->k, e->stages, e->schedule, e->strategy, e->a, e->b, e->out,
             e->b_layout, e->epilogue, bytes);
}
