/*
 * fdmtref.h - the FDMT reference of the tests, written apart from libddtk's
 * kernels: the transform's definition (src/algos/fdmt.h) as a plain recursion over
 * whole series. Row delta of the channels [a, b) (descending frequency,
 * u = f^-2 - f_top^-2) is its upper half's row round(x (u[m-1] - u[a])) plus
 * its lower half's row delta - round(x (u[m] - u[a])) shifted by the
 * latter, x = delta / (u[b-1] - u[a]), m = a + (b - a) / 2. No chunks, no
 * tables, no pruning: each call recomputes its halves from the input.
 */
#ifndef DDTK_TEST_FDMTREF_H
#define DDTK_TEST_FDMTREF_H

#include <math.h>
#include <stdlib.h>

/* The split of delay delta over [a, b): upper half's delay, the lower
 * half's start and delay. */
static inline void fdmtref_split(const double *u, int a, int b, int delta, int *up, int *mid,
                                 int *lo)
{
    int m = a + (b - a) / 2;
    double span = u[b - 1] - u[a], x = span > 0 ? delta / span : 0.0;
    *mid = (int)lround(x * (u[m] - u[a]));
    *up = (int)lround(x * (u[m - 1] - u[a]));
    *lo = delta - *mid;
}

/* out[t] (t < len) = row delta of rows [a, b) of x (stride apart) from sample t. */
static inline void fdmtref_row(const float *x, size_t stride, const double *u, int a, int b,
                               int delta, long len, float *out)
{
    if (b - a == 1) {
        for (long t = 0; t < len; t++)
            out[t] = x[(size_t)a * stride + (size_t)t];
        return;
    }
    int m = a + (b - a) / 2, up, mid, lo;
    fdmtref_split(u, a, b, delta, &up, &mid, &lo);
    float *hi = malloc((size_t)len * sizeof *hi), *low = malloc((size_t)(len + mid) * sizeof *low);
    fdmtref_row(x, stride, u, a, m, up, len, hi);
    fdmtref_row(x, stride, u, m, b, lo, len + mid, low);
    for (long t = 0; t < len; t++)
        out[t] = hi[t] + low[t + mid];
    free(hi);
    free(low);
}

/* The delay (samples) at which each row of [a, b) enters row delta. */
static inline void fdmtref_path(const double *u, int a, int b, int delta, int start, int *delay)
{
    if (b - a == 1) {
        delay[a] = start;
        return;
    }
    int m = a + (b - a) / 2, up, mid, lo;
    fdmtref_split(u, a, b, delta, &up, &mid, &lo);
    fdmtref_path(u, a, m, up, start, delay);
    fdmtref_path(u, m, b, lo, start + mid, delay);
}

#endif
