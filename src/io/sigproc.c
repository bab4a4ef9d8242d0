/*
 * sigproc.c - SIGPROC header keywords: reading, validation, writing, printing.
 *
 * One table describes every keyword (name, type, field); the reader, writer
 * and printer all walk it. The order in which keywords were read is kept so
 * that a header written back is byte-identical to the one read.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum key_type { K_INT, K_DOUBLE, K_STRING, K_CHAR, K_LONG, K_FREQTABLE };

typedef struct keyword {
    const char *name;
    enum key_type type;
    size_t offset;
} keyword;

#define KEY(name, type) { #name, type, offsetof(ddtk_header, name) }

static const keyword keywords[] = {
    KEY(telescope_id, K_INT), KEY(machine_id, K_INT), KEY(data_type, K_INT),
    KEY(barycentric, K_INT), KEY(pulsarcentric, K_INT), KEY(nchans, K_INT),
    KEY(nbits, K_INT), KEY(nifs, K_INT), KEY(nbeams, K_INT), KEY(ibeam, K_INT),
    KEY(nbins, K_INT), KEY(nsamples, K_INT),
    KEY(az_start, K_DOUBLE), KEY(za_start, K_DOUBLE), KEY(src_raj, K_DOUBLE),
    KEY(src_dej, K_DOUBLE), KEY(tstart, K_DOUBLE), KEY(tsamp, K_DOUBLE),
    KEY(period, K_DOUBLE), KEY(fch1, K_DOUBLE), KEY(foff, K_DOUBLE),
    KEY(refdm, K_DOUBLE),
    KEY(source_name, K_STRING), KEY(rawdatafile, K_STRING),
    { "signed", K_CHAR, offsetof(ddtk_header, signed_data) },
    KEY(npuls, K_LONG),
    { "FREQUENCY_START", K_FREQTABLE, 0 },
};
#define NKEYS ((int)(sizeof keywords / sizeof keywords[0]))

static int key_index(const char *name)
{
    for (int i = 0; i < NKEYS; i++)
        if (strcmp(keywords[i].name, name) == 0)
            return i;
    return -1;
}

void ddtk_header_init(ddtk_header *h)
{
    memset(h, 0, sizeof *h);
    h->nifs = 1;
    h->nbeams = 1;
}

void ddtk_header_free(ddtk_header *h)
{
    free(h->freqs);
    h->freqs = NULL;
    h->nfreqs = 0;
}

int ddtk_header_copy(ddtk_header *dst, const ddtk_header *src)
{
    *dst = *src;
    dst->freqs = NULL;
    if (src->nfreqs > 0)
        return ddtk_header_set_freqs(dst, src->freqs, src->nfreqs);
    return DDTK_OK;
}

int ddtk_header_has(const ddtk_header *h, const char *keyword)
{
    int k = key_index(keyword);
    for (int i = 0; k >= 0 && i < h->norder; i++)
        if (h->order[i] == k)
            return 1;
    return 0;
}

int ddtk_header_mark(ddtk_header *h, const char *keyword)
{
    int k = key_index(keyword);
    if (k < 0)
        return ddtk_fail(DDTK_EUSAGE, "unknown header keyword '%s'", keyword);
    if (!ddtk_header_has(h, keyword))
        h->order[h->norder++] = (uint8_t)k;
    return DDTK_OK;
}

void ddtk_header_unmark(ddtk_header *h, const char *keyword)
{
    int k = key_index(keyword), j = 0;
    for (int i = 0; i < h->norder; i++)
        if (h->order[i] != k)
            h->order[j++] = h->order[i];
    h->norder = j;
}

int ddtk_header_set_freqs(ddtk_header *h, const double *freqs, int n)
{
    double *f = ddtk_malloc((size_t)n * sizeof *f, "frequency table");
    if (!f)
        return DDTK_ESYS;
    memcpy(f, freqs, (size_t)n * sizeof *f);
    free(h->freqs);
    h->freqs = f;
    h->nfreqs = n;
    return ddtk_header_mark(h, "FREQUENCY_START");
}

/* ---- reading ------------------------------------------------------------- */

typedef struct reader {
    FILE *fp;
    const char *name;
    int64_t pos;
} reader;

static int read_bytes(reader *r, void *buf, size_t n)
{
    if (fread(buf, 1, n, r->fp) != n) {
        if (ferror(r->fp))
            return ddtk_fail(DDTK_ESYS, "%s: read error in header", r->name);
        return ddtk_fail(DDTK_EDATA, "%s: truncated header (ends at byte %lld)",
                         r->name, (long long)r->pos);
    }
    r->pos += (int64_t)n;
    return DDTK_OK;
}

static int read_string(reader *r, char *buf)
{
    int32_t len;
    int64_t at = r->pos;
    int rc = read_bytes(r, &len, sizeof len);
    if (rc)
        return rc;
    if (len < 1 || len > DDTK_MAX_STRING)
        return ddtk_fail(DDTK_EDATA, "%s: header string length %d at byte offset %lld "
                         "is outside 1..%d", r->name, len, (long long)at, DDTK_MAX_STRING);
    if ((rc = read_bytes(r, buf, (size_t)len)))
        return rc;
    buf[len] = '\0';
    return DDTK_OK;
}

static int read_freq_table(reader *r, ddtk_header *h)
{
    char key[DDTK_MAX_STRING + 1];
    int cap = 0, rc;
    for (;;) {
        int64_t at = r->pos;
        if ((rc = read_string(r, key)))
            return rc;
        if (strcmp(key, "FREQUENCY_END") == 0)
            return DDTK_OK;
        if (strcmp(key, "fchannel") != 0)
            return ddtk_fail(DDTK_EDATA, "%s: unexpected keyword '%s' at byte offset %lld "
                             "inside the frequency table", r->name, key, (long long)at);
        if (h->nfreqs == DDTK_MAX_NCHANS)
            return ddtk_fail(DDTK_EDATA, "%s: frequency table has more than %d entries",
                             r->name, DDTK_MAX_NCHANS);
        if (h->nfreqs == cap) {
            cap = cap ? 2 * cap : 1024;
            double *f = realloc(h->freqs, (size_t)cap * sizeof *f);
            if (!f)
                return ddtk_fail(DDTK_ESYS, "out of memory reading the frequency table");
            h->freqs = f;
        }
        if ((rc = read_bytes(r, &h->freqs[h->nfreqs], sizeof(double))))
            return rc;
        h->nfreqs++;
    }
}

static int read_value(reader *r, ddtk_header *h, const keyword *k)
{
    char *field = (char *)h + k->offset;
    switch (k->type) {
    case K_INT: return read_bytes(r, field, sizeof(int32_t));
    case K_DOUBLE: return read_bytes(r, field, sizeof(double));
    case K_CHAR: return read_bytes(r, field, 1);
    case K_LONG: return read_bytes(r, field, sizeof(int64_t));
    case K_STRING: return read_string(r, field);
    case K_FREQTABLE: return read_freq_table(r, h);
    }
    return DDTK_OK;
}

/* The keywords up to HEADER_END: one given twice keeps its last value, but a
 * second frequency table is an error. */
static int read_keywords(reader *r, ddtk_header *h)
{
    char key[DDTK_MAX_STRING + 1];
    int rc;
    for (;;) {
        int64_t at = r->pos;
        if ((rc = read_string(r, key))) {
            if (rc == DDTK_EDATA && feof(r->fp))
                return ddtk_fail(DDTK_EDATA, "%s: truncated header, no HEADER_END "
                                 "(ends at byte %lld)", r->name, (long long)r->pos);
            return rc;
        }
        if (strcmp(key, "HEADER_END") == 0)
            return DDTK_OK;
        int k = key_index(key);
        if (k < 0)
            return ddtk_fail(DDTK_EDATA, "%s: unknown header keyword '%.64s' at byte offset %lld",
                             r->name, key, (long long)at);
        if (keywords[k].type == K_FREQTABLE && ddtk_header_has(h, key))
            return ddtk_fail(DDTK_EDATA, "%s: second frequency table (FREQUENCY_START at byte "
                             "offset %lld)", r->name, (long long)at);
        if ((rc = read_value(r, h, &keywords[k])))
            return rc;
        if (!ddtk_header_has(h, key)) {
            if (h->norder == DDTK_MAX_KEYS)
                return ddtk_fail(DDTK_EDATA, "%s: too many header keywords", r->name);
            h->order[h->norder++] = (uint8_t)k;
        }
    }
}

int ddtk_header_read(FILE *fp, const char *name, ddtk_header *h)
{
    reader r = { fp, name, 0 };
    char key[DDTK_MAX_STRING + 1];
    int32_t len;
    int rc;

    ddtk_header_init(h);
    if (fread(&len, sizeof len, 1, fp) != 1) {
        if (ferror(fp))
            return ddtk_fail(DDTK_ESYS, "%s: read error", name);
        return ddtk_fail(DDTK_EDATA, "%s: empty input (no SIGPROC header)", name);
    }
    r.pos = 4;
    if (len != 12 || read_bytes(&r, key, 12) || memcmp(key, "HEADER_START", 12) != 0)
        return ddtk_fail(DDTK_EDATA, "%s: not a SIGPROC file (no HEADER_START)", name);
    if ((rc = read_keywords(&r, h))) {
        ddtk_header_free(h);
        return rc;
    }
    h->header_bytes = r.pos;
    return DDTK_OK;
}

static int nbits_valid(int nbits)
{
    return nbits == 1 || nbits == 2 || nbits == 4 || nbits == 8 || nbits == 16 || nbits == 32;
}

/* Every frequency given is finite. A filterbank (anything but a one-channel
 * time series, whose fch1 only records the reference frequency) needs fch1 or
 * a frequency table, and every channel above 0 MHz: the delays divide by f^2. */
static int check_frequencies(const ddtk_header *h, const char *name)
{
    if (!isfinite(h->fch1) || !isfinite(h->foff))
        return ddtk_fail(DDTK_EDATA, "%s: non-finite fch1 or foff", name);
    if (h->nfreqs > 0 && h->nfreqs != h->nchans)
        return ddtk_fail(DDTK_EDATA, "%s: frequency table has %d entries for %d channels",
                         name, h->nfreqs, h->nchans);
    for (int i = 0; i < h->nfreqs; i++)
        if (!isfinite(h->freqs[i]))
            return ddtk_fail(DDTK_EDATA, "%s: non-finite frequency in channel %d", name, i);
    if (h->data_type == 2 && h->nchans == 1)
        return DDTK_OK;
    if (h->nfreqs == 0 && !ddtk_header_has(h, "fch1"))
        return ddtk_fail(DDTK_EDATA, "%s: header has no 'fch1' (nor a frequency table)", name);
    double lo = INFINITY, hi = -INFINITY;
    for (int c = 0; c < h->nchans; c++) {
        double f = ddtk_chan_freq(h, c);
        if (!(f > 0) || !isfinite(f))
            return ddtk_fail(DDTK_EDATA, "%s: channel %d is at %g MHz; channel frequencies "
                             "must be finite and above 0", name, c, f);
        lo = fmin(lo, f);
        hi = fmax(hi, f);
    }
    /* channels without width: no delay between them, no DM step */
    if (h->nchans > 1 && !(hi > lo))
        return ddtk_fail(DDTK_EDATA, "%s: all %d channels are at %g MHz (foff %g): the band "
                         "has no width", name, h->nchans, lo, h->foff);
    return DDTK_OK;
}

int ddtk_header_validate(const ddtk_header *h, const char *name)
{
    static const char *required[] = { "nbits", "tsamp" };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!ddtk_header_has(h, required[i]))
            return ddtk_fail(DDTK_EDATA, "%s: header has no '%s'", name, required[i]);
    if (!ddtk_header_has(h, "nchans") && h->data_type != 2)
        return ddtk_fail(DDTK_EDATA, "%s: header has no 'nchans'", name);
    if (!nbits_valid(h->nbits))
        return ddtk_fail(DDTK_EDATA, "%s: nbits %d is not one of 1, 2, 4, 8, 16, 32",
                         name, h->nbits);
    if (ddtk_header_has(h, "nchans") && (h->nchans < 1 || h->nchans > DDTK_MAX_NCHANS))
        return ddtk_fail(DDTK_EDATA, "%s: nchans %d is outside 1..%d", name, h->nchans,
                         DDTK_MAX_NCHANS);
    if (h->nifs < 1)
        return ddtk_fail(DDTK_EDATA, "%s: nifs %d < 1", name, h->nifs);
    if ((int64_t)h->nchans * h->nifs > DDTK_MAX_NCHANS)
        return ddtk_fail(DDTK_EDATA, "%s: nifs %d times nchans %d is over %d values per "
                         "spectrum", name, h->nifs, h->nchans, DDTK_MAX_NCHANS);
    if (!(h->tsamp > 0) || !isfinite(h->tsamp))
        return ddtk_fail(DDTK_EDATA, "%s: tsamp %g is not a positive number", name, h->tsamp);
    if (!isfinite(h->tstart))
        return ddtk_fail(DDTK_EDATA, "%s: tstart %g is not a finite MJD", name, h->tstart);
    return check_frequencies(h, name);
}

/* ---- writing ------------------------------------------------------------- */

static int put_string(FILE *fp, const char *s)
{
    int32_t len = (int32_t)strlen(s);
    return fwrite(&len, sizeof len, 1, fp) == 1 && fwrite(s, 1, (size_t)len, fp) == (size_t)len;
}

static int put_value(FILE *fp, const ddtk_header *h, const keyword *k)
{
    const char *field = (const char *)h + k->offset;
    switch (k->type) {
    case K_INT: return fwrite(field, sizeof(int32_t), 1, fp) == 1;
    case K_DOUBLE: return fwrite(field, sizeof(double), 1, fp) == 1;
    case K_CHAR: return fwrite(field, 1, 1, fp) == 1;
    case K_LONG: return fwrite(field, sizeof(int64_t), 1, fp) == 1;
    case K_STRING: return put_string(fp, field);
    case K_FREQTABLE:
        for (int i = 0; i < h->nfreqs; i++)
            if (!put_string(fp, "fchannel") || fwrite(&h->freqs[i], sizeof(double), 1, fp) != 1)
                return 0;
        return put_string(fp, "FREQUENCY_END");
    }
    return 1;
}

int ddtk_header_write(FILE *fp, const ddtk_header *h)
{
    int ok = put_string(fp, "HEADER_START");
    for (int i = 0; ok && i < h->norder; i++) {
        const keyword *k = &keywords[h->order[i]];
        if (k->type == K_STRING && ((const char *)h + k->offset)[0] == '\0')
            continue;   /* SIGPROC cannot read an empty string */
        ok = put_string(fp, k->name) && put_value(fp, h, k);
    }
    ok = ok && put_string(fp, "HEADER_END");
    return ok ? DDTK_OK : ddtk_fail(DDTK_ESYS, "write error in header");
}

/* ---- printing ------------------------------------------------------------ */

double ddtk_chan_freq(const ddtk_header *h, int c)
{
    if (h->freqs && c < h->nfreqs)
        return h->freqs[c];
    return h->fch1 + c * h->foff;
}

/* Values too large (or not finite) to be hhmmss.s are printed as they are. */
void ddtk_format_sexagesimal(double packed, char *out, size_t n)
{
    const char *sign = packed < 0 ? "-" : "";
    double a = fabs(packed);
    if (!(a < 1e8)) {
        snprintf(out, n, "%.17g", packed);
        return;
    }
    int d = (int)(a / 10000.0);
    int m = (int)((a - d * 10000.0) / 100.0);
    double s = a - d * 10000.0 - m * 100.0;
    snprintf(out, n, "%s%02d:%02d:%07.4f", sign, d, m, s);
}

const char *ddtk_telescope_name(int id)
{
    static const struct { int id; const char *name; } t[] = {
        { 0, "Fake" }, { 1, "Arecibo" }, { 2, "Ooty" }, { 3, "Nancay" }, { 4, "Parkes" },
        { 5, "Jodrell" }, { 6, "GBT" }, { 7, "GMRT" }, { 8, "Effelsberg" }, { 9, "ATA" },
        { 10, "SRT" }, { 11, "LOFAR" }, { 12, "VLA" }, { 20, "CHIME" }, { 21, "FAST" },
        { 64, "MeerKAT" }, { 65, "KAT-7" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].id == id)
            return t[i].name;
    return "Unknown";
}

const char *ddtk_machine_name(int id)
{
    static const char *m[] = { "FAKE", "PSPM", "WAPP", "AOFTM", "BPP", "OOTY", "SCAMP",
                               "GMRTFB", "PULSAR2000", "PARSPEC", "BPSR", "COBALT",
                               "GMRTNEW" };
    if (id >= 0 && id < (int)(sizeof m / sizeof m[0]))
        return m[id];
    return "Unknown";
}

static void print_value(FILE *fp, const ddtk_header *h, const keyword *k)
{
    const char *field = (const char *)h + k->offset;
    switch (k->type) {
    case K_INT: fprintf(fp, "%d", *(const int32_t *)field); break;
    case K_DOUBLE: fprintf(fp, "%.17g", *(const double *)field); break;
    case K_CHAR: fprintf(fp, "%d", *(const int8_t *)field); break;
    case K_LONG: fprintf(fp, "%lld", (long long)*(const int64_t *)field); break;
    case K_STRING: fputs(field, fp); break;
    case K_FREQTABLE:
        for (int i = 0; i < h->nfreqs; i++)
            fprintf(fp, "%s%.17g", i ? " " : "", h->freqs[i]);
        break;
    }
}

int ddtk_header_print_key(FILE *fp, const ddtk_header *h, const char *key, int64_t nsamples)
{
    if (strcmp(key, "nsamples") == 0 && nsamples >= 0)
        fprintf(fp, "%lld\n", (long long)nsamples);
    else if (strcmp(key, "tobs") == 0 && nsamples >= 0)
        fprintf(fp, "%.17g\n", (double)nsamples * h->tsamp);
    else if (strcmp(key, "header_size") == 0)
        fprintf(fp, "%lld\n", (long long)h->header_bytes);
    else if (strcmp(key, "nchans") == 0 || strcmp(key, "nifs") == 0)   /* defaults apply */
        fprintf(fp, "%d\n", key[1] == 'c' ? h->nchans : h->nifs);
    else {
        const char *name = strcmp(key, "fchannel") == 0 ? "FREQUENCY_START" : key;
        int k = key_index(name);
        if (k < 0)
            return ddtk_fail(DDTK_EUSAGE, "unknown header keyword '%s'", key);
        if (!ddtk_header_has(h, name))
            return ddtk_fail(DDTK_EDATA, "header has no '%s'", key);
        print_value(fp, h, &keywords[k]);
        fputc('\n', fp);
    }
    return DDTK_OK;
}

/* MJDs the calendar conversion and fixed-point printing take: about
 * +-270000 years around 1858. */
static int mjd_in_range(double mjd)
{
    return fabs(mjd) < 1e8;
}

/* MJD to calendar date (Fliegel & Van Flandern); mjd_in_range(mjd) holds. */
static void mjd_to_date(double mjd, int *y, int *m, int *d)
{
    long jd = (long)floor(mjd) + 2400001L;
    long l = jd + 68569, n = 4 * l / 146097;
    l -= (146097 * n + 3) / 4;
    long i = 4000 * (l + 1) / 1461001;
    l = l - 1461 * i / 4 + 31;
    long j = 80 * l / 2447;
    *d = (int)(l - 2447 * j / 80);
    l = j / 11;
    *m = (int)(j + 2 - 12 * l);
    *y = (int)(100 * (n - 49) + i + l);
}

static void print_epoch(FILE *fp, int w, double mjd)
{
    const char *label = "Time stamp of first sample (MJD)", *date = "Gregorian date (YYYY/MM/DD)";
    int y, m, d;
    if (!mjd_in_range(mjd)) {
        fprintf(fp, "%-*s: %.17g\n%-*s: out of range\n", w, label, mjd, w, date);
        return;
    }
    mjd_to_date(mjd, &y, &m, &d);
    fprintf(fp, "%-*s: %.12f\n%-*s: %04d/%02d/%02d\n", w, label, mjd, w, date, y, m, d);
}

/* Bytes of nsamples spectra, counted without overflow (a header's sizes are
 * validated, but this prints whatever it is given). */
static void print_data_size(FILE *fp, int w, const ddtk_header *h, int64_t nsamples)
{
    const char *label = "Data size (bytes)";
    int64_t per_spectrum, bits;
    if (__builtin_mul_overflow((int64_t)h->nchans * h->nifs, (int64_t)h->nbits, &per_spectrum)
        || __builtin_mul_overflow(nsamples, per_spectrum, &bits) || bits > INT64_MAX - 7)
        fprintf(fp, "%-*s: %.6g\n", w, label,
                (double)nsamples * h->nchans * h->nifs * h->nbits / 8);
    else
        fprintf(fp, "%-*s: %lld\n", w, label, (long long)((bits + 7) / 8));
}

void ddtk_header_print(FILE *fp, const ddtk_header *h, const char *name, int64_t nsamples)
{
    char buf[64];
    const int w = 33;
    fprintf(fp, "%-*s: %s\n", w, "Data file", name);
    fprintf(fp, "%-*s: %lld\n", w, "Header size (bytes)", (long long)h->header_bytes);
    if (nsamples >= 0)
        print_data_size(fp, w, h, nsamples);
    fprintf(fp, "%-*s: %s (%s)\n", w, "Data type",
            h->data_type == 2 ? "time series" : "filterbank",
            h->pulsarcentric ? "pulsarcentric" : h->barycentric ? "barycentric" : "topocentric");
    fprintf(fp, "%-*s: %s\n", w, "Telescope", ddtk_telescope_name(h->telescope_id));
    fprintf(fp, "%-*s: %s\n", w, "Datataking Machine", ddtk_machine_name(h->machine_id));
    if (ddtk_header_has(h, "source_name"))
        fprintf(fp, "%-*s: %s\n", w, "Source Name", h->source_name);
    if (ddtk_header_has(h, "src_raj")) {
        ddtk_format_sexagesimal(h->src_raj, buf, sizeof buf);
        fprintf(fp, "%-*s: %s\n", w, "Source RA (J2000)", buf);
    }
    if (ddtk_header_has(h, "src_dej")) {
        ddtk_format_sexagesimal(h->src_dej, buf, sizeof buf);
        fprintf(fp, "%-*s: %s\n", w, "Source DEC (J2000)", buf);
    }
    if (ddtk_header_has(h, "az_start"))
        fprintf(fp, "%-*s: %f\n", w, "Start AZ (deg)", h->az_start);
    if (ddtk_header_has(h, "za_start"))
        fprintf(fp, "%-*s: %f\n", w, "Start ZA (deg)", h->za_start);
    fprintf(fp, "%-*s: %f\n", w, "Frequency of channel 1 (MHz)", ddtk_chan_freq(h, 0));
    fprintf(fp, "%-*s: %f\n", w, "Channel bandwidth      (MHz)", h->foff);
    if (h->nfreqs > 0)
        fprintf(fp, "%-*s: yes\n", w, "Frequency table");
    fprintf(fp, "%-*s: %d\n", w, "Number of channels", h->nchans);
    if (ddtk_header_has(h, "nbeams"))
        fprintf(fp, "%-*s: %d\n", w, "Number of beams", h->nbeams);
    if (ddtk_header_has(h, "ibeam"))
        fprintf(fp, "%-*s: %d\n", w, "Beam number", h->ibeam);
    if (ddtk_header_has(h, "refdm"))
        fprintf(fp, "%-*s: %f\n", w, "Reference DM (pc/cc)", h->refdm);
    if (ddtk_header_has(h, "period"))
        fprintf(fp, "%-*s: %f\n", w, "Folding period (s)", h->period);
    print_epoch(fp, w, h->tstart);
    fprintf(fp, "%-*s: %.5f\n", w, "Sample time (us)", h->tsamp * 1e6);
    if (nsamples >= 0) {
        fprintf(fp, "%-*s: %lld\n", w, "Number of samples", (long long)nsamples);
        fprintf(fp, "%-*s: %.6f\n", w, "Observation length (seconds)", nsamples * h->tsamp);
    }
    if (ddtk_header_has(h, "nsamples") && h->nsamples != nsamples)
        fprintf(fp, "%-*s: %d\n", w, "Header nsamples", h->nsamples);
    fprintf(fp, "%-*s: %d\n", w, "Number of bits per sample", h->nbits);
    if (ddtk_header_has(h, "signed"))
        fprintf(fp, "%-*s: %s\n", w, "Signed data", h->signed_data ? "yes" : "no");
    fprintf(fp, "%-*s: %d\n", w, "Number of IFs", h->nifs);
}
