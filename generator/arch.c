/* arch.c - see arch.h. */
#include "arch.h"

size_t fg_arch_smem_limit(fg_arch a)
{
#define ARCH__SMEM(id, word, sm, smem) if (a == FG_ARCH_##id) return smem;
    FUSEGEN_REG_ARCHS(ARCH__SMEM)
#undef ARCH__SMEM
    return 0;
}

/* The tile values the registry lists (FUSEGEN_REG_TILE_M, _N, _K). */
#define ARCH__IS(v) || x == v
bool fg_arch_sm80_tile_m_ok(long x) { return false FUSEGEN_REG_TILE_M(ARCH__IS); }
bool fg_arch_sm80_tile_n_ok(long x) { return false FUSEGEN_REG_TILE_N(ARCH__IS); }
bool fg_arch_sm80_tile_k_ok(long x) { return false FUSEGEN_REG_TILE_K(ARCH__IS); }
static bool arch__sm90_only_n(long x) { return false FUSEGEN_REG_SM90_ONLY_TILE_N(ARCH__IS); }
#undef ARCH__IS
bool fg_arch_stages_ok(long s, bool hopper_only)
{
    return s >= FUSEGEN_REG_MIN_STAGES && s <= (hopper_only ? FUSEGEN_REG_SM90_MAX_STAGES : FUSEGEN_REG_MAX_STAGES);
}

void fg_arch_sm80_warps(long m, long n, int *warps_m, int *warps_n)
{
    if (m >= 128 * 128 || n >= 128 * 128 || m * n >= 128 * 128) {
        /* 8 warps; split the longer side four ways */
        if (n >= m) { *warps_m = 2; *warps_n = 4; }
        else { *warps_m = 4; *warps_n = 2; }
    } else {
        *warps_m = 2;
        *warps_n = 2;
    }
}

size_t fg_arch_sm80_smem_bytes(long m, long n, long k, long stages)
{
    size_t nk = fg_arch_sm80_layout_smem_bytes(m, n, k, stages, false);
    size_t kn = fg_arch_sm80_layout_smem_bytes(m, n, k, stages, true);
    return nk > kn ? nk : kn;
}

size_t fg_arch_sm80_layout_smem_bytes(long m, long n, long k, long stages, bool b_kn)
{
    if (m <= 0 || n <= 0 || k <= 0 || stages <= 0) return 0;
    if (m > 65536 || n > 65536 || k > 65536 || stages > 65536) return (size_t)-1;   /* no real tile */
    /* Each stage holds the A tile (m rows of k + 8 elements; the 8 pad against bank
     * conflicts) and the B tile, as n rows of k + 8 ("nk") or k rows of n + 8 ("kn").
     * 16-bit elements. The epilogue reuses it. Mirrors Gemm::SMEM_BYTES. */
    size_t a = (size_t)m * (size_t)(k + 8);
    size_t b = b_kn ? (size_t)k * (size_t)(n + 8) : (size_t)n * (size_t)(k + 8);
    return (size_t)stages * (a + b) * 2u;
}

bool fg_arch_sm90_pingpong(long m, fg_schedule s)
{
    return s == FG_SCHEDULE_PINGPONG || (s == FG_SCHEDULE_AUTO && m == 64);
}

bool fg_arch_sm90_col_split(long m, bool pingpong)
{
    return !pingpong && m == 64;
}

bool fg_arch_sm90_tile_ok(long m, long n, long k, bool pingpong)
{
    /* cooperative: the consumer warpgroups split a 128-row tile's rows (64 each), or a 64-row
     * tile's columns (n / 2 each, a wgmma n: n 128, 256 or 320); ping-pong: each multiplies all
     * of a 64- or 128-row tile. A warpgroup's accumulators: at most 64 x 256, or 64 x 320 on a
     * 64-row ping-pong tile (two n160 wgmmas; its consumers get more registers). */
    bool col_split = fg_arch_sm90_col_split(m, pingpong);
    bool m_ok = m == 64 || m == 128;
    long wg_rows = pingpong || col_split ? m : m / 2;
    long wg_cols = col_split ? n / 2 : n;
    bool pingpong_320 = pingpong && m == 64 && n == 320;
    bool n_ok = col_split ? (n == 128 || n == 256 || n == 320)
                          : (n == 32 || n == 64 || n == 128 || n == 160 || n == 256 || pingpong_320);
    return m_ok && n_ok && k == 64 && (wg_rows * wg_cols <= 64 * 256 || pingpong_320);
}

bool fg_arch_sm90_only(long n, fg_schedule s)
{
    return s != FG_SCHEDULE_AUTO || arch__sm90_only_n(n);
}

bool fg_arch_sm90_b_layout_ok(fg_layout layout, long n)
{
    return layout == FG_LAYOUT_NK || n == 64 || n == 128 || n == 256;
}

int fg_arch_sm90_epilogue_row_bytes(long n, int out_bytes)
{
    return (n * out_bytes) % 128 == 0 ? 128 : 64;
}

int fg_arch_sm90_epilogue_buffers(bool pingpong)
{
    return pingpong ? 2 : 1;
}

bool fg_arch_sm90_builds(long m, long n, long k, long stages, bool pingpong)
{
    return fg_arch_sm90_tile_ok(m, n, k, pingpong) &&
           fg_arch_sm90_smem_bytes(m, n, stages, pingpong, 0, 0) <= fg_arch_smem_limit(FG_ARCH_SM90A);
}

size_t fg_arch_sm90_smem_bytes(long m, long n, long stages, bool pingpong, int cluster_ranks, size_t staged_inputs)
{
    /* Each stage: the A and B tiles as rows of 128 bytes (64 16-bit elements, swizzled) and
     * two 8-byte mbarriers; two mbarriers a buffer for the staged inputs (inputs_full/_empty)
     * and, for ping-pong, one a consumer warpgroup (order); then a buffer's epilogue row
     * scratch (4 bytes a row, twice for a column-split tile; the cluster strategy adds two mbarriers and two exchange slots
     * of cluster_ranks x 4 bytes a row), the staged inputs, and 1024 bytes of room to align the
     * first stage to the swizzle pattern. Mirrors GemmSm90::SMEM_BYTES (the generated code
     * asserts that they agree). */
    const size_t buffers = (size_t)fg_arch_sm90_epilogue_buffers(pingpong);
    const size_t warps_n = fg_arch_sm90_col_split(m, pingpong) ? 2u : 1u;   /* column-split tiles: a row sum a half */
    const size_t order = buffers > 1 ? 16u : 0u;
    const size_t exchange = cluster_ranks > 0 ? 16u + 2u * (size_t)cluster_ranks * 4u * (size_t)m : 0u;
    return (size_t)stages * ((size_t)(m + n) * 128u + 16u) + buffers * 16u + order +
           buffers * ((size_t)m * 4u * warps_n + exchange) + staged_inputs + 1024u;
}

size_t fg_arch_sm90_staged_inputs_bytes(long m, long n, int out_bytes, bool tile, bool bias, bool pingpong,
                                        int ring_blocks)
{
    /* a buffer's tile (residual in, outputs out; TMA boxes with the 128-byte swizzle, no
     * padding), or ring_blocks of its column blocks, and bias (one row) */
    size_t row = (size_t)n * (size_t)out_bytes;
    size_t tile_row = ring_blocks > 0 ? (size_t)ring_blocks * (size_t)fg_arch_sm90_epilogue_row_bytes(n, out_bytes) : row;
    return (size_t)fg_arch_sm90_epilogue_buffers(pingpong) * ((tile ? (size_t)m * tile_row : 0u) + (bias ? row : 0u));
}
