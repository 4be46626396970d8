/* rtc.c - see rtc.h. Built with NVRTC when CMake finds it (FUSEGEN_HAVE_NVRTC); without it
 * the check reports that it is not available. */
#include "rtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FUSEGEN_HAVE_NVRTC
#include <nvrtc.h>

int fg_rtc_available(void) { return 1; }

/* The file of `out` whose path ends with "/name", or NULL. */
static const fg_out_file *rtc__find(const fg_out *out, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < out->n_files; ++i) {
        const char *p = out->files[i].rel_path;
        size_t pl = strlen(p);
        if (pl > nl && p[pl - nl - 1] == '/' && strcmp(p + pl - nl, name) == 0) return &out->files[i];
    }
    return NULL;
}

/* NVRTC wants NUL-terminated sources; the rendered files are not guaranteed to be. */
static char *rtc__text(const fg_out_file *f)
{
    char *s = malloc(f->len + 1);
    if (s) {
        memcpy(s, f->data, f->len);
        s[f->len] = '\0';
    }
    return s;
}

static int rtc__compile(const fg_out_file *cu, const char *arch, char *const headers[2],
                          const char *const header_names[2], FILE *log)
{
    char *src = rtc__text(cu);
    if (!src) return 1;
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, src, cu->rel_path, 2, (const char *const *)headers, header_names);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "%s: error: nvrtcCreateProgram: %s\n", cu->rel_path, nvrtcGetErrorString(r));
        free(src);
        return 1;
    }
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    const char *opts[] = {arch_opt, "-std=c++17"};
    r = nvrtcCompileProgram(prog, 2, opts);
    int failed = r != NVRTC_SUCCESS;
    size_t log_size = 0;
    if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        char *text = malloc(log_size);
        if (text && nvrtcGetProgramLog(prog, text) == NVRTC_SUCCESS) fputs(text, stderr);
        free(text);
        failed = 1;
    }
    fprintf(log, "%-4s %-7s %s\n", failed ? "FAIL" : "ok", arch, cu->rel_path);
    nvrtcDestroyProgram(&prog);
    free(src);
    return failed;
}

int fg_rtc_check(const fg_plan *plan, const fg_out *out, FILE *log)
{
    static const char *const header_names[2] = {"fusegen_sm80.cuh", "fusegen_sm90.cuh"};
    char *headers[2] = {NULL, NULL};
    int failures = 0;
    for (int h = 0; h < 2; ++h) {
        const fg_out_file *f = rtc__find(out, header_names[h]);
        headers[h] = f ? rtc__text(f) : NULL;
        if (!headers[h]) {
            fprintf(stderr, "fusegen: error: %s was not rendered\n", header_names[h]);
            failures = 1;
        }
    }
    const fg_spec *spec = plan->spec;
    for (size_t i = 0; !failures && i < spec->n_kernels; ++i) {
        const fg_kernel_spec *k = &spec->kernels[i];
        char name[2 * FG_SPEC_MAX_NAME + 8];
        snprintf(name, sizeof name, "%s_%s.cu", spec->library, k->name);
        const fg_out_file *cu = rtc__find(out, name);
        if (!cu) {
            fprintf(stderr, "fusegen: error: %s was not rendered\n", name);
            ++failures;
            continue;
        }
        for (size_t a = 0; a < k->n_archs; ++a)
            failures += rtc__compile(cu, fg_spec_arch_name(k->archs[a]), headers, header_names, log);
    }
    free(headers[0]);
    free(headers[1]);
    return failures;
}

#else  /* no NVRTC in this build */

int fg_rtc_available(void) { return 0; }

int fg_rtc_check(const fg_plan *plan, const fg_out *out, FILE *log)
{
    (void)plan, (void)out, (void)log;
    return -1;
}

#endif
