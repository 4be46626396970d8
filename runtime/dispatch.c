/* dispatch.c - the dispatch's model: the order of a problem's eligible kernels (fusegen_query,
 * fusegen_select), best first, by these keys, each deciding only between kernels equal in the
 * ones before it:
 *
 *   1. the class: strategy and family (row kernels and kernels without a norm, then split, then
 *      cluster; within a strategy the family of larger family_rank), with amendments that need
 *      the problem: split-K variants go first or last by the device's fill (with a norm at small
 *      M, above the split strategy's kernels), a kernel that fills the SMs in one slice (a plain
 *      GEMM's unsliced tile, a fused split-K one whose slices come to one) joins split K first,
 *      and a row tile drops
 *      below its family's split kernels where it is 64 rows high at long K or leaves most SMs
 *      idle on a long mainloop;
 *   2. a split-K variant against another kernel of its class: fewer slices first (an unsliced
 *      one counting one);
 *   3. the column cost: the busiest SM's share of tile columns (or the padded columns, on an
 *      unknown device) times the tile's rate; where the operands' rows start off a 32-byte
 *      sector (Hopper family), at least the rows its copies fetch;
 *   4. the family of larger family_rank (two split-K variants of different families; other
 *      kernels differ in family only across classes);
 *   5. the generator's rank (tile area, staging, depth: plan.c);
 *   6. chains: a GEMM2 tile that fills the SMs before one that leaves most of them idle;
 *   7. chains: a 128-row ping-pong GEMM2 first where GEMM2's K is short.
 *
 * Every coefficient is in the family's table below; docs/decisions.md ("Dispatch rules") and
 * docs/performance.md give the measurements behind each. */
#include "fusegen_dispatch.h"
#include "fusegen_internal.h"
#include "fusegen_workspace.h"

/* The two families share the column rates (both measured on one H200) and the row-tile
 * demotions (measured with the Hopper family: the same B re-read and idle SMs); the ping-pong
 * rules are the Hopper schedules' own. */
static const fg_dispatch_model fg_dispatch__portable = {
    .family = FUSEGEN_FAMILY_PORTABLE,
    .family_rank = 0,
    .area_large = 128 * 256, .area_medium = 128 * 128, .area_small = 64 * 128,
    .rate_large = 80, .rate_medium = 90, .rate_small = 112, .rate_tiny = 180,
    .narrow_n_max = 512, .narrow_n_rate_large = 91,
    .pingpong_min_tiles = 0, .pingpong_short_k_rate = 0, .pingpong_short_k_max_k = 0,
    .pingpong128_rate = 0, .pingpong128_min_n = 0, .pingpong128_max_n = 0, .pingpong128_max_k = 0,
    .wide_row64_max_k = 1024, .wide_row64_pingpong_max_tile_n = 0, .wide_row64_pingpong_max_k = 0,
    .row_fill_divisor = 2, .row_fill_min_k = 1024,
    .gemm2_pingpong128_max_k = 0, .gemm2_pingpong128_max_waves = 0, .gemm2_fill_divisor = 2,
    .split_k_fill_tile = 128, .split_k_fill_divisor = 2,
    .split_k_min_slices = 2, .split_k_min_k = 1024, .split_k_plain_min_k = 2048, .split_k_partials_per_operand = 2,
    .split_k_norm_max_m = 0,
    .unsliced_fill_max_k = 0, .unsliced_fill_min_area = 0, .unsliced_fill_percent = 0,
    .unsliced_fill_norm_max_waves = 0, .unsliced_fill_norm_min_stages = 0,
    .offsector_row_rate = 0,
};

static const fg_dispatch_model fg_dispatch__hopper = {
    .family = FUSEGEN_FAMILY_HOPPER,
    .family_rank = 1,
    .area_large = 128 * 256, .area_medium = 128 * 128, .area_small = 64 * 128,
    .rate_large = 80, .rate_medium = 90, .rate_small = 112, .rate_tiny = 180,
    .narrow_n_max = 512, .narrow_n_rate_large = 91,
    .pingpong_min_tiles = 3, .pingpong_short_k_rate = 78, .pingpong_short_k_max_k = 1024,
    .pingpong128_rate = 77, .pingpong128_min_n = 641, .pingpong128_max_n = 1280, .pingpong128_max_k = 1024,
    .wide_row64_max_k = 1024, .wide_row64_pingpong_max_tile_n = 256, .wide_row64_pingpong_max_k = 2048,
    .row_fill_divisor = 2, .row_fill_min_k = 1024,
    .gemm2_pingpong128_max_k = 3072, .gemm2_pingpong128_max_waves = 16, .gemm2_fill_divisor = 2,
    .split_k_fill_tile = 128, .split_k_fill_divisor = 2,
    .split_k_min_slices = 2, .split_k_min_k = 1024, .split_k_plain_min_k = 2048, .split_k_partials_per_operand = 2,
    .split_k_norm_max_m = 512,
    .unsliced_fill_max_k = 10239, .unsliced_fill_min_area = 64 * 64, .unsliced_fill_percent = 67,
    .unsliced_fill_norm_max_waves = 1, .unsliced_fill_norm_min_stages = 8,
    .offsector_row_rate = 9900,
};

/* Class of a split-K variant: before or after every other class, or (with a norm, at small M)
 * just above the split strategy's kernels of both families and below row kernels. */
enum { FG_DISPATCH__SPLIT_K_FIRST = 1000, FG_DISPATCH__SPLIT_K_LAST = -1, FG_DISPATCH__SPLIT_K_NORM = 8 };

const fg_dispatch_model *fg_dispatch_model_of(const fusegen_kernel *k)
{
    return k->family == FUSEGEN_FAMILY_HOPPER ? &fg_dispatch__hopper : &fg_dispatch__portable;
}

int fg_dispatch_k_slices(const fusegen_kernel *k, const fusegen_problem *p, int sms)
{
    if (sms <= 0)
        return FUSEGEN_SPLIT_K_MAX_SLICES;
    return fusegen_k_slices(p->m, p->n, p->k, k->tile_m, k->tile_n, k->tile_k, sms);
}

int fg_dispatch_k_slices2(const fusegen_kernel *k, const fusegen_problem *p, int sms)
{
    if (sms <= 0)
        return FUSEGEN_SPLIT_K_MAX_SLICES;
    return fusegen_k_slices(p->m, p->n2, p->n, k->tile2_m, k->tile2_n, k->tile2_k, sms);
}

static int64_t fg_dispatch__tiles(int64_t m, int64_t n, int tile_m, int tile_n)
{
    int64_t tm = tile_m > 0 ? tile_m : 1, tn = tile_n > 0 ? tile_n : 1;
    return ((m + tm - 1) / tm) * ((n + tn - 1) / tn);
}

/* Whether the problem, in split_k_fill_tile-square tiles, fills at most 1/split_k_fill_divisor of
 * the SMs: where split K may go first. */
static int fg_dispatch__split_k_fills(const fg_dispatch_model *md, const fusegen_problem *p, int sms)
{
    return md->split_k_fill_divisor * fg_dispatch__tiles(p->m, p->n, md->split_k_fill_tile, md->split_k_fill_tile) <=
           sms;
}

/* How full, in percent, the waves of `tiles` tiles keep the SMs (tiles / (waves x SMs)). */
static int64_t fg_dispatch__wave_fill_percent(int64_t tiles, int sms)
{
    int64_t waves = (tiles + sms - 1) / sms;
    return waves > 0 ? 100 * tiles / (waves * sms) : 0;
}

/* Whether k runs p in one slice on tiles that fill the SMs, where split K may go first: a plain
 * kernel unsliced, or a split-K kernel with a norm whose slices come to one (its reduce kernel
 * applies the whole-row epilogue), in at most unsliced_fill_norm_max_waves waves. */
static int fg_dispatch__unsliced_fills(const fusegen_kernel *k, const fg_dispatch_model *md, const fusegen_problem *p,
                                       int sms)
{
    int64_t tiles;
    if (md->unsliced_fill_max_k <= 0 || sms <= 0 || p->k > md->unsliced_fill_max_k ||
        (int64_t)k->tile_m * k->tile_n < md->unsliced_fill_min_area || !fg_dispatch__split_k_fills(md, p, sms))
        return 0;
    tiles = fg_dispatch__tiles(p->m, p->n, k->tile_m, k->tile_n);
    if (fg_dispatch__wave_fill_percent(tiles, sms) <= md->unsliced_fill_percent)
        return 0;
    if (k->norm == FUSEGEN_NORM_NONE)
        return !k->split_k;
    return k->split_k && k->stages >= md->unsliced_fill_norm_min_stages && fg_dispatch_k_slices(k, p, sms) == 1 &&
           tiles <= (int64_t)md->unsliced_fill_norm_max_waves * sms;
}

static int fg_dispatch__strategy_rank(fusegen_strategy s)
{
    return s == FUSEGEN_STRATEGY_CLUSTER ? 0 : s == FUSEGEN_STRATEGY_SPLIT ? 1 : 2;
}

/* Key 1. A kernel's class is 2 x (strategy rank x 2 + family rank) + 1: doubled, so that the
 * wide-row demotion fits just below the family's split class (2 x its split class). */
static int fg_dispatch__class(const fusegen_kernel *k, const fg_dispatch_model *md, const fusegen_problem *p, int sms)
{
    int base = 2 * fg_dispatch__strategy_rank(k->strategy) + md->family_rank;
    if (k->split_k) {
        int64_t slices;
        if (sms <= 0)
            return FG_DISPATCH__SPLIT_K_LAST;
        slices = fg_dispatch_k_slices(k, p, sms);
        if (fg_dispatch__unsliced_fills(k, md, p, sms))
            return FG_DISPATCH__SPLIT_K_FIRST;
        /* 8 S M N <= ratio x 2 (M + N) K, in doubles: M N S reaches 2^50 within the limits */
        if (fg_dispatch__split_k_fills(md, p, sms) && slices >= md->split_k_min_slices &&
            p->k >= (k->norm == FUSEGEN_NORM_NONE ? md->split_k_plain_min_k : md->split_k_min_k) &&
            4.0 * (double)slices * (double)p->m * (double)p->n <=
                (double)md->split_k_partials_per_operand * (double)(p->m + p->n) * (double)p->k)
            return FG_DISPATCH__SPLIT_K_FIRST;
        return k->norm != FUSEGEN_NORM_NONE && p->m <= md->split_k_norm_max_m ? FG_DISPATCH__SPLIT_K_NORM
                                                                              : FG_DISPATCH__SPLIT_K_LAST;
    }
    if (fg_dispatch__unsliced_fills(k, md, p, sms))
        return FG_DISPATCH__SPLIT_K_FIRST;
    if (md->wide_row64_max_k > 0 && k->strategy == FUSEGEN_STRATEGY_ROW && k->tile_m == 64 &&
        p->k > (k->schedule != FUSEGEN_SCHEDULE_PINGPONG || k->tile_n > md->wide_row64_pingpong_max_tile_n
                    ? md->wide_row64_max_k
                    : md->wide_row64_pingpong_max_k))
        return 2 * (2 * fg_dispatch__strategy_rank(FUSEGEN_STRATEGY_SPLIT) + md->family_rank);
    if (md->row_fill_divisor > 0 && sms > 0 && k->strategy == FUSEGEN_STRATEGY_ROW && p->k > md->row_fill_min_k &&
        md->row_fill_divisor * fg_dispatch__tiles(p->m, p->n, k->tile_m, k->tile_n) <= sms)
        return 2 * (2 * fg_dispatch__strategy_rank(FUSEGEN_STRATEGY_SPLIT) + md->family_rank);
    return 2 * base + 1;
}

/* The tile's rate: by area (a large tile's, on narrow rows, a little behind a medium one's,
 * except a row kernel's, whose tile holds the row), or a ping-pong rule's. */
static long long fg_dispatch__rate(const fusegen_kernel *k, const fg_dispatch_model *md, const fusegen_problem *p,
                                   int sms)
{
    long long area = (long long)k->tile_m * k->tile_n;
    int narrow = p->n <= md->narrow_n_max && k->strategy != FUSEGEN_STRATEGY_ROW;
    long long rate = area >= md->area_large    ? (narrow ? md->narrow_n_rate_large : md->rate_large)
                     : area >= md->area_medium ? md->rate_medium
                     : area >= md->area_small  ? md->rate_small
                                               : md->rate_tiny;
    int64_t busiest_sm_tiles = sms > 0 ? (fg_dispatch__tiles(p->m, p->n, k->tile_m, k->tile_n) + sms - 1) / sms : 0;
    int pingpong = k->schedule == FUSEGEN_SCHEDULE_PINGPONG &&
                   (sms <= 0 || k->chain || busiest_sm_tiles >= md->pingpong_min_tiles);
    if (pingpong && md->pingpong_short_k_rate > 0 &&
        (k->strategy == FUSEGEN_STRATEGY_SPLIT || k->strategy == FUSEGEN_STRATEGY_ROW) &&
        p->k <= md->pingpong_short_k_max_k)
        rate = rate * md->pingpong_short_k_rate / md->rate_medium;
    if (pingpong && md->pingpong128_rate > 0 && k->tile_m == 128 && k->strategy == FUSEGEN_STRATEGY_SPLIT &&
        p->n >= md->pingpong128_min_n && p->n <= md->pingpong128_max_n && p->k <= md->pingpong128_max_k)
        rate = md->pingpong128_rate;
    return rate;
}

/* Whether A's or B's rows start 16 bytes off a 32-byte sector (their strides in bytes are not
 * multiples of 32): TMA then fetches each row at about twice the requests (decisions.md,
 * "Unaligned rows"). */
static int fg_dispatch__rows_off_sector(const fusegen_kernel *k, const fusegen_problem *p)
{
    int64_t lda = p->lda > 0 ? p->lda : p->k;
    int64_t ldb = p->ldb > 0 ? p->ldb : p->b_layout == FUSEGEN_LAYOUT_NK ? p->k : p->n;
    int64_t bytes = (int64_t)fusegen__dtype_bytes(k->a);
    return (lda * bytes) % 32 != 0 || (ldb * bytes) % 32 != 0;
}

/* Key 3, smaller first. On a known device the busiest SM's share: waves of tiles
 * (ceil(tiles / SMs)) x a tile's columns x the rate; past a few waves this orders tiles as the
 * padded columns do, below one wave it prefers the tile that spreads over more SMs. On an
 * unknown device the padded columns x the rate. */
static long long fg_dispatch__column_cost(const fusegen_kernel *k, const fg_dispatch_model *md,
                                          const fusegen_problem *p, int sms)
{
    long long tile_n = k->tile_n > 0 ? k->tile_n : 1, tile_m = k->tile_m > 0 ? k->tile_m : 1;
    long long rate = fg_dispatch__rate(k, md, p, sms);
    if (sms > 0) {
        long long waves = (fg_dispatch__tiles(p->m, p->n, (int)tile_m, (int)tile_n) + sms - 1) / sms;
        long long cost = waves * tile_m * tile_n * rate;
        if (md->offsector_row_rate > 0 && fg_dispatch__rows_off_sector(k, p)) {
            long long rows = waves * (tile_m + tile_n) * md->offsector_row_rate;
            cost = rows > cost ? rows : cost;
        }
        return cost;
    }
    return (p->n + tile_n - 1) / tile_n * tile_n * rate;
}

/* Key 6: 1 for a chain whose GEMM2's tiles fill more than 1/gemm2_fill_divisor of the SMs (or on
 * an unknown device, or without the rule). */
static int fg_dispatch__gemm2_fills(const fusegen_kernel *k, const fg_dispatch_model *md, const fusegen_problem *p,
                                    int sms)
{
    if (!k->chain || md->gemm2_fill_divisor <= 0 || sms <= 0)
        return 1;
    return md->gemm2_fill_divisor * fg_dispatch__tiles(p->m, p->n2, k->tile2_m, k->tile2_n) > sms;
}

/* Key 7: 1 for a chain whose GEMM2 runs a 128-row ping-pong tile while GEMM2's K is short. */
static int fg_dispatch__gemm2_pingpong_first(const fusegen_kernel *k, const fg_dispatch_model *md,
                                             const fusegen_problem *p, int sms)
{
    return k->chain && k->schedule2 == FUSEGEN_SCHEDULE_PINGPONG && k->tile2_m == 128 &&
           p->n <= md->gemm2_pingpong128_max_k &&
           (sms <= 0 || md->gemm2_pingpong128_max_waves <= 0 ||
            fg_dispatch__tiles(p->m, p->n2, k->tile2_m, k->tile2_n) <= (int64_t)md->gemm2_pingpong128_max_waves * sms);
}

int fg_dispatch_better(const fusegen_kernel *a, const fusegen_kernel *b, const fusegen_problem *p, int sms)
{
    const fg_dispatch_model *ma = fg_dispatch_model_of(a), *mb = fg_dispatch_model_of(b);
    int class_a = fg_dispatch__class(a, ma, p, sms), class_b = fg_dispatch__class(b, mb, p, sms);
    long long ca, cb;
    int fills_a, fills_b;
    if (class_a != class_b)
        return class_a > class_b;
    if (a->split_k || b->split_k) {
        /* split K's first class also holds plain unsliced tiles that fill the SMs: one slice */
        int sa = a->split_k ? fg_dispatch_k_slices(a, p, sms) : 1, sb = b->split_k ? fg_dispatch_k_slices(b, p, sms) : 1;
        if (sa != sb)
            return sa < sb;   /* the fewer slices, the fewer partial sums written and read */
    }
    ca = fg_dispatch__column_cost(a, ma, p, sms);
    cb = fg_dispatch__column_cost(b, mb, p, sms);
    if (ca != cb)
        return ca < cb;
    /* only split-K variants get here with two families (the class holds the family otherwise) */
    if (ma->family_rank != mb->family_rank)
        return ma->family_rank > mb->family_rank;
    if (a->rank != b->rank)
        return a->rank > b->rank;
    fills_a = fg_dispatch__gemm2_fills(a, ma, p, sms);
    fills_b = fg_dispatch__gemm2_fills(b, mb, p, sms);
    if (fills_a != fills_b)
        return fills_a > fills_b;
    return fg_dispatch__gemm2_pingpong_first(a, ma, p, sms) > fg_dispatch__gemm2_pingpong_first(b, mb, p, sms);
}
