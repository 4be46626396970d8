/* fusegen_launch.h - how the runtime launches a kernel of a dispatch table (runtime/launch.c,
 * the one launcher of compiled-in and JIT kernels): each GEMM's launch record, the C form of the
 * kernels' parameter block, and the cache the launcher keeps per kernel. Generated tables and
 * the JIT fill the records from the plan (generator/launch.c); each kernel source asserts its
 * records and the parameter block against the family code's constants, so drift is a compile
 * error, not a bad launch. Included by fusegen.h; needs no CUDA header (the generator includes it too). */
#ifndef FUSEGEN_LAUNCH_H
#define FUSEGEN_LAUNCH_H

#include "fusegen_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Functions of a kernel: GEMM1, its normalize kernel (split strategy) or reduce kernel (split
 * K), a chain's GEMM2, and its reduce kernel (a split-K chain). */
enum {
    FUSEGEN_LAUNCH_GEMM1 = 0, FUSEGEN_LAUNCH_EPILOGUE1 = 1, FUSEGEN_LAUNCH_GEMM2 = 2, FUSEGEN_LAUNCH_EPILOGUE2 = 3,
    FUSEGEN_LAUNCH_FNS = 4
};

/* The launch of one GEMM. Zero for a kernel's absent GEMM2. */
typedef struct fusegen_launch_gemm {
    int hopper;               /* Hopper family: tensor maps, programmatic dependent launches */
    int tile_m, tile_n;       /* grid: ceil(N / tile_n) x ceil(M / tile_m) */
    int tile_k;               /* k of the tile (split-K slices are whole k tiles) */
    int threads;              /* block size */
    int smem_bytes;           /* dynamic shared memory, exactly the family's kSmemBytes */
    int split;                /* a normalize kernel follows (split strategy) */
    int split_k;              /* split K: the partial kernel over z = fusegen_k_slices slices, then
                                 the reduce kernel (fusegen_split_k_reduce_threads, _blocks_y) */
    int split_k_row_smem;     /* split K with a norm: the reduce keeps a row (N x 4 bytes) in
                                 dynamic shared memory */
    int cluster;              /* Hopper cluster strategy: clusters of ceil(N / tile_n) CTAs, as many
                                 as fit at once, walk down the row tiles */
    int persistent;           /* Hopper, not cluster: min(work units, SMs) CTAs on a 1-D grid */
    int tma_box_a, tma_box_b; /* Hopper: rows of the A and B boxes (64 columns each) */
    int b_kn;                 /* B stored [K, N] (its map: K rows of N columns) */
    int dt_ab, dt_out;        /* fusegen_dtype of the operands and of the output (also the
                                 residual's and the store ops') */
    int out_bytes;            /* bytes of one output element */
    /* Hopper: the epilogue's tensor maps (boxes of tile_m rows of epi_box_bytes, the swizzle of
     * that width): the residual's, store op map_store_slot's (-1: none), and map_out (0 none,
     * 1 out, 2 the split strategy's pre-norm values, packed, of type dt_out) */
    int map_residual, map_store_slot, map_out, epi_box_bytes;
} fusegen_launch_gemm;

/* The kernels' parameter block (fusegen_sm80::Params), field for field. */
typedef struct fusegen_params {
    const void *a, *b;
    void *out;
    int m, n, k;
    long long lda, ldb, ldo, ldr;
    const void *bias, *residual, *gamma, *beta;
    void *store[FUSEGEN_REG_MAX_STORES];
    long long ld_store[FUSEGEN_REG_MAX_STORES];
    float *prenorm;   /* split: [m, n] values before the norm */
    float *stats;     /* split: per row and N tile */
    int stats_ld;     /* N tiles per row */
    float *partials;  /* split K: [k_slices, m, n] f32 sums */
    int k_slices;     /* split K: slices of K; else 0 */
} fusegen_params;

/* What the launcher remembers of a kernel, zero at first (a generated table has one per kernel,
 * the JIT one per variant; runtime/launch.c alone reads and writes it). */
enum { FUSEGEN_LAUNCH_CONTEXTS = 4 };
typedef struct fusegen_launch_cache {
    /* compiled-in kernels: their driver functions (CUfunction) in each of the last CUDA contexts
     * they ran in, attributes set; an entry is published by storing its context last */
    struct {
        void *context;
        void *fn[FUSEGEN_LAUNCH_FNS];
    } contexts[FUSEGEN_LAUNCH_CONTEXTS];
    unsigned long long clusters[4];   /* cluster kernels: packed (device, cluster size, clusters at once) */
} fusegen_launch_cache;

#ifdef __cplusplus
}
#endif

#endif
