/* spec.c - see spec.h. Parsing runs in four passes, each bounded and iterative:
 *   1. prescan  the raw bytes: size limit, byte order mark, NUL bytes, nesting depth. These stop
 *               parsing (a NUL would hide the rest of the file from cJSON; depth protects it).
 *   2. cJSON    on a NUL-terminated copy; a syntax error is located and stops parsing.
 *   3. audit    every key, string and number of the accepted text, with its JSON pointer:
 *               malformed UTF-8, raw control characters and \u0000 in strings, number spellings
 *               that JSON does not allow but cJSON does (01, 1., -.5).
 *   4. model    walk of the cJSON tree into the arena model: unknown, duplicate and missing keys,
 *               JSON types, enum words, integers, finite numbers, count limits.
 * Passes 3 and 4 report every error and go on. */
#include "spec.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jsonpos.h"
#include "sha256.h"

/* ---- names of enum values --------------------------------------------------------------- */

/* Every word and value comes from the registry (runtime/fusegen_registry.h). */
#define W_DTYPE(id, word, value, bytes) word,
#define V_DTYPE(id, word, value, bytes) FG_DTYPE_##id,
#define B_DTYPE(id, word, value, bytes) bytes,
static const char *const dtype_words[] = {FUSEGEN_REG_DTYPES(W_DTYPE)};
static const int dtype_values[] = {FUSEGEN_REG_DTYPES(V_DTYPE)};
static const int dtype_bytes[] = {FUSEGEN_REG_DTYPES(B_DTYPE)};
#define W_LAYOUT(id, word, value) word,
#define V_LAYOUT(id, word, value) FG_LAYOUT_##id,
static const char *const layout_words[] = {FUSEGEN_REG_LAYOUTS(W_LAYOUT)};
static const int layout_values[] = {FUSEGEN_REG_LAYOUTS(V_LAYOUT)};
#define W_ARCH(id, word, sm, smem) word,
#define V_ARCH(id, word, sm, smem) FG_ARCH_##id,
#define SM_ARCH(id, word, sm, smem) sm,
static const char *const arch_words[] = {FUSEGEN_REG_ARCHS(W_ARCH)};
static const int arch_values[] = {FUSEGEN_REG_ARCHS(V_ARCH)};
static const int arch_sms[] = {FUSEGEN_REG_ARCHS(SM_ARCH)};
#define INFO_OP(id, token, word, value, cls, key, dflt) {FG_OP_##id, token, word, cls, key, dflt},
static const fg_op_info op_infos[] = {FUSEGEN_REG_OPS(INFO_OP)};
#define W_STRATEGY(id, public_id, word, value) word,
#define V_STRATEGY(id, public_id, word, value) FG_STRATEGY_##id,
static const char *const strategy_words[] = {FUSEGEN_REG_STRATEGIES(W_STRATEGY)};
static const int strategy_values[] = {FUSEGEN_REG_STRATEGIES(V_STRATEGY)};
#define W_SCHEDULE(id, public_id, word, value) word,
#define V_SCHEDULE(id, public_id, word, value) FG_SCHEDULE_##id,
static const char *const schedule_words[] = {FUSEGEN_REG_SCHEDULES(W_SCHEDULE)};
static const int schedule_values[] = {FUSEGEN_REG_SCHEDULES(V_SCHEDULE)};
static const char *const approximate_words[] = {"none", "tanh"};
static const int approximate_values[] = {0, 1};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *fg_spec_dtype_name(fg_dtype t)
{
    for (size_t i = 0; i < COUNT(dtype_values); i++)
        if (dtype_values[i] == (int)t) return dtype_words[i];
    return "none";
}

int fg_spec_dtype_bytes(fg_dtype t)
{
    for (size_t i = 0; i < COUNT(dtype_values); i++)
        if (dtype_values[i] == (int)t) return dtype_bytes[i];
    return 0;
}

const char *fg_spec_layout_name(fg_layout l)
{
    for (size_t i = 0; i < COUNT(layout_values); i++)
        if (layout_values[i] == (int)l) return layout_words[i];
    return "none";
}

const char *fg_spec_arch_name(fg_arch a)
{
    for (size_t i = 0; i < COUNT(arch_values); i++)
        if (arch_values[i] == (int)a) return arch_words[i];
    return "none";
}

int fg_spec_arch_sm(fg_arch a)
{
    for (size_t i = 0; i < COUNT(arch_values); i++)
        if (arch_values[i] == (int)a) return arch_sms[i];
    return 0;
}

const fg_op_info *fg_spec_op_info(fg_op_kind k)
{
    for (size_t i = 0; i < COUNT(op_infos); i++)
        if (op_infos[i].kind == k) return &op_infos[i];
    return NULL;
}

const char *fg_spec_op_name(fg_op_kind k)
{
    const fg_op_info *info = fg_spec_op_info(k);
    return info ? info->word : "unknown";
}

const char *fg_spec_op_token(const fg_op *op)
{
    const fg_op_info *info = fg_spec_op_info(op->kind);
    return info ? info->token : "unknown";
}

bool fg_spec_op_is_norm(fg_op_kind k)
{
    const fg_op_info *info = fg_spec_op_info(k);
    return info && info->cls == FUSEGEN_REG_OPCLASS_NORM;
}

bool fg_spec_op_is_glu(fg_op_kind k)
{
    const fg_op_info *info = fg_spec_op_info(k);
    return info && info->cls == FUSEGEN_REG_OPCLASS_GLU;
}

const char *fg_spec_strategy_name(fg_strategy s)
{
    for (size_t i = 0; i < COUNT(strategy_values); i++)
        if (strategy_values[i] == (int)s) return strategy_words[i];
    return "unknown";
}

const char *fg_spec_schedule_name(fg_schedule s)
{
    for (size_t i = 0; i < COUNT(schedule_values); i++)
        if (schedule_values[i] == (int)s) return schedule_words[i];
    return "unknown";
}

/* ---- parser context and helpers ---------------------------------------------------------- */

typedef struct parser {
    fg_arena *arena;
    fg_diag *d;
    const char *text;          /* NUL-terminated copy of the file */
    size_t len;
} parser;

static const char *ptr_key(parser *P, const char *parent, const char *key)
{
    size_t extra = 0, klen = strlen(key), plen = strlen(parent);
    for (size_t i = 0; i < klen; i++)
        if (key[i] == '~' || key[i] == '/') extra++;
    char *s = fg_arena_alloc(P->arena, plen + 1 + klen + extra + 1);
    if (!s) return parent;
    memcpy(s, parent, plen);
    size_t o = plen;
    s[o++] = '/';
    for (size_t i = 0; i < klen; i++) {
        if (key[i] == '~') { s[o++] = '~'; s[o++] = '0'; }
        else if (key[i] == '/') { s[o++] = '~'; s[o++] = '1'; }
        else s[o++] = key[i];
    }
    s[o] = '\0';
    return s;
}

static const char *ptr_index(parser *P, const char *parent, size_t i)
{
    const char *s = fg_arena_printf(P->arena, "%s/%zu", parent, i);
    return s ? s : parent;
}

static bool utf8_ok(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = strlen(s), i = 0;
    while (i < n) {
        int m = fg_jsonpos_utf8_seq(u + i, n - i);
        if (m == 0) return false;
        i += (size_t)m;
    }
    return true;
}

/* Shortest spelling of v that reads back as v. */
static void fmt_number(char buf[40], double v)
{
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, 40, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 40, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) return;
    }
}

/* "string 'x'", "number 1.5", "true", "null", "an object", ... for "found ..." messages. */
static const char *describe(const cJSON *v, char buf[FG_DIAG_QUOTE_SIZE + 16])
{
    if (cJSON_IsString(v)) {
        char q[FG_DIAG_QUOTE_SIZE];
        const char *s = v->valuestring ? v->valuestring : "";
        snprintf(buf, FG_DIAG_QUOTE_SIZE + 16, "string '%s'", fg_diag_quote(q, s, strlen(s)));
    } else if (cJSON_IsNumber(v)) {
        char num[40];
        fmt_number(num, v->valuedouble);
        snprintf(buf, FG_DIAG_QUOTE_SIZE + 16, "number %s", num);
    } else if (cJSON_IsTrue(v)) {
        return "true";
    } else if (cJSON_IsFalse(v)) {
        return "false";
    } else if (cJSON_IsNull(v)) {
        return "null";
    } else if (cJSON_IsArray(v)) {
        return "an array";
    } else if (cJSON_IsObject(v)) {
        return "an object";
    } else {
        return "an unknown value";
    }
    return buf;
}

static void type_error(parser *P, const char *ptr, const char *expected, const cJSON *v)
{
    char buf[FG_DIAG_QUOTE_SIZE + 16];
    fg_diag_error(P->d, ptr, "expected %s, found %s", expected, describe(v, buf));
}

static void join_words(char *buf, size_t cap, const char *const *words, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", words[i]);
        if (w < 0 || (size_t)w >= cap - o) return;
        o += (size_t)w;
    }
}

/* Number of earlier members of obj named like member (for locating the nth duplicate). */
static int occurrence(const cJSON *obj, const cJSON *member)
{
    int n = 0;
    for (const cJSON *c = obj->child; c && c != member; c = c->next)
        if (c->string && strcmp(c->string, member->string) == 0) n++;
    return n;
}

/* Reports unknown and duplicate keys of obj. keys[] are the keys it may have. */
static void check_keys(parser *P, const cJSON *obj, const char *optr, const char *const *keys, size_t nkeys,
                       const char *owner)
{
    int seen[16] = {0};
    char q[FG_DIAG_QUOTE_SIZE];
    for (const cJSON *c = obj->child; c; c = c->next) {
        const char *key = c->string ? c->string : "";
        size_t k = 0;
        while (k < nkeys && strcmp(keys[k], key) != 0) k++;
        if (k == nkeys) {
            if (!utf8_ok(key)) continue;        /* the audit pass has reported the key */
            const char *p = ptr_key(P, optr, key);
            int nth = P->d->printed < FG_DIAG_MAX_ERRORS ? occurrence(obj, c) : 0;
            char list[256];
            join_words(list, sizeof list, keys, nkeys);
            if (owner)
                fg_diag_error_key(P->d, p, nth, "unknown key '%s' (%s takes: %s)", fg_diag_quote(q, key, strlen(key)),
                                  owner, list);
            else
                fg_diag_error_key(P->d, p, nth, "unknown key '%s' (expected: %s)", fg_diag_quote(q, key, strlen(key)),
                                  list);
            continue;
        }
        if (k < COUNT(seen) && seen[k]++ > 0) {
            const char *p = ptr_key(P, optr, key);
            fg_diag_error_key(P->d, p, seen[k] - 1, "duplicate key '%s'", key);
            fg_diag_note_key(P->d, p, 0, "first given here");
        }
    }
}

static const cJSON *member(const cJSON *obj, const char *key)
{
    for (const cJSON *c = obj->child; c; c = c->next)
        if (c->string && strcmp(c->string, key) == 0) return c;
    return NULL;
}

static void missing(parser *P, const char *optr, const char *key)
{
    fg_diag_error(P->d, optr, "missing required key '%s'", key);
}

/* The following getters return 1 when the key is present and good (value stored), 0 when it is
 * absent (reported when required), -1 when it is present but bad (reported). */

static int get_string(parser *P, const cJSON *obj, const char *optr, const char *key, bool required,
                      const char **out)
{
    const cJSON *v = member(obj, key);
    if (!v) {
        if (required) missing(P, optr, key);
        return 0;
    }
    if (!cJSON_IsString(v) || !v->valuestring) {
        type_error(P, ptr_key(P, optr, key), "a string", v);
        return -1;
    }
    if (!utf8_ok(v->valuestring)) return -1;   /* reported by the audit pass */
    *out = fg_arena_strdup(P->arena, v->valuestring);
    return *out ? 1 : -1;
}

static int enum_word(parser *P, const cJSON *v, const char *ptr, const char *what,
                     const char *const *words, const int *values, size_t n, int *out)
{
    if (!cJSON_IsString(v) || !v->valuestring) {
        type_error(P, ptr, "a string", v);
        return -1;
    }
    const char *s = v->valuestring;
    if (!utf8_ok(s)) return -1;                 /* reported by the audit pass */
    for (size_t i = 0; i < n; i++) {
        if (strcmp(words[i], s) == 0) {
            *out = values[i];
            return 1;
        }
    }
    char q[FG_DIAG_QUOTE_SIZE], list[256];
    join_words(list, sizeof list, words, n);
    bool known_dtype = false;
    if (strcmp(what, "dtype") == 0)
        for (size_t i = 0; i < COUNT(dtype_words); i++)
            if (strcmp(dtype_words[i], s) == 0) known_dtype = true;
    fg_diag_error(P->d, ptr, "%s %s '%s' (expected: %s)", known_dtype ? "unsupported" : "unknown", what,
                  fg_diag_quote(q, s, strlen(s)), list);
    return -1;
}

static int get_enum(parser *P, const cJSON *obj, const char *optr, const char *key, bool required,
                    const char *what, const char *const *words, const int *values, size_t n, int *out)
{
    const cJSON *v = member(obj, key);
    if (!v) {
        if (required) missing(P, optr, key);
        return 0;
    }
    return enum_word(P, v, ptr_key(P, optr, key), what, words, values, n, out);
}

static int get_number(parser *P, const cJSON *obj, const char *optr, const char *key, double *out)
{
    const cJSON *v = member(obj, key);
    if (!v) return 0;
    if (!cJSON_IsNumber(v)) {
        type_error(P, ptr_key(P, optr, key), "a number", v);
        return -1;
    }
    if (!isfinite(v->valuedouble)) {
        fg_diag_error(P->d, ptr_key(P, optr, key), "number out of range (it does not fit a double)");
        return -1;
    }
    *out = v->valuedouble;
    return 1;
}

static int get_long(parser *P, const cJSON *obj, const char *optr, const char *key, long *out)
{
    const cJSON *v = member(obj, key);
    if (!v) {
        missing(P, optr, key);
        return 0;
    }
    const char *p = ptr_key(P, optr, key);
    if (!cJSON_IsNumber(v)) {
        type_error(P, p, "an integer", v);
        return -1;
    }
    double x = v->valuedouble;
    if (!isfinite(x)) {
        fg_diag_error(P->d, p, "number out of range (it does not fit a double)");
        return -1;
    }
    if (x != floor(x)) {
        type_error(P, p, "an integer", v);
        return -1;
    }
    /* (double)LONG_MAX rounds up to 2^63: the open interval is what a long holds (less -2^63) */
    const double hi = (double)LONG_MAX;
    if (!(x > -hi && x < hi)) {
        char num[40];
        fmt_number(num, x);
        fg_diag_error(P->d, p, "integer %s out of range", num);
        return -1;
    }
    *out = (long)x;
    return 1;
}

static int get_bool(parser *P, const cJSON *obj, const char *optr, const char *key, bool *out)
{
    const cJSON *v = member(obj, key);
    if (!v) return 0;
    if (!cJSON_IsBool(v)) {
        type_error(P, ptr_key(P, optr, key), "true or false", v);
        return -1;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

/* An array member, checked for type, emptiness and a count limit (items past it are not read:
 * *count is clamped). NULL when absent or bad. */
static const cJSON *get_array(parser *P, const cJSON *obj, const char *optr, const char *key, bool required,
                              bool nonempty, size_t max, const char *items, size_t *count)
{
    const cJSON *v = member(obj, key);
    *count = 0;
    if (!v) {
        if (required) missing(P, optr, key);
        return NULL;
    }
    const char *p = ptr_key(P, optr, key);
    if (!cJSON_IsArray(v)) {
        type_error(P, p, "an array", v);
        return NULL;
    }
    size_t n = 0;
    for (const cJSON *c = v->child; c; c = c->next) n++;
    if (n == 0 && nonempty) {
        fg_diag_error(P->d, p, "expected at least one %s, found an empty array", items);
        return NULL;
    }
    if (n > max) {
        fg_diag_error(P->d, p, "too many %ss: %zu (at most %zu)", items, n, max);
        n = max;
    }
    *count = n;
    return v;
}

static bool want_object(parser *P, const cJSON *v, const char *ptr)
{
    if (cJSON_IsObject(v)) return true;
    type_error(P, ptr, "an object", v);
    return false;
}

/* ---- model pass -------------------------------------------------------------------------- */

static bool parse_op(parser *P, const cJSON *v, const char *ptr, fg_op *op)
{
    if (!want_object(P, v, ptr)) return false;
    /* the ops a spec names by their word (gelu_tanh is reached through gelu's "approximate") */
    const char *op_words[COUNT(op_infos)];
    int op_values[COUNT(op_infos)];
    size_t n_words = 0;
    for (size_t i = 0; i < COUNT(op_infos); i++) {
        if (strcmp(op_infos[i].token, op_infos[i].word) != 0) continue;
        op_words[n_words] = op_infos[i].word;
        op_values[n_words++] = (int)op_infos[i].kind;
    }
    int kind;
    const cJSON *opv = member(v, "op");
    if (!opv) {
        missing(P, ptr, "op");
        return false;
    }
    if (enum_word(P, opv, ptr_key(P, ptr, "op"), "op", op_words, op_values, n_words, &kind) != 1)
        return false;

    const fg_op_info *info = fg_spec_op_info((fg_op_kind)kind);
    memset(op, 0, sizeof *op);
    op->kind = (fg_op_kind)kind;
    op->ptr = ptr;
    op->value = info->dflt;
    op->affine = true;
    op->strategy = FG_STRATEGY_AUTO;

    /* the keys an op takes: "op", its constant, and those of its class (and gelu's "approximate") */
    const bool gelu = op->kind == FG_OP_GELU;
    const char *keys[5] = {"op"};
    size_t nkeys = 1;
    if (info->key[0]) keys[nkeys++] = info->key;
    if (gelu) keys[nkeys++] = "approximate";
    if (info->cls == FUSEGEN_REG_OPCLASS_STORE) keys[nkeys++] = "as";
    if (info->cls == FUSEGEN_REG_OPCLASS_NORM) {
        keys[nkeys++] = "affine";
        keys[nkeys++] = "strategy";
    }
    char owner[48];
    snprintf(owner, sizeof owner, "op '%s'", info->word);
    check_keys(P, v, ptr, keys, nkeys, owner);

    if (info->key[0]) get_number(P, v, ptr, info->key, &op->value);
    if (gelu) {
        int approx = 0;
        if (get_enum(P, v, ptr, "approximate", false, "approximation", approximate_words, approximate_values,
                     COUNT(approximate_words), &approx) == 1 && approx)
            op->kind = FG_OP_GELU_TANH;
    }
    if (info->cls == FUSEGEN_REG_OPCLASS_STORE) get_string(P, v, ptr, "as", true, &op->as);
    if (info->cls == FUSEGEN_REG_OPCLASS_NORM) {
        int strategy = FG_STRATEGY_AUTO;
        get_bool(P, v, ptr, "affine", &op->affine);
        if (get_enum(P, v, ptr, "strategy", false, "strategy", strategy_words, strategy_values,
                     COUNT(strategy_words), &strategy) == 1)
            op->strategy = (fg_strategy)strategy;
    }
    return true;
}

static void parse_tiles(parser *P, const cJSON *obj, const char *optr, bool required, fg_gemm *g)
{
    static const char *const tile_keys[] = {"m", "n", "k", "stages", "schedule"};
    size_t n;
    const cJSON *arr = get_array(P, obj, optr, "tiles", required, true, FG_SPEC_MAX_TILES, "tile", &n);
    if (!arr || n == 0) return;
    const char *aptr = ptr_key(P, optr, "tiles");
    g->tiles = fg_arena_alloc(P->arena, n * sizeof *g->tiles);
    if (!g->tiles) return;
    size_t i = 0;
    for (const cJSON *c = arr->child; c && i < n; c = c->next, i++) {
        const char *p = ptr_index(P, aptr, i);
        if (!want_object(P, c, p)) continue;
        check_keys(P, c, p, tile_keys, COUNT(tile_keys), NULL);
        fg_tile t = {.ptr = p};
        int ok = get_long(P, c, p, "m", &t.m) == 1;
        ok &= get_long(P, c, p, "n", &t.n) == 1;
        ok &= get_long(P, c, p, "k", &t.k) == 1;
        ok &= get_long(P, c, p, "stages", &t.stages) == 1;
        int schedule = FG_SCHEDULE_AUTO;
        int got = get_enum(P, c, p, "schedule", false, "schedule", schedule_words, schedule_values,
                           COUNT(schedule_words), &schedule);
        ok &= got != -1;
        t.schedule = (fg_schedule)schedule;
        if (ok) g->tiles[g->n_tiles++] = t;   /* a tile with a bad field is left out of the model */
    }
}

/* The epilogue's ops, after `lead` when it is not NULL (the kernel's a_norm, the first op). */
static void parse_epilogue(parser *P, const cJSON *obj, const char *optr, fg_gemm *g, const fg_op *lead)
{
    size_t n;
    const cJSON *arr = get_array(P, obj, optr, "epilogue", true, false, FG_SPEC_MAX_OPS, "op", &n);
    if (!arr || (n == 0 && !lead)) return;
    const char *aptr = ptr_key(P, optr, "epilogue");
    g->ops = fg_arena_alloc(P->arena, (n + 1) * sizeof *g->ops);
    if (!g->ops) return;
    if (lead) g->ops[g->n_ops++] = *lead;
    size_t i = 0;
    for (const cJSON *c = arr->child; c && i < n; c = c->next, i++) {
        if (parse_op(P, c, ptr_index(P, aptr, i), &g->ops[g->n_ops])) g->n_ops++;
    }
}

/* "a_norm": {"op": "rmsnorm", "eps": ...}: the norm of A's rows, as the op FG_OP_A_RMSNORM
 * (true when one was read into *op). */
static bool parse_a_norm(parser *P, const cJSON *obj, const char *optr, fg_op *op)
{
    const cJSON *v = member(obj, "a_norm");
    if (!v) return false;
    const char *ptr = ptr_key(P, optr, "a_norm");
    if (!want_object(P, v, ptr)) return false;
    static const char *const keys[] = {"op", "eps"};
    check_keys(P, v, ptr, keys, COUNT(keys), "a_norm");
    static const char *const words[] = {"rmsnorm"};
    static const int values[] = {FG_OP_A_RMSNORM};
    const cJSON *word = member(v, "op");
    if (cJSON_IsString(word) && word->valuestring && strcmp(word->valuestring, "layernorm") == 0) {
        /* the mainloop's one pass gives a row's sum and sum of squares: E[x^2] - E[x]^2 in f32
         * loses the variance where the mean is large against the spread (decisions.md, "The
         * norm on A") */
        fg_diag_error(P->d, ptr_key(P, ptr, "op"), "layernorm on A is not supported yet: only rmsnorm (a row's "
                      "variance from one f32 pass over A loses its precision where the mean is large against "
                      "the spread)");
        return false;
    }
    int kind = 0;
    if (get_enum(P, v, ptr, "op", true, "norm on A", words, values, COUNT(words), &kind) != 1) return false;
    memset(op, 0, sizeof *op);
    op->kind = (fg_op_kind)kind;
    op->ptr = ptr;
    op->value = fg_spec_op_info(op->kind)->dflt;
    op->strategy = FG_STRATEGY_AUTO;
    return get_number(P, v, ptr, "eps", &op->value) != -1;
}

static void parse_layout(parser *P, const cJSON *obj, const char *optr, fg_gemm *g)
{
    int layout = FG_LAYOUT_NK;
    if (get_enum(P, obj, optr, "b_layout", false, "layout", layout_words, layout_values, COUNT(layout_words),
                 &layout) == 1)
        g->b_layout = (fg_layout)layout;
}

static void parse_kernel(parser *P, const cJSON *v, const char *ptr, fg_kernel_spec *k)
{
    static const char *const kernel_keys[] = {"name", "arch", "a", "b", "out", "accum",
                                              "b_layout", "tiles", "a_norm", "epilogue", "then"};
    static const char *const then_keys[] = {"b_layout", "tiles", "epilogue"};
    memset(k, 0, sizeof *k);
    k->ptr = ptr;
    k->accum = FG_DTYPE_F32;
    k->gemm.ptr = ptr;
    k->gemm.b_layout = FG_LAYOUT_NK;
    if (!want_object(P, v, ptr)) return;
    check_keys(P, v, ptr, kernel_keys, COUNT(kernel_keys), NULL);

    get_string(P, v, ptr, "name", true, &k->name);

    size_t n;
    const cJSON *arr = get_array(P, v, ptr, "arch", true, true, FG_SPEC_MAX_ARCHS, "arch", &n);
    if (arr && n) {
        k->archs = fg_arena_alloc(P->arena, n * sizeof *k->archs);
        if (k->archs) {
            const char *aptr = ptr_key(P, ptr, "arch");
            size_t i = 0;
            for (const cJSON *c = arr->child; c && i < n; c = c->next, i++) {
                int a = FG_ARCH_NONE;
                enum_word(P, c, ptr_index(P, aptr, i), "arch", arch_words, arch_values, COUNT(arch_words), &a);
                k->archs[i] = (fg_arch)a;    /* FG_ARCH_NONE where the word was bad */
            }
            k->n_archs = n;
        }
    }

    /* the tensor cores' operands: the 16-bit types */
    const char *operand_words[COUNT(dtype_words)];
    int operand_values[COUNT(dtype_words)];
    size_t n_operands = 0;
    for (size_t i = 0; i < COUNT(dtype_words); i++) {
        if (dtype_bytes[i] != 2) continue;
        operand_words[n_operands] = dtype_words[i];
        operand_values[n_operands++] = dtype_values[i];
    }
    int t;
    if (get_enum(P, v, ptr, "a", true, "dtype", operand_words, operand_values, n_operands, &t) == 1)
        k->a = (fg_dtype)t;
    if (get_enum(P, v, ptr, "b", true, "dtype", operand_words, operand_values, n_operands, &t) == 1)
        k->b = (fg_dtype)t;
    if (get_enum(P, v, ptr, "out", true, "dtype", dtype_words, dtype_values, COUNT(dtype_words), &t) == 1)
        k->out = (fg_dtype)t;
    if (get_enum(P, v, ptr, "accum", false, "dtype", dtype_words, dtype_values, COUNT(dtype_words), &t) == 1)
        k->accum = (fg_dtype)t;

    parse_layout(P, v, ptr, &k->gemm);
    parse_tiles(P, v, ptr, true, &k->gemm);
    fg_op a_norm;
    const bool has_a_norm = parse_a_norm(P, v, ptr, &a_norm);
    parse_epilogue(P, v, ptr, &k->gemm, has_a_norm ? &a_norm : NULL);

    const cJSON *then = member(v, "then");
    if (then) {
        const char *tptr = ptr_key(P, ptr, "then");
        if (want_object(P, then, tptr)) {
            k->has_then = true;
            k->then.ptr = tptr;
            k->then.b_layout = FG_LAYOUT_NK;
            check_keys(P, then, tptr, then_keys, COUNT(then_keys), NULL);
            parse_layout(P, then, tptr, &k->then);
            parse_tiles(P, then, tptr, false, &k->then);
            parse_epilogue(P, then, tptr, &k->then, NULL);
        }
    }
}

static void parse_root(parser *P, const cJSON *root, fg_spec *out)
{
    static const char *const root_keys[] = {"$schema", "library", "kernels"};
    if (!cJSON_IsObject(root)) {
        type_error(P, "", "a JSON object at the top level", root);
        return;
    }
    check_keys(P, root, "", root_keys, COUNT(root_keys), NULL);
    const char *schema;
    get_string(P, root, "", "$schema", false, &schema);
    get_string(P, root, "", "library", true, &out->library);

    size_t n;
    const cJSON *arr = get_array(P, root, "", "kernels", true, true, FG_SPEC_MAX_KERNELS, "kernel", &n);
    if (!arr || n == 0) return;
    out->kernels = fg_arena_alloc(P->arena, n * sizeof *out->kernels);
    if (!out->kernels) return;
    size_t i = 0;
    for (const cJSON *c = arr->child; c && i < n; c = c->next, i++)
        parse_kernel(P, c, ptr_index(P, "/kernels", i), &out->kernels[i]);
    out->n_kernels = n;
}

/* ---- audit pass ------------------------------------------------------------------------ */

typedef struct audit {
    parser *P;
    bool nul_key;        /* a key holds \u0000: cJSON's copy of it is cut there */
    size_t scan_off;     /* line counting so far, to locate tokens in one pass over the text */
    int line;
    size_t line_start;
} audit;

static void audit_locate(audit *A, size_t off, int *line, int *col)
{
    const char *t = A->P->text;
    for (; A->scan_off < off; A->scan_off++) {
        if (fg_jsonpos_line_break(t, A->P->len, A->scan_off)) {
            A->line++;
            A->line_start = A->scan_off + 1;
        }
    }
    *line = A->line;
    *col = (int)(off - A->line_start + 1);
}

static bool number_ok(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    if (i >= n) return false;
    if (s[i] == '0') i++;
    else if (s[i] >= '1' && s[i] <= '9') while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    else return false;
    if (i < n && s[i] == '.') {
        i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == d) return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == d) return false;
    }
    return i == n;
}

static void audit_visit(void *ctx, fg_jsonpos_token kind, const char *pointer, size_t off, size_t n)
{
    audit *A = ctx;
    parser *P = A->P;
    const unsigned char *s = (const unsigned char *)P->text + off;
    int line, col;
    if (kind == FG_JSONPOS_NUMBER) {
        if (number_ok((const char *)s, n)) return;
        char q[FG_DIAG_QUOTE_SIZE];
        audit_locate(A, off, &line, &col);
        fg_diag_error_at(P->d, line, col, pointer, "malformed number '%s' (JSON allows no leading zeros, "
                         "no leading '+' or '.', and digits after '.')", fg_diag_quote(q, (const char *)s, n));
        return;
    }
    const char *what = kind == FG_JSONPOS_KEY ? "key" : "string";
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == '\\') {
            if (i + 5 < n && s[i + 1] == 'u' && memcmp(s + i + 2, "0000", 4) == 0) {
                if (kind == FG_JSONPOS_KEY) A->nul_key = true;
                audit_locate(A, off + i, &line, &col);
                fg_diag_error_at(P->d, line, col, pointer, "NUL character (\\u0000) in a %s", what);
                return;
            }
            i += 2;
            continue;
        }
        if (c < 0x20) {
            audit_locate(A, off + i, &line, &col);
            fg_diag_error_at(P->d, line, col, pointer, "control character 0x%02x in a %s (write it escaped)",
                             c, what);
            return;
        }
        int m = fg_jsonpos_utf8_seq(s + i, n - i);
        if (m == 0) {
            audit_locate(A, off + i, &line, &col);
            fg_diag_error_at(P->d, line, col, pointer, "invalid UTF-8 in a %s (byte 0x%02x)", what, c);
            return;
        }
        i += (size_t)m;
    }
}

/* ---- prescan and syntax errors ------------------------------------------------------------ */

/* Returns 0, or -1 after reporting a problem that stops parsing. */
static int prescan(parser *P)
{
    const char *t = P->text;
    size_t n = P->len;
    int line = 1;
    size_t line_start = 0, depth = 0;
    bool in_string = false, escaped = false;
    if (n >= 3 && memcmp(t, "\xEF\xBB\xBF", 3) == 0) {
        fg_diag_error_at(P->d, 1, 1, NULL, "byte order mark at the start of the file (save the spec as "
                         "UTF-8 without one)");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char c = t[i];
        if (c == '\0') {
            fg_diag_error_at(P->d, line, (int)(i - line_start + 1), NULL,
                             "NUL byte in the file (a spec is UTF-8 JSON text)");
            return -1;
        }
        if (fg_jsonpos_line_break(t, n, i)) {
            line++;
            line_start = i + 1;
        }
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > FG_SPEC_MAX_DEPTH) {
                fg_diag_error_at(P->d, line, (int)(i - line_start + 1), NULL,
                                 "nesting deeper than %d levels", FG_SPEC_MAX_DEPTH);
                return -1;
            }
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        }
    }
    return 0;
}

static void syntax_error(parser *P, const char *cjson_end)
{
    const char *t = P->text;
    size_t n = P->len;
    size_t first = 0;
    while (first < n && (t[first] == ' ' || t[first] == '\t' || t[first] == '\n' || t[first] == '\r')) first++;
    if (first == n) {
        fg_diag_error(P->d, NULL, "empty file (expected a JSON object)");
        return;
    }
    int line, col;
    /* a complete value followed by more text */
    const char *end2 = NULL;
    cJSON *lenient = cJSON_ParseWithOpts(t, &end2, 0);
    if (lenient) {
        cJSON_Delete(lenient);
        size_t off = end2 ? (size_t)(end2 - t) : n;
        while (off < n && (t[off] == ' ' || t[off] == '\t' || t[off] == '\n' || t[off] == '\r')) off++;
        fg_jsonpos_line_col(t, n, off, &line, &col);
        fg_diag_error_at(P->d, line, col, NULL, "trailing characters after the JSON value");
        return;
    }
    size_t off = cjson_end && cjson_end >= t ? (size_t)(cjson_end - t) : n;
    if (off > n) off = n;
    size_t stop = n;
    if (fg_jsonpos_walk(t, n, -1, NULL, NULL, &stop) != 0 && stop < off) off = stop;
    fg_jsonpos_line_col(t, n, off, &line, &col);
    const char *expected = fg_jsonpos_expected(t, n, off);   /* what JSON allows there, if it can tell */
    if (off >= n) {
        if (expected) fg_diag_error_at(P->d, line, col, NULL, "syntax error: unexpected end of file (expected %s)", expected);
        else fg_diag_error_at(P->d, line, col, NULL, "syntax error: unexpected end of file");
        return;
    }
    /* the commonest slip: a comma before a closing bracket (the parse stops at the bracket, so
     * the comma before it is structural, not inside a string) */
    if (t[off] == '}' || t[off] == ']') {
        size_t c = off;
        while (c > 0 && (t[c - 1] == ' ' || t[c - 1] == '\t' || t[c - 1] == '\n' || t[c - 1] == '\r')) c--;
        if (c > 0 && t[c - 1] == ',') {
            fg_jsonpos_line_col(t, n, c - 1, &line, &col);
            fg_diag_error_at(P->d, line, col, NULL, "syntax error: a comma before '%c' (JSON allows no trailing comma)",
                             t[off]);
            return;
        }
    }
    size_t e = off;
    while (e < n && e - off < 16 && t[e] != '\n' && t[e] != '\r') e++;
    char q[FG_DIAG_QUOTE_SIZE];
    if (expected)
        fg_diag_error_at(P->d, line, col, NULL, "syntax error: expected %s, found '%s'", expected,
                         fg_diag_quote(q, t + off, e - off));
    else
        fg_diag_error_at(P->d, line, col, NULL, "syntax error near '%s'", fg_diag_quote(q, t + off, e - off));
}

/* Reports where the audit walk stopped on text that cJSON accepted. */
static void walk_error(parser *P, size_t off)
{
    int line, col;
    if (off > P->len) off = P->len;
    fg_jsonpos_line_col(P->text, P->len, off, &line, &col);
    unsigned char c = off < P->len ? (unsigned char)P->text[off] : 0;
    if (off < P->len && c < 0x20) {
        fg_diag_error_at(P->d, line, col, NULL, "control character 0x%02x between tokens (JSON allows only "
                         "space, tab, line feed and carriage return there)", c);
        return;
    }
    size_t e = off;
    while (e < P->len && e - off < 16 && P->text[e] != '\n' && P->text[e] != '\r') e++;
    char q[FG_DIAG_QUOTE_SIZE];
    fg_diag_error_at(P->d, line, col, NULL, "syntax error near '%s'", fg_diag_quote(q, P->text + off, e - off));
}

/* ---- entry point ------------------------------------------------------------------------ */

int fg_spec_parse(fg_arena *arena, const char *path, const char *text, size_t len, fg_spec *out, fg_diag *d)
{
    int errors_before = d->errors;
    memset(out, 0, sizeof *out);
    out->path = path;
    if (!text) len = 0;
    if (len > FG_SPEC_MAX_BYTES) {
        fg_diag_error(d, NULL, "file is %zu bytes, more than the limit of %u", len, FG_SPEC_MAX_BYTES);
        return -1;
    }
    char *copy = fg_arena_alloc(arena, len + 1);
    if (!copy) {
        fg_diag_error(d, NULL, "out of memory");
        return -1;
    }
    if (len) memcpy(copy, text, len);
    copy[len] = '\0';
    out->text = copy;
    out->text_len = len;
    fg_sha256(copy, len, out->sha256);
    fg_sha256_hex(out->sha256, out->sha256_hex);

    parser P = {.arena = arena, .d = d, .text = copy, .len = len};
    if (prescan(&P) != 0) return -1;

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(copy, &end, 1);
    if (!root) {
        syntax_error(&P, end);
        return -1;
    }
    audit A = {.P = &P, .scan_off = 0, .line = 1, .line_start = 0};
    size_t stop = len;
    if (fg_jsonpos_walk(copy, len, FG_SPEC_MAX_DEPTH, audit_visit, &A, &stop) != 0) {
        /* cJSON is laxer than JSON (it skips any byte up to 0x20 as white space); the audit
         * could not see the rest, so nothing after this point has been checked. */
        walk_error(&P, stop);
        cJSON_Delete(root);
        return -1;
    }
    /* cJSON cuts a key at its \u0000, so the model pass would see another key than the text
     * has (an unknown key at the wrong pointer, a duplicate that is not one): it does not run. */
    if (!A.nul_key) parse_root(&P, root, out);
    cJSON_Delete(root);
    return d->errors > errors_before ? -1 : 0;
}
