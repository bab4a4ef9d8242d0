/*
 * fdas_io.c - time series input for fdas: SIGPROC .tim (any nbits, from a file
 * or stdin) and PRESTO .dat with its .inf, into the series' own memory or the
 * search plan's series buffer (pinned on the GPU backend).
 */
#include "fdas.h"
#include "fdas_buffer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static char *strip_suffix(const char *path)
{
    char *b = strdup(path);
    if (b && (ends_with(b, ".tim") || ends_with(b, ".dat") || ends_with(b, ".fil")))
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

static int read_dat(const char *path, ddtk_fdas_series *s, const ddtk_fdas_plan *plan)
{
    char *inf_path = strdup(path);
    ddtk_inf inf;
    if (!inf_path)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    strcpy(inf_path + strlen(inf_path) - 4, ".inf");
    int rc = ddtk_inf_read(inf_path, &inf, &s->inf_text);
    free(inf_path);
    if (rc)
        return rc;
    if (!(inf.tsamp > 0))
        return ddtk_fail(DDTK_EDATA, "%s: sample time %g in its .inf: must be > 0", path,
                         inf.tsamp);
    FILE *fp = fopen(path, "rb");
    struct stat st;
    if (!fp || fstat(fileno(fp), &st) != 0) {
        rc = ddtk_fail(errno == ENOENT ? DDTK_EDATA : DDTK_ESYS, "%s: cannot open: %s", path,
                       strerror(errno));
        if (fp)
            fclose(fp);
        return rc;
    }
    s->n = st.st_size / (int64_t)sizeof(float);
    if (s->n != inf.nsamples)
        ddtk_msg("warning: %s: %lld samples, but its .inf says %lld; using the file size", path,
                 (long long)s->n, (long long)inf.nsamples);
    int64_t buf_n = 0;
    float *buf = plan_buffer(plan, inf.tsamp, &buf_n);
    s->borrowed = buf && s->n == buf_n;
    s->x = s->borrowed ? buf : malloc(sizeof(float) * (size_t)(s->n ? s->n : 1));
    if (!s->x)
        rc = ddtk_fail(DDTK_ESYS, "%s: out of memory for %lld samples", path, (long long)s->n);
    else if ((int64_t)fread(s->x, sizeof(float), (size_t)s->n, fp) != s->n)
        rc = ddtk_fail(DDTK_ESYS, "%s: read error", path);
    fclose(fp);
    s->tsamp = inf.tsamp;
    s->dm = inf.dm;
    s->hdr.tstart = inf.mjd;
    s->hdr.tsamp = inf.tsamp;
    snprintf(s->hdr.source_name, sizeof s->hdr.source_name, "%s", inf.object);
    return rc;
}

/* Samples are unpacked straight into x: the plan's buffer while they fit. */
static int read_tim(const char *path, ddtk_fdas_series *s, const ddtk_fdas_plan *plan)
{
    ddtk_input in;
    int rc = ddtk_input_open(&in, path), pol = 0, row = 0;
    if (rc)
        return rc;
    if (in.hdr.nchans != 1)
        rc = ddtk_fail(DDTK_EDATA, "%s: %d channels: not a time series (dedisperse it first)",
                       in.name, in.hdr.nchans);
    if (!rc)
        rc = ddtk_resolve_pol(&in.hdr, DDTK_POL_DEFAULT, in.name, &pol);
    const int64_t chunk = 1 << 18;
    uint8_t *raw = rc ? NULL : malloc((size_t)ddtk_input_bytes(&in, chunk));
    int64_t cap = 0, got = 0;
    float *buf = rc ? NULL : plan_buffer(plan, in.hdr.tsamp, &cap);
    s->x = buf;
    s->borrowed = buf != NULL;
    if (!rc && !raw)
        rc = ddtk_fail(DDTK_ESYS, "out of memory");
    while (!rc && !(rc = ddtk_input_read(&in, raw, chunk, &got)) && got > 0 &&
           !(rc = grow(s, &cap, s->n + got))) {
        ddtk_unpack(&in.hdr, raw, got, &row, pol, s->x + s->n, (size_t)got);
        s->n += got;
    }
    free(raw);
    if (!rc && s->borrowed && s->n != cap)
        rc = own(s, s->n ? s->n : 1);
    if (!rc) {
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
    int rc = !is_stdin && ends_with(path, ".dat") ? read_dat(path, s, plan)
                                                  : read_tim(path, s, plan);
    if (!rc && s->n == 0)
        rc = ddtk_fail(DDTK_EDATA, "%s: empty time series", s->name);
    if (!rc && !(s->tsamp > 0))
        rc = ddtk_fail(DDTK_EDATA, "%s: sample time %g: must be > 0", s->name, s->tsamp);
    return rc;
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
