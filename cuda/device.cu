/*
 * device.cu - GPU discovery for the CUDA build: counting and listing devices.
 */
#include <cuda_runtime.h>

extern "C" {
#include "ddtk.h"
}

extern "C" int ddtk_have_cuda(void)
{
    return 1;
}

extern "C" int ddtk_gpu_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" int ddtk_gpu_list(FILE *fp)
{
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        fprintf(fp, "no usable GPU (%s)\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA devices");
        return DDTK_OK;
    }
    for (int i = 0; i < n; i++) {
        cudaDeviceProp prop;
        if ((err = cudaGetDeviceProperties(&prop, i)) != cudaSuccess)
            return ddtk_fail(DDTK_ESYS, "GPU %d: %s", i, cudaGetErrorString(err));
        fprintf(fp, "%d\t%s\t%.1f GiB\tcompute capability %d.%d\t%d SMs\n", i, prop.name,
                prop.totalGlobalMem / 1073741824.0, prop.major, prop.minor,
                prop.multiProcessorCount);
    }
    return DDTK_OK;
}
