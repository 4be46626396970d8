/* pipeline.c - see pipeline.h. */
#include "pipeline.h"

#include <string.h>

#include "check.h"

fg_pipeline_stage fg_pipeline_run(fg_arena *a, const char *path, const char *text, size_t len,
                                  const fg_pipeline_opts *opts, fg_spec *spec, fg_plan *plan, fg_diag *d,
                                  fg_pipeline_result *result)
{
    fg_pipeline_result local;
    fg_pipeline_result *r = result ? result : &local;
    memset(r, 0, sizeof *r);
    memset(plan, 0, sizeof *plan);
    const fg_pipeline_stage last = opts && opts->last != FG_PIPELINE_NONE ? opts->last : FG_PIPELINE_PLANNED;

    fg_diag_set_source(d, path, text, len);
    int before = fg_diag_errors(d);
    int rc = fg_spec_parse(a, path, text, len, spec, d);
    r->parse_errors = fg_diag_errors(d) - before;
    if (rc != 0 || r->parse_errors != 0) return r->reached = FG_PIPELINE_NONE;
    r->reached = FG_PIPELINE_PARSED;
    if (last < FG_PIPELINE_CHECKED) return r->reached;

    /* both checks, so that one run lists every error */
    before = fg_diag_errors(d);
    int errors = fg_check_spec(spec, d);
    if (opts && opts->library_files) errors += fg_check_library_files(spec, d);
    r->check_errors = fg_diag_errors(d) - before;
    if (errors != 0 || r->check_errors != 0) return r->reached;
    r->reached = FG_PIPELINE_CHECKED;
    if (last < FG_PIPELINE_PLANNED) return r->reached;

    before = fg_diag_errors(d);
    rc = fg_plan_build(a, spec, plan, d);
    r->plan_errors = fg_diag_errors(d) - before;
    if (rc != 0 || r->plan_errors != 0) return r->reached;
    return r->reached = FG_PIPELINE_PLANNED;
}
