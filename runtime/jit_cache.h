/* jit_cache.h - the JIT's disk cache of compiled code (private to the runtime).
 *
 * An entry is one file <dir>/<key hex>.fgjit:
 *   offset  size  field
 *        0     8  magic "FGJITBIN"
 *        8     4  format version (1), little-endian
 *       12     4  header size (88)
 *       16    32  key: sha256 of (format, generator version, NVRTC version, arch, options, sources)
 *       48     8  payload size in bytes, little-endian
 *       56    32  sha256 of the payload
 *       88     -  payload (a CUBIN)
 * Entries are written to a temporary file in the same folder and renamed into place, so a
 * reader sees a whole entry or none; a reader checks every header field, the file size and the
 * payload's hash, and treats an entry that fails as corrupt (to be compiled and written again). */
#ifndef FUSEGEN_JIT_CACHE_H
#define FUSEGEN_JIT_CACHE_H
#include <stddef.h>
#include <stdint.h>

#define FG_JIT_CACHE_FORMAT 1
#define FG_JIT_CACHE_HEADER 88
#define FG_JIT_CACHE_MAX_PAYLOAD ((size_t)1 << 30)

typedef struct fg_jit_key_builder {
    uint8_t *data;
    size_t len, cap;
    int failed;
} fg_jit_key_builder;

/* The key is the sha256 of named, length-prefixed fields, in order. */
void fg_jit_key_init(fg_jit_key_builder *b);
void fg_jit_key_add(fg_jit_key_builder *b, const char *name, const void *data, size_t len);
/* Returns 0 and the key, or -1 when memory ran out. Frees the builder either way. */
int fg_jit_key_finish(fg_jit_key_builder *b, uint8_t key[32]);

/* The cache folder: override when non-NULL and non-empty, else $FUSEGEN_CACHE_DIR, else
 * $XDG_CACHE_HOME/fusegen (an absolute XDG_CACHE_HOME only), else $HOME/.cache/fusegen; empty
 * values count as unset. Returns 0, or -1 (why set) when none can be named (no HOME) or the
 * name is too long. */
int fg_jit_cache_dir(const char *override, char *out, size_t out_len, char *why, size_t why_len);

/* Whether code read from folder dir may run: 0 when it is missing (it is created 0700), or is
 * owned by this user or root and no one else may write into it; -1 (why set: "is owned by ...",
 * "can be written by ...") otherwise, since an entry another user put there would run as ours. */
int fg_jit_cache_dir_private(const char *dir, char *why, size_t why_len);

/* <dir>/<hex>.fgjit into out. Returns 0, or -1 when it does not fit. */
int fg_jit_cache_entry_path(const char *dir, const uint8_t key[32], char *out, size_t out_len);

enum { FG_JIT_CACHE_READ_HIT = 0, FG_JIT_CACHE_READ_MISS = 1, FG_JIT_CACHE_READ_CORRUPT = 2 };

/* Reads and checks the entry at path. HIT: *payload (malloc'ed) and *len. MISS: no such file
 * (or it cannot be opened). CORRUPT: why says which check failed. */
int fg_jit_cache_read(const char *path, const uint8_t key[32], uint8_t **payload, size_t *len, char *why,
                      size_t why_len);

/* Creates dir (and its parents, mode 0700) when missing, then writes the entry atomically.
 * Returns 0, or -1 with why set (nothing is left behind). */
int fg_jit_cache_write(const char *dir, const char *path, const uint8_t key[32], const uint8_t *payload, size_t len,
                       char *why, size_t why_len);

#endif
