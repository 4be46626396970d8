#define _POSIX_C_SOURCE 200809L
/* nvrtc_compile - compiles every generated kernel file (*.cu) of a library folder with NVRTC,
 * for each architecture given, without a GPU. On failure it prints NVRTC's log, whose
 * locations are the generated file's own line numbers.
 *   nvrtc_compile DIR ARCH...      e.g. nvrtc_compile build/generated/lib sm_80 sm_90a
 * (a virtual arch, compute_90a, stops at PTX: no ptxas) */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvrtc.h>

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
            } else {
                buf[n] = '\0';
            }
        }
    }
    fclose(f);
    return buf;
}

/* Returns 0 when the file compiles for arch. */
static int compile_one(const char *dir, const char *path, const char *arch)
{
    char *src = read_file(path);
    if (!src) {
        fprintf(stderr, "%s: cannot read\n", path);
        return 1;
    }
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, src, path, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        fprintf(stderr, "%s: nvrtcCreateProgram: %s\n", path, nvrtcGetErrorString(r));
        free(src);
        return 1;
    }
    char arch_opt[64], inc_opt[4096];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    snprintf(inc_opt, sizeof inc_opt, "-I%s", dir);
    const char *opts[] = {arch_opt, inc_opt, "-std=c++17", "--extra-device-vectorization"};
    r = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    size_t log_size = 0;
    nvrtcGetProgramLogSize(prog, &log_size);
    int failed = r != NVRTC_SUCCESS;
    if (log_size > 1) {
        char *log = malloc(log_size);
        if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) fprintf(stderr, "%s", log);
        free(log);
        failed = 1;   /* a warning is a failure too: generated code compiles cleanly */
    }
    printf("%-6s %-8s %s\n", failed ? "FAIL" : "ok", arch, path);
    nvrtcDestroyProgram(&prog);
    free(src);
    return failed;
}

int main(int argc, char **argv)
{
    /* --part I/N: only the files whose place in the sorted list is I modulo N (one test a part,
     * so that ctest compiles the parts side by side) */
    unsigned part = 0, parts = 1;
    if (argc >= 3 && strcmp(argv[1], "--part") == 0) {
        char tail = 0;
        if (sscanf(argv[2], "%u/%u%c", &part, &parts, &tail) != 2 || parts == 0 || part >= parts) {
            fprintf(stderr, "nvrtc_compile: --part '%s': give I/N with I < N\n", argv[2]);
            return 2;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: nvrtc_compile [--part I/N] DIR ARCH...\n");
        return 2;
    }
    const char *dir = argv[1];
    DIR *dp = opendir(dir);
    if (!dp) {
        perror(dir);
        return 2;
    }
    /* Sorted file list, so the output order is stable. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".cu") != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) return 2;
            names = grown;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(dp);
    for (size_t i = 1; i < n; ++i)
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; --j) {
            char *t = names[j]; names[j] = names[j - 1]; names[j - 1] = t;
        }
    int failures = 0, passes = 0;
    for (size_t i = 0; i < n; ++i) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        for (int a = 2; a < argc && i % parts == part; ++a) {
            if (compile_one(dir, path, argv[a])) ++failures; else ++passes;
        }
        free(names[i]);
    }
    free(names);
    if (n == 0 || passes + failures == 0) {
        fprintf(stderr, "%s: no .cu files%s\n", dir, n == 0 ? "" : " in this part");
        return 1;
    }
    printf("%d passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
