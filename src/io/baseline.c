/*
 * baseline.c - the statistics of written series: the block median that
 * SIGPROC's dedisperse subtracts from its .tim output by default, and the
 * robust noise level that scales integer output (--nbits-out).
 *
 * dedisperse sums 32 * nchans output samples into a block, subtracts the
 * block's median (the (n/2)-th smallest sample) from every sample of it, and
 * writes it; a last, shorter block gets the previous block's median. A
 * series shorter than one block has no full block: it gets its own median
 * here (dedisperse would write it raw, carrying the mean of the sums).
 */
#include "internal.h"

#include <math.h>
#include <string.h>

int64_t ddtk_baseline_block(int nchans)
{
    return 32 * (int64_t)(nchans > 0 ? nchans : 1);
}

/* The k-th smallest (0-based) of x[0..n): Hoare's selection, in place. */
static float select_kth(float *x, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = x[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (x[i] < pivot)
                i++;
            while (x[j] > pivot)
                j--;
            if (i <= j) {
                float t = x[i];
                x[i++] = x[j];
                x[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return x[k];
    }
    return x[k];
}

float ddtk_block_median(const float *x, int64_t n, float *scratch)
{
    if (n <= 0)
        return 0.0f;
    memcpy(scratch, x, (size_t)n * sizeof *x);
    return select_kth(scratch, n, (n + 1) / 2 - 1);
}

/* 1.4826 times the median absolute deviation: the standard deviation of
 * Gaussian noise, unmoved by the few bright samples of pulses. */
double ddtk_robust_sigma(const float *x, int64_t n, double centre, float *scratch)
{
    if (n <= 0)
        return 0.0;
    for (int64_t t = 0; t < n; t++)
        scratch[t] = (float)fabs(x[t] - centre);
    return 1.4826 * select_kth(scratch, n, (n + 1) / 2 - 1);
}
