// Device code of the Hopper family (sm_90a): a producer warpgroup brings the operand tiles into
// shared memory with TMA (128-byte swizzle, completion on mbarriers), and two consumer
// warpgroups multiply their 64 rows each of the CTA tile with wgmma.mma_async (m64nNk16, f32
// accumulate). The accumulators come out in the same per-warp fragment layout as mma.sync's,
// so the fused epilogue (row, cluster and split norms, every op) is the one of the portable
// family; the cluster strategy launches one thread-block cluster per row of tiles.
// Compiled for another target, the kernels of this family trap. Their table entries are
// marked sm_90a-only, so the runtime selects them only on compute capability 9.0, and the
// CMake functions refuse to build a spec that lists sm_90a without the 90a architecture.
#ifndef FUSEGEN_SM90_CUH
#define FUSEGEN_SM90_CUH

#include "fusegen_sm80.cuh"

namespace fusegen_sm90 {

using fusegen_sm80::DT_BF16;
using fusegen_sm80::DT_F16;
using fusegen_sm80::Params;

// Shared-memory matrix descriptor of a tile at shared address tile_addr (1024-byte aligned),
// stored with the 128-byte swizzle: 8-row groups of 128-byte rows, 1024 bytes apart (the stride
// byte offset). K-major (A, and B stored [N, K]): rows of 64 16-bit k elements; the leading byte
// offset is unused (16). N-major (B stored [K, N], read with imm-trans-b 1): blocks of 64
// columns, leading_bytes apart along N.
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned tile_addr, unsigned leading_bytes = 16)
{
    unsigned long long desc = (tile_addr & 0x3FFFFull) >> 4;                        // start address, bits 0-13
    desc |= static_cast<unsigned long long>((leading_bytes >> 4) & 0x3FFFu) << 16;   // leading byte offset
    desc |= (1024ull >> 4) << 32;                                                    // stride byte offset
    desc |= 1ull << 62;                                                              // 128-byte swizzle
    return desc;
}

// The sm_90a-only instructions; on other targets they compile to nothing (never run there).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FUSEGEN_SM90_ASM(text) asm volatile(text ::: "memory")
#else
#define FUSEGEN_SM90_ASM(text) ((void)0)
#endif
__device__ __forceinline__ void wgmma_fence() { FUSEGEN_SM90_ASM("wgmma.fence.sync.aligned;\n"); }
__device__ __forceinline__ void wgmma_commit() { FUSEGEN_SM90_ASM("wgmma.commit_group.sync.aligned;\n"); }
__device__ __forceinline__ void wgmma_wait_all() { FUSEGEN_SM90_ASM("wgmma.wait_group.sync.aligned 0;\n"); }
__device__ __forceinline__ void wgmma_wait_one() { FUSEGEN_SM90_ASM("wgmma.wait_group.sync.aligned 1;\n"); }

// m64n32k16: D[64 x 32] (f32, 16 registers a thread) += A[64 x 16] . B[16 x 32], both from shared memory.
#define FUSEGEN_WGMMA_M64N32K16(TY, TB)                                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " "                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "             \
                 "%16, %17, p, 1, 1, 0, " TB ";\n}\n"                                                  \
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), \
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), \
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]) \
                 : "l"(desc_a), "l"(desc_b), "r"(1))
template <int DT, bool TRANS_B> __device__ __forceinline__ void wgmma_m64n32k16(float (&d)[4][4], unsigned long long desc_a,
                                                             unsigned long long desc_b)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    static_assert(!TRANS_B, "an N-major B tile is whole 64-column blocks");
    if (DT == DT_BF16)
        FUSEGEN_WGMMA_M64N32K16("bf16", "0");
    else
        FUSEGEN_WGMMA_M64N32K16("f16", "0");
#else
    (void)d, (void)desc_a, (void)desc_b;
    __trap();
#endif
}
#undef FUSEGEN_WGMMA_M64N32K16

// m64n64k16: D[64 x 64] (f32, 32 registers a thread) += A[64 x 16] . B[16 x 64], both from shared memory.
#define FUSEGEN_WGMMA_M64N64K16(TY, TB)                                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " "                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "  \
                 "%32, %33, p, 1, 1, 0, " TB ";\n}\n"                                                  \
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), \
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), \
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), \
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), \
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]) \
                 : "l"(desc_a), "l"(desc_b), "r"(1))
template <int DT, bool TRANS_B> __device__ __forceinline__ void wgmma_m64n64k16(float (&d)[8][4], unsigned long long desc_a,
                                                             unsigned long long desc_b)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (DT == DT_BF16 && !TRANS_B)
        FUSEGEN_WGMMA_M64N64K16("bf16", "0");
    else if (DT == DT_BF16)
        FUSEGEN_WGMMA_M64N64K16("bf16", "1");
    else if (!TRANS_B)
        FUSEGEN_WGMMA_M64N64K16("f16", "0");
    else
        FUSEGEN_WGMMA_M64N64K16("f16", "1");
#else
    (void)d, (void)desc_a, (void)desc_b;
    __trap();
#endif
}
#undef FUSEGEN_WGMMA_M64N64K16

// m64n128k16: D[64 x 128] (f32, 64 registers a thread) += A[64 x 16] . B[16 x 128], both from shared memory.
#define FUSEGEN_WGMMA_M64N128K16(TY, TB)                                                               \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "  \
                 "%64, %65, p, 1, 1, 0, " TB ";\n}\n"                                                  \
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), \
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), \
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), \
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), \
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), \
                     "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), \
                     "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), \
                     "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), \
                     "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), \
                     "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), \
                     "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), \
                     "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), \
                     "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]) \
                 : "l"(desc_a), "l"(desc_b), "r"(1))
template <int DT, bool TRANS_B> __device__ __forceinline__ void wgmma_m64n128k16(float (&d)[16][4], unsigned long long desc_a,
                                                             unsigned long long desc_b)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (DT == DT_BF16 && !TRANS_B)
        FUSEGEN_WGMMA_M64N128K16("bf16", "0");
    else if (DT == DT_BF16)
        FUSEGEN_WGMMA_M64N128K16("bf16", "1");
    else if (!TRANS_B)
        FUSEGEN_WGMMA_M64N128K16("f16", "0");
    else
        FUSEGEN_WGMMA_M64N128K16("f16", "1");
#else
    (void)d, (void)desc_a, (void)desc_b;
    __trap();
#endif
}
#undef FUSEGEN_WGMMA_M64N128K16

// m64n160k16: D[64 x 160] (f32, 80 registers a thread) += A[64 x 16] . B[16 x 160], both from shared memory.
#define FUSEGEN_WGMMA_M64N160K16(TY, TB)                                                               \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n160k16.f32." TY "." TY " "                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}, "  \
                 "%80, %81, p, 1, 1, 0, " TB ";\n}\n"                                                  \
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), \
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), \
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), \
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), \
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), \
                     "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), \
                     "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), \
                     "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), \
                     "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), \
                     "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), \
                     "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), \
                     "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), \
                     "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), \
                     "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), \
                     "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), \
                     "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), \
                     "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]) \
                 : "l"(desc_a), "l"(desc_b), "r"(1))
template <int DT, bool TRANS_B> __device__ __forceinline__ void wgmma_m64n160k16(float (&d)[20][4], unsigned long long desc_a,
                                                             unsigned long long desc_b)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (DT == DT_BF16 && !TRANS_B)
        FUSEGEN_WGMMA_M64N160K16("bf16", "0");
    else if (DT == DT_BF16)
        FUSEGEN_WGMMA_M64N160K16("bf16", "1");
    else if (!TRANS_B)
        FUSEGEN_WGMMA_M64N160K16("f16", "0");
    else
        FUSEGEN_WGMMA_M64N160K16("f16", "1");
#else
    (void)d, (void)desc_a, (void)desc_b;
    __trap();
#endif
}
#undef FUSEGEN_WGMMA_M64N160K16

// m64n256k16: D[64 x 256] (f32, 128 registers a thread) += A[64 x 16] . B[16 x 256], both from shared memory.
#define FUSEGEN_WGMMA_M64N256K16(TY, TB)                                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"                                          \
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " "                            \
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "  \
                 "%128, %129, p, 1, 1, 0, " TB ";\n}\n"                                                 \
                 : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), \
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), \
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), \
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]), \
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), \
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), \
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), \
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]), \
                     "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), \
                     "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), \
                     "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]), \
                     "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]), \
                     "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), \
                     "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), \
                     "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), \
                     "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]), \
                     "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), \
                     "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), \
                     "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), \
                     "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), \
                     "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), \
                     "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]), \
                     "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), \
                     "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), \
                     "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), \
                     "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]), \
                     "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), \
                     "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), \
                     "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), \
                     "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), \
                     "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), \
                     "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3]) \
                 : "l"(desc_a), "l"(desc_b), "r"(1))
template <int DT, bool TRANS_B> __device__ __forceinline__ void wgmma_m64n256k16(float (&d)[32][4], unsigned long long desc_a,
                                                             unsigned long long desc_b)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (DT == DT_BF16 && !TRANS_B)
        FUSEGEN_WGMMA_M64N256K16("bf16", "0");
    else if (DT == DT_BF16)
        FUSEGEN_WGMMA_M64N256K16("bf16", "1");
    else if (!TRANS_B)
        FUSEGEN_WGMMA_M64N256K16("f16", "0");
    else
        FUSEGEN_WGMMA_M64N256K16("f16", "1");
#else
    (void)d, (void)desc_a, (void)desc_b;
    __trap();
#endif
}
#undef FUSEGEN_WGMMA_M64N256K16

// TRANS_B: B is N-major (wgmma_desc with the blocks' leading bytes), else K-major.
template <int DT, int BN, bool TRANS_B> __device__ __forceinline__ void wgmma_tile(float (&d)[BN / 8][4],
                                                                                 unsigned long long a,
                                                                                 unsigned long long b)
{
    static_assert(!TRANS_B || BN == 64 || BN == 128 || BN == 256, "an N-major B tile is whole 64-column blocks");
    if constexpr (BN == 32)
        wgmma_m64n32k16<DT, TRANS_B>(d, a, b);
    else if constexpr (BN == 64)
        wgmma_m64n64k16<DT, TRANS_B>(d, a, b);
    else if constexpr (BN == 128)
        wgmma_m64n128k16<DT, TRANS_B>(d, a, b);
    else if constexpr (BN == 160)
        wgmma_m64n160k16<DT, false>(d, a, b);
    else if constexpr (BN == 256)
        wgmma_m64n256k16<DT, TRANS_B>(d, a, b);
    else {   // 320 (a 64-row ping-pong tile): two n160 halves, the second from B row 160 (1280 16-byte units)
        wgmma_m64n160k16<DT, false>(*reinterpret_cast<float(*)[20][4]>(&d[0][0]), a, b);
        wgmma_m64n160k16<DT, false>(*reinterpret_cast<float(*)[20][4]>(&d[20][0]), a, b + 1280);
    }
}

// A TMA tensor map (the driver's CUtensorMap: 128 opaque bytes), passed by value as a
// __grid_constant__ kernel parameter.
struct alignas(128) TensorMap {
    unsigned long long opaque[16];
};

// The epilogue's tensor maps (a kernel parameter of every Hopper GEMM; the ones its Staging
// does not use are left zero): the residual read into the tile buffer, the store op and the
// output (split: the pre-norm values) written out of it. Boxes of 128 (or 64) bytes x BM rows
// with the swizzle of that width, the tile buffer's layout (fusegen_sm80::TileInputs::at_frag).
struct EpilogueMaps {
    TensorMap residual, store, out;
};
// What EpilogueMaps::out maps, for the launchers.
enum { OUT_MAP_NONE = 0, OUT_MAP_OUT = 1, OUT_MAP_PRENORM = 2 };

// ---- mbarrier and TMA wrappers (sm_90) ----------------------------------------------------
__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(fusegen_sm80::smem_addr(bar)), "r"(count) : "memory");
}
// Makes the initialized barriers visible to the copy engine.
__device__ __forceinline__ void mbar_init_fence() { FUSEGEN_SM90_ASM("fence.mbarrier_init.release.cluster;\n"); }
__device__ __forceinline__ void mbar_expect_tx(unsigned bar_addr, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar_addr), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned long long *bar, unsigned bytes)
{
    mbar_expect_tx(fusegen_sm80::smem_addr(bar), bytes);
}
__device__ __forceinline__ void mbar_arrive(unsigned bar_addr)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar_addr) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long *bar) { mbar_arrive(fusegen_sm80::smem_addr(bar)); }
// Waits until the barrier's phase with this parity has completed.
__device__ __forceinline__ void mbar_wait(unsigned bar_addr, unsigned parity)
{
    unsigned done = 0;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar_addr), "r"(parity)
                     : "memory");
    } while (!done);
}
__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity)
{
    mbar_wait(fusegen_sm80::smem_addr(bar), parity);
}
// Copies the box at (c0 = column, c1 = row) of the tensor into shared memory (zero past the
// tensor's edges); completion counts its bytes on bar.
__device__ __forceinline__ void tma_load_2d(unsigned dst_addr, const TensorMap &map, int c0, int c1, unsigned bar_addr)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 ::"r"(dst_addr), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(c0), "r"(c1), "r"(bar_addr)
                 : "memory");
#else
    (void)dst_addr, (void)map, (void)c0, (void)c1, (void)bar_addr;
#endif
}
__device__ __forceinline__ void tma_load_2d(void *dst, const TensorMap &map, int c0, int c1, unsigned long long *bar)
{
    tma_load_2d(fusegen_sm80::smem_addr(dst), map, c0, c1, fusegen_sm80::smem_addr(bar));
}

// BM in {64, 128}; BN in {64, 128, 160, 256, 320}; BK = 64, one 128-byte swizzle row. B is [N, K] (K-major, the "nk" layout). Three warpgroups: warpgroup 0 produces
// (one thread issues the TMA copies of each stage; its other three warps bring each tile's
// residual (TMA, into the tile buffer) and bias (cp.async) into shared memory when Staging
// says so), warpgroups 1 and 2 consume (wgmma) and run the epilogue, whose outputs go out
// through the tile buffer by TMA stores when Staging says so (fusegen_sm80::Epilogue::flush).
//
// Two schedules of the consumers (PINGPONG_, the plan's choice):
// - cooperative (BM = 128, or 64 with the columns split): both consumer warpgroups work on
//   every tile (64 rows or BN / 2 columns each) and run its epilogue together, while the
//   tensor cores idle.
// - ping-pong (BM = 64, or 128 with BN <= 128: a warpgroup's accumulators are at most 64x256,
//   or 64x320 as two n160 wgmmas with 232 registers a consumer thread; a 128-row tile is two
//   wgmma row blocks): each consumer warpgroup owns whole tiles, taking
//   turns (the CTA's tiles 0, 2, 4, ... to the first, 1, 3, 5, ... to the second), so one
//   runs its epilogue while the other runs its mainloop. Each has its own tile buffer, bias
//   and scratch. A warpgroup starts a tile's mainloop once the other has seen its own tile's
//   last k tile arrive (order[]): the stage barriers are then at most one phase behind the k
//   tiles it waits for.
//
// Persistent: a CTA works through tiles first, first + step, ... (step = the number of CTAs)
// in grouped order, so the producer fills the stages with the next tile's operands while the
// consumers run the epilogue of this one. (Cluster variants launch one CTA per tile: their
// clusters must span one row of tiles.) Any grid is correct; the launcher sizes it to the SMs.
//
// Barriers: stage s has full[s] (the copy engine has written it) and empty[s] (the consumers
// of that k tile have finished reading it); each tile and bias buffer has inputs_full (copied,
// the buffers are this tile's) and inputs_empty (the epilogue, and the bulk copies out of the
// tile buffer, are done with them). The CTA's j-th tile uses k tiles j * KT ... (stage and
// phase count on across tiles) and buffer j % BUFFERS.
// SPLIT_K: the partial kernel of a split-K variant. Its work units are (tile, slice) pairs, p.k_slices
// slices a tile; unit (tile, z) sums k tiles z*KT/S ... (z+1)*KT/S - 1 and writes the raw f32 sums
// to slice z of p.partials (Reduce, fusegen_sm80::SplitKReduce, applies the epilogue in the next
// kernel; this one prefetches its inputs).
template <int DT_AB, int DT_OUT, int BM, int BN, int STAGES, bool PINGPONG_, int NORM, int STRATEGY, class Epi,
          class Staging, bool B_KN = false, bool SPLIT_K = false, class Reduce = fusegen_sm80::NoReduce>
struct GemmSm90 {
    static constexpr int BK = 64;
    static constexpr bool PINGPONG = PINGPONG_;
    static constexpr int CONSUMERS = 2;                        // consumer warpgroups
    // Cooperative on a 64-row tile: the consumers split the columns (each multiplies all 64
    // rows by its half of B), so a row's BN columns fit in accumulators (BN 320: 160 a half).
    static constexpr bool COL_SPLIT = !PINGPONG && BM == 64;
    static constexpr int TILE_THREADS = PINGPONG ? 128 : 256;  // the consumer threads on one tile
    static constexpr int TILE_CONSUMERS = TILE_THREADS / 128;  // ... as warpgroups (empty[]'s count)
    static constexpr int BUFFERS = PINGPONG ? 2 : 1;           // tiles in their epilogue at once
    static constexpr int THREADS = (CONSUMERS + 1) * 128;
    // The rows a consumer warpgroup multiplies on a tile, as 64-row wgmma blocks: one (the
    // cooperative half tile, a 64-row ping-pong tile) or two (a 128-row ping-pong tile).
    static constexpr int WG_ROWS = PINGPONG || COL_SPLIT ? BM : BM / 2, WG_BLOCKS = WG_ROWS / 64;
    static constexpr int WG_COLS = COL_SPLIT ? BN / 2 : BN;   // ... and its columns
    static constexpr bool WIDE_WG = WG_ROWS * WG_COLS > 64 * 256;  // 160 accumulators a consumer thread
    static constexpr int PRODUCER_REGS = WIDE_WG ? 40 : 56, CONSUMER_REGS = WIDE_WG ? 232 : 224;
    // 384 threads start with 168 registers each, and setmaxnreg.inc waits until the producer's
    // dec has freed what the consumers take: past this sum their mainloop never starts.
    static_assert(PRODUCER_REGS + CONSUMERS * CONSUMER_REGS <= 3 * 168, "the consumers' registers come from the producer's");
    // A tile's warps: warp w of a warpgroup owns rows 16w..16w+15 of each of the warpgroup's
    // row blocks, all of its columns (the epilogue's fragment step: 16, or 64 across two row
    // blocks); with COL_SPLIT the second warpgroup's warps are the second column of warps.
    static constexpr int WARPS_N = COL_SPLIT ? 2 : 1;
    static constexpr int WARPS_M = TILE_THREADS / 32 / WARPS_N;
    static constexpr int FRAG_STEP = WG_BLOCKS == 1 ? 16 : 64;
    // A gated activation's epilogue sees half the columns (fusegen_sm80::glu_fragments)
    static constexpr bool GLU = Epi::kGlu != fusegen_sm80::GLU_NONE;
    static constexpr int BN_OUT = GLU ? BN / 2 : BN;
    using Ep = fusegen_sm80::Epilogue<DT_OUT, BM, BN_OUT, WARPS_M, WARPS_N, NORM, STRATEGY, Epi, TILE_THREADS, FRAG_STEP,
                                      WIDE_WG ? 40 : 20>;
    static constexpr int A_STAGE_BYTES = BM * 128, B_STAGE_BYTES = BN * 128;
    static constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
    // full, empty; inputs_full, inputs_empty a buffer; ping-pong: order, a consumer
    static constexpr int BARRIER_BYTES = (2 * STAGES + 2 * BUFFERS + (PINGPONG ? CONSUMERS : 0)) * 8;
    // The tile buffer: blocks of BM rows of EPI_ROW_BYTES (128, or 64 where a tile row is not
    // whole 128-byte blocks: 160 16-bit columns), each the box of one TMA copy with the swizzle
    // of its width (which also keeps the 8 rows a warp touches at once on different banks);
    // then the bias.
    static constexpr int OUT_BYTES = DT_OUT == fusegen_sm80::DT_F32 ? 4 : 2;
    static constexpr int EPI_ROW_BYTES = Ep::kTileRowBytes;
    static constexpr int BLOCK_BYTES = BM * EPI_ROW_BYTES, BLOCK_COLS = EPI_ROW_BYTES / OUT_BYTES,
                         BLOCKS = BN / BLOCK_COLS;
    // (a ring: Ep::kRingBlocks of the tile's blocks, out alone staged; Epilogue::store_tile_ring)
    static constexpr int TILE_BYTES = !Staging::kTile ? 0 : (Staging::kRing > 0 ? Staging::kRing : BLOCKS) * BLOCK_BYTES;
    static constexpr int BIAS_BYTES = Staging::kBias ? BN * OUT_BYTES : 0;
    static constexpr int COPY_THREADS = 96;   // warps 1-3 of the producer warpgroup
    static constexpr bool STAGED = Staging::kTile || Staging::kBias;
    // inputs_full: every copying thread, plus the residual's expected TMA bytes
    static constexpr int INPUT_ARRIVALS = COPY_THREADS + (Staging::kResidual ? 1 : 0);
    static constexpr bool CLUSTER = STRATEGY == fusegen_sm80::STRATEGY_CLUSTER;
    // stages, barriers, and per buffer the epilogue scratch and staged inputs; room to align the
    // first stage to 1024 bytes
    static constexpr int SMEM_BYTES =
        STAGES * STAGE_BYTES + BARRIER_BYTES + BUFFERS * (Ep::SCRATCH_BYTES + TILE_BYTES + BIAS_BYTES) + 1024;
    static constexpr int kTileM = BM, kTileN = BN, kTileK = BK, kThreads = THREADS, kSmemBytes = SMEM_BYTES;
    static constexpr int kStrategy = STRATEGY;
    static constexpr bool kSplitK = SPLIT_K;
    static constexpr bool kHopper = true;   // the runtime starts the normalize kernel as a programmatic dependent
    static constexpr int kOutBytes = OUT_BYTES;
    static constexpr int kDtAB = DT_AB;
    // B's boxes a stage. [N, K] (K-major): BN rows of 64 k, but a TMA box spans at most 256
    // rows, so a 320-column tile's B comes in two boxes of 160. B_KN, [K, N]: blocks of 64
    // columns (128 bytes) x 64 k rows, BN / 64 of them, which the wgmmas read N-major.
    static constexpr int B_BOXES = B_KN ? BN / 64 : BN > 256 ? 2 : 1;
    static constexpr int B_BOX_BYTES = B_STAGE_BYTES / B_BOXES;
    static constexpr int kTmaBoxA = BM, kTmaBoxB = B_KN ? BK : BN / B_BOXES;
    static constexpr bool kBKn = B_KN;
    // A k16 step along B in 16-byte units: 32 bytes along a K-major row, or 16 rows of 128
    // bytes down an N-major block.
    static constexpr int B_K16_UNITS = B_KN ? 16 * 128 / 16 : 2;
    static constexpr bool kPersistent = !CLUSTER;   // one CTA an SM on a 1-D grid (else clusters)
    // The epilogue's tensor maps the launcher makes (EpilogueMaps); their element type is DT_OUT.
    static constexpr bool kMapResidual = Staging::kResidual;
    static constexpr int kMapStoreSlot = Staging::kStoreSlot;
    static constexpr int kMapOut = !Staging::kOut ? OUT_MAP_NONE
                                   : STRATEGY == fusegen_sm80::STRATEGY_SPLIT ? OUT_MAP_PRENORM : OUT_MAP_OUT;
    static constexpr int kDtOut = DT_OUT;
    static constexpr int kTmaBoxEpi = BM, kTmaBoxEpiBytes = EPI_ROW_BYTES;
    static_assert(BM == 64 || BM == 128, "tile m must be 64 or 128");
    static_assert(WG_ROWS * WG_COLS <= 64 * 256 || (PINGPONG && BM == 64 && BN == 320),
                  "a consumer thread keeps at most 128 accumulators (160 on a 64x320 ping-pong tile)");
    static_assert(!COL_SPLIT || WG_COLS == 64 || WG_COLS == 128 || WG_COLS == 160, "a column half is a wgmma n");
    static_assert(!(COL_SPLIT && STRATEGY != fusegen_sm80::STRATEGY_ROW && NORM != fusegen_sm80::NORM_NONE),
                  "a 64-row cooperative tile takes the row strategy (or no norm)");
    static_assert(!(PINGPONG && CLUSTER), "the cluster strategy's exchange serves one tile at a time (tile m 128)");
    static_assert(BN == 32 || BN == 64 || BN == 128 || BN == 160 || BN == 256 || BN == 320,
                  "tile n must be 32, 64, 128, 160, 256 or 320");
    static_assert(BN % BLOCK_COLS == 0, "the tile is whole blocks wide");
    static_assert(!B_KN || (BN % 64 == 0 && BN <= 256 && WG_COLS % 64 == 0),
                  "B as [K, N] comes in whole 64-column blocks (n 64, 128 or 256)");
    static_assert((STAGES * STAGE_BYTES) % 1024 == 0 && TILE_BYTES % 1024 == 0,
                  "the tile buffers start 1024-byte aligned (TMA swizzle)");
    static_assert(Staging::kTile || !(Staging::kResidual || Staging::kBias || Staging::kOut || Staging::kStoreSlot >= 0),
                  "staging needs the tile buffer");
    static_assert(Staging::kRing == 0 ||
                      (Staging::kRing == Ep::kRingBlocks && Staging::kOut && !Staging::kResidual &&
                       Staging::kStoreSlot < 0 && NORM == fusegen_sm80::NORM_NONE && Ep::kRingable && !GLU),
                  "a ring of tile blocks carries out alone, in blocks every warp writes");
    static_assert(!(Staging::kOut && STRATEGY == fusegen_sm80::STRATEGY_SPLIT && DT_OUT == fusegen_sm80::DT_F16),
                  "f16 rows cannot hold the split strategy's f32 pre-norm values");
    static_assert(!SPLIT_K || (DT_OUT == fusegen_sm80::DT_F32 && NORM == fusegen_sm80::NORM_NONE &&
                               STRATEGY == fusegen_sm80::STRATEGY_NONE && !STAGED),
                  "a split-K partial kernel writes raw f32 sums from its registers");

    // a_norm (fusegen_sm80::a_norm_scale): the consumers sum their rows' squares from the A stages
    static constexpr bool kANorm = Epi::kANormEps != 0.0f;
    static_assert(!(kANorm && SPLIT_K), "a split-K partial kernel sees a slice of A's rows");
    static_assert(!(GLU && (SPLIT_K || STAGED)), "a gated activation's epilogue writes directly, whole K");

    // a_norm: adds the squares of this thread's rows in one A stage, from a_rows (the warpgroup's
    // rows: 64-row blocks of 128-byte rows whose 16-byte chunk c lies at c ^ (row % 8); the sum
    // over a row does not mind the order).
    __device__ static __forceinline__ void a_norm_stage(const unsigned char *a_rows, int ttid, float (&sq)[WG_BLOCKS][2])
    {
        const int lane = ttid & 31, r0 = 16 * ((ttid >> 5) & 3) + (lane >> 2);
#pragma unroll
        for (int mb = 0; mb < WG_BLOCKS; ++mb)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = mb * 64 + r0 + 8 * h;
#pragma unroll
                for (int c = lane & 3; c < 8; c += 4)
                    sq[mb][h] = fusegen_sm80::sumsq8<DT_AB>(
                        *reinterpret_cast<const uint4 *>(a_rows + r * 128 + ((c ^ (r & 7)) << 4)), sq[mb][h]);
            }
    }

    // A k tile's place in the ring of stages: its stage and the parity of that stage's phase,
    // counted on (no division a k tile).
    struct StageCursor {
        int stage;
        unsigned phase;
        __device__ explicit StageCursor(int k_tiles_before)
            : stage(k_tiles_before % STAGES), phase((k_tiles_before / STAGES) & 1)
        {
        }
        __device__ void next()
        {
            if (++stage == STAGES) stage = 0, phase ^= 1;
        }
    };

    // The work units of this CTA: id = first, first + step, ... below count. A unit is a tile,
    // or with SPLIT_K a (tile, slice) pair: slice id / tiles of tile id % tiles, so that the
    // CTAs of one wave share the slices' k ranges of A and spread over the columns of B.
    struct Tiles {
        int first, step, count, tiles_m, tiles_n, slices, KT;
        __device__ Tiles(const Params &p)
        {
            tiles_m = (p.m + BM - 1) / BM;
            tiles_n = (p.n + BN - 1) / BN;
            slices = SPLIT_K ? p.k_slices : 1;
            KT = (p.k + BK - 1) / BK;
            count = tiles_m * tiles_n * slices;
            first = blockIdx.y * gridDim.x + blockIdx.x;
            step = gridDim.x * gridDim.y;
        }
        // A cluster spans one row of tiles (the grid's x, one CTA a column tile) and walks down
        // the row tiles, so it keeps grid order.
        __device__ fusegen_sm80::TileCoord coord(int id) const
        {
            if (SPLIT_K) id %= tiles_m * tiles_n;
            if (CLUSTER) return fusegen_sm80::TileCoord{id / tiles_n, id % tiles_n};
            return fusegen_sm80::grouped_tile(id, tiles_m, tiles_n);
        }
        __device__ int slice(int id) const { return SPLIT_K ? id / (tiles_m * tiles_n) : 0; }
        // The unit's first k tile and its count (the whole of K without SPLIT_K).
        __device__ int k_first(int id) const
        {
            return SPLIT_K ? static_cast<int>(static_cast<long long>(KT) * slice(id) / slices) : 0;
        }
        __device__ int k_count(int id) const
        {
            if (!SPLIT_K) return KT;
            const int z = slice(id);
            return static_cast<int>(static_cast<long long>(KT) * (z + 1) / slices) - k_first(id);
        }
        // The k tiles of this CTA's units before its j-th: where that unit's stages start.
        __device__ int k_before(int j) const
        {
            if (!SPLIT_K) return j * KT;
            int before = 0;
            for (int i = 0, id = first; i < j; ++i, id += step) before += k_count(id);
            return before;
        }
    };

    // Warps 1-3 of the producer warpgroup: bring one tile's residual (one thread issues its
    // TMA copies, counted on inputs_full) and bias (16 bytes a thread, zeros past the edge).
    // Cooperative schedule: the residual is read late in the tile's mainloop, when k tile
    // KT - RESIDUAL_LEAD has arrived, not at its start, where the operand loads of the tile's
    // first k tiles and the previous tile's bulk stores already compete (v31). The wait is on
    // that k tile's stage barrier by parity: while the mainloop is ahead of it, it may return
    // early (harmless: an earlier read); it cannot wait for a phase that never completes, as
    // the producer runs at most STAGES k tiles ahead of the consumers, who wait for this
    // residual at the end of the tile: with a lead of STAGES + 1 the phase after the target's
    // next one is still loadable. (Ping-pong keeps the early read: the other warpgroup's tiles
    // interleave the stage phases.)
    static constexpr int RESIDUAL_LEAD = STAGES + 1;
    __device__ static void copy_inputs(const Params &p, const EpilogueMaps &maps, unsigned char *tile_buf,
                                       unsigned char *bias, unsigned long long *inputs_full, int m0, int n0,
                                       unsigned long long *full, int j, int KT)
    {
        const int t = threadIdx.x - 32;
        if constexpr (Staging::kResidual) {
            if (t == 0) {
                if (!PINGPONG && KT > RESIDUAL_LEAD) {
                    const int it = j * KT + KT - RESIDUAL_LEAD;
                    mbar_wait(&full[it % STAGES], (it / STAGES) & 1);   // (never with SPLIT_K: not staged)
                }
                mbar_expect_tx(inputs_full, TILE_BYTES);
                for (int b = 0; b < BLOCKS; ++b)
                    tma_load_2d(tile_buf + b * BLOCK_BYTES, maps.residual, n0 + b * BLOCK_COLS, m0, inputs_full);
            }
        }
        if constexpr (Staging::kBias) {
            constexpr int CHUNKS_ROW = BN * OUT_BYTES / 16;
            constexpr int ELEMS_CHUNK = 16 / OUT_BYTES;
            const unsigned char *src = static_cast<const unsigned char *>(p.bias);
            for (int c = t; c < CHUNKS_ROW; c += COPY_THREADS) {
                const int col = c * ELEMS_CHUNK;
                const bool ok = n0 + col < p.n;
                fusegen_sm80::cp_async16(bias + col * OUT_BYTES, ok ? src + (n0 + col) * OUT_BYTES : src, ok ? 16 : 0);
            }
            fusegen_sm80::cp_async_commit();
            fusegen_sm80::cp_async_wait<0>();
        }
    }

    // Cluster strategy, every thread at its end: no CTA exits while a peer may still push into
    // its exchange (each waits for every push it gets, but the tools cannot see that; the
    // barrier is the documented way). .aligned: the warp reconverges first.
    __device__ static void end_cluster()
    {
        if constexpr (CLUSTER) {
            __syncwarp();
            fusegen_sm80::cluster_sync();
        }
    }

    __device__ static void run(const Params &p, const TensorMap &map_a, const TensorMap &map_a_tail, const TensorMap &map_b,
                               const EpilogueMaps &maps)
    {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
        (void)p, (void)map_a, (void)map_a_tail, (void)map_b, (void)maps;
        __trap();   // never selected off sm_90a; keeps other targets from compiling the body
#else
        extern __shared__ __align__(1024) unsigned char smem_raw[];
        // The swizzle pattern is anchored to 1024-byte boundaries of the shared address space.
        unsigned char *base = smem_raw + ((1024u - (fusegen_sm80::smem_addr(smem_raw) & 1023u)) & 1023u);
        // stages | tile buffers | biases | barriers | epilogue scratch (a buffer each)
        unsigned char *staged_tiles = base + STAGES * STAGE_BYTES;
        unsigned char *staged_biases = staged_tiles + BUFFERS * TILE_BYTES;
        unsigned long long *full = reinterpret_cast<unsigned long long *>(staged_biases + BUFFERS * BIAS_BYTES);
        unsigned long long *empty = full + STAGES;
        unsigned long long *inputs_full = empty + STAGES;       // [BUFFERS]
        unsigned long long *inputs_empty = inputs_full + BUFFERS;   // [BUFFERS]
        unsigned long long *order = inputs_empty + BUFFERS;     // [CONSUMERS], ping-pong only
        unsigned char *scratch = reinterpret_cast<unsigned char *>(order + (PINGPONG ? CONSUMERS : 0));
        const int warpgroup = threadIdx.x >> 7;
        const Tiles tiles(p);
        const int KT = tiles.KT;

        if (threadIdx.x == 0) {
            for (int s = 0; s < STAGES; ++s) {
                mbar_init(&full[s], 1);
                mbar_init(&empty[s], TILE_CONSUMERS);
            }
            for (int b = 0; b < BUFFERS; ++b) {
                mbar_init(&inputs_full[b], INPUT_ARRIVALS);
                mbar_init(&inputs_empty[b], TILE_THREADS);
            }
            if (PINGPONG)
                for (int c = 0; c < CONSUMERS; ++c) mbar_init(&order[c], 1);
            Ep::init_exchange(scratch);
            mbar_init_fence();
        }
        __syncthreads();
        // Peers arrive on this CTA's exchange barriers: they are initialized first.
        if constexpr (CLUSTER) fusegen_sm80::cluster_sync();
        // The launch is a programmatic dependent one (runtime/launch.c): the CTA may start while the
        // kernel before it in the stream drains; nothing is read or written before it is done.
        asm volatile("griddepcontrol.wait;\n" ::: "memory");

        // Registers: 56 a producer thread (its tile loops spill at 40 in some kernels), 224 a
        // consumer thread; 40 and 232 where a consumer keeps 160 accumulators (64x320 ping-pong).
        // Both pairs free exactly what they take (56 + 2 * 224 = 40 + 2 * 232 = 3 * 168).
        if (warpgroup == 0) {
            asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS) : "memory");
            if (threadIdx.x == 0) {
                // Shared addresses made once, as in the consumers' loop.
                const unsigned stage0_addr = fusegen_sm80::smem_addr(base);
                const unsigned full_addr = fusegen_sm80::smem_addr(full), empty_addr = fusegen_sm80::smem_addr(empty);
                StageCursor at(0);   // k tiles issued so far, over all of this CTA's tiles
                for (int id = tiles.first; id < tiles.count; id += tiles.step) {
                    const fusegen_sm80::TileCoord tile = tiles.coord(id);
                    const int kt_first = tiles.k_first(id), kt_end = kt_first + tiles.k_count(id);
                    // The last row tile of an M that BM does not divide reads A through the tail
                    // map, whose box ends at A's last row: TMA's zero fill of rows past the end
                    // runs slower than the copy (most of a decode step's tile at M < BM). The
                    // stage's rows past M keep stale values, multiplied into accumulator rows
                    // that no epilogue writes.
                    const int m0 = tile.m * BM;
                    const bool a_tail = m0 + BM > p.m;
                    const TensorMap &a_map = a_tail ? map_a_tail : map_a;
                    const unsigned a_bytes = static_cast<unsigned>(a_tail ? p.m - m0 : BM) * 128u;
                    for (int kt = kt_first; kt < kt_end; ++kt, at.next()) {
                        const unsigned full_s = full_addr + 8 * at.stage, sa = stage0_addr + at.stage * STAGE_BYTES;
                        // A fresh barrier counts as having completed the phase before its
                        // first, so the first pass over the stages does not wait.
                        mbar_wait(empty_addr + 8 * at.stage, at.phase ^ 1);
                        mbar_expect_tx(full_s, a_bytes + B_STAGE_BYTES);
                        tma_load_2d(sa, a_map, kt * BK, m0, full_s);
                        for (int b = 0; b < B_BOXES; ++b) {
                            if constexpr (B_KN)   // columns n .. n + 63 of k rows kt * BK ...
                                tma_load_2d(sa + A_STAGE_BYTES + b * B_BOX_BYTES, map_b, tile.n * BN + b * 64, kt * BK,
                                            full_s);
                            else                  // rows n ... of k columns kt * BK ...
                                tma_load_2d(sa + A_STAGE_BYTES + b * B_BOX_BYTES, map_b, kt * BK,
                                            tile.n * BN + b * kTmaBoxB, full_s);
                        }
                    }
                }
            } else if (STAGED && threadIdx.x >= 32) {
                int j = 0;   // tiles whose inputs were copied
                for (int id = tiles.first; id < tiles.count; id += tiles.step, ++j) {
                    const fusegen_sm80::TileCoord tile = tiles.coord(id);
                    const int b = j % BUFFERS;
                    // the epilogue of the buffer's previous tile is done with it
                    mbar_wait(&inputs_empty[b], ((j / BUFFERS) & 1) ^ 1);
                    copy_inputs(p, maps, staged_tiles + b * TILE_BYTES, staged_biases + b * BIAS_BYTES,
                                &inputs_full[b], tile.m * BM, tile.n * BN, full, j, KT);
                    mbar_arrive(&inputs_full[b]);   // release: the copies this thread waited for are visible
                }
            }
            end_cluster();
            return;
        }

        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS) : "memory");
        // Broadcast from lane 0, so the compiler knows it is the same across the warp: the
        // ping-pong tile loop's bounds depend on it, and its shuffles stay plain warp shuffles.
        const int consumer = __shfl_sync(0xffffffffu, warpgroup - 1, 0);
        const int ttid = PINGPONG ? threadIdx.x & 127 : threadIdx.x - 128;   // among the tile's threads
        // This warpgroup's tiles (ping-pong: every other one) and their buffer.
        const int j_first = PINGPONG ? consumer : 0, j_step = PINGPONG ? CONSUMERS : 1;
        const int buf = PINGPONG ? consumer : 0;
        unsigned char *staged_tile = staged_tiles + buf * TILE_BYTES;
        unsigned char *staged_bias = staged_biases + buf * BIAS_BYTES;
        unsigned char *my_scratch = scratch + buf * Ep::SCRATCH_BYTES;
        // The A rows this warpgroup multiplies: the whole A tile, or its half of it; and its B
        // columns (COL_SPLIT: its half of them, in 16-byte units: WG_COLS K-major rows of 128
        // bytes, or WG_COLS / 64 N-major blocks).
        const int a_offset = PINGPONG || COL_SPLIT ? 0 : consumer * 64 * 128;
        const int b_offset = !COL_SPLIT ? 0 : B_KN ? consumer * (WG_COLS / 64) * (B_BOX_BYTES >> 4) : consumer * WG_COLS * 8;
        // Stage 0's descriptors and the barriers' shared addresses, made once: the k tile loop
        // only adds the stage's offset (its instructions sit between a stage's arrival and the
        // first wgmma on it).
        const unsigned stage0_addr = fusegen_sm80::smem_addr(base);
        const unsigned long long desc_a0 = wgmma_desc(stage0_addr + a_offset);
        const unsigned long long desc_b0 = wgmma_desc(stage0_addr + A_STAGE_BYTES, B_KN ? B_BOX_BYTES : 16) + b_offset;
        const unsigned full_addr = fusegen_sm80::smem_addr(full), empty_addr = fusegen_sm80::smem_addr(empty);
        // The previous tile's epilogue still owns the tile buffer: its copies out may not have
        // read it yet. Released once the next tile's first wgmma is issued, so the copies
        // overlap the mainloop instead of ending the epilogue.
        bool release_pending = false;
        const auto release = [&](const fusegen_sm80::TileInputs &prev) {
            Ep::release_tile(prev, ttid);
            mbar_arrive(&inputs_empty[buf]);   // the producer may copy the next tile's inputs
            release_pending = false;
        };
        // Ping-pong: the other warpgroup may start its next mainloop.
        const auto pass_turn = [&] {
            if (PINGPONG && ttid == 0) mbar_arrive(&order[consumer ^ 1]);
        };
        fusegen_sm80::TileInputs in = {};
        for (int j = j_first, id = tiles.first + j_first * tiles.step; id < tiles.count;
             j += j_step, id += j_step * tiles.step) {
            const fusegen_sm80::TileCoord tile = tiles.coord(id);
            float acc[WG_BLOCKS][WG_COLS / 8][4];
#pragma unroll
            for (int mb = 0; mb < WG_BLOCKS; ++mb)
#pragma unroll
                for (int ni = 0; ni < WG_COLS / 8; ++ni)
#pragma unroll
                    for (int e = 0; e < 4; ++e) acc[mb][ni][e] = 0.0f;
            // Ping-pong: wait for the other warpgroup's turn on the previous tile.
            if (PINGPONG && j > 0) mbar_wait(&order[consumer], ((j - 1) / CONSUMERS) & 1);

            float sq[WG_BLOCKS][2] = {};   // a_norm: this thread's share of its rows' squares
            // One wgmma group stays in flight: k tile kt is issued, then kt-1's stage released.
            StageCursor at(tiles.k_before(j));
            const int unit_kt = tiles.k_count(id);   // KT, or this slice's share of it
            int released = 0;   // the stage of the k tile before
            for (int kt = 0; kt < unit_kt; ++kt, at.next()) {
                mbar_wait(full_addr + 8 * at.stage, at.phase);
                if (kt == unit_kt - 1) pass_turn();
                const unsigned long long stage_units = at.stage * (STAGE_BYTES >> 4);
                const unsigned long long desc_a = desc_a0 + stage_units, desc_b = desc_b0 + stage_units;
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)   // 16 elements = 32 bytes = 2 in descriptor units
#pragma unroll
                    for (int mb = 0; mb < WG_BLOCKS; ++mb)   // a row block: 64 rows of 128 bytes = 512 units
                        wgmma_tile<DT_AB, WG_COLS, B_KN>(acc[mb], desc_a + 512 * mb + 2 * kk, desc_b + B_K16_UNITS * kk);
                wgmma_commit();
                wgmma_wait_one();
                if (kt > 0 && (ttid & 127) == 0) mbar_arrive(empty_addr + 8 * released);
                released = at.stage;
                if (STAGED && release_pending) release(in);
                // a_norm: this stage's squares while the tensor cores work on it, after the
                // previous stage is released: summed before that release, they held it back from
                // the producer by their ~100 instructions a k tile, a share of the ring's depth
                // where the loads are the limit (decisions.md, "The norm on A after the release").
                if constexpr (kANorm) a_norm_stage(base + at.stage * STAGE_BYTES + a_offset, ttid, sq);
            }
            // Split K: the reduce kernel's inputs into L2 while the last wgmmas run (slice 0's units).
            if (SPLIT_K && tiles.slice(id) == 0)
                Reduce::template prefetch_tile<TILE_THREADS>(p, tile.m * BM, tile.n * BN, BM, BN, ttid);
            wgmma_wait_all();
            if constexpr (kANorm) fusegen_sm80::a_norm_scale(acc, sq, p.k, Epi::kANormEps);
            if (unit_kt == 0) pass_turn();
            // The tile's last stage: the producer may refill it with the next tile's operands.
            if (unit_kt > 0 && (ttid & 127) == 0) mbar_arrive(empty_addr + 8 * released);
            if (STAGED && release_pending) release(in);   // K == 0: no mainloop to overlap

            if constexpr (STAGED) {
                mbar_wait(&inputs_full[buf], (j / BUFFERS) & 1);
                in.staged_residual = Staging::kResidual;
                in.staged_bias = Staging::kBias;
                in.staged_store = Staging::kStoreSlot >= 0;
                in.staged_slot = Staging::kStoreSlot;
                in.staged_out = Staging::kOut;
                in.ringed = Staging::kRing > 0;
                in.tile = fusegen_sm80::smem_addr(staged_tile);
                in.bias = fusegen_sm80::smem_addr(staged_bias);
                in.m0 = tile.m * BM;
                in.n0 = tile.n * BN;
                in.block_bytes = BLOCK_BYTES;
                in.block_cols = BLOCK_COLS;
                in.store_map = &maps.store;
                in.out_map = &maps.out;
            }
            in.ordinal = j;
            if constexpr (SPLIT_K) {   // the unit's raw sums into its slice of the partial sums
                Params q = p;
                q.out = p.partials + static_cast<long long>(tiles.slice(id)) * p.m * p.n;
                q.ldo = p.n;
                Ep::apply(q, in, acc, my_scratch, tile, (ttid >> 5) % WARPS_M, (ttid >> 5) / WARPS_M, ttid & 31);
            } else if constexpr (GLU) {
                float out[WG_BLOCKS][WG_COLS / 16][4];
                fusegen_sm80::glu_fragments<Epi::kGlu>(acc, out);
                Params q = p;
                q.n = p.n / 2;   // the output's columns
                Ep::apply(q, in, out, my_scratch, tile, (ttid >> 5) % WARPS_M, (ttid >> 5) / WARPS_M, ttid & 31);
            } else {
                Ep::apply(p, in, acc, my_scratch, tile, (ttid >> 5) % WARPS_M, (ttid >> 5) / WARPS_M, ttid & 31);
            }
            release_pending = STAGED;
        }
        // The bulk copies out of the tile buffer finish before the CTA does.
        if (Staging::kTile && ttid == 0) fusegen_sm80::bulk_wait();
        end_cluster();
#endif
    }

    // Split strategy, second kernel.
    __device__ static void normalize(const Params &p) { Ep::normalize(p); }
};

}  // namespace fusegen_sm90

#endif  // FUSEGEN_SM90_CUH
