/*
 * psrfits_write.c - writing PSRFITS search-mode files from a SIGPROC input
 * (fbsim --format psrfits), so that every layout the reader takes can be
 * made from data whose filterbank twin is known.
 *
 * The samples are the input's integers (or floats), unchanged: sub-byte ones
 * repacked most significant first, 16-bit big-endian with TZERO 32768 when
 * unsigned, signed 8-bit with TZERO -128. DAT_SCL, DAT_OFFS, ZERO_OFF and
 * DAT_WTS are written as asked, so a reader applies them to those integers.
 * Rows may be split over several files and some left out (missing rows).
 */
#include "internal.h"
#include "psrfits.h"

#include <fitsio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct writer {
    const ddtk_psrfits_layout *l;
    ddtk_input *in;
    int nchan, npol, nbits;
    int64_t nrows, row_bytes, in_bytes;
    uint8_t *in_row, *out_row;
    float *freq, *wts, *scl, *offs;
    uint8_t flip[256];
} writer;

static int fits_fail(const char *path, int status)
{
    char text[FLEN_STATUS];
    fits_get_errstatus(status, text);
    fits_clear_errmsg();
    return ddtk_fail(DDTK_ESYS, "%s: cannot write PSRFITS: %s (cfitsio %d)", path, text, status);
}

/* "hh:mm:ss.ssss" from SIGPROC's packed hhmmss.s. */
static void angle_text(double packed, char *s, size_t n)
{
    char t[64];
    ddtk_format_sexagesimal(packed, t, sizeof t);
    snprintf(s, n, "%s", t);
}

static int primary(fitsfile *fp, const writer *w)
{
    const ddtk_header *h = &w->in->hdr;
    int status = 0;
    char ra[64], dec[64];
    double f0 = ddtk_chan_freq(h, 0), f1 = ddtk_chan_freq(h, w->nchan - 1);
    double bw = w->nchan > 1 ? (f1 - f0) * w->nchan / (w->nchan - 1) : h->foff;
    long imjd = (long)floor(h->tstart);
    double sec = (h->tstart - (double)imjd) * 86400.0, smjd = floor(sec), offs = sec - smjd;
    long ismjd = (long)smjd;
    double fctr = 0.5 * (f0 + f1);
    const char *tel = ddtk_telescope_name(h->telescope_id);
    angle_text(h->src_raj, ra, sizeof ra);
    angle_text(h->src_dej, dec, sizeof dec);
    fits_create_img(fp, BYTE_IMG, 0, NULL, &status);
    fits_write_key(fp, TSTRING, "HDRVER", "6.1", "Header version", &status);
    fits_write_key(fp, TSTRING, "FITSTYPE", "PSRFITS", "FITS definition for pulsar data files",
                   &status);
    fits_write_key(fp, TSTRING, "TELESCOP", (char *)tel, "Telescope name", &status);
    fits_write_key(fp, TSTRING, "BACKEND", "ddtk", "Backend ID (fbsim)", &status);
    fits_write_key(fp, TSTRING, "OBS_MODE", "SEARCH", "(PSR, CAL, SEARCH)", &status);
    fits_write_key(fp, TDOUBLE, "OBSFREQ", &fctr, "[MHz] Centre frequency", &status);
    fits_write_key(fp, TDOUBLE, "OBSBW", &bw, "[MHz] Bandwidth", &status);
    fits_write_key(fp, TINT, (char *)"OBSNCHAN", (void *)&w->nchan, "Channels", &status);
    fits_write_key(fp, TSTRING, "SRC_NAME", (char *)h->source_name, "Source", &status);
    fits_write_key(fp, TSTRING, "TRK_MODE", "TRACK", "Tracking mode", &status);
    fits_write_key(fp, TSTRING, "RA", ra, "Right ascension (hh:mm:ss.ssss)", &status);
    fits_write_key(fp, TSTRING, "DEC", dec, "Declination (-dd:mm:ss.sss)", &status);
    fits_write_key(fp, TLONG, "STT_IMJD", &imjd, "Start MJD (UTC days)", &status);
    fits_write_key(fp, TLONG, "STT_SMJD", &ismjd, "[s] Start time (sec past UTC 00h)", &status);
    fits_write_key(fp, TDOUBLE, "STT_OFFS", &offs, "[s] Start time offset", &status);
    return status;
}

static int subint_table(fitsfile *fp, const writer *w, const char *pol_type, long first_row)
{
    const ddtk_psrfits_layout *l = w->l;
    const ddtk_header *h = &w->in->hdr;
    int status = 0;
    char f_chan[32], f_vals[32], f_data[32], tdim[64];
    long nv = (long)w->nchan * w->npol;
    snprintf(f_chan, sizeof f_chan, "%dE", w->nchan);
    snprintf(f_vals, sizeof f_vals, "%ldE", nv);
    snprintf(f_data, sizeof f_data, "%lld%c", (long long)(w->nbits == 16 ? w->row_bytes / 2
             : w->nbits == 32 ? w->row_bytes / 4 : w->row_bytes),
             w->nbits == 16 ? 'I' : w->nbits == 32 ? 'E' : 'B');
    snprintf(tdim, sizeof tdim, "(%d,%d,%d)", w->nchan, w->npol, l->nsblk);
    char *ttype[] = { "TSUBINT", "OFFS_SUB", "DAT_FREQ", "DAT_WTS", "DAT_OFFS", "DAT_SCL", "DATA" };
    char *tform[] = { "1D", "1D", f_chan, f_chan, f_vals, f_vals, f_data };
    fits_create_tbl(fp, BINARY_TBL, 0, 7, ttype, tform, NULL, "SUBINT", &status);
    fits_write_key(fp, TSTRING, "TDIM7", tdim, "Dimensions (NCHAN, NPOL, NSBLK)", &status);
    if (w->nbits == 16 && !h->signed_data) {
        double tz = 32768;
        fits_write_key(fp, TDOUBLE, "TZERO7", &tz, "unsigned 16-bit samples", &status);
    } else if (w->nbits == 8 && h->signed_data) {
        double tz = -128;
        fits_write_key(fp, TDOUBLE, "TZERO7", &tz, "signed 8-bit samples", &status);
    }
    double chan_bw = w->nchan > 1 ? (ddtk_chan_freq(h, w->nchan - 1) - ddtk_chan_freq(h, 0))
                                    / (w->nchan - 1) : h->foff;
    int zero = 0;
    double nsuboffs = (double)first_row, zero_off = l->zero_off;
    fits_write_key(fp, TINT, "NPOL", (void *)&w->npol, "Nr of polarisations", &status);
    fits_write_key(fp, TSTRING, "POL_TYPE", (char *)pol_type, "Polarisation identifier", &status);
    fits_write_key(fp, TDOUBLE, "TBIN", (void *)&h->tsamp, "[s] Time per sample", &status);
    fits_write_key(fp, TINT, "NBITS", (void *)&w->nbits, "Nr of bits/datum", &status);
    fits_write_key(fp, TDOUBLE, "ZERO_OFF", &zero_off, "Zero offset", &status);
    fits_write_key(fp, TDOUBLE, "NSUBOFFS", &nsuboffs, "Subint offset", &status);
    fits_write_key(fp, TINT, "NCHAN", (void *)&w->nchan, "Nr of channels", &status);
    fits_write_key(fp, TDOUBLE, "CHAN_BW", &chan_bw, "[MHz] Channel width", &status);
    fits_write_key(fp, TINT, "NCHNOFFS", &zero, "Channel offset", &status);
    fits_write_key(fp, TINT, "NSBLK", (void *)&l->nsblk, "Samples/row", &status);
    return status;
}

/* A row of input spectra in PSRFITS order: the same element order, sub-byte
 * bits flipped, 16 and 32 bits big-endian, TZERO applied. */
static void to_psrfits(writer *w)
{
    const ddtk_header *h = &w->in->hdr;
    const uint8_t *in = w->in_row;
    uint8_t *out = w->out_row;
    if (w->nbits < 8)
        for (int64_t b = 0; b < w->row_bytes; b++)
            out[b] = w->flip[in[b]];
    else if (w->nbits == 8)
        for (int64_t b = 0; b < w->row_bytes; b++)
            out[b] = in[b] ^ (h->signed_data ? 0x80 : 0);
    else if (w->nbits == 16)
        for (int64_t b = 0; b < w->row_bytes; b += 2) {
            uint16_t v;
            memcpy(&v, in + b, 2);
            v ^= h->signed_data ? 0 : 0x8000;
            out[b] = (uint8_t)(v >> 8);
            out[b + 1] = (uint8_t)v;
        }
    else
        for (int64_t b = 0; b < w->row_bytes; b += 4)
            for (int k = 0; k < 4; k++)
                out[b + k] = in[b + 3 - k];
}

static int is_dropped(const ddtk_psrfits_layout *l, int64_t row)
{
    for (int i = 0; i < l->ndrop; i++)
        if (l->drop[i] == row)
            return 1;
    return 0;
}

static int write_row(writer *w, fitsfile *fp, long frow, int64_t g)
{
    double tsub = w->in->hdr.tsamp * w->l->nsblk;
    double offs_sub = ((double)g + 0.5) * tsub;
    long nv = (long)w->nchan * w->npol;
    int status = 0;
    fits_write_col(fp, TDOUBLE, 1, frow, 1, 1, &tsub, &status);
    fits_write_col(fp, TDOUBLE, 2, frow, 1, 1, &offs_sub, &status);
    fits_write_col(fp, TFLOAT, 3, frow, 1, w->nchan, w->freq, &status);
    fits_write_col(fp, TFLOAT, 4, frow, 1, w->nchan, w->wts, &status);
    fits_write_col(fp, TFLOAT, 5, frow, 1, nv, w->offs, &status);
    fits_write_col(fp, TFLOAT, 6, frow, 1, nv, w->scl, &status);
    /* The raw bytes of DATA: no TZERO conversion by cfitsio. */
    long first = 8 + 8 + 4 * (long)w->nchan * 2 + 4 * nv * 2 + 1;
    fits_write_tblbytes(fp, frow, first, w->row_bytes, w->out_row, &status);
    return status;
}

/* File i's name: path itself for one file, else path with _NNNN before its suffix. */
static char *file_name(const char *path, int i, int several)
{
    size_t n = strlen(path) + 16;
    char *s = malloc(n);
    if (!s)
        return NULL;
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    if (!several)
        snprintf(s, n, "%s", path);
    else if (dot && (!slash || dot > slash + 1))
        snprintf(s, n, "%.*s_%04d%s", (int)(dot - path), path, i + 1, dot);
    else
        snprintf(s, n, "%s_%04d", path, i + 1);
    return s;
}

static int setup(writer *w, ddtk_input *in, const ddtk_psrfits_layout *l, const char **pol_type)
{
    const ddtk_header *h = &in->hdr;
    memset(w, 0, sizeof *w);
    w->l = l;
    w->in = in;
    w->nchan = h->nchans;
    w->npol = h->nifs;
    w->nbits = h->nbits;
    if (l->nsblk < 1)
        return ddtk_fail(DDTK_EUSAGE, "PSRFITS rows need at least one spectrum");
    if (w->npol != 1 && w->npol != 2 && w->npol != 4)
        return ddtk_fail(DDTK_EUSAGE, "PSRFITS: %d IFs; NPOL is 1, 2 or 4", w->npol);
    *pol_type = l->pol_type ? l->pol_type : w->npol == 1 ? "AA+BB" : w->npol == 2 ? "AABB"
                                                                      : "AABBCRCI";
    w->in_bytes = ddtk_input_bytes(in, l->nsblk);
    w->row_bytes = w->in_bytes;
    if (w->row_bytes * 8 != (int64_t)l->nsblk * in->bits_per_spectrum)
        return ddtk_fail(DDTK_EUSAGE, "PSRFITS: a row of %d spectra is not whole bytes", l->nsblk);
    w->nrows = in->nsamples < 0 ? -1 : (in->nsamples + l->nsblk - 1) / l->nsblk;
    long nv = (long)w->nchan * w->npol;
    if (!(w->in_row = ddtk_calloc(1, (size_t)w->row_bytes, "PSRFITS row"))
        || !(w->out_row = ddtk_malloc((size_t)w->row_bytes, "PSRFITS row"))
        || !(w->freq = ddtk_malloc((size_t)w->nchan * sizeof *w->freq, "DAT_FREQ"))
        || !(w->wts = ddtk_malloc((size_t)w->nchan * sizeof *w->wts, "DAT_WTS"))
        || !(w->scl = ddtk_malloc((size_t)nv * sizeof *w->scl, "DAT_SCL"))
        || !(w->offs = ddtk_malloc((size_t)nv * sizeof *w->offs, "DAT_OFFS")))
        return DDTK_ESYS;
    for (int c = 0; c < w->nchan; c++) {
        w->freq[c] = (float)ddtk_chan_freq(h, c);
        w->wts[c] = l->zero_weight && l->zero_weight[c] ? 0.0f : 1.0f;
    }
    for (long v = 0; v < nv; v++) {
        w->scl[v] = (float)l->scale;
        w->offs[v] = (float)l->offset;
    }
    int b = w->nbits;
    for (int v = 0; v < 256 && b < 8; v++) {
        int r = 0;
        for (int i = 0; i < 8 / b; i++)
            r |= ((v >> (b * i)) & ((1 << b) - 1)) << (8 - b * (i + 1));
        w->flip[v] = (uint8_t)r;
    }
    return DDTK_OK;
}

static void teardown(writer *w)
{
    free(w->in_row);
    free(w->out_row);
    free(w->freq);
    free(w->wts);
    free(w->scl);
    free(w->offs);
}

/* Write one file: rows g0 .. g0 + n - 1 of the observation, less the dropped. */
static int write_file(writer *w, const char *name, const char *pol_type, int64_t g0, int64_t n)
{
    size_t len = strlen(name) + 8;
    char *tmp = malloc(len), *create = malloc(len + 1);
    fitsfile *fp = NULL;
    int status = 0, rc = DDTK_OK;
    if (!tmp || !create) {
        free(tmp);
        free(create);
        return ddtk_fail(DDTK_ESYS, "out of memory");
    }
    snprintf(tmp, len, "%s.part", name);
    snprintf(create, len + 1, "!%s", tmp);
    fits_create_file(&fp, create, &status);
    if (!status)
        status = primary(fp, w);
    if (!status)
        status = subint_table(fp, w, pol_type, (long)g0);
    long frow = 1;
    for (int64_t g = g0; g < g0 + n && !status && !rc; g++) {
        int64_t got;
        memset(w->in_row, 0, (size_t)w->row_bytes);
        if ((rc = ddtk_input_read(w->in, w->in_row, w->l->nsblk, &got)))
            break;
        if (is_dropped(w->l, g))
            continue;
        to_psrfits(w);
        status = write_row(w, fp, frow++, g);
    }
    if (fp) {
        int st2 = 0;
        fits_close_file(fp, &st2);
        if (!status)
            status = st2;
    }
    if (!rc && status)
        rc = fits_fail(name, status);
    if (!rc && rename(tmp, name) != 0)
        rc = ddtk_fail(DDTK_ESYS, "%s: cannot rename the written file into place", name);
    if (rc)
        remove(tmp);
    free(tmp);
    free(create);
    return rc;
}

int ddtk_psrfits_write(ddtk_input *in, const ddtk_psrfits_layout *l, const char *path,
                       int *nfiles)
{
    writer w;
    const char *pol_type = NULL;
    int rc = setup(&w, in, l, &pol_type);
    *nfiles = 0;
    if (!rc && w.nrows < 0)
        rc = ddtk_fail(DDTK_EUSAGE, "PSRFITS is written from a file, not a stream");
    int64_t per = l->rows_per_file > 0 ? l->rows_per_file : w.nrows;
    int n = rc ? 0 : (int)((w.nrows + per - 1) / per);
    for (int i = 0; i < n && !rc; i++) {
        char *name = file_name(path, i, n > 1);
        if (!name)
            rc = ddtk_fail(DDTK_ESYS, "out of memory");
        else {
            int64_t g0 = (int64_t)i * per;
            rc = write_file(&w, name, pol_type, g0, w.nrows - g0 < per ? w.nrows - g0 : per);
            free(name);
        }
        *nfiles += !rc;
    }
    teardown(&w);
    return rc;
}
