/* kernel_record.h - the kernel record of one planned variant: the fields of the runtime's
 * fusegen_kernel (runtime/fusegen.h) as the plan decides them, built by one function. The
 * dispatch table prints it (emit.c) and the JIT copies it into its table (runtime/jit.c), so the
 * two cannot describe a variant differently. Enum fields hold the public enums' values (the
 * registry's, runtime/fusegen_registry.h); nothing here needs a CUDA header. */
#ifndef FUSEGEN_KERNEL_RECORD_H
#define FUSEGEN_KERNEL_RECORD_H
#include "arena.h"
#include "launch.h"
#include "plan.h"

typedef struct fg_kernel_record_op {
    int kind;        /* fusegen_op_kind */
    double value;    /* alpha, beta or eps; 0 for the others */
    int affine;      /* norms: gamma (and beta) */
    int index;       /* store: its store[] slot, in the order the GEMM's stores appear */
} fg_kernel_record_op;

typedef struct fg_kernel_record_gemm {
    int b_layout;                /* fusegen_layout */
    const char *epilogue;        /* the signature; NULL for a chain's absent GEMM2 */
    const fg_kernel_record_op *ops;     /* NULL when n_ops is 0 */
    int n_ops;
    int tile_m, tile_n, tile_k, stages, threads;
    int schedule;                /* fusegen_schedule: NONE for the portable family */
    int n_stores, uses_bias, uses_residual;
} fg_kernel_record_gemm;

typedef struct fg_kernel_record {
    const char *name, *spec_kernel;
    int sm, arch_specific;       /* the plan's: the JIT sets its own compile target's */
    int family;                  /* fusegen_family */
    int a, b, out;               /* fusegen_dtype */
    int chain;
    fg_kernel_record_gemm g1, g2;       /* g2: zeros, B [N, K], without a chain */
    int norm;                    /* fusegen_norm of GEMM1 */
    int strategy;                /* fusegen_strategy: NONE without a norm and for split K */
    int split_k;
    long max_n;
    int align_elems;
    int uses_gamma, uses_beta;
    int rank;
    fusegen_launch_gemm launch1, launch2;   /* launch2: zeros without a chain */
} fg_kernel_record;

/* The record of planned variant pk; its arrays in a. Returns 0, or -1 when memory ran out. */
int fg_kernel_record_build(fg_arena *a, const fg_plan_kernel *pk, fg_kernel_record *out);

#endif
