/* arena.h - bump allocator that owns the whole spec model and plan; freed once. */
#ifndef FUSEGEN_ARENA_H
#define FUSEGEN_ARENA_H
#include <stddef.h>

typedef struct fg_arena_block fg_arena_block;
typedef struct fg_arena {
    fg_arena_block *head;
    size_t total;        /* bytes handed out, to enforce a cap */
} fg_arena;

void fg_arena_init(fg_arena *a);
/* Zeroed, 16-byte aligned memory; NULL only when malloc fails. */
void *fg_arena_alloc(fg_arena *a, size_t size);
char *fg_arena_strdup(fg_arena *a, const char *s);
char *fg_arena_strndup(fg_arena *a, const char *s, size_t n);
/* printf into arena memory. */
char *fg_arena_printf(fg_arena *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void fg_arena_free(fg_arena *a);

#endif
