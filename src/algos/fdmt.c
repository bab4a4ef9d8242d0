/*
 * fdmt.c - the fast dispersion-measure transform (Zackay & Ofek 2017) as an
 * engine plug-in: the DMs dd_fdmt computes, the merge tree of a level (each
 * node's rows, their routes through the children and how far past a chunk
 * each row is read), and the CPU gulp, which runs the tree on chunks of
 * output samples across the threads. See fdmt.h for the transform.
 *
 * Only the rows some DM reads are computed, each over exactly the samples
 * that are read, so a level reads max(offset + D) samples past its outputs:
 * the direct algorithm's largest delay at the same DMs (FDMT DMs and the
 * default reference frequency).
 */
#include "fdmt.h"
#include "algo.h"
#include "engine.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- the DMs ---------------------------------------------------------------------- */

double ddtk_fdmt_step(const ddtk_channels *ch, double kdm, double tsamp)
{
    double span = kdm * (pow(ch->fmin, -2) - pow(ch->fmax, -2));
    return span > 0 ? tsamp / span : INFINITY;
}

double ddtk_fdmt_diagonal(const ddtk_channels *ch, double kdm, double tsamp)
{
    if (ch->nchans < 2 || !(ch->chan_bw > 0))
        return INFINITY;
    return tsamp / (kdm * (pow(ch->fmin, -2) - pow(ch->fmin + ch->chan_bw, -2)));
}

/* DMs m * step of level k in [lo, hi) and [dm_min, dm_max]: counted in *n,
 * stored when dms is not NULL. */
static void level_dms(const ddtk_fdmt_setup *s, int k, double step, double lo, double hi,
                      double *dms, int *downsamp, int *n)
{
    for (int64_t m = (int64_t)ceil(fmax(lo, s->dm_min) / step - 1e-9);; m++) {
        double dm = m * step;
        if (dm >= hi * (1 - 1e-12) || dm > s->dm_max + 1e-9 * step)
            return;
        if (dms) {
            dms[*n] = dm;
            downsamp[*n] = 1 << k;
        }
        ++*n;
    }
}

static void list_dms(const ddtk_fdmt_setup *s, double diag, double step, double *dms,
                     int *downsamp, int *n)
{
    *n = 0;
    for (int k = 0; k < DDTK_MAX_LEVELS; k++) {
        double f = 1 << k, lo = k ? f * diag : 0;
        double hi = s->scrunch && k < DDTK_MAX_LEVELS - 1 ? 2 * f * diag : INFINITY;
        if (lo > s->dm_max)
            return;
        level_dms(s, k, step * f, lo, hi, dms, downsamp, n);
        if (!s->scrunch)
            return;
    }
}

int ddtk_fdmt_dms(const ddtk_fdmt_setup *s, const ddtk_channels *ch, double tsamp,
                  double **dms, int **downsamp, int *ndm)
{
    *dms = NULL;
    *downsamp = NULL;
    double step = ddtk_fdmt_step(ch, s->kdm, tsamp), diag = ddtk_fdmt_diagonal(ch, s->kdm, tsamp);
    if (!isfinite(step))
        return ddtk_fail(DDTK_EUSAGE, "the FDMT needs at least two channel frequencies");
    list_dms(s, diag, step, NULL, NULL, ndm);
    if (*ndm == 0)
        return ddtk_fail(DDTK_EUSAGE, "no FDMT DM between %g and %g (the DM step is %g)",
                         s->dm_min, s->dm_max, step);
    *dms = ddtk_malloc((size_t)*ndm * sizeof **dms, "FDMT DMs");
    *downsamp = ddtk_malloc((size_t)*ndm * sizeof **downsamp, "FDMT DMs");
    if (!*dms || !*downsamp)
        return DDTK_ESYS;
    list_dms(s, diag, step, *dms, *downsamp, ndm);
    return DDTK_OK;
}

/* ---- the merge tree ---------------------------------------------------------------- */

/* Nodes over rows [a, b) in post-order; returns the node's index. */
static int build(ddtk_fdmt_plan *f, int a, int b)
{
    int up = -1, lo = -1, depth = 0;
    if (b - a > 1) {
        int m = a + (b - a) / 2;
        up = build(f, a, m);
        lo = build(f, m, b);
        depth = 1 + (f->node[up].depth > f->node[lo].depth ? f->node[up].depth
                                                             : f->node[lo].depth);
    }
    ddtk_fdmt_node *s = &f->node[f->nnode];
    *s = (ddtk_fdmt_node){ .a = a, .b = b, .up = up, .lo = lo, .depth = depth };
    return f->nnode++;
}

typedef struct expand_ctx {
    const double *u;              /* row -> f^-2 - f_0^-2 */
    int64_t **need;               /* per node and row: samples read past the outputs, -1 none */
} expand_ctx;

/* The children's rows for delay delta of node s. */
static void split(const ddtk_fdmt_plan *f, const double *u, int s, int delta, int *up,
                  int *mid, int *lo)
{
    const ddtk_fdmt_node *n = &f->node[s];
    int m = f->node[n->lo].a;
    double span = u[n->b - 1] - u[n->a], x = span > 0 ? delta / span : 0.0;
    *mid = (int)lround(x * (u[m] - u[n->a]));
    *up = (int)lround(x * (u[m - 1] - u[n->a]));
    *lo = delta - *mid;
}

/* Route rows delta[i] of node s (need[i] >= 0: read that far past the
 * outputs) into route[4 i ..]; set its children's ranges and needs. */
static int expand(ddtk_fdmt_plan *f, expand_ctx *c, int s, const int *delta,
                  const int64_t *need, int n, int32_t *route)
{
    ddtk_fdmt_node *U = &f->node[f->node[s].up], *L = &f->node[f->node[s].lo];
    int ulo = INT_MAX, uhi = INT_MIN, llo = INT_MAX, lhi = INT_MIN, up, mid, lo;
    for (int i = 0; i < n; i++)
        if (need[i] >= 0) {
            split(f, c->u, s, delta[i], &up, &mid, &lo);
            ulo = up < ulo ? up : ulo;
            uhi = up > uhi ? up : uhi;
            llo = lo < llo ? lo : llo;
            lhi = lo > lhi ? lo : lhi;
        }
    if (uhi < 0 || lhi < 0 || (U->up < 0 && uhi > 0) || (L->up < 0 && lhi > 0) || ulo < 0
        || llo < 0)
        return ddtk_fail(DDTK_EUSAGE, "FDMT: a track outside the band (the reference "
                         "frequency must not be below the highest channel)");
    U->dlo = ulo;
    U->nd = uhi - ulo + 1;
    L->dlo = llo;
    L->nd = lhi - llo + 1;
    int64_t *nu = ddtk_malloc((size_t)U->nd * sizeof *nu, "FDMT rows");
    int64_t *nl = ddtk_malloc((size_t)L->nd * sizeof *nl, "FDMT rows");
    c->need[f->node[s].up] = nu;
    c->need[f->node[s].lo] = nl;
    if (!nu || !nl)
        return DDTK_ESYS;
    for (int i = 0; i < U->nd; i++)
        nu[i] = -1;
    for (int i = 0; i < L->nd; i++)
        nl[i] = -1;
    for (int i = 0; i < n; i++) {
        int32_t *r = route + 4 * (size_t)i;
        r[0] = r[1] = r[2] = 0;
        r[3] = -1;
        if (need[i] < 0)
            continue;
        split(f, c->u, s, delta[i], &up, &mid, &lo);
        r[0] = up - ulo;
        r[1] = lo - llo;
        r[2] = mid;
        r[3] = (int32_t)need[i];
        nu[r[0]] = need[i] > nu[r[0]] ? need[i] : nu[r[0]];
        nl[r[1]] = need[i] + mid > nl[r[1]] ? need[i] + mid : nl[r[1]];
    }
    return DDTK_OK;
}

/* Routes of every node below the root, parents before children. */
static int expand_all(ddtk_fdmt_plan *f, expand_ctx *c)
{
    int rc = DDTK_OK;
    for (int s = f->nnode - 2; !rc && s >= 0; s--) {
        ddtk_fdmt_node *n = &f->node[s];
        const int64_t *need = c->need[s];
        for (int i = 0; i < n->nd; i++)
            n->reach = need[i] > n->reach ? need[i] : n->reach;
        if (n->up < 0) {
            f->overlap = n->reach > f->overlap ? n->reach : f->overlap;
            continue;
        }
        int *delta = ddtk_malloc((size_t)n->nd * sizeof *delta, "FDMT rows");
        n->route = ddtk_malloc((size_t)n->nd * 4 * sizeof *n->route, "FDMT routes");
        if (!delta || !n->route) {
            free(delta);
            return DDTK_ESYS;
        }
        for (int i = 0; i < n->nd; i++) {
            delta[i] = n->dlo + i;
            f->adds += need[i] >= 0;
        }
        rc = expand(f, c, s, delta, need, n->nd, n->route);
        free(delta);
    }
    return rc;
}

/* The root's rows: one per DM, D and the offset. */
static int root_rows(ddtk_fdmt_plan *f, expand_ctx *c, const double *freq, double fref,
                     double kdm, int rounding, double tsamp, const double *dms)
{
    int *delta = ddtk_malloc((size_t)f->ndm * sizeof *delta, "FDMT rows");
    int64_t *off = ddtk_malloc((size_t)f->ndm * sizeof *off, "FDMT rows");
    f->out_route = ddtk_malloc((size_t)f->ndm * 4 * sizeof *f->out_route, "FDMT routes");
    int rc = delta && off && f->out_route ? DDTK_OK : DDTK_ESYS;
    double top = kdm * (pow(freq[0], -2) - pow(fref, -2)) / tsamp;
    double across = kdm * c->u[f->nrows - 1] / tsamp;
    for (int d = 0; !rc && d < f->ndm; d++) {
        delta[d] = (int)lround(dms[d] * across);
        off[d] = ddtk_round_delay(dms[d] * top, rounding);
        if (off[d] < 0)
            rc = ddtk_fail(DDTK_EUSAGE, "FDMT: the reference frequency must not be below the "
                           "highest channel");
    }
    if (!rc && f->nrows == 1) {
        for (int d = 0; d < f->ndm; d++) {
            int32_t *r = f->out_route + 4 * (size_t)d;
            r[0] = r[1] = r[2] = 0;
            r[3] = (int32_t)off[d];
            f->overlap = off[d] > f->overlap ? off[d] : f->overlap;
        }
        f->node[0].nd = 1;
    } else if (!rc) {
        rc = expand(f, c, f->nnode - 1, delta, off, f->ndm, f->out_route);
    }
    f->adds += f->ndm;
    free(delta);
    free(off);
    return rc;
}

int ddtk_fdmt_plan_init(ddtk_fdmt_plan *f, const double *freq, int nrows, double fref,
                        double kdm, int rounding, double tsamp, const double *dms, int ndm)
{
    memset(f, 0, sizeof *f);
    f->nrows = nrows;
    f->ndm = ndm;
    f->node = ddtk_calloc(2 * (size_t)nrows - 1, sizeof *f->node, "FDMT nodes");
    double *u = ddtk_malloc((size_t)nrows * sizeof *u, "FDMT rows");
    int64_t **need = ddtk_calloc(2 * (size_t)nrows - 1, sizeof *need, "FDMT rows");
    int rc = f->node && u && need ? DDTK_OK : DDTK_ESYS;
    if (!rc) {
        for (int r = 0; r < nrows; r++)
            u[r] = pow(freq[r], -2) - pow(freq[0], -2);
        build(f, 0, nrows);
        f->depth = f->node[f->nnode - 1].depth;
        expand_ctx c = { .u = u, .need = need };
        rc = root_rows(f, &c, freq, fref, kdm, rounding, tsamp, dms);
        if (!rc)
            rc = expand_all(f, &c);
    }
    for (int s = 0; need && s < 2 * nrows - 1; s++)
        free(need[s]);
    free(need);
    free(u);
    if (rc)
        ddtk_fdmt_plan_free(f);
    return rc;
}

void ddtk_fdmt_plan_free(ddtk_fdmt_plan *f)
{
    for (int s = 0; f->node && s < f->nnode; s++)
        free(f->node[s].route);
    free(f->node);
    free(f->out_route);
    memset(f, 0, sizeof *f);
}

/* ---- the descriptor ------------------------------------------------------------- */

/* The parameter, and what the tuner may vary (algo.h): speed only. */
enum { P_CHUNK };
static const ddtk_param_info params[] = {
    { "chunk", "CPU: output samples a thread computes at once", DDTK_PARAM_INT, 2048, 16,
      1 << 20, 0, NULL, 0 },
};
static const double chunk_values[] = { 512, 1024, 2048, 4096, 8192, 16384 };
static const ddtk_tunable tunables[] = {
    { "chunk", DDTK_TUNE_CPU, chunk_values, 6, 1 },
};

/* lv->state: the level's tree (ddtk_fdmt_plan); lv->cpu: the threads' workspaces. */
typedef struct fdmt_cpu {
    size_t ws_floats;             /* per thread */
    float *ws;
    size_t have;
} fdmt_cpu;

static void destroy(ddtk_level *lv)
{
    fdmt_cpu *c = lv->cpu;
    if (c) {
        free(c->ws);
        free(c);
    }
    if (lv->state) {
        ddtk_fdmt_plan_free(lv->state);
        free(lv->state);
    }
    lv->state = lv->cpu = NULL;
}

/* A workspace holds a chunk plus the largest delay of every node's rows: a
 * long delay makes it large (80 MiB at 42148 samples and 256 channels), and
 * one per thread of a many-core machine would pass the memory bound by
 * itself. The threads that work at once are as many as a quarter of the bound
 * holds (at least one); the output is the same for any number. */
static int workers(const ddtk_plan *p, ddtk_fdmt_plan *f)
{
    double ws = (double)ddtk_fdmt_workspace(f, f->chunk) * sizeof(float);
    double fit = (double)ddtk_plan_max_mem(&p->d) / 4 / (ws > 0 ? ws : 1);
    int n = ddtk_threads();
    return fit < 1 ? 1 : fit < n ? (int)fit : n;
}

static int create(const ddtk_plan *p, ddtk_level *lv)
{
    ddtk_fdmt_plan *f = ddtk_calloc(1, sizeof *f, "FDMT plan");
    if (!f)
        return DDTK_ESYS;
    lv->state = f;
    int rc = ddtk_fdmt_plan_init(f, p->ch.freq, p->ch.nlive, p->ch.fref, p->d.kdm,
                                 p->d.rounding, lv->tsamp, lv->dms, lv->ndm);
    if (rc)
        return rc;
    lv->overlap = f->overlap;
    f->chunk = (int)ddtk_param(p, P_CHUNK);
    f->workers = workers(p, f);
    return DDTK_OK;
}

static int64_t cpu_bytes(const ddtk_level *lv, int64_t most)
{
    (void)most;
    ddtk_fdmt_plan *f = lv->state;
    return (int64_t)ddtk_fdmt_workspace(f, f->chunk) * f->workers * (int64_t)sizeof(float);
}

static int cpu_reserve(ddtk_level *lv, int64_t most)
{
    (void)most;
    fdmt_cpu *c = lv->cpu;
    if (!c && !(c = lv->cpu = ddtk_calloc(1, sizeof *c, "FDMT workspace")))
        return DDTK_ESYS;
    const ddtk_fdmt_plan *f = lv->state;
    c->ws_floats = ddtk_fdmt_workspace(lv->state, f->chunk);
    size_t n = c->ws_floats * (size_t)f->workers;
    if (c->have >= n)
        return DDTK_OK;
    free(c->ws);
    c->have = 0;
    if (!(c->ws = ddtk_malloc_large((n ? n : 1) * sizeof *c->ws, "FDMT workspace")))
        return DDTK_ESYS;
    c->have = n;
    return DDTK_OK;
}

static void cpu_gulp(const ddtk_plan *p, ddtk_level *lv, const float *rows, size_t stride,
                     int64_t nout, float *out, size_t ostride)
{
    (void)p;
    const ddtk_fdmt_plan *f = lv->state;
    const fdmt_cpu *c = lv->cpu;
    const int64_t chunk = f->chunk, nchunk = (nout + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic) num_threads(f->workers)
    for (int64_t k = 0; k < nchunk; k++) {
        int64_t t0 = k * chunk, n = nout - t0 < chunk ? nout - t0 : chunk;
#ifdef _OPENMP
        float *ws = c->ws + (size_t)omp_get_thread_num() * c->ws_floats;
#else
        float *ws = c->ws;
#endif
        ddtk_fdmt_chunk_cpu(f, rows + t0, stride, n, chunk, ws, out + t0, ostride);
    }
}

/* The transform's DMs (ddtk_fdmt_dms); the pulse width does not enter. */
static int own_dms(ddtk_plan_desc *d, const ddtk_channels *ch, double dm_min, double dm_max,
                   double width, int scrunch, double **dms, int **downsamp, int *ndm)
{
    (void)width;
    ddtk_fdmt_setup s = { .scrunch = scrunch, .dm_min = dm_min, .dm_max = dm_max,
                          .kdm = d->kdm };
    return ddtk_fdmt_dms(&s, ch, d->tsamp, dms, downsamp, ndm);
}

/* ---- ddplan's model ---------------------------------------------------------- */

/* The FDMT's tracks stray from the dispersion law by half a sample RMS
 * (dd_fdmt(1)); its own DM step (one sample across the band) is the
 * plan's here. */
static double model_smear(const ddtk_obs *o, const ddtk_dmplan_row *r, int chans_per_sub)
{
    (void)chans_per_sub;
    return 0.5 * o->tsamp * r->downsamp;
}

/* At each of its log2 N merge depths about one row per DM, plus about one
 * row per node (N in all), for DMs one sample across the band apart. */
static double model_adds(const ddtk_obs *o, int ndm, int dms_per_sub, int chans_per_sub)
{
    (void)dms_per_sub, (void)chans_per_sub;
    int log2n = 0;
    while ((1 << log2n) < o->nchans)
        log2n++;
    return (double)log2n * ndm + o->nchans;
}

extern const struct ddtk_gpu_algo ddtk_gpu_fdmt;

const ddtk_algo ddtk_algo_fdmt = {
    .name = "fdmt",
    .label = "FDMT",
    .params = params,
    .nparams = (int)(sizeof params / sizeof params[0]),
    .tunables = tunables,
    .ntunables = (int)(sizeof tunables / sizeof tunables[0]),
    .own_dms = own_dms,
    .model_smear = model_smear,
    .model_adds = model_adds,
    .create = create,
    .cpu_reserve = cpu_reserve,
    .cpu_bytes = cpu_bytes,
    .cpu_gulp = cpu_gulp,
    .destroy = destroy,
    .gpu = DDTK_GPU_HALF(ddtk_gpu_fdmt),
};
