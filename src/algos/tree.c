/*
 * tree.c - tree dedispersion (Barsdell et al. 2012 section 3) as an engine
 * plug-in, and what dd_tree needs to choose its DMs.
 *
 * A level's DMs are routed through sub-bands of cps channels (the whole
 * padded band for the basic and frequency-padded trees): in sub-band n, a DM
 * follows the linear sweep E_n through the chord of its quadratic curve
 * (eqs. 19-20) and starts at the offset of the sub-band (eq. 23). Sweeps
 * beyond one tree (E > cps - 1, past the diagonal DM) take pass j: the
 * diagonal delay j * position is imposed on the input rows (by offsetting
 * their start, section 3.1.3) and the tree gives E = j (cps - 1) + d'.
 * Stage 1 runs the tree on every (pass, sub-band) slot some DM needs, in
 * time chunks across the threads; stage 2 adds the sub-band series of each
 * DM (eq. 22). The engine's time-scrunch cascade provides the levels.
 */
#include "tree.h"
#include "engine.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int next_pow2(int n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

static int is_pow2(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

/* ---- geometry -------------------------------------------------------------------- */

/* Positions of the live rows: channel index (piecewise) or eq. 25 (padded). */
static int positions(const ddtk_channels *ch, int method, int *pos)
{
    double f1 = ch->fmax - ch->chan_bw, top = pow(ch->fmax, -2), unit = pow(f1, -2) - top;
    int last = 0;
    for (int r = 0; r < ch->nlive; r++) {
        double q = method == DDTK_TREE_PADDED ? (pow(ch->freq[r], -2) - top) / unit
                                              : (ch->fmax - ch->freq[r]) / ch->chan_bw;
        pos[r] = (int)lround(q);
        last = pos[r] > last ? pos[r] : last;
    }
    return last + 1;
}

/* Chord of each sub-band through its first and last live positions: the
 * delay per unit DM at the sub-band's first position and per position. */
static void chords(ddtk_tree_geom *g, double *dt0, double *slope)
{
    g->slope_max = 0;
    for (int n = 0; n < g->nsb; n++) {
        int a = -1, b = -1;
        for (int q = n * g->cps; q < (n + 1) * g->cps; q++)
            if (g->first[q + 1] > g->first[q]) {
                a = a < 0 ? q : a;
                b = q;
            }
        slope[n] = dt0[n] = NAN;
        if (a < 0)
            continue;
        double da = g->dt[g->rows[g->first[a]]], db = g->dt[g->rows[g->first[b]]];
        slope[n] = b > a ? (db - da) / (b - a) : 0.0;
        dt0[n] = da - slope[n] * (a - n * g->cps);
        g->slope_max = slope[n] > g->slope_max ? slope[n] : g->slope_max;
    }
}

int ddtk_tree_geom_init(ddtk_tree_geom *g, const ddtk_channels *ch, double kdm, int method,
                        int cps)
{
    memset(g, 0, sizeof *g);
    if (ch->nchans < 2 || !(ch->chan_bw > 0))
        return ddtk_fail(DDTK_EUSAGE, "tree dedispersion needs at least two channels");
    int *pos = ddtk_malloc((size_t)ch->nlive * sizeof *pos, "tree positions");
    if (!pos)
        return DDTK_ESYS;
    int span = positions(ch, method, pos);
    g->method = method;
    g->cps = method == DDTK_TREE_PADDED || cps <= 0 ? next_pow2(span) : cps;
    g->np = (int)ddtk_round_up(span, g->cps);
    g->nsb = g->np / g->cps;
    g->first = ddtk_calloc((size_t)g->np + 1, sizeof *g->first, "tree positions");
    g->rows = ddtk_malloc((size_t)ch->nlive * sizeof *g->rows, "tree positions");
    g->dt = ddtk_malloc((size_t)ch->nlive * sizeof *g->dt, "tree positions");
    g->dt0 = ddtk_malloc((size_t)g->nsb * sizeof *g->dt0, "tree sub-bands");
    g->slope = ddtk_malloc((size_t)g->nsb * sizeof *g->slope, "tree sub-bands");
    if (!g->first || !g->rows || !g->dt || !g->dt0 || !g->slope) {
        free(pos);
        return DDTK_ESYS;
    }
    for (int r = 0; r < ch->nlive; r++) {
        g->first[pos[r] + 1]++;
        g->dt[r] = kdm * (pow(ch->freq[r], -2) - pow(ch->fref, -2));
    }
    for (int q = 0; q < g->np; q++)
        g->first[q + 1] += g->first[q];
    int *fill = ddtk_calloc((size_t)g->np, sizeof *fill, "tree positions");
    if (!fill) {
        free(pos);
        return DDTK_ESYS;
    }
    for (int r = 0; r < ch->nlive; r++)
        g->rows[g->first[pos[r]] + fill[pos[r]]++] = r;
    free(fill);
    free(pos);
    chords(g, g->dt0, g->slope);
    return DDTK_OK;
}

void ddtk_tree_geom_free(ddtk_tree_geom *g)
{
    free(g->first);
    free(g->rows);
    free(g->dt);
    free(g->dt0);
    free(g->slope);
    memset(g, 0, sizeof *g);
}

static int round_delay(double x, int rounding)
{
    return (int)(rounding == DDTK_ROUND_FLOOR ? floor(x + 1e-9) : lround(x));
}

int ddtk_tree_route(const ddtk_tree_geom *g, int n, double dm, double tsamp, int rounding,
                    int *sweep, int *offset)
{
    if (isnan(g->slope[n]))
        return 0;
    *sweep = (int)lround(dm * g->slope[n] * (g->cps - 1) / tsamp);
    *offset = round_delay(dm * g->dt0[n] / tsamp, rounding);
    return 1;
}

double ddtk_tree_diagonal(const ddtk_tree_geom *g, double tsamp)
{
    if (!(g->slope_max > 0))
        return INFINITY;
    return g->cps == 1 ? tsamp / g->slope_max
                       : (g->cps - 0.5) * tsamp / (g->slope_max * (g->cps - 1));
}

/* ---- the DMs of a tree and its smearing ------------------------------------------ */

double ddtk_tree_smear(const ddtk_channels *ch, double kdm, double tsamp, int cps, double dm,
                       double width)
{
    double fc = 0.5 * (ch->fmin + ch->fmax);
    double chan = 2 * kdm * dm * ch->chan_bw / (fc * fc * fc);
    double w2 = width * width + tsamp * tsamp + chan * chan;
    double x = cps * ch->chan_bw / (ch->fmin * ch->fmin);
    double tree = 0.75 * kdm * dm * x * x;
    return sqrt(w2 + tree * tree) / sqrt(w2);
}

double ddtk_tree_list_smear(const ddtk_tree_setup *s, const ddtk_channels *ch, double tsamp,
                            const double *dms, const int *downsamp, int ndm)
{
    double mu = 1.0;
    if (s->method == DDTK_TREE_PADDED)
        return mu;            /* Appendix A: no smearing beyond the direct algorithm's */
    for (int i = 0; i < ndm; i++) {
        double m = ddtk_tree_smear(ch, s->kdm, tsamp * (downsamp ? downsamp[i] : 1), s->cps,
                                   dms[i], s->width);
        mu = m > mu ? m : mu;
    }
    return mu;
}

/* DMs m * step of level k within [lo, hi) and the selected range; *n counts
 * them, and they are stored when dms is not NULL. Counting stops past
 * DDTK_MAX_DMS (*n is then DDTK_MAX_DMS + 1), before a DM is stored or a
 * multiple of the step stops being exact in a double. */
static void level_dms(const ddtk_tree_setup *s, int k, double step, double lo, double hi,
                      double *dms, int *downsamp, int64_t *n)
{
    double a = fmax(lo, s->dm_min), top = fmin(hi, s->dm_max + 1e-9 * step);
    if (a > top)
        return;
    if (!((top - a) / step < DDTK_MAX_DMS) || !(top / step < 1e15)) {
        *n = DDTK_MAX_DMS + 1;
        return;
    }
    for (int64_t m = (int64_t)ceil(a / step - 1e-9); *n <= DDTK_MAX_DMS; m++) {
        double dm = m * step;
        if (dm >= hi * (1 - 1e-12) || dm > s->dm_max + 1e-9 * step)
            break;
        if (dms) {
            dms[*n] = dm;
            downsamp[*n] = 1 << k;
        }
        ++*n;
    }
}

static void list_dms(const ddtk_tree_setup *s, double diag, double step, double *dms,
                     int *downsamp, int64_t *n)
{
    *n = 0;
    for (int k = 0; k < DDTK_MAX_LEVELS && *n <= DDTK_MAX_DMS; k++) {
        double f = 1 << k, lo = k ? f * diag : 0;
        double hi = s->scrunch && k < DDTK_MAX_LEVELS - 1 ? 2 * f * diag : INFINITY;
        if (lo > s->dm_max)
            break;
        level_dms(s, k, step * f, lo, hi, dms, downsamp, n);
        if (!s->scrunch)
            break;
    }
}

static int dms_for(ddtk_tree_setup *s, const ddtk_channels *ch, double tsamp, double **dms,
                   int **downsamp, int *ndm)
{
    ddtk_tree_geom g;
    int64_t n;
    int rc = ddtk_tree_geom_init(&g, ch, s->kdm, s->method, s->cps);
    if (rc)
        return rc;
    s->cps = g.cps;
    double diag = ddtk_tree_diagonal(&g, tsamp);
    double step = tsamp / (s->kdm * (pow(ch->fmin, -2) - pow(ch->fmax, -2)));
    ddtk_tree_geom_free(&g);
    list_dms(s, diag, step, NULL, NULL, &n);
    if (n == 0)
        return ddtk_fail(DDTK_EUSAGE, "no tree DM between %g and %g (the DM step is %g)",
                         s->dm_min, s->dm_max, step);
    if (n > DDTK_MAX_DMS)
        return ddtk_fail(DDTK_EUSAGE, "the tree's DMs from %g to %g in steps of %g are over "
                         "10^7; narrow the range", s->dm_min, s->dm_max, step);
    *dms = ddtk_malloc((size_t)n * sizeof **dms, "tree DMs");
    *downsamp = ddtk_malloc((size_t)n * sizeof **downsamp, "tree DMs");
    if (!*dms || !*downsamp)
        return DDTK_ESYS;
    list_dms(s, diag, step, *dms, *downsamp, &n);
    *ndm = (int)n;
    return DDTK_OK;
}

int ddtk_tree_dms(ddtk_tree_setup *s, const ddtk_channels *ch, double tsamp, double **dms,
                  int **downsamp, int *ndm)
{
    *dms = NULL;
    *downsamp = NULL;
    if (s->cps > 0 || s->method == DDTK_TREE_PADDED)
        return dms_for(s, ch, tsamp, dms, downsamp, ndm);
    /* The largest sub-band within the smearing budget. */
    for (int cps = next_pow2(ch->nchans);; cps /= 2) {
        s->cps = cps;
        int rc = dms_for(s, ch, tsamp, dms, downsamp, ndm);
        if (rc || cps == 1
            || ddtk_tree_list_smear(s, ch, tsamp, *dms, *downsamp, *ndm) <= s->max_smear)
            return rc;
        free(*dms);
        free(*downsamp);
        *dms = NULL;
        *downsamp = NULL;
    }
}

/* ---- the engine plug-in ------------------------------------------------------------- */


/* The parameters, in the order of the P_* indices. */
static const char *const methods[] = { "piecewise", "padded", NULL };
enum { P_METHOD, P_SUB_CHANS, P_MAX_SMEAR, P_GPU_GROUP, P_CHUNK };
static const ddtk_param_info params[] = {
    { "method", "piecewise-linear sub-bands, or channels linear in f^-2 on a padded band",
      DDTK_PARAM_CHOICE, DDTK_TREE_PIECEWISE, 0, 1, 0, methods, 0 },
    { "sub_chans", "piecewise: channels per sub-band, a power of two (default: the largest "
      "within max_smear)", DDTK_PARAM_INT, 0, 1, 1 << 20, 0, NULL, 0 },
    { "max_smear", "smearing budget of Appendix A, W_tree/W", DDTK_PARAM_REAL, 1.1, 1,
      INFINITY, 0, NULL, 0 },
    { "gpu_group", "GPU: rows per shared-memory pass of stage 1, a power of two (default 128, "
      "halved while a pass does not fit the device)", DDTK_PARAM_INT, 0, 2, 1024, 0, NULL, 0 },
    { "chunk", "CPU: stage-1 output samples per task (raised to 4 x the channels per "
      "sub-band)",
      DDTK_PARAM_INT, 2048, 16, 1 << 20, 0, NULL, 0 },
};

/* What the tuner may vary (algo.h): speed only, the series stay the same. */
static const double chunk_values[] = { 512, 1024, 2048, 4096, 8192, 16384 };
static const double group_values[] = { 16, 32, 64, 128, 256, 512 };
static const ddtk_tunable tunables[] = {
    { "chunk", DDTK_TUNE_CPU, chunk_values, 6, 1 },
    { "gpu_group", DDTK_TUNE_GPU, group_values, 6, 1 },
};

/* The CPU half's working memory (ddtk_level.cpu). */
typedef struct tree_cpu {
    float *s1;                    /* stage-1 series: slot * cps + d' rows */
    size_t s1_floats;
    float *work;                  /* per thread: two cps x (chunk + cps - 1) buffers */
    size_t work_floats;
    const float **src;            /* stage 2: per DM and sub-band */
} tree_cpu;

/* Without sub_chans, the largest sub-band within the budget for the plan's
 * DMs, as ddtk_tree_dms chooses it. */
static int default_cps(const ddtk_plan *p)
{
    ddtk_tree_setup s = { .method = (int)ddtk_param(p, P_METHOD), .width = DDTK_PULSE_WIDTH,
                          .kdm = p->d.kdm, .max_smear = ddtk_param(p, P_MAX_SMEAR) };
    int cps = next_pow2(p->ch.nchans);
    for (; cps > 1; cps /= 2) {
        s.cps = cps;
        if (ddtk_tree_list_smear(&s, &p->ch, p->d.tsamp, p->dms, p->downsamp, p->d.ndm)
            <= s.max_smear)
            break;
    }
    return cps;
}

/* Route every DM: its pass and sweep in each sub-band, and the slots used. */
static int route(const ddtk_plan *p, ddtk_level *lv, ddtk_tree_level *t)
{
    const ddtk_tree_geom *g = &t->g;
    int nsb = g->nsb, span = g->cps > 1 ? g->cps - 1 : 1, jmax = 0;
    int *sweep = ddtk_malloc((size_t)lv->ndm * nsb * sizeof *sweep, "tree routes");
    t->sel = ddtk_malloc((size_t)lv->ndm * nsb * sizeof *t->sel, "tree routes");
    t->off = ddtk_malloc((size_t)lv->ndm * nsb * sizeof *t->off, "tree routes");
    if (!sweep || !t->sel || !t->off)
        return free(sweep), DDTK_ESYS;
    for (int d = 0; d < lv->ndm; d++)
        for (int n = 0; n < nsb; n++) {
            int *e = &sweep[d * nsb + n], *o = &t->off[d * nsb + n];
            if (!ddtk_tree_route(g, n, lv->dms[d], lv->tsamp, p->d.rounding, e, o))
                *e = -1;
            else if (*o < 0 || *e < 0)
                return free(sweep), ddtk_fail(DDTK_EUSAGE, "tree: the reference frequency "
                                              "must not be below the highest channel");
            else
                jmax = *e / span > jmax ? *e / span : jmax;
        }
    int *slot = ddtk_malloc((size_t)(jmax + 1) * nsb * sizeof *slot, "tree slots");
    t->slot_j = ddtk_malloc((size_t)(jmax + 1) * nsb * sizeof *t->slot_j, "tree slots");
    t->slot_n = ddtk_malloc((size_t)(jmax + 1) * nsb * sizeof *t->slot_n, "tree slots");
    t->slot_off = ddtk_calloc((size_t)(jmax + 1) * nsb, sizeof *t->slot_off, "tree slots");
    if (!slot || !t->slot_j || !t->slot_n || !t->slot_off)
        return free(sweep), free(slot), DDTK_ESYS;
    for (int i = 0; i < (jmax + 1) * nsb; i++)
        slot[i] = -1;
    lv->overlap = 0;
    for (int d = 0; d < lv->ndm; d++)
        for (int n = 0; n < nsb; n++) {
            int e = sweep[d * nsb + n], o = t->off[d * nsb + n];
            t->sel[d * nsb + n] = -1;
            if (e < 0)
                continue;
            int j = e / span, *s = &slot[j * nsb + n];
            if (*s < 0) {
                *s = t->nslot++;
                t->slot_j[*s] = j;
                t->slot_n[*s] = n;
            }
            t->sel[d * nsb + n] = *s * g->cps + (g->cps > 1 ? e - j * span : 0);
            t->slot_off[*s] = o > t->slot_off[*s] ? o : t->slot_off[*s];
            t->maxoff = o > t->maxoff ? o : t->maxoff;
            int64_t reach = (int64_t)t->slot_off[*s] + (int64_t)(j + 1) * (g->cps - 1);
            lv->overlap = reach > lv->overlap ? reach : lv->overlap;
        }
    free(sweep);
    free(slot);
    t->jmax = jmax;
    return DDTK_OK;
}

static void destroy(ddtk_level *lv)
{
    ddtk_tree_level *t = lv->state;
    tree_cpu *c = lv->cpu;
    if (c) {
        free(c->s1);
        free(c->work);
        free(c->src);
        free(c);
    }
    if (t) {
        ddtk_tree_geom_free(&t->g);
        free(t->slot_j);
        free(t->slot_n);
        free(t->slot_off);
        free(t->sel);
        free(t->off);
        free(t);
    }
    lv->state = lv->cpu = NULL;
}

static int create(const ddtk_plan *p, ddtk_level *lv)
{
    ddtk_tree_level *t = ddtk_calloc(1, sizeof *t, "tree plan");
    if (!t)
        return DDTK_ESYS;
    lv->state = t;
    const int method = (int)ddtk_param(p, P_METHOD);
    t->gpu_group = (int)ddtk_param(p, P_GPU_GROUP);
    t->chunk = (int)ddtk_param(p, P_CHUNK);
    int cps = ddtk_param_given(p, P_SUB_CHANS) ? (int)ddtk_param(p, P_SUB_CHANS)
                                               : default_cps(p);
    if (method == DDTK_TREE_PIECEWISE && !is_pow2(cps))
        return ddtk_fail(DDTK_EUSAGE, "tree: %d channels per sub-band is not a power of two",
                         cps);
    if (t->gpu_group && !is_pow2(t->gpu_group))
        return ddtk_fail(DDTK_EUSAGE, "gpu_group %d: must be a power of two from 2 to 1024",
                         t->gpu_group);
    int rc = ddtk_tree_geom_init(&t->g, &p->ch, p->d.kdm, method, cps);
    /* the routes: a sweep, a selection, an offset and a source per DM and sub-band */
    double routes = (double)lv->ndm * t->g.nsb;
    if (!rc && routes > INT_MAX)
        rc = ddtk_fail(DDTK_EUSAGE, "tree: %d DMs in %d sub-bands are over 2^31 routes",
                       lv->ndm, t->g.nsb);
    if (!rc)
        rc = ddtk_check_mem(&p->d, routes * (3 * sizeof(int) + sizeof(float *)),
                            "tree: the routing table");
    return rc ? rc : route(p, lv, t);
}

static int chunk_of(const ddtk_tree_level *t)
{
    return t->chunk > 4 * t->g.cps ? t->chunk : 4 * t->g.cps;
}

/* Grow a buffer to n floats (contents not kept). */
static int reserve(float **buf, size_t *have, size_t n)
{
    if (*have >= n)
        return DDTK_OK;
    free(*buf);
    *have = 0;
    if (!(*buf = ddtk_malloc_large(n * sizeof **buf, "tree buffers")))
        return DDTK_ESYS;
    *have = n;
    return DDTK_OK;
}

/* The input of one chunk of a slot: cps rows of len samples from t0, row q
 * the sum of the live rows at its position delayed by the pass's j * q. */
static void gather(const ddtk_tree_level *t, int s, const float *rows, size_t stride, int64_t t0,
                   int64_t len, float *a)
{
    const ddtk_tree_geom *g = &t->g;
    int j = t->slot_j[s], base = t->slot_n[s] * g->cps;
    for (int q = 0; q < g->cps; q++) {
        float *restrict dst = a + (size_t)q * len;
        int r0 = g->first[base + q], r1 = g->first[base + q + 1];
        if (r0 == r1)
            memset(dst, 0, (size_t)len * sizeof *dst);
        for (int i = r0; i < r1; i++) {
            const float *restrict x = rows + (size_t)g->rows[i] * stride + t0 + (int64_t)j * q;
            if (i == r0)
                memcpy(dst, x, (size_t)len * sizeof *dst);
            else
                for (int64_t u = 0; u < len; u++)
                    dst[u] += x[u];
        }
    }
}

static void stage1(const ddtk_tree_level *t, tree_cpu *cpu, const float *rows, size_t stride,
                   int64_t nout, size_t pitch)
{
    const int cps = t->g.cps, chunk = chunk_of(t);
    const int64_t nchunk = (nout + t->maxoff + chunk - 1) / chunk;
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(ddtk_threads())
    for (int s = 0; s < t->nslot; s++)
        for (int64_t c = 0; c < nchunk; c++) {
            int64_t t0 = c * chunk, want = nout + t->slot_off[s] - t0;
            if (want <= 0)
                continue;
            int64_t n = want < chunk ? want : chunk, len = n + cps - 1;
#ifdef _OPENMP
            float *a = cpu->work + (size_t)omp_get_thread_num() * 2 * cps * (chunk + cps - 1);
#else
            float *a = cpu->work;
#endif
            gather(t, s, rows, stride, t0, len, a);
            ddtk_tree_cpu(a, a + (size_t)cps * len, (size_t)len, cps, len,
                          cpu->s1 + (size_t)s * cps * pitch + t0, pitch);
        }
}

/* Stage-1 series and per-thread scratch (floats) for gulps of up to most outputs. */
static void cpu_sizes(const ddtk_tree_level *t, int64_t most, size_t *s1, size_t *work)
{
    const int cps = t->g.cps;
    int threads = ddtk_threads();
    *s1 = (size_t)t->nslot * cps * (size_t)ddtk_round_up(most + t->maxoff, 16);
    *work = (size_t)threads * 2 * cps * (size_t)(chunk_of(t) + cps - 1);
}

static int64_t cpu_bytes(const ddtk_level *lv, int64_t most)
{
    size_t s1, work;
    cpu_sizes(lv->state, most, &s1, &work);
    return (int64_t)(s1 + work) * (int64_t)sizeof(float);
}

/* Buffers for gulps of up to most outputs, before the stream runs. */
static int cpu_reserve(ddtk_level *lv, int64_t most)
{
    const ddtk_tree_level *t = lv->state;
    tree_cpu *c = lv->cpu;
    size_t s1, work;
    if (!c) {
        if (!(c = lv->cpu = ddtk_calloc(1, sizeof *c, "tree buffers")))
            return DDTK_ESYS;
        if (!(c->src = ddtk_malloc((size_t)lv->ndm * t->g.nsb * sizeof *c->src, "tree routes")))
            return DDTK_ESYS;
    }
    cpu_sizes(t, most, &s1, &work);
    int rc = reserve(&c->s1, &c->s1_floats, s1);
    return rc ? rc : reserve(&c->work, &c->work_floats, work);
}

static void cpu_gulp(const ddtk_plan *p, ddtk_level *lv, const float *rows, size_t stride,
                     int64_t nout, float *out, size_t ostride)
{
    (void)p;
    const ddtk_tree_level *t = lv->state;
    tree_cpu *c = lv->cpu;
    const int nsb = t->g.nsb;
    size_t pitch = (size_t)ddtk_round_up(nout + t->maxoff, 16);
    stage1(t, c, rows, stride, nout, pitch);
    for (int d = 0; d < lv->ndm; d++)
        for (int n = 0; n < nsb; n++) {
            int sel = t->sel[d * nsb + n];
            c->src[d * nsb + n] = sel < 0 ? NULL : c->s1 + (size_t)sel * pitch
                                                       + t->off[d * nsb + n];
        }
    ddtk_tree_combine_cpu(c->src, nsb, lv->ndm, nout, out, ostride);
}

/* ---- the tree's own DMs ------------------------------------------------------- */

static double desc_param(const ddtk_plan_desc *d, const char *name)
{
    double v = 0;
    ddtk_plan_desc_get_param(d, name, &v);
    return v;
}

/* ddtk_tree_dms for the description's parameters; sub_chans resolved into d. */
static int own_dms(ddtk_plan_desc *d, const ddtk_channels *ch, double dm_min, double dm_max,
                   double width, int scrunch, double **dms, int **downsamp, int *ndm)
{
    ddtk_tree_setup s = {
        .method = (int)desc_param(d, "method"), .cps = (int)desc_param(d, "sub_chans"),
        .scrunch = scrunch, .dm_min = dm_min, .dm_max = dm_max, .width = width, .kdm = d->kdm,
        .max_smear = desc_param(d, "max_smear"),
    };
    int rc = ddtk_tree_dms(&s, ch, d->tsamp, dms, downsamp, ndm);
    return rc ? rc : ddtk_plan_desc_set_param(d, "sub_chans", s.cps);
}

/* ---- ddplan's model ---------------------------------------------------------- */

/* A1 with A3 at the lowest frequency, sub-bands of chans_per_sub channels:
 * (1/8) h^2 * 6 K DM / f^4. */
static double model_smear(const ddtk_obs *o, const ddtk_dmplan_row *r, int chans_per_sub)
{
    double dm = r->dm_lo + (r->ndm - 1) * r->dm_step, sub_bw = chans_per_sub * o->chan_bw;
    double flo = o->flo;
    return 0.75 * o->kdm * dm * sub_bw * sub_bw / (flo * flo * flo * flo);
}

/* Barsdell 3.2: N log2 N per pass of N = nchans padded to a power of two,
 * one pass per N DMs. */
static double model_adds(const ddtk_obs *o, int ndm, int dms_per_sub, int chans_per_sub)
{
    (void)dms_per_sub, (void)chans_per_sub;
    int n2 = next_pow2(o->nchans), log2n = 1;
    while ((1 << log2n) < n2)
        log2n++;
    return ceil((double)ndm / n2) * n2 * log2n;
}

extern const struct ddtk_gpu_algo ddtk_gpu_tree;

const ddtk_algo ddtk_algo_tree = {
    .name = "tree",
    .label = "tree",
    .own_dms = own_dms,
    .model_smear = model_smear,
    .model_adds = model_adds,
    .params = params,
    .nparams = (int)(sizeof params / sizeof params[0]),
    .tunables = tunables,
    .ntunables = (int)(sizeof tunables / sizeof tunables[0]),
    .create = create,
    .cpu_reserve = cpu_reserve,
    .cpu_bytes = cpu_bytes,
    .cpu_gulp = cpu_gulp,
    .destroy = destroy,
    .gpu = DDTK_GPU_HALF(ddtk_gpu_tree),
};
