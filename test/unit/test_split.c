/*
 * test_split.c - the multi-GPU DM split: ddtk_split_cost covers every DM
 * exactly once in contiguous ranges whose costs are within one DM's (one
 * uncut run's) cost of the mean, for a tolerance list with scrunching,
 * DDplan ranges, one DM and more parts than DMs; ddtk_plan_split keeps a
 * sub-band group on one device; the direct plug-in's cost (its shared-memory
 * staging grows with the delay step) reproduces the measured kernel times of
 * htru's two halves and gives the low DMs the larger share, every DM once, on
 * one level and on scrunched ones; and a level view (a device's share) gives
 * every DM the series the whole level gives, for direct, sub-band, tree and
 * FDMT (the GPU plug-ins are built on these views).
 */
#include "engine.h"
#include "dmplan.h"
#include "subband.h"
#include "tree.h"
#include "check.h"
#include "htru_plan.h"

#include <stdlib.h>
#include <string.h>

/* Every DM once, in order, ranges within the largest run's cost of the mean. */
static void check_split(const double *cost, const uint8_t *cut, int n, int nparts)
{
    int *first = calloc((size_t)nparts + 1, sizeof *first);
    CHECK(ddtk_split_cost(cost, cut, n, nparts, first) == DDTK_OK);
    CHECK(first[0] == 0 && first[nparts] == n);
    double total = 0, run = 0, largest = 0;
    for (int i = 0; i < n; i++) {
        total += cost[i];
        run = i > 0 && cut && !cut[i] ? run + cost[i] : cost[i];
        largest = run > largest ? run : largest;
    }
    int *owner = calloc((size_t)n + 1, sizeof *owner);
    for (int j = 0; j < nparts; j++) {
        CHECK(first[j] <= first[j + 1]);
        CHECK(first[j] == 0 || first[j] == n || !cut || cut[first[j]]);
        double c = 0;
        for (int i = first[j]; i < first[j + 1] && i < n; i++) {
            owner[i]++;
            c += cost[i];
        }
        CHECK_NEAR(c, total / nparts, largest * (1 + 1e-9));
    }
    for (int i = 0; i < n; i++)
        CHECK(owner[i] == 1);
    free(owner);
    free(first);
}

/* The tolerance list of the htru set-up (SPEC section 6), --scrunch auto:
 * a DM scrunched by f costs 1/f. */
static void test_tol_scrunch(void)
{
    ddtk_obs o;
    ddtk_dmlist l = { 0 };
    CHECK(!ddtk_obs_init(&o, 1024, 1581.8, -0.390625, 64e-6, 0, DDTK_KDM_DEFAULT));
    CHECK(!ddtk_dmlist_tol(&l, 0, 1000, o.tsamp, 40, 1.25, o.fctr, o.chan_bw, o.nchans));
    double *cost = malloc((size_t)l.n * sizeof *cost);
    int scrunched = 0;
    for (int i = 0; i < l.n; i++) {
        int f = ddtk_scrunch_factor(&o, l.dm[i]);
        scrunched += f > 1;
        cost[i] = 1.0 / f;
    }
    CHECK(scrunched > 0);
    for (int nparts = 1; nparts <= 8; nparts++)
        check_split(cost, NULL, l.n, nparts);
    /* Two parts of equal cost: the scrunched half has more DMs. */
    int first[3];
    CHECK(ddtk_split_cost(cost, NULL, l.n, 2, first) == DDTK_OK);
    CHECK(first[1] < l.n / 2);
    free(cost);
    ddtk_dmlist_free(&l);
}

/* PRESTO DDplan ranges (downsampling 1 to 8), and groups of 7 DMs that
 * must stay together (sub-band stage 1). */
static void test_ranges(void)
{
    ddtk_obs o;
    ddtk_dmplan p = { 0 };
    ddtk_dmlist l = { 0 };
    int *ds = NULL;
    CHECK(!ddtk_obs_init(&o, 1024, 1381.8 + 511.5 * 0.390625, -0.390625, 64e-6, 0,
                         DDTK_KDM_DEFAULT));
    CHECK(!ddtk_dmplan_ranges(&p, &o, 0, 1000, 64));
    CHECK(!ddtk_dmplan_expand(&p, &l, &ds));
    double *cost = malloc((size_t)l.n * sizeof *cost);
    uint8_t *cut = malloc((size_t)l.n);
    for (int i = 0; i < l.n; i++) {
        cost[i] = 1.0 / ds[i];
        cut[i] = i % 7 == 0;
    }
    for (int nparts = 1; nparts <= 6; nparts++) {
        check_split(cost, NULL, l.n, nparts);
        check_split(cost, cut, l.n, nparts);
    }
    free(cost);
    free(cut);
    free(ds);
    ddtk_dmlist_free(&l);
    ddtk_dmplan_free(&p);
}

/* One DM; more parts than DMs (empty ranges); uneven costs; no cut at all. */
static void test_edges(void)
{
    double one = 1, three[3] = { 1, 0.5, 0.25 }, uneven[6] = { 8, 1, 1, 1, 1, 4 };
    uint8_t none[6] = { 0 };
    check_split(&one, NULL, 1, 2);
    check_split(&one, NULL, 1, 1);
    check_split(three, NULL, 3, 8);
    check_split(uneven, NULL, 6, 2);
    check_split(uneven, NULL, 6, 3);
    check_split(uneven, none, 6, 4);
    int first[5];
    CHECK(ddtk_split_cost(uneven, none, 6, 4, first) == DDTK_OK);
    CHECK(first[1] == 0 && first[2] == 0 && first[3] == 6 && first[4] == 6);
}

/* ---- the direct plug-in's cost ------------------------------------------------ */

/* Each plan DM's cost as the split sees it: the plug-in's over 2^k. */
static double *plan_costs(const ddtk_plan *p)
{
    double *cost = calloc((size_t)p->d.ndm, sizeof *cost);
    for (int k = 0; k < p->nlevels; k++)
        for (int j = 0; j < p->lv[k].ndm; j++) {
            int start = 0;
            cost[p->lv[k].index[j]] = p->algo->split_cost(&p->lv[k], j, &start) / (1 << k);
            CHECK(start == 1);
        }
    return cost;
}

/* ddtk_plan_split into nparts: every DM once, in order, each share within
 * the costliest DM's cost of the mean. */
static void check_plan_split(const ddtk_plan *p, const double *cost, int nparts)
{
    int first[9];
    double total = 0, most = 0;
    CHECK(ddtk_plan_split(p, nparts, first) == DDTK_OK);
    CHECK(first[0] == 0 && first[nparts] == p->d.ndm);
    for (int i = 0; i < p->d.ndm; i++) {
        total += cost[i];
        most = cost[i] > most ? cost[i] : most;
    }
    for (int j = 0; j < nparts; j++) {
        double c = 0;
        CHECK(first[j] <= first[j + 1]);
        for (int i = first[j]; i < first[j + 1]; i++)
            c += cost[i];
        CHECK_NEAR(c, total / nparts, most * (1 + 1e-9));
    }
}

static double range_cost(const double *cost, int lo, int hi)
{
    double c = 0;
    for (int i = lo; i < hi; i++)
        c += cost[i];
    return c;
}

/* Splits into 1..8 parts of an htru plan, then the plan and its inputs freed. */
static void splits_and_free(ddtk_plan *p, double *cost, ddtk_dmlist *l, int *ds)
{
    for (int nparts = 1; nparts <= 8; nparts++)
        check_plan_split(p, cost, nparts);
    free(cost);
    ddtk_plan_destroy(p);
    ddtk_dmlist_free(l);
    free(ds);
}

static void test_direct_cost(void)
{
    ddtk_dmlist l = { 0 };
    int *ds = NULL;
    ddtk_plan *p = htru_plan(0, &l, &ds);
    if (!p)
        return;
    const int n = p->d.ndm;
    double *cost = plan_costs(p);
    CHECK(n == 1196);
    /* Split equally by count, the halves took 0.089 s and 0.151 s (two H200s). */
    CHECK_NEAR(range_cost(cost, 0, 598) / range_cost(cost, 598, n), 0.089 / 0.151, 0.005);
    /* The wider steps of high DMs cost more; the last DM's step is its last one. */
    CHECK(cost[n - 1] > 2 * cost[0]);
    CHECK(cost[n - 1] == cost[n - 2]);
    for (int i = 1; i < n; i++)
        CHECK(cost[i] >= cost[i - 1] - 0.2);
    int first[3];
    CHECK(ddtk_plan_split(p, 2, first) == DDTK_OK);
    CHECK(first[1] > 650 && first[1] < 800);
    splits_and_free(p, cost, &l, ds);
    /* Scrunched levels: a DM costs its level's model over its factor. */
    p = htru_plan(1, &l, &ds);
    if (!p)
        return;
    CHECK(p->nlevels > 1);
    splits_and_free(p, plan_costs(p), &l, ds);
}

/* ---- plans: the split and the views ------------------------------------------ */

#define NCHANS 64
#define NDM 60
#define NSAMP 6000

static double freqs[NCHANS], dms[NDM];
static int downsamp[NDM];

static ddtk_plan *make_plan(const char *algorithm, int scrunch)
{
    ddtk_plan_desc d;
    ddtk_plan *p = NULL;
    for (int c = 0; c < NCHANS; c++)
        freqs[c] = 1500.0 - c * 1.0;
    for (int i = 0; i < NDM; i++) {
        dms[i] = i * 2.5;
        downsamp[i] = scrunch ? (i < 20 ? 1 : i < 40 ? 2 : 4) : 1;
    }
    ddtk_plan_desc_init(&d);
    d.nchans = NCHANS;
    d.tsamp = 0.000256;
    d.freqs = freqs;
    d.dms = dms;
    d.ndm = NDM;
    d.downsamp = downsamp;
    d.backend = DDTK_BACKEND_CPU;
    d.quiet = 1;
    CHECK(ddtk_plan_desc_set_algorithm(&d, algorithm) == DDTK_OK);
    if (strcmp(algorithm, "subband") == 0) {
        CHECK(ddtk_plan_desc_set_param(&d, "nsub", 8) == DDTK_OK);
        CHECK(ddtk_plan_desc_set_param(&d, "dm_group", 6) == DDTK_OK);
    }
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    return p;
}

/* Level k's series over nout samples of rows, by the level (or view) given. */
static float *series(const ddtk_plan *p, ddtk_level *lv, const float *rows, size_t stride,
                     int64_t nout)
{
    float *out = calloc((size_t)(lv->ndm ? lv->ndm : 1) * (size_t)nout, sizeof *out);
    if (p->algo->cpu_reserve)
        CHECK(p->algo->cpu_reserve(lv, nout) == DDTK_OK);
    p->algo->cpu_gulp(p, lv, rows, stride, nout, out, (size_t)nout);
    return out;
}

static void test_views(const char *algorithm, int nparts)
{
    ddtk_plan *p = make_plan(algorithm, 1);
    if (!p)
        return;
    int first[8];
    CHECK(ddtk_plan_split(p, nparts, first) == DDTK_OK);
    CHECK(first[0] == 0 && first[nparts] == NDM);
    CHECK(nparts == 1 || (first[1] > 0 && first[1] < NDM));
    size_t stride = NSAMP;
    float *rows = malloc((size_t)p->ch.nlive * stride * sizeof *rows);
    unsigned x = 7u + (unsigned)nparts;
    for (size_t i = 0; i < (size_t)p->ch.nlive * stride; i++) {
        x = x * 1103515245u + 12345u;
        rows[i] = (float)((x >> 16) & 255);
    }
    for (int k = 0; k < p->nlevels; k++) {
        ddtk_level *lv = &p->lv[k];
        if (!lv->ndm)
            continue;
        int64_t nout = NSAMP / 2 - lv->overlap;
        float *whole = series(p, lv, rows, stride, nout);
        const int subband = strcmp(algorithm, "subband") == 0;
        const ddtk_subband_level *t = lv->state;
        int seen = 0;
        for (int j = 0; j < nparts; j++) {
            ddtk_level v;
            CHECK(ddtk_level_view(p, k, first[j], first[j + 1], &v) == DDTK_OK);
            if (v.ndm) {
                int lo = (int)(v.dms - lv->dms);
                CHECK(lo == seen);
                CHECK(v.overlap <= lv->overlap);
                /* A share of a sub-band level starts at a group. */
                int at_group = !subband;
                for (int g = 0; !at_group && g <= t->ngroups; g++)
                    at_group = t->group_first[g] == lo;
                CHECK(at_group);
                float *part = series(p, &v, rows, stride, nout);
                CHECK(memcmp(part, whole + (size_t)lo * nout,
                             (size_t)v.ndm * nout * sizeof *part) == 0);
                free(part);
            }
            seen += v.ndm;
            ddtk_level_view_free(p, &v);
        }
        CHECK(seen == lv->ndm);
        free(whole);
    }
    free(rows);
    ddtk_plan_destroy(p);
}

int main(void)
{
    test_tol_scrunch();
    test_ranges();
    test_edges();
    test_direct_cost();
    for (int nparts = 1; nparts <= 7; nparts += 2) {
        test_views("direct", nparts);
        test_views("subband", nparts);
        test_views("tree", nparts);
        test_views("fdmt", nparts);
    }
    return check_result();
}
