/* diag.c - see diag.h. Messages are formatted into memory first and printed in one piece, with
 * control bytes and malformed UTF-8 escaped, so hostile input cannot garble the terminal or
 * split a diagnostic over several lines. */
#include "diag.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jsonpos.h"

void fg_diag_init(fg_diag *d, FILE *out)
{
    memset(d, 0, sizeof *d);
    d->out = out ? out : stderr;
}

void fg_diag_set_source(fg_diag *d, const char *file, const char *text, size_t len)
{
    d->file = file;
    d->text = text;
    d->text_len = text ? len : 0;
}

int fg_diag_errors(const fg_diag *d) { return d->errors; }

/* Writes s[0..n) to f, escaping what would not print as one line of text. With quote_bs the
 * backslash is doubled too, so the \xNN escapes stay unambiguous. */
static size_t safe_len(const char *s, size_t n, size_t k, char esc[5], bool quote_bs)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[k];
    if (c == '\\' && quote_bs) { memcpy(esc, "\\\\", 3); return 0; }
    if (c >= 0x20 && c < 0x7F) return 1;
    if (c >= 0x80) {
        int m = fg_jsonpos_utf8_seq(u + k, n - k);
        if (m > 0) return (size_t)m;
    }
    static const char hex[] = "0123456789abcdef";
    esc[0] = '\\'; esc[1] = 'x'; esc[2] = hex[c >> 4]; esc[3] = hex[c & 15]; esc[4] = '\0';
    return 0;
}

static void print_safe(FILE *f, const char *s, size_t n)
{
    size_t k = 0;
    while (k < n) {
        char esc[5];
        size_t m = safe_len(s, n, k, esc, false);
        if (m == 0) { fputs(esc, f); k++; }
        else { fwrite(s + k, 1, m, f); k += m; }
    }
}

/* Prints a JSON pointer with each token longer than FG_DIAG_TOKEN_MAX bytes cut to about that
 * many (at a character boundary, never inside a ~0/~1 escape) and marked "...", so that a key of
 * a megabyte makes a line of normal length. */
static void print_pointer(FILE *f, const char *p)
{
    while (*p) {
        size_t n = 1 + strcspn(p + 1, "/");       /* the '/' and the token */
        if (n - 1 <= FG_DIAG_TOKEN_MAX) {
            print_safe(f, p, n);
        } else {
            size_t k = 1;
            while (k < n && k - 1 < FG_DIAG_TOKEN_MAX - 3) {
                size_t m = 1;
                if (p[k] == '~' && k + 1 < n) m = 2;
                else if ((unsigned char)p[k] >= 0x80) {
                    int u = fg_jsonpos_utf8_seq((const unsigned char *)p + k, n - k);
                    m = u > 0 ? (size_t)u : 1;
                }
                if (k - 1 + m > FG_DIAG_TOKEN_MAX - 3) break;
                k += m;
            }
            print_safe(f, p, k);
            fputs("...", f);
        }
        p += n;
    }
}

char *fg_diag_quote(char dst[FG_DIAG_QUOTE_SIZE], const char *s, size_t n)
{
    size_t o = 0, k = 0;
    const size_t room = FG_DIAG_QUOTE_SIZE - 4;   /* keep space for "..." and NUL */
    if (!s) n = 0;
    while (k < n) {
        char esc[5];
        size_t m = safe_len(s, n, k, esc, true);
        const char *piece = m ? s + k : esc;
        size_t plen = m ? m : strlen(esc);
        if (o + plen > room) {
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(dst + o, piece, plen);
        o += plen;
        k += m ? m : 1;
    }
    dst[o] = '\0';
    return dst;
}

static void emit(fg_diag *d, const char *severity, int line, int col, const char *pointer,
                 const char *fmt, va_list ap)
{
    char small[512];
    char *msg = small;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        n = 0;
        small[0] = '\0';
    } else if ((size_t)n >= sizeof small) {
        char *big = malloc((size_t)n + 1);
        if (big) {
            vsnprintf(big, (size_t)n + 1, fmt, ap2);
            msg = big;
        } else {
            n = (int)sizeof small - 1;
        }
    }
    va_end(ap2);

    FILE *f = d->out ? d->out : stderr;
    const char *file = d->file ? d->file : "fusegen";
    print_safe(f, file, strlen(file));
    if (line > 0) fprintf(f, ":%d:%d", line, col);
    fprintf(f, ": %s: ", severity);
    if (pointer && *pointer) {
        print_pointer(f, pointer);
        fputs(": ", f);
    }
    print_safe(f, msg, (size_t)n);
    fputc('\n', f);
    if (msg != small) free(msg);
}

/* line:col of pointer (its key when key_nth >= 0); 0:0 when it cannot be found. */
static void locate(const fg_diag *d, const char *pointer, int key_nth, int *line, int *col)
{
    size_t off;
    *line = 0;
    *col = 0;
    if (!d->text || !pointer) return;
    int rc;
    if (key_nth >= 0) {
        rc = fg_jsonpos_find_key(d->text, d->text_len, pointer, key_nth, &off);
        if (rc != 0) {
            /* fall back to the enclosing object */
            const char *slash = strrchr(pointer, '/');
            size_t plen = slash ? (size_t)(slash - pointer) : 0;
            char *parent = malloc(plen + 1);
            if (!parent) return;
            memcpy(parent, pointer, plen);
            parent[plen] = '\0';
            rc = fg_jsonpos_find(d->text, d->text_len, parent, &off);
            free(parent);
        }
    } else {
        rc = fg_jsonpos_find(d->text, d->text_len, pointer, &off);
    }
    if (rc == 0) fg_jsonpos_line_col(d->text, d->text_len, off, line, col);
}

static bool count_error(fg_diag *d)
{
    if (d->errors < 0x7fffffff) d->errors++;
    d->last_printed = d->printed < FG_DIAG_MAX_ERRORS;
    if (d->last_printed) d->printed++;
    return d->last_printed;
}

void fg_diag_error(fg_diag *d, const char *pointer, const char *fmt, ...)
{
    if (!count_error(d)) return;
    int line, col;
    locate(d, pointer, -1, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    emit(d, "error", line, col, pointer, fmt, ap);
    va_end(ap);
}

void fg_diag_error_key(fg_diag *d, const char *pointer, int nth, const char *fmt, ...)
{
    if (!count_error(d)) return;
    int line, col;
    locate(d, pointer, nth < 0 ? 0 : nth, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    emit(d, "error", line, col, pointer, fmt, ap);
    va_end(ap);
}

void fg_diag_error_at(fg_diag *d, int line, int col, const char *pointer, const char *fmt, ...)
{
    if (!count_error(d)) return;
    va_list ap;
    va_start(ap, fmt);
    emit(d, "error", line, line > 0 ? col : 0, pointer, fmt, ap);
    va_end(ap);
}

void fg_diag_note(fg_diag *d, const char *pointer, const char *fmt, ...)
{
    if (!d->last_printed) return;
    int line, col;
    locate(d, pointer, -1, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    emit(d, "note", line, col, pointer, fmt, ap);
    va_end(ap);
}

void fg_diag_note_key(fg_diag *d, const char *pointer, int nth, const char *fmt, ...)
{
    if (!d->last_printed) return;
    int line, col;
    locate(d, pointer, nth < 0 ? 0 : nth, &line, &col);
    va_list ap;
    va_start(ap, fmt);
    emit(d, "note", line, col, pointer, fmt, ap);
    va_end(ap);
}

void fg_diag_finish(fg_diag *d)
{
    if (d->errors <= d->printed) return;
    FILE *f = d->out ? d->out : stderr;
    const char *file = d->file ? d->file : "fusegen";
    print_safe(f, file, strlen(file));
    fprintf(f, ": error: too many errors (%d in all), the rest not shown\n", d->errors);
}
