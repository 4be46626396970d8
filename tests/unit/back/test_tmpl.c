/* test_tmpl.c - the template engine: every construct, nesting, line dropping, and each error
 * with its exact TEMPLATE:LINE:COL location. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tmpl.h"

static fg_arena arena;

/* Renders text with s; returns the output (static storage) or NULL on failure; the
 * diagnostics printed go to diag_text and their count to *n_errors. */
static char out_text[65536];
static char diag_text[8192];

static const char *render(const char *text, const fg_tmpl_scope *s, int *n_errors)
{
    FILE *f = tmpfile();
    if (!f) {
        fprintf(stderr, "tmpfile failed\n");
        exit(2);
    }
    fg_diag d;
    fg_diag_init(&d, f);
    fg_buf out;
    fg_buf_init(&out);
    int rc = fg_tmpl_render("t.tmpl", text, strlen(text), s, &out, &d);
    if (n_errors) *n_errors = fg_diag_errors(&d);
    rewind(f);
    size_t n = fread(diag_text, 1, sizeof diag_text - 1, f);
    diag_text[n] = '\0';
    fclose(f);
    const char *result = NULL;
    if (rc == 0) {
        snprintf(out_text, sizeof out_text, "%s", out.data ? out.data : "");
        result = out_text;
    }
    fg_buf_free(&out);
    return result;
}

#define EXPECT_OUT(text, scope, want)                                                   \
    do {                                                                                \
        int n_err_;                                                                     \
        const char *got_ = render(text, scope, &n_err_);                                \
        TH_STREQ(got_, want);                                                           \
        TH_CHECK(n_err_ == 0);                                                          \
        if (n_err_) fprintf(stderr, "%s", diag_text);                                   \
    } while (0)

/* Expects failure with exactly the diagnostics `want` (whole lines, newline-terminated). */
#define EXPECT_ERR(text, scope, want)                                                   \
    do {                                                                                \
        const char *got_ = render(text, scope, NULL);                                   \
        TH_CHECK(got_ == NULL);                                                         \
        TH_STREQ(diag_text, want);                                                      \
    } while (0)

static void test_variables(void)
{
    fg_tmpl_scope *s = fg_tmpl_scope_new(&arena, NULL);
    fg_tmpl_set(s, "name", "gemm_bf16");
    fg_tmpl_set(s, "empty", "");
    fg_tmpl_setf(s, "bm", "%d", 128);
    EXPECT_OUT("", s, "");
    EXPECT_OUT("plain text { } }} {x} $ \\n\n", s, "plain text { } }} {x} $ \\n\n");
    EXPECT_OUT("void {{name}}(void);\n", s, "void gemm_bf16(void);\n");
    EXPECT_OUT("{{ name }}|{{\tbm\t}}|{{empty}}|", s, "gemm_bf16|128||");
    EXPECT_OUT("{{name}}{{name}}", s, "gemm_bf16gemm_bf16");
    EXPECT_OUT("no newline at end {{bm}}", s, "no newline at end 128");
    /* A line holding only a value tag is kept, even when the value is empty. */
    EXPECT_OUT("a\n{{empty}}\nb\n", s, "a\n\nb\n");
    EXPECT_OUT("a\n  {{name}}  \nb\n", s, "a\n  gemm_bf16  \nb\n");

    fg_tmpl_set(s, "name", "replaced");
    EXPECT_OUT("{{name}}", s, "replaced");
    char longv[1000];
    memset(longv, 'v', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    fg_tmpl_setf(s, "long", "<%s>", longv);
    const char *got = render("{{long}}", s, NULL);
    TH_CHECK(got && strlen(got) == sizeof longv + 1 && got[0] == '<' && got[1] == 'v');

    /* Values are inserted as they are: no re-expansion of braces inside them. */
    fg_tmpl_set(s, "braces", "{{name}}");
    EXPECT_OUT("{{braces}}", s, "{{name}}");
}

static void test_if(void)
{
    fg_tmpl_scope *s = fg_tmpl_scope_new(&arena, NULL);
    fg_tmpl_set(s, "one", "1");
    fg_tmpl_set(s, "zero", "0");
    fg_tmpl_set(s, "empty", "");
    fg_tmpl_set(s, "word", "yes");
    fg_tmpl_set(s, "zz", "00");
    fg_tmpl_list_declare(s, "none");
    (void)fg_tmpl_list_add(s, "some");

    EXPECT_OUT("[{{#if one}}A{{/if}}]", s, "[A]");
    EXPECT_OUT("[{{#if word}}A{{/if}}]", s, "[A]");
    EXPECT_OUT("[{{#if zz}}A{{/if}}]", s, "[A]");
    EXPECT_OUT("[{{#if zero}}A{{/if}}]", s, "[]");
    EXPECT_OUT("[{{#if empty}}A{{/if}}]", s, "[]");
    EXPECT_OUT("[{{#if unset}}A{{/if}}]", s, "[]");
    EXPECT_OUT("[{{#if one}}A{{#else}}B{{/if}}]", s, "[A]");
    EXPECT_OUT("[{{#if zero}}A{{#else}}B{{/if}}]", s, "[B]");
    EXPECT_OUT("[{{#if unset}}A{{#else}}B{{/if}}]", s, "[B]");
    EXPECT_OUT("[{{#if none}}A{{#else}}B{{/if}}]", s, "[B]");
    EXPECT_OUT("[{{#if some}}A{{#else}}B{{/if}}]", s, "[A]");
    EXPECT_OUT("[{{ #if  one }}A{{ #else }}B{{ /if }}]", s, "[A]");
    /* Nesting. */
    EXPECT_OUT("{{#if one}}1{{#if zero}}2{{#else}}3{{#if word}}4{{/if}}{{/if}}5{{/if}}", s, "1345");
    /* Names inside a branch not taken are not looked up. */
    EXPECT_OUT("{{#if zero}}{{missing}}{{/if}}ok", s, "ok");
}

static void test_each(void)
{
    fg_tmpl_scope *s = fg_tmpl_scope_new(&arena, NULL);
    fg_tmpl_set(s, "lib", "L");
    fg_tmpl_set(s, "x", "outer");
    const char *names[] = { "a", "b", "c" };
    for (int i = 0; i < 3; i++) {
        fg_tmpl_scope *k = fg_tmpl_list_add(s, "kernels");
        fg_tmpl_set(k, "name", names[i]);
        fg_tmpl_setf(k, "i", "%d", i);
        if (i == 1) fg_tmpl_set(k, "x", "inner");
        for (int j = 0; j <= i; j++) {
            fg_tmpl_scope *t = fg_tmpl_list_add(k, "tiles");
            fg_tmpl_setf(t, "t", "%d", j);
        }
    }
    fg_tmpl_list_declare(s, "nothing");
    fg_tmpl_scope *o = fg_tmpl_list_add(s, "ops");
    fg_tmpl_set(o, "op", "bias");
    o = fg_tmpl_list_add(s, "ops");
    fg_tmpl_set(o, "op", "relu");

    EXPECT_OUT("{{#each kernels}}{{name}}{{i}} {{/each}}", s, "a0 b1 c2 ");
    EXPECT_OUT("{{#each nothing}}X{{/each}}.", s, ".");
    /* Item names first, then outward. */
    EXPECT_OUT("{{#each kernels}}{{lib}}.{{x}} {{/each}}", s, "L.outer L.inner L.outer ");
    /* Nested lists. */
    EXPECT_OUT("{{#each kernels}}{{name}}:{{#each tiles}}{{t}}{{/each}};{{/each}}", s, "a:0;b:01;c:012;");
    /* An inner item sees the enclosing item even when its list belongs to another scope. */
    EXPECT_OUT("{{#each kernels}}{{#each ops}}{{name}}-{{op}} {{/each}}{{/each}}", s,
               "a-bias a-relu b-bias b-relu c-bias c-relu ");
    EXPECT_OUT("{{#each kernels}}{{#if x}}{{x}}{{/if}},{{/each}}", s, "outer,inner,outer,");

    /* A list added to after declaring keeps its items; declaring again keeps them too. */
    fg_tmpl_list_declare(s, "ops");
    EXPECT_OUT("{{#each ops}}{{op}}{{/each}}", s, "biasrelu");
}

static void test_line_dropping(void)
{
    fg_tmpl_scope *s = fg_tmpl_scope_new(&arena, NULL);
    fg_tmpl_set(s, "on", "1");
    fg_tmpl_set(s, "off", "0");
    fg_tmpl_set(s, "v", "V");
    for (int i = 0; i < 2; i++) {
        fg_tmpl_scope *it = fg_tmpl_list_add(s, "items");
        fg_tmpl_setf(it, "n", "%d", i);
    }

    EXPECT_OUT("a\n{{#if on}}\nb\n{{/if}}\nc\n", s, "a\nb\nc\n");
    EXPECT_OUT("a\n{{#if off}}\nb\n{{#else}}\nB\n{{/if}}\nc\n", s, "a\nB\nc\n");
    EXPECT_OUT("a\n  {{#if on}}  \n  b\n\t{{/if}}\t\nc\n", s, "a\n  b\nc\n");
    EXPECT_OUT("{{#each items}}\nitem {{n}};\n{{/each}}\n", s, "item 0;\nitem 1;\n");
    EXPECT_OUT("x\n{{! a comment line }}\ny\n", s, "x\ny\n");
    EXPECT_OUT("x\n  {{! a comment\n   spanning lines }}  \ny\n", s, "x\ny\n");
    /* Several block tags on one line, and the last line without a newline. */
    EXPECT_OUT("a\n{{#if on}}{{#if on}}\nb\n{{/if}} {{/if}}", s, "a\nb\n");
    /* CRLF line ends. */
    EXPECT_OUT("a\r\n{{#if on}}\r\nb\r\n{{/if}}\r\nc\r\n", s, "a\r\nb\r\nc\r\n");
    /* A block tag sharing its line with text or a value keeps the line. */
    EXPECT_OUT("a {{#if on}}b{{/if}} c\n", s, "a b c\n");
    EXPECT_OUT("{{#if on}}{{v}}\n{{/if}}\n", s, "V\n");
    EXPECT_OUT("{{v}}{{#if on}}\nz\n{{/if}}\n", s, "V\nz\n");
    /* An empty line stays; an inline comment disappears but its line stays. */
    EXPECT_OUT("a\n\nb{{! note }}\n", s, "a\n\nb\n");
    /* Blank lines inside blocks are content. */
    EXPECT_OUT("{{#if on}}\n\n{{/if}}\n", s, "\n");
}

static void test_errors(void)
{
    fg_tmpl_scope *s = fg_tmpl_scope_new(&arena, NULL);
    fg_tmpl_set(s, "v", "1");
    fg_tmpl_list_declare(s, "l");
    (void)fg_tmpl_list_add(s, "items");
    (void)fg_tmpl_list_add(s, "items");

    EXPECT_ERR("ab\n  x {{nope}}\n", s, "t.tmpl:2:5: error: unknown variable 'nope'\n");
    EXPECT_ERR("{{#each nope}}{{/each}}", s, "t.tmpl:1:1: error: unknown list 'nope'\n");
    EXPECT_ERR("\n\n   {{#each v}}x{{/each}}", s, "t.tmpl:3:4: error: 'v' is a variable, not a list\n");
    EXPECT_ERR("{{l}}", s, "t.tmpl:1:1: error: 'l' is a list, not a variable (use {{#each l}})\n");
    EXPECT_ERR("a\n{{#if v}}\nb\n", s, "t.tmpl:2:1: error: unclosed '{{#if v}}' (missing '{{/if}}')\n");
    EXPECT_ERR("{{#each items}}\n  {{#if v}}\n",
               s,
               "t.tmpl:1:1: error: unclosed '{{#each items}}' (missing '{{/each}}')\n"
               "t.tmpl:2:3: error: unclosed '{{#if v}}' (missing '{{/if}}')\n");
    EXPECT_ERR("x\n y {{/if}}\n", s, "t.tmpl:2:4: error: stray '{{/if}}' with no open block\n");
    EXPECT_ERR("{{/each}}", s, "t.tmpl:1:1: error: stray '{{/each}}' with no open block\n");
    EXPECT_ERR("{{#if v}}\n{{/each}}\n", s,
               "t.tmpl:2:1: error: '{{/each}}' closes the '{{#if v}}' opened at 1:1\n");
    EXPECT_ERR("a{{#else}}b", s, "t.tmpl:1:2: error: '{{#else}}' outside of an '{{#if}}' block\n");
    EXPECT_ERR("{{#each items}}{{#else}}{{/each}}", s,
               "t.tmpl:1:16: error: '{{#else}}' outside of an '{{#if}}' block\n");
    EXPECT_ERR("{{#if v}}a\n{{#else}}\nb\n {{#else}}\n{{/if}}\n", s,
               "t.tmpl:4:2: error: second '{{#else}}' in the '{{#if v}}' opened at 1:1\n");
    EXPECT_ERR("int x = 1;\nfoo({{v);\n", s, "t.tmpl:2:5: error: unterminated tag (missing '}}' on this line)\n");
    EXPECT_ERR("ok\n  {{v\n}}\n", s, "t.tmpl:2:3: error: unterminated tag (missing '}}' on this line)\n");
    EXPECT_ERR("a {{! never closed\n\n", s, "t.tmpl:1:3: error: unterminated comment (missing '}}')\n");
    EXPECT_ERR("{{}}", s, "t.tmpl:1:1: error: empty tag '{{}}'\n");
    EXPECT_ERR("x{{  }}", s, "t.tmpl:1:2: error: empty tag '{{}}'\n");
    EXPECT_ERR("{{a-b}}", s, "t.tmpl:1:1: error: malformed tag '{{a-b}}' (expected a variable name)\n");
    EXPECT_ERR("{{9v}}", s, "t.tmpl:1:1: error: malformed tag '{{9v}}' (expected a variable name)\n");
    EXPECT_ERR("{{v w}}", s, "t.tmpl:1:1: error: malformed tag '{{v w}}' (expected a variable name)\n");
    EXPECT_ERR("{{#for v}}{{/for}}", s,
               "t.tmpl:1:1: error: unknown block tag '{{#for}}' (expected #if, #else, #each, /if or /each)\n"
               "t.tmpl:1:11: error: unknown block tag '{{/for}}' (expected #if, #else, #each, /if or /each)\n");
    EXPECT_ERR("{{/else}}", s,
               "t.tmpl:1:1: error: unknown block tag '{{/else}}' (expected #if, #else, #each, /if or /each)\n");
    EXPECT_ERR("{{#if}}{{/if}}", s, "t.tmpl:1:1: error: '{{#if}}' needs a variable name\n");
    EXPECT_ERR("{{#each}}{{/each}}", s, "t.tmpl:1:1: error: '{{#each}}' needs a list name\n");
    EXPECT_ERR("{{#if v w}}{{/if}}", s, "t.tmpl:1:1: error: malformed '{{#if}}': 'v w' is not a name\n");
    EXPECT_ERR("{{#if v}}{{/if v}}", s, "t.tmpl:1:10: error: unexpected text after '{{/if' (it takes no name)\n");
    EXPECT_ERR("{{#if v}}{{#else v}}{{/if}}", s,
               "t.tmpl:1:10: error: unexpected text after '{{#else' (it takes no name)\n");

    /* Every structural error of a template is reported in one pass. */
    int n = 0;
    TH_CHECK(render("{{/if}}\n{{#else}}\n{{bad name}}\n{{#if v}}\n", s, &n) == NULL);
    TH_CHECK(n == 4);
    /* Unknown names are reported once per tag, not once per list item. */
    TH_CHECK(render("{{#each items}}{{nope}}{{nope}}{{/each}}", s, &n) == NULL);
    TH_CHECK(n == 2);
    TH_STREQ(diag_text, "t.tmpl:1:16: error: unknown variable 'nope'\nt.tmpl:1:24: error: unknown variable 'nope'\n");
    /* A structural error stops rendering: no unknown-variable report follows it. */
    TH_CHECK(render("{{nope}}{{#if v}}", s, &n) == NULL);
    TH_CHECK(n == 1);

    /* Blocks nested too deeply. */
    char deep[2048] = "";
    for (int i = 0; i < 70; i++) strcat(deep, "{{#if v}}");
    TH_CHECK(render(deep, s, &n) == NULL);
    TH_CHECK(n == 1 && strstr(diag_text, "t.tmpl:1:577: error: blocks nested more than 64 deep") == diag_text);
    deep[0] = '\0';
    for (int i = 0; i < 64; i++) strcat(deep, "{{#if v}}");
    strcat(deep, "x");
    for (int i = 0; i < 64; i++) strcat(deep, "{{/if}}");
    EXPECT_OUT(deep, s, "x");
}

static void test_failure_leaves_output(void)
{
    fg_tmpl_scope *s = fg_tmpl_scope_new(&arena, NULL);
    fg_tmpl_set(s, "v", "value");
    FILE *f = tmpfile();
    TH_CHECK(f != NULL);
    if (!f) return;
    fg_diag d;
    fg_diag_init(&d, f);
    const char *spec_text = "{}";
    fg_diag_set_source(&d, "spec.json", spec_text, 2);
    fg_buf out;
    fg_buf_init(&out);
    fg_buf_puts(&out, "before|");
    const char *bad = "{{v}} and {{missing}}";
    TH_CHECK(fg_tmpl_render("bad.tmpl", bad, strlen(bad), s, &out, &d) == -1);
    TH_STREQ(out.data, "before|");
    /* The diag context points at the spec again afterwards. */
    TH_STREQ(d.file, "spec.json");
    TH_CHECK(d.text == spec_text && d.text_len == 2);
    const char *good = "{{v}}";
    TH_CHECK(fg_tmpl_render("good.tmpl", good, strlen(good), s, &out, &d) == 0);
    TH_STREQ(out.data, "before|value");
    /* Text need not be NUL-terminated: only len bytes are read. */
    TH_CHECK(fg_tmpl_render("part.tmpl", "{{v}}{{nope}}", 5, s, &out, &d) == 0);
    TH_STREQ(out.data, "before|valuevalue");
    TH_CHECK(fg_diag_errors(&d) == 1);
    fg_buf_free(&out);
    fclose(f);
}

int main(void)
{
    fg_arena_init(&arena);
    test_variables();
    test_if();
    test_each();
    test_line_dropping();
    test_errors();
    test_failure_leaves_output();
    fg_arena_free(&arena);
    return th_report();
}
