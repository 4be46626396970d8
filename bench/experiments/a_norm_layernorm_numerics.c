/* a_norm_layernorm_numerics.c - why the norm on A is RMSNorm only: the folded LayerNorm form
 *   y = rstd (x . W' - mean colsum(W')),  W' = bf16(W * gamma)
 * computed as a GEMM would (bf16 x and W', f32 accumulation, the row's sum and sum of squares
 * in one f32 pass as the mainloop sees A), against float64 LayerNorm(x) * gamma . W, for rows of
 * mean/std from 0 to 300; and the RMSNorm form beside. Prints the relative L2 error a ratio.
 *   cc -O2 -o /tmp/n a_norm_layernorm_numerics.c -lm && /tmp/n */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { K = 4096, N = 64, ROWS = 16 };

static float bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t g_s = 12345u;
static double unif(void)   /* [0, 1) */
{
    g_s = g_s * 1664525u + 1013904223u;
    return (g_s >> 8) / 16777216.0;
}

static float W[N][K], Wg[N][K], gam[K];

int main(void)
{
    for (int k = 0; k < K; k++) gam[k] = bf16((float)(0.5 + unif()));
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++) {
            W[n][k] = bf16((float)((2 * unif() - 1) / sqrt((double)K)));
            Wg[n][k] = bf16(W[n][k] * gam[k]);
        }
    const double ratios[] = {0, 1, 10, 30, 100, 300};   /* (at 1000 a bf16 row is one value) */
    printf("mean/std  layernorm-folded rel L2   (exact statistics)   rmsnorm rel L2\n");
    for (size_t ri = 0; ri < sizeof ratios / sizeof ratios[0]; ri++) {
        double e_ln = 0, r_ln = 0, e_rms = 0, r_rms = 0, e_lx = 0;
        for (int row = 0; row < ROWS; row++) {
            static float x[K];
            for (int k = 0; k < K; k++) x[k] = bf16((float)(ratios[ri] + sqrt(3.0) * (2 * unif() - 1)));
            /* float64 statistics of the bf16 row */
            double mean = 0, var = 0, ms = 0;
            for (int k = 0; k < K; k++) mean += x[k], ms += (double)x[k] * x[k];
            mean /= K;
            ms /= K;
            for (int k = 0; k < K; k++) var += (x[k] - mean) * (x[k] - mean);
            var /= K;
            /* one f32 pass, as the mainloop would: sum and sum of squares */
            float s = 0, sq = 0;
            for (int k = 0; k < K; k++) s += x[k], sq = fmaf(x[k], x[k], sq);
            const float meanf = s / K, varf = fmaxf(sq / K - meanf * meanf, 0.0f);
            const float rstd_ln = 1.0f / sqrtf(varf + 1e-5f), rstd_rms = 1.0f / sqrtf(sq / K + 1e-5f);
            for (int n = 0; n < N; n++) {
                double ref_ln = 0, ref_rms = 0;
                float acc = 0, colsum = 0;
                for (int k = 0; k < K; k++) {
                    ref_ln += (x[k] - mean) / sqrt(var + 1e-5) * gam[k] * W[n][k];
                    ref_rms += x[k] / sqrt(ms + 1e-6) * gam[k] * W[n][k];
                    acc = fmaf(x[k], Wg[n][k], acc);
                    colsum += Wg[n][k];
                }
                const double y_ln = rstd_ln * (acc - meanf * colsum), y_rms = rstd_rms * acc;
                /* the GEMM's cancellation alone: statistics exact (a second pass), rstd and mean f32 */
                const double y_lx = (float)(1.0 / sqrt(var + 1e-5)) * (acc - (float)mean * colsum);
                e_lx += (y_lx - ref_ln) * (y_lx - ref_ln);
                e_ln += (y_ln - ref_ln) * (y_ln - ref_ln), r_ln += ref_ln * ref_ln;
                e_rms += (y_rms - ref_rms) * (y_rms - ref_rms), r_rms += ref_rms * ref_rms;
            }
        }
        printf("%8g  %24.3e   %18.3e   %14.3e\n", ratios[ri], sqrt(e_ln / r_ln), sqrt(e_lx / r_ln),
               sqrt(e_rms / r_rms));
    }
    return 0;
}
