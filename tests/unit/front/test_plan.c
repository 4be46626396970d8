/* test_plan.c - the planner's decisions (generator/plan.c), on specs parsed and checked as the
 * CLI does: which variants exist for which tiles and archs, their names, strategies, split-K
 * forms, max_n and the Hopper epilogue staging. */
#include "front_test.h"
#include "arch.h"
#include "launch.h"
#include "plan.h"

/* Plans json (which must parse and check); the plan's memory lives in *arena. Returns 0, or -1
 * after printing the diagnostics. */
static int plan_of(const char *json, fg_arena *arena, fg_spec *spec, fg_plan *plan)
{
    const fg_pipeline_opts opts = {.last = FG_PIPELINE_PLANNED, .library_files = false};
    fg_diag d;
    fg_diag_init(&d, stderr);
    fg_pipeline_stage reached = fg_pipeline_run(arena, "t.json", json, strlen(json), &opts, spec, plan, &d, NULL);
    fg_diag_finish(&d);
    if (reached < FG_PIPELINE_CHECKED) fprintf(stderr, "spec did not check (diagnostics above)\n");
    return reached == FG_PIPELINE_PLANNED ? 0 : -1;
}

static const fg_plan_kernel *find(const fg_plan *p, const char *name)
{
    for (size_t i = 0; i < p->n_kernels; ++i)
        if (strcmp(p->kernels[i].name, name) == 0) return &p->kernels[i];
    return NULL;
}

static size_t count_split_k(const fg_plan *p)
{
    size_t n = 0;
    for (size_t i = 0; i < p->n_kernels; ++i) n += p->kernels[i].split_k;
    return n;
}

/* A norm with strategy auto on both families: row, cluster (Hopper) and split variants per
 * tile; the 64-row tile also gets its split-K form in each family, with the norm's row limit
 * (the Hopper partial kernel stages nothing: the reduce runs the epilogue). */
static void test_norm_auto(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_spec s;
    fg_plan p;
    const char *json =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"k\", \"arch\": [\"sm_90a\", \"sm_80\"], \"a\": \"bf16\", "
        "\"b\": \"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4}, "
        "{\"m\": 64, \"n\": 128, \"k\": 64, \"stages\": 4}], \"epilogue\": [{\"op\": \"bias\"}, "
        "{\"op\": \"layernorm\"}]}]}";
    CHECK(plan_of(json, &a, &s, &p) == 0);
    const fg_plan_kernel *row = find(&p, "k_sm90a_128x128x64_s4_row");
    const fg_plan_kernel *cluster = find(&p, "k_sm90a_128x128x64_s4_cluster");
    const fg_plan_kernel *split = find(&p, "k_sm80_128x128x64_s4_split");
    const fg_plan_kernel *sk = find(&p, "k_sm80_64x128x64_s4_splitk");
    CHECK(row && row->family == FG_FAMILY_SM90 && row->max_n == 128 && !row->split_k);
    CHECK(cluster && cluster->g1.cluster_ranks == 16 && cluster->max_n == 16 * 128);
    CHECK(split && split->family == FG_FAMILY_SM80 && split->max_n == 0 && split->g1.strategy == FG_STRATEGY_SPLIT);
    CHECK(sk && sk->split_k && sk->family == FG_FAMILY_SM80 && sk->max_n == 16384 && sk->g1.norm == FG_NORM_LAYERNORM);
    const fg_plan_kernel *hk = find(&p, "k_sm90a_64x128x64_s4_splitk");
    CHECK(hk && hk->split_k && hk->family == FG_FAMILY_SM90 && hk->max_n == 16384 && !hk->g1.stage_tile &&
          !hk->g1.stage_bias && hk->g1.staged_store_slot == -1 &&
          hk->g1.smem_bytes == fg_arch_sm90_smem_bytes(64, 128, 4, true, 0, 0));
    /* a cooperative 128-row Hopper tile has a split-K form; a portable 128-row one has none */
    CHECK(find(&p, "k_sm90a_128x128x64_s4_splitk") && !find(&p, "k_sm80_128x128x64_s4_splitk"));
    CHECK(count_split_k(&p) == 3);
    /* no cluster variant in the portable family */
    CHECK(!find(&p, "k_sm80_128x128x64_s4_cluster"));
    fg_arena_free(&a);
}

/* A norm that names its strategy gets that one only, and no split-K form (its reduce would
 * not be the strategy asked for); a portable chain gets none either, a Hopper chain one per
 * pair of tiles that both have one (both GEMMs slice K, each with its reduce kernel). */
static void test_no_split_k(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_spec s;
    fg_plan p;
    const char *forced =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"k\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 64, \"n\": 128, \"k\": 64, \"stages\": 4}], "
        "\"epilogue\": [{\"op\": \"layernorm\", \"strategy\": \"split\"}]}]}";
    CHECK(plan_of(forced, &a, &s, &p) == 0);
    CHECK(p.n_kernels == 1 && find(&p, "k_sm80_64x128x64_s4_split") && count_split_k(&p) == 0);
    fg_arena_free(&a);

    fg_arena_init(&a);
    const char *chain =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"c\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 64, \"n\": 128, \"k\": 64, \"stages\": 4}], "
        "\"epilogue\": [{\"op\": \"layernorm\"}], \"then\": {\"epilogue\": [{\"op\": \"relu\"}]}}]}";
    CHECK(plan_of(chain, &a, &s, &p) == 0);
    CHECK(p.n_kernels > 0 && count_split_k(&p) == 0);
    fg_arena_free(&a);

    fg_arena_init(&a);
    const char *hopper_chain =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"c\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 64, \"n\": 128, \"k\": 64, \"stages\": 4}], "
        "\"epilogue\": [{\"op\": \"layernorm\"}], \"then\": {\"tiles\": [{\"m\": 128, \"n\": 256, \"k\": 64, "
        "\"stages\": 3}, {\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4, \"schedule\": \"pingpong\"}], "
        "\"epilogue\": [{\"op\": \"relu\"}]}}]}";
    CHECK(plan_of(hopper_chain, &a, &s, &p) == 0);
    const fg_plan_kernel *ck = find(&p, "c_sm90a_64x128x64_s4_splitk_g2_128x256x64_s3");
    CHECK(count_split_k(&p) == 1 && ck && ck->chain && ck->max_n == 16384 && !ck->g2.stage_tile &&
          ck->g2.smem_bytes == fg_arch_sm90_smem_bytes(128, 256, 3, false, 0, 0));
    fusegen_launch_gemm r1, r2;
    fg_launch_record(ck, 1, &r1);
    fg_launch_record(ck, 2, &r2);
    CHECK(r1.split_k && r1.split_k_row_smem && r2.split_k && !r2.split_k_row_smem && r2.epi_box_bytes == 128);
    fg_arena_free(&a);
}

/* A kernel without a norm: one variant per tile and family, plus the 64-row split-K form; for a
 * kernel that lists sm_90a alone, the Hopper family's (n <= 256), else the portable one's. */
static void test_plain(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_spec s;
    fg_plan p;
    const char *json =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"g\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 3}, "
        "{\"m\": 64, \"n\": 128, \"k\": 64, \"stages\": 4}], \"epilogue\": []}]}";
    CHECK(plan_of(json, &a, &s, &p) == 0);
    const fg_plan_kernel *big = find(&p, "g_sm90a_128x256x64_s3");
    const fg_plan_kernel *sk = find(&p, "g_sm90a_64x128x64_s4_splitk");
    CHECK(big && big->g1.norm == FG_NORM_NONE && big->max_n == 0 && big->arch_specific);
    CHECK(sk && sk->split_k && sk->max_n == 0 && sk->arch_specific && sk->family == FG_FAMILY_SM90);
    /* sm_90a alone: no portable variant */
    CHECK(!find(&p, "g_sm80_128x256x64_s3") && !find(&p, "g_sm80_64x128x64_s4") &&
          !find(&p, "g_sm80_64x128x64_s4_splitk"));
    CHECK(find(&p, "g_sm90a_128x256x64_s3_splitk") && count_split_k(&p) == 2);
    fg_arena_free(&a);

    /* a 128-row ping-pong tile has no split-K form */
    fg_arena_init(&a);
    const char *pp =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"p\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4, "
        "\"schedule\": \"pingpong\"}], \"epilogue\": []}]}";
    CHECK(plan_of(pp, &a, &s, &p) == 0);
    CHECK(p.n_kernels == 1 && count_split_k(&p) == 0);
    fg_arena_free(&a);

    /* a 64x320 tile (Hopper alone, sm_90a alone) has no Hopper split-K form: the portable one */
    fg_arena_init(&a);
    const char *wide =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"w\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 64, \"n\": 320, \"k\": 64, \"stages\": 3}], "
        "\"epilogue\": [{\"op\": \"layernorm\"}]}]}";
    CHECK(plan_of(wide, &a, &s, &p) == 0);
    CHECK(!find(&p, "w_sm90a_64x320x64_s3_splitk") && count_split_k(&p) == 0);
    fg_arena_free(&a);
}

/* Hopper staging: a split variant with f16 out and a bias before its norm stages nothing
 * without the tile buffer (the template's "staging needs the tile buffer"); bf16 out stages
 * the tile, the residual and the bias. */
static void test_staging(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_spec s;
    fg_plan p;
    const char *json =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"h\", \"arch\": [\"sm_90a\"], \"a\": \"f16\", \"b\": "
        "\"f16\", \"out\": \"f16\", \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4}], "
        "\"epilogue\": [{\"op\": \"bias\"}, {\"op\": \"layernorm\", \"strategy\": \"split\"}]}, "
        "{\"name\": \"r\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", "
        "\"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 4}], \"epilogue\": [{\"op\": \"bias\"}, "
        "{\"op\": \"residual\"}, {\"op\": \"layernorm\", \"strategy\": \"split\"}]}]}";
    CHECK(plan_of(json, &a, &s, &p) == 0);
    const fg_plan_kernel *h = find(&p, "h_sm90a_128x128x64_s4_split");
    const fg_plan_kernel *r = find(&p, "r_sm90a_128x128x64_s4_split");
    CHECK(h && !h->g1.stage_tile && !h->g1.stage_bias);
    CHECK(r && r->g1.stage_tile && r->g1.stage_residual && r->g1.stage_bias && r->g1.stage_out);
    CHECK(h->g1.stage_ring == 0 && r->g1.stage_ring == 0);
    fg_arena_free(&a);
}

/* The out ring: beside 4 stages of 128x256 the whole tile buffer does not fit; a plain GEMM
 * (out alone through the buffer) keeps two column blocks, with 3 stages the whole tile; a
 * kernel with a residual (or a norm) stages nothing there; the split-K partial kernel nothing. */
static void test_staging_ring(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_spec s;
    fg_plan p;
    const char *json =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"g\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 4, \"schedule\": "
        "\"cooperative\"}, {\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 3}], \"epilogue\": [{\"op\": \"bias\"}]}, "
        "{\"name\": \"r\", \"arch\": [\"sm_90a\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", "
        "\"tiles\": [{\"m\": 128, \"n\": 256, \"k\": 64, \"stages\": 4, \"schedule\": \"cooperative\"}], "
        "\"epilogue\": [{\"op\": \"residual\"}, {\"op\": \"relu\"}]}]}";
    CHECK(plan_of(json, &a, &s, &p) == 0);
    const fg_plan_kernel *g4 = find(&p, "g_sm90a_128x256x64_s4"), *g3 = find(&p, "g_sm90a_128x256x64_s3");
    const fg_plan_kernel *gk = find(&p, "g_sm90a_128x256x64_s4_splitk"), *r4 = find(&p, "r_sm90a_128x256x64_s4");
    CHECK(g4 && g4->g1.stage_tile && g4->g1.stage_out && g4->g1.stage_bias && g4->g1.stage_ring == 2);
    CHECK(g4->g1.smem_bytes <= fg_arch_smem_limit(FG_ARCH_SM90A));
    CHECK(g3 && g3->g1.stage_tile && g3->g1.stage_ring == 0);
    CHECK(gk && !gk->g1.stage_tile && gk->g1.stage_ring == 0);
    CHECK(r4 && !r4->g1.stage_tile && r4->g1.stage_ring == 0);
    fg_arena_free(&a);
}

/* Which family builds a tile is decided once (fg_plan_sm80_builds, fg_plan_sm90_builds), for
 * check and plan alike: a 256x32x64 tile of 4 stages needs 165888 bytes with B "nk" and 167936
 * with "kn", and sm_80 allows 166912. check used to count the larger layout whatever B's was, and
 * refused the "nk" tile that plan builds. */
static void test_tile_families(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_spec s;
    fg_plan p;
    const char *nk =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"t\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 256, \"n\": 32, \"k\": 64, \"stages\": 4}], \"epilogue\": []}]}";
    CHECK(plan_of(nk, &a, &s, &p) == 0);
    CHECK(find(&p, "t_sm80_256x32x64_s4") != NULL);
    const fg_tile *t = &s.kernels[0].gemm.tiles[0];
    CHECK(fg_plan_sm80_builds(&s.kernels[0], &s.kernels[0].gemm, t, 0));
    CHECK(fg_plan_sm80_builds(&s.kernels[0], &s.kernels[0].gemm, t, 165888));
    CHECK(!fg_plan_sm80_builds(&s.kernels[0], &s.kernels[0].gemm, t, 165887));
    CHECK(!fg_plan_sm90_builds(&s.kernels[0], &s.kernels[0].gemm, t));   /* no sm_90a listed */
    fg_arena_free(&a);

    ft_result r;
    ft_run("{\"library\": \"l\", \"kernels\": [{\"name\": \"t\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": "
           "\"bf16\", \"out\": \"bf16\", \"b_layout\": \"kn\", \"tiles\": [{\"m\": 256, \"n\": 32, \"k\": 64, "
           "\"stages\": 4}], \"epilogue\": []}]}", &r);
    CHECK(r.check_errors == 1 && ft_lines_with(&r, "tile 256x32x64 with 4 stages needs 167936 bytes of shared memory, "
                                                   "more than the 166912 bytes sm_80 allows") == 1);
}

/* The one pipeline (pipeline.h): the stage reached, each stage's errors, and nothing run past a
 * stage with errors. */
static void test_pipeline(void)
{
    static const char good[] =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"g\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3}], \"epilogue\": []}]}";
    static const char bad_check[] =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"g\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 9}], \"epilogue\": []}]}";
    static const char bad_file[] =
        "{\"library\": \"stdio\", \"kernels\": [{\"name\": \"g\", \"arch\": [\"sm_80\"], \"a\": \"bf16\", \"b\": "
        "\"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 128, \"n\": 128, \"k\": 64, \"stages\": 3}], \"epilogue\": []}]}";
    const struct {
        const char *json;
        fg_pipeline_opts opts;
        fg_pipeline_stage want;
        int parse, check;
    } cases[] = {
        {good, {FG_PIPELINE_PLANNED, true}, FG_PIPELINE_PLANNED, 0, 0},
        {good, {FG_PIPELINE_CHECKED, false}, FG_PIPELINE_CHECKED, 0, 0},
        {"{\"library\": ", {FG_PIPELINE_PLANNED, true}, FG_PIPELINE_NONE, 1, 0},
        {bad_check, {FG_PIPELINE_PLANNED, false}, FG_PIPELINE_PARSED, 0, 1},
        /* the library file rules only where asked for (the command line, not the JIT) */
        {bad_file, {FG_PIPELINE_PLANNED, true}, FG_PIPELINE_PARSED, 0, 1},
        {bad_file, {FG_PIPELINE_PLANNED, false}, FG_PIPELINE_PLANNED, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fg_arena a;
        fg_arena_init(&a);
        fg_spec s;
        fg_plan p;
        fg_pipeline_result res;
        FILE *f = tmpfile();
        fg_diag d;
        fg_diag_init(&d, f ? f : stderr);
        fg_pipeline_stage got = fg_pipeline_run(&a, "t.json", cases[i].json, strlen(cases[i].json), &cases[i].opts,
                                                &s, &p, &d, &res);
        CHECK(got == cases[i].want && res.reached == got);
        CHECK(res.parse_errors == cases[i].parse && res.check_errors == cases[i].check && res.plan_errors == 0);
        CHECK((got == FG_PIPELINE_PLANNED) == (p.n_kernels > 0));
        if (f) fclose(f);
        fg_arena_free(&a);
    }
}

/* a_norm: the op first of GEMM1's ops, the plan's a_norm set, split-K forms kept (their reduce
 * takes rstd from A). A gated activation: no split-K form, nothing staged (Hopper). */
static void test_a_norm_glu(void)
{
    fg_arena a;
    fg_arena_init(&a);
    fg_spec s;
    fg_plan p;
    const char *json =
        "{\"library\": \"l\", \"kernels\": [{\"name\": \"n\", \"arch\": [\"sm_90a\", \"sm_80\"], \"a\": \"bf16\", "
        "\"b\": \"bf16\", \"out\": \"bf16\", \"tiles\": [{\"m\": 64, \"n\": 128, \"k\": 64, \"stages\": 4}], "
        "\"a_norm\": {\"op\": \"rmsnorm\", \"eps\": 1e-5}, \"epilogue\": [{\"op\": \"residual\"}]}, "
        "{\"name\": \"g\", \"arch\": [\"sm_90a\", \"sm_80\"], \"a\": \"bf16\", \"b\": \"bf16\", \"out\": \"bf16\", "
        "\"tiles\": [{\"m\": 64, \"n\": 128, \"k\": 64, \"stages\": 4}], \"a_norm\": {\"op\": \"rmsnorm\"}, "
        "\"epilogue\": [{\"op\": \"swiglu\"}, {\"op\": \"bias\"}, {\"op\": \"residual\"}]}]}";
    CHECK(plan_of(json, &a, &s, &p) == 0);
    const fg_plan_kernel *n = find(&p, "n_sm90a_64x128x64_s4");
    CHECK(n && n->g1.a_norm && n->g1.a_norm->kind == FG_OP_A_RMSNORM && n->g1.a_norm->value == 1e-5 && !n->g1.glu);
    CHECK(n && strcmp(n->g1.signature, "a_rmsnorm+residual") == 0 && n->g1.stage_tile);
    CHECK(find(&p, "n_sm90a_64x128x64_s4_splitk") && find(&p, "n_sm80_64x128x64_s4_splitk"));
    const fg_plan_kernel *g = find(&p, "g_sm90a_64x128x64_s4");
    CHECK(g && g->g1.glu && g->g1.glu->kind == FG_OP_SWIGLU && g->g1.a_norm);
    CHECK(g && !g->g1.stage_tile && !g->g1.stage_bias && !g->g1.stage_residual && g->g1.staged_store_slot == -1);
    CHECK(g && strcmp(g->g1.signature, "a_rmsnorm+swiglu+bias+residual") == 0);
    CHECK(!find(&p, "g_sm90a_64x128x64_s4_splitk") && !find(&p, "g_sm80_64x128x64_s4_splitk"));
    CHECK(find(&p, "g_sm80_64x128x64_s4") != NULL);
    fg_arena_free(&a);
}

int main(void)
{
    test_a_norm_glu();
    test_norm_auto();
    test_no_split_k();
    test_plain();
    test_staging();
    test_staging_ring();
    test_tile_families();
    test_pipeline();
    return ft_report();
}
