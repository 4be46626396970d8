/* fuzz_spec.c - fuzz entry point over the whole front of the generator: arbitrary bytes go
 * through parse -> check -> plan -> emit, exactly as `fusegen generate` runs them, except that
 * the emitted files stay in an in-memory fg_out set and are never committed to disk.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt):
 *   - with clang and -fsanitize=fuzzer: libFuzzer drives LLVMFuzzerTestOneInput;
 *   - with any other compiler: replay_main.c calls the same function once per corpus and
 *     regression file.
 * FUSEGEN_FUZZ_TEMPLATE_DIR names the source tree's templates/ folder. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "check.h"
#include "diag.h"
#include "emit.h"
#include "out.h"
#include "pipeline.h"
#include "plan.h"
#include "spec.h"

#include "fuzz_sink.h"

#ifndef FUSEGEN_FUZZ_TEMPLATE_DIR
#error "FUSEGEN_FUZZ_TEMPLATE_DIR must name the templates/ folder"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks what the emitter promises of every file: a banner first, a newline last, a safe
 * relative path. A broken promise is a bug, so it aborts and the fuzzer keeps the input. */
static void fuzz__check_out(const fg_out *o)
{
    static const char banner[] = FUSEGEN_BANNER_PREFIX;
    for (size_t i = 0; i < o->n_files; i++) {
        const fg_out_file *f = &o->files[i];
        if (!f->rel_path || !*f->rel_path || f->rel_path[0] == '/' || strstr(f->rel_path, "..")) {
            fprintf(stderr, "fuzz_spec: unsafe output path '%s'\n", f->rel_path ? f->rel_path : "(null)");
            abort();
        }
        if (f->len < sizeof banner - 1 || memcmp(f->data, banner, sizeof banner - 1) != 0) {
            fprintf(stderr, "fuzz_spec: %s does not start with the banner\n", f->rel_path);
            abort();
        }
        if (f->data[f->len - 1] != '\n') {
            fprintf(stderr, "fuzz_spec: %s does not end with a newline\n", f->rel_path);
            abort();
        }
    }
}

/* Checks the plan against what the Hopper template asserts of its staging (static_asserts
 * in templates/common/fusegen_sm90.cuh), so a spec that checks but whose kernel could never
 * compile is caught without a compiler: "staging needs the tile buffer" and "f16 rows cannot
 * hold the split strategy's f32 pre-norm values". */
static void fuzz__check_staging(const fg_plan_kernel *pk, const fg_plan_gemm *g)
{
    if (pk->family != FG_FAMILY_SM90) return;
    if (!g->stage_tile && (g->stage_residual || g->stage_bias || g->stage_out || g->staged_store_slot >= 0)) {
        fprintf(stderr, "fuzz_spec: %s stages inputs or outputs without the tile buffer\n", pk->name);
        abort();
    }
    if (g->stage_out && g->norm != FG_NORM_NONE && g->strategy == FG_STRATEGY_SPLIT && pk->spec->out == FG_DTYPE_F16) {
        fprintf(stderr, "fuzz_spec: %s puts f32 pre-norm values through f16 tile rows\n", pk->name);
        abort();
    }
}

static void fuzz__check_plan(const fg_plan *plan)
{
    for (size_t i = 0; i < plan->n_kernels; i++) {
        fuzz__check_staging(&plan->kernels[i], &plan->kernels[i].g1);
        if (plan->kernels[i].chain) fuzz__check_staging(&plan->kernels[i], &plan->kernels[i].g2);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* An exact-size copy, so that reading one byte past the input is caught by the sanitizer. */
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);

    fg_arena arena;
    fg_arena_init(&arena);
    fg_diag d;
    fg_diag_init(&d, fuzz_sink("fuzz_spec"));
    fg_diag_set_source(&d, "fuzz.json", text, size);

    fg_spec spec;
    fg_plan plan;
    /* the stages as `fusegen generate` runs them (the library's file rules too) */
    const fg_pipeline_opts opts = {.last = FG_PIPELINE_PLANNED, .library_files = true};
    if (fg_pipeline_run(&arena, "fuzz.json", text, size, &opts, &spec, &plan, &d, NULL) != FG_PIPELINE_PLANNED)
        goto done;
    fuzz__check_plan(&plan);

    fg_out out;
    fg_out_init(&out, &arena);
    fg_diag_set_source(&d, spec.path, spec.text, spec.text_len);
    fg_out_dep(&out, spec.path);
    /* The spec passed check and plan, so emit must succeed: any failure here (a template
     * error, a rejected output path) is a bug and keeps the input. */
    const fg_tmplsrc templates = fg_tmplsrc_dir(FUSEGEN_FUZZ_TEMPLATE_DIR);
    if (fg_emit_library(&arena, &plan, &templates, &out, &d) != 0 || fg_diag_errors(&d) != 0) {
        fputs("fuzz_spec: emit failed for a spec that passed check and plan\n", stderr);
        abort();
    }
    fuzz__check_out(&out);

done:
    fg_diag_finish(&d);
    fg_arena_free(&arena);
    free(text);
    return 0;
}
