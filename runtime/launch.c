/* launch.c - the one launcher of the runtime (fusegen_internal.h, fusegen__launch): from a
 * kernel's launch records (fusegen_launch.h) and the problem, the grid, the parameter block, the
 * Hopper tensor maps and the sequence of launches (GEMM; its normalize kernel; a split-K reduce;
 * a chain's GEMM2), all through the driver API (cuLaunchKernelEx). Only where the functions come
 * from differs: a JIT kernel's from its module, a compiled-in kernel's from the kernel library's
 * own CUDA runtime (fusegen_kernel.functions, cudaGetFuncBySymbol there: the library and this
 * runtime may each carry a copy of cudart), remembered per context in the kernel's cache. The
 * driver API is reached through the runtime (cudaGetDriverEntryPointByVersion), so nothing links
 * libcuda. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fusegen_internal.h"
#include "fusegen_workspace.h"

/* ---- the driver API, through the runtime ------------------------------------------------------ */

static fusegen__driver launch__cu;
static int launch__cu_ok;
static const fusegen__driver *launch__override;   /* the tests' (fusegen__cu_override) */
static char launch__cu_why[256];
static pthread_once_t launch__cu_once = PTHREAD_ONCE_INIT;

static int launch__cu_sym(const char *name, void **fn)
{
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &found);
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !*fn) {
        if (!launch__cu_why[0])   /* the first failure says why (without a driver, all of them fail) */
            snprintf(launch__cu_why, sizeof launch__cu_why, "the driver entry point %s is not available (%s)", name,
                     e != cudaSuccess ? cudaGetErrorName(e) : "symbol not found");
        *fn = NULL;
        return -1;
    }
    return 0;
}

static void launch__cu_load(void)
{
    int bad = 0;
#define LAUNCH__SYM(field, name) bad |= launch__cu_sym(name, (void **)&launch__cu.field)
    LAUNCH__SYM(ctx_get_current, "cuCtxGetCurrent");
    LAUNCH__SYM(ctx_push, "cuCtxPushCurrent");
    LAUNCH__SYM(ctx_pop, "cuCtxPopCurrent");
    LAUNCH__SYM(module_load_data, "cuModuleLoadData");
    LAUNCH__SYM(module_unload, "cuModuleUnload");
    LAUNCH__SYM(module_get_function, "cuModuleGetFunction");
    LAUNCH__SYM(func_set_attribute, "cuFuncSetAttribute");
    LAUNCH__SYM(launch_kernel_ex, "cuLaunchKernelEx");
    LAUNCH__SYM(occupancy_max_active_clusters, "cuOccupancyMaxActiveClusters");
    LAUNCH__SYM(tensor_map_encode_tiled, "cuTensorMapEncodeTiled");
    LAUNCH__SYM(get_error_name, "cuGetErrorName");
    LAUNCH__SYM(get_error_string, "cuGetErrorString");
#undef LAUNCH__SYM
    launch__cu_ok = !bad;
}

void fusegen__cu_override(const fusegen__driver *fake)
{
    __atomic_store_n(&launch__override, fake, __ATOMIC_RELEASE);
}

/* The table in use, once fusegen__cu has answered. */
static const fusegen__driver *launch__api(void)
{
    const fusegen__driver *fake = __atomic_load_n(&launch__override, __ATOMIC_ACQUIRE);
    return fake ? fake : &launch__cu;
}

const fusegen__driver *fusegen__cu(char *why, size_t len)
{
    const fusegen__driver *fake = __atomic_load_n(&launch__override, __ATOMIC_ACQUIRE);
    if (fake) return fake;
    pthread_once(&launch__cu_once, launch__cu_load);
    if (launch__cu_ok) return &launch__cu;
    snprintf(why, len, "%s", launch__cu_why);
    return NULL;
}

int fusegen__cu_fail(CUresult r, char *why, size_t len, const char *fmt, ...)
{
    char what[256];
    const char *name = NULL, *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const fusegen__driver *api = launch__api();
    if (api->get_error_name) api->get_error_name(r, &name);
    if (api->get_error_string) api->get_error_string(r, &text);
    snprintf(why, len, "%s: %s: %s", what, name ? name : "CUDA_ERROR_?", text ? text : "unknown error");
    return 1;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
/* Writes "<what>: cudaErrorX: text" into why and returns 1. */
static int launch__fail(cudaError_t e, char *why, size_t len, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(why, len, "%s: %s: %s", what, cudaGetErrorName(e), cudaGetErrorString(e));
    return 1;
}

/* ---- one launch --------------------------------------------------------------------------------- */

typedef struct launch__call {
    const char *what;         /* for messages: "<kernel> GEMM1" and the like */
    unsigned grid[3], threads, smem_bytes;
    unsigned cluster_x;       /* > 0: clusters of cluster_x x 1 x 1 CTAs */
    int dependent;            /* a programmatic dependent launch: the kernel's CTAs may start while
                                 the kernel before it drains, and wait (griddepcontrol.wait) before
                                 they touch what it wrote; hides the launch gap */
    cudaStream_t stream;
} launch__call;

static void launch__driver_config(const launch__call *c, int with_dependent, CUlaunchConfig *config,
                                  CUlaunchAttribute attrs[2])
{
    memset(config, 0, sizeof *config);
    memset(attrs, 0, 2 * sizeof *attrs);
    config->gridDimX = c->grid[0], config->gridDimY = c->grid[1], config->gridDimZ = c->grid[2];
    config->blockDimX = c->threads, config->blockDimY = 1, config->blockDimZ = 1;
    config->sharedMemBytes = c->smem_bytes;
    config->hStream = (CUstream)c->stream;
    config->attrs = attrs;
    if (c->cluster_x) {
        attrs[config->numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[config->numAttrs].value.clusterDim.x = c->cluster_x;
        attrs[config->numAttrs].value.clusterDim.y = 1;
        attrs[config->numAttrs].value.clusterDim.z = 1;
        config->numAttrs++;
    }
    if (c->dependent && with_dependent) {
        attrs[config->numAttrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[config->numAttrs].value.programmaticStreamSerializationAllowed = 1;
        config->numAttrs++;
    }
}

static int launch__start(const CUfunction *fns, int fn, const launch__call *c, void **params, char *why, size_t len)
{
    CUlaunchConfig config;
    CUlaunchAttribute attrs[2];
    launch__driver_config(c, 1, &config, attrs);
    CUresult r = launch__api()->launch_kernel_ex(&config, fns[fn], params, NULL);
    if (r == CUDA_SUCCESS) return 0;
    return fusegen__cu_fail(r, why, len, "%s (grid %ux%ux%u, %u threads, %u bytes of shared memory)", c->what,
                            c->grid[0], c->grid[1], c->grid[2], c->threads, c->smem_bytes);
}

/* How many clusters of c->cluster_x CTAs fit at once: asked once per device and cluster size
 * (the kernel's cache holds the last four answers, each packed in one word). */
static int launch__clusters(const fusegen_kernel *k, const CUfunction *fns, int fn, const launch__call *c,
                            int *clusters, char *why, size_t len)
{
    int device = 0;
    cudaError_t e = fusegen__device_ordinal(&device);
    if (e != cudaSuccess) return launch__fail(e, why, len, "%s: cudaGetDevice", c->what);
    const unsigned long long key = ((unsigned long long)(unsigned)(device + 1) << 8 | c->cluster_x) << 32;
    unsigned long long *slot = k->cache ? &k->cache->clusters[c->cluster_x % 4] : NULL;
    if (slot) {
        unsigned long long v = __atomic_load_n(slot, __ATOMIC_RELAXED);
        if ((v & ~0xffffffffull) == key) {
            *clusters = (int)(v & 0xffffffffull);
            return 0;
        }
    }
    int n = 0;
    CUlaunchConfig config;
    CUlaunchAttribute attrs[2];
    launch__driver_config(c, 0, &config, attrs);   /* the query sees the cluster alone */
    CUresult r = launch__api()->occupancy_max_active_clusters(&n, fns[fn], &config);
    if (r != CUDA_SUCCESS) return fusegen__cu_fail(r, why, len, "%s: cuOccupancyMaxActiveClusters", c->what);
    if (n < 1) {
        snprintf(why, len, "%s: not one cluster of %u CTAs fits on this device", c->what, c->cluster_x);
        return 1;
    }
    if (slot) __atomic_store_n(slot, key | (unsigned)n, __ATOMIC_RELAXED);
    *clusters = n;
    return 0;
}

/* ---- a compiled-in kernel's functions ---------------------------------------------------------- */

static pthread_mutex_t launch__publish_lock = PTHREAD_MUTEX_INITIALIZER;

/* A GEMM function's attributes, set once per context as the function is found: its dynamic
 * shared memory, and for a cluster kernel clusters past the portable 8 CTAs (where the driver
 * refuses, clusters of 8 or fewer still run and a larger one's launch says none fits). The JIT
 * sets the same as it loads its module. */
static int launch__set_attributes(CUfunction f, const fusegen_launch_gemm *rec, const char *what, char *why,
                                  size_t len)
{
    CUresult r = launch__api()->func_set_attribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, rec->smem_bytes);
    if (r != CUDA_SUCCESS)
        return fusegen__cu_fail(r, why, len, "%s: max dynamic shared memory = %d", what, rec->smem_bytes);
    if (rec->cluster) (void)launch__api()->func_set_attribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
    return 0;
}

/* The driver functions of compiled-in kernel k in the current context, from its cache or from
 * the kernel library (which makes its device's primary context current if none is). */
static int launch__compiled_functions(const fusegen_kernel *k, CUfunction fns[FUSEGEN_LAUNCH_FNS], char *why,
                                      size_t len)
{
    CUcontext ctx = NULL;
    CUresult r = launch__api()->ctx_get_current(&ctx);
    if (r != CUDA_SUCCESS) return fusegen__cu_fail(r, why, len, "cuCtxGetCurrent");
    fusegen_launch_cache *cache = k->cache;
    for (int i = 0; ctx && cache && i < FUSEGEN_LAUNCH_CONTEXTS; ++i)
        if (__atomic_load_n(&cache->contexts[i].context, __ATOMIC_ACQUIRE) == (void *)ctx) {
            for (int f = 0; f < FUSEGEN_LAUNCH_FNS; ++f) fns[f] = (CUfunction)cache->contexts[i].fn[f];
            return 0;
        }
    void *raw[FUSEGEN_LAUNCH_FNS] = {NULL, NULL, NULL, NULL};
    cudaError_t e = k->functions(raw);
    if (e != cudaSuccess) return launch__fail(e, why, len, "finding the kernel's functions (cudaGetFuncBySymbol)");
    const fusegen_launch_gemm *rec1 = &k->launch1;
    if (!raw[FUSEGEN_LAUNCH_GEMM1] || ((rec1->split || rec1->split_k) && !raw[FUSEGEN_LAUNCH_EPILOGUE1]) ||
        (k->chain && !raw[FUSEGEN_LAUNCH_GEMM2]) || (k->chain && k->launch2.split_k && !raw[FUSEGEN_LAUNCH_EPILOGUE2])) {
        snprintf(why, len, "a function its launch records need is missing (corrupt dispatch table)");
        return 1;
    }
    for (int f = 0; f < FUSEGEN_LAUNCH_FNS; ++f) fns[f] = (CUfunction)raw[f];
    if (launch__set_attributes(fns[FUSEGEN_LAUNCH_GEMM1], rec1, "GEMM1", why, len) ||
        (k->chain && launch__set_attributes(fns[FUSEGEN_LAUNCH_GEMM2], &k->launch2, "GEMM2", why, len)))
        return 1;
    if (!ctx && (r = launch__api()->ctx_get_current(&ctx)) != CUDA_SUCCESS)
        return fusegen__cu_fail(r, why, len, "cuCtxGetCurrent");
    if (!ctx || !cache) return 0;
    /* remember them (a full cache: found again next time) */
    pthread_mutex_lock(&launch__publish_lock);
    for (int i = 0; i < FUSEGEN_LAUNCH_CONTEXTS; ++i) {
        void *owner = __atomic_load_n(&cache->contexts[i].context, __ATOMIC_RELAXED);
        if (owner == (void *)ctx) break;
        if (owner) continue;
        for (int f = 0; f < FUSEGEN_LAUNCH_FNS; ++f) cache->contexts[i].fn[f] = raw[f];
        __atomic_store_n(&cache->contexts[i].context, (void *)ctx, __ATOMIC_RELEASE);
        break;
    }
    pthread_mutex_unlock(&launch__publish_lock);
    return 0;
}

/* ---- Hopper tensor maps ------------------------------------------------------------------------- */

typedef struct launch__map_key {
    const void *base;
    long long rows, cols, ld;
    int dt, box_rows, box_bytes;
} launch__map_key;

/* The last tensor maps this thread encoded, by everything an encode reads: a decode step
 * launches the same problem on the same buffers thousands of times a second, and the encodes
 * are most of a Hopper launch's host work. An entry is the encoder's output for its key. */
enum { LAUNCH__MEMO = 16 };
static _Thread_local struct {
    launch__map_key key[LAUNCH__MEMO];
    CUtensorMap map[LAUNCH__MEMO];
    int used, next;
} launch__memo;

/* A row-major [rows, cols] matrix of dt elements, row stride ld, copied in boxes of box_rows x
 * box_bytes (128 or 64) with the swizzle of that width; reads past the edges give zeros, writes
 * past them are dropped. */
static int launch__tensor_map(CUtensorMap *map, const void *base, int dt, long long rows, long long cols, long long ld,
                              int box_rows, int box_bytes, const char *what, char *why, size_t len)
{
    launch__map_key key;
    memset(&key, 0, sizeof key);   /* compared whole, padding included */
    key.base = base, key.rows = rows, key.cols = cols, key.ld = ld;
    key.dt = dt, key.box_rows = box_rows, key.box_bytes = box_bytes;
    for (int i = 0; i < launch__memo.used; ++i)
        if (memcmp(&launch__memo.key[i], &key, sizeof key) == 0) {
            *map = launch__memo.map[i];
            return 0;
        }
    const unsigned bytes = dt == FUSEGEN_DTYPE_F32 ? 4u : 2u;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)ld * bytes};
    const cuuint32_t box[2] = {(cuuint32_t)box_bytes / bytes, (cuuint32_t)box_rows};
    const cuuint32_t element_strides[2] = {1u, 1u};
    const CUtensorMapDataType type = dt == FUSEGEN_DTYPE_BF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                     : dt == FUSEGEN_DTYPE_F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    const CUtensorMapSwizzle swizzle = box_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B;
    CUresult r = launch__api()->tensor_map_encode_tiled(map, type, 2, (void *)base, dims, strides, box, element_strides,
                                                    CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return fusegen__cu_fail(r, why, len, "cuTensorMapEncodeTiled (%s)", what);
    const int at = launch__memo.next;
    launch__memo.key[at] = key;
    launch__memo.map[at] = *map;
    launch__memo.next = (at + 1) % LAUNCH__MEMO;
    if (launch__memo.used < LAUNCH__MEMO) launch__memo.used++;
    return 0;
}

/* fusegen_sm90::EpilogueMaps: the residual's, a store op's and the output's tensor maps. */
typedef struct launch__epilogue_maps {
    CUtensorMap residual, store, out;
} launch__epilogue_maps;

/* A Hopper GEMM's parameters after the block: A's maps (its row tiles', its last row tile's),
 * B's, the epilogue's. The last row tile of an M that the tile's rows do not divide reads A in a
 * box of the rows left (fusegen_sm90::GemmSm90::run); otherwise the tail map is A's map again. */
static int launch__hopper_maps(const fusegen_launch_gemm *rec, const fusegen_params *g, CUtensorMap *map_a,
                               CUtensorMap *map_a_tail, CUtensorMap *map_b, launch__epilogue_maps *maps, char *why,
                               size_t len)
{
    const int slot = rec->map_store_slot, rows = rec->tile_m, bytes = rec->epi_box_bytes;
    const int tail_rows = g->m % rec->tma_box_a;
    memset(maps, 0, sizeof *maps);
    if (launch__tensor_map(map_a, g->a, rec->dt_ab, g->m, g->k, g->lda, rec->tma_box_a, 128, "A", why, len))
        return 1;
    if (tail_rows == 0)
        *map_a_tail = *map_a;
    else if (launch__tensor_map(map_a_tail, g->a, rec->dt_ab, g->m, g->k, g->lda, tail_rows, 128, "A's last rows", why,
                                len))
        return 1;
    /* B: [N, K] rows of K, or (b_kn) [K, N] rows of N */
    if (launch__tensor_map(map_b, g->b, rec->dt_ab, rec->b_kn ? g->k : g->n, rec->b_kn ? g->n : g->k, g->ldb,
                           rec->tma_box_b, 128, "B", why, len))
        return 1;
    if (rec->map_residual && launch__tensor_map(&maps->residual, g->residual, rec->dt_out, g->m, g->n, g->ldr, rows,
                                                bytes, "residual", why, len))
        return 1;
    if (slot >= 0 && launch__tensor_map(&maps->store, g->store[slot], rec->dt_out, g->m, g->n, g->ld_store[slot], rows,
                                        bytes, "store", why, len))
        return 1;
    if (rec->map_out == 1 &&
        launch__tensor_map(&maps->out, g->out, rec->dt_out, g->m, g->n, g->ldo, rows, bytes, "out", why, len))
        return 1;
    if (rec->map_out == 2 && /* packed [m, n], the output's type */
        launch__tensor_map(&maps->out, g->prenorm, rec->dt_out, g->m, g->n, g->n, rows, bytes, "pre-norm", why, len))
        return 1;
    return 0;
}

/* ---- the launches of a kernel ------------------------------------------------------------------- */

typedef struct launch__kernel {
    const fusegen_kernel *k;
    const CUfunction *fns;
    int sm, sms;              /* the device's, from the runtime's cache */
    cudaStream_t stream;
    char *why;
    size_t len;
} launch__kernel;

/* One GEMM (function fn) on its grid; slices > 1: a split-K partial kernel, whose work units are
 * its tiles times the slices. */
static int launch__gemm(const launch__kernel *lk, int fn, const fusegen_launch_gemm *rec, fusegen_params *g,
                        unsigned slices, const char *what)
{
    launch__call c;
    memset(&c, 0, sizeof c);
    c.what = what;
    c.grid[0] = (unsigned)((g->n + rec->tile_n - 1) / rec->tile_n);
    c.grid[1] = (unsigned)((g->m + rec->tile_m - 1) / rec->tile_m);
    c.grid[2] = slices;
    c.threads = (unsigned)rec->threads;
    c.smem_bytes = (unsigned)rec->smem_bytes;
    c.stream = lk->stream;
    if (!rec->hopper) {
        void *params[1] = {g};
        return launch__start(lk->fns, fn, &c, params, lk->why, lk->len);
    }
    CUtensorMap map_a, map_a_tail, map_b;
    launch__epilogue_maps maps;
    if (launch__hopper_maps(rec, g, &map_a, &map_a_tail, &map_b, &maps, lk->why, lk->len)) return 1;
    void *params[5] = {g, &map_a, &map_a_tail, &map_b, &maps};
    c.dependent = 1;
    if (rec->persistent) {
        /* one CTA per SM (each takes an SM's shared memory), never more than the work units */
        const unsigned long long units = (unsigned long long)c.grid[0] * c.grid[1] * c.grid[2];
        c.grid[0] = (unsigned)(units < (unsigned long long)lk->sms ? units : (unsigned long long)lk->sms);
        c.grid[1] = c.grid[2] = 1;
        return launch__start(lk->fns, fn, &c, params, lk->why, lk->len);
    }
    /* one cluster per row of tiles, its CTAs holding the whole of N (at most max_n / tile_n = 16,
     * checked); as many clusters as fit at once walk down the row tiles */
    int clusters = 0;
    c.cluster_x = c.grid[0];
    if (launch__clusters(lk->k, lk->fns, fn, &c, &clusters, lk->why, lk->len)) return 1;
    if ((unsigned)clusters < c.grid[1]) c.grid[1] = (unsigned)clusters;
    return launch__start(lk->fns, fn, &c, params, lk->why, lk->len);
}

/* A GEMM with a split strategy's norm: the GEMM writes the pre-norm values and the row
 * statistics into the workspace, then the normalize kernel (a warp per row) finishes the rows;
 * on Hopper as a programmatic dependent, its blocks starting as the GEMM's CTAs finish. */
static int launch__gemm_and_norm(const launch__kernel *lk, int fn, const fusegen_launch_gemm *rec, fusegen_params *g,
                                 void *workspace, const char *what)
{
    if (!rec->split) return launch__gemm(lk, fn, rec, g, 1, what);
    fusegen_ws_layout l = fusegen_ws_layout_for(1, rec->tile_n, 0, 0, g->m, g->n);
    g->prenorm = (float *)((char *)workspace + l.prenorm);
    g->stats = (float *)((char *)workspace + l.stats);
    g->stats_ld = (g->n + rec->tile_n - 1) / rec->tile_n;
    if (launch__gemm(lk, fn, rec, g, 1, what)) return 1;
    const int rows_per_block = FUSEGEN_REG_NORMALIZE_THREADS / 32;
    launch__call c;
    memset(&c, 0, sizeof c);
    c.what = "the normalize kernel";
    c.grid[0] = (unsigned)((g->m + rows_per_block - 1) / rows_per_block);
    c.grid[1] = c.grid[2] = 1;
    c.threads = FUSEGEN_REG_NORMALIZE_THREADS;
    c.dependent = rec->hopper;
    c.stream = lk->stream;
    void *params[1] = {g};
    return launch__start(lk->fns, FUSEGEN_LAUNCH_EPILOGUE1, &c, params, lk->why, lk->len);
}

/* A split-K GEMM (function gemm_fn, its reduce kernel reduce_fn): the partial kernel sums slices
 * of K into partials (f32), then the reduce kernel applies the whole epilogue, a row (or a part
 * of one) a block, a row a cluster of blocks with a Hopper variant's norm; on sm_90 and later as
 * a programmatic dependent (it waits for the sums itself). */
static int launch__split_k(const launch__kernel *lk, int gemm_fn, int reduce_fn, const fusegen_launch_gemm *rec,
                           fusegen_params *g, float *partials)
{
    g->k_slices = fusegen_k_slices(g->m, g->n, g->k, rec->tile_m, rec->tile_n, rec->tile_k, lk->sms);
    g->partials = partials;
    if (launch__gemm(lk, gemm_fn, rec, g, (unsigned)g->k_slices,
                     gemm_fn == FUSEGEN_LAUNCH_GEMM1 ? "the split-K partial kernel" : "GEMM2's split-K partial kernel"))
        return 1;
    /* with a norm, a Hopper variant's reduce splits each row over a cluster of CTAs */
    const int ranks = rec->split_k_row_smem && rec->hopper && lk->sm >= 90 ? fusegen_split_k_reduce_ranks(g->m, g->n, lk->sms) : 1;
    const int64_t columns = fusegen_split_k_reduce_columns(g->n, ranks);
    const int row_bytes = rec->split_k_row_smem ? (int)columns * 4 : 0;
    const int threads = fusegen_split_k_reduce_threads(columns, rec->split_k_row_smem, FUSEGEN_REG_SPLIT_K_REDUCE_THREADS,
                                                       FUSEGEN_REG_SPLIT_K_REDUCE_ROW_THREADS);
    launch__call c;
    memset(&c, 0, sizeof c);
    c.what = reduce_fn == FUSEGEN_LAUNCH_EPILOGUE1 ? "the split-K reduce kernel" : "GEMM2's split-K reduce kernel";
    c.grid[0] = (unsigned)g->m * (unsigned)ranks;
    c.cluster_x = ranks > 1 ? (unsigned)ranks : 0;
    c.grid[1] = (unsigned)fusegen_split_k_reduce_blocks_y(g->n, rec->split_k_row_smem, threads);
    c.grid[2] = 1;
    c.threads = (unsigned)threads;
    c.smem_bytes = (unsigned)row_bytes;
    c.dependent = lk->sm >= 90;
    c.stream = lk->stream;
    const int fn = reduce_fn;
    if (row_bytes > 48 * 1024) {   /* past the default, per launch: the size follows N */
        CUresult r = launch__api()->func_set_attribute(lk->fns[fn], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                   row_bytes);
        if (r != CUDA_SUCCESS) return fusegen__cu_fail(r, lk->why, lk->len, "%s: shared memory", c.what);
    }
    void *params[1] = {g};
    return launch__start(lk->fns, fn, &c, params, lk->why, lk->len);
}

/* GEMM1's parameters from the problem and the arguments (the runtime has checked them). */
static void launch__gemm1_params(const fusegen_problem *pr, const fusegen_args *args, fusegen_params *g)
{
    memset(g, 0, sizeof *g);
    g->a = args->a;
    g->b = args->b;
    g->out = args->out;
    g->m = (int)pr->m;
    g->n = (int)pr->n;
    g->k = (int)pr->k;
    g->lda = fusegen_ld_or(pr->lda, pr->k);
    g->ldb = fusegen_ld_or(pr->ldb, pr->b_layout == FUSEGEN_LAYOUT_NK ? pr->k : pr->n);
    const int64_t out_cols = fusegen__out_cols(pr);   /* (N / 2 after a gated activation) */
    g->ldo = fusegen_ld_or(pr->ldo, out_cols);
    g->ldr = fusegen_ld_or(pr->ldr, out_cols);
    g->bias = args->bias;
    g->residual = args->residual;
    g->gamma = args->gamma;
    g->beta = args->beta;
    for (int i = 0; i < FUSEGEN_MAX_STORES; ++i) {
        g->store[i] = args->store[i];
        g->ld_store[i] = fusegen_ld_or(pr->ld_store[i], out_cols);
    }
}

/* A chain's GEMM2: A is GEMM1's result in the workspace (hidden, [m, n], its rows
 * fusegen_ws_hidden_ld(n) apart); the bias and residual only where kernel k's GEMM2 reads them. */
static void launch__gemm2_params(const fusegen_kernel *k, const fusegen_problem *pr, const fusegen_args *args, void *hidden,
                                 fusegen_params *g)
{
    memset(g, 0, sizeof *g);
    g->a = hidden;
    g->b = args->b2;
    g->out = args->out2;
    g->m = (int)pr->m;
    g->n = (int)pr->n2;
    g->k = (int)pr->n;
    g->lda = fusegen_ws_hidden_ld(pr->n);
    g->ldb = fusegen_ld_or(pr->ldb2, pr->b2_layout == FUSEGEN_LAYOUT_NK ? pr->n : pr->n2);
    g->ldo = fusegen_ld_or(pr->ldo2, pr->n2);
    g->ldr = pr->n2;
    g->bias = k->uses_bias2 ? args->bias2 : NULL;
    g->residual = k->uses_residual2 ? args->residual2 : NULL;
    for (int i = 0; i < FUSEGEN_MAX_STORES; ++i) {
        g->store[i] = args->store2[i];
        g->ld_store[i] = pr->n2;
    }
}

int fusegen__launch(const fusegen_kernel *k, const CUfunction *fns, const fusegen_problem *p,
                    const fusegen_args *args, void *workspace, cudaStream_t stream, char *why, size_t len)
{
    CUfunction found[FUSEGEN_LAUNCH_FNS];
    if (!fusegen__cu(why, len)) return 1;
    if (!fns) {
        if (launch__compiled_functions(k, found, why, len)) return 1;
        fns = found;
    }
    launch__kernel lk = {k, fns, 0, 0, stream, why, len};
    const fusegen_launch_gemm *rec1 = &k->launch1;
    cudaError_t e = fusegen__device_info(&lk.sm, &lk.sms);
    if (e != cudaSuccess) return launch__fail(e, why, len, "reading the device's multiprocessor count");
    fusegen_params g1;
    launch__gemm1_params(p, args, &g1);
    /* the block carries only the inputs the kernel reads (a split-K partial kernel prefetches
     * those it is given: SplitKReduce::prefetch_tile) */
    if (!k->uses_bias) g1.bias = NULL;
    if (!k->uses_residual) g1.residual = NULL;
    if (!k->uses_gamma) g1.gamma = NULL;
    if (!k->uses_beta) g1.beta = NULL;
    if (rec1->split_k && !k->chain)
        return launch__split_k(&lk, FUSEGEN_LAUNCH_GEMM1, FUSEGEN_LAUNCH_EPILOGUE1, rec1, &g1,
                               (float *)((char *)workspace +
                                         fusegen_ws_layout_for_split_k(1, g1.m, g1.n).partials));
    if (!k->chain) return launch__gemm_and_norm(&lk, FUSEGEN_LAUNCH_GEMM1, rec1, &g1, workspace, "GEMM1");
    if (rec1->split_k) {
        /* a split-K chain: each GEMM a partial kernel and its reduce kernel, GEMM1's into hidden;
         * GEMM2's partial sums reuse GEMM1's region (its partial kernel waits for GEMM1's reduce) */
        const int s1 = fusegen_k_slices(p->m, p->n, p->k, rec1->tile_m, rec1->tile_n, rec1->tile_k, lk.sms);
        const int s2 = fusegen_k_slices(p->m, p->n2, p->n, k->launch2.tile_m, k->launch2.tile_n, k->launch2.tile_k, lk.sms);
        const fusegen_ws_chain_split_k c =
            fusegen_ws_layout_for_chain_split_k(s1, s2, p->m, p->n, p->n2, (size_t)rec1->out_bytes);
        void *hidden = (char *)workspace + c.hidden;
        float *partials = (float *)((char *)workspace + c.partials);
        fusegen_params g2;
        g1.out = hidden;
        g1.ldo = fusegen_ws_hidden_ld(p->n);
        if (launch__split_k(&lk, FUSEGEN_LAUNCH_GEMM1, FUSEGEN_LAUNCH_EPILOGUE1, rec1, &g1, partials)) return 1;
        launch__gemm2_params(k, p, args, hidden, &g2);
        return launch__split_k(&lk, FUSEGEN_LAUNCH_GEMM2, FUSEGEN_LAUNCH_EPILOGUE2, &k->launch2, &g2, partials);
    }

    /* a chain: GEMM1 (with its norm) into the workspace's hidden part, in the out dtype; GEMM2
     * reads it as its A operand. Two or three launches on one stream, nothing else. */
    fusegen_ws_layout l = fusegen_ws_layout_for(rec1->split, rec1->tile_n, 1, (size_t)rec1->out_bytes, p->m, p->n);
    void *hidden = (char *)workspace + l.hidden;
    g1.out = hidden;
    g1.ldo = fusegen_ws_hidden_ld(p->n);
    if (launch__gemm_and_norm(&lk, FUSEGEN_LAUNCH_GEMM1, rec1, &g1, workspace, "GEMM1")) return 1;
    fusegen_params g2;
    launch__gemm2_params(k, p, args, hidden, &g2);
    return launch__gemm(&lk, FUSEGEN_LAUNCH_GEMM2, &k->launch2, &g2, 1, "GEMM2");
}
