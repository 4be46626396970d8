/* tmpl.h - the template engine. Templates are valid-looking CUDA/C text with marked holes:
 *   {{name}}                    the value of a variable (an unknown name is an error)
 *   {{#if name}} ... {{/if}}    kept when the variable is set, non-empty and not "0"
 *   {{#if name}} ... {{#else}} ... {{/if}}
 *   {{#each list}} ... {{/each}} repeated once per item of a list; inside, names resolve in
 *                               the item first, then outward
 *   {{! comment }}              dropped
 * A line holding only a block tag ({{#if}}, {{#else}}, {{/if}}, {{#each}}, {{/each}}, comment)
 * and whitespace is dropped entirely, so blocks do not leave blank lines behind.
 * No other logic: decisions are made in C (plan.c) and arrive as variables and lists.
 * Errors (unknown variable or list, unclosed or stray block, malformed tag) are reported as
 *   TEMPLATE:LINE:COL: error: message
 * through the diag context, and rendering fails. */
#ifndef FUSEGEN_TMPL_H
#define FUSEGEN_TMPL_H
#include <stddef.h>

#include "arena.h"
#include "buf.h"
#include "diag.h"

typedef struct fg_tmpl_scope fg_tmpl_scope;

/* A scope of variables and lists; parent may be NULL. Allocated in the arena. */
fg_tmpl_scope *fg_tmpl_scope_new(fg_arena *a, fg_tmpl_scope *parent);
/* Sets (or replaces) a variable; value is copied. */
void fg_tmpl_set(fg_tmpl_scope *s, const char *name, const char *value);
void fg_tmpl_setf(fg_tmpl_scope *s, const char *name, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Declares list `list` in s (empty if never added to) and appends a new item scope to it,
 * whose parent is s. */
fg_tmpl_scope *fg_tmpl_list_add(fg_tmpl_scope *s, const char *list);
/* Declares an empty list (so {{#each list}} is valid and renders nothing). */
void fg_tmpl_list_declare(fg_tmpl_scope *s, const char *list);

/* Renders text (named `name` in messages) with scope s, appending to out.
 * Returns 0, or -1 after reporting errors to d. */
int fg_tmpl_render(const char *name, const char *text, size_t len, const fg_tmpl_scope *s, fg_buf *out, fg_diag *d);

#endif
