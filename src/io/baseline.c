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

float ddtk_block_median(const float *x, int64_t n, float *scratch)
{
    if (n <= 0)
        return 0.0f;
    memcpy(scratch, x, (size_t)n * sizeof *x);
    return ddtk_select_kth(scratch, n, (n + 1) / 2 - 1);
}

/* 1.4826 times the median absolute deviation: the standard deviation of
 * Gaussian noise, unmoved by the few bright samples of pulses. */
double ddtk_robust_sigma(const float *x, int64_t n, double centre, float *scratch)
{
    if (n <= 0)
        return 0.0;
    for (int64_t t = 0; t < n; t++)
        scratch[t] = (float)fabs(x[t] - centre);
    return 1.4826 * ddtk_select_kth(scratch, n, (n + 1) / 2 - 1);
}
