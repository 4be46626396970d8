/* jsonpos.c - see jsonpos.h. A small forward scanner over JSON text: skip whitespace, skip a
 * string, skip a whole value (by counting brackets outside strings), compare an object key with
 * a pointer token while decoding the key's escapes on the fly. No recursion anywhere. */
#include "jsonpos.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FAIL SIZE_MAX

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t skip_ws(const char *t, size_t n, size_t i)
{
    while (i < n && is_ws(t[i])) i++;
    return i;
}

/* i at the opening quote; returns the index after the closing quote, or FAIL. */
static size_t skip_string(const char *t, size_t n, size_t i)
{
    if (i >= n || t[i] != '"') return FAIL;
    for (i++; i < n; i++) {
        if (t[i] == '\\') { i++; continue; }
        if (t[i] == '"') return i + 1;
    }
    return FAIL;
}

static bool ends_scalar(char c)
{
    return c == ',' || c == ']' || c == '}' || c == ':' || c == '"' || c == '[' || c == '{' || is_ws(c);
}

/* i at the first byte of a value; returns the index just after it, or FAIL. */
static size_t skip_value(const char *t, size_t n, size_t i)
{
    if (i >= n) return FAIL;
    char c = t[i];
    if (c == '"') return skip_string(t, n, i);
    if (c == '{' || c == '[') {
        size_t depth = 0;
        while (i < n) {
            c = t[i];
            if (c == '"') {
                i = skip_string(t, n, i);
                if (i == FAIL) return FAIL;
                continue;
            }
            if (c == '{' || c == '[') depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
            i++;
        }
        return FAIL;
    }
    size_t start = i;
    while (i < n && !ends_scalar(t[i])) i++;
    return i == start ? FAIL : i;
}

static int hex4(const char *t, size_t n, size_t i, unsigned *v)
{
    if (i + 4 > n) return -1;
    unsigned x = 0;
    for (size_t k = 0; k < 4; k++) {
        char c = t[i + k];
        x <<= 4;
        if (c >= '0' && c <= '9') x |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') x |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') x |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *v = x;
    return 0;
}

/* Decodes the next character of a string whose body starts at or before *i. Writes its bytes
 * (UTF-8 for escapes, the raw byte otherwise) to out and returns their count; returns 0 at the
 * closing quote (and moves *i past it), -1 on malformed text. */
static int str_next(const char *t, size_t n, size_t *i, unsigned char out[4])
{
    size_t k = *i;
    if (k >= n) return -1;
    if (t[k] == '"') { *i = k + 1; return 0; }
    if (t[k] != '\\') { out[0] = (unsigned char)t[k]; *i = k + 1; return 1; }
    if (k + 1 >= n) return -1;
    char e = t[k + 1];
    *i = k + 2;
    switch (e) {
    case '"': out[0] = '"'; return 1;
    case '\\': out[0] = '\\'; return 1;
    case '/': out[0] = '/'; return 1;
    case 'b': out[0] = '\b'; return 1;
    case 'f': out[0] = '\f'; return 1;
    case 'n': out[0] = '\n'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'u': break;
    default: return -1;
    }
    unsigned cp;
    if (hex4(t, n, k + 2, &cp) != 0) return -1;
    *i = k + 6;
    if (cp >= 0xD800 && cp <= 0xDBFF && *i + 6 <= n && t[*i] == '\\' && t[*i + 1] == 'u') {
        unsigned lo;
        if (hex4(t, n, *i + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            *i += 6;
        }
    }
    if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Compares the key string at *i (its opening quote) with tok[0..toklen) and moves *i past the
 * key. A decoded NUL ends the key, as it does for a C-string parser. Returns 1 equal, 0 not,
 * -1 malformed. */
static int key_equals(const char *t, size_t n, size_t *i, const char *tok, size_t toklen)
{
    if (*i >= n || t[*i] != '"') return -1;
    size_t k = *i + 1, pos = 0;
    bool same = true, cut = false;
    for (;;) {
        unsigned char ch[4];
        int m = str_next(t, n, &k, ch);
        if (m < 0) return -1;
        if (m == 0) break;
        if (cut) continue;
        if (m == 1 && ch[0] == 0) { cut = true; continue; }
        for (int b = 0; b < m; b++) {
            if (pos >= toklen || (unsigned char)tok[pos] != ch[b]) same = false;
            pos++;
        }
    }
    *i = k;
    return same && pos == toklen ? 1 : 0;
}

/* Unescapes the pointer token starting at *p (just after its '/') into buf; moves *p to the
 * next '/' or the terminating NUL. Returns its length, or FAIL on a bad '~' escape. */
static size_t next_token(const char **p, char *buf)
{
    const char *s = *p;
    size_t n = 0;
    while (*s && *s != '/') {
        if (*s == '~') {
            if (s[1] == '0') buf[n++] = '~';
            else if (s[1] == '1') buf[n++] = '/';
            else return FAIL;
            s += 2;
        } else {
            buf[n++] = *s++;
        }
    }
    *p = s;
    return n;
}

static bool parse_index(const char *tok, size_t n, size_t *idx)
{
    if (n == 0 || (n > 1 && tok[0] == '0')) return false;
    size_t v = 0;
    for (size_t k = 0; k < n; k++) {
        if (tok[k] < '0' || tok[k] > '9') return false;
        if (v > (SIZE_MAX - 9) / 10) return false;
        v = v * 10 + (size_t)(tok[k] - '0');
    }
    *idx = v;
    return true;
}

static int locate(const char *t, size_t n, const char *pointer, bool want_key, int nth, size_t *offset)
{
    if (!t || !pointer || (pointer[0] != '\0' && pointer[0] != '/')) return -1;
    size_t i = skip_ws(t, n, 0);
    if (i >= n) return -1;
    if (pointer[0] == '\0') {
        if (want_key) return -1;
        *offset = i;
        return 0;
    }
    char *tok = malloc(strlen(pointer) + 1);
    if (!tok) return -1;
    int rc = -1;
    const char *p = pointer;
    while (*p == '/') {
        p++;
        size_t toklen = next_token(&p, tok);
        if (toklen == FAIL) goto out;
        bool last = *p == '\0';
        if (i >= n) goto out;
        if (t[i] == '{') {
            int seen = 0;
            i = skip_ws(t, n, i + 1);
            for (;;) {
                if (i >= n || t[i] != '"') goto out;   /* '}' too: the key is not there */
                size_t key_at = i;
                int eq = key_equals(t, n, &i, tok, toklen);
                if (eq < 0) goto out;
                i = skip_ws(t, n, i);
                if (i >= n || t[i] != ':') goto out;
                i = skip_ws(t, n, i + 1);
                if (eq) {
                    if (last && want_key) {
                        if (seen == nth) { *offset = key_at; rc = 0; goto out; }
                        seen++;
                    } else {
                        break;
                    }
                }
                i = skip_value(t, n, i);
                if (i == FAIL) goto out;
                i = skip_ws(t, n, i);
                if (i >= n || t[i] != ',') goto out;
                i = skip_ws(t, n, i + 1);
            }
        } else if (t[i] == '[') {
            size_t idx;
            if ((last && want_key) || !parse_index(tok, toklen, &idx)) goto out;
            i = skip_ws(t, n, i + 1);
            if (i >= n || t[i] == ']') goto out;
            for (size_t k = 0; k < idx; k++) {
                i = skip_value(t, n, i);
                if (i == FAIL) goto out;
                i = skip_ws(t, n, i);
                if (i >= n || t[i] != ',') goto out;
                i = skip_ws(t, n, i + 1);
            }
            if (i >= n || t[i] == ']') goto out;
        } else {
            goto out;
        }
    }
    if (*p == '\0' && !want_key && i < n) { *offset = i; rc = 0; }
out:
    free(tok);
    return rc;
}

int fg_jsonpos_find(const char *text, size_t len, const char *pointer, size_t *offset)
{
    return locate(text, len, pointer, false, 0, offset);
}

int fg_jsonpos_find_key(const char *text, size_t len, const char *pointer, int nth, size_t *offset)
{
    if (nth < 0) return -1;
    return locate(text, len, pointer, true, nth, offset);
}

int fg_jsonpos_line_break(const char *text, size_t len, size_t i)
{
    return i < len && (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= len || text[i + 1] != '\n')));
}

void fg_jsonpos_line_col(const char *text, size_t len, size_t offset, int *line, int *col)
{
    int l = 1;
    size_t line_start = 0;
    if (offset > len) offset = len;
    for (size_t i = 0; i < offset; i++) {
        if (fg_jsonpos_line_break(text, len, i)) {
            if (l < INT32_MAX) l++;
            line_start = i + 1;
        }
    }
    size_t c = offset - line_start + 1;
    *line = l;
    *col = c > INT32_MAX ? INT32_MAX : (int)c;
}

int fg_jsonpos_utf8_seq(const unsigned char *s, size_t n)
{
    if (n == 0) return 0;
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    int len;
    unsigned lo = 0x80, hi = 0xBF;      /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;        /* overlong */
        if (c == 0xED) hi = 0x9F;        /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;        /* overlong */
        if (c == 0xF4) hi = 0x8F;        /* past U+10FFFF */
    } else {
        return 0;
    }
    if (n < (size_t)len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (int k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xBF) return 0;
    return len;
}

/* ---- walk ------------------------------------------------------------------------------ */

typedef struct walk_buf {
    char *p;
    size_t len, cap;
    bool failed;
} walk_buf;

static void wb_put(walk_buf *b, const char *s, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->len + n + 1 > cap) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) { b->failed = true; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void wb_truncate(walk_buf *b, size_t len)
{
    if (b->failed) return;
    b->len = len;
    if (b->p) b->p[len] = '\0';
}

static void wb_index(walk_buf *b, size_t idx)
{
    char tmp[32];
    size_t k = sizeof tmp;
    tmp[--k] = '\0';
    do { tmp[--k] = (char)('0' + idx % 10); idx /= 10; } while (idx && k > 1);
    tmp[--k] = '/';
    wb_put(b, tmp + k, sizeof tmp - 1 - k);
}

/* Appends "/" and the key at *i (opening quote) as a pointer token; moves *i past it. */
static int wb_key(walk_buf *b, const char *t, size_t n, size_t *i)
{
    if (*i >= n || t[*i] != '"') return -1;
    size_t k = *i + 1;
    wb_put(b, "/", 1);
    for (;;) {
        unsigned char ch[4];
        int m = str_next(t, n, &k, ch);
        if (m < 0) return -1;
        if (m == 0) break;
        if (m == 1 && ch[0] == 0) wb_put(b, "\\u0000", 6);   /* no NUL in a C string */
        else if (m == 1 && ch[0] == '~') wb_put(b, "~0", 2);
        else if (m == 1 && ch[0] == '/') wb_put(b, "~1", 2);
        else wb_put(b, (const char *)ch, (size_t)m);
    }
    *i = k;
    return 0;
}

typedef struct walk_frame {
    char kind;        /* '{' or '[' */
    size_t index;     /* arrays: index of the current element */
    size_t plen;      /* pointer length of the container itself */
} walk_frame;

int fg_jsonpos_walk(const char *t, size_t n, int max_depth, fg_jsonpos_visit visit, void *ctx,
                    size_t *stop)
{
    walk_buf ptr = {0};
    walk_frame *stack = NULL;
    size_t depth = 0, cap = 0;
    int rc = -1;
    size_t i = skip_ws(t, n, 0);
    enum { VALUE, AFTER, KEY } state = VALUE;

    wb_put(&ptr, "", 0);
    for (;;) {
        if (ptr.failed) goto out;
        if (state == VALUE) {
            if (i >= n) goto out;
            char c = t[i];
            if (c == '{' || c == '[') {
                if (max_depth >= 0 && depth >= (size_t)max_depth) goto out;
                if (depth == cap) {
                    size_t ncap = cap ? cap * 2 : 16;
                    walk_frame *ns = realloc(stack, ncap * sizeof *ns);
                    if (!ns) goto out;
                    stack = ns;
                    cap = ncap;
                }
                stack[depth].kind = c;
                stack[depth].index = 0;
                stack[depth].plen = ptr.len;
                depth++;
                i = skip_ws(t, n, i + 1);
                if (i < n && t[i] == (c == '{' ? '}' : ']')) {
                    i++;
                    depth--;
                    state = AFTER;
                } else if (c == '{') {
                    state = KEY;
                } else {
                    wb_index(&ptr, 0);
                }
                continue;
            }
            if (c == '"') {
                size_t j = skip_string(t, n, i);
                if (j == FAIL) goto out;
                if (visit) visit(ctx, FG_JSONPOS_STRING, ptr.p, i + 1, j - i - 2);
                i = j;
            } else {
                size_t j = skip_value(t, n, i);
                if (j == FAIL) goto out;
                if (c == '-' || (c >= '0' && c <= '9'))
                    if (visit) visit(ctx, FG_JSONPOS_NUMBER, ptr.p, i, j - i);
                i = j;
            }
            state = AFTER;
        } else if (state == AFTER) {
            i = skip_ws(t, n, i);
            if (depth == 0) { rc = i == n ? 0 : -1; goto out; }
            walk_frame *f = &stack[depth - 1];
            wb_truncate(&ptr, f->plen);
            if (i >= n) goto out;
            if (t[i] == ',') {
                i = skip_ws(t, n, i + 1);
                if (f->kind == '{') {
                    state = KEY;
                } else {
                    f->index++;
                    wb_index(&ptr, f->index);
                    state = VALUE;
                }
            } else if (t[i] == (f->kind == '{' ? '}' : ']')) {
                i++;
                depth--;
            } else {
                goto out;
            }
        } else { /* KEY */
            size_t key_at = i;
            if (wb_key(&ptr, t, n, &i) != 0 || ptr.failed) goto out;
            if (visit) visit(ctx, FG_JSONPOS_KEY, ptr.p, key_at + 1, i - key_at - 2);
            i = skip_ws(t, n, i);
            if (i >= n || t[i] != ':') goto out;
            i = skip_ws(t, n, i + 1);
            state = VALUE;
        }
    }
out:
    if (stop) *stop = i > n ? n : i;
    free(stack);
    free(ptr.p);
    return rc;
}

/* ---- what a syntax error expected ---------------------------------------------------------- */

enum {
    JP__VALUE,          /* a value (after ':' or an array's ',') */
    JP__FIRST_KEY,      /* after '{': a key or '}' */
    JP__KEY,            /* after an object's ',': a key */
    JP__COLON,          /* after a key */
    JP__OBJ_NEXT,       /* after a member's value: ',' or '}' */
    JP__FIRST_ITEM,     /* after '[': a value or ']' */
    JP__ARR_NEXT,       /* after an item: ',' or ']' */
    JP__END             /* after the top-level value */
};

static const char *jp__phrase(int state, size_t depth)
{
    switch (state) {
    case JP__VALUE: return depth ? "a value (object, array, string, number, true, false or null)"
                                 : "a JSON object ('{')";
    case JP__FIRST_KEY: return "a key in double quotes or '}'";
    case JP__KEY: return "a key in double quotes after ','";
    case JP__COLON: return "':' after the key";
    case JP__OBJ_NEXT: return "',' or '}' after the value";
    case JP__FIRST_ITEM: return "a value or ']'";
    case JP__ARR_NEXT: return "',' or ']' after the value";
    default: return "nothing more after the JSON value";
    }
}

/* Length of the JSON number at s[0..n), or 0 when there is none. */
static size_t jp__number(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return 0;
    if (i < n && s[i] == '.') {
        size_t f = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == f) return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        size_t e = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
        if (i == e) return 0;
    }
    return i;
}

const char *fg_jsonpos_expected(const char *text, size_t len, size_t at)
{
    char stack[64];
    size_t depth = 0, i = 0;
    int state = JP__VALUE;
    if (!text || at > len) return NULL;
    for (;;) {
        while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) i++;
        int value_ok = state == JP__VALUE || state == JP__FIRST_ITEM;
        if (i >= at || i >= len) {
            if (i > at) return NULL;   /* at is inside white space we cannot place */
            if (i >= len) return jp__phrase(state, depth);
            /* the token at `at` must not fit: then the fault lies elsewhere */
            char c = text[i];
            if (value_ok && (c == '{' || c == '[' || c == '"' || jp__number(text + i, len - i))) return NULL;
            if (value_ok && ((len - i >= 4 && (memcmp(text + i, "true", 4) == 0 || memcmp(text + i, "null", 4) == 0)) ||
                             (len - i >= 5 && memcmp(text + i, "false", 5) == 0)))
                return NULL;
            if ((state == JP__FIRST_KEY || state == JP__KEY) && c == '"') return NULL;
            if ((state == JP__FIRST_KEY && c == '}') || (state == JP__FIRST_ITEM && c == ']')) return NULL;
            if (state == JP__COLON && c == ':') return NULL;
            if ((state == JP__OBJ_NEXT && (c == ',' || c == '}')) || (state == JP__ARR_NEXT && (c == ',' || c == ']')))
                return NULL;
            return jp__phrase(state, depth);
        }
        size_t start = i;
        char c = text[i];
        if (value_ok && (c == '{' || c == '[')) {
            if (depth == sizeof stack) return NULL;
            stack[depth++] = c;
            state = c == '{' ? JP__FIRST_KEY : JP__FIRST_ITEM;
            i++;
            continue;
        }
        if ((state == JP__FIRST_KEY && c == '}') || (state == JP__OBJ_NEXT && c == '}') ||
            (state == JP__FIRST_ITEM && c == ']') || (state == JP__ARR_NEXT && c == ']')) {
            depth--;
            i++;
        } else if (state == JP__COLON && c == ':') {
            state = JP__VALUE;
            i++;
            continue;
        } else if (state == JP__OBJ_NEXT && c == ',') {
            state = JP__KEY;
            i++;
            continue;
        } else if (state == JP__ARR_NEXT && c == ',') {
            state = JP__VALUE;
            i++;
            continue;
        } else if (c == '"' && (value_ok || state == JP__FIRST_KEY || state == JP__KEY)) {
            /* a string; raw control bytes are let through as the parser does, so that the place
             * found is the parser's */
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\') i++;
            if (i >= len) return NULL;
            i++;
            if (start < at && i > at) return NULL;
            if (state == JP__FIRST_KEY || state == JP__KEY) {
                state = JP__COLON;
                continue;
            }
        } else if (value_ok) {
            size_t n = jp__number(text + i, len - i);
            if (!n && len - i >= 4 && (memcmp(text + i, "true", 4) == 0 || memcmp(text + i, "null", 4) == 0)) n = 4;
            if (!n && len - i >= 5 && memcmp(text + i, "false", 5) == 0) n = 5;
            if (!n) return NULL;   /* not a value, before `at` */
            i += n;
            if (start < at && i > at) return NULL;
        } else {
            return NULL;   /* a token that does not fit, before `at` */
        }
        /* a value ended */
        state = depth == 0 ? JP__END : stack[depth - 1] == '{' ? JP__OBJ_NEXT : JP__ARR_NEXT;
    }
}
