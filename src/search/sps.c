/*
 * sps.c - the single-pulse search (include/sps.h): per series, a running
 * baseline and robust sigma from fixed blocks, boxcars of 1, 2, 3, 4, 6, 8
 * ... samples over the normalised series, giants (one per run above the
 * threshold and width); at the end, friends-of-friends clustering of every
 * series' giants into events.
 *
 * Why fixed blocks: the candidates must not depend on how the series are
 * cut into pieces (a dedispersion gulp, a file's reads), so that a search
 * inside the dedispersion stream and one over the written files agree.
 * Block j of a series covers samples [jB, (j+1)B) of it, B the baseline
 * window (--baseline seconds in the series' samples); the last block takes
 * whatever is left when less than B/2 would follow it, so that no block is
 * too short for its statistics. Each block gives a median and a sigma
 * (1.4826 x MAD); the baseline and sigma at a sample are interpolated
 * linearly between the centres of the previous block and its own (flat
 * from its own centre on, and in the first block): a running median that
 * needs no samples past its block, so a series holds at most 2B samples.
 * The widest boxcar is at most B/16: a pulse that fills a fraction w/B of a
 * block moves its median by about that fraction of its own amplitude, and
 * baseline wander on the scale of the window is not taken for a pulse.
 */
#include "sps_arith.h"
#include "sps_dev.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct giant {
    float snr;
    int dm;
    int64_t width;                /* finest samples */
    int64_t begin, end;           /* finest samples */
} giant;

typedef struct sps_series {
    int f;                        /* finest samples per sample */
    int nw;                       /* boxcars width[0 .. nw-1] samples */
    int64_t width[DDTK_SPS_MAX_BOXCARS];
    int64_t block;                /* B, samples */
    int ended;                    /* last block searched, buffers freed */
    int have_prev;                /* the previous block's median, sigma and centre */
    double prev_median, prev_sigma, prev_centre;
    float *buf;                   /* samples [done, done + have), from the first feed */
    int64_t cap, have, done;
    float *hist;                  /* normalised samples [done - nhist, done) */
    int64_t nhist;
    int *inrun;                   /* per width: in a run above threshold, its best */
    float *best;
    int64_t *best_t;
    giant *g;
    int64_t ng, gcap;
} sps_series;

struct ddtk_sps {
    ddtk_sps_params par;
    int ndm;
    double *dms, tsamp;
    sps_series *s;
};

void ddtk_sps_params_init(ddtk_sps_params *p)
{
    p->snr = DDTK_SPS_SNR_DEFAULT;
    p->max_width = DDTK_SPS_MAX_WIDTH_DEFAULT;
    p->dm_tol = DDTK_SPS_DM_TOL;
    p->width_tol = DDTK_SPS_WIDTH_TOL;
    p->time_tol = DDTK_SPS_TIME_TOL;
    p->baseline = DDTK_SPS_BASELINE_DEFAULT;
    p->gpu_giants = 0;
}

static int log2_exact(int64_t x)
{
    int k = 0;
    while (((int64_t)1 << k) < x)
        k++;
    return ((int64_t)1 << k) == x ? k : -1;
}

/* The baseline window of a series sampled at tsamp: at least 64 samples. */
static int64_t window(const ddtk_sps_params *par, double tsamp)
{
    double b = par->baseline / tsamp;
    return b < 64 ? 64 : b > 1e12 ? (int64_t)1e12 : (int64_t)llround(b);
}

int64_t ddtk_sps_widest(const ddtk_sps_params *par, double tsamp, int f)
{
    int64_t widest = par->max_width / f > 1 ? par->max_width / f : 1;
    while (widest > 1 && widest * DDTK_SPS_BLOCK_WIDTHS > window(par, tsamp * f))
        widest /= 2;
    return widest * f;
}

static int series_init(sps_series *s, int f, const ddtk_sps_params *par, double tsamp)
{
    s->f = f;
    s->block = window(par, tsamp * f);
    int64_t widest = ddtk_sps_widest(par, tsamp, f) / f;
    s->width[s->nw++] = 1;
    for (int64_t w = 2; w <= widest; w *= 2) {
        if (w >= 4)
            s->width[s->nw++] = w / 4 * 3;
        s->width[s->nw++] = w;
    }
    s->cap = 2 * s->block;
    s->hist = ddtk_malloc((size_t)widest * sizeof *s->hist, "search buffer");
    s->inrun = ddtk_calloc((size_t)s->nw, sizeof *s->inrun, "search state");
    s->best = ddtk_calloc((size_t)s->nw, sizeof *s->best, "search state");
    s->best_t = ddtk_calloc((size_t)s->nw, sizeof *s->best_t, "search state");
    return s->hist && s->inrun && s->best && s->best_t ? DDTK_OK : DDTK_ESYS;
}

static void series_free(sps_series *s)
{
    free(s->buf);
    free(s->hist);
    free(s->inrun);
    free(s->best);
    free(s->best_t);
    free(s->g);
}

int ddtk_sps_create(ddtk_sps **out, const ddtk_sps_params *par, int ndm, const double *dms,
                    const int *downsamp, double tsamp)
{
    *out = NULL;
    if (ndm < 1)
        return ddtk_fail(DDTK_EUSAGE, "single-pulse search: no series");
    if (!(par->snr > 0) || !isfinite(par->snr))
        return ddtk_fail(DDTK_EUSAGE, "single-pulse search: S/N threshold %g is not positive",
                         par->snr);
    if (par->max_width < 1 || log2_exact(par->max_width) < 0 || par->max_width > (1 << 24))
        return ddtk_fail(DDTK_EUSAGE, "single-pulse search: maximum width %d is not a power "
                         "of two from 1 to 2^24", par->max_width);
    if (!(tsamp > 0))
        return ddtk_fail(DDTK_EUSAGE, "single-pulse search: sample time %g is not positive",
                         tsamp);
    if (!(par->baseline > 0) || !isfinite(par->baseline))
        return ddtk_fail(DDTK_EUSAGE, "single-pulse search: baseline window %g s is not "
                         "positive", par->baseline);
    for (int i = 0; downsamp && i < ndm; i++)
        if (downsamp[i] < 1 || log2_exact(downsamp[i]) < 0)
            return ddtk_fail(DDTK_EUSAGE, "single-pulse search: downsampling factor %d of DM %g "
                             "is not a power of two", downsamp[i], dms[i]);
    ddtk_sps *s = ddtk_calloc(1, sizeof *s, "search");
    if (!s)
        return DDTK_ESYS;
    s->par = *par;
    s->ndm = ndm;
    s->tsamp = tsamp;
    s->dms = ddtk_malloc((size_t)ndm * sizeof *s->dms, "search");
    s->s = ddtk_calloc((size_t)ndm, sizeof *s->s, "search");
    int rc = s->dms && s->s ? DDTK_OK : DDTK_ESYS;
    for (int i = 0; !rc && i < ndm; i++) {
        s->dms[i] = dms[i];
        rc = series_init(&s->s[i], downsamp ? downsamp[i] : 1, par, tsamp);
    }
    if (rc) {
        ddtk_sps_destroy(s);
        return rc;
    }
    *out = s;
    return DDTK_OK;
}

void ddtk_sps_destroy(ddtk_sps *s)
{
    if (!s)
        return;
    for (int i = 0; s->s && i < s->ndm; i++)
        series_free(&s->s[i]);
    free(s->s);
    free(s->dms);
    free(s);
}

/* ---- one block: statistics, boxcars, runs ---------------------------------------- */

/* The k-th smallest key, searched first between the keys of lo and hi
 * when there is a guess (exact wherever it lies). */
static uint32_t select_near(uint32_t *key, int64_t n, int64_t k, int guess, double lo, double hi)
{
    return guess ? ddtk_select_key_near(key, n, k, ddtk_float_key((float)lo),
                                        ddtk_float_key((float)hi))
                 : ddtk_select_key(key, n, k);
}

/*
 * Median and robust sigma of x[0..n), with scratch of n keys. A block
 * whose MAD is 0 (mostly one value: quantised or padded data) takes the
 * RMS about the median instead; 0 means nothing to search.
 * The order statistics are exact (radix selection on float keys, first
 * tried within ddtk_sps_guess's windows about the previous block's): the
 * same values as any exact selection, Hoare's that the search used before
 * included, but for the sign of a median of zero where the block holds both
 * -0.0 and +0.0 (Hoare's gives either, by position; the keys give -0.0 at
 * the rank of the last -0.0). Nothing downstream sees that sign: the MAD
 * takes |x - m|, and a zero z that it might turn negative only adds to
 * prefix sums that start at +0.0, which a -0.0 term never changes.
 */
static void block_stats(const sps_series *s, const float *x, int64_t n, uint32_t *key,
                        double *median, double *sigma)
{
    const int guess = s->have_prev && s->prev_sigma > 0;
    double lo[2], hi[2];
    ddtk_sps_guess(s->prev_median, s->prev_sigma, n, lo, hi);
    const int64_t k = (n - 1) / 2;
    for (int64_t t = 0; t < n; t++)
        key[t] = ddtk_float_key(x[t]);
    const float m = ddtk_key_float(select_near(key, n, k, guess, lo[0], hi[0]));
    *median = m;
    for (int64_t t = 0; t < n; t++)
        key[t] = ddtk_float_key(fabsf(x[t] - m));
    *sigma = DDTK_SPS_MAD_TO_SIGMA * ddtk_key_float(select_near(key, n, k, guess, lo[1], hi[1]));
    if (*sigma > 0)
        return;
    double ss = 0;
    for (int64_t t = 0; t < n; t++)
        ss += ((double)x[t] - *median) * ((double)x[t] - *median);
    *sigma = sqrt(ss / (double)n);
}

static int add_giant(sps_series *s, int dm, int k, float snr, int64_t t)
{
    if (s->ng == s->gcap) {
        giant *g = ddtk_grow(s->g, &s->gcap, sizeof *g, 64, "the search's giants");
        if (!g)
            return DDTK_ESYS;
        s->g = g;
    }
    int64_t w = s->width[k];
    giant *g = &s->g[s->ng++];
    g->snr = snr;
    g->dm = dm;
    g->width = w * s->f;
    g->begin = (t - w + 1) * s->f;
    g->end = (t + 1) * s->f - 1;
    return DDTK_OK;
}

/* Boxcar k's value at t (series samples) is above the threshold, or not:
 * runs above it give one giant each, at their highest value. */
static int run_step(sps_series *s, int dm, int k, int64_t t, float snr, int above)
{
    if (above) {
        if (!s->inrun[k] || snr > s->best[k]) {
            s->best[k] = snr;
            s->best_t[k] = t;
        }
        s->inrun[k] = 1;
        return DDTK_OK;
    }
    if (!s->inrun[k])
        return DDTK_OK;
    s->inrun[k] = 0;
    return add_giant(s, dm, k, s->best[k], s->best_t[k]);
}

/* ---- the GPU's share (sps_dev.h) ------------------------------------------------------ */

void ddtk_sps_shape_of(const ddtk_sps *sp, int series, ddtk_sps_shape *shape)
{
    const sps_series *s = &sp->s[series];
    memset(shape, 0, sizeof *shape);
    shape->f = s->f;
    shape->nw = s->nw;
    shape->block = s->block;
    shape->widest = s->width[s->nw - 1];
    memcpy(shape->width, s->width, (size_t)s->nw * sizeof *s->width);
    shape->thr = sp->par.snr;
    shape->gpu_giants = sp->par.gpu_giants;
}

int ddtk_sps_add_giant(ddtk_sps *sp, int series, int k, float snr, int64_t t)
{
    return add_giant(&sp->s[series], series, k, snr, t);
}

/* The block's normalised samples z[0..n): the baseline and sigma
 * interpolated between the previous block's centre and this one's up to
 * the first sample at or past this centre (tc), flat from there on; two
 * loops with no test per sample, which vectorise, doing the operations the
 * one loop did per sample (and sps_gpu.cu does), in the same order. */
static void normalise(const sps_series *s, int64_t n, double median, double sigma,
                      double centre, float *z)
{
    const float *x = s->buf;
    int64_t tc = 0;
    if (s->have_prev) {
        tc = n / 2;
        while (tc > 0 && (double)(s->done + tc - 1) >= centre)
            tc--;
        while (tc < n && (double)(s->done + tc) < centre)
            tc++;
    }
    const double pm = s->prev_median, ps = s->prev_sigma, pc = s->prev_centre;
    for (int64_t t = 0; t < tc; t++) {
        double at = (double)(s->done + t);
        double f = (at - pc) / (centre - pc);
        double m = ddtk_sps_lerp(pm, median, f);
        double sd = ddtk_sps_lerp(ps, sigma, f);
        double q = ((double)x[t] - m) / (sd > 0 ? sd : 1.0);
        z[t] = sd > 0 ? (float)q : 0.0f;
    }
    if (sigma > 0)
        for (int64_t t = tc; t < n; t++)
            z[t] = (float)(((double)x[t] - median) / sigma);
    else
        memset(z + tc, 0, (size_t)(n - tc) * sizeof *z);
}

/* Boxcar k's exact S/N over the block, t0 .. n, and its runs. */
static int boxcar_runs(sps_series *s, int dm, int k, int64_t t0, int64_t n, const double *hi,
                       double thr)
{
    const int64_t w = s->width[k];
    const double norm = 1.0 / sqrt((double)w);
    int rc = DDTK_OK;
    for (int64_t t = t0; !rc && t < n; t++) {
        float snr = (float)((hi[t] - hi[t - w]) * norm);
        if (snr >= thr || s->inrun[k])
            rc = run_step(s, dm, k, s->done + t, snr, snr >= thr);
    }
    return rc;
}

/* Whether some boxcar of width w ending at f[from .. to) has a sum of at
 * least near, in float: a comparison only, 16 to a vector. */
static int may_cross(const float *f, int64_t w, float near, int64_t from, int64_t to)
{
    int any = 0;
    for (int64_t t = from; t < to; t++)
        any |= f[t] - f[t - w] >= near;
    return any;
}

/*
 * Which boxcars may reach thr in the block (cross[k]), tested on the prefix
 * sums P (hi[-nhist - 1 .. n)) rounded to float (f, the same span), twice
 * the samples per vector of the doubles, against ddtk_sps_near's threshold
 * (sps_arith.h: it passes every sum that may cross). Where some sum is not
 * finite every boxcar takes the exact path.
 */
static void crossings(const sps_series *s, int64_t n, const double *hi, float *f, double thr,
                      int *cross)
{
    const int64_t len = s->nhist + 1 + n;
    const double *P = hi - s->nhist - 1;
    uint32_t most = 0;
    for (int64_t i = 0; i < len; i++) {
        f[i] = (float)P[i];
        uint32_t u;
        memcpy(&u, &f[i], sizeof u);
        u &= 0x7fffffffu;
        most = u > most ? u : most;
    }
    float m;
    memcpy(&m, &most, sizeof m);
    const int finite = most < 0x7f800000u;
    f += s->nhist + 1;
    for (int k = 0; k < s->nw; k++) {
        const int64_t w = s->width[k];
        cross[k] = !finite || may_cross(f, w, ddtk_sps_near(thr, w, m),
                                        ddtk_sps_first_end(w, s->done), n);
    }
}

/* x[0 .. n) into the sums P from sample *i on: within its chunk in order
 * from 0 (*acc), then added to the sum of the chunks before (*base); a loop
 * per run of samples up to a chunk's end, with no test per sample. */
static void chunk_sums(const float *x, int64_t n, int64_t *i, double *base, double *acc,
                       double *P)
{
    while (n > 0) {
        const int64_t into = *i % DDTK_SPS_CHUNK;
        const int64_t run = n < DDTK_SPS_CHUNK - into ? n : DDTK_SPS_CHUNK - into;
        if (into == 0) {
            *base = *base + *acc;
            *acc = 0;
        }
        double a = *acc;
        for (int64_t j = 0; j < run; j++) {
            a = a + x[j];
            P[*i + 1 + j] = *base + a;
        }
        *acc = a;
        x += run;
        n -= run;
        *i += run;
    }
}

/* P[i], i = 0 .. nhist + n: the sum of the first i samples of hist then z,
 * summed DDTK_SPS_CHUNK at a time (sps_dev.h): one sum in order over the whole
 * would leave the GPU one thread per series, the search's critical path. */
static void prefix_sums(const float *hist, int64_t nhist, const float *z, int64_t n, double *P)
{
    double base = 0, acc = 0;
    int64_t i = 0;
    P[0] = 0;
    chunk_sums(hist, nhist, &i, &base, &acc, P);
    chunk_sums(z, n, &i, &base, &acc, P);
}

/*
 * Search the first n samples of the buffer (series samples done ..
 * done + n): normalise them, prefix-sum them behind the history, and run
 * every boxcar ending in them. work: 2 * (n + widest) + 2 doubles of scratch
 * (nhist + n + 1 prefix sums, then n floats of normalised samples and
 * nhist + n + 1 of the sums in float).
 */
static int search_block(sps_series *s, int dm, int64_t n, double thr, double *work)
{
    double median, sigma;
    float *z = (float *)(work + s->nhist + n + 1);
    block_stats(s, s->buf, n, (uint32_t *)z, &median, &sigma);
    double centre = (double)s->done + 0.5 * (double)(n - 1);
    normalise(s, n, median, sigma, centre, z);
    double *prefix = work;        /* prefix[i]: sum of the first i of hist, block */
    prefix_sums(s->hist, s->nhist, z, n, prefix);
    int cross[DDTK_SPS_MAX_BOXCARS];
    crossings(s, n, prefix + s->nhist + 1, z + n, thr, cross);
    s->have_prev = 1;
    s->prev_median = median;
    s->prev_sigma = sigma;
    s->prev_centre = centre;
    int rc = DDTK_OK;
    for (int k = 0; !rc && k < s->nw; k++)
        if (cross[k] || s->inrun[k]) {
            const int64_t w = s->width[k], t0 = ddtk_sps_first_end(w, s->done);
            rc = boxcar_runs(s, dm, k, t0, n, prefix + s->nhist + 1, thr);
        }
    /* The history: the last widest - 1 normalised samples. */
    int64_t widest = s->width[s->nw - 1], keep = widest - 1;
    int64_t total = s->nhist + n;
    if (keep > total)
        keep = total;
    if (keep > 0) {
        if (keep <= n)
            memcpy(s->hist, z + n - keep, (size_t)keep * sizeof *z);
        else {
            int64_t from_hist = keep - n;
            memmove(s->hist, s->hist + s->nhist - from_hist, (size_t)from_hist * sizeof *z);
            memcpy(s->hist + from_hist, z, (size_t)n * sizeof *z);
        }
    }
    s->nhist = keep;
    return rc;
}

static int search_front(sps_series *s, int dm, int64_t n, double thr)
{
    int64_t widest = s->width[s->nw - 1];
    double *work = malloc((size_t)(2 * (n + widest) + 2) * sizeof *work);
    if (!work)
        return ddtk_fail(DDTK_ESYS, "out of memory for the search");
    int rc = search_block(s, dm, n, thr, work);
    free(work);
    s->have -= n;
    s->done += n;
    memmove(s->buf, s->buf + n, (size_t)s->have * sizeof *s->buf);
    return rc;
}

int ddtk_sps_feed(ddtk_sps *sp, int dm, const float *x, int64_t n)
{
    sps_series *s = &sp->s[dm];
    const int64_t B = s->block;
    if (s->ended)
        return ddtk_fail(DDTK_EUSAGE, "single-pulse search: samples for DM %g after its end",
                         sp->dms[dm]);
    /* The buffer is taken when the samples come: a searcher of many series
     * that come one after another (files) holds one per series in flight. */
    if (!s->buf && n > 0
        && !(s->buf = ddtk_malloc((size_t)s->cap * sizeof *s->buf, "search buffer")))
        return DDTK_ESYS;
    while (n > 0) {
        int64_t take = s->cap - s->have < n ? s->cap - s->have : n;
        memcpy(s->buf + s->have, x, (size_t)take * sizeof *x);
        s->have += take;
        x += take;
        n -= take;
        /* A block is searched once B/2 more samples show it is not the last. */
        while (s->have >= B + B / 2) {
            int rc = search_front(s, dm, B, sp->par.snr);
            if (rc)
                return rc;
        }
    }
    return DDTK_OK;
}

/* ---- the end: last blocks, clustering ------------------------------------------------ */

int ddtk_sps_end(ddtk_sps *sp, int dm)
{
    sps_series *s = &sp->s[dm];
    if (s->ended)
        return DDTK_OK;
    int rc = s->have > 0 ? search_front(s, dm, s->have, sp->par.snr) : DDTK_OK;
    for (int k = 0; !rc && k < s->nw; k++)
        rc = run_step(s, dm, k, 0, 0, 0);
    s->ended = 1;
    free(s->buf);
    s->buf = NULL;
    s->have = 0;
    return rc;
}

int64_t ddtk_sps_giants(const ddtk_sps *sp)
{
    int64_t n = 0;
    for (int i = 0; i < sp->ndm; i++)
        n += sp->s[i].ng;
    return n;
}

static int by_begin(const void *a, const void *b)
{
    const giant *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->dm != y->dm)
        return x->dm < y->dm ? -1 : 1;
    return (x->width > y->width) - (x->width < y->width);
}

static int64_t root(int64_t *parent, int64_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

static int friends(const ddtk_sps_params *par, const giant *a, const giant *b)
{
    int64_t wider = a->width > b->width ? a->width : b->width;
    int64_t narrower = a->width < b->width ? a->width : b->width;
    if (abs(a->dm - b->dm) > par->dm_tol || log2((double)wider / narrower) > par->width_tol)
        return 0;
    int64_t lo_end = a->end < b->end ? a->end : b->end;
    int64_t hi_begin = a->begin > b->begin ? a->begin : b->begin;
    return (double)(hi_begin - lo_end - 1) <= par->time_tol * (double)wider;
}

/* The better of two giants as an event's head: higher S/N, then lower DM
 * index, earlier, narrower (a total order, so the choice is unique). */
static int better(const giant *a, const giant *b)
{
    if (a->snr != b->snr)
        return a->snr > b->snr;
    if (a->dm != b->dm)
        return a->dm < b->dm;
    if (a->begin != b->begin)
        return a->begin < b->begin;
    return a->width < b->width;
}

/* Friends-of-friends over giants sorted by begin: a giant can only be a
 * friend of one that began at most (1 + time_tol) widest boxcars earlier and
 * lies within dm_tol DM indices, so each giant looks back through the lists
 * of its neighbouring DMs only (bydm[d]: the giants of DM d so far, in
 * order of begin), not through every DM's giants in that time: a bright
 * burst gives thousands of giants in one reach (2 s of a 1375-DM search was
 * spent here). The union keeps each set's smallest index as its root, so
 * the sets, and the events made of them, do not depend on the order the
 * pairs are met in. */
static int link_all(const ddtk_sps *sp, const giant *g, int64_t n, int64_t *parent)
{
    const ddtk_sps_params *par = &sp->par;
    const double reach = (1.0 + par->time_tol) * (double)par->max_width;
    int64_t *count = ddtk_calloc((size_t)sp->ndm + 1, sizeof *count, "search giants");
    int64_t *list = ddtk_malloc((size_t)(n ? n : 1) * sizeof *list, "search giants");
    int64_t *fill = ddtk_malloc(((size_t)sp->ndm + 1) * sizeof *fill, "search giants");
    if (!count || !list || !fill) {
        free(count);
        free(list);
        free(fill);
        return DDTK_ESYS;
    }
    for (int64_t i = 0; i < n; i++)     /* count[d] .. count[d + 1]: DM d's slice of list */
        count[g[i].dm + 1]++;
    for (int d = 0; d < sp->ndm; d++)
        count[d + 1] += count[d];
    memcpy(fill, count, ((size_t)sp->ndm + 1) * sizeof *fill);
    for (int64_t i = 0; i < n; i++) {
        parent[i] = i;
        int64_t lo = (int64_t)g[i].dm - par->dm_tol, hi = (int64_t)g[i].dm + par->dm_tol;
        for (int64_t d = lo < 0 ? 0 : lo; d <= hi && d < sp->ndm; d++)
            for (int64_t at = fill[d] - 1; at >= count[d]; at--) {
                int64_t j = list[at];
                if ((double)(g[i].begin - g[j].begin) > reach)
                    break;
                if (friends(par, &g[i], &g[j])) {
                    int64_t a = root(parent, i), b = root(parent, j);
                    if (a != b)
                        parent[a > b ? a : b] = a < b ? a : b;
                }
            }
        list[fill[g[i].dm]++] = i;
    }
    free(count);
    free(list);
    free(fill);
    return DDTK_OK;
}

static int by_sample(const void *a, const void *b)
{
    const ddtk_sps_cand *x = a, *y = b;
    if (x->sample != y->sample)
        return x->sample < y->sample ? -1 : 1;
    return (x->dm_index > y->dm_index) - (x->dm_index < y->dm_index);
}

/* One candidate per connected set: head[r] is set r's event, best[e] the
 * index of event e's best giant. */
static void events(const ddtk_sps *sp, const giant *g, int64_t n, int64_t *parent,
                   int64_t *head, int64_t *best, ddtk_sps_cand *c, int64_t *nc)
{
    *nc = 0;
    for (int64_t i = 0; i < n; i++)
        head[i] = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = root(parent, i);
        if (head[r] < 0) {
            head[r] = (*nc)++;
            best[head[r]] = i;
            c[head[r]].members = 0;
            c[head[r]].begin = g[i].begin;
            c[head[r]].end = g[i].end;
        }
        int64_t e = head[r];
        c[e].members++;
        c[e].begin = g[i].begin < c[e].begin ? g[i].begin : c[e].begin;
        c[e].end = g[i].end > c[e].end ? g[i].end : c[e].end;
        if (better(&g[i], &g[best[e]]))
            best[e] = i;
    }
    for (int64_t e = 0; e < *nc; e++) {
        const giant *h = &g[best[e]];
        c[e].snr = h->snr;
        c[e].dm_index = h->dm;
        c[e].dm = sp->dms[h->dm];
        c[e].width = h->width;
        c[e].sample = h->begin + h->width / 2;
        c[e].time = (double)c[e].sample * sp->tsamp;
    }
}

int ddtk_sps_finish(ddtk_sps *sp, ddtk_sps_cand **cands, int64_t *ncands)
{
    int rc = DDTK_OK;
    *cands = NULL;
    *ncands = 0;
    for (int i = 0; !rc && i < sp->ndm; i++)
        rc = ddtk_sps_end(sp, i);
    if (rc)
        return rc;
    int64_t n = ddtk_sps_giants(sp), at = 0;
    giant *g = ddtk_malloc((size_t)(n ? n : 1) * sizeof *g, "search giants");
    int64_t *parent = ddtk_malloc((size_t)(n ? n : 1) * sizeof *parent, "search giants");
    int64_t *head = ddtk_malloc((size_t)(n ? n : 1) * sizeof *head, "search giants");
    int64_t *best = ddtk_malloc((size_t)(n ? n : 1) * sizeof *best, "search giants");
    ddtk_sps_cand *c = ddtk_calloc((size_t)(n ? n : 1), sizeof *c, "search candidates");
    if (!g || !parent || !head || !best || !c)
        rc = DDTK_ESYS;
    for (int i = 0; !rc && i < sp->ndm; i++) {
        if (sp->s[i].ng)
            memcpy(g + at, sp->s[i].g, (size_t)sp->s[i].ng * sizeof *g);
        at += sp->s[i].ng;
    }
    if (!rc) {
        qsort(g, (size_t)n, sizeof *g, by_begin);
        rc = link_all(sp, g, n, parent);
    }
    if (!rc) {
        events(sp, g, n, parent, head, best, c, ncands);
        qsort(c, (size_t)*ncands, sizeof *c, by_sample);
        *cands = c;
        c = NULL;
    }
    free(g);
    free(parent);
    free(head);
    free(best);
    free(c);
    return rc;
}

/* ---- candidate files ---------------------------------------------------------------- */

int ddtk_sps_write_heimdall(FILE *fp, const ddtk_sps_cand *c, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        fprintf(fp, "%.4f\t%lld\t%.6f\t%.6g\t%d\t%.3f\t%d\t%lld\t%lld\n", c[i].snr,
                (long long)c[i].sample, c[i].time, log2((double)c[i].width), c[i].dm_index, c[i].dm,
                c[i].members, (long long)c[i].begin, (long long)c[i].end);
    return ferror(fp) ? ddtk_fail(DDTK_ESYS, "writing candidates failed") : DDTK_OK;
}

int ddtk_sps_write_presto(FILE *fp, const ddtk_sps_cand *c, int64_t n, int dm, int factor)
{
    fprintf(fp, "# DM      Sigma      Time (s)     Sample    Downfact\n");
    for (int64_t i = 0; i < n; i++) {
        if (c[i].dm_index != dm)
            continue;
        int64_t w = c[i].width / factor;
        fprintf(fp, "%7.2f %7.2f %13.6f %10lld     %3lld\n", c[i].dm, c[i].snr, c[i].time,
                (long long)(c[i].sample / factor), (long long)(w > 1 ? w : 1));
    }
    return ferror(fp) ? ddtk_fail(DDTK_ESYS, "writing candidates failed") : DDTK_OK;
}

/* The boxcar width a .cand's log2 width stands for: the nearest of the
 * widths searched (2^k and 3 x 2^(k-1)), whatever the decimals printed. */
static int64_t width_of(double log2w)
{
    int k = (int)floor(log2w);
    int64_t best = (int64_t)1 << k;
    const int64_t other[2] = { k >= 1 ? 3 * ((int64_t)1 << (k - 1)) : 1, (int64_t)1 << (k + 1) };
    for (int i = 0; i < 2; i++)
        if (fabs(log2((double)other[i]) - log2w) < fabs(log2((double)best) - log2w))
            best = other[i];
    return best;
}

static int parse_line(const char *line, ddtk_sps_cand *c)
{
    long long sample, begin, end;
    double log2w;
    int used = 0;
    if (sscanf(line, "%lf %lld %lf %lf %d %lf %d %lld %lld %n", &c->snr, &sample, &c->time,
               &log2w, &c->dm_index, &c->dm, &c->members, &begin, &end, &used) != 9
        || line[used] != '\0' || !(log2w >= 0 && log2w < 62))
        return 0;
    c->sample = sample;
    c->begin = begin;
    c->end = end;
    c->width = width_of(log2w);
    return c->dm_index >= 0 && isfinite(c->snr) && isfinite(c->dm) && isfinite(c->time);
}

int ddtk_sps_read_heimdall(FILE *fp, const char *name, ddtk_sps_cand **cands, int64_t *n)
{
    char line[512];
    int64_t cap = 0, lineno = 0;
    *cands = NULL;
    *n = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            ddtk_sps_cand *c = realloc(*cands, (size_t)cap * sizeof *c);
            if (!c) {
                free(*cands);
                *cands = NULL;
                return ddtk_fail(DDTK_ESYS, "%s: out of memory", name);
            }
            *cands = c;
        }
        if (!parse_line(line, &(*cands)[*n])) {
            free(*cands);
            *cands = NULL;
            *n = 0;
            return ddtk_fail(DDTK_EDATA, "%s: line %lld is not a Heimdall candidate (S/N sample "
                             "time log2width dm_index DM members begin end)", name,
                             (long long)lineno);
        }
        (*n)++;
    }
    if (ferror(fp)) {
        free(*cands);
        *cands = NULL;
        return ddtk_fail(DDTK_ESYS, "%s: read error", name);
    }
    return DDTK_OK;
}
