/*
 * rfi_math.h - the arithmetic of --rfi auto that the host's cleaner (rfi.c)
 * and the device's (cuda/rfi_gpu.cu) both do, written once so that their
 * flags, clips and replaced samples are the same bit for bit: the block's
 * subsamples, a channel's moments, IQRM's vote threshold, the zero-DM
 * weights and the dithered rounding of a replaced sample. Both objects are
 * built without fused multiply-adds (rfi.o's -ffp-contract=off, rfi_gpu.o's
 * -fmad=false), so each expression here rounds the same on both.
 */
#ifndef DDTK_RFI_MATH_H
#define DDTK_RFI_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define RFI_FN static inline __host__ __device__
#else
#define RFI_FN static inline
#endif

#define RFI_IQRM_THRESHOLD 3.0    /* robust sigmas of a lagged difference */
#define RFI_IQRM_MAX_LAG 64       /* lags 1, 2, 4 ... up to this and a quarter of the band */
#define RFI_CLIP_THRESHOLD 5.0    /* robust sigmas of the zero-DM series */
#define RFI_MIN_STATS 32          /* spectra a block needs for statistics */
#define RFI_STATS_SPECTRA 512     /* at least this many spectra of a block give the
                                     channels' statistics (every one of smaller blocks) */
#define RFI_ROBUST_SAMPLES 256    /* at least this many of the zero-DM series give its
                                     median and deviation */
#define RFI_LANES 16              /* partial sums of a spectrum's weighted sum */

/* Every step-th of a block's n spectra gives the channels' statistics. */
RFI_FN int64_t rfi_stats_step(int64_t n)
{
    return n / RFI_STATS_SPECTRA > 1 ? n / RFI_STATS_SPECTRA : 1;
}

/* Every step-th of n values gives their median and deviation (robust()). */
RFI_FN int64_t rfi_robust_step(int64_t n)
{
    return n / RFI_ROBUST_SAMPLES > 1 ? n / RFI_ROBUST_SAMPLES : 1;
}

/* A channel's mean and standard deviation from the sum and the sum of
 * squares of its m values. */
RFI_FN void rfi_moments(double sum, double sq, int64_t m, float *mean, float *std)
{
    const double mu = sum / (double)m, var = sq / (double)m - mu * mu;
    *std = (float)sqrt(var > 0 ? var : 0);
    *mean = (float)mu;
}

/* IQRM: a lagged difference above this votes against its channel. */
RFI_FN float rfi_iqrm_limit(float q1, float q3, float med)
{
    return med + (float)RFI_IQRM_THRESHOLD * (q3 - q1) / 1.349f;
}

/* A channel's weight in the zero-DM sum: 1 / its deviation, 0 if flagged. */
RFI_FN float rfi_weight(int flagged, float sig)
{
    return flagged || !(sig > 0) ? 0.0f : 1.0f / sig;
}

/* The dither of the sample at the observation's element `where`: 24 bits of
 * a hash of its place (so any reader, in any order, makes the same). */
RFI_FN uint32_t rfi_dither_bits(int64_t where)
{
    uint64_t z = (uint64_t)where * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(z >> 40);
}

/* A replaced integer sample of nbits (< 32) at element `where`: floor(x + u),
 * u uniform in [0, 1) from the dither, within the format's range, so that
 * replaced samples keep the level x on average where plain rounding would
 * shift every one by the same fraction. */
RFI_FN int32_t rfi_quantise(float x, int64_t where, int nbits, int sgn)
{
    const double u = (double)rfi_dither_bits(where) / 16777216.0;
    const double lo = sgn ? -(double)(1 << (nbits - 1)) : 0,
                 hi = sgn ? (double)(1 << (nbits - 1)) - 1 : (double)(1 << nbits) - 1;
    double v = floor((double)x + u);
    v = v < lo ? lo : v > hi ? hi : v;
    return (int32_t)v;
}

/* Element e of raw data in SIGPROC's formats (1/2/4-bit packed from the low
 * bits, 8/16-bit, 32-bit float) becomes x: a float as it is, an integer
 * format by rfi_quantise at the observation's element `where`. */
RFI_FN void rfi_put(uint8_t *raw, int64_t e, int64_t where, float x, int nbits, int sgn)
{
    if (nbits == 32) {
        memcpy(raw + 4 * e, &x, 4);
        return;
    }
    const int32_t v = rfi_quantise(x, where, nbits, sgn);
    if (nbits < 8) {
        const int64_t bit = e * nbits;
        const unsigned m = (1u << nbits) - 1u, sh = (unsigned)(bit & 7);
        raw[bit >> 3] = (uint8_t)((raw[bit >> 3] & ~(m << sh)) | ((unsigned)v << sh));
    } else if (nbits == 8)
        raw[e] = (uint8_t)v;
    else {
        const uint16_t u = (uint16_t)v;
        memcpy(raw + 2 * e, &u, 2);
    }
}

#endif
