/* emit.c - see emit.h. Turns the plan into template variables (all strings, decided here)
 * and renders the templates. The per-op device code of an epilogue is one call each into
 * the family's op library (fusegen_sm80.cuh), in spec order. */
#include "emit.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "kernel_record.h"
#include "launch.h"
#include "tmpl.h"
#include "tmplsrc.h"

#define EMIT_MAX_TEMPLATE_BYTES (1u << 20)

typedef struct emit_ctx {
    fg_arena *arena;
    const fg_plan *plan;
    const fg_tmplsrc *templates;
    fg_out *out;
    fg_diag *d;
    const char *banner;
} emit_ctx;

/* Reads a template into the arena; one from a folder is recorded as a dependency. */
static const char *emit__read_template(emit_ctx *c, const char *rel, size_t *len, const char **path_out)
{
    int on_disk = 0;
    const char *text = fg_tmplsrc_read(c->templates, c->arena, rel, EMIT_MAX_TEMPLATE_BYTES, len, path_out, &on_disk);
    if (!text) {
        const char *where = *path_out ? *path_out : rel;
        if (errno == EFBIG)
            fg_diag_error(c->d, NULL, "cannot read template %s (over %u bytes)", where, EMIT_MAX_TEMPLATE_BYTES);
        else
            fg_diag_error(c->d, NULL, "cannot read template %s: %s", where, strerror(errno));
        return NULL;
    }
    if (on_disk) fg_out_dep(c->out, *path_out);
    return text;
}

/* Copies a family header (templates/common/) into the library file `file` byte for byte,
 * after the banner line: it is not a template, so the generated copy is the tested source.
 * must_hold (or NULL): text the header must contain (the registry's device enums). */
static int emit__copy(emit_ctx *c, const char *rel, const char *file, const char *must_hold)
{
    size_t len = 0;
    const char *path = NULL;
    const char *text = emit__read_template(c, rel, &len, &path);
    if (!text) return -1;
    if (must_hold && !strstr(text, must_hold)) {
        /* name the first line it lacks */
        const char *line = must_hold, *end = strchr(line, '\n');
        while (end) {
            const char *l = fg_arena_strndup(c->arena, line, (size_t)(end - line));
            if (l && !strstr(text, l)) break;
            line = end + 1;
            end = strchr(line, '\n');
        }
        fg_diag_error(c->d, NULL, "%s: its device enums differ from the registry's (runtime/fusegen_registry.h): "
                      "it must hold the lines that fg_emit_device_enums writes, in order, among them '%.*s'",
                      path, end ? (int)(end - line) : (int)strlen(line), line);
        return -1;
    }
    fg_buf b;
    fg_buf_init(&b);
    fg_buf_printf(&b, "%s\n", c->banner);
    fg_buf_append(&b, text, len);
    int rc = -1;
    if (b.failed) {
        fg_diag_error(c->d, NULL, "out of memory while copying %s", path);
    } else {
        const char *rel_out = fg_arena_printf(c->arena, "%s/%s", c->plan->spec->library, file);
        rc = rel_out ? fg_out_add(c->out, rel_out, b.data, b.len, c->d) : -1;
    }
    fg_buf_free(&b);
    return rc;
}

/* Renders template `rel` with scope s into the library file `file`. */
static int emit__file(emit_ctx *c, const char *rel, const fg_tmpl_scope *s, const char *file)
{
    size_t len = 0;
    const char *path = NULL;
    const char *text = emit__read_template(c, rel, &len, &path);
    if (!text) return -1;
    fg_buf b;
    fg_buf_init(&b);
    const fg_spec *spec = c->plan->spec;
    int rc = fg_tmpl_render(path, text, len, s, &b, c->d);
    fg_diag_set_source(c->d, spec->path, spec->text, spec->text_len);
    if (rc == 0 && b.failed) {
        fg_diag_error(c->d, NULL, "out of memory while rendering %s", path);
        rc = -1;
    }
    if (rc == 0) {
        const char *rel_out = fg_arena_printf(c->arena, "%s/%s", spec->library, file);
        rc = rel_out ? fg_out_add(c->out, rel_out, b.data, b.len, c->d) : -1;
    }
    fg_buf_free(&b);
    return rc;
}

/* A float literal that C and CUDA read back as the same float: always has a '.' or exponent. */
static const char *emit__float(fg_arena *a, double v)
{
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.9g", v);
    const char *dot = strpbrk(tmp, ".e");
    return fg_arena_printf(a, "%s%sf", tmp, dot ? "" : ".0");
}

/* Enum names in generated code, from the registry: FUSEGEN_DTYPE_<ID> in the dispatch table,
 * DT_<ID> in device code. */
static const char *emit__dtype_enum(fg_dtype t)
{
#define EMIT__DTYPE(id, word, value, bytes) if (t == FG_DTYPE_##id) return "FUSEGEN_DTYPE_" #id;
    FUSEGEN_REG_DTYPES(EMIT__DTYPE)
#undef EMIT__DTYPE
    return "0";
}

static const char *emit__dt_device(fg_dtype t)
{
#define EMIT__DTYPE(id, word, value, bytes) if (t == FG_DTYPE_##id) return "DT_" #id;
    FUSEGEN_REG_DTYPES(EMIT__DTYPE)
#undef EMIT__DTYPE
    return "0";
}

const char *fg_emit_device_enums(fg_arena *a)
{
    fg_buf b;
    fg_buf_init(&b);
#define EMIT__DTYPE(id, word, value, bytes) fg_buf_printf(&b, "%sDT_" #id " = %d", sep, value), sep = ", ";
#define EMIT__NORM(id, word, value) fg_buf_printf(&b, "%sNORM_" #id " = %d", sep, value), sep = ", ";
    const char *sep = "";
    fg_buf_printf(&b, "enum { ");
    FUSEGEN_REG_DTYPES(EMIT__DTYPE)
    fg_buf_printf(&b, " };\nenum { ");
    sep = "";
    FUSEGEN_REG_NORMS(EMIT__NORM)
    fg_buf_printf(&b, " };\nenum { ");
    sep = "";
    /* by value (NONE, ROW, SPLIT, CLUSTER), the values being 0 ... count - 1 */
#define EMIT__COUNT(id, public_id, word, value) +1
    for (int v = 0; v < 0 FUSEGEN_REG_STRATEGIES(EMIT__COUNT); ++v) {
#define EMIT__STRATEGY(id, public_id, word, value) \
        if (value == v) fg_buf_printf(&b, "%sSTRATEGY_" #public_id " = %d", sep, value), sep = ", ";
        FUSEGEN_REG_STRATEGIES(EMIT__STRATEGY)
#undef EMIT__STRATEGY
    }
    fg_buf_printf(&b, " };\nenum { MAX_STORES = %d, NORMALIZE_THREADS = %d, SPLIT_K_REDUCE_THREADS = %d, "
                      "SPLIT_K_REDUCE_ROW_THREADS = %d, PORTABLE_CLUSTER = %d };",
                  FUSEGEN_REG_MAX_STORES, FUSEGEN_REG_NORMALIZE_THREADS, FUSEGEN_REG_SPLIT_K_REDUCE_THREADS,
                  FUSEGEN_REG_SPLIT_K_REDUCE_ROW_THREADS, FUSEGEN_REG_PORTABLE_CLUSTER);
#undef EMIT__COUNT
#undef EMIT__DTYPE
#undef EMIT__NORM
    const char *s = b.failed ? NULL : fg_arena_strndup(a, b.data, b.len);
    fg_buf_free(&b);
    return s;
}

/* The device constant of a gated activation: GLU_ and its registry token in capitals. */
static const char *emit__glu_constant(fg_arena *a, const fg_op *op)
{
    char up[32];
    const char *t = fg_spec_op_token(op);
    size_t i = 0;
    for (; t[i] && i + 1 < sizeof up; ++i) up[i] = (char)toupper((unsigned char)t[i]);
    up[i] = 0;
    return fg_arena_printf(a, "fusegen_sm80::GLU_%s", up);
}

/* Store slots are numbered per GEMM in the order the stores appear. */
static int emit__store_slot(const fg_gemm *g, const fg_op *op)
{
    int slot = 0;
    for (size_t i = 0; i < g->n_ops && &g->ops[i] != op; ++i)
        if (g->ops[i].kind == FG_OP_STORE) ++slot;
    return slot;
}

/* Device statements for ops [ops, ops+n) of GEMM g; `dt` is the out dtype's device enum. */
static void emit__op_body(emit_ctx *c, fg_buf *b, const fg_gemm *g, const fg_op *ops, size_t n, const char *dt)
{
    const char *ind = "        ";
    for (size_t i = 0; i < n; ++i) {
        const fg_op *op = &ops[i];
        const fg_op_info *info = fg_spec_op_info(op->kind);
        if (!info) continue;
        switch (info->cls) {
        case FUSEGEN_REG_OPCLASS_MAP:
            /* an element-wise op: its device function, by the registry's token, and its constant */
            if (info->key[0])
                fg_buf_printf(b, "%sv = fusegen_sm80::op_%s(v, %s);\n", ind, info->token,
                              emit__float(c->arena, op->value));
            else
                fg_buf_printf(b, "%sv = fusegen_sm80::op_%s(v);\n", ind, info->token);
            break;
        case FUSEGEN_REG_OPCLASS_BIAS:
            fg_buf_printf(b, "%sv = fusegen_sm80::op_bias<fusegen_sm80::%s>(v, p, in, n);\n", ind, dt);
            break;
        case FUSEGEN_REG_OPCLASS_RESIDUAL:
            fg_buf_printf(b, "%sv = fusegen_sm80::op_residual<fusegen_sm80::%s>(v, p, in, m, n, %s);\n", ind, dt,
                          emit__float(c->arena, op->value));
            break;
        case FUSEGEN_REG_OPCLASS_STORE:
            fg_buf_printf(b, "%sfusegen_sm80::op_store<fusegen_sm80::%s>(v, p, in, %d, m, n);  // %s\n", ind, dt,
                          emit__store_slot(g, op), op->as ? op->as : "");
            break;
        default: break;   /* in the family code: a norm between pre and post; the norm on A and a
                             * gated activation before pre */
        }
    }
}

static const char *emit__body(emit_ctx *c, const fg_gemm *g, const fg_op *ops, size_t n, const char *dt)
{
    fg_buf b;
    fg_buf_init(&b);
    emit__op_body(c, &b, g, ops, n, dt);
    const char *s = b.failed ? NULL : fg_arena_strndup(c->arena, b.data ? b.data : "", b.len);
    fg_buf_free(&b);
    return s ? s : "";
}

/* A GEMM's strategy as the device code's STRATEGY_<ID>; NONE without a norm. */
static const char *emit__strategy(fg_norm norm, fg_strategy s)
{
    if (norm != FG_NORM_NONE) {
#define EMIT__STRATEGY(id, public_id, word, value) if (s == FG_STRATEGY_##id) return "STRATEGY_" #public_id;
        FUSEGEN_REG_STRATEGIES(EMIT__STRATEGY)
#undef EMIT__STRATEGY
    }
    return "STRATEGY_NONE";
}

static const char *emit__norm(fg_norm n, bool table)
{
#define EMIT__NORM(id, word, value) if (n == FG_NORM_##id) return table ? "FUSEGEN_NORM_" #id : "NORM_" #id;
    FUSEGEN_REG_NORMS(EMIT__NORM)
#undef EMIT__NORM
    return "0";
}

static const char *emit__symbol(emit_ctx *c, const fg_plan_kernel *pk)
{
    return fg_arena_printf(c->arena, "%s_%s", c->plan->spec->library, pk->name);
}

/* Variables of one GEMM of a variant, for the kernel template. */
/* The C++ type of a GEMM: the family's template instantiated with the variant's decisions. */
static const char *emit__gemm_type(emit_ctx *c, fg_family family, int index, const fg_plan_gemm *g, const fg_kernel_spec *k,
                                   bool split_k)
{
    const char *dt_ab = emit__dt_device(k->a), *dt_out = emit__dt_device(k->out);
    if (split_k && family == FG_FAMILY_SM90)   /* the partial kernel: raw f32 sums of its K slices */
        return fg_arena_printf(c->arena,
                               "fusegen_sm90::GemmSm90<fusegen_sm80::%s, fusegen_sm80::DT_F32, %ld, %ld, %ld, %s,\n"
                               "                                       fusegen_sm80::NORM_NONE, fusegen_sm80::STRATEGY_NONE, "
                               "fusegen_sm80::NoOps, Staging%d, %s, /* split K */ true, Reduce%d>",
                               dt_ab, g->bm, g->bn, g->stages, g->pingpong ? "true" : "false", index,
                               g->b_layout == FG_LAYOUT_KN ? "/* B [K, N] */ true" : "false", index);
    if (split_k)   /* the partial kernel: raw f32 sums of its K slice, the epilogue left to the reduce */
        return fg_arena_printf(c->arena,
                               "fusegen_sm80::Gemm<fusegen_sm80::%s, fusegen_sm80::DT_F32, %ld, %ld, %ld, %ld, %d, %d, %s,\n"
                               "                               fusegen_sm80::NORM_NONE, fusegen_sm80::STRATEGY_NONE, "
                               "fusegen_sm80::NoOps, /* split K */ true>",
                               dt_ab, g->bm, g->bn, g->bk, g->stages, g->warps_m, g->warps_n,
                               g->b_layout == FG_LAYOUT_KN ? "true" : "false");
    const char *norm = emit__norm(g->norm, false), *strategy = emit__strategy(g->norm, g->strategy);
    if (family == FG_FAMILY_SM90)
        return fg_arena_printf(c->arena,
                               "fusegen_sm90::GemmSm90<fusegen_sm80::%s, fusegen_sm80::%s, %ld, %ld, %ld, %s,\n"
                               "                                       fusegen_sm80::%s, fusegen_sm80::%s, Epilogue%d, Staging%d%s>",
                               dt_ab, dt_out, g->bm, g->bn, g->stages, g->pingpong ? "true" : "false", norm, strategy,
                               index, index, g->b_layout == FG_LAYOUT_KN ? ", /* B [K, N] */ true" : "");
    return fg_arena_printf(c->arena,
                           "fusegen_sm80::Gemm<fusegen_sm80::%s, fusegen_sm80::%s, %ld, %ld, %ld, %ld, %d, %d, %s,\n"
                           "                               fusegen_sm80::%s, fusegen_sm80::%s, Epilogue%d>",
                           dt_ab, dt_out, g->bm, g->bn, g->bk, g->stages, g->warps_m, g->warps_n,
                           g->b_layout == FG_LAYOUT_KN ? "true" : "false", norm, strategy, index);
}

static void emit__gemm_scope(emit_ctx *c, fg_tmpl_scope *s, int index, const fg_plan_gemm *g, const fg_plan_kernel *pk)
{
    const fg_kernel_spec *k = pk->spec;
    const char *dt_out = emit__dt_device(k->out);
    fg_tmpl_set(s, "gemm_type", emit__gemm_type(c, pk->family, index, g, k, pk->split_k));
    fg_tmpl_set(s, "reduce_type",
                pk->split_k ? fg_arena_printf(c->arena,
                                              "fusegen_sm80::SplitKReduce<fusegen_sm80::%s, fusegen_sm80::%s, fusegen_sm80::%s, Epilogue%d>",
                                              emit__dt_device(index == 1 ? k->a : k->out), dt_out,
                                              emit__norm(g->norm, false), index)
                            : "");
    fg_tmpl_setf(s, "smem_bytes", "%zu", g->smem_bytes);
    fg_tmpl_set(s, "hopper", pk->family == FG_FAMILY_SM90 ? "1" : "0");
    fg_tmpl_set(s, "stage_tile", g->stage_tile ? "true" : "false");
    fg_tmpl_set(s, "stage_residual", g->stage_residual ? "true" : "false");
    fg_tmpl_set(s, "stage_bias", g->stage_bias ? "true" : "false");
    fg_tmpl_setf(s, "staged_store_slot", "%d", g->staged_store_slot);
    fg_tmpl_set(s, "stage_out", g->stage_out ? "true" : "false");
    fg_tmpl_setf(s, "stage_ring", "%d", g->stage_ring);
    /* The 1: one CTA per SM is enough, so ptxas may use every register (the widest portable
     * tiles hold 128 accumulators; Hopper warpgroups then trade registers with setmaxnreg). */
    fg_tmpl_setf(s, "launch_bounds", "%d, 1", g->threads);
    if (pk->family == FG_FAMILY_SM90) {
        /* the operand and epilogue tensor maps travel as __grid_constant__ parameters */
        fg_tmpl_set(s, "kernel_params",
                    "fusegen_sm80::Params p, const __grid_constant__ fusegen_sm90::TensorMap map_a,\n"
                    "    const __grid_constant__ fusegen_sm90::TensorMap map_a_tail,\n"
                    "    const __grid_constant__ fusegen_sm90::TensorMap map_b,\n"
                    "    const __grid_constant__ fusegen_sm90::EpilogueMaps maps");
        fg_tmpl_set(s, "kernel_args", "p, map_a, map_a_tail, map_b, maps");
    } else {
        fg_tmpl_set(s, "kernel_params", "fusegen_sm80::Params p");
        fg_tmpl_set(s, "kernel_args", "p");
    }
    fg_tmpl_setf(s, "index", "%d", index);
    fg_tmpl_set(s, "signature", g->signature[0] ? g->signature : "(none)");
    fg_tmpl_set(s, "eps", emit__float(c->arena, g->norm_op ? g->norm_op->value : 0.0));
    fg_tmpl_set(s, "a_norm_eps", emit__float(c->arena, g->a_norm ? g->a_norm->value : 0.0));
    fg_tmpl_set(s, "glu", g->glu ? emit__glu_constant(c->arena, g->glu) : "fusegen_sm80::GLU_NONE");
    fg_tmpl_set(s, "affine", g->norm_op && g->norm_op->affine ? "true" : "false");
    fg_tmpl_setf(s, "prenorm_store_slot", "%d", g->prenorm_store_slot);
    fg_tmpl_setf(s, "cluster_ranks", "%d", g->cluster_ranks);
    fg_tmpl_set(s, "pre_body", emit__body(c, g->spec, g->pre, g->n_pre, dt_out));
    fg_tmpl_set(s, "post_body", emit__body(c, g->spec, g->post, g->n_post, dt_out));
    fg_tmpl_set(s, "split", g->norm != FG_NORM_NONE && g->strategy == FG_STRATEGY_SPLIT ? "1" : "0");
}

static void emit__kernel_file_scope(emit_ctx *c, fg_tmpl_scope *s, const fg_kernel_spec *k)
{
    int hopper = 0;
    fg_tmpl_set(s, "kernel", k->name);
    fg_tmpl_list_declare(s, "variants");
    for (size_t i = 0; i < c->plan->n_kernels; ++i) {
        const fg_plan_kernel *pk = &c->plan->kernels[i];
        if (pk->spec != k) continue;
        fg_tmpl_scope *v = fg_tmpl_list_add(s, "variants");
        const char *symbol = emit__symbol(c, pk);
        fg_tmpl_set(v, "name", pk->name);
        fg_tmpl_set(v, "symbol", symbol);
        fg_tmpl_set(v, "constraints", pk->constraints);
        fg_tmpl_set(v, "chain", pk->chain ? "1" : "0");
        fg_tmpl_set(v, "split_k", pk->split_k ? "1" : "0");
        emit__gemm_scope(c, fg_tmpl_list_add(v, "gemms"), 1, &pk->g1, pk);
        if (pk->chain) emit__gemm_scope(c, fg_tmpl_list_add(v, "gemms"), 2, &pk->g2, pk);
        if (pk->family == FG_FAMILY_SM90) hopper = 1;
        /* the functions the launcher takes, in FUSEGEN_LAUNCH_GEMM1 ... order */
        const int split = pk->g1.norm != FG_NORM_NONE && pk->g1.strategy == FG_STRATEGY_SPLIT && !pk->split_k;
        const char *cast = "reinterpret_cast<const void *>";
        fg_tmpl_set(v, "fn_epilogue1", split         ? fg_arena_printf(c->arena, "%s(%s_normalize1)", cast, symbol)
                                       : pk->split_k ? fg_arena_printf(c->arena, "%s(%s_reduce1)", cast, symbol)
                                                     : "nullptr");
        fg_tmpl_set(v, "fn_gemm2", pk->chain ? fg_arena_printf(c->arena, "%s(%s_gemm2)", cast, symbol) : "nullptr");
        fg_tmpl_set(v, "fn_epilogue2",
                    pk->chain && pk->split_k ? fg_arena_printf(c->arena, "%s(%s_reduce2)", cast, symbol) : "nullptr");
    }
    fg_buf checks;
    fg_buf_init(&checks);
    fg_launch_append_checks(&checks, c->plan, k);
    fg_tmpl_set(s, "launch_checks", checks.failed || !checks.data ? "#error out of memory\n"
                                                                   : fg_arena_printf(c->arena, "%s", checks.data));
    fg_buf_free(&checks);
    /* The Hopper family's header includes the portable one (it shares its epilogue). */
    fg_tmpl_set(s, "family_header", hopper ? "fusegen_sm90.cuh" : "fusegen_sm80.cuh");
}

/* Public enum names by value, from the registry, for the dispatch table. */
static const char *emit__layout_name(int v)
{
#define EMIT__LAYOUT(id, word, value) if (v == value) return "FUSEGEN_LAYOUT_" #id;
    FUSEGEN_REG_LAYOUTS(EMIT__LAYOUT)
#undef EMIT__LAYOUT
    return "0";
}

static const char *emit__op_name(int v)
{
#define EMIT__OP(id, token, word, value, cls, key, dflt) if (v == value) return "FUSEGEN_OP_" #id;
    FUSEGEN_REG_OPS(EMIT__OP)
#undef EMIT__OP
    return "0";
}

static const char *emit__family_name(int v)
{
#define EMIT__FAMILY(id, word, value) if (v == value) return "FUSEGEN_FAMILY_" #id;
    FUSEGEN_REG_FAMILIES(EMIT__FAMILY)
#undef EMIT__FAMILY
    return "0";
}

static const char *emit__schedule_name(int v)
{
#define EMIT__SCHEDULE(id, public_id, word, value) if (v == value) return "FUSEGEN_SCHEDULE_" #public_id;
    FUSEGEN_REG_SCHEDULES(EMIT__SCHEDULE)
#undef EMIT__SCHEDULE
    return "0";
}

static const char *emit__strategy_name(int v)
{
#define EMIT__STRATEGY(id, public_id, word, value) if (v == value) return "FUSEGEN_STRATEGY_" #public_id;
    FUSEGEN_REG_STRATEGIES(EMIT__STRATEGY)
#undef EMIT__STRATEGY
    return "0";
}

/* Dispatch-table fields of one GEMM's record, with a name prefix ("" or "2"). */
static void emit__table_gemm(emit_ctx *c, fg_tmpl_scope *s, const char *sfx, const fg_kernel_record_gemm *g, const char *symbol)
{
    char key[64];
#define EMIT_KEY(name) (snprintf(key, sizeof key, "%s%s", name, sfx), key)
    fg_tmpl_set(s, EMIT_KEY("b_layout"), emit__layout_name(g->b_layout));
    fg_tmpl_set(s, EMIT_KEY("epilogue"), g->epilogue ? fg_arena_printf(c->arena, "\"%s\"", g->epilogue) : "NULL");
    fg_tmpl_set(s, EMIT_KEY("ops_ref"), g->n_ops ? fg_arena_printf(c->arena, "%s_ops%s", symbol, sfx) : "NULL");
    fg_tmpl_setf(s, EMIT_KEY("n_ops"), "%d", g->n_ops);
    fg_tmpl_set(s, EMIT_KEY("has_ops"), g->n_ops ? "1" : "0");
    fg_tmpl_setf(s, EMIT_KEY("tile_m"), "%d", g->tile_m);
    fg_tmpl_setf(s, EMIT_KEY("tile_n"), "%d", g->tile_n);
    fg_tmpl_setf(s, EMIT_KEY("tile_k"), "%d", g->tile_k);
    fg_tmpl_setf(s, EMIT_KEY("stages"), "%d", g->stages);
    fg_tmpl_setf(s, EMIT_KEY("threads"), "%d", g->threads);
    fg_tmpl_setf(s, EMIT_KEY("n_stores"), "%d", g->n_stores);
    fg_tmpl_setf(s, EMIT_KEY("uses_bias"), "%d", g->uses_bias);
    fg_tmpl_setf(s, EMIT_KEY("uses_residual"), "%d", g->uses_residual);
    const char *list = sfx[0] ? "ops2" : "ops";
    fg_tmpl_list_declare(s, list);
    for (int i = 0; i < g->n_ops; ++i) {
        const fg_kernel_record_op *op = &g->ops[i];
        fg_tmpl_scope *o = fg_tmpl_list_add(s, list);
        fg_tmpl_set(o, "op_kind", emit__op_name(op->kind));
        fg_tmpl_setf(o, "op_value", "%.17g", op->value);
        fg_tmpl_setf(o, "op_affine", "%d", op->affine);
        fg_tmpl_setf(o, "op_index", "%d", op->index);
    }
#undef EMIT_KEY
}

static char *emit__upper(fg_arena *a, const char *s)
{
    char *u = fg_arena_strdup(a, s);
    for (char *p = u; p && *p; ++p)
        if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
    return u;
}

/* s for a // comment of the generated code: control bytes (a line break would end the comment
 * and make the rest of the path code) are written as \xNN. */
static char *emit__comment_text(fg_arena *a, const char *s)
{
    size_t n = 0;
    for (const char *p = s; *p; ++p) n += ((unsigned char)*p < 0x20 || *p == 0x7f) ? 4 : 1;
    char *t = fg_arena_alloc(a, n + 1);
    if (!t) return NULL;
    char *q = t;
    for (const char *p = s; *p; ++p) {
        unsigned char ch = (unsigned char)*p;
        if (ch < 0x20 || ch == 0x7f) {
            snprintf(q, 5, "\\x%02x", ch);
            q += 4;
        } else {
            *q++ = (char)ch;
        }
    }
    *q = '\0';
    return t;
}

/* The dispatch table: one entry per variant, printed from its record (kernel_record.c, which the
 * JIT's table copies too). Returns 0, or -1 when memory ran out. */
/* A launch record as a C initializer: its nonzero fields, a few a line (zero is every field's
 * default). */
static const char *emit__launch_init(emit_ctx *c, const fusegen_launch_gemm *g)
{
    const struct {
        const char *name;
        int value;
    } f[] = {
        {"hopper", g->hopper}, {"tile_m", g->tile_m}, {"tile_n", g->tile_n}, {"tile_k", g->tile_k},
        {"threads", g->threads}, {"smem_bytes", g->smem_bytes}, {"split", g->split}, {"split_k", g->split_k},
        {"split_k_row_smem", g->split_k_row_smem}, {"cluster", g->cluster}, {"persistent", g->persistent},
        {"tma_box_a", g->tma_box_a}, {"tma_box_b", g->tma_box_b}, {"b_kn", g->b_kn}, {"dt_ab", g->dt_ab},
        {"dt_out", g->dt_out}, {"out_bytes", g->out_bytes}, {"map_residual", g->map_residual},
        {"map_store_slot", g->map_store_slot}, {"map_out", g->map_out}, {"epi_box_bytes", g->epi_box_bytes},
    };
    fg_buf b;
    int on_line = 0;
    fg_buf_init(&b);
    fg_buf_puts(&b, "{");
    for (size_t i = 0; i < sizeof f / sizeof f[0]; ++i) {
        if (f[i].value == 0) continue;
        if (on_line == 6) {
            fg_buf_puts(&b, "\n           ");
            on_line = 0;
        }
        if (strncmp(f[i].name, "dt_", 3) == 0)
            fg_buf_printf(&b, " .%s = %s,", f[i].name, emit__dtype_enum((fg_dtype)f[i].value));
        else
            fg_buf_printf(&b, " .%s = %d,", f[i].name, f[i].value);
        ++on_line;
    }
    fg_buf_puts(&b, " }");
    const char *out = b.failed || !b.data ? "{ 0 }" : fg_arena_printf(c->arena, "%s", b.data);
    fg_buf_free(&b);
    return out;
}

static int emit__table_scope(emit_ctx *c, fg_tmpl_scope *s)
{
    fg_tmpl_list_declare(s, "kernels");
    for (size_t i = 0; i < c->plan->n_kernels; ++i) {
        const fg_plan_kernel *pk = &c->plan->kernels[i];
        const char *symbol = emit__symbol(c, pk);
        fg_kernel_record r;
        fg_tmpl_scope *e = fg_tmpl_list_add(s, "kernels");
        if (!e || fg_kernel_record_build(c->arena, pk, &r) != 0) return -1;
        fg_tmpl_set(e, "name", r.name);
        fg_tmpl_set(e, "symbol", symbol);
        fg_tmpl_set(e, "spec_kernel", r.spec_kernel);
        fg_tmpl_setf(e, "sm", "%d", r.sm);
        fg_tmpl_setf(e, "arch_specific", "%d", r.arch_specific);
        fg_tmpl_set(e, "dt_a", emit__dtype_enum((fg_dtype)r.a));
        fg_tmpl_set(e, "dt_b", emit__dtype_enum((fg_dtype)r.b));
        fg_tmpl_set(e, "dt_out", emit__dtype_enum((fg_dtype)r.out));
        fg_tmpl_setf(e, "chain", "%d", r.chain);
        emit__table_gemm(c, e, "", &r.g1, symbol);
        emit__table_gemm(c, e, "2", &r.g2, symbol);
        fg_tmpl_set(e, "family", emit__family_name(r.family));
        fg_tmpl_set(e, "schedule", emit__schedule_name(r.g1.schedule));
        fg_tmpl_set(e, "schedule2", emit__schedule_name(r.g2.schedule));
        fg_tmpl_set(e, "norm", emit__norm((fg_norm)r.norm, true));
        fg_tmpl_set(e, "strategy", emit__strategy_name(r.strategy));
        fg_tmpl_setf(e, "split_k", "%d", r.split_k);
        fg_tmpl_setf(e, "max_n", "%ld", r.max_n);
        fg_tmpl_setf(e, "align_elems", "%d", r.align_elems);
        fg_tmpl_setf(e, "uses_gamma", "%d", r.uses_gamma);
        fg_tmpl_setf(e, "uses_beta", "%d", r.uses_beta);
        fg_tmpl_setf(e, "rank", "%d", r.rank);
        fg_tmpl_set(e, "launch1", emit__launch_init(c, &r.launch1));
        fg_tmpl_set(e, "launch2", r.chain ? emit__launch_init(c, &r.launch2) : "");
        fg_tmpl_set(e, "constraints", pk->constraints);
        fg_tmpl_set(e, "macro", emit__upper(c->arena, fg_arena_printf(c->arena, "%s_NAME", symbol)));
    }
    return 0;
}

/* ---- the header's account of each spec kernel -------------------------------------------- */

static const char *emit__dtype_word(fg_dtype t)
{
    const char *n = fg_spec_dtype_name(t);
    return n ? n : "?";
}

/* The arguments (fusegen_args fields) one GEMM's epilogue reads or writes, with their shapes.
 * sfx is "" for GEMM1, "2" for a chain's GEMM2; n is the column count's name ("N" or "N2"). */
static void emit__doc_gemm_args(fg_buf *b, const fg_gemm *g, const char *sfx, const char *n, const char *dt,
                                int gamma_beta)
{
    for (size_t i = 0; i < g->n_ops; ++i) {
        const fg_op *op = &g->ops[i];
        switch (op->kind) {
        case FG_OP_BIAS: fg_buf_printf(b, " *     bias%s [%s] %s\n", sfx, n, dt); break;
        case FG_OP_RESIDUAL:
            if (op->value == 1.0) fg_buf_printf(b, " *     residual%s [M, %s] %s\n", sfx, n, dt);
            else fg_buf_printf(b, " *     residual%s [M, %s] %s (added times %.9g)\n", sfx, n, dt, op->value);
            break;
        case FG_OP_STORE:
            fg_buf_printf(b, " *     store%s[%d] [M, %s] %s, written (\"%s\")\n", sfx,
                          emit__store_slot(g, op), n, dt, op->as ? op->as : "");
            break;
        case FG_OP_SWIGLU:
        case FG_OP_GEGLU:
            fg_buf_printf(b, " *     (%s: B holds gate and up rows interleaved in blocks of 8, fusegen_pack_glu_weight; "
                          "out and the inputs after it have %s / 2 columns)\n", fg_spec_op_name(op->kind), n);
            break;
        case FG_OP_A_RMSNORM:
            fg_buf_printf(b, " *     (a_norm: B holds gamma folded in, fusegen_fold_a_norm_gamma; rows of A scaled by "
                          "1/sqrt(mean(A^2) + %.9g))\n", op->value);
            break;
        case FG_OP_LAYERNORM:
        case FG_OP_RMSNORM:
            if (op->affine && gamma_beta)
                fg_buf_printf(b, op->kind == FG_OP_LAYERNORM ? " *     gamma [%s] %s, beta [%s] %s (the norm's scale and shift)\n"
                                                             : " *     gamma [%s] %s (the norm's scale)\n",
                              n, dt, n, dt);
            break;
        default: break;
        }
    }
}

/* The comment block of one spec kernel: its epilogue signature(s) as the runtime matches them,
 * the arguments it reads and writes, dtypes and layouts, and its variants with their
 * constraints. Every line is decided here; the template prints the block as it is. */
static const char *emit__kernel_doc(emit_ctx *c, const fg_kernel_spec *k)
{
    const fg_plan_kernel *first = NULL;
    size_t n_variants = 0;
    for (size_t i = 0; i < c->plan->n_kernels; ++i)
        if (c->plan->kernels[i].spec == k) {
            if (!first) first = &c->plan->kernels[i];
            ++n_variants;
        }
    if (!first) return "";
    const char *dt = emit__dtype_word(k->out);
    fg_buf b;
    fg_buf_init(&b);
    fg_buf_printf(&b, "/* Kernel `%s`: %s, %zu variant%s.\n", k->name,
                  k->has_then ? "a chain, out = epilogue(A . B), out2 = epilogue2(out . B2)" : "out = epilogue(A . B)",
                  n_variants, n_variants == 1 ? "" : "s");
    fg_buf_printf(&b, " *   epilogue   \"%s\"\n", first->g1.signature);
    if (k->has_then) fg_buf_printf(&b, " *   epilogue2  \"%s\"\n", first->g2.signature);
    fg_buf_printf(&b, " *   dtypes     a %s, b %s, out %s (accumulate %s)\n", emit__dtype_word(k->a),
                  emit__dtype_word(k->b), dt, emit__dtype_word(k->accum));
    fg_buf_printf(&b, " *   layouts    a [M, K] row-major, b %s (FUSEGEN_LAYOUT_%s), out [M, N] row-major\n",
                  k->gemm.b_layout == FG_LAYOUT_KN ? "[K, N]" : "[N, K]", k->gemm.b_layout == FG_LAYOUT_KN ? "KN" : "NK");
    if (k->has_then)
        fg_buf_printf(&b, " *   layouts2   b2 %s (FUSEGEN_LAYOUT_%s), out2 [M, N2] row-major (GEMM2's A is out)\n",
                      k->then.b_layout == FG_LAYOUT_KN ? "[N, N2]" : "[N2, N]",
                      k->then.b_layout == FG_LAYOUT_KN ? "KN" : "NK");
    fg_buf_printf(&b, " *   arguments  (fusegen_args) a, b, out%s, and:\n", k->has_then ? ", b2, out2" : "");
    size_t before = b.len;
    emit__doc_gemm_args(&b, &k->gemm, "", "N", dt, 1);
    if (k->has_then) emit__doc_gemm_args(&b, &k->then, "2", "N2", dt, 0);
    if (b.len == before) fg_buf_printf(&b, " *     nothing else\n");
    fg_buf_printf(&b, " *   variants   (names for fusegen_find; the dispatch picks one per problem)\n");
    for (size_t i = 0; i < c->plan->n_kernels; ++i) {
        const fg_plan_kernel *pk = &c->plan->kernels[i];
        if (pk->spec != k) continue;
        const char *arch = fg_spec_arch_name(pk->arch);
        fg_buf_printf(&b, " *     %s\n *         %s%s; %s\n", pk->name, arch ? arch : "?",
                      pk->arch_specific ? " only" : " and later", pk->constraints);
    }
    fg_buf_printf(&b, " */\n");
    const char *s = b.failed ? NULL : fg_arena_strndup(c->arena, b.data, b.len);
    fg_buf_free(&b);
    return s ? s : "";
}

/* A C string literal of s: quotes, backslashes and bytes outside printable ASCII escaped (octal,
 * three digits, so a following digit cannot join the escape). */
static const char *emit__c_string(fg_arena *a, const char *s)
{
    fg_buf b;
    fg_buf_init(&b);
    fg_buf_printf(&b, "\"");
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fg_buf_printf(&b, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f || *c == '?') fg_buf_printf(&b, "\\%03o", *c);
        else fg_buf_printf(&b, "%c", *c);
    }
    fg_buf_printf(&b, "\"");
    const char *r = b.failed ? NULL : fg_arena_strndup(a, b.data, b.len);
    fg_buf_free(&b);
    return r;
}

/* The compiled-in tuning: one list of entries per device (has_tuning "0" when there is none). */
static int emit__tuning_scope(emit_ctx *c, fg_tmpl_scope *root, const fg_tuning *t)
{
    fg_tmpl_list_declare(root, "tuned_devices");
    fg_tmpl_set(root, "has_tuning", t && t->n_devices ? "1" : "0");
    fg_tmpl_setf(root, "n_tuned_devices", "%zu", t ? t->n_devices : 0);
    for (size_t i = 0; t && i < t->n_devices; i++) {
        const fg_tuned_device *dev = &t->devices[i];
        fg_tmpl_scope *s = fg_tmpl_list_add(root, "tuned_devices");
        const char *name = emit__c_string(c->arena, dev->name);
        if (!name) return -1;
        fg_tmpl_set(s, "device_name", name);
        fg_tmpl_setf(s, "device_index", "%zu", i);
        fg_tmpl_setf(s, "device_sms", "%lld", dev->sms);
        fg_tmpl_setf(s, "device_cc", "%lld", dev->cc);
        fg_tmpl_list_declare(s, "tuned_entries");
        size_t kept = 0;
        for (size_t e = 0; e < dev->n_entries; e++) {
            const fg_tuned_entry *te = &dev->entries[e];
            size_t w = 0;
            while (w < c->plan->n_kernels && strcmp(c->plan->kernels[w].name, te->winner) != 0) w++;
            if (w == c->plan->n_kernels) continue;   /* a variant --only left out */
            fg_tmpl_scope *es = fg_tmpl_list_add(s, "tuned_entries");
            fg_tmpl_set(es, "spec_kernel", te->spec_kernel);
            fg_tmpl_setf(es, "m_bucket", "%lld", te->m_bucket);
            fg_tmpl_setf(es, "n", "%lld", te->n);
            fg_tmpl_setf(es, "k", "%lld", te->k);
            fg_tmpl_setf(es, "n2", "%lld", te->n2);
            fg_tmpl_setf(es, "winner", "%zu", w);
            fg_tmpl_set(es, "winner_name", te->winner);
            fg_tmpl_setf(es, "winner_ms", "%.9g", te->winner_ms);
            fg_tmpl_setf(es, "runner_up_ms", "%.9g", te->runner_up_ms < 0 ? -1.0 : te->runner_up_ms);
            kept++;
        }
        fg_tmpl_set(s, "has_entries", kept ? "1" : "0");
        fg_tmpl_setf(s, "n_entries", "%zu", kept);
    }
    return 0;
}

int fg_emit_library(fg_arena *a, const fg_plan *plan, const fg_tmplsrc *templates, fg_out *out, fg_diag *d)
{
    return fg_emit_library_tuned(a, plan, NULL, templates, out, d);
}

int fg_emit_library_tuned(fg_arena *a, const fg_plan *plan, const fg_tuning *tuning, const fg_tmplsrc *templates,
                          fg_out *out, fg_diag *d)
{
    const fg_spec *spec = plan->spec;
    emit_ctx c = {a, plan, templates, out, d, NULL};
    const char *shown_path = emit__comment_text(a, spec->path);
    if (!shown_path) return -1;
    c.banner = fg_arena_printf(a, FUSEGEN_BANNER_PREFIX "%s from %s (sha256 %s); DO NOT EDIT.", FUSEGEN_VERSION,
                               shown_path, spec->sha256_hex);
    if (!c.banner) return -1;

    fg_tmpl_scope *root = fg_tmpl_scope_new(a, NULL);
    if (!root) return -1;
    fg_tmpl_set(root, "banner", c.banner);
    fg_tmpl_set(root, "library", spec->library);
    fg_tmpl_set(root, "library_upper", emit__upper(a, spec->library));
    fg_tmpl_set(root, "version", FUSEGEN_VERSION);
    fg_tmpl_set(root, "spec_path", spec->path);
    fg_tmpl_set(root, "spec_sha256", spec->sha256_hex);
    /* "kernel" is a spec kernel, "variant" one planned form of it (a dispatch-table entry) */
    fg_tmpl_setf(root, "kernel_count", "%zu kernel%s, %zu variant%s", spec->n_kernels, spec->n_kernels == 1 ? "" : "s",
                 plan->n_kernels, plan->n_kernels == 1 ? "" : "s");
    if (emit__table_scope(&c, root) != 0) return -1;
    if (emit__tuning_scope(&c, root, tuning) != 0) return -1;
    fg_tmpl_list_declare(root, "spec_kernels");
    for (size_t i = 0; i < spec->n_kernels; ++i) {
        fg_tmpl_scope *ks = fg_tmpl_list_add(root, "spec_kernels");
        fg_tmpl_set(ks, "doc", emit__kernel_doc(&c, &spec->kernels[i]));
    }

    int rc = 0;
    const char *device_enums = fg_emit_device_enums(a);
    if (!device_enums) return -1;
    rc |= emit__copy(&c, "common/fusegen_sm80.cuh", "fusegen_sm80.cuh", device_enums);
    rc |= emit__copy(&c, "common/fusegen_sm90.cuh", "fusegen_sm90.cuh", NULL);
    rc |= emit__file(&c, "host/library.h.tmpl", root, fg_arena_printf(a, "%s.h", spec->library));
    rc |= emit__file(&c, "host/dispatch.c.tmpl", root, fg_arena_printf(a, "%s_dispatch.c", spec->library));
    for (size_t i = 0; i < spec->n_kernels; ++i) {
        const fg_kernel_spec *k = &spec->kernels[i];
        fg_tmpl_scope *s = fg_tmpl_scope_new(a, root);
        if (!s) return -1;
        emit__kernel_file_scope(&c, s, k);
        rc |= emit__file(&c, "kernels/kernel.cu.tmpl", s, fg_arena_printf(a, "%s_%s.cu", spec->library, k->name));
    }
    return rc ? -1 : 0;
}
