/* buf.c - see buf.h. */
#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fg_buf_init(fg_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->failed = 0;
}

/* Makes room for n more bytes plus the terminating NUL; sets failed when it cannot. */
static int fg_buf__reserve(fg_buf *b, size_t n)
{
    if (b->failed) return -1;
    if (n > SIZE_MAX - 1 - b->len) goto fail;
    size_t need = b->len + n + 1;
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) { cap = need; break; }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) goto fail;
    b->data = p;
    b->cap = cap;
    return 0;
fail:
    b->failed = 1;
    return -1;
}

void fg_buf_append(fg_buf *b, const char *s, size_t n)
{
    if (fg_buf__reserve(b, n) != 0) return;
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void fg_buf_puts(fg_buf *b, const char *s)
{
    fg_buf_append(b, s, strlen(s));
}

void fg_buf_printf(fg_buf *b, const char *fmt, ...)
{
    va_list ap;
    if (b->failed) return;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->failed = 1; return; }
    if (fg_buf__reserve(b, (size_t)n) != 0) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void fg_buf_free(fg_buf *b)
{
    free(b->data);
    fg_buf_init(b);
}
