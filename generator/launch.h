/* launch.h - how a planned GEMM is launched: the numbers the ahead-of-time launchers take from
 * the family templates (fusegen_sm80::launch_gemm, fusegen_sm90::start_gemm) as compile-time
 * constants (kTileM, kTileN, kThreads, kSmemBytes, kStrategy, kTmaBoxA/B, kDtAB), computed here
 * in C from the plan, for launchers that do not see the C++ types (the runtime's JIT).
 *
 * fg_launch_append_checks writes C++ static_asserts that compare each record with the family
 * template's constants; appended to the kernel source before it is compiled, they turn any
 * drift between this file and templates/common/ into a compile error instead of a bad launch. */
#ifndef FUSEGEN_LAUNCH_H
#define FUSEGEN_LAUNCH_H
#include "buf.h"
#include "plan.h"

/* Threads of a split strategy's normalize kernel (fusegen_sm80::NORMALIZE_THREADS), one warp
 * per row. */
#define FG_LAUNCH_NORMALIZE_THREADS FUSEGEN_REG_NORMALIZE_THREADS
/* Threads of a split-K variant's reduce kernel (fusegen_sm80::SPLIT_K_REDUCE_THREADS), a block
 * per row. */
#define FG_LAUNCH_SPLIT_K_REDUCE_THREADS FUSEGEN_REG_SPLIT_K_REDUCE_THREADS
/* ... with a norm, at most (fusegen_sm80::SPLIT_K_REDUCE_ROW_THREADS): fusegen_split_k_reduce_threads */
#define FG_LAUNCH_SPLIT_K_REDUCE_ROW_THREADS FUSEGEN_REG_SPLIT_K_REDUCE_ROW_THREADS

typedef struct fg_launch_gemm {
    fg_family family;
    int tile_m, tile_n;       /* grid: ceil(N / tile_n) x ceil(M / tile_m) */
    int threads;              /* block size */
    int smem_bytes;           /* dynamic shared memory, exactly the family's kSmemBytes */
    int split;                /* a normalize kernel follows (split strategy) */
    int split_k;              /* split K: a partial kernel on a grid of z = fusegen_k_slices slices,
                                 then the reduce kernel (fusegen_split_k_reduce_threads and _blocks_y;
                                 with a norm a CTA a row and N x 4 bytes of dynamic shared memory) */
    int tile_k;               /* k of the tile (the slices are whole k tiles) */
    int split_k_row_smem;     /* split K with a norm: the reduce keeps a row in shared memory */
    int cluster;              /* Hopper cluster strategy: clusters of ceil(N / tile_n) CTAs, as many as
                                 fit at once, walk down the row tiles */
    int persistent;           /* Hopper, not cluster: min(tiles, SMs) CTAs on a 1-D grid work through
                                 the tiles */
    int tma_box_a, tma_box_b; /* Hopper: rows of the A and B boxes (64 columns each) */
    fg_dtype dt_ab;           /* the operands' dtype (GEMM2 of a chain too) */
    fg_dtype dt_out;          /* the output's dtype (also the residual's and the store ops') */
    int out_bytes;            /* bytes of one output element */
    /* Hopper: the epilogue's TMA maps (fusegen_sm90::EpilogueMaps, boxes of tile_m rows):
     * the residual's, store op map_store_slot's (-1: none), and map_out (0 none, 1 out,
     * 2 the split strategy's pre-norm values, packed, of type dt_out) */
    int map_residual, map_store_slot, map_out;
    int epi_box_bytes;        /* Hopper: the epilogue boxes' row bytes and swizzle width, 128 or 64 */
    int b_kn;                 /* B stored [K, N] (Hopper: its map is [K rows, N columns], boxes of
                                 tma_box_b k rows x 64 columns) */
} fg_launch_gemm;

/* The launch record of GEMM `index` (1 or 2) of planned kernel pk. */
void fg_launch_record(const fg_plan_kernel *pk, int index, fg_launch_gemm *out);

/* Appends to b, for every GEMM of every variant of spec kernel k in plan, static_asserts that
 * its launch record equals the constants of its C++ type (namespace <variant>::GemmN). */
void fg_launch_append_checks(fg_buf *b, const fg_plan *plan, const fg_kernel_spec *k);

#endif
