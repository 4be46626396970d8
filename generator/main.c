/* main.c - the fusegen command line:
 *   fusegen generate SPEC... -o DIR [-q] [--depfile FILE] [--templates DIR] [--only GLOB]... [--tuning FILE]...
 *   fusegen check SPEC... [-q] [--nvrtc | --nvrtc-ptx] [--templates DIR] [--only GLOB]... [--tuning FILE]...
 *   fusegen list SPEC... [--only GLOB]...
 * In what it prints, a "kernel" is a kernel of a spec and a "variant" one planned form of it
 * (a dispatch-table entry, named in the generated header). Every spec goes through parse -> check -> plan, and every error of every spec is reported
 * before anything is written. Exit status: 0 ok, 1 errors in a spec (or in rendering it: a
 * template that cannot be read or fails), 2 usage or I/O errors (a missing template folder). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "check.h"
#include "diag.h"
#include "emit.h"
#include "rtc.h"
#include "out.h"
#include "pipeline.h"
#include "plan.h"
#include "spec.h"
#include "tuning.h"

#ifndef FUSEGEN_VERSION
#define FUSEGEN_VERSION "unknown"
#endif
#ifndef FUSEGEN_TEMPLATE_DIR
#define FUSEGEN_TEMPLATE_DIR "templates"
#endif

enum { EXIT_OK = 0, EXIT_SPEC = 1, EXIT_USAGE = 2 };

typedef enum { CMD_GENERATE, CMD_CHECK, CMD_LIST } command;

typedef struct options {
    command cmd;
    const char **specs; size_t n_specs;
    const char *out_dir;
    const char *depfile;
    const char *templates;
    int nvrtc;               /* check --nvrtc (1) or --nvrtc-ptx (2: PTX only) */
    int quiet;               /* -q: no line per library (generate) or spec (check) */
    const char **only; size_t n_only;   /* --only GLOB: the spec kernels to keep */
    const char **tuning; size_t n_tuning;   /* --tuning FILE: measured winners to compile in */
} options;

/* One spec on its way through the stages. */
typedef struct job {
    const char *path;
    const char *text; size_t len;
    fg_spec spec;
    fg_plan plan;
    fg_tuning tuning;    /* --tuning files for its library, checked against the whole plan */
    int ok;              /* parsed, checked and planned without errors */
} job;

static const char usage_text[] =
    "usage: fusegen generate SPEC... -o DIR [-q] [--depfile FILE] [--templates DIR] [--only GLOB]...\n"
    "                        [--tuning FILE]...\n"
    "       fusegen check SPEC... [-q] [--nvrtc | --nvrtc-ptx] [--templates DIR] [--only GLOB]...\n"
    "                     [--tuning FILE]...\n"
    "       fusegen list SPEC... [--only GLOB]...\n"
    "       fusegen --version | --help\n";

static const char help_text[] =
    "\n"
    "Generates fused CUDA GEMM kernels (GEMM + epilogue chain such as bias, residual,\n"
    "LayerNorm, activation) from JSON specs. A kernel is one entry of a spec's \"kernels\";\n"
    "its variants are the forms the planner makes of it (tiles, norm strategies, archs), one\n"
    "dispatch-table entry each, among which the runtime picks per problem.\n"
    "\n"
    "commands:\n"
    "  generate   parse, check and plan every SPEC, then write the library sources under DIR\n"
    "             (DIR/<library>/...). Nothing is written when any spec has an error, or\n"
    "             when anything is in the way. Removes the files that an earlier run\n"
    "             generated (DIR/<library>/fusegen_manifest.txt names them) and this one\n"
    "             does not, one line each. Runs into one DIR take turns (a lock). Prints\n"
    "             one line per library: its folder, its kernels and variants, and how many\n"
    "             of its files changed (unchanged files are not rewritten)\n"
    "  check      parse, check and plan every SPEC; write nothing. With --nvrtc, also render\n"
    "             every kernel file and compile it with NVRTC for each arch it targets\n"
    "             (no GPU needed); NVRTC's messages name the generated file's lines, and a\n"
    "             register spill fails too. Prints one line per SPEC that passes\n"
    "  list       print the variants every SPEC plans, one per line\n"
    "\n"
    "options:\n"
    "  -o, --output DIR     folder to write into (generate)\n"
    "  --depfile FILE       also write a Make-style depfile (generate); FILE is relative to\n"
    "                       the current folder, not to DIR, and may not be a spec, a\n"
    "                       template or a generated file\n"
    "  --only GLOB          keep only the kernels whose name matches GLOB (repeatable;\n"
    "                       the whole spec is still checked)\n"
    "  --tuning FILE        compile the measured winners of a tuning file (written by\n"
    "                       fusegen-tune) into the dispatch table of the library it names\n"
    "                       (repeatable: one file per device and library); its library\n"
    "                       name and spec_sha256 must be those of a SPEC given, and its\n"
    "                       winners variants that SPEC plans (generate; check validates)\n"
    "  -q, --quiet          no line per library (generate) or per spec (check) on success,\n"
    "                       nor per NVRTC compile; errors and removed files are still said\n"
    "  --nvrtc              compile the rendered kernel files with NVRTC (check)\n"
    "  --nvrtc-ptx          the same to PTX only: no ptxas, so faster, and spills are not\n"
    "                       checked (check)\n"
    "  --templates DIR      template folder (default: $FUSEGEN_TEMPLATE_DIR, else\n"
    "                       ../share/fusegen/templates next to the program, else the one\n"
    "                       fusegen was built with)\n"
    "  -h, --help           show this help\n"
    "  --version            show the version\n"
    "\n"
    "exit status: 0 ok, 1 errors in a spec (diagnostics printed), 2 usage or I/O error\n";

static int usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("fusegen: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

/* Matches "--name VALUE", "--name=VALUE" (and "-o VALUE", "-oVALUE" for short). Returns 1 and
 * sets *value (advancing *i) on a match, 0 when argv[*i] is another option, -1 when the value
 * is missing. */
static int take_value(int argc, char **argv, int *i, const char *shrt, const char *lng, const char **value)
{
    const char *a = argv[*i];
    size_t ln = strlen(lng);
    if ((shrt && strcmp(a, shrt) == 0) || strcmp(a, lng) == 0) {
        if (*i + 1 >= argc) return -1;
        *value = argv[++*i];
        return 1;
    }
    if (strncmp(a, lng, ln) == 0 && a[ln] == '=') {
        *value = a + ln + 1;
        return 1;
    }
    if (shrt && strncmp(a, shrt, strlen(shrt)) == 0 && a[strlen(shrt)] != '\0') {
        *value = a + strlen(shrt);
        return 1;
    }
    return 0;
}

/* Parses the command line into *o. Returns -1 to exit 0 (help/version printed), 0 to go on,
 * or EXIT_USAGE after printing the error. */
static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    if (argc < 2) return usage_error("no command given");
    const char *c = argv[1];
    const int is_help = strcmp(c, "--help") == 0 || strcmp(c, "-h") == 0 || strcmp(c, "help") == 0;
    if ((strcmp(c, "--version") == 0 || is_help) && argc > 2) return usage_error("'%s' takes no arguments", c);
    if (strcmp(c, "--version") == 0) {
        printf("fusegen %s\n", FUSEGEN_VERSION);
        return -1;
    }
    if (is_help) {
        fputs(usage_text, stdout);
        fputs(help_text, stdout);
        return -1;
    }
    if (strcmp(c, "generate") == 0) o->cmd = CMD_GENERATE;
    else if (strcmp(c, "check") == 0) o->cmd = CMD_CHECK;
    else if (strcmp(c, "list") == 0) o->cmd = CMD_LIST;
    else if (c[0] == '-') return usage_error("unknown option '%s'", c);
    else return usage_error("unknown command '%s' (expected generate, check or list)", c);

    o->specs = calloc((size_t)argc, sizeof *o->specs);
    o->only = calloc((size_t)argc, sizeof *o->only);
    o->tuning = calloc((size_t)argc, sizeof *o->tuning);
    if (!o->specs || !o->only || !o->tuning) {
        fputs("fusegen: error: out of memory\n", stderr);
        return EXIT_USAGE;
    }
    int only_files = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        int r;
        if (only_files || a[0] != '-' || strcmp(a, "-") == 0) {
            o->specs[o->n_specs++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_files = 1;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            fputs(help_text, stdout);
            return -1;
        }
        if ((r = take_value(argc, argv, &i, "-o", "--output", &v)) != 0) {
            if (r < 0) return usage_error("option '%s' needs a folder", a);
            if (o->cmd != CMD_GENERATE) return usage_error("option '%s' applies only to 'generate'", a);
            if (o->out_dir) return usage_error("option '%s' given twice", a);
            if (!*v) return usage_error("the output folder name is empty");
            o->out_dir = v;
        } else if ((r = take_value(argc, argv, &i, NULL, "--depfile", &v)) != 0) {
            if (r < 0) return usage_error("option '%s' needs a file name", a);
            if (o->cmd != CMD_GENERATE) return usage_error("option '%s' applies only to 'generate'", a);
            if (o->depfile) return usage_error("option '%s' given twice", a);
            if (!*v) return usage_error("the depfile name is empty");
            o->depfile = v;
        } else if ((r = take_value(argc, argv, &i, NULL, "--only", &v)) != 0) {
            if (r < 0) return usage_error("option '%s' needs a kernel name or glob", a);
            if (!*v) return usage_error("the --only glob is empty");
            if (strpbrk(v, "[]\\")) return usage_error("the --only glob '%s' has [, ] or \\: globs take * and ? only", v);
            o->only[o->n_only++] = v;
        } else if ((r = take_value(argc, argv, &i, NULL, "--tuning", &v)) != 0) {
            if (r < 0) return usage_error("option '%s' needs a file name", a);
            if (o->cmd == CMD_LIST) return usage_error("option '%s' does not apply to 'list'", a);
            if (!*v) return usage_error("the tuning file name is empty");
            o->tuning[o->n_tuning++] = v;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            if (o->cmd == CMD_LIST) return usage_error("option '%s' does not apply to 'list'", a);
            o->quiet = 1;
        } else if (strcmp(a, "--nvrtc") == 0 || strcmp(a, "--nvrtc-ptx") == 0) {
            if (o->cmd != CMD_CHECK) return usage_error("option '%s' applies only to 'check'", a);
            if (o->nvrtc) return usage_error("'--nvrtc' and '--nvrtc-ptx': give one, once");
            if (!fg_rtc_available()) return usage_error("NVRTC is not available (this fusegen was built without it, or libnvrtc cannot be loaded): '%s' cannot run", a);
            o->nvrtc = strcmp(a, "--nvrtc-ptx") == 0 ? 2 : 1;
        } else if ((r = take_value(argc, argv, &i, NULL, "--templates", &v)) != 0) {
            if (r < 0) return usage_error("option '%s' needs a folder", a);
            if (o->cmd == CMD_LIST) return usage_error("option '%s' does not apply to 'list'", a);
            if (o->templates) return usage_error("option '%s' given twice", a);
            if (!*v) return usage_error("the template folder name is empty");
            o->templates = v;
        } else {
            return usage_error("unknown option '%s'", a);
        }
    }
    if (o->n_specs == 0) return usage_error("no spec file given");
    if (o->cmd == CMD_GENERATE && !o->out_dir) return usage_error("'generate' needs -o DIR");
    return 0;
}

/* A spec over the size limit is a spec error (exit 1), reported by the caller in GNU style. */
#define READ_TOO_LARGE (-2)

/* Reads a spec file into arena memory (NUL-terminated). Returns 0, READ_TOO_LARGE, or -1 after
 * printing one error line. The file is opened non-blocking: opening a FIFO that has no writer
 * would wait for one forever. Reading waits (poll) only while a writer holds it open; a FIFO or
 * pipe that gives no byte and has no writer is an error, not an empty spec. */
static int read_spec(fg_arena *a, const char *path, const char **text, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "fusegen: error: cannot open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        fprintf(stderr, "fusegen: error: cannot read '%s': %s\n", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        fprintf(stderr, "fusegen: error: '%s' is a folder, not a spec file\n", path);
        close(fd);
        return -1;
    }
    if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > FG_SPEC_MAX_BYTES) {
        close(fd);
        return READ_TOO_LARGE;
    }
    /* Read at most one byte more than allowed: pipes and devices have no size to trust. */
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf) goto oom;
    for (;;) {
        if (n == cap) {
            if (cap > FG_SPEC_MAX_BYTES) break;
            size_t ncap = cap * 2 > (size_t)FG_SPEC_MAX_BYTES + 1 ? (size_t)FG_SPEC_MAX_BYTES + 1 : cap * 2;
            char *nb = realloc(buf, ncap);
            if (!nb) goto oom;
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r > 0) {
            n += (size_t)r;
            continue;
        }
        if (r == 0) break;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {   /* a writer, no data yet */
            struct pollfd pfd = {.fd = fd, .events = POLLIN};
            if (poll(&pfd, 1, -1) >= 0 || errno == EINTR) continue;
        }
        fprintf(stderr, "fusegen: error: cannot read '%s': %s\n", path, strerror(errno));
        free(buf);
        close(fd);
        return -1;
    }
    close(fd);
    if (n == 0 && S_ISFIFO(st.st_mode)) {
        fprintf(stderr, "fusegen: error: '%s' is a FIFO or pipe with no data and no writer (fusegen does not "
                "wait for a writer to open it)\n", path);
        free(buf);
        return -1;
    }
    if (n > FG_SPEC_MAX_BYTES) {
        free(buf);
        return READ_TOO_LARGE;
    }
    char *copy = fg_arena_strndup(a, buf, n);
    free(buf);
    if (!copy) {
        fprintf(stderr, "fusegen: error: out of memory reading '%s'\n", path);
        return -1;
    }
    *text = copy;
    *len = n;
    return 0;
oom:
    fprintf(stderr, "fusegen: error: out of memory reading '%s'\n", path);
    free(buf);
    close(fd);
    return -1;
}

/* parse -> check -> plan for one spec, the whole of it; each stage runs only when the previous one
 * was clean. */
static void process_spec(fg_arena *a, job *j, fg_diag *d)
{
    /* a library written to files: its file rules too */
    const fg_pipeline_opts opts = {.last = FG_PIPELINE_PLANNED, .library_files = true};
    j->ok = fg_pipeline_run(a, j->path, j->text, j->len, &opts, &j->spec, &j->plan, d, NULL) == FG_PIPELINE_PLANNED;
}

/* --only: keeps the spec kernels whose name matches one of the globs (fnmatch) and plans again.
 * Runs after every spec was checked and planned whole (and against the others), so a filtered
 * build never hides an error of the kernels it leaves out. */
static void keep_only(fg_arena *a, job *j, const options *o, fg_diag *d)
{
    fg_spec *s = &j->spec;
    size_t kept = 0;
    for (size_t i = 0; i < s->n_kernels; i++) {
        int match = 0;
        for (size_t g = 0; g < o->n_only && !match; g++) match = fnmatch(o->only[g], s->kernels[i].name, 0) == 0;
        if (match) s->kernels[kept++] = s->kernels[i];
    }
    s->n_kernels = kept;
    fg_diag_set_source(d, j->path, j->text, j->len);
    if (kept == 0) {
        fg_diag_error(d, "/kernels", "no kernel name matches --only '%s'%s", o->only[0],
                      o->n_only > 1 ? " or the other --only globs" : "");
        j->ok = 0;
        return;
    }
    if (fg_plan_build(a, s, &j->plan, d) != 0) j->ok = 0;
}

static void print_list(const job *jobs, size_t n_jobs)
{
    for (size_t i = 0; i < n_jobs; i++) {
        const fg_plan *p = &jobs[i].plan;
        for (size_t k = 0; k < p->n_kernels; k++) {
            const fg_plan_kernel *pk = &p->kernels[k];
            const char *arch = fg_spec_arch_name(pk->arch);
            printf("%s  arch=%s  tile=%ldx%ldx%ld  stages=%ld", pk->name ? pk->name : "?", arch ? arch : "?",
                   pk->g1.bm, pk->g1.bn, pk->g1.bk, pk->g1.stages);
            if (pk->family == FG_FAMILY_SM90) printf("  schedule=%s", pk->g1.pingpong ? "pingpong" : "cooperative");
            if (pk->chain) {
                printf("  tile2=%ldx%ldx%ld  stages2=%ld", pk->g2.bm, pk->g2.bn, pk->g2.bk, pk->g2.stages);
                if (pk->family == FG_FAMILY_SM90) printf("  schedule2=%s", pk->g2.pingpong ? "pingpong" : "cooperative");
            }
            if (pk->constraints && *pk->constraints) printf("  %s", pk->constraints);
            putchar('\n');
        }
    }
}

/* One line per library written by generate: its folder, its kernels and variants, and how
 * many of its files changed (changed may be NULL: out of memory, the count is left out). */
static void print_generated(const job *jobs, size_t n_jobs, const fg_out *out, const unsigned char *changed,
                            const char *dir)
{
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/') dlen--;
    for (size_t i = 0; i < n_jobs; i++) {
        const fg_plan *p = &jobs[i].plan;
        const char *lib = p->spec->library;
        size_t llen = strlen(lib), files = 0, n_changed = 0;
        for (size_t f = 0; f < out->n_files; f++) {
            const char *rel = out->files[f].rel_path;
            if (strncmp(rel, lib, llen) != 0 || rel[llen] != '/') continue;
            files++;
            n_changed += changed && changed[f];
        }
        printf("fusegen: %.*s%s%s: %zu kernel%s, %zu variant%s; ", (int)dlen, dir, dir[dlen - 1] == '/' ? "" : "/", lib,
               p->spec->n_kernels, p->spec->n_kernels == 1 ? "" : "s", p->n_kernels, p->n_kernels == 1 ? "" : "s");
        if (changed) printf("%zu of %zu files changed\n", n_changed, files);
        else printf("%zu files\n", files);
    }
}

/* Whether dir holds the template folders (host/, kernels/, common/). */
static int has_templates(const char *dir)
{
    static const char *const sub[] = {"host", "kernels", "common"};
    for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
        char p[4096];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, sub[i]) >= (int)sizeof p) return 0;
        if (!(stat(p, &st) == 0 && S_ISDIR(st.st_mode))) return 0;
    }
    return 1;
}

/* --templates, then $FUSEGEN_TEMPLATE_DIR, then the installed layout next to the program
 * (<prefix>/bin/fusegen and <prefix>/share/fusegen/templates), then the source tree. */
static const char *template_dir(const options *o)
{
    static char installed[4096];
    if (o->templates) return o->templates;
    const char *env = getenv("FUSEGEN_TEMPLATE_DIR");
    if (env && *env) return env;
    ssize_t n = readlink("/proc/self/exe", installed, sizeof installed - 32);
    if (n > 0) {
        installed[n] = '\0';
        char *slash = strrchr(installed, '/');
        if (slash) {
            strcpy(slash, "/../share/fusegen/templates");
            if (has_templates(installed)) return installed;
        }
    }
    return FUSEGEN_TEMPLATE_DIR;
}

/* The template folder for rendering, or NULL after one line on stderr: a missing folder is an
 * installation or usage problem (exit 2), not an error of the spec. */
static const char *usable_template_dir(const options *o)
{
    const char *dir = template_dir(o);
    if (has_templates(dir)) return dir;
    fprintf(stderr, "fusegen: error: template folder '%s' not found or incomplete (it holds host/, kernels/ and "
            "common/; give it with --templates or FUSEGEN_TEMPLATE_DIR)\n", dir);
    return NULL;
}

/* Whether a_lib + "_" + a_name and b_lib + "_" + b_name are one string, ignoring ASCII case. */
static int same_prefix_nocase(const char *a_lib, const char *a_name, const char *b_lib, const char *b_name)
{
    const char *a[3] = {a_lib, "_", a_name}, *b[3] = {b_lib, "_", b_name};
    size_t ai = 0, bi = 0;
    const char *x = a[0], *y = b[0];
    for (;;) {
        while (!*x && ai < 2) x = a[++ai];
        while (!*y && bi < 2) y = b[++bi];
        if (!*x || !*y) return !*x && !*y;
        if (tolower((unsigned char)*x) != tolower((unsigned char)*y)) return 0;
        x++;
        y++;
    }
}

/* Whether two paths name one file (the same spec given twice). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Specs of one run end up in one program: jobs[i] may not define a library that an earlier spec
 * defines (one folder of output; in any case, as its include guard is the name in capitals),
 * nor a kernel whose C symbols (library_kernel_...) an earlier spec's kernel makes too. */
static void check_against_earlier(fg_arena *arena, job *jobs, size_t i, fg_diag *d)
{
    job *j = &jobs[i];
    for (size_t e = 0; e < i; e++) {
        const fg_spec *o = &jobs[e].spec;
        if (!o->library) continue;
        if (same_prefix_nocase(o->library, "", j->spec.library, "")) {
            fg_diag_set_source(d, j->path, j->text, j->len);
            if (same_file(j->path, jobs[e].path))
                fg_diag_error(d, "/library", "this spec is given twice (also as %s): give each spec once",
                              jobs[e].path);
            else if (strcmp(o->library, j->spec.library) == 0)
                fg_diag_error(d, "/library", "library '%s' is also defined by %s", j->spec.library, jobs[e].path);
            else
                fg_diag_error(d, "/library", "library '%s' is also defined by %s, as '%s' (the names differ only in "
                              "case, and so would their include guards)", j->spec.library, jobs[e].path, o->library);
            j->ok = 0;
            return;
        }
        for (size_t a = 0; a < j->spec.n_kernels; a++) {
            const fg_kernel_spec *ka = &j->spec.kernels[a];
            if (!ka->name) continue;
            for (size_t b = 0; b < o->n_kernels; b++) {
                const fg_kernel_spec *kb = &o->kernels[b];
                if (!kb->name || !same_prefix_nocase(j->spec.library, ka->name, o->library, kb->name)) continue;
                fg_diag_set_source(d, j->path, j->text, j->len);
                fg_diag_error(d, fg_arena_printf(arena, "%s/name", ka->ptr),
                              "kernel '%s' of library '%s' makes the C symbols %s_%s_*, which kernel '%s' of library "
                              "'%s' (%s) makes too", ka->name, j->spec.library, j->spec.library, ka->name, kb->name,
                              o->library, jobs[e].path);
                j->ok = 0;
                break;
            }
        }
    }
}

int main(int argc, char **argv)
{
    options opt;
    int rc = parse_args(argc, argv, &opt);
    if (rc != 0) {
        free(opt.specs);
        free(opt.only);
        free(opt.tuning);
        /* --help and --version too: output that did not arrive is an error (a full disk) */
        if (rc < 0 && (fflush(stdout) != 0 || ferror(stdout))) {
            fprintf(stderr, "fusegen: error: cannot write to standard output: %s\n", strerror(errno));
            return EXIT_USAGE;
        }
        return rc < 0 ? EXIT_OK : rc;
    }

    /* A write past `ulimit -f` fails with EFBIG, like a full disk (exit 2, nothing left
     * behind), rather than killing the run between its writes and its clean-up. */
    signal(SIGXFSZ, SIG_IGN);

    fg_arena arena;
    fg_arena_init(&arena);
    fg_diag d;
    fg_diag_init(&d, stderr);
    int io_error = 0;
    job *jobs = calloc(opt.n_specs, sizeof *jobs);
    if (!jobs) {
        fputs("fusegen: error: out of memory\n", stderr);
        rc = EXIT_USAGE;
        goto free_opts;
    }

    /* Every spec, every error. */
    for (size_t i = 0; i < opt.n_specs; i++) {
        job *j = &jobs[i];
        j->path = opt.specs[i];
        int read_rc = read_spec(&arena, j->path, &j->text, &j->len);
        if (read_rc == READ_TOO_LARGE) {
            fg_diag_set_source(&d, j->path, NULL, 0);
            fg_diag_error(&d, NULL, "file is larger than the limit of %u bytes", FG_SPEC_MAX_BYTES);
            continue;
        }
        if (read_rc != 0) {
            io_error = 1;
            continue;
        }
        process_spec(&arena, j, &d);
        if (j->spec.library) check_against_earlier(&arena, jobs, i, &d);
    }
    /* --tuning: each file against the whole plan of the spec it names (before --only) */
    if (opt.n_tuning != 0 && fg_diag_errors(&d) == 0 && !io_error) {
        const fg_plan **plans = calloc(opt.n_specs, sizeof *plans);
        fg_tuning *tunings = calloc(opt.n_specs, sizeof *tunings);
        if (!plans || !tunings) {
            fputs("fusegen: error: out of memory\n", stderr);
            io_error = 1;
        }
        for (size_t i = 0; plans && tunings && i < opt.n_specs; i++) plans[i] = &jobs[i].plan;
        for (size_t t = 0; plans && tunings && t < opt.n_tuning; t++) {
            const char *text = NULL;
            size_t len = 0;
            int read_rc = read_spec(&arena, opt.tuning[t], &text, &len);
            if (read_rc == READ_TOO_LARGE) {
                fg_diag_set_source(&d, opt.tuning[t], NULL, 0);
                fg_diag_error(&d, NULL, "file is larger than the limit of %u bytes", FG_SPEC_MAX_BYTES);
            } else if (read_rc != 0) {
                io_error = 1;
            } else {
                (void)fg_tuning_add(&arena, opt.tuning[t], text, len, plans, opt.n_specs, tunings, &d);
            }
        }
        for (size_t i = 0; plans && tunings && i < opt.n_specs; i++) jobs[i].tuning = tunings[i];
        free(plans);
        free(tunings);
    }
    if (opt.n_only != 0 && fg_diag_errors(&d) == 0 && !io_error)
        for (size_t i = 0; i < opt.n_specs; i++) keep_only(&arena, &jobs[i], &opt, &d);
    if (io_error) {
        rc = EXIT_USAGE;
        goto finish;
    }
    if (fg_diag_errors(&d) != 0) {
        rc = EXIT_SPEC;
        goto finish;
    }

    switch (opt.cmd) {
    case CMD_CHECK:
        rc = EXIT_OK;
        if (opt.nvrtc) {
            /* Render every library in memory and compile its kernel files; nothing is written. */
            const char *tdir = usable_template_dir(&opt);
            if (!tdir) {
                rc = EXIT_USAGE;
                break;
            }
            const fg_tmplsrc templates = fg_tmplsrc_dir(tdir);
            for (size_t i = 0; i < opt.n_specs && rc == EXIT_OK; i++) {
                fg_out out;
                fg_out_init(&out, &arena);
                fg_diag_set_source(&d, jobs[i].path, jobs[i].text, jobs[i].len);
                if (fg_emit_library_tuned(&arena, &jobs[i].plan, &jobs[i].tuning, &templates, &out, &d) != 0) {
                    rc = EXIT_SPEC;
                    break;
                }
                int failed = fg_rtc_check(&jobs[i].plan, &out, opt.nvrtc == 2, opt.quiet ? NULL : stdout);
                if (failed != 0) {
                    fprintf(stderr, "%s: error: %d kernel file compile(s) failed with NVRTC\n", jobs[i].path, failed);
                    rc = EXIT_SPEC;
                }
            }
        }
        if (rc == EXIT_OK && !opt.quiet)
            for (size_t i = 0; i < opt.n_specs; i++) {
                const fg_plan *p = &jobs[i].plan;
                printf("fusegen: %s: ok: library %s, %zu kernel%s, %zu variant%s%s\n", jobs[i].path, p->spec->library,
                       p->spec->n_kernels, p->spec->n_kernels == 1 ? "" : "s", p->n_kernels, p->n_kernels == 1 ? "" : "s",
                       opt.nvrtc == 2 ? ", compiled to PTX with NVRTC" : opt.nvrtc ? ", compiled with NVRTC" : "");
            }
        break;
    case CMD_LIST:
        print_list(jobs, opt.n_specs);
        rc = EXIT_OK;
        break;
    case CMD_GENERATE: {
        fg_out out;
        fg_out_init(&out, &arena);
        const char *tdir = usable_template_dir(&opt);
        if (!tdir) {
            rc = EXIT_USAGE;
            break;
        }
        const fg_tmplsrc templates = fg_tmplsrc_dir(tdir);
        for (size_t i = 0; i < opt.n_specs; i++) {
            fg_diag_set_source(&d, jobs[i].path, jobs[i].text, jobs[i].len);
            fg_out_dep(&out, jobs[i].path);
            for (size_t t = 0; t < jobs[i].tuning.n_devices; t++) fg_out_dep(&out, jobs[i].tuning.devices[t].path);
            (void)fg_emit_library_tuned(&arena, &jobs[i].plan, &jobs[i].tuning, &templates, &out, &d);
        }
        if (fg_diag_errors(&d) != 0) {
            rc = EXIT_SPEC;   /* nothing is written */
            break;
        }
        /* each library folder gets a manifest of the files written there, so that a later run
         * removes the ones it no longer writes, and nothing else */
        if (fg_out_add_manifests(&out, FUSEGEN_BANNER_PREFIX, &d) != 0) {
            rc = EXIT_SPEC;
            break;
        }
        unsigned char *changed = out.n_files ? calloc(out.n_files, 1) : NULL;
        rc = fg_out_commit_changed(&out, opt.out_dir, opt.depfile, changed) == 0 ? EXIT_OK : EXIT_USAGE;
        if (rc == EXIT_OK && !opt.quiet) print_generated(jobs, opt.n_specs, &out, changed, opt.out_dir);
        free(changed);
        break;
    }
    }

finish:
    fg_diag_finish(&d);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "fusegen: error: cannot write to standard output: %s\n", strerror(errno));
        rc = EXIT_USAGE;
    }
    free(jobs);
    fg_arena_free(&arena);
free_opts:
    free(opt.specs);
    free(opt.only);
    free(opt.tuning);
    return rc;
}
