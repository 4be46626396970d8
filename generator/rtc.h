/* rtc.h - compiles the emitted kernel files of a library with NVRTC, in memory, for every
 * arch their spec kernel lists, without a GPU (`fusegen check --nvrtc`). NVRTC's messages are
 * printed as they come, located in the generated file (FILE(LINE): error ...).
 * fg_rtc_compile compiles one source into a CUBIN for the runtime's JIT. NVRTC is loaded on
 * first use (dlopen), once, from any thread. */
#ifndef FUSEGEN_RTC_H
#define FUSEGEN_RTC_H
#include "diag.h"
#include "out.h"
#include "plan.h"

/* Whether NVRTC can be used: built with its header, and the library loads. */
int fg_rtc_available(void);

/* Compiles every <library>_<kernel>.cu of `out` (rendered for `plan`, not yet written) for each
 * arch of its kernel (ptx_only: to PTX for the arch's virtual one, without ptxas or its spill
 * check); the family headers come from `out` too. Prints one line per compile to `log`
 * (nothing when NULL) and NVRTC's messages to stderr. Returns the number of failed compiles
 * (warnings count as failures: generated code compiles cleanly), or -1 when NVRTC is not
 * available. */
int fg_rtc_check(const fg_plan *plan, const fg_out *out, int ptx_only, FILE *log);

/* NVRTC's version. Returns 0, or -1 when NVRTC is not available. */
int fg_rtc_version(int *major, int *minor);

/* Compiles src (NUL-terminated, named `name` in messages) with the given headers and options,
 * which must name a real architecture (--gpu-architecture=sm_XY), into a CUBIN. On success
 * returns 0 and *code (malloc'ed, *code_len bytes); 1 when the compile failed; -1 when NVRTC
 * is not available or refused the program. *log (malloc'ed, NUL-terminated, or NULL) holds
 * NVRTC's messages (warnings too) and why it failed. The caller frees *code and *log. */
int fg_rtc_compile(const char *src, const char *name, int n_headers, const char *const *headers,
                   const char *const *header_names, const char *const *opts, int n_opts, char **code,
                   size_t *code_len, char **log);

#endif
