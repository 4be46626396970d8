/* out.c - see out.h. Files are written through directory descriptors opened one component at
 * a time with O_NOFOLLOW, so a symbolic link planted inside the output folder cannot redirect a
 * write outside it; a link standing where a file goes is replaced, never followed. */
#define _POSIX_C_SOURCE 200809L
#include "out.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

typedef struct fg_out__dir {
    char *rel;        /* folder relative to the output folder ("" for the folder itself) */
    int fd;
} fg_out__dir;

typedef struct fg_out__pending {
    int dirfd;
    const char *base;
    char tmp[64];
    int written;      /* a temporary file exists and waits to be renamed */
} fg_out__pending;

static void fg_out__join(fg_buf *b, const char *dir, const char *rel);

/* Opens (creating when missing) the folder rel[0..n) under rootfd, never following links;
 * records each folder it creates (as dir/rel...) in created. */
static int fg_out__open_dir(int rootfd, const char *rel, size_t n, const char *dir, fg_out__created *created)
{
    int fd = rootfd;
    size_t at = 0;
    while (at < n) {
        size_t end = at;
        while (end < n && rel[end] != '/') end++;
        char comp[256];
        size_t len = end - at;
        memcpy(comp, rel + at, len);    /* components are at most 255 bytes (checked on add) */
        comp[len] = '\0';
        if (mkdirat(fd, comp, 0777) == 0) {
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
    return fd == rootfd ? dup(rootfd) : fd;
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

/* Writes the depfile's text to a temporary file in its folder (created if missing, recorded in
 * created), or nothing when the depfile already holds it. */
static int fg_out__stage_depfile(const fg_out *o, const char *dir, const char *depfile_path, fg_out__depfile *df,
                                 fg_out__created *created)
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

int fg_out_commit(const fg_out *o, const char *dir, const char *depfile_path)
{
    int rc = -1, rootfd = -1;
    fg_out__dir *dirs = NULL;
    size_t n_dirs = 0;
    fg_out__pending *pend = NULL;
    fg_out__depfile df = {.dirfd = -1};
    fg_out__created created = {0};
    fg_buf shown;
    fg_buf_init(&shown);

    if (!dir || !*dir) {
        fprintf(stderr, "fusegen: error: the output folder name is empty\n");
        return -1;
    }
    if (fg_out__make_dirs(dir, &created) != 0) goto undo_tmp;
    rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {
        fg_out__io_error("cannot open output folder", dir, errno);
        goto undo_tmp;
    }
    if (o->n_files) {
        dirs = calloc(o->n_files, sizeof *dirs);
        pend = calloc(o->n_files, sizeof *pend);
        if (!dirs || !pend) {
            fg_out__io_error("cannot write into", dir, ENOMEM);
            goto undo_tmp;
        }
    }

    /* Phase 1: every changed file, and the depfile, go to a temporary file next to their final
     * place; nothing is renamed until all of them are written. */
    for (size_t i = 0; i < o->n_files; i++) {
        const fg_out_file *f = &o->files[i];
        const char *why = fg_out__bad_path(f->rel_path);   /* files[] is public: check again */
        if (why) {
            fprintf(stderr, "fusegen: error: cannot write '%s': %s\n", f->rel_path, why);
            goto undo_tmp;
        }
        shown.len = 0;
        fg_out__join(&shown, dir, f->rel_path);
        if (shown.failed) {
            fg_out__io_error("cannot write", f->rel_path, ENOMEM);
            goto undo_tmp;
        }
        const char *slash = strrchr(f->rel_path, '/');
        size_t dlen = slash ? (size_t)(slash - f->rel_path) : 0;
        pend[i].base = slash ? slash + 1 : f->rel_path;
        pend[i].dirfd = -1;
        for (size_t k = 0; k < n_dirs; k++)
            if (strlen(dirs[k].rel) == dlen && memcmp(dirs[k].rel, f->rel_path, dlen) == 0) {
                pend[i].dirfd = dirs[k].fd;
                break;
            }
        if (pend[i].dirfd < 0) {
            char *rel = malloc(dlen + 1);
            if (!rel) {
                fg_out__io_error("cannot write", shown.data, ENOMEM);
                goto undo_tmp;
            }
            memcpy(rel, f->rel_path, dlen);
            rel[dlen] = '\0';
            int fd = fg_out__open_dir(rootfd, rel, dlen, dir, &created);
            if (fd < 0) {
                free(rel);
                goto undo_tmp;
            }
            dirs[n_dirs].rel = rel;
            dirs[n_dirs].fd = fd;
            n_dirs++;
            pend[i].dirfd = fd;
        }
        if (fg_out__same(pend[i].dirfd, pend[i].base, f->data, f->len)) continue;
        if (fg_out__write_tmp(pend[i].dirfd, f->data, f->len, pend[i].tmp, sizeof pend[i].tmp, shown.data) != 0)
            goto undo_tmp;
        pend[i].written = 1;
    }
    if (depfile_path && fg_out__stage_depfile(o, dir, depfile_path, &df, &created) != 0) goto undo_tmp;

    /* Phase 2: rename them all into place, the depfile last. */
    for (size_t i = 0; i < o->n_files; i++) {
        if (!pend[i].written) continue;
        if (renameat(pend[i].dirfd, pend[i].tmp, pend[i].dirfd, pend[i].base) != 0) {
            int err = errno;
            shown.len = 0;
            fg_out__join(&shown, dir, o->files[i].rel_path);
            fg_out__io_error("cannot write", shown.failed ? o->files[i].rel_path : shown.data, err);
            goto undo_tmp;
        }
        pend[i].written = 0;
    }
    if (df.written) {
        if (renameat(df.dirfd, df.tmp, df.dirfd, df.base) != 0) {
            fg_out__io_error("cannot write", depfile_path, errno);
            goto undo_tmp;
        }
        df.written = 0;
    }
    rc = 0;
    goto close_dirs;

undo_tmp:
    for (size_t i = 0; i < o->n_files && pend; i++)
        if (pend[i].written) unlinkat(pend[i].dirfd, pend[i].tmp, 0);
    if (df.written) unlinkat(df.dirfd, df.tmp, 0);
close_dirs:
    for (size_t k = 0; k < n_dirs; k++) {
        close(dirs[k].fd);
        free(dirs[k].rel);
    }
    if (df.dirfd >= 0) close(df.dirfd);
    free(dirs);
    free(pend);
    fg_buf_free(&shown);
    if (rootfd >= 0) close(rootfd);
    /* a failure takes away the folders this commit created (they hold nothing of ours now;
     * a folder renamed files went into is not empty, so it stays) */
    fg_out__created_finish(&created, rc != 0);
    return rc;
}

/* Whether the file `name` in dirfd is a regular file (not a link) that begins with banner. */
static int fg_out__has_banner(int dirfd, const char *name, const char *banner)
{
    char head[128];
    size_t want = strlen(banner);
    struct stat st;
    if (want > sizeof head || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
        return 0;
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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

int fg_out_prune(const fg_out *o, const char *dir, const char *banner)
{
    int removed = 0, rc = 0;
    for (size_t i = 0; i < o->n_files; i++) {
        const char *slash = strrchr(o->files[i].rel_path, '/');
        size_t dlen = slash ? (size_t)(slash - o->files[i].rel_path) : 0;
        /* each folder once: the first file that lives in it */
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            const char *s2 = strrchr(o->files[j].rel_path, '/');
            size_t l2 = s2 ? (size_t)(s2 - o->files[j].rel_path) : 0;
            seen = l2 == dlen && memcmp(o->files[j].rel_path, o->files[i].rel_path, dlen) == 0;
        }
        if (seen || dlen == 0) continue;   /* the output folder itself is the user's: left alone */
        fg_buf path;
        fg_buf_init(&path);
        fg_out__join(&path, dir, "");
        fg_buf_append(&path, o->files[i].rel_path, dlen);
        if (path.failed) {
            fg_out__io_error("cannot clean", dir, ENOMEM);
            fg_buf_free(&path);
            return -1;
        }
        int dirfd = open(path.data, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = dirfd >= 0 ? fdopendir(dirfd) : NULL;
        if (!d) {
            fg_out__io_error("cannot clean folder", path.data, errno);
            if (dirfd >= 0) close(dirfd);
            fg_buf_free(&path);
            return -1;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;   /* ., .., and our own temporary files */
            int ours = 0;
            for (size_t j = 0; j < o->n_files && !ours; j++) {
                const char *rp = o->files[j].rel_path;
                ours = strncmp(rp, o->files[i].rel_path, dlen) == 0 && rp[dlen] == '/' &&
                       strcmp(rp + dlen + 1, e->d_name) == 0;
            }
            if (ours || !fg_out__has_banner(dirfd, e->d_name, banner)) continue;
            if (unlinkat(dirfd, e->d_name, 0) == 0) {
                removed++;
            } else {
                fprintf(stderr, "fusegen: error: cannot remove the stale file '%s/%s': %s\n", path.data, e->d_name,
                        strerror(errno));
                rc = -1;
            }
        }
        closedir(d);
        fg_buf_free(&path);
    }
    return rc != 0 ? -1 : removed;
}
