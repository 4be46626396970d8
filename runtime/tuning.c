/* tuning.c - tuning files at run time (fusegen_tuning_load, fusegen_tuning_clear): measured
 * winners that go before the dispatch model's order.
 *
 * A tuning file (written by fusegen-tune; docs/api.md, "Tuning files") is JSON:
 *   {"fusegen_tuning": 1,
 *    "device": {"name": "NVIDIA H200", "sms": 132, "cc": 90},
 *    "library": {"name": "fusegen_default", "spec_sha256": "..."},
 *    "entries": [{"spec_kernel": "proj", "m_bucket": 64, "n": 4096, "k": 4096, "n2": 0,
 *                 "winner": "proj_sm80_64x128x64_s4_splitk", "winner_ms": 0.021,
 *                 "runner_up": "proj_sm90a_64x128x64_s4", "runner_up_ms": 0.027}, ...]}
 * A file is applied whole or not at all: one of another version, library, spec hash or device
 * (name, SM count, compute capability), with a winner the library does not hold, or with two
 * entries for one problem is refused with the reason in the detail. The parser below reads
 * strict JSON (RFC 8259) into a small tree; unknown members are ignored.
 *
 * The loaded tables, one per library, are guarded by a read-write lock; a process that loads
 * none pays one atomic load per query. */
#define _POSIX_C_SOURCE 200809L
#include "fusegen.h"
#include "fusegen_internal.h"
#include "fusegen_workspace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    FG_TUNING__VERSION = 1,
    FG_TUNING__MAX_DEPTH = 16,
    FG_TUNING__MAX_BYTES = 64 << 20      /* a larger file is refused */
};

/* ---- a strict JSON reader ------------------------------------------------------------------ */

typedef enum { FG_J_NULL, FG_J_BOOL, FG_J_NUM, FG_J_STR, FG_J_ARR, FG_J_OBJ } fg_j_type;

typedef struct fg_j {
    fg_j_type type;
    double num;                  /* FG_J_NUM; FG_J_BOOL: 0 or 1 */
    int is_int;                  /* FG_J_NUM written without fraction or exponent, within int64 */
    int64_t i;
    char *str;                   /* FG_J_STR (NUL-terminated; an embedded NUL is refused) */
    struct fg_j *items;          /* FG_J_ARR, FG_J_OBJ: n values */
    char **keys;                 /* FG_J_OBJ: n keys */
    size_t n;
} fg_j;

typedef struct fg_j_parser {
    const char *s, *end;
    const char *base;
    char *why;
    size_t why_len;
} fg_j_parser;

static void fg_j_free(fg_j *v)
{
    size_t i;
    if (!v)
        return;
    free(v->str);
    for (i = 0; i < v->n; i++) {
        if (v->keys)
            free(v->keys[i]);
        if (v->items)
            fg_j_free(&v->items[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

/* Writes "line L, column C: what" and returns 0. */
static int fg_j_error(fg_j_parser *ps, const char *what)
{
    int line = 1, col = 1;
    const char *c;
    for (c = ps->base; c < ps->s && c < ps->end; c++) {
        if (*c == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(ps->why, ps->why_len, "line %d, column %d: %s", line, col, what);
    return 0;
}

static void fg_j_space(fg_j_parser *ps)
{
    while (ps->s < ps->end && (*ps->s == ' ' || *ps->s == '\t' || *ps->s == '\n' || *ps->s == '\r'))
        ps->s++;
}

static int fg_j_hex4(fg_j_parser *ps, unsigned *out)
{
    unsigned v = 0;
    int i;
    if (ps->end - ps->s < 4)
        return fg_j_error(ps, "a \\u escape needs four hex digits");
    for (i = 0; i < 4; i++) {
        char c = ps->s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return fg_j_error(ps, "a \\u escape needs four hex digits");
    }
    ps->s += 4;
    *out = v;
    return 1;
}

/* A string at ps->s (the opening quote) into a new buffer. */
static int fg_j_string(fg_j_parser *ps, char **out)
{
    size_t cap = 32, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return fg_j_error(ps, "out of memory");
    ps->s++;
    for (;;) {
        unsigned cp;
        char tmp[4];
        size_t n = 0, i;
        if (ps->s >= ps->end) {
            free(buf);
            return fg_j_error(ps, "a string is not closed");
        }
        unsigned char c = (unsigned char)*ps->s;
        if (c == '"') {
            ps->s++;
            break;
        }
        if (c < 0x20) {
            free(buf);
            return fg_j_error(ps, "a control character in a string");
        }
        if (c != '\\') {
            tmp[n++] = (char)c;
            ps->s++;
        } else {
            ps->s++;
            if (ps->s >= ps->end) {
                free(buf);
                return fg_j_error(ps, "a string is not closed");
            }
            c = (unsigned char)*ps->s++;
            switch (c) {
            case '"': tmp[n++] = '"'; break;
            case '\\': tmp[n++] = '\\'; break;
            case '/': tmp[n++] = '/'; break;
            case 'b': tmp[n++] = '\b'; break;
            case 'f': tmp[n++] = '\f'; break;
            case 'n': tmp[n++] = '\n'; break;
            case 'r': tmp[n++] = '\r'; break;
            case 't': tmp[n++] = '\t'; break;
            case 'u':
                if (!fg_j_hex4(ps, &cp)) {
                    free(buf);
                    return 0;
                }
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    unsigned lo;
                    if (ps->end - ps->s < 2 || ps->s[0] != '\\' || ps->s[1] != 'u') {
                        free(buf);
                        return fg_j_error(ps, "a lone surrogate in a \\u escape");
                    }
                    ps->s += 2;
                    if (!fg_j_hex4(ps, &lo)) {
                        free(buf);
                        return 0;
                    }
                    if (lo < 0xdc00 || lo > 0xdfff) {
                        free(buf);
                        return fg_j_error(ps, "a lone surrogate in a \\u escape");
                    }
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    free(buf);
                    return fg_j_error(ps, "a lone surrogate in a \\u escape");
                }
                if (cp == 0) {
                    free(buf);
                    return fg_j_error(ps, "\\u0000 in a string");
                }
                if (cp < 0x80) {
                    tmp[n++] = (char)cp;
                } else if (cp < 0x800) {
                    tmp[n++] = (char)(0xc0 | (cp >> 6));
                    tmp[n++] = (char)(0x80 | (cp & 0x3f));
                } else if (cp < 0x10000) {
                    tmp[n++] = (char)(0xe0 | (cp >> 12));
                    tmp[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                    tmp[n++] = (char)(0x80 | (cp & 0x3f));
                } else {
                    tmp[n++] = (char)(0xf0 | (cp >> 18));
                    tmp[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
                    tmp[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                    tmp[n++] = (char)(0x80 | (cp & 0x3f));
                }
                break;
            default:
                free(buf);
                ps->s--;
                return fg_j_error(ps, "an unknown escape in a string");
            }
        }
        if (len + n + 1 > cap) {
            char *grown;
            cap *= 2;
            grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                return fg_j_error(ps, "out of memory");
            }
            buf = grown;
        }
        for (i = 0; i < n; i++)
            buf[len++] = tmp[i];
    }
    buf[len] = '\0';
    *out = buf;
    return 1;
}

static int fg_j_number(fg_j_parser *ps, fg_j *v)
{
    const char *start = ps->s;
    char text[64];
    int integral = 1;
    size_t len;
    if (ps->s < ps->end && *ps->s == '-')
        ps->s++;
    if (ps->s >= ps->end || *ps->s < '0' || *ps->s > '9')
        return fg_j_error(ps, "a number needs a digit");
    if (*ps->s == '0') {
        ps->s++;
    } else {
        while (ps->s < ps->end && *ps->s >= '0' && *ps->s <= '9')
            ps->s++;
    }
    if (ps->s < ps->end && *ps->s == '.') {
        integral = 0;
        ps->s++;
        if (ps->s >= ps->end || *ps->s < '0' || *ps->s > '9')
            return fg_j_error(ps, "a fraction needs a digit");
        while (ps->s < ps->end && *ps->s >= '0' && *ps->s <= '9')
            ps->s++;
    }
    if (ps->s < ps->end && (*ps->s == 'e' || *ps->s == 'E')) {
        integral = 0;
        ps->s++;
        if (ps->s < ps->end && (*ps->s == '+' || *ps->s == '-'))
            ps->s++;
        if (ps->s >= ps->end || *ps->s < '0' || *ps->s > '9')
            return fg_j_error(ps, "an exponent needs a digit");
        while (ps->s < ps->end && *ps->s >= '0' && *ps->s <= '9')
            ps->s++;
    }
    len = (size_t)(ps->s - start);
    if (len >= sizeof text)
        return fg_j_error(ps, "a number longer than 63 characters");
    memcpy(text, start, len);
    text[len] = '\0';
    v->type = FG_J_NUM;
    errno = 0;
    v->num = strtod(text, NULL);
    if (integral) {
        long long i;
        errno = 0;
        i = strtoll(text, NULL, 10);
        if (errno == 0) {
            v->is_int = 1;
            v->i = (int64_t)i;
        }
    }
    return 1;
}

static int fg_j_value(fg_j_parser *ps, fg_j *v, int depth);

static int fg_j_push(fg_j_parser *ps, fg_j *v, size_t *cap, char *key)
{
    if (v->n == *cap) {
        size_t cap2 = *cap ? 2 * *cap : 8;
        fg_j *items = realloc(v->items, cap2 * sizeof *items);
        if (!items)
            return fg_j_error(ps, "out of memory");
        v->items = items;
        if (v->type == FG_J_OBJ) {
            char **keys = realloc(v->keys, cap2 * sizeof *keys);
            if (!keys)
                return fg_j_error(ps, "out of memory");
            v->keys = keys;
        }
        *cap = cap2;
    }
    memset(&v->items[v->n], 0, sizeof v->items[v->n]);
    if (v->type == FG_J_OBJ)
        v->keys[v->n] = key;
    v->n++;
    return 1;
}

/* An array or an object (ps->s at its bracket). */
static int fg_j_container(fg_j_parser *ps, fg_j *v, int depth)
{
    int object = *ps->s == '{';
    char close = object ? '}' : ']';
    size_t cap = 0;
    v->type = object ? FG_J_OBJ : FG_J_ARR;
    ps->s++;
    fg_j_space(ps);
    if (ps->s < ps->end && *ps->s == close) {
        ps->s++;
        return 1;
    }
    for (;;) {
        char *key = NULL;
        fg_j_space(ps);
        if (object) {
            if (ps->s >= ps->end || *ps->s != '"')
                return fg_j_error(ps, "an object member needs a string key");
            if (!fg_j_string(ps, &key))
                return 0;
            fg_j_space(ps);
            if (ps->s >= ps->end || *ps->s != ':') {
                free(key);
                return fg_j_error(ps, "':' expected after a key");
            }
            ps->s++;
        }
        if (!fg_j_push(ps, v, &cap, key)) {
            free(key);
            return 0;
        }
        if (!fg_j_value(ps, &v->items[v->n - 1], depth + 1))
            return 0;
        fg_j_space(ps);
        if (ps->s < ps->end && *ps->s == ',') {
            ps->s++;
            continue;
        }
        if (ps->s < ps->end && *ps->s == close) {
            ps->s++;
            return 1;
        }
        return fg_j_error(ps, object ? "',' or '}' expected" : "',' or ']' expected");
    }
}

static int fg_j_word(fg_j_parser *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->s) < n || memcmp(ps->s, word, n) != 0)
        return 0;
    ps->s += n;
    return 1;
}

static int fg_j_value(fg_j_parser *ps, fg_j *v, int depth)
{
    if (depth > FG_TUNING__MAX_DEPTH)
        return fg_j_error(ps, "nested too deep");
    fg_j_space(ps);
    if (ps->s >= ps->end)
        return fg_j_error(ps, "a value expected");
    switch (*ps->s) {
    case '{':
    case '[':
        return fg_j_container(ps, v, depth);
    case '"':
        v->type = FG_J_STR;
        return fg_j_string(ps, &v->str);
    case 't':
    case 'f':
        v->type = FG_J_BOOL;
        v->num = *ps->s == 't';
        if (fg_j_word(ps, *ps->s == 't' ? "true" : "false"))
            return 1;
        return fg_j_error(ps, "an unknown word");
    case 'n':
        v->type = FG_J_NULL;
        if (fg_j_word(ps, "null"))
            return 1;
        return fg_j_error(ps, "an unknown word");
    default:
        return fg_j_number(ps, v);
    }
}

/* Parses text (len bytes) into root; 0 with the reason in why. */
static int fg_j_parse(const char *text, size_t len, fg_j *root, char *why, size_t why_len)
{
    fg_j_parser ps = {text, text + len, text, why, why_len};
    memset(root, 0, sizeof *root);
    if (!fg_j_value(&ps, root, 0))
        return 0;
    fg_j_space(&ps);
    if (ps.s != ps.end)
        return fg_j_error(&ps, "text after the JSON value");
    return 1;
}

static const fg_j *fg_j_get(const fg_j *obj, const char *key)
{
    size_t i;
    if (!obj || obj->type != FG_J_OBJ)
        return NULL;
    for (i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

/* ---- the loaded tables ---------------------------------------------------------------------- */

typedef struct fg_tuning__entry {
    const char *spec_kernel;             /* the library's string */
    int64_t m_bucket, n, k, n2;
    const fusegen_kernel *winner;
} fg_tuning__entry;

typedef struct fg_tuning__table {
    const fusegen_library *lib;
    fg_tuning__entry *entries;           /* sorted by fg_tuning__cmp */
    size_t n;
} fg_tuning__table;

static pthread_rwlock_t fg_tuning__lock = PTHREAD_RWLOCK_INITIALIZER;
static fg_tuning__table *fg_tuning__tables;
static size_t fg_tuning__n_tables;
static _Atomic int fg_tuning__any;

static int fg_tuning__cmp(const void *pa, const void *pb)
{
    const fg_tuning__entry *a = pa, *b = pb;
    int c = strcmp(a->spec_kernel, b->spec_kernel);
    if (c != 0)
        return c;
    if (a->m_bucket != b->m_bucket)
        return a->m_bucket < b->m_bucket ? -1 : 1;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    if (a->k != b->k)
        return a->k < b->k ? -1 : 1;
    if (a->n2 != b->n2)
        return a->n2 < b->n2 ? -1 : 1;
    return 0;
}

/* The power of two at or above m (m >= 1). */
static int64_t fg_tuning__bucket(int64_t m)
{
    int64_t b = 1;
    while (b < m && b <= INT64_MAX / 2)
        b *= 2;
    return b;
}

/* ---- compiled-in tuning (fusegen generate --tuning) ------------------------------------------ */

/* The compiled-in device of lib that the current device is (name, SMs, cc), or NULL. */
static const fusegen_tuned_device *fg_tuning__compiled(const fusegen_library *lib)
{
    char name[256];
    int sms = 0, cc = 0;
    size_t i;
    if (fusegen__device_info(&cc, &sms) != cudaSuccess || fusegen__device_name(name, sizeof name) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;   /* no device to match: the model decides */
    }
    for (i = 0; i < lib->n_tuned; i++) {
        const fusegen_tuned_device *d = &lib->tuned[i];
        if (d->name && strcmp(d->name, name) == 0 && d->sms == sms && d->cc == cc)
            return d;
    }
    return NULL;
}

static int fg_tuning__compiled_cmp(const void *pa, const void *pb)
{
    const fusegen_tuned_entry *a = pa, *b = pb;
    int c = strcmp(a->spec_kernel, b->spec_kernel);
    if (c != 0)
        return c;
    if (a->m_bucket != b->m_bucket)
        return a->m_bucket < b->m_bucket ? -1 : 1;
    if (a->n != b->n)
        return a->n < b->n ? -1 : 1;
    if (a->k != b->k)
        return a->k < b->k ? -1 : 1;
    if (a->n2 != b->n2)
        return a->n2 < b->n2 ? -1 : 1;
    return 0;
}

/* One table's winner for key (its m_bucket as given), or NULL: a loaded table's ... */
static const fusegen_kernel *fg_tuning__loaded_winner(const void *table, const fusegen_library *lib,
                                                     const fg_tuning__entry *key)
{
    const fg_tuning__table *t = table;
    const fg_tuning__entry *hit = bsearch(key, t->entries, t->n, sizeof *key, fg_tuning__cmp);
    (void)lib;
    return hit ? hit->winner : NULL;
}

/* ... or a compiled-in device's. */
static const fusegen_kernel *fg_tuning__compiled_winner(const void *device, const fusegen_library *lib,
                                                       const fg_tuning__entry *key)
{
    const fusegen_tuned_device *dev = device;
    fusegen_tuned_entry ckey;
    const fusegen_tuned_entry *hit;
    memset(&ckey, 0, sizeof ckey);
    ckey.spec_kernel = key->spec_kernel;
    ckey.m_bucket = key->m_bucket;
    ckey.n = key->n;
    ckey.k = key->k;
    ckey.n2 = key->n2;
    hit = bsearch(&ckey, dev->entries, dev->n_entries, sizeof ckey, fg_tuning__compiled_cmp);
    return hit && hit->winner >= 0 && (size_t)hit->winner < lib->n_kernels ? &lib->kernels[hit->winner] : NULL;
}

/* Buckets a winner carries over: where key's M bucket was not measured but the nearest measured
 * buckets below and above it, each at most this many doublings away, name the same winner, that
 * one (docs/api.md, "Tuning files": measured, the middle of two agreeing buckets agrees). */
enum { FG_TUNING__REACH = 4 };

static const fusegen_kernel *fg_tuning__winner(const fusegen_kernel *(*look)(const void *, const fusegen_library *,
                                                                             const fg_tuning__entry *),
                                               const void *src, const fusegen_library *lib, fg_tuning__entry key)
{
    const fusegen_kernel *w = look(src, lib, &key), *below = NULL, *above = NULL;
    const int64_t bucket = key.m_bucket;
    int i;
    if (w)
        return w;
    for (i = 1; i <= FG_TUNING__REACH && !below && (bucket >> i) >= 1; i++) {
        key.m_bucket = bucket >> i;
        below = look(src, lib, &key);
    }
    for (i = 1; i <= FG_TUNING__REACH && below && !above && bucket <= ((int64_t)1 << 31) >> i; i++) {
        key.m_bucket = bucket << i;
        above = look(src, lib, &key);
    }
    return below && below == above ? below : NULL;
}

int fusegen__tuning_is_winner(const fusegen_library *lib, const fusegen_kernel *k, const fusegen_problem *p)
{
    fg_tuning__entry key;
    const fusegen_tuned_device *dev;
    size_t t;
    int winner = 0, loaded = 0;
    if (!k->spec_kernel)
        return 0;
    key.spec_kernel = k->spec_kernel;
    key.m_bucket = fg_tuning__bucket(p->m);
    key.n = p->n;
    key.k = p->k;
    key.n2 = p->n2 > 0 ? p->n2 : 0;
    key.winner = NULL;
    if (atomic_load_explicit(&fg_tuning__any, memory_order_acquire)) {
        pthread_rwlock_rdlock(&fg_tuning__lock);
        for (t = 0; t < fg_tuning__n_tables; t++)
            if (fg_tuning__tables[t].lib == lib) {
                /* read under the lock: a load may free the table */
                winner = fg_tuning__winner(fg_tuning__loaded_winner, &fg_tuning__tables[t], lib, key) == k;
                loaded = 1;
                break;
            }
        pthread_rwlock_unlock(&fg_tuning__lock);
        if (loaded)
            return winner;   /* a loaded file goes before the compiled-in data */
    }
    /* compiled-in winners: for the current device only (a problem for another arch: none) */
    if (!lib->tuned || lib->n_tuned == 0 || p->sm != 0 || !(dev = fg_tuning__compiled(lib)) || !dev->entries)
        return 0;
    return fg_tuning__winner(fg_tuning__compiled_winner, dev, lib, key) == k;
}

/* Puts table in place of lib's (entries NULL: removes it). Takes ownership of entries. */
static int fg_tuning__install(const fusegen_library *lib, fg_tuning__entry *entries, size_t n)
{
    size_t t;
    fg_tuning__entry *old = NULL;
    int ok = 1;
    pthread_rwlock_wrlock(&fg_tuning__lock);
    for (t = 0; t < fg_tuning__n_tables && fg_tuning__tables[t].lib != lib; t++)
        ;
    if (t < fg_tuning__n_tables) {
        old = fg_tuning__tables[t].entries;
        if (entries) {
            fg_tuning__tables[t].entries = entries;
            fg_tuning__tables[t].n = n;
        } else {
            fg_tuning__tables[t] = fg_tuning__tables[--fg_tuning__n_tables];
        }
    } else if (entries) {
        fg_tuning__table *grown = realloc(fg_tuning__tables, (fg_tuning__n_tables + 1) * sizeof *grown);
        if (grown) {
            fg_tuning__tables = grown;
            grown[fg_tuning__n_tables].lib = lib;
            grown[fg_tuning__n_tables].entries = entries;
            grown[fg_tuning__n_tables].n = n;
            fg_tuning__n_tables++;
        } else {
            old = entries;
            ok = 0;
        }
    }
    atomic_store_explicit(&fg_tuning__any, fg_tuning__n_tables > 0, memory_order_release);
    pthread_rwlock_unlock(&fg_tuning__lock);
    fusegen__select_memo_invalidate();   /* a remembered selection may no longer be the winner */
    free(old);
    return ok;
}

void fusegen_tuning_clear(const fusegen_library *lib)
{
    if (lib) {
        (void)fg_tuning__install(lib, NULL, 0);
        return;
    }
    pthread_rwlock_wrlock(&fg_tuning__lock);
    while (fg_tuning__n_tables > 0)
        free(fg_tuning__tables[--fg_tuning__n_tables].entries);
    free(fg_tuning__tables);
    fg_tuning__tables = NULL;
    atomic_store_explicit(&fg_tuning__any, 0, memory_order_release);
    pthread_rwlock_unlock(&fg_tuning__lock);
    fusegen__select_memo_invalidate();
}

/* ---- loading -------------------------------------------------------------------------------- */

/* The file's bytes (NUL-terminated), or NULL with the detail set. */
static char *fg_tuning__read(const char *path, size_t *len)
{
    FILE *f;
    char *buf;
    size_t cap = 65536, n = 0, got;
    errno = 0;
    f = fopen(path, "rb");
    if (!f) {
        fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s' cannot be opened: %s", path,
                            strerror(errno ? errno : EIO));
        return NULL;
    }
    buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *grown;
            if (cap >= FG_TUNING__MAX_BYTES) {
                free(buf);
                fclose(f);
                fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s' is larger than %d bytes", path,
                                    FG_TUNING__MAX_BYTES);
                return NULL;
            }
            cap *= 2;
            grown = realloc(buf, cap + 1);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    if (!buf) {
        fclose(f);
        fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s': out of memory", path);
        return NULL;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s' could not be read", path);
        return NULL;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* A member of obj that must be a string / an integer in [lo, hi] / a number >= 0 or null. */
static int fg_tuning__str(const fg_j *obj, const char *key, const char **out)
{
    const fg_j *v = fg_j_get(obj, key);
    if (!v || v->type != FG_J_STR)
        return 0;
    *out = v->str;
    return 1;
}

static int fg_tuning__int(const fg_j *obj, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const fg_j *v = fg_j_get(obj, key);
    if (!v || v->type != FG_J_NUM || !v->is_int || v->i < lo || v->i > hi)
        return 0;
    *out = v->i;
    return 1;
}

static int fg_tuning__time(const fg_j *obj, const char *key, int nullable)
{
    const fg_j *v = fg_j_get(obj, key);
    if (!v)
        return nullable;
    if (v->type == FG_J_NULL)
        return nullable;
    return v->type == FG_J_NUM && isfinite(v->num) && v->num >= 0;
}

/* Sets the detail and is 0 (false): "return FG_TUNING__REFUSE(...)" refuses the file. */
#define FG_TUNING__REFUSE(...) (fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, __VA_ARGS__) == FUSEGEN_OK)

/* Checks the header against lib and the device. */
static int fg_tuning__header(const fusegen_library *lib, const char *path, const fg_j *root, const char *dev_name,
                             int dev_sms, int dev_cc)
{
    const fg_j *device, *library;
    const char *name, *lib_name, *hash;
    int64_t version, sms, cc;
    if (root->type != FG_J_OBJ)
        return FG_TUNING__REFUSE("tuning file '%s' is not a JSON object", path);
    if (!fg_j_get(root, "fusegen_tuning"))
        return FG_TUNING__REFUSE("tuning file '%s' has no \"fusegen_tuning\" version: not a tuning file", path);
    if (!fg_tuning__int(root, "fusegen_tuning", 1, INT32_MAX, &version))
        return FG_TUNING__REFUSE("tuning file '%s': \"fusegen_tuning\" must be a positive integer", path);
    if (version != FG_TUNING__VERSION)
        return FG_TUNING__REFUSE("tuning file '%s' is version %" PRId64 "; this runtime reads version %d", path,
                                 version, FG_TUNING__VERSION);
    device = fg_j_get(root, "device");
    library = fg_j_get(root, "library");
    if (!device || device->type != FG_J_OBJ || !fg_tuning__str(device, "name", &name) ||
        !fg_tuning__int(device, "sms", 1, INT32_MAX, &sms) || !fg_tuning__int(device, "cc", 1, INT32_MAX, &cc))
        return FG_TUNING__REFUSE("tuning file '%s': \"device\" must be an object with \"name\" (a string), "
                                 "\"sms\" and \"cc\" (positive integers)", path);
    if (!library || library->type != FG_J_OBJ || !fg_tuning__str(library, "name", &lib_name) ||
        !fg_tuning__str(library, "spec_sha256", &hash))
        return FG_TUNING__REFUSE("tuning file '%s': \"library\" must be an object with \"name\" and "
                                 "\"spec_sha256\" (strings)", path);
    if (!lib->name || strcmp(lib_name, lib->name) != 0)
        return FG_TUNING__REFUSE("tuning file '%s' was measured for library '%s', not '%s'", path, lib_name,
                                 lib->name ? lib->name : "(null)");
    if (!lib->spec_sha256 || strcmp(hash, lib->spec_sha256) != 0)
        return FG_TUNING__REFUSE("tuning file '%s' was measured for another spec of library '%s' (spec_sha256 %s, "
                                 "the library's is %s)", path, lib_name, hash,
                                 lib->spec_sha256 ? lib->spec_sha256 : "(null)");
    if (strcmp(name, dev_name) != 0 || sms != dev_sms || cc != dev_cc)
        return FG_TUNING__REFUSE("tuning file '%s' was measured on another device (%s, %" PRId64 " SMs, compute "
                                 "capability %" PRId64 "); this one is %s, %d SMs, %d", path, name, sms, cc,
                                 dev_name, dev_sms, dev_cc);
    return 1;
}

static const fusegen_kernel *fg_tuning__kernel(const fusegen_library *lib, const char *name)
{
    size_t i;
    for (i = 0; i < lib->n_kernels; i++)
        if (lib->kernels[i].name && strcmp(lib->kernels[i].name, name) == 0)
            return &lib->kernels[i];
    return NULL;
}

/* The entries of root into a sorted array (NULL with the detail set when one is refused). */
static fg_tuning__entry *fg_tuning__entries(const fusegen_library *lib, const char *path, const fg_j *root,
                                            size_t *count)
{
    const fg_j *list = fg_j_get(root, "entries");
    fg_tuning__entry *entries;
    size_t i;
    if (!list || list->type != FG_J_ARR) {
        (void)fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s': \"entries\" must be an array", path);
        return NULL;
    }
    entries = calloc(list->n ? list->n : 1, sizeof *entries);
    if (!entries) {
        (void)fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s': out of memory", path);
        return NULL;
    }
    for (i = 0; i < list->n; i++) {
        const fg_j *e = &list->items[i];
        fg_tuning__entry *t = &entries[i];
        const char *spec, *winner, *runner;
        int64_t m_bucket;
        if (e->type != FG_J_OBJ || !fg_tuning__str(e, "spec_kernel", &spec) || !fg_tuning__str(e, "winner", &winner) ||
            !fg_tuning__int(e, "m_bucket", 1, (int64_t)1 << 31, &m_bucket) ||
            !fg_tuning__int(e, "n", 1, INT32_MAX, &t->n) || !fg_tuning__int(e, "k", 1, INT32_MAX, &t->k) ||
            !fg_tuning__int(e, "n2", 0, INT32_MAX, &t->n2) || !fg_tuning__time(e, "winner_ms", 0) ||
            !fg_tuning__time(e, "runner_up_ms", 1) ||
            (fg_j_get(e, "runner_up") && fg_j_get(e, "runner_up")->type != FG_J_NULL &&
             !fg_tuning__str(e, "runner_up", &runner))) {
            free(entries);
            (void)fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s': entries[%zu] needs \"spec_kernel\" and \"winner\" (strings), "
                              "\"m_bucket\" (a power of two), \"n\", \"k\" (positive integers), \"n2\" (0 or more), "
                              "\"winner_ms\" (a time in ms), and \"runner_up\" and \"runner_up_ms\" where "
                              "there was one", path, i);
            return NULL;
        }
        if ((m_bucket & (m_bucket - 1)) != 0) {
            free(entries);
            (void)fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s': entries[%zu].m_bucket = %" PRId64 " is not a power of two", path, i,
                              m_bucket);
            return NULL;
        }
        t->m_bucket = m_bucket;
        t->winner = fg_tuning__kernel(lib, winner);
        if (!t->winner || !t->winner->spec_kernel || strcmp(t->winner->spec_kernel, spec) != 0) {
            free(entries);
            (void)fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s': entries[%zu].winner '%s' is not a variant of spec kernel '%s' in "
                              "library '%s'", path, i, winner, spec, lib->name);
            return NULL;
        }
        t->spec_kernel = t->winner->spec_kernel;
    }
    qsort(entries, list->n, sizeof *entries, fg_tuning__cmp);
    for (i = 1; i < list->n; i++)
        if (fg_tuning__cmp(&entries[i - 1], &entries[i]) == 0) {
            (void)fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s' has two entries for spec kernel '%s' at m_bucket %" PRId64
                              ", n %" PRId64 ", k %" PRId64 ", n2 %" PRId64, path, entries[i].spec_kernel,
                              entries[i].m_bucket, entries[i].n, entries[i].k, entries[i].n2);
            free(entries);
            return NULL;
        }
    *count = list->n;
    return entries;
}

fusegen_status fusegen__tuning_load_text(const fusegen_library *lib, const char *path, const char *text, size_t len,
                                         const char *dev_name, int dev_sms, int dev_cc)
{
    char why[256];
    fg_j root;
    size_t count = 0;
    fg_tuning__entry *entries;

    if (len && memchr(text, '\0', len))
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s' holds a NUL byte", path);
    if (!fg_j_parse(text, len, &root, why, sizeof why)) {
        fg_j_free(&root);
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s' is not valid JSON: %s", path, why);
    }
    if (!fg_tuning__header(lib, path, &root, dev_name, dev_sms, dev_cc)) {
        fg_j_free(&root);
        return FUSEGEN_ERR_INVALID_ARGUMENT;
    }
    entries = fg_tuning__entries(lib, path, &root, &count);
    fg_j_free(&root);
    if (!entries)
        return FUSEGEN_ERR_INVALID_ARGUMENT;
    if (!fg_tuning__install(lib, entries, count))
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "tuning file '%s': out of memory", path);
    return fusegen__detail_set(FUSEGEN_OK, "%s", "");
}

fusegen_status fusegen__tuning_load_for(const fusegen_library *lib, const char *path, const char *dev_name,
                                        int dev_sms, int dev_cc)
{
    char *text;
    size_t len = 0;
    fusegen_status st;

    if (!lib)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "lib is NULL");
    if (!path || !*path)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT, "path is %s", path ? "empty" : "NULL");
    if (!lib->kernels && lib->n_kernels > 0)
        return fusegen__detail_set(FUSEGEN_ERR_INVALID_ARGUMENT,
                                   "library '%s' has n_kernels = %zu but kernels is NULL",
                                   lib->name ? lib->name : "(null)", lib->n_kernels);
    text = fg_tuning__read(path, &len);
    if (!text)
        return FUSEGEN_ERR_INVALID_ARGUMENT;
    st = fusegen__tuning_load_text(lib, path, text, len, dev_name, dev_sms, dev_cc);
    free(text);
    return st;
}

fusegen_status fusegen_tuning_load(const fusegen_library *lib, const char *path)
{
    char name[256];
    int sm = 0, sms = 0;
    cudaError_t e;
    if (!lib || !path || !*path)
        return fusegen__tuning_load_for(lib, path, "", 0, 0);
    e = fusegen__device_info(&sm, &sms);
    if (e == cudaSuccess)
        e = fusegen__device_name(name, sizeof name);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return fusegen__detail_set(FUSEGEN_ERR_CUDA, "loading tuning file '%s' needs the current device, which "
                                   "could not be read: %s: %s", path, cudaGetErrorName(e), cudaGetErrorString(e));
    }
    return fusegen__tuning_load_for(lib, path, name, sms, sm);
}
