/* test_tuned_table.c - CPU test of compiled-in tuning (fusegen generate --tuning): the golden
 * small library generated with two tuning files (tests/golden/tuning/expected/, one device
 * "NVIDIA H200" 132 SMs cc 90 and one "NVIDIA H100 80GB HBM3" 132 SMs cc 90), linked with stub
 * launchers. The device is faked (fusegen__device_override), so no GPU is needed.
 *
 *   fusegen_test_tuned_table TMPDIR */
#define _POSIX_C_SOURCE 200809L
#include "fusegen.h"
#include "fusegen_internal.h"
#include "golden_small.h"

#include <stdio.h>
#include <string.h>

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

static const fusegen_library *const L = &golden_small_library;

enum { ROW = 0, SPLIT = 1, SPLITK = 2, GELU = 3 };   /* the table's order (golden_small_dispatch.c) */

static fusegen_problem ln_problem(int64_t m, int64_t n, int64_t k)
{
    fusegen_problem p;
    memset(&p, 0, sizeof p);
    p.m = m;
    p.n = n;
    p.k = k;
    p.a = p.b = p.out = FUSEGEN_DTYPE_BF16;
    p.b_layout = FUSEGEN_LAYOUT_NK;
    p.epilogue = "bias+residual+layernorm";
    return p;
}

/* The table index fusegen_select picks, or -1. */
static int selected(const fusegen_problem *p)
{
    const fusegen_kernel *k = NULL;
    if (fusegen_select(L, p, &k) != FUSEGEN_OK || !k)
        return -1;
    return (int)(k - L->kernels);
}

/* The table index the dispatch's model puts first for sms SMs (no tuning), or -1. */
static int model_first(const fusegen_problem *p, int sms)
{
    const fusegen_kernel *out[1] = {NULL};
    size_t n = 0;
    if (fusegen__query_sms(L, p, out, 1, &n, sms) != FUSEGEN_OK || !out[0])
        return -1;
    return (int)(out[0] - L->kernels);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

int main(int argc, char **argv)
{
    char path[4096];
    fusegen_problem p = ln_problem(50, 1024, 4096);   /* M bucket 64 */
    fusegen_problem p1 = ln_problem(1, 1024, 4096);   /* M bucket 1 */
    fusegen_problem other = ln_problem(50, 2048, 4096);
    if (argc != 2) {
        fprintf(stderr, "usage: fusegen_test_tuned_table TMPDIR\n");
        return 2;
    }

    /* the table as generated */
    CHECK(L->n_tuned == 2 && L->tuned != NULL);
    CHECK(L->n_tuned == 2 && strcmp(L->tuned[0].name, "NVIDIA H100 80GB HBM3") == 0 && L->tuned[0].n_entries == 1);
    CHECK(L->n_tuned == 2 && strcmp(L->tuned[1].name, "NVIDIA H200") == 0 && L->tuned[1].sms == 132 &&
          L->tuned[1].cc == 90 && L->tuned[1].n_entries == 3);
    CHECK(L->n_tuned == 2 && L->tuned[1].entries[2].winner == GELU && L->tuned[1].entries[2].runner_up_ms < 0);

    /* an H200: its winners where eligible (split-K at bucket 64, split at bucket 1) */
    fusegen__device_override("NVIDIA H200", 132, 90);
    CHECK(selected(&p) == SPLITK);
    CHECK(selected(&p) == SPLITK);   /* remembered */
    CHECK(selected(&p1) == SPLIT);
    CHECK(selected(&other) == model_first(&other, 132));   /* no entry: the model */
    {
        const fusegen_kernel *out[4];
        size_t n = 0;
        CHECK(fusegen_query(L, &p, out, 4, &n) == FUSEGEN_OK && n == 2 && out[0] == &L->kernels[SPLITK]);
    }
    /* a problem for another arch (p->sm set): compiled-in data is not used */
    {
        fusegen_problem q = p;
        q.sm = 90;
        CHECK(selected(&q) == model_first(&q, 0));
    }

    /* an H100: its own winner (split at bucket 64) */
    fusegen__device_override("NVIDIA H100 80GB HBM3", 132, 90);
    CHECK(selected(&p) == SPLIT);
    CHECK(selected(&p1) == model_first(&p1, 132));

    /* one of the tuned names with another SM count, or another device: the model decides */
    fusegen__device_override("NVIDIA H200", 114, 90);
    CHECK(selected(&p) == model_first(&p, 114));
    fusegen__device_override("NVIDIA A100-SXM4-80GB", 108, 80);
    CHECK(selected(&p) == model_first(&p, 108));

    /* a loaded file goes before the compiled-in data: its winner, and the model where it has none */
    fusegen__device_override("NVIDIA H200", 132, 90);
    snprintf(path, sizeof path, "%s/tuned_table_load.json", argv[1]);
    write_file(path,
               "{\"fusegen_tuning\": 1, \"device\": {\"name\": \"NVIDIA H200\", \"sms\": 132, \"cc\": 90},\n"
               " \"library\": {\"name\": \"golden_small\", \"spec_sha256\": "
               "\"10217548f9e5199f946bd5812d549f5d718da708122ed6a8e1e009795abc3e2e\"},\n"
               " \"entries\": [{\"spec_kernel\": \"proj_bias_residual_layernorm\", \"m_bucket\": 64, \"n\": 1024,"
               " \"k\": 4096, \"n2\": 0, \"winner\": \"proj_bias_residual_layernorm_sm80_64x128x32_s3_split\","
               " \"winner_ms\": 0.02}]}\n");
    CHECK(fusegen__tuning_load_for(L, path, "NVIDIA H200", 132, 90) == FUSEGEN_OK);
    CHECK(selected(&p) == SPLIT);
    CHECK(selected(&p1) == model_first(&p1, 132));
    fusegen_tuning_clear(L);
    CHECK(selected(&p) == SPLITK);   /* compiled-in again */
    CHECK(selected(&p1) == SPLIT);
    remove(path);

    fusegen__device_override(NULL, 0, 0);
    printf("test_tuned_table: %d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
