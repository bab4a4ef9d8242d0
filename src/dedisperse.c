/*
 * dedisperse.c - the streaming direct-dedispersion driver (plan, execute, destroy).
 *
 * The input is read in gulps of `step` new spectra. Each gulp is unpacked
 * behind the last `keep` spectra of the previous one (keep >= the largest
 * delay, rounded up to 8 spectra so every read starts on a byte boundary for
 * 1/2/4-bit data), so every output sample is computed exactly once from
 * fully covered input. Memory is bounded by the gulp, not the file length.
 * The final partial gulp is always processed.
 *
 * On the GPU backend (--backend gpu, or auto with a usable GPU) the plan hands
 * the whole run to the CUDA driver (cuda/pipeline.cu) after the shared
 * channel and delay tables (and the time-scrunch plan) are built; nothing
 * below the dispatch runs then.
 */
#include "ddtk.h"
#include "scrunch.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define DEFAULT_STEP 16384
#define DEFAULT_MAX_MEM ((int64_t)2 << 30)
#define ROW_ALIGN 16            /* floats: rows start on 64-byte boundaries */

struct ddtk_direct_plan {
    ddtk_input *in;
    ddtk_options opt;
    ddtk_channels ch;
    ddtk_delays dl;
    int pol, nkilled;
    int64_t step, keep, stride;
    int64_t ostride;            /* output row: the last gulp may hold step + 7 samples */
    uint8_t *raw;
    float *buf, *out;
    double *sums;               /* per DM, for --pad */
    ddtk_scrunch *sc;           /* time scrunching (scrunch.c), NULL if none */
    ddtk_gpu_direct *gpu;       /* non-NULL: the run is on the GPU */
};

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

static int64_t plan_bytes(const ddtk_direct_plan *p, int64_t step)
{
    int64_t stride = round_up(p->keep + step, ROW_ALIGN);
    int64_t rows = (int64_t)p->ch.nlive * stride * 4;
    int64_t outputs = (int64_t)p->dl.ndm * (step + 8) * 4;
    if (p->sc) {        /* halved rows of all levels add at most one more buffer, and
                         * each level's output rows span keep + step (scrunch.c) */
        rows *= 2;
        outputs = (int64_t)p->dl.ndm * (p->keep + step + 1) * 4;
    }
    return rows + outputs + ddtk_input_bytes(p->in, p->keep + step);
}

static int choose_step(ddtk_direct_plan *p)
{
    int64_t max_mem = p->opt.max_mem > 0 ? p->opt.max_mem : DEFAULT_MAX_MEM;
    int64_t step = p->opt.gulp > 0 ? round_up(p->opt.gulp, 8)
                                   : round_up(DEFAULT_STEP > p->keep ? DEFAULT_STEP : p->keep, 8);
    if (p->in->nsamples >= 0 && step > round_up(p->in->nsamples, 8))
        step = round_up(p->in->nsamples > 8 ? p->in->nsamples : 8, 8);
    while (p->opt.gulp <= 0 && step > 8 && plan_bytes(p, step) > max_mem)
        step = round_up(step / 2, 8);
    if (plan_bytes(p, step) > max_mem)
        return ddtk_fail(DDTK_EUSAGE, "%s: a gulp of %lld spectra plus the maximum delay of %d "
                         "needs %.1f MiB, over --max-mem %.1f MiB", p->in->name,
                         (long long)step, p->dl.maxdelay, plan_bytes(p, step) / 1048576.0,
                         max_mem / 1048576.0);
    if (p->sc)
        step = round_up(step, ddtk_scrunch_max_factor(p->sc));
    p->step = step;
    p->stride = round_up(p->keep + step, ROW_ALIGN);
    p->ostride = step + 8;
    return DDTK_OK;
}

static int allocate(ddtk_direct_plan *p)
{
    size_t rows = (size_t)p->ch.nlive * (size_t)p->stride;
    p->raw = ddtk_malloc((size_t)ddtk_input_bytes(p->in, p->keep + p->step), "raw input");
    p->buf = aligned_alloc(64, rows * sizeof(float));
    if (!p->buf)
        return ddtk_fail(DDTK_ESYS, "out of memory allocating %zu bytes for the input gulp",
                         rows * sizeof(float));
    if (p->sc)          /* scrunched runs keep their outputs per level (scrunch.c) */
        return p->raw ? DDTK_OK : DDTK_ESYS;
    p->out = ddtk_malloc((size_t)p->dl.ndm * (size_t)p->ostride * sizeof(float), "output gulp");
    p->sums = ddtk_calloc((size_t)p->dl.ndm, sizeof(double), "output sums");
    return p->raw && p->out && p->sums ? DDTK_OK : DDTK_ESYS;
}

/* Spectra kept between gulps: the largest delay; with per-DM scrunch factors,
 * what the slowest resolution needs, aligned to the largest factor. */
static int set_keep(ddtk_direct_plan *p, const double *dms, int ndm)
{
    int rc = DDTK_OK;
    p->keep = round_up(p->dl.maxdelay, 8);
    if (p->opt.downsamp)
        rc = ddtk_scrunch_create(&p->sc, &p->ch, p->in->hdr.tsamp, dms, p->opt.downsamp, ndm,
                                 &p->opt);
    if (!rc && p->sc) {
        int64_t keep = ddtk_scrunch_keep(p->sc), align = ddtk_scrunch_max_factor(p->sc);
        p->keep = round_up(keep > p->keep ? keep : p->keep, align > 8 ? align : 8);
    }
    return rc;
}

static int load_killfile(ddtk_direct_plan *p, uint8_t **kill)
{
    *kill = NULL;
    if (!p->opt.killfile)
        return DDTK_OK;
    int rc = ddtk_killfile_read(p->opt.killfile, p->in->hdr.nchans, kill, &p->nkilled);
    if (!rc && p->opt.verbose)
        ddtk_msg("%s: %d of %d channels killed", p->opt.killfile, p->nkilled, p->in->hdr.nchans);
    return rc;
}

int ddtk_direct_plan_create(ddtk_direct_plan **plan, ddtk_input *in,
                            const double *dms, int ndm, const ddtk_options *opt)
{
    ddtk_direct_plan *p = ddtk_calloc(1, sizeof *p, "plan");
    uint8_t *kill = NULL;
    int rc, use_gpu = 0;
    *plan = NULL;
    if (!p)
        return DDTK_ESYS;
    p->in = in;
    p->opt = *opt;
#ifdef _OPENMP
    if (opt->threads > 0)
        omp_set_num_threads(opt->threads);
#endif
    if (ndm < 1)
        rc = ddtk_fail(DDTK_EUSAGE, "no DMs to dedisperse");
    else if (!(rc = ddtk_backend_resolve(opt->backend, opt->gpu, opt->verbose, &use_gpu)) && !(rc = ddtk_resolve_pol(&in->hdr, opt->pol, in->name, &p->pol))
             && !(rc = load_killfile(p, &kill))
             && !(rc = ddtk_channels_init(&p->ch, &in->hdr, kill, opt->fref))
             && !(rc = ddtk_delays_init(&p->dl, &p->ch, in->hdr.tsamp, dms, ndm, opt->kdm,
                                        opt->rounding))
             && !(rc = set_keep(p, dms, ndm))) {
        if (in->nsamples == 0)
            rc = ddtk_fail(DDTK_EDATA, "%s: no data after the header (shorter than one sample)",
                           in->name);
        else if (in->nsamples >= 0 && in->nsamples <= p->dl.maxdelay)
            rc = ddtk_fail(DDTK_EDATA, "%s: %lld samples is not longer than the maximum delay "
                           "(%d samples at DM %g)", in->name, (long long)in->nsamples,
                           p->dl.maxdelay, dms[ndm - 1]);
        else if (use_gpu)
            rc = ddtk_gpu_direct_create(&p->gpu, in, &p->ch, &p->dl, p->sc, p->keep, p->pol, opt);
        else if (!(rc = choose_step(p)) && !(rc = allocate(p)) && p->sc)
            rc = ddtk_scrunch_alloc(p->sc, p->keep, p->step);
    }
    free(kill);
    if (rc) {
        ddtk_direct_plan_destroy(p);
        return rc;
    }
    *plan = p;
    return DDTK_OK;
}

const ddtk_delays *ddtk_direct_plan_delays(const ddtk_direct_plan *plan)
{
    return &plan->dl;
}

const ddtk_channels *ddtk_direct_plan_channels(const ddtk_direct_plan *plan)
{
    return &plan->ch;
}

const char *ddtk_direct_plan_backend(const ddtk_direct_plan *plan)
{
    return plan->gpu ? "gpu" : "cpu";
}

/* --zerodm: subtract each spectrum's mean over the live channels. */
static void zero_dm(ddtk_direct_plan *p, int64_t col, int64_t n)
{
    double *mean = calloc((size_t)n, sizeof *mean);
    if (!mean)
        return;
    for (int r = 0; r < p->ch.nlive; r++) {
        const float *row = p->buf + (size_t)r * p->stride + col;
        for (int64_t t = 0; t < n; t++)
            mean[t] += row[t];
    }
    for (int64_t t = 0; t < n; t++)
        mean[t] /= p->ch.nlive;
    for (int r = 0; r < p->ch.nlive; r++) {
        float *row = p->buf + (size_t)r * p->stride + col;
        for (int64_t t = 0; t < n; t++)
            row[t] -= (float)mean[t];
    }
    free(mean);
}

/* Read and unpack up to n spectra at column `fill` of the rows. */
static int read_gulp(ddtk_direct_plan *p, int64_t fill, int64_t n, int64_t *got)
{
    int rc = ddtk_input_read(p->in, p->raw, n, got);
    if (rc || *got == 0)
        return rc;
    ddtk_unpack(&p->in->hdr, p->raw, *got, p->ch.row, p->pol, p->buf + fill, (size_t)p->stride);
    if (p->opt.zerodm)
        zero_dm(p, fill, *got);
    return DDTK_OK;
}

static int write_gulp(ddtk_direct_plan *p, ddtk_outset *out, int64_t nout)
{
    for (int d = 0; d < p->dl.ndm; d++) {
        const float *series = p->out + (size_t)d * (size_t)p->ostride;
        if (p->opt.pad) {
            double s = 0;
            for (int64_t t = 0; t < nout; t++)
                s += series[t];
            p->sums[d] += s;
        }
        int rc = ddtk_outset_write(out, d, series, nout);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

/* --pad: extend every series to the input length with its mean. */
static int write_padding(ddtk_direct_plan *p, ddtk_outset *out, int64_t nout)
{
    int rc = DDTK_OK;
    for (int d = 0; !rc && d < p->dl.ndm; d++)
        rc = ddtk_outset_pad(out, d, nout > 0 ? (float)(p->sums[d] / (double)nout) : 0.0f,
                             p->dl.maxdelay);
    return rc;
}

/* Move the last `keep` spectra of every row to its front. */
static void shift_rows(ddtk_direct_plan *p, int64_t fill)
{
    for (int r = 0; r < p->ch.nlive; r++) {
        float *row = p->buf + (size_t)r * p->stride;
        memmove(row, row + p->step, (size_t)(fill - p->step) * sizeof *row);
    }
}

int ddtk_check_run_length(const ddtk_input *in, int32_t maxdelay, int64_t total_out)
{
    if (in->samples_read == 0)
        return ddtk_fail(DDTK_EDATA, "%s: no data after the header (shorter than one sample)",
                         in->name);
    if (total_out == 0)
        return ddtk_fail(DDTK_EDATA, "%s: %lld samples is not longer than the maximum delay "
                         "(%d samples)", in->name, (long long)in->samples_read, maxdelay);
    return DDTK_OK;
}

int ddtk_direct_plan_execute(ddtk_direct_plan *p, ddtk_outset *out, ddtk_run_stats *stats)
{
    const int64_t cap = p->keep + p->step;
    int64_t fill = 0, total_out = 0;
    double t_start = ddtk_now(), kernel = 0;
    ddtk_progress prog;
    int rc = DDTK_OK;

    if (p->gpu) {
        rc = ddtk_gpu_direct_execute(p->gpu, out, stats);
        stats->nkilled = p->nkilled;
        return rc;
    }
    ddtk_progress_start(&prog, "samples", p->in->nsamples, p->opt.quiet, p->opt.verbose);
    for (;;) {
        int64_t got;
        if ((rc = read_gulp(p, fill, cap - fill, &got)))
            break;
        fill += got;
        int last = p->in->eof;
        int64_t nout = last ? fill - p->dl.maxdelay : p->step;
        if (p->sc) {
            double k0 = ddtk_now();
            rc = ddtk_scrunch_gulp(p->sc, p->buf, (size_t)p->stride, fill, last,
                                   ddtk_direct_cpu, out, &nout);
            kernel += ddtk_now() - k0;
            if (rc)
                break;
            total_out += nout;
        } else if (nout > 0) {
            double k0 = ddtk_now();
            ddtk_direct_cpu(p->buf, (size_t)p->stride, p->ch.nlive, nout, p->dl.delay,
                            p->dl.ndm, p->out, (size_t)p->ostride);
            kernel += ddtk_now() - k0;
            if ((rc = write_gulp(p, out, nout)))
                break;
            total_out += nout;
        }
        ddtk_progress_update(&prog, p->in->samples_read);
        if (last)
            break;
        shift_rows(p, fill);
        fill -= p->step;
    }
    ddtk_progress_end(&prog);
    if (!rc)
        rc = ddtk_check_run_length(p->in, p->dl.maxdelay, total_out);
    if (!rc && p->opt.pad)
        rc = p->sc ? ddtk_scrunch_pad(p->sc, out) : write_padding(p, out, total_out);
    stats->nin = p->in->samples_read;
    stats->nout = total_out;
    stats->ndm = p->dl.ndm;
    stats->nlive = p->ch.nlive;
    stats->nkilled = p->nkilled;
    stats->kernel = kernel;
    stats->adds = p->sc ? ddtk_scrunch_adds(p->sc) : (double)p->dl.ndm * total_out * p->ch.nlive;
    stats->wall = ddtk_now() - t_start;
    stats->tobs = (double)p->in->samples_read * p->in->hdr.tsamp;
    stats->backend = "cpu";
    return rc;
}

void ddtk_direct_plan_destroy(ddtk_direct_plan *p)
{
    if (!p)
        return;
    ddtk_gpu_direct_destroy(p->gpu);
    ddtk_channels_free(&p->ch);
    ddtk_delays_free(&p->dl);
    free(p->raw);
    free(p->buf);
    free(p->out);
    free(p->sums);
    ddtk_scrunch_destroy(p->sc);
    free(p);
}
