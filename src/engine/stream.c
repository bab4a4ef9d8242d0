/*
 * stream.c - the ends of a run and the call that joins them: the library's
 * sources (a SIGPROC input, a block in memory) and sinks (an output set of
 * files, a caller's array, a caller's function), and ddtk_plan_stream, which
 * streams any source through a plan into any sink on the plan's backend.
 * ddtk_plan_run and ddtk_plan_execute are its file and memory cases.
 */
#include "engine.h"
#include "internal.h"

#include <string.h>

/* ---- sources ------------------------------------------------------------------ */

static int read_input(ddtk_source *s, void *raw, int64_t n, int64_t *got)
{
    return ddtk_input_read(s->ctx, raw, n, got);
}

int ddtk_source_rows(const ddtk_source *s)
{
    return s->read == read_input && ddtk_input_reads_rows(s->ctx);
}

int ddtk_source_pull_rows(ddtk_source *s, int64_t n, const int *row, int pol, float *out,
                          size_t stride, int64_t *got)
{
    *got = 0;
    int rc = ddtk_input_read_rows(s->ctx, n, row, pol, out, stride, got);
    return ddtk_source_count(s, rc, n, *got);
}

int ddtk_source_scaled(const ddtk_source *s, int *sgn)
{
    *sgn = 0;
    return s->read == read_input ? ddtk_input_scaled_bytes(s->ctx, sgn) : 0;
}

int ddtk_source_pull_scaled(ddtk_source *s, int64_t n, uint8_t *out, int32_t *seg, float *tab,
                            int maxseg, int *nseg, int64_t *got)
{
    *got = 0;
    int rc = ddtk_input_read_scaled(s->ctx, n, out, seg, tab, maxseg, nseg, got);
    return ddtk_source_count(s, rc, n, *got);
}

int ddtk_source_clean_geometry(const ddtk_source *s, ddtk_clean_geom *g)
{
    return s->read == read_input && ddtk_clean_geometry(s->ctx, g);
}

void ddtk_source_clean_hand_over(ddtk_source *s)
{
    ddtk_clean_hand_over(s->ctx);
}

void ddtk_source_clean_take_back(ddtk_source *s, const ddtk_rfi_report *r, const uint8_t *ever)
{
    ddtk_clean_take_back(s->ctx, r, ever);
}

void ddtk_source_file(ddtk_source *s, ddtk_input *in)
{
    memset(s, 0, sizeof *s);
    s->name = in->name;
    s->nsamples = in->nsamples;
    s->read = read_input;
    s->ctx = in;
}

static int read_memory(ddtk_source *s, void *raw, int64_t n, int64_t *got)
{
    const uint8_t *data = s->ctx;
    int64_t left = s->nsamples - s->samples_read;
    *got = n < left ? n : left;
    int64_t first = s->samples_read * s->bits / 8;
    int64_t last = ((s->samples_read + *got) * s->bits + 7) / 8;
    memcpy(raw, data + first, (size_t)(last - first));
    s->eof = s->samples_read + *got == s->nsamples;
    return DDTK_OK;
}

void ddtk_source_memory(ddtk_source *s, const void *data, int64_t nsamples)
{
    memset(s, 0, sizeof *s);
    s->name = "input block";
    s->nsamples = nsamples;
    s->read = read_memory;
    s->ctx = (void *)data;        /* read only: read_memory never writes through it */
}

/* ---- sinks ------------------------------------------------------------------------ */

static int write_outset(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n)
{
    (void)offset;
    return ddtk_outset_write(s->ctx, dm, x, n);
}

static int pad_outset(ddtk_sink *s, int dm, int64_t offset, float value, int64_t n)
{
    (void)offset;
    return ddtk_outset_pad(s->ctx, dm, value, n);
}

static int finish_outset(ddtk_sink *s, int rc)
{
    if (rc) {
        ddtk_outset_abort(s->ctx);
        return rc;
    }
    return ddtk_outset_close(s->ctx);
}

/* Whether the writer's series go nowhere (the sink says so, as an output
 * set with discard's does, and sinks copied from it): a run that costs the
 * host no writes (--gpu all's model). */
int ddtk_writer_discards(const ddtk_writer *w)
{
    return w->sink->discard;
}

void ddtk_sink_outset(ddtk_sink *s, ddtk_outset *out)
{
    memset(s, 0, sizeof *s);
    s->write = write_outset;
    s->pad = pad_outset;
    s->finish = finish_outset;
    s->length = ddtk_outspec_length(&out->spec);
    s->discard = out->spec.discard;
    s->ctx = out;
}

static int write_memory(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n)
{
    float *mem = s->ctx;
    memcpy(mem + (size_t)dm * s->stride + offset, x, (size_t)n * sizeof *x);
    return DDTK_OK;
}

void ddtk_sink_memory(ddtk_sink *s, float *mem, size_t stride)
{
    memset(s, 0, sizeof *s);
    s->write = write_memory;
    s->length = DDTK_LEN_EXACT;
    s->ctx = mem;
    s->stride = stride;
}

static int write_callback(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n)
{
    return s->fn(s->ctx, dm, offset, x, n);
}

void ddtk_sink_callback(ddtk_sink *s, ddtk_series_fn fn, void *ctx)
{
    memset(s, 0, sizeof *s);
    s->write = write_callback;
    s->length = DDTK_LEN_EXACT;
    s->ctx = ctx;
    s->fn = fn;
}

/* ---- running ------------------------------------------------------------------------ */

/* A source known to be too short is refused before anything is read. */
static int check_length(const ddtk_plan *p, const ddtk_source *src)
{
    if (src->nsamples == 0)
        return ddtk_fail(DDTK_EDATA, "%s: no data after the header (shorter than one sample)",
                         src->name);
    if (src->nsamples >= 0 && src->nsamples <= p->maxdelay)
        return ddtk_fail(DDTK_EDATA, "%s: %lld samples is not longer than the maximum delay "
                         "(%d samples at DM %g)", src->name, (long long)src->nsamples,
                         p->maxdelay, p->lv[p->nlevels - 1].ndm ? p->dms[p->d.ndm - 1] : 0.0);
    return DDTK_OK;
}

static int run(ddtk_plan *p, ddtk_source *src, ddtk_sink *sink, const ddtk_stream_options *o,
               ddtk_run_stats *st)
{
    ddtk_writer w;
    double kernel = 0;
    int rc = check_length(p, src);
    if (rc || (rc = ddtk_writer_init(&w, p, sink, o->pad, !o->quiet, src->nsamples)))
        return rc;
    rc = p->use_gpu ? ddtk_gpu_stream_run(p, src, &w, &kernel)
                    : ddtk_cpu_stream_run(p, src, &w, &kernel);
    rc = ddtk_writer_finish(&w, src, rc, st);
    st->kernel = kernel;
    ddtk_writer_free(&w);
    return rc;
}

int ddtk_plan_stream(ddtk_plan *p, ddtk_source *src, ddtk_sink *sink,
                     const ddtk_stream_options *options, ddtk_run_stats *stats)
{
    static const ddtk_stream_options defaults;
    ddtk_run_stats own;
    ddtk_run_stats *st = stats ? stats : &own;
    double t0 = ddtk_now();
    memset(st, 0, sizeof *st);
    src->bits = (int64_t)p->fmt.nchans * p->fmt.nifs * p->fmt.nbits;
    src->samples_read = 0;
    src->eof = 0;
    int threads = ddtk_threads_set(p->d.threads);
    int rc = run(p, src, sink, options ? options : &defaults, st);
    ddtk_threads_set(threads);
    double t1 = ddtk_now();
    if (sink->finish)
        rc = sink->finish(sink, rc);
    st->commit = ddtk_now() - t1;
    st->wall = ddtk_now() - t0;
    st->backend = ddtk_plan_backend(p);
    return rc;
}

int ddtk_plan_run(ddtk_plan *p, ddtk_input *in, ddtk_outset *out, int pad, ddtk_run_stats *st)
{
    ddtk_source src;
    ddtk_sink sink;
    ddtk_stream_options o = { .pad = pad };
    ddtk_source_file(&src, in);
    ddtk_sink_outset(&sink, out);
    sink.finish = NULL;
    return ddtk_plan_stream(p, &src, &sink, &o, st);
}

int ddtk_plan_execute(ddtk_plan *p, int64_t nsamps, const void *in, int in_nbits,
                      float *out, size_t out_stride, int out_nbits)
{
    ddtk_source src;
    ddtk_sink sink;
    ddtk_run_stats st;
    ddtk_stream_options o = { .quiet = 1 };
    int64_t longest = 0;
    if (in_nbits != p->d.nbits)
        return ddtk_fail(DDTK_EUSAGE, "execute: input of %d bits, but the plan is for %d-bit "
                         "samples", in_nbits, p->d.nbits);
    if (out_nbits != 32)
        return ddtk_fail(DDTK_EUSAGE, "execute: %d-bit output is not supported (32: float)",
                         out_nbits);
    for (int i = 0; i < p->d.ndm; i++)
        longest = ddtk_plan_nout(p, i, nsamps) > longest ? ddtk_plan_nout(p, i, nsamps) : longest;
    if (out_stride < (size_t)longest)
        return ddtk_fail(DDTK_EUSAGE, "execute: output stride %zu is shorter than the %lld "
                         "samples of a series", out_stride, (long long)longest);
    ddtk_source_memory(&src, in, nsamps);
    ddtk_sink_memory(&sink, out, out_stride);
    int rc = ddtk_plan_stream(p, &src, &sink, &o, &st);
    p->last_kernel = rc ? 0 : st.kernel;
    return rc;
}
