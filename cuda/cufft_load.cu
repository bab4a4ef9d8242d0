/*
 * cufft_load.cu - cuFFT loaded when first used, so that the tools, linked
 * with the static CUDA runtime, need none of the CUDA toolkit's shared
 * libraries to start: on a machine with the driver and no toolkit the
 * dedispersers use the GPU, and fdas uses it where libcufft is installed
 * (else the CPU: ddtk_cufft_usable). The four cuFFT calls fdas makes are
 * defined here with cufft.h's signatures and forwarded to the library's.
 */
#include <cufft.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "internal.h"

#ifndef DDTK_CUDA_LIBDIR
#define DDTK_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

typedef cufftResult (*plan1d_fn)(cufftHandle *, int, cufftType, int);
typedef cufftResult (*c2c_fn)(cufftHandle, cufftComplex *, cufftComplex *, int);
typedef cufftResult (*r2c_fn)(cufftHandle, cufftReal *, cufftComplex *);
typedef cufftResult (*destroy_fn)(cufftHandle);

static struct {
    pthread_once_t once;
    plan1d_fn plan1d;
    c2c_fn c2c;
    r2c_fn r2c;
    destroy_fn destroy;
    char why[256];
} lib = { PTHREAD_ONCE_INIT, NULL, NULL, NULL, NULL, "" };

/* The soname of the toolkit the build used, where the dynamic linker finds
 * it, then in the build's toolkit (DDTK_CUDA_LIBDIR, the Makefile's
 * CUDA_HOME/lib64), then any libcufft.so. */
static void load(void)
{
    static const char *const names[] = {
        "libcufft.so." STR(CUFFT_VER_MAJOR),
        DDTK_CUDA_LIBDIR "/libcufft.so." STR(CUFFT_VER_MAJOR),
        "libcufft.so",
    };
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(lib.why, sizeof lib.why, "%s", dlerror());
        return;
    }
    lib.plan1d = (plan1d_fn)dlsym(h, "cufftPlan1d");
    lib.c2c = (c2c_fn)dlsym(h, "cufftExecC2C");
    lib.r2c = (r2c_fn)dlsym(h, "cufftExecR2C");
    lib.destroy = (destroy_fn)dlsym(h, "cufftDestroy");
    if (!lib.plan1d || !lib.c2c || !lib.r2c || !lib.destroy) {
        snprintf(lib.why, sizeof lib.why, "libcufft.so." STR(CUFFT_VER_MAJOR)
                 " lacks a cuFFT call fdas uses");
        lib.plan1d = NULL;
    }
}

extern "C" int ddtk_cufft_usable(const char **why)
{
    pthread_once(&lib.once, load);
    if (why)
        *why = lib.why;
    return lib.plan1d != NULL;
}

extern "C" cufftResult CUFFTAPI cufftPlan1d(cufftHandle *plan, int nx, cufftType type, int batch)
{
    return ddtk_cufft_usable(NULL) ? lib.plan1d(plan, nx, type, batch) : CUFFT_SETUP_FAILED;
}

extern "C" cufftResult CUFFTAPI cufftExecC2C(cufftHandle plan, cufftComplex *idata,
                                             cufftComplex *odata, int direction)
{
    return ddtk_cufft_usable(NULL) ? lib.c2c(plan, idata, odata, direction) : CUFFT_SETUP_FAILED;
}

extern "C" cufftResult CUFFTAPI cufftExecR2C(cufftHandle plan, cufftReal *idata,
                                             cufftComplex *odata)
{
    return ddtk_cufft_usable(NULL) ? lib.r2c(plan, idata, odata) : CUFFT_SETUP_FAILED;
}

extern "C" cufftResult CUFFTAPI cufftDestroy(cufftHandle plan)
{
    return ddtk_cufft_usable(NULL) ? lib.destroy(plan) : CUFFT_SETUP_FAILED;
}
