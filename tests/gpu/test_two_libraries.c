/* Two kernel libraries linked into one program, each with a spec kernel named `proj` whose
 * epilogue differs only in a constant (scale alpha 0.5 in fusegen_twin_a, 2.0 in
 * fusegen_twin_b, then bias). Every variant of each library that can run on this device must
 * compute its own library's epilogue: had the two libraries shared a C++ symbol (a launcher, a
 * template instantiation), the linker would have kept one body for both and one library would
 * run the other's code. Against a float64 reference; outputs poisoned before each run. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fusegen_twin_a.h"
#include "fusegen_twin_b.h"
#include "gpu_util.h"

static int g_pass, g_fail;

/* rel. L2 error of out = alpha * A B^T + bias (bf16 out: the tolerance of docs/testing.md) */
#define TWIN_TOLERANCE 1e-2

static double twin_error(const gpu_case *c, double alpha)
{
    gpu_l2 e = {0};
    const int64_t m = c->p.m, n = c->p.n, k = c->p.k;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double dot = 0.0;
            for (int64_t x = 0; x < k; ++x) dot += c->a.val[i * k + x] * c->b.val[j * k + x];
            gpu_l2_add(&e, c->out.val[i * n + j], alpha * dot + c->bias.val[j]);
        }
    return gpu_l2_rel(&e);
}

static void run_library(const fusegen_library *lib, double alpha, double other_alpha, gpu_rng *rng,
                        cudaStream_t stream)
{
    /* a shape most variants cover with several tiles, and a decode-sized one for split K */
    static const gpu_shape shapes[] = {{"256x384x512", 256, 384, 512, 0, 0}, {"8x256x2048", 8, 256, 2048, 0, 0}};
    int ran = 0;
    for (size_t i = 0; i < lib->n_kernels; ++i) {
        const fusegen_kernel *k = &lib->kernels[i];
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
            gpu_case c;
            fusegen_problem probe;
            char why[256];
            gpu_make_problem(k, &shapes[s], &probe);
            if (fusegen_why_not(k, &probe, why, sizeof why)) continue;   /* not on this device */
            gpu_case_init(&c, k, &shapes[s], rng);
            fusegen_status st = gpu_case_upload(&c);
            if (st == FUSEGEN_OK) {
                gpu_case_poison(&c, stream);
                st = gpu_case_run(&c, stream);
            }
            if (st != FUSEGEN_OK) {
                printf("FAIL %s %s %s: %s\n", lib->name, k->name, shapes[s].label, fusegen_last_detail());
                g_fail++;
                gpu_case_free(&c);
                continue;
            }
            GPU_CHECK(cudaStreamSynchronize(stream));
            gpu_case_download(&c);
            const double err = twin_error(&c, alpha), err_other = twin_error(&c, other_alpha);
            /* its own constant, and not the other library's (which would be far off) */
            const int ok = err <= TWIN_TOLERANCE && err_other > 10 * TWIN_TOLERANCE;
            printf("%s %s %s %s: rel. L2 error %.2e (against the other library's epilogue %.2e)\n",
                   ok ? "PASS" : "FAIL", lib->name, k->name, shapes[s].label, err, err_other);
            if (ok) g_pass++; else g_fail++;
            ran++;
            gpu_case_free(&c);
        }
    }
    if (ran == 0) {
        printf("FAIL %s: no variant can run on this device\n", lib->name);
        g_fail++;
    }
}

int main(void)
{
    uint64_t seed = gpu_test_seed();
    printf("fusegen two-libraries test; seed %llu\n", (unsigned long long)seed);
    if (!gpu_have_device()) return GPU_SKIP_EXIT;
    cudaStream_t stream;
    GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    gpu_rng rng;
    gpu_rng_seed(&rng, seed);
    run_library(&fusegen_twin_a_library, 0.5, 2.0, &rng, stream);
    run_library(&fusegen_twin_b_library, 2.0, 0.5, &rng, stream);
    GPU_CHECK(cudaStreamDestroy(stream));
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
