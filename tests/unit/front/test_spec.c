/* test_spec.c - unit tests of spec parsing: the canonical form, defaults, chains, and the
 * representational errors (each reported, all of them, at the right place). */
#include <math.h>

#include "front_test.h"

static const char canonical[] =
    "{ \"library\": \"example\",\n"
    "  \"kernels\": [ { \"name\": \"proj_bias_residual_layernorm\", \"arch\": [\"sm_90a\", \"sm_80\"],\n"
    "      \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", \"accum\": \"f32\", \"b_layout\": \"nk\",\n"
    "      \"tiles\": [ {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3} ],\n"
    "      \"epilogue\": [ {\"op\": \"bias\"}, {\"op\": \"residual\"}, {\"op\": \"store\", \"as\": \"pre_norm\"},\n"
    "                    {\"op\": \"layernorm\", \"eps\": 1e-5}, {\"op\": \"relu\"} ] } ] }\n";

static void test_canonical(void)
{
    fg_arena a;
    fg_spec s;
    ft_result r;
    fg_arena_init(&a);
    ft_run_n(canonical, (size_t)-1, &r, &a, &s);
    CHECK(r.parse_rc == 0);
    CHECK(r.check_errors == 0);
    CHECK(r.text[0] == '\0');
    CHECK(strcmp(s.library, "example") == 0);
    CHECK(strcmp(s.path, "t.json") == 0);
    CHECK(s.text_len == strlen(canonical) && memcmp(s.text, canonical, s.text_len) == 0);
    CHECK(strlen(s.sha256_hex) == 64);
    CHECK(s.n_kernels == 1);
    const fg_kernel_spec *k = &s.kernels[0];
    CHECK(strcmp(k->ptr, "/kernels/0") == 0);
    CHECK(strcmp(k->name, "proj_bias_residual_layernorm") == 0);
    CHECK(k->n_archs == 2 && k->archs[0] == FG_ARCH_SM90A && k->archs[1] == FG_ARCH_SM80);
    CHECK(k->a == FG_DTYPE_BF16 && k->b == FG_DTYPE_BF16 && k->out == FG_DTYPE_BF16 && k->accum == FG_DTYPE_F32);
    CHECK(k->gemm.b_layout == FG_LAYOUT_NK);
    CHECK(strcmp(k->gemm.ptr, "/kernels/0") == 0);
    CHECK(k->gemm.n_tiles == 1);
    CHECK(k->gemm.tiles[0].m == 128 && k->gemm.tiles[0].n == 128 && k->gemm.tiles[0].k == 64 &&
          k->gemm.tiles[0].stages == 3);
    CHECK(strcmp(k->gemm.tiles[0].ptr, "/kernels/0/tiles/0") == 0);
    CHECK(k->gemm.n_ops == 5);
    CHECK(k->gemm.ops[0].kind == FG_OP_BIAS);
    CHECK(k->gemm.ops[1].kind == FG_OP_RESIDUAL && k->gemm.ops[1].value == 1.0);
    CHECK(k->gemm.ops[2].kind == FG_OP_STORE && strcmp(k->gemm.ops[2].as, "pre_norm") == 0);
    CHECK(k->gemm.ops[3].kind == FG_OP_LAYERNORM && k->gemm.ops[3].value == 1e-5 && k->gemm.ops[3].affine &&
          k->gemm.ops[3].strategy == FG_STRATEGY_AUTO);
    CHECK(k->gemm.ops[4].kind == FG_OP_RELU);
    CHECK(strcmp(k->gemm.ops[3].ptr, "/kernels/0/epilogue/3") == 0);
    CHECK(!k->has_then);
    fg_arena_free(&a);
}

static void test_defaults_and_params(void)
{
    static const char json[] =
        "{\"$schema\": \"../schema.json\", \"library\": \"l\", \"kernels\": [{\"name\": \"k\", \"arch\": [\"sm_86\"],"
        " \"a\": \"f16\", \"b\": \"f16\", \"out\": \"f32\", \"tiles\": [{\"m\": 64, \"n\": 64, \"k\": 32, \"stages\": 2}],"
        " \"epilogue\": [{\"op\": \"scale\"}, {\"op\": \"scale\", \"alpha\": -0.25}, {\"op\": \"residual\", \"beta\": 2},"
        " {\"op\": \"gelu\"}, {\"op\": \"gelu\", \"approximate\": \"tanh\"}, {\"op\": \"gelu\", \"approximate\": \"none\"},"
        " {\"op\": \"silu\"}, {\"op\": \"rmsnorm\"}, {\"op\": \"layernorm\", \"affine\": false, \"strategy\": \"split\","
        " \"eps\": 1e-3}, {\"op\": \"rmsnorm\", \"strategy\": \"row\"}]}]}";
    fg_arena a;
    fg_spec s;
    ft_result r;
    fg_arena_init(&a);
    ft_run_n(json, (size_t)-1, &r, &a, &s);
    CHECK(r.parse_rc == 0);
    const fg_kernel_spec *k = &s.kernels[0];
    CHECK(k->accum == FG_DTYPE_F32 && k->out == FG_DTYPE_F32 && k->a == FG_DTYPE_F16);
    CHECK(k->gemm.b_layout == FG_LAYOUT_NK);
    CHECK(k->gemm.n_ops == 10);
    const fg_op *o = k->gemm.ops;
    CHECK(o[0].kind == FG_OP_SCALE && o[0].value == 1.0);
    CHECK(o[1].value == -0.25);
    CHECK(o[2].kind == FG_OP_RESIDUAL && o[2].value == 2.0);
    CHECK(o[3].kind == FG_OP_GELU);
    CHECK(o[4].kind == FG_OP_GELU_TANH && o[5].kind == FG_OP_GELU);
    CHECK(o[6].kind == FG_OP_SILU);
    CHECK(o[7].kind == FG_OP_RMSNORM && o[7].value == 1e-6 && o[7].affine && o[7].strategy == FG_STRATEGY_AUTO);
    CHECK(o[8].kind == FG_OP_LAYERNORM && !o[8].affine && o[8].strategy == FG_STRATEGY_SPLIT && o[8].value == 1e-3);
    CHECK(o[9].strategy == FG_STRATEGY_ROW);
    /* two norms: parse accepts, check refuses */
    CHECK(r.check_errors == 2);
    fg_arena_free(&a);
}

static void test_chain(void)
{
    static const char json[] =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\","
        " \"out\": \"bf16\", \"b_layout\": \"kn\", \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3}],"
        " \"epilogue\": [{\"op\": \"layernorm\"}], \"then\": {\"b_layout\": \"kn\", \"epilogue\": [{\"op\": \"bias\"},"
        " {\"op\": \"relu\"}]}},"
        " {\"name\": \"k2\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\","
        " \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3}], \"epilogue\": [],"
        " \"then\": {\"tiles\": [{\"m\": 64, \"n\": 64, \"k\": 64, \"stages\": 4}], \"epilogue\": []}}]}";
    fg_arena a;
    fg_spec s;
    ft_result r;
    fg_arena_init(&a);
    ft_run_n(json, (size_t)-1, &r, &a, &s);
    CHECK(r.parse_rc == 0 && r.check_errors == 0);
    CHECK(s.n_kernels == 2);
    const fg_kernel_spec *k = &s.kernels[0];
    CHECK(k->gemm.b_layout == FG_LAYOUT_KN);
    CHECK(k->has_then);
    CHECK(strcmp(k->then.ptr, "/kernels/0/then") == 0);
    CHECK(k->then.b_layout == FG_LAYOUT_KN);
    CHECK(k->then.n_tiles == 0);          /* defaults to GEMM1's tiles */
    CHECK(k->then.n_ops == 2 && k->then.ops[1].kind == FG_OP_RELU);
    CHECK(strcmp(k->then.ops[1].ptr, "/kernels/0/then/epilogue/1") == 0);
    const fg_kernel_spec *k2 = &s.kernels[1];
    CHECK(k2->has_then && k2->then.b_layout == FG_LAYOUT_NK && k2->then.n_tiles == 1 &&
          k2->then.tiles[0].stages == 4 && k2->gemm.n_ops == 0 && k2->then.n_ops == 0);
    fg_arena_free(&a);
}

static void test_names(void)
{
    CHECK(strcmp(fg_spec_dtype_name(FG_DTYPE_BF16), "bf16") == 0);
    CHECK(strcmp(fg_spec_dtype_name(FG_DTYPE_F32), "f32") == 0);
    CHECK(strcmp(fg_spec_layout_name(FG_LAYOUT_KN), "kn") == 0);
    CHECK(strcmp(fg_spec_arch_name(FG_ARCH_SM90A), "sm_90a") == 0);
    CHECK(fg_spec_arch_sm(FG_ARCH_SM90A) == 90 && fg_spec_arch_sm(FG_ARCH_SM86) == 86);
    CHECK(strcmp(fg_spec_op_name(FG_OP_RMSNORM), "rmsnorm") == 0);
    CHECK(strcmp(fg_spec_strategy_name(FG_STRATEGY_SPLIT), "split") == 0);
}

/* One parse error: the run fails at parse, prints a line containing want, with `errors` errors. */
static int parse_error(const char *json, const char *want, int errors)
{
    ft_result r;
    ft_run(json, &r);
    int ok = r.parse_rc == -1 && r.check_errors == -1 && r.errors == errors && ft_lines_with(&r, want) >= 1;
    if (!ok) fprintf(stderr, "  wanted %d error(s) with '%s', got %d:\n%s", errors, want, r.errors, r.text);
    return ok;
}

static int parse_error_nul(void)
{
    static const char json[] = "{\"library\": \"l\"}\0 junk";
    ft_result r;
    ft_run_n(json, sizeof json - 1, &r, NULL, NULL);
    return r.parse_rc == -1 && r.errors == 1 && ft_lines_with(&r, "t.json:1:17: error: NUL byte") == 1;
}

#define KERNEL_HEAD "{\"library\": \"l\", \"kernels\": [{\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", " \
                    "\"b\": \"bf16\", \"out\": \"bf16\", "
#define TILE "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3}]"

static void test_errors(void)
{
    CHECK(parse_error("", "t.json: error: empty file", 1));
    CHECK(parse_error("{\"library\": \"l\" \"kernels\": []}", "t.json:1:17: error: syntax error: expected ',' or '}' after the value, found", 1));
    CHECK(parse_error("{\"library\": \"l\",", "t.json:1:17: error: syntax error: unexpected end of file", 1));
    CHECK(parse_error("{} {}", "t.json:1:4: error: trailing characters", 1));
    CHECK(parse_error("[]", "t.json:1:1: error: expected a JSON object at the top level, found an array", 1));
    CHECK(parse_error("{\"library\": \"l\"}", "t.json:1:1: error: missing required key 'kernels'", 1));
    CHECK(parse_error("{\"library\": \"l\", \"kernels\": [], \"x\": 1}", "t.json:1:33: error: /x: unknown key 'x'", 2));
    CHECK(parse_error("{\"library\": \"l\", \"library\": \"m\", \"kernels\": [1]}",
                      "t.json:1:18: error: /library: duplicate key 'library'", 2));
    CHECK(parse_error("{\"library\": \"l\", \"library\": \"m\", \"kernels\": [1]}",
                      "t.json:1:2: note: /library: first given here", 2));
    CHECK(parse_error(KERNEL_HEAD TILE ", \"epilogue\": [{\"op\": \"reluu\"}]}]}",
                      "/kernels/0/epilogue/0/op: unknown op 'reluu' (expected: scale, bias, residual, relu, gelu, "
                      "silu, store, layernorm, rmsnorm, swiglu, geglu)", 1));
    CHECK(parse_error(KERNEL_HEAD "\"tiles\": [{\"m\": 128.5, \"n\": 1e300, \"k\": \"64\", \"stages\": 3}],"
                      " \"epilogue\": []}]}", "/kernels/0/tiles/0/m: expected an integer, found number 128.5", 3));
    CHECK(parse_error(KERNEL_HEAD "\"tiles\": [{\"m\": 128, \"n\": 1e300, \"k\": 64, \"stages\": 3}], \"epilogue\": []}]}",
                      "/kernels/0/tiles/0/n: integer 1e+300 out of range", 1));
    CHECK(parse_error(KERNEL_HEAD TILE ", \"epilogue\": [{\"op\": \"scale\", \"alpha\": 1e999}]}]}",
                      "/kernels/0/epilogue/0/alpha: number out of range", 1));
    CHECK(parse_error(KERNEL_HEAD TILE ", \"epilogue\": [{\"op\": \"relu\", \"eps\": 1}]}]}",
                      "/kernels/0/epilogue/0/eps: unknown key 'eps' (op 'relu' takes: op)", 1));
    CHECK(parse_error(KERNEL_HEAD TILE ", \"epilogue\": [{\"op\": \"store\"}]}]}",
                      "/kernels/0/epilogue/0: missing required key 'as'", 1));
    CHECK(parse_error("{\"library\": \"l\xff\", \"kernels\": []}", "t.json:1:15: error: /library: invalid UTF-8", 2));
    CHECK(parse_error("{\"library\": \"l\\u0000\", \"kernels\": [1]}", "/library: NUL character", 2));
    CHECK(parse_error("{\"library\": \"l\tx\", \"kernels\": [1]}", "/library: control character 0x09", 2));
    CHECK(parse_error("{\"library\": \"l\", \"kernels\": [1], \"n\": 01}", "/n: malformed number '01'", 3));
    CHECK(parse_error("\xef\xbb\xbf{}", "byte order mark", 1));
    CHECK(parse_error(KERNEL_HEAD "\"accum\": \"f64\", \"b_layout\": \"tn\", " TILE ", \"epilogue\": 3}]}",
                      "/kernels/0/epilogue: expected an array, found number 3", 3));
    /* NUL bytes are in the length, not seen by a C-string parser: still found */
    CHECK(parse_error_nul());
    /* a key holding \u0000: reported once, at its own pointer; cJSON's copy of the key is cut there,
     * so no "unknown key 'a'" and no duplicate of a key cut to a known one */
    {
        ft_result r;
        ft_run("{\"library\": \"l\", \"library\\u0000x\": \"m\", \"a\\u0000b\": 1, \"a\\u0000c\": 2, \"kernels\": [1]}", &r);
        CHECK(r.parse_rc == -1 && r.errors == 3);
        CHECK(ft_lines_with(&r, "t.json:1:26: error: /library\\u0000x: NUL character (\\u0000) in a key") == 1);
        CHECK(ft_lines_with(&r, "error: /a\\u0000b: NUL character") == 1);
        CHECK(ft_lines_with(&r, "error: /a\\u0000c: NUL character") == 1);
        CHECK(ft_lines_with(&r, "duplicate") == 0 && ft_lines_with(&r, "unknown key") == 0);
    }
    /* lone CR and CRLF line endings locate by line, in every pass */
    CHECK(parse_error("{\r\"library\": \"l\",\r\"kernels\": [],\r\"x\": 1}", "t.json:4:1: error: /x: unknown key 'x'", 2));
    CHECK(parse_error("{\r\n\"library\": \"l\",\r\n\"kernels\": [],\r\n\"x\": 1}", "t.json:4:1: error: /x: unknown key", 2));
    CHECK(parse_error("{\r\"library\": \"l\",\r\"kernels\": [],\r\"x\": 01}", "t.json:4:6: error: /x: malformed number", 3));
    CHECK(parse_error("{\r\"library\": \"l\",\r\"kernels\": [\r\r}", "t.json:5:1: error: syntax error", 1));
    {
        static const char json[] = "{\r\"library\": \"l\"}\r\0";
        ft_result r;
        ft_run_n(json, sizeof json - 1, &r, NULL, NULL);
        CHECK(r.parse_rc == -1 && ft_lines_with(&r, "t.json:3:1: error: NUL byte") == 1);
    }
    /* a megabyte of unknown key makes a line of normal length: the pointer's token is cut */
    {
        size_t n = 1000000;
        char *big = malloc(n + 64);
        if (big) {
            memcpy(big, "{\"library\": \"l\", \"kernels\": [1], \"", 34);
            memset(big + 34, 'k', n);
            memcpy(big + 34 + n, "\": 1}", 6);
            ft_result r;
            ft_run_n(big, 34 + n + 5, &r, NULL, NULL);
            CHECK(r.parse_rc == -1 && strlen(r.text) < 1000);
            CHECK(ft_lines_with(&r, "t.json:1:34: error: /kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...: unknown key 'kkk") == 1);
            free(big);
        }
    }
}

static void test_limits(void)
{
    /* nesting: checked before cJSON sees the text, also at 200000 levels */
    size_t deep = 200000;
    char *big = malloc(2 * deep + 1);
    if (big) {
        memset(big, '[', deep);
        memset(big + deep, ']', deep);
        big[2 * deep] = '\0';
        ft_result r;
        ft_run_n(big, 2 * deep, &r, NULL, NULL);
        CHECK(r.parse_rc == -1 && r.errors == 1 && ft_lines_with(&r, "t.json:1:33: error: nesting deeper than 32") == 1);
        free(big);
    }
    /* file size */
    size_t n = FG_SPEC_MAX_BYTES + 1;
    char *huge = malloc(n);
    if (huge) {
        memset(huge, ' ', n);
        ft_result r;
        ft_run_n(huge, n, &r, NULL, NULL);
        CHECK(r.parse_rc == -1 && ft_lines_with(&r, "t.json: error: file is 4194305 bytes") == 1);
        free(huge);
    }
    /* counts: too many archs, tiles, ops; the first ones are still read */
    char json[8192];
    size_t o = 0;
    o += (size_t)snprintf(json + o, sizeof json - o, KERNEL_HEAD);
    json[o - 2] = '\0';   /* drop the ", " so arch can be rewritten below */
    o = strlen(json);
    o += (size_t)snprintf(json + o, sizeof json - o, ", \"tiles\": [");
    for (int i = 0; i < 17; i++)
        o += (size_t)snprintf(json + o, sizeof json - o, "%s{\"m\": 64, \"n\": 64, \"k\": 32, \"stages\": %d}",
                              i ? ", " : "", 2 + i % 4);
    o += (size_t)snprintf(json + o, sizeof json - o, "], \"epilogue\": [");
    for (int i = 0; i < 40; i++) o += (size_t)snprintf(json + o, sizeof json - o, "%s{\"op\": \"relu\"}", i ? ", " : "");
    snprintf(json + o, sizeof json - o, "]}]}");
    fg_arena a;
    fg_spec s;
    ft_result r;
    fg_arena_init(&a);
    ft_run_n(json, (size_t)-1, &r, &a, &s);
    CHECK(r.parse_rc == -1 && r.errors == 2);
    CHECK(ft_lines_with(&r, "/kernels/0/tiles: too many tiles: 17 (at most 16)") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/epilogue: too many ops: 40 (at most 32)") == 1);
    CHECK(s.n_kernels == 1 && s.kernels[0].gemm.n_tiles == 16 && s.kernels[0].gemm.n_ops == 32);
    fg_arena_free(&a);
}

static void test_all_reported(void)
{
    /* several independent errors in one file: every one is reported, in one run */
    ft_result r;
    ft_run("{\"library\": 1, \"kernels\": [{\"name\": \"k\", \"arch\": [\"sm_81\", \"sm_80\", 80],"
           " \"a\": \"bf16\", \"b\": \"fp16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 64, \"n\": 64, \"k\": 32}],"
           " \"epilogue\": [{\"op\": \"gelu\", \"approximate\": \"erf\"}, {}, {\"op\": \"layernorm\", \"affine\": 1}],"
           " \"extra\": null}]}", &r);
    CHECK(r.parse_rc == -1);
    CHECK(r.errors == 9);
    CHECK(ft_lines_with(&r, "/library: expected a string, found number 1") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/arch/0: unknown arch 'sm_81'") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/arch/2: expected a string, found number 80") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/b: unknown dtype 'fp16' (expected: f16, bf16)") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/tiles/0: missing required key 'stages'") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/epilogue/0/approximate: unknown approximation 'erf'") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/epilogue/1: missing required key 'op'") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/epilogue/2/affine: expected true or false, found number 1") == 1);
    CHECK(ft_lines_with(&r, "/kernels/0/extra: unknown key 'extra'") == 1);
}

static void test_error_cap(void)
{
    char json[16384];
    size_t o = (size_t)snprintf(json, sizeof json, "{\"library\": \"l\", \"kernels\": [1]");
    for (int i = 0; i < 150; i++) o += (size_t)snprintf(json + o, sizeof json - o, ", \"x%d\": %d", i, i);
    snprintf(json + o, sizeof json - o, "}");
    ft_result r;
    ft_run(json, &r);
    CHECK(r.errors == 151);
    CHECK(ft_lines_with(&r, ": error: ") == FG_DIAG_MAX_ERRORS + 1);
    CHECK(ft_lines_with(&r, "t.json: error: too many errors (151 in all), the rest not shown") == 1);
}

int main(void)
{
    test_canonical();
    test_defaults_and_params();
    test_chain();
    test_names();
    test_errors();
    test_limits();
    test_all_reported();
    test_error_cap();
    return ft_report();
}
