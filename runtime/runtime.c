/* runtime.c - the fusegen runtime: status strings, the thread-local detail, the eligibility
 * check of a kernel for a problem, dispatch (query, select, find; the order of eligible kernels
 * is the model's, dispatch.c, after a loaded tuning file's winner, tuning.c; select records the
 * problem when a recording is open, record.c), workspace sizing, and the checked launch.
 *
 * Three internal checks decide whether a kernel can run a problem: fg__check_problem (the
 * problem alone: a bad one is INVALID_ARGUMENT whatever the library holds), fg__check_kernel
 * (this kernel against the problem) and fg__check_arch (the device, the one check that may call
 * CUDA, so it runs last). Each writes one reason and returns the status that reason deserves, so
 * fusegen_why_not (reason only), fusegen_query (reason per kernel) and fusegen_run (status +
 * reason) agree by construction.
 *
 * Nothing here allocates device memory, synchronizes or copies. The only CUDA calls are the
 * device's facts (device.c: compute capability, SM count and name, each read once per device),
 * the launcher's (launch.c), and the error-string functions. */
#include "fusegen.h"
#include "fusegen_dispatch.h"
#include "fusegen_internal.h"
#include "fusegen_workspace.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define FG__PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define FG__PRINTF(fmt_idx, arg_idx)
#endif

enum {
    FG__DETAIL_LEN = 1024,      /* the thread-local detail */
    FG__REASON_LEN = 384,       /* one kernel's reason */
    FG__GRID_ROWS_MAX = 65535,  /* row tiles go on gridDim.y */
    FG__PTR_ALIGN = 16,         /* every tensor and vector pointer */
    FG__WS_ALIGN = FUSEGEN_REG_WORKSPACE_ALIGN    /* the workspace pointer */
};

#define FG__DIM_LIMIT ((int64_t)1 << 31)   /* m, n, k, n2 must be below this */
/* The kernels count rows, columns, k steps and tiles in 32-bit ints: a size rounded up to its
 * tile, and the number of tiles, must stay at or below this. */
#define FG__INT_MAX ((int64_t)INT32_MAX)
/* A Hopper kernel's TMA descriptors take row strides below 2^40 bytes. */
#define FG__TMA_STRIDE_LIMIT ((int64_t)1 << 40)
/* The most thread blocks of a cluster every sm_90 device schedules; cluster kernels go to 16. */
#define FG__PORTABLE_CLUSTER FUSEGEN_REG_PORTABLE_CLUSTER

static _Thread_local char fg__detail[FG__DETAIL_LEN];
/* fusegen_why_not writes here when the caller gives no buffer. */
static _Thread_local char fg__why_fallback[FG__REASON_LEN];

/* ---- strings ------------------------------------------------------------------------------ */

const char *fusegen_status_name(fusegen_status s)
{
    switch (s) {
    case FUSEGEN_OK:                    return "FUSEGEN_OK";
    case FUSEGEN_ERR_INVALID_ARGUMENT:  return "FUSEGEN_ERR_INVALID_ARGUMENT";
    case FUSEGEN_ERR_MISALIGNED:        return "FUSEGEN_ERR_MISALIGNED";
    case FUSEGEN_ERR_NOT_SUPPORTED:     return "FUSEGEN_ERR_NOT_SUPPORTED";
    case FUSEGEN_ERR_NOT_FOUND:         return "FUSEGEN_ERR_NOT_FOUND";
    case FUSEGEN_ERR_WORKSPACE:         return "FUSEGEN_ERR_WORKSPACE";
    case FUSEGEN_ERR_ARCH:              return "FUSEGEN_ERR_ARCH";
    case FUSEGEN_ERR_CUDA:              return "FUSEGEN_ERR_CUDA";
    case FUSEGEN_ERR_SPEC:              return "FUSEGEN_ERR_SPEC";
    case FUSEGEN_ERR_COMPILE:           return "FUSEGEN_ERR_COMPILE";
    }
    return "FUSEGEN_STATUS_UNKNOWN";
}

const char *fusegen_status_message(fusegen_status s)
{
    switch (s) {
    case FUSEGEN_OK:
        return "Success.";
    case FUSEGEN_ERR_INVALID_ARGUMENT:
        return "An argument is invalid: a NULL pointer, a bad size, a bad leading dimension or an unknown enum value.";
    case FUSEGEN_ERR_MISALIGNED:
        return "A pointer, a size or a leading dimension breaks the kernel's alignment requirement.";
    case FUSEGEN_ERR_NOT_SUPPORTED:
        return "The kernel, or every kernel of the library, cannot run this problem.";
    case FUSEGEN_ERR_NOT_FOUND:
        return "The library has no kernel of that name.";
    case FUSEGEN_ERR_WORKSPACE:
        return "The workspace is NULL or smaller than fusegen_workspace_size requires.";
    case FUSEGEN_ERR_ARCH:
        return "The kernel was not built for the device's architecture.";
    case FUSEGEN_ERR_CUDA:
        return "A CUDA call failed.";
    case FUSEGEN_ERR_SPEC:
        return "The spec has errors (the detail holds the generator's diagnostics).";
    case FUSEGEN_ERR_COMPILE:
        return "NVRTC is not available or could not compile the generated kernels.";
    }
    return "Unknown fusegen status code.";
}

const char *fusegen_last_detail(void)
{
    return fg__detail;
}

static const char *fg__dtype_name(fusegen_dtype t)
{
    switch (t) {
    case FUSEGEN_DTYPE_F16:  return "f16";
    case FUSEGEN_DTYPE_BF16: return "bf16";
    case FUSEGEN_DTYPE_F32:  return "f32";
    }
    return "?";
}

static int fg__dtype_valid(fusegen_dtype t)
{
    return t == FUSEGEN_DTYPE_F16 || t == FUSEGEN_DTYPE_BF16 || t == FUSEGEN_DTYPE_F32;
}

static size_t fg__dtype_bytes(fusegen_dtype t)
{
    return t == FUSEGEN_DTYPE_F32 ? 4u : 2u;
}

static const char *fg__layout_name(fusegen_layout l)
{
    switch (l) {
    case FUSEGEN_LAYOUT_NK: return "nk";
    case FUSEGEN_LAYOUT_KN: return "kn";
    }
    return "?";
}

static int fg__layout_valid(fusegen_layout l)
{
    return l == FUSEGEN_LAYOUT_NK || l == FUSEGEN_LAYOUT_KN;
}

static const char *fg__str(const char *s)
{
    return s ? s : "(null)";
}

/* ---- formatting --------------------------------------------------------------------------- */

/* vsnprintf into buf; a cut message ends in "..." so that nobody mistakes it for the whole. */
static void fg__vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
    int r;
    if (!buf || len == 0)
        return;
    r = vsnprintf(buf, len, fmt, ap);
    if (r < 0) {
        buf[0] = '\0';
    } else if ((size_t)r >= len && len > 4) {
        memcpy(buf + len - 4, "...", 4);
    }
}

/* Writes one reason into buf and returns st. */
FG__PRINTF(4, 5)
static fusegen_status fg__reason(char *buf, size_t len, fusegen_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fg__vformat(buf, len, fmt, ap);
    va_end(ap);
    return st;
}

/* Sets this thread's detail and returns st. */
FG__PRINTF(2, 3)
static fusegen_status fg__fail(fusegen_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fg__vformat(fg__detail, sizeof fg__detail, fmt, ap);
    va_end(ap);
    return st;
}

static fusegen_status fg__ok(void)
{
    fg__detail[0] = '\0';
    return FUSEGEN_OK;
}

/* fusegen_internal.h: the JIT module's way to set the same detail. */
fusegen_status fusegen__detail_set(fusegen_status st, const char *fmt, ...)
{
    va_list ap;
    if (st == FUSEGEN_OK && (!fmt || !*fmt))
        return fg__ok();
    va_start(ap, fmt);
    fg__vformat(fg__detail, sizeof fg__detail, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- checked arithmetic ------------------------------------------------------------------- */

static int fg__mul_i64(int64_t a, int64_t b, int64_t *r)
{
    /* both operands are non-negative here */
    if (a != 0 && b > INT64_MAX / a)
        return 0;
    *r = a * b;
    return 1;
}

static int fg__add_i64(int64_t a, int64_t b, int64_t *r)
{
    if (b > INT64_MAX - a)
        return 0;
    *r = a + b;
    return 1;
}

static int fg__mul_sz(size_t a, size_t b, size_t *r)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *r = a * b;
    return 1;
}

/* at = align256(at + bytes), failing on overflow. */
static int fg__ws_add(size_t *at, size_t bytes)
{
    size_t x;
    if (bytes > SIZE_MAX - *at)
        return 0;
    x = *at + bytes;
    if (x > SIZE_MAX - (FG__WS_ALIGN - 1))
        return 0;
    *at = fusegen_ws_align(x);
    return 1;
}

static int fg__is_split(const fusegen_kernel *k)
{
    return k->strategy == FUSEGEN_STRATEGY_SPLIT;
}

/* The same sum as fusegen_ws_layout_for (split K: with the most slices any device gets), with
 * every step checked, so that the runtime only calls those functions once the total is known to
 * fit in size_t. */
static int fg__ws_fits(const fusegen_kernel *k, const fusegen_problem *p, size_t *total)
{
    size_t at = 0, bytes;
    size_t m = (size_t)p->m, n = (size_t)p->n;
    if (k->split_k) {
        if (!fg__mul_sz(m, n, &bytes) || !fg__mul_sz(bytes, 4u * FUSEGEN_SPLIT_K_MAX_SLICES, &bytes) ||
            !fg__ws_add(&at, bytes))
            return 0;
        *total = at;
        return 1;
    }
    if (fg__is_split(k)) {
        size_t tile_n = (size_t)k->tile_n;
        size_t tiles_n = (n + tile_n - 1) / tile_n;
        if (!fg__mul_sz(m, n, &bytes) || !fg__mul_sz(bytes, 4u, &bytes) || !fg__ws_add(&at, bytes))
            return 0;
        if (!fg__mul_sz(m, tiles_n, &bytes) || !fg__mul_sz(bytes, 8u, &bytes) || !fg__ws_add(&at, bytes))
            return 0;
    }
    if (k->chain) {
        if (!fg__mul_sz(m, n, &bytes) || !fg__mul_sz(bytes, fg__dtype_bytes(k->out), &bytes) ||
            !fg__ws_add(&at, bytes))
            return 0;
    }
    *total = at;
    return 1;
}

/* ---- architecture ------------------------------------------------------------------------- */

/* The device compute capability of a problem, resolved at most once per API call: a query over
 * a whole library asks the device once, and only when some kernel gets as far as the arch
 * check. */
typedef struct fg__arch {
    int resolved;
    int sm;
    int from_device;                /* p->sm was 0 */
    fusegen_status st;
    char why[FG__REASON_LEN];
} fg__arch;

static cudaError_t fg__device_sm(int *sm)
{
    int sms;
    return fusegen__device_info(sm, &sms);
}

static cudaError_t fg__device_sms(int *sms)
{
    int sm;
    return fusegen__device_info(&sm, sms);
}

/* The current device's SM count, 0 when it cannot be read. */
static int fg__sms_or_0(void)
{
    int sms = 0;
    return fg__device_sms(&sms) == cudaSuccess ? sms : 0;
}

static fusegen_status fg__resolve_sm(const fusegen_problem *p, fg__arch *a)
{
    int sm = 0;
    cudaError_t e;

    if (a->resolved)
        return a->st;
    a->resolved = 1;
    a->why[0] = '\0';
    if (p->sm > 0) {
        a->sm = p->sm;
        return a->st = FUSEGEN_OK;
    }
    a->from_device = 1;   /* p->sm is 0 (fg__check_problem refused a negative one) */
    e = fg__device_sm(&sm);
    if (e != cudaSuccess) {
        /* Do not leave our own failure behind for a later cudaGetLastError to report. */
        (void)cudaGetLastError();
        return a->st = fg__reason(a->why, sizeof a->why, FUSEGEN_ERR_CUDA,
                                  "p->sm = 0 asks for the current device, but its compute capability "
                                  "could not be read: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    }
    a->sm = sm;
    return a->st = FUSEGEN_OK;
}

/* ---- the eligibility check ---------------------------------------------------------------- */

/* The matches below compare values fg__check_problem has found valid. */
static fusegen_status fg__check_dtype(const char *field, fusegen_dtype want, fusegen_dtype got,
                                      char *buf, size_t len)
{
    if (got != want)
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = %s but the kernel takes %s = %s", field, fg__dtype_name(got), field,
                          fg__dtype_name(want));
    return FUSEGEN_OK;
}

static fusegen_status fg__check_layout(const char *field, fusegen_layout want, fusegen_layout got,
                                       char *buf, size_t len)
{
    if (got != want)
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = %s but the kernel takes %s = %s", field, fg__layout_name(got), field,
                          fg__layout_name(want));
    return FUSEGEN_OK;
}

static fusegen_status fg__check_epilogue(const char *field, const char *want, const char *got,
                                         char *buf, size_t len)
{
    if (!want || strcmp(got, want) != 0)
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = \"%s\" but the kernel computes \"%s\"", field, got, fg__str(want));
    return FUSEGEN_OK;
}

static fusegen_status fg__check_dim(const char *field, int64_t v, char *buf, size_t len)
{
    if (v <= 0)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT, "p->%s = %" PRId64 " must be > 0", field, v);
    if (v >= FG__DIM_LIMIT)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s = %" PRId64 " must be < 2^31 (2147483648)", field, v);
    return FUSEGEN_OK;
}

static fusegen_status fg__check_product(const char *x, int64_t xv, const char *y, int64_t yv,
                                        char *buf, size_t len)
{
    int64_t r;
    if (!fg__mul_i64(xv, yv, &r))
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s * p->%s = %" PRId64 " * %" PRId64 " overflows int64", x, y, xv, yv);
    return FUSEGEN_OK;
}

static fusegen_status fg__check_multiple(const char *field, int64_t v, int align, char *buf, size_t len)
{
    if (v % align != 0)
        return fg__reason(buf, len, FUSEGEN_ERR_MISALIGNED,
                          "p->%s = %" PRId64 " is not a multiple of %d (the kernel's align_elems)", field, v,
                          align);
    return FUSEGEN_OK;
}

/* One leading dimension: ld (0: packed), the row length it must cover, the rows it spans, the
 * element size (for the byte-extent check) and the largest row stride in bytes (0: none). */
static fusegen_status fg__check_ld(const char *field, int64_t ld, const char *row_name, int64_t row,
                                   int64_t rows, size_t elem_bytes, int align, int64_t stride_limit,
                                   char *buf, size_t len)
{
    int64_t eff = ld == 0 ? row : ld;
    int64_t extent, stride;
    if (ld < 0)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s = %" PRId64 " is negative (0 means packed, %" PRId64 ")", field, ld, row);
    if (eff < row)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s = %" PRId64 " is less than the row length %s = %" PRId64, field, ld,
                          row_name, row);
    if (eff % align != 0)
        return fg__reason(buf, len, FUSEGEN_ERR_MISALIGNED,
                          "p->%s = %" PRId64 " is not a multiple of %d (the kernel's align_elems)", field,
                          ld, align);
    /* (rows - 1) * ld + row elements must be addressable in bytes with int64 */
    if (!fg__mul_i64(rows - 1, eff, &extent) || !fg__add_i64(extent, row, &extent) ||
        !fg__mul_i64(extent, (int64_t)elem_bytes, &extent))
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s = %" PRId64 " makes the tensor span more than 2^63 bytes (%" PRId64 " rows)",
                          field, ld, rows);
    if (stride_limit > 0 && (!fg__mul_i64(eff, (int64_t)elem_bytes, &stride) || stride >= stride_limit))
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = %" PRId64 " is a row stride of 2^40 bytes or more, which the Hopper "
                          "family's TMA descriptors cannot take", field, ld);
    return FUSEGEN_OK;
}

#define FG__TRY(expr)                                                                              \
    do {                                                                                           \
        fusegen_status fg__st_ = (expr);                                                           \
        if (fg__st_ != FUSEGEN_OK)                                                                 \
            return fg__st_;                                                                        \
    } while (0)

/* A kernel of the Hopper family (TMA and wgmma). arch_specific alone does not say so: the JIT's
 * portable kernels built for sm_90a are arch-specific code too. */
static int fg__hopper_family(const fusegen_kernel *k)
{
    return k->family == FUSEGEN_FAMILY_HOPPER;
}

static int fg__problem_is_chain(const fusegen_problem *p)
{
    return p->epilogue2 != NULL || p->n2 > 0;
}

/* How many ops named op an epilogue signature ("bias+residual+store+...") lists. */
static int fg__sig_count(const char *sig, const char *op)
{
    size_t op_len = strlen(op);
    int count = 0;
    while (sig && *sig) {
        size_t len = strcspn(sig, "+");
        if (len == op_len && strncmp(sig, op, len) == 0)
            count++;
        sig += len;
        if (*sig == '+')
            sig++;
    }
    return count;
}

/* What is wrong with p whatever the kernel, in this order: NULL, an unknown enum value, a NULL
 * epilogue, a negative n2 or sm, a size out of range, sizes whose products overflow, a leading
 * dimension that is negative, shorter than its row or too large, of a tensor that every kernel
 * computing p reads (A, B; out; residual and stores by the signature; B2, out2). INVALID_ARGUMENT
 * with the reason in buf, and no CUDA call: every entry point runs this first, so a bad problem
 * is reported as itself, never as "no kernel can run it" (which fusegen_select_or_jit would
 * answer with a compile). */
static fusegen_status fg__check_problem(const fusegen_problem *p, char *buf, size_t len)
{
    static const char *const dtype_fields[3] = {"a", "b", "out"};
    const fusegen_dtype dtypes[3] = {p ? p->a : 0, p ? p->b : 0, p ? p->out : 0};
    int i, chain, stores;

    if (buf && len)
        buf[0] = '\0';
    if (!p)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT, "the problem is NULL");
    for (i = 0; i < 3; i++)
        if (!fg__dtype_valid(dtypes[i]))
            return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                              "p->%s = %d is not a fusegen_dtype (f16 = 1, bf16 = 2, f32 = 3)", dtype_fields[i],
                              (int)dtypes[i]);
    if (!fg__layout_valid(p->b_layout))
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->b_layout = %d is not a fusegen_layout (nk = 0, kn = 1)", (int)p->b_layout);
    if (!p->epilogue)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->epilogue is NULL; give the epilogue signature (\"\" for a plain GEMM)");
    if (p->n2 < 0)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->n2 = %" PRId64 " is negative (0 for a single GEMM, > 0 for a chain)", p->n2);
    chain = fg__problem_is_chain(p);
    if (chain && !fg__layout_valid(p->b2_layout))
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->b2_layout = %d is not a fusegen_layout (nk = 0, kn = 1)", (int)p->b2_layout);
    if (chain && p->n2 == 0)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->epilogue2 is set, which makes a chain, but p->n2 = 0; give GEMM2's N, or "
                          "leave p->epilogue2 NULL for a single GEMM");
    if (chain && !p->epilogue2)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->n2 = %" PRId64 " makes a chain but p->epilogue2 is NULL; give GEMM2's epilogue "
                          "signature", p->n2);
    if (p->sm < 0)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->sm = %d is negative; give a compute capability x10 (e.g. 90) "
                          "or 0 for the current device", p->sm);

    FG__TRY(fg__check_dim("m", p->m, buf, len));
    FG__TRY(fg__check_dim("n", p->n, buf, len));
    FG__TRY(fg__check_dim("k", p->k, buf, len));
    if (chain)
        FG__TRY(fg__check_dim("n2", p->n2, buf, len));
    FG__TRY(fg__check_product("m", p->m, "n", p->n, buf, len));
    FG__TRY(fg__check_product("m", p->m, "k", p->k, buf, len));
    FG__TRY(fg__check_product("n", p->n, "k", p->k, buf, len));
    if (chain) {
        FG__TRY(fg__check_product("m", p->m, "n2", p->n2, buf, len));
        FG__TRY(fg__check_product("n", p->n, "n2", p->n2, buf, len));
    }
    /* The tensors every kernel that computes this problem reads: A and B; out (single GEMMs);
     * residual and stores as the signature lists them; B2 and out2 (chains). Alignment and the
     * TMA limit depend on the kernel and come with its checks. */
    FG__TRY(fg__check_ld("lda", p->lda, "k", p->k, p->m, fg__dtype_bytes(p->a), 1, 0, buf, len));
    if (p->b_layout == FUSEGEN_LAYOUT_NK)
        FG__TRY(fg__check_ld("ldb", p->ldb, "k", p->k, p->n, fg__dtype_bytes(p->b), 1, 0, buf, len));
    else
        FG__TRY(fg__check_ld("ldb", p->ldb, "n", p->n, p->k, fg__dtype_bytes(p->b), 1, 0, buf, len));
    if (!chain)
        FG__TRY(fg__check_ld("ldo", p->ldo, "n", p->n, p->m, fg__dtype_bytes(p->out), 1, 0, buf, len));
    if (fg__sig_count(p->epilogue, "residual") > 0)
        FG__TRY(fg__check_ld("ldr", p->ldr, "n", p->n, p->m, fg__dtype_bytes(p->out), 1, 0, buf, len));
    stores = fg__sig_count(p->epilogue, "store");
    for (i = 0; i < stores && i < FUSEGEN_MAX_STORES; i++) {
        char field[24];
        snprintf(field, sizeof field, "ld_store[%d]", i);
        FG__TRY(fg__check_ld(field, p->ld_store[i], "n", p->n, p->m, fg__dtype_bytes(p->out), 1, 0, buf, len));
    }
    if (chain) {
        if (p->b2_layout == FUSEGEN_LAYOUT_NK)
            FG__TRY(fg__check_ld("ldb2", p->ldb2, "n", p->n, p->n2, fg__dtype_bytes(p->b), 1, 0, buf, len));
        else
            FG__TRY(fg__check_ld("ldb2", p->ldb2, "n2", p->n2, p->n, fg__dtype_bytes(p->b), 1, 0, buf, len));
        FG__TRY(fg__check_ld("ldo2", p->ldo2, "n2", p->n2, p->m, fg__dtype_bytes(p->out), 1, 0, buf, len));
    }
    return FUSEGEN_OK;
}

fusegen_status fusegen__check_problem(const fusegen_problem *p)
{
    char reason[FG__REASON_LEN];
    if (fg__check_problem(p, reason, sizeof reason) != FUSEGEN_OK)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s", reason);
    return fg__ok();
}

/* A size the kernel rounds up to whole tiles: v + tile - 1 must fit the kernels' ints. */
static fusegen_status fg__check_tiled(const char *field, int64_t v, int tile, const char *what, char *buf,
                                      size_t len)
{
    if (tile > 0 && v > FG__INT_MAX - (tile - 1))
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = %" PRId64 " rounded up to %s of %d passes 2^31 - 1 (the kernels count in "
                          "32-bit ints)", field, v, what, tile);
    return FUSEGEN_OK;
}

/* The tiles of one GEMM (M x N over tile_m x tile_n): their count fits the kernels' ints, and
 * the row tiles fit the grid's y. */
static fusegen_status fg__check_tile_count(const char *gemm, int64_t m, int64_t n, int tile_m, int tile_n,
                                           char *buf, size_t len)
{
    int64_t tiles_m = (m + tile_m - 1) / tile_m, tiles_n = (n + tile_n - 1) / tile_n, count;
    if (tiles_m > FG__GRID_ROWS_MAX)
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->m = %" PRId64 " needs %" PRId64 " row tiles of %d%s but the grid allows %d",
                          m, tiles_m, tile_m, gemm, FG__GRID_ROWS_MAX);
    if (!fg__mul_i64(tiles_m, tiles_n, &count) || count > FG__INT_MAX)
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "%" PRId64 " x %" PRId64 " tiles of %dx%d%s are more than 2^31 - 1 (the kernels count "
                          "in 32-bit ints)", tiles_m, tiles_n, tile_m, tile_n, gemm);
    return FUSEGEN_OK;
}

/* Can kernel k run problem p, which passed fg__check_problem, on a device it was built for?
 * FUSEGEN_OK, or the status of the first failed constraint with its reason in buf. The checks
 * run in the documented order: dtypes, layout, epilogue, chain, the kernel's own limits (tile
 * rounding, workspace), the row limit, alignment, leading dimensions, grid. No CUDA call. */
static fusegen_status fg__check_kernel(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t len)
{
    int p_chain, align, tile_n, tile_k;
    const char *ldb_row, *ldb2_row;
    int64_t ldb_len, ldb_rows, ldb2_len, ldb2_rows, stride_limit;
    int i;

    if (buf && len)
        buf[0] = '\0';
    if (!k)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT, "the kernel is NULL");

    /* what is computed */
    FG__TRY(fg__check_dtype("a", k->a, p->a, buf, len));
    FG__TRY(fg__check_dtype("b", k->b, p->b, buf, len));
    FG__TRY(fg__check_dtype("out", k->out, p->out, buf, len));
    FG__TRY(fg__check_layout("b_layout", k->b_layout, p->b_layout, buf, len));
    FG__TRY(fg__check_epilogue("epilogue", k->epilogue, p->epilogue, buf, len));
    p_chain = fg__problem_is_chain(p);
    if (k->chain && !p_chain)
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "the kernel is a GEMM -> GEMM chain but the problem has one GEMM "
                          "(p->n2 = 0, p->epilogue2 = NULL)");
    if (!k->chain && p_chain)
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "the problem is a GEMM -> GEMM chain (p->n2 = %" PRId64 ", p->epilogue2 = %s) "
                          "but the kernel is a single GEMM", p->n2, p->epilogue2 ? "set" : "NULL");
    if (k->chain) {
        FG__TRY(fg__check_layout("b2_layout", k->b2_layout, p->b2_layout, buf, len));
        FG__TRY(fg__check_epilogue("epilogue2", k->epilogue2, p->epilogue2, buf, len));
    }

    /* the kernel's own limits: a corrupt table, sizes its ints cannot count, the workspace */
    if (k->tile_m <= 0)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "the kernel's tile_m = %d is not positive (corrupt dispatch table)", k->tile_m);
    if (fg__is_split(k) && k->tile_n <= 0)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "the split kernel's tile_n = %d is not positive (corrupt dispatch table)", k->tile_n);
    if (k->chain && k->tile2_m <= 0)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "the chain kernel's tile2_m = %d is not positive (corrupt dispatch table)", k->tile2_m);
    tile_n = k->tile_n > 0 ? k->tile_n : 1;
    tile_k = k->tile_k > 0 ? k->tile_k : 1;
    FG__TRY(fg__check_tiled("m", p->m, k->tile_m, "row tiles", buf, len));
    FG__TRY(fg__check_tiled("n", p->n, tile_n, "column tiles", buf, len));
    FG__TRY(fg__check_tiled("k", p->k, tile_k, "k tiles", buf, len));
    if (k->chain) {
        FG__TRY(fg__check_tiled("m", p->m, k->tile2_m, "GEMM2's row tiles", buf, len));
        FG__TRY(fg__check_tiled("n2", p->n2, k->tile2_n > 0 ? k->tile2_n : 1, "GEMM2's column tiles", buf, len));
        FG__TRY(fg__check_tiled("n", p->n, k->tile2_k > 0 ? k->tile2_k : 1, "GEMM2's k tiles", buf, len));
    }
    {
        size_t total;
        if (!fg__ws_fits(k, p, &total))
            return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                              "the workspace for p->m = %" PRId64 ", p->n = %" PRId64 " does not fit in size_t",
                              p->m, p->n);
    }

    /* row strategy: one CTA holds a whole row of N; cluster strategy: one cluster does */
    if (k->max_n > 0 && p->n > k->max_n)
        return fg__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->n = %" PRId64 " exceeds the kernel's max_n = %" PRId64 " (%s)", p->n, k->max_n,
                          k->split_k ? "split K: the reduce kernel keeps a whole row in shared memory"
                          : k->strategy == FUSEGEN_STRATEGY_CLUSTER
                              ? "cluster strategy: the thread blocks of one cluster hold a whole row"
                              : "row strategy: one thread block holds a whole row");

    /* alignment of the sizes */
    align = k->align_elems > 0 ? k->align_elems : 1;
    FG__TRY(fg__check_multiple("k", p->k, align, buf, len));
    FG__TRY(fg__check_multiple("n", p->n, align, buf, len));
    if (k->chain)
        FG__TRY(fg__check_multiple("n2", p->n2, align, buf, len));

    /* leading dimensions (0: packed) of the tensors this kernel uses; a chain's GEMM1 writes
     * into the workspace, so it has no out (nor ldo) */
    stride_limit = fg__hopper_family(k) ? FG__TMA_STRIDE_LIMIT : 0;
    if (k->b_layout == FUSEGEN_LAYOUT_NK) {
        ldb_row = "k"; ldb_len = p->k; ldb_rows = p->n;
    } else {
        ldb_row = "n"; ldb_len = p->n; ldb_rows = p->k;
    }
    FG__TRY(fg__check_ld("lda", p->lda, "k", p->k, p->m, fg__dtype_bytes(k->a), align, stride_limit, buf, len));
    FG__TRY(fg__check_ld("ldb", p->ldb, ldb_row, ldb_len, ldb_rows, fg__dtype_bytes(k->b), align, stride_limit,
                         buf, len));
    if (!k->chain)
        FG__TRY(fg__check_ld("ldo", p->ldo, "n", p->n, p->m, fg__dtype_bytes(k->out), align, stride_limit, buf,
                             len));
    if (k->uses_residual)
        FG__TRY(fg__check_ld("ldr", p->ldr, "n", p->n, p->m, fg__dtype_bytes(k->out), align, stride_limit, buf,
                             len));
    for (i = 0; i < k->n_stores && i < FUSEGEN_MAX_STORES; i++) {
        char field[24];
        snprintf(field, sizeof field, "ld_store[%d]", i);
        FG__TRY(fg__check_ld(field, p->ld_store[i], "n", p->n, p->m, fg__dtype_bytes(k->out), align,
                             stride_limit, buf, len));
    }
    if (k->chain) {
        if (k->b2_layout == FUSEGEN_LAYOUT_NK) {
            ldb2_row = "n"; ldb2_len = p->n; ldb2_rows = p->n2;
        } else {
            ldb2_row = "n2"; ldb2_len = p->n2; ldb2_rows = p->n;
        }
        FG__TRY(fg__check_ld("ldb2", p->ldb2, ldb2_row, ldb2_len, ldb2_rows, fg__dtype_bytes(k->b), align,
                             stride_limit, buf, len));
        FG__TRY(fg__check_ld("ldo2", p->ldo2, "n2", p->n2, p->m, fg__dtype_bytes(k->out), align, stride_limit,
                             buf, len));
    }

    /* grid: row tiles on gridDim.y, and the tile count */
    FG__TRY(fg__check_tile_count("", p->m, p->n, k->tile_m, tile_n, buf, len));
    if (k->chain)
        FG__TRY(fg__check_tile_count(" in GEMM2", p->m, p->n2, k->tile2_m, k->tile2_n > 0 ? k->tile2_n : 1, buf,
                                     len));
    return FUSEGEN_OK;
}

/* Was kernel k built for the device? p->sm, or the current device when it is 0. This is the
 * one check that may call CUDA; it runs after every other. */
static fusegen_status fg__check_arch(const fusegen_kernel *k, const fusegen_problem *p, fg__arch *arch, char *buf,
                                     size_t len)
{
    char dev[48];
    if (fg__resolve_sm(p, arch) != FUSEGEN_OK)
        return fg__reason(buf, len, arch->st, "%s", arch->why);
    if (arch->sm >= k->sm && (!k->arch_specific || arch->sm == k->sm))
        return FUSEGEN_OK;
    if (arch->from_device)
        snprintf(dev, sizeof dev, "the current device is sm_%d (p->sm = 0)", arch->sm);
    else
        snprintf(dev, sizeof dev, "p->sm = %d", arch->sm);
    if (k->arch_specific)
        return fg__reason(buf, len, FUSEGEN_ERR_ARCH,
                          "%s but the kernel is built for sm_%da only (arch-specific instructions)", dev, k->sm);
    return fg__reason(buf, len, FUSEGEN_ERR_ARCH, "%s but the kernel needs sm_%d or newer", dev, k->sm);
}

/* The three checks in their order (fusegen_why_not, fusegen_workspace_size). */
static fusegen_status fg__check(const fusegen_kernel *k, const fusegen_problem *p, fg__arch *arch,
                                char *buf, size_t len)
{
    if (!k)
        return fg__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT, "the kernel is NULL");
    FG__TRY(fg__check_problem(p, buf, len));
    FG__TRY(fg__check_kernel(k, p, buf, len));
    return fg__check_arch(k, p, arch, buf, len);
}

/* ---- public: eligibility and dispatch ----------------------------------------------------- */

const char *fusegen_why_not(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t buf_len)
{
    fg__arch arch;
    memset(&arch, 0, sizeof arch);
    if (!buf || buf_len == 0) {
        buf = fg__why_fallback;
        buf_len = sizeof fg__why_fallback;
    }
    if (fg__check(k, p, &arch, buf, buf_len) == FUSEGEN_OK)
        return NULL;
    return buf;
}

/* Appends "; name: reason" to the NOT_SUPPORTED listing while it fits. The listing is shorter
 * than the detail, which leaves room for the sentence around it and the "and N more" note. */
typedef struct fg__listing {
    char text[FG__DETAIL_LEN - 224];
    size_t used;
    size_t omitted;
} fg__listing;

static void fg__listing_add(fg__listing *l, const char *name, const char *reason)
{
    size_t room = sizeof l->text - l->used;
    size_t need = strlen(name) + strlen(reason) + 5;    /* "; " + ": " + NUL */
    if (l->omitted > 0 || need > room) {
        l->omitted++;
        return;
    }
    l->used += (size_t)snprintf(l->text + l->used, room, "%s%s: %s", l->used > 0 ? "; " : "", name, reason);
}

/* fusegen_query; sms < 0: the dispatch's SM count from the device (when p->sm is 0), else sms. */
static fusegen_status fg__query(const fusegen_library *lib, const fusegen_problem *p, const fusegen_kernel **out,
                                size_t cap, size_t *n_found, int sms_given)
{
    fg__arch arch;
    fg__listing listing;
    char reason[FG__REASON_LEN];
    size_t i, found = 0, written = 0;
    const fusegen_kernel *tuned = NULL;
    int sms;

    if (n_found)
        *n_found = 0;
    if (!lib)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "lib is NULL");
    if (!p)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "p (the problem) is NULL");
    if (!out && cap > 0)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "out is NULL but cap = %zu", cap);
    if (!lib->kernels && lib->n_kernels > 0)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "library '%s' has n_kernels = %zu but kernels is NULL",
                        fg__str(lib->name), lib->n_kernels);
    if (fg__check_problem(p, reason, sizeof reason) != FUSEGEN_OK)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s", reason);

    /* The reasons are written only when no kernel is eligible (a second pass below): most
     * kernels of a library compute something else, and formatting why cost more than the
     * checks themselves. */
    memset(&arch, 0, sizeof arch);
    /* the dispatch's waves, on the current device; a problem for another arch (p->sm set)
     * or no readable device: 0, a size-only order */
    sms = sms_given >= 0 ? sms_given : p->sm == 0 ? fg__sms_or_0() : 0;
    for (i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        size_t at, j;
        if (fg__check_kernel(k, p, NULL, 0) != FUSEGEN_OK || fg__check_arch(k, p, &arch, NULL, 0) != FUSEGEN_OK)
            continue;
        found++;
        /* a loaded tuning's winner first (tuning.c) */
        if (!tuned && fusegen__tuning_is_winner(lib, k, p))
            tuned = k;
        /* keep out[] sorted best first (the dispatch's model, dispatch.c); equals stay in table order */
        for (at = 0; at < written && k != tuned && (out[at] == tuned || !fg_dispatch_better(k, out[at], p, sms)); at++)
            ;
        if (at >= cap)
            continue;
        if (written < cap)
            written++;
        for (j = written - 1; j > at; j--)
            out[j] = out[j - 1];
        out[at] = k;
    }
    if (n_found)
        *n_found = found;
    if (found > 0)
        return fg__ok();

    if (arch.resolved && arch.st == FUSEGEN_ERR_CUDA)
        return fg__fail(FUSEGEN_ERR_CUDA, "%s", arch.why);
    if (lib->n_kernels == 0)
        return fg__fail(FUSEGEN_ERR_NOT_SUPPORTED, "library '%s' has no kernels", fg__str(lib->name));
    memset(&listing, 0, sizeof listing);
    for (i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        if (fg__check_kernel(k, p, reason, sizeof reason) != FUSEGEN_OK ||
            fg__check_arch(k, p, &arch, reason, sizeof reason) != FUSEGEN_OK)
            fg__listing_add(&listing, fg__str(k->name), reason);
    }
    if (listing.omitted > 0)
        return fg__fail(FUSEGEN_ERR_NOT_SUPPORTED,
                        "no kernel of library '%s' can run this problem: %s; ... and %zu more "
                        "(fusegen_why_not gives each reason)", fg__str(lib->name), listing.text, listing.omitted);
    return fg__fail(FUSEGEN_ERR_NOT_SUPPORTED, "no kernel of library '%s' can run this problem: %s",
                    fg__str(lib->name), listing.text);
}

fusegen_status fusegen_query(const fusegen_library *lib, const fusegen_problem *p,
                             const fusegen_kernel **out, size_t cap, size_t *n_found)
{
    return fg__query(lib, p, out, cap, n_found, -1);
}

fusegen_status fusegen__query_sms(const fusegen_library *lib, const fusegen_problem *p,
                                  const fusegen_kernel **out, size_t cap, size_t *n_found, int sms)
{
    return fg__query(lib, p, out, cap, n_found, sms < 0 ? 0 : sms);
}

/* fusegen_select's last answer on this thread. A decode step asks the same question thousands
 * of times a second, and the full query checks every kernel of the library (tens of
 * microseconds). The key is what the answer depends on: the library (address and table), the
 * problem's fields with its signatures' text (not their addresses, which a caller may reuse),
 * the current device when p->sm is 0, and the generation that fusegen__select_memo_invalidate
 * bumps. Longer signatures are not remembered. */
#define FG__MEMO_SIG 256
typedef struct fg__select_memo {
    unsigned generation;            /* 0: empty */
    const fusegen_library *lib;
    const fusegen_kernel *kernels;
    size_t n_kernels;
    fusegen_problem p;              /* epilogue and epilogue2 NULL: their text is below */
    char epilogue[FG__MEMO_SIG], epilogue2[FG__MEMO_SIG];
    int epilogue2_null;
    int device;                     /* -1 when p->sm names the arch */
    const fusegen_kernel *kernel;
} fg__select_memo;

static atomic_uint fg__memo_generation = 1;
static _Thread_local fg__select_memo fg__memo;

void fusegen__select_memo_invalidate(void)
{
    unsigned g = atomic_fetch_add(&fg__memo_generation, 1u) + 1u;
    if (g == 0)   /* wrapped: 0 means empty */
        atomic_fetch_add(&fg__memo_generation, 1u);
}

/* The key of (lib, p) into m (without the answer); 0 when p cannot be remembered. */
static int fg__memo_key(fg__select_memo *m, const fusegen_library *lib, const fusegen_problem *p)
{
    size_t l1 = p->epilogue ? strlen(p->epilogue) : 0, l2 = p->epilogue2 ? strlen(p->epilogue2) : 0;
    if (!lib || !p->epilogue || l1 >= FG__MEMO_SIG || l2 >= FG__MEMO_SIG)
        return 0;
    memset(m, 0, sizeof *m);
    m->generation = atomic_load_explicit(&fg__memo_generation, memory_order_acquire);
    m->lib = lib;
    m->kernels = lib->kernels;
    m->n_kernels = lib->n_kernels;
    memcpy(&m->p, p, sizeof *p);
    m->p.epilogue = NULL;
    m->p.epilogue2 = NULL;
    memcpy(m->epilogue, p->epilogue, l1);
    if (p->epilogue2)
        memcpy(m->epilogue2, p->epilogue2, l2);
    m->epilogue2_null = p->epilogue2 == NULL;
    m->device = -1;
    if (p->sm == 0 && cudaGetDevice(&m->device) != cudaSuccess)
        return 0;
    return 1;
}

static int fg__memo_same(const fg__select_memo *a, const fg__select_memo *b)
{
    return a->generation == b->generation && a->lib == b->lib && a->kernels == b->kernels &&
           a->n_kernels == b->n_kernels && a->device == b->device && a->epilogue2_null == b->epilogue2_null &&
           memcmp(&a->p, &b->p, sizeof a->p) == 0 && strcmp(a->epilogue, b->epilogue) == 0 &&
           strcmp(a->epilogue2, b->epilogue2) == 0;
}

fusegen_status fusegen_select(const fusegen_library *lib, const fusegen_problem *p, const fusegen_kernel **out)
{
    const fusegen_kernel *best = NULL;
    fusegen_status st;
    fg__select_memo key;
    int memo;
    if (!out)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    memo = p && fg__memo_key(&key, lib, p);
    if (memo && fg__memo.generation != 0 && fg__memo_same(&fg__memo, &key)) {
        *out = fg__memo.kernel;
        return fg__ok();
    }
    st = fusegen_query(lib, p, &best, 1, NULL);
    if (st == FUSEGEN_OK) {
        *out = best;
        fusegen_record_problem(lib, p, best);   /* when a recording is open (record.c) */
        if (memo) {
            key.kernel = best;
            fg__memo = key;
        }
    }
    return st;
}

fusegen_status fusegen_find(const fusegen_library *lib, const char *name, const fusegen_kernel **out)
{
    size_t i, variants = 0;
    if (out)
        *out = NULL;
    if (!lib)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "lib is NULL");
    if (!name)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "name is NULL");
    if (!out)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "out is NULL");
    if (!lib->kernels && lib->n_kernels > 0)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "library '%s' has n_kernels = %zu but kernels is NULL",
                        fg__str(lib->name), lib->n_kernels);
    for (i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        if (k->name && strcmp(k->name, name) == 0) {
            *out = k;
            return fg__ok();
        }
        if (k->spec_kernel && strcmp(k->spec_kernel, name) == 0)
            variants++;
    }
    if (variants > 0)
        return fg__fail(FUSEGEN_ERR_NOT_FOUND,
                        "no kernel named '%s' in library '%s'; '%s' is a spec kernel with %zu variant(s): "
                        "use fusegen_select, or one variant's full name", name, fg__str(lib->name), name,
                        variants);
    return fg__fail(FUSEGEN_ERR_NOT_FOUND, "no kernel named '%s' in library '%s' (%zu kernels)", name,
                    fg__str(lib->name), lib->n_kernels);
}

/* ---- public: workspace and run ------------------------------------------------------------ */

/* Bytes of workspace for a problem that passed fg__check (so the sum fits in size_t). */
static size_t fg__ws_bytes(const fusegen_kernel *k, const fusegen_problem *p)
{
    int split = fg__is_split(k);
    if (k->split_k)
        return fusegen_ws_layout_for_split_k(fg_dispatch_k_slices(k, p, fg__sms_or_0()), p->m, p->n).total;
    if (!split && !k->chain)
        return 0;
    return fusegen_ws_layout_for(split, k->tile_n, k->chain, fg__dtype_bytes(k->out), p->m, p->n).total;
}

fusegen_status fusegen_workspace_size(const fusegen_kernel *k, const fusegen_problem *p, size_t *bytes)
{
    fg__arch arch;
    char reason[FG__REASON_LEN];
    fusegen_status st;

    if (bytes)
        *bytes = 0;
    if (!k)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "k (the kernel) is NULL");
    if (!p)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "p (the problem) is NULL");
    if (!bytes)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "bytes is NULL");
    memset(&arch, 0, sizeof arch);
    st = fg__check(k, p, &arch, reason, sizeof reason);
    if (st != FUSEGEN_OK) {
        /* a bad problem is reported as itself, as fusegen_run does, not as the kernel's */
        if (fg__check_problem(p, NULL, 0) != FUSEGEN_OK)
            return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s", reason);
        return fg__fail(st, "kernel %s cannot run this problem: %s", fg__str(k->name), reason);
    }
    *bytes = fg__ws_bytes(k, p);
    return fg__ok();
}

/* A required device pointer: present and 16-byte aligned. */
static fusegen_status fg__check_ptr(const fusegen_kernel *k, const char *field, const void *ptr, const char *why)
{
    if (!ptr)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s is NULL; kernel %s needs it (%s)", field,
                        fg__str(k->name), why);
    if ((uintptr_t)ptr % FG__PTR_ALIGN != 0)
        return fg__fail(FUSEGEN_ERR_MISALIGNED, "%s = 0x%" PRIxPTR " is not %d-byte aligned", field,
                        (uintptr_t)ptr, FG__PTR_ALIGN);
    return FUSEGEN_OK;
}

static fusegen_status fg__check_args(const fusegen_kernel *k, const fusegen_args *args)
{
    char field[24];
    int i;

    FG__TRY(fg__check_ptr(k, "args.a", args->a, "the A operand"));
    FG__TRY(fg__check_ptr(k, "args.b", args->b, "the B operand"));
    if (!k->chain)   /* a chain's GEMM1 writes into the workspace; its output is out2 */
        FG__TRY(fg__check_ptr(k, "args.out", args->out, "the output"));
    if (k->uses_bias)
        FG__TRY(fg__check_ptr(k, "args.bias", args->bias, "its epilogue adds a bias"));
    if (k->uses_residual)
        FG__TRY(fg__check_ptr(k, "args.residual", args->residual, "its epilogue adds a residual"));
    if (k->uses_gamma)
        FG__TRY(fg__check_ptr(k, "args.gamma", args->gamma, "its norm scales by gamma"));
    if (k->uses_beta)
        FG__TRY(fg__check_ptr(k, "args.beta", args->beta, "its norm shifts by beta"));
    for (i = 0; i < k->n_stores && i < FUSEGEN_MAX_STORES; i++) {
        snprintf(field, sizeof field, "args.store[%d]", i);
        FG__TRY(fg__check_ptr(k, field, args->store[i], "its epilogue stores an extra output"));
    }
    if (!k->chain)
        return FUSEGEN_OK;
    FG__TRY(fg__check_ptr(k, "args.b2", args->b2, "the B operand of GEMM2"));
    FG__TRY(fg__check_ptr(k, "args.out2", args->out2, "the output of GEMM2"));
    if (k->uses_bias2)
        FG__TRY(fg__check_ptr(k, "args.bias2", args->bias2, "GEMM2's epilogue adds a bias"));
    if (k->uses_residual2)
        FG__TRY(fg__check_ptr(k, "args.residual2", args->residual2, "GEMM2's epilogue adds a residual"));
    for (i = 0; i < k->n_stores2 && i < FUSEGEN_MAX_STORES; i++) {
        snprintf(field, sizeof field, "args.store2[%d]", i);
        FG__TRY(fg__check_ptr(k, field, args->store2[i], "GEMM2's epilogue stores an extra output"));
    }
    return FUSEGEN_OK;
}

/* An arch-specific kernel launched on any other device runs code that traps (the fault ends the
 * CUDA context), so before its launch the current device is compared with the kernel's sm even
 * when p->sm names one: p->sm may describe another device than the one current now. */
static fusegen_status fg__check_device(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t len)
{
    int sm = 0;
    cudaError_t e;
    if (!k->arch_specific || p->sm == 0)   /* p->sm = 0 already was the current device */
        return FUSEGEN_OK;
    e = fg__device_sm(&sm);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return fg__reason(buf, len, FUSEGEN_ERR_CUDA,
                          "the kernel is built for sm_%da only, and the current device's compute capability "
                          "could not be read: %s: %s", k->sm, cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (sm != k->sm)
        return fg__reason(buf, len, FUSEGEN_ERR_ARCH,
                          "p->sm = %d but the current device is sm_%d, and the kernel is built for sm_%da only "
                          "(arch-specific instructions)", p->sm, sm, k->sm);
    return FUSEGEN_OK;
}

/* A failed launch of a cluster kernel whose clusters pass the portable size: what a smaller GPU
 * or MIG slice lacks (no cluster that large fits its GPCs). */
static const char *fg__cluster_remark(const fusegen_kernel *k, const fusegen_problem *p)
{
    if (k->strategy != FUSEGEN_STRATEGY_CLUSTER || k->tile_n <= 0 ||
        (p->n + k->tile_n - 1) / k->tile_n <= FG__PORTABLE_CLUSTER)
        return "";
    return " (its clusters of more than 8 thread blocks, a non-portable size, may not fit this device; a split "
           "kernel, where the library has one, takes this N)";
}

fusegen_status fusegen_run(const fusegen_kernel *k, const fusegen_problem *p, const fusegen_args *args,
                           void *workspace, size_t workspace_bytes, cudaStream_t stream)
{
    fg__arch arch;
    char reason[FG__REASON_LEN];
    fusegen_status st;
    size_t need;

    if (!k)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "k (the kernel) is NULL");
    if (!p)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "p (the problem) is NULL");
    if (!args)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "args is NULL");

    if (fg__check_problem(p, reason, sizeof reason) != FUSEGEN_OK)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s", reason);
    st = fg__check_kernel(k, p, reason, sizeof reason);
    if (st != FUSEGEN_OK)
        return fg__fail(st, "kernel %s cannot run this problem: %s", fg__str(k->name), reason);

    FG__TRY(fg__check_args(k, args));

    need = fg__ws_bytes(k, p);
    if (need > 0) {
        if (!workspace)
            return fg__fail(FUSEGEN_ERR_WORKSPACE,
                            "workspace is NULL but kernel %s needs %zu bytes (fusegen_workspace_size)",
                            fg__str(k->name), need);
        if ((uintptr_t)workspace % FG__WS_ALIGN != 0)
            return fg__fail(FUSEGEN_ERR_MISALIGNED, "workspace = 0x%" PRIxPTR " is not %d-byte aligned",
                            (uintptr_t)workspace, FG__WS_ALIGN);
        if (workspace_bytes < need)
            return fg__fail(FUSEGEN_ERR_WORKSPACE,
                            "workspace_bytes = %zu but kernel %s needs %zu bytes (fusegen_workspace_size)",
                            workspace_bytes, fg__str(k->name), need);
    }

    /* the device last: the only check that may call CUDA */
    memset(&arch, 0, sizeof arch);
    st = fg__check_arch(k, p, &arch, reason, sizeof reason);
    if (st != FUSEGEN_OK)
        return fg__fail(st, "kernel %s cannot run this problem: %s", fg__str(k->name), reason);
    st = fg__check_device(k, p, reason, sizeof reason);
    if (st != FUSEGEN_OK)
        return fg__fail(st, "kernel %s cannot run on this device: %s", fg__str(k->name), reason);

    if (!k->launch_jit && !k->functions)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "kernel %s has no kernel functions (corrupt dispatch table)",
                        fg__str(k->name));
    if (k->launch_jit) {
        if (k->launch_jit(k, p, args, workspace, stream, reason, sizeof reason) == 0) return fg__ok();
    } else {
        if (fusegen__launch(k, NULL, p, args, workspace, stream, reason, sizeof reason) == 0) return fg__ok();
    }
    return fg__fail(FUSEGEN_ERR_CUDA, "launching kernel %s failed: %s%s", fg__str(k->name), reason,
                    fg__cluster_remark(k, p));
}
