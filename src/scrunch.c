/*
 * scrunch.c - time scrunching for the direct driver (Barsdell 2.1).
 *
 * DMs are grouped by their factor f = 2^k. Each gulp of unpacked rows is
 * halved k times by adding adjacent sample pairs (a cascade: level k is made
 * from level k-1), and each group is dedispersed at its resolution with its
 * own delay table computed for tsamp * f. A gulp starts at a multiple of the
 * step, and the step is a multiple of every f, so level k sees exactly the
 * samples a file tscrunch'ed by f would give; its output length obeys SPEC
 * section 1 at that resolution: floor(N_in / f) - its largest delay.
 *
 * The CPU driver runs the whole cascade here (ddtk_scrunch_gulp); the GPU
 * driver (cuda/pipeline.cu) takes the grouping, the per-level delay tables,
 * the output counts and the writing from here and halves on the device.
 */
#include "scrunch.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS DDTK_SCRUNCH_MAX_LEVELS
#define ROW_ALIGN 16

typedef struct level {
    int ndm;
    int *index;                 /* level DM -> DM of the run */
    ddtk_delays dl;
    float *rows;                /* halved rows (level 0 uses the driver's buffer) */
    size_t stride;
    float *out;
    size_t ostride;
} level;

struct ddtk_scrunch {
    int nlevels, nchan, pad;
    int64_t step;
    level lv[MAX_LEVELS];
    double *sums;               /* per DM of the run, for --pad */
    int64_t *count;
};

static int log2_factor(int f)
{
    int k = 0;
    while ((1 << k) < f)
        k++;
    return (1 << k) == f && k < MAX_LEVELS ? k : -1;
}

static int build_level(ddtk_scrunch *s, int k, const ddtk_channels *ch, double tsamp,
                       const double *dms, const int *ds, int ndm, const ddtk_options *opt)
{
    level *l = &s->lv[k];
    double *sel = ddtk_malloc((size_t)ndm * sizeof *sel, "scrunch DMs");
    l->index = ddtk_malloc((size_t)ndm * sizeof *l->index, "scrunch DMs");
    int rc = sel && l->index ? DDTK_OK : DDTK_ESYS;
    for (int i = 0; !rc && i < ndm; i++)
        if (ds[i] == 1 << k) {
            sel[l->ndm] = dms[i];
            l->index[l->ndm++] = i;
        }
    if (!rc && l->ndm)
        rc = ddtk_delays_init(&l->dl, ch, tsamp * (1 << k), sel, l->ndm, opt->kdm, opt->rounding);
    free(sel);
    return rc;
}

int ddtk_scrunch_create(ddtk_scrunch **sp, const ddtk_channels *ch, double tsamp,
                        const double *dms, const int *ds, int ndm, const ddtk_options *opt)
{
    int top = 0, rc = DDTK_OK;
    *sp = NULL;
    for (int i = 0; i < ndm; i++) {
        int k = log2_factor(ds[i]);
        if (k < 0)
            return ddtk_fail(DDTK_EUSAGE, "scrunch factor %d at DM %g is not a power of two "
                             "1..%d", ds[i], dms[i], 1 << (MAX_LEVELS - 1));
        top = k > top ? k : top;
    }
    if (top == 0)
        return DDTK_OK;
    ddtk_scrunch *s = ddtk_calloc(1, sizeof *s, "scrunch plan");
    if (!s)
        return DDTK_ESYS;
    s->nlevels = top + 1;
    s->nchan = ch->nlive;
    s->pad = opt->pad;
    s->sums = ddtk_calloc((size_t)ndm, sizeof *s->sums, "output sums");
    s->count = ddtk_calloc((size_t)ndm, sizeof *s->count, "output counts");
    if (!s->sums || !s->count)
        rc = DDTK_ESYS;
    for (int k = 0; !rc && k < s->nlevels; k++)
        rc = build_level(s, k, ch, tsamp, dms, ds, ndm, opt);
    if (rc) {
        ddtk_scrunch_destroy(s);
        return rc;
    }
    *sp = s;
    return DDTK_OK;
}

int64_t ddtk_scrunch_keep(const ddtk_scrunch *s)
{
    int64_t keep = 0;
    for (int k = 0; k < s->nlevels; k++)
        if (s->lv[k].ndm && ((int64_t)s->lv[k].dl.maxdelay << k) > keep)
            keep = (int64_t)s->lv[k].dl.maxdelay << k;
    return keep;
}

int ddtk_scrunch_max_factor(const ddtk_scrunch *s)
{
    return 1 << (s->nlevels - 1);
}

int ddtk_scrunch_alloc(ddtk_scrunch *s, int64_t keep, int64_t step)
{
    s->step = step;
    for (int k = 0; k < s->nlevels; k++) {
        level *l = &s->lv[k];
        int64_t n = ((keep + step) >> k) + 1;
        l->stride = (size_t)((n + ROW_ALIGN - 1) / ROW_ALIGN * ROW_ALIGN);
        if (k > 0 && !(l->rows = aligned_alloc(64, (size_t)s->nchan * l->stride * sizeof(float))))
            return ddtk_fail(DDTK_ESYS, "out of memory for the scrunched rows");
        l->ostride = (size_t)n;
        if (l->ndm && !(l->out = ddtk_malloc((size_t)l->ndm * l->ostride * sizeof(float),
                                             "scrunched output")))
            return DDTK_ESYS;
    }
    return DDTK_OK;
}

/* dst[t] = src[2t] + src[2t+1] for every row. */
static void halve(const float *src, size_t sstride, int64_t n, float *dst, size_t dstride, int nchan)
{
#pragma omp parallel for schedule(static)
    for (int r = 0; r < nchan; r++) {
        const float *a = src + (size_t)r * sstride;
        float *d = dst + (size_t)r * dstride;
        for (int64_t t = 0; t < n / 2; t++)
            d[t] = a[2 * t] + a[2 * t + 1];
    }
}

int ddtk_scrunch_levels(const ddtk_scrunch *s)
{
    return s->nlevels;
}

const ddtk_delays *ddtk_scrunch_level(const ddtk_scrunch *s, int k)
{
    return s->lv[k].ndm ? &s->lv[k].dl : NULL;
}

int64_t ddtk_scrunch_nout(const ddtk_scrunch *s, int k, int64_t step, int64_t fill, int last)
{
    return last ? (fill >> k) - s->lv[k].dl.maxdelay : step >> k;
}

int ddtk_scrunch_write(ddtk_scrunch *s, int k, const float *x, size_t pitch, int64_t n,
                       ddtk_outset *out)
{
    level *l = &s->lv[k];
    for (int d = 0; d < l->ndm; d++) {
        const float *series = x + (size_t)d * pitch;
        int i = l->index[d];
        if (s->pad)
            for (int64_t t = 0; t < n; t++)
                s->sums[i] += series[t];
        s->count[i] += n;
        int rc = ddtk_outset_write(out, i, series, n);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

double ddtk_scrunch_adds(const ddtk_scrunch *s)
{
    double n = 0;
    for (int k = 0; k < s->nlevels; k++)
        for (int d = 0; d < s->lv[k].ndm; d++)
            n += (double)s->count[s->lv[k].index[d]];
    return n * s->nchan;
}

int ddtk_scrunch_gulp(ddtk_scrunch *s, const float *buf, size_t stride, int64_t fill,
                      int last, ddtk_kernel_fn kernel, ddtk_outset *out, int64_t *nout)
{
    const float *src = buf;
    size_t sstride = stride;
    int64_t have = fill;
    *nout = -1;
    for (int k = 0; k < s->nlevels; k++) {
        level *l = &s->lv[k];
        if (k > 0) {
            halve(src, sstride, have, l->rows, l->stride, s->nchan);
            have /= 2;
            src = l->rows;
            sstride = l->stride;
        }
        if (!l->ndm)
            continue;
        int64_t n = ddtk_scrunch_nout(s, k, s->step, fill, last);
        if (n > 0) {
            kernel(src, sstride, s->nchan, n, l->dl.delay, l->ndm, l->out, l->ostride);
            int rc = ddtk_scrunch_write(s, k, l->out, l->ostride, n, out);
            if (rc)
                return rc;
        }
        if (*nout < 0)
            *nout = n > 0 ? n : 0;
    }
    return DDTK_OK;
}

int ddtk_scrunch_pad(ddtk_scrunch *s, ddtk_outset *out)
{
    int rc = DDTK_OK;
    for (int k = 0; !rc && k < s->nlevels; k++) {
        level *l = &s->lv[k];
        for (int d = 0; !rc && d < l->ndm; d++) {
            int i = l->index[d];
            float mean = s->count[i] > 0 ? (float)(s->sums[i] / (double)s->count[i]) : 0.0f;
            rc = ddtk_outset_pad(out, i, mean, l->dl.maxdelay);
        }
    }
    return rc;
}

void ddtk_scrunch_destroy(ddtk_scrunch *s)
{
    if (!s)
        return;
    for (int k = 0; k < MAX_LEVELS; k++) {
        free(s->lv[k].index);
        free(s->lv[k].rows);
        free(s->lv[k].out);
        if (s->lv[k].ndm)
            ddtk_delays_free(&s->lv[k].dl);
    }
    free(s->sums);
    free(s->count);
    free(s);
}
