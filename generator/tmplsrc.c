/* tmplsrc.c - see tmplsrc.h. */
#define _POSIX_C_SOURCE 200809L
#include "tmplsrc.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

typedef struct tmplsrc__table {
    const fg_tmplsrc_file *files;
    size_t n;
} tmplsrc__table;

/* Set once by the program that embeds templates; read by every emit. */
static _Atomic(const tmplsrc__table *) tmplsrc__current;
static tmplsrc__table tmplsrc__slots[4];
static atomic_uint tmplsrc__used;

void fg_tmplsrc_register(const fg_tmplsrc_file *files, size_t n)
{
    const tmplsrc__table *cur = atomic_load(&tmplsrc__current);
    if (cur && cur->files == files && cur->n == n) return;
    /* A few distinct tables at most (one per embedding library); a slot is never reused, so a
     * reader holding an older table keeps valid data. */
    unsigned slot = atomic_fetch_add(&tmplsrc__used, 1u);
    if (slot >= sizeof tmplsrc__slots / sizeof tmplsrc__slots[0]) return;
    tmplsrc__slots[slot].files = files;
    tmplsrc__slots[slot].n = n;
    atomic_store(&tmplsrc__current, &tmplsrc__slots[slot]);
}

const fg_tmplsrc_file *fg_tmplsrc_find(const char *rel_path)
{
    const tmplsrc__table *t = atomic_load(&tmplsrc__current);
    if (!t || !rel_path) return NULL;
    for (size_t i = 0; i < t->n; ++i)
        if (strcmp(t->files[i].rel_path, rel_path) == 0) return &t->files[i];
    return NULL;
}

FILE *fg_tmplsrc_fopen(const char *path, const char *mode)
{
    static const char prefix[] = FG_TMPLSRC_EMBEDDED "/";
    if (!path || strncmp(path, prefix, sizeof prefix - 1) != 0) return fopen(path, mode);
    const fg_tmplsrc_file *f = fg_tmplsrc_find(path + sizeof prefix - 1);
    if (!f || !mode || mode[0] != 'r' || f->len == 0) {
        errno = ENOENT;
        return NULL;
    }
    /* read-only: the cast only satisfies fmemopen's prototype */
    return fmemopen((void *)f->data, f->len, "r");
}
