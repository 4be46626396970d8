/* front_test.h - a tiny test harness shared by the front-end unit tests (jsonpos, spec,
 * check, arch): CHECK counts and reports, front_run parses + checks a spec held in a string and
 * captures the diagnostics as text. */
#ifndef FUSEGEN_FRONT_TEST_H
#define FUSEGEN_FRONT_TEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "check.h"
#include "diag.h"
#include "pipeline.h"
#include "spec.h"

static int ft_passed, ft_failed;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (cond) {                                                                  \
            ft_passed++;                                                             \
        } else {                                                                     \
            ft_failed++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

static inline int ft_report(void)
{
    printf("%d passed, %d failed\n", ft_passed, ft_failed);
    return ft_failed ? 1 : 0;
}

/* The outcome of parsing (and, when parsing succeeded, checking) one spec. */
typedef struct ft_result {
    int parse_rc;          /* fg_spec_parse's return */
    int check_errors;      /* fg_check_spec's return; -1 when it did not run */
    int errors;            /* fg_diag_errors at the end */
    char text[65536];      /* everything printed, cut to fit */
} ft_result;

/* Parses json (len bytes; strlen when len is (size_t)-1) and checks it when it parsed. The spec
 * model is left in *spec when spec is not NULL (its memory in *arena, which the caller frees). */
static inline void ft_run_n(const char *json, size_t len, ft_result *r, fg_arena *arena, fg_spec *spec)
{
    fg_spec local;
    fg_arena own;
    if (!spec) spec = &local;
    if (!arena) { fg_arena_init(&own); arena = &own; }
    if (len == (size_t)-1) len = strlen(json);
    FILE *f = tmpfile();
    fg_diag d;
    fg_diag_init(&d, f);
    memset(r, 0, sizeof *r);
    /* the stages as the command line and the JIT run them (pipeline.h), up to check */
    const fg_pipeline_opts opts = {.last = FG_PIPELINE_CHECKED, .library_files = false};
    fg_pipeline_result res;
    fg_plan unused;
    fg_pipeline_run(arena, "t.json", json, len, &opts, spec, &unused, &d, &res);
    r->parse_rc = res.reached >= FG_PIPELINE_PARSED ? 0 : -1;
    r->check_errors = res.reached >= FG_PIPELINE_PARSED ? res.check_errors : -1;
    fg_diag_finish(&d);
    r->errors = fg_diag_errors(&d);
    if (f) {
        rewind(f);
        size_t n = fread(r->text, 1, sizeof r->text - 1, f);
        r->text[n] = '\0';
        fclose(f);
    }
    if (arena == &own) fg_arena_free(&own);
}

static inline void ft_run(const char *json, ft_result *r) { ft_run_n(json, (size_t)-1, r, NULL, NULL); }

/* Count of lines in r->text that contain needle. */
static inline int ft_lines_with(const ft_result *r, const char *needle)
{
    int n = 0;
    const char *p = r->text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char line[1024];
        if (len >= sizeof line) len = sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        if (strstr(line, needle)) n++;
        p += len + (e ? 1 : 0);
        if (!e) break;
    }
    return n;
}

/* Reads a whole file into malloc'd memory; NULL on failure. */
static inline char *ft_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (buf) *len = n;
    return buf;
}

#endif
