/* diag.h - diagnostics collected in a context, counted, capped, printed GNU style:
 *   FILE:LINE:COL: error: /json/pointer: message
 * Stages report into an fg_diag and the driver checks fg_diag_errors() at each stage boundary. */
#ifndef FUSEGEN_DIAG_H
#define FUSEGEN_DIAG_H
#include <stddef.h>
#include <stdio.h>

#define FG_DIAG_MAX_ERRORS 100   /* more than this are counted but not printed */
#define FG_DIAG_TOKEN_MAX 64     /* a longer token of a printed JSON pointer is cut ("...") */

typedef struct fg_diag {
    FILE *out;                 /* where messages go (stderr by default) */
    const char *file;          /* path printed before each message */
    const char *text;          /* the spec's bytes, to find line:col of a JSON pointer */
    size_t text_len;
    int errors;                /* all errors, printed or not */
    int printed;
    int last_printed;          /* the latest error was printed (so its notes are too) */
} fg_diag;

void fg_diag_init(fg_diag *d, FILE *out);
/* Sets the file (and its text, may be NULL) that following messages refer to. */
void fg_diag_set_source(fg_diag *d, const char *file, const char *text, size_t len);
/* Error at a JSON pointer ("" for the document root, NULL for none). line:col is looked up
 * in the current text; when the pointer cannot be located the message prints without it. The
 * pointer prints with tokens over FG_DIAG_TOKEN_MAX bytes cut. */
void fg_diag_error(fg_diag *d, const char *pointer, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Error at an explicit 1-based line:col (syntax errors); line 0 means unknown. */
void fg_diag_error_at(fg_diag *d, int line, int col, const char *pointer, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
/* Error at the key (not the value) that the last token of pointer names, taking its nth
 * (0-based) occurrence in the object: for unknown and duplicate keys. The pointer printed is
 * the member's pointer. Falls back to the enclosing object's position, then to none. */
void fg_diag_error_key(fg_diag *d, const char *pointer, int nth, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* A note attached to the error reported just before ("FILE:LINE:COL: note: ..."), e.g. where
 * the first of two duplicates is. Not counted; printed only when that error was printed. */
void fg_diag_note(fg_diag *d, const char *pointer, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void fg_diag_note_key(fg_diag *d, const char *pointer, int nth, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Makes s[0..n) safe to print inside quotes in a message: printable ASCII and well-formed
 * UTF-8 as is, the backslash as \\, other bytes as \xNN; cut with "..." when longer than
 * fits in FG_DIAG_QUOTE_SIZE bytes. Returns dst. */
#define FG_DIAG_QUOTE_SIZE 80
char *fg_diag_quote(char dst[FG_DIAG_QUOTE_SIZE], const char *s, size_t n);
int fg_diag_errors(const fg_diag *d);
/* Prints "N errors" summary when more than FG_DIAG_MAX_ERRORS were suppressed. */
void fg_diag_finish(fg_diag *d);

#endif
