/*
 * ddref.h - the brute-force reference of the dedispersion tests, written
 * independently of libddtk's kernels: its own delays, a plain double loop
 * over time and channels in file order. Used by the ddref program and the
 * engine's unit tests.
 */
#ifndef DDTK_TEST_DDREF_H
#define DDTK_TEST_DDREF_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* nsamp spectra of nchans 8-bit samples x (time-major); killed may be NULL.
 * Writes the nsamp - maxdelay samples of DM dm to out and returns their count. */
static inline size_t ddref_series(const uint8_t *x, size_t nsamp, int nchans, double fch1,
                                  double foff, double tsamp, double dm, int use_floor,
                                  const char *killed, float *out)
{
    double ftop = foff < 0 ? fch1 : fch1 + (nchans - 1) * foff;
    long *delay = malloc((size_t)nchans * sizeof *delay), maxd = 0;
    size_t n = 0;
    for (int c = 0; c < nchans; c++) {
        double f = fch1 + c * foff;
        double s = 4148.741601 * dm * (1 / (f * f) - 1 / (ftop * ftop)) / tsamp;
        delay[c] = (long)(use_floor ? floor(s) : round(s));
        if (delay[c] > maxd)
            maxd = delay[c];
    }
    for (size_t t = 0; t + (size_t)maxd < nsamp; t++) {
        float sum = 0;
        for (int c = 0; c < nchans; c++)
            if (!killed || !killed[c])
                sum += x[(t + (size_t)delay[c]) * (size_t)nchans + (size_t)c];
        out[n++] = sum;
    }
    free(delay);
    return n;
}

#endif
