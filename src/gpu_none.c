/*
 * gpu_none.c - the GPU entry points in a build without CUDA (make CUDA=0): no
 * devices, and the GPU backend fails with a clear message.
 */
#include "ddtk.h"

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
    snprintf(why, nwhy, "ddtk was built without CUDA");
    return 0;
}

int ddtk_gpu_direct_create(ddtk_gpu_direct **g, ddtk_input *in, const ddtk_channels *ch,
                           const ddtk_delays *dl, struct ddtk_scrunch *sc, int64_t keep,
                           int pol, const ddtk_options *opt)
{
    (void)in, (void)ch, (void)dl, (void)sc, (void)keep, (void)pol, (void)opt;
    *g = NULL;
    return ddtk_fail(DDTK_ESYS, "--backend gpu: ddtk was built without CUDA");
}

int ddtk_gpu_direct_execute(ddtk_gpu_direct *g, ddtk_outset *out, ddtk_run_stats *stats)
{
    (void)g, (void)out, (void)stats;
    return ddtk_fail(DDTK_ESYS, "--backend gpu: ddtk was built without CUDA");
}

void ddtk_gpu_direct_destroy(ddtk_gpu_direct *g)
{
    (void)g;
}
