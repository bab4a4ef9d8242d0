/*
 * writer.c - the sink's end of a stream, shared by the CPU and GPU streaming
 * layers: the writer that maps each level's series to the plan's DMs,
 * keeps the --pad sums, checks the run's length, ends each series by the
 * sink's length rule (--pad, even, fft: the same for every algorithm and
 * backend), reports progress and fills the run statistics.
 */
#include "engine.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- the writer ------------------------------------------------------------------- */

int ddtk_writer_init(ddtk_writer *w, const ddtk_plan *p, ddtk_sink *sink, int pad,
                     int show, int64_t total)
{
    memset(w, 0, sizeof *w);
    w->p = p;
    w->sink = sink;
    w->pad = pad;
    w->length = sink->length;
    w->sums = ddtk_calloc((size_t)p->d.ndm, sizeof *w->sums, "output sums");
    w->count = ddtk_calloc((size_t)p->d.ndm, sizeof *w->count, "output counts");
    w->given = ddtk_calloc((size_t)p->d.ndm, sizeof *w->given, "output counts");
    if (w->length == DDTK_LEN_EVEN && !(w->held = ddtk_calloc((size_t)p->d.ndm,
                                                              sizeof *w->held, "output tails")))
        return DDTK_ESYS;
    w->progress = show && !p->d.quiet;
    w->total = total;
    w->light = ddtk_writer_discards(w) && !pad && w->length != DDTK_LEN_FFT;
    if (w->progress)
        ddtk_report_progress(DDTK_PROGRESS_START, "samples", 0, total);
    return w->sums && w->count && w->given ? DDTK_OK : DDTK_ESYS;
}

/* n samples more of series i to the sink, at the offset it has reached. */
static int put(ddtk_writer *w, int i, const float *x, int64_t n)
{
    int rc = n > 0 ? w->sink->write(w->sink, i, w->given[i], x, n) : DDTK_OK;
    w->given[i] += n;
    return rc;
}

/* n samples of value: the sink's pad, else written from a block of them. */
static int put_value(ddtk_writer *w, int i, float value, int64_t n)
{
    float block[1024];
    if (w->sink->pad) {
        int rc = w->sink->pad(w->sink, i, w->given[i], value, n);
        w->given[i] += n;
        return rc;
    }
    for (int j = 0; j < 1024; j++)
        block[j] = value;
    int rc = DDTK_OK;
    for (int64_t left = n; !rc && left > 0; left -= 1024)
        rc = put(w, i, block, left < 1024 ? left : 1024);
    return rc;
}

/* The even rule on a stream (stdout, pipes): each series' latest sample is
 * held back, so that an odd last one can be left out at the end. */
static int write_holding(ddtk_writer *w, int i, const float *series, int64_t n)
{
    int rc = DDTK_OK;
    if (n == 0)
        return rc;
    if (w->count[i] > 0)
        rc = put(w, i, &w->held[i], 1);
    if (!rc)
        rc = put(w, i, series, n - 1);
    w->held[i] = series[n - 1];
    return rc;
}

int ddtk_writer_level(ddtk_writer *w, int k, const float *x, size_t pitch, int64_t n)
{
    return ddtk_writer_view(w, &w->p->lv[k], x, pitch, n);
}

/* One series of a gulp: its sum (--pad, fft lengths) and its samples. */
static int write_series(ddtk_writer *w, int i, const float *series, int64_t n)
{
    if (w->pad || w->length == DDTK_LEN_FFT) {
        double s = 0;
        for (int64_t t = 0; t < n; t++)
            s += series[t];
        w->sums[i] += s;
    }
    int rc = w->held ? write_holding(w, i, series, n) : put(w, i, series, n);
    w->count[i] += n;
    return rc;
}

/* Series go to their sinks on several threads: each has its own file, counts
 * and sums, and converting to 8 or 16 bits is CPU work (one thread wrote an
 * 8-bit htru gulp at a fifth of the disk's speed). The first error wins.
 * Discarded series without sums are only counted, on the calling thread:
 * waking the threads cost the GPU streaming 0.8 ms a gulp (H200 host, 1196
 * DMs), 0.024 s of htru's minute on one GPU and 0.033 s on two. */
int ddtk_writer_view(ddtk_writer *w, const ddtk_level *lv, const float *x, size_t pitch,
                     int64_t n)
{
    ddtk_thread_error err;
    ddtk_thread_error_init(&err);
#pragma omp parallel for schedule(dynamic, 4) if (lv->ndm > 1 && !w->sink->serial && !w->light) \
    num_threads(ddtk_threads())
    for (int d = 0; d < lv->ndm; d++) {
        if (ddtk_thread_error_code(&err))
            continue;
        int rc = write_series(w, lv->index[d], x + (size_t)d * pitch, n);
        if (rc)
            ddtk_thread_error_keep(&err, 0, rc);
    }
    return ddtk_thread_error_end(&err);
}

void ddtk_writer_count(ddtk_writer *w, const ddtk_level *lv, int64_t n)
{
    for (int d = 0; d < lv->ndm; d++)
        w->count[lv->index[d]] += n;
}

void ddtk_writer_gulp(ddtk_writer *w, const ddtk_source *src)
{
    if (w->progress)
        ddtk_report_progress(DDTK_PROGRESS_UPDATE, "samples", src->samples_read, w->total);
}

/* The end of series i (overlap: its resolution's maximum delay): --pad
 * extends it to the input length; then the even rule drops an odd last
 * sample (the held one), and the fft rule pads to ddtk_good_length. Padding
 * is the series mean, as PRESTO's prepdata pads. */
static int64_t final_length(const ddtk_writer *w, int64_t data, int64_t overlap)
{
    int64_t len = data + (w->pad ? overlap : 0);
    if (w->length == DDTK_LEN_EVEN)
        return len & ~(int64_t)1;
    return w->length == DDTK_LEN_FFT ? ddtk_good_length(len) : len;
}

int64_t ddtk_writer_kept(const ddtk_writer *w, int k, int64_t data)
{
    int64_t len = final_length(w, data, w->p->lv[k].overlap);
    return len < data ? len : data;
}

static int end_series(ddtk_writer *w, int i, int64_t overlap, int64_t *written)
{
    int64_t data = w->count[i], len = final_length(w, data, overlap);
    int64_t done = w->held && data > 0 ? data - 1 : data;
    int rc = DDTK_OK;
    if (done < data && len >= data) {
        rc = put(w, i, &w->held[i], 1);
        done = data;
    }
    float mean = data > 0 ? (float)(w->sums[i] / (double)data) : 0.0f;
    if (!rc && len > done)
        rc = put_value(w, i, mean, len - done);
    *written = len;
    return rc;
}

/* Every series ended; *nlen: the length of the finest level's. */
static int end_all(ddtk_writer *w, int64_t *nlen)
{
    int rc = DDTK_OK;
    for (int k = 0; !rc && k < w->p->nlevels; k++) {
        const ddtk_level *lv = &w->p->lv[k];
        for (int d = 0; !rc && d < lv->ndm; d++) {
            int64_t len;
            rc = end_series(w, lv->index[d], lv->overlap, &len);
            if (k == w->p->first && d == 0)
                *nlen = len;
        }
    }
    return rc;
}

static int check_run_length(const ddtk_writer *w, const ddtk_source *src, int64_t nout)
{
    if (src->samples_read == 0)
        return ddtk_fail(DDTK_EDATA, "%s: no data after the header (shorter than one sample)",
                         src->name);
    if (nout == 0)
        return ddtk_fail(DDTK_EDATA, "%s: %lld samples is not longer than the maximum delay "
                         "(%d samples)", src->name, (long long)src->samples_read,
                         w->p->maxdelay);
    return DDTK_OK;
}

int ddtk_writer_finish(ddtk_writer *w, const ddtk_source *src, int rc, ddtk_run_stats *st)
{
    const ddtk_plan *p = w->p;
    int64_t nout = w->count[p->lv[p->first].index[0]];
    if (w->progress)
        ddtk_report_progress(DDTK_PROGRESS_END, "samples", src->samples_read, w->total);
    if (!rc)
        rc = check_run_length(w, src, nout);
    int64_t nlen = nout;
    if (!rc)
        rc = end_all(w, &nlen);
    memset(st, 0, sizeof *st);
    st->nlen = nlen;
    st->nin = src->samples_read;
    st->nout = nout;
    st->ndm = p->d.ndm;
    st->nlive = p->ch.nlive;
    st->nkilled = p->ch.nchans - p->ch.nlive;
    st->tobs = (double)src->samples_read * p->d.tsamp;
    for (int i = 0; i < p->d.ndm; i++)
        st->adds += (double)w->count[i] * p->ch.nlive;
    return rc;
}

void ddtk_writer_free(ddtk_writer *w)
{
    free(w->sums);
    free(w->count);
    free(w->given);
    free(w->held);
}
