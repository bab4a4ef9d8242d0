/*
 * sps_arith.h - the single-pulse search's arithmetic that the host's search
 * (sps.c) and the device's (cuda/sps_gpu.cu) both do, written once so that
 * the two stay the same to the bit: the MAD's scale to sigma, the windows
 * the block statistics are sought in first, the first sample a boxcar may
 * end at, the baseline's interpolation between blocks, and the float
 * threshold that screens boxcar sums. Functions are inline for
 * both compilers (host and device under nvcc); both files are built without
 * contracted multiply-adds, so these give the same doubles on either side.
 * Internal to libddtk.
 */
#ifndef DDTK_SPS_ARITH_H
#define DDTK_SPS_ARITH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define SPS_FN __host__ __device__ static inline
#else
#define SPS_FN static inline
#endif

#define DDTK_SPS_MAD_TO_SIGMA 1.482602218505602   /* sigma of a Gaussian / its MAD */

/* The first sample of a block, after done samples of the series, that a
 * boxcar of w samples may end at: it starts at the series' first sample or
 * later. */
SPS_FN int64_t ddtk_sps_first_end(int64_t w, int64_t done)
{
    return done + 1 >= w ? 0 : w - 1 - done;
}

/* A block statistic at fraction f of the way from the previous block's value
 * p to this one's c. */
SPS_FN double ddtk_sps_lerp(double p, double c, double f)
{
    return p + f * (c - p);
}

/* The windows a block's order statistics are sought in first, from the
 * previous block's median pm and sigma ps: within 8 / sqrt(n) of them (about
 * 4.5 times their spread between blocks of n samples of stationary noise),
 * the median's lo[0] .. hi[0] and the MAD's lo[1] .. hi[1]. The selection is
 * exact wherever the statistic lies; the window only saves passes. */
SPS_FN void ddtk_sps_guess(double pm, double ps, int64_t n, double *lo, double *hi)
{
    const double mad = ps / DDTK_SPS_MAD_TO_SIGMA, e = 8.0 / sqrt((double)n);
    lo[0] = pm - e * ps;
    hi[0] = pm + e * ps;
    lo[1] = mad * (1 - e);
    hi[1] = mad * (1 + e);
}

/*
 * The float threshold a boxcar of w samples' sum, in float, is compared
 * with so that every sum whose S/N may reach thr passes (m: the largest
 * |prefix sum| the sums are made of, in float). The S/N is float((P[t] -
 * P[t - w]) * norm), which never decreases with the sum, so a sum below thr *
 * sqrt(w) less 2e-5 of it cannot reach thr (the roundings of norm, of the
 * S/N and of this bound are 2^-24 and less). A float sum is within m 2^-24
 * of its double, a difference of two within 2 m 2^-24, and its own rounding
 * adds at most 2 m 2^-24: a threshold 5 m 2^-24 lower, rounded down, passes
 * every sum that may cross.
 */
SPS_FN float ddtk_sps_near(double thr, int64_t w, float m)
{
    const double near = thr * sqrt((double)w) * (1 - 2e-5) - 5.0 * m * 0x1p-24;
    const float nf = (float)near;
    return nf > near ? nextafterf(nf, -INFINITY) : nf;
}

#undef SPS_FN

#endif
