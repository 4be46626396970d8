/* test_graph.c - fusegen_run under CUDA graph capture.
 *
 * Captures, in cudaStreamCaptureModeGlobal, fusegen_run of one split-strategy norm kernel and
 * of one chain kernel of the default library into a graph, instantiates and launches it (twice),
 * and compares every output byte with a direct run of the same kernels on the same inputs.
 * Capture fails if run synchronizes, allocates or copies between host and device.
 *
 * Exit status: 0 on success, 1 on any failure, 77 without a CUDA device. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusegen.h"
#include "fusegen_default.h"
#include "gpu_util.h"

static int g_pass, g_fail;

static void report(int ok, const char *what, const char *note)
{
    printf("%s  %-28s %s\n", ok ? "PASS" : "FAIL", what, note ? note : "");
    if (ok)
        g_pass++;
    else
        g_fail++;
    fflush(stdout);
}

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static int has_norm(const fusegen_kernel *k)
{
    for (int i = 0; i < k->n_ops; i++)
        if (k->ops[i].kind == FUSEGEN_OP_LAYERNORM || k->ops[i].kind == FUSEGEN_OP_RMSNORM)
            return 1;
    return 0;
}

/* The shape kernel k is run at: M with a tail, N = 1000 or the row kernel's largest N; a cluster
 * kernel's clusters get 9 thread blocks (past the portable 8: the launch that allows non-portable
 * sizes is captured too) where its max_n allows. */
static gpu_shape shape_for(const fusegen_kernel *k)
{
    int64_t al = k->align_elems > 0 ? k->align_elems : 1;
    int64_t n = round_up(1000, al);
    if (k->strategy == FUSEGEN_STRATEGY_CLUSTER && k->max_n > 8 * (int64_t)k->tile_n)
        n = round_up(8 * (int64_t)k->tile_n + 8, al);
    if ((k->strategy == FUSEGEN_STRATEGY_ROW || k->strategy == FUSEGEN_STRATEGY_CLUSTER) && k->max_n > 0 &&
        k->max_n < n)
        n = k->max_n / al * al;
    gpu_shape s = {"graph", 1003, n, round_up(1000, al), k->chain ? round_up(520, al) : 0, 0};
    if (k->split_k) {   /* few rows, long K: several slices */
        s.m = 37;
        s.k = round_up(2056, al);
    }
    return s;
}

static int eligible(const fusegen_kernel *k)
{
    char why[512];
    fusegen_problem p;
    gpu_shape s = shape_for(k);
    gpu_make_problem(k, &s, &p);
    return fusegen_why_not(k, &p, why, sizeof why) == NULL;
}

static const fusegen_kernel *find_split_norm(const fusegen_library *lib)
{
    for (size_t i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        if (!k->chain && k->strategy == FUSEGEN_STRATEGY_SPLIT && has_norm(k) && eligible(k))
            return k;
    }
    return NULL;
}

/* A split-K kernel with a norm (a partial kernel, then a reduce as a dependent launch). */
static const fusegen_kernel *find_split_k_norm(const fusegen_library *lib)
{
    for (size_t i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        if (k->split_k && has_norm(k) && eligible(k))
            return k;
    }
    return NULL;
}

/* A cluster-strategy norm kernel (launched with cluster dimensions), when one can run here. */
static const fusegen_kernel *find_cluster_norm(const fusegen_library *lib)
{
    for (size_t i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        if (!k->chain && k->strategy == FUSEGEN_STRATEGY_CLUSTER && eligible(k))
            return k;
    }
    return NULL;
}

/* A chain kernel, a split one when there is one (two launches to capture). */
static const fusegen_kernel *find_chain(const fusegen_library *lib)
{
    const fusegen_kernel *any = NULL;
    for (size_t i = 0; i < lib->n_kernels; i++) {
        const fusegen_kernel *k = &lib->kernels[i];
        if (!k->chain || !eligible(k))
            continue;
        if (k->strategy == FUSEGEN_STRATEGY_SPLIT)
            return k;
        if (!any)
            any = k;
    }
    return any;
}

/* The outputs of a case, in a fixed order. */
static int case_outputs(gpu_case *c, gpu_tensor **t)
{
    int n = 0;
    t[n++] = &c->out;
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        if (c->store[i].host)
            t[n++] = &c->store[i];
    if (c->out2.host)
        t[n++] = &c->out2;
    for (int i = 0; i < FUSEGEN_MAX_STORES; i++)
        if (c->store2[i].host)
            t[n++] = &c->store2[i];
    return n;
}

typedef struct saved {
    int n;
    unsigned char *bytes[2 + 2 * FUSEGEN_MAX_STORES];
} saved;

static void save(gpu_case *c, saved *s)
{
    gpu_tensor *t[2 + 2 * FUSEGEN_MAX_STORES];
    s->n = case_outputs(c, t);
    for (int i = 0; i < s->n; i++) {
        s->bytes[i] = malloc(t[i]->bytes);
        if (!s->bytes[i]) {
            fprintf(stderr, "out of host memory\n");
            exit(1);
        }
        memcpy(s->bytes[i], t[i]->host, t[i]->bytes);
    }
}

static size_t differ(gpu_case *c, const saved *s)
{
    gpu_tensor *t[2 + 2 * FUSEGEN_MAX_STORES];
    int n = case_outputs(c, t);
    size_t d = 0;
    for (int i = 0; i < n && i < s->n; i++)
        for (size_t j = 0; j < t[i]->bytes; j++)
            d += t[i]->host[j] != s->bytes[i][j];
    return d;
}

static void unsave(saved *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->bytes[i]);
    s->n = 0;
}

/* Outputs that the kernel must have written: the main output (except for a chain, whose
 * GEMM1 result may stay in the workspace), stores, and GEMM2's outputs. */
static long unwritten(gpu_case *c)
{
    gpu_tensor *t[2 + 2 * FUSEGEN_MAX_STORES];
    int n = case_outputs(c, t);
    long bad = 0;
    for (int i = 0; i < n; i++) {
        if (t[i] == &c->out && c->kern->chain)
            continue;
        bad += gpu_tensor_poison_elems(t[i]) + gpu_tensor_nonfinite(t[i]);
    }
    return bad;
}

static int run_direct(gpu_case *c, cudaStream_t stream)
{
    fusegen_status st = gpu_case_run(c, stream);
    if (st != FUSEGEN_OK) {
        char note[600];
        snprintf(note, sizeof note, "%s: %s: %s", c->kern->name, fusegen_status_name(st),
                 fusegen_last_detail());
        report(0, "direct run", note);
        return 0;
    }
    return 1;
}

int main(void)
{
    uint64_t seed = gpu_test_seed();
    printf("fusegen CUDA graph test; seed %llu\n", (unsigned long long)seed);
    if (!gpu_have_device())
        return GPU_SKIP_EXIT;

    const fusegen_library *lib = &fusegen_default_library;
    const fusegen_kernel *ks = find_split_norm(lib), *kc = find_chain(lib), *ksk = find_split_k_norm(lib);
    if (!ks || !kc || !ksk) {
        report(0, "kernels", !ks ? "no split-strategy norm kernel can run here"
                             : !kc ? "no chain kernel can run here" : "no split-K norm kernel can run here");
        printf("%d passed, %d failed\n", g_pass, g_fail);
        return 1;
    }
    printf("split norm kernel: %s\nchain kernel: %s\nsplit-K norm kernel: %s\n", ks->name, kc->name, ksk->name);
    const fusegen_kernel *kcl = find_cluster_norm(lib);
    printf("cluster norm kernel: %s\n", kcl ? kcl->name : "(none can run here)");

    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    gpu_rng rng;
    gpu_rng_seed(&rng, seed);

    gpu_case cs[4];
    const fusegen_kernel *kk[4] = {ks, kc, ksk, kcl};
    const int n_k = kcl ? 4 : 3;
    for (int i = 0; i < n_k; i++) {
        gpu_shape s = shape_for(kk[i]);
        gpu_case_init(&cs[i], kk[i], &s, &rng);
        fusegen_status st = gpu_case_upload(&cs[i]);
        if (st != FUSEGEN_OK) {
            char note[600];
            snprintf(note, sizeof note, "%s: fusegen_workspace_size: %s: %s", kk[i]->name,
                     fusegen_status_name(st), fusegen_last_detail());
            report(0, "setup", note);
            printf("%d passed, %d failed\n", g_pass, g_fail);
            return 1;
        }
    }

    /* Direct runs: the expected bytes. */
    saved want[4] = {{0, {NULL}}, {0, {NULL}}, {0, {NULL}}, {0, {NULL}}};
    int direct_ok = 1;
    for (int i = 0; i < n_k; i++)
        gpu_case_poison(&cs[i], stream);
    for (int i = 0; i < n_k; i++)
        direct_ok &= run_direct(&cs[i], stream);
    GPU_CHECK(cudaStreamSynchronize(stream));
    GPU_CHECK(cudaGetLastError());
    for (int i = 0; i < n_k; i++) {
        gpu_case_download(&cs[i]);
        save(&cs[i], &want[i]);
        long bad = unwritten(&cs[i]);
        char note[200];
        snprintf(note, sizeof note, "%s: %ld output elements unwritten or not finite",
                 kk[i]->name, bad);
        if (direct_ok)
            report(bad == 0, "direct outputs", note);
    }

    /* Capture both runs. */
    int graph_ok = direct_ok;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (graph_ok) {
        for (int i = 0; i < n_k; i++)
            gpu_case_poison(&cs[i], stream);
        GPU_CHECK(cudaStreamSynchronize(stream));
        GPU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        fusegen_status st[4];
        char detail[4][400];
        for (int i = 0; i < n_k; i++) {
            st[i] = gpu_case_run(&cs[i], stream);
            snprintf(detail[i], sizeof detail[i], "%s", fusegen_last_detail());
        }
        cudaError_t cap = cudaStreamEndCapture(stream, &graph);
        for (int i = 0; i < n_k; i++) {
            char note[600];
            snprintf(note, sizeof note, "%s: %s%s%s", kk[i]->name, fusegen_status_name(st[i]),
                     st[i] == FUSEGEN_OK ? "" : ": ", st[i] == FUSEGEN_OK ? "" : detail[i]);
            report(st[i] == FUSEGEN_OK, "run under capture", note);
            graph_ok &= st[i] == FUSEGEN_OK;
        }
        size_t nodes = 0;
        if (cap == cudaSuccess && graph)
            cap = cudaGraphGetNodes(graph, NULL, &nodes);
        char note[200];
        snprintf(note, sizeof note, "cudaStreamEndCapture: %s; %zu graph nodes",
                 cudaGetErrorName(cap), nodes);
        report(cap == cudaSuccess && graph && nodes > 0, "capture", note);
        graph_ok &= cap == cudaSuccess && graph != NULL && nodes > 0;
        if (cap != cudaSuccess)
            (void)cudaGetLastError();   /* a capture error is not sticky; clear it */
    }
    if (graph_ok) {
        cudaError_t ie = cudaGraphInstantiate(&exec, graph, 0);
        report(ie == cudaSuccess, "instantiate", cudaGetErrorName(ie));
        graph_ok &= ie == cudaSuccess;
        if (ie != cudaSuccess)
            (void)cudaGetLastError();
    }
    for (int rep = 0; graph_ok && rep < 2; rep++) {
        for (int i = 0; i < n_k; i++)
            gpu_case_poison(&cs[i], stream);
        GPU_CHECK(cudaGraphLaunch(exec, stream));
        GPU_CHECK(cudaStreamSynchronize(stream));
        GPU_CHECK(cudaGetLastError());
        for (int i = 0; i < n_k; i++) {
            gpu_case_download(&cs[i]);
            size_t d = differ(&cs[i], &want[i]);
            char note[200];
            snprintf(note, sizeof note, "%s: launch %d: %zu bytes differ from the direct run",
                     kk[i]->name, rep + 1, d);
            report(d == 0, "graph == direct", note);
        }
    }

    if (exec)
        GPU_CHECK(cudaGraphExecDestroy(exec));
    if (graph)
        GPU_CHECK(cudaGraphDestroy(graph));
    for (int i = 0; i < n_k; i++) {
        unsave(&want[i]);
        gpu_case_free(&cs[i]);
    }
    GPU_CHECK(cudaStreamDestroy(stream));
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail == 0 ? 0 : 1;
}
