/*
 * engine.c - dedispersion plans: from a description (arrays or a SIGPROC
 * header) to channel tables, time-scrunch levels and one level plan of the
 * algorithm (algo.h) per level, and what a plan tells its callers. Running
 * one is stream.c's; what both streaming layers compute alike is gulp.c's.
 *
 * The plan is the geometry only: it holds no file. Streaming state (gulp
 * buffers, device memory) is made by the first run and kept for the next
 * while the gulp it needs stays the same.
 */
#include "engine.h"
#include "internal.h"

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

/* ---- checking and copying the description ---------------------------------- */

static const char *plan_name(const ddtk_plan_desc *d)
{
    return d->name ? d->name : "plan";
}

int64_t ddtk_plan_max_mem(const ddtk_plan_desc *d)
{
    return d->max_mem > 0 ? d->max_mem : DDTK_DEFAULT_MAX_MEM;
}

int ddtk_check_mem(const ddtk_plan_desc *d, double bytes, const char *what)
{
    double most = (double)ddtk_plan_max_mem(d);
    if (!(bytes <= most))
        return ddtk_fail(DDTK_EUSAGE, "%s would take %.0f MiB, over the memory bound "
                         "%.0f MiB", what, bytes / 1048576, most / 1048576);
    return DDTK_OK;
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

/* Group the DMs by factor 2^k; level k gets its DMs and an algorithm instance. */
static int build_levels(ddtk_plan *p)
{
    int top = 0, rc = DDTK_OK;
    for (int i = 0; i < p->d.ndm; i++) {
        int k = ddtk_plan_level(p, i);
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
    /* The contexts are made while the levels are built and the outputs opened;
     * for --gpu all only the first GPU's: the run may take it alone (its
     * length decides), and the driver makes contexts one at a time, so
     * another GPU's would delay it. */
    if (!rc && p->use_gpu)
        p->warm = ddtk_gpu_warm_start(p->gpus, p->d.ngpus == DDTK_GPUS_ALL ? 1 : p->ngpu);
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

double ddtk_plan_tsamp(const ddtk_plan *p)
{
    return p->d.tsamp;
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

int64_t ddtk_plan_nout(const ddtk_plan *p, int dm, int64_t nsamps)
{
    return ddtk_level_nout(p, ddtk_plan_level(p, dm), 0, nsamps, 1);
}
