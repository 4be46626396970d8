// Device code of the portable tensor-core family: cp.async multistage loads, ldmatrix,
// mma.sync m16n8k16 (bf16/f16 in, f32 accumulate), and the fused epilogue with the row and
// split LayerNorm/RMSNorm strategies. Runs on sm_80 and later. The generated kernel files
// instantiate it with their tile shape and an epilogue struct holding the spec's op chain.
// It compiles with NVRTC as well (no includes); the runtime launches its kernels.
#ifndef FUSEGEN_SM80_CUH
#define FUSEGEN_SM80_CUH

namespace fusegen_sm80 {

// These four lines are the registry's (runtime/fusegen_registry.h), as fg_emit_device_enums
// writes them: the generator refuses this header when they differ.
enum { DT_F16 = 1, DT_BF16 = 2, DT_F32 = 3 };
enum { NORM_NONE = 0, NORM_LAYERNORM = 1, NORM_RMSNORM = 2 };
enum { STRATEGY_NONE = 0, STRATEGY_ROW = 1, STRATEGY_SPLIT = 2, STRATEGY_CLUSTER = 3 };
enum { MAX_STORES = 4, NORMALIZE_THREADS = 256, SPLIT_K_REDUCE_THREADS = 256, SPLIT_K_REDUCE_ROW_THREADS = 512, PORTABLE_CLUSTER = 8 };

// Everything one GEMM launch reads and writes. Leading dimensions are in elements.
struct Params {
    const void *a, *b;
    void *out;
    int m, n, k;
    long long lda, ldb, ldo, ldr;
    const void *bias, *residual, *gamma, *beta;
    void *store[MAX_STORES];
    long long ld_store[MAX_STORES];
    float *prenorm;   // split: [m, n] values before the norm (f32; for bf16 out, bf16: LayerNorm
                      // keeps deviations from the tile mean, RMSNorm the values)
    float *stats;     // split: per row and N tile, (mean, M2) or (mean of squares, 0)
    int stats_ld;     // N tiles per row
    float *partials;  // split K: [k_slices, m, n] f32 sums, slice z over k tiles z*KT/S ... (z+1)*KT/S - 1
    int k_slices;     // split K: slices of K (the partial kernel's grid z); else 0
};

// For the launch checks every kernel source carries (generator/launch.c): the runtime passes
// fusegen_params (runtime/fusegen_launch.h), the C form of this block.
template <class A, class B> struct same_type { static constexpr bool value = false; };
template <class A> struct same_type<A, A> { static constexpr bool value = true; };
constexpr Params kParamsProbe{};

// ---- element conversions (round to nearest even; NaN stays NaN) -------------------------
__device__ __forceinline__ float bf16_bits_to_f32(unsigned short u) { return __uint_as_float(static_cast<unsigned>(u) << 16); }
__device__ __forceinline__ float f16_bits_to_f32(unsigned short u)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(u));
    return f;
}

// Reads of the inputs the epilogue only reads (bias, residual, gamma, beta) go through the
// read-only path (ld.global.nc): the compiler may then schedule them ahead of the epilogue's
// stores (with plain loads it could not, as an output might alias an input, and each element
// would wait a full memory latency). Inputs must not overlap outputs.
__device__ __forceinline__ unsigned ld_ro_u32(const void *p) { return __ldg(static_cast<const unsigned *>(p)); }
__device__ __forceinline__ float2 ld_ro_f32x2(const void *p) { return __ldg(static_cast<const float2 *>(p)); }
__device__ __forceinline__ uint2 ld_ro_u32x2(const void *p) { return __ldg(static_cast<const uint2 *>(p)); }

// Elements i and i+1 (i even; rows start 16-byte aligned, checked on the host), as (x, y).
// Two 16-bit elements packed low-first (as they lie in memory), widened to (x, y).
template <int DT> __device__ __forceinline__ float2 unpack2(unsigned u)
{
    const unsigned short lo = static_cast<unsigned short>(u), hi = static_cast<unsigned short>(u >> 16);
    if (DT == DT_BF16) return make_float2(bf16_bits_to_f32(lo), bf16_bits_to_f32(hi));
    return make_float2(f16_bits_to_f32(lo), f16_bits_to_f32(hi));
}

template <int DT> __device__ __forceinline__ float2 load2_f32(const void *base, long long i)
{
    if (DT == DT_F32) return ld_ro_f32x2(static_cast<const float *>(base) + i);
    return unpack2<DT>(ld_ro_u32(static_cast<const unsigned short *>(base) + i));
}

// Two adjacent elements packed low-first, as they lie in memory.
template <int DT> __device__ __forceinline__ unsigned pack2(float lo, float hi)
{
    unsigned r;
    if (DT == DT_BF16)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

// Stores elements i and i+1; i is even and the row start 16-byte aligned (checked on the host).
template <int DT> __device__ __forceinline__ void store2_f32(void *base, long long i, float2 v)
{
    if (DT == DT_F32)
        *reinterpret_cast<float2 *>(static_cast<float *>(base) + i) = v;
    else
        *reinterpret_cast<unsigned *>(static_cast<unsigned short *>(base) + i) = pack2<DT>(v.x, v.y);
}

// ---- epilogue ops, called by the generated epilogue structs in spec order --------------
// Each op works on a pair of adjacent elements (n, n+1) of row m, n even: the accumulator
// fragments hold pairs, and a pair is one 4-byte (16-bit types) or 8-byte (f32) access.
__device__ __forceinline__ float2 op_scale(float2 v, float alpha) { return make_float2(v.x * alpha, v.y * alpha); }
// Where one CTA's epilogue finds its bias and residual: shared-memory copies of the tile's
// part, made while the mainloop ran (Hopper family), or global memory.
struct TileInputs {
    bool staged_residual, staged_bias;   // read from the tile buffer / the bias buffer
    bool staged_store;                   // store op staged_slot writes into the tile buffer
    int staged_slot;
    bool staged_out;                     // out (split: the pre-norm values) into the tile buffer
    bool ringed;                         // ... which holds Epilogue::kRingBlocks column blocks, not
                                         // the whole tile (store_tile_ring)
    unsigned tile, bias;   // shared-memory addresses: the tile buffer (rows m0.., columns n0..)
                           // and the bias elements n0..
    int m0, n0;
    // The tile buffer is blocks of block_cols columns (rows of ROW_BYTES, 128 or 64: the
    // Epilogue's kTileRowBytes) by the tile's rows, each block_bytes long, with the swizzle of a
    // TMA box that wide: the 16-byte chunk c of row r is stored as chunk c ^ (r % 8) (128
    // bytes), or c ^ ((r / 2) % 4) (64 bytes).
    int block_bytes, block_cols;
    const void *store_map, *out_map;   // the TMA maps the buffer is written out with (flush)
    int row_t, col_t;   // this thread's first row and column in the tile (set by the epilogue)
    int ordinal;        // the CTA's tiles before this one (numbers the cluster strategy's exchanges)
    unsigned pair;      // the tile-buffer address of the pair the epilogue is working on
    // 16-bit types: the epilogue has read this pair's staged residual and bias ahead (whole
    // 8x8 blocks with ldmatrix) into residual_bits and bias_bits, DT bits.
    bool staged_in_regs;
    unsigned residual_bits, bias_bits;

    // The tile-buffer address of this thread's pair (mi, ni, h) in the accumulator fragment
    // layout: row row_t + FRAG_STEP mi + 8 h (the epilogue's kFragStep), columns col_t + 8 ni
    // (and + 1). Written from the thread's row and column, not from m - m0, so that the
    // compiler sees every term but row_t and col_t as a constant (and row % 8 as row_t % 8).
    template <int BYTES, int FRAG_STEP, int ROW_BYTES> __device__ unsigned at_frag(int mi, int ni, int h) const
    {
        static_assert(ROW_BYTES == 128 || ROW_BYTES == 64, "tile-buffer rows are 128 or 64 bytes");
        constexpr unsigned kShift = ROW_BYTES == 128 ? 7 : 6, kChunkMask = ROW_BYTES / 16 - 1;
        const unsigned r = static_cast<unsigned>(row_t + mi * FRAG_STEP + h * 8);
        const unsigned off = static_cast<unsigned>(col_t + ni * 8) * BYTES;
        const unsigned swz = ROW_BYTES == 128 ? r : r >> 1;
        return tile + (off >> kShift) * static_cast<unsigned>(block_bytes) + r * ROW_BYTES +
               ((((off >> 4) ^ swz) & kChunkMask) << 4) + (off & 15u);
    }
    template <int BYTES> __device__ unsigned bias_at(int n) const
    {
        return bias + static_cast<unsigned>(n) * BYTES - static_cast<unsigned>(n0) * BYTES;
    }
};

// Elements (x, y) at a shared-memory address. volatile: kept in program order after the wait
// for the copies and with the stores into the same buffer (a plain asm without memory effects
// could be moved across them), and not issued all at once (which costs registers the
// accumulators need).
template <int DT> __device__ __forceinline__ float2 ld_shared2(unsigned addr)
{
    if (DT == DT_F32) {
        float2 v;
        asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(addr));
        return v;
    }
    unsigned u;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(u) : "r"(addr));
    return unpack2<DT>(u);
}

// Stores elements (x, y) at a shared-memory address (a DT pair, or BF16 bits for DT_BF16).
template <int DT> __device__ __forceinline__ void st_shared2(unsigned addr, float2 v)
{
    if (DT == DT_F32)
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(v.x), "f"(v.y));
    else
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(pack2<DT>(v.x, v.y)));
}

template <int DT> __device__ __forceinline__ float2 op_bias(float2 v, const Params &p, const TileInputs &in, int n)
{
    constexpr int bytes = DT == DT_F32 ? 4 : 2;
    const float2 b = !in.staged_bias                    ? load2_f32<DT>(p.bias, n)
                     : DT != DT_F32 && in.staged_in_regs ? unpack2<DT>(in.bias_bits)
                                                         : ld_shared2<DT>(in.bias_at<bytes>(n));
    return make_float2(v.x + b.x, v.y + b.y);
}
template <int DT>
__device__ __forceinline__ float2 op_residual(float2 v, const Params &p, const TileInputs &in, int m, int n, float beta)
{
    // staged: the pair (m, n) is the one at in.pair
    const float2 r = !in.staged_residual ? load2_f32<DT>(p.residual, static_cast<long long>(m) * p.ldr + n)
                     : DT != DT_F32 && in.staged_in_regs ? unpack2<DT>(in.residual_bits)
                                                         : ld_shared2<DT>(in.pair);
    return make_float2(v.x + beta * r.x, v.y + beta * r.y);
}
// NaN passes through (fmaxf would turn it into 0): max.NaN, one instruction where a compare
// and a select took two (sm_80 and later, every target of the library).
// The norm's affine step on elements n and n+1 of a row: times gamma, plus beta (LayerNorm);
// the values as they are when the norm has no gamma (AFFINE false).
template <int DT, int NORM, bool AFFINE>
__device__ __forceinline__ float2 op_affine(float2 v, const Params &p, int n)
{
    if (!AFFINE) return v;
    const float2 g = load2_f32<DT>(p.gamma, n);
    v = make_float2(v.x * g.x, v.y * g.y);
    if (NORM == NORM_LAYERNORM) {
        const float2 b = load2_f32<DT>(p.beta, n);
        v = make_float2(v.x + b.x, v.y + b.y);
    }
    return v;
}
__device__ __forceinline__ float relu1(float v)
{
    float r;
    asm("max.NaN.f32 %0, %1, 0f00000000;" : "=f"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ float gelu1(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_tanh1(float v)
{
    return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
}
__device__ __forceinline__ float silu1(float v) { return v / (1.0f + expf(-v)); }
__device__ __forceinline__ float2 op_relu(float2 v) { return make_float2(relu1(v.x), relu1(v.y)); }
__device__ __forceinline__ float2 op_gelu(float2 v) { return make_float2(gelu1(v.x), gelu1(v.y)); }
__device__ __forceinline__ float2 op_gelu_tanh(float2 v) { return make_float2(gelu_tanh1(v.x), gelu_tanh1(v.y)); }
__device__ __forceinline__ float2 op_silu(float2 v) { return make_float2(silu1(v.x), silu1(v.y)); }

// Gated activations (the registry's GLU ops, GLU_<TOKEN>): act(gate) * up, element by element.
enum { GLU_NONE = 0, GLU_SWIGLU = 1, GLU_GEGLU = 2 };
template <int GLU> __device__ __forceinline__ float glu1(float gate, float up)
{
    return (GLU == GLU_SWIGLU ? silu1(gate) : gelu1(gate)) * up;
}

// A gated activation's accumulators: a thread's fragments 2j and 2j + 1 hold the gate and up
// columns of its output fragment j (B's rows interleaved in blocks of 8, fusegen_pack_glu_weight:
// packed columns 16b .. 16b + 7 are gate columns 8b .., the next 8 the up columns 8b ..), so the
// output tile is the epilogue's usual fragment layout at half the width.
template <int GLU, int MI, int NI>
__device__ __forceinline__ void glu_fragments(const float (&acc)[MI][NI][4], float (&out)[MI][NI / 2][4])
{
    static_assert(NI % 2 == 0, "a thread holds whole (gate, up) fragment pairs");
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int j = 0; j < NI / 2; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) out[mi][j][e] = glu1<GLU>(acc[mi][2 * j][e], acc[mi][2 * j + 1][e]);
}
template <int DT>
__device__ __forceinline__ void op_store(float2 v, const Params &p, const TileInputs &in, int slot, int m, int n)
{
    if (in.staged_store && slot == in.staged_slot)
        st_shared2<DT>(in.pair, v);   // the epilogue copies the tile out
    else
        store2_f32<DT>(p.store[slot], static_cast<long long>(m) * p.ld_store[slot] + n, v);
}

// ---- PTX wrappers ----------------------------------------------------------------------
__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    unsigned long long a;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
    return static_cast<unsigned>(a);
}

// 16-byte global->shared copy; src_bytes 0 fills the destination with zeros.
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
// The same at a shared-memory address, and its mirror stmatrix (sm_90 and later; only the Hopper
// family's epilogue calls it). volatile: ordered with the waits for the tile buffer.
__device__ __forceinline__ void ldmatrix_x4_at(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void stmatrix_x4_at(unsigned addr, const unsigned (&r)[4])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    (void)addr, (void)r;
    __trap();
#else
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r[0]), "r"(r[1]),
                 "r"(r[2]), "r"(r[3]));
#endif
}
__device__ __forceinline__ unsigned ld_shared_b32(unsigned addr)
{
    unsigned u;
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(u) : "r"(addr));
    return u;
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

template <int DT> __device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    if (DT == DT_BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Chan's merge of two (count, mean, M2) summaries.
__device__ __forceinline__ void chan_merge(float &n_a, float &mean_a, float &m2_a, float n_b, float mean_b, float m2_b)
{
    float n = n_a + n_b;
    if (n_b == 0.0f) return;
    float delta = mean_b - mean_a;
    float w = n_b / n;
    mean_a += delta * w;
    m2_a += m2_b + delta * delta * n_a * w;
    n_a = n;
}

// ---- thread-block clusters (sm_90; used by the cluster strategy only) ---------------------
// Every thread of every CTA of the cluster arrives; memory written before is visible after.
__device__ __forceinline__ void cluster_sync()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}
// cluster_sync in two halves: arrive (ordering nothing) early, wait just before the first access
// to another CTA's shared memory, which must wait until every CTA of the cluster has started.
__device__ __forceinline__ void cluster_arrive_relaxed()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ unsigned cluster_size()
{
    unsigned n = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
#endif
    return n;
}
__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
    return r;
}
// The shared-memory address of `local` in the CTA of the cluster with this rank.
__device__ __forceinline__ unsigned peer_addr(const void *local, unsigned rank)
{
    unsigned remote = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
#else
    (void)local, (void)rank;
#endif
    return remote;
}
// v into the float at `local`'s offset in the CTA with this rank.
__device__ __forceinline__ void store_peer(const float *local, unsigned rank, float v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("st.shared::cluster.f32 [%0], %1;\n" ::"r"(peer_addr(local, rank)), "f"(v) : "memory");
#else
    (void)local, (void)rank, (void)v;
#endif
}
// Arrives on the mbarrier at `local`'s offset in the CTA with this rank, releasing this thread's
// earlier writes (to any CTA of the cluster) to whoever waits on it.
__device__ __forceinline__ void arrive_peer(const unsigned long long *local, unsigned rank)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(peer_addr(local, rank))
                 : "memory");
#else
    (void)local, (void)rank;
#endif
}
__device__ __forceinline__ void exchange_bar_init(unsigned long long *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// Waits for the phase of this parity of a local mbarrier that other CTAs arrive on; their writes
// released with the arrivals are visible after.
__device__ __forceinline__ void wait_cluster(const unsigned long long *bar, unsigned parity)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(smem_addr(bar)), "r"(parity)
                     : "memory");
    } while (!done);
#else
    (void)bar, (void)parity;
#endif
}

// ---- bulk copies shared -> global (sm_90; the Hopper family's staged epilogue only) -------
// The writing threads' st.shared must be made visible to the copy engine (the async proxy).
__device__ __forceinline__ void fence_proxy_async_shared()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
// Copies the box at (c0 = column, c1 = row) of the tensor that map describes from shared
// memory at src (the box's layout, swizzled as the map says); clipped at the tensor's edges.
__device__ __forceinline__ void tma_store_2d(const void *map, unsigned src, int c0, int c1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                     reinterpret_cast<unsigned long long>(map)),
                 "r"(src), "r"(c0), "r"(c1)
                 : "memory");
#else
    (void)map, (void)src, (void)c0, (void)c1;
#endif
}
__device__ __forceinline__ void bulk_commit()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
// Waits until this thread's bulk copies have read their shared-memory source.
__device__ __forceinline__ void bulk_wait_read()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
#endif
}
// Waits until at most the last group of this thread's bulk copies has not read its source yet.
__device__ __forceinline__ void bulk_wait_read_all_but_last()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
#endif
}
// Waits until this thread's bulk copies have completed (their writes are done).
__device__ __forceinline__ void bulk_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
}

// Tile number id of a tiles_m x tiles_n grid of tiles, in grouped order: consecutive numbers
// walk down a group of 8 row tiles before moving to the next column tile, so the B columns that
// the CTAs working at one time read are shared by 8 row tiles while they are in L2.
struct TileCoord {
    int m, n;
};
__device__ __forceinline__ TileCoord grouped_tile(int id, int tiles_m, int tiles_n)
{
    const int group_rows = 8;
    const int per_group = group_rows * tiles_n;
    const int first_m = (id / per_group) * group_rows;
    const int rows_here = min(tiles_m - first_m, group_rows);
    const int in_group = id % per_group;
    TileCoord t;
    t.m = first_m + in_group % rows_here;
    t.n = in_group / rows_here;
    return t;
}

// ---- the norm of A's rows (a_norm), shared by every mainloop family ----------------------
// A thread sums the squares of the A rows its accumulator fragments hold (rows row_t + 8 h of
// each 16-row block), a quarter of each k tile's columns: the four lanes of a quad share a row
// and take 16-byte chunks q, q + 4, ... of it. Zero-filled rows and columns past M and K add
// nothing. After the mainloop the quad's sums make the row's, and its accumulators are scaled
// by rstd = 1 / sqrt(sum / K + eps) before the epilogue's ops (B holds gamma folded in).
template <int DT> __device__ __forceinline__ float sumsq8(uint4 c, float s)
{
    const unsigned w[4] = {c.x, c.y, c.z, c.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 v = unpack2<DT>(w[i]);
        s = fmaf(v.x, v.x, s);
        s = fmaf(v.y, v.y, s);
    }
    return s;
}

template <int MI, int NI>
__device__ __forceinline__ void a_norm_scale(float (&acc)[MI][NI][4], const float (&sq)[MI][2], int k, float eps)
{
#pragma unroll
    for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float s = sq[mi][h];
            s += __shfl_xor_sync(0xffffffffu, s, 1);
            s += __shfl_xor_sync(0xffffffffu, s, 2);
            const float rstd = rsqrtf((k > 0 ? s / static_cast<float>(k) : 0.0f) + eps);
#pragma unroll
            for (int ni = 0; ni < NI; ++ni) {
                acc[mi][ni][2 * h] *= rstd;
                acc[mi][ni][2 * h + 1] *= rstd;
            }
        }
}

// ---- the fused epilogue, shared by every mainloop family ---------------------------------
// Works on accumulators laid out as mma m16n8 fragments (wgmma m64nN uses the same per-warp
// layout): warp (warp_m, warp_n) owns rows warp_m*WM.. and columns warp_n*WN.. of the CTA tile,
// as MI x NI fragments of 16x8. Epi supplies pre() (ops before the norm), post() (ops after it),
// kEps and kAffine.
// SYNC_THREADS: 0 when every thread of the CTA runs the epilogue (it synchronizes with
// __syncthreads), else the number of threads that do, as in the Hopper family, whose producer
// warpgroup does not: 256 (both consumer warpgroups on one tile, named barrier 1) or 128 (each
// consumer warpgroup on its own tile, named barrier 1 or 2: its warpgroup index).
template <int DT_OUT, int BM, int BN, int WARPS_M, int WARPS_N, int NORM, int STRATEGY, class Epi, int SYNC_THREADS = 0,
          int FRAG_STEP = 16, int QUAD_FINISH_BLOCKS = 20>
struct Epilogue {
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int MI = WM / 16, NI = WN / 8;
    // Row i of a thread's fragments is row_t + kFragStep * mi (+ 8 h) and warp_m's first row is
    // warp_m * kWarpStep: 16 and WM when a warp's rows are one block (mma, one wgmma row block a
    // warp), or 64 and 16 when a warpgroup's wgmmas cover two 64-row blocks (warp w then owns
    // rows 16w.. of each).
    static constexpr int kFragStep = FRAG_STEP;
    static constexpr int kWarpStep = FRAG_STEP == 16 ? WM : 16;
    static_assert(FRAG_STEP == 16 || (WARPS_N == 1 && FRAG_STEP == WARPS_M * 16 && FRAG_STEP * MI == BM),
                  "fragments are either stacked in a warp or interleaved across a warpgroup's row blocks");
    // Cluster strategy: each CTA pushes its row partials into every peer's exchange slot
    // (st.shared::cluster) and arrives on the peer's mbarrier of that slot; each CTA waits on
    // its own, then adds the partials in rank order, so all get the same bits. The slots serve a
    // CTA's exchanges in turn (mean, then squares, tile after tile): a CTA pushes exchange e + 2
    // only after every peer has pushed e + 1, which each does after reading e.
    // The slots hold a partial of each rank the plan allows (Epi::kClusterRanks: 16, the
    // generator's FG_PLAN_MAX_CLUSTER; past 8 the clusters are of a non-portable size).
    static constexpr int kMaxCluster = STRATEGY == STRATEGY_CLUSTER ? Epi::kClusterRanks : 0;
    static_assert(STRATEGY != STRATEGY_CLUSTER || (kMaxCluster >= 2 && kMaxCluster <= 16),
                  "a cluster variant's clusters have 2 to 16 CTAs");
    static constexpr int kExchanges = NORM == NORM_LAYERNORM ? 2 : 1;   // a tile
    static constexpr int XCH_SLOT_BYTES = kMaxCluster * BM * 4;         // [rank][row] floats
    static constexpr int RED_BYTES = WARPS_N * BM * 4;                  // row_sum's exchange
    // row_sum's floats; cluster: then two mbarriers and the two slots
    static constexpr int SCRATCH_BYTES = RED_BYTES + (STRATEGY == STRATEGY_CLUSTER ? 16 + 2 * XCH_SLOT_BYTES : 0);
    // The threads that push (a warp's quad leaders, first warp column), each its 2*MI rows.
    static constexpr int kPushers = WARPS_M * 8;
    // Split strategy: the pre-norm values travel as bf16 (deviations from the tile mean for
    // LayerNorm) when the output is bf16, else as f32.
    static constexpr bool kPrenormBf16 = DT_OUT == DT_BF16;
    // ... and where a store op holds the norm's input (the plan's prenorm_store_slot), the
    // normalize kernel reads that output instead, tile by tile (norm_epilogue).
    static constexpr bool kPrenormFromStore =
        STRATEGY == STRATEGY_SPLIT && kPrenormBf16 && Epi::kPrenormStoreSlot >= 0;
    static constexpr int kOutBytes = DT_OUT == DT_F32 ? 4 : 2;
    // The Hopper tile buffer's row width in a block (TileInputs): 128 bytes, or 64 where a tile
    // row is not whole 128-byte blocks (160 16-bit columns).
    static constexpr int kTileRowBytes = (BN * kOutBytes) % 128 == 0 ? 128 : 64;
    __device__ static unsigned long long *exchange_bars(void *scratch)
    {
        return reinterpret_cast<unsigned long long *>(static_cast<unsigned char *>(scratch) + RED_BYTES);
    }
    __device__ static float *exchange_slot(void *scratch, int slot)
    {
        return reinterpret_cast<float *>(static_cast<unsigned char *>(scratch) + RED_BYTES + 16 + slot * XCH_SLOT_BYTES);
    }
    // One thread, before the cluster's first barrier (which publishes the initialization):
    // every CTA of the cluster's pushers arrive once an exchange.
    __device__ static void init_exchange(void *scratch)
    {
        if constexpr (STRATEGY == STRATEGY_CLUSTER)
            for (int slot = 0; slot < 2; ++slot) exchange_bar_init(exchange_bars(scratch) + slot, cluster_size() * kPushers);
    }

    // sync() that also returns whether v was true in any of the threads.
    __device__ static bool sync_or(bool v)
    {
        if constexpr (SYNC_THREADS == 0) return __syncthreads_or(v) != 0;
        unsigned any = 0;
        if constexpr (SYNC_THREADS == 128)
            asm volatile("{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n barrier.red.or.pred q, %2, 128, p;\n"
                         " selp.u32 %0, 1, 0, q;\n}\n"
                         : "=r"(any) : "r"(static_cast<unsigned>(v)), "r"(threadIdx.x >> 7) : "memory");
        else
            asm volatile("{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n barrier.red.or.pred q, 1, %2, p;\n"
                         " selp.u32 %0, 1, 0, q;\n}\n"
                         : "=r"(any) : "r"(static_cast<unsigned>(v)), "n"(SYNC_THREADS) : "memory");
        return any != 0;
    }

    __device__ static void sync()
    {
        if constexpr (SYNC_THREADS == 0)
            __syncthreads();
        else if constexpr (SYNC_THREADS == 128)
            asm volatile("bar.sync %0, 128;\n" ::"r"(threadIdx.x >> 7) : "memory");
        else
            asm volatile("bar.sync 1, %0;\n" ::"n"(SYNC_THREADS) : "memory");
    }

    // Sums each of this thread's 2*MI row values over the CTA's columns. part[mi][h] in,
    // row totals out. Uses red (WARPS_N * BM floats of shared memory) and ends synchronized
    // when WARPS_N > 1; with one warp across the tile, the quad's shuffles are the whole sum.
    __device__ static void row_sum(float (&part)[MI][2], float *red, int warp_m, int warp_n, int lane)
    {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float s = part[mi][h];
                s += __shfl_xor_sync(0xffffffffu, s, 1);
                s += __shfl_xor_sync(0xffffffffu, s, 2);
                if (WARPS_N == 1)
                    part[mi][h] = s;
                else if ((lane & 3) == 0)
                    red[warp_n * BM + warp_m * kWarpStep + mi * kFragStep + (lane >> 2) + h * 8] = s;
            }
        if constexpr (WARPS_N == 1) return;   // each warp holds whole rows of the tile: nothing to exchange
        sync();
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                int r = warp_m * kWarpStep + mi * kFragStep + (lane >> 2) + h * 8;
                float s = 0.0f;
#pragma unroll
                for (int w = 0; w < WARPS_N; ++w) s += red[w * BM + r];
                part[mi][h] = s;
            }
        sync();
    }

    // 16-bit tile buffers: pairs go in and out four at a time a thread by ldmatrix/stmatrix .x4,
    // a quad being the 8x8 blocks (h = 0, 1) x (columns ni, ni + 1) of row group mi, ni even, in
    // the fragment layout (register 2 * (column block - ni) + h): a quarter of the instructions
    // of one access per pair.
    static constexpr bool kQuads = kOutBytes == 2 && NI % 2 == 0 && WN % 16 == 0;
    // The shared address lane gives for its row (lane % 8) of block lane / 8 of quad (mi, ni).
    // The tile buffer's swizzle puts 16-byte chunk c of row r at c ^ (r % 8) (128-byte rows) or
    // c ^ ((r / 2) % 4) (64-byte rows); r % 8 is the lane's rr.
    __device__ static unsigned quad_addr(const TileInputs &in, int mi, int ni, int lane)
    {
        constexpr unsigned kChunks = kTileRowBytes / 16, kShift = kTileRowBytes == 128 ? 3 : 2;
        const unsigned rr = lane & 7, hh = (lane >> 3) & 1, nsub = lane >> 4;
        const unsigned row = static_cast<unsigned>(in.row_t - (lane >> 2) + mi * kFragStep) + hh * 8 + rr;
        const unsigned chunk = static_cast<unsigned>(in.col_t - (lane & 3) * 2 + ni * 8) / 8;   // even
        const unsigned swz = kTileRowBytes == 128 ? rr : (rr >> 1);
        return in.tile + (chunk >> kShift) * static_cast<unsigned>(in.block_bytes) + row * kTileRowBytes +
               ((((chunk & (kChunks - 1)) | nsub) ^ swz) << 4);
    }
    // Writes quad by quad into the tile buffer the 16-bit pairs value(mi, ni, h) returns.
    template <class Value> __device__ static void store_quads(const TileInputs &in, int lane, Value value)
    {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ni += 2) {
                unsigned q[4];
#pragma unroll
                for (int j = 0; j < 4; ++j) q[j] = value(mi, ni + j / 2, j % 2);
                stmatrix_x4_at(quad_addr(in, mi, ni, lane), q);
            }
    }

    // Epi::pre on every pair of this thread; elements outside the matrix become 0 (CHECK:
    // some may be outside).
    template <bool CHECK>
    __device__ static void pre_ops(const Params &p, const TileInputs &in, float (&acc)[MI][NI][4], int row_base,
                                   int col_base, int lane)
    {
        if constexpr (kQuads) {
            if (in.staged_residual || in.staged_bias) {
                pre_ops_quads<CHECK>(p, in, acc, row_base, col_base, lane);
                return;
            }
        }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int m = row_base + mi * kFragStep + h * 8, n = col_base + ni * 8;
                    // N is a multiple of 8, so a pair is either wholly inside or wholly outside.
                    float2 v = make_float2(0.0f, 0.0f);
                    if (!CHECK || (m < p.m && n < p.n)) {
                        TileInputs here = in;   // with the address of this pair
                        here.pair = in.at_frag<kOutBytes, kFragStep, kTileRowBytes>(mi, ni, h);
                        v = Epi::pre(make_float2(acc[mi][ni][h * 2], acc[mi][ni][h * 2 + 1]), m, n, p, here);
                    }
                    acc[mi][ni][h * 2] = v.x;
                    acc[mi][ni][h * 2 + 1] = v.y;
                }
    }
    // The same with the staged residual read a quad at a time and each bias pair once.
    template <bool CHECK>
    __device__ static void pre_ops_quads(const Params &p, const TileInputs &in, float (&acc)[MI][NI][4], int row_base,
                                         int col_base, int lane)
    {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ni += 2) {
                unsigned residual[4] = {}, bias[2] = {};
                if (in.staged_residual) {
                    ldmatrix_x4_at(residual, quad_addr(in, mi, ni, lane));
                    // A store op may write these pairs next, each by its owner, where another
                    // lane named the row to ldmatrix: the warp has read them all before (the
                    // values are in the writers' registers), and this says so to the tools.
                    if (in.staged_store) __syncwarp();
                }
                if (in.staged_bias)
#pragma unroll
                    for (int j = 0; j < 2; ++j) bias[j] = ld_shared_b32(in.bias_at<2>(col_base + (ni + j) * 8));
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int nj = ni + j / 2, h = j % 2;
                    const int m = row_base + mi * kFragStep + h * 8, n = col_base + nj * 8;
                    float2 v = make_float2(0.0f, 0.0f);
                    if (!CHECK || (m < p.m && n < p.n)) {
                        TileInputs here = in;
                        here.pair = in.at_frag<2, kFragStep, kTileRowBytes>(mi, nj, h);
                        here.staged_in_regs = true;
                        here.residual_bits = residual[j];
                        here.bias_bits = bias[j / 2];
                        v = Epi::pre(make_float2(acc[mi][nj][h * 2], acc[mi][nj][h * 2 + 1]), m, n, p, here);
                    }
                    acc[mi][nj][h * 2] = v.x;
                    acc[mi][nj][h * 2 + 1] = v.y;
                }
            }
        // Outputs may go into these pairs later without a CTA barrier in between (row_sum has
        // none when one warp spans the tile): the same, for the tools.
        if (in.staged_residual) __syncwarp();
    }

    // Applies the whole epilogue to a CTA tile and writes it. scratch: SCRATCH_BYTES of shared
    // memory no one else uses now.
    __device__ static void apply(const Params &p, const TileInputs &tile_inputs, float (&acc)[MI][NI][4], void *scratch,
                                 TileCoord tile, int warp_m, int warp_n, int lane)
    {
        const int m0 = tile.m * BM, n0 = tile.n * BN;
        TileInputs in = tile_inputs;
        in.row_t = warp_m * kWarpStep + (lane >> 2);
        in.col_t = warp_n * WN + (lane & 3) * 2;

        // The ops before the norm, per element, in registers; a tile wholly inside the matrix
        // skips the bounds checks.
        const int row_base = m0 + warp_m * kWarpStep + (lane >> 2);
        const int col_base = n0 + warp_n * WN + (lane & 3) * 2;
        if (m0 + BM <= p.m && n0 + BN <= p.n)
            pre_ops<false>(p, in, acc, row_base, col_base, lane);
        else
            pre_ops<true>(p, in, acc, row_base, col_base, lane);
        const int tid = (warp_m * WARPS_N + warp_n) * 32 + lane;
        if (in.staged_store) flush(in, in.store_map, tid);
        // Out goes through the tile buffer too: it waits for the copies above to read the
        // buffer (tile_free) as late as it can, after the norm's statistics.
        const bool free_before_out = in.staged_store && in.staged_out;

        if constexpr (NORM == NORM_NONE) {
            if (free_before_out) tile_free(tid);
            if (in.ringed) {
                store_tile_ring(in, acc, tid, lane);   // copied out block by block
            } else {
                store_tile(p, in, acc, row_base, col_base, lane);
                if (in.staged_out) flush(in, in.out_map, tid);
            }
        } else {
            const bool wrote = norm_epilogue(p, in, acc, static_cast<float *>(scratch), tile, row_base, col_base,
                                             warp_m, warp_n, lane, free_before_out ? tid : -1);
            if (in.staged_out) flush(in, in.out_map, tid, wrote);   // split: the map is of the pre-norm values
        }
        // The tile buffer may be refilled once the copies have read it: the caller waits for
        // that (release_tile) when it needs the buffer again, not here, so the copies of the
        // last output overlap whatever the caller does next.
    }

    // After apply: the tile buffer's copies out have read it (thread 0 issued them).
    __device__ static void release_tile(const TileInputs &in, int tid)
    {
        if ((in.staged_store || in.staged_out) && tid == 0) bulk_wait_read();
    }

    // The tile buffer -> the tensor of map, one TMA copy per block by thread 0, after every
    // thread's writes into the buffer (made visible to the copy engine first).
    // issue false: the barrier alone (nothing was written). The barrier is not skipped: a
    // barrier under a branch the compiler cannot prove warp-uniform made it rebuild the
    // consumers' mainloop with warp syncs and per-thread addresses (+8k cycles a tile, v33).
    __device__ static void flush(const TileInputs &in, const void *map, int tid, bool issue = true)
    {
        fence_proxy_async_shared();
        sync();
        if (tid == 0 && issue) {
            for (int b = 0; b < BN / in.block_cols; ++b)
                tma_store_2d(map, in.tile + static_cast<unsigned>(b * in.block_bytes), in.n0 + b * in.block_cols, in.m0);
            bulk_commit();
        }
    }
    // Before the tile buffer is written again: the copies have read it.
    __device__ static void tile_free(int tid)
    {
        if (tid == 0) bulk_wait_read();
        sync();
    }

    // Adds up, for each of this thread's rows, the partials of every CTA of the cluster (in rank
    // order, so every CTA gets the same bits), through exchange number `exchange` of this CTA.
    __device__ static void cluster_total(float (&part)[MI][2], void *scratch, int exchange, int warp_m, int warp_n,
                                         int lane)
    {
        const int slot = exchange & 1;
        const unsigned long long *bar = exchange_bars(scratch) + slot;
        const float *xs = exchange_slot(scratch, slot);
        const unsigned ranks = cluster_size(), me = cluster_rank();
        // The quad leaders push for their quads, whose other lanes read slot `exchange & 1` two
        // exchanges ago: a peer may overwrite it once this push has landed, so those reads
        // are ordered before it.
        __syncwarp();
        if (warp_n == 0 && (lane & 3) == 0) {
            for (unsigned r = 0; r < ranks; ++r) {
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
                        store_peer(xs + me * BM + warp_m * kWarpStep + mi * kFragStep + (lane >> 2) + h * 8, r, part[mi][h]);
                arrive_peer(bar, r);
            }
        }
        wait_cluster(bar, (exchange >> 1) & 1);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float *at = xs + warp_m * kWarpStep + mi * kFragStep + (lane >> 2) + h * 8;
                float t = 0.0f;
                for (unsigned r = 0; r < ranks; ++r) t += at[r * BM];
                part[mi][h] = t;
            }
    }

    // Each of this thread's rows: the sum of squared deviations from the mean over its columns
    // (CHECK: columns from n_cols on are left out).
    static constexpr bool kEdgeApart = WARPS_N == 1;
    template <bool CHECK>
    __device__ static void centered_squares(const float (&acc)[MI][NI][4], const float (&mean)[MI][2],
                                            float (&second)[MI][2], int col_base, int n_cols)
    {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float s = 0.0f;
#pragma unroll
                for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                    for (int j = 0; j < 2; ++j) {
                        const float d = acc[mi][ni][h * 2 + j] - mean[mi][h];
                        s += (!CHECK || col_base + ni * 8 + j < n_cols) ? d * d : 0.0f;
                    }
                second[mi][h] = s;
            }
    }

    // kPrenormFromStore: whether a row's tile values need the tile's own copy (deviations from
    // the tile mean) because plain bf16 values would lose precision: the tile mean larger than
    // the spread. False for non-finite statistics.
    __device__ static bool copy_needed(float mean, float m2, float count)
    {
        return mean * mean * count > m2;
    }

    // The norm over each row: statistics (mean first, then centered squares; or the mean of
    // squares for RMSNorm), then the split hand-off, or the normalization in registers (row:
    // this CTA holds whole rows; cluster: the cluster does, and the CTAs add their partials).
    // free_tid >= 0: the tile buffer is still being copied out; free it (tile_free(free_tid))
    // before writing into it. Returns whether out (split: the pre-norm copy) was written.
    __device__ static bool norm_epilogue(const Params &p, const TileInputs &in, float (&acc)[MI][NI][4], float *scratch,
                                         TileCoord tile, int row_base, int col_base, int warp_m, int warp_n, int lane,
                                         int free_tid)
    {
        float *red = scratch;
        const int n0 = tile.n * BN;
        const int cols_here = min(BN, p.n - n0);   // valid columns of this CTA
        // Split statistics are per tile; row and cluster statistics are over all N.
        const float count = static_cast<float>(STRATEGY == STRATEGY_SPLIT ? cols_here : p.n);
        // Masked elements are 0 and are excluded from the centered sum.
        float mean[MI][2], second[MI][2] = {};
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float s = 0.0f;
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) {
                    float v0 = acc[mi][ni][h * 2], v1 = acc[mi][ni][h * 2 + 1];
                    s += (NORM == NORM_LAYERNORM) ? v0 + v1 : v0 * v0 + v1 * v1;
                }
                mean[mi][h] = s;
            }
        row_sum(mean, red, warp_m, warp_n, lane);
        if constexpr (STRATEGY == STRATEGY_CLUSTER)
            cluster_total(mean, scratch, in.ordinal * kExchanges, warp_m, warp_n, lane);
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) mean[mi][h] /= count;

        if (NORM == NORM_LAYERNORM) {
            // Columns outside the matrix take the row's mean, so they add nothing to the squares.
            // Done apart, for edge tiles only, where the registers allow (one warp across the
            // tile: the Hopper consumers' 224 a thread); else a select in the sum. (Skipping the
            // select inside the matrix halved the 64x320 tile's squares step and gained nothing:
            // finish() then waited that much longer for the store op's copy out, NOTES v43.)
            if (kEdgeApart && n0 + BN > p.n) {
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                        for (int j = 0; j < 4; ++j)
                            if (col_base + ni * 8 + j % 2 >= p.n) acc[mi][ni][j] = mean[mi][j / 2];
            }
            if (kEdgeApart)
                centered_squares<false>(acc, mean, second, col_base, p.n);
            else
                centered_squares<true>(acc, mean, second, col_base, p.n);
            row_sum(second, red, warp_m, warp_n, lane);
            if constexpr (STRATEGY == STRATEGY_CLUSTER)
                cluster_total(second, scratch, in.ordinal * kExchanges + 1, warp_m, warp_n, lane);
        }

        // Split, the norm's input already stored as bf16 (kPrenormFromStore): the normalize
        // kernel reads that output, so the tile writes its own copy (deviations from the tile
        // mean) only where plain bf16 values would lose precision: some row's tile mean larger
        // than its spread (copy_needed). One decision a tile (a barrier with an OR); each row's
        // statistics still say whether that row itself needs the copy, so the normalize kernel
        // reads it for those rows only and a row's output never depends on its neighbours.
        // RMSNorm's copy holds the plain values: never needed.
        bool keep_copy = true;
        if constexpr (kPrenormFromStore) {
            if constexpr (NORM == NORM_LAYERNORM) {
                bool need = false;
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
                        need |= row_base + mi * kFragStep + h * 8 < p.m && copy_needed(mean[mi][h], second[mi][h], count);
                keep_copy = sync_or(need);
            } else {
                keep_copy = false;
            }
        }
        if (free_tid >= 0 && keep_copy) tile_free(free_tid);
        if constexpr (STRATEGY == STRATEGY_SPLIT) {
            // Keep the values and this tile's partial statistics; the normalize kernel merges.
            // For a bf16 output the values travel as bf16, less the tile's mean for LayerNorm:
            // half the bytes of f32, and the rounding error scales with the deviation from the
            // tile mean rather than with the value, so rows whose mean dwarfs their spread stay
            // precise (plain bf16 values would not). The output is then rounded twice; where the
            // tile means differ by several row spreads the error grows with that difference.
            if (!keep_copy) {
                // nothing to write: the normalize kernel reads the stored output
            } else if (kPrenormBf16 && kQuads && in.staged_out) {   // the whole tile; its copies out skip what is outside
                store_quads(in, lane, [&](int mi, int ni, int h) {
                    const float c = NORM == NORM_LAYERNORM ? mean[mi][h] : 0.0f;
                    return pack2<DT_BF16>(acc[mi][ni][h * 2] - c, acc[mi][ni][h * 2 + 1] - c);
                });
            } else
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int m = row_base + mi * kFragStep + h * 8, n = col_base + ni * 8;
                        // The tile buffer holds the whole tile; its copies out skip what is outside.
                        if (!in.staged_out && (m >= p.m || n >= p.n)) continue;
                        const long long i = static_cast<long long>(m) * p.n + n;
                        if constexpr (kPrenormBf16) {
                            const float c = NORM == NORM_LAYERNORM ? mean[mi][h] : 0.0f;
                            const float2 d = make_float2(acc[mi][ni][h * 2] - c, acc[mi][ni][h * 2 + 1] - c);
                            if (in.staged_out)
                                st_shared2<DT_BF16>(in.at_frag<2, kFragStep, kTileRowBytes>(mi, ni, h), d);
                            else
                                *reinterpret_cast<unsigned *>(reinterpret_cast<unsigned short *>(p.prenorm) + i) =
                                    pack2<DT_BF16>(d.x, d.y);
                        } else {
                            const float2 v = make_float2(acc[mi][ni][h * 2], acc[mi][ni][h * 2 + 1]);
                            if (in.staged_out)
                                st_shared2<DT_F32>(in.at_frag<4, kFragStep, kTileRowBytes>(mi, ni, h), v);   // f32 out: the buffer holds f32
                            else
                                *reinterpret_cast<float2 *>(p.prenorm + i) = v;
                        }
                    }
            if (warp_n == 0 && (lane & 3) == 0) {
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        int m = row_base + mi * kFragStep + h * 8;
                        if (m < p.m) {
                            float *st = p.stats + (static_cast<long long>(m) * p.stats_ld + tile.n) * 2;
                            st[0] = mean[mi][h];
                            // M2 >= 0: its sign bit marks a row the normalize kernel reads from
                            // the store op's output (this tile kept no copy, or the row needs none)
                            const float m2 = (NORM == NORM_LAYERNORM) ? second[mi][h] : 0.0f;
                            const bool read_copy = keep_copy && (!kPrenormFromStore || copy_needed(mean[mi][h], m2, count));
                            st[1] = read_copy ? m2 : __int_as_float(__float_as_int(m2) | 0x80000000);
                        }
                    }
            }
        } else {
            finish(p, in, acc, mean, second, row_base, col_base, lane);
        }
        return keep_copy;
    }

    // Row and cluster strategies: normalize in registers, apply the ops after the norm, and
    // store each pair as soon as it is final (fewer live registers than a separate store pass).
    __device__ static void finish(const Params &p, const TileInputs &in, const float (&acc)[MI][NI][4],
                                  const float (&mean)[MI][2],
                                  const float (&second)[MI][2], int row_base, int col_base, int lane)
    {
        const float count = static_cast<float>(p.n);
        float rstd[MI][2], shift[MI][2];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float var = (NORM == NORM_LAYERNORM) ? second[mi][h] / count : mean[mi][h];
                rstd[mi][h] = 1.0f / sqrtf(var + Epi::kEps);
                shift[mi][h] = (NORM == NORM_LAYERNORM) ? mean[mi][h] : 0.0f;
            }
        if constexpr (kQuadFinish) {
            if (in.staged_out) {
                if (in.m0 + BM <= p.m && in.n0 + BN <= p.n)
                    finish_quads<false>(p, in, acc, shift, rstd, row_base, col_base, lane);
                else
                    finish_quads<true>(p, in, acc, shift, rstd, row_base, col_base, lane);
                return;
            }
        }
        // Column pairs outermost: gamma and beta are read once per pair and used for every row,
        // the reads of kAffineBatch column blocks in flight together (one at a time, each
        // global read's latency was exposed: ~40% of a cluster tile's epilogue, v24).
        constexpr int BATCH = affine_batch();
#pragma unroll
        for (int nb = 0; nb < NI; nb += BATCH) {
            float2 gamma[BATCH], beta[BATCH];
            load_affine<BATCH, true>(p, col_base, nb, gamma, beta);
#pragma unroll
            for (int c = 0; c < BATCH; ++c) {
                const int ni = nb + c, n = col_base + ni * 8;
                if (n >= p.n) continue;
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int m = row_base + mi * kFragStep + h * 8;
                        if (m >= p.m) continue;
                        float2 v = make_float2((acc[mi][ni][h * 2] - shift[mi][h]) * rstd[mi][h],
                                               (acc[mi][ni][h * 2 + 1] - shift[mi][h]) * rstd[mi][h]);
                        if (Epi::kAffine)
                            v = make_float2(v.x * gamma[c].x + beta[c].x, v.y * gamma[c].y + beta[c].y);
                        v = Epi::post(v, m, n, p, in);
                        put_out(p, in, m, n, in.at_frag<kOutBytes, kFragStep, kTileRowBytes>(mi, ni, h), v);
                    }
            }
        }
    }
    // finish() into a 16-bit tile buffer: four pairs a stmatrix, and bounds checks only on edge
    // tiles (a quarter of the stores, no branch a pair: the per-pair form was ~1070 instructions
    // a warp per 64x320 tile, the epilogue's longest step). An edge tile's pairs outside the
    // matrix skip the ops after the norm; the copies out skip them.
    // Where registers allow (QUAD_FINISH_BLOCKS fragment blocks a thread): up to 80
    // accumulators a thread (a 64x320 column-split, 128x160 or 128x128 tile); beside 128 (a
    // 128x256 Hopper row tile, 224 registers) the quads spilled 16 bytes; a 64x320 ping-pong
    // tile's 160 fit its consumers' 232.
    static constexpr bool kQuadFinish = kQuads && MI * NI <= QUAD_FINISH_BLOCKS;
    template <bool CHECK>
    __device__ static void finish_quads(const Params &p, const TileInputs &in, const float (&acc)[MI][NI][4],
                                        const float (&shift)[MI][2], const float (&rstd)[MI][2], int row_base,
                                        int col_base, int lane)
    {
        constexpr int BATCH = quad_batch();
#pragma unroll
        for (int nb = 0; nb < NI; nb += BATCH) {
            float2 gamma[BATCH], beta[BATCH];
            load_affine<BATCH, CHECK>(p, col_base, nb, gamma, beta);
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int c = 0; c < BATCH; c += 2) {
                    unsigned q[4];
#pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        const int cj = c + j / 2, ni = nb + cj, h = j % 2;
                        const int m = row_base + mi * kFragStep + h * 8, n = col_base + ni * 8;
                        float2 v = make_float2((acc[mi][ni][h * 2] - shift[mi][h]) * rstd[mi][h],
                                               (acc[mi][ni][h * 2 + 1] - shift[mi][h]) * rstd[mi][h]);
                        if (Epi::kAffine)
                            v = make_float2(v.x * gamma[cj].x + beta[cj].x, v.y * gamma[cj].y + beta[cj].y);
                        if (!CHECK || (m < p.m && n < p.n)) v = Epi::post(v, m, n, p, in);
                        q[j] = pack2<DT_OUT>(v.x, v.y);
                    }
                    stmatrix_x4_at(quad_addr(in, mi, nb + c, lane), q);
                }
        }
    }
    // gamma and beta of the thread's column blocks nb .. nb + BATCH - 1 (columns col_base +
    // 8 (nb + c); 1 and 0 without affine parameters, or past N when CHECK), the loads in flight
    // together. Addressed from the thread's first column, so that each load is one base plus a
    // constant offset (from the column index, each took a 64-bit multiply-add).
    template <int BATCH, bool CHECK>
    __device__ static void load_affine(const Params &p, int col_base, int nb, float2 (&gamma)[BATCH],
                                       float2 (&beta)[BATCH])
    {
        const long long first = col_base;
        const unsigned char *g = static_cast<const unsigned char *>(p.gamma) + first * kOutBytes;
        const unsigned char *b = static_cast<const unsigned char *>(p.beta) + first * kOutBytes;
#pragma unroll
        for (int c = 0; c < BATCH; ++c) {
            gamma[c] = make_float2(1.0f, 1.0f);
            beta[c] = make_float2(0.0f, 0.0f);
            const int at = (nb + c) * 8;
            if (Epi::kAffine && (!CHECK || col_base + at < p.n)) {
                gamma[c] = load2_f32<DT_OUT>(g + at * kOutBytes, 0);
                if (NORM == NORM_LAYERNORM) beta[c] = load2_f32<DT_OUT>(b + at * kOutBytes, 0);
            }
        }
    }
    static constexpr int kAffineBatch = 8;
    // The column blocks finish() reads together: the most, up to kAffineBatch, that divide NI
    // (NI 20 for a 160-column tile: 5).
    __host__ __device__ static constexpr int affine_batch()
    {
        int b = NI < kAffineBatch ? NI : kAffineBatch;
        while (NI % b != 0) --b;
        return b;
    }
    // The same for finish_quads: an even count (whole quads), 2 to kQuadBatch.
    static constexpr int kQuadBatch = 4;
    __host__ __device__ static constexpr int quad_batch()
    {
        int b = NI < kQuadBatch ? NI : kQuadBatch;
        while (b > 2 && (NI % b != 0 || b % 2 != 0)) --b;
        return b;
    }

    // Elements n and n+1 of the row times gamma, plus beta (LayerNorm).
    __device__ static float2 affine(float2 v, const Params &p, int n) { return op_affine<DT_OUT, NORM, Epi::kAffine>(v, p, n); }

    __device__ static void store_tile(const Params &p, const TileInputs &in, const float (&acc)[MI][NI][4], int row_base,
                                      int col_base, int lane)
    {
        if constexpr (kQuads) {
            if (in.staged_out) {   // the whole tile: its copies out skip what is outside
                store_quads(in, lane, [&](int mi, int ni, int h) {
                    return pack2<DT_OUT>(acc[mi][ni][h * 2], acc[mi][ni][h * 2 + 1]);
                });
                return;
            }
        }
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    int m = row_base + mi * kFragStep + h * 8;
                    int n = col_base + ni * 8;
                    // N is a multiple of 8, so a pair is either wholly inside or wholly outside.
                    if (m < p.m && n < p.n)
                        put_out(p, in, m, n, in.at_frag<kOutBytes, kFragStep, kTileRowBytes>(mi, ni, h),
                                make_float2(acc[mi][ni][h * 2], acc[mi][ni][h * 2 + 1]));
                }
    }

    // The ring of a tile buffer that holds kRingBlocks of the tile's column blocks (beside a
    // deep pipeline the whole tile does not fit): block b goes into slot b % kRingBlocks once the
    // copy out of that slot's previous block has read it, and is copied out at once, so writing
    // a block overlaps the copy of the one before. Every warp holds all of the tile's columns.
    static constexpr int kRingBlocks = 2;
    static constexpr int kRingBlockCols = kTileRowBytes / kOutBytes, kRingNi = kRingBlockCols / 8;
    // Whether a ring can carry this tile's out (the plan's condition too: more blocks than the ring)
    static constexpr bool kRingable = WARPS_N == 1 && BN % kRingBlockCols == 0 && BN / kRingBlockCols > kRingBlocks;
    __device__ static void store_tile_ring(const TileInputs &in, const float (&acc)[MI][NI][4], int tid, int lane)
    {
        if constexpr (kRingable) {
            constexpr int kBlocks = BN / kRingBlockCols;
#pragma unroll
            for (int b = 0; b < kBlocks; ++b) {
                const int slot = b % kRingBlocks;
                if (b >= kRingBlocks) {   // the copy of the slot's previous block has read it
                    if (tid == 0) bulk_wait_read_all_but_last();
                    sync();
                }
                // at_frag and quad_addr add b blocks to the buffer's address: the slot's instead
                TileInputs at = in;
                at.tile = in.tile + static_cast<unsigned>((slot - b) * in.block_bytes);
#pragma unroll
                for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                    for (int ni = b * kRingNi; ni < (b + 1) * kRingNi; ni += 2) {
                        if constexpr (kQuads) {
                            unsigned q[4];
#pragma unroll
                            for (int j = 0; j < 4; ++j)
                                q[j] = pack2<DT_OUT>(acc[mi][ni + j / 2][(j % 2) * 2], acc[mi][ni + j / 2][(j % 2) * 2 + 1]);
                            stmatrix_x4_at(quad_addr(at, mi, ni, lane), q);
                        } else {
#pragma unroll
                            for (int j = 0; j < 4; ++j)
                                st_shared2<DT_OUT>(at.at_frag<kOutBytes, kFragStep, kTileRowBytes>(mi, ni + j / 2, j % 2),
                                                   make_float2(acc[mi][ni + j / 2][(j % 2) * 2],
                                                               acc[mi][ni + j / 2][(j % 2) * 2 + 1]));
                        }
                    }
                fence_proxy_async_shared();
                sync();
                if (tid == 0) {
                    tma_store_2d(in.out_map, in.tile + static_cast<unsigned>(slot * in.block_bytes),
                                 in.n0 + b * in.block_cols, in.m0);
                    bulk_commit();
                }
            }
        } else {
            (void)in, (void)acc, (void)tid, (void)lane;
            __trap();   // never planned (GemmSm90 asserts kRingable where a ring is)
        }
    }

    // One output pair: into the tile buffer at addr (copied out by flush) or straight to global
    // memory.
    __device__ static void put_out(const Params &p, const TileInputs &in, int m, int n, unsigned addr, float2 v)
    {
        if (in.staged_out)
            st_shared2<DT_OUT>(addr, v);
        else
            store2_f32<DT_OUT>(p.out, static_cast<long long>(m) * p.ldo + n, v);
    }

    // Normalize kernel, bf16 rows: 16-byte loads a lane, kNormLoads of them in flight, so a
    // warp covers 32 * 8 * kNormLoads columns a round.
    static constexpr int kNormLoads = 4;
    __device__ static void load_chunk(uint4 (&chunk)[kNormLoads], const unsigned short *row, int c0, int lane, int n_cols)
    {
#pragma unroll
        for (int i = 0; i < kNormLoads; ++i) {
            const int n = c0 + (i * 32 + lane) * 8;   // N % 8 == 0: 8 columns are all in or all out
            if (n < n_cols) chunk[i] = __ldg(reinterpret_cast<const uint4 *>(row + n));
        }
    }
    // Eight output elements from element i on: one or two 16-byte stores (i % 8 == 0, and the
    // output's pointer and leading dimension keep that 16-byte aligned).
    __device__ static void store8(void *out, long long i, const float2 (&v)[4])
    {
        if constexpr (DT_OUT == DT_F32) {
            float4 *o = reinterpret_cast<float4 *>(static_cast<float *>(out) + i);
            o[0] = make_float4(v[0].x, v[0].y, v[1].x, v[1].y);
            o[1] = make_float4(v[2].x, v[2].y, v[3].x, v[3].y);
        } else {
            *reinterpret_cast<uint4 *>(static_cast<unsigned short *>(out) + i) =
                make_uint4(pack2<DT_OUT>(v[0].x, v[0].y), pack2<DT_OUT>(v[1].x, v[1].y), pack2<DT_OUT>(v[2].x, v[2].y),
                           pack2<DT_OUT>(v[3].x, v[3].y));
        }
    }

    // normalize(): eight bf16 values w of row m from column n on, plus back, times rstd, then
    // gamma and beta (one 16-byte load each: the runtime checked both pointers 16-byte aligned;
    // N % 8 == 0) and the ops after the norm; one 16-byte store (or two for f32).
    __device__ static __forceinline__ void normalize8(const Params &p, int m, int n, const uint4 &w8, float back,
                                                      float rstd)
    {
        const TileInputs no_inputs = {};
        const unsigned w[4] = {w8.x, w8.y, w8.z, w8.w};
        uint4 g8 = {}, b8 = {};
        if constexpr (Epi::kAffine) {
            g8 = __ldg(reinterpret_cast<const uint4 *>(static_cast<const unsigned short *>(p.gamma) + n));
            if constexpr (NORM == NORM_LAYERNORM)
                b8 = __ldg(reinterpret_cast<const uint4 *>(static_cast<const unsigned short *>(p.beta) + n));
        }
        const unsigned gw[4] = {g8.x, g8.y, g8.z, g8.w}, bw[4] = {b8.x, b8.y, b8.z, b8.w};
        float2 v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            v[j] = unpack2<DT_BF16>(w[j]);
            v[j] = make_float2((v[j].x + back) * rstd, (v[j].y + back) * rstd);
            if constexpr (Epi::kAffine) {
                const float2 g = unpack2<DT_BF16>(gw[j]), b = unpack2<DT_BF16>(bw[j]);
                v[j] = NORM == NORM_LAYERNORM ? make_float2(v[j].x * g.x + b.x, v[j].y * g.y + b.y)
                                              : make_float2(v[j].x * g.x, v[j].y * g.y);
            }
            v[j] = Epi::post(v[j], m, n + 2 * j, p, no_inputs);
        }
        store8(p.out, static_cast<long long>(m) * p.ldo + n, v);
    }

    // Split strategy, second kernel: one warp per row merges the tiles' statistics (Chan),
    // then normalizes the row (f32, or bf16 as the GEMM kernel left it, or as the store op
    // wrote it: kPrenormFromStore), applies the ops after the norm, and writes the output.
    __device__ static void normalize(const Params &p)
    {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        // Launched as a programmatic dependent of the GEMM kernel on Hopper (runtime/launch.c): its
        // blocks may start on SMs the GEMM's last CTAs have left; this waits until the whole
        // GEMM grid has finished and its writes are visible. Without that launch, a no-op.
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
        const int lane = threadIdx.x & 31;
        // Last rows first: the GEMM kernel wrote them last (its tile order ends at the last row
        // blocks), so they are the ones still in L2; a chain's GEMM2 then starts on the first
        // rows, the ones this kernel wrote last.
        const int block = static_cast<int>(gridDim.x - 1 - blockIdx.x);
        const int m = block * (NORMALIZE_THREADS / 32) + (threadIdx.x >> 5);
        if (m >= p.m) return;
        const float *st = p.stats + static_cast<long long>(m) * p.stats_ld * 2;
        // bf16 rows: the first columns' loads are issued before the statistics are merged, so
        // both are in flight at once. kPrenormFromStore: the row as the store op wrote it.
        const unsigned short *row16 = reinterpret_cast<const unsigned short *>(p.prenorm) + static_cast<long long>(m) * p.n;
        const unsigned short *src16 = row16;
        if constexpr (kPrenormFromStore)
            src16 = static_cast<const unsigned short *>(p.store[Epi::kPrenormStoreSlot]) +
                    static_cast<long long>(m) * p.ld_store[Epi::kPrenormStoreSlot];
        uint4 chunk[kNormLoads] = {};
        if constexpr (kPrenormBf16) load_chunk(chunk, src16, 0, lane, p.n);
        float cnt = 0.0f, mean = 0.0f, m2 = 0.0f;
        bool copies = false;   // kPrenormFromStore: some tile of this lane kept its own copy
        for (int t = lane; t < p.stats_ld; t += 32) {
            float c = static_cast<float>(min(BN, p.n - t * BN));
            if (NORM == NORM_LAYERNORM) {
                // kPrenormFromStore: M2's sign bit set marks a tile without its own copy
                const float t_m2 = st[2 * t + 1];
                if (kPrenormFromStore) copies |= !signbit(t_m2);
                chan_merge(cnt, mean, m2, c, st[2 * t], kPrenormFromStore ? fabsf(t_m2) : t_m2);
            } else {
                mean += st[2 * t] * c;   // sum of squares
                cnt += c;
            }
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            float c_o = __shfl_xor_sync(0xffffffffu, cnt, off);
            float mean_o = __shfl_xor_sync(0xffffffffu, mean, off);
            float m2_o = __shfl_xor_sync(0xffffffffu, m2, off);
            if (NORM == NORM_LAYERNORM) {
                if (cnt == 0.0f) {
                    cnt = c_o; mean = mean_o; m2 = m2_o;
                } else {
                    chan_merge(cnt, mean, m2, c_o, mean_o, m2_o);
                }
            } else {
                cnt += c_o;
                mean += mean_o;
            }
        }
        const float var = (NORM == NORM_LAYERNORM) ? m2 / static_cast<float>(p.n) : mean / static_cast<float>(p.n);
        const float rstd = 1.0f / sqrtf(var + Epi::kEps);
        const float shift = (NORM == NORM_LAYERNORM) ? mean : 0.0f;
        // The pre-norm row was written by the GEMM kernel; in this kernel it is read-only.
        if constexpr (kPrenormBf16) {
            if (kPrenormFromStore && NORM == NORM_LAYERNORM && __any_sync(0xffffffffu, copies)) {
                // Some tile of the row kept its deviations (its tile mean exceeds its spread):
                // each 8 columns from the tile's own source. Rare, so kept apart from the
                // loop below, which then needs no second row pointer (its registers set the
                // kernel's occupancy).
                for (int n = lane * 8; n < p.n; n += 32 * 8) {
                    const bool kept = !signbit(st[2 * (n / BN) + 1]);
                    const uint4 w8 = __ldg(reinterpret_cast<const uint4 *>((kept ? row16 : src16) + n));
                    normalize8(p, m, n, w8, kept ? st[2 * (n / BN)] - shift : -shift, rstd);
                }
                return;
            }
            for (int c0 = 0;;) {
#pragma unroll
                for (int i = 0; i < kNormLoads; ++i) {
                    const int n = c0 + (i * 32 + lane) * 8;
                    if (n >= p.n) break;
                    // LayerNorm: the stored deviation plus its tile's mean, less the row's mean
                    // (or, read from the store op's output, the value less the row's mean).
                    const float back = NORM != NORM_LAYERNORM ? 0.0f : kPrenormFromStore ? -shift
                                                                                          : st[2 * (n / BN)] - shift;
                    normalize8(p, m, n, chunk[i], back, rstd);
                }
                c0 += kNormLoads * 32 * 8;
                if (c0 >= p.n) break;
                load_chunk(chunk, src16, c0, lane, p.n);
            }
        } else {
            const TileInputs no_inputs = {};
            const float *row = p.prenorm + static_cast<long long>(m) * p.n;
#pragma unroll 4
            for (int n = lane * 4; n < p.n; n += 128) {
#pragma unroll
                for (int j = 0; j < 4; j += 2) {
                    float2 v = ld_ro_f32x2(row + n + j);
                    v = make_float2((v.x - shift) * rstd, (v.y - shift) * rstd);
                    v = Epi::post(affine(v, p, n + j), m, n + j, p, no_inputs);
                    store2_f32<DT_OUT>(p.out, static_cast<long long>(m) * p.ldo + n + j, v);
                }
            }
        }
    }
};

// ---- the GEMM ---------------------------------------------------------------------------
// DT_AB: operand dtype; DT_OUT: output (and vector, residual, store) dtype. B_KN: B is [K, N].
// SPLIT_K: the partial kernel of a split-K variant: CTA (x, y, z) sums k tiles z*KT/S ...
// (z+1)*KT/S - 1 (S = gridDim.z) and writes the raw f32 sums to p.partials slice z; SplitKReduce
// then applies the epilogue (Epi must be NoOps, DT_OUT f32, no norm).
template <int DT_AB, int DT_OUT, int BM, int BN, int BK, int STAGES, int WARPS_M, int WARPS_N, bool B_KN,
          int NORM, int STRATEGY, class Epi, bool SPLIT_K = false>
struct Gemm {
    static constexpr int THREADS = WARPS_M * WARPS_N * 32;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
    static constexpr int MI = WM / 16, NI = WN / 8;
    // A gated activation's epilogue sees half the columns (glu_fragments)
    static constexpr int BN_OUT = Epi::kGlu != GLU_NONE ? BN / 2 : BN;
    using Ep = Epilogue<DT_OUT, BM, BN_OUT, WARPS_M, WARPS_N, NORM, STRATEGY, Epi>;
    // Each smem row is padded by 8 elements (16 bytes) so ldmatrix rows hit distinct banks.
    static constexpr int A_LD = BK + 8;
    static constexpr int B_ROWS = B_KN ? BK : BN;
    static constexpr int B_LD = B_KN ? BN + 8 : BK + 8;
    static constexpr int A_STAGE = BM * A_LD, B_STAGE = B_ROWS * B_LD;
    static constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * 2;
    // What the host launcher needs to know.
    static constexpr int kTileM = BM, kTileN = BN, kTileK = BK, kThreads = THREADS, kSmemBytes = SMEM_BYTES;
    static constexpr int kStrategy = STRATEGY;
    static constexpr bool kHopper = false;   // the normalize kernel follows in plain stream order
    static constexpr int kOutBytes = DT_OUT == DT_F32 ? 4 : 2;
    static constexpr int kDtAB = DT_AB;
    static_assert(WM % 16 == 0 && WN % 16 == 0, "warp tile must be a multiple of 16x16");
    static_assert(BK % 16 == 0, "tile k must be a multiple of 16");
    static_assert(Ep::SCRATCH_BYTES <= SMEM_BYTES, "epilogue scratch must fit in the mainloop buffers");
    static_assert(!SPLIT_K || (DT_OUT == DT_F32 && NORM == NORM_NONE && STRATEGY == STRATEGY_NONE),
                  "a split-K partial kernel writes raw f32 sums");
    static constexpr bool kSplitK = SPLIT_K;

    __device__ static void load_stage(const Params &p, unsigned short *sA, unsigned short *sB, int stage, int kt,
                                      int m0, int n0)
    {
        const unsigned short *A = static_cast<const unsigned short *>(p.a);
        const unsigned short *B = static_cast<const unsigned short *>(p.b);
        const int k0 = kt * BK;
        constexpr int A_CHUNKS_ROW = BK / 8;
#pragma unroll
        for (int c = threadIdx.x; c < BM * A_CHUNKS_ROW; c += THREADS) {
            int r = c / A_CHUNKS_ROW, kc = (c % A_CHUNKS_ROW) * 8;
            int gm = m0 + r, gk = k0 + kc;
            bool ok = gm < p.m && gk < p.k;
            const unsigned short *src = ok ? A + static_cast<long long>(gm) * p.lda + gk : A;
            cp_async16(sA + stage * A_STAGE + r * A_LD + kc, src, ok ? 16 : 0);
        }
        if (!B_KN) {
#pragma unroll
            for (int c = threadIdx.x; c < BN * A_CHUNKS_ROW; c += THREADS) {
                int r = c / A_CHUNKS_ROW, kc = (c % A_CHUNKS_ROW) * 8;
                int gn = n0 + r, gk = k0 + kc;
                bool ok = gn < p.n && gk < p.k;
                const unsigned short *src = ok ? B + static_cast<long long>(gn) * p.ldb + gk : B;
                cp_async16(sB + stage * B_STAGE + r * B_LD + kc, src, ok ? 16 : 0);
            }
        } else {
            constexpr int B_CHUNKS_ROW = BN / 8;
#pragma unroll
            for (int c = threadIdx.x; c < BK * B_CHUNKS_ROW; c += THREADS) {
                int r = c / B_CHUNKS_ROW, nc = (c % B_CHUNKS_ROW) * 8;
                int gk = k0 + r, gn = n0 + nc;
                bool ok = gk < p.k && gn < p.n;
                const unsigned short *src = ok ? B + static_cast<long long>(gk) * p.ldb + gn : B;
                cp_async16(sB + stage * B_STAGE + r * B_LD + nc, src, ok ? 16 : 0);
            }
        }
    }

    __device__ static void compute_stage(const unsigned short *sA, const unsigned short *sB, int stage, int warp_m,
                                         int warp_n, int lane, float (&acc)[MI][NI][4])
    {
        const unsigned short *a_st = sA + stage * A_STAGE;
        const unsigned short *b_st = sB + stage * B_STAGE;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            unsigned af[MI][4];
            unsigned bf[NI][2];
#pragma unroll
            for (int mi = 0; mi < MI; ++mi) {
                int row = warp_m * WM + mi * 16 + (lane & 15);
                int col = kk + (lane >> 4) * 8;
                ldmatrix_x4(af[mi], a_st + row * A_LD + col);
            }
#pragma unroll
            for (int nj = 0; nj < NI / 2; ++nj) {
                unsigned r[4];
                if (!B_KN) {
                    int nrow = warp_n * WN + nj * 16 + (lane & 7) + (lane >> 4) * 8;
                    int col = kk + ((lane >> 3) & 1) * 8;
                    ldmatrix_x4(r, b_st + nrow * B_LD + col);
                } else {
                    int krow = kk + (lane & 7) + ((lane >> 3) & 1) * 8;
                    int ncol = warp_n * WN + nj * 16 + (lane >> 4) * 8;
                    ldmatrix_x4_trans(r, b_st + krow * B_LD + ncol);
                }
                bf[2 * nj][0] = r[0];
                bf[2 * nj][1] = r[1];
                bf[2 * nj + 1][0] = r[2];
                bf[2 * nj + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < NI; ++ni) mma16816<DT_AB>(acc[mi][ni], af[mi], bf[ni]);
        }
    }

    // a_norm: adds the squares of this thread's rows in one A stage (rows of A_LD elements).
    __device__ static __forceinline__ void a_norm_stage(const unsigned short *a_st, int warp_m, int lane,
                                                        float (&sq)[MI][2])
    {
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const unsigned short *row = a_st + (warp_m * WM + mi * 16 + (lane >> 2) + 8 * h) * A_LD;
#pragma unroll
                for (int c = lane & 3; c < BK / 8; c += 4)
                    sq[mi][h] = sumsq8<DT_AB>(*reinterpret_cast<const uint4 *>(row + 8 * c), sq[mi][h]);
            }
    }

    __device__ static void run(const Params &p)
    {
        const int KT = (p.k + BK - 1) / BK;
        if constexpr (SPLIT_K) {
            // this CTA's k tiles kt0 ... and its slice of the partial sums (f32 [m, n])
            const int z = static_cast<int>(blockIdx.z), slices = static_cast<int>(gridDim.z);
            const int kt0 = static_cast<int>(static_cast<long long>(KT) * z / slices);
            const int kt1 = static_cast<int>(static_cast<long long>(KT) * (z + 1) / slices);
            Params q = p;
            q.out = p.partials + static_cast<long long>(z) * p.m * p.n;
            q.ldo = p.n;
            tile_run(q, kt0, kt1 - kt0);
        } else {
            tile_run(p, 0, KT);
        }
    }

    // The CTA's tile over k tiles kt0 ... kt0 + KT - 1, then its epilogue.
    __device__ static __forceinline__ void tile_run(const Params &p, int kt0, int KT)
    {
        extern __shared__ __align__(16) unsigned char smem_raw[];
        unsigned short *sA = reinterpret_cast<unsigned short *>(smem_raw);
        unsigned short *sB = sA + STAGES * A_STAGE;
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
        // Plain grid order here: the grouped order costs the register or two that the widest
        // row-norm tiles of this family do not have.
        const TileCoord tile = {static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.x)};
        const int m0 = tile.m * BM, n0 = tile.n * BN;

        float acc[MI][NI][4];
#pragma unroll
        for (int mi = 0; mi < MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < NI; ++ni)
#pragma unroll
                for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.0f;

        // Mainloop: STAGES-1 tiles in flight while one is multiplied.
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < KT) load_stage(p, sA, sB, s, kt0 + s, m0, n0);
            cp_async_commit();
        }
        constexpr bool kANorm = Epi::kANormEps != 0.0f;
        float sq[MI][2] = {};   // a_norm: this thread's share of its rows' squares
        for (int kt = 0; kt < KT; ++kt) {
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            int next = kt + STAGES - 1;
            if (next < KT) load_stage(p, sA, sB, next % STAGES, kt0 + next, m0, n0);
            cp_async_commit();
            compute_stage(sA, sB, kt % STAGES, warp_m, warp_n, lane, acc);
            if constexpr (kANorm) a_norm_stage(sA + (kt % STAGES) * A_STAGE, warp_m, lane, sq);
        }
        cp_async_wait<0>();
        __syncthreads();   // the epilogue reuses the stage buffers as scratch
        if constexpr (kANorm) a_norm_scale(acc, sq, p.k, Epi::kANormEps);

        const TileInputs global_inputs = {};   // this family reads bias and residual from global memory
        if constexpr (Epi::kGlu != GLU_NONE) {
            float out[MI][NI / 2][4];
            glu_fragments<Epi::kGlu>(acc, out);
            Params q = p;
            q.n = p.n / 2;   // the output's columns
            Ep::apply(q, global_inputs, out, smem_raw, tile, warp_m, warp_n, lane);
        } else {
            Ep::apply(p, global_inputs, acc, smem_raw, tile, warp_m, warp_n, lane);
        }
    }

    // Split strategy, second kernel.
    __device__ static void normalize(const Params &p) { Ep::normalize(p); }
};

// ---- split K ----------------------------------------------------------------------------
// The epilogue of a split-K partial kernel: none (its sums are raw, the reduce applies the ops).
struct NoOps {
    static constexpr float kEps = 0.0f;
    static constexpr float kANormEps = 0.0f;
    static constexpr int kGlu = GLU_NONE;
    static constexpr bool kAffine = false;
    static constexpr int kPrenormStoreSlot = -1;
    static constexpr int kClusterRanks = 0;
    __device__ static __forceinline__ float2 pre(float2 v, int, int, const Params &, const TileInputs &) { return v; }
    __device__ static __forceinline__ float2 post(float2 v, int, int, const Params &, const TileInputs &) { return v; }
};

// The split-K partial kernel's view of its reduce when it has none to serve (the default of
// fusegen_sm90::GemmSm90): nothing to prefetch.
struct NoReduce {
    template <int THREADS> __device__ static void prefetch_tile(const Params &, int, int, int, int, int) {}
};

// Split K, second kernel. It adds a row's partial sums slice by slice (a fixed order: the same
// bits every run) and applies the ops before the norm. Without a norm gridDim.y blocks share a
// row. With one, a row belongs to a cluster of CTAs (one CTA when launched without a cluster, and
// on sm_80), each keeping its share of the columns as f32 in shared memory: the norm's sums are
// each CTA's block sum, exchanged through distributed shared memory and added in rank order
// (mean first, then the centred sum of squares); then the ops after the norm. Every output is
// written once. With a norm on A (Epi::kANormEps), each block first takes the rstd of A's row
// (DT_A, read from global memory) and scales the row's sums by it.
template <int DT_A, int DT_OUT, int NORM, class Epi>
struct SplitKReduce {
    // Dynamic shared memory a row needs (f32 values of N columns; none without a norm).
    static constexpr bool kRowInSmem = NORM != NORM_NONE;
    // The block size is the launcher's (fusegen_split_k_reduce_threads): at most this (the
    // kernel's launch bound, so a reduce without a norm keeps its registers).
    static constexpr int kMaxThreads = kRowInSmem ? SPLIT_K_REDUCE_ROW_THREADS : SPLIT_K_REDUCE_THREADS;

    // The block's sum of v, added in the same order by every thread (warp shuffles, then the
    // warps' sums in warp order).
    __device__ static __forceinline__ float block_sum(float v, float *red)
    {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
        if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
        __syncthreads();
        float t = 0.0f;
#pragma unroll
        for (int w = 0; w < kMaxThreads / 32; ++w)
            if (w < static_cast<int>(blockDim.x >> 5)) t += red[w];
        __syncthreads();   // red is reused by the next call
        return t;
    }

    // With a norm: the sum over the cluster's CTAs of each one's v (the same in all its threads):
    // each CTA puts its v into slot[its rank] of every CTA, then every CTA adds its slots in
    // rank order, so all get the same bits. Every thread of the cluster calls it.
    __device__ static __forceinline__ float cluster_total(float v, float *slot, unsigned ranks, unsigned me)
    {
        if (ranks == 1) return v;
        if (threadIdx.x < ranks) store_peer(slot + me, threadIdx.x, v);   // (run has waited for every CTA to start)
        cluster_sync();
        float t = 0.0f;
        for (unsigned r = 0; r < ranks; ++r) t += slot[r];
        return t;
    }

    // a_norm: the rstd of A's row m (K % 8 == 0 and rows 16-byte aligned: checked on the host),
    // summed by the whole block in the same order in every block of the row.
    __device__ static __forceinline__ float a_norm_rstd(const Params &p, int m, float *red)
    {
        const unsigned short *a = static_cast<const unsigned short *>(p.a) + static_cast<long long>(m) * p.lda;
        float s = 0.0f;
        for (int c = static_cast<int>(threadIdx.x); c < p.k / 8; c += static_cast<int>(blockDim.x))
            s = sumsq8<DT_A>(__ldg(reinterpret_cast<const uint4 *>(a + 8 * c)), s);
        const float total = block_sum(s, red);
        return rsqrtf((p.k > 0 ? total / static_cast<float>(p.k) : 0.0f) + Epi::kANormEps);
    }

    // The epilogue inputs of a tile (rows m0 .. m0 + rows - 1, columns n0 .. n0 + cols - 1 of
    // the residual; those columns of bias, gamma and beta: whichever the kernel has) prefetched
    // into L2 by THREADS threads, a 128-byte line each at a time. The partial kernel's units of
    // slice 0 issue it as their mainloop ends, while other CTAs still multiply, so that the
    // reduce kernel finds them in L2 rather than waiting on DRAM (its blocks cannot start
    // earlier: the partial kernel's CTAs hold every SM until they finish).
    template <int THREADS> __device__ static void prefetch_tile(const Params &p, int m0, int n0, int rows, int cols, int tid)
    {
        constexpr int kBytes = DT_OUT == DT_F32 ? 4 : 2, kLine = 128 / kBytes;   // columns a line
        rows = min(rows, p.m - m0), cols = min(cols, p.n - n0);
        const int lines = (cols + kLine - 1) / kLine;
        if (p.residual)
            for (int i = tid; i < rows * lines; i += THREADS) {
                const long long at = static_cast<long long>(m0 + i / lines) * p.ldr + n0 + (i % lines) * kLine;
                asm volatile("prefetch.global.L2 [%0];\n" ::"l"(static_cast<const char *>(p.residual) + at * kBytes));
            }
        if (m0 == 0)   // the row vectors once a column of tiles
            for (int i = tid; i < lines; i += THREADS) {
                const long long at = (static_cast<long long>(n0) + i * kLine) * kBytes;
                if (p.bias) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(static_cast<const char *>(p.bias) + at));
                if (p.gamma) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(static_cast<const char *>(p.gamma) + at));
                if (p.beta) asm volatile("prefetch.global.L2 [%0];\n" ::"l"(static_cast<const char *>(p.beta) + at));
            }
    }

    __device__ static void run(const Params &p)
    {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        // Launched as a programmatic dependent of the partial kernel on sm_90 and later: waits
        // until that grid has finished and its sums are visible (a no-op otherwise).
        asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
        extern __shared__ __align__(16) float row[];   // this CTA's columns c0 .. c1 - 1
        __shared__ float red[kMaxThreads / 32];
        __shared__ float slots[2][PORTABLE_CLUSTER];    // the cluster's block sums, by rank
        const int threads = static_cast<int>(blockDim.x);
        const TileInputs global_inputs = {};
        // N % 8 == 0 (checked on the host): four columns are all in or all out. Without a norm
        // the row's columns are shared by gridDim.y blocks (more blocks when M is small); with
        // one, by the cluster's CTAs, in runs of whole groups of four (fusegen_split_k_reduce_columns).
        const unsigned ranks = kRowInSmem ? cluster_size() : 1u, me = kRowInSmem ? cluster_rank() : 0u;
        if (ranks > 1) cluster_arrive_relaxed();   // waited for before the first exchange
        const int m = static_cast<int>(blockIdx.x / ranks);
        const int groups = p.n / 4, per_rank = (groups + static_cast<int>(ranks) - 1) / static_cast<int>(ranks);
        const int c0 = kRowInSmem ? min(groups, static_cast<int>(me) * per_rank) * 4 : 0;
        const int c1 = kRowInSmem ? min(groups, static_cast<int>(me + 1) * per_rank) * 4 : p.n;
        const int first = kRowInSmem ? c0 + static_cast<int>(threadIdx.x) * 4
                                     : (static_cast<int>(blockIdx.y) * threads + static_cast<int>(threadIdx.x)) * 4;
        const int stride = (kRowInSmem ? 1 : static_cast<int>(gridDim.y)) * threads * 4;
        const long long slice = static_cast<long long>(p.m) * p.n;
        const float *src = p.partials + static_cast<long long>(m) * p.n;
        constexpr bool kANorm = Epi::kANormEps != 0.0f;
        const float a_rstd = kANorm ? a_norm_rstd(p, m, red) : 1.0f;
        float sum = 0.0f;
        // Slices are loaded kBatch at a time before any is added (still in slice order): one
        // memory latency a batch rather than one a slice.
        constexpr int kBatch = 4;
#pragma unroll 2
        for (int n = first; n < c1; n += stride) {
            float4 a = __ldg(reinterpret_cast<const float4 *>(src + n));
            for (int z0 = 1; z0 < p.k_slices; z0 += kBatch) {
                float4 b[kBatch];
#pragma unroll
                for (int i = 0; i < kBatch; ++i)
                    b[i] = z0 + i < p.k_slices ? __ldg(reinterpret_cast<const float4 *>(src + (z0 + i) * slice + n))
                                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
                for (int i = 0; i < kBatch; ++i)
                    if (z0 + i < p.k_slices) a = make_float4(a.x + b[i].x, a.y + b[i].y, a.z + b[i].z, a.w + b[i].w);
            }
            if constexpr (kANorm) a = make_float4(a.x * a_rstd, a.y * a_rstd, a.z * a_rstd, a.w * a_rstd);
            const float2 lo = Epi::pre(make_float2(a.x, a.y), m, n, p, global_inputs);
            const float2 hi = Epi::pre(make_float2(a.z, a.w), m, n + 2, p, global_inputs);
            if constexpr (NORM == NORM_NONE) {
                store2_f32<DT_OUT>(p.out, static_cast<long long>(m) * p.ldo + n, lo);
                store2_f32<DT_OUT>(p.out, static_cast<long long>(m) * p.ldo + n + 2, hi);
            } else {
                *reinterpret_cast<float4 *>(row + (n - c0)) = make_float4(lo.x, lo.y, hi.x, hi.y);
                sum += (lo.x + lo.y) + (hi.x + hi.y);
            }
        }
        if constexpr (NORM != NORM_NONE) {
            // __frcp_rn and rsqrtf: no IEEE division's slow-path call, whose saved registers
            // spill
            const float inv_n = __frcp_rn(static_cast<float>(p.n));
            // (block_sum's barrier also makes the row's values visible to every thread)
            const float block_total = block_sum(sum, red);
            if (ranks > 1) cluster_wait();
            const float total = cluster_total(block_total, slots[0], ranks, me);
            const float mean = NORM == NORM_LAYERNORM ? total * inv_n : 0.0f;
            const int cols = c1 - c0;
            float squares = 0.0f;
            for (int i = static_cast<int>(threadIdx.x); i < cols; i += threads) {
                const float d = row[i] - mean;
                squares += d * d;
            }
            // (slots[1]: a CTA may still be reading slots[0] when another pushes this sum)
            const float rstd = rsqrtf(cluster_total(block_sum(squares, red), slots[1], ranks, me) * inv_n + Epi::kEps);
            for (int i = static_cast<int>(threadIdx.x) * 2; i < cols; i += threads * 2) {
                const int n = c0 + i;
                const float2 x = *reinterpret_cast<const float2 *>(row + i);
                float2 v = make_float2((x.x - mean) * rstd, (x.y - mean) * rstd);
                v = Epi::post(op_affine<DT_OUT, NORM, Epi::kAffine>(v, p, n), m, n, p, global_inputs);
                store2_f32<DT_OUT>(p.out, static_cast<long long>(m) * p.ldo + n, v);
            }
        }
    }
};

}  // namespace fusegen_sm80

// ---- host side ------------------------------------------------------------------------
// The runtime launches the kernels (runtime/launch.c) as the dispatch table's launch records
// say; a kernel file hands it their driver functions.
#ifndef __CUDACC_RTC__
#include "fusegen.h"

namespace fusegen_sm80 {

// The driver functions (CUfunction) of kernels, given by their host stubs (NULL: none), in the
// current context, as this file's CUDA runtime registered them.
inline cudaError_t driver_functions(const void *const kernels[FUSEGEN_LAUNCH_FNS], void *fns[FUSEGEN_LAUNCH_FNS])
{
    for (int i = 0; i < FUSEGEN_LAUNCH_FNS; ++i) {
        fns[i] = nullptr;
        if (!kernels[i]) continue;
        cudaFunction_t f = nullptr;
        const cudaError_t e = cudaGetFuncBySymbol(&f, kernels[i]);
        if (e != cudaSuccess) return e;
        fns[i] = reinterpret_cast<void *>(f);
    }
    return cudaSuccess;
}

}  // namespace fusegen_sm80
#endif

#endif  // FUSEGEN_SM80_CUH
