/* check.c - whether a kernel can run a problem (fusegen_internal.h): the problem alone
 * (fusegen__problem_reason: a bad one is INVALID_ARGUMENT whatever the library holds), the kernel
 * against the problem (fusegen__kernel_reason) and the device (fusegen__arch_reason, the one check
 * that may call CUDA, so it runs last); each writes one reason and returns the status that reason
 * deserves, so fusegen_why_not (reason only), fusegen_query (reason per kernel) and fusegen_run
 * (status + reason) agree by construction. Also the names, checked arithmetic and formatting the
 * checks share with runtime.c. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fusegen_internal.h"
#include "fusegen_workspace.h"

#if defined(__GNUC__) || defined(__clang__)
#define CHECK__PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define CHECK__PRINTF(fmt_idx, arg_idx)
#endif

enum {
    CHECK__GRID_ROWS_MAX = 65535,   /* row tiles go on gridDim.y */
    CHECK__WS_ALIGN = FUSEGEN_REG_WORKSPACE_ALIGN
};
#define CHECK__DIM_LIMIT ((int64_t)1 << 31)   /* m, n, k, n2 must be below this */
/* The kernels count rows, columns, k steps and tiles in 32-bit ints: a size rounded up to its
 * tile, and the number of tiles, must stay at or below this. */
#define CHECK__INT_MAX ((int64_t)INT32_MAX)
/* A Hopper kernel's TMA descriptors take row strides below 2^40 bytes. */
#define CHECK__TMA_STRIDE_LIMIT ((int64_t)1 << 40)

/* ---- names -------------------------------------------------------------------------------- */

static const char *check__dtype_name(fusegen_dtype t)
{
    switch (t) {
    case FUSEGEN_DTYPE_F16:  return "f16";
    case FUSEGEN_DTYPE_BF16: return "bf16";
    case FUSEGEN_DTYPE_F32:  return "f32";
    }
    return "?";
}

static int check__dtype_valid(fusegen_dtype t)
{
    return t == FUSEGEN_DTYPE_F16 || t == FUSEGEN_DTYPE_BF16 || t == FUSEGEN_DTYPE_F32;
}

size_t fusegen__dtype_bytes(fusegen_dtype t)
{
    return t == FUSEGEN_DTYPE_F32 ? 4u : 2u;
}

static const char *check__layout_name(fusegen_layout l)
{
    switch (l) {
    case FUSEGEN_LAYOUT_NK: return "nk";
    case FUSEGEN_LAYOUT_KN: return "kn";
    }
    return "?";
}

static int check__layout_valid(fusegen_layout l)
{
    return l == FUSEGEN_LAYOUT_NK || l == FUSEGEN_LAYOUT_KN;
}

const char *fusegen__str(const char *s)
{
    return s ? s : "(null)";
}

/* ---- formatting --------------------------------------------------------------------------- */

/* The store arrays' field names, written out so that a passing check formats nothing. */
_Static_assert(FUSEGEN_MAX_STORES == 4, "one name per store slot below");
static const char *const check__ld_store_names[FUSEGEN_MAX_STORES] = {"ld_store[0]", "ld_store[1]", "ld_store[2]",
                                                                       "ld_store[3]"};

/* vsnprintf into buf; a cut message ends in "..." so that nobody mistakes it for the whole. */
void fusegen__vformat(char *buf, size_t len, const char *fmt, va_list ap)
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
CHECK__PRINTF(4, 5)
static fusegen_status check__reason(char *buf, size_t len, fusegen_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fusegen__vformat(buf, len, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- checked arithmetic ------------------------------------------------------------------- */

static int check__mul_i64(int64_t a, int64_t b, int64_t *r)
{
    /* both operands are non-negative here */
    if (a != 0 && b > INT64_MAX / a)
        return 0;
    *r = a * b;
    return 1;
}

static int check__add_i64(int64_t a, int64_t b, int64_t *r)
{
    if (b > INT64_MAX - a)
        return 0;
    *r = a + b;
    return 1;
}

static int check__mul_sz(size_t a, size_t b, size_t *r)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *r = a * b;
    return 1;
}

/* at = align256(at + bytes), failing on overflow. */
static int check__ws_add(size_t *at, size_t bytes)
{
    size_t x;
    if (bytes > SIZE_MAX - *at)
        return 0;
    x = *at + bytes;
    if (x > SIZE_MAX - (CHECK__WS_ALIGN - 1))
        return 0;
    *at = fusegen_ws_align(x);
    return 1;
}

int fusegen__is_split(const fusegen_kernel *k)
{
    return k->strategy == FUSEGEN_STRATEGY_SPLIT;
}

/* The same sum as fusegen_ws_layout_for (split K: with the most slices any device gets), with
 * every step checked, so that the runtime only calls those functions once the total is known to
 * fit in size_t. */
static int check__ws_fits(const fusegen_kernel *k, const fusegen_problem *p, size_t *total)
{
    size_t at = 0, bytes;
    size_t m = (size_t)p->m, n = (size_t)p->n, hidden_ld = (size_t)fusegen_ws_hidden_ld(p->n);
    if (k->split_k) {
        if (!check__mul_sz(m, n, &bytes) || !check__mul_sz(bytes, 4u * FUSEGEN_SPLIT_K_MAX_SLICES, &bytes) ||
            !check__ws_add(&at, bytes))
            return 0;
        if (k->chain &&   /* GEMM1's result, and GEMM2's partial sums (a bound on the larger) */
            (!check__mul_sz(m, hidden_ld, &bytes) || !check__mul_sz(bytes, fusegen__dtype_bytes(k->out), &bytes) ||
             !check__ws_add(&at, bytes) || !check__mul_sz(m, (size_t)p->n2, &bytes) ||
             !check__mul_sz(bytes, 4u * FUSEGEN_SPLIT_K_MAX_SLICES, &bytes) || !check__ws_add(&at, bytes) ||
             !check__ws_add(&at, 2u * FUSEGEN_REG_WORKSPACE_ALIGN)))
            return 0;
        *total = at;
        return 1;
    }
    if (fusegen__is_split(k)) {
        size_t tile_n = (size_t)k->tile_n;
        size_t tiles_n = (n + tile_n - 1) / tile_n;
        if (!check__mul_sz(m, n, &bytes) || !check__mul_sz(bytes, 4u, &bytes) || !check__ws_add(&at, bytes))
            return 0;
        if (!check__mul_sz(m, tiles_n, &bytes) || !check__mul_sz(bytes, 8u, &bytes) || !check__ws_add(&at, bytes))
            return 0;
    }
    if (k->chain) {
        if (!check__mul_sz(m, hidden_ld, &bytes) || !check__mul_sz(bytes, fusegen__dtype_bytes(k->out), &bytes) ||
            !check__ws_add(&at, bytes))
            return 0;
    }
    *total = at;
    return 1;
}

/* ---- architecture ------------------------------------------------------------------------- */


static cudaError_t check__device_sm(int *sm)
{
    int sms;
    return fusegen__device_info(sm, &sms);
}

static cudaError_t check__device_sms(int *sms)
{
    int sm;
    return fusegen__device_info(&sm, sms);
}

/* The current device's SM count, 0 when it cannot be read. */
int fusegen__sms_or_0(void)
{
    int sms = 0;
    return check__device_sms(&sms) == cudaSuccess ? sms : 0;
}

static fusegen_status check__resolve_sm(const fusegen_problem *p, fusegen__arch *a)
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
    a->from_device = 1;   /* p->sm is 0 (fusegen__problem_reason refused a negative one) */
    e = check__device_sm(&sm);
    if (e != cudaSuccess) {
        /* Do not leave our own failure behind for a later cudaGetLastError to report. */
        (void)cudaGetLastError();
        return a->st = check__reason(a->why, sizeof a->why, FUSEGEN_ERR_CUDA,
                                  "p->sm = 0 asks for the current device, but its compute capability "
                                  "could not be read: %s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
    }
    a->sm = sm;
    return a->st = FUSEGEN_OK;
}

/* ---- the eligibility check ---------------------------------------------------------------- */

/* The matches below compare values fusegen__problem_reason has found valid. */
static fusegen_status check__check_dtype(const char *field, fusegen_dtype want, fusegen_dtype got,
                                      char *buf, size_t len)
{
    if (got != want)
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = %s but the kernel takes %s = %s", field, check__dtype_name(got), field,
                          check__dtype_name(want));
    return FUSEGEN_OK;
}

static fusegen_status check__check_layout(const char *field, fusegen_layout want, fusegen_layout got,
                                       char *buf, size_t len)
{
    if (got != want)
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = %s but the kernel takes %s = %s", field, check__layout_name(got), field,
                          check__layout_name(want));
    return FUSEGEN_OK;
}

static fusegen_status check__check_epilogue(const char *field, const char *want, const char *got,
                                         char *buf, size_t len)
{
    if (!want || strcmp(got, want) != 0)
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = \"%s\" but the kernel computes \"%s\"", field, got, fusegen__str(want));
    return FUSEGEN_OK;
}

static fusegen_status check__check_dim(const char *field, int64_t v, char *buf, size_t len)
{
    if (v <= 0)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT, "p->%s = %" PRId64 " must be > 0", field, v);
    if (v >= CHECK__DIM_LIMIT)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s = %" PRId64 " must be < 2^31 (2147483648)", field, v);
    return FUSEGEN_OK;
}

static fusegen_status check__check_product(const char *x, int64_t xv, const char *y, int64_t yv,
                                        char *buf, size_t len)
{
    int64_t r;
    if (!check__mul_i64(xv, yv, &r))
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s * p->%s = %" PRId64 " * %" PRId64 " overflows int64", x, y, xv, yv);
    return FUSEGEN_OK;
}

static fusegen_status check__check_multiple(const char *field, int64_t v, int align, char *buf, size_t len)
{
    if (v % align != 0)
        return check__reason(buf, len, FUSEGEN_ERR_MISALIGNED,
                          "p->%s = %" PRId64 " is not a multiple of %d (the kernel's align_elems)", field, v,
                          align);
    return FUSEGEN_OK;
}

/* One leading dimension: ld (0: packed), the row length it must cover, the rows it spans, the
 * element size (for the byte-extent check) and the largest row stride in bytes (0: none). */
static fusegen_status check__check_ld(const char *field, int64_t ld, const char *row_name, int64_t row,
                                   int64_t rows, size_t elem_bytes, int align, int64_t stride_limit,
                                   char *buf, size_t len)
{
    int64_t eff = ld == 0 ? row : ld;
    int64_t extent, stride;
    if (ld < 0)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s = %" PRId64 " is negative (0 means packed, %" PRId64 ")", field, ld, row);
    if (eff < row)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s = %" PRId64 " is less than the row length %s = %" PRId64, field, ld,
                          row_name, row);
    if (eff % align != 0)
        return check__reason(buf, len, FUSEGEN_ERR_MISALIGNED,
                          "p->%s = %" PRId64 " is not a multiple of %d (the kernel's align_elems)", field,
                          ld, align);
    /* (rows - 1) * ld + row elements must be addressable in bytes with int64 */
    if (!check__mul_i64(rows - 1, eff, &extent) || !check__add_i64(extent, row, &extent) ||
        !check__mul_i64(extent, (int64_t)elem_bytes, &extent))
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->%s = %" PRId64 " makes the tensor span more than 2^63 bytes (%" PRId64 " rows)",
                          field, ld, rows);
    if (stride_limit > 0 && (!check__mul_i64(eff, (int64_t)elem_bytes, &stride) || stride >= stride_limit))
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = %" PRId64 " is a row stride of 2^40 bytes or more, which the Hopper "
                          "family's TMA descriptors cannot take", field, ld);
    return FUSEGEN_OK;
}


/* A kernel of the Hopper family (TMA and wgmma). arch_specific alone does not say so: the JIT's
 * portable kernels built for sm_90a are arch-specific code too. */
static int check__hopper_family(const fusegen_kernel *k)
{
    return k->family == FUSEGEN_FAMILY_HOPPER;
}

static int check__problem_is_chain(const fusegen_problem *p)
{
    return p->epilogue2 != NULL || p->n2 > 0;
}

/* How many ops named op an epilogue signature ("bias+residual+store+...") lists. */
static int check__sig_count(const char *sig, const char *op)
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

int64_t fusegen__out_cols(const fusegen_problem *p)
{
#define CHECK__GLU(id, token, word, value, cls, key, dflt) \
    +((cls) == FUSEGEN_REG_OPCLASS_GLU ? check__sig_count(p->epilogue, token) : 0)
    const int glu = 0 FUSEGEN_REG_OPS(CHECK__GLU);
#undef CHECK__GLU
    return glu ? p->n / 2 : p->n;
}

/* What is wrong with p whatever the kernel, in this order: NULL, an unknown enum value, a NULL
 * epilogue, a negative n2 or sm, a size out of range, sizes whose products overflow, a leading
 * dimension that is negative, shorter than its row or too large, of a tensor that every kernel
 * computing p reads (A, B; out; residual and stores by the signature; B2, out2). INVALID_ARGUMENT
 * with the reason in buf, and no CUDA call: every entry point runs this first, so a bad problem
 * is reported as itself, never as "no kernel can run it" (which fusegen_select_or_jit would
 * answer with a compile). */
fusegen_status fusegen__problem_reason(const fusegen_problem *p, char *buf, size_t len)
{
    static const char *const dtype_fields[3] = {"a", "b", "out"};
    const fusegen_dtype dtypes[3] = {p ? p->a : 0, p ? p->b : 0, p ? p->out : 0};
    int i, chain, stores;

    if (buf && len)
        buf[0] = '\0';
    if (!p)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT, "the problem is NULL");
    for (i = 0; i < 3; i++)
        if (!check__dtype_valid(dtypes[i]))
            return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                              "p->%s = %d is not a fusegen_dtype (f16 = 1, bf16 = 2, f32 = 3)", dtype_fields[i],
                              (int)dtypes[i]);
    if (!check__layout_valid(p->b_layout))
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->b_layout = %d is not a fusegen_layout (nk = 0, kn = 1)", (int)p->b_layout);
    if (!p->epilogue)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->epilogue is NULL; give the epilogue signature (\"\" for a plain GEMM)");
    if (p->n2 < 0)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->n2 = %" PRId64 " is negative (0 for a single GEMM, > 0 for a chain)", p->n2);
    chain = check__problem_is_chain(p);
    if (chain && !check__layout_valid(p->b2_layout))
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->b2_layout = %d is not a fusegen_layout (nk = 0, kn = 1)", (int)p->b2_layout);
    if (chain && p->n2 == 0)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->epilogue2 is set, which makes a chain, but p->n2 = 0; give GEMM2's N, or "
                          "leave p->epilogue2 NULL for a single GEMM");
    if (chain && !p->epilogue2)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->n2 = %" PRId64 " makes a chain but p->epilogue2 is NULL; give GEMM2's epilogue "
                          "signature", p->n2);
    if (p->sm < 0)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "p->sm = %d is negative; give a compute capability x10 (e.g. 90) "
                          "or 0 for the current device", p->sm);

    FUSEGEN__TRY(check__check_dim("m", p->m, buf, len));
    FUSEGEN__TRY(check__check_dim("n", p->n, buf, len));
    FUSEGEN__TRY(check__check_dim("k", p->k, buf, len));
    if (chain)
        FUSEGEN__TRY(check__check_dim("n2", p->n2, buf, len));
    FUSEGEN__TRY(check__check_product("m", p->m, "n", p->n, buf, len));
    FUSEGEN__TRY(check__check_product("m", p->m, "k", p->k, buf, len));
    FUSEGEN__TRY(check__check_product("n", p->n, "k", p->k, buf, len));
    if (chain) {
        FUSEGEN__TRY(check__check_product("m", p->m, "n2", p->n2, buf, len));
        FUSEGEN__TRY(check__check_product("n", p->n, "n2", p->n2, buf, len));
    }
    /* The tensors every kernel that computes this problem reads: A and B; out (single GEMMs);
     * residual and stores as the signature lists them; B2 and out2 (chains). Alignment and the
     * TMA limit depend on the kernel and come with its checks. */
    FUSEGEN__TRY(check__check_ld("lda", p->lda, "k", p->k, p->m, fusegen__dtype_bytes(p->a), 1, 0, buf, len));
    if (p->b_layout == FUSEGEN_LAYOUT_NK)
        FUSEGEN__TRY(check__check_ld("ldb", p->ldb, "k", p->k, p->n, fusegen__dtype_bytes(p->b), 1, 0, buf, len));
    else
        FUSEGEN__TRY(check__check_ld("ldb", p->ldb, "n", p->n, p->k, fusegen__dtype_bytes(p->b), 1, 0, buf, len));
    /* out, residual and stores have N / 2 columns after a gated activation */
    const int64_t out_cols = fusegen__out_cols(p);
    const char *out_n = out_cols == p->n ? "n" : "n / 2";
    if (!chain)
        FUSEGEN__TRY(check__check_ld("ldo", p->ldo, out_n, out_cols, p->m, fusegen__dtype_bytes(p->out), 1, 0, buf, len));
    if (check__sig_count(p->epilogue, "residual") > 0)
        FUSEGEN__TRY(check__check_ld("ldr", p->ldr, out_n, out_cols, p->m, fusegen__dtype_bytes(p->out), 1, 0, buf, len));
    stores = check__sig_count(p->epilogue, "store");
    for (i = 0; i < stores && i < FUSEGEN_MAX_STORES; i++)
        FUSEGEN__TRY(check__check_ld(check__ld_store_names[i], p->ld_store[i], out_n, out_cols, p->m,
                                     fusegen__dtype_bytes(p->out), 1, 0, buf, len));
    if (chain) {
        if (p->b2_layout == FUSEGEN_LAYOUT_NK)
            FUSEGEN__TRY(check__check_ld("ldb2", p->ldb2, "n", p->n, p->n2, fusegen__dtype_bytes(p->b), 1, 0, buf, len));
        else
            FUSEGEN__TRY(check__check_ld("ldb2", p->ldb2, "n2", p->n2, p->n, fusegen__dtype_bytes(p->b), 1, 0, buf, len));
        FUSEGEN__TRY(check__check_ld("ldo2", p->ldo2, "n2", p->n2, p->m, fusegen__dtype_bytes(p->out), 1, 0, buf, len));
    }
    return FUSEGEN_OK;
}

fusegen_status fusegen__check_problem(const fusegen_problem *p)
{
    char reason[FUSEGEN__REASON_LEN];
    if (fusegen__problem_reason(p, reason, sizeof reason) != FUSEGEN_OK)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "%s", reason);
    return fusegen__detail_set(FUSEGEN_OK, "%s", "");
}

/* A size the kernel rounds up to whole tiles: v + tile - 1 must fit the kernels' ints. */
static fusegen_status check__check_tiled(const char *field, int64_t v, int tile, const char *what, char *buf,
                                      size_t len)
{
    if (tile > 0 && v > CHECK__INT_MAX - (tile - 1))
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->%s = %" PRId64 " rounded up to %s of %d passes 2^31 - 1 (the kernels count in "
                          "32-bit ints)", field, v, what, tile);
    return FUSEGEN_OK;
}

/* The tiles of one GEMM (M x N over tile_m x tile_n): their count fits the kernels' ints, and
 * the row tiles fit the grid's y. */
static fusegen_status check__check_tile_count(const char *gemm, int64_t m, int64_t n, int tile_m, int tile_n,
                                           char *buf, size_t len)
{
    int64_t tiles_m = (m + tile_m - 1) / tile_m, tiles_n = (n + tile_n - 1) / tile_n, count;
    if (tiles_m > CHECK__GRID_ROWS_MAX)
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->m = %" PRId64 " needs %" PRId64 " row tiles of %d%s but the grid allows %d",
                          m, tiles_m, tile_m, gemm, CHECK__GRID_ROWS_MAX);
    if (!check__mul_i64(tiles_m, tiles_n, &count) || count > CHECK__INT_MAX)
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "%" PRId64 " x %" PRId64 " tiles of %dx%d%s are more than 2^31 - 1 (the kernels count "
                          "in 32-bit ints)", tiles_m, tiles_n, tile_m, tile_n, gemm);
    return FUSEGEN_OK;
}

/* Can kernel k run problem p, which passed fusegen__problem_reason, on a device it was built for?
 * FUSEGEN_OK, or the status of the first failed constraint with its reason in buf. The checks
 * run in the documented order: dtypes, layout, epilogue, chain, the kernel's own limits (tile
 * rounding, workspace), the row limit, alignment, leading dimensions, grid. No CUDA call. */
fusegen_status fusegen__kernel_reason(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t len)
{
    int p_chain, align, tile_n, tile_k;
    const char *ldb_row, *ldb2_row;
    int64_t ldb_len, ldb_rows, ldb2_len, ldb2_rows, stride_limit;
    int i;

    if (buf && len)
        buf[0] = '\0';
    if (!k)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT, "the kernel is NULL");

    /* what is computed */
    FUSEGEN__TRY(check__check_dtype("a", k->a, p->a, buf, len));
    FUSEGEN__TRY(check__check_dtype("b", k->b, p->b, buf, len));
    FUSEGEN__TRY(check__check_dtype("out", k->out, p->out, buf, len));
    FUSEGEN__TRY(check__check_layout("b_layout", k->b_layout, p->b_layout, buf, len));
    FUSEGEN__TRY(check__check_epilogue("epilogue", k->epilogue, p->epilogue, buf, len));
    p_chain = check__problem_is_chain(p);
    if (k->chain && !p_chain)
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "the kernel is a GEMM -> GEMM chain but the problem has one GEMM "
                          "(p->n2 = 0, p->epilogue2 = NULL)");
    if (!k->chain && p_chain)
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "the problem is a GEMM -> GEMM chain (p->n2 = %" PRId64 ", p->epilogue2 = %s) "
                          "but the kernel is a single GEMM", p->n2, p->epilogue2 ? "set" : "NULL");
    if (k->chain) {
        FUSEGEN__TRY(check__check_layout("b2_layout", k->b2_layout, p->b2_layout, buf, len));
        FUSEGEN__TRY(check__check_epilogue("epilogue2", k->epilogue2, p->epilogue2, buf, len));
    }

    /* the kernel's own limits: a corrupt table, sizes its ints cannot count, the workspace */
    if (k->tile_m <= 0)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "the kernel's tile_m = %d is not positive (corrupt dispatch table)", k->tile_m);
    if (fusegen__is_split(k) && k->tile_n <= 0)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "the split kernel's tile_n = %d is not positive (corrupt dispatch table)", k->tile_n);
    if (k->chain && k->tile2_m <= 0)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                          "the chain kernel's tile2_m = %d is not positive (corrupt dispatch table)", k->tile2_m);
    tile_n = k->tile_n > 0 ? k->tile_n : 1;
    tile_k = k->tile_k > 0 ? k->tile_k : 1;
    FUSEGEN__TRY(check__check_tiled("m", p->m, k->tile_m, "row tiles", buf, len));
    FUSEGEN__TRY(check__check_tiled("n", p->n, tile_n, "column tiles", buf, len));
    FUSEGEN__TRY(check__check_tiled("k", p->k, tile_k, "k tiles", buf, len));
    if (k->chain) {
        FUSEGEN__TRY(check__check_tiled("m", p->m, k->tile2_m, "GEMM2's row tiles", buf, len));
        FUSEGEN__TRY(check__check_tiled("n2", p->n2, k->tile2_n > 0 ? k->tile2_n : 1, "GEMM2's column tiles", buf, len));
        FUSEGEN__TRY(check__check_tiled("n", p->n, k->tile2_k > 0 ? k->tile2_k : 1, "GEMM2's k tiles", buf, len));
    }
    {
        size_t total;
        if (!check__ws_fits(k, p, &total))
            return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT,
                              "the workspace for p->m = %" PRId64 ", p->n = %" PRId64 " does not fit in size_t",
                              p->m, p->n);
    }

    /* row strategy: one CTA holds a whole row of N; cluster strategy: one cluster does */
    if (k->max_n > 0 && p->n > k->max_n)
        return check__reason(buf, len, FUSEGEN_ERR_NOT_SUPPORTED,
                          "p->n = %" PRId64 " exceeds the kernel's max_n = %" PRId64 " (%s)", p->n, k->max_n,
                          k->split_k ? "split K: the reduce kernel keeps a whole row in shared memory"
                          : k->strategy == FUSEGEN_STRATEGY_CLUSTER
                              ? "cluster strategy: the thread blocks of one cluster hold a whole row"
                              : "row strategy: one thread block holds a whole row");

    /* alignment of the sizes */
    align = k->align_elems > 0 ? k->align_elems : 1;
    FUSEGEN__TRY(check__check_multiple("k", p->k, align, buf, len));
    FUSEGEN__TRY(check__check_multiple("n", p->n, align, buf, len));
    if (k->chain)
        FUSEGEN__TRY(check__check_multiple("n2", p->n2, align, buf, len));
    /* a gated activation: B's gate and up rows interleave in blocks of 8, and the output's rows
     * (N / 2 long) keep the alignment */
    const int64_t out_cols = fusegen__out_cols(p);
    const char *out_n = out_cols == p->n ? "n" : "n / 2";
    if (out_cols != p->n)
        FUSEGEN__TRY(check__check_multiple("n", p->n, 2 * (align > 8 ? align : 8), buf, len));

    /* leading dimensions (0: packed) of the tensors this kernel uses; a chain's GEMM1 writes
     * into the workspace, so it has no out (nor ldo) */
    stride_limit = check__hopper_family(k) ? CHECK__TMA_STRIDE_LIMIT : 0;
    if (k->b_layout == FUSEGEN_LAYOUT_NK) {
        ldb_row = "k"; ldb_len = p->k; ldb_rows = p->n;
    } else {
        ldb_row = "n"; ldb_len = p->n; ldb_rows = p->k;
    }
    FUSEGEN__TRY(check__check_ld("lda", p->lda, "k", p->k, p->m, fusegen__dtype_bytes(k->a), align, stride_limit, buf, len));
    FUSEGEN__TRY(check__check_ld("ldb", p->ldb, ldb_row, ldb_len, ldb_rows, fusegen__dtype_bytes(k->b), align, stride_limit,
                         buf, len));
    if (!k->chain)
        FUSEGEN__TRY(check__check_ld("ldo", p->ldo, out_n, out_cols, p->m, fusegen__dtype_bytes(k->out), align,
                                     stride_limit, buf, len));
    if (k->uses_residual)
        FUSEGEN__TRY(check__check_ld("ldr", p->ldr, out_n, out_cols, p->m, fusegen__dtype_bytes(k->out), align,
                                     stride_limit, buf, len));
    for (i = 0; i < k->n_stores && i < FUSEGEN_MAX_STORES; i++)
        FUSEGEN__TRY(check__check_ld(check__ld_store_names[i], p->ld_store[i], out_n, out_cols, p->m,
                                     fusegen__dtype_bytes(k->out), align, stride_limit, buf, len));
    if (k->chain) {
        if (k->b2_layout == FUSEGEN_LAYOUT_NK) {
            ldb2_row = "n"; ldb2_len = p->n; ldb2_rows = p->n2;
        } else {
            ldb2_row = "n2"; ldb2_len = p->n2; ldb2_rows = p->n;
        }
        FUSEGEN__TRY(check__check_ld("ldb2", p->ldb2, ldb2_row, ldb2_len, ldb2_rows, fusegen__dtype_bytes(k->b), align,
                             stride_limit, buf, len));
        FUSEGEN__TRY(check__check_ld("ldo2", p->ldo2, "n2", p->n2, p->m, fusegen__dtype_bytes(k->out), align, stride_limit,
                             buf, len));
    }

    /* grid: row tiles on gridDim.y, and the tile count */
    FUSEGEN__TRY(check__check_tile_count("", p->m, p->n, k->tile_m, tile_n, buf, len));
    if (k->chain)
        FUSEGEN__TRY(check__check_tile_count(" in GEMM2", p->m, p->n2, k->tile2_m, k->tile2_n > 0 ? k->tile2_n : 1, buf,
                                     len));
    return FUSEGEN_OK;
}

/* Was kernel k built for the device? p->sm, or the current device when it is 0. This is the
 * one check that may call CUDA; it runs after every other. */
fusegen_status fusegen__arch_reason(const fusegen_kernel *k, const fusegen_problem *p, fusegen__arch *arch, char *buf,
                                     size_t len)
{
    char dev[48];
    if (check__resolve_sm(p, arch) != FUSEGEN_OK)
        return check__reason(buf, len, arch->st, "%s", arch->why);
    if (arch->sm >= k->sm && (!k->arch_specific || arch->sm == k->sm))
        return FUSEGEN_OK;
    if (arch->from_device)
        snprintf(dev, sizeof dev, "the current device is sm_%d (p->sm = 0)", arch->sm);
    else
        snprintf(dev, sizeof dev, "p->sm = %d", arch->sm);
    if (k->arch_specific)
        return check__reason(buf, len, FUSEGEN_ERR_ARCH,
                          "%s but the kernel is built for sm_%da only (arch-specific instructions)", dev, k->sm);
    return check__reason(buf, len, FUSEGEN_ERR_ARCH, "%s but the kernel needs sm_%d or newer", dev, k->sm);
}

/* The three checks in their order (fusegen_why_not, fusegen_workspace_size). */
fusegen_status fusegen__eligible(const fusegen_kernel *k, const fusegen_problem *p, fusegen__arch *arch,
                                char *buf, size_t len)
{
    if (!k)
        return check__reason(buf, len, FUSEGEN_ERR_INVALID_ARGUMENT, "the kernel is NULL");
    FUSEGEN__TRY(fusegen__problem_reason(p, buf, len));
    FUSEGEN__TRY(fusegen__kernel_reason(k, p, buf, len));
    return fusegen__arch_reason(k, p, arch, buf, len);
}

/* An arch-specific kernel launched on any other device runs code that traps (the fault ends the
 * CUDA context), so before its launch the current device is compared with the kernel's sm even
 * when p->sm names one: p->sm may describe another device than the one current now. */
fusegen_status fusegen__device_reason(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t len)
{
    int sm = 0;
    cudaError_t e;
    if (!k->arch_specific || p->sm == 0)   /* p->sm = 0 already was the current device */
        return FUSEGEN_OK;
    e = check__device_sm(&sm);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return check__reason(buf, len, FUSEGEN_ERR_CUDA,
                          "the kernel is built for sm_%da only, and the current device's compute capability "
                          "could not be read: %s: %s", k->sm, cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (sm != k->sm)
        return check__reason(buf, len, FUSEGEN_ERR_ARCH,
                          "p->sm = %d but the current device is sm_%d, and the kernel is built for sm_%da only "
                          "(arch-specific instructions)", p->sm, sm, k->sm);
    return FUSEGEN_OK;
}
