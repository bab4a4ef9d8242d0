/*
 * sps_io.c - time series files for the single-pulse search (include/sps.h):
 * a .tim's header or a .dat's .inf gives the DM and sample time, and the
 * samples are streamed into the searcher in bounded pieces.
 */
#include "sps.h"
#include "inf.h"
#include "internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define READ_SAMPLES 65536

/* The data of a padded .dat: its .inf's first On/Off pair ends them (ddtk
 * and prepdata write [0, nvalid - 1] and then [N - 1, N - 1]). */
static int64_t inf_valid(const char *text, int64_t n)
{
    const char *breaks = strstr(text, "Any breaks in the data?");
    const char *pair = strstr(text, "On/Off bin pair #  1");
    const char *eq = breaks ? strchr(breaks, '=') : NULL;
    if (!eq || atoi(eq + 1) != 1 || !pair || !(eq = strchr(pair, '=')) || !(eq = strchr(eq, ',')))
        return n;
    long long off = atoll(eq + 1);
    return off >= 0 && off + 1 < n ? off + 1 : n;
}

static int probe_open(ddtk_sps_file *f, ddtk_input *in)
{
    int rc;
    if (f->dat) {
        ddtk_inf inf;
        char *text = NULL;
        rc = ddtk_dat_open(in, f->path, &inf, &text);
        if (!rc) {
            f->dm = inf.dm;
            f->tsamp = inf.tsamp;
            f->nvalid = inf_valid(text, in->nsamples);
        }
        free(text);
        return rc;
    }
    rc = ddtk_input_open(in, f->in ? "-" : f->path);
    if (rc)
        return rc;
    if (in->hdr.nchans != 1)
        return ddtk_fail(DDTK_EDATA, "%s: %d channels: not a time series (dedisperse it first)",
                         in->name, in->hdr.nchans);
    f->dm = in->hdr.refdm;
    f->tsamp = in->hdr.tsamp;
    f->nvalid = in->nsamples;
    return DDTK_OK;
}

int ddtk_sps_file_probe(ddtk_sps_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    int is_stdin = strcmp(path, "-") == 0;
    f->path = strdup(is_stdin ? "stdin" : path);
    if (!f->path)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    f->dat = !is_stdin && ddtk_ends_with(path, ".dat");
    /* a file is probed here and opened again to be searched (no descriptor
     * held per file between): a pipe would be waited on for a second writer */
    struct stat st;
    if (!is_stdin && stat(path, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
        return ddtk_fail(DDTK_EDATA, "%s: a named pipe: series files are read twice (probed, "
                         "then searched); send one series to standard input (-) instead", path);
    ddtk_input in;
    if (is_stdin && !(f->in = ddtk_malloc(sizeof *f->in, "input")))
        return DDTK_ESYS;
    int rc = probe_open(f, is_stdin ? f->in : &in);
    if (!rc && f->nvalid == 0)
        rc = ddtk_fail(DDTK_EDATA, "%s: empty time series", f->path);
    if (!is_stdin)
        ddtk_input_close(&in);
    return rc;
}

/* nvalid samples (all of them: -1) from in into series dm. Float samples
 * of one IF (.dat, ddtk's .tim) are searched where they are read. */
static int feed_input(ddtk_sps *s, int dm, ddtk_input *in, int64_t nvalid)
{
    const int floats = in->hdr.nbits == 32 && in->hdr.nifs == 1;
    uint8_t *raw = ddtk_malloc((size_t)ddtk_input_bytes(in, READ_SAMPLES), "series input");
    float *x = floats ? (float *)raw : ddtk_malloc(READ_SAMPLES * sizeof *x, "series input");
    int row = 0, pol = 0, rc = raw && x ? DDTK_OK : DDTK_ESYS;
    int64_t done = 0, got;
    if (!rc)
        rc = ddtk_resolve_pol(&in->hdr, DDTK_POL_DEFAULT, in->name, &pol);
    while (!rc && (nvalid < 0 || done < nvalid)) {
        int64_t want = nvalid < 0 || nvalid - done > READ_SAMPLES ? READ_SAMPLES : nvalid - done;
        if ((rc = ddtk_input_read(in, raw, want, &got)) || got == 0)
            break;
        if (!floats)
            ddtk_unpack(&in->hdr, raw, got, &row, pol, x, (size_t)got);
        rc = ddtk_sps_feed(s, dm, x, got);
        done += got;
    }
    if (!rc && done == 0)
        rc = ddtk_fail(DDTK_EDATA, "%s: empty time series", in->name);
    if (!floats)
        free(x);
    free(raw);
    return rc;
}

int ddtk_sps_file_feed(ddtk_sps *s, int dm, ddtk_sps_file *f)
{
    if (f->in)
        return feed_input(s, dm, f->in, -1);
    ddtk_input in;
    ddtk_sps_file again = *f;
    int rc = probe_open(&again, &in);
    if (!rc)
        rc = feed_input(s, dm, &in, f->nvalid);
    ddtk_input_close(&in);
    return rc;
}

void ddtk_sps_file_free(ddtk_sps_file *f)
{
    if (f->in) {
        ddtk_input_close(f->in);
        free(f->in);
    }
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* ---- a set of files ---------------------------------------------------------------- */

typedef struct dm_order {
    double dm;
    int file;
} dm_order;

static int by_dm(const void *a, const void *b)
{
    const dm_order *x = a, *y = b;
    if (x->dm != y->dm)
        return x->dm < y->dm ? -1 : 1;
    return (x->file > y->file) - (x->file < y->file);
}

/* index[] by DM, factor[] against the finest sample time. */
static int order_files(const ddtk_sps_file *f, int n, int *index, int *factor, double *tsamp)
{
    dm_order *o = ddtk_malloc((size_t)n * sizeof *o, "series list");
    if (!o)
        return DDTK_ESYS;
    *tsamp = f[0].tsamp;
    for (int i = 0; i < n; i++) {
        o[i].dm = f[i].dm;
        o[i].file = i;
        *tsamp = f[i].tsamp < *tsamp ? f[i].tsamp : *tsamp;
    }
    qsort(o, (size_t)n, sizeof *o, by_dm);
    for (int i = 0; i < n; i++)
        index[o[i].file] = i;
    free(o);
    for (int i = 0; i < n; i++) {
        double r = f[i].tsamp / *tsamp;
        int k = 1;
        while (k < (1 << 20) && k < r * (1 - 1e-9))
            k *= 2;
        if (fabs(r - k) > 1e-6 * k)
            return ddtk_fail(DDTK_EDATA, "%s: sample time %.9g s is not a power-of-two multiple "
                             "of the finest, %.9g s (series of different observations?)",
                             f[i].path, f[i].tsamp, *tsamp);
        factor[i] = k;
    }
    return DDTK_OK;
}

int ddtk_sps_files_search(ddtk_sps_file *files, int n, const ddtk_sps_params *par, int threads,
                          int *index, int *factor, double *tsamp, ddtk_sps_cand **cands,
                          int64_t *ncands, void (*done)(void *ctx, int nfiles), void *ctx)
{
    int nfed = 0;
    ddtk_sps *s = NULL;
    double *dms = ddtk_malloc((size_t)n * sizeof *dms, "series list");
    int *ds = ddtk_malloc((size_t)n * sizeof *ds, "series list");
    int rc = dms && ds ? order_files(files, n, index, factor, tsamp) : DDTK_ESYS;
    for (int i = 0; !rc && i < n; i++) {
        dms[index[i]] = files[i].dm;
        ds[index[i]] = factor[i];
    }
    if (!rc)
        rc = ddtk_sps_create(&s, par, n, dms, ds, *tsamp);
    if (!rc) {
        ddtk_thread_error err;
        ddtk_thread_error_init(&err);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : omp_get_max_threads()) if (n > 1)
        for (int i = 0; i < n; i++) {
            if (ddtk_thread_error_code(&err))
                continue;
            int frc = ddtk_sps_file_feed(s, index[i], &files[i]);
            if (!frc)
                frc = ddtk_sps_end(s, index[i]);
            if (frc)
                ddtk_thread_error_keep(&err, i, frc);
#pragma omp critical(sps_files_done)
            if (done)
                done(ctx, ++nfed);
        }
        rc = ddtk_thread_error_end(&err);
    }
    if (!rc)
        rc = ddtk_sps_finish(s, cands, ncands);
    ddtk_sps_destroy(s);
    free(dms);
    free(ds);
    return rc;
}
