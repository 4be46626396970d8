/* out.h - writing generated files safely. A run collects every file in an fg_out set first;
 * nothing touches the disk until fg_out_commit, which writes each file to a temporary name in
 * the same folder and renames it into place, skipping files whose bytes are unchanged (so nvcc
 * does not rebuild them). Paths are relative to the output folder and may not escape it. */
#ifndef FUSEGEN_OUT_H
#define FUSEGEN_OUT_H
#include <stddef.h>

#include "arena.h"
#include "diag.h"

typedef struct fg_out_file {
    const char *rel_path;     /* "example/example.h"; no "..", not absolute */
    const char *data; size_t len;
} fg_out_file;

typedef struct fg_out {
    fg_arena *arena;
    fg_out_file *files; size_t n_files, cap;
    const char **deps; size_t n_deps, deps_cap;   /* inputs read (spec, templates) for the depfile */
} fg_out;

void fg_out_init(fg_out *o, fg_arena *a);
/* Adds a file (data copied into the arena). Returns -1 on a bad path or duplicate, reported to d. */
int fg_out_add(fg_out *o, const char *rel_path, const char *data, size_t len, fg_diag *d);
/* Records an input file for the depfile (deduplicated). */
void fg_out_dep(fg_out *o, const char *path);
/* Writes every file under dir (created if missing, with parents of rel paths), atomically and
 * only when changed: all changed files go to temporary files first, then are renamed into place,
 * so a failed write leaves the previous files untouched. Folders under dir are opened without
 * following symbolic links. When depfile_path is not NULL, also writes a Make-style depfile there
 * (a path as given: absolute or relative to the current folder, NOT relative to dir) naming every
 * output file (dir/rel_path) as a target of every dep; it too is replaced only when changed.
 * The depfile is staged with the files and renamed last. Returns 0, or -1 after an I/O error
 * reported to stderr; then the folders this call created are removed again when empty (files
 * already renamed stay: that takes a rename failing after another one succeeded). */
int fg_out_commit(const fg_out *o, const char *dir, const char *depfile_path);

/* After a commit: in each folder under dir that holds an output file, removes the regular files
 * that this output does not hold and that begin with `banner` (files an earlier run generated:
 * a kernel since removed from the spec, or left out by --only). Nothing else is touched; a file
 * that cannot be removed is reported on stderr. Returns the number of files removed, or -1
 * after an error. */
int fg_out_prune(const fg_out *o, const char *dir, const char *banner);

#endif
