/*
 * fdas_select.h - helpers shared by the C code and the CUDA kernels of fdas:
 * the DDTK_HD qualifier (__host__ __device__ under nvcc, nothing in C) and the
 * quickselect median of the red-noise blocks, so that the CPU and the GPU
 * whitening pick the same element.
 */
#ifndef DDTK_FDAS_SELECT_H
#define DDTK_FDAS_SELECT_H

#ifdef __CUDACC__
#define DDTK_HD __host__ __device__
#else
#define DDTK_HD
#endif

/* Median of v[0..n) (the lower middle element for even n); v is reordered. */
static inline DDTK_HD float ddtk_fdas_select_median(float *v, int n)
{
    int k = (n - 1) / 2, lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = v[(lo + hi) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                float t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

#endif
