/*
 * gpu_none.c - the GPU entry points in a build without CUDA (make CUDA=0): no
 * devices, and the GPU streaming layer fails with a clear message.
 */
#include "engine.h"
#include "internal.h"

int ddtk_have_cuda(void)
{
    return 0;
}

int ddtk_gpu_count(void)
{
    return 0;
}

int ddtk_gpu_list(FILE *fp)
{
    fprintf(fp, "no usable GPU (ddtk was built without CUDA)\n");
    return DDTK_OK;
}

int ddtk_gpu_usable(int index, char *name, size_t n, char *why, size_t nwhy)
{
    (void)index;
    if (n)
        name[0] = '\0';
    snprintf(why, nwhy, "no usable GPU (ddtk was built without CUDA)");
    return 0;
}

int ddtk_gpu_describe(int index, char *s, size_t n)
{
    (void)index;
    if (n)
        s[0] = '\0';
    return 0;
}

int ddtk_gpu_variants(int lane)
{
    (void)lane;
    return 0;
}

int ddtk_gpu_fallback_shapes(void)
{
    return 0;
}

int ddtk_gpu_stream_run(ddtk_plan *p, ddtk_source *src, ddtk_writer *w, double *kernel)
{
    (void)p, (void)src, (void)w, (void)kernel;
    return ddtk_fail(DDTK_ESYS, "backend gpu: no usable GPU (ddtk was built without CUDA)");
}

void ddtk_gpu_stream_free(ddtk_gpu_stream *s)
{
    (void)s;
}

ddtk_gpu_warm *ddtk_gpu_warm_start(const int *gpus, int n)
{
    (void)gpus, (void)n;
    return NULL;
}

void ddtk_gpu_warm_join(ddtk_gpu_warm *w)
{
    (void)w;
}
