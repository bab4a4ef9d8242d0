/*
 * fdas_cands.c - from plane hits to the candidate list: fundamental r and z,
 * sigma after trials, clustering within +-15 bins, removal of harmonically
 * related candidates, sorting by sigma.
 */
#include "fdas_impl.h"

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
    c.sigma = ddtk_fdas_sigma(h->power, nh, p->numindep[h->stage]);
    c.freq = c.r / p->T;
    c.fdot = c.z / (p->T * p->T);
    c.accel = c.fdot * DDTK_SPEED_OF_LIGHT / c.freq;
    return c;
}

/* Keep a candidate only if no stronger one lies within CLUSTER_BINS (sorted r list). */
static int cluster(ddtk_fdas_cand *all, int64_t n, ddtk_fdas_cand *kept, int *nkept)
{
    double *rs = malloc(sizeof(double) * (size_t)(n + 1));
    if (!rs)
        return ddtk_fail(DDTK_ESYS, "out of memory for candidates");
    int m = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = all[i].r;
        int lo = 0, hi = m;                  /* first rs >= r - CLUSTER_BINS */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (rs[mid] < r - CLUSTER_BINS)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < m && rs[lo] <= r + CLUSTER_BINS)
            continue;
        int at = lo;
        while (at < m && rs[at] < r)
            at++;
        memmove(rs + at + 1, rs + at, sizeof(double) * (size_t)(m - at));
        rs[at] = r;
        kept[m++] = all[i];
    }
    free(rs);
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

static int remove_harmonics(ddtk_fdas_cand *c, int n)
{
    int m = 0;
    for (int j = 0; j < n; j++) {
        int harm = 0;
        for (int i = 0; i < m && !harm; i++)
            harm = is_harmonic(&c[j], &c[i]);
        if (!harm)
            c[m++] = c[j];
    }
    return m;
}

int ddtk_fdas_candidates_build(ddtk_fdas_plan *p)
{
    int64_t n = p->hits.n;
    free(p->cands);
    p->cands = NULL;
    p->ncands = 0;
    if (n == 0)
        return DDTK_OK;
    ddtk_fdas_cand *all = malloc(sizeof *all * (size_t)n);
    ddtk_fdas_cand *kept = malloc(sizeof *kept * (size_t)n);
    if (!all || !kept) {
        free(all);
        free(kept);
        return ddtk_fail(DDTK_ESYS, "out of memory for %lld candidates", (long long)n);
    }
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++)
        all[i] = make_cand(p, &p->hits.h[i]);
    qsort(all, (size_t)n, sizeof *all, by_sigma);
    int m = 0, rc = cluster(all, n, kept, &m);
    free(all);
    if (rc) {
        free(kept);
        return rc;
    }
    if (p->cfg.harm_remove)
        m = remove_harmonics(kept, m);
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
