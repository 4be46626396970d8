/* gpu_util.c - see gpu_util.h. */
#include "gpu_util.h"

#include <math.h>
#include <string.h>
#include <time.h>

/* ---- 16-bit floats ------------------------------------------------------------------------ */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t gpu_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)              /* NaN: keep it a quiet NaN */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Round to nearest even on the 16 dropped bits; a carry into the exponent is the right
     * result (up to infinity for the largest values). */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float gpu_bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

uint16_t gpu_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t ax = u & 0x7FFFFFFFu;

    if (ax >= 0x7F800000u)                              /* inf or NaN */
        return (uint16_t)(sign | (ax > 0x7F800000u ? 0x7E00u : 0x7C00u));
    if (ax >= 0x477FF000u)                              /* >= 65520 rounds to infinity */
        return (uint16_t)(sign | 0x7C00u);
    if (ax < 0x38800000u) {                             /* below 2^-14: f16 subnormal or zero */
        if (ax < 0x33000000u)                           /* below 2^-25: rounds to zero */
            return sign;
        /* value = mant * 2^(e - 150) with the implicit bit; in units of 2^-24 (the f16
         * subnormal step) that is mant >> (126 - e), with 14 <= 126 - e <= 24. */
        uint32_t e = ax >> 23;
        uint32_t mant = (ax & 0x007FFFFFu) | 0x00800000u;
        uint32_t shift = 126u - e;
        uint32_t r = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u)))
            r++;                                        /* may carry into the smallest normal */
        return (uint16_t)(sign | r);
    }
    /* Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits. */
    uint32_t v = ax - 0x38000000u;
    v += 0x0FFFu + ((v >> 13) & 1u);
    return (uint16_t)(sign | (v >> 13));
}

float gpu_f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = ((uint32_t)h >> 10) & 0x1Fu;
    uint32_t m = (uint32_t)h & 0x3FFu;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    if (e == 31)
        return bits_f32(sign | 0x7F800000u | (m << 13));
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

size_t gpu_dtype_size(fusegen_dtype t)
{
    return t == FUSEGEN_DTYPE_F32 ? 4u : 2u;
}

const char *gpu_dtype_name(fusegen_dtype t)
{
    switch (t) {
    case FUSEGEN_DTYPE_F16: return "f16";
    case FUSEGEN_DTYPE_BF16: return "bf16";
    case FUSEGEN_DTYPE_F32: return "f32";
    }
    return "?";
}

void gpu_encode(fusegen_dtype t, double v, void *dst)
{
    float f = (float)v;
    uint16_t h;
    switch (t) {
    case FUSEGEN_DTYPE_F16:
        h = gpu_f32_to_f16(f);
        memcpy(dst, &h, 2);
        return;
    case FUSEGEN_DTYPE_BF16:
        h = gpu_f32_to_bf16(f);
        memcpy(dst, &h, 2);
        return;
    case FUSEGEN_DTYPE_F32:
        memcpy(dst, &f, 4);
        return;
    }
}

double gpu_decode(fusegen_dtype t, const void *src)
{
    uint16_t h;
    float f;
    switch (t) {
    case FUSEGEN_DTYPE_F16:
        memcpy(&h, src, 2);
        return gpu_f16_to_f32(h);
    case FUSEGEN_DTYPE_BF16:
        memcpy(&h, src, 2);
        return gpu_bf16_to_f32(h);
    case FUSEGEN_DTYPE_F32:
        memcpy(&f, src, 4);
        return f;
    }
    return NAN;
}

double gpu_round_to(fusegen_dtype t, double v)
{
    unsigned char tmp[4];
    gpu_encode(t, v, tmp);
    return gpu_decode(t, tmp);
}

/* ---- random numbers ----------------------------------------------------------------------- */

void gpu_rng_seed(gpu_rng *r, uint64_t seed)
{
    r->state = seed;
}

uint64_t gpu_rng_next(gpu_rng *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double gpu_rng_uniform(gpu_rng *r, double lo, double hi)
{
    double u = (double)(gpu_rng_next(r) >> 11) * 0x1.0p-53;
    return lo + (hi - lo) * u;
}

uint64_t gpu_test_seed(void)
{
    const char *env = getenv("FUSEGEN_TEST_SEED");
    if (env && *env)
        return (uint64_t)strtoull(env, NULL, 0);
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) == 0)
        return (uint64_t)time(NULL);
    gpu_rng mix;
    gpu_rng_seed(&mix, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
    return gpu_rng_next(&mix) & 0xFFFFFFFFFFFFull;  /* short enough to type back in */
}

/* ---- errors ------------------------------------------------------------------------------- */

void gpu_l2_add(gpu_l2 *e, double out, double ref)
{
    e->count++;
    if (!isfinite(out)) {
        e->nonfinite++;
        return;
    }
    double d = out - ref;
    e->num += d * d;
    e->den += ref * ref;
}

double gpu_l2_rel(const gpu_l2 *e)
{
    if (e->nonfinite > 0)
        return INFINITY;
    if (e->den == 0.0)
        return sqrt(e->num);
    return sqrt(e->num / e->den);
}

int gpu_have_device(void)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n <= 0) {
        if (err != cudaSuccess)
            (void)cudaGetLastError();   /* clear it */
        printf("no CUDA device: skipping (%s)\n",
               err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0");
        return 0;
    }
    return 1;
}

/* ---- tensors ------------------------------------------------------------------------------ */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

void gpu_tensor_init(gpu_tensor *t, fusegen_dtype dtype, int64_t rows, int64_t cols, int64_t ld)
{
    memset(t, 0, sizeof *t);
    t->dtype = dtype;
    t->rows = rows;
    t->cols = cols;
    t->ld = ld > 0 ? ld : cols;
    t->bytes = (size_t)rows * (size_t)t->ld * gpu_dtype_size(dtype) + GPU_GUARD_BYTES;
    t->host = xmalloc(t->bytes);
    memset(t->host, 0xFF, t->bytes);
    t->val = xmalloc((size_t)rows * (size_t)cols * sizeof(double));
    for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
        t->val[i] = NAN;
}

static unsigned char *elem_ptr(const gpu_tensor *t, int64_t r, int64_t c)
{
    return t->host + ((size_t)r * (size_t)t->ld + (size_t)c) * gpu_dtype_size(t->dtype);
}

void gpu_tensor_set(gpu_tensor *t, int64_t r, int64_t c, double v)
{
    unsigned char *p = elem_ptr(t, r, c);
    gpu_encode(t->dtype, v, p);
    t->val[r * t->cols + c] = gpu_decode(t->dtype, p);
}

void gpu_tensor_fill_uniform(gpu_tensor *t, gpu_rng *rng, double lo, double hi)
{
    for (int64_t r = 0; r < t->rows; r++)
        for (int64_t c = 0; c < t->cols; c++)
            gpu_tensor_set(t, r, c, gpu_rng_uniform(rng, lo, hi));
}

void gpu_tensor_upload(gpu_tensor *t)
{
    GPU_CHECK(cudaMalloc(&t->dev, t->bytes));
    GPU_CHECK(cudaMemcpy(t->dev, t->host, t->bytes, cudaMemcpyHostToDevice));
}

void gpu_tensor_alloc_output(gpu_tensor *t)
{
    GPU_CHECK(cudaMalloc(&t->dev, t->bytes));
    GPU_CHECK(cudaMemset(t->dev, 0xFF, t->bytes));
}

void gpu_tensor_poison(gpu_tensor *t, cudaStream_t s)
{
    if (t->dev)
        GPU_CHECK(cudaMemsetAsync(t->dev, 0xFF, t->bytes, s));
}

void gpu_tensor_download(gpu_tensor *t)
{
    GPU_CHECK(cudaMemcpy(t->host, t->dev, t->bytes, cudaMemcpyDeviceToHost));
    for (int64_t r = 0; r < t->rows; r++)
        for (int64_t c = 0; c < t->cols; c++)
            t->val[r * t->cols + c] = gpu_decode(t->dtype, elem_ptr(t, r, c));
}

size_t gpu_tensor_stray_bytes(const gpu_tensor *t)
{
    size_t es = gpu_dtype_size(t->dtype), stray = 0;
    size_t row_bytes = (size_t)t->cols * es, pitch = (size_t)t->ld * es;
    for (int64_t r = 0; r < t->rows; r++) {
        const unsigned char *p = t->host + (size_t)r * pitch;
        for (size_t i = row_bytes; i < pitch; i++)
            stray += p[i] != 0xFF;
    }
    for (size_t i = (size_t)t->rows * pitch; i < t->bytes; i++)
        stray += t->host[i] != 0xFF;
    return stray;
}

long gpu_tensor_nonfinite(const gpu_tensor *t)
{
    long n = 0;
    for (size_t i = 0; i < (size_t)t->rows * (size_t)t->cols; i++)
        n += !isfinite(t->val[i]);
    return n;
}

int gpu_tensor_all_poison(const gpu_tensor *t)
{
    for (size_t i = 0; i < t->bytes; i++)
        if (t->host[i] != 0xFF)
            return 0;
    return 1;
}

long gpu_tensor_poison_elems(const gpu_tensor *t)
{
    size_t es = gpu_dtype_size(t->dtype);
    long n = 0;
    for (int64_t r = 0; r < t->rows; r++)
        for (int64_t c = 0; c < t->cols; c++) {
            const unsigned char *p = elem_ptr(t, r, c);
            size_t i = 0;
            while (i < es && p[i] == 0xFF)
                i++;
            n += i == es;
        }
    return n;
}

void gpu_tensor_free(gpu_tensor *t)
{
    if (t->dev)
        GPU_CHECK(cudaFree(t->dev));
    free(t->host);
    free(t->val);
    memset(t, 0, sizeof *t);
}

/* ---- cases -------------------------------------------------------------------------------- */

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

int64_t gpu_out_cols(const fusegen_kernel *k, int64_t n)
{
    for (int i = 0; i < k->n_ops; i++)
        if (k->ops[i].kind == FUSEGEN_OP_SWIGLU || k->ops[i].kind == FUSEGEN_OP_GEGLU)
            return n / 2;
    return n;
}

void gpu_make_problem(const fusegen_kernel *k, const gpu_shape *s, fusegen_problem *p)
{
    memset(p, 0, sizeof *p);
    p->m = s->m;
    p->n = s->n;
    p->k = s->k;
    p->n2 = k->chain ? s->n2 : 0;
    p->a = k->a;
    p->b = k->b;
    p->out = k->out;
    p->b_layout = k->b_layout;
    p->b2_layout = k->b2_layout;
    p->epilogue = k->epilogue;
    p->epilogue2 = k->chain ? k->epilogue2 : NULL;
    p->sm = 0;
    if (!s->padded)
        return;
    int64_t al = k->align_elems > 0 ? k->align_elems : 1;
    p->lda = s->k + round_up(8, al);
    p->ldb = (k->b_layout == FUSEGEN_LAYOUT_NK ? s->k : s->n) + round_up(16, al);
    const int64_t n_out = gpu_out_cols(k, s->n);
    p->ldo = n_out + round_up(16, al);
    p->ldr = n_out + round_up(8, al);
    for (int i = 0; i < k->n_stores && i < FUSEGEN_MAX_STORES; i++)
        p->ld_store[i] = n_out + round_up(8 * (i + 1), al);
    if (k->chain) {
        p->ldb2 = (k->b2_layout == FUSEGEN_LAYOUT_NK ? s->n : s->n2) + round_up(8, al);
        /* residual2 and store2 have no leading dimension of their own in the problem; keep
         * out2 packed when they exist so that no convention is assumed. */
        if (!k->uses_residual2 && k->n_stores2 == 0)
            p->ldo2 = s->n2 + round_up(8, al);
    }
}

void gpu_case_init(gpu_case *c, const fusegen_kernel *k, const gpu_shape *s, gpu_rng *rng)
{
    memset(c, 0, sizeof *c);
    c->kern = k;
    gpu_make_problem(k, s, &c->p);
    const fusegen_problem *p = &c->p;
    int64_t M = p->m, N = p->n, K = p->k;

    gpu_tensor_init(&c->a, k->a, M, K, p->lda);
    gpu_tensor_fill_uniform(&c->a, rng, -1.0, 1.0);
    if (k->b_layout == FUSEGEN_LAYOUT_NK)
        gpu_tensor_init(&c->b, k->b, N, K, p->ldb);
    else
        gpu_tensor_init(&c->b, k->b, K, N, p->ldb);
    double bs = sqrt(3.0 / (double)K);
    gpu_tensor_fill_uniform(&c->b, rng, -bs, bs);

    /* the epilogue's tensors: N columns, or N / 2 after a gated activation */
    const int64_t NO = gpu_out_cols(k, N);
    gpu_tensor_init(&c->bias, k->out, 1, NO, 0);
    gpu_tensor_fill_uniform(&c->bias, rng, -1.0, 1.0);
    gpu_tensor_init(&c->res, k->out, M, NO, p->ldr);
    gpu_tensor_fill_uniform(&c->res, rng, -1.0, 1.0);
    gpu_tensor_init(&c->gamma, k->out, 1, NO, 0);
    gpu_tensor_fill_uniform(&c->gamma, rng, 0.5, 1.5);
    gpu_tensor_init(&c->beta, k->out, 1, NO, 0);
    gpu_tensor_fill_uniform(&c->beta, rng, -0.5, 0.5);

    gpu_tensor_init(&c->out, k->out, M, NO, p->ldo);
    for (int i = 0; i < k->n_stores && i < FUSEGEN_MAX_STORES; i++)
        gpu_tensor_init(&c->store[i], k->out, M, NO, p->ld_store[i]);

    if (k->chain) {
        int64_t N2 = p->n2;
        if (k->b2_layout == FUSEGEN_LAYOUT_NK)
            gpu_tensor_init(&c->b2, k->b, N2, N, p->ldb2);
        else
            gpu_tensor_init(&c->b2, k->b, N, N2, p->ldb2);
        double bs2 = sqrt(3.0 / (double)N);
        gpu_tensor_fill_uniform(&c->b2, rng, -bs2, bs2);
        gpu_tensor_init(&c->bias2, k->out, 1, N2, 0);
        gpu_tensor_fill_uniform(&c->bias2, rng, -1.0, 1.0);
        gpu_tensor_init(&c->res2, k->out, M, N2, 0);
        gpu_tensor_fill_uniform(&c->res2, rng, -1.0, 1.0);
        gpu_tensor_init(&c->out2, k->out, M, N2, p->ldo2);
        for (int i = 0; i < k->n_stores2 && i < FUSEGEN_MAX_STORES; i++)
            gpu_tensor_init(&c->store2[i], k->out, M, N2, 0);
    }
}

static void upload_if(gpu_tensor *t)
{
    if (t->host)
        gpu_tensor_upload(t);
}

static void alloc_output_if(gpu_tensor *t)
{
    if (t->host)
        gpu_tensor_alloc_output(t);
}

fusegen_status gpu_case_upload(gpu_case *c)
{
    const fusegen_kernel *k = c->kern;
    size_t need = 0;
    fusegen_status st = fusegen_workspace_size(k, &c->p, &need);
    if (st != FUSEGEN_OK)
        return st;
    c->ws_bytes = need;
    c->ws_alloc = need < 256 ? 256 : (need + 255u) / 256u * 256u;
    GPU_CHECK(cudaMalloc(&c->ws, c->ws_alloc));
    GPU_CHECK(cudaMemset(c->ws, 0xFF, c->ws_alloc));

    upload_if(&c->a);
    upload_if(&c->b);
    upload_if(&c->bias);
    upload_if(&c->res);
    upload_if(&c->gamma);
    upload_if(&c->beta);
    alloc_output_if(&c->out);
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        alloc_output_if(&c->store[i]);
    upload_if(&c->b2);
    upload_if(&c->bias2);
    upload_if(&c->res2);
    alloc_output_if(&c->out2);
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        alloc_output_if(&c->store2[i]);

    fusegen_args *a = &c->args;
    memset(a, 0, sizeof *a);
    a->a = c->a.dev;
    a->b = c->b.dev;
    a->out = c->out.dev;
    a->bias = k->uses_bias ? c->bias.dev : NULL;
    a->residual = k->uses_residual ? c->res.dev : NULL;
    a->gamma = k->uses_gamma ? c->gamma.dev : NULL;
    a->beta = k->uses_beta ? c->beta.dev : NULL;
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        a->store[i] = c->store[i].dev;
    if (k->chain) {
        a->b2 = c->b2.dev;
        a->out2 = c->out2.dev;
        a->bias2 = k->uses_bias2 ? c->bias2.dev : NULL;
        a->residual2 = k->uses_residual2 ? c->res2.dev : NULL;
        for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
            a->store2[i] = c->store2[i].dev;
    }
    return FUSEGEN_OK;
}

void gpu_case_poison(gpu_case *c, cudaStream_t s)
{
    gpu_tensor_poison(&c->out, s);
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        gpu_tensor_poison(&c->store[i], s);
    gpu_tensor_poison(&c->out2, s);
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        gpu_tensor_poison(&c->store2[i], s);
    if (c->ws)
        GPU_CHECK(cudaMemsetAsync(c->ws, 0xFF, c->ws_alloc, s));
}

fusegen_status gpu_case_run(gpu_case *c, cudaStream_t s)
{
    return fusegen_run(c->kern, &c->p, &c->args, c->ws, c->ws_alloc, s);
}

static void download_if(gpu_tensor *t)
{
    if (t->host && t->dev)
        gpu_tensor_download(t);
}

void gpu_case_download(gpu_case *c)
{
    download_if(&c->out);
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        download_if(&c->store[i]);
    download_if(&c->out2);
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        download_if(&c->store2[i]);
}

void gpu_case_free(gpu_case *c)
{
    gpu_tensor_free(&c->a);
    gpu_tensor_free(&c->b);
    gpu_tensor_free(&c->bias);
    gpu_tensor_free(&c->res);
    gpu_tensor_free(&c->gamma);
    gpu_tensor_free(&c->beta);
    gpu_tensor_free(&c->out);
    gpu_tensor_free(&c->b2);
    gpu_tensor_free(&c->bias2);
    gpu_tensor_free(&c->res2);
    gpu_tensor_free(&c->out2);
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++) {
        gpu_tensor_free(&c->store[i]);
        gpu_tensor_free(&c->store2[i]);
    }
    if (c->ws)
        GPU_CHECK(cudaFree(c->ws));
    memset(c, 0, sizeof *c);
}
