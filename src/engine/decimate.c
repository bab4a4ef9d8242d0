/*
 * decimate.c - time decimation, the algorithm of tscrunch: add (or average)
 * groups of N adjacent samples of every row (channel and IF) of a SIGPROC
 * filterbank of any nbits, a .tim time series or a PRESTO .dat + .inf pair,
 * streamed in bounded memory; float output, or unsigned 8/16-bit integers
 * scaled by the smallest power of two that fits the range; a final partial
 * group dropped or kept (its mean, times N for sums); the output's header or
 * .inf with tsamp times N.
 */
#include "decimate.h"
#include "inf.h"
#include "internal.h"
#include "tempfile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK_VALUES (1 << 22)  /* unpacked floats per read */

typedef struct job {
    const ddtk_decimate_opts *o;
    ddtk_input in;
    int dat;                      /* PRESTO .dat + .inf input */
    int nrows;                    /* values per spectrum: nifs * nchans */
    int64_t chunk;                /* spectra per read, a multiple of 8 */
    double scale;                 /* integer output = value / scale */
    FILE *out;
    char *tmp;
    const char *out_name;
    int64_t nout, remainder;
} job;

/* ---- PRESTO .inf ------------------------------------------------------------ */

/* The output's .inf into a temporary (*out gets its path, *tmp the
 * temporary's): the input .inf with the new name, length and bin width, and
 * a note. */
static FILE *write_inf(job *j, char **out, char **tmp)
{
    char *in_inf = ddtk_inf_path(j->o->input), *base = strdup(j->out_name), line[512];
    FILE *src = in_inf ? fopen(in_inf, "r") : NULL, *dst = NULL;
    *out = ddtk_inf_path(j->out_name);
    *tmp = NULL;
    if (!src || !*out || !base) {
        ddtk_fail(DDTK_ESYS, "%s: cannot read: %s", in_inf ? in_inf : "", strerror(errno));
        goto done;
    }
    if (!(dst = ddtk_temp_create(*out, tmp)))
        goto done;
    char *b = strrchr(base, '/') ? strrchr(base, '/') + 1 : base;
    b[strlen(b) - 4] = '\0';
    while (fgets(line, sizeof line, src)) {
        line[strcspn(line, "\n")] = '\0';
        if (ddtk_inf_value(line, "Data file name without suffix"))
            fprintf(dst, " %-39s=  %s\n", "Data file name without suffix", b);
        else if (ddtk_inf_value(line, "Number of bins in the time series"))
            fprintf(dst, " %-39s=  %-11.0f\n", "Number of bins in the time series", (double)j->nout);
        else if (ddtk_inf_value(line, "Width of each time series bin (sec)"))
            fprintf(dst, " %-39s=  %.15g\n", "Width of each time series bin (sec)",
                    j->in.hdr.tsamp * (double)j->o->n);
        else
            fprintf(dst, "%s\n", line);
    }
    fprintf(dst, "    Time scrunched by ddtk tscrunch: %s of %lld samples\n",
            j->o->mean ? "mean" : "sum", (long long)j->o->n);
done:
    if (src)
        fclose(src);
    free(in_inf);
    free(base);
    return dst;
}

/* A .dat is headerless float32: open it as a one-channel series. */
static int open_dat(job *j)
{
    ddtk_inf meta;
    j->dat = 1;
    return ddtk_dat_open(&j->in, j->o->input, &meta, NULL);
}

/* ---- output ------------------------------------------------------------------- */

static int out_nbits(const job *j)
{
    return j->o->nbits_out ? j->o->nbits_out : 32;
}

/* Integer output: S = the smallest power of two that brings the largest result into range. */
static int choose_scale(job *j)
{
    const ddtk_header *h = &j->in.hdr;
    j->scale = 1.0;
    if (out_nbits(j) == 32)
        return DDTK_OK;
    if (h->nbits > 16 || j->dat || h->signed_data)
        return ddtk_fail(DDTK_EUSAGE, "output bits %d: %s holds %s data; integer output needs "
                         "unsigned integer input", j->o->nbits_out, j->in.name,
                         h->signed_data ? "signed" : "float");
    double top = ldexp(1.0, h->nbits) - 1;
    j->scale = ddtk_integer_scale(j->o->mean ? top : top * (double)j->o->n, out_nbits(j));
    if (!j->o->quiet)
        ddtk_report(DDTK_MSG_INFO, "output bits %d: output value = %s / %g, rounded",
                    out_nbits(j), j->o->mean ? "mean" : "sum", j->scale);
    return DDTK_OK;
}

static int write_header(job *j)
{
    ddtk_header h;
    int rc;
    if (j->dat)
        return DDTK_OK;
    ddtk_header_init(&h);
    if ((rc = ddtk_header_copy(&h, &j->in.hdr)))
        return rc;
    h.tsamp *= (double)j->o->n;
    h.nbits = out_nbits(j);
    ddtk_header_mark(&h, "nbits");
    if (ddtk_header_has(&h, "nsamples")) {
        if (j->in.nsamples >= 0)
            h.nsamples = (int32_t)(j->in.nsamples / j->o->n + (j->o->keep && j->in.nsamples % j->o->n));
        else
            ddtk_header_unmark(&h, "nsamples");
    }
    rc = ddtk_header_write(j->out, &h);
    ddtk_header_free(&h);
    return rc;
}

static int open_output(job *j)
{
    struct stat st;
    j->out_name = j->o->output ? j->o->output : "stdout";
    if (j->dat && (!j->o->output || !ddtk_ends_with(j->o->output, ".dat")))
        return ddtk_fail(DDTK_EUSAGE, "%s: .dat input needs an output name FILE.dat (its "
                         ".inf goes beside it)",
                         j->in.name);
    if (!j->o->output) {
        j->out = stdout;
        return DDTK_OK;
    }
    if (!j->o->force && stat(j->o->output, &st) == 0)
        return ddtk_fail(DDTK_EUSAGE, "%s: exists (overwriting it needs force)", j->o->output);
    j->out = ddtk_temp_create(j->o->output, &j->tmp);
    return j->out ? DDTK_OK : DDTK_ESYS;
}

/* Write n output spectra of nrows values each. */
static int emit(job *j, const double *v, int64_t n)
{
    size_t count = (size_t)n * (size_t)j->nrows, bytes = out_nbits(j) / 8;
    void *buf = malloc(count * bytes);
    if (!buf)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    for (size_t i = 0; i < count; i++) {
        double x = j->o->mean ? v[i] / (double)j->o->n : v[i];
        if (bytes == 4) {
            ((float *)buf)[i] = (float)x;
            continue;
        }
        uint32_t q = ddtk_quantise(x, j->scale, out_nbits(j));
        if (bytes == 1)
            ((uint8_t *)buf)[i] = (uint8_t)q;
        else
            ((uint16_t *)buf)[i] = (uint16_t)q;
    }
    size_t put = fwrite(buf, bytes, count, j->out);
    free(buf);
    if (put != count)
        return ddtk_fail(DDTK_ESYS, "%s: write error: %s", j->out_name, strerror(errno));
    j->nout += n;
    return DDTK_OK;
}

/* ---- the scrunch loop ---------------------------------------------------------- */

/* Add the n samples of every row (stride apart) into acc, emitting each
 * completed group; *fill counts the samples already in the open group. */
static int add_chunk(job *j, const float *rows, int64_t n, double *acc, int64_t *fill, double *groups)
{
    const int64_t N = j->o->n;
    int64_t done = (*fill + n) / N;
    for (int r = 0; r < j->nrows; r++) {
        const float *x = rows + (size_t)r * (size_t)j->chunk;
        double a = acc[r];
        int64_t c = *fill, g = 0;
        for (int64_t t = 0; t < n; t++) {
            a += x[t];
            if (++c == N) {
                groups[(size_t)g++ * (size_t)j->nrows + (size_t)r] = a;
                a = 0;
                c = 0;
            }
        }
        acc[r] = a;
    }
    *fill = (*fill + n) % N;
    return done ? emit(j, groups, done) : DDTK_OK;
}

/* Unpack every IF into rows r = if * nchans + channel. */
static void unpack_all(const job *j, const uint8_t *raw, int64_t n, const int *row, float *rows)
{
    const ddtk_header *h = &j->in.hdr;
    for (int i = 0; i < h->nifs; i++)
        ddtk_unpack(h, raw, n, row, i, rows + (size_t)i * (size_t)h->nchans * (size_t)j->chunk,
                    (size_t)j->chunk);
}

static int finish_remainder(job *j, double *acc, int64_t fill)
{
    j->remainder = fill;
    if (!fill || !j->o->keep)
        return DDTK_OK;
    for (int r = 0; r < j->nrows; r++)
        acc[r] *= (double)j->o->n / (double)fill;
    return emit(j, acc, 1);
}

static int scrunch(job *j)
{
    const ddtk_header *h = &j->in.hdr;
    uint8_t *raw = malloc((size_t)ddtk_input_bytes(&j->in, j->chunk));
    float *rows = malloc((size_t)j->nrows * (size_t)j->chunk * sizeof *rows);
    double *acc = calloc((size_t)j->nrows, sizeof *acc);
    double *groups = malloc((size_t)j->nrows * (size_t)j->chunk * sizeof *groups);
    int *row = malloc((size_t)h->nchans * sizeof *row);
    int64_t fill = 0, got;
    int rc = raw && rows && acc && groups && row ? DDTK_OK : ddtk_fail(DDTK_ESYS, "out of memory");
    for (int c = 0; !rc && c < h->nchans; c++)
        row[c] = c;
    while (!rc && !(rc = ddtk_input_read(&j->in, raw, j->chunk, &got)) && got > 0) {
        unpack_all(j, raw, got, row, rows);
        rc = add_chunk(j, rows, got, acc, &fill, groups);
    }
    if (!rc)
        rc = finish_remainder(j, acc, fill);
    if (!rc && j->nout == 0)      /* never an empty output that looks complete */
        rc = j->in.samples_read == 0
            ? ddtk_fail(DDTK_EDATA, "%s: no data after the header (shorter than one sample)",
                        j->in.name)
            : ddtk_fail(DDTK_EDATA, "%s: %lld samples, fewer than one group of %lld "
                        "(--keep-remainder keeps a partial group)", j->in.name,
                        (long long)j->in.samples_read, (long long)j->o->n);
    free(raw);
    free(rows);
    free(acc);
    free(groups);
    free(row);
    return rc;
}

static int finish(job *j)
{
    if (j->out == stdout)
        return fflush(stdout) || ferror(stdout)
            ? ddtk_fail(DDTK_ESYS, "stdout: write error: %s", strerror(errno)) : DDTK_OK;
    if (!j->dat) {
        int rc = ddtk_temp_commit(j->out, &j->tmp, j->out_name);
        j->out = NULL;
        return rc;
    }
    /* a .dat and its .inf: committed together, all or nothing */
    char *inf, *inf_tmp;
    FILE *fp[2] = { j->out, write_inf(j, &inf, &inf_tmp) };
    char *tmp[2] = { j->tmp, inf_tmp };
    const char *path[2] = { j->out_name, inf };
    int rc = DDTK_ESYS;
    if (fp[1]) {                  /* the commit closes both and frees their names */
        j->out = NULL;
        j->tmp = NULL;
        rc = ddtk_temp_commit_all(fp, tmp, path, 2, j->o->force);
    }
    free(inf);
    return rc;
}

static void report(const job *j)
{
    const ddtk_decimate_opts *o = j->o;
    if (j->remainder && !o->keep)
        ddtk_report(DDTK_MSG_INFO, "%s: %lld trailing sample%s (less than one group of %lld) "
                    "dropped; the remainder can be kept", j->in.name, (long long)j->remainder,
                    j->remainder == 1 ? "" : "s", (long long)o->n);
    else if (j->remainder)
        ddtk_report(DDTK_MSG_INFO, "%s: last output sample made from a partial group of %lld",
                    j->in.name, (long long)j->remainder);
    if (j->in.notes)
        ddtk_report(DDTK_MSG_INFO, "%s: %s", j->in.name, j->in.notes);
    ddtk_report(DDTK_MSG_INFO, "%s: %lld samples -> %lld (%s of %lld), tsamp %.9g -> %.9g s, "
                "%d-bit output", j->in.name, (long long)j->in.samples_read, (long long)j->nout,
                o->mean ? "mean" : "sum", (long long)o->n, j->in.hdr.tsamp,
                j->in.hdr.tsamp * (double)o->n, out_nbits(j));
}

/* Open the input; reads of whole bytes, of CHUNK_VALUES values at most. */
static int open_input(job *j)
{
    const char *path = j->o->input;
    int rc = j->o->ninputs > 1 ? ddtk_input_open_files(&j->in, j->o->inputs, j->o->ninputs)
             : path && ddtk_ends_with(path, ".dat") ? open_dat(j) : ddtk_input_open(&j->in, path);
    if (rc)
        return rc;
    j->nrows = j->in.hdr.nchans * j->in.hdr.nifs;
    j->chunk = CHUNK_VALUES / j->nrows / 8 * 8;
    j->chunk = j->chunk < 8 ? 8 : j->chunk > 4096 ? 4096 : j->chunk;
    return DDTK_OK;
}

int ddtk_decimate_file(const ddtk_decimate_opts *o)
{
    job j = { .o = o };
    int rc = open_input(&j);
    if (!rc) {
        if (!(rc = choose_scale(&j)) && !(rc = open_output(&j)) && !(rc = write_header(&j))
            && !(rc = scrunch(&j)))
            rc = finish(&j);
        if (rc && j.out != stdout)
            ddtk_temp_discard(j.out, &j.tmp);
        if (!rc && !o->quiet)
            report(&j);
    }
    ddtk_input_close(&j.in);
    return rc;
}
