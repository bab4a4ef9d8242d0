/*
 * fdas_cands.c - from plane hits to the candidate list: fundamental r and z,
 * sigma after trials, clustering within +-15 bins, removal of harmonically
 * related candidates and of those whose power a stronger candidate's
 * harmonic explains where it crosses their template, in sigma order; and
 * what the candidates are refined and reported with, the whitened spectrum
 * on the host and its amplitude at any (r, z). Called by the driver
 * (fdas.c), never calling it.
 */
#include "fdas_cands.h"
#include "internal.h"
#include "fdas_math.h"
#include "fdas_resp.h"

#include <complex.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CLUSTER_BINS 15.0        /* PRESTO's ACCEL_CLOSEST_R */
#define HARM_MAX 16              /* ratios a/b with a, b <= 16 */
#define HARM_TOL_BINS 1.5        /* |r_j - r_i a/b| for a harmonic match */

static int by_sigma(const void *a, const void *b)
{
    const ddtk_fdas_cand *x = a, *y = b;
    if (x->sigma != y->sigma)
        return x->sigma < y->sigma ? 1 : -1;
    return (x->r > y->r) - (x->r < y->r);
}

static ddtk_fdas_cand make_cand(const ddtk_fdas_plan *p, const ddtk_fdas_hit *h)
{
    ddtk_fdas_cand c;
    memset(&c, 0, sizeof c);
    int nh = 1 << h->stage;
    c.numharm = nh;
    c.power = h->power;
    c.r = h->p / 2.0 / nh;
    c.z = (-p->zmax + 2.0 * h->zi) / nh;
    c.sigma = fmax(0.0, ddtk_fdas_sigma(h->power, nh, p->numindep[h->stage]));
    c.freq = c.r / p->T;
    c.fdot = c.z / (p->T * p->T);
    c.accel = c.fdot * DDTK_SPEED_OF_LIGHT / c.freq;
    return c;
}

/* Hits by stage, then power (descending), then position: within a stage sigma
 * grows with power, so this is each stage's sigma order. The GPU hands its
 * hits over in this order already (sorted on the device). */
static int by_stage_power(const void *a, const void *b)
{
    const ddtk_fdas_hit *x = a, *y = b;
    if (x->stage != y->stage)
        return x->stage - y->stage;
    if (x->power != y->power)
        return x->power < y->power ? 1 : -1;
    return (x->p > y->p) - (x->p < y->p);
}

static double hit_r(const ddtk_fdas_hit *h)
{
    return h->p / 2.0 / (1 << h->stage);
}

/*
 * The kept candidates' r by cells of CELL_BINS: kept ones lie more than
 * CLUSTER_BINS apart, so a cell holds at most two, and the kept r within
 * CLUSTER_BINS of r lie in the two or three cells that [r - 15, r + 15]
 * touches: a few byte loads a hit instead of a binary search.
 */
#define CELL_BINS 16.0
typedef struct kept_cells {
    unsigned char *n;             /* kept r in each cell (0-2) */
    double (*r)[2];
    int64_t ncell;
} kept_cells;

static int64_t cell_of(const kept_cells *k, double r)
{
    int64_t c = (int64_t)floor(r / CELL_BINS);
    return c < 0 ? 0 : c >= k->ncell ? k->ncell - 1 : c;
}

static int near_kept(const kept_cells *k, double r)
{
    double lo = r - CLUSTER_BINS, hi = r + CLUSTER_BINS;
    for (int64_t c = cell_of(k, lo); c <= cell_of(k, hi); c++)
        for (int i = 0; i < k->n[c]; i++)
            if (k->r[c][i] >= lo && k->r[c][i] <= hi)
                return 1;
    return 0;
}

static void keep_r(kept_cells *k, double r)
{
    int64_t c = cell_of(k, r);
    k->r[c][k->n[c]++] = r;
}

/*
 * Greedy clustering in sigma order: a candidate is kept only if no kept one
 * lies within CLUSTER_BINS. The stages' power-sorted hit lists are merged by
 * sigma; a hit already near a kept candidate is passed over without its
 * sigma (it could never be kept, and dropped hits decide nothing), so sigma
 * is computed for about nstages hits per kept candidate instead of for every
 * hit. The kept list equals that of sorting all hits by sigma.
 */
static int cluster(const ddtk_fdas_plan *p, ddtk_fdas_hit *h, int64_t n, ddtk_fdas_cand *kept,
                   int *nkept)
{
    kept_cells k = { NULL, NULL, p->plane_len / (int64_t)(2 * CELL_BINS) + 2 };
    k.n = calloc((size_t)k.ncell, 1);
    k.r = malloc(sizeof *k.r * (size_t)k.ncell);
    if (!k.n || !k.r) {
        free(k.n);
        free(k.r);
        return ddtk_fail(DDTK_ESYS, "out of memory for candidates");
    }
    if (!p->hits.sorted)
        qsort(h, (size_t)n, sizeof *h, by_stage_power);
    int64_t head[DDTK_FDAS_MAXSTAGES], end[DDTK_FDAS_MAXSTAGES] = { 0 };
    for (int64_t i = 0; i < n; i++)
        end[h[i].stage]++;
    for (int s = 0; s < p->nstages; s++) {
        head[s] = s ? end[s - 1] : 0;
        end[s] += head[s];
    }
    ddtk_fdas_cand c[DDTK_FDAS_MAXSTAGES];
    int have[DDTK_FDAS_MAXSTAGES] = { 0 }, m = 0;
    for (;;) {
        int best = -1;
        for (int s = 0; s < p->nstages; s++) {
            while (head[s] < end[s] && near_kept(&k, hit_r(&h[head[s]]))) {
                head[s]++;
                have[s] = 0;
            }
            if (head[s] >= end[s])
                continue;
            if (!have[s])
                c[s] = make_cand(p, &h[head[s]]);
            have[s] = 1;
            if (best < 0 || by_sigma(&c[s], &c[best]) < 0)
                best = s;
        }
        if (best < 0)
            break;
        keep_r(&k, c[best].r);
        kept[m++] = c[best];
        head[best]++;
        have[best] = 0;
    }
    free(k.n);
    free(k.r);
    *nkept = m;
    return DDTK_OK;
}

static int is_harmonic(const ddtk_fdas_cand *weak, const ddtk_fdas_cand *strong)
{
    double ratio = weak->r / strong->r;
    for (int b = 1; b <= HARM_MAX; b++) {
        int a = (int)floor(ratio * b + 0.5);
        if (a >= 1 && a <= HARM_MAX && a != b &&
            fabs(weak->r - strong->r * a / b) < HARM_TOL_BINS)
            return 1;
    }
    return 0;
}

/* Whether harmonic j of candidate c (at j r, drifting j z over the
 * observation) crosses an integer harmonic of the stronger candidate s: the
 * two tracks meet within HARM_TOL_BINS somewhere in the observation. */
static int crosses(const ddtk_fdas_cand *c, int j, const ddtk_fdas_cand *s)
{
    double rc = j * c->r, zc = j * c->z;
    /* |rc - h rs| <= (|zc| + h |zs|)/2 + tol bounds the harmonics h to look at */
    double slow = s->r - fabs(s->z) / 2, fast = s->r + fabs(s->z) / 2;
    double hlo = (rc - fabs(zc) / 2 - HARM_TOL_BINS) / fast;
    double hhi = (rc + fabs(zc) / 2 + HARM_TOL_BINS) / (slow > 0 ? slow : s->r);
    for (int h = (int)fmax(1.0, floor(hlo)); h <= ceil(hhi); h++) {
        /* over the observation the tracks are rc + zc u and h (rs + zs u), u in [-1/2, 1/2] */
        double d0 = rc - h * s->r, dz = zc - h * s->z;
        if (fabs(d0) <= fabs(dz) / 2 + HARM_TOL_BINS)
            return 1;
    }
    return 0;
}

/*
 * A weaker candidate explained by stronger ones: its harmonics that cross a
 * stronger candidate's harmonic are counted at the noise expectation (power
 * 1) instead of what they measured; if what is left falls below the
 * threshold, the candidate was that crossing, not a signal of its own.
 */
static int explained(ddtk_fdas_plan *p, const ddtk_fdas_cand *c, const ddtk_fdas_cand *kept,
                     int nkept)
{
    int crossed[DDTK_FDAS_MAXHARM] = { 0 }, any = 0, stage = 0;
    for (int j = 1; j <= c->numharm; j++)
        for (int i = 0; i < nkept && !crossed[j - 1]; i++)
            any |= crossed[j - 1] = crosses(c, j, &kept[i]);
    if (!any)
        return 0;
    if (ddtk_fdas_host_spectrum(p))
        return 0;                 /* keep it: nothing to measure with */
    double power = 0;
    for (int j = 1; j <= c->numharm; j++) {
        double re = 1, im = 0;
        if (!crossed[j - 1])
            ddtk_fdas_rz_amp(p, j * c->r, j * c->z, &re, &im);
        power += re * re + im * im;
    }
    while ((1 << stage) < c->numharm)
        stage++;
    return ddtk_fdas_sigma(power, c->numharm, p->numindep[stage]) < p->cfg.sigma;
}

static int remove_harmonics(ddtk_fdas_plan *p, ddtk_fdas_cand *c, int n)
{
    int m = 0;
    for (int j = 0; j < n; j++) {
        int harm = 0;
        for (int i = 0; i < m && !harm; i++)
            harm = is_harmonic(&c[j], &c[i]);
        if (!harm && !explained(p, &c[j], c, m))
            c[m++] = c[j];
    }
    return m;
}

int ddtk_fdas_host_spectrum(ddtk_fdas_plan *p)
{
    if (p->spec_on_host || !p->use_gpu)
        return DDTK_OK;
    int rc = ddtk_fdas_gpu_sync_spectrum(p);
    p->spec_on_host = !rc;
    return rc;
}

void ddtk_fdas_rz_amp(const ddtk_fdas_plan *p, double r, double z, double *re, double *im)
{
    const float complex *spec = (const float complex *)p->spec;
    int hw = ddtk_fdas_halfwidth(z);
    int64_t kc = (int64_t)floor(r + 0.5);
    double complex sum = 0;
    double energy = 0;
    for (int64_t k = kc - hw; k <= kc + hw; k++) {
        double a, b;
        ddtk_fdas_zresp(k - r, z, &a, &b);
        energy += a * a + b * b;
        if (k >= 0 && k < p->nbins)
            sum += spec[k] * (a - I * b);
    }
    sum /= sqrt(energy);
    *re = creal(sum);
    *im = cimag(sum);
}

int ddtk_fdas_candidates_build(ddtk_fdas_plan *p)
{
    int64_t n = p->hits.n;
    free(p->cands);
    p->cands = NULL;
    p->ncands = 0;
    if (n == 0)
        return DDTK_OK;
    ddtk_fdas_cand *kept = malloc(sizeof *kept * (size_t)n);
    if (!kept)
        return ddtk_fail(DDTK_ESYS, "out of memory for %lld candidates", (long long)n);
    int m = 0, rc = cluster(p, p->hits.h, n, kept, &m);
    if (rc) {
        free(kept);
        return rc;
    }
    if (p->cfg.harm_remove)
        m = remove_harmonics(p, kept, m);
    p->cands = kept;
    p->ncands = m;
    return DDTK_OK;
}

void ddtk_fdas_filter_accel(ddtk_fdas_plan *p, double amin, double amax)
{
    int m = 0;
    for (int i = 0; i < p->ncands; i++)
        if (p->cands[i].accel >= amin && p->cands[i].accel <= amax)
            p->cands[m++] = p->cands[i];
    p->ncands = m;
}
