/* test_pack.c - fusegen_pack_glu_weight (every element where the kernel reads it) and
 * fusegen_fold_a_norm_gamma (runtime/pack.c): each element of B times gamma[k],
 * rounded to nearest even in B's dtype, for both layouts, a padded leading dimension (the
 * padding untouched), f16 and bf16 weights, f32 and 16-bit gamma; and the refusals. The
 * expected values are computed here in double with the rounding written out independently. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fusegen.h"

static int g_failed, g_passed;
#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (cond) {                                                                              \
            g_passed++;                                                                          \
        } else {                                                                                 \
            g_failed++;                                                                          \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; detail: %s\n", __FILE__, __LINE__, #cond, \
                    fusegen_last_detail());                                                      \
        }                                                                                        \
    } while (0)

/* A 16-bit value with p mantissa bits (bf16: 8, f16: 11) and exponent range, from double x
 * rounded to nearest even, by searching the neighbours: slow and obviously right. */
static double round_to(double x, int p, int emin, double max)
{
    if (x == 0) return x;
    int e;
    frexp(fabs(x), &e);                        /* |x| in [2^(e-1), 2^e) */
    if (e - 1 < emin) e = emin + 1;            /* subnormal: the step of the smallest binade */
    const double step = ldexp(1.0, e - p);
    double q = fabs(x) / step, f = floor(q), r = q - f;
    double n = r > 0.5 || (r == 0.5 && fmod(f, 2.0) == 1.0) ? f + 1 : f;
    double v = n * step;
    if (v > max) v = INFINITY;
    return x < 0 ? -v : v;
}

static uint16_t bf16_of(double v)   /* v exactly representable in bf16 */
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16);
}

static double bf16_val(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static double f16_val(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

static uint16_t f16_of(double v)    /* v exactly representable in f16 (finite) */
{
    for (uint32_t h = 0; h < 0x10000; h++)
        if ((h & 0x7C00) != 0x7C00 && f16_val((uint16_t)h) == v && (v != 0 || !(h & 0x8000))) return (uint16_t)h;
    return 0x7E00;
}

static double pseudo(uint32_t *s)   /* in [-2, 2), a few bits */
{
    *s = *s * 1664525u + 1013904223u;
    return ((double)(*s >> 8) / 16777216.0) * 4.0 - 2.0;
}

static void case_fold(fusegen_dtype bt, fusegen_layout layout, fusegen_dtype gt, int64_t n, int64_t k, int64_t pad)
{
    const int64_t rows = layout == FUSEGEN_LAYOUT_NK ? n : k, cols = layout == FUSEGEN_LAYOUT_NK ? k : n;
    const int64_t ld = cols + pad;
    uint16_t b[64 * 80], before[64 * 80];
    float g32[64];
    uint16_t g16[64];
    double g[64];
    uint32_t s = 12345u + (uint32_t)(bt * 7 + layout * 3 + gt);
    for (int64_t i = 0; i < rows * ld; i++) {
        double x = pseudo(&s);
        if (i % 7 == 3) x *= 1e-5;   /* small products: f16 subnormals */
        b[i] = bt == FUSEGEN_DTYPE_BF16 ? bf16_of(round_to(x, 8, -126, 3.4e38)) : f16_of(round_to(x, 11, -14, 65504));
    }
    for (int64_t j = 0; j < k; j++) {
        double x = pseudo(&s) * 3.0;
        if (j == 1) x = 40000.0;     /* f16 products past 65504: infinity */
        if (gt == FUSEGEN_DTYPE_F32) {
            g32[j] = (float)x;
            g[j] = g32[j];
        } else if (gt == FUSEGEN_DTYPE_BF16) {
            g16[j] = bf16_of(round_to(x, 8, -126, 3.4e38));
            g[j] = bf16_val(g16[j]);
        } else {
            g16[j] = f16_of(round_to(x, 11, -14, 65504));
            g[j] = f16_val(g16[j]);
        }
    }
    memcpy(before, b, sizeof b);
    CHECK(fusegen_fold_a_norm_gamma(b, bt, layout, n, k, pad ? ld : 0, gt == FUSEGEN_DTYPE_F32 ? (const void *)g32 : g16,
                                    gt) == FUSEGEN_OK);
    int bad = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < ld; c++) {
            const int64_t i = r * ld + c;
            if (c >= cols) {
                bad += b[i] != before[i];
                continue;
            }
            const double w = bt == FUSEGEN_DTYPE_BF16 ? bf16_val(before[i]) : f16_val(before[i]);
            /* the product of two 16-bit values (or f32 gamma: rounded to f32 first) */
            const double prod = (double)(float)(w * g[layout == FUSEGEN_LAYOUT_NK ? c : r]);
            const double want = bt == FUSEGEN_DTYPE_BF16 ? round_to(prod, 8, -126, 3.4e38) : round_to(prod, 11, -14, 65504);
            const double got = bt == FUSEGEN_DTYPE_BF16 ? bf16_val(b[i]) : f16_val(b[i]);
            const int miss = !(got == want || (isinf(got) && isinf(want) && (got > 0) == (want > 0)));
            if (miss && bad == 0)
                fprintf(stderr, "dtype %d layout %d gamma %d: [%lld, %lld] %.9g x %.9g: got %.9g, want %.9g\n", (int)bt,
                        (int)layout, (int)gt, (long long)r, (long long)c, w, g[layout == FUSEGEN_LAYOUT_NK ? c : r],
                        got, want);
            bad += miss;
        }
    CHECK(bad == 0);
}

/* fusegen_pack_glu_weight: every element of gate and up lands where the kernel reads it. */
static void case_glu(fusegen_layout layout, int64_t n, int64_t k)
{
    uint16_t gate[32 * 24], up[32 * 24], packed[2 * 32 * 24];
    for (int64_t i = 0; i < n * k; i++) {
        gate[i] = (uint16_t)(0x1000 + i);
        up[i] = (uint16_t)(0x8000 + i);
    }
    memset(packed, 0xAB, sizeof packed);
    CHECK(fusegen_pack_glu_weight(packed, gate, up, FUSEGEN_DTYPE_BF16, layout, n, k) == FUSEGEN_OK);
    int bad = 0;
    for (int64_t j = 0; j < 2 * n; j++)        /* packed column (GEMM n) j */
        for (int64_t kk = 0; kk < k; kk++) {
            const int64_t out_col = 8 * (j / 16) + j % 8;   /* the output column it feeds */
            const uint16_t *src = j % 16 < 8 ? gate : up;
            const uint16_t want = layout == FUSEGEN_LAYOUT_NK ? src[out_col * k + kk] : src[kk * n + out_col];
            const uint16_t got = layout == FUSEGEN_LAYOUT_NK ? packed[j * k + kk] : packed[kk * 2 * n + j];
            bad += got != want;
        }
    CHECK(bad == 0);
}

int main(void)
{
    case_glu(FUSEGEN_LAYOUT_NK, 32, 24);
    case_glu(FUSEGEN_LAYOUT_KN, 32, 24);
    case_glu(FUSEGEN_LAYOUT_NK, 8, 3);
    uint16_t p16[64] = {0};
    CHECK(fusegen_pack_glu_weight(p16, p16, p16, FUSEGEN_DTYPE_BF16, FUSEGEN_LAYOUT_NK, 12, 2) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(strstr(fusegen_last_detail(), "multiple of 8") != NULL);
    CHECK(fusegen_pack_glu_weight(p16, NULL, p16, FUSEGEN_DTYPE_BF16, FUSEGEN_LAYOUT_NK, 8, 2) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(fusegen_pack_glu_weight(p16, p16, p16, FUSEGEN_DTYPE_F32, FUSEGEN_LAYOUT_NK, 8, 2) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    const fusegen_dtype ws[2] = {FUSEGEN_DTYPE_BF16, FUSEGEN_DTYPE_F16};
    const fusegen_dtype gs[3] = {FUSEGEN_DTYPE_F32, FUSEGEN_DTYPE_BF16, FUSEGEN_DTYPE_F16};
    for (int w = 0; w < 2; w++)
        for (int g = 0; g < 3; g++)
            for (int l = 0; l < 2; l++)
                for (int pad = 0; pad <= 8; pad += 8) case_fold(ws[w], (fusegen_layout)l, gs[g], 48, 64, pad);

    uint16_t b[16] = {0}, gamma[4] = {0};
    CHECK(fusegen_fold_a_norm_gamma(NULL, FUSEGEN_DTYPE_BF16, FUSEGEN_LAYOUT_NK, 4, 4, 0, gamma, FUSEGEN_DTYPE_BF16) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(fusegen_fold_a_norm_gamma(b, FUSEGEN_DTYPE_F32, FUSEGEN_LAYOUT_NK, 4, 4, 0, gamma, FUSEGEN_DTYPE_BF16) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(strstr(fusegen_last_detail(), "b_dtype") != NULL);
    CHECK(fusegen_fold_a_norm_gamma(b, FUSEGEN_DTYPE_BF16, (fusegen_layout)7, 4, 4, 0, gamma, FUSEGEN_DTYPE_BF16) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(fusegen_fold_a_norm_gamma(b, FUSEGEN_DTYPE_BF16, FUSEGEN_LAYOUT_NK, 4, 4, 3, gamma, FUSEGEN_DTYPE_BF16) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(strstr(fusegen_last_detail(), "ldb") != NULL);
    CHECK(fusegen_fold_a_norm_gamma(b, FUSEGEN_DTYPE_BF16, FUSEGEN_LAYOUT_NK, -1, 4, 0, gamma, FUSEGEN_DTYPE_BF16) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(fusegen_fold_a_norm_gamma(b, FUSEGEN_DTYPE_BF16, FUSEGEN_LAYOUT_NK, 4, 4, 0, gamma, (fusegen_dtype)9) ==
          FUSEGEN_ERR_INVALID_ARGUMENT);
    CHECK(fusegen_fold_a_norm_gamma(b, FUSEGEN_DTYPE_BF16, FUSEGEN_LAYOUT_KN, 4, 4, 0, gamma, FUSEGEN_DTYPE_BF16) ==
          FUSEGEN_OK);
    CHECK(strcmp(fusegen_last_detail(), "") == 0);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
