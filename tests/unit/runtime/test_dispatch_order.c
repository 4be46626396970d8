/* test_dispatch_order.c - pins the dispatch order of a generated library: for every spec kernel
 * of the table, a grid of problems (M, N, K; chains at two N2) on several devices (sm 90 at 0,
 * 132 and 78 SMs, sm 80 at 108; 0 is the size-only order of an unknown device), the full order
 * of the eligible variants as table indices, one line per case. The lines are compared with a
 * committed file; a change of the heuristic that changes any order shows as a diff of that file.
 *
 *   fusegen_test_dispatch_order EXPECTED            compare (exit 1 and the first differences),
 *                                                   then check the off-sector and GEMM2 fill rules
 *   fusegen_test_dispatch_order EXPECTED --write    rewrite EXPECTED (review the diff)
 *   fusegen_test_dispatch_order --memo              fusegen_select's memory of its last answer
 *   fusegen_test_dispatch_order --show SMS M N K [N2]
 *       the order of one problem on an sm 90 device of SMS SMs, by name, for every spec kernel
 *       (chains only with N2): a look at what the dispatch does with a problem
 *
 * The library is linked with stub launchers (no kernel code) and every call gives p->sm and
 * the SM count (fusegen__query_sms), so no GPU is touched. */
#include "fusegen.h"
#include "fusegen_internal.h"
#include "fusegen_default.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 1024

static const struct { int sm, sms; } g_devices[] = {{90, 0}, {90, 132}, {90, 78}, {80, 108}};

static void order_line(const fusegen_library *lib, const fusegen_kernel *first, int64_t m, int64_t n, int64_t k,
                       int64_t n2, int sm, int sms, char *line, size_t len);

/* --show: one problem's order by name, every spec kernel of its kind. */
static int show(const fusegen_library *lib, int argc, char **argv)
{
    long long v[5] = {0, 0, 0, 0, 0};
    char line[MAX_LINE];
    int i;
    for (i = 0; i < argc; i++) {
        char *end;
        v[i] = strtoll(argv[i], &end, 10);
        if (*end || v[i] < 0) {
            fprintf(stderr, "--show: '%s' is not a count\n", argv[i]);
            return 2;
        }
    }
    for (size_t s = 0; s < lib->n_kernels; s++) {
        const fusegen_kernel *kn = &lib->kernels[s];
        char *at;
        if (s > 0 && strcmp(kn->spec_kernel, lib->kernels[s - 1].spec_kernel) == 0) continue;
        if (kn->chain != (argc == 5)) continue;
        order_line(lib, kn, v[1], v[2], v[3], v[4], 90, (int)v[0], line, sizeof line);
        at = strchr(line, ':');
        printf("%s (M %lld N %lld K %lld%s%.0lld, %lld SMs):\n", kn->spec_kernel, v[1], v[2], v[3],
               argc == 5 ? " N2 " : "", argc == 5 ? v[4] : 0LL, v[0]);
        for (char *tok = strtok(at + 1, " "); tok; tok = strtok(NULL, " "))
            printf("  %s\n", *tok == '-' ? "(none eligible)" : lib->kernels[atoi(tok)].name);
    }
    return 0;
}
static const int64_t g_m[] = {1, 64, 512, 4096};
static const int64_t g_n[] = {128, 256, 648, 1280, 1288, 3080, 8192};
static const int64_t g_k[] = {512, 1024, 1032, 3072, 3080};
static const int64_t g_n2[] = {1024, 4096};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The problem of spec kernel `first`'s signature at this size (packed) on an sm device. */
static fusegen_problem problem_of(const fusegen_kernel *first, int64_t m, int64_t n, int64_t k, int64_t n2, int sm)
{
    fusegen_problem p;
    memset(&p, 0, sizeof p);
    p.m = m; p.n = n; p.k = k;
    p.a = first->a; p.b = first->b; p.out = first->out;
    p.b_layout = first->b_layout;
    p.epilogue = first->epilogue;
    if (first->chain) {
        p.n2 = n2;
        p.b2_layout = first->b2_layout;
        p.epilogue2 = first->epilogue2;
    }
    p.sm = sm;
    return p;
}

/* One case's line into line: "S m n k n2 sm/sms: i j k ..." (S: the table index of the spec
 * kernel's first variant; "-" when none is eligible). */
static void order_line(const fusegen_library *lib, const fusegen_kernel *first, int64_t m, int64_t n, int64_t k,
                       int64_t n2, int sm, int sms, char *line, size_t len)
{
    const fusegen_kernel *out[256];
    fusegen_problem p = problem_of(first, m, n, k, n2, sm);
    size_t found = 0, i, used;
    fusegen_status st;

    st = fusegen__query_sms(lib, &p, out, COUNT(out), &found, sms);
    used = (size_t)snprintf(line, len, "%d %lld %lld %lld %lld %d/%d:", (int)(first - lib->kernels), (long long)m,
                            (long long)n, (long long)k, (long long)p.n2, sm, sms);
    if (st != FUSEGEN_OK || found == 0) {
        snprintf(line + used, len - used, " -");
        return;
    }
    for (i = 0; i < found && i < COUNT(out) && used < len; i++)
        used += (size_t)snprintf(line + used, len - used, " %d", (int)(out[i] - lib->kernels));
}

/* --memo: fusegen_select's per-thread memory of its last answer (runtime.c) never answers a
 * different question: the same signature buffer rewritten, another size, another library
 * table, another arch each get the answer a fresh query gives; the same question the same
 * kernel. */
static int memo_check(const fusegen_library *lib)
{
    const fusegen_kernel *k1 = NULL, *k2 = NULL, *fresh = NULL;
    fusegen_problem p;
    char sig[64];
    int failures = 0;
    size_t n = 0;
#define MEMO_CHECK(cond, what)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s\n", what);                                                             \
            failures++;                                                                            \
        } else {                                                                                   \
            printf("PASS %s\n", what);                                                             \
        }                                                                                          \
    } while (0)
    memset(&p, 0, sizeof p);
    p.m = 64;
    p.n = 4096;
    p.k = 4096;
    p.a = p.b = p.out = FUSEGEN_DTYPE_BF16;
    p.b_layout = FUSEGEN_LAYOUT_NK;
    p.sm = 90;
    strcpy(sig, "bias+residual+store+layernorm+relu");
    p.epilogue = sig;
    MEMO_CHECK(fusegen_select(lib, &p, &k1) == FUSEGEN_OK && k1, "a first select");
    MEMO_CHECK(fusegen_select(lib, &p, &k2) == FUSEGEN_OK && k2 == k1, "the same question: the same kernel");
    strcpy(sig, "");   /* the same buffer, another epilogue */
    MEMO_CHECK(fusegen_select(lib, &p, &k2) == FUSEGEN_OK && k2 && strcmp(k2->epilogue, "") == 0,
               "the signature buffer rewritten: the plain GEMM's kernel");
    strcpy(sig, "bias+residual+store+layernorm+relu");
    p.m = 8192;
    MEMO_CHECK(fusegen_select(lib, &p, &k2) == FUSEGEN_OK &&
                   fusegen__query_sms(lib, &p, &fresh, 1, &n, 0) == FUSEGEN_OK && k2 == fresh,
               "another M: the fresh query's answer");
    p.sm = 80;
    MEMO_CHECK(fusegen_select(lib, &p, &k2) == FUSEGEN_OK && k2 && k2->family == FUSEGEN_FAMILY_PORTABLE,
               "another arch: a portable kernel");
    {
        fusegen_library copy = *lib;   /* another library at another address, the same table */
        copy.n_kernels = 1;             /* ... cut to its first kernel */
        p.sm = 90;
        p.m = 64;
        MEMO_CHECK(fusegen_select(lib, &p, &k1) == FUSEGEN_OK, "select again");
        MEMO_CHECK(fusegen_select(&copy, &p, &k2) != FUSEGEN_OK || k2 == &copy.kernels[0],
                   "another library: its own answer");
    }
    p.epilogue = "no+such+ops";
    MEMO_CHECK(fusegen_select(lib, &p, &k2) == FUSEGEN_ERR_NOT_SUPPORTED && k2 == NULL,
               "an unknown epilogue after a remembered answer: not supported");
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
#undef MEMO_CHECK
}

/* The model's first kernel for p on a device of sms SMs, or NULL (reported) when none is eligible. */
static const fusegen_kernel *first_choice(const fusegen_library *lib, const fusegen_problem *p, int sms, const char *what)
{
    const fusegen_kernel *out[256];
    size_t found = 0;
    if (fusegen__query_sms(lib, p, out, COUNT(out), &found, sms) != FUSEGEN_OK || found == 0) {
        fprintf(stderr, "%s: M = %lld, K = %lld: nothing eligible\n", what, (long long)p->m, (long long)p->k);
        return NULL;
    }
    return out[0];
}

/* The off-sector rule (dispatch.c, key 3): 5000 x 1000 x K on 132 SMs, plain GEMM. At K = 3008
 * (rows of 6016 bytes) the area rates put a 64-row tile first (3 waves of 64x256 against 2 of
 * 128x256); at K = 3000 (6000 bytes, 16 off a sector) the rows fetched decide: 128x256, the
 * fastest there of every variant measured (decisions.md, "Unaligned rows"). */
static int offsector_check(const fusegen_library *lib)
{
    const fusegen_kernel *proj = NULL;
    int failures = 0;
    for (size_t s = 0; s < lib->n_kernels && !proj; s++)
        if (strcmp(lib->kernels[s].spec_kernel, "proj") == 0) proj = &lib->kernels[s];
    if (!proj) {
        fprintf(stderr, "offsector: no spec kernel 'proj' in %s\n", lib->name);
        return 1;
    }
    for (int aligned = 0; aligned < 2; aligned++) {
        fusegen_problem p = problem_of(proj, 5000, 1000, aligned ? 3008 : 3000, 0, 90);
        const fusegen_kernel *first = first_choice(lib, &p, 132, "offsector");
        if (!first) {
            failures++;
            continue;
        }
        int tile_128x256 = first->family == FUSEGEN_FAMILY_HOPPER && first->tile_m == 128 && first->tile_n == 256;
        if (tile_128x256 == aligned) {
            fprintf(stderr, "offsector: K = %lld: first %s\n", (long long)p.k, first->name);
            failures++;
        }
    }
    printf("offsector rule: %d failed\n", failures);
    return failures;
}

/* The chains' GEMM2 fill rule (dispatch.c, key 6): on 132 SMs a decode-sized chain (M 64, N 2048,
 * K 2048, N2 8192) runs its first variant's GEMM2 on a tile whose M x N2 tiles fill more than half
 * the SMs (32 tiles of 128x256 would leave 100 idle; decisions.md, "Decode chains on narrow
 * tiles"); a prefill-sized one (M 16384, N 768, N2 3072) keeps the 128-row GEMM2 tiles. */
static int gemm2_fill_check(const fusegen_library *lib)
{
    const fusegen_kernel *chain = NULL;
    int failures = 0;
    for (size_t s = 0; s < lib->n_kernels && !chain; s++)
        if (lib->kernels[s].chain) chain = &lib->kernels[s];
    if (!chain) {
        fprintf(stderr, "gemm2 fill: no chain in %s\n", lib->name);
        return 1;
    }
    for (int decode = 0; decode < 2; decode++) {
        fusegen_problem p =
            decode ? problem_of(chain, 64, 2048, 2048, 8192, 90) : problem_of(chain, 16384, 768, 768, 3072, 90);
        const fusegen_kernel *first = first_choice(lib, &p, 132, "gemm2 fill");
        if (!first) {
            failures++;
            continue;
        }
        const int64_t tiles2 = (p.m + first->tile2_m - 1) / first->tile2_m * ((p.n2 + first->tile2_n - 1) / first->tile2_n);
        if (decode ? 2 * tiles2 <= 132 : first->tile2_m != 128) {
            fprintf(stderr, "gemm2 fill: M = %lld: first %s\n", (long long)p.m, first->name);
            failures++;
        }
    }
    printf("gemm2 fill rule: %d failed\n", failures);
    return failures;
}

int main(int argc, char **argv)
{
    const fusegen_library *lib = &fusegen_default_library;
    FILE *f;
    int write, differences = 0, lines = 0;
    size_t s, t, d, a, b, c, e;
    char line[MAX_LINE], want[MAX_LINE];

    if (argc == 2 && strcmp(argv[1], "--memo") == 0)
        return memo_check(lib);
    if (argc >= 6 && argc <= 7 && strcmp(argv[1], "--show") == 0)
        return show(lib, argc - 2, argv + 2);
    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--write") != 0)) {
        fprintf(stderr, "usage: %s EXPECTED [--write] | --memo | --show SMS M N K [N2]\n", argv[0]);
        return 2;
    }
    write = argc == 3;
    f = fopen(argv[1], write ? "w" : "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open %s\n", argv[0], argv[1]);
        return 2;
    }
    if (write)
        fprintf(f, "# dispatch order of %s (test_dispatch_order.c): spec kernel M N K N2 sm/SMs: table indices, best first\n",
                lib->name);
    else if (!fgets(want, sizeof want, f)) {
        fprintf(stderr, "%s: %s is empty\n", argv[0], argv[1]);
        fclose(f);
        return 1;
    }

    for (s = 0; s < lib->n_kernels; s++) {
        const fusegen_kernel *first = &lib->kernels[s];
        /* the first variant of each spec kernel stands for it */
        for (t = 0; t < s && strcmp(lib->kernels[t].spec_kernel, first->spec_kernel) != 0; t++)
            ;
        if (t < s)
            continue;
        for (d = 0; d < COUNT(g_devices); d++)
            for (a = 0; a < COUNT(g_m); a++)
                for (b = 0; b < COUNT(g_n); b++)
                    for (c = 0; c < COUNT(g_k); c++)
                        for (e = 0; e < (first->chain ? COUNT(g_n2) : 1); e++) {
                            order_line(lib, first, g_m[a], g_n[b], g_k[c], g_n2[e], g_devices[d].sm,
                                       g_devices[d].sms, line, sizeof line);
                            lines++;
                            if (write) {
                                fprintf(f, "%s\n", line);
                                continue;
                            }
                            if (!fgets(want, sizeof want, f)) {
                                want[0] = '\0';
                            } else {
                                want[strcspn(want, "\n")] = '\0';
                            }
                            if (strcmp(line, want) != 0 && ++differences <= 20)
                                fprintf(stderr, "order changed:\n  want %s\n  got  %s\n", want, line);
                        }
    }
    if (!write && fgets(want, sizeof want, f))
        differences++, fprintf(stderr, "%s has more lines than the %d cases\n", argv[1], lines);
    if (fclose(f) != 0) {
        fprintf(stderr, "%s: writing %s failed\n", argv[0], argv[1]);
        return 2;
    }
    if (write) {
        printf("wrote %d cases to %s\n", lines, argv[1]);
        return 0;
    }
    if (differences > 0) {
        fprintf(stderr, "%d of %d cases differ from %s\n", differences, lines, argv[1]);
        return 1;
    }
    printf("%d cases: every order as pinned\n", lines);
    return offsector_check(lib) + gemm2_fill_check(lib) ? 1 : 0;
}
