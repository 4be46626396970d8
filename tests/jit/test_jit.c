/* test_jit.c - the runtime's JIT on the CPU (NVRTC, no GPU): bad specs, the kernel table, the
 * disk cache (miss, hit, a changed option, arch or source is a miss, corrupt entries, a FIFO in
 * an entry's place, a warning handler that calls the JIT, a folder other users can write into,
 * an unwritable folder, the folder's name from the environment) and the launch records checked
 * against the family code. Every compile is for an explicit arch, so no device is needed.
 *
 *   test_jit all WORKDIR            every scenario below, in WORKDIR (emptied first)
 *   test_jit compile-one CACHE_DIR  one compile of the small spec for sm_80 (prints the result);
 *   test_jit expect-hit CACHE_DIR   the same, which must be a cache hit, with no temporary files
 *                                   left in CACHE_DIR (test_jit_concurrency.sh runs these)
 * Exit status 77 (skipped) when NVRTC cannot be loaded. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fusegen.h"
#include "fusegen_jit.h"
#include "rtc.h"

#define SKIP 77

static int g_fail;

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s (detail: %s)\n", __FILE__, __LINE__, #cond, \
                    fusegen_last_detail());                                                   \
            g_fail++;                                                                         \
        }                                                                                     \
    } while (0)

/* A small spec: one f16 GEMM + bias + relu with a 64x64 tile, portable family. */
static const char small_spec[] =
    "{\n"
    "  \"library\": \"jit_small\",\n"
    "  \"kernels\": [\n"
    "    {\n"
    "      \"name\": \"proj_bias_relu\",\n"
    "      \"arch\": [\"sm_80\"],\n"
    "      \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f16\",\n"
    "      \"tiles\": [ {\"m\": 64, \"n\": 64, \"k\": 32, \"stages\": 2} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"RELU\"} ]\n"
    "    }\n"
    "  ]\n"
    "}\n";

/* The small spec with its activation filled in (relu or gelu); each call returns a new copy,
 * freed at exit (spec_free_all). */
static char *g_specs[64];
static size_t g_n_specs;

static void spec_free_all(void)
{
    while (g_n_specs > 0) free(g_specs[--g_n_specs]);
}

static char *spec_with(const char *act)
{
    char *buf = malloc(sizeof small_spec + 16);
    if (!buf || g_n_specs == sizeof g_specs / sizeof g_specs[0]) abort();
    g_specs[g_n_specs++] = buf;
    const char *at = strstr(small_spec, "RELU");
    size_t head = (size_t)(at - small_spec);
    memcpy(buf, small_spec, head);
    snprintf(buf + head, sizeof small_spec + 16 - head, "%s%s", act, at + 4);
    return buf;
}

/* ---- warnings ------------------------------------------------------------------------------- */

static char g_warn[2048];
static int g_n_warn;

static void on_warning(const char *msg, void *user)
{
    (void)user;
    g_n_warn++;
    snprintf(g_warn, sizeof g_warn, "%s", msg);
    printf("  warning: %s\n", msg);
}

static void warn_reset(void)
{
    g_warn[0] = '\0';
    g_n_warn = 0;
}

/* ---- helpers -------------------------------------------------------------------------------- */

static fusegen_jit *make(const char *spec)
{
    fusegen_jit *j = NULL;
    fusegen_status st = fusegen_jit_create(spec, strlen(spec), "small.json", &j);
    CHECK(st == FUSEGEN_OK && j != NULL);
    return j;
}

/* Compiles spec for arch into dir (NULL: the environment's folder) with extra options. */
static fusegen_jit_cache_result compile_into(const char *spec, const char *arch, const char *dir, const char *option,
                                             fusegen_jit_stats *stats, fusegen_jit **keep)
{
    fusegen_jit_options o;
    fusegen_jit_cache_result r = FUSEGEN_JIT_CACHE_OFF;
    memset(&o, 0, sizeof o);
    o.arch = arch;
    o.cache_dir = dir;
    if (option) {
        o.nvrtc_options = &option;
        o.n_nvrtc_options = 1;
    }
    fusegen_jit *j = make(spec);
    if (!j) return FUSEGEN_JIT_CACHE_OFF;
    fusegen_status st = fusegen_jit_compile(j, &o, &r);
    if (st != FUSEGEN_OK) fprintf(stderr, "compile: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
    CHECK(st == FUSEGEN_OK);
    if (stats) fusegen_jit_get_stats(j, stats);
    if (keep)
        *keep = j;
    else
        fusegen_jit_destroy(j);
    return r;
}

static const char *result_name(fusegen_jit_cache_result r)
{
    switch (r) {
    case FUSEGEN_JIT_CACHE_OFF: return "off";
    case FUSEGEN_JIT_CACHE_HIT: return "hit";
    case FUSEGEN_JIT_CACHE_MISS: return "miss";
    case FUSEGEN_JIT_CACHE_CORRUPT: return "corrupt";
    }
    return "?";
}

static int rm_rf(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", path, path);
    return system(cmd);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Files in dir whose name contains what. */
static int count_files(const char *dir, const char *what)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && strstr(e->d_name, what)) n++;
    closedir(d);
    return n;
}

/* ---- scenarios ------------------------------------------------------------------------------ */

static void test_bad_input(void)
{
    printf("bad input\n");
    fusegen_jit *j = NULL;
    /* a syntax error, located */
    const char *syntax = "{\n  \"library\": \"x\",\n  \"kernels\": [ }\n";
    CHECK(fusegen_jit_create(syntax, strlen(syntax), "bad.json", &j) == FUSEGEN_ERR_SPEC && j == NULL);
    printf("  syntax: %s\n", fusegen_last_detail());
    CHECK(strstr(fusegen_last_detail(), "spec bad.json has 1 error(s): bad.json:3:") != NULL);
    /* a check error, located at its JSON pointer */
    char *bad = spec_with("relu");
    char *m = strstr(bad, "\"m\": 64");
    memcpy(m, "\"m\": 48", 7);
    CHECK(fusegen_jit_create(bad, strlen(bad), "bad.json", &j) == FUSEGEN_ERR_SPEC && j == NULL);
    printf("  check: %s\n", fusegen_last_detail());
    CHECK(strstr(fusegen_last_detail(), "bad.json:8:") != NULL);
    CHECK(strstr(fusegen_last_detail(), "/kernels/0/tiles/0/m") != NULL);
    /* an unknown op word */
    CHECK(fusegen_jit_create(small_spec, strlen(small_spec), NULL, &j) == FUSEGEN_ERR_SPEC);
    CHECK(strstr(fusegen_last_detail(), "<jit>:9:") != NULL);
    /* the JIT's statuses have names and messages */
    CHECK(strcmp(fusegen_status_name(FUSEGEN_ERR_SPEC), "FUSEGEN_ERR_SPEC") == 0);
    CHECK(strcmp(fusegen_status_name(FUSEGEN_ERR_COMPILE), "FUSEGEN_ERR_COMPILE") == 0);
    CHECK(strstr(fusegen_status_message(FUSEGEN_ERR_COMPILE), "NVRTC") != NULL);
    /* a library name that would shadow a header is the command line's rule (its files go on an
     * include path); the JIT writes no header, so it takes such a name */
    {
        char *named = spec_with("relu");
        char *lib = strstr(named, "jit_small");
        memcpy(lib, "math", 4);                        /* jit_small -> math */
        memmove(lib + 4, lib + 9, strlen(lib + 9) + 1);
        CHECK(fusegen_jit_create(named, strlen(named), NULL, &j) == FUSEGEN_OK && j != NULL);
        fusegen_jit_destroy(j);
        j = NULL;
    }
    /* the spec's name goes into a one-line detail: its line breaks escaped, a long one cut */
    {
        CHECK(fusegen_jit_create(bad, strlen(bad), "two\nlines.json", &j) == FUSEGEN_ERR_SPEC && j == NULL);
        printf("  name with a line break: %s\n", fusegen_last_detail());
        CHECK(strchr(fusegen_last_detail(), '\n') == NULL && strstr(fusegen_last_detail(), "two\\x0alines.json"));
        size_t n = 100000;
        char *longname = malloc(n + 1);
        if (longname) {
            memset(longname, 'n', n);
            longname[n] = '\0';
            CHECK(fusegen_jit_create(bad, strlen(bad), longname, &j) == FUSEGEN_ERR_SPEC && j == NULL);
            CHECK(strlen(fusegen_last_detail()) < 1000 && strstr(fusegen_last_detail(), "/kernels/0/tiles/0/m"));
            free(longname);
        }
    }
    /* arguments */
    CHECK(fusegen_jit_create(NULL, 0, NULL, &j) == FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(fusegen_jit_create(bad, strlen(bad), NULL, NULL) == FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(fusegen_jit_compile(NULL, NULL, NULL) == FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(fusegen_jit_library(NULL) == NULL);
    fusegen_jit_destroy(NULL);

    j = make(spec_with("relu"));
    if (!j) return;
    CHECK(fusegen_jit_library(j) == NULL);
    fusegen_jit_options o;
    memset(&o, 0, sizeof o);
    o.no_cache = 1;
    o.arch = "compute_80";
    CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(strstr(fusegen_last_detail(), "compute_80") != NULL);
    o.arch = "sm_75";
    CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_NOT_SUPPORTED);
    /* arch-specific targets other than sm_90a: code the runtime could not place */
    o.arch = "sm_100a";
    CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_INVALID_ARGUMENT &&
          strstr(fusegen_last_detail(), "sm_90a") && strstr(fusegen_last_detail(), "sm_100 "));
    o.arch = "sm_90f";
    CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_INVALID_ARGUMENT);
    /* loading before a compile is the caller's mistake, found before any CUDA call */
    CHECK(fusegen_jit_load(j) == FUSEGEN_ERR_INVALID_ARGUMENT && strstr(fusegen_last_detail(), "not compiled"));
    o.arch = "sm_80";
    o.n_nvrtc_options = 1;
    CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_INVALID_ARGUMENT);
    /* options the JIT sets itself (or that make no CUBIN for the arch it reports) are refused
     * before anything compiles: --gpu-architecture=sm_90a behind arch sm_80 ran sm_90a code */
    {
        static const char *const refused[] = {"--gpu-architecture=sm_90a", "-arch=sm_90a", "-arch", "--gpu-architecture",
                                              " -arch=compute_90", "-std=c++20", "--std=c++14", "-dlto",
                                              "--dlink-time-opt", "-fdevice-syntax-only"};
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; ++i) {
            const char *two[2] = {"-lineinfo", refused[i]};
            o.nvrtc_options = two;
            o.n_nvrtc_options = 2;
            CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_INVALID_ARGUMENT &&
                  strstr(fusegen_last_detail(), "opts->nvrtc_options[1]") && strstr(fusegen_last_detail(), "refused"));
        }
        printf("  refused option: %s\n", fusegen_last_detail());
        fusegen_jit_stats s0;
        fusegen_jit_get_stats(j, &s0);
        CHECK(s0.compiles == 0);
        o.n_nvrtc_options = 1;
    }
    /* archs that are no real architecture are invalid arguments, as sm_8 is, not NVRTC failures */
    {
        static const char *const bad_archs[] = {"sm_8", "sm_0080", "sm_080", "sm_99", "sm_85", "sm_1000", "sm_999",
                                                "sm_\n80"};
        fusegen_jit_options oa;
        memset(&oa, 0, sizeof oa);
        oa.no_cache = 1;
        for (size_t i = 0; i < sizeof bad_archs / sizeof bad_archs[0]; ++i) {
            fusegen_jit *ja = make(spec_with("relu"));   /* a fresh one: not compiled for another arch */
            if (!ja) break;
            oa.arch = bad_archs[i];
            CHECK(fusegen_jit_compile(ja, &oa, NULL) == FUSEGEN_ERR_INVALID_ARGUMENT);
            CHECK(strchr(fusegen_last_detail(), '\n') == NULL);
            fusegen_jit_destroy(ja);
        }
        printf("  unknown arch: %s\n", fusegen_last_detail());
    }
    /* an option NVRTC refuses: a compile error with NVRTC's words */
    const char *wrong = "--no-such-option";
    o.nvrtc_options = &wrong;
    CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_COMPILE);
    printf("  bad option: %s\n", fusegen_last_detail());
    CHECK(fusegen_jit_library(j) == NULL);
    CHECK(strcmp(fusegen_jit_arch(j), "") == 0 && fusegen_jit_cache_entry(j) == NULL);   /* nothing finished */
    fusegen_jit_destroy(j);

    /* a kernel for sm_90a only: nothing for sm_80, and nothing compiled to find that out */
    char *hopper = spec_with("relu");
    char *arch = strstr(hopper, "\"sm_80\"");
    memcpy(arch, "\"sm_90\"", 7);
    j = make(hopper);
    if (!j) return;
    memset(&o, 0, sizeof o);
    o.no_cache = 1;
    o.arch = "sm_80";
    CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_NOT_SUPPORTED);
    printf("  wrong arch: %s\n", fusegen_last_detail());
    fusegen_jit_stats s;
    fusegen_jit_get_stats(j, &s);
    CHECK(s.compiles == 0);
    fusegen_jit_destroy(j);
}

/* The table of the small spec compiled for sm_80, used through the runtime API. */
static void check_table(fusegen_jit *j)
{
    const fusegen_library *lib = fusegen_jit_library(j);
    CHECK(lib != NULL);
    if (!lib) return;
    CHECK(strcmp(lib->name, "jit_small") == 0);
    CHECK(lib->n_kernels == 2);   /* the 64-row tile, and its split-K form */
    CHECK(strcmp(fusegen_jit_arch(j), "sm_80") == 0);
    const fusegen_kernel *sk = NULL;
    CHECK(fusegen_find(lib, "proj_bias_relu_sm80_64x64x32_s2_splitk", &sk) == FUSEGEN_OK && sk);
    if (sk) CHECK(sk->split_k == 1 && sk->strategy == FUSEGEN_STRATEGY_NONE && sk->tile_k == 32);
    const fusegen_kernel *k = NULL;
    CHECK(fusegen_find(lib, "proj_bias_relu_sm80_64x64x32_s2", &k) == FUSEGEN_OK && k);
    if (!k) return;
    CHECK(k->sm == 80 && !k->arch_specific);
    CHECK(k->a == FUSEGEN_DTYPE_F16 && k->b == FUSEGEN_DTYPE_F16 && k->out == FUSEGEN_DTYPE_F16);
    CHECK(strcmp(k->epilogue, "bias+relu") == 0 && k->n_ops == 2 && k->ops[0].kind == FUSEGEN_OP_BIAS &&
          k->ops[1].kind == FUSEGEN_OP_RELU);
    CHECK(k->tile_m == 64 && k->tile_n == 64 && k->tile_k == 32 && k->stages == 2 && k->threads == 128);
    CHECK(k->uses_bias && !k->uses_residual && k->strategy == FUSEGEN_STRATEGY_NONE && k->max_n == 0);
    CHECK(k->functions == NULL && k->launch_jit != NULL && k->jit != NULL && k->cache != NULL);

    fusegen_problem p;
    memset(&p, 0, sizeof p);
    p.m = 100; p.n = 64; p.k = 128;
    p.a = p.b = p.out = FUSEGEN_DTYPE_F16;
    p.b_layout = FUSEGEN_LAYOUT_NK;
    p.epilogue = "bias+relu";
    p.sm = 86;
    const fusegen_kernel *sel = NULL;
    CHECK(fusegen_select(lib, &p, &sel) == FUSEGEN_OK && sel == k);
    size_t ws = 1;
    CHECK(fusegen_workspace_size(k, &p, &ws) == FUSEGEN_OK && ws == 0);
    p.sm = 75;
    CHECK(fusegen_select(lib, &p, &sel) == FUSEGEN_ERR_NOT_SUPPORTED);
    CHECK(fusegen_why_not(k, &p, NULL, 0) != NULL);
    /* a bad call launches nothing (and needs no device) */
    p.sm = 80;
    fusegen_args a;
    memset(&a, 0, sizeof a);
    CHECK(fusegen_run(k, &p, &a, NULL, 0, 0) == FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(strstr(fusegen_last_detail(), "args.a") != NULL);
    /* the fallback finds it when the ahead-of-time library cannot */
    fusegen_library empty = {"empty", "0", "", NULL, 0, NULL, 0};
    CHECK(fusegen_select_or_jit(&empty, j, &p, &sel) == FUSEGEN_OK && sel == k);
    CHECK(fusegen_select_or_jit(NULL, j, &p, &sel) == FUSEGEN_OK && sel == k);
    /* a bad problem is refused before any compile, with or without an ahead-of-time library */
    p.m = 0;
    CHECK(fusegen_select_or_jit(NULL, j, &p, &sel) == FUSEGEN_ERR_INVALID_ARGUMENT && sel == NULL);
    CHECK(strstr(fusegen_last_detail(), "p->m = 0") != NULL);
    CHECK(fusegen_select_or_jit(&empty, j, &p, &sel) == FUSEGEN_ERR_INVALID_ARGUMENT && sel == NULL);
    p.m = 100;
    p.epilogue = "bias+gelu";
    CHECK(fusegen_select_or_jit(&empty, j, &p, &sel) == FUSEGEN_ERR_NOT_SUPPORTED && sel == NULL);
    CHECK(strstr(fusegen_last_detail(), "JIT: ") != NULL);
}

static void test_cache(const char *work)
{
    char dir[1024], other[1024];
    fusegen_jit_stats s;
    fusegen_jit *j = NULL;
    const char *relu = spec_with("relu");
    snprintf(dir, sizeof dir, "%s/cache", work);

    printf("miss, then hit\n");
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, &j) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.compiles == 1 && s.cache_misses == 1 && s.cache_writes == 1 && s.cache_hits == 0);
    if (!j) return;
    check_table(j);
    char entry[4300];
    snprintf(entry, sizeof entry, "%s", fusegen_jit_cache_entry(j) ? fusegen_jit_cache_entry(j) : "");
    CHECK(strncmp(entry, dir, strlen(dir)) == 0 && strstr(entry, ".fgjit") != NULL);
    long size = file_size(entry);
    CHECK(size > 88);
    /* compiling the same object again does nothing; another arch is refused */
    fusegen_jit_options o;
    fusegen_jit_cache_result r = FUSEGEN_JIT_CACHE_HIT;
    memset(&o, 0, sizeof o);
    o.arch = "sm_80";
    o.cache_dir = dir;
    CHECK(fusegen_jit_compile(j, &o, &r) == FUSEGEN_OK && r == FUSEGEN_JIT_CACHE_OFF);
    o.arch = "sm_86";
    CHECK(fusegen_jit_compile(j, &o, &r) == FUSEGEN_ERR_INVALID_ARGUMENT);
    fusegen_jit_destroy(j);

    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, &j) == FUSEGEN_JIT_CACHE_HIT);
    CHECK(s.compiles == 0 && s.cache_hits == 1 && s.cache_writes == 0);
    if (j) check_table(j);
    fusegen_jit_destroy(j);
    CHECK(count_files(dir, ".fgjit") == 1 && count_files(dir, ".tmp.") == 0);

    printf("a changed option, arch or source is a miss\n");
    CHECK(compile_into(relu, "sm_80", dir, "-DFUSEGEN_JIT_TEST_OPTION=1", &s, NULL) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.compiles == 1);
    CHECK(compile_into(relu, "sm_86", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.compiles == 1);
    CHECK(compile_into(spec_with("gelu"), "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.compiles == 1);
    CHECK(count_files(dir, ".fgjit") == 4);
    /* and each of them is a hit now */
    CHECK(compile_into(relu, "sm_86", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_HIT && s.compiles == 0);

    printf("corrupt entries\n");
    /* truncated */
    CHECK(truncate(entry, 50) == 0);
    warn_reset();
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_CORRUPT);
    CHECK(s.compiles == 1 && s.cache_corrupt == 1 && s.cache_writes == 1);
    CHECK(g_n_warn == 1 && strstr(g_warn, "corrupt") && strstr(g_warn, "shorter than its"));
    CHECK(file_size(entry) == size);
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_HIT && s.compiles == 0);
    /* one byte of the payload flipped */
    int fd = open(entry, O_RDWR);
    CHECK(fd >= 0);
    if (fd >= 0) {
        unsigned char c = 0;
        CHECK(pread(fd, &c, 1, size / 2) == 1);
        c ^= 0x20;
        CHECK(pwrite(fd, &c, 1, size / 2) == 1);
        close(fd);
    }
    warn_reset();
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_CORRUPT);
    CHECK(g_n_warn == 1 && strstr(g_warn, "checksum"));
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, &j) == FUSEGEN_JIT_CACHE_HIT && s.compiles == 0);
    if (j) check_table(j);
    fusegen_jit_destroy(j);
    /* a header field changed (the format version) */
    fd = open(entry, O_RDWR);
    if (fd >= 0) {
        unsigned char v = 9;
        CHECK(pwrite(fd, &v, 1, 8) == 1);
        close(fd);
    }
    warn_reset();
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_CORRUPT);
    CHECK(strstr(g_warn, "format version") != NULL);
    CHECK(count_files(dir, ".tmp.") == 0);

    printf("no cache\n");
    fusegen_jit *nc = make(relu);
    if (nc) {
        memset(&o, 0, sizeof o);
        o.arch = "sm_80";
        o.cache_dir = dir;
        o.no_cache = 1;
        CHECK(fusegen_jit_compile(nc, &o, &r) == FUSEGEN_OK && r == FUSEGEN_JIT_CACHE_OFF);
        CHECK(fusegen_jit_cache_entry(nc) == NULL);
        fusegen_jit_get_stats(nc, &s);
        CHECK(s.compiles == 1 && s.cache_hits == 0 && s.cache_misses == 0);
        fusegen_jit_destroy(nc);
    }

    printf("the folder from the environment\n");
    /* $FUSEGEN_CACHE_DIR: the entries above are hits */
    setenv("FUSEGEN_CACHE_DIR", dir, 1);
    CHECK(compile_into(relu, "sm_80", NULL, NULL, &s, &j) == FUSEGEN_JIT_CACHE_HIT);
    if (j) CHECK(fusegen_jit_cache_entry(j) && strncmp(fusegen_jit_cache_entry(j), dir, strlen(dir)) == 0);
    fusegen_jit_destroy(j);
    /* else $XDG_CACHE_HOME/fusegen (created) */
    unsetenv("FUSEGEN_CACHE_DIR");
    snprintf(other, sizeof other, "%s/xdg", work);
    setenv("XDG_CACHE_HOME", other, 1);
    CHECK(compile_into(relu, "sm_80", NULL, NULL, &s, &j) == FUSEGEN_JIT_CACHE_MISS);
    snprintf(other, sizeof other, "%s/xdg/fusegen/", work);
    if (j) CHECK(fusegen_jit_cache_entry(j) && strncmp(fusegen_jit_cache_entry(j), other, strlen(other)) == 0);
    fusegen_jit_destroy(j);
    /* else $HOME/.cache/fusegen */
    unsetenv("XDG_CACHE_HOME");
    snprintf(other, sizeof other, "%s/home", work);
    setenv("HOME", other, 1);
    CHECK(compile_into(relu, "sm_80", NULL, NULL, &s, &j) == FUSEGEN_JIT_CACHE_MISS);
    snprintf(other, sizeof other, "%s/home/.cache/fusegen/", work);
    if (j) CHECK(fusegen_jit_cache_entry(j) && strncmp(fusegen_jit_cache_entry(j), other, strlen(other)) == 0);
    fusegen_jit_destroy(j);
}

/* A handler that calls back into the JIT that warned (and sets a handler): the warnings of a
 * compile reach it after the JIT's locks are released. */
static fusegen_jit *g_reentrant_jit;
static int g_reentrant_calls;
static void on_warning_reentrant(const char *msg, void *user)
{
    fusegen_jit_stats s;
    on_warning(msg, user);
    fusegen_jit_get_stats(g_reentrant_jit, &s);
    (void)fusegen_jit_library(g_reentrant_jit);
    fusegen_jit_set_warning_handler(on_warning_reentrant, NULL);
    g_reentrant_calls++;
}

/* A handler that sets the thread's detail (loading a JIT library that is not compiled). */
static int g_loading_calls;
static void on_warning_loading(const char *msg, void *user)
{
    on_warning(msg, user);
    (void)fusegen_jit_load(g_reentrant_jit);
    g_loading_calls++;
}

static void test_hostile_cache(const char *work)
{
    char dir[1024], entry[4300];
    fusegen_jit_stats s;
    fusegen_jit *j = NULL;
    const char *relu = spec_with("relu");
    /* a hang below is a failure, not a stuck test run */
    alarm(240);

    printf("a FIFO in the entry's place\n");
    snprintf(dir, sizeof dir, "%s/hostile", work);
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, &j) == FUSEGEN_JIT_CACHE_MISS);
    snprintf(entry, sizeof entry, "%s", j && fusegen_jit_cache_entry(j) ? fusegen_jit_cache_entry(j) : "");
    fusegen_jit_destroy(j);
    CHECK(entry[0] != '\0' && unlink(entry) == 0 && mkfifo(entry, 0600) == 0);
    warn_reset();
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_CORRUPT);
    CHECK(g_n_warn == 1 && strstr(g_warn, "not a regular file"));
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_HIT && s.compiles == 0);

    printf("a warning handler that calls the JIT\n");
    CHECK(truncate(entry, 10) == 0);
    warn_reset();
    g_reentrant_calls = 0;
    g_reentrant_jit = make(relu);
    fusegen_jit_set_warning_handler(on_warning_reentrant, NULL);
    fusegen_jit_options o;
    fusegen_jit_cache_result r = FUSEGEN_JIT_CACHE_OFF;
    memset(&o, 0, sizeof o);
    o.arch = "sm_80";
    o.cache_dir = dir;
    if (g_reentrant_jit) CHECK(fusegen_jit_compile(g_reentrant_jit, &o, &r) == FUSEGEN_OK);
    fusegen_jit_set_warning_handler(on_warning, NULL);
    CHECK(r == FUSEGEN_JIT_CACHE_CORRUPT && g_reentrant_calls == 1 && strstr(g_warn, "corrupt"));
    fusegen_jit_destroy(g_reentrant_jit);
    g_reentrant_jit = NULL;

    printf("a cache folder other users can write into\n");
    snprintf(dir, sizeof dir, "%s/shared", work);
    CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0777) == 0);
    warn_reset();
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, &j) == FUSEGEN_JIT_CACHE_OFF);
    CHECK(s.compiles == 1 && s.cache_hits == 0 && s.cache_writes == 0);
    CHECK(g_n_warn == 1 && strstr(g_warn, "can be written by other users") && strstr(g_warn, "0777"));
    if (j) CHECK(fusegen_jit_cache_entry(j) == NULL);
    fusegen_jit_destroy(j);
    CHECK(count_files(dir, ".fgjit") == 0);
    /* warned once per folder */
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_OFF && g_n_warn == 1);
    /* made private: used */
    CHECK(chmod(dir, 0700) == 0);
    CHECK(compile_into(relu, "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_MISS && s.cache_writes == 1);

    printf("a warning handler that sets the detail, and a compile that fails\n");
    snprintf(dir, sizeof dir, "%s/shared2", work);
    CHECK(mkdir(dir, 0700) == 0 && chmod(dir, 0777) == 0);
    g_reentrant_jit = make(relu);
    j = make(relu);
    g_loading_calls = 0;
    fusegen_jit_set_warning_handler(on_warning_loading, NULL);
    const char *wrong = "--no-such-option";
    memset(&o, 0, sizeof o);
    o.arch = "sm_80";
    o.cache_dir = dir;
    o.nvrtc_options = &wrong;
    o.n_nvrtc_options = 1;
    if (j && g_reentrant_jit) {
        CHECK(fusegen_jit_compile(j, &o, NULL) == FUSEGEN_ERR_COMPILE);
        /* the compile's own detail, not the one the handler's call left */
        CHECK(g_loading_calls == 1 && strstr(fusegen_last_detail(), "NVRTC") && !strstr(fusegen_last_detail(), "not compiled"));
    }
    fusegen_jit_set_warning_handler(on_warning, NULL);
    fusegen_jit_destroy(j);
    fusegen_jit_destroy(g_reentrant_jit);
    g_reentrant_jit = NULL;
    alarm(0);
}

static void test_unwritable(const char *work)
{
    char dir[1024], file[1024];
    fusegen_jit_stats s;
    fusegen_jit *j = NULL;
    printf("a cache folder that cannot be created\n");
    /* under a regular file: refused even to root */
    snprintf(file, sizeof file, "%s/plain_file", work);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(dir, sizeof dir, "%s/plain_file/cache", work);
    warn_reset();
    CHECK(compile_into(spec_with("relu"), "sm_80", dir, NULL, &s, &j) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.compiles == 1 && s.cache_write_failures == 1 && s.cache_writes == 0);
    CHECK(g_n_warn == 1 && strstr(g_warn, "cannot be written") && strstr(g_warn, "plain_file"));
    if (j) CHECK(fusegen_jit_cache_entry(j) == NULL);   /* no entry was written */
    if (j) check_table(j);
    fusegen_jit_destroy(j);
    CHECK(compile_into(spec_with("relu"), "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.cache_write_failures == 1 && g_n_warn == 1);   /* warned once per folder */

    printf("unwritable cache folder (chmod 0555)\n");
    snprintf(dir, sizeof dir, "%s/readonly", work);
    CHECK(mkdir(dir, 0755) == 0);
    CHECK(chmod(dir, 0555) == 0);
    if (access(dir, W_OK) == 0) {
        printf("  skipped: the folder stays writable after chmod 0555 (running as root?)\n");
        return;
    }
    warn_reset();
    CHECK(compile_into(spec_with("relu"), "sm_80", dir, NULL, &s, &j) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.compiles == 1 && s.cache_write_failures == 1 && s.cache_writes == 0);
    CHECK(g_n_warn == 1 && strstr(g_warn, "cannot be written") && strstr(g_warn, dir));
    if (j) check_table(j);
    fusegen_jit_destroy(j);
    /* warned once per folder */
    CHECK(compile_into(spec_with("relu"), "sm_80", dir, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.cache_write_failures == 1 && g_n_warn == 1);
    /* a folder that cannot be created */
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/sub/dir", dir);
    CHECK(compile_into(spec_with("relu"), "sm_80", sub, NULL, &s, NULL) == FUSEGEN_JIT_CACHE_MISS);
    CHECK(s.cache_write_failures == 1 && g_n_warn == 2 && strstr(g_warn, "cannot create"));
    chmod(dir, 0755);
}

/* Launch records against the family code: a Hopper kernel with a LayerNorm (row, cluster and
 * split variants of both families) and a chain, compiled for sm_80 (the Hopper bodies compile
 * to a trap there, but their constants are checked all the same). */
static const char records_spec[] =
    "{\n"
    "  \"library\": \"jit_records\",\n"
    "  \"kernels\": [\n"
    "    {\n"
    "      \"name\": \"ln\", \"arch\": [\"sm_90a\", \"sm_80\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 64, \"k\": 64, \"stages\": 2} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"layernorm\"} ]\n"
    "    },\n"
    "    {\n"
    "      \"name\": \"chain\", \"arch\": [\"sm_80\"],\n"
    "      \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f16\", \"b_layout\": \"kn\",\n"
    "      \"tiles\": [ {\"m\": 64, \"n\": 64, \"k\": 32, \"stages\": 2} ],\n"
    "      \"epilogue\": [ {\"op\": \"rmsnorm\", \"strategy\": \"split\"} ],\n"
    "      \"then\": { \"epilogue\": [ {\"op\": \"relu\"} ] }\n"
    "    }\n"
    "  ]\n"
    "}\n";

static void test_records(void)
{
    printf("launch records against the family code\n");
    fusegen_jit *j = NULL;
    CHECK(fusegen_jit_create(records_spec, strlen(records_spec), "records.json", &j) == FUSEGEN_OK);
    if (!j) return;
    fusegen_jit_options o;
    memset(&o, 0, sizeof o);
    o.arch = "sm_80";
    o.no_cache = 1;
    fusegen_status st = fusegen_jit_compile(j, &o, NULL);
    if (st != FUSEGEN_OK) fprintf(stderr, "  %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
    CHECK(st == FUSEGEN_OK);
    const fusegen_library *lib = fusegen_jit_library(j);
    if (lib) {
        /* sm_80 code: the portable variants only (row and split for ln, the chain) */
        size_t hopper = 0, chains = 0;
        for (size_t i = 0; i < lib->n_kernels; ++i) {
            hopper += strstr(lib->kernels[i].name, "sm90a") != NULL;
            chains += lib->kernels[i].chain;
            printf("  %s\n", lib->kernels[i].name);
        }
        CHECK(lib->n_kernels == 3 && hopper == 0 && chains == 1);
        const fusegen_kernel *k = NULL;
        CHECK(fusegen_find(lib, "chain_sm80_64x64x32_s2_split", &k) == FUSEGEN_OK && k);
        if (k) {
            CHECK(k->chain && k->strategy == FUSEGEN_STRATEGY_SPLIT && k->norm == FUSEGEN_NORM_RMSNORM);
            CHECK(k->b_layout == FUSEGEN_LAYOUT_KN && strcmp(k->epilogue2, "relu") == 0 && k->tile2_m == 64);
            CHECK(k->uses_gamma && !k->uses_beta);
        }
    }
    fusegen_jit_destroy(j);
}

/* ---- main ----------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    int major = 0, minor = 0;
    if (argc < 3) {
        fprintf(stderr, "usage: test_jit all WORKDIR | compile-one CACHE_DIR | expect-hit CACHE_DIR\n");
        return 2;
    }
    if (fg_rtc_version(&major, &minor) != 0) {
        printf("NVRTC cannot be loaded: skipping\n");
        return SKIP;
    }
    atexit(spec_free_all);
    fusegen_jit_set_warning_handler(on_warning, NULL);
    /* the JIT reads no template files: point the generator's lookup somewhere empty */
    setenv("FUSEGEN_TEMPLATE_DIR", "/nonexistent", 1);

    if (strcmp(argv[1], "compile-one") == 0 || strcmp(argv[1], "expect-hit") == 0) {
        fusegen_jit_stats s;
        fusegen_jit *j = NULL;
        fusegen_jit_cache_result r = compile_into(spec_with("relu"), "sm_80", argv[2], NULL, &s, &j);
        printf("%s: %s (%lu compile(s))\n", argv[1], result_name(r), s.compiles);
        if (j) check_table(j);
        fusegen_jit_destroy(j);
        if (strcmp(argv[1], "expect-hit") == 0) {
            CHECK(r == FUSEGEN_JIT_CACHE_HIT && s.compiles == 0);
            CHECK(count_files(argv[2], ".fgjit") == 1 && count_files(argv[2], ".tmp.") == 0);
        }
        return g_fail ? 1 : 0;
    }
    if (strcmp(argv[1], "all") != 0) return 2;

    printf("NVRTC %d.%d\n", major, minor);
    rm_rf(argv[2]);
    if (mkdir(argv[2], 0755) != 0) {
        fprintf(stderr, "cannot create %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    test_bad_input();
    test_cache(argv[2]);
    test_hostile_cache(argv[2]);
    test_unwritable(argv[2]);
    test_records();
    rm_rf(argv[2]);
    if (g_fail) {
        printf("FAILED: %d check(s)\n", g_fail);
        return 1;
    }
    printf("all passed\n");
    return 0;
}
