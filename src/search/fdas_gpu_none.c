/*
 * fdas_gpu_none.c - the fdas GPU backend in a build without CUDA (make CUDA=0):
 * every entry point reports that no GPU is available; the plan never selects
 * it because ddtk_gpu_count() is 0 there.
 */
#include "fdas_kernels.h"
#include "internal.h"

static int no_gpu(void)
{
    return ddtk_fail(DDTK_ESYS, "fdas: no GPU backend (ddtk was built without CUDA)");
}

int ddtk_cufft_usable(const char **why)
{
    if (why)
        *why = "ddtk was built without CUDA";
    return 0;
}

int ddtk_fdas_gpu_init(ddtk_fdas_plan *p)
{
    (void)p;
    return no_gpu();
}

int ddtk_fdas_gpu_search(ddtk_fdas_plan *p, const float *x)
{
    (void)p;
    (void)x;
    return no_gpu();
}

int ddtk_fdas_gpu_sync_spectrum(ddtk_fdas_plan *p)
{
    (void)p;
    return no_gpu();
}

int ddtk_fdas_gpu_plane(ddtk_fdas_plan *p, int zi0, int zi1, int64_t p0, int64_t np, float *out)
{
    (void)p, (void)zi0, (void)zi1, (void)p0, (void)np, (void)out;
    return no_gpu();
}

void ddtk_fdas_gpu_free(ddtk_fdas_plan *p)
{
    (void)p;
}
