/*
 * unpack.c - SIGPROC sample formats to float channel rows.
 *
 * 1/2/4-bit values are packed low bits first and read as a bit stream (a byte
 * may straddle two spectra); 8/16-bit are unsigned unless the header says
 * signed=1; 32-bit is IEEE float. Output is transposed to one row per channel
 * so that the kernels read time-contiguous data.
 */
#include "internal.h"

#include <string.h>

/* Spectra transposed together: their raw bytes stay in L1 while the rows are written. */
#define UNPACK_BLOCK 32

/* 8-bit unsigned, the common case, with the width and the IFs fixed so that
 * the compiler keeps no per-sample branch: about twice the rate of the
 * general loop. */
static void unpack8(const uint8_t *raw, int64_t n, int64_t nchans, int64_t per_spectrum,
                    const int *row, int pol, float *out, size_t stride)
{
    const int64_t lane = pol == DDTK_POL_SUM ? 0 : pol * nchans;
    for (int64_t s0 = 0; s0 < n; s0 += UNPACK_BLOCK) {
        int64_t s1 = s0 + UNPACK_BLOCK < n ? s0 + UNPACK_BLOCK : n;
        for (int64_t c = 0; c < nchans; c++) {
            if (row[c] < 0)
                continue;
            float *restrict dst = out + (size_t)row[c] * stride;
            const uint8_t *r = raw + lane + c;
            if (pol == DDTK_POL_SUM)
                for (int64_t s = s0; s < s1; s++)
                    dst[s] = (float)r[s * per_spectrum] + (float)r[s * per_spectrum + nchans];
            else
                for (int64_t s = s0; s < s1; s++)
                    dst[s] = (float)r[s * per_spectrum];
        }
    }
}

void ddtk_unpack(const ddtk_header *h, const uint8_t *raw, int64_t n,
                 const int *row, int pol, float *out, size_t stride)
{
    const int64_t nchans = h->nchans, per_spectrum = nchans * h->nifs;
    const int nbits = h->nbits, sgn = h->signed_data == 1;
    if (nbits == 8 && !sgn) {
        unpack8(raw, n, nchans, per_spectrum, row, pol, out, stride);
        return;
    }
    for (int64_t s0 = 0; s0 < n; s0 += UNPACK_BLOCK) {
        int64_t s1 = s0 + UNPACK_BLOCK < n ? s0 + UNPACK_BLOCK : n;
        for (int64_t c = 0; c < nchans; c++) {
            if (row[c] < 0)
                continue;
            float *dst = out + (size_t)row[c] * stride;
            for (int64_t s = s0; s < s1; s++) {
                int64_t e = s * per_spectrum + c;
                if (pol == DDTK_POL_SUM)
                    dst[s] = ddtk_sample(raw, e, nbits, sgn) + ddtk_sample(raw, e + nchans, nbits, sgn);
                else
                    dst[s] = ddtk_sample(raw, e + pol * nchans, nbits, sgn);
            }
        }
    }
}

int ddtk_resolve_pol(const ddtk_header *h, int requested, const char *name, int *pol)
{
    if (requested == DDTK_POL_DEFAULT) {
        if (h->nifs == 1)
            *pol = 0;
        else if (h->nifs == 2 || h->nifs == 4)
            *pol = DDTK_POL_SUM;
        else
            return ddtk_fail(DDTK_EUSAGE, "%s: nifs is %d; choose an IF (pol)",
                             name, h->nifs);
        return DDTK_OK;
    }
    if (requested == DDTK_POL_SUM) {
        *pol = h->nifs >= 2 ? DDTK_POL_SUM : 0;
        return DDTK_OK;
    }
    if (requested < 0 || requested >= h->nifs)
        return ddtk_fail(DDTK_EUSAGE, "%s: pol %d but the file has %d IFs",
                         name, requested, h->nifs);
    *pol = requested;
    return DDTK_OK;
}
