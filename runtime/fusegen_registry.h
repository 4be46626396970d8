/* fusegen_registry.h - the one definition of fusegen's vocabulary and limits: element types,
 * layouts, archs, epilogue ops, norms, strategies, schedules, kernel families, tile shapes, and the numbers the
 * generator, the runtime and the generated code must agree on. Pure preprocessor: X-macro lists
 * that each user expands into what it needs (C enums, name tables, checks), so a list changes in
 * one place. Users: generator/spec.h and spec.c (the spec's enums and words), arch.c (tiles,
 * shared memory), check.c, plan.c, emit.c (the device enums written into fusegen_sm80.cuh, the op
 * calls), launch.h, runtime/fusegen.h (the public enums), fusegen_workspace.h, runtime.c, jit.c.
 * What cannot include it (Python, the JSON schema) is compared with it by the test `registry`
 * (tests/unit/registry). docs/design.md, "The registry", says where each fact lives.
 *
 * Each list is FUSEGEN_REG_<WHAT>(X) and calls X once per entry, in the spec's order. */
#ifndef FUSEGEN_REGISTRY_H
#define FUSEGEN_REGISTRY_H

/* Element types: X(ID, word, value, bytes). value: fusegen_dtype (FUSEGEN_DTYPE_<ID>) and the
 * device code's DT_<ID>; word: the spec's ("a", "b" take the 16-bit ones, "out" all). */
#define FUSEGEN_REG_DTYPES(X) \
    X(F16, "f16", 1, 2)       \
    X(BF16, "bf16", 2, 2)     \
    X(F32, "f32", 3, 4)

/* B layouts: X(ID, word, value). value: fusegen_layout. */
#define FUSEGEN_REG_LAYOUTS(X) \
    X(NK, "nk", 0)             \
    X(KN, "kn", 1)

/* Target archs: X(ID, word, sm, smem_limit). sm: compute capability x10; smem_limit: the most
 * dynamic shared memory one block may opt into, in bytes. sm_90a is sm_90 with the
 * arch-specific features (wgmma, setmaxnreg): its code runs on 9.0 alone. */
#define FUSEGEN_REG_ARCHS(X)          \
    X(SM80, "sm_80", 80, 166912)      \
    X(SM86, "sm_86", 86, 101376)      \
    X(SM89, "sm_89", 89, 101376)      \
    X(SM90, "sm_90", 90, 232448)      \
    X(SM90A, "sm_90a", 90, 232448)

/* Op classes: how the generated epilogue applies an op.
 *   MAP       v = fusegen_sm80::op_<token>(v[, constant]): element-wise, by name alone
 *   BIAS      adds the bias vector; RESIDUAL adds beta times the residual tensor
 *   STORE     writes v to an extra output (fusegen_args.store[])
 *   NORM      a row norm: the family code runs it between the ops before and after it
 *   A_NORM    the norm of A's rows (a kernel's "a_norm"; first of the ops when present): the
 *             mainloop sums each row's squares as A passes through shared memory, and the
 *             accumulators of the row are scaled by its rstd before the other ops; gamma is
 *             folded into B (fusegen_fold_a_norm_gamma)
 *   GLU       a gated activation (first of the ops, after a_rmsnorm): B holds gate and up rows
 *             interleaved in blocks of 8 (fusegen_pack_glu_weight), so a thread's accumulator
 *             fragments come in (gate, up) pairs; the family code makes act(gate) * up of them
 *             before the ops, and the output has N / 2 columns */
#define FUSEGEN_REG_OPCLASS_MAP 0
#define FUSEGEN_REG_OPCLASS_BIAS 1
#define FUSEGEN_REG_OPCLASS_RESIDUAL 2
#define FUSEGEN_REG_OPCLASS_STORE 3
#define FUSEGEN_REG_OPCLASS_NORM 4
#define FUSEGEN_REG_OPCLASS_A_NORM 5
#define FUSEGEN_REG_OPCLASS_GLU 6

/* Epilogue ops: X(ID, token, word, value, class, key, default).
 *   token    the op's word in an epilogue signature ("bias+residual+layernorm"), and the
 *            device function op_<token> of a MAP op
 *   word     the spec's "op" (gelu_tanh is the gelu op with "approximate": "tanh"; a_rmsnorm
 *            is "a_norm": {"op": "rmsnorm"}, never an epilogue op)
 *   value    fusegen_op_kind (FUSEGEN_OP_<ID>) and the generator's FG_OP_<ID>; new ops go last
 *   key      the op's one number constant (fusegen_op.value), "" for none; default its value
 *            when the spec leaves it out. A MAP op's constant is passed to its device function
 *            as an f32; a NORM op's is its eps. */
#define FUSEGEN_REG_OPS(X)                                                         \
    X(SCALE, "scale", "scale", 0, FUSEGEN_REG_OPCLASS_MAP, "alpha", 1.0)           \
    X(BIAS, "bias", "bias", 1, FUSEGEN_REG_OPCLASS_BIAS, "", 0.0)                  \
    X(RESIDUAL, "residual", "residual", 2, FUSEGEN_REG_OPCLASS_RESIDUAL, "beta", 1.0) \
    X(RELU, "relu", "relu", 3, FUSEGEN_REG_OPCLASS_MAP, "", 0.0)                   \
    X(GELU, "gelu", "gelu", 4, FUSEGEN_REG_OPCLASS_MAP, "", 0.0)                   \
    X(GELU_TANH, "gelu_tanh", "gelu", 5, FUSEGEN_REG_OPCLASS_MAP, "", 0.0)         \
    X(SILU, "silu", "silu", 6, FUSEGEN_REG_OPCLASS_MAP, "", 0.0)                   \
    X(STORE, "store", "store", 7, FUSEGEN_REG_OPCLASS_STORE, "", 0.0)              \
    X(LAYERNORM, "layernorm", "layernorm", 8, FUSEGEN_REG_OPCLASS_NORM, "eps", 1e-5) \
    X(RMSNORM, "rmsnorm", "rmsnorm", 9, FUSEGEN_REG_OPCLASS_NORM, "eps", 1e-6)     \
    X(A_RMSNORM, "a_rmsnorm", "rmsnorm", 10, FUSEGEN_REG_OPCLASS_A_NORM, "eps", 1e-6) \
    X(SWIGLU, "swiglu", "swiglu", 11, FUSEGEN_REG_OPCLASS_GLU, "", 0.0)           \
    X(GEGLU, "geglu", "geglu", 12, FUSEGEN_REG_OPCLASS_GLU, "", 0.0)

/* Norms: X(ID, word, value). value: fusegen_norm and the device code's NORM_<ID>. */
#define FUSEGEN_REG_NORMS(X)        \
    X(NONE, "none", 0)              \
    X(LAYERNORM, "layernorm", 1)    \
    X(RMSNORM, "rmsnorm", 2)

/* Norm strategies: X(ID, PUBLIC_ID, word, value), in the spec's order. value: the generator's
 * FG_STRATEGY_<ID>, fusegen_strategy (FUSEGEN_STRATEGY_<PUBLIC_ID>) and the device code's
 * STRATEGY_<PUBLIC_ID>. The spec's "auto" (the planner's choice) is 0, as is a kernel's NONE (no
 * norm, or a split-K variant). */
#define FUSEGEN_REG_STRATEGIES(X)     \
    X(AUTO, NONE, "auto", 0)          \
    X(ROW, ROW, "row", 1)             \
    X(CLUSTER, CLUSTER, "cluster", 3) \
    X(SPLIT, SPLIT, "split", 2)

/* Hopper schedules: X(ID, PUBLIC_ID, word, value). value: the generator's FG_SCHEDULE_<ID> and
 * fusegen_schedule (FUSEGEN_SCHEDULE_<PUBLIC_ID>). The spec's AUTO (ping-pong for tile m 64,
 * cooperative for 128) is 0, as is a kernel's NONE (the portable family). */
#define FUSEGEN_REG_SCHEDULES(X)                   \
    X(AUTO, NONE, "auto", 0)                       \
    X(COOPERATIVE, COOPERATIVE, "cooperative", 1)  \
    X(PINGPONG, PINGPONG, "pingpong", 2)

/* Kernel families: X(ID, word, value). value: fusegen_family (FUSEGEN_FAMILY_<ID>). PORTABLE: the
 * generator's FG_FAMILY_SM80 (names _sm80_); HOPPER: FG_FAMILY_SM90 (names _sm90a_). */
#define FUSEGEN_REG_FAMILIES(X)  \
    X(PORTABLE, "portable", 0)   \
    X(HOPPER, "hopper", 1)

/* Tile shapes a spec may name: X(value). The portable family builds m x n x k from the first
 * three lists (m * n at most FUSEGEN_REG_SM80_MAX_TILE_ELEMS); n 160 and 320 are the Hopper
 * family's alone (which takes m 64 or 128, k 64: generator/arch.c has its finer rules). */
#define FUSEGEN_REG_TILE_M(X) X(32) X(64) X(128) X(256)
#define FUSEGEN_REG_TILE_N(X) X(32) X(64) X(128) X(256)
#define FUSEGEN_REG_TILE_K(X) X(32) X(64)
#define FUSEGEN_REG_SM90_ONLY_TILE_N(X) X(160) X(320)
#define FUSEGEN_REG_SM80_MAX_TILE_ELEMS (128 * 256)
#define FUSEGEN_REG_MIN_STAGES 2
#define FUSEGEN_REG_MAX_STAGES 5
#define FUSEGEN_REG_SM90_MAX_STAGES 16   /* a tile that is the Hopper family's alone (a named schedule) */

/* Limits and launch numbers. */
#define FUSEGEN_REG_MAX_STORES 4               /* store ops per GEMM: fusegen_args.store[] */
#define FUSEGEN_REG_NORMALIZE_THREADS 256      /* the split strategy's normalize kernel: a warp a row */
#define FUSEGEN_REG_SPLIT_K_REDUCE_THREADS 256 /* the split-K reduce kernel without a norm: a block a 1024 columns */
#define FUSEGEN_REG_SPLIT_K_REDUCE_ROW_THREADS 512 /* ... with a norm (a block a row): at most, a lane a 4 columns */
#define FUSEGEN_REG_WORKSPACE_ALIGN 256        /* the workspace pointer and each part's offset */
#define FUSEGEN_REG_PORTABLE_CLUSTER 8         /* CTAs a cluster every sm_90 device schedules */
#define FUSEGEN_REG_MAX_CLUSTER 16             /* CTAs a cluster variant's clusters may have */
#define FUSEGEN_REG_ALIGN_ELEMS 8              /* K, N, N2 and leading dims: 16-byte rows */

#endif
