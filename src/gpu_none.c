/*
 * gpu_none.c - GPU discovery in a build without CUDA (make CUDA=0): no devices.
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
