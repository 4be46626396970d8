/* jsonpos.h - positions in JSON text. cJSON keeps no positions, so diagnostics find the
 * line:col of a JSON pointer (RFC 6901) by scanning the original text with this module.
 * Everything here is iterative (no recursion), reads at most len bytes, and is safe on any
 * input; on text that is not JSON it fails cleanly (returns -1) rather than guessing far. */
#ifndef FUSEGEN_JSONPOS_H
#define FUSEGEN_JSONPOS_H
#include <stddef.h>

/* Byte offset of the value that pointer names ("" is the whole document). For an object
 * member the value is the one after the colon; the first occurrence of a duplicated key is
 * followed. Returns 0 and sets *offset, or -1 when the pointer does not name a value. */
int fg_jsonpos_find(const char *text, size_t len, const char *pointer, size_t *offset);

/* Byte offset of the opening quote of the key that the last token of pointer names, taking
 * the nth occurrence (0-based) of that key in its object (duplicate keys). Returns 0, or -1
 * when there is no such key (also when pointer is "" or its parent is an array). */
int fg_jsonpos_find_key(const char *text, size_t len, const char *pointer, int nth, size_t *offset);

/* Whether text[i] ends a line: a line feed, or a carriage return not followed by one (so
 * LF, CRLF and lone-CR files all count lines; CRLF counts once). */
int fg_jsonpos_line_break(const char *text, size_t len, size_t i);

/* 1-based line and 1-based byte column of offset (clamped to len); lines end as
 * fg_jsonpos_line_break says. */
void fg_jsonpos_line_col(const char *text, size_t len, size_t offset, int *line, int *col);

/* Length of the well-formed UTF-8 sequence at s[0..n) (1..4), or 0 when the bytes there are
 * not one (overlong forms, surrogates and code points past U+10FFFF are not well formed). */
int fg_jsonpos_utf8_seq(const unsigned char *s, size_t n);

/* Walk of every key, string and number of a document that a JSON parser accepted, with the
 * JSON pointer of each. For a key the pointer names the member it introduces (a key's U+0000,
 * which a C string cannot hold, is written as the six characters \u0000). off/n delimit the
 * raw token in text: for keys and strings, the bytes between the quotes (escapes not decoded). */
typedef enum { FG_JSONPOS_KEY, FG_JSONPOS_STRING, FG_JSONPOS_NUMBER } fg_jsonpos_token;
typedef void (*fg_jsonpos_visit)(void *ctx, fg_jsonpos_token kind, const char *pointer,
                                 size_t off, size_t n);
/* Returns 0, or -1 when the text is not well-formed enough to walk, nests deeper than
 * max_depth (< 0: no limit), or memory runs out (tokens before that point have been visited).
 * When stop is not NULL it receives the offset where the walk ended (where it failed). */
int fg_jsonpos_walk(const char *text, size_t len, int max_depth, fg_jsonpos_visit visit, void *ctx,
                    size_t *stop);

/* What JSON allows at byte offset `at`, found by scanning the tokens before it: a phrase such
 * as "',' or '}' after the value" or "a value or ']'", for a syntax error reported there.
 * Returns NULL when it cannot tell: the text before `at` is not a well-formed prefix, `at` falls
 * inside a token, or the token at `at` is one that would fit there (the fault lies further on). */
const char *fg_jsonpos_expected(const char *text, size_t len, size_t at);

#endif
