/* test_buf.c - the growable byte buffer. */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "harness.h"

int main(void)
{
    fg_buf b;
    fg_buf_init(&b);
    TH_CHECK(b.len == 0 && b.failed == 0);

    fg_buf_puts(&b, "hello");
    TH_STREQ(b.data, "hello");
    TH_CHECK(b.len == 5);

    fg_buf_append(&b, ", world!!", 7);
    TH_STREQ(b.data, "hello, world");
    TH_CHECK(b.len == 12);

    fg_buf_printf(&b, " %d-%s-%03d", 42, "x", 7);
    TH_STREQ(b.data, "hello, world 42-x-007");

    fg_buf_append(&b, "", 0);
    TH_CHECK(b.len == 21 && b.data[21] == '\0');

    /* Embedded NUL bytes are kept; the buffer stays NUL-terminated after them. */
    fg_buf_append(&b, "a\0b", 3);
    TH_CHECK(b.len == 24 && memcmp(b.data + 21, "a\0b", 3) == 0 && b.data[24] == '\0');
    fg_buf_free(&b);
    TH_CHECK(b.data == NULL && b.len == 0 && b.cap == 0);

    /* Growth far beyond the first allocation, through both append and printf. */
    fg_buf_init(&b);
    for (int i = 0; i < 10000; i++) fg_buf_printf(&b, "%04d\n", i % 10000);
    TH_CHECK(b.len == 50000 && !b.failed);
    TH_CHECK(memcmp(b.data + 5 * 1234, "1234\n", 5) == 0);
    TH_CHECK(b.data[b.len] == '\0');
    fg_buf_free(&b);

    char big[5000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    fg_buf_init(&b);
    fg_buf_printf(&b, "<%s>", big);
    TH_CHECK(b.len == sizeof big + 1 && b.data[0] == '<' && b.data[b.len - 1] == '>' && b.data[1] == 'z');
    fg_buf_free(&b);

    /* A failed buffer ignores later appends. */
    fg_buf_init(&b);
    fg_buf_puts(&b, "keep");
    b.failed = 1;
    fg_buf_puts(&b, "more");
    fg_buf_printf(&b, "%s", "more");
    TH_CHECK(b.len == 4);
    fg_buf_free(&b);
    TH_CHECK(b.failed == 0);

    /* A request too large to represent fails instead of wrapping around. */
    fg_buf_init(&b);
    fg_buf_puts(&b, "x");
    fg_buf_append(&b, "y", (size_t)-1);
    TH_CHECK(b.failed == 1 && b.len == 1);
    fg_buf_free(&b);
    return th_report();
}
