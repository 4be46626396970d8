/* tmplsrc.h - where the emitter's templates come from, passed to it as an argument: a folder
 * on disk (the command line's --templates and its fallbacks), or a table of templates built
 * into the program (the runtime's JIT, which must not depend on files at run time). */
#ifndef FUSEGEN_TMPLSRC_H
#define FUSEGEN_TMPLSRC_H
#include <stddef.h>

#include "arena.h"

/* One template: its path relative to the template folder ("common/fusegen_sm80.cuh"). */
typedef struct fg_tmplsrc_file {
    const char *rel_path;
    const unsigned char *data;
    size_t len;
} fg_tmplsrc_file;

/* Either dir (files NULL) or files/n_files (dir NULL). */
typedef struct fg_tmplsrc {
    const char *dir;
    const fg_tmplsrc_file *files;
    size_t n_files;
} fg_tmplsrc;

fg_tmplsrc fg_tmplsrc_dir(const char *dir);
fg_tmplsrc fg_tmplsrc_table(const fg_tmplsrc_file *files, size_t n);

/* Reads template rel into the arena (NUL-terminated; *len without the NUL). *where gets a name
 * for messages: the file's path, or "<built-in>/rel"; *on_disk is 1 for a file (a build
 * dependency). Returns NULL with errno set (ENOENT: no such template; EFBIG: over max_bytes;
 * ENOMEM; or the error of reading the file). */
const char *fg_tmplsrc_read(const fg_tmplsrc *src, fg_arena *a, const char *rel, size_t max_bytes, size_t *len,
                            const char **where, int *on_disk);

#endif
