/* buf.h - growable byte buffer for emitted text. Allocation failure sticks (failed = 1) and
 * later appends do nothing, so callers check once at the end. */
#ifndef FUSEGEN_BUF_H
#define FUSEGEN_BUF_H
#include <stddef.h>

typedef struct fg_buf {
    char *data;     /* NUL-terminated while not failed */
    size_t len, cap;
    int failed;
} fg_buf;

void fg_buf_init(fg_buf *b);
void fg_buf_append(fg_buf *b, const char *s, size_t n);
void fg_buf_puts(fg_buf *b, const char *s);
void fg_buf_printf(fg_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void fg_buf_free(fg_buf *b);

#endif
