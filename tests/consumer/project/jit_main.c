/* jit_main.c - the consumer's JIT program: the installed fusegen::jit makes a kernel library from
 * a spec given as text, compiled with NVRTC for sm_80 without the disk cache (no GPU needed),
 * and a bad spec gives FUSEGEN_ERR_SPEC with a located diagnostic.
 *
 * Exits 0 on success, 1 on failure, and 77 (skipped) when NVRTC cannot be loaded. */
#include <stdio.h>
#include <string.h>

#include "fusegen_jit.h"

#define EXIT_SKIP 77

static const char spec[] =
    "{ \"library\": \"consumer_jit\", \"kernels\": [ {\n"
    "    \"name\": \"bias_gelu\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\",\n"
    "    \"tiles\": [ {\"m\": 64, \"n\": 64, \"k\": 32, \"stages\": 3} ],\n"
    "    \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"gelu\"} ] } ] }\n";

static const char bad_spec[] = "{ \"library\": \"consumer_jit\", \"kernels\": [ { \"name\": 7 } ] }\n";

int main(void)
{
    fusegen_jit *jit = NULL;
    fusegen_status st = fusegen_jit_create(bad_spec, strlen(bad_spec), "bad.json", &jit);
    if (st != FUSEGEN_ERR_SPEC || jit || !strstr(fusegen_last_detail(), "bad.json:1:")) {
        fprintf(stderr, "a bad spec gave %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        return 1;
    }

    st = fusegen_jit_create(spec, strlen(spec), "consumer_jit.json", &jit);
    if (st != FUSEGEN_OK) {
        fprintf(stderr, "fusegen_jit_create: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
        return 1;
    }
    fusegen_jit_options opts;
    memset(&opts, 0, sizeof opts);
    opts.arch = "sm_80";
    opts.no_cache = 1;
    st = fusegen_jit_compile(jit, &opts, NULL);
    if (st == FUSEGEN_ERR_COMPILE && strstr(fusegen_last_detail(), "NVRTC cannot be loaded")) {
        printf("skipped: %s\n", fusegen_last_detail());
        fusegen_jit_destroy(jit);
        return EXIT_SKIP;
    }
    const fusegen_library *lib = fusegen_jit_library(jit);
    const int ok = st == FUSEGEN_OK && lib && lib->n_kernels == 2 && strcmp(fusegen_jit_arch(jit), "sm_80") == 0;   /* the tile and its split-K form */
    if (ok)
        printf("jit: %s compiled for %s: %s\n", lib->name, fusegen_jit_arch(jit), lib->kernels[0].name);
    else
        fprintf(stderr, "fusegen_jit_compile: %s: %s\n", fusegen_status_name(st), fusegen_last_detail());
    fusegen_jit_destroy(jit);
    return ok ? 0 : 1;
}
