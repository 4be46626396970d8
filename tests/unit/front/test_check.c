/* test_check.c - unit tests of check (each rule fires, at its pointer; valid specs pass) and
 * of the arch facts it relies on. */
#include "arch.h"
#include "front_test.h"

#ifndef FUSEGEN_SOURCE_DIR
#define FUSEGEN_SOURCE_DIR "."
#endif

/* A spec of one kernel: `kernel` holds the members after the fixed head, library is fixed. */
static void run_kernel(const char *library, const char *head, const char *rest, ft_result *r)
{
    char json[8192];
    snprintf(json, sizeof json, "{\"library\": \"%s\", \"kernels\": [{%s, %s}]}", library, head, rest);
    ft_run(json, r);
}

#define HEAD "\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\""
#define TILE "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3}]"
#define NOOPS "\"epilogue\": []"

/* The check fails with exactly `errors` errors, one line of which contains want. */
static int fires(const char *library, const char *head, const char *rest, const char *want, int errors)
{
    ft_result r;
    run_kernel(library, head, rest, &r);
    int ok = r.parse_rc == 0 && r.check_errors == errors && r.errors == errors && ft_lines_with(&r, want) >= 1;
    if (!ok) fprintf(stderr, "  wanted %d error(s) with '%s', got parse %d check %d:\n%s", errors, want, r.parse_rc,
                     r.check_errors, r.text);
    return ok;
}

static int passes(const char *library, const char *head, const char *rest)
{
    ft_result r;
    run_kernel(library, head, rest, &r);
    if (r.errors) fprintf(stderr, "  unexpected:\n%s", r.text);
    return r.parse_rc == 0 && r.check_errors == 0 && r.text[0] == '\0';
}

static void test_names(void)
{
    CHECK(passes("_lib9", HEAD, TILE ", " NOOPS));
    CHECK(fires("my-lib", HEAD, TILE ", " NOOPS, "t.json:1:13: error: /library: library name 'my-lib' is not a C identifier", 1));
    CHECK(fires("9lib", HEAD, TILE ", " NOOPS, "/library: library name '9lib' is not a C identifier", 1));
    CHECK(fires("", HEAD, TILE ", " NOOPS, "/library: library name is empty", 1));
    CHECK(fires("while", HEAD, TILE ", " NOOPS, "/library: library name 'while' is a C/C++ keyword", 1));
    CHECK(fires("__lib", HEAD, TILE ", " NOOPS, "/library: library name '__lib' is reserved in C", 1));
    CHECK(fires("l", "\"name\": \"template\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\"",
                TILE ", " NOOPS, "/kernels/0/name: kernel name 'template' is a C/C++ keyword", 1));
    CHECK(fires("l", "\"name\": \"caf\xc3\xa9\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\"",
                TILE ", " NOOPS, "/kernels/0/name: kernel name 'caf\xc3\xa9' is not a C identifier", 1));
    CHECK(fires("l", "\"name\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"arch\": [\"sm_80\"],"
                " \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\"", TILE ", " NOOPS,
                "/kernels/0/name: kernel name is 65 characters long, more than 64", 1));
    /* characters, not bytes: 40 two-byte characters are 40, and not over the limit (but not ASCII) */
    CHECK(fires("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
                HEAD, TILE ", " NOOPS, "/library: library name '\xc3\xa9\xc3\xa9", 1));
    CHECK(fires("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"
                "\xe2\x82\xac",
                HEAD, TILE ", " NOOPS, "/library: library name is 65 characters long, more than 64", 1));
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"store\", \"as\": \"a b\"}]",
                "/kernels/0/epilogue/0/as: store name 'a b' is not a C identifier", 1));

    /* duplicate kernel names, with a note at the first */
    ft_result r;
    ft_run("{\"library\": \"l\", \"kernels\": [{" HEAD ", " TILE ", " NOOPS "}, {" HEAD ", " TILE ", " NOOPS "}]}", &r);
    CHECK(r.check_errors == 1);
    CHECK(ft_lines_with(&r, "error: /kernels/1/name: duplicate kernel name 'k'") == 1);
    CHECK(ft_lines_with(&r, "t.json:1:39: note: /kernels/0/name: first defined here") == 1);
}

static void test_types_and_archs(void)
{
    CHECK(fires("l", "\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"f16\", \"out\": \"bf16\"",
                TILE ", " NOOPS, "/kernels/0/b: b is f16 but a is bf16: the tensor-core MMA needs both operands of one type", 1));
    CHECK(fires("l", HEAD ", \"accum\": \"bf16\"", TILE ", " NOOPS, "/kernels/0/accum: accum bf16 is not supported (expected: f32)", 1));
    CHECK(fires("l", "\"name\": \"k\", \"arch\": [\"sm_80\", \"sm_90\", \"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\"",
                TILE ", " NOOPS, "/kernels/0/arch/2: duplicate arch 'sm_80'", 1));
    CHECK(passes("l", "\"name\": \"k\", \"arch\": [\"sm_80\", \"sm_86\", \"sm_89\", \"sm_90\", \"sm_90a\"], \"a\": \"f16\","
                 " \"b\": \"f16\", \"out\": \"f32\"", "\"tiles\": [{\"m\": 64, \"n\": 64, \"k\": 32, \"stages\": 2}], " NOOPS));
}

static void test_tiles(void)
{
    /* a scheduled tile with B [K, N]: n 128 passes, n 160 (not whole 64-column blocks) fires */
    CHECK(passes("l", "\"name\": \"k\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", "
                 "\"b_layout\": \"kn\"",
                 "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4, \"schedule\": \"pingpong\"}], " NOOPS));
    CHECK(fires("l", "\"name\": \"k\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", "
                "\"b_layout\": \"kn\"",
                "\"tiles\": [{\"m\": 128, \"n\": 160, \"k\": 64, \"stages\": 4}], " NOOPS,
                "/kernels/0/tiles/0/n: tile n 160 is the Hopper family's, which takes b_layout \"kn\" for tile n 64, 128 "
                "or 256 only", 1));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 48, \"n\": 128, \"k\": 64, \"stages\": 3}], " NOOPS,
                "/kernels/0/tiles/0/m: tile m 48 is not supported (expected: 32, 64, 128, 256)", 1));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 64, \"n\": 512, \"k\": 64, \"stages\": 3}], " NOOPS,
                "/kernels/0/tiles/0/n: tile n 512 is not supported", 1));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 64, \"n\": 64, \"k\": 128, \"stages\": 3}], " NOOPS,
                "/kernels/0/tiles/0/k: tile k 128 is not supported (expected: 32, 64)", 1));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 64, \"n\": 64, \"k\": 64, \"stages\": 1}], " NOOPS,
                "/kernels/0/tiles/0/stages: stages 1 out of range (expected 2 to 5; up to 16 for a tile that is the Hopper "
                "family's alone: one that names a schedule)", 1));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 64, \"n\": 64, \"k\": 64, \"stages\": 6}], " NOOPS,
                "/kernels/0/tiles/0/stages: stages 6 out of range", 1));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": -1, \"n\": 0, \"k\": 64, \"stages\": 9}], " NOOPS,
                "/kernels/0/tiles/0/m: tile m -1", 3));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 256, \"n\": 256, \"k\": 32, \"stages\": 2}], " NOOPS,
                "/kernels/0/tiles/0: tile 256x256 holds 65536 accumulators, more than the 32768", 1));
    /* 128x256x64, 4 stages: 221184 bytes; fits sm_90a, not sm_86 nor sm_80 */
    CHECK(fires("l", "\"name\": \"k\", \"arch\": [\"sm_90a\", \"sm_86\", \"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\"",
                "\"tiles\": [{\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 4}], " NOOPS,
                "/kernels/0/tiles/0: tile 128x256x64 with 4 stages needs 221184 bytes of shared memory, more than "
                "the 101376 bytes sm_86 allows", 2));
    CHECK(fires("l", "\"name\": \"k\", \"arch\": [\"sm_90a\", \"sm_86\", \"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\"",
                "\"tiles\": [{\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 4}], " NOOPS,
                "more than the 166912 bytes sm_80 allows", 2));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 64, \"n\": 64, \"k\": 64, \"stages\": 3}, {\"m\": 128, \"n\": 64, \"k\": 64,"
                " \"stages\": 3}, {\"stages\": 3, \"k\": 64, \"n\": 64, \"m\": 64}], " NOOPS,
                "/kernels/0/tiles/2: duplicate tile 64x64x64 with 3 stages", 1));
    /* "schedule": the Hopper family's; ping-pong takes m 64, or m 128 with n <= 128 */
#define H90 "\"name\": \"k\", \"arch\": [\"sm_90a\", \"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\""
#define H90A "\"name\": \"k\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\""
    CHECK(passes("l", H90, "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 5, \"schedule\": \"pingpong\"},"
                 " {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3}], " NOOPS));
    /* ... and is not a portable tile: it does not make a too-large portable tile acceptable */
    CHECK(fires("l", H90, "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3, \"schedule\": \"pingpong\"},"
                " {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 5}], " NOOPS,
                "/kernels/0/tiles/1: tile 128x128x64 with 5 stages needs 184320 bytes of shared memory, more than "
                "the 166912 bytes sm_80 allows", 1));
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 3, \"schedule\": \"pingpong\"}], " NOOPS,
                "/kernels/0/tiles/0/schedule: tile 128x256x64 cannot take schedule 'pingpong'", 1));
    /* a 64-row cooperative tile splits the columns: each half a wgmma n (64, 128 or 160) */
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 64, \"n\": 160, \"k\": 64, \"stages\": 3, \"schedule\": \"cooperative\"}], " NOOPS,
                "/kernels/0/tiles/0/schedule: tile 64x160x64 cannot take schedule 'cooperative'", 1));
    /* ... and takes the row strategy alone */
    CHECK(passes("l", H90A, "\"tiles\": [{\"m\": 64, \"n\": 320, \"k\": 64, \"stages\": 3, \"schedule\": \"cooperative\"}], "
                 "\"epilogue\": [{\"op\": \"layernorm\", \"strategy\": \"row\"}]"));
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 64, \"n\": 320, \"k\": 64, \"stages\": 3, \"schedule\": \"cooperative\"}], "
                "\"epilogue\": [{\"op\": \"rmsnorm\", \"strategy\": \"split\"}]",
                "/kernels/0/tiles/0/schedule: tile 64x320x64 with schedule 'cooperative' splits the columns between the "
                "warpgroups and takes the row strategy alone, but the norm asks for strategy 'split'", 1));
    /* a 64x320 ping-pong warpgroup keeps 160 accumulators a thread (two n160 wgmmas); 3 stages
     * with two staged tile buffers fit (4 without them), 5 do not; a split norm is allowed when
     * asked for */
    CHECK(passes("l", H90A, "\"tiles\": [{\"m\": 64, \"n\": 320, \"k\": 64, \"stages\": 3, \"schedule\": \"pingpong\"}], " NOOPS));
    CHECK(passes("l", H90A, "\"tiles\": [{\"m\": 64, \"n\": 320, \"k\": 64, \"stages\": 3}], "
                 "\"epilogue\": [{\"op\": \"rmsnorm\", \"strategy\": \"split\"}]"));
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 64, \"n\": 320, \"k\": 64, \"stages\": 5}], " NOOPS,
                "needs 247424 bytes of shared memory", 1));
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 128, \"n\": 320, \"k\": 64, \"stages\": 2}], " NOOPS,
                "/kernels/0/tiles/0/n: tile 128x320x64 cannot take schedule 'cooperative'", 1));
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 64, \"n\": 320, \"k\": 64, \"stages\": 5, \"schedule\": \"cooperative\"}], " NOOPS,
                "needs 247392 bytes of shared memory", 1));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3, \"schedule\": \"pingpong\"}], " NOOPS,
                "schedule 'pingpong' is the Hopper family's, which needs \"sm_90a\"", 1));
    /* the same shape with the schedule its m implies is the same tile */
    CHECK(fires("l", H90, "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3},"
                " {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3, \"schedule\": \"cooperative\"}], " NOOPS,
                "/kernels/0/tiles/1: duplicate tile 128x128x64 with 3 stages", 1));
    CHECK(fires("l", H90, "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4, \"schedule\": \"pingpong\"}], " NOOPS,
                "/kernels/0/tiles/0: every tile names a schedule or has n 160 or 320 (the Hopper family's alone), so none "
                "serves sm_80", 1));
    /* n 160: the Hopper family's alone (no portable kernel), cooperative at m 128, ping-pong at m 64 */
    CHECK(passes("l", H90, "\"tiles\": [{\"m\": 128, \"n\": 160, \"k\": 64, \"stages\": 5},"
                 " {\"m\": 64, \"n\": 160, \"k\": 64, \"stages\": 4}, {\"m\": 128, \"n\": 128, \"k\": 64,"
                 " \"stages\": 3}], " NOOPS));
    CHECK(fires("l", H90, "\"tiles\": [{\"m\": 128, \"n\": 160, \"k\": 64, \"stages\": 4}], " NOOPS,
                "/kernels/0/tiles/0: every tile names a schedule or has n 160", 1));
    CHECK(fires("l", HEAD, "\"tiles\": [{\"m\": 128, \"n\": 160, \"k\": 64, \"stages\": 3}], " NOOPS,
                "/kernels/0/tiles/0/n: tile n 160 is the Hopper family's, which needs \"sm_90a\"", 1));
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 128, \"n\": 160, \"k\": 64, \"stages\": 3, \"schedule\": \"pingpong\"}], "
                NOOPS, "/kernels/0/tiles/0/schedule: tile 128x160x64 cannot take schedule 'pingpong'", 1));
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 256, \"n\": 160, \"k\": 64, \"stages\": 3}], " NOOPS,
                "/kernels/0/tiles/0/n: tile 256x160x64 cannot take schedule 'cooperative'", 1));
    CHECK(fires("l", H90A, "\"tiles\": [{\"m\": 128, \"n\": 96, \"k\": 64, \"stages\": 3}], " NOOPS,
                "/kernels/0/tiles/0/n: tile n 96 is not supported (expected: 32, 64, 128, 256; 160 or 320 on sm_90a)", 1));
#undef H90
#undef H90A
    /* the chain's tiles are checked as well */
    CHECK(fires("l", HEAD, TILE ", " NOOPS ", \"then\": {\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 48, \"stages\": 3}],"
                " \"epilogue\": []}", "/kernels/0/then/tiles/0/k: tile k 48 is not supported", 1));
}

static void test_epilogues(void)
{
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"layernorm\", \"eps\": 0}]",
                "/kernels/0/epilogue/0/eps: eps must be a positive normal f32 (1.1754943508222875e-38 to 3.4028234663852886e+38), found 0", 1));
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"rmsnorm\", \"eps\": -1e-6}]",
                "/kernels/0/epilogue/0/eps: eps must be a positive normal f32 (1.1754943508222875e-38 to 3.4028234663852886e+38), found -1e-06", 1));
    /* a limit and a value that differ never print the same (%g printed both as 3.40282e+38) */
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 3.4028235e38}]",
                "/kernels/0/epilogue/0/alpha: alpha must be finite in f32 (|alpha| <= 3.4028234663852886e+38), found "
                "3.4028235e+38", 1));
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"residual\", \"beta\": -3.40282347e38}]",
                "found -3.40282347e+38", 1));
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"rmsnorm\", \"eps\": 1.1754942e-38}]",
                "found 1.1754942e-38", 1));
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"layernorm\"}, {\"op\": \"relu\"}, {\"op\": \"layernorm\"}]",
                "/kernels/0/epilogue/2: a second norm (layernorm) in one epilogue", 1));
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"store\", \"as\": \"s1\"}, {\"op\": \"store\", \"as\": \"s2\"},"
                " {\"op\": \"store\", \"as\": \"s3\"}, {\"op\": \"store\", \"as\": \"s4\"}, {\"op\": \"store\", \"as\": \"s5\"}]",
                "/kernels/0/epilogue/4: more than 4 store ops in one epilogue", 1));
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"store\", \"as\": \"h\"}, {\"op\": \"relu\"},"
                " {\"op\": \"store\", \"as\": \"h\"}]", "/kernels/0/epilogue/2/as: duplicate store name 'h'", 1));
    CHECK(fires("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"store\", \"as\": \"h\"}], \"then\": {\"epilogue\":"
                " [{\"op\": \"store\", \"as\": \"h\"}]}", "/kernels/0/then/epilogue/0/as: duplicate store name 'h'", 1));
    CHECK(passes("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"store\", \"as\": \"a\"}, {\"op\": \"store\", \"as\": \"b\"},"
                 " {\"op\": \"store\", \"as\": \"c\"}, {\"op\": \"store\", \"as\": \"d\"}], \"then\": {\"epilogue\":"
                 " [{\"op\": \"store\", \"as\": \"e\"}]}"));
}

static void test_chains(void)
{
    CHECK(fires("l", "\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"f32\"",
                TILE ", " NOOPS ", \"then\": {\"epilogue\": []}",
                "/kernels/0/out: a chain (\"then\") needs out f16 or bf16, found f32", 1));
    CHECK(fires("l", "\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"f16\"",
                TILE ", " NOOPS ", \"then\": {\"epilogue\": []}",
                "/kernels/0/out: a chain (\"then\") needs out of b's type (bf16), found f16", 1));
    CHECK(fires("l", HEAD, TILE ", " NOOPS ", \"then\": {\"epilogue\": [{\"op\": \"layernorm\"}]}",
                "/kernels/0/then/epilogue/0: layernorm in the epilogue of a chain's second GEMM is not supported yet", 1));
    CHECK(passes("l", HEAD, TILE ", \"epilogue\": [{\"op\": \"bias\"}, {\"op\": \"residual\"}, {\"op\": \"layernorm\"}],"
                 " \"then\": {\"b_layout\": \"kn\", \"epilogue\": [{\"op\": \"bias\"}, {\"op\": \"relu\"}]}"));
    /* f32 output is fine without a chain */
    CHECK(passes("l", "\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"f32\"", TILE ", " NOOPS));
}

/* Two kernels of one library: `first` and `second` hold the members after each one's name. */
static void run_pair(const char *first, const char *second, ft_result *r)
{
    char json[8192];
    snprintf(json, sizeof json, "{\"library\": \"l\", \"kernels\": [{\"name\": \"a\", %s}, {\"name\": \"b\", %s}]}",
             first, second);
    ft_run(json, r);
}

#define PAIR_HEAD "\"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", " TILE
#define PAIR_HEAD_N256 "\"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", " \
    "\"tiles\": [{\"m\": 128, \"n\": 256, \"k\": 32, \"stages\": 3}]"

/* The pair fails with one error (plus its note), whose line contains want, or passes (want NULL). */
static int pair(const char *first, const char *second, const char *want, const char *note)
{
    ft_result r;
    run_pair(first, second, &r);
    int ok = want ? r.parse_rc == 0 && r.check_errors == 1 && ft_lines_with(&r, want) == 1 &&
                        (!note || ft_lines_with(&r, note) == 1)
                  : r.parse_rc == 0 && r.check_errors == 0 && r.text[0] == '\0';
    if (!ok) fprintf(stderr, "  wanted %s '%s', got parse %d check %d:\n%s", want ? "an error" : "no error",
                     want ? want : "", r.parse_rc, r.check_errors, r.text);
    return ok;
}

/* Two spec kernels that the dispatch cannot tell apart (same dtypes, B layouts and signatures)
 * must compute the same: the constants are not part of what a problem names. */
static void test_dispatch_twins(void)
{
    /* issue 36's case: scale 0.5 + bias on 128x128, scale 2 + bias on 128x256 */
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 0.5}, {\"op\": \"bias\"}]",
               PAIR_HEAD_N256 ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 2.0}, {\"op\": \"bias\"}]",
               "error: /kernels/1/epilogue/0/alpha: kernels 'a' and 'b' have the same dtypes, B layout and epilogue "
               "'scale+bias' but different constants (alpha 2 here, 0.5 in 'a')",
               "note: /kernels/0/epilogue/0/alpha: 'a' has alpha 0.5 here"));
    /* a default value is located at its op */
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"residual\", \"beta\": 0.25}]",
               PAIR_HEAD_N256 ", \"epilogue\": [{\"op\": \"residual\"}]",
               "error: /kernels/1/epilogue/0: kernels 'a' and 'b' have the same dtypes, B layout and epilogue "
               "'residual' but different constants (beta 1 here, 0.25 in 'a')",
               "note: /kernels/0/epilogue/0/beta: 'a' has beta 0.25 here"));
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"bias\"}, {\"op\": \"layernorm\"}]",
               PAIR_HEAD ", \"epilogue\": [{\"op\": \"bias\"}, {\"op\": \"layernorm\", \"eps\": 1e-6}]",
               "/kernels/1/epilogue/1/eps: kernels 'a' and 'b' have the same dtypes, B layout and epilogue "
               "'bias+layernorm' but different constants (eps 1e-06 here, 1e-05 in 'a')", "note: /kernels/0/epilogue/1:"));
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"rmsnorm\", \"affine\": true}]",
               PAIR_HEAD ", \"epilogue\": [{\"op\": \"rmsnorm\", \"affine\": false}]",
               "/kernels/1/epilogue/0/affine: kernels 'a' and 'b' have the same dtypes, B layout and epilogue "
               "'rmsnorm' but different constants (affine false here, true in 'a')", NULL));
    /* a chain's GEMM2 constants count too; the signature names both GEMMs */
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"bias\"}], \"then\": {\"epilogue\": [{\"op\": \"scale\", \"alpha\": 3}]}",
               PAIR_HEAD ", \"epilogue\": [{\"op\": \"bias\"}], \"then\": {\"epilogue\": [{\"op\": \"scale\", \"alpha\": 4}]}",
               "/kernels/1/then/epilogue/0/alpha: kernels 'a' and 'b' have the same dtypes, B layout and epilogue "
               "'bias' then 'scale' but different constants (alpha 4 here, 3 in 'a')", NULL));
    /* what the dispatch does tell apart: dtypes, B layouts, the signature (gelu vs gelu_tanh), chains */
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 0.5}]",
               "\"arch\": [\"sm_80\"], \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f16\", " TILE
               ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 2}]", NULL, NULL));
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 0.5}]",
               PAIR_HEAD ", \"b_layout\": \"kn\", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 2}]", NULL, NULL));
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 0.5}, {\"op\": \"gelu\"}]",
               PAIR_HEAD ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 2}, {\"op\": \"gelu\", \"approximate\": \"tanh\"}]",
               NULL, NULL));
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 0.5}]",
               PAIR_HEAD ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 2}], \"then\": {\"epilogue\": []}", NULL, NULL));
    /* same constants: two kernels for one problem are fine (more tiles to choose from); and the
     * strategy and store names change how and where, not what */
    CHECK(pair(PAIR_HEAD ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 0.5}, {\"op\": \"store\", \"as\": \"x\"},"
               " {\"op\": \"layernorm\", \"strategy\": \"row\"}]",
               PAIR_HEAD_N256 ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 0.5}, {\"op\": \"store\", \"as\": \"y\"},"
               " {\"op\": \"layernorm\", \"strategy\": \"split\"}]", NULL, NULL));
}

static void test_valid_files(void)
{
    static const char *const files[] = {"specs/default.json", "specs/examples/bert.json", "specs/examples/llm.json",
                                        "specs/examples/sd.json", "specs/examples/chain.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FUSEGEN_SOURCE_DIR, files[i]);
        size_t len = 0;
        char *text = ft_read_file(path, &len);
        CHECK(text != NULL);
        if (!text) {
            fprintf(stderr, "  cannot read %s\n", path);
            continue;
        }
        ft_result r;
        ft_run_n(text, len, &r, NULL, NULL);
        if (r.errors) fprintf(stderr, "  %s:\n%s", files[i], r.text);
        CHECK(r.parse_rc == 0 && r.check_errors == 0 && r.text[0] == '\0');
        free(text);
    }
}

static void test_model_robustness(void)
{
    /* a model that a failed parse left partial: absent parts are skipped, not reported again */
    fg_arch archs[2] = {FG_ARCH_NONE, FG_ARCH_SM80};
    fg_kernel_spec k;
    memset(&k, 0, sizeof k);
    k.ptr = "/kernels/0";
    k.name = "k";   /* names are never absent after a parse: check reports a missing one */
    k.archs = archs;
    k.n_archs = 2;
    fg_spec s;
    memset(&s, 0, sizeof s);
    s.kernels = &k;
    s.n_kernels = 1;
    s.library = "lib";
    fg_diag d;
    FILE *f = tmpfile();
    fg_diag_init(&d, f);
    fg_diag_set_source(&d, "m.json", NULL, 0);
    CHECK(fg_check_spec(&s, &d) == 0);
    if (f) fclose(f);
}

static void test_arch(void)
{
    CHECK(fg_arch_smem_limit(FG_ARCH_SM80) == 166912);
    CHECK(fg_arch_smem_limit(FG_ARCH_SM86) == 101376);
    CHECK(fg_arch_smem_limit(FG_ARCH_SM89) == 101376);
    CHECK(fg_arch_smem_limit(FG_ARCH_SM90) == 232448);
    CHECK(fg_arch_smem_limit(FG_ARCH_SM90A) == 232448);
    CHECK(fg_arch_smem_limit(FG_ARCH_NONE) == 0);
    CHECK(fg_arch_sm80_tile_m_ok(32) && fg_arch_sm80_tile_m_ok(256) && !fg_arch_sm80_tile_m_ok(16) &&
          !fg_arch_sm80_tile_m_ok(96) && !fg_arch_sm80_tile_m_ok(512));
    CHECK(fg_arch_sm80_tile_n_ok(64) && !fg_arch_sm80_tile_n_ok(0));
    CHECK(fg_arch_sm80_tile_k_ok(32) && fg_arch_sm80_tile_k_ok(64) && !fg_arch_sm80_tile_k_ok(128) &&
          !fg_arch_sm80_tile_k_ok(16));
    CHECK(!fg_arch_stages_ok(1, false) && fg_arch_stages_ok(2, false) && fg_arch_stages_ok(5, false) &&
          !fg_arch_stages_ok(6, false));
    CHECK(!fg_arch_stages_ok(1, true) && fg_arch_stages_ok(6, true) && fg_arch_stages_ok(16, true) &&
          !fg_arch_stages_ok(17, true));   /* a tile that is the Hopper family's alone */
    int wm, wn;
    fg_arch_sm80_warps(128, 128, &wm, &wn);
    CHECK(wm == 2 && wn == 4);
    fg_arch_sm80_warps(128, 256, &wm, &wn);
    CHECK(wm == 2 && wn == 4);
    fg_arch_sm80_warps(256, 128, &wm, &wn);
    CHECK(wm == 4 && wn == 2);
    fg_arch_sm80_warps(64, 128, &wm, &wn);
    CHECK(wm == 2 && wn == 2);
    fg_arch_sm80_warps(64, 256, &wm, &wn);
    CHECK(wm == 2 && wn == 4);
    /* stages * (m*(k+8) + max(n*(k+8), k*(n+8))) * 2 */
    CHECK(fg_arch_sm80_smem_bytes(128, 128, 64, 3) == 3u * (128 * 72 + 128 * 72) * 2);   /* 110592 */
    CHECK(fg_arch_sm80_smem_bytes(64, 256, 32, 4) == 4u * (64 * 40 + 256 * 40) * 2);     /* n*(k+8) larger */
    CHECK(fg_arch_sm80_smem_bytes(64, 32, 64, 2) == 2u * (64 * 72 + 64 * 40) * 2);       /* k*(n+8) larger */
    CHECK(fg_arch_sm80_smem_bytes(128, 256, 64, 4) == 221184);
    CHECK(fg_arch_sm80_smem_bytes(0, 64, 64, 3) == 0);
    /* the layout-exact form: "nk" keeps n rows of k + 8, "kn" k rows of n + 8 */
    CHECK(fg_arch_sm80_layout_smem_bytes(64, 32, 64, 2, false) == 2u * (64 * 72 + 32 * 72) * 2);
    CHECK(fg_arch_sm80_layout_smem_bytes(64, 32, 64, 2, true) == 2u * (64 * 72 + 64 * 40) * 2);
    /* Hopper: stages * ((m + n) * 128 + 16) + 16 + m * 4 [+ 16 + 2 * ranks * m * 4: the cluster
     * exchange's mbarriers and slots] + staged inputs + 1024 */
    CHECK(fg_arch_sm90_smem_bytes(128, 256, 3, false, 0, 0) == 3u * (384 * 128 + 16) + 16 + 512 + 1024);
    CHECK(fg_arch_sm90_smem_bytes(128, 128, 3, false, 8, 100) ==
          3u * (256 * 128 + 16) + 16 + 512 + 16 + 8192 + 100 + 1024);
    CHECK(fg_arch_sm90_smem_bytes(128, 128, 3, false, 16, 100) ==
          3u * (256 * 128 + 16) + 16 + 512 + 16 + 16384 + 100 + 1024);
    /* the tile buffer (m rows of n * out_bytes, no padding: TMA boxes), then one bias row */
    CHECK(fg_arch_sm90_staged_inputs_bytes(128, 256, 2, true, true, false, 0) == 128u * 512 + 512);
    CHECK(fg_arch_sm90_staged_inputs_bytes(128, 128, 4, false, true, false, 0) == 512u);
    CHECK(fg_arch_sm90_staged_inputs_bytes(128, 128, 2, false, false, false, 0) == 0u);
    /* a ring of two 128-byte column blocks instead of the whole 128 x 256 tile */
    CHECK(fg_arch_sm90_staged_inputs_bytes(128, 256, 2, true, false, false, 2) == 128u * 256);
    /* ping-pong: two epilogue buffers (barriers, scratch, staged inputs), and an order barrier
     * a consumer warpgroup; 4 stages of 64x256 with bf16 staging fit sm_90a */
    CHECK(fg_arch_sm90_epilogue_buffers(true) == 2 && fg_arch_sm90_epilogue_buffers(false) == 1);
    CHECK(fg_arch_sm90_tile_ok(64, 256, 64, true) && !fg_arch_sm90_tile_ok(32, 256, 64, true) &&
          !fg_arch_sm90_tile_ok(64, 256, 32, true));
    CHECK(fg_arch_sm90_staged_inputs_bytes(64, 256, 2, true, true, true, 0) == 2u * (64 * 512 + 512));
    CHECK(fg_arch_sm90_smem_bytes(64, 256, 4, true, 0, 66560) == 4u * (320 * 128 + 16) + 32 + 16 + 512 + 66560 + 1024);
    CHECK(fg_arch_sm90_smem_bytes(64, 256, 4, true, 0, 66560) <= fg_arch_smem_limit(FG_ARCH_SM90A));
    /* the schedule: by m unless named; m 64 is ping-pong only; a ping-pong warpgroup keeps at
     * most 64x256 accumulators, so 128-row ping-pong tiles are at most 128 wide */
    CHECK(fg_arch_sm90_pingpong(64, FG_SCHEDULE_AUTO) && !fg_arch_sm90_pingpong(128, FG_SCHEDULE_AUTO));
    CHECK(fg_arch_sm90_pingpong(128, FG_SCHEDULE_PINGPONG) && !fg_arch_sm90_pingpong(64, FG_SCHEDULE_COOPERATIVE));
    CHECK(fg_arch_sm90_tile_ok(128, 256, 64, false) && !fg_arch_sm90_tile_ok(128, 320, 64, false));
    /* cooperative at m 64: the warpgroups split the columns, each half a wgmma n; 64x320 takes
     * 160-column halves (80 accumulators a thread); a 64x320 ping-pong warpgroup holds 160 (two
     * n160 wgmmas), no other ping-pong warpgroup more than 128 */
    CHECK(fg_arch_sm90_tile_ok(64, 256, 64, false) && fg_arch_sm90_tile_ok(64, 320, 64, false) &&
          fg_arch_sm90_tile_ok(64, 128, 64, false) && !fg_arch_sm90_tile_ok(64, 160, 64, false) &&
          fg_arch_sm90_tile_ok(64, 320, 64, true) && !fg_arch_sm90_tile_ok(64, 64, 64, false) &&
          !fg_arch_sm90_tile_ok(128, 320, 64, true) && !fg_arch_sm90_tile_ok(128, 160, 64, true));
    /* ... with two staged tile buffers, 3 stages fit (232288 of 232448 bytes); 4 only without */
    CHECK(fg_arch_sm90_smem_bytes(64, 320, 3, true, 0, fg_arch_sm90_staged_inputs_bytes(64, 320, 2, true, true, true, 0)) ==
          3u * (384 * 128 + 16) + 32 + 16 + 2u * 256 + 2u * (64 * 640 + 640) + 1024);
    CHECK(fg_arch_sm90_smem_bytes(64, 320, 3, true, 0, fg_arch_sm90_staged_inputs_bytes(64, 320, 2, true, true, true, 0)) <=
          fg_arch_smem_limit(FG_ARCH_SM90A));
    CHECK(fg_arch_sm90_builds(64, 320, 64, 4, true) && !fg_arch_sm90_builds(64, 320, 64, 5, true));
    CHECK(fg_arch_sm90_smem_bytes(64, 320, 4, true, 0, fg_arch_sm90_staged_inputs_bytes(64, 320, 2, true, true, true, 0)) >
          fg_arch_smem_limit(FG_ARCH_SM90A));
    CHECK(fg_arch_sm90_only(320, FG_SCHEDULE_AUTO));
    /* its row sums take two floats a row (a half each): 3 stages with bf16 staging fit */
    CHECK(fg_arch_sm90_smem_bytes(64, 320, 3, false, 0, fg_arch_sm90_staged_inputs_bytes(64, 320, 2, true, true, false, 0)) ==
          3u * (384 * 128 + 16) + 16 + 512 + (64 * 640 + 640) + 1024);
    CHECK(fg_arch_sm90_builds(64, 320, 64, 3, false) && !fg_arch_sm90_builds(64, 320, 64, 5, false));
    CHECK(fg_arch_sm90_tile_ok(128, 128, 64, true) && !fg_arch_sm90_tile_ok(128, 256, 64, true));
    /* 128x128 ping-pong with 5 stages and bf16 staging (two 32 KB tile buffers) just fits */
    CHECK(fg_arch_sm90_smem_bytes(128, 128, 5, true, 0, fg_arch_sm90_staged_inputs_bytes(128, 128, 2, true, true, true, 0)) ==
          5u * (256 * 128 + 16) + 32 + 16 + 1024 + 2u * (128 * 256 + 256) + 1024);
    CHECK(fg_arch_sm90_smem_bytes(128, 128, 5, true, 0, fg_arch_sm90_staged_inputs_bytes(128, 128, 2, true, true, true, 0)) <=
          fg_arch_smem_limit(FG_ARCH_SM90A));
    /* what the Hopper family builds: shape, and shared memory without the staged inputs */
    CHECK(fg_arch_sm90_builds(64, 256, 64, 4, true) && fg_arch_sm90_builds(128, 256, 64, 4, false));
    CHECK(!fg_arch_sm90_builds(128, 256, 64, 5, false) && !fg_arch_sm90_builds(128, 256, 32, 3, false));
    CHECK(fg_arch_sm90_builds(128, 128, 64, 5, true) && !fg_arch_sm90_builds(128, 256, 64, 3, true));
    /* n 160: Hopper only; cooperative at m 128, ping-pong at m 64 (not m 128: 128x160
     * accumulators a warpgroup); 5 stages with bf16 staging just fit (227232 bytes) */
    CHECK(fg_arch_sm90_tile_ok(128, 160, 64, false) && fg_arch_sm90_tile_ok(64, 160, 64, true) &&
          !fg_arch_sm90_tile_ok(128, 160, 64, true) && !fg_arch_sm90_tile_ok(128, 96, 64, false));
    CHECK(fg_arch_sm90_only(160, FG_SCHEDULE_AUTO) && fg_arch_sm90_only(128, FG_SCHEDULE_PINGPONG) &&
          !fg_arch_sm90_only(128, FG_SCHEDULE_AUTO) && !fg_arch_sm90_only(256, FG_SCHEDULE_AUTO));
    /* B [K, N] comes in whole 64-column blocks: n 64, 128, 256; [N, K] suits every tile */
    CHECK(fg_arch_sm90_b_layout_ok(FG_LAYOUT_KN, 64) && fg_arch_sm90_b_layout_ok(FG_LAYOUT_KN, 128) &&
          fg_arch_sm90_b_layout_ok(FG_LAYOUT_KN, 256) && !fg_arch_sm90_b_layout_ok(FG_LAYOUT_KN, 160) &&
          !fg_arch_sm90_b_layout_ok(FG_LAYOUT_KN, 320) && fg_arch_sm90_b_layout_ok(FG_LAYOUT_NK, 160) &&
          fg_arch_sm90_b_layout_ok(FG_LAYOUT_NK, 320));
    CHECK(fg_arch_sm90_smem_bytes(128, 160, 5, false, 0, fg_arch_sm90_staged_inputs_bytes(128, 160, 2, true, true, false, 0)) ==
          227232u);
    CHECK(fg_arch_sm90_smem_bytes(128, 160, 5, false, 0, fg_arch_sm90_staged_inputs_bytes(128, 160, 2, true, true, false, 0)) <=
          fg_arch_smem_limit(FG_ARCH_SM90A));
    /* the tile buffer's row width: 64 bytes only where a row is not whole 128-byte blocks */
    CHECK(fg_arch_sm90_epilogue_row_bytes(160, 2) == 64 && fg_arch_sm90_epilogue_row_bytes(160, 4) == 128 &&
          fg_arch_sm90_epilogue_row_bytes(256, 2) == 128 && fg_arch_sm90_epilogue_row_bytes(64, 2) == 128);
}

int main(void)
{
    test_names();
    test_types_and_archs();
    test_tiles();
    test_epilogues();
    test_chains();
    test_dispatch_twins();
    test_valid_files();
    test_model_robustness();
    test_arch();
    return ft_report();
}
