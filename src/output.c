/*
 * output.c - dedispersed time series: SIGPROC .tim and PRESTO .dat + .inf.
 *
 * Every file is written under a hidden temporary name in its final directory
 * and renamed when complete, so an interrupted run never leaves a file that
 * looks finished. Existing outputs are refused unless --force is given.
 */
#include "tempfile.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- SIGPROC .tim -------------------------------------------------------- */

int ddtk_tim_header_write(FILE *fp, const ddtk_series_meta *m, double dm)
{
    const ddtk_header *in = m->in;
    ddtk_header h;
    ddtk_header_init(&h);
#define CARRY(key) do { h.key = in->key; ddtk_header_mark(&h, #key); } while (0)
#define SET(key, value) do { h.key = (value); ddtk_header_mark(&h, #key); } while (0)
    memcpy(h.source_name, in->source_name, sizeof h.source_name);
    ddtk_header_mark(&h, "source_name");
    CARRY(telescope_id);
    CARRY(machine_id);
    CARRY(src_raj);
    CARRY(src_dej);
    CARRY(az_start);
    CARRY(za_start);
    SET(data_type, 2);
    SET(refdm, dm);
    SET(fch1, m->fref);
    CARRY(barycentric);
    SET(nchans, 1);
    SET(nbits, 32);
    CARRY(tstart);
    SET(tsamp, m->tsamp);
    SET(nifs, 1);
    if (ddtk_header_has(in, "nbeams"))
        CARRY(nbeams);
    if (ddtk_header_has(in, "ibeam"))
        CARRY(ibeam);
#undef CARRY
#undef SET
    return ddtk_header_write(fp, &h);
}

/* ---- PRESTO .inf --------------------------------------------------------- */

static double beam_arcsec(int telescope_id, double fcentre_mhz)
{
    static const struct { int id; double diameter_m; } dish[] = {
        { 1, 225.0 }, { 4, 64.0 }, { 5, 76.0 }, { 6, 100.0 }, { 7, 45.0 }, { 8, 100.0 },
        { 10, 64.0 }, { 21, 300.0 }, { 64, 13.5 },
    };
    for (size_t i = 0; i < sizeof dish / sizeof dish[0]; i++)
        if (dish[i].id == telescope_id && fcentre_mhz > 0)
            return 1.2 * (299.792458 / fcentre_mhz) / dish[i].diameter_m * 206264.806;
    return 0.0;
}

static void inf_line(FILE *fp, const char *label, const char *value)
{
    fprintf(fp, " %-39s=  %s\n", label, value && *value ? value : "Unknown");
}

static void format_epoch(double mjd, char *out, size_t n)
{
    double whole = floor(mjd);
    char frac[32];
    snprintf(frac, sizeof frac, "%.15f", mjd - whole);
    if (frac[0] == '1') {
        whole += 1;
        snprintf(frac, sizeof frac, "%.15f", 0.0);
    }
    snprintf(out, n, "%.0f%s", whole, frac + 1);
}

void ddtk_inf_print(FILE *fp, const char *basename, const ddtk_series_meta *m,
                    double dm, int64_t nsamples)
{
    const ddtk_header *in = m->in;
    char v[128];
    inf_line(fp, "Data file name without suffix", basename);
    inf_line(fp, "Telescope used", in->telescope_id ? ddtk_telescope_name(in->telescope_id) : "");
    inf_line(fp, "Instrument used", in->machine_id ? ddtk_machine_name(in->machine_id) : "");
    inf_line(fp, "Object being observed", in->source_name);
    ddtk_format_sexagesimal(in->src_raj, v, sizeof v);
    inf_line(fp, "J2000 Right Ascension (hh:mm:ss.ssss)", v);
    ddtk_format_sexagesimal(in->src_dej, v, sizeof v);
    inf_line(fp, "J2000 Declination     (dd:mm:ss.ssss)", v);
    inf_line(fp, "Data observed by", "");
    format_epoch(in->tstart, v, sizeof v);
    inf_line(fp, "Epoch of observation (MJD)", v);
    inf_line(fp, "Barycentered?           (1 yes, 0 no)", in->barycentric ? "1" : "0");
    snprintf(v, sizeof v, "%-11.0f", (double)nsamples);
    inf_line(fp, "Number of bins in the time series", v);
    snprintf(v, sizeof v, "%.15g", m->tsamp);
    inf_line(fp, "Width of each time series bin (sec)", v);
    inf_line(fp, "Any breaks in the data? (1 yes, 0 no)", "0");
    inf_line(fp, "Type of observation (EM band)", "Radio");
    snprintf(v, sizeof v, "%.6g", beam_arcsec(in->telescope_id, m->flow + m->bandwidth / 2));
    inf_line(fp, "Beam diameter (arcsec)", v);
    snprintf(v, sizeof v, "%.12g", dm);
    inf_line(fp, "Dispersion measure (cm-3 pc)", v);
    snprintf(v, sizeof v, "%.12g", m->flow);
    inf_line(fp, "Central freq of low channel (MHz)", v);
    snprintf(v, sizeof v, "%.12g", m->bandwidth);
    inf_line(fp, "Total bandwidth (MHz)", v);
    snprintf(v, sizeof v, "%d", m->nchans);
    inf_line(fp, "Number of channels", v);
    snprintf(v, sizeof v, "%.12g", m->chan_bw);
    inf_line(fp, "Channel bandwidth (MHz)", v);
    const char *user = getenv("USER");
    inf_line(fp, "Data analyzed by", user);
    fprintf(fp, " Any additional notes:\n");
    const char *notes = m->notes ? m->notes : "";
    while (*notes) {
        size_t len = strcspn(notes, "\n");
        fprintf(fp, "    %.*s\n", (int)len, notes);
        notes += len + (notes[len] == '\n');
    }
}

/* The metadata of output i: a scrunched series has its own sample time. */
static ddtk_series_meta file_meta(const ddtk_outset *o, int i)
{
    ddtk_series_meta m = o->meta;
    if (m.downsamp)
        m.tsamp *= m.downsamp[i];
    return m;
}

/* ---- output sets ---------------------------------------------------------- */

static char *name_for(const char *prefix, double dm, const char *ext)
{
    size_t n = strlen(prefix) + 64;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s_DM%.2f.%s", prefix, dm, ext);
    return s;
}

/* For .dat, the .inf path sits beside it with the suffix swapped. */
static char *inf_path(const char *dat)
{
    size_t n = strlen(dat);
    char *s = malloc(n + 5);
    if (!s)
        return NULL;
    strcpy(s, dat);
    if (n > 4 && strcmp(s + n - 4, ".dat") == 0)
        strcpy(s + n - 4, ".inf");
    else
        strcat(s, ".inf");
    return s;
}

static int check_names(ddtk_outset *o)
{
    for (int i = 0; i < o->n; i++) {
        const char *path = o->f[i].path;
        struct stat st;
        if (i > 0 && strcmp(path, o->f[i - 1].path) == 0)
            return ddtk_fail(DDTK_EUSAGE, "DMs %.6g and %.6g both give the name %s: PRESTO "
                             "names carry two decimals; use a coarser DM step",
                             o->f[i - 1].dm, o->f[i].dm, path);
        if (!o->spec.force && stat(path, &st) == 0 && !ddtk_temp_is_special(path))
            return ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", path);
        if (o->spec.format == DDTK_FMT_DAT) {
            char *inf = inf_path(path);
            int exists = inf && stat(inf, &st) == 0;
            free(inf);
            if (!o->spec.force && exists)
                return ddtk_fail(DDTK_EUSAGE, "%s: .inf exists (use --force to overwrite)", path);
        }
    }
    return DDTK_OK;
}

static int name_outputs(ddtk_outset *o, const char *output, const char *prefix)
{
    const char *ext = o->spec.format == DDTK_FMT_DAT ? "dat" : "tim";
    if (output) {
        if (o->n > 1)
            return ddtk_fail(DDTK_EUSAGE, "-o names the output of a single DM; "
                             "use --prefix for %d DMs", o->n);
        o->f[0].path = strdup(output);
    } else {
        for (int i = 0; i < o->n; i++)
            if (!(o->f[i].path = name_for(prefix, o->f[i].dm, ext)))
                return ddtk_fail(DDTK_ESYS, "out of memory");
    }
    for (int i = 1; i < o->n; i++)
        if (fabs(o->f[i].dm - o->f[i - 1].dm) < 0.01) {
            ddtk_msg("warning: DM step %.4g is below 0.01: file names (%%.2f) cannot tell "
                     "these DMs apart", fabs(o->f[i].dm - o->f[i - 1].dm));
            break;
        }
    return check_names(o);
}

int ddtk_outset_open(ddtk_outset *o, const double *dms, int ndm,
                     const ddtk_outspec *spec, const ddtk_series_meta *meta)
{
    int rc, format = spec->format;
    memset(o, 0, sizeof *o);
    o->n = ndm;
    o->spec = *spec;
    o->meta = *meta;
    o->f = ddtk_calloc((size_t)ndm, sizeof *o->f, "output files");
    if (!o->f)
        return DDTK_ESYS;
    for (int i = 0; i < ndm; i++)
        o->f[i].dm = dms[i];
    if (spec->discard)
        return DDTK_OK;         /* no files: writes only count samples */
    if (ndm == 1 && !spec->output && format == DDTK_FMT_TIM && !spec->prefix) {
        o->to_stdout = 1;
        o->f[0].fp = stdout;
        ddtk_series_meta m = file_meta(o, 0);
        return ddtk_tim_header_write(stdout, &m, dms[0]);
    }
    if ((rc = name_outputs(o, spec->output,
                           spec->prefix ? spec->prefix : spec->default_prefix)))
        goto fail;
    for (int i = 0; i < ndm; i++) {
        if (!(o->f[i].fp = ddtk_temp_create(o->f[i].path, &o->f[i].tmp))) {
            rc = DDTK_ESYS;
            goto fail;
        }
        setvbuf(o->f[i].fp, NULL, _IOFBF, 1 << 16);
        ddtk_series_meta m = file_meta(o, i);
        if (format == DDTK_FMT_TIM && (rc = ddtk_tim_header_write(o->f[i].fp, &m, dms[i])))
            goto fail;
    }
    return DDTK_OK;
fail:
    ddtk_outset_abort(o);
    return rc;
}

int ddtk_outset_write(ddtk_outset *o, int i, const float *x, int64_t n)
{
    ddtk_series_file *f = &o->f[i];
    if (n > 0 && !o->spec.discard && fwrite(x, sizeof *x, (size_t)n, f->fp) != (size_t)n)
        return ddtk_fail(DDTK_ESYS, "%s: write error: %s",
                         f->path ? f->path : "stdout", strerror(errno));
    f->nwritten += n;
    return DDTK_OK;
}

int ddtk_outset_pad(ddtk_outset *o, int i, float value, int64_t n)
{
    float chunk[4096];
    int64_t len = n < 4096 ? n : 4096;
    for (int64_t t = 0; t < len; t++)
        chunk[t] = value;
    for (int64_t done = 0; done < n; done += len) {
        int rc = ddtk_outset_write(o, i, chunk, n - done < len ? n - done : len);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

static int write_inf_file(const char *path, const char *basename_noext,
                          const ddtk_series_meta *m, double dm, int64_t nsamples)
{
    char *tmp;
    FILE *fp = ddtk_temp_create(path, &tmp);
    if (!fp)
        return DDTK_ESYS;
    ddtk_inf_print(fp, basename_noext, m, dm, nsamples);
    return ddtk_temp_commit(fp, &tmp, path);
}

static int close_dat(ddtk_series_file *f, const ddtk_series_meta *m)
{
    char *inf = inf_path(f->path), *base = strdup(f->path);
    int rc = DDTK_ESYS;
    if (inf && base) {
        char *b = basename(base);
        size_t n = strlen(b);
        if (n > 4 && strcmp(b + n - 4, ".dat") == 0)
            b[n - 4] = '\0';
        rc = write_inf_file(inf, b, m, f->dm, f->nwritten);
    } else
        ddtk_fail(DDTK_ESYS, "out of memory");
    free(inf);
    free(base);
    return rc;
}

/* --even: PRESTO's FFTs want an even length. */
static int drop_last_sample(ddtk_series_file *f)
{
    if (fflush(f->fp) != 0)
        return ddtk_fail(DDTK_ESYS, "%s: write error: %s", f->path, strerror(errno));
    off_t size = ftello(f->fp);
    if (ftruncate(fileno(f->fp), size - (off_t)sizeof(float)) != 0 ||
        fseeko(f->fp, 0, SEEK_END) != 0)
        return ddtk_fail(DDTK_ESYS, "%s: cannot trim to an even length: %s",
                         f->path, strerror(errno));
    f->nwritten--;
    return DDTK_OK;
}

int ddtk_outset_close(ddtk_outset *o)
{
    int rc = DDTK_OK;
    if (o->spec.discard) {
        free(o->f);
        o->f = NULL;
        return DDTK_OK;
    }
    if (o->to_stdout) {
        if (fflush(stdout) != 0 || ferror(stdout))
            rc = ddtk_fail(DDTK_ESYS, "stdout: write error: %s", strerror(errno));
        free(o->f);
        o->f = NULL;
        return rc;
    }
    for (int i = 0; i < o->n && !rc; i++) {
        ddtk_series_file *f = &o->f[i];
        if (o->spec.even && f->nwritten % 2)
            rc = drop_last_sample(f);
        ddtk_series_meta m = file_meta(o, i);
        if (!rc && o->spec.format == DDTK_FMT_DAT)
            rc = close_dat(f, &m);
        if (rc)
            break;              /* the abort below closes and removes this one */
        rc = ddtk_temp_commit(f->fp, &f->tmp, f->path);
        f->fp = NULL;
    }
    if (rc) {
        ddtk_outset_abort(o);
        return rc;
    }
    for (int i = 0; i < o->n; i++)
        free(o->f[i].path);
    free(o->f);
    o->f = NULL;
    return DDTK_OK;
}

void ddtk_outset_abort(ddtk_outset *o)
{
    for (int i = 0; o->f && i < o->n; i++) {
        ddtk_series_file *f = &o->f[i];
        ddtk_temp_discard(f->fp != stdout ? f->fp : NULL, &f->tmp);
        free(f->path);
    }
    free(o->f);
    o->f = NULL;
}
