/* tmpl.c - see tmpl.h. A template is parsed into a small tree first (all structural errors
 * are reported then), and the tree is rendered against the scopes (unknown names are
 * reported then). Nothing is appended to the output unless the whole render succeeds. */
#include "tmpl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define FG_TMPL__MAX_DEPTH 64   /* nesting of {{#if}} / {{#each}} blocks */

/* ---- scopes ---------------------------------------------------------------------------- */

typedef struct fg_tmpl__entry {
    struct fg_tmpl__entry *next;
    const char *name;
    int is_list;
    const char *value;                          /* variable */
    fg_tmpl_scope *first_item, *last_item;      /* list */
    size_t n_items;
} fg_tmpl__entry;

struct fg_tmpl_scope {
    fg_arena *arena;
    fg_tmpl_scope *parent;
    fg_tmpl_scope *next_item;   /* next item of the list this scope is an item of */
    fg_tmpl__entry *entries;
    int oom;                    /* an allocation failed here or in a descendant */
};

static void fg_tmpl__oom(fg_tmpl_scope *s)
{
    for (; s; s = s->parent) s->oom = 1;
}

fg_tmpl_scope *fg_tmpl_scope_new(fg_arena *a, fg_tmpl_scope *parent)
{
    fg_tmpl_scope *s = fg_arena_alloc(a, sizeof *s);
    if (!s) {
        fg_tmpl__oom(parent);
        return NULL;
    }
    s->arena = a;
    s->parent = parent;
    return s;
}

static fg_tmpl__entry *fg_tmpl__find_local(const fg_tmpl_scope *s, const char *name, size_t n)
{
    for (fg_tmpl__entry *e = s->entries; e; e = e->next)
        if (strncmp(e->name, name, n) == 0 && e->name[n] == '\0') return e;
    return NULL;
}

/* The entry `name` of s, created (as a variable with no value) when missing. */
static fg_tmpl__entry *fg_tmpl__get(fg_tmpl_scope *s, const char *name)
{
    fg_tmpl__entry *e = fg_tmpl__find_local(s, name, strlen(name));
    if (e) return e;
    e = fg_arena_alloc(s->arena, sizeof *e);
    char *copy = e ? fg_arena_strdup(s->arena, name) : NULL;
    if (!copy) {
        fg_tmpl__oom(s);
        return NULL;
    }
    e->name = copy;
    e->next = s->entries;
    s->entries = e;
    return e;
}

void fg_tmpl_set(fg_tmpl_scope *s, const char *name, const char *value)
{
    if (!s) return;
    fg_tmpl__entry *e = fg_tmpl__get(s, name);
    if (!e) return;
    char *copy = fg_arena_strdup(s->arena, value ? value : "");
    if (!copy) {
        fg_tmpl__oom(s);
        return;
    }
    e->is_list = 0;
    e->value = copy;
    e->first_item = e->last_item = NULL;
    e->n_items = 0;
}

void fg_tmpl_setf(fg_tmpl_scope *s, const char *name, const char *fmt, ...)
{
    if (!s) return;
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        fg_tmpl__oom(s);
        return;
    }
    if ((size_t)n < sizeof small) {
        fg_tmpl_set(s, name, small);
        return;
    }
    char *big = fg_arena_alloc(s->arena, (size_t)n + 1);
    if (!big) {
        fg_tmpl__oom(s);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    fg_tmpl_set(s, name, big);
}

static fg_tmpl__entry *fg_tmpl__get_list(fg_tmpl_scope *s, const char *list)
{
    fg_tmpl__entry *e = fg_tmpl__get(s, list);
    if (e && !e->is_list) {
        e->is_list = 1;
        e->value = NULL;
        e->first_item = e->last_item = NULL;
        e->n_items = 0;
    }
    return e;
}

void fg_tmpl_list_declare(fg_tmpl_scope *s, const char *list)
{
    if (!s) return;
    (void)fg_tmpl__get_list(s, list);
}

fg_tmpl_scope *fg_tmpl_list_add(fg_tmpl_scope *s, const char *list)
{
    if (!s) return NULL;
    fg_tmpl__entry *e = fg_tmpl__get_list(s, list);
    if (!e) return NULL;
    fg_tmpl_scope *item = fg_tmpl_scope_new(s->arena, s);
    if (!item) return NULL;
    if (e->last_item) e->last_item->next_item = item;
    else e->first_item = item;
    e->last_item = item;
    e->n_items++;
    return item;
}

/* ---- parsing --------------------------------------------------------------------------- */

typedef enum { FG_TMPL__TEXT, FG_TMPL__VAR, FG_TMPL__IF, FG_TMPL__EACH } fg_tmpl__node_kind;

typedef struct fg_tmpl__node {
    fg_tmpl__node_kind kind;
    struct fg_tmpl__node *next;
    const char *s; size_t n;       /* text bytes, or the name of a tag */
    size_t off;                    /* offset of the tag's "{{" (for messages) */
    struct fg_tmpl__node *body;    /* if: then-part; each: body */
    struct fg_tmpl__node *alt;     /* if: else-part */
    int reported;                  /* an error about this node was printed already */
} fg_tmpl__node;

typedef enum {
    FG_TMPL__T_VAR, FG_TMPL__T_IF, FG_TMPL__T_ELSE, FG_TMPL__T_ENDIF,
    FG_TMPL__T_EACH, FG_TMPL__T_ENDEACH, FG_TMPL__T_COMMENT
} fg_tmpl__tag_kind;

typedef struct fg_tmpl__tag {
    fg_tmpl__tag_kind kind;
    const char *name; size_t name_len;   /* VAR, IF, EACH */
    size_t end;                          /* offset just after "}}" */
    int known;                           /* a malformed block tag whose kind is still clear */
} fg_tmpl__tag;

typedef struct fg_tmpl__frame {
    fg_tmpl__node *block;       /* NULL for the document */
    fg_tmpl__node **tail;       /* where the next node of this level goes */
    fg_tmpl__node *last;        /* the last node of this level, NULL when none */
    int in_else;
} fg_tmpl__frame;

typedef struct fg_tmpl__parser {
    const char *name;
    const char *text; size_t len;
    fg_arena *arena;            /* nodes, freed after rendering */
    fg_diag *d;
    fg_tmpl__node *root;
    int failed;
    int too_deep;               /* parsing stopped: nesting limit */
    int oom;                    /* parsing stopped: out of memory */
    int depth;
    fg_tmpl__frame stack[FG_TMPL__MAX_DEPTH + 1];
} fg_tmpl__parser;

static void fg_tmpl__linecol(const char *text, size_t off, int *line, int *col)
{
    long l = 1, c = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') { l++; c = 1; }
        else c++;
    }
    *line = l > 0x7fffffffL ? 0x7fffffff : (int)l;
    *col = c > 0x7fffffffL ? 0x7fffffff : (int)c;
}

static void fg_tmpl__error(const char *text, size_t off, fg_diag *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void fg_tmpl__error(const char *text, size_t off, fg_diag *d, const char *fmt, ...)
{
    char msg[512];
    int line, col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fg_tmpl__linecol(text, off, &line, &col);
    fg_diag_error_at(d, line, col, NULL, "%s", msg);
}

static int fg_tmpl__is_space(char c) { return c == ' ' || c == '\t'; }
static int fg_tmpl__is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int fg_tmpl__is_ident(char c) { return fg_tmpl__is_ident_start(c) || (c >= '0' && c <= '9'); }

/* Reads an identifier at t[*p..end); returns its length (0 when there is none). */
static size_t fg_tmpl__ident(const char *t, size_t *p, size_t end)
{
    size_t start = *p;
    if (start >= end || !fg_tmpl__is_ident_start(t[start])) return 0;
    size_t q = start + 1;
    while (q < end && fg_tmpl__is_ident(t[q])) q++;
    *p = q;
    return q - start;
}

/* Parses the tag whose "{{" is at pos. Returns NULL and fills *tag, or returns a message
 * (a static string or one written into msg) describing why the tag is malformed. */
static const char *fg_tmpl__parse_tag(const char *t, size_t len, size_t pos, fg_tmpl__tag *tag,
                                      char *msg, size_t msg_size)
{
    size_t p = pos + 2;
    memset(tag, 0, sizeof *tag);
    if (p < len && t[p] == '!') {
        for (size_t q = p + 1; q + 1 < len; q++)
            if (t[q] == '}' && t[q + 1] == '}') {
                tag->kind = FG_TMPL__T_COMMENT;
                tag->end = q + 2;
                return NULL;
            }
        return "unterminated comment (missing '}}')";
    }
    size_t close = p;
    while (close < len && t[close] != '\n' && !(t[close] == '}' && close + 1 < len && t[close + 1] == '}'))
        close++;
    if (close >= len || t[close] == '\n') return "unterminated tag (missing '}}' on this line)";
    tag->end = close + 2;

    size_t end = close;
    while (p < end && fg_tmpl__is_space(t[p])) p++;
    while (end > p && fg_tmpl__is_space(t[end - 1])) end--;
    if (p == end) return "empty tag '{{}}'";

    char sigil = t[p];
    if (sigil != '#' && sigil != '/') {
        size_t q = p;
        size_t n = fg_tmpl__ident(t, &q, end);
        if (n == 0 || q != end) {
            snprintf(msg, msg_size, "malformed tag '{{%.*s}}' (expected a variable name)",
                     (int)(end - p > 80 ? 80 : end - p), t + p);
            return msg;
        }
        tag->kind = FG_TMPL__T_VAR;
        tag->name = t + p;
        tag->name_len = n;
        return NULL;
    }

    size_t q = p + 1;
    size_t kw_start = q;
    size_t kw_len = fg_tmpl__ident(t, &q, end);
    int is_if = kw_len == 2 && memcmp(t + kw_start, "if", 2) == 0;
    int is_each = kw_len == 4 && memcmp(t + kw_start, "each", 4) == 0;
    int is_else = sigil == '#' && kw_len == 4 && memcmp(t + kw_start, "else", 4) == 0;
    if (!is_if && !is_each && !is_else) {
        snprintf(msg, msg_size, "unknown block tag '{{%c%.*s}}' (expected #if, #else, #each, /if or /each)",
                 sigil, (int)(kw_len > 40 ? 40 : kw_len), t + kw_start);
        return msg;
    }
    /* From here on the kind is known even if the rest is malformed, so the parser can keep
     * the block structure and avoid reporting follow-on errors. */
    tag->kind = is_else ? FG_TMPL__T_ELSE
              : sigil == '/' ? (is_if ? FG_TMPL__T_ENDIF : FG_TMPL__T_ENDEACH)
              : is_if ? FG_TMPL__T_IF : FG_TMPL__T_EACH;
    tag->known = 1;
    tag->name = t + q;
    if (sigil == '/' || is_else) {
        while (q < end && fg_tmpl__is_space(t[q])) q++;
        if (q != end) {
            snprintf(msg, msg_size, "unexpected text after '{{%c%.*s' (it takes no name)", sigil,
                     (int)kw_len, t + kw_start);
            return msg;
        }
        return NULL;
    }
    if (q >= end || !fg_tmpl__is_space(t[q])) {
        snprintf(msg, msg_size, "'{{#%s}}' needs a %s name", is_if ? "if" : "each", is_if ? "variable" : "list");
        return msg;
    }
    while (q < end && fg_tmpl__is_space(t[q])) q++;
    size_t name_start = q;
    size_t n = fg_tmpl__ident(t, &q, end);
    if (n == 0 || q != end) {
        snprintf(msg, msg_size, "malformed '{{#%s}}': '%.*s' is not a name", is_if ? "if" : "each",
                 (int)(end - name_start > 80 ? 80 : end - name_start), t + name_start);
        return msg;
    }
    tag->kind = is_if ? FG_TMPL__T_IF : FG_TMPL__T_EACH;
    tag->name = t + name_start;
    tag->name_len = n;
    return NULL;
}

static fg_tmpl__node *fg_tmpl__append(fg_tmpl__parser *ps, fg_tmpl__node_kind kind, const char *s,
                                      size_t n, size_t off)
{
    fg_tmpl__frame *f = &ps->stack[ps->depth];
    fg_tmpl__node *node = fg_arena_alloc(ps->arena, sizeof *node);
    if (!node) {
        if (!ps->oom) fg_diag_error_at(ps->d, 0, 0, NULL, "%s: out of memory", ps->name);
        ps->oom = 1;
        ps->failed = 1;
        return NULL;
    }
    node->kind = kind;
    node->s = s;
    node->n = n;
    node->off = off;
    *f->tail = node;
    f->tail = &node->next;
    f->last = node;
    return node;
}

/* Appends text, merging it with the previous text node when the bytes are contiguous. */
static void fg_tmpl__text(fg_tmpl__parser *ps, size_t from, size_t to)
{
    if (to <= from) return;
    fg_tmpl__node *last = ps->stack[ps->depth].last;
    if (last && last->kind == FG_TMPL__TEXT && last->s + last->n == ps->text + from) {
        last->n += to - from;
        return;
    }
    (void)fg_tmpl__append(ps, FG_TMPL__TEXT, ps->text + from, to - from, from);
}

static const char *fg_tmpl__block_word(const fg_tmpl__node *block)
{
    return block->kind == FG_TMPL__IF ? "if" : "each";
}

/* Applies one well-formed tag found at off to the tree being built. */
static void fg_tmpl__tag_apply(fg_tmpl__parser *ps, const fg_tmpl__tag *tag, size_t off)
{
    fg_tmpl__frame *f = &ps->stack[ps->depth];
    int line, col;
    switch (tag->kind) {
    case FG_TMPL__T_COMMENT:
        return;
    case FG_TMPL__T_VAR:
        (void)fg_tmpl__append(ps, FG_TMPL__VAR, tag->name, tag->name_len, off);
        return;
    case FG_TMPL__T_IF:
    case FG_TMPL__T_EACH: {
        if (ps->depth >= FG_TMPL__MAX_DEPTH) {
            fg_tmpl__error(ps->text, off, ps->d, "blocks nested more than %d deep", FG_TMPL__MAX_DEPTH);
            ps->failed = 1;
            ps->too_deep = 1;
            return;
        }
        fg_tmpl__node *node = fg_tmpl__append(ps, tag->kind == FG_TMPL__T_IF ? FG_TMPL__IF : FG_TMPL__EACH,
                                              tag->name, tag->name_len, off);
        if (!node) return;
        ps->depth++;
        ps->stack[ps->depth].block = node;
        ps->stack[ps->depth].tail = &node->body;
        ps->stack[ps->depth].last = NULL;
        ps->stack[ps->depth].in_else = 0;
        return;
    }
    case FG_TMPL__T_ELSE:
        if (ps->depth == 0 || f->block->kind != FG_TMPL__IF) {
            fg_tmpl__error(ps->text, off, ps->d, "'{{#else}}' outside of an '{{#if}}' block");
            ps->failed = 1;
        } else if (f->in_else) {
            fg_tmpl__linecol(ps->text, f->block->off, &line, &col);
            fg_tmpl__error(ps->text, off, ps->d, "second '{{#else}}' in the '{{#if %.*s}}' opened at %d:%d",
                           (int)f->block->n, f->block->s, line, col);
            ps->failed = 1;
        } else {
            f->in_else = 1;
            f->tail = &f->block->alt;
            f->last = NULL;
        }
        return;
    case FG_TMPL__T_ENDIF:
    case FG_TMPL__T_ENDEACH: {
        const char *word = tag->kind == FG_TMPL__T_ENDIF ? "if" : "each";
        fg_tmpl__node_kind want = tag->kind == FG_TMPL__T_ENDIF ? FG_TMPL__IF : FG_TMPL__EACH;
        if (ps->depth == 0) {
            fg_tmpl__error(ps->text, off, ps->d, "stray '{{/%s}}' with no open block", word);
            ps->failed = 1;
            return;
        }
        if (f->block->kind != want) {
            fg_tmpl__linecol(ps->text, f->block->off, &line, &col);
            fg_tmpl__error(ps->text, off, ps->d, "'{{/%s}}' closes the '{{#%s %.*s}}' opened at %d:%d",
                           word, fg_tmpl__block_word(f->block), (int)f->block->n, f->block->s, line, col);
            ps->failed = 1;
        }
        ps->depth--;
        return;
    }
    }
}

static int fg_tmpl__at_tag(const char *t, size_t len, size_t p)
{
    return p + 1 < len && t[p] == '{' && t[p + 1] == '{';
}

/* When the line starting at ls holds only block tags / comments and whitespace, applies the
 * tags, sets *next to the start of the following line and returns 1; otherwise returns 0. */
static int fg_tmpl__standalone(fg_tmpl__parser *ps, size_t ls, size_t *next)
{
    const char *t = ps->text;
    size_t len = ps->len, p = ls;
    int n_tags = 0;
    char msg[256];
    fg_tmpl__tag tag;
    for (;;) {
        while (p < len && fg_tmpl__is_space(t[p])) p++;
        if (!fg_tmpl__at_tag(t, len, p)) break;
        if (fg_tmpl__parse_tag(t, len, p, &tag, msg, sizeof msg) != NULL) return 0;
        if (tag.kind == FG_TMPL__T_VAR) return 0;
        n_tags++;
        p = tag.end;
    }
    if (n_tags == 0) return 0;
    if (p < len && t[p] == '\r' && (p + 1 == len || t[p + 1] == '\n')) p++;
    if (p < len && t[p] != '\n') return 0;
    if (p < len) p++;
    *next = p;

    size_t q = ls;
    for (;;) {
        while (q < len && fg_tmpl__is_space(t[q])) q++;
        if (!fg_tmpl__at_tag(t, len, q) || q >= p || ps->too_deep || ps->oom) break;
        (void)fg_tmpl__parse_tag(t, len, q, &tag, msg, sizeof msg);
        fg_tmpl__tag_apply(ps, &tag, q);
        q = tag.end;
    }
    return 1;
}

static void fg_tmpl__parse(fg_tmpl__parser *ps)
{
    const char *t = ps->text;
    size_t len = ps->len, pos = 0;
    int line_start = 1;
    char msg[256];
    fg_tmpl__tag tag;
    ps->depth = 0;
    ps->stack[0].block = NULL;
    ps->stack[0].tail = &ps->root;
    ps->stack[0].last = NULL;
    ps->stack[0].in_else = 0;
    while (pos < len && !ps->too_deep && !ps->oom) {
        size_t next;
        if (line_start && fg_tmpl__standalone(ps, pos, &next)) {
            pos = next;
            continue;
        }
        size_t q = pos;
        while (q < len && t[q] != '\n' && !fg_tmpl__at_tag(t, len, q)) q++;
        if (q < len && t[q] == '\n') {
            fg_tmpl__text(ps, pos, q + 1);
            pos = q + 1;
            line_start = 1;
            continue;
        }
        fg_tmpl__text(ps, pos, q);
        line_start = 0;
        pos = q;
        if (pos >= len) break;
        const char *err = fg_tmpl__parse_tag(t, len, pos, &tag, msg, sizeof msg);
        if (err) {
            fg_tmpl__error(t, pos, ps->d, "%s", err);
            ps->failed = 1;
            /* Keep the block structure of a malformed block tag; resume after the tag when its
             * end is known, else after the "{{". */
            if (tag.known) fg_tmpl__tag_apply(ps, &tag, pos);
            pos = tag.end > pos ? tag.end : pos + 2;
            continue;
        }
        fg_tmpl__tag_apply(ps, &tag, pos);
        pos = tag.end;
    }
    if (ps->too_deep || ps->oom) return;
    for (int i = 1; i <= ps->depth; i++) {
        const fg_tmpl__node *b = ps->stack[i].block;
        fg_tmpl__error(t, b->off, ps->d, "unclosed '{{#%s %.*s}}' (missing '{{/%s}}')", fg_tmpl__block_word(b),
                       (int)b->n, b->s, fg_tmpl__block_word(b));
        ps->failed = 1;
    }
}

/* ---- rendering ------------------------------------------------------------------------- */

/* The scopes active while rendering, innermost first: each item of an {{#each}}, then the
 * scope the render started with. */
typedef struct fg_tmpl__ctx {
    const fg_tmpl_scope *scope;
    const struct fg_tmpl__ctx *outer;
} fg_tmpl__ctx;

static const fg_tmpl__entry *fg_tmpl__lookup(const fg_tmpl__ctx *c, const char *name, size_t n)
{
    for (; c; c = c->outer)
        for (const fg_tmpl_scope *s = c->scope; s; s = s->parent) {
            const fg_tmpl__entry *e = fg_tmpl__find_local(s, name, n);
            if (e) return e;
        }
    return NULL;
}

static void fg_tmpl__node_error(fg_tmpl__parser *ps, fg_tmpl__node *node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void fg_tmpl__node_error(fg_tmpl__parser *ps, fg_tmpl__node *node, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    ps->failed = 1;
    if (node->reported) return;   /* once per tag, not once per item of an enclosing list */
    node->reported = 1;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fg_tmpl__error(ps->text, node->off, ps->d, "%s", msg);
}

static void fg_tmpl__render_nodes(fg_tmpl__parser *ps, fg_tmpl__node *node, const fg_tmpl__ctx *c, fg_buf *out)
{
    for (; node; node = node->next) {
        const fg_tmpl__entry *e;
        switch (node->kind) {
        case FG_TMPL__TEXT:
            fg_buf_append(out, node->s, node->n);
            break;
        case FG_TMPL__VAR:
            e = fg_tmpl__lookup(c, node->s, node->n);
            if (!e)
                fg_tmpl__node_error(ps, node, "unknown variable '%.*s'", (int)node->n, node->s);
            else if (e->is_list)
                fg_tmpl__node_error(ps, node, "'%.*s' is a list, not a variable (use {{#each %.*s}})",
                                    (int)node->n, node->s, (int)node->n, node->s);
            else
                fg_buf_puts(out, e->value);
            break;
        case FG_TMPL__IF: {
            e = fg_tmpl__lookup(c, node->s, node->n);
            int on = 0;
            if (e && e->is_list) on = e->n_items > 0;
            else if (e) on = e->value[0] != '\0' && strcmp(e->value, "0") != 0;
            fg_tmpl__render_nodes(ps, on ? node->body : node->alt, c, out);
            break;
        }
        case FG_TMPL__EACH:
            e = fg_tmpl__lookup(c, node->s, node->n);
            if (!e) {
                fg_tmpl__node_error(ps, node, "unknown list '%.*s'", (int)node->n, node->s);
            } else if (!e->is_list) {
                fg_tmpl__node_error(ps, node, "'%.*s' is a variable, not a list", (int)node->n, node->s);
            } else {
                for (const fg_tmpl_scope *item = e->first_item; item; item = item->next_item) {
                    fg_tmpl__ctx inner = { item, c };
                    fg_tmpl__render_nodes(ps, node->body, &inner, out);
                }
            }
            break;
        }
    }
}

int fg_tmpl_render(const char *name, const char *text, size_t len, const fg_tmpl_scope *s, fg_buf *out, fg_diag *d)
{
    /* Messages name the template; the previous source is restored afterwards. */
    const char *saved_file = d->file, *saved_text = d->text;
    size_t saved_len = d->text_len;
    fg_arena nodes;
    fg_arena_init(&nodes);
    fg_tmpl__parser ps;
    memset(&ps, 0, sizeof ps);
    ps.name = name;
    ps.text = text;
    ps.len = len;
    ps.arena = &nodes;
    ps.d = d;
    fg_diag_set_source(d, name, NULL, 0);

    size_t start_len = out->len;
    if (!s || s->oom) {
        fg_diag_error_at(d, 0, 0, NULL, "out of memory while building the variables of %s", name);
        ps.failed = 1;
        goto done;
    }
    fg_tmpl__parse(&ps);
    if (ps.failed) goto done;
    fg_tmpl__ctx root = { s, NULL };
    fg_tmpl__render_nodes(&ps, ps.root, &root, out);
    if (out->failed) {
        fg_diag_error_at(d, 0, 0, NULL, "out of memory while rendering %s", name);
        ps.failed = 1;
    }
done:
    if (ps.failed && !out->failed && out->data) {
        out->len = start_len;
        out->data[start_len] = '\0';
    }
    fg_arena_free(&nodes);
    fg_diag_set_source(d, saved_file, saved_text, saved_len);
    return ps.failed ? -1 : 0;
}
