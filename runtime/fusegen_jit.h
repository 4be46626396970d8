/* fusegen_jit.h - the runtime's JIT: a kernel library made while the program runs, from a spec
 * given as JSON text. The generator's stages run in the process (parse, check, plan, render with
 * the templates built into the library), NVRTC compiles the kernels for one architecture, the
 * driver API loads them, and the kernels come out as a fusegen_library whose entries work with
 * fusegen_query, fusegen_select, fusegen_find, fusegen_why_not, fusegen_workspace_size and
 * fusegen_run like those of a generated library.
 *
 * Compiled code is cached on disk (see fusegen_jit_options.cache_dir), so the second program to
 * ask for the same kernels on the same architecture loads them instead of compiling.
 * NVRTC is loaded on first use (dlopen), and the driver API is reached through
 * cudaGetDriverEntryPointByVersion: nothing links libnvrtc or libcuda.
 *
 * Every call returns a fusegen_status and sets fusegen_last_detail() like the rest of the
 * runtime. Link the library target fusegen::jit of the installed package (fusegen_jit in the
 * source tree; it carries the generator, cJSON and the templates). */
#ifndef FUSEGEN_JIT_H
#define FUSEGEN_JIT_H

#include "fusegen.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fusegen_jit fusegen_jit;

/* Where the compiled code of a fusegen_jit_compile call came from. */
typedef enum fusegen_jit_cache_result {
    FUSEGEN_JIT_CACHE_OFF = 0,      /* no disk cache: disabled, or already compiled in this object */
    FUSEGEN_JIT_CACHE_HIT = 1,      /* read from a valid cache entry; nothing compiled */
    FUSEGEN_JIT_CACHE_MISS = 2,     /* no entry: compiled, and the entry written (when the folder is writable) */
    FUSEGEN_JIT_CACHE_CORRUPT = 3   /* an entry failed its checks: compiled again and rewritten (a warning says so) */
} fusegen_jit_cache_result;

typedef struct fusegen_jit_options {
    /* The target: "sm_80", "sm_86", "sm_89", "sm_90", "sm_90a", ... (the form of NVRTC's
     * --gpu-architecture, a real architecture). NULL or "": the current device's compute
     * capability, as sm_90a on a 9.0 device when a kernel of the spec lists sm_90a. An explicit
     * arch compiles (and caches) without a GPU; one that is no real architecture (sm_99,
     * sm_0080) is FUSEGEN_ERR_INVALID_ARGUMENT. */
    const char *arch;
    /* The cache folder. NULL or "": $FUSEGEN_CACHE_DIR, else $XDG_CACHE_HOME/fusegen (when
     * absolute), else $HOME/.cache/fusegen (created, mode 0700, when missing; empty variables
     * count as unset). A folder another user owns or can write into is not used (a warning). */
    const char *cache_dir;
    int no_cache;                       /* 1: neither read nor write the disk cache */
    /* More NVRTC options (part of the cache key: their text, not the contents of files they
     * name; use no_cache with --pre-include); may be NULL. Options the JIT sets itself
     * (--gpu-architecture/-arch, -std) or that make no CUBIN (-dlto, --fdevice-syntax-only)
     * are FUSEGEN_ERR_INVALID_ARGUMENT. */
    const char *const *nvrtc_options;
    int n_nvrtc_options;
} fusegen_jit_options;

/* Counters of one fusegen_jit, for tools and tests. */
typedef struct fusegen_jit_stats {
    unsigned long compiles;              /* NVRTC compiles run */
    unsigned long cache_hits;            /* valid entries read */
    unsigned long cache_misses;          /* no entry */
    unsigned long cache_corrupt;         /* entries that failed their checks */
    unsigned long cache_writes;          /* entries written */
    unsigned long cache_write_failures;  /* entries that could not be written (warned) */
} fusegen_jit_stats;

/* Parses, checks, plans and renders a spec (JSON text of len bytes; spec_name, e.g. the file it
 * came from, names it in diagnostics, NULL for "<jit>"). A spec with errors gives
 * FUSEGEN_ERR_SPEC and a detail holding the generator's diagnostics
 * ("NAME:LINE:COL: error: /json/pointer: message; ..."). *out is NULL on failure. */
fusegen_status fusegen_jit_create(const char *spec_json, size_t len, const char *spec_name, fusegen_jit **out);

/* Compiles the kernels for opts->arch (opts may be NULL: every field 0), through the disk
 * cache. cache (may be NULL) tells where the code came from. Only the variants that can run on
 * that arch are kept: the Hopper ones for sm_90a only, the portable ones when the arch is at
 * least their sm. FUSEGEN_ERR_NOT_SUPPORTED when none is left, FUSEGEN_ERR_COMPILE when NVRTC
 * is missing or fails (its log in the detail), FUSEGEN_ERR_CUDA when arch is NULL and the
 * device cannot be queried. An object is compiled once: a second call for the same arch does
 * nothing (cache result OFF); for another arch it is FUSEGEN_ERR_INVALID_ARGUMENT. With the
 * current device's arch (arch NULL) the code is also loaded, as fusegen_jit_load does. */
fusegen_status fusegen_jit_compile(fusegen_jit *jit, const fusegen_jit_options *opts, fusegen_jit_cache_result *cache);

/* The compiled kernels as a library (name: the spec's library), or NULL before a successful
 * fusegen_jit_compile. It lives as long as jit. Its kernels' sm is the compiled arch's, and they
 * are arch-specific when it is sm_90a: a CUBIN runs on devices of its own major version. */
const fusegen_library *fusegen_jit_library(const fusegen_jit *jit);

/* Loads the compiled code into the current CUDA context (the current device's primary context
 * when none is current) now. fusegen_run loads it on first use otherwise; load it before a CUDA
 * graph capture. */
fusegen_status fusegen_jit_load(fusegen_jit *jit);

/* The arch compiled for ("" until a compile has finished well) and the cache entry's path (NULL
 * when no entry was read or written). */
const char *fusegen_jit_arch(const fusegen_jit *jit);
const char *fusegen_jit_cache_entry(const fusegen_jit *jit);
void fusegen_jit_get_stats(const fusegen_jit *jit, fusegen_jit_stats *out);

/* Unloads the code from every context it was loaded into and frees everything. NULL is fine.
 * No kernel of the object may be running or be used afterwards. */
void fusegen_jit_destroy(fusegen_jit *jit);

/* Warnings (a cache folder that cannot be written or is not private, once per folder; a
 * corrupt entry) go to fn(message, user), or to stderr as "fusegen: warning: MESSAGE" when fn is
 * NULL (the default). Process-wide. fn runs with no lock of the JIT held: it may call fusegen_jit_*
 * functions. */
typedef void (*fusegen_jit_warning_fn)(const char *message, void *user);
void fusegen_jit_set_warning_handler(fusegen_jit_warning_fn fn, void *user);

/* The opt-in fallback: fusegen_select on lib, and when no kernel of lib can run p (lib may be
 * NULL), the best kernel of jit, compiled first for the current device (arch NULL) when it has
 * not been compiled. With jit NULL it is fusegen_select. On failure the detail gives lib's
 * reasons and then jit's. */
fusegen_status fusegen_select_or_jit(const fusegen_library *lib, fusegen_jit *jit, const fusegen_problem *p,
                                     const fusegen_kernel **out);

#ifdef __cplusplus
}
#endif
#endif
