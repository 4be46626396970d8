/* test_record_tuning.c - CPU tests of the recording of dispatched problems (record.c) and of
 * tuning files (tuning.c) against a hand-made dispatch table. Every problem sets p->sm, and the
 * tuning files are loaded for a given device (fusegen__tuning_load_for), so no GPU is needed.
 *
 *   fusegen_test_record_tuning                 the tests
 *   fusegen_test_record_tuning --env FILE      FUSEGEN_RECORD=FILE is set by the caller (ctest):
 *                                              one select, then FILE must hold its line */
#define _POSIX_C_SOURCE 200809L
#include "fusegen.h"
#include "fusegen_internal.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_passed, g_failed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (cond) {                                                                                \
            g_passed++;                                                                            \
        } else {                                                                                   \
            g_failed++;                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, "  detail: %s\n", fusegen_last_detail());                              \
        }                                                                                          \
    } while (0)

/* The status is want and the detail holds sub. */
#define CHECK_FAIL(call, want, sub)                                                                \
    do {                                                                                           \
        fusegen_status st_ = (call);                                                               \
        CHECK(st_ == (want) && strstr(fusegen_last_detail(), (sub)) != NULL);                      \
    } while (0)

static int fake_launch(const fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args, void *workspace,
                       cudaStream_t stream, char *why, size_t len)
{
    (void)k; (void)p; (void)args; (void)workspace; (void)stream; (void)why; (void)len;
    return 0;
}

#define LN_SIG "bias+residual+store+layernorm+relu"
#define LN_KERNEL(nm, sm_, fam, strat, tm, tn, maxn, rk)                                           \
    {.name = nm, .spec_kernel = "ln", .sm = sm_, .arch_specific = sm_ == 90, .family = fam,         \
     .schedule = fam == FUSEGEN_FAMILY_HOPPER ? FUSEGEN_SCHEDULE_COOPERATIVE : FUSEGEN_SCHEDULE_NONE, \
     .a = FUSEGEN_DTYPE_BF16, .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16,                   \
     .b_layout = FUSEGEN_LAYOUT_NK, .epilogue = LN_SIG, .tile_m = tm, .tile_n = tn, .tile_k = 64,   \
     .stages = 3, .threads = 256, .norm = FUSEGEN_NORM_LAYERNORM, .strategy = strat,                \
     .max_n = maxn, .align_elems = 8, .n_stores = 1, .uses_bias = 1, .uses_residual = 1,           \
     .uses_gamma = 1, .uses_beta = 1, .rank = rk, .launch_jit = fake_launch}

enum { K_ROW80, K_SPLIT80, K_SPLIT90, K_GELU, N_KERNELS };

static const fusegen_kernel g_kernels[N_KERNELS] = {
    [K_ROW80] = LN_KERNEL("ln_sm80_128x128x64_s3_row", 80, FUSEGEN_FAMILY_PORTABLE, FUSEGEN_STRATEGY_ROW, 128, 128,
                          128, 16387),
    [K_SPLIT80] = LN_KERNEL("ln_sm80_128x128x64_s3_split", 80, FUSEGEN_FAMILY_PORTABLE, FUSEGEN_STRATEGY_SPLIT, 128,
                            128, 0, 16387),
    [K_SPLIT90] = LN_KERNEL("ln_sm90a_128x256x64_s3_split", 90, FUSEGEN_FAMILY_HOPPER, FUSEGEN_STRATEGY_SPLIT, 128,
                            256, 0, 32771),
    [K_GELU] = {.name = "gelu_sm80_128x128x32_s4", .spec_kernel = "gelu", .sm = 80,
                .a = FUSEGEN_DTYPE_F16, .b = FUSEGEN_DTYPE_F16, .out = FUSEGEN_DTYPE_F16,
                .b_layout = FUSEGEN_LAYOUT_KN, .epilogue = "scale+bias+gelu",
                .tile_m = 128, .tile_n = 128, .tile_k = 32, .stages = 4, .threads = 256, .align_elems = 8,
                .uses_bias = 1, .rank = 16388, .launch_jit = fake_launch},
};

#define SPEC_HASH "4a1f00c0ffee"
static const fusegen_library g_lib = {.name = "fake", .generator_version = "0.1.0", .spec_sha256 = SPEC_HASH,
                                      .kernels = g_kernels, .n_kernels = N_KERNELS};
static const fusegen_library g_other = {.name = "other", .generator_version = "0.1.0", .spec_sha256 = SPEC_HASH,
                                        .kernels = g_kernels, .n_kernels = N_KERNELS};

static fusegen_problem ln_problem(int64_t m, int64_t n, int64_t k, int sm)
{
    fusegen_problem p;
    memset(&p, 0, sizeof p);
    p.m = m; p.n = n; p.k = k;
    p.a = p.b = p.out = FUSEGEN_DTYPE_BF16;
    p.b_layout = FUSEGEN_LAYOUT_NK;
    p.epilogue = LN_SIG;
    p.sm = sm;
    return p;
}

static char g_dir[] = "/tmp/fusegen-test-rt-XXXXXX";

static const char *tmp_path(const char *name)
{
    /* room for the folder, a slash and any name a directory entry can have */
    static char buf[4][sizeof g_dir + 1 + 256];
    static int at;
    char *b = buf[at++ % 4];
    if (snprintf(b, sizeof buf[0], "%s/%s", g_dir, name) >= (int)sizeof buf[0]) {
        fprintf(stderr, "test_record_tuning: path %s/%s too long\n", g_dir, name);
        exit(2);
    }
    return b;
}

/* The file's lines, counted; its text into text (cut at len). */
static int file_lines(const char *path, char *text, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    int lines = 0, c;
    if (text && len)
        text[0] = '\0';
    if (!f)
        return -1;
    while ((c = fgetc(f)) != EOF) {
        if (text && n + 1 < len) {
            text[n++] = (char)c;
            text[n] = '\0';
        }
        lines += c == '\n';
    }
    fclose(f);
    return lines;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static const fusegen_kernel *select_or_null(const fusegen_library *lib, const fusegen_problem *p)
{
    const fusegen_kernel *k = NULL;
    return fusegen_select(lib, p, &k) == FUSEGEN_OK ? k : NULL;
}

/* ---- recording ----------------------------------------------------------------------------- */

static void *record_thread(void *arg)
{
    int t = (int)(intptr_t)arg, i;
    for (i = 0; i < 200; i++) {
        /* 4 threads, 50 distinct problems each time round, in different orders */
        fusegen_problem p = ln_problem(1 + (i * (t + 1)) % 50, 1024, 512, 80);
        const fusegen_kernel *k = NULL;
        (void)fusegen_select(&g_lib, &p, &k);
    }
    return NULL;
}

static void test_record(void)
{
    char path[256], text[4096];
    fusegen_problem p = ln_problem(100, 1024, 512, 90), q = ln_problem(7, 256, 4096, 80);
    pthread_t threads[4];
    int i;

    snprintf(path, sizeof path, "%s", tmp_path("record.jsonl"));
    CHECK_FAIL(fusegen_record_open(NULL), FUSEGEN_ERR_INVALID_ARGUMENT, "path is NULL");
    CHECK_FAIL(fusegen_record_open(""), FUSEGEN_ERR_INVALID_ARGUMENT, "path is empty");
    CHECK_FAIL(fusegen_record_open(tmp_path("no/such/folder.jsonl")), FUSEGEN_ERR_INVALID_ARGUMENT,
               "cannot open");

    CHECK(fusegen_record_open(path) == FUSEGEN_OK && fusegen_last_detail()[0] == '\0');
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);   /* the same problem: not again */
    p.sm = 80;                                                    /* another device: the same line */
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    CHECK(select_or_null(&g_lib, &q) == &g_kernels[K_SPLIT80]);
    q.b_layout = FUSEGEN_LAYOUT_KN;                               /* nothing eligible: not recorded */
    CHECK(select_or_null(&g_lib, &q) == NULL);
    /* a query is not a dispatch */
    q = ln_problem(9, 256, 4096, 80);
    {
        const fusegen_kernel *out[4];
        size_t n = 0;
        CHECK(fusegen_query(&g_lib, &q, out, 4, &n) == FUSEGEN_OK && n == 1);
    }
    CHECK(file_lines(path, text, sizeof text) == 2);
    CHECK(strstr(text, "{\"library\": \"fake\", \"spec_kernel\": \"ln\", \"m\": 100, \"n\": 1024, \"k\": 512, "
                       "\"n2\": 0, \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", \"b_layout\": \"nk\", "
                       "\"b2_layout\": \"nk\", \"epilogue\": \"" LN_SIG "\", \"epilogue2\": null}\n") == text);
    CHECK(strstr(text, "\"m\": 7, \"n\": 256, \"k\": 4096") != NULL);

    /* closed: nothing more; reopened (appending): each problem once more */
    fusegen_record_close();
    fusegen_record_close();
    p = ln_problem(3, 1024, 512, 80);
    CHECK(select_or_null(&g_lib, &p) != NULL);
    CHECK(file_lines(path, NULL, 0) == 2);
    CHECK(fusegen_record_open(path) == FUSEGEN_OK);
    p = ln_problem(100, 1024, 512, 90);
    CHECK(select_or_null(&g_lib, &p) != NULL);
    CHECK(file_lines(path, NULL, 0) == 3);

    /* four threads selecting the same 50 problems: each written once */
    CHECK(fusegen_record_open(tmp_path("threads.jsonl")) == FUSEGEN_OK);
    for (i = 0; i < 4; i++)
        CHECK(pthread_create(&threads[i], NULL, record_thread, (void *)(intptr_t)i) == 0);
    for (i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    CHECK(file_lines(tmp_path("threads.jsonl"), NULL, 0) == 50);

    /* a write that fails (a full device) is reported once and changes no result */
    if (access("/dev/full", W_OK) == 0) {
        CHECK(fusegen_record_open("/dev/full") == FUSEGEN_OK);
        fprintf(stderr, "(one 'recording to /dev/full stopped' line is expected next)\n");
        for (i = 0; i < 3; i++) {
            p = ln_problem(11 + i, 1024, 512, 90);
            CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
        }
    }
    fusegen_record_close();
}

/* The --env mode: FUSEGEN_RECORD names path (ctest sets it). */
static int env_mode(const char *path)
{
    fusegen_problem p = ln_problem(33, 1024, 512, 80);
    char text[1024];
    (void)unlink(path);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    CHECK(file_lines(path, text, sizeof text) == 1 && strstr(text, "\"m\": 33, \"n\": 1024") != NULL);
    /* the API takes over from the variable */
    CHECK(fusegen_record_open(tmp_path("api.jsonl")) == FUSEGEN_OK);
    p.m = 34;
    CHECK(select_or_null(&g_lib, &p) != NULL);
    CHECK(file_lines(path, NULL, 0) == 1 && file_lines(tmp_path("api.jsonl"), NULL, 0) == 1);
    fusegen_record_close();
    (void)unlink(path);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}

/* ---- tuning files -------------------------------------------------------------------------- */

#define DEVICE "NVIDIA H200", 132, 90

/* A tuning file with the given header parts and entries. */
static const char *tuning_file(const char *name, const char *version, const char *device, const char *library,
                               const char *entries)
{
    static char text[8192];
    const char *path = tmp_path(name);
    snprintf(text, sizeof text,
             "{\n  \"fusegen_tuning\": %s,\n  \"device\": %s,\n  \"library\": %s,\n  \"entries\": [%s]\n}\n",
             version, device, library, entries);
    write_file(path, text);
    return path;
}

#define GOOD_DEVICE "{\"name\": \"NVIDIA H200\", \"sms\": 132, \"cc\": 90}"
#define GOOD_LIBRARY "{\"name\": \"fake\", \"spec_sha256\": \"" SPEC_HASH "\"}"
/* ln at M in (64, 128], N 1024, K 512: the portable split kernel (the model takes the Hopper one) */
#define ENTRY_SPLIT80                                                                              \
    "{\"spec_kernel\": \"ln\", \"m_bucket\": 128, \"n\": 1024, \"k\": 512, \"n2\": 0, "            \
    "\"winner\": \"ln_sm80_128x128x64_s3_split\", \"winner_ms\": 0.0123, "                         \
    "\"runner_up\": \"ln_sm90a_128x256x64_s3_split\", \"runner_up_ms\": 0.0131}"
/* ln at N 2048: the row kernel, which cannot take N 2048 (max_n 128) */
#define ENTRY_ROW_TOO_NARROW                                                                       \
    "{\"spec_kernel\": \"ln\", \"m_bucket\": 128, \"n\": 2048, \"k\": 512, \"n2\": 0, "            \
    "\"winner\": \"ln_sm80_128x128x64_s3_row\", \"winner_ms\": 1e-2, \"runner_up\": null, \"runner_up_ms\": null}"

static void test_tuning_refusals(void)
{
    char good[256];
    snprintf(good, sizeof good, "%s", tuning_file("good.json", "1", GOOD_DEVICE, GOOD_LIBRARY, ENTRY_SPLIT80));
    fusegen_problem p = ln_problem(100, 1024, 512, 90);

    CHECK_FAIL(fusegen__tuning_load_for(NULL, good, DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT, "lib is NULL");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, NULL, DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT, "path is NULL");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, tmp_path("missing.json"), DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT,
               "cannot be opened");

    /* a good file, loaded; every refusal below leaves it in effect */
    CHECK(fusegen__tuning_load_for(&g_lib, good, DEVICE) == FUSEGEN_OK && fusegen_last_detail()[0] == '\0');
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);

    write_file(tmp_path("syntax.json"), "{\"fusegen_tuning\": 1,\n  \"device\": {\"name\": \"x\",}\n}");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, tmp_path("syntax.json"), DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT,
               "is not valid JSON: line 2, column 26: an object member needs a string key");
    write_file(tmp_path("trailing.json"), "{} {}");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, tmp_path("trailing.json"), DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT,
               "text after the JSON value");
    /* bytes given directly (what the loader does after reading): a NUL among them, or none */
    CHECK_FAIL(fusegen__tuning_load_text(&g_lib, "nul.json", "{\"a\": 1}\0{}", 12, DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT,
               "tuning file 'nul.json' holds a NUL byte");
    CHECK_FAIL(fusegen__tuning_load_text(&g_lib, "empty.json", "", 0, DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT,
               "tuning file 'empty.json' is not valid JSON");
    write_file(tmp_path("array.json"), "[1, 2]");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, tmp_path("array.json"), DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT,
               "is not a JSON object");
    write_file(tmp_path("other.json"), "{\"something\": \"else\"}");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, tmp_path("other.json"), DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT,
               "not a tuning file");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, tuning_file("v2.json", "2", GOOD_DEVICE, GOOD_LIBRARY, ""), DEVICE),
               FUSEGEN_ERR_INVALID_ARGUMENT, "is version 2; this runtime reads version 1");
    CHECK_FAIL(fusegen__tuning_load_for(&g_other, good, DEVICE), FUSEGEN_ERR_INVALID_ARGUMENT,
               "measured for library 'fake', not 'other'");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib,
                                        tuning_file("hash.json", "1", GOOD_DEVICE,
                                                    "{\"name\": \"fake\", \"spec_sha256\": \"0123\"}", ENTRY_SPLIT80),
                                        DEVICE),
               FUSEGEN_ERR_INVALID_ARGUMENT, "another spec of library 'fake' (spec_sha256 0123");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, good, "NVIDIA H100 80GB HBM3", 132, 90), FUSEGEN_ERR_INVALID_ARGUMENT,
               "measured on another device (NVIDIA H200, 132 SMs, compute capability 90); this one is NVIDIA H100");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, good, "NVIDIA H200", 114, 90), FUSEGEN_ERR_INVALID_ARGUMENT,
               "this one is NVIDIA H200, 114 SMs");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, good, "NVIDIA H200", 132, 100), FUSEGEN_ERR_INVALID_ARGUMENT,
               "another device");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib, tuning_file("dev.json", "1", "{\"name\": \"x\"}", GOOD_LIBRARY, ""),
                                        DEVICE),
               FUSEGEN_ERR_INVALID_ARGUMENT, "\"device\" must be an object");
    CHECK_FAIL(fusegen__tuning_load_for(
                   &g_lib,
                   tuning_file("winner.json", "1", GOOD_DEVICE, GOOD_LIBRARY,
                               "{\"spec_kernel\": \"ln\", \"m_bucket\": 1, \"n\": 8, \"k\": 8, \"n2\": 0, "
                               "\"winner\": \"ln_sm70_nope\", \"winner_ms\": 1}"),
                   DEVICE),
               FUSEGEN_ERR_INVALID_ARGUMENT, "entries[0].winner 'ln_sm70_nope' is not a variant of spec kernel 'ln'");
    CHECK_FAIL(fusegen__tuning_load_for(
                   &g_lib,
                   tuning_file("spec.json", "1", GOOD_DEVICE, GOOD_LIBRARY,
                               "{\"spec_kernel\": \"gelu\", \"m_bucket\": 1, \"n\": 8, \"k\": 8, \"n2\": 0, "
                               "\"winner\": \"ln_sm80_128x128x64_s3_split\", \"winner_ms\": 1}"),
                   DEVICE),
               FUSEGEN_ERR_INVALID_ARGUMENT, "is not a variant of spec kernel 'gelu'");
    CHECK_FAIL(fusegen__tuning_load_for(
                   &g_lib,
                   tuning_file("bucket.json", "1", GOOD_DEVICE, GOOD_LIBRARY,
                               "{\"spec_kernel\": \"ln\", \"m_bucket\": 96, \"n\": 8, \"k\": 8, \"n2\": 0, "
                               "\"winner\": \"ln_sm80_128x128x64_s3_split\", \"winner_ms\": 1}"),
                   DEVICE),
               FUSEGEN_ERR_INVALID_ARGUMENT, "entries[0].m_bucket = 96 is not a power of two");
    CHECK_FAIL(fusegen__tuning_load_for(
                   &g_lib,
                   tuning_file("time.json", "1", GOOD_DEVICE, GOOD_LIBRARY,
                               "{\"spec_kernel\": \"ln\", \"m_bucket\": 1, \"n\": 8, \"k\": 8, \"n2\": 0, "
                               "\"winner\": \"ln_sm80_128x128x64_s3_split\", \"winner_ms\": \"fast\"}"),
                   DEVICE),
               FUSEGEN_ERR_INVALID_ARGUMENT, "entries[0] needs");
    CHECK_FAIL(fusegen__tuning_load_for(&g_lib,
                                        tuning_file("twice.json", "1", GOOD_DEVICE, GOOD_LIBRARY,
                                                    ENTRY_SPLIT80 ", " ENTRY_SPLIT80),
                                        DEVICE),
               FUSEGEN_ERR_INVALID_ARGUMENT, "two entries for spec kernel 'ln' at m_bucket 128, n 1024, k 512");

    /* still the good file's winner */
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    /* the real call reads the device: without a GPU a CUDA error, with one most likely another
     * device than the file's; never applied */
    {
        fusegen_status st = fusegen_tuning_load(&g_other, good);
        CHECK(st == FUSEGEN_ERR_CUDA || st == FUSEGEN_ERR_INVALID_ARGUMENT);
    }
    fusegen_tuning_clear(&g_lib);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
}

static void test_tuning_selection(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s",
             tuning_file("select.json", "1", GOOD_DEVICE, GOOD_LIBRARY, ENTRY_SPLIT80 ", " ENTRY_ROW_TOO_NARROW));
    const fusegen_kernel *out[4];
    size_t n = 0;
    fusegen_problem p = ln_problem(100, 1024, 512, 90);

    /* without tuning the model: the Hopper split kernel, then the portable one */
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    CHECK(fusegen__tuning_load_for(&g_lib, path, DEVICE) == FUSEGEN_OK);
    /* M = 100 and M = 65..128: bucket 128, the measured winner first, then the model's order */
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    CHECK(fusegen_query(&g_lib, &p, out, 4, &n) == FUSEGEN_OK && n == 2 && out[0] == &g_kernels[K_SPLIT80] &&
          out[1] == &g_kernels[K_SPLIT90]);
    CHECK(fusegen_query(&g_lib, &p, out, 1, &n) == FUSEGEN_OK && n == 2 && out[0] == &g_kernels[K_SPLIT80]);
    p.m = 65;
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    p.m = 128;
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    /* another bucket, N or K: the model */
    p.m = 129;
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    p = ln_problem(64, 1024, 512, 90);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    p = ln_problem(100, 1024, 520, 90);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    /* a winner the problem cannot run: the row kernel at N 2048 past its max_n */
    p = ln_problem(100, 2048, 512, 90);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    /* the portable winner where the Hopper kernel is not eligible: the same */
    p = ln_problem(100, 1024, 512, 80);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    /* another library with the same table has no tuning */
    p = ln_problem(100, 1024, 512, 90);
    CHECK(select_or_null(&g_other, &p) == &g_kernels[K_SPLIT90]);
    /* cleared: the model again; clearing all of them too */
    fusegen_tuning_clear(&g_lib);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    CHECK(fusegen__tuning_load_for(&g_lib, path, DEVICE) == FUSEGEN_OK);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
    fusegen_tuning_clear(NULL);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    /* a bucket not measured: the winner of the nearest measured buckets below and above, when
     * they agree and each is at most 4 doublings away; else the model */
    {
#define ENTRY_AT(bucket, kernel)                                                                   \
    "{\"spec_kernel\": \"ln\", \"m_bucket\": " #bucket ", \"n\": 1024, \"k\": 512, \"n2\": 0, "   \
    "\"winner\": \"" kernel "\", \"winner_ms\": 0.01, \"runner_up\": null, \"runner_up_ms\": null}"
        const char *agree = tuning_file("agree.json", "1", GOOD_DEVICE, GOOD_LIBRARY,
                                        ENTRY_AT(1, "ln_sm80_128x128x64_s3_split") ", "
                                        ENTRY_AT(16, "ln_sm80_128x128x64_s3_split") ", "
                                        ENTRY_AT(1024, "ln_sm80_128x128x64_s3_split"));
        CHECK(fusegen__tuning_load_for(&g_lib, agree, DEVICE) == FUSEGEN_OK);
        p = ln_problem(8, 1024, 512, 90);    /* bucket 8: between 1 and 16 */
        CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
        p.m = 2;                             /* bucket 2 */
        CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
        p.m = 100;                           /* bucket 128: 16 below (3 doublings), 1024 above (3) */
        CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
        p.m = 2000;                          /* bucket 2048: nothing measured above */
        CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
        const char *far = tuning_file("far.json", "1", GOOD_DEVICE, GOOD_LIBRARY,
                                      ENTRY_AT(1, "ln_sm80_128x128x64_s3_split") ", "
                                      ENTRY_AT(64, "ln_sm80_128x128x64_s3_split"));
        CHECK(fusegen__tuning_load_for(&g_lib, far, DEVICE) == FUSEGEN_OK);
        p.m = 32;                            /* bucket 32: 1 is 5 doublings below */
        CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
        p.m = 4;                             /* bucket 4: 64 is 4 doublings above */
        CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
        const char *differ = tuning_file("differ.json", "1", GOOD_DEVICE, GOOD_LIBRARY,
                                         ENTRY_AT(1, "ln_sm90a_128x256x64_s3_split") ", "
                                         ENTRY_AT(16, "ln_sm80_128x128x64_s3_split"));
        CHECK(fusegen__tuning_load_for(&g_lib, differ, DEVICE) == FUSEGEN_OK);
        p.m = 8;                             /* the two disagree: the model */
        CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
        p.m = 16;
        CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT80]);
        fusegen_tuning_clear(NULL);
        p = ln_problem(100, 1024, 512, 90);
#undef ENTRY_AT
    }
    /* an empty entry list loads (and selects as the model does) */
    CHECK(fusegen__tuning_load_for(&g_lib, tuning_file("empty.json", "1", GOOD_DEVICE, GOOD_LIBRARY, ""), DEVICE) ==
          FUSEGEN_OK);
    CHECK(select_or_null(&g_lib, &p) == &g_kernels[K_SPLIT90]);
    fusegen_tuning_clear(NULL);
}

/* Removes the test's folder and the files in it. */
static void remove_dir(void)
{
    DIR *d = opendir(g_dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            (void)unlink(tmp_path(e->d_name));
    closedir(d);
    (void)rmdir(g_dir);
}

/* Selects on four threads while the main thread loads and clears a tuning file: every select
 * returns one of the two answers (run under the sanitizers, scripts/test-asan.sh). */
static _Atomic int g_stop;
static _Atomic int g_bad;

static void *select_thread(void *arg)
{
    fusegen_problem p = ln_problem(100, 1024, 512, 90);
    (void)arg;
    while (!g_stop) {
        const fusegen_kernel *k = select_or_null(&g_lib, &p);
        if (k != &g_kernels[K_SPLIT80] && k != &g_kernels[K_SPLIT90])
            g_bad++;
    }
    return NULL;
}

static void test_tuning_threads(void)
{
    char path[256];
    pthread_t threads[4];
    int i, loads_ok = 1;
    snprintf(path, sizeof path, "%s", tuning_file("threads.json", "1", GOOD_DEVICE, GOOD_LIBRARY, ENTRY_SPLIT80));
    for (i = 0; i < 4; i++)
        CHECK(pthread_create(&threads[i], NULL, select_thread, NULL) == 0);
    for (i = 0; i < 200; i++) {
        loads_ok &= fusegen__tuning_load_for(&g_lib, path, DEVICE) == FUSEGEN_OK;
        fusegen_tuning_clear(i % 2 ? &g_lib : NULL);
    }
    g_stop = 1;
    for (i = 0; i < 4; i++)
        pthread_join(threads[i], NULL);
    CHECK(loads_ok && g_bad == 0);
}

int main(int argc, char **argv)
{
    int rc;
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 2;
    }
    if (argc == 3 && strcmp(argv[1], "--env") == 0) {
        rc = env_mode(argv[2]);
        remove_dir();
        return rc;
    }
    test_record();
    test_tuning_refusals();
    test_tuning_selection();
    test_tuning_threads();
    remove_dir();
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
