/* pack.c - weights prepared for a kernel once, on the host: a_norm's gamma folded into B
 * (fusegen_fold_a_norm_gamma). No CUDA call. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fusegen.h"
#include "fusegen_internal.h"

static float pack__bf16_to_f32(uint16_t h)
{
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static float pack__f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    float f;
    if (e == 0x1F) {
        const uint32_t u = sign | 0x7F800000u | (m << 13);
        memcpy(&f, &u, sizeof f);
        return f;
    }
    /* normal: (1024 + m) 2^(e - 25); subnormal: m 2^-24; both exact in f32 */
    f = e ? ldexpf((float)(1024u + m), (int)e - 25) : ldexpf((float)m, -24);
    return sign ? -f : f;
}

/* Round to nearest even; NaN stays NaN. */
static uint16_t pack__f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Round to nearest even; past the largest f16 to infinity; NaN stays NaN. */
static uint16_t pack__f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t ax = u & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);   /* from 65520 on */
    if (ax < 0x38800000u) {   /* below 2^-14: a count of 2^-24 steps, rounded (the mode is to-even) */
        float a;
        memcpy(&a, &ax, sizeof a);
        return (uint16_t)(sign | (uint16_t)nearbyintf(a * 16777216.0f));
    }
    uint32_t v = ax - 0x38000000u;   /* exponent rebiased 127 -> 15, 13 mantissa bits dropped */
    v += 0x0FFFu + ((v >> 13) & 1u);
    return (uint16_t)(sign | (v >> 13));
}

static int pack__is_16bit(fusegen_dtype t) { return t == FUSEGEN_DTYPE_F16 || t == FUSEGEN_DTYPE_BF16; }

fusegen_status fusegen_fold_a_norm_gamma(void *b, fusegen_dtype b_dtype, fusegen_layout layout, int64_t n,
                                         int64_t k, int64_t ldb, const void *gamma, fusegen_dtype gamma_dtype)
{
    if (!b || !gamma) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "b and gamma must not be NULL");
    if (!pack__is_16bit(b_dtype))
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "b_dtype must be FUSEGEN_DTYPE_F16 or _BF16");
    if (!pack__is_16bit(gamma_dtype) && gamma_dtype != FUSEGEN_DTYPE_F32)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "gamma_dtype must be F16, BF16 or F32");
    if (layout != FUSEGEN_LAYOUT_NK && layout != FUSEGEN_LAYOUT_KN)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "layout must be FUSEGEN_LAYOUT_NK or _KN");
    if (n < 0 || k < 0) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "n and k must not be negative");
    const int64_t rows = layout == FUSEGEN_LAYOUT_NK ? n : k, cols = layout == FUSEGEN_LAYOUT_NK ? k : n;
    const int64_t ld = ldb ? ldb : cols;
    if (ld < cols) return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "ldb %lld is less than the row length %lld",
                                              (long long)ld, (long long)cols);
    uint16_t *w = b;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const int64_t kk = layout == FUSEGEN_LAYOUT_NK ? c : r;
            const float g = gamma_dtype == FUSEGEN_DTYPE_F32  ? ((const float *)gamma)[kk]
                            : gamma_dtype == FUSEGEN_DTYPE_BF16 ? pack__bf16_to_f32(((const uint16_t *)gamma)[kk])
                                                                : pack__f16_to_f32(((const uint16_t *)gamma)[kk]);
            uint16_t *e = &w[r * ld + c];
            if (b_dtype == FUSEGEN_DTYPE_BF16)
                *e = pack__f32_to_bf16(pack__bf16_to_f32(*e) * g);
            else
                *e = pack__f32_to_f16(pack__f16_to_f32(*e) * g);
        }
    return fusegen__detail_set(FUSEGEN_OK, "%s", "");
}

fusegen_status fusegen_pack_glu_weight(void *packed, const void *gate, const void *up, fusegen_dtype dtype,
                                       fusegen_layout layout, int64_t n, int64_t k)
{
    if (!packed || !gate || !up)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "packed, gate and up must not be NULL");
    if (!pack__is_16bit(dtype))
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "dtype must be FUSEGEN_DTYPE_F16 or _BF16");
    if (layout != FUSEGEN_LAYOUT_NK && layout != FUSEGEN_LAYOUT_KN)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "layout must be FUSEGEN_LAYOUT_NK or _KN");
    if (n < 0 || k < 0 || n % 8 != 0)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT,
                                   "n = %lld must be a multiple of 8 (gate and up interleave in blocks of 8) and "
                                   "k = %lld not negative", (long long)n, (long long)k);
    const uint16_t *g = gate, *u = up;
    uint16_t *out = packed;
    if (layout == FUSEGEN_LAYOUT_NK) {   /* rows: 8 of gate, 8 of up, ... */
        for (int64_t b = 0; b < n / 8; ++b) {
            memcpy(out + (16 * b) * k, g + (8 * b) * k, (size_t)(8 * k) * sizeof *out);
            memcpy(out + (16 * b + 8) * k, u + (8 * b) * k, (size_t)(8 * k) * sizeof *out);
        }
    } else {                             /* each row of k: 8 columns of gate, 8 of up, ... */
        for (int64_t r = 0; r < k; ++r)
            for (int64_t b = 0; b < n / 8; ++b) {
                memcpy(out + r * 2 * n + 16 * b, g + r * n + 8 * b, 8 * sizeof *out);
                memcpy(out + r * 2 * n + 16 * b + 8, u + r * n + 8 * b, 8 * sizeof *out);
            }
    }
    return fusegen__detail_set(FUSEGEN_OK, "%s", "");
}
