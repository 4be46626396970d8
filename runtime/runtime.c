/* runtime.c - the fusegen runtime's public calls: status strings, the thread-local detail,
 * eligibility (fusegen_why_not; the checks are check.c's), dispatch (query, select, find; the
 * order of eligible kernels is the model's, dispatch.c, after a loaded tuning file's winner,
 * tuning.c; select records the problem when a recording is open, record.c), workspace sizing,
 * and the checked launch (the launcher is launch.c).
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
    FG__PTR_ALIGN = 16,         /* every tensor and vector pointer */
    FG__WS_ALIGN = FUSEGEN_REG_WORKSPACE_ALIGN    /* the workspace pointer */
};

/* The most thread blocks of a cluster every sm_90 device schedules; cluster kernels go to 16. */
#define FG__PORTABLE_CLUSTER FUSEGEN_REG_PORTABLE_CLUSTER

static _Thread_local char fg__detail[FG__DETAIL_LEN];
/* fusegen_why_not writes here when the caller gives no buffer. */
static _Thread_local char fg__why_fallback[FUSEGEN__REASON_LEN];

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

/* Sets this thread's detail and returns st. */
FG__PRINTF(2, 3)
static fusegen_status fg__fail(fusegen_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fusegen__vformat(fg__detail, sizeof fg__detail, fmt, ap);
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
    fusegen__vformat(fg__detail, sizeof fg__detail, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- public: eligibility and dispatch ----------------------------------------------------- */

const char *fusegen_why_not(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t buf_len)
{
    fusegen__arch arch;
    memset(&arch, 0, sizeof arch);
    if (!buf || buf_len == 0) {
        buf = fg__why_fallback;
        buf_len = sizeof fg__why_fallback;
    }
    if (fusegen__eligible(k, p, &arch, buf, buf_len) == FUSEGEN_OK)
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
    fusegen__arch arch;
    fg__listing listing;
    char reason[FUSEGEN__REASON_LEN];
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
                        fusegen__str(lib->name), lib->n_kernels);
    if (fusegen__problem_reason(p, reason, sizeof reason) != FUSEGEN_OK)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s", reason);

    /* The reasons are written only when no kernel is eligible (a second pass below): most
     * kernels of a library compute something else, and formatting why cost more than the
     * checks themselves. */
    memset(&arch, 0, sizeof arch);
    /* the dispatch's waves, on the current device; a problem for another arch (p->sm set)
     * or no readable device: 0, a size-only order */
    sms = sms_given >= 0 ? sms_given : p->sm == 0 ? fusegen__sms_or_0() : 0;
    for (i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        size_t at, j;
        if (fusegen__kernel_reason(k, p, NULL, 0) != FUSEGEN_OK || fusegen__arch_reason(k, p, &arch, NULL, 0) != FUSEGEN_OK)
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
        return fg__fail(FUSEGEN_ERR_NOT_SUPPORTED, "library '%s' has no kernels", fusegen__str(lib->name));
    memset(&listing, 0, sizeof listing);
    for (i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        if (fusegen__kernel_reason(k, p, reason, sizeof reason) != FUSEGEN_OK ||
            fusegen__arch_reason(k, p, &arch, reason, sizeof reason) != FUSEGEN_OK)
            fg__listing_add(&listing, fusegen__str(k->name), reason);
    }
    if (listing.omitted > 0)
        return fg__fail(FUSEGEN_ERR_NOT_SUPPORTED,
                        "no kernel of library '%s' can run this problem: %s; ... and %zu more "
                        "(fusegen_why_not gives each reason)", fusegen__str(lib->name), listing.text, listing.omitted);
    return fg__fail(FUSEGEN_ERR_NOT_SUPPORTED, "no kernel of library '%s' can run this problem: %s",
                    fusegen__str(lib->name), listing.text);
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
/* fusegen_run's: the last kernel and problem that passed the problem's and the kernel's checks
 * (pure functions of the two; the arguments, the workspace and the device are checked every
 * call): the kernel's address (in `kernels`) and its fields, so that another kernel at the same
 * address (a caller's own, a JIT library's after a free) is checked afresh. */
static _Thread_local fg__select_memo fg__run_memo;
static _Thread_local fusegen_kernel fg__run_memo_kernel;

void fusegen__select_memo_invalidate(void)
{
    unsigned g = atomic_fetch_add(&fg__memo_generation, 1u) + 1u;
    if (g == 0)   /* wrapped: 0 means empty */
        atomic_fetch_add(&fg__memo_generation, 1u);
}

/* The key of (lib, p) into m (without the answer); 0 when p cannot be remembered. For
 * fusegen_run's memo lib is NULL and kernel the kernel (no device in the key). */
static int fg__memo_key(fg__select_memo *m, const fusegen_library *lib, const fusegen_kernel *kernel,
                        const fusegen_problem *p)
{
    size_t l1 = p->epilogue ? strlen(p->epilogue) : 0, l2 = p->epilogue2 ? strlen(p->epilogue2) : 0;
    if ((!lib && !kernel) || !p->epilogue || l1 >= FG__MEMO_SIG || l2 >= FG__MEMO_SIG)
        return 0;
    memset(m, 0, sizeof *m);
    m->generation = atomic_load_explicit(&fg__memo_generation, memory_order_acquire);
    m->lib = lib;
    m->kernels = lib ? lib->kernels : kernel;
    m->n_kernels = lib ? lib->n_kernels : 1;
    memcpy(&m->p, p, sizeof *p);
    m->p.epilogue = NULL;
    m->p.epilogue2 = NULL;
    memcpy(m->epilogue, p->epilogue, l1);
    if (p->epilogue2)
        memcpy(m->epilogue2, p->epilogue2, l2);
    m->epilogue2_null = p->epilogue2 == NULL;
    m->device = -1;
    if (lib && p->sm == 0 && cudaGetDevice(&m->device) != cudaSuccess)
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
    memo = p && fg__memo_key(&key, lib, NULL, p);
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
                        fusegen__str(lib->name), lib->n_kernels);
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
                        "use fusegen_select, or one variant's full name", name, fusegen__str(lib->name), name,
                        variants);
    return fg__fail(FUSEGEN_ERR_NOT_FOUND, "no kernel named '%s' in library '%s' (%zu kernels)", name,
                    fusegen__str(lib->name), lib->n_kernels);
}

/* ---- public: workspace and run ------------------------------------------------------------ */

/* Bytes of workspace for a problem that passed fg__check (so the sum fits in size_t). */
static size_t fg__ws_bytes(const fusegen_kernel *k, const fusegen_problem *p)
{
    int split = fusegen__is_split(k);
    if (k->split_k && k->chain) {
        const int sms = fusegen__sms_or_0();
        return fusegen_ws_layout_for_chain_split_k(fg_dispatch_k_slices(k, p, sms), fg_dispatch_k_slices2(k, p, sms), p->m,
                                                   p->n, p->n2, fusegen__dtype_bytes(k->out))
            .total;
    }
    if (k->split_k)
        return fusegen_ws_layout_for_split_k(fg_dispatch_k_slices(k, p, fusegen__sms_or_0()), p->m, p->n).total;
    if (!split && !k->chain)
        return 0;
    return fusegen_ws_layout_for(split, k->tile_n, k->chain, fusegen__dtype_bytes(k->out), p->m, p->n).total;
}

fusegen_status fusegen_workspace_size(const fusegen_kernel *k, const fusegen_problem *p, size_t *bytes)
{
    fusegen__arch arch;
    char reason[FUSEGEN__REASON_LEN];
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
    st = fusegen__eligible(k, p, &arch, reason, sizeof reason);
    if (st != FUSEGEN_OK) {
        /* a bad problem is reported as itself, as fusegen_run does, not as the kernel's */
        if (fusegen__problem_reason(p, NULL, 0) != FUSEGEN_OK)
            return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s", reason);
        return fg__fail(st, "kernel %s cannot run this problem: %s", fusegen__str(k->name), reason);
    }
    *bytes = fg__ws_bytes(k, p);
    return fg__ok();
}

/* A required device pointer: present and 16-byte aligned. */
static fusegen_status fg__check_ptr(const fusegen_kernel *k, const char *field, const void *ptr, const char *why)
{
    if (!ptr)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s is NULL; kernel %s needs it (%s)", field,
                        fusegen__str(k->name), why);
    if ((uintptr_t)ptr % FG__PTR_ALIGN != 0)
        return fg__fail(FUSEGEN_ERR_MISALIGNED, "%s = 0x%" PRIxPTR " is not %d-byte aligned", field,
                        (uintptr_t)ptr, FG__PTR_ALIGN);
    return FUSEGEN_OK;
}

/* The store arrays' field names, written out so that a passing check formats nothing. */
_Static_assert(FUSEGEN_MAX_STORES == 4, "one name per store slot below");
static const char *const fg__store_names[FUSEGEN_MAX_STORES] = {"args.store[0]", "args.store[1]", "args.store[2]",
                                                                "args.store[3]"};
static const char *const fg__store2_names[FUSEGEN_MAX_STORES] = {"args.store2[0]", "args.store2[1]", "args.store2[2]",
                                                                 "args.store2[3]"};

static fusegen_status fg__check_args(const fusegen_kernel *k, const fusegen_args *args)
{
    int i;

    FUSEGEN__TRY(fg__check_ptr(k, "args.a", args->a, "the A operand"));
    FUSEGEN__TRY(fg__check_ptr(k, "args.b", args->b, "the B operand"));
    if (!k->chain)   /* a chain's GEMM1 writes into the workspace; its output is out2 */
        FUSEGEN__TRY(fg__check_ptr(k, "args.out", args->out, "the output"));
    if (k->uses_bias)
        FUSEGEN__TRY(fg__check_ptr(k, "args.bias", args->bias, "its epilogue adds a bias"));
    if (k->uses_residual)
        FUSEGEN__TRY(fg__check_ptr(k, "args.residual", args->residual, "its epilogue adds a residual"));
    if (k->uses_gamma)
        FUSEGEN__TRY(fg__check_ptr(k, "args.gamma", args->gamma, "its norm scales by gamma"));
    if (k->uses_beta)
        FUSEGEN__TRY(fg__check_ptr(k, "args.beta", args->beta, "its norm shifts by beta"));
    for (i = 0; i < k->n_stores && i < FUSEGEN_MAX_STORES; i++)
        FUSEGEN__TRY(fg__check_ptr(k, fg__store_names[i], args->store[i], "its epilogue stores an extra output"));
    if (!k->chain)
        return FUSEGEN_OK;
    FUSEGEN__TRY(fg__check_ptr(k, "args.b2", args->b2, "the B operand of GEMM2"));
    FUSEGEN__TRY(fg__check_ptr(k, "args.out2", args->out2, "the output of GEMM2"));
    if (k->uses_bias2)
        FUSEGEN__TRY(fg__check_ptr(k, "args.bias2", args->bias2, "GEMM2's epilogue adds a bias"));
    if (k->uses_residual2)
        FUSEGEN__TRY(fg__check_ptr(k, "args.residual2", args->residual2, "GEMM2's epilogue adds a residual"));
    for (i = 0; i < k->n_stores2 && i < FUSEGEN_MAX_STORES; i++)
        FUSEGEN__TRY(fg__check_ptr(k, fg__store2_names[i], args->store2[i], "GEMM2's epilogue stores an extra output"));
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
    fusegen__arch arch;
    char reason[FUSEGEN__REASON_LEN];
    fusegen_status st;
    size_t need;

    if (!k)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "k (the kernel) is NULL");
    if (!p)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "p (the problem) is NULL");
    if (!args)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "args is NULL");

    fg__select_memo key;
    const int memo = fg__memo_key(&key, NULL, k, p);
    if (!memo || fg__run_memo.generation == 0 || !fg__memo_same(&fg__run_memo, &key) ||
        memcmp(&fg__run_memo_kernel, k, sizeof *k) != 0) {
        if (fusegen__problem_reason(p, reason, sizeof reason) != FUSEGEN_OK)
            return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "%s", reason);
        st = fusegen__kernel_reason(k, p, reason, sizeof reason);
        if (st != FUSEGEN_OK)
            return fg__fail(st, "kernel %s cannot run this problem: %s", fusegen__str(k->name), reason);
        if (memo) {
            fg__run_memo = key;
            memcpy(&fg__run_memo_kernel, k, sizeof *k);
        }
    }

    FUSEGEN__TRY(fg__check_args(k, args));

    need = fg__ws_bytes(k, p);
    if (need > 0) {
        if (!workspace)
            return fg__fail(FUSEGEN_ERR_WORKSPACE,
                            "workspace is NULL but kernel %s needs %zu bytes (fusegen_workspace_size)",
                            fusegen__str(k->name), need);
        if ((uintptr_t)workspace % FG__WS_ALIGN != 0)
            return fg__fail(FUSEGEN_ERR_MISALIGNED, "workspace = 0x%" PRIxPTR " is not %d-byte aligned",
                            (uintptr_t)workspace, FG__WS_ALIGN);
        if (workspace_bytes < need)
            return fg__fail(FUSEGEN_ERR_WORKSPACE,
                            "workspace_bytes = %zu but kernel %s needs %zu bytes (fusegen_workspace_size)",
                            workspace_bytes, fusegen__str(k->name), need);
    }

    /* the device last: the only check that may call CUDA */
    memset(&arch, 0, sizeof arch);
    st = fusegen__arch_reason(k, p, &arch, reason, sizeof reason);
    if (st != FUSEGEN_OK)
        return fg__fail(st, "kernel %s cannot run this problem: %s", fusegen__str(k->name), reason);
    st = fusegen__device_reason(k, p, reason, sizeof reason);
    if (st != FUSEGEN_OK)
        return fg__fail(st, "kernel %s cannot run on this device: %s", fusegen__str(k->name), reason);

    if (!k->launch_jit && !k->functions)
        return fg__fail(FUSEGEN_ERR_INVALID_ARGUMENT, "kernel %s has no kernel functions (corrupt dispatch table)",
                        fusegen__str(k->name));
    if (k->launch_jit) {
        if (k->launch_jit(k, p, args, workspace, stream, reason, sizeof reason) == 0) return fg__ok();
    } else {
        if (fusegen__launch(k, NULL, p, args, workspace, stream, reason, sizeof reason) == 0) return fg__ok();
    }
    return fg__fail(FUSEGEN_ERR_CUDA, "launching kernel %s failed: %s%s", fusegen__str(k->name), reason,
                    fg__cluster_remark(k, p));
}
