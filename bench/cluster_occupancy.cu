// How many thread-block clusters of each size (2-16 CTAs) this GPU runs at once for a kernel
// with a Hopper GEMM's footprint (384 threads, the shared memory given in bytes, default the
// 128x256 cluster kernel's 231504): the count the cluster launchers get from
// cudaOccupancyMaxActiveClusters, which sets how many row tiles a cluster kernel works on at a
// time. Sizes past 8 are non-portable: the kernel allows them first.
// Built with the benchmark (build/bench/fusegen-cluster-occupancy [SMEM_BYTES]); scripts/gpu-check.sh
// runs it.
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

__global__ void footprint(int *sink)
{
    extern __shared__ int smem[];
    if (sink) sink[threadIdx.x] = smem[threadIdx.x];
}

static int fail(const char *what, cudaError_t e)
{
    fprintf(stderr, "cluster_occupancy: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(int argc, char **argv)
{
    const int smem = argc > 1 ? atoi(argv[1]) : 231504;
    if (smem <= 0) {
        fprintf(stderr, "usage: cluster_occupancy [SMEM_BYTES > 0]\n");
        return 2;
    }
    cudaError_t e = cudaFuncSetAttribute(footprint, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return fail("max dynamic shared memory", e);
    e = cudaFuncSetAttribute(footprint, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (e != cudaSuccess) return fail("non-portable cluster sizes", e);
    int sms = 0;
    e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    if (e != cudaSuccess) return fail("multiprocessor count", e);
    printf("%d SMs; 384 threads and %d bytes of shared memory a CTA\n", sms, smem);
    printf("cluster size  clusters at once  CTAs  SMs idle\n");
    for (int size = 2; size <= 16; ++size) {
        cudaLaunchConfig_t config = {};
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = size;
        attr.val.clusterDim.y = 1;
        attr.val.clusterDim.z = 1;
        config.gridDim = dim3(size, 1, 1);
        config.blockDim = dim3(384);
        config.dynamicSmemBytes = smem;
        config.attrs = &attr;
        config.numAttrs = 1;
        int clusters = 0;
        e = cudaOccupancyMaxActiveClusters(&clusters, footprint, &config);
        if (e != cudaSuccess) {
            printf("%12d  %s\n", size, cudaGetErrorString(e));
            (void)cudaGetLastError();
            continue;
        }
        printf("%12d  %16d  %4d  %8d\n", size, clusters, clusters * size, sms - clusters * size);
    }
    return 0;
}
