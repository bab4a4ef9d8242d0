/*
 * device.cu - GPU discovery for the CUDA build: counting, listing and checking
 * devices, and the message of a failed CUDA call (check.cuh).
 */
#include "check.cuh"

#include "internal.h"

int ddtk_cuda_fail(const char *what, cudaError_t err)
{
    int dev = -1;
    cudaGetDevice(&dev);
    return ddtk_fail(DDTK_ESYS, "GPU %d: %s: %s", dev, what, cudaGetErrorString(err));
}

int ddtk_cuda_upload(void **dst, const void *src, size_t bytes, const char *what)
{
    DDTK_CUDA(cudaMalloc(dst, bytes > 0 ? bytes : 4), what);
    if (bytes)
        DDTK_CUDA(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice), what);
    return DDTK_OK;
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

extern "C" int ddtk_gpu_describe(int index, char *s, size_t n)
{
    cudaDeviceProp prop;
    char why[160];
    if (!ddtk_gpu_usable(index, s, n, why, sizeof why)
        || cudaGetDeviceProperties(&prop, index) != cudaSuccess)
        return 0;
    snprintf(s, n, "%s, cc %d.%d, %.0f GiB", prop.name, prop.major, prop.minor,
             (double)prop.totalGlobalMem / (1 << 30));
    return 1;
}

extern "C" int ddtk_gpu_usable(int index, char *name, size_t n, char *why, size_t nwhy)
{
    int count = 0;
    cudaDeviceProp prop;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (n)
        name[0] = '\0';
    if (err != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, nwhy, "no usable GPU (%s)", cudaGetErrorString(err));
        return 0;
    }
    if (index >= count) {
        if (count == 0)
            snprintf(why, nwhy, "no usable GPU (no CUDA devices)");
        else
            snprintf(why, nwhy, "GPU index %d: only %d GPU%s visible", index, count,
                     count == 1 ? "" : "s");
        return 0;
    }
    if ((err = cudaGetDeviceProperties(&prop, index)) != cudaSuccess) {
        snprintf(why, nwhy, "GPU %d: %s", index, cudaGetErrorString(err));
        return 0;
    }
    snprintf(name, n, "%s", prop.name);
    return 1;
}
