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
    const char *prune_banner;   /* set by fg_out_add_manifests: what a file to prune begins with */
} fg_out;

/* The manifest fg_out_add_manifests puts into each library folder: the names of the files this
 * generator wrote there, so that a later run removes only those (and never a user's file). */
#define FG_OUT_MANIFEST "fusegen_manifest.txt"
#define FG_OUT_MANIFEST_HEADER \
    "# fusegen: the files fusegen generated into this folder, one a line; a later `fusegen generate`\n" \
    "# removes those it no longer writes (when they still begin with its banner). DO NOT EDIT.\n"

void fg_out_init(fg_out *o, fg_arena *a);
/* Adds a file (data copied into the arena). Returns -1 on a bad path or duplicate, reported to d. */
int fg_out_add(fg_out *o, const char *rel_path, const char *data, size_t len, fg_diag *d);
/* Records an input file for the depfile (deduplicated). */
void fg_out_dep(fg_out *o, const char *path);
/* Adds an FG_OUT_MANIFEST to every folder under the output folder that holds files of this set
 * (not to the output folder itself, which is the user's), naming those files in the order they
 * were added, and makes fg_out_commit prune those folders: it removes the files that the
 * manifest already there names, that this set does not hold, and that still begin with
 * `banner` (a kernel since removed from the spec, or left out by --only), printing one line per
 * removed file on stdout. Nothing a manifest does not name is ever removed. Call it once, after
 * the last fg_out_add. Returns -1 after an error reported to d. */
int fg_out_add_manifests(fg_out *o, const char *banner, fg_diag *d);
/* Writes every file under dir (created if missing, with parents of rel paths), atomically and
 * only when changed. The output folder is locked (flock) for the whole call, so that runs into
 * one folder take turns (a run that waits says so on stderr). First every obstacle is looked
 * for and all are reported (a file or link where a folder goes, a folder where a file goes); then
 * all changed files go to temporary files; only when every one is written are they renamed into
 * place, so a failed write leaves the previous files untouched. Folders under dir are opened
 * without following symbolic links, one at a time (no descriptor is held per folder). When
 * depfile_path is not NULL, also writes a Make-style depfile there (a path as given: absolute or
 * relative to the current folder, NOT relative to dir) naming every output file (dir/rel_path)
 * as a target of every dep; it too is replaced only when changed, and it may not be a folder,
 * one of the deps (the spec, a template) or one of the output files. The depfile is staged with
 * the files and renamed last. Then the folders with a manifest are pruned (see
 * fg_out_add_manifests). Returns 0, or -1 after an error reported to stderr; then the folders this
 * call created are removed again when empty (files already renamed stay: that takes a rename
 * failing after another one succeeded). */
int fg_out_commit(const fg_out *o, const char *dir, const char *depfile_path);
/* fg_out_commit that also says which files it wrote: changed (o->n_files entries, or NULL)
 * gets 1 for each file whose bytes differed from the file on disk (or that was missing), 0 for
 * each one left as it was. */
int fg_out_commit_changed(const fg_out *o, const char *dir, const char *depfile_path, unsigned char *changed);

#endif
