/* out.c - see out.h. Files are written through directory descriptors opened one component at
 * a time with O_NOFOLLOW, so a symbolic link planted inside the output folder cannot redirect a
 * write outside it; a link standing where a file goes is replaced, never followed. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE   /* flock */
#include "out.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "buf.h"

#define FG_OUT__MAX_PATH 1024     /* longest relative path accepted */

void fg_out_init(fg_out *o, fg_arena *a)
{
    memset(o, 0, sizeof *o);
    o->arena = a;
}

/* Why rel cannot name a file under the output folder, or NULL when it can. */
static const char *fg_out__bad_path(const char *rel)
{
    size_t n = strlen(rel);
    if (n == 0) return "the path is empty";
    if (n > FG_OUT__MAX_PATH) return "the path is too long";
    if (rel[0] == '/') return "absolute paths are not allowed";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)rel[i];
        if (c < 0x20 || c == 0x7f) return "the path contains a control character";
        if (c == '\\') return "the path contains a backslash";
    }
    const char *p = rel;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0) return "the path has an empty component";
        if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return "'.' and '..' components are not allowed";
        if (len > 255) return "a component of the path is too long";
        if (!slash) break;
        p = slash + 1;
    }
    return NULL;
}

int fg_out_add(fg_out *o, const char *rel_path, const char *data, size_t len, fg_diag *d)
{
    const char *why = fg_out__bad_path(rel_path);
    if (why) {
        fg_diag_error(d, NULL, "cannot emit '%s': %s", rel_path, why);
        return -1;
    }
    for (size_t i = 0; i < o->n_files; i++)
        if (strcmp(o->files[i].rel_path, rel_path) == 0) {
            fg_diag_error(d, NULL, "cannot emit '%s': the file is emitted twice", rel_path);
            return -1;
        }
    if (o->n_files == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        fg_out_file *files = fg_arena_alloc(o->arena, cap * sizeof *files);
        if (!files) goto oom;
        if (o->n_files) memcpy(files, o->files, o->n_files * sizeof *files);
        o->files = files;
        o->cap = cap;
    }
    char *path = fg_arena_strdup(o->arena, rel_path);
    char *copy = fg_arena_alloc(o->arena, len + 1);
    if (!path || !copy) goto oom;
    if (len) memcpy(copy, data, len);
    o->files[o->n_files].rel_path = path;
    o->files[o->n_files].data = copy;
    o->files[o->n_files].len = len;
    o->n_files++;
    return 0;
oom:
    fg_diag_error(d, NULL, "cannot emit '%s': out of memory", rel_path);
    return -1;
}

void fg_out_dep(fg_out *o, const char *path)
{
    for (size_t i = 0; i < o->n_deps; i++)
        if (strcmp(o->deps[i], path) == 0) return;
    if (o->n_deps == o->deps_cap) {
        size_t cap = o->deps_cap ? o->deps_cap * 2 : 16;
        const char **deps = fg_arena_alloc(o->arena, cap * sizeof *deps);
        if (!deps) return;
        if (o->n_deps) memcpy(deps, o->deps, o->n_deps * sizeof *deps);
        o->deps = deps;
        o->deps_cap = cap;
    }
    char *copy = fg_arena_strdup(o->arena, path);
    if (copy) o->deps[o->n_deps++] = copy;
}

/* ---- writing --------------------------------------------------------------------------- */

static void fg_out__io_error(const char *what, const char *path, int err)
{
    fprintf(stderr, "fusegen: error: %s '%s': %s\n", what, path, strerror(err));
}

/* The folders one commit created, so that a failed commit can take them away again (rmdir: only
 * while empty, so nothing that was there before is touched). */
typedef struct fg_out__created {
    char **paths;
    size_t n, cap;
} fg_out__created;

/* Records the folder path (NUL-terminated) just created; when it cannot (out of memory) it
 * removes the folder again and returns -1 after the error, so that no folder of ours is left
 * unrecorded. */
static int fg_out__created_add(fg_out__created *c, const char *path)
{
    size_t len = strlen(path);
    char *copy = malloc(len + 1);
    if (copy && c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        char **grown = realloc(c->paths, cap * sizeof *grown);
        if (grown) {
            c->paths = grown;
            c->cap = cap;
        }
    }
    if (!copy || c->n == c->cap) {
        free(copy);
        rmdir(path);
        fg_out__io_error("cannot create folder", path, ENOMEM);
        return -1;
    }
    memcpy(copy, path, len + 1);
    c->paths[c->n++] = copy;
    return 0;
}

/* Removes the recorded folders, newest first (children before parents), when undo is set, and
 * frees the record. */
static void fg_out__created_finish(fg_out__created *c, int undo)
{
    for (size_t i = c->n; i-- > 0;) {
        if (undo) rmdir(c->paths[i]);
        free(c->paths[i]);
    }
    free(c->paths);
    memset(c, 0, sizeof *c);
}

/* mkdir -p for a path given by the user (symbolic links in it are the user's choice); records
 * each folder it creates in created. */
static int fg_out__make_dirs(const char *path, fg_out__created *created)
{
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) {
        fg_out__io_error("cannot create folder", path, ENOMEM);
        return -1;
    }
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char saved = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) == 0) {
            if (fg_out__created_add(created, p) != 0) {
                free(p);
                return -1;
            }
        } else if (errno != EEXIST) {
            int err = errno;
            struct stat st;
            if (!(stat(p, &st) == 0 && S_ISDIR(st.st_mode))) {
                fg_out__io_error("cannot create folder", p, err);
                free(p);
                return -1;
            }
        }
        p[i] = saved;
    }
    free(p);
    return 0;
}

/* Compares the file `base` in dirfd with data; 1 when it holds exactly these bytes. */
static int fg_out__same(int dirfd, const char *base, const char *data, size_t len)
{
    int fd = openat(dirfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 0;
    struct stat st;
    int same = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 || (size_t)st.st_size != len)
        goto done;
    char chunk[65536];
    size_t at = 0;
    for (;;) {
        ssize_t r = read(fd, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) goto done;
        if (r == 0) break;
        if ((size_t)r > len - at || memcmp(chunk, data + at, (size_t)r) != 0) goto done;
        at += (size_t)r;
    }
    same = at == len;
done:
    close(fd);
    return same;
}

/* Writes data to a new temporary file in dirfd; its name goes to tmp (size tmp_size). */
static int fg_out__write_tmp(int dirfd, const char *data, size_t len, char *tmp, size_t tmp_size,
                             const char *shown)
{
    static unsigned long counter;
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(tmp, tmp_size, ".fusegen-%ld-%lu.tmp", (long)getpid(), ++counter);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        fg_out__io_error("cannot create a temporary file for", shown, errno);
        return -1;
    }
    size_t at = 0;
    while (at < len) {
        ssize_t w = write(fd, data + at, len - at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int err = w < 0 ? errno : EIO;
            close(fd);
            unlinkat(dirfd, tmp, 0);
            fg_out__io_error("cannot write", shown, err);
            return -1;
        }
        at += (size_t)w;
    }
    if (close(fd) != 0) {
        int err = errno;
        unlinkat(dirfd, tmp, 0);
        fg_out__io_error("cannot write", shown, err);
        return -1;
    }
    return 0;
}

/* A folder under the output folder that holds files of the set, while a commit runs. */
typedef struct fg_out__folder {
    const char *rel;          /* its path relative to the output folder: rel[0..rel_len) */
    size_t rel_len;
    size_t first, n;          /* its files: order[first .. first + n) */
    dev_t dev;                /* its identity, once phase 1 opened it */
    ino_t ino;
    int opened;
    int has_manifest;         /* the set holds an FG_OUT_MANIFEST for it */
    char *old_manifest;       /* the manifest there before this run (malloc), or NULL */
} fg_out__folder;

typedef struct fg_out__pending {
    char tmp[64];
    int written;              /* a temporary file exists and waits to be renamed */
} fg_out__pending;

/* One file's place in the sort by folder. */
typedef struct fg_out__entry {
    const char *rel;
    size_t dlen;              /* length of its folder part ("" for the output folder itself) */
    size_t index;             /* in o->files */
} fg_out__entry;

static size_t fg_out__dir_len(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    return slash ? (size_t)(slash - rel) : 0;
}

static const char *fg_out__base(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    return slash ? slash + 1 : rel;
}

/* By folder, then in the order the files were added. */
static int fg_out__entry_cmp(const void *pa, const void *pb)
{
    const fg_out__entry *a = pa, *b = pb;
    size_t n = a->dlen < b->dlen ? a->dlen : b->dlen;
    int c = memcmp(a->rel, b->rel, n);
    if (c != 0) return c;
    if (a->dlen != b->dlen) return a->dlen < b->dlen ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static void fg_out__join(fg_buf *b, const char *dir, const char *rel);

/* Opens the folder rel[0..n) under rootfd, never following links. With create set, creates the
 * folders that are missing and records each (as dir/rel...) in created; without, a missing
 * folder sets *missing and returns -1 with no message. Anything else in the way is reported. */
static int fg_out__open_dir(int rootfd, const char *rel, size_t n, const char *dir, fg_out__created *created,
                            int create, int *missing)
{
    int fd = rootfd;
    size_t at = 0;
    if (missing) *missing = 0;
    while (at < n) {
        size_t end = at;
        while (end < n && rel[end] != '/') end++;
        char comp[256];
        size_t len = end - at;
        memcpy(comp, rel + at, len);    /* components are at most 255 bytes (checked on add) */
        comp[len] = '\0';
        if (!create) {
            /* looked at only */
        } else if (mkdirat(fd, comp, 0777) == 0) {
            fg_buf made;
            fg_buf_init(&made);
            fg_out__join(&made, dir, "");
            fg_buf_append(&made, rel, end);
            int recorded = -1;
            if (!made.failed) {
                recorded = fg_out__created_add(created, made.data);
            } else {   /* not even the path: remove the folder by its parent */
                unlinkat(fd, comp, AT_REMOVEDIR);
                fprintf(stderr, "fusegen: error: cannot create folder '%s/%.*s': out of memory\n", dir, (int)end, rel);
            }
            fg_buf_free(&made);
            if (recorded != 0) goto fail;
        } else if (errno != EEXIST) {
            int err = errno;
            fprintf(stderr, "fusegen: error: cannot create folder '%s/%.*s': %s\n", dir, (int)end, rel,
                    strerror(err));
            goto fail;
        }
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            int err = errno;
            if (!create && err == ENOENT && missing) {
                *missing = 1;
                goto fail;
            }
            struct stat cst;
            const int link = fstatat(fd, comp, &cst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(cst.st_mode);
            fprintf(stderr, "fusegen: error: cannot open folder '%s/%.*s': %s\n", dir, (int)end, rel,
                    link ? "it is a symbolic link (links are not followed)"
                    : err == ELOOP || err == ENOTDIR ? "a file that is not a folder is in the way"
                                                     : strerror(err));
            goto fail;
        }
        if (fd != rootfd) close(fd);
        fd = next;
        at = end + 1;
    }
    return fd == rootfd ? fcntl(rootfd, F_DUPFD_CLOEXEC, 0) : fd;
fail:
    if (fd != rootfd) close(fd);
    return -1;
}

/* Appends path to b in Make syntax. Returns -1 when Make cannot express it. */
static int fg_out__make_escape(fg_buf *b, const char *path)
{
    for (const char *p = path; *p; p++) {
        if (*p == '\n' || *p == '\r') return -1;
        if (*p == ' ' || *p == '\t' || *p == '#') fg_buf_append(b, "\\", 1);
        if (*p == '$') fg_buf_append(b, "$", 1);
        fg_buf_append(b, p, 1);
    }
    return 0;
}

static void fg_out__join(fg_buf *b, const char *dir, const char *rel)
{
    size_t n = strlen(dir);
    fg_buf_append(b, dir, n);
    if (n && dir[n - 1] != '/') fg_buf_append(b, "/", 1);
    fg_buf_puts(b, rel);
}

/* The depfile, staged like the other files: its text in a temporary file next to it, renamed
 * into place with them. */
typedef struct fg_out__depfile {
    int dirfd;
    const char *base;
    char tmp[64];
    int written;
} fg_out__depfile;

/* Whether the depfile path, as it stands, is a folder or an input of the run (the spec, a
 * template: the depfile would replace it); reports it. */
static int fg_out__depfile_in_the_way(const fg_out *o, const char *depfile_path)
{
    struct stat dst, st;
    if (stat(depfile_path, &dst) != 0) return 0;
    if (S_ISDIR(dst.st_mode)) {
        fprintf(stderr, "fusegen: error: depfile '%s' is a folder (the output folder, or another): give it a file's "
                        "path, such as '%s.d'\n", depfile_path, depfile_path);
        return 1;
    }
    for (size_t i = 0; i < o->n_deps; i++)
        if (stat(o->deps[i], &st) == 0 && st.st_dev == dst.st_dev && st.st_ino == dst.st_ino) {
            fprintf(stderr, "fusegen: error: depfile '%s' is '%s', an input of this run (a spec or a template): "
                            "give the depfile a file of its own\n", depfile_path, o->deps[i]);
            return 1;
        }
    return 0;
}

/* Whether the depfile would replace one of the output files; reports it. Runs after phase 1
 * opened every output folder (their identities are known) and the depfile's folder. */
static int fg_out__depfile_clashes(const char *dir, const char *depfile_path, const fg_out__depfile *df,
                                   const fg_out__folder *folders, size_t n_folders, const fg_out__entry *order)
{
    struct stat dst;
    if (fstat(df->dirfd, &dst) != 0) return 0;
    for (size_t f = 0; f < n_folders; f++) {
        if (!folders[f].opened || folders[f].dev != dst.st_dev || folders[f].ino != dst.st_ino) continue;
        for (size_t k = folders[f].first; k < folders[f].first + folders[f].n; k++) {
            if (strcmp(fg_out__base(order[k].rel), df->base) != 0) continue;
            fprintf(stderr, "fusegen: error: depfile '%s' is the generated file '%s%s%s': give the depfile a file of "
                            "its own\n", depfile_path, dir, dir[strlen(dir) - 1] == '/' ? "" : "/", order[k].rel);
            return 1;
        }
    }
    return 0;
}

/* Writes the depfile's text to a temporary file in its folder (created if missing, recorded in
 * created), or nothing when the depfile already holds it. */
static int fg_out__stage_depfile(const fg_out *o, const char *dir, const char *depfile_path, fg_out__depfile *df,
                                 fg_out__created *created, const fg_out__folder *folders, size_t n_folders,
                                 const fg_out__entry *order)
{
    fg_buf text, target;
    int rc = -1;
    char *parent = NULL;
    struct stat st;
    fg_buf_init(&text);
    fg_buf_init(&target);
    df->dirfd = -1;
    df->written = 0;
    for (size_t i = 0; i < o->n_files; i++) {
        target.len = 0;
        fg_out__join(&target, dir, o->files[i].rel_path);
        if (target.failed) goto oom;
        if (i) fg_buf_puts(&text, " \\\n ");
        if (fg_out__make_escape(&text, target.data) != 0) goto bad_path;
    }
    fg_buf_puts(&text, ":");
    for (size_t i = 0; i < o->n_deps; i++) {
        fg_buf_puts(&text, " \\\n ");
        if (fg_out__make_escape(&text, o->deps[i]) != 0) goto bad_path;
    }
    fg_buf_puts(&text, "\n");
    if (text.failed) goto oom;

    const char *slash = strrchr(depfile_path, '/');
    df->base = slash ? slash + 1 : depfile_path;
    if (*df->base == '\0') {
        fprintf(stderr, "fusegen: error: depfile '%s' names a folder\n", depfile_path);
        goto out;
    }
    size_t plen = slash ? (size_t)(slash - depfile_path) : 0;
    parent = malloc(plen + 2);
    if (!parent) goto oom;
    if (slash && plen == 0) strcpy(parent, "/");
    else if (slash) { memcpy(parent, depfile_path, plen); parent[plen] = '\0'; }
    else strcpy(parent, ".");
    if (fg_out__make_dirs(parent, created) != 0) goto out;
    df->dirfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (df->dirfd < 0) {
        fg_out__io_error("cannot open folder", parent, errno);
        goto out;
    }
    if (fstatat(df->dirfd, df->base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "fusegen: error: depfile '%s' is a folder (the output folder, or another): give it a file's "
                        "path, such as '%s.d'\n", depfile_path, depfile_path);
        goto out;
    }
    if (fg_out__depfile_in_the_way(o, depfile_path) ||   /* again: phase 0 looked before folders were made */
        fg_out__depfile_clashes(dir, depfile_path, df, folders, n_folders, order))
        goto out;
    if (fg_out__same(df->dirfd, df->base, text.data, text.len)) {
        rc = 0;
        goto out;
    }
    if (fg_out__write_tmp(df->dirfd, text.data, text.len, df->tmp, sizeof df->tmp, depfile_path) != 0) goto out;
    df->written = 1;
    rc = 0;
    goto out;
bad_path:
    fprintf(stderr, "fusegen: error: cannot write depfile '%s': a path contains a line break\n", depfile_path);
    goto out;
oom:
    fg_out__io_error("cannot write", depfile_path, ENOMEM);
out:
    free(parent);
    fg_buf_free(&text);
    fg_buf_free(&target);
    return rc;
}

/* ---- manifests -------------------------------------------------------------------------- */

int fg_out_add_manifests(fg_out *o, const char *banner, fg_diag *d)
{
    const size_t n = o->n_files;   /* the manifests added below are not listed */
    fg_out__entry *order = n ? malloc(n * sizeof *order) : NULL;
    fg_buf text, rel;
    int rc = 0;
    fg_buf_init(&text);
    fg_buf_init(&rel);
    if (n && !order) goto oom;
    for (size_t i = 0; i < n; i++) {
        order[i].rel = o->files[i].rel_path;
        order[i].dlen = fg_out__dir_len(order[i].rel);
        order[i].index = i;
    }
    if (n) qsort(order, n, sizeof *order, fg_out__entry_cmp);
    for (size_t i = 0; i < n;) {
        size_t end = i + 1;
        while (end < n && order[end].dlen == order[i].dlen && memcmp(order[end].rel, order[i].rel, order[i].dlen) == 0)
            end++;
        if (order[i].dlen != 0) {   /* the output folder itself is the user's: no manifest, no pruning */
            text.len = 0;
            rel.len = 0;
            fg_buf_puts(&text, FG_OUT_MANIFEST_HEADER);
            for (size_t k = i; k < end; k++) {
                fg_buf_puts(&text, fg_out__base(order[k].rel));
                fg_buf_puts(&text, "\n");
            }
            fg_buf_append(&rel, order[i].rel, order[i].dlen);
            fg_buf_puts(&rel, "/" FG_OUT_MANIFEST);
            if (text.failed || rel.failed) goto oom;
            if (fg_out_add(o, rel.data, text.data, text.len, d) != 0) {
                rc = -1;
                break;
            }
        }
        i = end;
    }
    if (rc == 0) {
        o->prune_banner = fg_arena_strdup(o->arena, banner);
        if (!o->prune_banner) goto oom;
    }
    goto out;
oom:
    fg_diag_error(d, NULL, "cannot emit the manifests: out of memory");
    rc = -1;
out:
    free(order);
    fg_buf_free(&text);
    fg_buf_free(&rel);
    return rc;
}

#define FG_OUT__MAX_MANIFEST (1u << 20)

/* The manifest in dirfd (malloc'd, NUL-terminated), or NULL when there is none, it is not a
 * regular file, it is larger than any manifest fusegen writes, or it does not begin with the
 * header fusegen writes: then nothing is pruned there. */
static char *fg_out__read_manifest(int dirfd)
{
    int fd = openat(dirfd, FG_OUT_MANIFEST, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 || st.st_size > (off_t)FG_OUT__MAX_MANIFEST)
        goto fail;
    size_t want = (size_t)st.st_size, at = 0;
    text = malloc(want + 1);
    if (!text) goto fail;
    while (at < want) {
        ssize_t r = read(fd, text + at, want - at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        at += (size_t)r;
    }
    text[at] = '\0';
    if (at != want || strlen(text) != at || strncmp(text, FG_OUT_MANIFEST_HEADER, strlen(FG_OUT_MANIFEST_HEADER)) != 0)
        goto fail;
    close(fd);
    return text;
fail:
    free(text);
    close(fd);
    return NULL;
}

/* Whether the file `name` in dirfd is a regular file (not a link) that begins with banner. */
static int fg_out__has_banner(int dirfd, const char *name, const char *banner)
{
    char head[128];
    size_t want = strlen(banner);
    struct stat st;
    if (want > sizeof head || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return 0;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return 0;
    size_t got = 0;
    while (got < want) {
        ssize_t r = read(fd, head + got, want - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    return got == want && memcmp(head, banner, want) == 0;
}

/* Removes from folder f the files its old manifest names that this run does not write and
 * that still begin with the banner; one line on stdout for each. Returns -1 after an error. */
static int fg_out__prune_folder(const fg_out *o, int rootfd, const char *dir, const fg_out__folder *f,
                                const fg_out__entry *order)
{
    int missing = 0, rc = 0;
    int fd = fg_out__open_dir(rootfd, f->rel, f->rel_len, dir, NULL, 0, &missing);
    if (fd < 0) return missing ? 0 : -1;
    char *line = f->old_manifest + strlen(FG_OUT_MANIFEST_HEADER);
    while (*line) {
        char *nl = strchr(line, '\n');
        if (!nl) break;   /* a last line without its end is not ours */
        *nl = '\0';
        const char *name = line;
        line = nl + 1;
        if (strchr(name, '/') || fg_out__bad_path(name) || strcmp(name, FG_OUT_MANIFEST) == 0) continue;
        int kept = 0;
        for (size_t k = f->first; k < f->first + f->n && !kept; k++) kept = strcmp(fg_out__base(order[k].rel), name) == 0;
        if (kept || !fg_out__has_banner(fd, name, o->prune_banner)) continue;
        if (unlinkat(fd, name, 0) == 0) {
            printf("fusegen: removed '%s%s%.*s/%s' (an earlier run generated it; this run does not)\n", dir,
                   dir[strlen(dir) - 1] == '/' ? "" : "/", (int)f->rel_len, f->rel, name);
        } else if (errno != ENOENT) {
            fprintf(stderr, "fusegen: error: cannot remove the stale file '%s/%.*s/%s': %s\n", dir, (int)f->rel_len,
                    f->rel, name, strerror(errno));
            rc = -1;
        }
    }
    close(fd);
    return rc;
}

/* ---- commit ----------------------------------------------------------------------------- */

/* Locks the output folder for this run (flock, released when the process ends, however it
 * ends). Another run holding it is waited for, with one line on stderr. When the folder was
 * removed while this run waited (the other run failed and took away the folder it had made), it
 * is made and opened again. File systems without flock are written unlocked. */
static int fg_out__lock(int *rootfd, const char *dir, fg_out__created *created)
{
    int said = 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        if (flock(*rootfd, LOCK_EX | LOCK_NB) != 0) {
            if (errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS || errno == EINVAL) return 0;
            if (errno != EWOULDBLOCK && errno != EINTR) {
                fg_out__io_error("cannot lock the output folder", dir, errno);
                return -1;
            }
            if (!said) {
                fprintf(stderr, "fusegen: waiting for another fusegen run that writes into '%s'\n", dir);
                said = 1;
            }
            int r;
            while ((r = flock(*rootfd, LOCK_EX)) != 0 && errno == EINTR) {}
            if (r != 0) {
                fg_out__io_error("cannot lock the output folder", dir, errno);
                return -1;
            }
        }
        struct stat held, now;
        if (fstat(*rootfd, &held) == 0 && stat(dir, &now) == 0 && held.st_dev == now.st_dev && held.st_ino == now.st_ino)
            return 0;
        close(*rootfd);
        *rootfd = -1;
        if (fg_out__make_dirs(dir, created) != 0) return -1;
        *rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (*rootfd < 0) {
            fg_out__io_error("cannot open output folder", dir, errno);
            return -1;
        }
    }
    fprintf(stderr, "fusegen: error: the output folder '%s' keeps being removed and made again by another process\n",
            dir);
    return -1;
}

int fg_out_commit(const fg_out *o, const char *dir, const char *depfile_path)
{
    return fg_out_commit_changed(o, dir, depfile_path, NULL);
}

int fg_out_commit_changed(const fg_out *o, const char *dir, const char *depfile_path, unsigned char *changed)
{
    int rc = -1, rootfd = -1;
    fg_out__entry *order = NULL;
    fg_out__folder *folders = NULL;
    size_t n_folders = 0;
    fg_out__pending *pend = NULL;
    fg_out__depfile df = {.dirfd = -1};
    fg_out__created created = {0};
    fg_buf shown;
    fg_buf_init(&shown);

    if (!dir || !*dir) {
        fprintf(stderr, "fusegen: error: the output folder name is empty\n");
        return -1;
    }
    for (size_t i = 0; i < o->n_files; i++) {
        const char *why = fg_out__bad_path(o->files[i].rel_path);   /* files[] is public: check again */
        if (why) {
            fprintf(stderr, "fusegen: error: cannot write '%s': %s\n", o->files[i].rel_path, why);
            return -1;
        }
    }
    if (changed && o->n_files) memset(changed, 0, o->n_files);
    if (fg_out__make_dirs(dir, &created) != 0) goto undo_tmp;
    rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        fg_out__io_error("cannot open output folder", dir, errno);
        goto undo_tmp;
    }
    /* Everything below happens under the lock: a second run into this folder waits, rather
     * than pruning this run's files or mixing its own in. */
    if (fg_out__lock(&rootfd, dir, &created) != 0) goto undo_tmp;
    if (o->n_files) {
        order = malloc(o->n_files * sizeof *order);
        folders = calloc(o->n_files, sizeof *folders);
        pend = calloc(o->n_files, sizeof *pend);
        if (!order || !folders || !pend) {
            fg_out__io_error("cannot write into", dir, ENOMEM);
            goto undo_tmp;
        }
    }
    for (size_t i = 0; i < o->n_files; i++) {
        order[i].rel = o->files[i].rel_path;
        order[i].dlen = fg_out__dir_len(order[i].rel);
        order[i].index = i;
    }
    if (o->n_files) qsort(order, o->n_files, sizeof *order, fg_out__entry_cmp);
    for (size_t i = 0; i < o->n_files;) {
        fg_out__folder *f = &folders[n_folders++];
        f->rel = order[i].rel;
        f->rel_len = order[i].dlen;
        f->first = i;
        while (i < o->n_files && order[i].dlen == f->rel_len && memcmp(order[i].rel, f->rel, f->rel_len) == 0) {
            if (f->rel_len && strcmp(fg_out__base(order[i].rel), FG_OUT_MANIFEST) == 0) f->has_manifest = 1;
            i++;
        }
        f->n = i - f->first;
    }

    /* Phase 0: every obstacle, before anything is made or written: a file or a link where a
     * folder goes, a folder where a file goes, a depfile that is a folder or an input. All are
     * reported. Also the manifests there. */
    int obstacles = 0;
    for (size_t f = 0; f < n_folders; f++) {
        int missing = 0;
        int fd = fg_out__open_dir(rootfd, folders[f].rel, folders[f].rel_len, dir, NULL, 0, &missing);
        if (fd < 0) {
            if (!missing) obstacles++;
            continue;
        }
        for (size_t k = folders[f].first; k < folders[f].first + folders[f].n; k++) {
            struct stat st;
            if (fstatat(fd, fg_out__base(order[k].rel), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) {
                shown.len = 0;
                fg_out__join(&shown, dir, order[k].rel);
                fprintf(stderr, "fusegen: error: cannot write '%s': a folder is in the way\n",
                        shown.failed ? order[k].rel : shown.data);
                obstacles++;
            }
        }
        if (folders[f].has_manifest && o->prune_banner) folders[f].old_manifest = fg_out__read_manifest(fd);
        close(fd);
    }
    if (depfile_path) obstacles += fg_out__depfile_in_the_way(o, depfile_path);
    if (obstacles) goto undo_tmp;

    /* Phase 1: every changed file, and the depfile, go to a temporary file next to their final
     * place; nothing is renamed until all of them are written. One folder open at a time. */
    for (size_t f = 0; f < n_folders; f++) {
        int fd = fg_out__open_dir(rootfd, folders[f].rel, folders[f].rel_len, dir, &created, 1, NULL);
        if (fd < 0) goto undo_tmp;
        struct stat st;
        if (fstat(fd, &st) == 0) {
            folders[f].dev = st.st_dev;
            folders[f].ino = st.st_ino;
            folders[f].opened = 1;
        }
        for (size_t k = folders[f].first; k < folders[f].first + folders[f].n; k++) {
            const fg_out_file *file = &o->files[order[k].index];
            const char *base = fg_out__base(file->rel_path);
            if (fg_out__same(fd, base, file->data, file->len)) continue;
            shown.len = 0;
            fg_out__join(&shown, dir, file->rel_path);
            fg_out__pending *p = &pend[order[k].index];
            if (shown.failed ||
                fg_out__write_tmp(fd, file->data, file->len, p->tmp, sizeof p->tmp, shown.data) != 0) {
                if (shown.failed) fg_out__io_error("cannot write", file->rel_path, ENOMEM);
                close(fd);
                goto undo_tmp;
            }
            p->written = 1;
        }
        close(fd);
    }
    if (depfile_path &&
        fg_out__stage_depfile(o, dir, depfile_path, &df, &created, folders, n_folders, order) != 0)
        goto undo_tmp;

    /* Phase 2: rename them all into place, the depfile last. */
    for (size_t f = 0; f < n_folders; f++) {
        int any = 0;
        for (size_t k = folders[f].first; k < folders[f].first + folders[f].n && !any; k++)
            any = pend[order[k].index].written;
        if (!any) continue;
        int missing = 0;
        int fd = fg_out__open_dir(rootfd, folders[f].rel, folders[f].rel_len, dir, NULL, 0, &missing);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0 || st.st_dev != folders[f].dev || st.st_ino != folders[f].ino) {
            fprintf(stderr, "fusegen: error: the folder '%s/%.*s' was removed or replaced while fusegen wrote into "
                            "it\n", dir, (int)folders[f].rel_len, folders[f].rel);
            if (fd >= 0) close(fd);
            goto undo_tmp;
        }
        for (size_t k = folders[f].first; k < folders[f].first + folders[f].n; k++) {
            fg_out__pending *p = &pend[order[k].index];
            if (!p->written) continue;
            const char *base = fg_out__base(order[k].rel);
            if (renameat(fd, p->tmp, fd, base) != 0) {
                int err = errno;
                shown.len = 0;
                fg_out__join(&shown, dir, order[k].rel);
                fg_out__io_error("cannot write", shown.failed ? order[k].rel : shown.data, err);
                close(fd);
                goto undo_tmp;
            }
            p->written = 0;
            if (changed) changed[order[k].index] = 1;
        }
        close(fd);
    }
    if (df.written) {
        if (renameat(df.dirfd, df.tmp, df.dirfd, df.base) != 0) {
            fg_out__io_error("cannot write", depfile_path, errno);
            goto undo_tmp;
        }
        df.written = 0;
    }

    /* Phase 3: the files an earlier run generated into these folders and this one does not
     * (named by the manifest there); left, a build that globs the folder would compile kernels
     * the table lacks. */
    rc = 0;
    for (size_t f = 0; f < n_folders; f++)
        if (folders[f].old_manifest && fg_out__prune_folder(o, rootfd, dir, &folders[f], order) != 0) rc = -1;
    fflush(stdout);
    goto close_dirs;

undo_tmp:
    for (size_t f = 0; f < n_folders && pend; f++) {
        int fd = -1;
        for (size_t k = folders[f].first; k < folders[f].first + folders[f].n; k++) {
            fg_out__pending *p = &pend[order[k].index];
            if (!p->written) continue;
            if (fd < 0) {
                int missing = 0;
                fd = fg_out__open_dir(rootfd, folders[f].rel, folders[f].rel_len, dir, NULL, 0, &missing);
                if (fd < 0) break;
            }
            unlinkat(fd, p->tmp, 0);
        }
        if (fd >= 0) close(fd);
    }
    if (df.written) unlinkat(df.dirfd, df.tmp, 0);
close_dirs:
    for (size_t f = 0; f < n_folders; f++) free(folders[f].old_manifest);
    if (df.dirfd >= 0) close(df.dirfd);
    free(order);
    free(folders);
    free(pend);
    fg_buf_free(&shown);
    /* a failure takes away the folders this commit created (they hold nothing of ours now;
     * a folder renamed files went into is not empty, so it stays) */
    fg_out__created_finish(&created, rc != 0);
    if (rootfd >= 0) close(rootfd);   /* last: it holds the lock */
    return rc;
}
