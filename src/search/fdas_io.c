/*
 * fdas_io.c - time series input for fdas: SIGPROC .tim (any nbits, from a file
 * or stdin) and PRESTO .dat with its .inf, into the series' own memory or the
 * search plan's series buffer (pinned on the GPU backend).
 */
#include "fdas.h"
#include "fdas_buffer.h"
#include "inf.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static char *strip_suffix(const char *path)
{
    char *b = strdup(path);
    if (b && (ddtk_ends_with(b, ".tim") || ddtk_ends_with(b, ".dat") || ddtk_ends_with(b, ".fil")))
        b[strlen(b) - 4] = '\0';
    return b;
}

/* ---- sample memory ------------------------------------------------------------ */

/* The plan's series buffer (*n samples) when a series at tsamp may go there, else NULL. */
static float *plan_buffer(const ddtk_fdas_plan *p, double tsamp, int64_t *n)
{
    int64_t plan_n = 0;
    double plan_tsamp = 0;
    float *buf = p ? ddtk_fdas_series_buffer(p, &plan_n, &plan_tsamp) : NULL;
    if (!buf || plan_tsamp != tsamp)
        return NULL;
    *n = plan_n;
    return buf;
}

/* Move the samples into the series' own memory of cap samples. */
static int own(ddtk_fdas_series *s, int64_t cap)
{
    float *y = s->borrowed ? malloc(sizeof(float) * (size_t)cap)
                           : realloc(s->x, sizeof(float) * (size_t)cap);
    if (!y)
        return ddtk_fail(DDTK_ESYS, "out of memory for %lld samples", (long long)cap);
    if (s->borrowed)
        memcpy(y, s->x, sizeof(float) * (size_t)s->n);
    s->x = y;
    s->borrowed = 0;
    return DDTK_OK;
}

/* Room for need samples in x (cap of them now), doubling. */
static int grow(ddtk_fdas_series *s, int64_t *cap, int64_t need)
{
    if (need <= *cap)
        return DDTK_OK;
    int64_t c = *cap ? *cap : 1 << 20;
    while (c < need)
        c *= 2;
    int rc = own(s, c);
    if (!rc)
        *cap = c;
    return rc;
}

/* ---- readers ---------------------------------------------------------------- */

/* Samples are unpacked straight into x: the plan's buffer while they fit. */
static int read_samples(ddtk_input *in, int pol, ddtk_fdas_series *s, const ddtk_fdas_plan *plan)
{
    const int64_t chunk = 1 << 18;
    uint8_t *raw = malloc((size_t)ddtk_input_bytes(in, chunk));
    int64_t cap = 0, got = 0;
    int row = 0, rc = raw ? DDTK_OK : ddtk_fail(DDTK_ESYS, "out of memory");
    s->x = plan_buffer(plan, in->hdr.tsamp, &cap);
    s->borrowed = s->x != NULL;
    while (!rc && !(rc = ddtk_input_read(in, raw, chunk, &got)) && got > 0 &&
           !(rc = grow(s, &cap, s->n + got))) {
        ddtk_unpack(&in->hdr, raw, got, &row, pol, s->x + s->n, (size_t)got);
        s->n += got;
    }
    free(raw);
    if (!rc && s->borrowed && s->n != cap)
        rc = own(s, s->n ? s->n : 1);
    return rc;
}

/* What the outputs need from a .dat's .inf. */
static void dat_meta(ddtk_fdas_series *s, const ddtk_inf *inf)
{
    s->tsamp = inf->tsamp;
    s->dm = inf->dm;
    s->hdr.tstart = inf->mjd;
    s->hdr.tsamp = inf->tsamp;
    snprintf(s->hdr.source_name, sizeof s->hdr.source_name, "%s", inf->object);
}

/* A .tim (or stdin), or a .dat with its .inf. */
static int read_series(const char *path, int dat, ddtk_fdas_series *s, const ddtk_fdas_plan *plan)
{
    ddtk_input in;
    ddtk_inf inf;
    int pol = 0;
    int rc = dat ? ddtk_dat_open(&in, path, &inf, &s->inf_text) : ddtk_input_open(&in, path);
    if (!rc && in.hdr.nchans != 1)
        rc = ddtk_fail(DDTK_EDATA, "%s: %d channels: not a time series (dedisperse it first)",
                       in.name, in.hdr.nchans);
    if (!rc)
        rc = ddtk_resolve_pol(&in.hdr, DDTK_POL_DEFAULT, in.name, &pol);
    if (!rc)
        rc = read_samples(&in, pol, s, plan);
    if (!rc && dat)
        dat_meta(s, &inf);
    else if (!rc) {
        s->tsamp = in.hdr.tsamp;
        s->dm = in.hdr.refdm;
        rc = ddtk_header_copy(&s->hdr, &in.hdr);
    }
    ddtk_input_close(&in);
    return rc;
}

int ddtk_fdas_read(const char *path, ddtk_fdas_series *s)
{
    return ddtk_fdas_read_for(path, s, NULL);
}

int ddtk_fdas_read_for(const char *path, ddtk_fdas_series *s, ddtk_fdas_plan *plan)
{
    memset(s, 0, sizeof *s);
    ddtk_header_init(&s->hdr);
    int is_stdin = !path || strcmp(path, "-") == 0;
    s->name = strdup(is_stdin ? "stdin" : path);
    s->base = is_stdin ? strdup("stdin") : strip_suffix(path);
    if (!s->name || !s->base)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    int rc = read_series(path, !is_stdin && ddtk_ends_with(path, ".dat"), s, plan);
    if (!rc && s->n == 0)
        rc = ddtk_fail(DDTK_EDATA, "%s: empty time series", s->name);
    if (!rc && !(s->tsamp > 0))
        rc = ddtk_fail(DDTK_EDATA, "%s: sample time %g: must be > 0", s->name, s->tsamp);
    s->nvalid = s->n;
    return rc;
}

int64_t ddtk_fdas_search_length(int64_t n)
{
    return n % 2 ? ddtk_good_length(n) : n;
}

int ddtk_fdas_series_pad(ddtk_fdas_series *s, int64_t n)
{
    if (n <= s->n)
        return DDTK_OK;
    int rc = own(s, n);
    if (rc)
        return rc;
    double sum = 0;
    for (int64_t t = 0; t < s->n; t++)
        sum += s->x[t];
    float mean = s->n ? (float)(sum / (double)s->n) : 0.0f;
    for (int64_t t = s->n; t < n; t++)
        s->x[t] = mean;
    s->n = n;
    return DDTK_OK;
}

void ddtk_fdas_series_free(ddtk_fdas_series *s)
{
    if (!s->borrowed)
        free(s->x);
    free(s->name);
    free(s->base);
    free(s->inf_text);
    ddtk_header_free(&s->hdr);
    memset(s, 0, sizeof *s);
}
