/* spec.h - the spec model: what a spec file says, after parsing, before any checking of
 * meaning. Parsing (spec.c) rejects only what cannot be represented: syntax errors, wrong JSON
 * types, unknown or duplicate keys, unknown enum words. Ranges, names and cross-field rules
 * are check.c's job. Every node keeps its JSON pointer so later stages can report locations.
 * All memory lives in the arena passed to fg_spec_parse. */
#ifndef FUSEGEN_SPEC_H
#define FUSEGEN_SPEC_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"
#include "fusegen_registry.h"

/* Limits that keep hostile input bounded; exceeding one is a located error. */
#define FG_SPEC_MAX_BYTES      (4u << 20)   /* spec file size */
#define FG_SPEC_MAX_DEPTH      32           /* JSON nesting depth */
#define FG_SPEC_MAX_KERNELS    256
#define FG_SPEC_MAX_TILES      16           /* tile variants per GEMM */
#define FG_SPEC_MAX_OPS        32           /* epilogue ops per GEMM */
#define FG_SPEC_MAX_ARCHS      8
#define FG_SPEC_MAX_NAME       64           /* library / kernel / store names */

/* The enums below come from the registry (runtime/fusegen_registry.h): one definition of every
 * word and value. NONE (0 where it exists) marks what the parser could not read. */
#define FG_SPEC__ENUM_DTYPE(id, word, value, bytes) FG_DTYPE_##id = value,
typedef enum { FG_DTYPE_NONE = 0, FUSEGEN_REG_DTYPES(FG_SPEC__ENUM_DTYPE) } fg_dtype;
#define FG_SPEC__ENUM_LAYOUT(id, word, value) FG_LAYOUT_##id = value,
typedef enum { FUSEGEN_REG_LAYOUTS(FG_SPEC__ENUM_LAYOUT) } fg_layout;
#define FG_SPEC__ENUM_ARCH(id, word, sm, smem) FG_ARCH_##id,
typedef enum { FG_ARCH_NONE = 0, FUSEGEN_REG_ARCHS(FG_SPEC__ENUM_ARCH) } fg_arch;

/* An epilogue op: FG_OP_SCALE, ... (gelu with "approximate": "tanh" is FG_OP_GELU_TANH); the
 * registry's FUSEGEN_REG_OPS says what each does. */
#define FG_SPEC__ENUM_OP(id, token, word, value, cls, key, dflt) FG_OP_##id = value,
typedef enum { FUSEGEN_REG_OPS(FG_SPEC__ENUM_OP) } fg_op_kind;

#define FG_SPEC__ENUM_STRATEGY(id, public_id, word, value) FG_STRATEGY_##id = value,
typedef enum { FUSEGEN_REG_STRATEGIES(FG_SPEC__ENUM_STRATEGY) } fg_strategy;
/* How the Hopper family's two consumer warpgroups share tiles; AUTO: ping-pong for tile m 64,
 * cooperative for m 128. */
#define FG_SPEC__ENUM_SCHEDULE(id, public_id, word, value) FG_SCHEDULE_##id = value,
typedef enum { FUSEGEN_REG_SCHEDULES(FG_SPEC__ENUM_SCHEDULE) } fg_schedule;

typedef struct fg_op {
    fg_op_kind kind;
    const char *ptr;          /* JSON pointer of this op, e.g. "/kernels/0/epilogue/3" */
    double value;             /* the op's number constant (the registry's key: alpha, beta, eps),
                                 its default when absent; 0 for an op without one */
    bool affine;              /* norms: gamma (and beta for layernorm); default true */
    fg_strategy strategy;     /* norms: "strategy": "auto" | "row" | "cluster" | "split" */
    const char *as;           /* store: output name; NULL when absent */
} fg_op;

typedef struct fg_tile {
    const char *ptr;
    long m, n, k, stages;     /* as written; range checks are check.c's */
    fg_schedule schedule;     /* "schedule": Hopper family only; default AUTO */
} fg_tile;

/* One GEMM with its epilogue: the main kernel, or the `then` stage of a chain. */
typedef struct fg_gemm {
    const char *ptr;          /* pointer of the object holding b_layout/tiles/epilogue */
    fg_layout b_layout;       /* default "nk" */
    fg_tile *tiles; size_t n_tiles;
    fg_op *ops; size_t n_ops;
} fg_gemm;

typedef struct fg_kernel_spec {
    const char *ptr;          /* "/kernels/<i>" */
    const char *name;
    fg_arch *archs; size_t n_archs;
    fg_dtype a, b, out, accum;
    fg_gemm gemm;             /* GEMM1: out = epilogue(A[M,K] . B) */
    bool has_then;            /* chain: GEMM2 consumes GEMM1's result as its A */
    fg_gemm then;             /* tiles default to GEMM1's when absent (n_tiles == 0) */
} fg_kernel_spec;

typedef struct fg_spec {
    const char *path;         /* as given on the command line */
    const char *text; size_t text_len;   /* the file's bytes, kept for line:col and hashing */
    uint8_t sha256[32];
    char sha256_hex[65];
    const char *library;
    fg_kernel_spec *kernels; size_t n_kernels;
} fg_spec;

/* Parses text (not NUL-terminated necessarily) into *out. Reports every representational
 * error to d (the caller has called fg_diag_set_source). Returns 0 on success, -1 when any error
 * was reported; the arena owns whatever was built either way. */
int fg_spec_parse(fg_arena *arena, const char *path, const char *text, size_t len, fg_spec *out, fg_diag *d);

/* Spelling of enum values as in the spec format (and docs/spec.md), from the registry. */
const char *fg_spec_dtype_name(fg_dtype t);
int fg_spec_dtype_bytes(fg_dtype t);            /* 2, 2, 4; 0 for none */
const char *fg_spec_layout_name(fg_layout l);
const char *fg_spec_arch_name(fg_arch a);      /* "sm_90a" */
int fg_spec_arch_sm(fg_arch a);                /* 80, 86, 89, 90, 90 */

/* An op's row of the registry (FUSEGEN_REG_OPS). */
typedef struct fg_op_info {
    fg_op_kind kind;
    const char *token;        /* in signatures; a MAP op's device function is op_<token> */
    const char *word;         /* the spec's "op" */
    int cls;                  /* FUSEGEN_REG_OPCLASS_* */
    const char *key;          /* its number constant's key, "" for none */
    double dflt;              /* that constant's default */
} fg_op_info;
const fg_op_info *fg_spec_op_info(fg_op_kind k);   /* NULL for a kind the registry lacks */
bool fg_spec_op_is_norm(fg_op_kind k);
bool fg_spec_op_is_glu(fg_op_kind k);           /* swiglu, geglu */
const char *fg_spec_op_name(fg_op_kind k);      /* the spec's word: "gelu" for FG_OP_GELU_TANH too */
/* The op's word in an epilogue signature (what the runtime matches, "bias+residual+layernorm"):
 * its name, or "gelu_tanh" for a gelu with "approximate": "tanh". */
const char *fg_spec_op_token(const fg_op *op);
const char *fg_spec_strategy_name(fg_strategy s);
const char *fg_spec_schedule_name(fg_schedule s);

#endif
