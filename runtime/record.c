/* record.c - the recording of dispatched problems (FUSEGEN_RECORD, fusegen_record_open and
 * fusegen_record_close): each distinct problem that fusegen_select dispatches is appended to the
 * file as one JSON line, which `fusegen-tune` reads as its problem list (fusegen_record_problem
 * records one chosen otherwise, as the PyTorch ops choose among fusegen_query's list).
 *
 * A line holds the library, the selected kernel's spec kernel, M, N, K, N2, the dtypes and the
 * layouts (docs/api.md, "Recording"). Distinct: not already written to the file now open (a hash
 * set of the lines, emptied when a file is opened). One mutex guards the file and the set; a
 * process that records nothing takes it only once (an atomic flag says whether a file is open).
 * A failure to open or write is reported once on stderr and stops the recording; it never
 * changes what fusegen_select returns. */
#define _POSIX_C_SOURCE 200809L
#include "fusegen.h"
#include "fusegen_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    FG_RECORD__LINE = 1024,             /* one line; longer names are cut, and then not recorded */
    FG_RECORD__MAX_LINES = 1 << 20      /* distinct problems one file takes; past it, a warning */
};

typedef struct fg_record__slot {
    uint64_t hash;
    char *line;                         /* NULL: empty */
} fg_record__slot;

static pthread_mutex_t fg_record__lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fg_record__env_once = PTHREAD_ONCE_INIT;
static _Atomic int fg_record__active;   /* a file is open */
static FILE *fg_record__file;
static char *fg_record__path;
static int fg_record__warned;           /* this file's failure was reported */
static fg_record__slot *fg_record__set;
static size_t fg_record__cap, fg_record__count;

static uint64_t fg_record__fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static void fg_record__forget(void)
{
    size_t i;
    for (i = 0; i < fg_record__cap; i++)
        free(fg_record__set[i].line);
    free(fg_record__set);
    fg_record__set = NULL;
    fg_record__cap = fg_record__count = 0;
}

/* Closes the file (lock held). Returns 0, or errno of a failed close. */
static int fg_record__shut(void)
{
    int err = 0;
    if (fg_record__file && fclose(fg_record__file) != 0)
        err = errno ? errno : EIO;
    fg_record__file = NULL;
    atomic_store(&fg_record__active, 0);
    free(fg_record__path);
    fg_record__path = NULL;
    fg_record__forget();
    return err;
}

/* Reports a failure once per file on stderr and stops the recording (lock held). */
static void fg_record__fail(const char *what, int err)
{
    if (!fg_record__warned)
        fprintf(stderr, "fusegen: recording to %s stopped: %s: %s\n", fg_record__path ? fg_record__path : "(none)",
                what, strerror(err));
    fg_record__warned = 1;
    (void)fg_record__shut();
}

/* Opens path for appending (lock held): 0, or errno. */
static int fg_record__start(const char *path)
{
    (void)fg_record__shut();
    fg_record__warned = 0;
    fg_record__path = malloc(strlen(path) + 1);
    if (!fg_record__path)
        return ENOMEM;
    strcpy(fg_record__path, path);
    errno = 0;
    fg_record__file = fopen(path, "a");
    if (!fg_record__file) {
        int err = errno ? errno : EIO;
        free(fg_record__path);
        fg_record__path = NULL;
        return err;
    }
    atomic_store(&fg_record__active, 1);
    fusegen__select_memo_invalidate();   /* remembered selections skip the recording */
    return 0;
}

/* FUSEGEN_RECORD, read once: before the first recorded dispatch or API call. */
static void fg_record__env(void)
{
    const char *path = getenv("FUSEGEN_RECORD");
    int err;
    if (!path || !*path)
        return;
    pthread_mutex_lock(&fg_record__lock);
    err = fg_record__start(path);
    if (err != 0)
        fprintf(stderr, "fusegen: FUSEGEN_RECORD=%s: cannot open it for appending: %s; nothing is recorded\n", path,
                strerror(err));
    pthread_mutex_unlock(&fg_record__lock);
}

fusegen_status fusegen_record_open(const char *path)
{
    int err;
    if (!path || !*path)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "path is %s; give the file to append to",
                                   path ? "empty" : "NULL");
    pthread_once(&fg_record__env_once, fg_record__env);
    pthread_mutex_lock(&fg_record__lock);
    err = fg_record__start(path);
    pthread_mutex_unlock(&fg_record__lock);
    if (err != 0)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "cannot open '%s' for appending: %s", path,
                                   strerror(err));
    return fusegen__detail_set(FUSEGEN_OK, "%s", "");
}

void fusegen_record_close(void)
{
    int err;
    pthread_once(&fg_record__env_once, fg_record__env);
    pthread_mutex_lock(&fg_record__lock);
    if (fg_record__file) {
        char *path = fg_record__path;
        fg_record__path = NULL;
        err = fg_record__shut();
        if (err != 0 && !fg_record__warned)
            fprintf(stderr, "fusegen: recording to %s: closing it failed: %s\n", path ? path : "(none)",
                    strerror(err));
        free(path);
    }
    pthread_mutex_unlock(&fg_record__lock);
}

/* s as a JSON string into buf at *at (names are C identifiers, signatures too: escaping is for
 * safety). Returns 0 when it did not fit. */
static int fg_record__str(char *buf, size_t len, size_t *at, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    if (!s)
        s = "";
    if (*at + 1 >= len)
        return 0;
    buf[(*at)++] = '"';
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (*at + 7 >= len)
            return 0;
        if (c == '"' || c == '\\') {
            buf[(*at)++] = '\\';
            buf[(*at)++] = (char)c;
        } else if (c < 0x20) {
            memcpy(buf + *at, "\\u00", 4);
            buf[*at + 4] = hex[c >> 4];
            buf[*at + 5] = hex[c & 15];
            *at += 6;
        } else {
            buf[(*at)++] = (char)c;
        }
    }
    if (*at + 1 >= len)
        return 0;
    buf[(*at)++] = '"';
    buf[*at] = '\0';
    return 1;
}

static int fg_record__raw(char *buf, size_t len, size_t *at, const char *text)
{
    size_t n = strlen(text);
    if (*at + n >= len)
        return 0;
    memcpy(buf + *at, text, n + 1);
    *at += n;
    return 1;
}

static const char *fg_record__dtype(fusegen_dtype t)
{
    return t == FUSEGEN_DTYPE_F16 ? "f16" : t == FUSEGEN_DTYPE_BF16 ? "bf16" : "f32";
}

/* The problem's line (without the newline); 0 when it does not fit. */
static int fg_record__line(const fusegen_library *lib, const fusegen_problem *p, const fusegen_kernel *k,
                           char *buf, size_t len)
{
    char nums[160];
    size_t at = 0;
    int chain = p->n2 > 0;
    snprintf(nums, sizeof nums, ", \"m\": %" PRId64 ", \"n\": %" PRId64 ", \"k\": %" PRId64 ", \"n2\": %" PRId64
             ", \"a\": \"%s\", \"b\": \"%s\", \"out\": \"%s\", \"b_layout\": \"%s\", \"b2_layout\": \"%s\"",
             p->m, p->n, p->k, chain ? p->n2 : (int64_t)0, fg_record__dtype(p->a), fg_record__dtype(p->b),
             fg_record__dtype(p->out), p->b_layout == FUSEGEN_LAYOUT_KN ? "kn" : "nk",
             chain ? (p->b2_layout == FUSEGEN_LAYOUT_KN ? "kn" : "nk") : "nk");
    return fg_record__raw(buf, len, &at, "{\"library\": ") && fg_record__str(buf, len, &at, lib->name) &&
           fg_record__raw(buf, len, &at, ", \"spec_kernel\": ") && fg_record__str(buf, len, &at, k->spec_kernel) &&
           fg_record__raw(buf, len, &at, nums) && fg_record__raw(buf, len, &at, ", \"epilogue\": ") &&
           fg_record__str(buf, len, &at, p->epilogue) && fg_record__raw(buf, len, &at, ", \"epilogue2\": ") &&
           (chain ? fg_record__str(buf, len, &at, p->epilogue2) : fg_record__raw(buf, len, &at, "null")) &&
           fg_record__raw(buf, len, &at, "}");
}

/* Adds line to the set (lock held): 1 when it is new, 0 when known, -1 when out of memory. */
static int fg_record__add(const char *line)
{
    uint64_t h = fg_record__fnv(line);
    size_t i, mask;
    if (2 * (fg_record__count + 1) > fg_record__cap) {
        size_t cap = fg_record__cap ? 2 * fg_record__cap : 256, j;
        fg_record__slot *set = calloc(cap, sizeof *set);
        if (!set)
            return -1;
        for (j = 0; j < fg_record__cap; j++) {
            if (!fg_record__set[j].line)
                continue;
            for (i = (size_t)fg_record__set[j].hash & (cap - 1); set[i].line; i = (i + 1) & (cap - 1))
                ;
            set[i] = fg_record__set[j];
        }
        free(fg_record__set);
        fg_record__set = set;
        fg_record__cap = cap;
    }
    mask = fg_record__cap - 1;
    for (i = (size_t)h & mask; fg_record__set[i].line; i = (i + 1) & mask)
        if (fg_record__set[i].hash == h && strcmp(fg_record__set[i].line, line) == 0)
            return 0;
    fg_record__set[i].line = malloc(strlen(line) + 1);
    if (!fg_record__set[i].line)
        return -1;
    strcpy(fg_record__set[i].line, line);
    fg_record__set[i].hash = h;
    fg_record__count++;
    return 1;
}

void fusegen_record_problem(const fusegen_library *lib, const fusegen_problem *p, const fusegen_kernel *k)
{
    char line[FG_RECORD__LINE];
    int added;
    pthread_once(&fg_record__env_once, fg_record__env);
    if (!atomic_load_explicit(&fg_record__active, memory_order_relaxed))
        return;
    if (!lib || !p || !k || !p->epilogue || !fg_record__line(lib, p, k, line, sizeof line))
        return;
    pthread_mutex_lock(&fg_record__lock);
    if (!fg_record__file) {
        pthread_mutex_unlock(&fg_record__lock);
        return;
    }
    if (fg_record__count >= FG_RECORD__MAX_LINES) {
        if (!fg_record__warned)
            fprintf(stderr, "fusegen: recording to %s: %d distinct problems recorded; no more are\n",
                    fg_record__path, FG_RECORD__MAX_LINES);
        fg_record__warned = 1;
        pthread_mutex_unlock(&fg_record__lock);
        return;
    }
    added = fg_record__add(line);
    if (added < 0) {
        fg_record__fail("out of memory", ENOMEM);
    } else if (added > 0) {
        errno = 0;
        if (fputs(line, fg_record__file) < 0 || fputc('\n', fg_record__file) == EOF || fflush(fg_record__file) != 0)
            fg_record__fail("writing failed", errno ? errno : EIO);
    }
    pthread_mutex_unlock(&fg_record__lock);
}
