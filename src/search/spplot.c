/*
 * spplot.c - the numbers of a candidate plot (src/search/spplot.h): the input's
 * window around the candidate read (seeking in a SIGPROC file; PSRFITS is
 * read again from its start), each channel
 * binned in time, then dedispersed at the bow-tie's DMs by whole-bin shifts
 * (delays rounded at the binned resolution: a plot, not a search), the
 * waterfall's sub-bands at the candidate's DM, its profile and S/N per DM.
 */
#include "spplot.h"
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Put the input at spectrum first (a multiple of 8): a SIGPROC file seeks;
 * PSRFITS is opened again and read up to it. */
static int go_to(ddtk_input *in, int64_t first, uint8_t *raw, int64_t cap)
{
    if (in->fp) {
        off_t at = (off_t)(in->hdr.header_bytes + first * in->bits_per_spectrum / 8);
        in->eof = 0;
        return fseeko(in->fp, at, SEEK_SET) == 0 ? DDTK_OK
               : ddtk_fail(DDTK_ESYS, "%s: cannot seek: %s", in->name, strerror(errno));
    }
    char *name = strdup(in->name);
    if (!name)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    ddtk_input_close(in);
    int rc = ddtk_input_open(in, name);
    free(name);
    for (int64_t done = 0, got; !rc && done < first; done += got) {
        rc = ddtk_input_read(in, raw, first - done < cap ? first - done : cap, &got);
        if (!rc && got == 0)
            break;
    }
    return rc;
}

/* Read spectra [first, first + n) of the file (first a multiple of 8) into
 * channel rows (nchans of n floats, file order); samples past the end are 0. */
static int read_window(ddtk_input *in, int64_t first, int64_t n, float *rows)
{
    int64_t bytes = ddtk_input_bytes(in, n > 8 ? n : 8);
    uint8_t *raw = ddtk_malloc((size_t)bytes, "plot window");
    int *row = ddtk_malloc((size_t)in->hdr.nchans * sizeof *row, "plot window");
    int pol = 0, rc = raw && row ? DDTK_OK : DDTK_ESYS;
    int64_t got = 0;
    for (int c = 0; !rc && c < in->hdr.nchans; c++)
        row[c] = c;
    if (!rc)
        rc = go_to(in, first, raw, n > 8 ? n / 8 * 8 : 8);
    if (!rc)
        rc = ddtk_resolve_pol(&in->hdr, DDTK_POL_DEFAULT, in->name, &pol);
    if (!rc)
        rc = ddtk_input_read(in, raw, n, &got);
    memset(rows, 0, (size_t)in->hdr.nchans * (size_t)n * sizeof *rows);
    if (!rc && got > 0)
        ddtk_unpack(&in->hdr, raw, got, row, pol, rows, (size_t)n);
    free(raw);
    free(row);
    return rc;
}

static int by_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median and robust sigma of n values (NAN-free). */
static void robust(const float *x, int n, double *median, double *sigma)
{
    float *t = malloc((size_t)n * sizeof *t);
    if (!t) {
        *median = 0;
        *sigma = 1;
        return;
    }
    memcpy(t, x, (size_t)n * sizeof *t);
    qsort(t, (size_t)n, sizeof *t, by_float);
    *median = t[n / 2];
    for (int i = 0; i < n; i++)
        t[i] = fabsf(x[i] - (float)*median);
    qsort(t, (size_t)n, sizeof *t, by_float);
    *sigma = 1.4826 * t[n / 2];
    if (!(*sigma > 0))
        *sigma = 1;
    free(t);
}

/* Channel c's binned row: bins of `bin` input samples from column start. */
static void bin_row(const float *row, int64_t start, int bin, int nbins, int64_t len, float *out)
{
    for (int j = 0; j < nbins; j++) {
        double s = 0;
        for (int k = 0; k < bin; k++) {
            int64_t t = start + (int64_t)j * bin + k;
            s += t >= 0 && t < len ? row[t] : 0.0;
        }
        out[j] = (float)s;
    }
}

/* The sum over channels of each channel's binned row shifted by its delay
 * at dm (whole bins): out[nbins]. */
static void dedisperse(const ddtk_spplot *p, const ddtk_header *h, const double *freqs,
                       const float *rows, int64_t len, int64_t shift, double dm, float *out)
{
    float *tmp = malloc((size_t)p->nbins * sizeof *tmp);
    memset(out, 0, (size_t)p->nbins * sizeof *out);
    for (int c = 0; tmp && c < h->nchans; c++) {
        double d = ddtk_delay_seconds(dm, freqs[c], p->fhi, DDTK_KDM_DEFAULT) / p->tsamp;
        bin_row(rows + (size_t)c * (size_t)len, shift + (int64_t)llround(d), p->bin, p->nbins,
                len, tmp);
        for (int j = 0; j < p->nbins; j++)
            out[j] += tmp[j];
    }
    free(tmp);
}

/* Best boxcar of `box` bins in a row, in S/N of the row's robust statistics. */
static float best_snr(const float *x, int n, int box)
{
    double m, sd, best = -INFINITY;
    robust(x, n, &m, &sd);
    for (int j = 0; j + box <= n; j++) {
        double s = 0;
        for (int k = 0; k < box; k++)
            s += x[j + k] - m;
        best = s > best ? s : best;
    }
    return (float)(best / (sd * sqrt((double)box)));
}

static int allocate(ddtk_spplot *p)
{
    size_t nb = (size_t)p->nbins;
    p->waterfall = malloc((size_t)p->nsub * nb * sizeof *p->waterfall);
    p->bowtie = malloc((size_t)p->ndm * nb * sizeof *p->bowtie);
    p->profile = malloc(nb * sizeof *p->profile);
    p->snr = malloc((size_t)p->ndm * sizeof *p->snr);
    p->row_dm = malloc((size_t)p->ndm * sizeof *p->row_dm);
    return p->waterfall && p->bowtie && p->profile && p->snr && p->row_dm
           ? DDTK_OK : ddtk_fail(DDTK_ESYS, "out of memory for a plot");
}

/* A row through the candidate's boxcar (box bins, centred; the ends
 * averaged over what there is), so that the bow-tie shows the matched
 * filter's output, as the search saw it. */
static void smooth(float *x, int n, int box)
{
    float *t = malloc((size_t)n * sizeof *t);
    if (!t || box <= 1) {
        free(t);
        return;
    }
    for (int j = 0; j < n; j++) {
        double s = 0;
        int k0 = j - box / 2, k1 = k0 + box, m = 0;
        for (int k = k0 < 0 ? 0 : k0; k < k1 && k < n; k++, m++)
            s += x[k];
        t[j] = (float)(s / m);
    }
    memcpy(x, t, (size_t)n * sizeof *t);
    free(t);
}

/* The waterfall: channels at the candidate's DM, in sub-bands, through
 * the candidate's boxcar, each normalised by its own median and sigma. */
static void waterfall(ddtk_spplot *p, const ddtk_header *h, const double *freqs,
                      const float *rows, int64_t len, int64_t shift)
{
    float *tmp = malloc((size_t)p->nbins * sizeof *tmp);
    int per = (h->nchans + p->nsub - 1) / p->nsub;
    memset(p->waterfall, 0, (size_t)p->nsub * (size_t)p->nbins * sizeof *p->waterfall);
    for (int c = 0; tmp && c < h->nchans; c++) {
        /* Sub-band 0 is the highest frequency, whatever the band's order. */
        int sub = (h->foff < 0 ? c : h->nchans - 1 - c) / per;
        double d = ddtk_delay_seconds(p->dm, freqs[c], p->fhi, DDTK_KDM_DEFAULT) / p->tsamp;
        bin_row(rows + (size_t)c * (size_t)len, shift + (int64_t)llround(d), p->bin, p->nbins,
                len, tmp);
        for (int j = 0; j < p->nbins; j++)
            p->waterfall[(size_t)sub * p->nbins + j] += tmp[j];
    }
    for (int s = 0; s < p->nsub; s++) {
        double m, sd;
        float *r = p->waterfall + (size_t)s * p->nbins;
        smooth(r, p->nbins, p->box);
        robust(r, p->nbins, &m, &sd);
        for (int j = 0; j < p->nbins; j++)
            r[j] = (float)((r[j] - m) / sd);
    }
    free(tmp);
}

int ddtk_spplot_make(ddtk_input *in, const ddtk_sps_cand *c, ddtk_spplot *p)
{
    const ddtk_header *h = &in->hdr;
    double *freqs = NULL;
    memset(p, 0, sizeof *p);
    if (in->is_stdin || in->nsamples < 0)
        return ddtk_fail(DDTK_EUSAGE, "%s: plots need a file (they seek in it)", in->name);
    int rc = ddtk_header_freqs(h, &freqs);
    if (rc)
        return rc;
    p->tsamp = h->tsamp;
    p->dm = c->dm;
    p->flo = p->fhi = freqs[0];
    for (int i = 0; i < h->nchans; i++) {
        p->flo = freqs[i] < p->flo ? freqs[i] : p->flo;
        p->fhi = freqs[i] > p->fhi ? freqs[i] : p->fhi;
    }
    int64_t w = c->width > 0 ? c->width : 1, half = 8 * w > 64 ? 8 * w : 64;
    p->bin = (int)((2 * half + DDTK_SPPLOT_BINS - 1) / DDTK_SPPLOT_BINS);
    p->nbins = (int)((2 * half + p->bin - 1) / p->bin);
    p->ndm = DDTK_SPPLOT_NDM;
    p->nsub = h->nchans < DDTK_SPPLOT_NSUB ? h->nchans : DDTK_SPPLOT_NSUB;
    p->box = (int)((w + p->bin - 1) / p->bin);
    /* The candidate's sample in the middle of bin nbins / 2. */
    p->first = c->sample - (int64_t)(p->nbins / 2) * p->bin - p->bin / 2;
    /* The outer rows smear the pulse over about half a window. */
    double band = ddtk_delay_seconds(1.0, p->flo, p->fhi, DDTK_KDM_DEFAULT);
    p->dm_step = band > 0 ? (double)half * p->tsamp / band / (p->ndm / 2) : 1.0;
    double dm_hi = p->dm + p->dm_step * (p->ndm / 2);
    int64_t reach = (int64_t)ceil(ddtk_delay_seconds(dm_hi, p->flo, p->fhi, DDTK_KDM_DEFAULT)
                                  / p->tsamp) + 1;
    int64_t start = p->first >= 0 ? p->first / 8 * 8 : 0;
    int64_t len = p->first + (int64_t)p->nbins * p->bin + reach - start;
    float *rows = NULL;
    if (!rc)
        rc = allocate(p);
    if (!rc && !(rows = ddtk_malloc_large((size_t)h->nchans * (size_t)len * sizeof *rows,
                                          "plot window")))
        rc = DDTK_ESYS;
    if (!rc)
        rc = read_window(in, start, len, rows);
    /* Columns of rows count from start; bins from first (which may be < 0). */
    int64_t shift = p->first - start;
    for (int r = 0; !rc && r < p->ndm; r++) {
        p->row_dm[r] = p->dm + (r - p->ndm / 2) * p->dm_step;
        float *out = p->bowtie + (size_t)r * p->nbins;
        if (p->row_dm[r] < 0) {
            for (int j = 0; j < p->nbins; j++)
                out[j] = NAN;
            p->snr[r] = NAN;
            continue;
        }
        dedisperse(p, h, freqs, rows, len, shift, p->row_dm[r], out);
        p->snr[r] = best_snr(out, p->nbins, p->box);
        smooth(out, p->nbins, p->box);
    }
    if (!rc) {
        double m, sd;
        dedisperse(p, h, freqs, rows, len, shift, p->dm, p->profile);
        robust(p->profile, p->nbins, &m, &sd);
        for (int j = 0; j < p->nbins; j++)
            p->profile[j] = (float)((p->profile[j] - m) / sd);
        waterfall(p, h, freqs, rows, len, shift);
    }
    free(rows);
    free(freqs);
    if (rc)
        ddtk_spplot_free(p);
    return rc;
}

void ddtk_spplot_free(ddtk_spplot *p)
{
    free(p->waterfall);
    free(p->bowtie);
    free(p->profile);
    free(p->snr);
    free(p->row_dm);
    memset(p, 0, sizeof *p);
}
