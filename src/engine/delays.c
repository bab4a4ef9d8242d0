/*
 * delays.c - channel tables and the delay table every algorithm and backend uses.
 *
 * Delays are computed once per run in double precision (SPEC section 1):
 * t(DM, f) = K * DM * (f^-2 - fref^-2), in samples rounded half away from zero
 * (or floored), relative to the centre of the highest-frequency channel.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct live_chan {
    double f;
    int c;
} live_chan;

static int by_descending_freq(const void *a, const void *b)
{
    const live_chan *x = a, *y = b;
    if (x->f != y->f)
        return x->f < y->f ? 1 : -1;
    return x->c - y->c;
}

int ddtk_channels_from_freqs(ddtk_channels *ch, int nchans, const double *freqs,
                             double chan_bw, const uint8_t *kill, double fref)
{
    memset(ch, 0, sizeof *ch);
    ch->nchans = nchans;
    ch->row = ddtk_malloc((size_t)nchans * sizeof *ch->row, "channel map");
    ch->freq = ddtk_malloc((size_t)nchans * sizeof *ch->freq, "channel table");
    live_chan *live = ddtk_malloc((size_t)nchans * sizeof *live, "channel table");
    if (!ch->row || !ch->freq || !live) {
        free(live);
        ddtk_channels_free(ch);
        return DDTK_ESYS;
    }
    ch->fmin = INFINITY;
    ch->fmax = -INFINITY;
    for (int c = 0; c < nchans; c++) {
        double f = freqs[c];
        ch->fmin = fmin(ch->fmin, f);
        ch->fmax = fmax(ch->fmax, f);
        ch->row[c] = -1;
        if (!kill || !kill[c])
            live[ch->nlive++] = (live_chan){ f, c };
    }
    qsort(live, (size_t)ch->nlive, sizeof *live, by_descending_freq);
    for (int r = 0; r < ch->nlive; r++) {
        ch->row[live[r].c] = r;
        ch->freq[r] = live[r].f;
    }
    free(live);
    ch->chan_bw = nchans > 1 ? (ch->fmax - ch->fmin) / (nchans - 1) : fabs(chan_bw);
    ch->fref = fref > 0 ? fref : ch->fmax;
    if (ch->fref < ch->fmax) {
        ddtk_channels_free(ch);
        return ddtk_fail(DDTK_EUSAGE, "reference frequency %.6f MHz is below the highest channel "
                         "(%.6f MHz): delays would be negative", fref, ch->fmax);
    }
    return DDTK_OK;
}

int ddtk_header_freqs(const ddtk_header *h, double **freqs)
{
    *freqs = ddtk_malloc((size_t)h->nchans * sizeof **freqs, "channel frequencies");
    if (!*freqs)
        return DDTK_ESYS;
    for (int c = 0; c < h->nchans; c++)
        (*freqs)[c] = ddtk_chan_freq(h, c);
    return DDTK_OK;
}

int ddtk_channels_init(ddtk_channels *ch, const ddtk_header *h,
                       const uint8_t *kill, double fref)
{
    double *freqs;
    int rc = ddtk_header_freqs(h, &freqs);
    if (!rc)
        rc = ddtk_channels_from_freqs(ch, h->nchans, freqs, h->foff, kill, fref);
    free(freqs);
    return rc;
}

void ddtk_channels_free(ddtk_channels *ch)
{
    free(ch->row);
    free(ch->freq);
    ch->row = NULL;
    ch->freq = NULL;
}

double ddtk_delay_seconds(double dm, double f, double fref, double kdm)
{
    return kdm * dm * (1.0 / (f * f) - 1.0 / (fref * fref));
}

int32_t ddtk_round_delay(double samples, int rounding)
{
    return (int32_t)(rounding == DDTK_ROUND_FLOOR ? floor(samples) : round(samples));
}

/* The delay of one channel in samples; DM x per-unit-DM delay must land in
 * 0..INT32_MAX/2 (NaN fails the test too) so that sums of delays stay in int32. */
static int delay_of(double dm, double per_dm, double freq, int rounding, int32_t *v)
{
    double samples = dm * per_dm;
    *v = 0;
    if (!(samples >= 0 && samples <= INT32_MAX / 2))
        return ddtk_fail(DDTK_EUSAGE, "DM %g gives a delay of %.3g samples at %g MHz, "
                         "outside 0..%d: cannot dedisperse", dm, samples, freq, INT32_MAX / 2);
    *v = ddtk_round_delay(samples, rounding);
    return DDTK_OK;
}

static double per_unit_dm(const ddtk_channels *ch, int r, double tsamp, double kdm)
{
    return ddtk_delay_seconds(1.0, ch->freq[r], ch->fref, kdm) / tsamp;
}

int ddtk_delays_init(ddtk_delays *d, const ddtk_channels *ch, double tsamp,
                     const double *dms, int ndm, double kdm, int rounding)
{
    memset(d, 0, sizeof *d);
    d->ndm = ndm;
    d->nchan = ch->nlive;
    d->tsamp = tsamp;
    d->kdm = kdm;
    d->rounding = rounding;
    d->dm = ddtk_malloc((size_t)ndm * sizeof *d->dm, "DM list");
    d->per_dm = ddtk_malloc((size_t)ch->nlive * sizeof *d->per_dm, "delay table");
    d->delay = ddtk_malloc((size_t)ndm * (size_t)ch->nlive * sizeof *d->delay, "delay table");
    if (!d->dm || !d->per_dm || !d->delay) {
        ddtk_delays_free(d);
        return DDTK_ESYS;
    }
    memcpy(d->dm, dms, (size_t)ndm * sizeof *dms);
    for (int r = 0; r < ch->nlive; r++)
        d->per_dm[r] = per_unit_dm(ch, r, tsamp, kdm);
    for (int i = 0; i < ndm; i++) {
        for (int r = 0; r < ch->nlive; r++) {
            int32_t *v = &d->delay[(size_t)i * ch->nlive + r];
            if (delay_of(dms[i], d->per_dm[r], ch->freq[r], rounding, v)) {
                ddtk_delays_free(d);
                return DDTK_EUSAGE;
            }
            d->maxdelay = *v > d->maxdelay ? *v : d->maxdelay;
        }
    }
    return DDTK_OK;
}

int ddtk_max_delay(const ddtk_channels *ch, double tsamp, double dm, double kdm, int rounding,
                   int32_t *maxdelay)
{
    *maxdelay = 0;
    for (int r = 0; r < ch->nlive; r++) {
        int32_t v;
        if (delay_of(dm, per_unit_dm(ch, r, tsamp, kdm), ch->freq[r], rounding, &v))
            return DDTK_EUSAGE;
        *maxdelay = v > *maxdelay ? v : *maxdelay;
    }
    return DDTK_OK;
}

void ddtk_delays_free(ddtk_delays *d)
{
    free(d->dm);
    free(d->per_dm);
    free(d->delay);
    memset(d, 0, sizeof *d);
}
