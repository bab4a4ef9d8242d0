/*
 * stream_cpu.c - the CPU streaming layer: any plug-in, any source, in gulps.
 *
 * The input is read in gulps of `step` new spectra. Each gulp is unpacked
 * behind the last `keep` spectra of the previous one (keep >= the largest
 * delay, rounded up to 8 spectra so every read starts on a byte boundary for
 * 1/2/4-bit data), so every output sample is computed exactly once from
 * fully covered input. Memory is bounded by the gulp, not the input length;
 * the final partial gulp is always processed.
 *
 * Time scrunching (Barsdell 2.1): level k's rows are level k-1's halved by
 * adding sample pairs. A gulp starts at a multiple of the step, a multiple of
 * every factor, so level k sees exactly what a file tscrunch'ed by 2^k would
 * give; its outputs obey SPEC section 1 at that resolution.
 */
#include "engine.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_STEP 16384
#define ROW_ALIGN 16            /* floats: rows start on 64-byte boundaries */

struct ddtk_cpu_stream {
    int64_t step;
    uint8_t *raw;
    float *rows[DDTK_MAX_LEVELS];     /* level 0: unpacked input; k > 0: halved */
    size_t stride[DDTK_MAX_LEVELS];
    float *out[DDTK_MAX_LEVELS];
    size_t ostride[DDTK_MAX_LEVELS];
    double *mean;                     /* --zerodm: per spectrum of a gulp */
};

/*
 * The memory bound of a step: rows, outputs, raw bytes and the plug-in's
 * working memory. With scrunch
 * levels it is an upper bound taken before they are sized: the halved rows of
 * all levels add at most one more buffer, and no level's output row is longer
 * than keep + step.
 */
static int64_t step_bytes(const ddtk_plan *p, int64_t step)
{
    int64_t stride = ddtk_round_up(p->keep + step, ROW_ALIGN);
    int64_t rows = (int64_t)p->ch.nlive * stride * 4;
    int64_t outputs = (int64_t)p->d.ndm * (step + 8) * 4;
    if (p->nlevels > 1) {
        rows *= 2;
        outputs = (int64_t)p->d.ndm * (p->keep + step + 1) * 4;
    }
    int64_t plugin = 0;
    for (int k = 0; p->algo->cpu_bytes && k < p->nlevels; k++)
        if (p->lv[k].ndm)
            plugin += p->algo->cpu_bytes(&p->lv[k], ddtk_level_most_out(p, k, step));
    return rows + outputs + plugin + ddtk_plan_raw_bytes(p, p->keep + step);
}

static int fits(const ddtk_plan *p, int64_t step, void *ctx)
{
    return step_bytes(p, step) <= *(const int64_t *)ctx;
}

static int choose_step(const ddtk_plan *p, const ddtk_source *src, int64_t *step)
{
    int64_t max_mem = ddtk_plan_max_mem(&p->d);
    if (!ddtk_choose_step(p, src, DEFAULT_STEP, INT64_MAX, fits, &max_mem, step))
        return ddtk_fail(DDTK_EUSAGE, "%s: a gulp of %lld spectra plus the maximum delay of %d "
                         "needs %.1f MiB, over the memory bound %.1f MiB", src->name,
                         (long long)*step, p->maxdelay, step_bytes(p, *step) / 1048576.0,
                         max_mem / 1048576.0);
    *step = ddtk_round_up(*step, p->align);
    return DDTK_OK;
}


static int allocate(ddtk_cpu_stream *s, ddtk_plan *p)
{
    int64_t span = p->keep + s->step;
    s->raw = ddtk_malloc((size_t)ddtk_plan_raw_bytes(p, span), "raw input");
    if (!s->raw || (p->d.zerodm && !(s->mean = ddtk_malloc((size_t)span * sizeof *s->mean,
                                                           "zero-DM means"))))
        return DDTK_ESYS;
    for (int k = 0; k < p->nlevels; k++) {
        s->stride[k] = (size_t)ddtk_round_up((span >> k) + (k > 0), ROW_ALIGN);
        size_t rows = (size_t)p->ch.nlive * s->stride[k] * sizeof(float);
        if (!(s->rows[k] = ddtk_malloc_large(rows, "the input gulp")))
            return DDTK_ESYS;
        if (!p->lv[k].ndm)
            continue;
        s->ostride[k] = (size_t)ddtk_level_most_out(p, k, s->step);
        if (!(s->out[k] = ddtk_malloc_large((size_t)p->lv[k].ndm * s->ostride[k] * sizeof(float),
                                            "output gulp")))
            return DDTK_ESYS;
        int rc = p->algo->cpu_reserve ? p->algo->cpu_reserve(&p->lv[k], (int64_t)s->ostride[k])
                                      : DDTK_OK;
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

void ddtk_cpu_stream_free(ddtk_cpu_stream *s)
{
    if (!s)
        return;
    free(s->raw);
    free(s->mean);
    for (int k = 0; k < DDTK_MAX_LEVELS; k++) {
        free(s->rows[k]);
        free(s->out[k]);
    }
    free(s);
}

/* The stream of the last run is kept while a run needs the same step. */
static int prepare(ddtk_plan *p, const ddtk_source *src)
{
    int64_t step;
    int rc = choose_step(p, src, &step);
    if (rc || (p->cpu && p->cpu->step == step))
        return rc;
    ddtk_cpu_stream_free(p->cpu);
    if (!(p->cpu = ddtk_calloc(1, sizeof *p->cpu, "gulp buffers")))
        return DDTK_ESYS;
    p->cpu->step = step;
    if ((rc = allocate(p->cpu, p))) {
        ddtk_cpu_stream_free(p->cpu);
        p->cpu = NULL;
    }
    return rc;
}

/* --zerodm: subtract each spectrum's mean over the live channels. */
static void zero_dm(const ddtk_plan *p, ddtk_cpu_stream *s, int64_t col, int64_t n)
{
    double *mean = s->mean;
    memset(mean, 0, (size_t)n * sizeof *mean);
    for (int r = 0; r < p->ch.nlive; r++) {
        const float *row = s->rows[0] + (size_t)r * s->stride[0] + col;
        for (int64_t t = 0; t < n; t++)
            mean[t] += row[t];
    }
    for (int64_t t = 0; t < n; t++)
        mean[t] /= p->ch.nlive;
    for (int r = 0; r < p->ch.nlive; r++) {
        float *row = s->rows[0] + (size_t)r * s->stride[0] + col;
        for (int64_t t = 0; t < n; t++)
            row[t] -= (float)mean[t];
    }
}

/* Read and unpack up to n spectra at column `fill` of the rows (decoded
 * there by a source that can). */
static int read_gulp(const ddtk_plan *p, ddtk_cpu_stream *s, ddtk_source *src, int64_t fill,
                     int64_t n, int64_t *got)
{
    int rc;
    if (ddtk_source_rows(src))
        rc = ddtk_source_pull_rows(src, n, p->ch.row, p->pol, s->rows[0] + fill, s->stride[0],
                                   got);
    else if (!(rc = ddtk_source_pull(src, s->raw, n, got)) && *got > 0)
        ddtk_unpack(&p->fmt, s->raw, *got, p->ch.row, p->pol, s->rows[0] + fill,
                    s->stride[0]);
    if (rc || *got == 0)
        return rc;
    if (p->d.zerodm)
        zero_dm(p, s, fill, *got);
    return DDTK_OK;
}

/* dst[t] = src[2t] + src[2t+1] for every row. */
static void halve(const float *src, size_t sstride, int64_t n, float *dst, size_t dstride,
                  int nrows)
{
#pragma omp parallel for schedule(static) num_threads(ddtk_threads())
    for (int r = 0; r < nrows; r++) {
        const float *a = src + (size_t)r * sstride;
        float *d = dst + (size_t)r * dstride;
        for (int64_t t = 0; t < n / 2; t++)
            d[t] = a[2 * t] + a[2 * t + 1];
    }
}

/* Every level of one gulp of fill spectra: halve, dedisperse, write. */
static int run_levels(ddtk_plan *p, ddtk_cpu_stream *s, ddtk_writer *w, int64_t fill,
                      int last, double *kernel)
{
    for (int k = 0; k < p->nlevels; k++) {
        ddtk_level *lv = &p->lv[k];
        if (k > 0)
            halve(s->rows[k - 1], s->stride[k - 1], fill >> (k - 1), s->rows[k], s->stride[k],
                  p->ch.nlive);
        int64_t n = lv->ndm ? ddtk_level_nout(p, k, s->step, fill, last) : 0;
        if (n == 0)
            continue;
        double t0 = ddtk_now();
        p->algo->cpu_gulp(p, lv, s->rows[k], s->stride[k], n, s->out[k], s->ostride[k]);
        *kernel += ddtk_now() - t0;
        int rc = ddtk_writer_level(w, k, s->out[k], s->ostride[k], n);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

/* Move the last `keep` spectra of every row to its front. */
static void shift_rows(const ddtk_plan *p, ddtk_cpu_stream *s, int64_t fill)
{
    for (int r = 0; r < p->ch.nlive; r++) {
        float *row = s->rows[0] + (size_t)r * s->stride[0];
        memmove(row, row + s->step, (size_t)(fill - s->step) * sizeof *row);
    }
}

int ddtk_cpu_stream_run(ddtk_plan *p, ddtk_source *src, ddtk_writer *w, double *kernel)
{
    int rc = prepare(p, src);
    if (rc)
        return rc;
    ddtk_cpu_stream *s = p->cpu;
    const int64_t cap = p->keep + s->step;
    for (int64_t fill = 0;; fill -= s->step) {
        int64_t got;
        if ((rc = read_gulp(p, s, src, fill, cap - fill, &got)))
            return rc;
        fill += got;
        if ((rc = run_levels(p, s, w, fill, src->eof, kernel)))
            return rc;
        ddtk_writer_gulp(w, src);
        if (src->eof)
            return DDTK_OK;
        shift_rows(p, s, fill);
    }
}
