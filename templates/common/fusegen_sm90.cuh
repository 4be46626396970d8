{{banner}}
// Device code of the Hopper family (sm_90a): the operand tiles are brought into shared memory
// by 16-byte cp.async in the 128-byte-swizzled layout that wgmma reads, and each warpgroup
// multiplies its 64 rows of the CTA tile with wgmma.mma_async (m64nNk16, f32 accumulate). The
// accumulators come out in the same per-warp fragment layout as mma.sync's, so the fused
// epilogue (row and split norms, every op) is the one of the portable family.
// Compiled for another target, the kernels of this family trap; the runtime never selects
// them there (their table entries are marked sm_90a-only).
#ifndef FUSEGEN_SM90_CUH
#define FUSEGEN_SM90_CUH

#include "fusegen_sm80.cuh"

namespace fusegen_sm90 {

using fusegen_sm80::DT_BF16;
using fusegen_sm80::DT_F16;
using fusegen_sm80::Params;

// Shared-memory matrix descriptor of a K-major tile whose rows are 128 bytes (64 16-bit
// elements), stored with the 128-byte swizzle: 8-row groups 1024 bytes apart (the stride
// byte offset), the leading byte offset unused in this mode. The tile starts 1024-byte aligned.
__device__ __forceinline__ unsigned long long wgmma_desc(const void *tile)
{
    unsigned long long addr = fusegen_sm80::smem_addr(tile);
    unsigned long long desc = (addr & 0x3FFFFull) >> 4;   // start address, bits 0-13
    desc |= 1ull << 16;                                    // leading byte offset (unused)
    desc |= (1024ull >> 4) << 32;                          // stride byte offset
    desc |= 1ull << 62;                                    // 128-byte swizzle
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
// Makes this thread's completed cp.async writes visible to the async proxy (wgmma) once the
// following barrier has been passed.
__device__ __forceinline__ void fence_proxy_async() { FUSEGEN_SM90_ASM("fence.proxy.async.shared::cta;\n"); }

// m64n64k16: D[64 x 64] (f32, 32 registers a thread) += A[64 x 16] . B[16 x 64], both from shared memory.
template <int DT> __device__ __forceinline__ void wgmma_m64n64k16(float (&d)[8][4], unsigned long long desc_a,
                                                             unsigned long long desc_b)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (DT == DT_BF16)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                     :
                     "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
                     : "l"(desc_a), "l"(desc_b), "r"(1));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
                     :
                     "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
                     : "l"(desc_a), "l"(desc_b), "r"(1));
#else
    (void)d, (void)desc_a, (void)desc_b;
    __trap();
#endif
}

// m64n128k16: D[64 x 128] (f32, 64 registers a thread) += A[64 x 16] . B[16 x 128], both from shared memory.
template <int DT> __device__ __forceinline__ void wgmma_m64n128k16(float (&d)[16][4], unsigned long long desc_a,
                                                             unsigned long long desc_b)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (DT == DT_BF16)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                     :
                     "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
                     "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                     "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
                     "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
                     "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
                     "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                     "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
                     "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
                     "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
                     : "l"(desc_a), "l"(desc_b), "r"(1));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                     :
                     "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
                     "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                     "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
                     "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
                     "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
                     "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                     "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
                     "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
                     "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
                     : "l"(desc_a), "l"(desc_b), "r"(1));
#else
    (void)d, (void)desc_a, (void)desc_b;
    __trap();
#endif
}

// m64n256k16: D[64 x 256] (f32, 128 registers a thread) += A[64 x 16] . B[16 x 256], both from shared memory.
template <int DT> __device__ __forceinline__ void wgmma_m64n256k16(float (&d)[32][4], unsigned long long desc_a,
                                                             unsigned long long desc_b)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if (DT == DT_BF16)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
                     :
                     "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
                     "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                     "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
                     "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
                     "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
                     "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                     "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
                     "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
                     "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]),
                     "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]),
                     "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]),
                     "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]),
                     "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]),
                     "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]),
                     "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]),
                     "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]),
                     "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]),
                     "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]),
                     "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]),
                     "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]),
                     "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]),
                     "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]),
                     "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]),
                     "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]),
                     "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])
                     : "l"(desc_a), "l"(desc_b), "r"(1));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
                     :
                     "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
                     "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
                     "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
                     "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
                     "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
                     "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
                     "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
                     "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
                     "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
                     "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
                     "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
                     "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
                     "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
                     "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
                     "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
                     "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3]),
                     "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]),
                     "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]),
                     "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]),
                     "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]),
                     "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]),
                     "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3]),
                     "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]),
                     "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]),
                     "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]),
                     "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]),
                     "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]),
                     "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]),
                     "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]),
                     "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]),
                     "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]),
                     "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])
                     : "l"(desc_a), "l"(desc_b), "r"(1));
#else
    (void)d, (void)desc_a, (void)desc_b;
    __trap();
#endif
}

template <int DT, int BN> __device__ __forceinline__ void wgmma_tile(float (&d)[BN / 8][4], unsigned long long a,
                                                                   unsigned long long b)
{
    if constexpr (BN == 64)
        wgmma_m64n64k16<DT>(d, a, b);
    else if constexpr (BN == 128)
        wgmma_m64n128k16<DT>(d, a, b);
    else
        wgmma_m64n256k16<DT>(d, a, b);
}

// BM = 64 * warpgroups (64 or 128); BN in {64, 128, 256}; BK is one swizzle row, 64 elements.
// B is [N, K] (K-major, the "nk" layout). Rows and K are zero-filled past M, N and K.
template <int DT_AB, int DT_OUT, int BM, int BN, int STAGES, int NORM, int STRATEGY, class Epi>
struct GemmSm90 {
    static constexpr int BK = 64;
    static constexpr int WARPGROUPS = BM / 64;
    static constexpr int THREADS = WARPGROUPS * 128;
    static constexpr int WARPS_M = BM / 16;   // warp w owns rows 16w..16w+15, all BN columns
    using Ep = fusegen_sm80::Epilogue<DT_OUT, BM, BN, WARPS_M, 1, NORM, STRATEGY, Epi>;
    static constexpr int A_STAGE_BYTES = BM * 128, B_STAGE_BYTES = BN * 128;
    static constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;   // + room to align to 1024
    static constexpr int kTileM = BM, kTileN = BN, kThreads = THREADS, kSmemBytes = SMEM_BYTES;
    static constexpr int kStrategy = STRATEGY;
    static constexpr int kOutBytes = DT_OUT == fusegen_sm80::DT_F32 ? 4 : 2;
    static_assert(BM == 64 || BM == 128, "tile m must be 64 or 128");
    static_assert(BN == 64 || BN == 128 || BN == 256, "tile n must be 64, 128 or 256");
    static_assert(Ep::SCRATCH_BYTES <= STAGES * STAGE_BYTES, "epilogue scratch must fit");

    // Copies `rows` rows of 64 elements starting at (row0, k0) of a K-major matrix into a
    // swizzled tile: the 16-byte chunk c of row r lands at r * 128 + ((c ^ (r % 8)) * 16).
    __device__ static void load_tile(unsigned char *tile, const unsigned short *g, long long ld, int rows, int row0,
                                     int row_limit, int k0, int k_limit)
    {
#pragma unroll
        for (int c = threadIdx.x; c < rows * 8; c += THREADS) {
            int r = c >> 3, ch = c & 7;
            int gr = row0 + r, gk = k0 + ch * 8;
            bool ok = gr < row_limit && gk < k_limit;
            const unsigned short *src = ok ? g + static_cast<long long>(gr) * ld + gk : g;
            fusegen_sm80::cp_async16(tile + r * 128 + ((ch ^ (r & 7)) << 4), src, ok ? 16 : 0);
        }
    }

    __device__ static void load_stage(const Params &p, unsigned char *base, int stage, int kt, int m0, int n0)
    {
        unsigned char *sa = base + stage * STAGE_BYTES;
        load_tile(sa, static_cast<const unsigned short *>(p.a), p.lda, BM, m0, p.m, kt * BK, p.k);
        load_tile(sa + A_STAGE_BYTES, static_cast<const unsigned short *>(p.b), p.ldb, BN, n0, p.n, kt * BK, p.k);
    }

    __device__ static void run(const Params &p)
    {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
        (void)p;
        __trap();   // never selected off sm_90a; keeps other targets from compiling the body
#else
        extern __shared__ __align__(1024) unsigned char smem_raw[];
        // The swizzle pattern is anchored to 1024-byte boundaries of the shared address space.
        unsigned char *base = smem_raw + ((1024u - (fusegen_sm80::smem_addr(smem_raw) & 1023u)) & 1023u);
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = warp >> 2;
        const fusegen_sm80::TileCoord tile = fusegen_sm80::tile_coord();
        const int m0 = tile.m * BM, n0 = tile.n * BN;
        const int KT = (p.k + BK - 1) / BK;

        float acc[1][BN / 8][4];
#pragma unroll
        for (int ni = 0; ni < BN / 8; ++ni)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[0][ni][e] = 0.0f;

#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < KT) load_stage(p, base, s, s, m0, n0);
            fusegen_sm80::cp_async_commit();
        }
        // One wgmma group stays in flight while the next tile's copies are issued: tile kt is
        // multiplied, then (once every warpgroup has finished tile kt-1) its stage is refilled.
        for (int kt = 0; kt < KT; ++kt) {
            fusegen_sm80::cp_async_wait<STAGES - 2>();
            fence_proxy_async();
            __syncthreads();

            const unsigned char *sa = base + (kt % STAGES) * STAGE_BYTES;
            unsigned long long desc_a = wgmma_desc(sa + wg * 64 * 128);
            unsigned long long desc_b = wgmma_desc(sa + A_STAGE_BYTES);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk)   // 16 elements = 32 bytes = 2 in descriptor units
                wgmma_tile<DT_AB, BN>(acc[0], desc_a + 2 * kk, desc_b + 2 * kk);
            wgmma_commit();
            wgmma_wait_one();   // tile kt-1 is done in this warpgroup
            __syncthreads();    // ... and in every warpgroup: its stage may be refilled

            int next = kt + STAGES - 1;
            if (next < KT) load_stage(p, base, next % STAGES, next, m0, n0);
            fusegen_sm80::cp_async_commit();
        }
        wgmma_wait_all();
        fusegen_sm80::cp_async_wait<0>();
        __syncthreads();   // the epilogue reuses the stage buffers as scratch

        Ep::apply(p, acc, base, tile, warp, 0, lane);
#endif
    }

    // Split strategy, second kernel.
    __device__ static void normalize(const Params &p) { Ep::normalize(p); }
};

}  // namespace fusegen_sm90

#endif  // FUSEGEN_SM90_CUH
