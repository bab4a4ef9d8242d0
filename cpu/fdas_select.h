/*
 * fdas_select.h - the median of fdas's red-noise blocks, shared by the C
 * code and the CUDA kernels (DDTK_HD, from hoare.h), so that the CPU and the
 * GPU whitening pick the same element.
 */
#ifndef DDTK_FDAS_SELECT_H
#define DDTK_FDAS_SELECT_H

#include "hoare.h"

DDTK_DEFINE_HOARE(ddtk_fdas_hoare, float, int)

/* Median of v[0..n) (the lower middle element for even n); v is reordered. */
static inline DDTK_HD float ddtk_fdas_select_median(float *v, int n)
{
    return ddtk_fdas_hoare(v, n, (n - 1) / 2);
}

#endif
