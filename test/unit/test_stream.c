/*
 * test_stream.c - the public streaming seam (ddtk_plan_stream): a source and
 * a sink of the caller's own give the same bytes as the file path (a SIGPROC
 * file in, .tim files out); the library's memory and callback sinks agree,
 * with --pad; a failing source stops the run with its message, and the
 * sink's finish sees the failure. Messages and progress reach the caller's
 * handlers, and with none set the library writes nothing to stderr. The
 * library installs no signal handler; ddtk_remove_temporaries removes the
 * hidden temporaries of outputs not yet committed.
 */
#include "ddtk.h"
#include "engine.h"
#include "internal.h"
#include "check.h"
#include "sim_file.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NCHANS 32
#define NSAMP 20000
#define NDM 4
static const double dms[NDM] = { 0.0, 10.0, 55.5, 120.0 };

static char dir[] = "/tmp/ddtk_stream_XXXXXX";
static char path[256];

static void write_input(void)
{
    ddtk_sim s;
    ddtk_sim_pulse pulse = { .t = 2.0, .dm = 55.5, .width = 0.002, .amp = 20 };
    sim_file_init(&s, NCHANS, 8, 1, -4, NSAMP, 7);
    s.pulses = &pulse;
    s.npulses = 1;
    snprintf(path, sizeof path, "%s/in.fil", dir);
    sim_file_write(&s, path);
}

static ddtk_plan *make_plan_q(const ddtk_input *in, double **freqs, int quiet)
{
    ddtk_plan_desc d;
    ddtk_plan *p = NULL;
    ddtk_plan_desc_init(&d);
    CHECK(ddtk_plan_desc_header(&d, &in->hdr, freqs) == DDTK_OK);
    d.dms = dms;
    d.ndm = NDM;
    d.gulp = 4096;                /* several gulps */
    d.backend = DDTK_BACKEND_CPU;
    d.quiet = quiet;
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    return p;
}

static ddtk_plan *make_plan(const ddtk_input *in, double **freqs)
{
    return make_plan_q(in, freqs, 1);
}

/* ---- the caller's source: the file's samples from memory, a pipe's length ---- */

typedef struct chunks {
    const uint8_t *data;
    int64_t bytes, pos;
    int reads;
    int fail_at;                  /* fail on this read (0: never) */
} chunks;

static int read_chunks(ddtk_source *s, void *raw, int64_t n, int64_t *got)
{
    chunks *c = s->ctx;
    if (++c->reads == c->fail_at)
        return ddtk_fail(DDTK_EDATA, "%s: the source broke on read %d", s->name, c->reads);
    int64_t want = (n * s->bits + 7) / 8, left = c->bytes - c->pos;
    int64_t have = want < left ? want : left;
    memcpy(raw, c->data + c->pos, (size_t)have);
    c->pos += have;
    *got = have * 8 / s->bits;
    return DDTK_OK;
}

/* ---- the caller's sink: one growing buffer per DM ---------------------------- */

typedef struct series {
    float *x[NDM];
    int64_t n[NDM];
    int bad_offset, finished, finish_rc;
} series;

static int write_series(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n)
{
    series *c = s->ctx;
    if (offset != c->n[dm])
        c->bad_offset = 1;
    c->x[dm] = realloc(c->x[dm], (size_t)(c->n[dm] + n) * sizeof *x);
    memcpy(c->x[dm] + c->n[dm], x, (size_t)n * sizeof *x);
    c->n[dm] += n;
    return DDTK_OK;
}

static int finish_series(ddtk_sink *s, int rc)
{
    series *c = s->ctx;
    c->finished++;
    c->finish_rc = rc;
    return rc;
}

static void series_free(series *c)
{
    for (int i = 0; i < NDM; i++)
        free(c->x[i]);
}

/* The samples of a .tim file after its header. */
static float *read_tim(const char *name, int64_t *n)
{
    ddtk_header h;
    FILE *fp = fopen(name, "rb");
    float *x = NULL;
    *n = 0;
    CHECK(fp != NULL);
    if (!fp)
        return NULL;
    CHECK(ddtk_header_read(fp, name, &h) == DDTK_OK);
    x = malloc((size_t)NSAMP * sizeof *x);
    *n = (int64_t)fread(x, sizeof *x, NSAMP, fp);
    ddtk_header_free(&h);
    fclose(fp);
    return x;
}

static void test_same_bytes(void)
{
    ddtk_input in;
    ddtk_outset out;
    ddtk_source src;
    ddtk_sink sink;
    ddtk_run_stats st;
    double *freqs = NULL;
    char prefix[300];
    CHECK(ddtk_input_open(&in, path) == DDTK_OK);
    ddtk_plan *p = make_plan(&in, &freqs);
    if (!p)
        return;
    /* The file path: SIGPROC in, .tim files out, committed by the sink's finish. */
    snprintf(prefix, sizeof prefix, "%s/f", dir);
    ddtk_outspec spec = { .format = DDTK_FMT_TIM, .prefix = prefix };
    ddtk_series_meta meta = { .in = &in.hdr, .tsamp = in.hdr.tsamp, .fref = 1500,
                              .nchans = NCHANS, .notes = "" };
    CHECK(ddtk_outset_open(&out, dms, NDM, &spec, &meta) == DDTK_OK);
    ddtk_source_file(&src, &in);
    ddtk_sink_outset(&sink, &out);
    CHECK(ddtk_plan_stream(p, &src, &sink, NULL, &st) == DDTK_OK);
    CHECK(st.nin == NSAMP && st.ndm == NDM && st.nout == NSAMP - ddtk_plan_max_delay(p));

    /* The caller's own: the same samples from memory with no length given,
     * into buffers, on the same plan (its second run). */
    FILE *fp = fopen(path, "rb");
    uint8_t *data = malloc((size_t)NSAMP * NCHANS);
    CHECK(fp && fseek(fp, (long)in.hdr.header_bytes, SEEK_SET) == 0);
    CHECK(fread(data, 1, (size_t)NSAMP * NCHANS, fp) == (size_t)NSAMP * NCHANS);
    fclose(fp);
    chunks c = { .data = data, .bytes = (int64_t)NSAMP * NCHANS };
    series got;
    memset(&got, 0, sizeof got);
    ddtk_source mine = { .name = "generated", .nsamples = -1, .read = read_chunks, .ctx = &c };
    ddtk_sink mysink = { .write = write_series, .finish = finish_series, .ctx = &got };
    CHECK(ddtk_plan_stream(p, &mine, &mysink, NULL, NULL) == DDTK_OK);
    CHECK(c.reads > 2 && mine.samples_read == NSAMP && mine.eof);
    CHECK(!got.bad_offset && got.finished == 1 && got.finish_rc == 0);
    for (int i = 0; i < NDM; i++) {
        char name[400];
        int64_t n;
        snprintf(name, sizeof name, "%s_DM%.2f.tim", prefix, dms[i]);
        float *x = read_tim(name, &n);
        CHECK(n == ddtk_plan_nout(p, i, NSAMP) && got.n[i] == n);
        CHECK(x && got.x[i] && memcmp(x, got.x[i], (size_t)n * sizeof *x) == 0);
        free(x);
    }
    series_free(&got);

    /* A source that fails: its code and message, and the sink's finish sees it. */
    series none;
    memset(&none, 0, sizeof none);
    c = (chunks){ .data = data, .bytes = (int64_t)NSAMP * NCHANS, .fail_at = 3 };
    mine.ctx = &c;
    mysink.ctx = &none;
    CHECK(ddtk_plan_stream(p, &mine, &mysink, NULL, NULL) == DDTK_EDATA);
    CHECK(strcmp(ddtk_errmsg(), "generated: the source broke on read 3") == 0);
    CHECK(none.finished == 1 && none.finish_rc == DDTK_EDATA);
    series_free(&none);
    free(data);
    ddtk_plan_destroy(p);
    free(freqs);
    ddtk_input_close(&in);
}

/* The memory and callback sinks, padded to the input length with each
 * series' mean: the same samples, and the padding where it should be. */
typedef struct sums {
    float *x;
    int64_t n[NDM];
    int calls;
} sums;

static int collect(void *ctx, int dm, int64_t offset, const float *x, int64_t n)
{
    sums *s = ctx;
    memcpy(s->x + (size_t)dm * NSAMP + offset, x, (size_t)n * sizeof *x);
    s->n[dm] = offset + n;
    __atomic_add_fetch(&s->calls, 1, __ATOMIC_RELAXED);
    return DDTK_OK;
}

static void test_memory_and_callback(void)
{
    ddtk_input in;
    ddtk_source src;
    ddtk_sink sink;
    double *freqs = NULL;
    ddtk_stream_options pad = { .pad = 1, .quiet = 1 };
    CHECK(ddtk_input_open(&in, path) == DDTK_OK);
    ddtk_plan *p = make_plan(&in, &freqs);
    if (!p)
        return;
    float *mem = calloc((size_t)NDM * NSAMP, sizeof *mem);
    sums cb = { .x = calloc((size_t)NDM * NSAMP, sizeof *mem) };
    ddtk_source_file(&src, &in);
    ddtk_sink_memory(&sink, mem, NSAMP);
    CHECK(ddtk_plan_stream(p, &src, &sink, &pad, NULL) == DDTK_OK);
    ddtk_input_close(&in);
    CHECK(ddtk_input_open(&in, path) == DDTK_OK);
    ddtk_source_file(&src, &in);
    ddtk_sink_callback(&sink, collect, &cb);
    CHECK(ddtk_plan_stream(p, &src, &sink, &pad, NULL) == DDTK_OK);
    CHECK(cb.calls > NDM);
    CHECK(memcmp(mem, cb.x, (size_t)NDM * NSAMP * sizeof *mem) == 0);
    for (int i = 0; i < NDM; i++) {
        int64_t nout = ddtk_plan_nout(p, i, NSAMP);
        double mean = 0;
        for (int64_t t = 0; t < nout; t++)
            mean += mem[(size_t)i * NSAMP + t];
        mean /= (double)nout;
        CHECK(cb.n[i] == NSAMP);
        CHECK(mem[(size_t)i * NSAMP + NSAMP - 1] == (float)mean);
        CHECK(i == 0 || mem[(size_t)i * NSAMP + nout] == (float)mean);
    }
    free(mem);
    free(cb.x);
    ddtk_plan_destroy(p);
    free(freqs);
    ddtk_input_close(&in);
}

/* A sink wrapping a discarding output set's (as the dd tools' --rfi report
 * does: write and finish its own, the rest copied) still discards, so the
 * writer counts its series on the calling thread rather than waking the
 * threads for each gulp (0.4-0.8 ms a gulp of the GPU path); one that
 * writes does not. */
static int pass_write(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n)
{
    ddtk_sink *inner = s->ctx;
    return inner->write(inner, dm, offset, x, n);
}

static void test_discard_wrapped(void)
{
    ddtk_input in;
    double *freqs = NULL;
    CHECK(ddtk_input_open(&in, path) == DDTK_OK);
    ddtk_plan *p = make_plan(&in, &freqs);
    if (!p)
        return;
    for (int discard = 0; discard < 2; discard++) {
        ddtk_outspec spec = { .format = DDTK_FMT_TIM, .discard = discard };
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%s/wrapped", dir);
        spec.prefix = prefix;
        ddtk_series_meta meta = { .in = &in.hdr, .tsamp = in.hdr.tsamp, .fref = 1500,
                                  .nchans = NCHANS, .notes = "" };
        ddtk_outset out;
        ddtk_sink inner, sink;
        ddtk_writer w;
        CHECK(ddtk_outset_open(&out, dms, NDM, &spec, &meta) == DDTK_OK);
        ddtk_sink_outset(&inner, &out);
        sink = inner;
        sink.write = pass_write;
        sink.ctx = &inner;
        CHECK(ddtk_writer_init(&w, p, &sink, 0, 0, NSAMP) == DDTK_OK);
        CHECK(ddtk_writer_discards(&w) == discard);
        CHECK(w.light == discard);
        ddtk_writer_free(&w);
        ddtk_outset_abort(&out);
    }
    ddtk_plan_destroy(p);
    free(freqs);
    ddtk_input_close(&in);
}

/* ---- messages and progress go to the caller's handlers, or nowhere ---------- */

typedef struct heard {
    int n, level;
    char text[512];
    int stages[3];
    int64_t done, total;
} heard;

static void on_message(void *ctx, int level, const char *text)
{
    heard *h = ctx;
    h->n++;
    h->level = level;
    snprintf(h->text, sizeof h->text, "%s", text);
}

static void on_progress(void *ctx, int stage, const char *what, int64_t done, int64_t total)
{
    heard *h = ctx;
    if (stage >= 0 && stage < 3 && strcmp(what, "samples") == 0)
        h->stages[stage]++;
    h->done = done;
    h->total = total;
}

static void test_messages(void)
{
    char longer[300], cmd[1024], errs[300];
    ddtk_input in;
    heard h;
    memset(&h, 0, sizeof h);
    snprintf(longer, sizeof longer, "%s/longer.fil", dir);
    snprintf(cmd, sizeof cmd, "cp %s %s && printf abc >> %s", path, longer, longer);
    CHECK(system(cmd) == 0);
    /* No handler: the warning (3 trailing bytes) goes nowhere, stderr stays empty. */
    snprintf(errs, sizeof errs, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2);
    CHECK(freopen(errs, "w", stderr) != NULL);
    CHECK(ddtk_input_open(&in, longer) == DDTK_OK);
    ddtk_input_close(&in);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *fp = fopen(errs, "r");
    CHECK(fp && fgetc(fp) == EOF);
    if (fp)
        fclose(fp);
    /* With one: the warning, its level apart from its text. */
    ddtk_set_message_handler(on_message, &h);
    CHECK(ddtk_input_open(&in, longer) == DDTK_OK);
    ddtk_input_close(&in);
    CHECK(h.n == 1 && h.level == DDTK_MSG_WARNING);
    CHECK(strncmp(h.text, longer, strlen(longer)) == 0 && strstr(h.text, "3 trailing bytes"));
    CHECK(!strstr(h.text, "warning"));
    /* Progress of a run that is not quiet: start, updates, end at the input's length. */
    double *freqs = NULL;
    ddtk_source src;
    ddtk_sink sink;
    ddtk_set_progress_handler(on_progress, &h);
    CHECK(ddtk_input_open(&in, path) == DDTK_OK);
    ddtk_plan *p = make_plan_q(&in, &freqs, 0);
    float *mem = calloc((size_t)NDM * NSAMP, sizeof *mem);
    ddtk_source_file(&src, &in);
    ddtk_sink_memory(&sink, mem, NSAMP);
    CHECK(p && ddtk_plan_stream(p, &src, &sink, NULL, NULL) == DDTK_OK);
    CHECK(h.stages[0] == 1 && h.stages[1] >= 2 && h.stages[2] == 1);
    CHECK(h.done == NSAMP && h.total == NSAMP);
    /* options.quiet: none. */
    ddtk_stream_options quiet = { .quiet = 1 };
    memset(h.stages, 0, sizeof h.stages);
    ddtk_input_close(&in);
    CHECK(ddtk_input_open(&in, path) == DDTK_OK);
    ddtk_source_file(&src, &in);
    CHECK(p && ddtk_plan_stream(p, &src, &sink, &quiet, NULL) == DDTK_OK);
    CHECK(h.stages[0] == 0 && h.stages[1] == 0 && h.stages[2] == 0);
    ddtk_set_message_handler(NULL, NULL);
    ddtk_set_progress_handler(NULL, NULL);
    free(mem);
    ddtk_plan_destroy(p);
    free(freqs);
    ddtk_input_close(&in);
}

/* Hidden temporaries in dir (names starting with "."). */
static int hidden(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls -A %s | grep -c '^\\.' > %s/count", dir, dir);
    if (system(cmd) < 0)
        return -1;
    snprintf(cmd, sizeof cmd, "%s/count", dir);
    FILE *fp = fopen(cmd, "r");
    int n = -1;
    if (fp && fscanf(fp, "%d", &n) != 1)
        n = -1;
    if (fp)
        fclose(fp);
    return n;
}

static int ended;
static void note_end(int sig)
{
    ended = sig;
}

/* The library installs no signal handler; a program's removes the
 * temporaries of uncommitted outputs with ddtk_remove_temporaries, which
 * then calls the program's end. */
static void test_signals(void)
{
    ddtk_input in;
    ddtk_outset out;
    char prefix[300];
    struct sigaction sa;
    snprintf(prefix, sizeof prefix, "%s/s", dir);
    CHECK(ddtk_input_open(&in, path) == DDTK_OK);
    ddtk_outspec spec = { .format = DDTK_FMT_TIM, .prefix = prefix };
    ddtk_series_meta meta = { .in = &in.hdr, .tsamp = in.hdr.tsamp, .fref = 1500,
                              .nchans = NCHANS, .notes = "" };
    /* The signals that end a run (a sanitizer's runtime keeps others), as
     * this process was given them (nohup or a background job ignores some). */
    static const int ends[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1 };
    enum { NENDS = sizeof ends / sizeof ends[0] };
    void (*given[NENDS])(int);
    for (size_t i = 0; i < NENDS; i++) {
        CHECK(sigaction(ends[i], NULL, &sa) == 0);
        given[i] = sa.sa_handler;
    }
    int before = hidden();
    CHECK(ddtk_outset_open(&out, dms, NDM, &spec, &meta) == DDTK_OK);
    CHECK(hidden() == before + NDM);
    for (size_t i = 0; i < NENDS; i++)
        CHECK(sigaction(ends[i], NULL, &sa) == 0 && sa.sa_handler == given[i]);
    ddtk_remove_temporaries(SIGTERM, note_end);
    CHECK(hidden() == before && ended == SIGTERM);
    ddtk_outset_abort(&out);
    ddtk_input_close(&in);
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    write_input();
    test_same_bytes();
    test_memory_and_callback();
    test_discard_wrapped();
    test_messages();
    test_signals();
    cleanup();
    return check_result();
}
