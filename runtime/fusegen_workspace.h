/* fusegen_workspace.h - the layout of a kernel's workspace, shared by the runtime (which sizes
 * and checks it) and the generated launchers (which carve it). Offsets are 256-byte aligned.
 *   prenorm  f32 [M, N]                 split strategy: GEMM1 values before the norm (bf16
 *                                        outputs keep bf16 in its first half: deviations from
 *                                        the tile mean for LayerNorm, the values for RMSNorm)
 *   stats    f32x2 [M, ceil(N/tile_n)]  split strategy: per-row partial (mean, M2) of each N tile
 *   hidden   out dtype [M, ld]          chains: GEMM1's result, GEMM2's A operand; its rows
 *                                        fusegen_ws_hidden_ld(N) elements apart
 *   partials f32 [S, M, N]              split-K variants: the K slices' sums (S from
 *                                        fusegen_k_slices), reduced by the epilogue kernel
 *                                        (a split-K chain: hidden, then partials for each GEMM
 *                                        in turn, fusegen_ws_layout_for_chain_split_k) */
#ifndef FUSEGEN_WORKSPACE_H
#define FUSEGEN_WORKSPACE_H
#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "fusegen_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The current device's compute capability x10 and multiprocessor count, read once per device
 * (the runtime's cache): the runtime's workspace size and dispatch and the launchers of split-K
 * variants (generated and JIT) all take the SM count from here, so they agree on the slices. */
cudaError_t fusegen__device_info(int *sm, int *sms);

#ifdef __cplusplus
}
#endif

typedef struct fusegen_ws_layout {
    size_t prenorm, stats, hidden, partials;   /* byte offsets (meaningful when the part exists) */
    size_t total;                    /* bytes needed; 0 when the kernel needs none */
} fusegen_ws_layout;

/* x rounded up to FUSEGEN_REG_WORKSPACE_ALIGN (256, a power of two) */
static inline size_t fusegen_ws_align(size_t x)
{
    return (x + (FUSEGEN_REG_WORKSPACE_ALIGN - 1u)) & ~(size_t)(FUSEGEN_REG_WORKSPACE_ALIGN - 1u);
}

/* A chain's hidden rows start FUSEGEN_WS_HIDDEN_ROW_ELEMS elements apart at least: 128 bytes
 * for 16-bit values, so that GEMM2's copies of its A operand start every row on a 128-byte
 * boundary whatever N is (TMA fetches rows that start off a 32-byte sector at about half its
 * rate: docs/decisions.md, "Unaligned rows"). */
#define FUSEGEN_WS_HIDDEN_ROW_ELEMS 64
static inline int64_t fusegen_ws_hidden_ld(int64_t n)
{
    return (n + FUSEGEN_WS_HIDDEN_ROW_ELEMS - 1) / FUSEGEN_WS_HIDDEN_ROW_ELEMS * FUSEGEN_WS_HIDDEN_ROW_ELEMS;
}

/* Caller guarantees m, n, tile_n > 0 and that the sizes do not overflow (the runtime checks
 * m * fusegen_ws_hidden_ld(n) against its limits before calling). */
static inline fusegen_ws_layout fusegen_ws_layout_for(int split, int64_t tile_n, int chain,
                                                      size_t out_elem_bytes, int64_t m, int64_t n)
{
    fusegen_ws_layout l = {0, 0, 0, 0, 0};
    size_t at = 0;
    if (split) {
        int64_t tiles_n = (n + tile_n - 1) / tile_n;
        l.prenorm = at; at = fusegen_ws_align(at + (size_t)m * (size_t)n * 4u);
        l.stats = at;   at = fusegen_ws_align(at + (size_t)m * (size_t)tiles_n * 8u);
    }
    if (chain) {
        l.hidden = at;  at = fusegen_ws_align(at + (size_t)m * (size_t)fusegen_ws_hidden_ld(n) * out_elem_bytes);
    }
    l.total = at;
    return l;
}

/* Split-K variants: the slices of K their partial kernel runs, from the problem and the device's
 * multiprocessor count alone (so the runtime's workspace size and the launcher agree, and a
 * problem gets the same slices, so the same bits, every run). Enough slices that tiles x slices
 * fills the device once, none shorter than FUSEGEN_SPLIT_K_MIN_K_TILES k tiles (a shorter one
 * spends more of its time filling its pipeline than streaming), at most
 * FUSEGEN_SPLIT_K_MAX_SLICES (each adds M x N x 4 bytes written and read). */
#define FUSEGEN_SPLIT_K_MIN_K_TILES 4
#define FUSEGEN_SPLIT_K_MAX_SLICES 16
static inline int fusegen_k_slices(int64_t m, int64_t n, int64_t k, int tile_m, int tile_n, int tile_k, int sms)
{
    int64_t tiles = ((m + tile_m - 1) / tile_m) * ((n + tile_n - 1) / tile_n);
    int64_t k_tiles = (k + tile_k - 1) / tile_k;
    int64_t s = tiles > 0 ? sms / tiles : 1;
    if (s > k_tiles / FUSEGEN_SPLIT_K_MIN_K_TILES) s = k_tiles / FUSEGEN_SPLIT_K_MIN_K_TILES;
    if (s > FUSEGEN_SPLIT_K_MAX_SLICES) s = FUSEGEN_SPLIT_K_MAX_SLICES;
    return s < 1 ? 1 : (int)s;
}

/* The split-K reduce kernel's block size: `threads` without a norm; with one (n: the columns a
 * block keeps, fusegen_split_k_reduce_columns), a lane for every 4 columns, from `threads` up to
 * `row_threads`, so that all the block's loads are in flight at once (a decode step's reduce is
 * bound by memory latency, not by bytes). */
static inline int fusegen_split_k_reduce_threads(int64_t n, int row_in_smem, int threads, int row_threads)
{
    if (!row_in_smem) return threads;
    int64_t t = (n + 127) / 128 * 32;
    if (t < threads) t = threads;
    if (t > row_threads) t = row_threads;
    return (int)t;
}

/* The split-K reduce kernel's blocks a row along its grid's y: one with a norm (a row's CTAs,
 * fusegen_split_k_reduce_ranks, lie along x), else one for each `threads` x 4 columns, so that
 * a problem with few rows still spreads over the SMs. */
static inline int fusegen_split_k_reduce_blocks_y(int64_t n, int row_in_smem, int threads)
{
    if (row_in_smem) return 1;
    int64_t per_block = (int64_t)threads * 4;
    int64_t y = (n + per_block - 1) / per_block;
    return y < 1 ? 1 : (int)y;
}

/* With a norm, on sm_90 and later (the Hopper family's reduce): the CTAs a row is split over,
 * one cluster a row, the CTAs adding the norm's sums through distributed shared memory, so that
 * a decode step's few long rows still spread over the SMs. Only rows longer than
 * FUSEGEN_SPLIT_K_REDUCE_CLUSTER_MIN_N (shorter ones, a lane for every 8 columns at most, lose
 * more to the cluster's barriers than they gain); then the largest power of two up to the
 * portable cluster size whose rows x CTAs fit in one wave of `sms`, each CTA keeping at least
 * FUSEGEN_SPLIT_K_REDUCE_MIN_COLUMNS columns. */
#define FUSEGEN_SPLIT_K_REDUCE_CLUSTER_MIN_N 4097
#define FUSEGEN_SPLIT_K_REDUCE_MIN_COLUMNS 1024
static inline int fusegen_split_k_reduce_ranks(int64_t m, int64_t n, int sms)
{
    int r = 1;
    while (n >= FUSEGEN_SPLIT_K_REDUCE_CLUSTER_MIN_N && r < FUSEGEN_REG_PORTABLE_CLUSTER && m * 2 * r <= (int64_t)sms &&
           n / (2 * r) >= FUSEGEN_SPLIT_K_REDUCE_MIN_COLUMNS)
        r *= 2;
    return r;
}

/* The columns each of a row's `ranks` CTAs keeps (whole groups of four, in rank order; the last
 * CTA's share may be shorter), as the reduce kernel splits them. */
static inline int64_t fusegen_split_k_reduce_columns(int64_t n, int ranks)
{
    return (n / 4 + ranks - 1) / ranks * 4;
}

/* A split-K chain: GEMM1's result (the out dtype), then the partial sums of GEMM1 and, once its
 * reduce kernel has read them, of GEMM2 (one region, the larger of the two). Caller guarantees
 * the sizes are positive and fit in size_t. */
typedef struct fusegen_ws_chain_split_k {
    size_t hidden, partials, total;   /* byte offsets; bytes needed */
} fusegen_ws_chain_split_k;

static inline fusegen_ws_chain_split_k fusegen_ws_layout_for_chain_split_k(int slices1, int slices2, int64_t m, int64_t n,
                                                                           int64_t n2, size_t out_elem_bytes)
{
    fusegen_ws_chain_split_k c;
    size_t p1 = (size_t)slices1 * (size_t)m * (size_t)n * 4u, p2 = (size_t)slices2 * (size_t)m * (size_t)n2 * 4u;
    c.hidden = 0;
    c.partials = fusegen_ws_align((size_t)m * (size_t)fusegen_ws_hidden_ld(n) * out_elem_bytes);
    c.total = c.partials + fusegen_ws_align(p1 > p2 ? p1 : p2);
    return c;
}

/* Caller guarantees slices, m, n > 0 and that slices x m x n x 4 fits in size_t. */
static inline fusegen_ws_layout fusegen_ws_layout_for_split_k(int slices, int64_t m, int64_t n)
{
    fusegen_ws_layout l = {0, 0, 0, 0, 0};
    l.total = fusegen_ws_align((size_t)slices * (size_t)m * (size_t)n * 4u);
    return l;
}

#endif
