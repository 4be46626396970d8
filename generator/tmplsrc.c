/* tmplsrc.c - see tmplsrc.h. */
#include "tmplsrc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fg_tmplsrc fg_tmplsrc_dir(const char *dir)
{
    fg_tmplsrc s = {dir, NULL, 0};
    return s;
}

fg_tmplsrc fg_tmplsrc_table(const fg_tmplsrc_file *files, size_t n)
{
    fg_tmplsrc s = {NULL, files, n};
    return s;
}

static const char *tmplsrc__from_table(const fg_tmplsrc *src, fg_arena *a, const char *rel, size_t max_bytes,
                                       size_t *len, const char **where)
{
    *where = fg_arena_printf(a, "<built-in>/%s", rel);
    for (size_t i = 0; i < src->n_files; ++i) {
        const fg_tmplsrc_file *f = &src->files[i];
        if (strcmp(f->rel_path, rel) != 0) continue;
        if (f->len > max_bytes) {
            errno = EFBIG;
            return NULL;
        }
        char *text = fg_arena_strndup(a, (const char *)f->data, f->len);
        if (!text || !*where) {
            errno = ENOMEM;
            return NULL;
        }
        *len = f->len;
        return text;
    }
    errno = ENOENT;
    return NULL;
}

const char *fg_tmplsrc_read(const fg_tmplsrc *src, fg_arena *a, const char *rel, size_t max_bytes, size_t *len,
                            const char **where, int *on_disk)
{
    *on_disk = 0;
    if (!src->dir) return tmplsrc__from_table(src, a, rel, max_bytes, len, where);
    const char *path = fg_arena_printf(a, "%s/%s", src->dir, rel);
    *where = path;
    if (!path) {
        errno = ENOMEM;
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    /* Read into a scratch buffer; only the bytes read are kept in the arena. */
    char *buf = malloc(max_bytes + 1);
    size_t n = buf ? fread(buf, 1, max_bytes + 1, f) : 0;
    const int read_error = !buf ? ENOMEM : ferror(f) ? EIO : n > max_bytes ? EFBIG : 0;
    fclose(f);
    char *text = read_error ? NULL : fg_arena_strndup(a, buf, n);
    free(buf);
    if (!text) {
        errno = read_error ? read_error : ENOMEM;
        return NULL;
    }
    *len = n;
    *on_disk = 1;
    return text;
}
