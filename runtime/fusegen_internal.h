/* fusegen_internal.h - what the runtime's modules share and users do not call: the thread-local
 * detail of fusegen_last_detail(), set by the JIT (jit.c) with the runtime's conventions (cut
 * with "..." when longer than 1023 characters), the problem's own checks, the driver API and the
 * launcher (launch.c). Not installed. */
#ifndef FUSEGEN_INTERNAL_H
#define FUSEGEN_INTERNAL_H

#include <stdarg.h>

#include <cuda.h>

#include "fusegen.h"

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
/* Sets this thread's detail (FUSEGEN_OK with "" clears it) and returns st. */
fusegen_status fusegen__detail_set(fusegen_status st, const char *fmt, ...);
/* The problem's own checks (what no kernel can run, whatever the library): FUSEGEN_OK, or
 * FUSEGEN_ERR_INVALID_ARGUMENT with the reason in the detail. No CUDA call. */
fusegen_status fusegen__check_problem(const fusegen_problem *p);
/* The columns of out, the residual and the stores: p->n, or p->n / 2 when the signature has a
 * gated activation (swiglu, geglu). */
int64_t fusegen__out_cols(const fusegen_problem *p);

/* ---- check.c: whether a kernel can run a problem; each check writes one reason into buf (len
 * bytes; NULL and 0 for none) and returns the status it deserves, FUSEGEN_OK when it passes ---- */
enum { FUSEGEN__REASON_LEN = 384 };   /* one kernel's reason */
/* The device compute capability of a problem, resolved at most once per API call: a query over
 * a whole library asks the device once, and only when some kernel gets as far as the arch
 * check. Zero it before the first check. */
typedef struct fusegen__arch {
    int resolved;
    int sm;
    int from_device;                /* p->sm was 0 */
    fusegen_status st;
    char why[FUSEGEN__REASON_LEN];
} fusegen__arch;
/* The problem alone (INVALID_ARGUMENT; no CUDA call). */
fusegen_status fusegen__problem_reason(const fusegen_problem *p, char *buf, size_t len);
/* Kernel k against a problem that passed the first check (no CUDA call). */
fusegen_status fusegen__kernel_reason(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t len);
/* Was k built for p->sm, or for the current device when it is 0 (resolved once into arch)? */
fusegen_status fusegen__arch_reason(const fusegen_kernel *k, const fusegen_problem *p, fusegen__arch *arch,
                                    char *buf, size_t len);
/* The three in their order (k NULL fails too). */
fusegen_status fusegen__eligible(const fusegen_kernel *k, const fusegen_problem *p, fusegen__arch *arch, char *buf,
                                 size_t len);
/* Before an arch-specific kernel's launch: the current device is the one it was built for. */
fusegen_status fusegen__device_reason(const fusegen_kernel *k, const fusegen_problem *p, char *buf, size_t len);
/* Returns from the calling function with the status of expr unless it is FUSEGEN_OK. */
#define FUSEGEN__TRY(expr)                              \
    do {                                                \
        fusegen_status fusegen__st_ = (expr);           \
        if (fusegen__st_ != FUSEGEN_OK)                 \
            return fusegen__st_;                        \
    } while (0)
/* vsnprintf into buf; a cut message ends in "..." so that nobody mistakes it for the whole. */
void fusegen__vformat(char *buf, size_t len, const char *fmt, va_list ap);
const char *fusegen__str(const char *s);          /* s, or "(null)" */
size_t fusegen__dtype_bytes(fusegen_dtype t);
int fusegen__is_split(const fusegen_kernel *k);   /* the split strategy */
int fusegen__sms_or_0(void);                      /* the current device's SM count, 0 when unknown */

/* fusegen_query with the dispatch's SM count given instead of read from the device (sms > 0:
 * a device of that many SMs; 0: the size-only order of an unknown device). The dispatch-order
 * tests pin the order with it on machines without a GPU. */
fusegen_status fusegen__query_sms(const fusegen_library *lib, const fusegen_problem *p,
                                  const fusegen_kernel **out, size_t cap, size_t *n_found, int sms);

/* The current device's ordinal (cudaGetDevice; 0 for the tests' device, fusegen__device_override). */
cudaError_t fusegen__device_ordinal(int *device);
/* The current device's name (cudaGetDeviceProperties, read once per device ordinal). */
cudaError_t fusegen__device_name(char *buf, size_t len);

/* fusegen_select remembers each thread's last answer (runtime.c); whatever can change an answer
 * for the same library address and problem (a tuning loaded or cleared, a recording started, a
 * JIT library freed, whose address a new one may get) calls this first, which forgets them all. */
void fusegen__select_memo_invalidate(void);

/* tuning.c: whether k is the measured winner for p in lib's loaded tuning, or, when none is
 * loaded for lib and p->sm is 0, in lib's compiled-in tuning for the current device (0 when none). */
int fusegen__tuning_is_winner(const fusegen_library *lib, const fusegen_kernel *k, const fusegen_problem *p);
/* fusegen_tuning_load with the device given (name, SM count, compute capability x10) instead of
 * read: the tests, on machines without a GPU. */
fusegen_status fusegen__tuning_load_for(const fusegen_library *lib, const char *path, const char *dev_name,
                                        int dev_sms, int dev_cc);
/* ... and of a file's bytes already read (len of them, a NUL among them refused; path names it
 * in the detail): what fusegen__tuning_load_for does after reading, and the fuzz target's entry. */
fusegen_status fusegen__tuning_load_text(const fusegen_library *lib, const char *path, const char *text, size_t len,
                                         const char *dev_name, int dev_sms, int dev_cc);
/* The tests, on machines without a GPU: fusegen__device_info and fusegen__device_name answer
 * this device (name, SM count, compute capability x10) instead of the current one; name NULL
 * goes back to the current device. Forgets fusegen_select's remembered answers. */
void fusegen__device_override(const char *name, int sms, int cc);

/* The driver API's entry points the runtime uses, reached through the runtime
 * (cudaGetDriverEntryPointByVersion), so that nothing links libcuda. */
typedef struct fusegen__driver {
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_unload)(CUmodule);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*func_set_attribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*launch_kernel_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*occupancy_max_active_clusters)(int *, CUfunction, const CUlaunchConfig *);
    CUresult (*tensor_map_encode_tiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                        const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                        CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                        CUtensorMapFloatOOBfill);
    CUresult (*get_error_name)(CUresult, const char **);
    CUresult (*get_error_string)(CUresult, const char **);
} fusegen__driver;
/* The entry points, looked up on first use; NULL, with why written, when one is missing. */
const fusegen__driver *fusegen__cu(char *why, size_t len);
/* The tests, on machines without a GPU: fusegen__cu answers fake instead (NULL: the driver). */
void fusegen__cu_override(const fusegen__driver *fake);
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
/* Writes "<what>: CUDA_ERROR_X: text" of driver result r into why and returns 1. */
int fusegen__cu_fail(CUresult r, char *why, size_t len, const char *fmt, ...);

/* Launches kernel k for p on stream as its launch records say (everything checked already; the
 * workspace large enough), with its functions fns (indexed by FUSEGEN_LAUNCH_GEMM1 and the like:
 * a JIT kernel's, from its module) or, fns NULL, those k->functions gives (a compiled-in
 * kernel's). Returns 0, or 1 with why written. */
int fusegen__launch(const fusegen_kernel *k, const CUfunction *fns, const fusegen_problem *p,
                    const fusegen_args *args, void *workspace, cudaStream_t stream, char *why, size_t len);

#endif
