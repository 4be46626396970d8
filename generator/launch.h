/* launch.h - how a planned GEMM is launched: its launch record (fusegen_launch_gemm,
 * runtime/fusegen_launch.h), computed here in C from the plan for the runtime's one launcher
 * (runtime/launch.c), which sees no C++ types. The dispatch table prints the records (through
 * kernel_record.c) and the JIT copies them.
 *
 * fg_launch_append_checks writes C++ static_asserts that compare each record, and the C
 * parameter block fusegen_params, with the family code's constants and fusegen_sm80::Params;
 * every kernel source carries them, so drift between this file and templates/common/ is a
 * compile error instead of a bad launch. */
#ifndef FUSEGEN_GEN_LAUNCH_H
#define FUSEGEN_GEN_LAUNCH_H
#include "buf.h"
#include "fusegen_launch.h"
#include "plan.h"

/* Threads of a split strategy's normalize kernel (fusegen_sm80::NORMALIZE_THREADS), one warp
 * per row. */
#define FG_LAUNCH_NORMALIZE_THREADS FUSEGEN_REG_NORMALIZE_THREADS
/* Threads of a split-K variant's reduce kernel (fusegen_sm80::SPLIT_K_REDUCE_THREADS), a block
 * per row. */
#define FG_LAUNCH_SPLIT_K_REDUCE_THREADS FUSEGEN_REG_SPLIT_K_REDUCE_THREADS
/* ... with a norm, at most (fusegen_sm80::SPLIT_K_REDUCE_ROW_THREADS): fusegen_split_k_reduce_threads */
#define FG_LAUNCH_SPLIT_K_REDUCE_ROW_THREADS FUSEGEN_REG_SPLIT_K_REDUCE_ROW_THREADS

/* The launch record of GEMM `index` (1 or 2) of planned kernel pk. */
void fg_launch_record(const fg_plan_kernel *pk, int index, fusegen_launch_gemm *out);

/* Appends to b static_asserts that fusegen_params is fusegen_sm80::Params field for field and,
 * for every GEMM of every variant of spec kernel k in plan, that its launch record equals the
 * constants of its C++ type (namespace <library>_<variant>::GemmN). */
void fg_launch_append_checks(fg_buf *b, const fg_plan *plan, const fg_kernel_spec *k);

#endif
