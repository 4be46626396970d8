/* test_out.c - writing generated files: contents, skipping unchanged files (mtime kept), path
 * checks, refusing to follow links out of the output folder, and the depfile. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "out.h"

static char root[1024];
static FILE *diag_file;

static char *path_of(const char *rel)
{
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 4096, "%s/%s", root, rel);
    return p;
}

/* The whole file (static storage), or NULL when it cannot be read. */
static const char *slurp(const char *path)
{
    static char data[65536];
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = fread(data, 1, sizeof data - 1, f);
    fclose(f);
    data[n] = '\0';
    return data;
}

static void set_old_mtime(const char *path)
{
    struct timespec ts[2];
    ts[0].tv_sec = ts[1].tv_sec = 1000000000;   /* 2001 */
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    if (utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW) != 0) perror(path);
}

static long long mtime_of(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return -1;
    return (long long)st.st_mtime;
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Number of leftover temporary files directly in dir. */
static int temp_files_in(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dp)) != NULL)
        if (strncmp(e->d_name, ".fusegen-", 9) == 0) n++;
    closedir(dp);
    return n;
}

static void test_paths(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_diag d;
    fg_diag_init(&d, diag_file);
    fg_out o;
    fg_out_init(&o, &a);
    static const char *bad[] = {
        "", "/etc/passwd", "..", "../x", "a/../../x", "a/..", ".", "./a", "a/./b", "a//b", "a/",
        "/", "a\\b", "a\nb", "a\tb",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int before = fg_diag_errors(&d);
        TH_CHECK(fg_out_add(&o, bad[i], "x", 1, &d) == -1);
        TH_CHECK(fg_diag_errors(&d) == before + 1);
    }
    char longname[400];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    TH_CHECK(fg_out_add(&o, longname, "x", 1, &d) == -1);
    TH_CHECK(o.n_files == 0);
    TH_CHECK(fg_out_add(&o, "lib/a.h", "x", 1, &d) == 0);
    TH_CHECK(fg_out_add(&o, "lib/a.h", "y", 1, &d) == -1);
    TH_CHECK(fg_out_add(&o, "..lib/.a..h", "ok", 2, &d) == 0);
    TH_CHECK(o.n_files == 2);
    fg_arena_free(&a);
}

static void test_write_and_skip(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_diag d;
    fg_diag_init(&d, diag_file);
    fg_out o;
    fg_out_init(&o, &a);
    char many[64];
    TH_CHECK(fg_out_add(&o, "lib/lib.h", "header\n", 7, &d) == 0);
    TH_CHECK(fg_out_add(&o, "lib/sub/deep/k.cu", "kernel\n", 7, &d) == 0);
    TH_CHECK(fg_out_add(&o, "top.txt", "", 0, &d) == 0);
    for (int i = 0; i < 40; i++) {   /* enough to grow the file array */
        snprintf(many, sizeof many, "lib/many/f%02d.c", i);
        TH_CHECK(fg_out_add(&o, many, many, strlen(many), &d) == 0);
    }
    TH_CHECK(fg_out_add(&o, "lib/bin", "a\0b", 3, &d) == 0);
    TH_CHECK(fg_diag_errors(&d) == 0);

    char dir[2048];
    snprintf(dir, sizeof dir, "%s", path_of("gen/nested"));   /* parents are created */
    TH_CHECK(fg_out_commit(&o, dir, NULL) == 0);
    char p[4096];
    snprintf(p, sizeof p, "%s/lib/lib.h", dir);
    TH_STREQ(slurp(p), "header\n");
    snprintf(p, sizeof p, "%s/lib/sub/deep/k.cu", dir);
    TH_STREQ(slurp(p), "kernel\n");
    snprintf(p, sizeof p, "%s/top.txt", dir);
    TH_STREQ(slurp(p), "");
    snprintf(p, sizeof p, "%s/lib/many/f37.c", dir);
    TH_STREQ(slurp(p), "lib/many/f37.c");
    snprintf(p, sizeof p, "%s/lib/bin", dir);
    struct stat st;
    TH_CHECK(stat(p, &st) == 0 && st.st_size == 3);
    snprintf(p, sizeof p, "%s/lib", dir);
    TH_CHECK(temp_files_in(p) == 0);
    TH_CHECK(temp_files_in(dir) == 0);

    /* Committing the same bytes again touches nothing. */
    char h[4096], k[4096];
    snprintf(h, sizeof h, "%s/lib/lib.h", dir);
    snprintf(k, sizeof k, "%s/lib/sub/deep/k.cu", dir);
    set_old_mtime(h);
    set_old_mtime(k);
    TH_CHECK(fg_out_commit(&o, dir, NULL) == 0);
    TH_CHECK(mtime_of(h) == 1000000000);
    TH_CHECK(mtime_of(k) == 1000000000);

    /* A changed file is replaced; its unchanged neighbour keeps its mtime. */
    fg_out o2;
    fg_out_init(&o2, &a);
    TH_CHECK(fg_out_add(&o2, "lib/lib.h", "header v2\n", 10, &d) == 0);
    TH_CHECK(fg_out_add(&o2, "lib/sub/deep/k.cu", "kernel\n", 7, &d) == 0);
    TH_CHECK(fg_out_commit(&o2, dir, NULL) == 0);
    TH_STREQ(slurp(h), "header v2\n");
    TH_CHECK(mtime_of(h) != 1000000000);
    TH_CHECK(mtime_of(k) == 1000000000);

    /* Same size, different bytes: replaced too. */
    fg_out o3;
    fg_out_init(&o3, &a);
    TH_CHECK(fg_out_add(&o3, "lib/sub/deep/k.cu", "KERNEL\n", 7, &d) == 0);
    TH_CHECK(fg_out_commit(&o3, dir, NULL) == 0);
    TH_STREQ(slurp(k), "KERNEL\n");
    fg_arena_free(&a);
}

static void test_no_escape(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_diag d;
    fg_diag_init(&d, diag_file);

    /* A folder inside the output folder that is a link to somewhere else is not followed. */
    char outside[2048], dir[2048];
    snprintf(outside, sizeof outside, "%s", path_of("outside"));
    snprintf(dir, sizeof dir, "%s", path_of("esc"));
    TH_CHECK(mkdir(outside, 0777) == 0);
    TH_CHECK(mkdir(dir, 0777) == 0);
    TH_CHECK(symlink(outside, path_of("esc/lib")) == 0);
    fg_out o;
    fg_out_init(&o, &a);
    TH_CHECK(fg_out_add(&o, "lib/evil.h", "x", 1, &d) == 0);
    fprintf(stderr, "(an error about 'lib' is expected next)\n");
    TH_CHECK(fg_out_commit(&o, dir, NULL) == -1);
    TH_CHECK(!exists(path_of("outside/evil.h")));
    TH_CHECK(temp_files_in(outside) == 0);

    /* A link standing where a file goes is replaced by the file; its target is untouched. */
    FILE *f = fopen(path_of("outside/target"), "w");
    TH_CHECK(f != NULL);
    if (f) {
        fputs("precious", f);
        fclose(f);
    }
    TH_CHECK(symlink(path_of("outside/target"), path_of("esc/file.h")) == 0);
    fg_out o2;
    fg_out_init(&o2, &a);
    TH_CHECK(fg_out_add(&o2, "file.h", "generated", 9, &d) == 0);
    TH_CHECK(fg_out_commit(&o2, dir, NULL) == 0);
    TH_STREQ(slurp(path_of("outside/target")), "precious");
    struct stat st;
    TH_CHECK(lstat(path_of("esc/file.h"), &st) == 0 && S_ISREG(st.st_mode));
    TH_STREQ(slurp(path_of("esc/file.h")), "generated");

    /* A failure in the first phase leaves no earlier file changed and no temporary behind. */
    fg_out o3;
    fg_out_init(&o3, &a);
    TH_CHECK(fg_out_add(&o3, "file.h", "changed", 7, &d) == 0);
    TH_CHECK(fg_out_add(&o3, "lib/x.h", "x", 1, &d) == 0);
    fprintf(stderr, "(an error about 'lib' is expected next)\n");
    TH_CHECK(fg_out_commit(&o3, dir, NULL) == -1);
    TH_STREQ(slurp(path_of("esc/file.h")), "generated");
    TH_CHECK(temp_files_in(dir) == 0);

    /* A rel path that escapes is refused at commit too, even if put in files[] by hand. */
    fg_out_file evil = { "../escaped.h", "x", 1 };
    fg_out o4;
    fg_out_init(&o4, &a);
    o4.files = &evil;
    o4.n_files = 1;
    fprintf(stderr, "(an error about '../escaped.h' is expected next)\n");
    TH_CHECK(fg_out_commit(&o4, dir, NULL) == -1);
    TH_CHECK(!exists(path_of("escaped.h")));
    fg_arena_free(&a);
}

static void test_depfile(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_diag d;
    fg_diag_init(&d, diag_file);
    fg_out o;
    fg_out_init(&o, &a);
    TH_CHECK(fg_out_add(&o, "lib/lib.h", "h", 1, &d) == 0);
    TH_CHECK(fg_out_add(&o, "lib/my kernel.cu", "k", 1, &d) == 0);
    fg_out_dep(&o, "specs/my spec.json");
    fg_out_dep(&o, "templates/host/header.h.tmpl");
    fg_out_dep(&o, "specs/my spec.json");   /* deduplicated */
    fg_out_dep(&o, "odd/$name#1.tmpl");
    TH_CHECK(o.n_deps == 3);

    /* The depfile path is used as given, not placed inside the output folder. */
    char dir[4096], dep[4096], want[16384];
    snprintf(dir, sizeof dir, "%s/dep out/", root);
    snprintf(dep, sizeof dep, "%s/deps/sub/lib.d", root);
    TH_CHECK(fg_out_commit(&o, dir, dep) == 0);
    char esc_root[2100];
    size_t j = 0;
    for (const char *p = root; *p && j + 3 < sizeof esc_root; p++) {
        if (*p == ' ') esc_root[j++] = '\\';
        esc_root[j++] = *p;
    }
    esc_root[j] = '\0';
    snprintf(want, sizeof want,
             "%s/dep\\ out/lib/lib.h \\\n %s/dep\\ out/lib/my\\ kernel.cu: \\\n specs/my\\ spec.json \\\n"
             " templates/host/header.h.tmpl \\\n odd/$$name\\#1.tmpl\n",
             esc_root, esc_root);
    TH_STREQ(slurp(dep), want);
    TH_CHECK(!exists(path_of("dep out/deps")));

    /* Unchanged depfile: not rewritten. */
    set_old_mtime(dep);
    TH_CHECK(fg_out_commit(&o, dir, dep) == 0);
    TH_CHECK(mtime_of(dep) == 1000000000);

    /* A relative depfile path is relative to the current folder. */
    char cwd[4096];
    TH_CHECK(getcwd(cwd, sizeof cwd) != NULL);
    TH_CHECK(chdir(root) == 0);
    TH_CHECK(fg_out_commit(&o, "rel_out", "rel.d") == 0);
    TH_CHECK(chdir(cwd) == 0);
    TH_CHECK(strncmp(slurp(path_of("rel.d")), "rel_out/lib/lib.h \\\n rel_out/lib/my\\ kernel.cu:", 47) == 0);
    TH_CHECK(exists(path_of("rel_out/lib/lib.h")));
    TH_CHECK(!exists(path_of("rel_out/rel.d")));
    fg_arena_free(&a);
}

/* Manifests: a commit removes only what the manifest there names, the set no longer holds, and
 * still begins with the banner; obstacles are all found before anything is written. */
static void test_manifest_and_obstacles(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_diag d;
    fg_diag_init(&d, diag_file);
    char dir[2048];
    snprintf(dir, sizeof dir, "%s", path_of("man"));

    fg_out o;
    fg_out_init(&o, &a);
    TH_CHECK(fg_out_add(&o, "lib/a.cu", "//B a\n", 6, &d) == 0);
    TH_CHECK(fg_out_add(&o, "lib/b.cu", "//B b\n", 6, &d) == 0);
    TH_CHECK(fg_out_add(&o, "top.txt", "top\n", 4, &d) == 0);
    TH_CHECK(fg_out_add_manifests(&o, "//B", &d) == 0);
    TH_CHECK(o.n_files == 4);   /* one manifest: lib/, not the output folder itself */
    TH_STREQ(o.files[3].rel_path, "lib/" FG_OUT_MANIFEST);
    TH_STREQ(o.files[3].data, FG_OUT_MANIFEST_HEADER "a.cu\nb.cu\n");
    TH_CHECK(fg_out_commit(&o, dir, NULL) == 0);

    FILE *f = fopen(path_of("man/lib/user.cu"), "w");   /* begins with the banner, not fusegen's */
    if (f) {
        fputs("//B mine\n", f);
        fclose(f);
    }
    fg_out o2;
    fg_out_init(&o2, &a);
    TH_CHECK(fg_out_add(&o2, "lib/a.cu", "//B a\n", 6, &d) == 0);
    TH_CHECK(fg_out_add_manifests(&o2, "//B", &d) == 0);
    TH_CHECK(fg_out_commit(&o2, dir, NULL) == 0);
    TH_CHECK(!exists(path_of("man/lib/b.cu")));
    TH_CHECK(exists(path_of("man/lib/a.cu")));
    TH_CHECK(exists(path_of("man/lib/user.cu")));
    TH_CHECK(exists(path_of("man/top.txt")));
    TH_STREQ(slurp(path_of("man/lib/" FG_OUT_MANIFEST)), FG_OUT_MANIFEST_HEADER "a.cu\n");

    /* Two folders where files go, in two folders: both reported, nothing written anywhere. */
    TH_CHECK(mkdir(path_of("man/lib/c.cu"), 0777) == 0);
    TH_CHECK(mkdir(path_of("man/other"), 0777) == 0);
    TH_CHECK(mkdir(path_of("man/other/d.cu"), 0777) == 0);
    fg_out o3;
    fg_out_init(&o3, &a);
    TH_CHECK(fg_out_add(&o3, "first/x.cu", "x", 1, &d) == 0);
    TH_CHECK(fg_out_add(&o3, "lib/a.cu", "changed", 7, &d) == 0);
    TH_CHECK(fg_out_add(&o3, "lib/c.cu", "c", 1, &d) == 0);
    TH_CHECK(fg_out_add(&o3, "other/d.cu", "d", 1, &d) == 0);
    fprintf(stderr, "(two errors, about 'c.cu' and 'd.cu', are expected next)\n");
    TH_CHECK(fg_out_commit(&o3, dir, NULL) == -1);
    TH_CHECK(!exists(path_of("man/first")));
    TH_STREQ(slurp(path_of("man/lib/a.cu")), "//B a\n");
    TH_CHECK(temp_files_in(path_of("man/lib")) == 0);
    fg_arena_free(&a);
}

int main(int argc, char **argv)
{
    const char *base = argc > 1 ? argv[1] : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    snprintf(root, sizeof root, "%s/fusegen-out-test-XXXXXX", base);
    if (!mkdtemp(root)) {
        perror(root);
        return 2;
    }
    diag_file = tmpfile();
    if (!diag_file) diag_file = stderr;
    test_paths();
    test_write_and_skip();
    test_no_escape();
    test_depfile();
    test_manifest_and_obstacles();
    if (diag_file != stderr) fclose(diag_file);
    int rc = th_report();
    if (rc == 0) {
        char cmd[1100];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    } else {
        fprintf(stderr, "files kept in %s\n", root);
    }
    return rc;
}
