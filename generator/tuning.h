/* tuning.h - tuning files given to `fusegen generate --tuning FILE` (and `check`): measured
 * winners (written by fusegen-tune; docs/api.md, "Tuning files") compiled into the generated
 * dispatch table, so that a library needs no tuning file at run time. A file is read with cJSON
 * and checked whole against the spec it names (library name and spec hash) and that spec's plan
 * (every winner and runner-up a variant of its spec kernel); errors are reported through the
 * diag context at the file's JSON pointers. */
#ifndef FUSEGEN_TUNING_H
#define FUSEGEN_TUNING_H
#include <stddef.h>

#include "arena.h"
#include "diag.h"
#include "plan.h"

typedef struct fg_tuned_entry {
    const char *spec_kernel;
    long long m_bucket, n, k, n2;
    const char *winner;            /* a variant name of the plan the file was checked against */
    double winner_ms;
    double runner_up_ms;           /* < 0: no runner-up */
} fg_tuned_entry;

typedef struct fg_tuned_device {
    const char *path;              /* the file it came from */
    const char *name;
    long long sms, cc;
    fg_tuned_entry *entries;       /* sorted: spec kernel (bytes), m_bucket, n, k, n2 */
    size_t n_entries;
} fg_tuned_device;

/* The tuning of one library: its devices sorted by name (bytes), SM count, compute capability. */
typedef struct fg_tuning {
    fg_tuned_device *devices;
    size_t n_devices;
} fg_tuning;

/* Reads the tuning file path (text, len bytes; it need not end in a NUL), finds among
 * plans[0..n_plans) the library it names and adds its device to tunings[that index] (kept
 * sorted). Returns 0, or -1 after reporting every error found to d (whose source it sets to the
 * file). */
int fg_tuning_add(fg_arena *a, const char *path, const char *text, size_t len, const fg_plan *const *plans,
                  size_t n_plans, fg_tuning *tunings, fg_diag *d);

#endif
