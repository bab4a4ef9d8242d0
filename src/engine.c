/*
 * engine.c - dedispersion plans: from a description (arrays or a SIGPROC
 * header) to channel tables, time-scrunch levels and one algorithm plug-in
 * instance per level; execution on an in-memory block or a streamed input,
 * dispatched to the CPU or GPU streaming layer; the split of the DMs
 * between GPUs and the level views that hold each GPU's share.
 *
 * The plan is the geometry only: it holds no file. Streaming state (gulp
 * buffers, device memory) is made by the first run and kept for the next
 * while the gulp it needs stays the same.
 */
#include "engine.h"
#include "internal.h"
#include "dmplan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ddtk_plan_desc_init(ddtk_plan_desc *d)
{
    memset(d, 0, sizeof *d);
    d->nbits = 32;
    d->nifs = 1;
    d->pol = DDTK_POL_DEFAULT;
    d->kdm = DDTK_KDM_DEFAULT;
    d->rounding = DDTK_ROUND_NEAREST;
    d->backend = DDTK_BACKEND_AUTO;
    d->gpu_config.lane_variant = d->gpu_config.float_variant = -1;
}

int ddtk_plan_desc_header(ddtk_plan_desc *d, const ddtk_header *h, double **freqs)
{
    d->nchans = h->nchans;
    d->tsamp = h->tsamp;
    d->chan_bw = fabs(h->foff);
    d->nbits = h->nbits;
    d->nifs = h->nifs;
    d->signed_data = h->signed_data == 1;
    int rc = ddtk_header_freqs(h, freqs);
    d->freqs = rc ? NULL : *freqs;
    return rc;
}

int64_t ddtk_round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* ---- checking and copying the description ---------------------------------- */

static const char *plan_name(const ddtk_plan_desc *d)
{
    return d->name ? d->name : "plan";
}

static int check_desc(const ddtk_plan_desc *d)
{
    const char *name = plan_name(d);
    if (d->nchans < 1 || !d->freqs)
        return ddtk_fail(DDTK_EUSAGE, "%s: no channels to dedisperse", name);
    if (!(d->tsamp > 0) || !isfinite(d->tsamp))
        return ddtk_fail(DDTK_EDATA, "%s: sample time %g is not positive", name, d->tsamp);
    for (int c = 0; c < d->nchans; c++)
        if (!(d->freqs[c] > 0) || !isfinite(d->freqs[c]))
            return ddtk_fail(DDTK_EDATA, "%s: channel %d has frequency %g MHz; dedispersion "
                             "needs positive frequencies", name, c, d->freqs[c]);
    if (d->ndm < 1 || !d->dms)
        return ddtk_fail(DDTK_EUSAGE, "no DMs to dedisperse");
    for (int i = 0; i < d->ndm; i++)
        if (!(d->dms[i] >= 0) || !isfinite(d->dms[i]))
            return ddtk_fail(DDTK_EUSAGE, "DM %g: DMs must be finite and >= 0", d->dms[i]);
    if (!(d->kdm > 0))
        return ddtk_fail(DDTK_EUSAGE, "dispersion constant %g is not positive", d->kdm);
    int rc = ddtk_params_check(d);
    return rc ? rc : ddtk_config_check(&d->cpu, &d->gpu_config);
}

static void *copy_of(const void *src, size_t bytes, int *rc)
{
    if (!src || *rc)
        return NULL;
    void *dst = ddtk_malloc(bytes, "plan");
    if (!dst)
        *rc = DDTK_ESYS;
    else
        memcpy(dst, src, bytes);
    return dst;
}

static int copy_desc(ddtk_plan *p, const ddtk_plan_desc *d)
{
    int rc = DDTK_OK;
    p->d = *d;
    p->freqs = copy_of(d->freqs, (size_t)d->nchans * sizeof *d->freqs, &rc);
    p->kill = copy_of(d->kill, (size_t)d->nchans, &rc);
    p->dms = copy_of(d->dms, (size_t)d->ndm * sizeof *d->dms, &rc);
    p->downsamp = copy_of(d->downsamp, (size_t)d->ndm * sizeof *d->downsamp, &rc);
    for (int i = 0; i < DDTK_MAX_PARAMS; i++)
        p->d.param_per_dm[i] = p->per_dm[i] = copy_of(d->param_per_dm[i],
                                                      (size_t)d->ndm * sizeof(int), &rc);
    p->d.freqs = p->freqs;
    p->d.kill = p->kill;
    p->d.dms = p->dms;
    p->d.downsamp = p->downsamp;
    p->d.name = NULL;
    ddtk_header_init(&p->fmt);
    p->fmt.nchans = d->nchans;
    p->fmt.nbits = d->nbits;
    p->fmt.nifs = d->nifs;
    p->fmt.signed_data = (int8_t)d->signed_data;
    p->fmt.tsamp = d->tsamp;
    return rc;
}

/* ---- levels ------------------------------------------------------------------- */

static int log2_factor(int f)
{
    int k = 0;
    while (k < DDTK_MAX_LEVELS && (1 << k) < f)
        k++;
    return k < DDTK_MAX_LEVELS && (1 << k) == f ? k : -1;
}

/* Group the DMs by factor 2^k; level k gets its DMs and an algorithm instance. */
static int build_levels(ddtk_plan *p)
{
    int top = 0, rc = DDTK_OK;
    for (int i = 0; i < p->d.ndm; i++) {
        int k = p->downsamp ? log2_factor(p->downsamp[i]) : 0;
        if (k < 0)
            return ddtk_fail(DDTK_EUSAGE, "scrunch factor %d at DM %g is not a power of two "
                             "1..%d", p->downsamp[i], p->dms[i], 1 << (DDTK_MAX_LEVELS - 1));
        top = k > top ? k : top;
    }
    p->nlevels = top + 1;
    p->first = -1;
    for (int k = 0; !rc && k < p->nlevels; k++) {
        ddtk_level *lv = &p->lv[k];
        lv->k = k;
        lv->tsamp = p->d.tsamp * (1 << k);
        lv->dms = ddtk_malloc((size_t)p->d.ndm * sizeof *lv->dms, "level DMs");
        lv->index = ddtk_malloc((size_t)p->d.ndm * sizeof *lv->index, "level DMs");
        if (!lv->dms || !lv->index)
            return DDTK_ESYS;
        for (int i = 0; i < p->d.ndm; i++)
            if ((p->downsamp ? p->downsamp[i] : 1) == 1 << k) {
                lv->dms[lv->ndm] = p->dms[i];
                lv->index[lv->ndm++] = i;
            }
        if (lv->ndm) {
            p->first = p->first < 0 ? k : p->first;
            rc = p->algo->create(p, lv);
        }
    }
    return rc;
}

/* Spectra kept between gulps: the largest delay at full resolution, and what
 * the slowest level needs, aligned to the largest factor. */
static int set_keep(ddtk_plan *p)
{
    double dm_max = 0;
    for (int i = 0; i < p->d.ndm; i++)
        dm_max = p->dms[i] > dm_max ? p->dms[i] : dm_max;
    int rc = ddtk_max_delay(&p->ch, p->d.tsamp, dm_max, p->d.kdm, p->d.rounding, &p->maxdelay);
    int64_t need = p->maxdelay;
    for (int k = 0; k < p->nlevels; k++)
        if (p->lv[k].ndm && (p->lv[k].overlap << k) > need)
            need = p->lv[k].overlap << k;
    p->align = 1 << (p->nlevels - 1);
    p->keep = ddtk_round_up(need, p->align > 8 ? p->align : 8);
    return rc;
}

static int plan_backend(ddtk_plan *p)
{
    if (!p->algo->gpu && ddtk_have_cuda()) {
        if (p->d.backend == DDTK_BACKEND_GPU)
            return ddtk_fail(DDTK_EUSAGE, "backend gpu: the %s algorithm has no GPU kernel "
                             "in this build", p->algo->name);
        p->use_gpu = 0;
        return DDTK_OK;
    }
    int rc = ddtk_backend_resolve_gpus(p->d.backend, p->d.gpus, p->d.ngpus, p->d.gpu,
                                       p->d.verbose, &p->use_gpu, p->gpus, &p->ngpu);
    p->d.gpus = NULL;             /* the caller's array: the plan keeps p->gpus */
    if (!rc && p->use_gpu)        /* while the levels are built and the outputs opened */
        p->warm = ddtk_gpu_warm_start(p->gpus, p->ngpu);
    return rc;
}

int ddtk_plan_create(ddtk_plan **plan, const ddtk_plan_desc *d)
{
    ddtk_plan *p;
    int rc = check_desc(d);
    *plan = NULL;
    if (rc)
        return rc;
    if (!(p = ddtk_calloc(1, sizeof *p, "plan")))
        return DDTK_ESYS;
    p->algo = ddtk_algo_find(d->algorithm);
    p->d.algorithm = p->algo->name;
    int threads = ddtk_threads_set(d->threads);
    if (!(rc = copy_desc(p, d)) && !(rc = plan_backend(p))
        && !(rc = ddtk_resolve_pol(&p->fmt, d->pol, plan_name(d), &p->pol))
        && !(rc = ddtk_channels_from_freqs(&p->ch, d->nchans, p->freqs, d->chan_bw, p->kill,
                                           d->fref))
        && !(rc = build_levels(p)))
        rc = set_keep(p);
    ddtk_threads_set(threads);
    if (rc) {
        ddtk_plan_destroy(p);
        return rc;
    }
    *plan = p;
    return DDTK_OK;
}

void ddtk_plan_destroy(ddtk_plan *p)
{
    if (!p)
        return;
    ddtk_gpu_warm_join(p->warm);
    ddtk_cpu_stream_free(p->cpu);
    ddtk_gpu_stream_free(p->gpu);
    for (int k = 0; k < p->nlevels; k++) {
        if (p->lv[k].ndm)
            p->algo->destroy(&p->lv[k]);
        free(p->lv[k].dms);
        free(p->lv[k].index);
    }
    ddtk_channels_free(&p->ch);
    free(p->freqs);
    free(p->kill);
    free(p->dms);
    free(p->downsamp);
    for (int i = 0; i < DDTK_MAX_PARAMS; i++)
        free(p->per_dm[i]);
    free(p);
}

/* ---- what a plan produces ------------------------------------------------------ */

int ddtk_plan_ndm(const ddtk_plan *p)
{
    return p->d.ndm;
}

const double *ddtk_plan_dms(const ddtk_plan *p)
{
    return p->dms;
}

int ddtk_plan_downsamp(const ddtk_plan *p, int dm)
{
    return p->downsamp ? p->downsamp[dm] : 1;
}

int32_t ddtk_plan_max_delay(const ddtk_plan *p)
{
    return p->maxdelay;
}

int ddtk_plan_nlive(const ddtk_plan *p)
{
    return p->ch.nlive;
}

double ddtk_plan_fref(const ddtk_plan *p)
{
    return p->ch.fref;
}

void ddtk_plan_band(const ddtk_plan *p, double *fmin, double *fmax, double *chan_bw)
{
    *fmin = p->ch.fmin;
    *fmax = p->ch.fmax;
    *chan_bw = p->ch.chan_bw;
}

const char *ddtk_plan_backend(const ddtk_plan *p)
{
    return p->use_gpu ? "gpu" : "cpu";
}

const char *ddtk_plan_algorithm(const ddtk_plan *p)
{
    return p->algo->name;
}

static int level_of(const ddtk_plan *p, int dm)
{
    return p->downsamp ? log2_factor(p->downsamp[dm]) : 0;
}

int64_t ddtk_plan_nout(const ddtk_plan *p, int dm, int64_t nsamps)
{
    int k = level_of(p, dm);
    int64_t n = (nsamps >> k) - p->lv[k].overlap;
    return n > 0 ? n : 0;
}

int64_t ddtk_level_nout(const ddtk_plan *p, int k, int64_t step, int64_t fill, int last)
{
    int64_t n = last ? (fill >> k) - p->lv[k].overlap : step >> k;
    return n > 0 ? n : 0;
}

int64_t ddtk_plan_raw_bytes(const ddtk_plan *p, int64_t n)
{
    int64_t bits = (int64_t)p->fmt.nchans * p->fmt.nifs * p->fmt.nbits;
    return (n * bits + 7) / 8;
}

int ddtk_choose_step(const ddtk_plan *p, const ddtk_source *src, int64_t preferred,
                     int64_t most, int (*fits)(const ddtk_plan *, int64_t, void *), void *ctx,
                     int64_t *step)
{
    int64_t s = p->d.gulp > 0 ? ddtk_round_up(p->d.gulp, 8)
                              : ddtk_round_up(preferred > p->keep ? preferred : p->keep, 8);
    if (src->nsamples >= 0 && s > ddtk_round_up(src->nsamples, 8))
        s = ddtk_round_up(src->nsamples > 8 ? src->nsamples : 8, 8);
    s = s < most ? s : most;
    while (p->d.gulp <= 0 && s > 8 && !fits(p, s, ctx))
        s = ddtk_round_up(s / 2, 8);
    *step = s;
    return fits(p, s, ctx);
}

/* ---- several GPUs: the DM split ------------------------------------------------------- */

/* starts[k][j]: whether a share may start at level k's DM j (j = ndm: the end). */
static int level_starts(const ddtk_plan *p, uint8_t *starts[], double *lcost[])
{
    for (int k = 0; k < p->nlevels; k++) {
        const ddtk_level *lv = &p->lv[k];
        starts[k] = ddtk_malloc((size_t)lv->ndm + 1, "DM split");
        lcost[k] = ddtk_malloc(((size_t)lv->ndm + 1) * sizeof *lcost[k], "DM split");
        if (!starts[k] || !lcost[k])
            return DDTK_ESYS;
        for (int j = 0; j < lv->ndm; j++) {
            int start = 1;
            double c = p->algo->split_cost ? p->algo->split_cost(lv, j, &start) : 1.0;
            lcost[k][j] = c / (1 << k);
            starts[k][j] = (uint8_t)(start || j == 0);
        }
        starts[k][lv->ndm] = 1;
    }
    return DDTK_OK;
}

int ddtk_plan_split(const ddtk_plan *p, int nparts, int *first)
{
    const int n = p->d.ndm;
    uint8_t *starts[DDTK_MAX_LEVELS] = { 0 };
    double *lcost[DDTK_MAX_LEVELS] = { 0 };
    int pos[DDTK_MAX_LEVELS] = { 0 };
    double *cost = ddtk_malloc((size_t)n * sizeof *cost, "DM split");
    uint8_t *cut = ddtk_malloc((size_t)n, "DM split");
    int rc = cost && cut ? level_starts(p, starts, lcost) : DDTK_ESYS;
    /* A range starting at plan DM i cuts every level where its DMs so far end:
     * each of those cuts must be allowed. */
    for (int i = 0; !rc && i < n; i++) {
        cut[i] = 1;
        for (int k = 0; k < p->nlevels; k++)
            cut[i] &= starts[k][pos[k]];
        int k = level_of(p, i);
        cost[i] = lcost[k][pos[k]++];
    }
    if (!rc)
        rc = ddtk_split_cost(cost, cut, n, nparts, first);
    for (int k = 0; k < DDTK_MAX_LEVELS; k++) {
        free(starts[k]);
        free(lcost[k]);
    }
    free(cost);
    free(cut);
    return rc;
}

int ddtk_level_view(const ddtk_plan *p, int k, int dm0, int dm1, ddtk_level *v)
{
    const ddtk_level *lv = &p->lv[k];
    int lo = 0, hi;
    while (lo < lv->ndm && lv->index[lo] < dm0)
        lo++;
    for (hi = lo; hi < lv->ndm && lv->index[hi] < dm1; hi++)
        ;
    *v = *lv;
    v->dms += lo;
    v->index += lo;
    v->ndm = hi - lo;
    if (v->ndm == lv->ndm)
        return DDTK_OK;
    v->state = v->cpu = NULL;
    v->overlap = 0;
    v->view = 1;
    v->stage_s[0] = v->stage_s[1] = 0;
    int rc = v->ndm ? p->algo->create(p, v) : DDTK_OK;
    if (rc)
        ddtk_level_view_free(p, v);
    return rc;
}

void ddtk_level_view_free(const ddtk_plan *p, ddtk_level *v)
{
    if (v->view && v->state)
        p->algo->destroy(v);
    v->state = NULL;
}
