/* tmplsrc.h - where the emitter's templates come from. The command line reads them from a
 * folder (--templates and its fallbacks). A program that must not depend on files at run time
 * (the runtime's JIT, runtime/fusegen_jit.h) registers a table of templates built into it and
 * passes FG_TMPLSRC_EMBEDDED as the template folder: emit.c opens its templates through
 * fg_tmplsrc_fopen (emit.c is compiled with tmplsrc_hook.h forced in, which routes its fopen
 * calls here), and a path under FG_TMPLSRC_EMBEDDED is served from memory. Every other path
 * goes to fopen unchanged, so the command line behaves as before. */
#ifndef FUSEGEN_TMPLSRC_H
#define FUSEGEN_TMPLSRC_H
#include <stddef.h>
#include <stdio.h>

/* The folder name that stands for the registered templates. It starts with a control
 * character, which no real folder name given to fusegen does (out.c refuses such paths). */
#define FG_TMPLSRC_EMBEDDED "\001fusegen-embedded-templates"

/* One template: its path relative to the template folder ("common/fusegen_sm80.cuh"). */
typedef struct fg_tmplsrc_file {
    const char *rel_path;
    const unsigned char *data;
    size_t len;
} fg_tmplsrc_file;

/* Registers the built-in templates (a table that lives as long as the program). Registering
 * the same table again is harmless; the last table registered is the one used. */
void fg_tmplsrc_register(const fg_tmplsrc_file *files, size_t n);

/* The registered template at rel_path, or NULL. */
const fg_tmplsrc_file *fg_tmplsrc_find(const char *rel_path);

/* fopen, except that "FG_TMPLSRC_EMBEDDED/<rel>" opens the registered template <rel> for
 * reading (fmemopen); such a path with no registered template fails with ENOENT. */
FILE *fg_tmplsrc_fopen(const char *path, const char *mode);

#endif
