/* spills.h - the table of planned GEMMs measured to spill registers (spills.def). The device
 * code of a variant depends on its family, tile, schedule, norm strategy, dtypes, B layout and
 * its epilogue's ops with their values, and on the arch it is compiled for; a row names all of
 * them, so a match is the very kernel that was measured. */
#ifndef FUSEGEN_SPILLS_H
#define FUSEGEN_SPILLS_H
#include <stddef.h>

#include "plan.h"

typedef struct fg_spill_entry {
    const char *arch, *family;
    long m, n, k, stages;
    const char *schedule, *strategy, *a, *b, *out, *b_layout, *epilogue;
    long bytes;
} fg_spill_entry;

/* A variant's key, as a row would write it. epilogue is empty for a chain (never in the table). */
#define FG_SPILL_EPILOGUE_MAX 2048
typedef struct fg_spill_key {
    fg_spill_entry e;                     /* bytes unused */
    char epilogue[FG_SPILL_EPILOGUE_MAX];
} fg_spill_key;

/* Fills *key for variant pk compiled for arch. Returns 0, or -1 when the variant cannot be in
 * the table (a chain, an epilogue too long to write). */
int fg_spill_key_of(const fg_plan_kernel *pk, fg_arch arch, fg_spill_key *key);

/* The table's row for pk compiled for arch, or NULL. With FUSEGEN_SPILL_TABLE=ignore in the
 * environment, always NULL (to measure the table's rows again; tests/nvrtc/spill_table.py). */
const fg_spill_entry *fg_spill_find(const fg_plan_kernel *pk, fg_arch arch);

/* Writes key's row with `bytes` as spills.def spells it, without a newline. */
void fg_spill_row(const fg_spill_key *key, long bytes, char *buf, size_t size);

/* The rows, for tests. */
extern const fg_spill_entry fg_spill_table[];
extern const size_t fg_spill_table_len;

#endif
