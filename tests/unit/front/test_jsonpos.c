/* test_jsonpos.c - unit tests of jsonpos: pointer lookup, key lookup, line:col, UTF-8, walk. */
#include "front_test.h"
#include "jsonpos.h"

static const char doc[] =
    "{\n"
    "  \"a\": 1,\n"
    "  \"list\": [10, {\"x\": \"y\"}, [true, null]],\n"
    "  \"a/b\": \"slash\", \"m~n\": \"tilde\",\n"
    "  \"\\u0041\\n\": \"escaped key\",\n"
    "  \"dup\": 1, \"dup\": 2, \"str\": \"has } and ] and \\\" inside\", \"end\": -2.5e3\n"
    "}\n";

/* line:col of pointer's value, or 0:0 */
static void pos(const char *pointer, int *line, int *col)
{
    size_t off;
    *line = *col = 0;
    if (fg_jsonpos_find(doc, strlen(doc), pointer, &off) == 0) fg_jsonpos_line_col(doc, strlen(doc), off, line, col);
}

static int at(const char *pointer, int line, int col)
{
    int l, c;
    pos(pointer, &l, &c);
    if (l != line || c != col) fprintf(stderr, "  %s at %d:%d, expected %d:%d\n", pointer, l, c, line, col);
    return l == line && c == col;
}

static int key_at(const char *pointer, int nth, int line, int col)
{
    size_t off;
    int l = 0, c = 0;
    if (fg_jsonpos_find_key(doc, strlen(doc), pointer, nth, &off) == 0) fg_jsonpos_line_col(doc, strlen(doc), off, &l, &c);
    if (l != line || c != col) fprintf(stderr, "  key %s#%d at %d:%d, expected %d:%d\n", pointer, nth, l, c, line, col);
    return l == line && c == col;
}

static int absent(const char *pointer)
{
    size_t off;
    return fg_jsonpos_find(doc, strlen(doc), pointer, &off) != 0;
}

typedef struct seen {
    char log[4096];
    size_t len;
    int tokens;
} seen;

static int pointers_only;   /* record: log the pointer alone (for documents other than doc) */

static void record(void *ctx, fg_jsonpos_token kind, const char *pointer, size_t off, size_t n)
{
    seen *s = ctx;
    const char *k = kind == FG_JSONPOS_KEY ? "K" : kind == FG_JSONPOS_STRING ? "S" : "N";
    int w = pointers_only ? snprintf(s->log + s->len, sizeof s->log - s->len, "%s %s\n", k, pointer)
                          : snprintf(s->log + s->len, sizeof s->log - s->len, "%s %s %.*s\n", k, pointer, (int)n, doc + off);
    if (w > 0 && (size_t)w < sizeof s->log - s->len) s->len += (size_t)w;
    s->tokens++;
}

int main(void)
{
    /* values */
    CHECK(at("", 1, 1));
    CHECK(at("/a", 2, 8));
    CHECK(at("/list", 3, 11));
    CHECK(at("/list/0", 3, 12));
    CHECK(at("/list/1", 3, 16));
    CHECK(at("/list/1/x", 3, 22));
    CHECK(at("/list/2/1", 3, 35));
    CHECK(at("/a~1b", 4, 10));
    CHECK(at("/m~0n", 4, 26));
    CHECK(at("/A\n", 5, 15));
    CHECK(at("/dup", 6, 10));          /* the first of two */
    CHECK(at("/end", 6, 66));
    CHECK(absent("/nope"));
    CHECK(absent("/list/3"));
    CHECK(absent("/list/01"));
    CHECK(absent("/list/-"));
    CHECK(absent("/a/0"));
    CHECK(absent("/m~2n"));
    CHECK(absent("a"));
    CHECK(absent("/list/1/x/y"));

    /* keys */
    CHECK(key_at("/dup", 0, 6, 3));
    CHECK(key_at("/dup", 1, 6, 13));
    CHECK(key_at("/list/1/x", 0, 3, 17));
    size_t off;
    CHECK(fg_jsonpos_find_key(doc, strlen(doc), "/dup", 2, &off) != 0);
    CHECK(fg_jsonpos_find_key(doc, strlen(doc), "/list/0", 0, &off) != 0);
    CHECK(fg_jsonpos_find_key(doc, strlen(doc), "", 0, &off) != 0);

    /* line:col */
    int l, c;
    fg_jsonpos_line_col("ab\ncd\n\nx", 8, 7, &l, &c);
    CHECK(l == 4 && c == 1);
    fg_jsonpos_line_col("ab\ncd", 5, 4, &l, &c);
    CHECK(l == 2 && c == 2);
    fg_jsonpos_line_col("ab", 2, 99, &l, &c);   /* clamped */
    CHECK(l == 1 && c == 3);
    /* lone CR (classic Mac OS) ends a line too; CRLF counts once */
    fg_jsonpos_line_col("ab\rcd\r\rx", 8, 7, &l, &c);
    CHECK(l == 4 && c == 1);
    fg_jsonpos_line_col("ab\r\ncd\r\n\r\nx", 11, 10, &l, &c);
    CHECK(l == 4 && c == 1);
    fg_jsonpos_line_col("a\rb\r\nc\nd", 8, 7, &l, &c);
    CHECK(l == 4 && c == 1);
    fg_jsonpos_line_col("ab\r", 3, 3, &l, &c);   /* a CR at the very end */
    CHECK(l == 2 && c == 1);
    CHECK(fg_jsonpos_line_break("a\r", 2, 1) && !fg_jsonpos_line_break("a\r\n", 3, 1) &&
          fg_jsonpos_line_break("a\r\n", 3, 2) && !fg_jsonpos_line_break("a\r", 2, 2));

    /* UTF-8 */
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"a", 1) == 1);
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xc3\xa9", 2) == 2);
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xe2\x82\xac", 3) == 3);
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xf0\x9f\x98\x80", 4) == 4);
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xc0\x80", 2) == 0);      /* overlong */
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xe0\x80\x80", 3) == 0);  /* overlong */
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xed\xa0\x80", 3) == 0);  /* surrogate */
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xf4\x90\x80\x80", 4) == 0);  /* > U+10FFFF */
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xe2\x82", 2) == 0);      /* cut short */
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\xff", 1) == 0);
    CHECK(fg_jsonpos_utf8_seq((const unsigned char *)"\x80", 1) == 0);

    /* walk */
    seen s = {{0}, 0, 0};
    size_t stop = 0;
    CHECK(fg_jsonpos_walk(doc, strlen(doc), 32, record, &s, &stop) == 0);
    CHECK(stop == strlen(doc));
    CHECK(strstr(s.log, "K /a a\n") != NULL);
    CHECK(strstr(s.log, "N /a 1\n") != NULL);
    CHECK(strstr(s.log, "N /list/0 10\n") != NULL);
    CHECK(strstr(s.log, "K /list/1/x x\n") != NULL);
    CHECK(strstr(s.log, "S /list/1/x y\n") != NULL);
    CHECK(strstr(s.log, "S /a~1b slash\n") != NULL);
    CHECK(strstr(s.log, "S /m~0n tilde\n") != NULL);
    CHECK(strstr(s.log, "S /A\n escaped key\n") != NULL);
    CHECK(strstr(s.log, "N /end -2.5e3\n") != NULL);
    CHECK(s.tokens == 20);

    /* a key's U+0000 is in the pointer as the text \u0000, not a cut (which named another key) */
    {
        static const char nul_doc[] = "{\"a\\u0000b\": {\"c\": 1}, \"a\": 2}";
        seen s2 = {{0}, 0, 0};
        pointers_only = 1;
        CHECK(fg_jsonpos_walk(nul_doc, strlen(nul_doc), 32, record, &s2, NULL) == 0);
        pointers_only = 0;
        CHECK(strstr(s2.log, "K /a\\u0000b\n") != NULL);
        CHECK(strstr(s2.log, "K /a\\u0000b/c\n") != NULL);
        CHECK(strstr(s2.log, "K /a\n") != NULL);
    }

    /* walk failures: too deep, malformed (with where it stopped), empty */
    CHECK(fg_jsonpos_walk("[[[1]]]", 7, 2, NULL, NULL, NULL) != 0);
    CHECK(fg_jsonpos_walk("[[[1]]]", 7, 3, NULL, NULL, NULL) == 0);
    CHECK(fg_jsonpos_walk("{\"a\":1,}", 8, 32, NULL, NULL, &stop) != 0 && stop == 7);
    CHECK(fg_jsonpos_walk("{\"a\" 1}", 7, 32, NULL, NULL, &stop) != 0 && stop == 5);
    CHECK(fg_jsonpos_walk("", 0, 32, NULL, NULL, NULL) != 0);
    CHECK(fg_jsonpos_walk("[1] x", 5, 32, NULL, NULL, NULL) != 0);

    /* hostile input: deep nesting and unterminated text stay bounded and iterative */
    size_t deep = 200000;
    char *big = malloc(2 * deep + 1);
    if (big) {
        memset(big, '[', deep);
        memset(big + deep, ']', deep);
        big[2 * deep] = '\0';
        CHECK(fg_jsonpos_find(big, 2 * deep, "/0/0/0", &off) == 0 && off == 3);
        CHECK(fg_jsonpos_walk(big, 2 * deep, 32, NULL, NULL, NULL) != 0);
        CHECK(fg_jsonpos_walk(big, 2 * deep, -1, NULL, NULL, NULL) == 0);
        CHECK(fg_jsonpos_find(big, deep, "/1", &off) != 0);   /* never closed */
        free(big);
    }
    CHECK(fg_jsonpos_find("{\"a\": \"unterminated", 19, "/b", &off) != 0);
    CHECK(fg_jsonpos_find(NULL, 0, "", &off) != 0);

    /* what a syntax error expected at an offset */
#define EXPECTED(text, at) fg_jsonpos_expected(text, strlen(text), at)
#define SAME(a, b) ((a) && strcmp((a), (b)) == 0)
    CHECK(SAME(EXPECTED("{\"a\": 1 \"b\": 2}", 8), "',' or '}' after the value"));
    CHECK(SAME(EXPECTED("[1, 2 3]", 6), "',' or ']' after the value"));
    CHECK(SAME(EXPECTED("{\"a\" 1}", 5), "':' after the key"));
    CHECK(SAME(EXPECTED("{\"a\": [1], 3}", 11), "a key in double quotes after ','"));
    CHECK(SAME(EXPECTED("{\"a\": [", 7), "a value or ']'"));
    CHECK(SAME(EXPECTED("{\"a\": tru}", 6), "a value (object, array, string, number, true, false or null)"));
    CHECK(SAME(EXPECTED("x", 0), "a JSON object ('{')"));
    CHECK(EXPECTED("{\"a\": 1, \"b\": 2}", 8) == NULL);    /* ',' fits there */
    CHECK(EXPECTED("{\"a\": 123}", 7) == NULL);           /* inside a number */
    CHECK(EXPECTED("{\"a\" ]] 1, 2}", 12) == NULL);        /* a fault before the offset */
    CHECK(EXPECTED("{\"a\": 1", 20) == NULL);             /* past the end */
#undef SAME
#undef EXPECTED
    return ft_report();
}
