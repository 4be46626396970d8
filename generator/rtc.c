/* rtc.c - see rtc.h. NVRTC is loaded with dlopen on first use, only by `check --nvrtc` and the
 * runtime's JIT, so the generator itself neither links nor loads it (it is large, and slow
 * under valgrind).
 * Built with NVRTC's header when CMake finds it (FUSEGEN_HAVE_NVRTC; FUSEGEN_NVRTC_LIBRARY
 * names the library found then); without it the check reports that it is not available. */
#define _POSIX_C_SOURCE 200809L
#include "rtc.h"

#include "spills.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FUSEGEN_HAVE_NVRTC
#include <dlfcn.h>
#include <nvrtc.h>
#include <pthread.h>

/* The NVRTC entry points this module calls, resolved from the loaded library. */
static struct {
    int tried;
    void *lib;
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    const char *(*error_string)(nvrtcResult);
    /* optional: only the JIT needs them (fg_rtc_compile, fg_rtc_version) */
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*version)(int *, int *);
} rtc__api;

static pthread_once_t rtc__once = PTHREAD_ONCE_INIT;

/* Loads NVRTC once: the library CMake found, else whatever the loader finds by name. */
static void rtc__load_once(void)
{
    rtc__api.tried = 1;
    static const char *const names[] = {
#ifdef FUSEGEN_NVRTC_LIBRARY
        FUSEGEN_NVRTC_LIBRARY,
#endif
        "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !rtc__api.lib; ++i)
        rtc__api.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!rtc__api.lib) return;
    /* POSIX dlsym returns void *; converting it to a function pointer is how the API is used. */
#define RTC__SYM(field, name) *(void **)(&rtc__api.field) = dlsym(rtc__api.lib, name)
    RTC__SYM(create, "nvrtcCreateProgram");
    RTC__SYM(compile, "nvrtcCompileProgram");
    RTC__SYM(log_size, "nvrtcGetProgramLogSize");
    RTC__SYM(log, "nvrtcGetProgramLog");
    RTC__SYM(destroy, "nvrtcDestroyProgram");
    RTC__SYM(error_string, "nvrtcGetErrorString");
    RTC__SYM(cubin_size, "nvrtcGetCUBINSize");
    RTC__SYM(cubin, "nvrtcGetCUBIN");
    RTC__SYM(version, "nvrtcVersion");
#undef RTC__SYM
    if (!rtc__api.create || !rtc__api.compile || !rtc__api.log_size || !rtc__api.log || !rtc__api.destroy ||
        !rtc__api.error_string) {
        dlclose(rtc__api.lib);
        rtc__api.lib = NULL;
    }
}

static int rtc__load(void)
{
    pthread_once(&rtc__once, rtc__load_once);
    return rtc__api.lib != NULL;
}

int fg_rtc_available(void) { return rtc__load(); }

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

/* The variant of spec kernel k that kernel function `fn` belongs to (its name is the variant's,
 * then "_" and the kernel's part, e.g. "_gemm1"): the longest such name. */
static const fg_plan_kernel *rtc__variant(const fg_plan *plan, const fg_kernel_spec *k, const char *fn, size_t fn_len)
{
    const fg_plan_kernel *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < plan->n_kernels; ++i) {
        const fg_plan_kernel *pk = &plan->kernels[i];
        size_t len = strlen(pk->name);
        if (pk->spec != k || len >= fn_len || fn[len] != '_' || strncmp(fn, pk->name, len) != 0) continue;
        if (len > best_len) best = pk, best_len = len;
    }
    return best;
}

/* ptxas's spill warnings in an NVRTC log, summed by variant: one line each to `log`, with the
 * row spills.def would hold for it (tests/nvrtc/spill_table.py --measure collects them). */
static void rtc__spills(const fg_plan *plan, const fg_kernel_spec *k, fg_arch arch, const char *text, FILE *log)
{
    static const char marker[] = "Registers are spilled to local memory in function '";
    long *bytes = calloc(plan->n_kernels ? plan->n_kernels : 1, sizeof *bytes);
    if (!bytes) return;
    for (const char *p = strstr(text, marker); p; p = strstr(p, marker)) {
        p += sizeof marker - 1;
        const char *end = strchr(p, '\'');
        if (!end) break;
        long n = 0;
        if (sscanf(end, "', %ld bytes spill stores", &n) != 1) n = 0;
        /* functions are named <library>_<variant>_<part> */
        size_t lib = strlen(plan->spec->library);
        const fg_plan_kernel *pk = NULL;
        if ((size_t)(end - p) > lib + 1 && strncmp(p, plan->spec->library, lib) == 0 && p[lib] == '_')
            pk = rtc__variant(plan, k, p + lib + 1, (size_t)(end - p) - lib - 1);
        if (pk) bytes[pk - plan->kernels] += n > 0 ? n : 1;
        p = end;
    }
    for (size_t i = 0; i < plan->n_kernels; ++i) {
        if (!bytes[i]) continue;
        fg_spill_key key;
        if (fg_spill_key_of(&plan->kernels[i], arch, &key)) {
            fprintf(log, "spill %-7s %s (%ld bytes; a chain or a long epilogue: not in the spill table)\n",
                    fg_spec_arch_name(arch), plan->kernels[i].name, bytes[i]);
            continue;
        }
        char row[FG_SPILL_EPILOGUE_MAX + 256];
        fg_spill_row(&key, bytes[i], row, sizeof row);
        fprintf(log, "spill %-7s %s %s\n", fg_spec_arch_name(arch), plan->kernels[i].name, row);
    }
    free(bytes);
}

static int rtc__compile(const fg_plan *plan, const fg_kernel_spec *k, const fg_out_file *cu, fg_arch arch_id,
                        int ptx_only, char *const headers[2], const char *const header_names[2], FILE *log)
{
    const char *arch = fg_spec_arch_name(arch_id);
    char *src = rtc__text(cu);
    if (!src) return 1;
    nvrtcProgram prog;
    nvrtcResult r = rtc__api.create(&prog, src, cu->rel_path, 2, (const char *const *)headers, header_names);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "%s: error: nvrtcCreateProgram: %s\n", cu->rel_path, rtc__api.error_string(r));
        free(src);
        return 1;
    }
    char arch_opt[64];
    /* sm_XY -> compute_XY: the virtual arch, for which NVRTC stops at PTX */
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s%s", ptx_only ? "compute_" : "", ptx_only ? arch + 3 : arch);
    /* A spill is a warning in the log, so a failure here, as in the CMake build (-warn-spills
     * with warnings as errors). */
    const char *opts[] = {arch_opt, "-std=c++17", "--ptxas-options=--warn-on-spills"};
    r = rtc__api.compile(prog, ptx_only ? 2 : (int)(sizeof opts / sizeof opts[0]), opts);
    int failed = r != NVRTC_SUCCESS;
    size_t log_size = 0;
    if (rtc__api.log_size(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        char *text = malloc(log_size);
        int have = text && rtc__api.log(prog, text) == NVRTC_SUCCESS;
        if (have) fputs(text, stderr);
        failed = 1;
        /* log is NULL under -q: the compiler's messages above still say what failed */
        if (log) fprintf(log, "%-4s %-7s %s\n", "FAIL", arch, cu->rel_path);
        if (have && log) rtc__spills(plan, k, arch_id, text, log);
        free(text);
    } else if (log) {
        fprintf(log, "%-4s %-7s %s\n", failed ? "FAIL" : "ok", arch, cu->rel_path);
    }
    rtc__api.destroy(&prog);
    free(src);
    return failed;
}

int fg_rtc_check(const fg_plan *plan, const fg_out *out, int ptx_only, FILE *log)
{
    if (!rtc__load()) return -1;
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
    /* every kernel file, past a failed one (each failure reported; the spill rows all printed) */
    const int headers_missing = failures;
    for (size_t i = 0; !headers_missing && i < spec->n_kernels; ++i) {
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
            failures += rtc__compile(plan, k, cu, k->archs[a], ptx_only, headers, header_names, log);
    }
    free(headers[0]);
    free(headers[1]);
    return failures;
}

int fg_rtc_version(int *major, int *minor)
{
    if (!rtc__load() || !rtc__api.version) return -1;
    return rtc__api.version(major, minor) == NVRTC_SUCCESS ? 0 : -1;
}

/* Appends text to a malloc'ed, NUL-terminated log. */
static void rtc__log_append(char **log, const char *text)
{
    size_t old = *log ? strlen(*log) : 0, add = strlen(text);
    char *n = realloc(*log, old + add + 1);
    if (!n) return;
    memcpy(n + old, text, add + 1);
    *log = n;
}

int fg_rtc_compile(const char *src, const char *name, int n_headers, const char *const *headers,
                   const char *const *header_names, const char *const *opts, int n_opts, char **code,
                   size_t *code_len, char **log)
{
    char line[256];
    *code = NULL;
    *code_len = 0;
    *log = NULL;
    if (!rtc__load()) {
        rtc__log_append(log, "NVRTC cannot be loaded (libnvrtc.so not found)");
        return -1;
    }
    if (!rtc__api.cubin_size || !rtc__api.cubin) {
        rtc__log_append(log, "this NVRTC has no nvrtcGetCUBIN (CUDA 11.1 or later is needed)");
        return -1;
    }
    nvrtcProgram prog;
    nvrtcResult r = rtc__api.create(&prog, src, name, n_headers, headers, header_names);
    if (r != NVRTC_SUCCESS) {
        snprintf(line, sizeof line, "nvrtcCreateProgram: %s", rtc__api.error_string(r));
        rtc__log_append(log, line);
        return -1;
    }
    r = rtc__api.compile(prog, n_opts, opts);
    size_t log_size = 0;
    if (rtc__api.log_size(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        char *text = malloc(log_size);
        if (text && rtc__api.log(prog, text) == NVRTC_SUCCESS) rtc__log_append(log, text);
        free(text);
    }
    int rc = 0;
    if (r != NVRTC_SUCCESS) {
        snprintf(line, sizeof line, "%snvrtcCompileProgram: %s", *log ? "\n" : "", rtc__api.error_string(r));
        rtc__log_append(log, line);
        rc = 1;
    } else {
        size_t n = 0;
        r = rtc__api.cubin_size(prog, &n);
        char *bin = r == NVRTC_SUCCESS && n > 0 ? malloc(n) : NULL;
        if (bin && rtc__api.cubin(prog, bin) == NVRTC_SUCCESS) {
            *code = bin;
            *code_len = n;
        } else {
            free(bin);
            snprintf(line, sizeof line, "%sno CUBIN from NVRTC (%s; is the architecture a real one, sm_XY?)",
                     *log ? "\n" : "", r == NVRTC_SUCCESS ? "empty or out of memory" : rtc__api.error_string(r));
            rtc__log_append(log, line);
            rc = 1;
        }
    }
    rtc__api.destroy(&prog);
    return rc;
}

#else  /* no NVRTC in this build */

int fg_rtc_available(void) { return 0; }

int fg_rtc_check(const fg_plan *plan, const fg_out *out, int ptx_only, FILE *log)
{
    (void)plan, (void)out, (void)ptx_only, (void)log;
    return -1;
}

int fg_rtc_version(int *major, int *minor)
{
    (void)major, (void)minor;
    return -1;
}

int fg_rtc_compile(const char *src, const char *name, int n_headers, const char *const *headers,
                   const char *const *header_names, const char *const *opts, int n_opts, char **code,
                   size_t *code_len, char **log)
{
    (void)src, (void)name, (void)n_headers, (void)headers, (void)header_names, (void)opts, (void)n_opts;
    *code = NULL;
    *code_len = 0;
    *log = NULL;
    static const char msg[] = "this fusegen was built without NVRTC";
    *log = malloc(sizeof msg);
    if (*log) memcpy(*log, msg, sizeof msg);
    return -1;
}

#endif
