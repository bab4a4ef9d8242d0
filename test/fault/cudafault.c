/*
 * cudafault.c - an LD_PRELOAD shim for the GPU set-up tests: pinning the
 * outputs (cudaHostRegister) fails as when page-locked memory runs out, while
 * the raw input's (pinned for every device) succeeds. The GPU set-up pins from
 * several host threads in no fixed order, so the call fails by kind, not by
 * count.
 *
 *   DDTK_CUDA_FAULT=pin-outputs   cudaHostRegister without cudaHostRegisterPortable
 *
 * Declared here rather than from cuda_runtime.h so that it builds anywhere.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define HOST_REGISTER_PORTABLE 0x01    /* cudaHostRegisterPortable */
#define ERROR_MEMORY_ALLOCATION 2      /* cudaErrorMemoryAllocation */

typedef int (*host_register_fn)(void *, size_t, unsigned int);

int cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    const char *spec = getenv("DDTK_CUDA_FAULT");
    if (spec && strcmp(spec, "pin-outputs") == 0 && !(flags & HOST_REGISTER_PORTABLE))
        return ERROR_MEMORY_ALLOCATION;
    host_register_fn next = (host_register_fn)dlsym(RTLD_NEXT, "cudaHostRegister");
    return next ? next(ptr, size, flags) : ERROR_MEMORY_ALLOCATION;
}
