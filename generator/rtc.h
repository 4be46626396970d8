/* rtc.h - compiles the emitted kernel files of a library with NVRTC, in memory, for every
 * arch their spec kernel lists, without a GPU (`fusegen check --nvrtc`). NVRTC's messages are
 * printed as they come, located in the generated file (FILE(LINE): error ...). */
#ifndef FUSEGEN_RTC_H
#define FUSEGEN_RTC_H
#include "diag.h"
#include "out.h"
#include "plan.h"

/* Whether NVRTC can be used: built with its header, and the library loads. */
int fg_rtc_available(void);

/* Compiles every <library>_<kernel>.cu of `out` (rendered for `plan`, not yet written) for each
 * arch of its kernel; the family headers come from `out` too. Prints one line per compile to
 * `log` and NVRTC's messages to stderr. Returns the number of failed compiles (warnings count as
 * failures: generated code compiles cleanly), or -1 when NVRTC is not available. */
int fg_rtc_check(const fg_plan *plan, const fg_out *out, FILE *log);

#endif
