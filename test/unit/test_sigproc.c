/*
 * test_sigproc.c - SIGPROC header round trips and parsing.
 */
#include "ddtk.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

/* Write h to memory; returns the bytes (caller frees). */
static char *to_bytes(const ddtk_header *h, size_t *n)
{
    char *buf = NULL;
    FILE *fp = open_memstream(&buf, n);
    CHECK(ddtk_header_write(fp, h) == DDTK_OK);
    fclose(fp);
    return buf;
}

static int from_bytes(const char *buf, size_t n, ddtk_header *h)
{
    FILE *fp = fmemopen((void *)buf, n, "rb");
    int rc = ddtk_header_read(fp, "mem", h);
    fclose(fp);
    return rc;
}

static void every_keyword(ddtk_header *h)
{
    static const char *keys[] = {
        "telescope_id", "machine_id", "data_type", "barycentric", "pulsarcentric", "nchans",
        "nbits", "nifs", "nbeams", "ibeam", "nbins", "nsamples", "az_start", "za_start",
        "src_raj", "src_dej", "tstart", "tsamp", "period", "fch1", "foff", "refdm",
        "source_name", "rawdatafile", "signed", "npuls",
    };
    ddtk_header_init(h);
    h->telescope_id = 4; h->machine_id = 10; h->data_type = 1; h->barycentric = 1;
    h->pulsarcentric = 0; h->nchans = 4; h->nbits = 8; h->nifs = 2; h->nbeams = 13;
    h->ibeam = 7; h->nbins = 0; h->nsamples = 1234; h->az_start = 12.5; h->za_start = 33.25;
    h->src_raj = 123456.789; h->src_dej = -451234.5; h->tstart = 60123.456789012345;
    h->tsamp = 6.4e-5; h->period = 0.0337; h->fch1 = 1581.8; h->foff = -0.390625;
    h->refdm = 56.7; strcpy(h->source_name, "J0437-4715"); strcpy(h->rawdatafile, "raw.sf");
    h->signed_data = 1; h->npuls = 9876543210LL;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        CHECK(ddtk_header_mark(h, keys[i]) == DDTK_OK);
}

static void test_round_trip_every_keyword(void)
{
    ddtk_header h, r;
    size_t n1, n2;
    every_keyword(&h);
    double f[4] = { 1400.5, 1400.0, 1399.5, 1398.0 };
    CHECK(ddtk_header_set_freqs(&h, f, 4) == DDTK_OK);
    char *a = to_bytes(&h, &n1);
    CHECK(from_bytes(a, n1, &r) == DDTK_OK);
    CHECK(r.header_bytes == (int64_t)n1);
    char *b = to_bytes(&r, &n2);
    CHECK(n1 == n2 && memcmp(a, b, n1) == 0);
    CHECK(r.telescope_id == 4 && r.machine_id == 10 && r.nifs == 2 && r.nsamples == 1234);
    CHECK(r.ibeam == 7 && r.nbeams == 13 && r.signed_data == 1 && r.npuls == 9876543210LL);
    CHECK(r.tstart == h.tstart && r.src_dej == -451234.5 && r.refdm == 56.7);
    CHECK(strcmp(r.source_name, "J0437-4715") == 0 && strcmp(r.rawdatafile, "raw.sf") == 0);
    CHECK(r.nfreqs == 4 && r.freqs[3] == 1398.0);
    CHECK(ddtk_chan_freq(&r, 2) == 1399.5);
    free(a);
    free(b);
    ddtk_header_free(&h);
    ddtk_header_free(&r);
}

/* Hand-built bytes in an unusual order and subset read back to the same bytes. */
static void put_str(FILE *fp, const char *s)
{
    int32_t n = (int32_t)strlen(s);
    fwrite(&n, 4, 1, fp);
    fwrite(s, 1, (size_t)n, fp);
}

static void test_other_order_and_subset(void)
{
    char *buf = NULL;
    size_t n;
    FILE *fp = open_memstream(&buf, &n);
    int32_t nbits = 2, nchans = 3;
    double tsamp = 1e-3, fch1 = 400, foff = 0.5;
    char sgn = 0;
    put_str(fp, "HEADER_START");
    put_str(fp, "tsamp"); fwrite(&tsamp, 8, 1, fp);
    put_str(fp, "nbits"); fwrite(&nbits, 4, 1, fp);
    put_str(fp, "signed"); fwrite(&sgn, 1, 1, fp);
    put_str(fp, "foff"); fwrite(&foff, 8, 1, fp);
    put_str(fp, "fch1"); fwrite(&fch1, 8, 1, fp);
    put_str(fp, "nchans"); fwrite(&nchans, 4, 1, fp);
    put_str(fp, "HEADER_END");
    fclose(fp);
    ddtk_header h;
    CHECK(from_bytes(buf, n, &h) == DDTK_OK);
    CHECK(h.nbits == 2 && h.nchans == 3 && h.foff == 0.5 && h.nifs == 1);
    CHECK(ddtk_header_validate(&h, "mem") == DDTK_OK);
    CHECK(!ddtk_header_has(&h, "tstart") && ddtk_header_has(&h, "signed"));
    size_t n2;
    char *again = to_bytes(&h, &n2);
    CHECK(n2 == n && memcmp(buf, again, n) == 0);
    free(buf);
    free(again);
}

/* Two FREQUENCY_START blocks: bad data (the second used to reset the table's
 * capacity and write past it); a failed read leaves nothing to free. */
static void test_second_freq_table(void)
{
    char *buf = NULL;
    size_t n;
    FILE *fp = open_memstream(&buf, &n);
    int32_t nbits = 8, nchans = 3;
    double f = 1400;
    put_str(fp, "HEADER_START");
    put_str(fp, "nbits"); fwrite(&nbits, 4, 1, fp);
    put_str(fp, "nchans"); fwrite(&nchans, 4, 1, fp);
    for (int table = 0; table < 2; table++) {
        put_str(fp, "FREQUENCY_START");
        for (int c = 0; c < 3; c++) {
            put_str(fp, "fchannel");
            fwrite(&f, 8, 1, fp);
        }
        put_str(fp, "FREQUENCY_END");
    }
    put_str(fp, "HEADER_END");
    fclose(fp);
    ddtk_header h;
    CHECK(from_bytes(buf, n, &h) == DDTK_EDATA);
    CHECK(strstr(ddtk_errmsg(), "second frequency table") != NULL);
    CHECK(h.freqs == NULL && h.nfreqs == 0);
    free(buf);
}

static void test_errors(void)
{
    ddtk_header h, good;
    size_t n;
    every_keyword(&good);
    char *a = to_bytes(&good, &n);
    for (size_t cut = 1; cut < n; cut += 7)   /* every truncation fails as bad data */
        CHECK(from_bytes(a, cut, &h) == DDTK_EDATA);
    a[5] = 'X';                                /* HEADER_START damaged */
    CHECK(from_bytes(a, n, &h) == DDTK_EDATA);
    CHECK(strstr(ddtk_errmsg(), "HEADER_START") != NULL);
    free(a);
    good.nbits = 3;
    CHECK(ddtk_header_validate(&good, "x") == DDTK_EDATA);
    good.nbits = 8;
    good.tsamp = 0;
    CHECK(ddtk_header_validate(&good, "x") == DDTK_EDATA);
}

static void test_sexagesimal(void)
{
    char s[32];
    ddtk_format_sexagesimal(123456.789, s, sizeof s);
    CHECK(strcmp(s, "12:34:56.7890") == 0);
    ddtk_format_sexagesimal(-5012.5, s, sizeof s);
    CHECK(strcmp(s, "-00:50:12.5000") == 0);
    ddtk_format_sexagesimal(-1e300, s, sizeof s);   /* no double->int overflow */
    CHECK(strcmp(s, "-1.0000000000000001e+300") == 0);
    ddtk_format_sexagesimal(NAN, s, sizeof s);
    CHECK(strcmp(s, "nan") == 0);
}

int main(void)
{
    test_round_trip_every_keyword();
    test_other_order_and_subset();
    test_errors();
    test_second_freq_table();
    test_sexagesimal();
    return check_result();
}
