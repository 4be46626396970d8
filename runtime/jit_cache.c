/* jit_cache.c - see jit_cache.h. */
#define _GNU_SOURCE   /* mkostemp */
#include "jit_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "sha256.h"

static const char jit__magic[8] = {'F', 'G', 'J', 'I', 'T', 'B', 'I', 'N'};

static void jit__why(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    if (!why || len == 0) return;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* ---- key ------------------------------------------------------------------------------------ */

void fg_jit_key_init(fg_jit_key_builder *b)
{
    memset(b, 0, sizeof *b);
}

static void jit__key_bytes(fg_jit_key_builder *b, const void *data, size_t len)
{
    if (b->failed || len == 0) return;
    if (len > SIZE_MAX / 2 - b->len) {
        b->failed = 1;
        return;
    }
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len) cap *= 2;
        uint8_t *n = realloc(b->data, cap);
        if (!n) {
            b->failed = 1;
            return;
        }
        b->data = n;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

void fg_jit_key_add(fg_jit_key_builder *b, const char *name, const void *data, size_t len)
{
    char head[160];
    int n = snprintf(head, sizeof head, "%s %zu\n", name, len);
    jit__key_bytes(b, head, n > 0 && (size_t)n < sizeof head ? (size_t)n : 0);
    jit__key_bytes(b, data, len);
    jit__key_bytes(b, "\n", 1);
}

int fg_jit_key_finish(fg_jit_key_builder *b, uint8_t key[32])
{
    int rc = b->failed ? -1 : 0;
    if (rc == 0) fg_sha256(b->data ? b->data : (const uint8_t *)"", b->len, key);
    free(b->data);
    memset(b, 0, sizeof *b);
    return rc;
}

/* ---- paths ---------------------------------------------------------------------------------- */

int fg_jit_cache_dir(const char *override, char *out, size_t out_len, char *why, size_t why_len)
{
    const char *env;
    int n;
    if (override && *override) {
        n = snprintf(out, out_len, "%s", override);
    } else if ((env = getenv("FUSEGEN_CACHE_DIR")) && *env) {
        n = snprintf(out, out_len, "%s", env);
    } else if ((env = getenv("XDG_CACHE_HOME")) && *env == '/') {
        n = snprintf(out, out_len, "%s/fusegen", env);
    } else if ((env = getenv("HOME")) && *env) {
        n = snprintf(out, out_len, "%s/.cache/fusegen", env);
    } else {
        jit__why(why, why_len,
                 "no cache folder: FUSEGEN_CACHE_DIR and HOME are unset or empty and XDG_CACHE_HOME is not an "
                 "absolute path");
        return -1;
    }
    if (n < 0 || (size_t)n >= out_len) {
        jit__why(why, why_len, "the cache folder's name is longer than %zu bytes", out_len - 1);
        return -1;
    }
    return 0;
}

int fg_jit_cache_dir_private(const char *dir, char *why, size_t why_len)
{
    struct stat st;
    /* missing: created 0700 when written; unreadable or not a folder: the write says why */
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        jit__why(why, why_len, "is owned by another user (uid %lu)", (unsigned long)st.st_uid);
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        jit__why(why, why_len, "can be written by other users (mode %04o)", (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

int fg_jit_cache_entry_path(const char *dir, const uint8_t key[32], char *out, size_t out_len)
{
    char hex[65];
    fg_sha256_hex(key, hex);
    int n = snprintf(out, out_len, "%s/%s.fgjit", dir, hex);
    return n > 0 && (size_t)n < out_len ? 0 : -1;
}

/* ---- little-endian fields ------------------------------------------------------------------- */

static void jit__put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static void jit__put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; ++i) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t jit__get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
static uint64_t jit__get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

/* ---- read ----------------------------------------------------------------------------------- */

/* Reads exactly n bytes (fewer only at the end of the file). */
static size_t jit__read_all(int fd, uint8_t *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

int fg_jit_cache_read(const char *path, const uint8_t key[32], uint8_t **payload, size_t *len, char *why,
                      size_t why_len)
{
    uint8_t head[FG_JIT_CACHE_HEADER], digest[32];
    struct stat st;
    *payload = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO or a device in the entry's place must not block the open (regular
     * files ignore it); the check below then calls it corrupt */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return FG_JIT_CACHE_READ_MISS;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        jit__why(why, why_len, "not a regular file");
        return FG_JIT_CACHE_READ_CORRUPT;
    }
    if (jit__read_all(fd, head, sizeof head) != sizeof head) {
        close(fd);
        jit__why(why, why_len, "shorter than its %d-byte header (%lld bytes)", FG_JIT_CACHE_HEADER,
                 (long long)st.st_size);
        return FG_JIT_CACHE_READ_CORRUPT;
    }
    const char *bad = NULL;
    uint64_t size = jit__get64(head + 48);
    if (memcmp(head, jit__magic, 8) != 0) bad = "bad magic";
    else if (jit__get32(head + 8) != FG_JIT_CACHE_FORMAT) bad = "another format version";
    else if (jit__get32(head + 12) != FG_JIT_CACHE_HEADER) bad = "bad header size";
    else if (memcmp(head + 16, key, 32) != 0) bad = "its key is not the one its name says";
    else if (size == 0 || size > FG_JIT_CACHE_MAX_PAYLOAD) bad = "bad payload size";
    else if ((uint64_t)st.st_size != FG_JIT_CACHE_HEADER + size) bad = "its size differs from its header's (truncated?)";
    if (bad) {
        close(fd);
        jit__why(why, why_len, "%s", bad);
        return FG_JIT_CACHE_READ_CORRUPT;
    }
    uint8_t *data = malloc((size_t)size);
    if (!data) {
        close(fd);
        jit__why(why, why_len, "out of memory reading %llu bytes", (unsigned long long)size);
        return FG_JIT_CACHE_READ_CORRUPT;
    }
    size_t got = jit__read_all(fd, data, (size_t)size);
    close(fd);
    if (got != size) {
        free(data);
        jit__why(why, why_len, "truncated payload (%zu of %llu bytes)", got, (unsigned long long)size);
        return FG_JIT_CACHE_READ_CORRUPT;
    }
    fg_sha256(data, (size_t)size, digest);
    if (memcmp(digest, head + 56, 32) != 0) {
        free(data);
        jit__why(why, why_len, "payload checksum mismatch");
        return FG_JIT_CACHE_READ_CORRUPT;
    }
    *payload = data;
    *len = (size_t)size;
    return FG_JIT_CACHE_READ_HIT;
}

/* ---- write ---------------------------------------------------------------------------------- */

/* mkdir -p with mode 0700 for the folders it creates. */
static int jit__mkdirs(const char *dir, char *why, size_t why_len)
{
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p) {
        jit__why(why, why_len, "bad folder name");
        return -1;
    }
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; ++i) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            jit__why(why, why_len, "cannot create %s: %s", p, strerror(errno));
            return -1;
        }
        p[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        jit__why(why, why_len, "%s is not a folder", dir);
        return -1;
    }
    return 0;
}

static int jit__write_all(int fd, const uint8_t *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

int fg_jit_cache_write(const char *dir, const char *path, const uint8_t key[32], const uint8_t *payload, size_t len,
                       char *why, size_t why_len)
{
    uint8_t head[FG_JIT_CACHE_HEADER];
    char tmp[4200];
    if (jit__mkdirs(dir, why, why_len) != 0) return -1;
    if (snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path) >= (int)sizeof tmp) {
        jit__why(why, why_len, "the entry's name is too long");
        return -1;
    }
    int fd = mkostemp(tmp, O_CLOEXEC);   /* not inherited by a program another thread starts */
    if (fd < 0) {
        jit__why(why, why_len, "cannot create a file in %s: %s", dir, strerror(errno));
        return -1;
    }
    memcpy(head, jit__magic, 8);
    jit__put32(head + 8, FG_JIT_CACHE_FORMAT);
    jit__put32(head + 12, FG_JIT_CACHE_HEADER);
    memcpy(head + 16, key, 32);
    jit__put64(head + 48, (uint64_t)len);
    fg_sha256(payload, len, head + 56);
    /* mkstemp makes it 0600; an entry is as private as the folder it lies in */
    int bad = jit__write_all(fd, head, sizeof head) != 0 || jit__write_all(fd, payload, len) != 0;
    int err = errno;
    if (!bad && fsync(fd) != 0) {
        bad = 1;
        err = errno;
    }
    if (close(fd) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        unlink(tmp);
        jit__why(why, why_len, "cannot write %s: %s", tmp, strerror(err));
        return -1;
    }
    if (rename(tmp, path) != 0) {
        err = errno;
        unlink(tmp);
        if (err == EISDIR)   /* a folder in the entry's place: read as corrupt every time until removed */
            jit__why(why, why_len, "%s is a folder, not a cache entry: remove it", path);
        else
            jit__why(why, why_len, "cannot rename %s to %s: %s", tmp, path, strerror(err));
        return -1;
    }
    return 0;
}
