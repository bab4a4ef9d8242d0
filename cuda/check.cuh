/*
 * check.cuh - the one CUDA error check of the library: a failed runtime call
 * records DDTK_ESYS "GPU N: what: CUDA's message" (N the current device) and
 * returns that code from the calling function.
 */
#ifndef DDTK_CUDA_CHECK_CUH
#define DDTK_CUDA_CHECK_CUH

#include <cuda_runtime.h>

/* Record the failure of `what` (device.cu); returns DDTK_ESYS. */
int ddtk_cuda_fail(const char *what, cudaError_t err);
/* A new device allocation *dst holding the host's `bytes` at src (4 bytes
 * where there are none, so that *dst is never NULL), for a plug-in's
 * tables; `what` names them in a failure (device.cu). */
int ddtk_cuda_upload(void **dst, const void *src, size_t bytes, const char *what);

#define DDTK_CUDA(call, what)                                                    \
    do {                                                                         \
        cudaError_t e_ = (call);                                                 \
        if (e_ != cudaSuccess)                                                   \
            return ddtk_cuda_fail((what), e_);                                   \
    } while (0)

#endif
