/* arena.c - see arena.h. */
#include "arena.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fg_arena_block {
    fg_arena_block *next;
    size_t used, cap;
    /* payload follows, 16-byte aligned through the union below */
    union { long double ld; void *p; long long ll; } align_[];
};

void fg_arena_init(fg_arena *a) { a->head = NULL; a->total = 0; }

void *fg_arena_alloc(fg_arena *a, size_t size)
{
    size = (size + 15u) & ~(size_t)15u;
    if (size == 0) size = 16;
    fg_arena_block *b = a->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = a->head; b->used = 0; b->cap = cap;
        a->head = b;
    }
    char *p = (char *)b->align_ + b->used;
    b->used += size;
    a->total += size;
    memset(p, 0, size);
    return p;
}

char *fg_arena_strndup(fg_arena *a, const char *s, size_t n)
{
    char *d = fg_arena_alloc(a, n + 1);
    if (d) { memcpy(d, s, n); d[n] = '\0'; }
    return d;
}

char *fg_arena_strdup(fg_arena *a, const char *s) { return fg_arena_strndup(a, s, strlen(s)); }

char *fg_arena_printf(fg_arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *d = fg_arena_alloc(a, (size_t)n + 1);
    if (!d) return NULL;
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return d;
}

void fg_arena_free(fg_arena *a)
{
    fg_arena_block *b = a->head;
    while (b) { fg_arena_block *n = b->next; free(b); b = n; }
    a->head = NULL; a->total = 0;
}
