/*
 * input.c - opening inputs (SIGPROC files or stdin, PSRFITS search-mode
 * files, told apart by content) and reading raw spectra.
 *
 * A file's sample count comes from its size; stdin is read to EOF without
 * seeking. Everything is counted in 64 bits. PSRFITS goes to psrfits.c.
 */
#include "internal.h"
#include "psrfits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INPUT_BUFFER (4 << 20)

static int open_stream(ddtk_input *in, const char *path)
{
    in->is_stdin = !path || strcmp(path, "-") == 0;
    in->name = strdup(in->is_stdin ? "stdin" : path);
    if (!in->name)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    in->fp = in->is_stdin ? stdin : fopen(path, "rb");
    if (!in->fp)
        return ddtk_fail(DDTK_ESYS, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(in->fp), &st) == 0 && S_ISDIR(st.st_mode))
        return ddtk_fail(DDTK_EDATA, "%s: is a directory, not a SIGPROC file", in->name);
    setvbuf(in->fp, NULL, _IOFBF, INPUT_BUFFER);
    return DDTK_OK;
}

/* Whole spectra of bps bits in bytes, without overflowing bytes * 8. */
static int64_t spectra_in(int64_t bytes, int64_t bps)
{
    return bytes / bps * 8 + bytes % bps * 8 / bps;
}

/* Samples from the file size, with warnings for leftovers and a header that disagrees. */
static void count_samples(ddtk_input *in)
{
    struct stat st;
    in->nsamples = -1;
    if (in->is_stdin || fstat(fileno(in->fp), &st) != 0 || !S_ISREG(st.st_mode))
        return;
    int64_t bytes = (int64_t)st.st_size - in->hdr.header_bytes;
    if (bytes < 0)
        bytes = 0;
    in->nsamples = spectra_in(bytes, in->bits_per_spectrum);
    int64_t used = ddtk_input_bytes(in, in->nsamples);
    if (bytes > used && in->nsamples > 0)
        ddtk_report(DDTK_MSG_WARNING, "%s: %lld trailing bytes after the last whole spectrum "
                    "are ignored", in->name, (long long)(bytes - used));
    if (ddtk_header_has(&in->hdr, "nsamples") && in->hdr.nsamples != in->nsamples)
        ddtk_report(DDTK_MSG_WARNING, "%s: header nsamples %d disagrees with the file size "
                    "(%lld samples); using the file size", in->name, in->hdr.nsamples,
                    (long long)in->nsamples);
}

/* A FITS file starts "SIMPLE  =", a SIGPROC one with the length 12 of
 * HEADER_START: one byte tells them apart. A FITS stream that cannot seek
 * is refused: cfitsio needs the file. *fits = 1 for a FITS file by name. */
static int sniff(ddtk_input *in, int *fits)
{
    struct stat st;
    int c = getc(in->fp);
    *fits = 0;
    if (c == EOF || c != 'S')
        return c == EOF || ungetc(c, in->fp) != EOF ? DDTK_OK
               : ddtk_fail(DDTK_ESYS, "%s: read error", in->name);
    if (!in->is_stdin && fstat(fileno(in->fp), &st) == 0 && S_ISREG(st.st_mode)) {
        *fits = 1;
        return DDTK_OK;
    }
    uint8_t head[30] = "S";
    size_t got = fread(head + 1, 1, sizeof head - 1, in->fp) + 1;
    if (ddtk_psrfits_sniff(head, got))
        return ddtk_fail(DDTK_EDATA, "%s: a FITS (PSRFITS) stream: it is read from a file "
                         "only (cfitsio seeks); give the file's name", in->name);
    return ddtk_fail(DDTK_EDATA, "%s: not a SIGPROC file (no HEADER_START)", in->name);
}

static int open_psrfits(ddtk_input *in, const char *const *paths, int n)
{
    if (in->fp && !in->is_stdin)
        fclose(in->fp);
    in->fp = NULL;
    int rc = ddtk_psrfits_open(&in->psrfits, paths, n, &in->hdr, &in->nsamples, &in->notes,
                               &in->dead);
    if (!rc)
        rc = ddtk_header_validate(&in->hdr, in->name);
    in->bits_per_spectrum = (int64_t)in->hdr.nchans * in->hdr.nifs * in->hdr.nbits;
    return rc;
}

int ddtk_input_open(ddtk_input *in, const char *path)
{
    return ddtk_input_open_files(in, &path, 1);
}

int ddtk_input_open_files(ddtk_input *in, const char *const *paths, int n)
{
    int rc, fits;
    const char *path = n > 0 ? paths[0] : NULL;
    memset(in, 0, sizeof *in);
    if ((rc = open_stream(in, path)) || (rc = sniff(in, &fits)))
        return rc;
    if (n > 1 && !fits)
        return ddtk_fail(DDTK_EUSAGE, "%s: several inputs are read only as the PSRFITS files "
                         "of one observation, and this is not PSRFITS ('%s' is extra)",
                         in->name, paths[1]);
    if (fits)
        return open_psrfits(in, paths, n);
    if ((rc = ddtk_header_read(in->fp, in->name, &in->hdr)))
        return rc;
    if (!ddtk_header_has(&in->hdr, "nchans") && in->hdr.data_type == 2)
        in->hdr.nchans = 1;
    if ((rc = ddtk_header_validate(&in->hdr, in->name)))
        return rc;
    in->bits_per_spectrum = (int64_t)in->hdr.nchans * in->hdr.nifs * in->hdr.nbits;
    count_samples(in);
    return DDTK_OK;
}

int ddtk_input_require_filterbank(const ddtk_input *in)
{
    if (in->hdr.data_type == 2)
        return ddtk_fail(DDTK_EDATA, "%s: a dedispersed time series (SIGPROC data_type 2, "
                         "%d channel%s), not a filterbank", in->name, in->hdr.nchans,
                         in->hdr.nchans == 1 ? "" : "s");
    return DDTK_OK;
}

int64_t ddtk_input_bytes(const ddtk_input *in, int64_t n)
{
    return (n * in->bits_per_spectrum + 7) / 8;
}

/* The system's error of a read of in, as one line. */
static int read_error(const ddtk_input *in)
{
    return ddtk_fail(DDTK_ESYS, "%s: read error: %s", in->name, strerror(errno));
}

ssize_t ddtk_pread_all(int fd, uint8_t *dst, size_t len, off_t pos)
{
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(fd, dst + done, len - done, pos + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        done += (size_t)r;
    }
    return (ssize_t)done;
}

/* want bytes from stdio's position in parts on several threads, stdio
 * moved past the parts up to the first short one and *got their spectra
 * (ddtk_input_pread_done). */
static int read_parallel(ddtk_input *in, uint8_t *raw, size_t want, int64_t *got)
{
    const size_t nparts = (want + DDTK_PREAD_CHUNK - 1) / DDTK_PREAD_CHUNK;
    int64_t pos;
    int rc = ddtk_input_tell(in, &pos);
    size_t *part = rc ? NULL : ddtk_malloc(nparts * sizeof *part, "read parts");
    if (!part)
        return rc ? rc : DDTK_ESYS;
    ddtk_thread_error err;
    ddtk_thread_error_init(&err);
#pragma omp parallel for num_threads(DDTK_PREAD_THREADS) schedule(dynamic)
    for (size_t i = 0; i < nparts; i++) {
        size_t at = i * DDTK_PREAD_CHUNK;
        size_t len = want - at < DDTK_PREAD_CHUNK ? want - at : DDTK_PREAD_CHUNK;
        int e;
        if (!ddtk_thread_error_code(&err)
            && (e = ddtk_input_pread(in, pos + (int64_t)at, raw + at, len, &part[i])))
            ddtk_thread_error_keep(&err, (int)i, e);
    }
    rc = ddtk_thread_error_end(&err);
    size_t have = 0;
    for (size_t i = 0; i < nparts && !rc; i++) {
        have += part[i];
        if (part[i] < DDTK_PREAD_CHUNK)
            break;
    }
    free(part);
    return rc ? rc : ddtk_input_pread_done(in, pos, want, have, got);
}

/* After a PSRFITS read of got of the n spectra asked for: the end, the
 * count, and the reader's code. */
static int counted(ddtk_input *in, int64_t n, int64_t got, int rc)
{
    in->eof = !rc && got < n;
    in->samples_read += got;
    return rc;
}

/* After a read of want bytes that gave have: the spectra, the end, the
 * count, a warning for bytes past the last whole spectrum (where the
 * length was not known at the open, which warned of them). */
static int64_t account(ddtk_input *in, size_t want, size_t have)
{
    const int64_t got = (int64_t)(have * 8 / (size_t)in->bits_per_spectrum);
    in->eof = have < want;
    if (in->eof && in->nsamples < 0 && (int64_t)have > ddtk_input_bytes(in, got)
        && in->samples_read + got > 0)
        ddtk_report(DDTK_MSG_WARNING, "%s: %lld trailing bytes after the last whole spectrum "
                    "are ignored", in->name,
                    (long long)((int64_t)have - ddtk_input_bytes(in, got)));
    in->samples_read += got;
    return got;
}

static int read_raw(ddtk_input *in, uint8_t *raw, int64_t n, int64_t *got)
{
    *got = 0;
    if (in->eof || n <= 0)
        return DDTK_OK;
    if (in->psrfits) {
        int rc = ddtk_psrfits_read(in->psrfits, raw, n, got);
        return counted(in, n, *got, rc);
    }
    size_t want = (size_t)ddtk_input_bytes(in, n), have;
    if (want >= DDTK_PREAD_MIN && ddtk_input_positional(in))
        return read_parallel(in, raw, want, got);
    if ((have = fread(raw, 1, want, in->fp)) < want && ferror(in->fp))
        return read_error(in);
    *got = account(in, want, have);
    return DDTK_OK;
}

int ddtk_input_positional(const ddtk_input *in)
{
    return !in->psrfits && in->nsamples >= 0 && in->fp && fileno(in->fp) >= 0;
}

int ddtk_input_tell(ddtk_input *in, int64_t *pos)
{
    const off_t at = ftello(in->fp);
    if (at < 0)
        return read_error(in);
    *pos = (int64_t)at;
    return DDTK_OK;
}

int ddtk_input_pread(const ddtk_input *in, int64_t pos, uint8_t *dst, size_t len, size_t *have)
{
    const ssize_t r = ddtk_pread_all(fileno(in->fp), dst, len, (off_t)pos);
    if (r < 0)
        return read_error(in);
    *have = (size_t)r;
    return DDTK_OK;
}

int ddtk_input_pread_done(ddtk_input *in, int64_t pos, size_t want, size_t have, int64_t *got)
{
    *got = 0;
    if (fseeko(in->fp, (off_t)pos + (off_t)have, SEEK_SET) != 0)
        return read_error(in);
    *got = account(in, want, have);
    return DDTK_OK;
}

int ddtk_input_reads_rows(const ddtk_input *in)
{
    return in->psrfits && !in->clean && ddtk_psrfits_rows(in->psrfits);
}

int ddtk_input_read_rows(ddtk_input *in, int64_t n, const int *row, int pol, float *out,
                         size_t stride, int64_t *got)
{
    *got = 0;
    if (in->eof || n <= 0)
        return DDTK_OK;
    int rc = ddtk_psrfits_read_rows(in->psrfits, n, row, pol, out, stride, got);
    return counted(in, n, *got, rc);
}

int ddtk_input_scaled_bytes(const ddtk_input *in, int *sgn)
{
    *sgn = 0;
    return ddtk_input_reads_rows(in) ? ddtk_psrfits_scaled_bytes(in->psrfits, sgn) : 0;
}

int ddtk_input_read_scaled(ddtk_input *in, int64_t n, uint8_t *out, int32_t *seg, float *tab,
                           int maxseg, int *nseg, int64_t *got)
{
    if (in->eof || n <= 0) {      /* else the reader clears them */
        *got = 0;
        *nseg = 1;
        memset(tab, 0, (size_t)(2 * in->hdr.nifs * in->hdr.nchans) * sizeof *tab);
        return DDTK_OK;
    }
    int rc = ddtk_psrfits_read_scaled(in->psrfits, n, out, seg, tab, maxseg, nseg, got);
    return counted(in, n, *got, rc);
}

/* With RFI excision the cleaner reads whole blocks ahead: what was delivered
 * and the end are its. */
int ddtk_input_read(ddtk_input *in, uint8_t *raw, int64_t n, int64_t *got)
{
    if (!in->clean || ddtk_clean_on_device(in))
        return read_raw(in, raw, n, got);
    *got = 0;
    if (n <= 0)
        return DDTK_OK;
    int rc = ddtk_clean_read(in, raw, n, got, read_raw);
    in->eof = ddtk_clean_eof(in);
    in->samples_read = ddtk_clean_delivered(in);
    return rc;
}

void ddtk_input_close(ddtk_input *in)
{
    if (in->fp && !in->is_stdin)
        fclose(in->fp);
    in->fp = NULL;
    ddtk_psrfits_close(in->psrfits);
    in->psrfits = NULL;
    ddtk_cleaner_free(in->clean);
    in->clean = NULL;
    free(in->notes);
    in->notes = NULL;
    free(in->dead);
    in->dead = NULL;
    free(in->name);
    in->name = NULL;
    ddtk_header_free(&in->hdr);
}
