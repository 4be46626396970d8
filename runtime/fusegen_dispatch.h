/* fusegen_dispatch.h - the dispatch's model (runtime/dispatch.c): the order in which fusegen_query
 * lists the eligible kernels of a problem, from the kernels' fields (strategy, family, schedule,
 * split K, tiles, rank), the problem and the device's SM count. Its coefficients are one const
 * table per arch family in dispatch.c; the measurements behind them are in docs/decisions.md
 * ("Dispatch rules") and docs/performance.md. Internal: not installed. */
#ifndef FUSEGEN_DISPATCH_H
#define FUSEGEN_DISPATCH_H

#include "fusegen.h"

/* The coefficients of one arch family. Rates are relative times per output column (smaller is
 * faster); a rate or limit of 0 turns its rule off for the family. */
typedef struct fg_dispatch_model {
    fusegen_family family;
    int family_rank;                    /* between kernels of one strategy: larger first */
    /* the column rate by tile area (tile_m x tile_n) */
    int64_t area_large, area_medium;    /* area >= area_large: rate_large; >= area_medium: rate_medium; */
    int64_t area_small;                 /* >= area_small: rate_small; below: rate_tiny */
    int rate_large, rate_medium, rate_small, rate_tiny;
    /* rows of at most narrow_n_max columns (two 256-column tiles or fewer): a tile of area_large
     * or more runs at narrow_n_rate_large there, no faster than a medium one (not a row kernel:
     * its tile holds the row, so the rule would always apply; not measured) */
    int64_t narrow_n_max;
    int narrow_n_rate_large;
    /* the ping-pong schedule, where the busiest SM gets at least pingpong_min_tiles tiles (its
     * gain is one warpgroup's epilogue under the other's mainloop: nothing to overlap with one
     * tile, little with two; the rules below hold everywhere on an unknown device, and for a
     * chain's GEMM1, whose 128-row ping-pong tile measured best at one to three waves): a row or
     * split kernel at K <= short_k_max_k runs at pingpong_short_k_rate where its area's rate is
     * rate_medium, in that proportion for other areas ... */
    int pingpong_min_tiles;
    int pingpong_short_k_rate;
    int64_t pingpong_short_k_max_k;
    /* ... and a 128-row split tile for pingpong128_min_n <= N <= pingpong128_max_n, K <= max_k */
    int pingpong128_rate;
    int64_t pingpong128_min_n, pingpong128_max_n, pingpong128_max_k;
    /* a 64-row row tile as wide as a row (cooperative, or ping-pong wider than
     * wide_row64_pingpong_max_tile_n) ranks below its family's split kernels past
     * wide_row64_max_k; a narrower ping-pong one past wide_row64_pingpong_max_k */
    int64_t wide_row64_max_k;
    int wide_row64_pingpong_max_tile_n;
    int64_t wide_row64_pingpong_max_k;
    /* any row tile ranks below its family's split kernels where its tiles would fill at most
     * 1/row_fill_divisor of the SMs and K > row_fill_min_k (a mainloop long enough that the
     * idle SMs cost more than the normalize pass the row tile saves) */
    int row_fill_divisor;
    int64_t row_fill_min_k;
    /* chains: a 128-row ping-pong GEMM2 first while GEMM2's K (the chain's N) is at most
     * gemm2_pingpong128_max_k and (on a known device) its M x N2 tiles make at most
     * gemm2_pingpong128_max_waves waves (0: any number): over many waves the wider tile's rate
     * wins */
    int64_t gemm2_pingpong128_max_k;
    int gemm2_pingpong128_max_waves;
    /* chains of one GEMM1 tile: a GEMM2 tile whose M x N2 tiles fill at most 1/gemm2_fill_divisor
     * of the SMs (a decode step's few rows on a wide tile) after one that fills more (0: no rule) */
    int gemm2_fill_divisor;
    /* split K: first where the problem in split_k_fill_tile-square tiles would fill at most
     * 1/split_k_fill_divisor of the SMs (an unsliced kernel of an efficient tile leaves SMs
     * idle), it runs at least split_k_min_slices slices (fusegen_k_slices), K is at least
     * split_k_min_k (below, the reduce kernel's launch outweighs the spread of a short
     * mainloop), and its partial sums, written and read as f32 (8 S M N bytes), cost at most
     * split_k_partials_per_operand times the operands' bytes (2 (M + N) K); last elsewhere */
    int split_k_fill_tile;
    int split_k_fill_divisor;
    int split_k_min_slices;
    int64_t split_k_min_k;
    int64_t split_k_plain_min_k;        /* ... split_k_min_k for a kernel without a norm */
    int split_k_partials_per_operand;
    /* ... and elsewhere, a split-K variant with a norm ranks above the split strategy's kernels
     * (below row kernels) while M <= split_k_norm_max_m: its reduce kernel normalizes a row a
     * block, where the split strategy's normalize kernel, a warp a row over few rows, is
     * latency-bound */
    int64_t split_k_norm_max_m;
    /* ... and where split K may go first, a kernel that runs in one slice on tiles of at least
     * unsliced_fill_min_area whose waves keep more than unsliced_fill_percent % of the SMs busy
     * goes before it (fewer slices), for K <= unsliced_fill_max_k (0: no such rule): a plain
     * GEMM's unsliced tile, or a split-K kernel with a norm of at least
     * unsliced_fill_norm_min_stages stages whose slices come to one within
     * unsliced_fill_norm_max_waves waves. A deep tile that fills the SMs keeps up with split K
     * without its partial sums, unless K is long */
    int64_t unsliced_fill_max_k;
    int unsliced_fill_min_area, unsliced_fill_percent, unsliced_fill_norm_max_waves, unsliced_fill_norm_min_stages;
    /* where A's or B's rows start 16 bytes off a 32-byte sector (K or a leading dimension an odd
     * multiple of 8 16-bit elements), the family's copies are bound by the rows they fetch: a
     * kernel's column cost is at least the busiest SM's waves x (tile_m + tile_n) x this rate,
     * in the units of the area rates (0: no such bound) */
    int offsector_row_rate;
} fg_dispatch_model;

/* The model of a kernel's family (the portable one for an unknown value). */
const fg_dispatch_model *fg_dispatch_model_of(const fusegen_kernel *k);

/* Slices of K a split-K kernel runs p with on a device of sms SMs (what its launcher computes);
 * FUSEGEN_SPLIT_K_MAX_SLICES, an upper bound, when sms is 0 (unknown). */
int fg_dispatch_k_slices(const fusegen_kernel *k, const fusegen_problem *p, int sms);
/* ... and a split-K chain's GEMM2's (M x N2, K = N). */
int fg_dispatch_k_slices2(const fusegen_kernel *k, const fusegen_problem *p, int sms);

/* Whether a goes before b for problem p on a device of sms SMs (0: unknown, a size-only order).
 * Both are eligible for p. Kernels that the model ranks equal keep table order. */
int fg_dispatch_better(const fusegen_kernel *a, const fusegen_kernel *b, const fusegen_problem *p, int sms);

#endif
