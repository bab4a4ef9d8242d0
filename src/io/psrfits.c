/*
 * psrfits.c - PSRFITS search-mode input through cfitsio: one or several files
 * of one observation read as one stream of spectra in a SIGPROC layout.
 *
 * The rules are PRESTO's psrfits reader's: value = (raw - |ZERO_OFF|) *
 * DAT_SCL + DAT_OFFS, times DAT_WTS, per channel and polarisation; sub-byte
 * samples packed most significant first; AABB(CRCI) read as the two IFs AA
 * and BB (ddtk's default --pol sum adds them), IQUV as I; rows placed by
 * OFFS_SUB (NSUBOFFS, STT_* across files) and gaps filled with zeros.
 *
 * Where the scales, offsets and weights are trivial everywhere (1, 0, and 0
 * or 1), the raw integers are kept (sub-byte samples repacked to SIGPROC's
 * order) so the data equal a filterbank of the same samples byte for byte;
 * otherwise the spectra are float32: raw * mul + add, with each row's scale,
 * offset and weight folded into one multiply-add per channel. The CPU engine
 * takes such data decoded straight into its channel rows
 * (ddtk_psrfits_read_rows), without the float32 spectra between: they are
 * 4 times the bytes of 8-bit data and cost as much again to transpose.
 * The GPU takes them of 8 bits or fewer as one byte per value with each
 * row's multiply-add (ddtk_psrfits_read_scaled), applied as it unpacks.
 * One row is held at a time.
 */
#include "internal.h"
#include "psrfits.h"

#include <errno.h>
#include <fcntl.h>
#include <fitsio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* How the samples are presented to the engine. */
enum { OUT_RAW, OUT_BYTES, OUT_FLOAT };

/* Spectra decoded together by read_rows: their floats stay in L2 while the
 * channel rows are written. */
#define ROW_BLOCK 32
/* Whole rows scaled to float32 are read and converted on several threads
 * this many raw bytes at a time (64 MiB: 256 MiB of float32). */
#define BATCH_BYTES ((int64_t)64 << 20)
#define FITS_BLOCK 2880

typedef struct fits_file {
    fitsfile *fp;
    int fd;                       /* the file itself, for reads of whole rows */
    const char *path;
    long nrows;
    int64_t *row_spec;            /* first spectrum of each row in the observation */
    off_t data_off, row_stride;   /* byte of row 0's DATA cell; NAXIS1 */
} fits_file;

struct ddtk_psrfits {
    fits_file *f;
    int nf;
    int nchan, npol, nbits, nsblk;
    int out_pols;                 /* polarisations presented (IFs): 1 or 2 */
    int raw_signed;               /* 8-bit signed (TZERO -128) or 16-bit signed */
    int raw_type;                 /* 'B', 'X', 'I' or 'E' */
    int out;                      /* OUT_* */
    float zero_off;
    int col_data, col_offs_sub, col_wts, col_offs, col_scl;
    long nscl, noffs;             /* values of DAT_SCL and DAT_OFFS: NCHAN x NPOL, or NCHAN
                                     shared by the polarisations (some writers) */
    long data_first;              /* first byte of DATA in a row (1-based) */
    int64_t row_bytes;            /* DATA bytes of a row */
    int64_t out_spec_bytes;       /* presented bytes per spectrum (whole bytes) */
    uint8_t *raw, *row;           /* a row as read and as presented */
    int presented;                /* row holds raw presented */
    float *scl, *offs, *wts;
    float *mul, *add;             /* OUT_FLOAT, per IF and channel of the row: raw * mul + add */
    float *block;                 /* ROW_BLOCK spectra of floats, for read_rows */
    uint8_t *batch;               /* BATCH_BYTES of whole raw rows, for read_rows_float */
    float *bmul, *badd;           /* their scaling */
    long batch_rows;
    int weights_zero;             /* some weight is 0: such channels are zeroed */
    uint8_t *dead;                /* per channel: weight 0 in every row */
    int *zero, nzero;             /* the channels the current row's weights zero */
    int direct;                   /* whole rows may be read into the caller's buffer */
    uint8_t flip[256];            /* sub-byte: PSRFITS order to SIGPROC order */
    int64_t nspec;                /* spectra of the observation, gaps included */
    int64_t padded, gaps;         /* spectra and runs of padding */
    /* position */
    int cur_file;
    long cur_row;                 /* next row of cur_file (0-based) */
    int64_t pos;                  /* spectra delivered */
    int64_t row_left;             /* spectra of the presented row not yet delivered */
};

static int fits_error(const char *path, int status, const char *what)
{
    char text[FLEN_STATUS];
    fits_get_errstatus(status, text);
    fits_clear_errmsg();
    return ddtk_fail(status == FILE_NOT_OPENED ? DDTK_ESYS : DDTK_EDATA,
                     "%s: %s: %s (cfitsio %d)", path, what, text, status);
}

int ddtk_psrfits_sniff(const uint8_t *head, size_t n)
{
    return n >= 30 && memcmp(head, "SIMPLE  =", 9) == 0;
}

/* ---- keys and columns ------------------------------------------------------- */

static int key_string(fitsfile *fp, const char *key, char *v, int *status)
{
    char comment[FLEN_COMMENT];
    v[0] = '\0';
    if (*status)
        return 0;
    fits_read_key(fp, TSTRING, key, v, comment, status);
    if (*status == KEY_NO_EXIST) {
        *status = 0;
        fits_clear_errmsg();
        return 0;
    }
    return 1;
}

static int key_double(fitsfile *fp, const char *key, double *v, int *status)
{
    char comment[FLEN_COMMENT];
    if (*status)
        return 0;
    fits_read_key(fp, TDOUBLE, key, v, comment, status);
    if (*status == KEY_NO_EXIST) {
        *status = 0;
        fits_clear_errmsg();
        return 0;
    }
    return 1;
}

static int column(fitsfile *fp, const char *path, const char *name, int required, int *col)
{
    int status = 0;
    *col = 0;
    fits_get_colnum(fp, CASEINSEN, (char *)name, col, &status);
    if (status) {
        fits_clear_errmsg();
        *col = 0;
        if (required)
            return ddtk_fail(DDTK_EDATA, "%s: the SUBINT table has no %s column", path, name);
    }
    return DDTK_OK;
}

/* Byte offset (1-based) of column col in a row, from the TFORMs before it. */
static int column_start(fitsfile *fp, const char *path, int col, long *first)
{
    *first = 1;
    for (int i = 1; i < col; i++) {
        char key[FLEN_KEYWORD], tform[FLEN_VALUE];
        int status = 0, type;
        long repeat, width;
        snprintf(key, sizeof key, "TFORM%d", i);
        key_string(fp, key, tform, &status);
        fits_binary_tform(tform, &type, &repeat, &width, &status);
        if (status)
            return fits_error(path, status, "reading the SUBINT columns");
        if (type == TBIT)
            *first += (repeat + 7) / 8;
        else if (type < 0)
            *first += strchr(tform, 'Q') ? 16 : 8;
        else if (type == TSTRING)
            *first += repeat;
        else
            *first += repeat * width;
    }
    return DDTK_OK;
}

/* ---- the observation ---------------------------------------------------- */

typedef struct obs_keys {
    char telescop[FLEN_VALUE], backend[FLEN_VALUE], src[FLEN_VALUE];
    char ra[FLEN_VALUE], dec[FLEN_VALUE], pol_type[FLEN_VALUE];
    long double mjd;              /* STT_IMJD + (STT_SMJD + STT_OFFS) / 86400 */
    double tbin, chan_bw, nsuboffs, zero_off;
    int nchan, npol, nbits, nsblk;
} obs_keys;

static int read_keys(fitsfile *fp, const char *path, obs_keys *k)
{
    int status = 0;
    char v[FLEN_VALUE];
    double imjd = 0, smjd = 0, offs = 0, d;
    if (!key_string(fp, "FITSTYPE", v, &status) || strcmp(v, "PSRFITS") != 0)
        return ddtk_fail(DDTK_EDATA, "%s: a FITS file, but not PSRFITS (no FITSTYPE = "
                         "'PSRFITS')", path);
    key_string(fp, "OBS_MODE", v, &status);
    if (strcmp(v, "SEARCH") != 0 && strcmp(v, "SRCH") != 0)
        return ddtk_fail(DDTK_EDATA, "%s: PSRFITS in %s mode (OBS_MODE '%s'): ddtk reads "
                         "search mode only", path, strcmp(v, "PSR") == 0 ? "fold" : "another",
                         v);
    key_string(fp, "TELESCOP", k->telescop, &status);
    key_string(fp, "BACKEND", k->backend, &status);
    key_string(fp, "SRC_NAME", k->src, &status);
    key_string(fp, "RA", k->ra, &status);
    key_string(fp, "DEC", k->dec, &status);
    key_double(fp, "STT_IMJD", &imjd, &status);
    key_double(fp, "STT_SMJD", &smjd, &status);
    key_double(fp, "STT_OFFS", &offs, &status);
    k->mjd = (long double)imjd + ((long double)smjd + (long double)offs) / 86400.0L;
    if (!status)
        fits_movnam_hdu(fp, BINARY_TBL, "SUBINT", 0, &status);
    if (status == BAD_HDU_NUM)
        return ddtk_fail(DDTK_EDATA, "%s: PSRFITS without a SUBINT table", path);
    k->tbin = k->chan_bw = k->nsuboffs = 0;
    key_double(fp, "TBIN", &k->tbin, &status);
    key_double(fp, "CHAN_BW", &k->chan_bw, &status);
    key_double(fp, "NSUBOFFS", &k->nsuboffs, &status);
    k->zero_off = 0;
    key_double(fp, "ZERO_OFF", &k->zero_off, &status);
    k->zero_off = fabs(k->zero_off);
    key_string(fp, "POL_TYPE", k->pol_type, &status);
    const char *ints[] = { "NCHAN", "NPOL", "NBITS", "NSBLK" };
    int *dst[] = { &k->nchan, &k->npol, &k->nbits, &k->nsblk };
    for (int i = 0; i < 4 && !status; i++) {
        const int found = key_double(fp, ints[i], &d, &status);
        if (status)
            break;
        if (!found)
            return ddtk_fail(DDTK_EDATA, "%s: the SUBINT table has no %s", path, ints[i]);
        if (!(d >= 1 && d <= DDTK_MAX_NCHANS && d == floor(d)))
            return ddtk_fail(DDTK_EDATA, "%s: %s %g is not a positive integer", path, ints[i], d);
        *dst[i] = (int)d;
    }
    if (status)
        return fits_error(path, status, "reading the PSRFITS header");
    if (!(k->tbin > 0) || !isfinite(k->tbin))
        return ddtk_fail(DDTK_EDATA, "%s: TBIN %g is not a positive time", path, k->tbin);
    if (k->nbits != 1 && k->nbits != 2 && k->nbits != 4 && k->nbits != 8 && k->nbits != 16
        && k->nbits != 32)
        return ddtk_fail(DDTK_EDATA, "%s: NBITS %d is not one of 1, 2, 4, 8, 16, 32", path,
                         k->nbits);
    if ((int64_t)k->nchan * k->npol > DDTK_MAX_NCHANS
        || (int64_t)k->nchan * k->npol * k->nsblk * k->nbits / 8 > ((int64_t)1 << 31))
        return ddtk_fail(DDTK_EDATA, "%s: rows of NCHAN %d x NPOL %d x NSBLK %d are too large",
                         path, k->nchan, k->npol, k->nsblk);
    return DDTK_OK;
}

/* The files of one observation must agree on the layout. */
static int same_layout(const obs_keys *a, const obs_keys *b, const char *path)
{
    if (a->nchan != b->nchan || a->npol != b->npol || a->nbits != b->nbits
        || a->nsblk != b->nsblk || a->tbin != b->tbin || strcmp(a->pol_type, b->pol_type) != 0)
        return ddtk_fail(DDTK_EDATA, "%s: NCHAN, NPOL, NBITS, NSBLK, TBIN or POL_TYPE differ "
                         "from the first file's: not one observation", path);
    return DDTK_OK;
}

/* The DATA column: its type, sign and size against NSBLK x NCHAN x NPOL x NBITS. */
static int data_column(ddtk_psrfits *p, fitsfile *fp, const char *path)
{
    char key[FLEN_KEYWORD], tform[FLEN_VALUE];
    double tzero = 0, tscal = 1;
    int status = 0, type, rc;
    long repeat, width;
    if ((rc = column(fp, path, "DATA", 1, &p->col_data)))
        return rc;
    snprintf(key, sizeof key, "TFORM%d", p->col_data);
    key_string(fp, key, tform, &status);
    fits_binary_tform(tform, &type, &repeat, &width, &status);
    snprintf(key, sizeof key, "TZERO%d", p->col_data);
    key_double(fp, key, &tzero, &status);
    snprintf(key, sizeof key, "TSCAL%d", p->col_data);
    key_double(fp, key, &tscal, &status);
    if (status)
        return fits_error(path, status, "reading the DATA column");
    int64_t values = (int64_t)p->nsblk * p->nchan * p->npol;
    p->row_bytes = values * p->nbits / 8;
    int64_t bytes = type == TBIT ? (repeat + 7) / 8 : type > 0 ? (int64_t)repeat * width : -1;
    int ok = tscal == 1 && bytes == p->row_bytes && p->row_bytes * 8 == values * p->nbits;
    p->raw_type = type == TBIT ? 'X' : type == TBYTE ? 'B' : type == TSHORT ? 'I'
                : type == TFLOAT ? 'E' : 0;
    if (p->nbits < 8)
        ok = ok && (p->raw_type == 'B' || p->raw_type == 'X') && tzero == 0;
    else if (p->nbits == 8)
        ok = ok && p->raw_type == 'B' && (tzero == 0 || tzero == -128);
    else if (p->nbits == 16)
        ok = ok && p->raw_type == 'I' && (tzero == 0 || tzero == 32768);
    else
        ok = ok && p->raw_type == 'E' && tzero == 0;
    if (!ok)
        return ddtk_fail(DDTK_EDATA, "%s: DATA column '%s' (TZERO %g, TSCAL %g) does not hold "
                         "NSBLK %d x NCHAN %d x NPOL %d samples of %d bits", path, tform, tzero,
                         tscal, p->nsblk, p->nchan, p->npol, p->nbits);
    p->raw_signed = (p->nbits == 8 && tzero == -128) || (p->nbits == 16 && tzero == 0);
    return column_start(fp, path, p->col_data, &p->data_first);
}

/* The polarisations presented: AA and BB of AABB(CRCI) and of any two
 * (summed by --pol sum, the default), I of IQUV, the one of NPOL 1. */
static int polarisations(ddtk_psrfits *p, const char *pol_type, const char *path)
{
    if (p->npol == 1)
        p->out_pols = 1;
    else if (p->npol == 2 || strncasecmp(pol_type, "AABB", 4) == 0)
        p->out_pols = 2;
    else if (strncasecmp(pol_type, "IQUV", 4) == 0)
        p->out_pols = 1;
    else
        return ddtk_fail(DDTK_EDATA, "%s: NPOL %d with POL_TYPE '%s': ddtk reads AABBCRCI, "
                         "AABB or IQUV", path, p->npol, pol_type);
    return DDTK_OK;
}

/* One row's scales, offsets and weights (per channel and polarisation;
 * weights per channel); absent columns are 1, 0 and 1. */
static int row_scaling(ddtk_psrfits *p, fits_file *f, long row)
{
    int status = 0, anynul;
    long nv = (long)p->nchan * p->npol;
    for (long i = 0; i < nv; i++) {
        p->scl[i] = 1;
        p->offs[i] = 0;
    }
    for (int c = 0; c < p->nchan; c++)
        p->wts[c] = 1;
    if (p->col_scl)
        fits_read_col(f->fp, TFLOAT, p->col_scl, row + 1, 1, p->nscl, NULL, p->scl, &anynul,
                      &status);
    if (p->col_offs)
        fits_read_col(f->fp, TFLOAT, p->col_offs, row + 1, 1, p->noffs, NULL, p->offs, &anynul,
                      &status);
    for (long i = p->nscl; i < nv; i++)
        p->scl[i] = p->scl[i % p->nchan];
    for (long i = p->noffs; i < nv; i++)
        p->offs[i] = p->offs[i % p->nchan];
    if (p->col_wts)
        fits_read_col(f->fp, TFLOAT, p->col_wts, row + 1, 1, p->nchan, NULL, p->wts, &anynul,
                      &status);
    return status ? fits_error(f->path, status, "reading DAT_SCL, DAT_OFFS or DAT_WTS") : DDTK_OK;
}

/* Do the scales, offsets and weights of every row leave the integers as they are? */
static int scan_scaling(ddtk_psrfits *p, int *trivial)
{
    int rc;
    *trivial = p->zero_off == 0 && p->nbits <= 16;
    memset(p->dead, 1, (size_t)p->nchan);
    for (int i = 0; i < p->nf; i++)
        for (long r = 0; r < p->f[i].nrows; r++) {
            if ((rc = row_scaling(p, &p->f[i], r)))
                return rc;
            for (long v = 0; v < (long)p->nchan * p->npol; v++)
                if (p->scl[v] != 1 || p->offs[v] != 0)
                    *trivial = 0;
            for (int c = 0; c < p->nchan; c++) {
                if (p->wts[c] == 0)
                    p->weights_zero = 1;
                else
                    p->dead[c] = 0;
                if (p->wts[c] != 0 && p->wts[c] != 1)
                    *trivial = 0;
            }
        }
    return DDTK_OK;
}

/* The first spectrum of every row, placed as PRESTO places them: a file
 * starts at its STT_* time plus the rows its first OFFS_SUB says precede it
 * (NSUBOFFS without OFFS_SUB), and each row at its OFFS_SUB from there.
 * *mjd0 is the first file's start (set when first); *end the spectra so far. */
static int place_rows(ddtk_psrfits *p, fits_file *f, const obs_keys *k, int first,
                      long double *mjd0, int64_t *end)
{
    const double dt = k->tbin, tsub = dt * p->nsblk;
    double *offs = ddtk_malloc((size_t)f->nrows * sizeof *offs, "OFFS_SUB");
    int status = 0, anynul;
    if (!offs)
        return DDTK_ESYS;
    if (p->col_offs_sub)
        fits_read_col(f->fp, TDOUBLE, p->col_offs_sub, 1, 1, f->nrows, NULL, offs, &anynul,
                      &status);
    else
        for (long r = 0; r < f->nrows; r++)
            offs[r] = (k->nsuboffs + (double)r + 0.5) * tsub;
    if (status) {
        free(offs);
        return fits_error(f->path, status, "reading OFFS_SUB");
    }
    const double sub0 = (offs[0] - 0.5 * tsub) / tsub + 1e-7;
    if (!isfinite(sub0) || fabs(sub0) > 1e15) {
        const double o = offs[0];
        free(offs);
        return ddtk_fail(DDTK_EDATA, "%s: row 1: OFFS_SUB %g is not a time in the file",
                         f->path, o);
    }
    long start_subint = (long)sub0;
    long double mjd = k->mjd + (long double)tsub * start_subint / 86400.0L;
    if (first)
        *mjd0 = mjd;
    long double start = (mjd - *mjd0) * 86400.0L / dt;
    int rc = DDTK_OK;
    if (start < -0.5L)
        rc = ddtk_fail(DDTK_EDATA, "%s: starts before the first file: give the files of an "
                       "observation in time order", f->path);
    else if (!(start < 1e15L))
        rc = ddtk_fail(DDTK_EDATA, "%s: starts %.3Lg s after the first file: not one "
                       "observation", f->path, start * dt);
    int64_t file_spec = (int64_t)(start + 0.5L);
    for (long r = 0; r < f->nrows && !rc; r++) {
        double at = (offs[r] - ((double)start_subint + 0.5) * tsub) / dt;
        if (!isfinite(at) || fabs(at) > 1e15) {
            rc = ddtk_fail(DDTK_EDATA, "%s: row %ld: OFFS_SUB %g is not a time in the file",
                           f->path, r + 1, offs[r]);
            break;
        }
        f->row_spec[r] = file_spec + (int64_t)llround(at);
        if (f->row_spec[r] < *end)
            rc = ddtk_fail(DDTK_EDATA, "%s: row %ld (OFFS_SUB %.9g s) overlaps the rows "
                           "before it%s", f->path, r + 1, offs[r],
                           first ? "" : " (files out of order or of another observation?)");
        else if (f->row_spec[r] > *end) {
            p->padded += f->row_spec[r] - *end;
            p->gaps++;
        }
        *end = f->row_spec[r] + p->nsblk;
    }
    free(offs);
    return rc;
}

/* "hh:mm:ss.s" / "-dd:mm:ss.s" to SIGPROC's packed hhmmss.s / ddmmss.s. */
static double packed_angle(const char *s)
{
    double a = 0, b = 0, c = 0;
    const char *t = s;
    while (*t == ' ')
        t++;
    int neg = *t == '-';
    if (sscanf(t + (neg || *t == '+'), "%lf:%lf:%lf", &a, &b, &c) < 1)
        return 0;
    double v = a * 10000 + b * 100 + c;
    return neg ? -v : v;
}

static int telescope_id(const char *name)
{
    char n[FLEN_VALUE];
    snprintf(n, sizeof n, "%s", name);
    for (char *e = n + strlen(n); e > n && e[-1] == ' '; *--e = '\0')
        ;
    if (strncasecmp(n, "ARECIBO", 7) == 0)
        return 1;
    if (strcasecmp(n, "GB") == 0 || strncasecmp(n, "GREEN", 5) == 0)
        return 6;
    for (int id = 1; id < 128; id++)
        if (strcasecmp(ddtk_telescope_name(id), n) == 0)
            return id;
    return 0;
}

/* Channel centres from the first row's DAT_FREQ (float32 in most files):
 * fch1 and a width over the whole band, or a table when not evenly spaced. */
static int frequencies(ddtk_psrfits *p, fits_file *f, const obs_keys *k, ddtk_header *h)
{
    int col, status = 0, anynul, rc;
    if ((rc = column(f->fp, f->path, "DAT_FREQ", 1, &col)))
        return rc;
    double *fr = ddtk_malloc((size_t)p->nchan * sizeof *fr, "DAT_FREQ");
    if (!fr)
        return DDTK_ESYS;
    fits_read_col(f->fp, TDOUBLE, col, 1, 1, p->nchan, NULL, fr, &anynul, &status);
    if (status) {
        free(fr);
        return fits_error(f->path, status, "reading DAT_FREQ");
    }
    h->fch1 = fr[0];
    h->foff = p->nchan > 1 ? (fr[p->nchan - 1] - fr[0]) / (p->nchan - 1) : k->chan_bw;
    int even = 1;
    for (int c = 0; c < p->nchan; c++)
        if (!isfinite(fr[c]) || fabs(fr[c] - (h->fch1 + c * h->foff)) > 1e-3 * fabs(h->foff) + 1e-3)
            even = 0;
    ddtk_header_mark(h, "fch1");
    ddtk_header_mark(h, "foff");
    rc = even ? DDTK_OK : ddtk_header_set_freqs(h, fr, p->nchan);
    free(fr);
    return rc;
}

static void set_header(ddtk_psrfits *p, const obs_keys *k, long double mjd0, const char *path,
                       ddtk_header *h)
{
    ddtk_header_init(h);
    h->telescope_id = telescope_id(k->telescop);
    ddtk_header_mark(h, "telescope_id");
    h->data_type = 1;
    ddtk_header_mark(h, "data_type");
    snprintf(h->rawdatafile, sizeof h->rawdatafile, "%.79s", strrchr(path, '/')
             ? strrchr(path, '/') + 1 : path);
    ddtk_header_mark(h, "rawdatafile");
    snprintf(h->source_name, sizeof h->source_name, "%.79s", k->src[0] ? k->src : "Unknown");
    ddtk_header_mark(h, "source_name");
    h->src_raj = packed_angle(k->ra);
    h->src_dej = packed_angle(k->dec);
    ddtk_header_mark(h, "src_raj");
    ddtk_header_mark(h, "src_dej");
    h->tstart = (double)mjd0;
    h->tsamp = k->tbin;
    ddtk_header_mark(h, "tstart");
    ddtk_header_mark(h, "tsamp");
    h->nbits = p->out == OUT_FLOAT ? 32 : p->out == OUT_BYTES ? 8 : p->nbits;
    h->nifs = p->out_pols;
    h->nchans = p->nchan;
    ddtk_header_mark(h, "nbits");
    ddtk_header_mark(h, "nifs");
    ddtk_header_mark(h, "nchans");
    if (p->out == OUT_RAW && p->raw_signed) {
        h->signed_data = 1;
        ddtk_header_mark(h, "signed");
    }
}

/* The presentation: raw integers where every row's scaling is trivial
 * (sub-byte ones unpacked to bytes when a spectrum's IF does not fill whole
 * bytes or some weight zeroes channels in place), else float32. */
static void choose_output(ddtk_psrfits *p, int trivial)
{
    if (!trivial)
        p->out = OUT_FLOAT;
    else if (p->nbits < 8 && ((int64_t)p->nchan * p->nbits % 8 || p->weights_zero))
        p->out = OUT_BYTES;
    else
        p->out = OUT_RAW;
    int64_t values = (int64_t)p->out_pols * p->nchan;
    p->out_spec_bytes = p->out == OUT_FLOAT ? 4 * values : p->out == OUT_BYTES ? values
                        : values * p->nbits / 8;
    int b = p->nbits;
    for (int v = 0; v < 256 && b < 8; v++) {
        int r = 0;
        for (int i = 0; i < 8 / b; i++)
            r |= ((v >> (8 - b * (i + 1))) & ((1 << b) - 1)) << (b * i);
        p->flip[v] = (uint8_t)r;
    }
}

/* cfitsio 4.2 (Debian's libcfitsio10) copies a TTYPEn value into a 70-byte
 * column name with strcpy: an unquoted value filling a card's value
 * columns overflows it and the process aborts (fuzz_psrfits found it). FITS
 * never writes one (a string is quoted; a number or logical is short), so
 * the headers cfitsio walks to reach the SUBINT table are read here first
 * and such a card refused, as is a TFIELDS past FITS's 999 (cfitsio
 * allocates that many columns first). Anything else amiss is left to
 * cfitsio to say. */
static int check_cards(int fd, const char *path, off_t size)
{
    char blk[FITS_BLOCK], v[72];
    off_t at = 0;
    for (int hdu = 0; hdu < 64 && at < size; hdu++) {
        /* sizes as doubles: a damaged header's products must not overflow */
        double bitpix = 8, naxis = 0, prod = 1, pcount = 0, gcount = 1;
        int end = 0, subint = 0;
        while (!end) {
            if (pread(fd, blk, FITS_BLOCK, at) != FITS_BLOCK)
                return DDTK_OK;
            at += FITS_BLOCK;
            for (const char *c = blk; c < blk + FITS_BLOCK && !end; c += 80) {
                end = strncmp(c, "END     ", 8) == 0;
                if (c[8] != '=')  /* cfitsio takes a value without the blank after it */
                    continue;
                memcpy(v, c + 9, 71);
                v[71] = '\0';
                const char *t = v + strspn(v, " ");
                if (*t != '\'' && strcspn(t, " /") >= 69)
                    return ddtk_fail(DDTK_EDATA, "%s: header card %.8s: a value of %zu unquoted "
                                     "characters (not FITS)", path, c, strcspn(t, " /"));
                const double x = strtod(t, NULL);
                if (!strncmp(c, "BITPIX  ", 8))
                    bitpix = x;
                else if (!strncmp(c, "NAXIS   ", 8))
                    naxis = x;
                else if (!strncmp(c, "NAXIS", 5) && c[5] >= '0' && c[5] <= '9')
                    prod *= x;
                else if (!strncmp(c, "PCOUNT  ", 8))
                    pcount = x;
                else if (!strncmp(c, "GCOUNT  ", 8))
                    gcount = x;
                else if (!strncmp(c, "EXTNAME ", 8))
                    subint = strncmp(t, "'SUBINT", 7) == 0;
                else if (!strncmp(c, "TFIELDS ", 8) && (x < 0 || x > 999))
                    /* cfitsio allocates the columns before it checks them */
                    return ddtk_fail(DDTK_EDATA, "%s: TFIELDS %g (not FITS: 0 to 999)", path, x);
            }
        }
        const double bytes = fabs(bitpix) / 8 * gcount * (pcount + (naxis > 0 ? prod : 0));
        if (subint || !(bytes >= 0 && bytes <= (double)size))
            return DDTK_OK;
        at += ((off_t)bytes + FITS_BLOCK - 1) / FITS_BLOCK * FITS_BLOCK;
    }
    return DDTK_OK;
}

static int open_file(fits_file *f, const char *path, obs_keys *k)
{
    int status = 0;
    long long head = 0, data = 0, end = 0;
    long naxis1 = 0;
    struct stat st;
    f->path = path;
    if ((f->fd = open(path, O_RDONLY)) < 0 || fstat(f->fd, &st) != 0)
        return ddtk_fail(DDTK_ESYS, "%s: cannot open: %s", path, strerror(errno));
    int rc = check_cards(f->fd, path, st.st_size);
    if (rc)
        return rc;
    fits_open_file(&f->fp, path, READONLY, &status);
    if (status)
        return fits_error(path, status, "cannot open as FITS");
    rc = read_keys(f->fp, path, k);
    if (!rc) {
        fits_get_num_rows(f->fp, &f->nrows, &status);
        fits_get_hduaddrll(f->fp, &head, &data, &end, &status);
        fits_read_key(f->fp, TLONG, "NAXIS1", &naxis1, NULL, &status);
    }
    if (!rc && status)
        rc = fits_error(path, status, "reading the SUBINT table");
    if (!rc && f->nrows < 1)
        rc = ddtk_fail(DDTK_EDATA, "%s: the SUBINT table has no rows", path);
    f->data_off = (off_t)data;
    f->row_stride = naxis1;
    if (!rc && (int64_t)st.st_size < data + (long long)f->nrows * naxis1)
        rc = ddtk_fail(DDTK_EDATA, "%s: truncated: %lld bytes, its %ld rows need %lld", path,
                       (long long)st.st_size, f->nrows, data + (long long)f->nrows * naxis1);
    if (!rc && !(f->row_spec = ddtk_malloc((size_t)f->nrows * sizeof *f->row_spec, "rows")))
        rc = DDTK_ESYS;
    return rc;
}

/* Values a row of a scaling column holds: NCHAN x NPOL, or NCHAN (shared
 * by the polarisations); weights NCHAN. */
static int scaling_size(ddtk_psrfits *p, fits_file *f, int col, const char *name, int per_pol,
                        long *n)
{
    int status = 0, type;
    long repeat, width;
    *n = per_pol ? (long)p->nchan * p->npol : p->nchan;
    if (!col)
        return DDTK_OK;
    fits_get_coltype(f->fp, col, &type, &repeat, &width, &status);
    if (status)
        return fits_error(f->path, status, "reading the scaling columns");
    if (repeat == *n || (per_pol && repeat == p->nchan))
        *n = repeat;
    else if (repeat < *n)
        return ddtk_fail(DDTK_EDATA, "%s: %s holds %ld values, not NCHAN %d%s", f->path, name,
                         repeat, p->nchan, per_pol ? " x NPOL" : "");
    return DDTK_OK;
}

/* Columns of the first file; the others must have them at the same place. */
static int columns(ddtk_psrfits *p, fits_file *f)
{
    int rc, col[5];
    const char *name[] = { "OFFS_SUB", "DAT_SCL", "DAT_OFFS", "DAT_WTS" };
    int *dst[] = { &p->col_offs_sub, &p->col_scl, &p->col_offs, &p->col_wts };
    for (int i = 0; i < 4; i++)
        if ((rc = column(f->fp, f->path, name[i], 0, &col[i])))
            return rc;
    if (p->col_data) {
        long first = p->data_first;
        int data = p->col_data;
        if ((rc = data_column(p, f->fp, f->path)))
            return rc;
        for (int i = 0; i < 4; i++)
            if (col[i] != *dst[i])
                rc = 1;
        if (rc || first != p->data_first || data != p->col_data)
            return ddtk_fail(DDTK_EDATA, "%s: the SUBINT columns differ from the first file's",
                             f->path);
        return DDTK_OK;
    }
    long nwts;
    for (int i = 0; i < 4; i++)
        *dst[i] = col[i];
    if ((rc = scaling_size(p, f, p->col_scl, "DAT_SCL", 1, &p->nscl))
        || (rc = scaling_size(p, f, p->col_offs, "DAT_OFFS", 1, &p->noffs))
        || (rc = scaling_size(p, f, p->col_wts, "DAT_WTS", 0, &nwts)))
        return rc;
    return data_column(p, f->fp, f->path);
}

static char *describe(const ddtk_psrfits *p, const obs_keys *k)
{
    static const char *const out_name[] = { "raw integers", "unpacked to bytes",
                                            "scaled to float32" };
    char *s = malloc(512);
    if (!s)
        return NULL;
    int n = snprintf(s, 512, "PSRFITS search mode, %d file%s, NPOL %d (%s) read as %s, "
                     "%d-bit %s", p->nf, p->nf > 1 ? "s" : "", p->npol,
                     k->pol_type[0] ? k->pol_type : "no POL_TYPE",
                     p->out_pols == 2 ? "AA and BB" : p->npol > 1 ? "I" : "total intensity",
                     p->nbits, out_name[p->out]);
    int ndead = 0;
    for (int c = 0; c < p->nchan; c++)
        ndead += p->dead[c];
    if (p->weights_zero)
        n += snprintf(s + n, 512 - (size_t)n, "\nPSRFITS DAT_WTS of 0 zero channels in their rows; "
                      "%d channel%s killed (0 in every row)", ndead, ndead == 1 ? "" : "s");
    if (p->padded)
        snprintf(s + n, 512 - (size_t)n, "\nPSRFITS missing rows: %lld spectra of zeros "
                 "padded in %lld gap%s", (long long)p->padded, (long long)p->gaps,
                 p->gaps > 1 ? "s" : "");
    return s;
}

int ddtk_psrfits_open(ddtk_psrfits **pp, const char *const *paths, int n, ddtk_header *h,
                      int64_t *nsamples, char **notes, uint8_t **dead)
{
    ddtk_psrfits *p = ddtk_calloc(1, sizeof *p, "PSRFITS reader");
    obs_keys k0, k;
    long double mjd0 = 0;
    int64_t end = 0;
    int rc = DDTK_OK, trivial;
    *pp = p;
    if (!p || !(p->f = ddtk_calloc((size_t)n, sizeof *p->f, "PSRFITS files")))
        return DDTK_ESYS;
    p->nf = n;
    for (int i = 0; i < n; i++)
        p->f[i].fd = -1;
    for (int i = 0; i < n && !rc; i++) {
        fits_file *f = &p->f[i];
        if ((rc = open_file(f, paths[i], i ? &k : &k0)))
            break;
        if (i == 0) {
            p->nchan = k0.nchan;
            p->npol = k0.npol;
            p->nbits = k0.nbits;
            p->nsblk = k0.nsblk;
            p->zero_off = (float)k0.zero_off;
            rc = polarisations(p, k0.pol_type, f->path);
        } else
            rc = same_layout(&k0, &k, f->path);
        if (!rc)
            rc = columns(p, f);
        f->data_off += p->data_first - 1;
        if (!rc)
            rc = place_rows(p, f, i ? &k : &k0, i == 0, &mjd0, &end);
    }
    size_t nv = (size_t)p->nchan * (size_t)p->npol;
    if (!rc && (!(p->scl = ddtk_malloc(nv * sizeof *p->scl, "DAT_SCL"))
                || !(p->offs = ddtk_malloc(nv * sizeof *p->offs, "DAT_OFFS"))
                || !(p->wts = ddtk_malloc((size_t)p->nchan * sizeof *p->wts, "DAT_WTS"))
                || !(p->dead = ddtk_malloc((size_t)p->nchan, "DAT_WTS"))
                || !(p->zero = ddtk_malloc((size_t)p->nchan * sizeof *p->zero, "DAT_WTS"))
                || !(p->mul = ddtk_malloc(nv * sizeof *p->mul, "PSRFITS scaling"))
                || !(p->add = ddtk_malloc(nv * sizeof *p->add, "PSRFITS scaling"))
                || !(p->block = ddtk_malloc(ROW_BLOCK * nv * sizeof *p->block, "PSRFITS rows"))))
        rc = DDTK_ESYS;
    if (!rc)
        rc = scan_scaling(p, &trivial);
    if (!rc) {
        choose_output(p, trivial);
        p->direct = p->out == OUT_RAW && p->out_pols == p->npol;
        p->nspec = end;
        set_header(p, &k0, mjd0, paths[0], h);
        rc = frequencies(p, &p->f[0], &k0, h);
    }
    /* Raw rows as they are stored are presented in place (a part row's
     * copy of 4 MiB a gulp less on the GPU's path): p->row is p->raw. */
    if (!rc && !(p->raw = ddtk_malloc((size_t)p->row_bytes, "PSRFITS row")))
        rc = DDTK_ESYS;
    if (!rc && !(p->row = p->direct ? p->raw
                                    : ddtk_malloc((size_t)(p->out_spec_bytes * p->nsblk),
                                                  "PSRFITS row")))
        rc = DDTK_ESYS;
    if (!rc && !(*notes = describe(p, &k0)))
        rc = ddtk_fail(DDTK_ESYS, "out of memory");
    if (!rc && p->weights_zero) {
        if (!(*dead = ddtk_malloc((size_t)p->nchan, "dead channels")))
            rc = DDTK_ESYS;
        else
            memcpy(*dead, p->dead, (size_t)p->nchan);
    }
    *nsamples = p->nspec;
    return rc;
}

/* ---- reading -------------------------------------------------------------- */

static inline uint16_t be16(const uint8_t *b)
{
    return (uint16_t)(b[0] << 8 | b[1]);
}

/* Sample v (spectrum-major, then polarisation, then channel) of raw data. */
static inline float raw_value(const ddtk_psrfits *p, const uint8_t *r, int64_t v)
{
    switch (p->nbits) {
    case 8: return p->raw_signed ? (float)(int8_t)(r[v] ^ 0x80) : (float)r[v];
    case 16: {
        uint16_t u = be16(r + 2 * v);
        return p->raw_signed ? (float)(int16_t)u : (float)(uint16_t)(u ^ 0x8000);
    }
    case 32: {
        uint32_t u = (uint32_t)r[4 * v] << 24 | (uint32_t)r[4 * v + 1] << 16
                     | (uint32_t)r[4 * v + 2] << 8 | r[4 * v + 3];
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    default: {
        int64_t bit = v * p->nbits;
        return (float)((r[bit / 8] >> (8 - p->nbits - bit % 8)) & ((1 << p->nbits) - 1));
    }
    }
}

/* The row's scaling (p->scl, offs, wts) as one multiply-add per IF and
 * channel: ((raw - ZERO_OFF) * DAT_SCL + DAT_OFFS) * DAT_WTS = raw * mul + add. */
static void row_affine(const ddtk_psrfits *p, float *mul, float *add)
{
    for (int q = 0; q < p->out_pols; q++)
        for (int c = 0; c < p->nchan; c++) {
            size_t i = (size_t)q * p->nchan + c;
            mul[i] = p->scl[i] * p->wts[c];
            add[i] = (p->offs[i] - p->zero_off * p->scl[i]) * p->wts[c];
        }
}

/* Spectrum s of raw row r as the floats of its IFs (OUT_FLOAT). The sample
 * width is chosen once per spectrum, not per sample, so the common widths'
 * loops vectorise. */
static void spectrum_floats(const ddtk_psrfits *p, const uint8_t *restrict r,
                            const float *restrict mul, const float *restrict add, int64_t s,
                            float *restrict o)
{
    const int64_t vals = (int64_t)p->out_pols * p->nchan, v0 = s * p->npol * p->nchan;
    if (p->nbits == 8 && !p->raw_signed) {
        r += v0;
        for (int64_t v = 0; v < vals; v++)
            o[v] = (float)r[v] * mul[v] + add[v];
    } else if (p->nbits == 8) {
        r += v0;
        for (int64_t v = 0; v < vals; v++)
            o[v] = (float)(int8_t)(r[v] ^ 0x80) * mul[v] + add[v];
    } else
        for (int64_t v = 0; v < vals; v++)
            o[v] = raw_value(p, r, v0 + v) * mul[v] + add[v];
}

/* The channels the current row's weights zero (p->wts read for the row). */
static void zeroed_channels(ddtk_psrfits *p)
{
    p->nzero = 0;
    for (int c = 0; c < p->nchan && p->weights_zero; c++)
        if (p->wts[c] == 0)
            p->zero[p->nzero++] = c;
}

/* A row's raw integers in SIGPROC's layout: 8-bit as they are, 16-bit to
 * native order, sub-byte repacked least significant first or unpacked to
 * bytes; zero-weight channels zeroed. In place (out == raw) when every
 * polarisation is kept and the width does not change (OUT_RAW). */
static void present_int(const ddtk_psrfits *p, const uint8_t *raw, uint8_t *out)
{
    const int64_t vals = (int64_t)p->out_pols * p->nchan, in_sb = p->row_bytes / p->nsblk;
    const int64_t sb = p->out_spec_bytes;
    const int copied = p->out == OUT_RAW && p->nbits == 8 && out != raw && in_sb == sb;
    if (copied)
        memcpy(out, raw, (size_t)(sb * p->nsblk));
    for (int64_t s = 0; s < p->nsblk; s++) {
        const uint8_t *r = raw + s * in_sb;
        uint8_t *o = out + s * sb;
        if (p->out == OUT_BYTES) {
            for (int64_t v = 0; v < vals; v++)
                o[v] = (uint8_t)raw_value(p, r, v);
            for (int q = 0; q < p->out_pols; q++)
                for (int i = 0; i < p->nzero; i++)
                    o[(int64_t)q * p->nchan + p->zero[i]] = 0;
        } else if (p->nbits < 8) {
            for (int64_t b = 0; b < sb; b++)
                o[b] = p->flip[r[b]];
        } else if (p->nbits == 8) {
            if (o != r && !copied)
                memmove(o, r, (size_t)vals);
            for (int64_t v = 0; v < vals && p->raw_signed; v++)
                o[v] ^= 0x80;
            for (int q = 0; q < p->out_pols; q++)
                for (int i = 0; i < p->nzero; i++)
                    o[(int64_t)q * p->nchan + p->zero[i]] = 0;
        } else {
            uint16_t *o16 = (uint16_t *)o;
            for (int64_t v = 0; v < vals; v++) {
                uint16_t u = be16(r + 2 * v);
                o16[v] = p->raw_signed ? u : (uint16_t)(u ^ 0x8000);
            }
            for (int q = 0; q < p->out_pols; q++)
                for (int i = 0; i < p->nzero; i++)
                    o16[(int64_t)q * p->nchan + p->zero[i]] = 0;
        }
    }
}

/* The current raw row as presented, into out (a row of out_spec_bytes spectra). */
static void present(ddtk_psrfits *p, uint8_t *out)
{
    if (p->out != OUT_FLOAT) {
        present_int(p, p->raw, out);
        return;
    }
    const int64_t vals = (int64_t)p->out_pols * p->nchan;
    for (int64_t s = 0; s < p->nsblk; s++)
        spectrum_floats(p, p->raw, p->mul, p->add, s, (float *)out + s * vals);
}

/* Bytes [at, at + len) of row r's DATA cell of file f into dst, by pread
 * (cfitsio's buffered reads copy every byte once more). */
static int pread_part(const fits_file *f, long r, int64_t at, int64_t len, uint8_t *dst)
{
    const off_t pos = f->data_off + (off_t)r * f->row_stride + (off_t)at;
    const ssize_t got = ddtk_pread_all(f->fd, dst, (size_t)len, pos);
    if (got < 0)
        return ddtk_fail(DDTK_ESYS, "%s: %s", f->path, strerror(errno));
    if (got < len)
        return ddtk_fail(DDTK_EDATA, "%s: truncated: a row's DATA is past the end of the file",
                         f->path);
    return DDTK_OK;
}

/* k rows of file f from row r into out as they are stored, row_bytes apart,
 * in DDTK_PREAD_CHUNK parts on several threads when there is much to read
 * (input.c's rule for filterbanks): a GPU gulp of htru's 4 MiB rows read a
 * row a thread, seven rows on one thread below 32 MiB, took 5 times the
 * filterbank's host reads (0.026 s against 0.0055 s for 10 s, one H200's
 * host). */
static int pread_rows(const ddtk_psrfits *p, const fits_file *f, long r, long k, uint8_t *out)
{
    const int64_t chunk = (int64_t)DDTK_PREAD_CHUNK, parts = (p->row_bytes + chunk - 1) / chunk;
    const int threads = k * p->row_bytes >= (int64_t)DDTK_PREAD_MIN ? DDTK_PREAD_THREADS : 1;
    ddtk_thread_error err;
    ddtk_thread_error_init(&err);
#pragma omp parallel for num_threads(threads) schedule(dynamic)
    for (int64_t j = 0; j < k * parts; j++) {
        const int64_t i = j / parts, at = j % parts * chunk;
        const int64_t len = p->row_bytes - at < chunk ? p->row_bytes - at : chunk;
        int rc;
        if (!ddtk_thread_error_code(&err)
            && (rc = pread_part(f, r + (long)i, at, len, out + i * p->row_bytes)))
            ddtk_thread_error_keep(&err, (int)j, rc);
    }
    return ddtk_thread_error_end(&err);
}

/* Row r of file f into p->raw with its scaling: the current row, not yet presented. */
static int read_row(ddtk_psrfits *p, fits_file *f, long r)
{
    int rc = pread_rows(p, f, r, 1, p->raw);
    if (!rc && (p->out == OUT_FLOAT || p->weights_zero))
        rc = row_scaling(p, f, r);
    if (rc)
        return rc;
    zeroed_channels(p);
    if (p->out == OUT_FLOAT)
        row_affine(p, p->mul, p->add);
    p->presented = 0;
    return DDTK_OK;
}

/* Whole rows straight into the caller's buffer, converted in place. */
static int read_rows_direct(ddtk_psrfits *p, fits_file *f, long r, long k, uint8_t *out)
{
    int rc = pread_rows(p, f, r, k, out);
    for (long i = 0; i < k && !rc; i++) {
        if (p->weights_zero && (rc = row_scaling(p, f, r + i)))
            break;
        zeroed_channels(p);
        present_int(p, out + i * p->row_bytes, out + i * p->row_bytes);
    }
    return rc;
}

/* k whole rows of file f from row r scaled to float32 into out, BATCH_BYTES
 * of raw rows at a time: their scaling read (cfitsio is one thread's), the
 * rows read on several threads, then converted on several threads. */
static int read_rows_float(ddtk_psrfits *p, fits_file *f, long r, long k, uint8_t *out)
{
    const int64_t vals = (int64_t)p->out_pols * p->nchan, nv = vals;
    const int64_t blocks = (p->nsblk + ROW_BLOCK - 1) / ROW_BLOCK;
    int rc = DDTK_OK;
    if (!p->batch) {
        p->batch_rows = BATCH_BYTES / p->row_bytes > 1 ? (long)(BATCH_BYTES / p->row_bytes) : 1;
        if (!(p->batch = ddtk_malloc((size_t)(p->batch_rows * p->row_bytes), "PSRFITS rows"))
            || !(p->bmul = ddtk_malloc((size_t)(p->batch_rows * nv) * sizeof *p->bmul,
                                       "PSRFITS scaling"))
            || !(p->badd = ddtk_malloc((size_t)(p->batch_rows * nv) * sizeof *p->badd,
                                       "PSRFITS scaling")))
            return DDTK_ESYS;
    }
    for (long i0 = 0; i0 < k && !rc; i0 += p->batch_rows) {
        const long kb = k - i0 < p->batch_rows ? k - i0 : p->batch_rows;
        for (long i = 0; i < kb && !rc; i++)
            if (!(rc = row_scaling(p, f, r + i0 + i)))
                row_affine(p, p->bmul + i * nv, p->badd + i * nv);
        ddtk_thread_error err;
        ddtk_thread_error_init(&err);
        const int threads = kb * p->row_bytes >= ((int64_t)8 << 20) ? ddtk_threads() : 1;
#pragma omp parallel num_threads(threads)
        {
#pragma omp for schedule(dynamic)
            for (long i = 0; i < kb; i++) {
                int e;
                if (!rc && !ddtk_thread_error_code(&err)
                    && (e = pread_part(f, r + i0 + i, 0, p->row_bytes,
                                       p->batch + i * p->row_bytes)))
                    ddtk_thread_error_keep(&err, (int)i, e);
            }
#pragma omp for schedule(static)
            for (int64_t j = 0; j < kb * blocks; j++) {
                const int64_t i = j / blocks, s1 = (j % blocks + 1) * ROW_BLOCK;
                float *o = (float *)out + (i0 + i) * p->nsblk * vals;
                for (int64_t s = j % blocks * ROW_BLOCK; s < s1 && s < p->nsblk; s++)
                    if (!rc && !ddtk_thread_error_code(&err))
                        spectrum_floats(p, p->batch + i * p->row_bytes, p->bmul + i * nv,
                                        p->badd + i * nv, s, o + s * vals);
            }
        }
        int e = ddtk_thread_error_end(&err);
        rc = rc ? rc : e;
    }
    return rc;
}

/* Rows from the current one that follow each other without a gap in one
 * file and fit in `room` spectra, for read_rows_direct or read_rows_float;
 * 0 if not possible. */
static long whole_rows(const ddtk_psrfits *p, int64_t room)
{
    const fits_file *f = &p->f[p->cur_file];
    long k = 0;
    if (!p->direct && p->out != OUT_FLOAT)
        return 0;
    while (p->cur_row + k < f->nrows && (k + 1) * (int64_t)p->nsblk <= room
           && f->row_spec[p->cur_row + k] == p->pos + k * (int64_t)p->nsblk)
        k++;
    return k;
}

/* The first spectrum of the next row, or -1 at the end. */
static int64_t next_row(ddtk_psrfits *p)
{
    while (p->cur_file < p->nf && p->cur_row >= p->f[p->cur_file].nrows) {
        p->cur_file++;
        p->cur_row = 0;
    }
    return p->cur_file < p->nf ? p->f[p->cur_file].row_spec[p->cur_row] : -1;
}

int ddtk_psrfits_read(ddtk_psrfits *p, uint8_t *out, int64_t n, int64_t *got)
{
    const int64_t sb = p->out_spec_bytes;
    int rc;
    *got = 0;
    while (*got < n) {
        int64_t k, next;
        if (p->row_left > 0) {
            if (!p->presented)
                present(p, p->row);
            p->presented = 1;
            k = n - *got < p->row_left ? n - *got : p->row_left;
            memcpy(out + *got * sb, p->row + (p->nsblk - p->row_left) * sb, (size_t)(k * sb));
            p->row_left -= k;
        } else if ((next = next_row(p)) < 0)
            break;
        else if (next > p->pos) {
            k = n - *got < next - p->pos ? n - *got : next - p->pos;
            memset(out + *got * sb, 0, (size_t)(k * sb));
        } else if ((k = whole_rows(p, n - *got)) > 0) {
            if ((rc = (p->direct ? read_rows_direct : read_rows_float)(p, &p->f[p->cur_file],
                                                                       p->cur_row, (long)k,
                                                                       out + *got * sb)))
                return rc;
            p->cur_row += (long)k;
            k *= p->nsblk;
        } else {
            if ((rc = read_row(p, &p->f[p->cur_file], p->cur_row)))
                return rc;
            p->cur_row++;
            k = p->nsblk;
            if (n - *got < k) {           /* part of the row: the rest is kept */
                p->row_left = k;
                continue;
            }
            present(p, out + *got * sb);
        }
        p->pos += k;
        *got += k;
    }
    return DDTK_OK;
}

int ddtk_psrfits_rows(const ddtk_psrfits *p)
{
    return p->out == OUT_FLOAT;
}

/* Spectra s0 .. s0 + nb - 1 (nb <= ROW_BLOCK) of the current raw row, 8-bit
 * unsigned, into channel rows: each live channel's run read straight from
 * the bytes (they stay in L1 for the block), as ddtk_unpack reads a
 * filterbank, with the row's multiply-add. */
static void decode_block8(const ddtk_psrfits *p, int64_t s0, int64_t nb, const int *row, int pol,
                          float *out, size_t stride)
{
    const int64_t nv = (int64_t)p->npol * p->nchan, nchan = p->nchan;
    const int64_t lane = pol == DDTK_POL_SUM ? 0 : pol * nchan;
    const uint8_t *r = p->raw + s0 * nv;
    for (int64_t c = 0; c < nchan; c++) {
        if (row[c] < 0)
            continue;
        float *restrict dst = out + (size_t)row[c] * stride;
        const float m0 = p->mul[lane + c], a0 = p->add[lane + c];
        if (pol == DDTK_POL_SUM) {
            const float m1 = p->mul[nchan + c], a1 = p->add[nchan + c];
            for (int64_t j = 0; j < nb; j++)
                dst[j] = ((float)r[j * nv + c] * m0 + a0) + ((float)r[j * nv + nchan + c] * m1 + a1);
        } else
            for (int64_t j = 0; j < nb; j++)
                dst[j] = (float)r[j * nv + lane + c] * m0 + a0;
    }
}

/* The same for any sample format: the block's spectra as floats, then each
 * live channel's run. */
static void decode_block(const ddtk_psrfits *p, int64_t s0, int64_t nb, const int *row, int pol,
                         float *out, size_t stride, float *b)
{
    const int64_t vals = (int64_t)p->out_pols * p->nchan, nchan = p->nchan;
    const int64_t lane = pol == DDTK_POL_SUM ? 0 : pol * nchan;
    for (int64_t j = 0; j < nb; j++)
        spectrum_floats(p, p->raw, p->mul, p->add, s0 + j, b + j * vals);
    for (int64_t c = 0; c < nchan; c++) {
        if (row[c] < 0)
            continue;
        float *dst = out + (size_t)row[c] * stride;
        if (pol == DDTK_POL_SUM)
            for (int64_t j = 0; j < nb; j++)
                dst[j] = b[j * vals + c] + b[j * vals + nchan + c];
        else
            for (int64_t j = 0; j < nb; j++)
                dst[j] = b[j * vals + lane + c];
    }
}

/* Spectra s0 .. s0 + k - 1 of the current raw row into channel rows, in
 * blocks of ROW_BLOCK spectra. */
static void decode_rows(const ddtk_psrfits *p, int64_t s0, int64_t k, const int *row, int pol,
                        float *out, size_t stride)
{
    const int bytes = p->nbits == 8 && !p->raw_signed;
    for (int64_t j0 = 0; j0 < k; j0 += ROW_BLOCK) {
        const int64_t nb = k - j0 < ROW_BLOCK ? k - j0 : ROW_BLOCK;
        if (bytes)
            decode_block8(p, s0 + j0, nb, row, pol, out + j0, stride);
        else
            decode_block(p, s0 + j0, nb, row, pol, out + j0, stride, p->block);
    }
}

int ddtk_psrfits_scaled_bytes(const ddtk_psrfits *p, int *sgn)
{
    *sgn = p->nbits == 8 && p->raw_signed;
    return p->out == OUT_FLOAT && p->nbits <= 8 ? p->nsblk : 0;
}

/* Spectra s0 .. s0 + k - 1 of the current raw row as one byte per presented
 * value: 8-bit as stored, sub-byte samples unpacked. */
static void row_bytes(const ddtk_psrfits *p, int64_t s0, int64_t k, uint8_t *out)
{
    const int64_t vals = (int64_t)p->out_pols * p->nchan, nv = (int64_t)p->npol * p->nchan;
    for (int64_t s = s0; s < s0 + k; s++, out += vals)
        if (p->nbits == 8)
            memcpy(out, p->raw + s * nv, (size_t)vals);
        else
            for (int64_t v = 0; v < vals; v++)
                out[v] = (uint8_t)raw_value(p, p->raw, s * nv + v);
}

/* The current row's multiply-add as table entry *nseg (one past the last). */
static int add_table(const ddtk_psrfits *p, float *tab, int maxseg, int *nseg)
{
    const int64_t vals = (int64_t)p->out_pols * p->nchan;
    if (*nseg >= maxseg)
        return ddtk_fail(DDTK_EUSAGE, "PSRFITS scaled read: more rows than its table holds");
    memcpy(tab + *nseg * 2 * vals, p->mul, (size_t)vals * sizeof *tab);
    memcpy(tab + (*nseg * 2 + 1) * vals, p->add, (size_t)vals * sizeof *tab);
    return (*nseg)++, DDTK_OK;
}

/* k whole 8-bit rows of file f from row r, every polarisation presented,
 * straight into out (pread_rows), each row's multiply-add added to the
 * table. */
static int read_rows_scaled(ddtk_psrfits *p, fits_file *f, long r, long k, uint8_t *out,
                            int32_t *seg, float *tab, int maxseg, int *nseg)
{
    int rc = pread_rows(p, f, r, k, out);
    for (long i = 0; i < k && !rc; i++) {
        if ((rc = row_scaling(p, f, r + i)))
            break;
        row_affine(p, p->mul, p->add);
        for (int64_t j = 0; j < p->nsblk; j++)
            seg[i * p->nsblk + j] = *nseg;
        rc = add_table(p, tab, maxseg, nseg);
    }
    return rc;
}

int ddtk_psrfits_read_scaled(ddtk_psrfits *p, int64_t n, uint8_t *out, int32_t *seg, float *tab,
                             int maxseg, int *nseg, int64_t *got)
{
    const int64_t vals = (int64_t)p->out_pols * p->nchan;
    const int whole = p->nbits == 8 && p->out_pols == p->npol;
    int cur = -1, rc;
    *got = 0;
    *nseg = 1;
    memset(tab, 0, (size_t)(2 * vals) * sizeof *tab);
    while (*got < n) {
        int64_t k, next;
        long rows;
        if (p->row_left > 0) {
            if (cur < 0 && (cur = *nseg, rc = add_table(p, tab, maxseg, nseg)))
                return rc;
            k = n - *got < p->row_left ? n - *got : p->row_left;
            row_bytes(p, p->nsblk - p->row_left, k, out + *got * vals);
            for (int64_t j = 0; j < k; j++)
                seg[*got + j] = cur;
            p->row_left -= k;
        } else if ((next = next_row(p)) < 0)
            break;
        else if (next > p->pos) {
            k = n - *got < next - p->pos ? n - *got : next - p->pos;
            memset(out + *got * vals, 0, (size_t)(k * vals));
            for (int64_t j = 0; j < k; j++)
                seg[*got + j] = 0;
        } else if (whole && (rows = whole_rows(p, n - *got)) > 0) {
            if ((rc = read_rows_scaled(p, &p->f[p->cur_file], p->cur_row, rows,
                                       out + *got * vals, seg + *got, tab, maxseg, nseg)))
                return rc;
            p->cur_row += rows;
            k = rows * p->nsblk;
        } else {
            if ((rc = read_row(p, &p->f[p->cur_file], p->cur_row)))
                return rc;
            p->cur_row++;
            p->row_left = p->nsblk;
            cur = -1;
            continue;
        }
        p->pos += k;
        *got += k;
    }
    return DDTK_OK;
}

int ddtk_psrfits_read_rows(ddtk_psrfits *p, int64_t n, const int *row, int pol, float *out,
                           size_t stride, int64_t *got)
{
    *got = 0;
    while (*got < n) {
        int64_t k, next;
        if (p->row_left > 0) {
            k = n - *got < p->row_left ? n - *got : p->row_left;
            decode_rows(p, p->nsblk - p->row_left, k, row, pol, out + *got, stride);
            p->row_left -= k;
        } else if ((next = next_row(p)) < 0)
            break;
        else if (next > p->pos) {
            k = n - *got < next - p->pos ? n - *got : next - p->pos;
            for (int c = 0; c < p->nchan; c++)
                if (row[c] >= 0)
                    memset(out + (size_t)row[c] * stride + *got, 0, (size_t)k * sizeof *out);
        } else {
            int rc = read_row(p, &p->f[p->cur_file], p->cur_row);
            if (rc)
                return rc;
            p->cur_row++;
            p->row_left = p->nsblk;
            continue;
        }
        p->pos += k;
        *got += k;
    }
    return DDTK_OK;
}

void ddtk_psrfits_close(ddtk_psrfits *p)
{
    if (!p)
        return;
    for (int i = 0; p->f && i < p->nf; i++) {
        int status = 0;
        if (p->f[i].fp)
            fits_close_file(p->f[i].fp, &status);
        if (p->f[i].fd >= 0)
            close(p->f[i].fd);
        free(p->f[i].row_spec);
    }
    free(p->f);
    if (p->row != p->raw)
        free(p->row);
    free(p->raw);
    free(p->scl);
    free(p->offs);
    free(p->wts);
    free(p->mul);
    free(p->add);
    free(p->block);
    free(p->batch);
    free(p->bmul);
    free(p->badd);
    free(p->dead);
    free(p->zero);
    free(p);
}
