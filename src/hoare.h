/*
 * hoare.h - Hoare's selection of the k-th smallest of x[0..n), in place, as
 * one body for any element and index type, in C and in CUDA kernels
 * (DDTK_HD): select.c's floats and radix keys, and fdas's red-noise medians,
 * on the CPU and the GPU alike.
 */
#ifndef DDTK_HOARE_H
#define DDTK_HOARE_H

#ifdef __CUDACC__
#define DDTK_HD __host__ __device__
#else
#define DDTK_HD
#endif

#define DDTK_DEFINE_HOARE(name, T, I)                                           \
    static inline DDTK_HD T name(T *x, I n, I k)                                \
    {                                                                           \
        I lo = 0, hi = n - 1;                                                   \
        while (lo < hi) {                                                       \
            T pivot = x[lo + (hi - lo) / 2];                                    \
            I i = lo, j = hi;                                                   \
            while (i <= j) {                                                    \
                while (x[i] < pivot)                                            \
                    i++;                                                        \
                while (x[j] > pivot)                                            \
                    j--;                                                        \
                if (i <= j) {                                                   \
                    T t = x[i];                                                 \
                    x[i++] = x[j];                                              \
                    x[j--] = t;                                                 \
                }                                                               \
            }                                                                   \
            if (k <= j)                                                         \
                hi = j;                                                         \
            else if (k >= i)                                                    \
                lo = i;                                                         \
            else                                                                \
                return x[k];                                                    \
        }                                                                       \
        return x[k];                                                            \
    }

#endif
