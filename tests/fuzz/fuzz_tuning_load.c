/* fuzz_tuning_load.c - fuzz entry point over the runtime's reader of tuning files (runtime/tuning.c):
 * arbitrary bytes are loaded as a tuning file of a small fixed library on a fixed device, as
 * fusegen_tuning_load does once it has read a file; a file that loads is then queried for every
 * kernel on a few problems and cleared, so the next input starts from nothing.
 *
 * Built like fuzz_spec.c (tests/fuzz/CMakeLists.txt): with clang and -fsanitize=fuzzer,
 * libFuzzer drives LLVMFuzzerTestOneInput; otherwise replay_main.c calls it once per file of
 * tuning_corpus/. Only runtime/tuning.c is compiled in: the few runtime functions it calls are
 * defined here, the device ones answering that there is none. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusegen.h"
#include "fusegen_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- what tuning.c needs of the rest of the runtime ----------------------------------------- */

static char fuzz__detail[1024];

fusegen_status fusegen__detail_set(fusegen_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(fuzz__detail, sizeof fuzz__detail, fmt, ap);
    va_end(ap);
    return st;
}

cudaError_t fusegen__device_info(int *sm, int *sms)
{
    *sm = *sms = 0;
    return cudaErrorNoDevice;
}

cudaError_t fusegen__device_name(char *buf, size_t len)
{
    if (len > 0) buf[0] = '\0';
    return cudaErrorNoDevice;
}

void fusegen__select_memo_invalidate(void) {}

/* ---- the library and device the inputs are loaded for (tuning_corpus/ matches them) ---------- */

#define FUZZ_KERNEL(nm, spec, fam, tm, tn)                                                          \
    {.name = nm, .spec_kernel = spec, .sm = fam == FUSEGEN_FAMILY_HOPPER ? 90 : 80,                \
     .arch_specific = fam == FUSEGEN_FAMILY_HOPPER, .family = fam, .a = FUSEGEN_DTYPE_BF16,         \
     .b = FUSEGEN_DTYPE_BF16, .out = FUSEGEN_DTYPE_BF16, .b_layout = FUSEGEN_LAYOUT_NK,             \
     .epilogue = "bias", .tile_m = tm, .tile_n = tn, .tile_k = 64, .stages = 4, .threads = 256,     \
     .align_elems = 8, .uses_bias = 1, .rank = 1}

static const fusegen_kernel fuzz__kernels[] = {
    FUZZ_KERNEL("proj_sm80_64x128x64_s4", "proj", FUSEGEN_FAMILY_PORTABLE, 64, 128),
    FUZZ_KERNEL("proj_sm90a_128x256x64_s3", "proj", FUSEGEN_FAMILY_HOPPER, 128, 256),
    FUZZ_KERNEL("proj_sm90a_64x128x64_s4_splitk", "proj", FUSEGEN_FAMILY_HOPPER, 64, 128),
    FUZZ_KERNEL("tail_sm90a_128x128x64_s5", "tail", FUSEGEN_FAMILY_HOPPER, 128, 128),
};
static const fusegen_library fuzz__lib = {.name = "fuzz", .generator_version = "0.1.0",
                                          .spec_sha256 = "0123456789abcdef", .kernels = fuzz__kernels,
                                          .n_kernels = sizeof fuzz__kernels / sizeof fuzz__kernels[0]};
#define FUZZ_DEVICE "NVIDIA H100 80GB HBM3", 132, 90

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the bytes as read from a file: exactly size of them, nothing after */
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    if (size) memcpy(text, data, size);
    fusegen_status st = fusegen__tuning_load_text(&fuzz__lib, "fuzz.json", text, size, FUZZ_DEVICE);
    free(text);
    if (st != FUSEGEN_OK && !fuzz__detail[0]) {
        fprintf(stderr, "fuzz_tuning_load: status %d without a reason\n", (int)st);
        abort();
    }
    if (st == FUSEGEN_OK) {
        static const int64_t ms[] = {1, 64, 100, 4096, 65536};
        for (size_t i = 0; i < fuzz__lib.n_kernels; i++)
            for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
                fusegen_problem p;
                memset(&p, 0, sizeof p);
                p.m = ms[j], p.n = 4096, p.k = 4096, p.sm = 90;
                (void)fusegen__tuning_is_winner(&fuzz__lib, &fuzz__kernels[i], &p);
            }
        fusegen_tuning_clear(&fuzz__lib);
    }
    fuzz__detail[0] = '\0';
    return 0;
}
