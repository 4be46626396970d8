/* check.c - see check.h. Every rule reports at the JSON pointer of the value it is about and
 * checking goes on, so one run lists every problem. The model may come from a parse that
 * reported errors: what the parser could not read is absent (NULL names, FG_DTYPE_NONE,
 * FG_ARCH_NONE, tiles and ops left out) and is skipped here rather than reported twice. */
#include "check.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "plan.h"
#include "jsonpos.h"

#define MAX_STORES_PER_GEMM FUSEGEN_REG_MAX_STORES

typedef struct checker {
    fg_diag *d;
    int errors;
} checker;

/* Pointer buf = base + suffix ("/kernels/0" + "/name"). Pointers the model holds are built from
 * indices and fixed keys, so they are short; a longer one is cut, which only loses location. */
typedef struct ptrbuf { char s[256]; } ptrbuf;

static const char *ptr_cat(ptrbuf *b, const char *base, const char *suffix)
{
    snprintf(b->s, sizeof b->s, "%s%s", base ? base : "", suffix);
    return b->s;
}

static const char *ptr_catf(ptrbuf *b, const char *base, const char *fmt, size_t i)
{
    char tail[48];
    snprintf(tail, sizeof tail, fmt, i);
    return ptr_cat(b, base, tail);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void err(checker *c, const char *ptr, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fg_diag_error(c->d, ptr, "%s", msg);
    c->errors++;
}

/* The shortest spelling of v that reads back as v: a limit and a value that differ never print
 * the same (%g's six digits made FLT_MAX and 3.4028235e38 look equal). */
typedef struct numbuf { char s[40]; } numbuf;

static const char *num(numbuf *b, double v)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(b->s, sizeof b->s, "%.*g", prec, v);
        if (strtod(b->s, NULL) == v) break;
    }
    return b->s;
}

/* Characters (UTF-8 code points) of s: the spec's text is valid UTF-8 by now. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

/* ---- names ------------------------------------------------------------------------------ */

static const char *const keywords[] = {
    /* C (through C23) */
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
    "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
    "volatile", "while", "bool", "true", "false", "nullptr", "typeof", "typeof_unqual", "alignas",
    "alignof", "constexpr", "static_assert", "thread_local",
    /* C++ (CUDA sources are C++) */
    "and", "and_eq", "asm", "bitand", "bitor", "catch", "char8_t", "char16_t", "char32_t", "class",
    "compl", "concept", "consteval", "constinit", "const_cast", "co_await", "co_return", "co_yield",
    "decltype", "delete", "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new",
    "noexcept", "not", "not_eq", "operator", "or", "or_eq", "private", "protected", "public",
    "reinterpret_cast", "requires", "static_cast", "template", "this", "throw", "try", "typeid",
    "typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
};

static bool is_ident(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return false;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

/* Checks a name that becomes (part of) a C identifier; what: "library name", "kernel name", ... */
static bool check_name(checker *c, const char *ptr, const char *what, const char *name)
{
    char q[FG_DIAG_QUOTE_SIZE];
    size_t n = strlen(name);
    if (n == 0) {
        err(c, ptr, "%s is empty (expected a C identifier)", what);
        return false;
    }
    size_t chars = utf8_chars(name);
    if (chars > FG_SPEC_MAX_NAME) {
        err(c, ptr, "%s is %zu characters long, more than %d", what, chars, FG_SPEC_MAX_NAME);
        return false;
    }
    if (!is_ident(name)) {
        err(c, ptr, "%s '%s' is not a C identifier (expected ASCII letters, digits and '_', not starting "
            "with a digit)", what, fg_diag_quote(q, name, n));
        return false;
    }
    if (name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'))) {
        err(c, ptr, "%s '%s' is reserved in C (it starts with '__' or '_' and a capital letter)", what, name);
        return false;
    }
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
        if (strcmp(keywords[i], name) == 0) {
            err(c, ptr, "%s '%s' is a C/C++ keyword", what, name);
            return false;
        }
    }
    return true;
}

/* A library's header is <library>.h in a folder that goes on the include path of everything
 * that links the library, so it must not shadow a header that code includes. The runtime's
 * headers are in the list too: fusegen and fusegen_jit would also make fusegen_library and
 * fusegen_jit_library, names the runtime declares (tests/cli/reserved_names_test.sh checks
 * that every runtime name of the form X_library is refused this way). These lists are the one
 * place that names the headers (docs/spec.md, "Names", describes them). */
static const char *const runtime_headers[] = {"fusegen", "fusegen_jit", "fusegen_workspace", "fusegen_internal"};
static const char *const c_headers[] = {
    /* C standard */
    "assert", "complex", "ctype", "errno", "fenv", "float", "inttypes", "iso646", "limits", "locale", "math",
    "setjmp", "signal", "stdalign", "stdarg", "stdatomic", "stdbit", "stdbool", "stdckdint", "stddef", "stdint",
    "stdio", "stdlib", "stdnoreturn", "string", "tgmath", "threads", "time", "uchar", "wchar", "wctype",
    /* POSIX and glibc: every header libc6-dev puts directly in /usr/include (features.h is
     * included first by all of glibc's headers, so shadowing it breaks every one) */
    "aio", "aliases", "alloca", "ar", "argp", "argz", "byteswap", "cpio", "crypt", "dirent", "dlfcn", "elf",
    "endian", "envz", "err", "error", "execinfo", "fcntl", "features", "fmtmsg", "fnmatch", "fstab", "fts", "ftw",
    "gconv", "getopt", "glob", "grp", "gshadow", "iconv", "ifaddrs", "langinfo", "lastlog", "libgen", "libintl",
    "link", "malloc", "mcheck", "memory", "mntent", "monetary", "mqueue", "ndbm", "netdb", "nl_types", "nss",
    "obstack", "paths", "poll", "printf", "proc_service", "pthread", "pty", "pwd", "re_comp", "regex", "regexp",
    "resolv", "sched", "search", "semaphore", "sgtty", "shadow", "spawn", "stab", "stdio_ext", "strings",
    "stropts", "syscall", "sysexits", "syslog", "tar", "termio", "termios", "thread_db", "trace", "ttyent",
    "ucontext", "ulimit", "unistd", "utime", "utmp", "utmpx", "values", "wait", "wordexp",
    /* the compiler's own (GCC, Clang) */
    "arm_bf16", "arm_fp16", "arm_neon", "arm_sve", "cpuid", "emmintrin", "gcov", "immintrin", "mm_malloc",
    "mmintrin", "nmmintrin", "omp", "openacc", "pmmintrin", "quadmath", "smmintrin", "stdfix", "syslimits",
    "tmmintrin", "unwind", "varargs", "wmmintrin", "x86intrin", "xmmintrin",
};
static const char *const cuda_headers[] = {
    /* every header the CUDA 13.0 toolkit puts directly in its include/ folder */
    "builtin_types", "channel_descriptor", "common_functions", "cooperative_groups", "cuComplex", "cublas",
    "cublasLt", "cublasXt", "cublas_api", "cublas_v2", "cuda", "cudaEGL", "cudaEGLTypedefs", "cudaGL",
    "cudaGLTypedefs", "cudaProfiler", "cudaProfilerTypedefs", "cudaTypedefs", "cudaVDPAU", "cudaVDPAUTypedefs",
    "cuda_awbarrier", "cuda_awbarrier_helpers", "cuda_awbarrier_primitives", "cuda_bf16",
    "cuda_device_runtime_api", "cuda_egl_interop", "cuda_fp16", "cuda_fp4", "cuda_fp6", "cuda_fp8",
    "cuda_gl_interop", "cuda_occupancy", "cuda_pipeline", "cuda_pipeline_helpers", "cuda_pipeline_primitives",
    "cuda_profiler_api", "cuda_runtime", "cuda_runtime_api", "cuda_stdint", "cuda_surface_types",
    "cuda_texture_types", "cuda_vdpau_interop", "cudalibxt", "cudart_platform", "cudnn", "cudnn_adv",
    "cudnn_backend", "cudnn_cnn", "cudnn_graph", "cudnn_ops", "cudnn_version", "cufft", "cufftXt", "cufftw",
    "cupti", "curand", "curand_kernel", "cusolverDn", "cusolverMg", "cusolverRf", "cusolverSp",
    "cusolver_common", "cusparse", "cusparseLt", "device_atomic_functions", "device_double_functions",
    "device_functions", "device_launch_parameters", "device_types", "driver_functions", "driver_types",
    "fatbinary_section", "host_config", "host_defines", "library_types", "math_constants", "math_functions",
    "mma", "nccl", "nvJitLink", "nvToolsExt", "nvToolsExtCuda", "nvToolsExtCudaRt", "nvblas", "nvml", "nvrtc",
    "nvtx3", "nvvm", "sm_20_atomic_functions", "sm_20_intrinsics", "sm_30_intrinsics", "sm_32_atomic_functions",
    "sm_32_intrinsics", "sm_35_atomic_functions", "sm_35_intrinsics", "sm_60_atomic_functions",
    "sm_61_intrinsics", "surface_functions", "surface_indirect_functions", "surface_types",
    "texture_fetch_functions", "texture_indirect_functions", "texture_types", "vector_functions",
    "vector_types",
};
/* The prefix of every symbol the generator library (fusegen_gen) and the runtime's internals
 * export (fg_arch_..., fg_emit_library, fg_jit_...; the runtime's public ones are fusegen_...):
 * a library's symbols <library>_library and <library>_<kernel>_... must stay out of it, or one
 * of them could take the place of the generator's function of the same name in a program that
 * links both (library fg_emit defines the data fg_emit_library). Compared without case, as the
 * header's macros (FG_EMIT_H) are in capitals too. tests/cli/reserved_names_test.sh checks
 * that every symbol those libraries export begins with it or with fusegen_. */
#define CHECK_GENERATOR_PREFIX "fg"

static bool ascii_equal_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
        char y = (*b >= 'A' && *b <= 'Z') ? (char)(*b - 'A' + 'a') : *b;
        if (x != y) return false;
    }
    return *a == *b;
}

static const char *listed_nocase(const char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (ascii_equal_nocase(list[i], name)) return list[i];
    return NULL;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool ascii_prefix_nocase(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++) {
        char x = (*s >= 'A' && *s <= 'Z') ? (char)(*s - 'A' + 'a') : *s;
        if (x != *prefix) return false;
    }
    return true;
}

/* The library name's own rules, after check_name (a name it refused is not looked at again).
 * Headers compare without case: on a file system that ignores it, STDINT.h is stdint.h, and
 * the include guard is the name in capitals. */
static void check_library_name(checker *c, const char *name)
{
    const char *h;
    const char *fs = "";
    char upper[FG_SPEC_MAX_NAME + 1];
    size_t n = strlen(name);
    if (n == 0 || n > FG_SPEC_MAX_NAME || !is_ident(name) || (name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'))))
        return;   /* check_name's errors */
    for (size_t i = 0; i <= n; i++) upper[i] = (name[i] >= 'a' && name[i] <= 'z') ? (char)(name[i] - 'a' + 'A') : name[i];
    if (((h = listed_nocase(c_headers, COUNT(c_headers), name)) || (h = listed_nocase(cuda_headers, COUNT(cuda_headers), name))) &&
        strcmp(h, name) != 0)
        fs = " (on a file system that ignores case)";
    if ((h = listed_nocase(runtime_headers, COUNT(runtime_headers), name)))
        err(c, "/library", "library name '%s' would make the header %s.h, which is the fusegen runtime's %s.h "
            "(and its include guard); choose another name", name, name, h);
    else if ((h = listed_nocase(c_headers, COUNT(c_headers), name)))
        err(c, "/library", "library name '%s' would make the header %s.h, which shadows the system header <%s.h> for "
            "everything that has the library's folder on its include path%s; choose another name", name, name, h,
            fs);
    else if ((h = listed_nocase(cuda_headers, COUNT(cuda_headers), name)))
        err(c, "/library", "library name '%s' would make the header %s.h, which shadows the CUDA header <%s.h> for "
            "everything that has the library's folder on its include path%s; choose another name", name, name, h,
            fs);
    else if (name[0] == '_')
        err(c, "/library", "library name '%s' would make the include guard %s_H and the symbol %s_library, names "
            "that start with '_' and are reserved for the C implementation (system headers use guards such as "
            "_STDINT_H); choose a name that does not start with '_'", name, upper, name);
    else if (strstr(name, "__") || name[n - 1] == '_')
        err(c, "/library", "library name '%s' would make names with '__' (the include guard %s_H, the symbol "
            "%s_library), which C++ reserves for the implementation; choose a name without '__' that does not end "
            "with '_'", name, upper, name);
    else if (ascii_prefix_nocase(name, CHECK_GENERATOR_PREFIX) &&
             (name[strlen(CHECK_GENERATOR_PREFIX)] == '\0' || name[strlen(CHECK_GENERATOR_PREFIX)] == '_'))
        err(c, "/library", "library name '%s' would put its symbols (%s_library, %s_<kernel>_...) and macros under "
            "the prefix '" CHECK_GENERATOR_PREFIX "_' (any case), which the fusegen generator's and runtime's own names "
            "use: one of its symbols could take the place of theirs in a program that links both; choose another name",
            name, name, name);
}

int fg_check_library_files(const fg_spec *spec, fg_diag *d)
{
    checker c = {.d = d, .errors = 0};
    if (spec->library) check_library_name(&c, spec->library);
    return c.errors;
}

/* ---- tiles ------------------------------------------------------------------------------ */

static bool lists_arch(const fg_kernel_spec *k, fg_arch a);

/* Which family builds a tile is plan's to say (fg_plan_sm90_builds, fg_plan_sm80_builds): check
 * refuses what the planner could not cover, by the same functions. */

/* Whether some tile of g gets a portable variant on an arch with limit bytes of shared memory. */
static bool some_tile_fits(const fg_kernel_spec *k, const fg_gemm *g, size_t limit)
{
    for (size_t i = 0; i < g->n_tiles; i++)
        if (fg_plan_sm80_builds(k, g, &g->tiles[i], limit)) return true;
    return false;
}

/* Tiles i and an earlier one that would plan the same variants: the same shape, stages and
 * (resolved) schedule. */
static void check_duplicate_tile(checker *c, const fg_gemm *g, size_t i)
{
    const fg_tile *t = &g->tiles[i];
    for (size_t j = 0; j < i; j++) {
        const fg_tile *u = &g->tiles[j];
        if (u->m == t->m && u->n == t->n && u->k == t->k && u->stages == t->stages &&
            fg_arch_sm90_pingpong(u->m, u->schedule) == fg_arch_sm90_pingpong(t->m, t->schedule)) {
            err(c, t->ptr, "duplicate tile %ldx%ldx%ld with %ld stages", t->m, t->n, t->k, t->stages);
            fg_diag_note(c->d, u->ptr, "first listed here");
            return;
        }
    }
}

/* A tile that names a schedule, or has n 160 or 320, is built by the Hopper family alone: the kernel
 * must list sm_90a, B's layout must suit the tile (fg_arch_sm90_b_layout_ok), and the tile must
 * suit its schedule and fit sm_90a's shared memory. */
static void check_hopper_tile(checker *c, const fg_kernel_spec *k, const fg_gemm *g, const fg_tile *t)
{
    ptrbuf pb;
    char why[64];
    const bool named = t->schedule != FG_SCHEDULE_AUTO;
    const char *sptr = ptr_cat(&pb, t->ptr, named ? "/schedule" : "/n");
    const bool pingpong = fg_arch_sm90_pingpong(t->m, t->schedule);
    const char *name = named ? fg_spec_schedule_name(t->schedule) : pingpong ? "pingpong" : "cooperative";
    if (named)
        snprintf(why, sizeof why, "schedule '%s'", name);
    else
        snprintf(why, sizeof why, "tile n %ld", t->n);
    if (!lists_arch(k, FG_ARCH_SM90A)) {
        err(c, sptr, "%s is the Hopper family's, which needs \"sm_90a\" in the kernel's arch list", why);
        return;
    }
    if (!fg_arch_sm90_b_layout_ok(g->b_layout, t->n)) {
        err(c, sptr, "%s is the Hopper family's, which takes b_layout \"kn\" for tile n 64, 128 or 256 only", why);
        return;
    }
    if (!fg_arch_sm90_tile_ok(t->m, t->n, t->k, pingpong)) {
        err(c, sptr, "tile %ldx%ldx%ld cannot take schedule '%s' (cooperative: m 128 with n 32, 64, 128, 160 or 256, "
            "or m 64 with n 128, 256 or 320, its warpgroups splitting the columns; pingpong: m 64 with n 32, 64, "
            "128, 160, 256 or 320, or m 128 with n 32, 64 or 128; k 64)", t->m, t->n, t->k, name);
        return;
    }
    /* a 64-row cooperative tile splits the columns between the warpgroups: whole rows only */
    if (fg_arch_sm90_col_split(t->m, pingpong)) {
        for (size_t i = 0; i < g->n_ops; i++) {
            const fg_op *op = &g->ops[i];
            if (fg_spec_op_is_norm(op->kind) &&
                (op->strategy == FG_STRATEGY_SPLIT || op->strategy == FG_STRATEGY_CLUSTER)) {
                err(c, sptr, "tile %ldx%ldx%ld with schedule 'cooperative' splits the columns between the "
                    "warpgroups and takes the row strategy alone, but the norm asks for strategy '%s'",
                    t->m, t->n, t->k, fg_spec_strategy_name(op->strategy));
                return;
            }
        }
    }
    size_t smem = fg_arch_sm90_smem_bytes(t->m, t->n, t->stages, pingpong, 0, 0);
    if (smem > fg_arch_smem_limit(FG_ARCH_SM90A))
        err(c, t->ptr, "tile %ldx%ldx%ld with %ld stages and schedule '%s' needs %zu bytes of shared memory, more "
            "than the %zu bytes sm_90a allows", t->m, t->n, t->k, t->stages, name, smem,
            fg_arch_smem_limit(FG_ARCH_SM90A));
}

/* The registry's tile values as a phrase: "32, 64, 128, 256" (last " or " with `or`). */
typedef struct listbuf { char s[96]; } listbuf;
static const long tile_m_values[] = {
#define CHECK__V(v) v,
    FUSEGEN_REG_TILE_M(CHECK__V)};
static const long tile_n_values[] = {FUSEGEN_REG_TILE_N(CHECK__V)};
static const long tile_k_values[] = {FUSEGEN_REG_TILE_K(CHECK__V)};
static const long tile_n_sm90_values[] = {FUSEGEN_REG_SM90_ONLY_TILE_N(CHECK__V)};
#undef CHECK__V
#define CHECK__COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *values(listbuf *b, const long *v, size_t n, bool or)
{
    size_t o = 0;
    b->s[0] = '\0';
    for (size_t i = 0; i < n && o < sizeof b->s; i++)
        o += (size_t)snprintf(b->s + o, sizeof b->s - o, "%s%ld", i == 0 ? "" : or && i + 1 == n ? " or " : ", ", v[i]);
    return b->s;
}

/* Every listed arch other than sm_90a needs a portable variant: some tile that is not the
 * Hopper family's alone. (Without sm_90a in the list, each such tile is an error of its own.) */
static void check_portable_tile_left(checker *c, const fg_kernel_spec *k, const fg_gemm *g)
{
    if (!lists_arch(k, FG_ARCH_SM90A)) return;
    const fg_arch *older = NULL;
    for (size_t a = 0; a < k->n_archs && !older; a++)
        if (k->archs[a] != FG_ARCH_SM90A && k->archs[a] != FG_ARCH_NONE) older = &k->archs[a];
    if (!older || g->n_tiles == 0) return;
    for (size_t i = 0; i < g->n_tiles; i++)
        if (!fg_arch_sm90_only(g->tiles[i].n, g->tiles[i].schedule)) return;
    listbuf l90, l80;
    err(c, g->tiles[0].ptr, "every tile names a schedule or has n %s (the Hopper family's alone), so none serves %s: "
        "add a tile without \"schedule\" (n %s) or drop %s from the arch list",
        values(&l90, tile_n_sm90_values, CHECK__COUNT(tile_n_sm90_values), true), fg_spec_arch_name(*older),
        values(&l80, tile_n_values, CHECK__COUNT(tile_n_values), true), fg_spec_arch_name(*older));
}

static void check_tiles(checker *c, const fg_kernel_spec *k, const fg_gemm *g)
{
    ptrbuf pb;
    listbuf lb, lb2;
    check_portable_tile_left(c, k, g);
    for (size_t i = 0; i < g->n_tiles; i++) {
        const fg_tile *t = &g->tiles[i];
        bool ok = true;
        if (!fg_arch_sm80_tile_m_ok(t->m)) {
            err(c, ptr_cat(&pb, t->ptr, "/m"), "tile m %ld is not supported (expected: %s)", t->m,
                values(&lb, tile_m_values, CHECK__COUNT(tile_m_values), false));
            ok = false;
        }
        if (!fg_arch_sm80_tile_n_ok(t->n) && !fg_arch_sm90_only(t->n, FG_SCHEDULE_AUTO)) {
            err(c, ptr_cat(&pb, t->ptr, "/n"), "tile n %ld is not supported (expected: %s; %s on sm_90a)", t->n,
                values(&lb, tile_n_values, CHECK__COUNT(tile_n_values), false),
                values(&lb2, tile_n_sm90_values, CHECK__COUNT(tile_n_sm90_values), true));
            ok = false;
        }
        if (!fg_arch_sm80_tile_k_ok(t->k)) {
            err(c, ptr_cat(&pb, t->ptr, "/k"), "tile k %ld is not supported (expected: %s)", t->k,
                values(&lb, tile_k_values, CHECK__COUNT(tile_k_values), false));
            ok = false;
        }
        if (!fg_arch_stages_ok(t->stages, fg_arch_sm90_only(t->n, t->schedule))) {
            err(c, ptr_cat(&pb, t->ptr, "/stages"),
                "stages %ld out of range (expected %d to %d; up to %d for a tile that is the Hopper family's alone: "
                "one that names a schedule)", t->stages, FUSEGEN_REG_MIN_STAGES, FUSEGEN_REG_MAX_STAGES,
                FUSEGEN_REG_SM90_MAX_STAGES);
            ok = false;
        }
        if (!ok) continue;
        if (fg_arch_sm90_only(t->n, t->schedule)) {
            check_hopper_tile(c, k, g, t);
            check_duplicate_tile(c, g, i);
            continue;
        }
        if (t->m * t->n > FG_ARCH_SM80_MAX_TILE_ELEMS) {
            err(c, t->ptr, "tile %ldx%ld holds %ld accumulators, more than the %d one thread block can keep in "
                "registers", t->m, t->n, t->m * t->n, FG_ARCH_SM80_MAX_TILE_ELEMS);
            continue;
        }
        size_t smem = fg_arch_sm80_layout_smem_bytes(t->m, t->n, t->k, t->stages, g->b_layout == FG_LAYOUT_KN);
        for (size_t a = 0; a < k->n_archs; a++) {
            fg_arch arch = k->archs[a];
            bool repeated = false;
            for (size_t b = 0; b < a; b++) repeated |= k->archs[b] == arch;
            if (arch == FG_ARCH_NONE || repeated) continue;
            size_t limit = fg_arch_smem_limit(arch);
            /* a tile too large for an arch is the Hopper family's alone, where it builds it and
             * another tile serves that arch */
            if (!fg_plan_sm80_builds(k, g, t, limit) && !(fg_plan_sm90_builds(k, g, t) && some_tile_fits(k, g, limit)))
                err(c, t->ptr, "tile %ldx%ldx%ld with %ld stages needs %zu bytes of shared memory, more than "
                    "the %zu bytes %s allows", t->m, t->n, t->k, t->stages, smem, limit, fg_spec_arch_name(arch));
        }
        check_duplicate_tile(c, g, i);
    }
}

/* ---- epilogues -------------------------------------------------------------------------- */

static bool lists_arch(const fg_kernel_spec *k, fg_arch a)
{
    for (size_t i = 0; i < k->n_archs; i++)
        if (k->archs[i] == a) return true;
    return false;
}

/* The first store op before `op` (in GEMM1 then GEMM2 order) with the same name, or NULL. */
static const fg_op *earlier_store(const fg_kernel_spec *k, const fg_op *op)
{
    const fg_gemm *gs[2] = {&k->gemm, k->has_then ? &k->then : NULL};
    for (int gi = 0; gi < 2; gi++) {
        if (!gs[gi]) continue;
        for (size_t i = 0; i < gs[gi]->n_ops; i++) {
            const fg_op *o = &gs[gi]->ops[i];
            if (o == op) return NULL;
            if (o->kind == FG_OP_STORE && o->as && strcmp(o->as, op->as) == 0) return o;
        }
    }
    return NULL;
}

/* A constant emitted into the code as an f32 literal (alpha, beta): 0, or a magnitude of at
 * least FLT_MIN. Below it f32 keeps fewer significant bits (a subnormal; flushed to 0 where a
 * build flushes denormals), and below half the smallest subnormal the literal is 0: nvcc
 * compiles 0 with no error, NVRTC (check --nvrtc, the JIT) refuses it. */
static void check_f32_tiny(checker *c, const char *ptr, const char *what, double v)
{
    numbuf lim, val;
    if (v != 0.0 && fabs(v) < FLT_MIN)
        err(c, ptr, "%s is used as an f32: a nonzero |%s| must be at least FLT_MIN, %s (the smallest normal f32; "
            "below it f32 loses precision, and from half its smallest subnormal down it is 0), found %s", what, what,
            num(&lim, (double)FLT_MIN), num(&val, v));
}

static void check_epilogue(checker *c, const fg_kernel_spec *k, const fg_gemm *g, bool second)
{
    ptrbuf pb;
    numbuf lo, lim, val;
    const fg_op *norm = NULL, *glu = NULL;
    int stores = 0;
    for (size_t i = 0; i < g->n_ops; i++) {
        const fg_op *op = &g->ops[i];
        if (fg_spec_op_is_glu(op->kind)) {
            /* the gate and up columns exist only before it: ops before it would see them */
            const size_t first = g->n_ops && g->ops[0].kind == FG_OP_A_RMSNORM ? 1 : 0;
            if (k->has_then)
                err(c, op->ptr, "%s in a chain is not supported yet (a gated activation needs a single GEMM)",
                    fg_spec_op_name(op->kind));
            else if (glu)
                err(c, op->ptr, "a second gated activation (%s) in one epilogue", fg_spec_op_name(op->kind));
            else if (i != first)
                err(c, op->ptr, "%s must be the first op of the epilogue (the ops before it would see the gate "
                    "and up columns, which it turns into one)", fg_spec_op_name(op->kind));
            if (!glu) glu = op;
        }
        if (glu && fg_spec_op_is_norm(op->kind))
            err(c, op->ptr, "%s after a gated activation (%s) is not supported yet", fg_spec_op_name(op->kind),
                fg_spec_op_name(glu->kind));
        const fg_op_info *info = fg_spec_op_info(op->kind);
        /* a constant other than a norm's eps is used as an f32 literal */
        if (info && info->key[0] && info->cls != FUSEGEN_REG_OPCLASS_NORM && info->cls != FUSEGEN_REG_OPCLASS_A_NORM) {
            ptrbuf kb;
            snprintf(kb.s, sizeof kb.s, "%s/%s", op->ptr ? op->ptr : "", info->key);
            const char *kp = kb.s;
            if (!isfinite(op->value) || fabs(op->value) > FLT_MAX)
                err(c, kp, "%s must be finite in f32 (|%s| <= %s), found %s", info->key, info->key,
                    num(&lim, (double)FLT_MAX), num(&val, op->value));
            else
                check_f32_tiny(c, kp, info->key, op->value);
        }
        if (op->kind == FG_OP_A_RMSNORM && k->has_then)
            err(c, op->ptr, "a norm on A in a chain is not supported yet (a_norm needs a single GEMM)");
        switch (op->kind) {
        case FG_OP_A_RMSNORM:   /* its eps as a norm's */
        case FG_OP_LAYERNORM:
        case FG_OP_RMSNORM:
            if (op->strategy == FG_STRATEGY_CLUSTER && !lists_arch(k, FG_ARCH_SM90A))
                err(c, ptr_cat(&pb, op->ptr, "/strategy"),
                    "strategy 'cluster' needs thread-block clusters: the kernel must list sm_90a");
            /* eps is added in f32: it must stay a normal, finite f32 number. */
            if (!(op->value >= FLT_MIN) || !(op->value <= FLT_MAX))
                err(c, ptr_cat(&pb, op->ptr, "/eps"), "eps must be a positive normal f32 (%s to %s), found %s",
                    num(&lo, (double)FLT_MIN), num(&lim, (double)FLT_MAX), num(&val, op->value));
            break;
        case FG_OP_STORE:
            if (++stores == MAX_STORES_PER_GEMM + 1)
                err(c, op->ptr, "more than %d store ops in one epilogue", MAX_STORES_PER_GEMM);
            if (op->as) {
                const char *ap = ptr_cat(&pb, op->ptr, "/as");
                if (check_name(c, ap, "store name", op->as)) {
                    const fg_op *first = earlier_store(k, op);
                    if (first) {
                        err(c, ap, "duplicate store name '%s' (store names are unique within a kernel)", op->as);
                        ptrbuf fb;
                        fg_diag_note(c->d, ptr_cat(&fb, first->ptr, "/as"), "first used here");
                    }
                }
            }
            break;
        default:
            break;
        }
        if (fg_spec_op_is_norm(op->kind)) {
            if (second) {
                err(c, op->ptr, "%s in the epilogue of a chain's second GEMM is not supported yet (only the "
                    "first GEMM's epilogue may normalize)", fg_spec_op_name(op->kind));
            } else if (norm) {
                err(c, op->ptr, "a second norm (%s) in one epilogue; at most one layernorm or rmsnorm per GEMM",
                    fg_spec_op_name(op->kind));
                fg_diag_note(c->d, norm->ptr, "the first norm (%s) is here", fg_spec_op_name(norm->kind));
            } else {
                norm = op;
            }
        }
    }
}

/* ---- the dispatch's view of two kernels ------------------------------------------------- */

/* The runtime selects a kernel by what the problem says (fusegen_problem): dtypes, B layouts and
 * epilogue signatures (op tokens joined by '+'), never by the spec kernel or the ops' constants.
 * Two spec kernels of one library that agree on all of that but differ in a constant (alpha,
 * beta, eps, affine) would both be eligible for one problem, and the dispatch would pick one or
 * the other by N and K: the math would change with the problem's size, with no word. */
static bool same_signature(const fg_gemm *x, const fg_gemm *y)
{
    if (x->n_ops != y->n_ops) return false;
    for (size_t i = 0; i < x->n_ops; i++)
        if (strcmp(fg_spec_op_token(&x->ops[i]), fg_spec_op_token(&y->ops[i])) != 0) return false;
    return true;
}

static bool same_dispatch_key(const fg_kernel_spec *x, const fg_kernel_spec *y)
{
    return x->a == y->a && x->b == y->b && x->out == y->out && x->gemm.b_layout == y->gemm.b_layout &&
           x->has_then == y->has_then && same_signature(&x->gemm, &y->gemm) &&
           (!x->has_then || (x->then.b_layout == y->then.b_layout && same_signature(&x->then, &y->then)));
}

/* The first constant in which ops x and y (of one kind) differ: its key, with both values
 * spelled into xs and ys; NULL when they agree. (strategy and as change how, or where, not
 * what: they may differ.) */
static const char *constant_differs(const fg_op *x, const fg_op *y, numbuf *xs, numbuf *ys)
{
    const fg_op_info *info = fg_spec_op_info(x->kind);
    if (!info) return NULL;
    if (info->key[0] && x->value != y->value) {
        num(xs, x->value);
        num(ys, y->value);
        return info->key;
    }
    if (info->cls != FUSEGEN_REG_OPCLASS_NORM || x->affine == y->affine) return NULL;
    snprintf(xs->s, sizeof xs->s, "%s", x->affine ? "true" : "false");
    snprintf(ys->s, sizeof ys->s, "%s", y->affine ? "true" : "false");
    return "affine";
}

/* base + "/" + key when the spec's text holds that key, else base (a default value has no place
 * of its own: the op that took it). */
static const char *key_or_op(ptrbuf *b, const fg_spec *spec, const char *base, const char *key)
{
    size_t off;
    snprintf(b->s, sizeof b->s, "%s/%s", base ? base : "", key);
    if (spec->text && fg_jsonpos_find(spec->text, spec->text_len, b->s, &off) == 0) return b->s;
    snprintf(b->s, sizeof b->s, "%s", base ? base : "");
    return b->s;
}

/* A kernel whose dispatch key an earlier kernel has, with other constants: an error at the
 * first constant that differs (against the first such kernel only), a note at the other's. */
static void check_dispatch_twin(checker *c, const fg_spec *spec, size_t ki)
{
    const fg_kernel_spec *k = &spec->kernels[ki];
    if (!k->name || k->a == FG_DTYPE_NONE || k->b == FG_DTYPE_NONE || k->out == FG_DTYPE_NONE) return;
    for (size_t j = 0; j < ki; j++) {
        const fg_kernel_spec *o = &spec->kernels[j];
        if (!o->name || !same_dispatch_key(o, k)) continue;
        const fg_gemm *gs[2] = {&k->gemm, &k->then}, *os[2] = {&o->gemm, &o->then};
        for (int g = 0; g < (k->has_then ? 2 : 1); g++) {
            for (size_t i = 0; i < gs[g]->n_ops; i++) {
                numbuf mine, theirs;
                const char *key = constant_differs(&gs[g]->ops[i], &os[g]->ops[i], &mine, &theirs);
                if (!key) continue;
                ptrbuf pb, ob;
                /* at most 2 x 32 tokens of at most 9 characters, with their separators */
                char sig[2 * FG_SPEC_MAX_OPS * 10 + 16];
                size_t n = 0;
                sig[0] = '\0';
                for (int h = 0; h < (k->has_then ? 2 : 1); h++) {
                    if (h && n < sizeof sig) n += (size_t)snprintf(sig + n, sizeof sig - n, "' then '");
                    for (size_t q = 0; q < gs[h]->n_ops && n < sizeof sig; q++)
                        n += (size_t)snprintf(sig + n, sizeof sig - n, "%s%s", q ? "+" : "",
                                              fg_spec_op_token(&gs[h]->ops[q]));
                }
                err(c, key_or_op(&pb, spec, gs[g]->ops[i].ptr, key),
                    "kernels '%s' and '%s' have the same dtypes, B layout and epilogue '%s' but different "
                    "constants (%s %s here, %s in '%s'): the runtime selects a kernel by epilogue signature, not "
                    "by its constants, so which of the two a problem got would depend on its N and K; give both "
                    "the same constants, or generate them into separate libraries",
                    o->name, k->name, sig, key, mine.s, theirs.s, o->name);
                fg_diag_note(c->d, key_or_op(&ob, spec, os[g]->ops[i].ptr, key), "'%s' has %s %s here", o->name,
                             key, theirs.s);
                return;
            }
        }
    }
}

/* ---- kernels ---------------------------------------------------------------------------- */

static void check_kernel(checker *c, const fg_spec *spec, size_t ki)
{
    const fg_kernel_spec *k = &spec->kernels[ki];
    ptrbuf pb;

    if (!k->name) err(c, k->ptr, "kernel has no name");
    if (k->name && check_name(c, ptr_cat(&pb, k->ptr, "/name"), "kernel name", k->name)) {
        for (size_t j = 0; j < ki; j++) {
            const fg_kernel_spec *o = &spec->kernels[j];
            if (!o->name || !ascii_equal_nocase(o->name, k->name)) continue;
            if (strcmp(o->name, k->name) == 0)
                err(c, pb.s, "duplicate kernel name '%s'", k->name);
            else
                err(c, pb.s, "kernel name '%s' differs from '%s' only in case: the header's kernel-name macros "
                    "(in capitals) would collide, and so would the files on a file system that ignores case",
                    k->name, o->name);
            ptrbuf fb;
            fg_diag_note(c->d, ptr_cat(&fb, o->ptr, "/name"), "first defined here");
            break;
        }
    }

    for (size_t i = 0; i < k->n_archs; i++) {
        if (k->archs[i] == FG_ARCH_NONE) continue;
        for (size_t j = 0; j < i; j++) {
            if (k->archs[j] == k->archs[i]) {
                err(c, ptr_catf(&pb, k->ptr, "/arch/%zu", i), "duplicate arch '%s'", fg_spec_arch_name(k->archs[i]));
                ptrbuf fb;
                fg_diag_note(c->d, ptr_catf(&fb, k->ptr, "/arch/%zu", j), "first listed here");
                break;
            }
        }
    }

    if (k->a != FG_DTYPE_NONE && k->b != FG_DTYPE_NONE && k->a != k->b)
        err(c, ptr_cat(&pb, k->ptr, "/b"), "b is %s but a is %s: the tensor-core MMA needs both operands of "
            "one type", fg_spec_dtype_name(k->b), fg_spec_dtype_name(k->a));
    if (k->accum != FG_DTYPE_NONE && k->accum != FG_DTYPE_F32)
        err(c, ptr_cat(&pb, k->ptr, "/accum"), "accum %s is not supported (expected: f32)",
            fg_spec_dtype_name(k->accum));

    check_tiles(c, k, &k->gemm);
    check_epilogue(c, k, &k->gemm, false);

    if (k->has_then) {
        if (k->out == FG_DTYPE_F32)
            err(c, ptr_cat(&pb, k->ptr, "/out"), "a chain (\"then\") needs out f16 or bf16, found f32: the "
                "first GEMM's result is the second GEMM's A operand");
        else if (k->out != FG_DTYPE_NONE && k->b != FG_DTYPE_NONE && k->out != k->b)
            err(c, ptr_cat(&pb, k->ptr, "/out"), "a chain (\"then\") needs out of b's type (%s), found %s: the "
                "second GEMM multiplies the first one's result by a %s weight",
                fg_spec_dtype_name(k->b), fg_spec_dtype_name(k->out), fg_spec_dtype_name(k->b));
        check_tiles(c, k, &k->then);
        /* Without then.tiles, GEMM2 takes each of GEMM1's tiles: a tile only the Hopper family
         * builds must suit then.b_layout too, or it would silently yield no variant. */
        for (size_t i = 0; k->then.n_tiles == 0 && i < k->gemm.n_tiles; i++) {
            const fg_tile *t = &k->gemm.tiles[i];
            if (fg_arch_sm90_only(t->n, t->schedule) && !fg_arch_sm90_b_layout_ok(k->then.b_layout, t->n))
                err(c, ptr_cat(&pb, t->ptr, "/n"), "tile n %ld is GEMM2's tile too (the chain has no then "
                    "\"tiles\"), and with then \"b_layout\": \"kn\" the Hopper family takes tile n 64, 128 or "
                    "256 only: give GEMM2 its own tiles in then \"tiles\"", t->n);
        }
        check_epilogue(c, k, &k->then, true);
    }
    check_dispatch_twin(c, spec, ki);
}

int fg_check_spec(const fg_spec *spec, fg_diag *d)
{
    checker c = {.d = d, .errors = 0};
    /* The parser reports a missing name; a NULL here without an error would be a parser bug,
     * and emit must never see one. */
    if (!spec->library)
        err(&c, "", "the spec has no library name");
    else
        check_name(&c, "/library", "library name", spec->library);
    for (size_t i = 0; i < spec->n_kernels; i++) check_kernel(&c, spec, i);
    return c.errors;
}
