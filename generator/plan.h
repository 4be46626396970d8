/* plan.h - from a valid spec to the list of kernels to emit. Every decision about what code
 * exists is made here, in C: variants (tile x arch x norm strategy), names, warps, shared
 * memory, runtime constraints, and the dispatch's rank. Templates only render a plan. */
#ifndef FUSEGEN_PLAN_H
#define FUSEGEN_PLAN_H
#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "diag.h"
#include "spec.h"

/* The row norms (the registry's FUSEGEN_REG_NORMS): FG_NORM_NONE, FG_NORM_LAYERNORM, ... */
#define FG_PLAN__ENUM_NORM(id, word, value) FG_NORM_##id = value,
typedef enum { FUSEGEN_REG_NORMS(FG_PLAN__ENUM_NORM) } fg_norm;

/* Most kernel variants one library may plan (each is compiled: a located error past it). */
#define FG_PLAN_MAX_VARIANTS 4096

/* Kernel families: the code a variant is made of.
 *   SM80: cp.async + ldmatrix + mma.sync; runs on sm_80 and later (templates/common/fusegen_sm80.cuh)
 *   SM90: TMA into swizzled tiles + wgmma, producer/consumer warpgroups; sm_90a only
 *         (templates/common/fusegen_sm90.cuh) */
typedef enum { FG_FAMILY_SM80 = 0, FG_FAMILY_SM90 } fg_family;

/* One GEMM of a planned kernel, its epilogue cut at the norm. */
typedef struct fg_plan_gemm {
    const fg_gemm *spec;
    long bm, bn, bk, stages;
    bool pingpong;                      /* Hopper: the ping-pong schedule (else cooperative) */
    int warps_m, warps_n, threads;
    size_t smem_bytes;                  /* dynamic shared memory of the GEMM kernel */
    int cluster_ranks;                  /* cluster strategy: the most CTAs a cluster has (16), a
                                           slot each in the exchange; else 0 */
    /* Hopper epilogue staging (templates/common/fusegen_sm90.cuh): a shared-memory tile buffer
     * that the producer's spare warps fill with the residual and that the epilogue's outputs go
     * through (written as pairs, stored by bulk copies a row at a time), and the bias. */
    bool stage_tile, stage_residual, stage_bias;
    int staged_store_slot;              /* the store op written through the tile buffer, or -1 */
    bool stage_out;                     /* out (split: the pre-norm values) through the tile buffer */
    int stage_ring;                     /* > 0: the tile buffer holds that many of the tile's column
                                           blocks, a ring the outputs go out through block by block
                                           (out alone staged); 0: the whole tile */
    int prenorm_store_slot;             /* split, bf16 out, not a chain: the store op that is the last
                                           op before the norm (it holds the norm's input), whose
                                           output the normalize kernel reads where its precision
                                           suffices (tiles keep their deviations otherwise); -1 */
    fg_layout b_layout;
    const fg_op *a_norm;                /* the kernel's a_norm (the first of the ops), or NULL: the
                                           mainloop sums A's rows' squares, the epilogue scales */
    const fg_op *glu;                   /* the gated activation (swiglu, geglu: first of the epilogue's
                                           ops), or NULL: the accumulators' (gate, up) fragment pairs
                                           become one output fragment; no staging, no split K */
    const fg_op *pre; size_t n_pre;     /* ops before the norm (all ops when no norm) */
    fg_norm norm;                       /* FG_NORM_NONE: no norm */
    const fg_op *norm_op;               /* the norm op itself, or NULL */
    fg_strategy strategy;               /* ROW, CLUSTER or SPLIT when norm != NONE (never AUTO) */
    const fg_op *post; size_t n_post;   /* ops after the norm */
    const char *signature;              /* epilogue signature, e.g. "bias+residual+store+layernorm+relu" */
} fg_plan_gemm;

typedef struct fg_plan_kernel {
    const fg_kernel_spec *spec;
    const char *name;         /* C identifier, unique in the library:
                               * <kernel>_<family>_<bm>x<bn>x<bk>_s<stages>[_row|_split|_splitk][_g2_<tile>] */
    fg_family family;
    fg_arch arch;             /* the lowest arch it serves */
    int sm;                   /* 80, 86, 89, 90 */
    bool arch_specific;       /* runs on exactly this sm (sm_90a code) */
    fg_plan_gemm g1;
    bool chain;
    fg_plan_gemm g2;          /* valid when chain */
    int align_elems;          /* K, N (and N2) and leading dims must be multiples of this */
    bool split_k;             /* the split-K form (name suffix _splitk): a partial kernel sums slices
                               * of K into the workspace (f32), a reduce kernel applies the whole
                               * epilogue row by row; a chain's (Hopper only): both GEMMs so */
    long max_n;               /* row and cluster strategies, split K with a norm: N <= max_n; 0 = any N */
    int rank;                 /* the dispatch's last preference among kernels its model ranks equal:
                               * larger first (tile area, staging, depth; plan__rank) */
    const char *constraints;  /* human-readable, for `fusegen list` */
} fg_plan_kernel;

typedef struct fg_plan {
    const fg_spec *spec;
    fg_plan_kernel *kernels; size_t n_kernels;
} fg_plan;

/* Which family builds a tile: the one definition, used by plan's variants and by check's
 * rules (shared memory per arch, a variant for every arch), so the two cannot disagree.
 *   fg_plan_sm90_builds: the Hopper family builds tile t of GEMM g of kernel k: k lists sm_90a,
 *     g's B layout suits the tile, and the tile suits its schedule and fits sm_90a.
 *   fg_plan_sm80_builds: the portable family builds it for archs with smem_limit bytes of
 *     shared memory (0: every arch k lists): a tile of its shapes that no Hopper-only rule
 *     claims (a schedule, n 160 or 320), whose mainloop in g's B layout fits. */
bool fg_plan_sm90_builds(const fg_kernel_spec *k, const fg_gemm *g, const fg_tile *t);
bool fg_plan_sm80_builds(const fg_kernel_spec *k, const fg_gemm *g, const fg_tile *t, size_t smem_limit);

/* Builds the plan of a spec that passed fg_check_spec. Returns 0, or -1 after reporting. */
int fg_plan_build(fg_arena *arena, const fg_spec *spec, fg_plan *out, fg_diag *d);

#endif
