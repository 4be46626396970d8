/* fusegen_internal.h - what the runtime's modules share and users do not call: the thread-local
 * detail of fusegen_last_detail(), set by the JIT (jit.c) with the runtime's conventions (cut
 * with "..." when longer than 1023 characters), and the problem's own checks. Not installed. */
#ifndef FUSEGEN_INTERNAL_H
#define FUSEGEN_INTERNAL_H

#include "fusegen.h"

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
/* Sets this thread's detail (FUSEGEN_OK with "" clears it) and returns st. */
fusegen_status fusegen__detail_set(fusegen_status st, const char *fmt, ...);
/* The problem's own checks (what no kernel can run, whatever the library): FUSEGEN_OK, or
 * FUSEGEN_ERR_INVALID_ARGUMENT with the reason in the detail. No CUDA call. */
fusegen_status fusegen__check_problem(const fusegen_problem *p);

/* fusegen_query with the dispatch's SM count given instead of read from the device (sms > 0:
 * a device of that many SMs; 0: the size-only order of an unknown device). The dispatch-order
 * tests pin the order with it on machines without a GPU. */
fusegen_status fusegen__query_sms(const fusegen_library *lib, const fusegen_problem *p,
                                  const fusegen_kernel **out, size_t cap, size_t *n_found, int sms);

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
/* The tests, on machines without a GPU: fusegen__device_info and fusegen__device_name answer
 * this device (name, SM count, compute capability x10) instead of the current one; name NULL
 * goes back to the current device. Forgets fusegen_select's remembered answers. */
void fusegen__device_override(const char *name, int sms, int cc);

#endif
