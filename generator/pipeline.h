/* pipeline.h - the generator's front stages in one call: parse -> check -> plan, each run only
 * when the ones before it reported nothing (a stage's checks assume a complete model). The
 * command line, the runtime's JIT, the fuzz target and the unit tests all go through it, so they
 * accept and refuse the same specs. Emitting is the caller's (to disk, to memory, or not at all). */
#ifndef FUSEGEN_PIPELINE_H
#define FUSEGEN_PIPELINE_H
#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "diag.h"
#include "plan.h"
#include "spec.h"

typedef enum {
    FG_PIPELINE_NONE = 0,     /* parsing reported errors */
    FG_PIPELINE_PARSED,       /* the model is complete; check reported errors (or was not asked for) */
    FG_PIPELINE_CHECKED,      /* the spec is valid; plan reported errors (or was not asked for) */
    FG_PIPELINE_PLANNED       /* the plan is complete: emit may run */
} fg_pipeline_stage;

typedef struct fg_pipeline_opts {
    fg_pipeline_stage last;   /* the last stage to run: FG_PIPELINE_CHECKED stops before plan */
    bool library_files;       /* check also applies fg_check_library_files (a library written to
                                 files: the command line; the JIT keeps its code in memory) */
} fg_pipeline_opts;

typedef struct fg_pipeline_result {
    fg_pipeline_stage reached;   /* the last stage that ran without errors */
    int parse_errors, check_errors, plan_errors;   /* errors each stage reported (0 when it did not run) */
} fg_pipeline_result;

/* Runs the stages on text (len bytes; path names it in diagnostics, which go to d, whose source
 * it sets to path and text). The model is built in *spec and the plan in *plan (zeroed
 * when plan does not run); their memory is the arena's. Returns the stage reached. */
fg_pipeline_stage fg_pipeline_run(fg_arena *a, const char *path, const char *text, size_t len,
                                  const fg_pipeline_opts *opts, fg_spec *spec, fg_plan *plan, fg_diag *d,
                                  fg_pipeline_result *result);

#endif
