/* jit.c - the runtime's JIT (fusegen_jit.h): spec text -> the generator's stages in process ->
 * one CUDA source -> NVRTC (through the disk cache, jit_cache.c) -> a CUBIN -> the driver API.
 *
 * The kernels of a fusegen_jit are fusegen_kernel entries filled from the plan by the kernel
 * record builder the dispatch table is printed from (generator/kernel_record.c), with launch_jit
 * pointing here: it finds the functions in the current context's module and hands them to the
 * runtime's one launcher (launch.c), which compiled-in kernels use too.
 *
 * Driver entry points come through the runtime (fusegen__cu, launch.c), NVRTC from
 * generator/rtc.c (dlopen). */
#define _POSIX_C_SOURCE 200809L
#include "fusegen_jit.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "fusegen_internal.h"
#include "fusegen_workspace.h"
#include "jit_cache.h"

#include "arena.h"
#include "buf.h"
#include "check.h"
#include "diag.h"
#include "emit.h"
#include "kernel_record.h"
#include "out.h"
#include "pipeline.h"
#include "plan.h"
#include "rtc.h"
#include "sha256.h"
#include "spec.h"
#include "tmplsrc.h"

/* The templates, built in by cmake/fusegen_embed_templates.cmake. */
extern const fg_tmplsrc_file fusegen_embedded_templates[];
extern const size_t fusegen_embedded_templates_count;

enum {
    JIT__MAX_CONTEXTS = 16,   /* CUDA contexts one object's code may be loaded into */
    JIT__FNS = FUSEGEN_LAUNCH_FNS,   /* functions per variant: gemm1, normalize1 (or reduce1), gemm2, reduce2 */
    JIT__PATH = 4200,
    JIT__WHY = 2 * JIT__PATH + 256   /* a reason may name two paths (a rename) */
};

typedef struct jit__variant {
    struct fusegen_jit *owner;
    size_t index;                  /* in kernels[]; its functions are fn[JIT__FNS * index ...] */
    fusegen_launch_cache cache;    /* the launcher's */
    const char *sym[JIT__FNS];     /* gemm1, normalize1 (split) or reduce1 (split K), gemm2 (chains),
                                      reduce2 (split-K chains) */
} jit__variant;

typedef struct jit__module {
    CUcontext ctx;
    CUmodule mod;
    CUfunction *fn;
} jit__module;

struct fusegen_jit {
    fg_arena arena;
    fg_spec spec;
    fg_plan plan;
    fg_out out;
    pthread_mutex_t lock;

    int compiled;
    char arch[24];
    int arch_sm;
    int arch_90a;
    int has_cache_entry;
    char cache_entry[JIT__PATH];
    unsigned char *cubin;
    size_t cubin_len;

    fusegen_kernel *kernels;
    jit__variant *variants;
    size_t n_kernels;
    fusegen_library lib;

    jit__module modules[JIT__MAX_CONTEXTS];
    int n_modules;
    fusegen_jit_stats stats;
};

/* ---- warnings ------------------------------------------------------------------------------- */

static pthread_mutex_t jit__warn_lock = PTHREAD_MUTEX_INITIALIZER;
static fusegen_jit_warning_fn jit__warn_fn;
static void *jit__warn_user;
/* Cache folders already warned about as unwritable (once each). */
static char *jit__warned_dirs[32];
static size_t jit__n_warned_dirs;

void fusegen_jit_set_warning_handler(fusegen_jit_warning_fn fn, void *user)
{
    pthread_mutex_lock(&jit__warn_lock);
    jit__warn_fn = fn;
    jit__warn_user = user;
    pthread_mutex_unlock(&jit__warn_lock);
}

/* The warnings of one compile. They are raised while the JIT's lock is held and given to the
 * handler after it is released (jit__deliver), so a handler may call the JIT's accessors or set
 * another handler. */
#define JIT__MAX_WARNINGS 3   /* a compile raises two at most */
#define JIT__WARNING_LEN (JIT__PATH + JIT__WHY + 256)   /* a folder or entry, the reason, the sentence */
typedef struct jit__warnings {
    char msg[JIT__MAX_WARNINGS][JIT__WARNING_LEN];
    const char *once_dir[JIT__MAX_WARNINGS];   /* warn only the first time for this folder (NULL: always) */
    int n;
} jit__warnings;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void jit__warn(jit__warnings *w, const char *once_dir, const char *fmt, ...)
{
    va_list ap;
    if (!w || w->n >= JIT__MAX_WARNINGS) return;   /* NULL: no memory for them */
    va_start(ap, fmt);
    vsnprintf(w->msg[w->n], sizeof w->msg[w->n], fmt, ap);
    va_end(ap);
    w->once_dir[w->n++] = once_dir;
}

/* Hands each warning to the handler (or stderr), with no lock held while it runs. */
static void jit__deliver(const jit__warnings *w)
{
    for (int i = 0; w && i < w->n; ++i) {
        const char *once_dir = w->once_dir[i];
        int seen = 0;
        pthread_mutex_lock(&jit__warn_lock);
        if (once_dir) {
            for (size_t d = 0; d < jit__n_warned_dirs && !seen; ++d) seen = strcmp(jit__warned_dirs[d], once_dir) == 0;
            if (!seen && jit__n_warned_dirs < sizeof jit__warned_dirs / sizeof jit__warned_dirs[0]) {
                char *copy = strdup(once_dir);
                if (copy) jit__warned_dirs[jit__n_warned_dirs++] = copy;
            }
        }
        fusegen_jit_warning_fn fn = jit__warn_fn;
        void *user = jit__warn_user;
        pthread_mutex_unlock(&jit__warn_lock);
        if (seen) continue;
        if (fn)
            fn(w->msg[i], user);
        else
            fprintf(stderr, "fusegen: warning: %s\n", w->msg[i]);
    }
}

/* ---- create: parse, check, plan, render ------------------------------------------------------ */

/* Drops trailing line breaks and blanks. */
static void jit__one_line(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = '\0';
}

/* The diagnostics as a one-line detail: line breaks become "; ". */
static fusegen_status jit__diag_fail(fusegen_status st, const char *lead, char *text)
{
    fg_buf b;
    if (text) jit__one_line(text);
    fg_buf_init(&b);
    for (const char *p = text ? text : ""; *p; ++p) {
        if (*p == '\n')
            fg_buf_puts(&b, "; ");
        else
            fg_buf_append(&b, p, 1);
    }
    st = fusegen__detail_set(st, "%s: %s", lead, b.failed || !b.data ? "(out of memory)" : b.data);
    fg_buf_free(&b);
    return st;
}

static void jit__free(fusegen_jit *j)
{
    if (!j) return;
    fusegen__select_memo_invalidate();   /* a new library may get this one's addresses */
    free(j->cubin);
    fg_arena_free(&j->arena);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

fusegen_status fusegen_jit_create(const char *spec_json, size_t len, const char *spec_name, fusegen_jit **out)
{
    if (out) *out = NULL;
    if (!out) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "out is NULL");
    if (!spec_json) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "spec_json is NULL");
    /* the name goes into one-line details and diagnostics: its control bytes escaped, cut when long */
    char name[FG_DIAG_QUOTE_SIZE];
    if (spec_name && *spec_name)
        fg_diag_quote(name, spec_name, strlen(spec_name));
    else
        snprintf(name, sizeof name, "%s", "<jit>");
    if (len > FG_SPEC_MAX_BYTES)
        return fusegen__detail_set(FUSEGEN_ERR_SPEC, "%s: error: the spec is %zu bytes, over the limit of %u bytes",
                                   name, len, FG_SPEC_MAX_BYTES);

    fusegen_jit *j = calloc(1, sizeof *j);
    if (!j) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "out of memory");
    fg_arena_init(&j->arena);
    pthread_mutex_init(&j->lock, NULL);

    char *diag_text = NULL;
    size_t diag_len = 0;
    FILE *diag_out = open_memstream(&diag_text, &diag_len);
    if (!diag_out) {
        jit__free(j);
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "out of memory (open_memstream)");
    }
    fg_diag d;
    fg_diag_init(&d, diag_out);
    const char *text = fg_arena_strndup(&j->arena, spec_json, len);
    const char *path = fg_arena_strdup(&j->arena, name);
    int stage_ok = 0, render_ok = 0;
    if (text && path) {
        /* the code stays in memory: no library file rules */
        const fg_pipeline_opts opts = {.last = FG_PIPELINE_PLANNED, .library_files = false};
        if (fg_pipeline_run(&j->arena, path, text, len, &opts, &j->spec, &j->plan, &d, NULL) == FG_PIPELINE_PLANNED) {
            stage_ok = 1;
            /* The banner names the spec: a fixed name keeps the compiled source (and so the cache
             * key) the same whatever the caller calls it; the banner's hash names the content. */
            j->spec.path = "jit spec";
            fg_out_init(&j->out, &j->arena);
            const fg_tmplsrc templates = fg_tmplsrc_table(fusegen_embedded_templates, fusegen_embedded_templates_count);
            render_ok = fg_emit_library(&j->arena, &j->plan, &templates, &j->out, &d) == 0 &&
                        fg_diag_errors(&d) == 0;
        }
    } else {
        fg_diag_error(&d, NULL, "out of memory");
    }
    fg_diag_finish(&d);
    fclose(diag_out);

    fusegen_status st = FUSEGEN_OK;
    if (!stage_ok) {
        char lead[128];
        snprintf(lead, sizeof lead, "spec %s has %d error(s)", name, fg_diag_errors(&d));
        st = jit__diag_fail(FUSEGEN_ERR_SPEC, lead, diag_text);
    } else if (!render_ok) {
        st = jit__diag_fail(FUSEGEN_ERR_COMPILE, "rendering the kernels with the built-in templates failed", diag_text);
    }
    free(diag_text);
    if (st != FUSEGEN_OK) {
        jit__free(j);
        return st;
    }
    *out = j;
    return fusegen__detail_set(FUSEGEN_OK, "%s", "");
}

/* ---- compile ------------------------------------------------------------------------------------ */

/* "sm_<digits>[a|f]": the number (80, 90, 100, ...) and whether it has the 'a' suffix. The
 * digits are NVRTC's spelling: two or three, no leading zero (NVRTC refuses sm_080). */
static int jit__parse_arch(const char *arch, int *sm, int *is_a)
{
    if (strncmp(arch, "sm_", 3) != 0) return -1;
    const char *p = arch + 3;
    int v = 0, digits = 0;
    if (*p == '0') return -1;
    while (*p >= '0' && *p <= '9' && digits < 4) v = v * 10 + (*p++ - '0'), ++digits;
    if (digits < 2 || digits > 3) return -1;
    *is_a = 0;
    if (*p == 'a') *is_a = 1, ++p;
    else if (*p == 'f') ++p;
    if (*p) return -1;
    *sm = v;
    return 0;
}

/* The real architectures from sm_80 on that NVIDIA has shipped (compute capabilities). An arch
 * the caller names must be one of them, so that a slip (sm_99, sm_85) is an invalid argument
 * rather than an NVRTC failure; the current device's own arch is taken as it comes. */
static const int jit__known_sm[] = {80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121};

static int jit__known_arch(int sm)
{
    for (size_t i = 0; i < sizeof jit__known_sm / sizeof jit__known_sm[0]; ++i)
        if (jit__known_sm[i] == sm) return 1;
    return 0;
}

/* Options the JIT sets itself, or that make NVRTC give something other than the one CUBIN for
 * the arch it reports: given in nvrtc_options they would make the JIT say one thing and run
 * another (--gpu-architecture=sm_90a behind arch sm_80). Matched, after leading blanks, as the
 * option's name alone (its value in the next option) or followed by '=' or a blank. */
static const struct jit__opt {
    const char *name;
    const char *why;
} jit__refused_opts[] = {
    {"--gpu-architecture", "the JIT sets the arch: give it as opts->arch"},
    {"-arch", "the JIT sets the arch: give it as opts->arch"},
    {"--std", "the JIT sets the language standard (-std=c++17) that the kernels are written in"},
    {"-std", "the JIT sets the language standard (-std=c++17) that the kernels are written in"},
    {"--dlink-time-opt", "the JIT loads a CUBIN, not LTO IR"},
    {"-dlto", "the JIT loads a CUBIN, not LTO IR"},
    {"--fdevice-syntax-only", "the JIT needs the compiled code"},
    {"-fdevice-syntax-only", "the JIT needs the compiled code"},
};

/* The reason option opt is refused, or NULL. */
static const char *jit__refused_option(const char *opt)
{
    while (*opt == ' ' || *opt == '\t') ++opt;
    for (size_t i = 0; i < sizeof jit__refused_opts / sizeof jit__refused_opts[0]; ++i) {
        size_t n = strlen(jit__refused_opts[i].name);
        if (strncmp(opt, jit__refused_opts[i].name, n) == 0 &&
            (opt[n] == '\0' || opt[n] == '=' || opt[n] == ' ' || opt[n] == '\t'))
            return jit__refused_opts[i].why;
    }
    return NULL;
}

static int jit__spec_lists_90a(const fg_spec *s)
{
    for (size_t i = 0; i < s->n_kernels; ++i)
        for (size_t a = 0; a < s->kernels[i].n_archs; ++a)
            if (s->kernels[i].archs[a] == FG_ARCH_SM90A) return 1;
    return 0;
}

/* The current device's arch. */
static fusegen_status jit__device_arch(const fusegen_jit *j, char *arch, size_t len)
{
    int dev = 0, major = 0, minor = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    if (e != cudaSuccess)
        return fusegen__detail_set(FUSEGEN_ERR_CUDA,
                                   "cannot query the current device for the JIT's arch (opts->arch is NULL): %s: %s",
                                   cudaGetErrorName(e), cudaGetErrorString(e));
    snprintf(arch, len, "sm_%d%d%s", major, minor,
             major == 9 && minor == 0 && jit__spec_lists_90a(&j->spec) ? "a" : "");
    return FUSEGEN_OK;
}

/* Whether planned variant pk can run code compiled for the arch. */
static int jit__variant_fits(const fg_plan_kernel *pk, int sm, int is_90a)
{
    if (pk->family == FG_FAMILY_SM90) return is_90a;
    return pk->sm <= sm;
}

/* The generator's enums and the public ones take their values from one registry
 * (fusegen_registry.h): the same numbers. */
/* A record's ops as the runtime's (the same values: one registry). */
static const fusegen_op *jit__ops(fg_arena *a, const fg_kernel_record_gemm *g)
{
    if (g->n_ops == 0) return NULL;
    fusegen_op *ops = fg_arena_alloc(a, (size_t)g->n_ops * sizeof *ops);
    if (!ops) return NULL;
    for (int i = 0; i < g->n_ops; ++i) {
        ops[i].kind = (fusegen_op_kind)g->ops[i].kind;
        ops[i].value = g->ops[i].value;
        ops[i].affine = g->ops[i].affine;
        ops[i].index = g->ops[i].index;
    }
    return ops;
}

static int jit__launch(const fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args, void *workspace,
                       cudaStream_t stream, char *why, size_t why_len);

/* Fills the kernel table with the variants that fit the arch. Returns the count, or -1 when
 * memory ran out. */
static long jit__build_table(fusegen_jit *j)
{
    const fg_plan *plan = &j->plan;
    size_t n = 0;
    for (size_t i = 0; i < plan->n_kernels; ++i) n += (size_t)jit__variant_fits(&plan->kernels[i], j->arch_sm, j->arch_90a);
    if (n == 0) return 0;
    j->kernels = fg_arena_alloc(&j->arena, n * sizeof *j->kernels);
    j->variants = fg_arena_alloc(&j->arena, n * sizeof *j->variants);
    if (!j->kernels || !j->variants) return -1;
    const char *lib = j->spec.library;
    size_t at = 0;
    for (size_t i = 0; i < plan->n_kernels; ++i) {
        const fg_plan_kernel *pk = &plan->kernels[i];
        if (!jit__variant_fits(pk, j->arch_sm, j->arch_90a)) continue;
        fusegen_kernel *k = &j->kernels[at];
        jit__variant *v = &j->variants[at];
        v->owner = j;
        v->index = at;
        /* the plan's record (the AOT dispatch table prints the same), but for the arch: a
         * CUBIN is code for the arch it was compiled for */
        fg_kernel_record r;
        if (fg_kernel_record_build(&j->arena, pk, &r) != 0) return -1;
        v->sym[0] = fg_arena_printf(&j->arena, "%s_%s_gemm1", lib, pk->name);
        v->sym[1] = r.launch1.split     ? fg_arena_printf(&j->arena, "%s_%s_normalize1", lib, pk->name)
                    : r.launch1.split_k ? fg_arena_printf(&j->arena, "%s_%s_reduce1", lib, pk->name)
                                        : NULL;
        if (pk->chain) v->sym[2] = fg_arena_printf(&j->arena, "%s_%s_gemm2", lib, pk->name);
        if (pk->chain && r.launch2.split_k) v->sym[3] = fg_arena_printf(&j->arena, "%s_%s_reduce2", lib, pk->name);
        if (!v->sym[0] || ((r.launch1.split || r.launch1.split_k) && !v->sym[1]) || (pk->chain && !v->sym[2]) ||
            (pk->chain && r.launch2.split_k && !v->sym[3]))
            return -1;
        k->name = r.name;
        k->spec_kernel = r.spec_kernel;
        k->sm = j->arch_sm > r.sm ? j->arch_sm : r.sm;
        k->arch_specific = j->arch_90a;
        k->family = (fusegen_family)r.family;
        k->a = (fusegen_dtype)r.a;
        k->b = (fusegen_dtype)r.b;
        k->out = (fusegen_dtype)r.out;
        k->chain = r.chain;
        k->b_layout = (fusegen_layout)r.g1.b_layout;
        k->epilogue = r.g1.epilogue;
        k->ops = jit__ops(&j->arena, &r.g1);
        k->n_ops = r.g1.n_ops;
        k->tile_m = r.g1.tile_m;
        k->tile_n = r.g1.tile_n;
        k->tile_k = r.g1.tile_k;
        k->stages = r.g1.stages;
        k->threads = r.g1.threads;
        k->schedule = (fusegen_schedule)r.g1.schedule;
        k->n_stores = r.g1.n_stores;
        k->uses_bias = r.g1.uses_bias;
        k->uses_residual = r.g1.uses_residual;
        k->b2_layout = (fusegen_layout)r.g2.b_layout;
        k->epilogue2 = r.g2.epilogue;
        k->ops2 = jit__ops(&j->arena, &r.g2);
        k->n_ops2 = r.g2.n_ops;
        k->tile2_m = r.g2.tile_m;
        k->tile2_n = r.g2.tile_n;
        k->tile2_k = r.g2.tile_k;
        k->stages2 = r.g2.stages;
        k->threads2 = r.g2.threads;
        k->schedule2 = (fusegen_schedule)r.g2.schedule;
        k->n_stores2 = r.g2.n_stores;
        k->uses_bias2 = r.g2.uses_bias;
        k->uses_residual2 = r.g2.uses_residual;
        if ((k->n_ops > 0 && !k->ops) || (k->n_ops2 > 0 && !k->ops2)) return -1;
        k->norm = (fusegen_norm)r.norm;
        k->strategy = (fusegen_strategy)r.strategy;
        k->split_k = r.split_k;
        k->max_n = r.max_n;
        k->align_elems = r.align_elems;
        k->uses_gamma = r.uses_gamma;
        k->uses_beta = r.uses_beta;
        k->rank = r.rank;
        k->launch1 = r.launch1;
        k->launch2 = r.launch2;
        k->functions = NULL;
        k->cache = &v->cache;
        k->launch_jit = jit__launch;
        k->jit = v;
        ++at;
    }
    return (long)at;
}

/* The rendered file whose path is "<library>/<name>", or NULL. */
static const fg_out_file *jit__file(const fusegen_jit *j, const char *name)
{
    size_t ll = strlen(j->spec.library);
    for (size_t i = 0; i < j->out.n_files; ++i) {
        const char *p = j->out.files[i].rel_path;
        if (strncmp(p, j->spec.library, ll) == 0 && p[ll] == '/' && strcmp(p + ll + 1, name) == 0)
            return &j->out.files[i];
    }
    return NULL;
}

/* The one source compiled: the kernel file of every spec kernel with a variant kept (each with
 * its launch checks). Returns 0 with the text in *src (NUL-terminated), or -1. */
static int jit__source(fusegen_jit *j, fg_buf *src, char *why, size_t why_len)
{
    fg_buf_init(src);
    for (size_t i = 0; i < j->spec.n_kernels; ++i) {
        const fg_kernel_spec *ks = &j->spec.kernels[i];
        int used = 0;
        for (size_t v = 0; v < j->n_kernels; ++v) used |= j->kernels[v].spec_kernel == ks->name;
        if (!used) continue;
        char name[2 * FG_SPEC_MAX_NAME + 8];
        snprintf(name, sizeof name, "%s_%s.cu", j->spec.library, ks->name);
        const fg_out_file *f = jit__file(j, name);
        if (!f) {
            snprintf(why, why_len, "internal error: %s was not rendered", name);
            return -1;
        }
        fg_buf_append(src, f->data, f->len);
        fg_buf_puts(src, "\n");
    }
    if (src->failed || !src->data) {
        snprintf(why, why_len, "out of memory building the source");
        return -1;
    }
    return 0;
}

static void jit__key_str(fg_jit_key_builder *b, const char *name, const char *s)
{
    fg_jit_key_add(b, name, s, strlen(s));
}

fusegen_status fusegen_jit_compile(fusegen_jit *jit, const fusegen_jit_options *opts, fusegen_jit_cache_result *cache)
{
    static const fusegen_jit_options none;
    char arch[24], why[JIT__WHY], dir[JIT__PATH];
    fusegen_status st = FUSEGEN_OK;
    if (cache) *cache = FUSEGEN_JIT_CACHE_OFF;
    if (!jit) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "jit is NULL");
    if (!opts) opts = &none;
    if (opts->n_nvrtc_options < 0 || (opts->n_nvrtc_options > 0 && !opts->nvrtc_options))
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "opts->nvrtc_options is NULL but n_nvrtc_options = %d",
                                   opts->n_nvrtc_options);
    for (int i = 0; i < opts->n_nvrtc_options; ++i) {
        if (!opts->nvrtc_options[i])
            return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "opts->nvrtc_options[%d] is NULL", i);
        const char *why_not = jit__refused_option(opts->nvrtc_options[i]);
        if (why_not) {
            char q[FG_DIAG_QUOTE_SIZE];
            const char *o = opts->nvrtc_options[i];
            return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "opts->nvrtc_options[%d] = '%s' is refused: %s",
                                       i, fg_diag_quote(q, o, strlen(o)), why_not);
        }
    }

    int from_device = !opts->arch || !*opts->arch;
    if (from_device) {
        st = jit__device_arch(jit, arch, sizeof arch);
        if (st != FUSEGEN_OK) return st;
    } else if (strlen(opts->arch) >= sizeof arch) {
        char q[FG_DIAG_QUOTE_SIZE];
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "opts->arch '%s...' is too long",
                                   fg_diag_quote(q, opts->arch, sizeof arch - 1));
    } else {
        snprintf(arch, sizeof arch, "%s", opts->arch);
    }
    int sm = 0, is_a = 0;
    if (jit__parse_arch(arch, &sm, &is_a) != 0) {
        char q[FG_DIAG_QUOTE_SIZE];
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT,
                                   "opts->arch = '%s' is not a real architecture such as sm_80, sm_86 or sm_90a",
                                   fg_diag_quote(q, arch, strlen(arch)));
    }
    if (sm < 80)
        return fusegen__detail_set(FUSEGEN_ERR_NOT_SUPPORTED, "arch %s: fusegen kernels need sm_80 or newer", arch);
    if (!from_device && !jit__known_arch(sm))
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT,
                                   "opts->arch = '%s' is not a real architecture (from sm_80 on: sm_80, sm_86, sm_87, "
                                   "sm_88, sm_89, sm_90, sm_90a, sm_100, sm_101, sm_103, sm_110, sm_120, sm_121)", arch);
    /* arch-specific code runs on one compute capability, and the runtime knows only 9.0's */
    if (arch[strlen(arch) - 1] == 'f' || (is_a && sm != 90))
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT,
                                   "opts->arch = '%s': the only arch-specific target of fusegen's kernels is "
                                   "sm_90a (the Hopper family); give sm_%d for the portable ones", arch, sm);

    pthread_mutex_lock(&jit->lock);
    if (jit->compiled) {
        int same = strcmp(jit->arch, arch) == 0;
        pthread_mutex_unlock(&jit->lock);
        if (!same)
            return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT,
                                       "this JIT library is compiled for %s already; create another one for %s",
                                       jit->arch, arch);
        return from_device ? fusegen_jit_load(jit) : fusegen__detail_set(FUSEGEN_OK, "%s", "");
    }

    snprintf(jit->arch, sizeof jit->arch, "%s", arch);
    jit->arch_sm = sm;
    jit->arch_90a = is_a && sm == 90;
    long n = jit__build_table(jit);
    if (n <= 0) {
        jit->kernels = NULL;
        jit->variants = NULL;
        jit->arch[0] = '\0';
        pthread_mutex_unlock(&jit->lock);
        if (n < 0) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "out of memory");
        return fusegen__detail_set(FUSEGEN_ERR_NOT_SUPPORTED,
                                   "no kernel of spec library '%s' can be built for %s (the Hopper family needs "
                                   "sm_90a; the portable one an arch at least the lowest its kernel lists)",
                                   jit->spec.library, arch);
    }
    jit->n_kernels = (size_t)n;

    /* source, options, key */
    fg_buf src;
    char arch_opt[48];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    const char *base_opts[] = {arch_opt, "-std=c++17"};
    int n_opts = 2 + opts->n_nvrtc_options;
    const char **all_opts = calloc((size_t)n_opts, sizeof *all_opts);
    const fg_out_file *h80 = jit__file(jit, "fusegen_sm80.cuh"), *h90 = jit__file(jit, "fusegen_sm90.cuh");
    char *headers[2] = {NULL, NULL};
    static const char *const header_names[2] = {"fusegen_sm80.cuh", "fusegen_sm90.cuh"};
    uint8_t key[32];
    int major = 0, minor = 0, have_key = 0;
    unsigned char *code = NULL;
    size_t code_len = 0;
    fusegen_jit_cache_result result = FUSEGEN_JIT_CACHE_OFF;
    int use_cache = !opts->no_cache;
    jit__warnings *warnings = calloc(1, sizeof *warnings);   /* ~40 KB: not on a thread's stack */

    if (jit__source(jit, &src, why, sizeof why) != 0 || !all_opts || !h80 || !h90) {
        st = fusegen__detail_set(FUSEGEN_ERR_COMPILE, "%s", !all_opts || !h80 || !h90 ? "internal error: headers missing or out of memory" : why);
        goto out;
    }
    for (int i = 0; i < 2; ++i) all_opts[i] = base_opts[i];
    for (int i = 0; i < opts->n_nvrtc_options; ++i) all_opts[2 + i] = opts->nvrtc_options[i];
    headers[0] = strndup(h80->data, h80->len);
    headers[1] = strndup(h90->data, h90->len);
    if (!headers[0] || !headers[1]) {
        st = fusegen__detail_set(FUSEGEN_ERR_COMPILE, "out of memory");
        goto out;
    }
    if (fg_rtc_version(&major, &minor) != 0) {
        st = fusegen__detail_set(FUSEGEN_ERR_COMPILE,
                                 "NVRTC is not available (libnvrtc.so cannot be loaded, or this fusegen was built "
                                 "without its header): the JIT cannot compile");
        goto out;
    }
    {
        fg_jit_key_builder kb;
        char num[32];
        fg_jit_key_init(&kb);
        snprintf(num, sizeof num, "%d", FG_JIT_CACHE_FORMAT);
        jit__key_str(&kb, "format", num);
        jit__key_str(&kb, "generator", FUSEGEN_VERSION_STRING);
        snprintf(num, sizeof num, "%d.%d", major, minor);
        jit__key_str(&kb, "nvrtc", num);
        jit__key_str(&kb, "arch", arch);
        for (int i = 0; i < n_opts; ++i) jit__key_str(&kb, "option", all_opts[i]);
        fg_jit_key_add(&kb, "source", src.data, src.len);
        jit__key_str(&kb, "header fusegen_sm80.cuh", headers[0]);
        jit__key_str(&kb, "header fusegen_sm90.cuh", headers[1]);
        have_key = fg_jit_key_finish(&kb, key) == 0;
    }

    /* the cache */
    if (use_cache && (!have_key || fg_jit_cache_dir(opts->cache_dir, dir, sizeof dir, why, sizeof why) != 0)) {
        /* keyed like a folder, so that it comes once a process as the folder warnings do */
        jit__warn(warnings, have_key ? "<no cache folder>" : NULL, "the JIT cache is off for this compile: %s",
                  have_key ? why : "out of memory");
        use_cache = 0;
    }
    if (use_cache && fg_jit_cache_dir_private(dir, why, sizeof why) != 0) {
        jit__warn(warnings, dir, "the JIT cache folder %s %s, so code found there could be another user's: the "
                  "cache is off for it (make it yours, mode 0700, or choose another)", dir, why);
        use_cache = 0;
    }
    if (use_cache && fg_jit_cache_entry_path(dir, key, jit->cache_entry, sizeof jit->cache_entry) != 0) {
        jit__warn(warnings, NULL, "the JIT cache is off for this compile: the entry's path under %s is too long", dir);
        use_cache = 0;
    }
    if (use_cache) {
        uint8_t *payload = NULL;
        size_t len = 0;
        int r = fg_jit_cache_read(jit->cache_entry, key, &payload, &len, why, sizeof why);
        if (r == FG_JIT_CACHE_READ_HIT) {
            jit->has_cache_entry = 1;
            code = payload;
            code_len = len;
            result = FUSEGEN_JIT_CACHE_HIT;
            jit->stats.cache_hits++;
        } else if (r == FG_JIT_CACHE_READ_CORRUPT) {
            jit__warn(warnings, NULL, "JIT cache entry %s is corrupt (%s); compiling again", jit->cache_entry, why);
            result = FUSEGEN_JIT_CACHE_CORRUPT;
            jit->stats.cache_corrupt++;
        } else {
            result = FUSEGEN_JIT_CACHE_MISS;
            jit->stats.cache_misses++;
        }
    }

    if (!code) {
        char *log = NULL, *bin = NULL;
        size_t bin_len = 0;
        char name[FG_SPEC_MAX_NAME + 16];
        snprintf(name, sizeof name, "%s_jit.cu", jit->spec.library);
        jit->stats.compiles++;
        int r = fg_rtc_compile(src.data, name, 2, (const char *const *)headers, header_names, all_opts, n_opts, &bin,
                               &bin_len, &log);
        if (r != 0) {
            char *l = log ? log : (char *)"no log";
            jit__one_line(l);
            for (char *p = l; *p; ++p)
                if (*p == '\n') *p = ' ';
            st = fusegen__detail_set(FUSEGEN_ERR_COMPILE, "NVRTC %s for %s: %s",
                                     r < 0 ? "is not usable" : "failed to compile the kernels", arch, l);
            free(log);
            free(bin);
            goto out;
        }
        free(log);
        code = (unsigned char *)bin;
        code_len = bin_len;
        if (use_cache) {
            if (fg_jit_cache_write(dir, jit->cache_entry, key, code, code_len, why, sizeof why) == 0) {
                jit->has_cache_entry = 1;
                jit->stats.cache_writes++;
            } else {
                jit->stats.cache_write_failures++;
                jit__warn(warnings, dir,
                          "the JIT cache folder %s cannot be written (%s); compiled code is kept in memory only",
                          dir, why);
            }
        }
    }
    jit->cubin = code;
    jit->cubin_len = code_len;
    code = NULL;
    jit->lib.name = jit->spec.library;
    jit->lib.generator_version = FUSEGEN_VERSION_STRING;
    jit->lib.spec_sha256 = jit->spec.sha256_hex;
    jit->lib.kernels = jit->kernels;
    jit->lib.n_kernels = jit->n_kernels;
    jit->lib.tuned = NULL;               /* no compiled-in tuning: a loaded file is the JIT's */
    jit->lib.n_tuned = 0;
    jit->compiled = 1;
    fusegen__select_memo_invalidate();   /* this library's table is new */
    if (cache) *cache = result;
    st = fusegen__detail_set(FUSEGEN_OK, "%s", "");

out:
    if (st != FUSEGEN_OK) {
        jit->kernels = NULL;
        jit->variants = NULL;
        jit->n_kernels = 0;
        jit->arch[0] = '\0';
        jit->has_cache_entry = 0;
    }
    pthread_mutex_unlock(&jit->lock);
    if (warnings && warnings->n > 0) {
        /* a handler may call fusegen functions, which set the detail: this call's comes back */
        char detail[1024];
        snprintf(detail, sizeof detail, "%s", fusegen_last_detail());
        jit__deliver(warnings);
        fusegen__detail_set(st, "%s", detail);
    }
    free(warnings);
    free(code);
    free(headers[0]);
    free(headers[1]);
    free(all_opts);
    fg_buf_free(&src);
    if (st == FUSEGEN_OK && from_device) st = fusegen_jit_load(jit);
    return st;
}

/* ---- accessors --------------------------------------------------------------------------------- */

const fusegen_library *fusegen_jit_library(const fusegen_jit *jit)
{
    if (!jit) return NULL;
    fusegen_jit *j = (fusegen_jit *)jit;
    pthread_mutex_lock(&j->lock);
    const fusegen_library *lib = j->compiled ? &j->lib : NULL;
    pthread_mutex_unlock(&j->lock);
    return lib;
}

/* Both read under the lock and show only a finished compile (its arch and entry never change
 * afterwards), not one in progress on another thread. */
const char *fusegen_jit_arch(const fusegen_jit *jit)
{
    if (!jit) return "";
    fusegen_jit *j = (fusegen_jit *)jit;
    pthread_mutex_lock(&j->lock);
    const char *arch = j->compiled ? j->arch : "";
    pthread_mutex_unlock(&j->lock);
    return arch;
}

const char *fusegen_jit_cache_entry(const fusegen_jit *jit)
{
    if (!jit) return NULL;
    fusegen_jit *j = (fusegen_jit *)jit;
    pthread_mutex_lock(&j->lock);
    const char *entry = j->compiled && j->has_cache_entry ? j->cache_entry : NULL;
    pthread_mutex_unlock(&j->lock);
    return entry;
}

void fusegen_jit_get_stats(const fusegen_jit *jit, fusegen_jit_stats *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!jit) return;
    fusegen_jit *j = (fusegen_jit *)jit;
    pthread_mutex_lock(&j->lock);
    *out = j->stats;
    pthread_mutex_unlock(&j->lock);
}

/* ---- load ----------------------------------------------------------------------------------------- */

/* The module of the current context (the current device's primary context when none is
 * current), loaded on first use. Returns 0, or 1 with why set. */
static int jit__module_get(fusegen_jit *j, jit__module **out, char *why, size_t len)
{
    CUcontext ctx = NULL;
    CUresult r;
    const fusegen__driver *cu = fusegen__cu(why, len);
    if (!cu) return 1;
    if ((r = cu->ctx_get_current(&ctx)) != CUDA_SUCCESS) return fusegen__cu_fail(r, why, len, "cuCtxGetCurrent");
    if (!ctx) {
        int dev = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e == cudaSuccess) e = cudaSetDevice(dev);   /* makes the primary context current */
        if (e != cudaSuccess) {
            snprintf(why, len, "no CUDA context: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
            return 1;
        }
        if ((r = cu->ctx_get_current(&ctx)) != CUDA_SUCCESS || !ctx) {
            if (r == CUDA_SUCCESS) {
                snprintf(why, len, "no CUDA context is current");
                return 1;
            }
            return fusegen__cu_fail(r, why, len, "cuCtxGetCurrent");
        }
    }
    pthread_mutex_lock(&j->lock);
    for (int i = 0; i < j->n_modules; ++i)
        if (j->modules[i].ctx == ctx) {
            *out = &j->modules[i];
            pthread_mutex_unlock(&j->lock);
            return 0;
        }
    int rc = 0;
    jit__module m = {ctx, NULL, NULL};
    if (!j->compiled) {
        snprintf(why, len, "the JIT library is not compiled (fusegen_jit_compile)");
        rc = 1;
    } else if (j->n_modules == JIT__MAX_CONTEXTS) {
        snprintf(why, len, "the JIT library is loaded in %d CUDA contexts already", JIT__MAX_CONTEXTS);
        rc = 1;
    } else if ((r = cu->module_load_data(&m.mod, j->cubin)) != CUDA_SUCCESS) {
        int dev = 0, major = 0, minor = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
        rc = fusegen__cu_fail(r, why, len, "cuModuleLoadData (code for %s, device %d is sm_%d%d)", j->arch, dev, major,
                          minor);
        m.mod = NULL;
    } else if (!(m.fn = calloc(JIT__FNS * j->n_kernels, sizeof *m.fn))) {
        snprintf(why, len, "out of memory");
        rc = 1;
    }
    for (size_t v = 0; rc == 0 && v < j->n_kernels; ++v) {
        const jit__variant *var = &j->variants[v];
        for (int f = 0; rc == 0 && f < JIT__FNS; ++f) {
            if (!var->sym[f]) continue;
            CUfunction *fn = &m.fn[JIT__FNS * v + (size_t)f];
            if ((r = cu->module_get_function(fn, m.mod, var->sym[f])) != CUDA_SUCCESS) {
                rc = fusegen__cu_fail(r, why, len, "cuModuleGetFunction(%s)", var->sym[f]);
                break;
            }
            const fusegen_launch_gemm *rec = f == FUSEGEN_LAUNCH_GEMM1   ? &j->kernels[v].launch1
                                             : f == FUSEGEN_LAUNCH_GEMM2 ? &j->kernels[v].launch2
                                                                         : NULL;
            if (rec && (r = cu->func_set_attribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                       rec->smem_bytes)) != CUDA_SUCCESS)
                rc = fusegen__cu_fail(r, why, len, "cuFuncSetAttribute(%s, max dynamic shared memory = %d)", var->sym[f],
                                  rec->smem_bytes);
            /* a cluster kernel's clusters may pass 8 CTAs (the portable size): up to 16. Where the
             * driver refuses, clusters of 8 or fewer still run, and a larger one's launch says
             * that no cluster of its size fits: not a reason to fail the whole module. */
            else if (rec && rec->cluster)
                (void)cu->func_set_attribute(*fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
        }
    }
    if (rc == 0) {
        j->modules[j->n_modules] = m;
        *out = &j->modules[j->n_modules++];
    } else {
        if (m.mod) cu->module_unload(m.mod);
        free(m.fn);
    }
    pthread_mutex_unlock(&j->lock);
    return rc;
}

fusegen_status fusegen_jit_load(fusegen_jit *jit)
{
    char why[JIT__WHY];
    jit__module *m;
    if (!jit) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "jit is NULL");
    if (!fusegen_jit_library(jit))
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "JIT library '%s' is not compiled yet "
                                   "(fusegen_jit_compile first)", jit->spec.library);
    if (jit__module_get(jit, &m, why, sizeof why) != 0)
        return fusegen__detail_set(FUSEGEN_ERR_CUDA, "loading JIT library '%s': %s", jit->spec.library, why);
    return fusegen__detail_set(FUSEGEN_OK, "%s", "");
}

/* ---- launch: the runtime's launcher, with this context's functions ---------------------------- */

static int jit__launch(const fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args, void *workspace,
                       cudaStream_t stream, char *why, size_t why_len)
{
    const jit__variant *v = k->jit;
    jit__module *m;
    if (!v || !v->owner) {
        snprintf(why, why_len, "the kernel has no JIT data (corrupt entry)");
        return 1;
    }
    if (jit__module_get(v->owner, &m, why, why_len) != 0) return 1;
    return fusegen__launch(k, &m->fn[JIT__FNS * v->index], p, args, workspace, stream, why, why_len);
}

/* ---- destroy and the fallback -------------------------------------------------------------------- */

void fusegen_jit_destroy(fusegen_jit *jit)
{
    if (!jit) return;
    char why[256];
    const fusegen__driver *cu = jit->n_modules > 0 ? fusegen__cu(why, sizeof why) : NULL;
    for (int i = 0; i < jit->n_modules; ++i) {
        jit__module *m = &jit->modules[i];
        CUcontext prev;
        /* cuModuleUnload works on the current context: make the module's current meanwhile */
        if (cu && cu->ctx_push(m->ctx) == CUDA_SUCCESS) {
            cu->module_unload(m->mod);
            cu->ctx_pop(&prev);
        }
        free(m->fn);
    }
    jit__free(jit);
}

fusegen_status fusegen_select_or_jit(const fusegen_library *lib, fusegen_jit *jit, const fusegen_problem *p,
                                     const fusegen_kernel **out)
{
    char lib_why[1024];
    fusegen_status st;
    if (!out) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if (!jit) return fusegen_select(lib, p, out);
    if (!p) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "p (the problem) is NULL");
    /* a bad problem is itself the answer: no compile can fix it */
    st = fusegen__check_problem(p);
    if (st != FUSEGEN_OK) return st;
    if (lib) {
        st = fusegen_select(lib, p, out);
        if (st != FUSEGEN_ERR_NOT_SUPPORTED) return st;   /* found, or an error no library can fix */
        snprintf(lib_why, sizeof lib_why, "%s", fusegen_last_detail());
    } else {
        snprintf(lib_why, sizeof lib_why, "no ahead-of-time library");
    }
    if (!fusegen_jit_library(jit)) {
        st = fusegen_jit_compile(jit, NULL, NULL);
        if (st != FUSEGEN_OK) {
            char jit_why[1024];
            snprintf(jit_why, sizeof jit_why, "%s", fusegen_last_detail());
            return fusegen__detail_set(st, "%s; the JIT fallback failed: %s", lib_why, jit_why);
        }
    }
    st = fusegen_select(fusegen_jit_library(jit), p, out);
    if (st != FUSEGEN_OK) {
        char jit_why[1024];
        snprintf(jit_why, sizeof jit_why, "%s", fusegen_last_detail());
        return fusegen__detail_set(st, "%s; JIT: %s", lib_why, jit_why);
    }
    return st;
}
