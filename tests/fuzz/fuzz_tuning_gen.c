/* fuzz_tuning_gen.c - fuzz entry point over the generator's reader of tuning files
 * (generator/tuning.c, what `fusegen generate --tuning FILE` reads): arbitrary bytes are read as
 * a tuning file for the golden small library (FUSEGEN_FUZZ_TUNING_SPEC, planned once, as
 * `fusegen generate` plans it). A file that is accepted must then emit the tuned library (into
 * memory, every file starting with the banner); one that is refused must say why. Either broken
 * promise aborts, so the fuzzer keeps the input.
 *
 * Built like fuzz_spec.c (tests/fuzz/CMakeLists.txt): with clang and -fsanitize=fuzzer,
 * libFuzzer drives LLVMFuzzerTestOneInput; otherwise replay_main.c calls it once per file. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "diag.h"
#include "emit.h"
#include "out.h"
#include "pipeline.h"
#include "plan.h"
#include "spec.h"
#include "tuning.h"

#include "fuzz_sink.h"

#ifndef FUSEGEN_FUZZ_TEMPLATE_DIR
#error "FUSEGEN_FUZZ_TEMPLATE_DIR must name the templates/ folder"
#endif
#ifndef FUSEGEN_FUZZ_TUNING_SPEC
#error "FUSEGEN_FUZZ_TUNING_SPEC must name the spec the tuning files are read against"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


/* The library's plan, made once (it lives as long as the process). */
static const fg_plan *fuzz__plan(void)
{
    static fg_arena arena;
    static fg_spec spec;
    static fg_plan plan;
    static int ready;
    if (ready) return &plan;
    FILE *f = fopen(FUSEGEN_FUZZ_TUNING_SPEC, "rb");
    static char text[1 << 16];
    size_t len = f ? fread(text, 1, sizeof text, f) : 0;
    if (!f || ferror(f) || len == sizeof text) {
        fprintf(stderr, "fuzz_tuning_gen: cannot read %s\n", FUSEGEN_FUZZ_TUNING_SPEC);
        abort();
    }
    fclose(f);
    fg_arena_init(&arena);
    fg_diag d;
    fg_diag_init(&d, stderr);
    fg_diag_set_source(&d, FUSEGEN_FUZZ_TUNING_SPEC, text, len);
    const fg_pipeline_opts opts = {.last = FG_PIPELINE_PLANNED, .library_files = true};
    if (fg_pipeline_run(&arena, FUSEGEN_FUZZ_TUNING_SPEC, text, len, &opts, &spec, &plan, &d, NULL) !=
        FG_PIPELINE_PLANNED) {
        fprintf(stderr, "fuzz_tuning_gen: %s does not plan\n", FUSEGEN_FUZZ_TUNING_SPEC);
        abort();
    }
    fg_diag_finish(&d);
    ready = 1;
    return &plan;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const fg_plan *plans[1] = {fuzz__plan()};
    /* An exact-size copy, so that reading one byte past the input is caught by the sanitizer. */
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);

    fg_arena arena;
    fg_arena_init(&arena);
    fg_diag d;
    fg_diag_init(&d, fuzz_sink("fuzz_tuning_gen"));
    fg_tuning tuning;
    memset(&tuning, 0, sizeof tuning);
    const int rc = fg_tuning_add(&arena, "fuzz.json", text, size, plans, 1, &tuning, &d);
    if (rc != 0 && fg_diag_errors(&d) == 0) {
        fputs("fuzz_tuning_gen: a tuning file refused without an error\n", stderr);
        abort();
    }
    if (rc == 0) {
        if (fg_diag_errors(&d) != 0) {
            fputs("fuzz_tuning_gen: a tuning file accepted with errors\n", stderr);
            abort();
        }
        /* accepted: the tuned library emits, as `fusegen generate --tuning` would write it */
        fg_out out;
        fg_out_init(&out, &arena);
        const fg_tmplsrc templates = fg_tmplsrc_dir(FUSEGEN_FUZZ_TEMPLATE_DIR);
        if (fg_emit_library_tuned(&arena, plans[0], &tuning, &templates, &out, &d) != 0 || fg_diag_errors(&d) != 0) {
            fputs("fuzz_tuning_gen: emit failed for an accepted tuning file\n", stderr);
            abort();
        }
        static const char banner[] = FUSEGEN_BANNER_PREFIX;
        for (size_t i = 0; i < out.n_files; i++)
            if (out.files[i].len < sizeof banner - 1 || memcmp(out.files[i].data, banner, sizeof banner - 1) != 0) {
                fprintf(stderr, "fuzz_tuning_gen: %s does not start with the banner\n", out.files[i].rel_path);
                abort();
            }
    }
    fg_diag_finish(&d);
    fg_arena_free(&arena);
    free(text);
    return 0;
}
