/*
 * test_sps.c - the single-pulse search (sps.c) on synthetic series: pulses of
 * known matched-filter S/N found once each at their time, with at least 90%
 * of that S/N; the same candidates whatever pieces the series come in;
 * several DMs clustered into one event; short series and tails searched;
 * pure noise within the Gaussian tail's bound; the threshold exact at a
 * peak's own S/N; downsampled series in finest samples; the Heimdall file
 * read back.
 */
#include "check.h"
#include "sps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned short rng[3] = { 7, 11, 13 };

static void noise(float *x, int64_t n, double mean)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(mean + check_gauss(rng));
}

/* ndm rows of n samples of unit Gaussian noise, one after another. */
static float *noise_rows(int ndm, int64_t n)
{
    float *x = malloc((size_t)ndm * n * sizeof *x);
    for (int d = 0; d < ndm; d++)
        noise(x + d * n, n, 0.0);
    return x;
}

/* A Gaussian of FWHM fwhm samples centred at c, averaged over each sample,
 * scaled so that its matched filter S/N (root of the sum of squares, noise
 * sigma 1) is snr. */
static void add_pulse(float *x, int64_t n, double c, double fwhm, double snr)
{
    double sig = fwhm / 2.3548200450309493, ss = 0;
    int64_t lo = (int64_t)(c - 8 * sig) - 2, hi = (int64_t)(c + 8 * sig) + 3;
    lo = lo < 0 ? 0 : lo;
    hi = hi > n ? n : hi;
    double *p = calloc((size_t)(hi - lo), sizeof *p);
    for (int64_t t = lo; t < hi; t++) {
        p[t - lo] = erf((t + 1 - c) / (sig * M_SQRT2)) - erf((t - c) / (sig * M_SQRT2));
        ss += p[t - lo] * p[t - lo];
    }
    for (int64_t t = lo; t < hi; t++)
        x[t] += (float)(p[t - lo] * snr / sqrt(ss));
    free(p);
}

/* Search ndm series of n samples each (x + d * n), fed in pieces of `piece`
 * samples (0: random lengths 1..5000, and each series ended once fed, as
 * spsearch ends each file's). */
static ddtk_sps_cand *search(const float *x, int ndm, int64_t n, const int *downsamp,
                             int64_t piece, const ddtk_sps_params *par, int64_t *nc)
{
    ddtk_sps *s;
    double dms[16] = { 0 };
    for (int d = 0; d < ndm; d++)
        dms[d] = 10.0 * d;
    CHECK(ddtk_sps_create(&s, par, ndm, dms, downsamp, 1e-3) == 0);
    for (int d = 0; d < ndm; d++) {
        for (int64_t t = 0; t < n;) {
            int64_t len = piece ? piece : 1 + (int64_t)(erand48(rng) * 5000);
            len = len < n - t ? len : n - t;
            CHECK(ddtk_sps_feed(s, d, x + (size_t)d * n + t, len) == 0);
            t += len;
        }
        if (!piece)
            CHECK(ddtk_sps_end(s, d) == 0);
    }
    ddtk_sps_cand *c;
    CHECK(ddtk_sps_finish(s, &c, nc) == 0);
    ddtk_sps_destroy(s);
    return c;
}

static int same(const ddtk_sps_cand *a, int64_t na, const ddtk_sps_cand *b, int64_t nb)
{
    if (na != nb)
        return 0;
    for (int64_t i = 0; i < na; i++)
        if (a[i].snr != b[i].snr || a[i].sample != b[i].sample || a[i].width != b[i].width
            || a[i].dm_index != b[i].dm_index || a[i].members != b[i].members
            || a[i].begin != b[i].begin || a[i].end != b[i].end)
            return 0;
    return 1;
}

/* Pulses over widths 0.3 to 300 samples, some on block boundaries (4096,
 * 16384 ...) and in the last samples of the series, at a matched-filter S/N
 * of 100 so that the noise (sigma 1 in every boxcar) moves the S/N found by
 * 1% and the check of 90% measures the search: boxcars against Gaussians,
 * the block statistics. Averaged over 20 noise draws at S/N 60 the search
 * keeps 93-99% of the S/N for FWHM 0.3 to 300 samples. */
static void test_pulses(void)
{
    static const double at[] = { 300.5, 4095.7, 9000.2, 16384.0, 30000.9, 45055.3,
                                 60000.1, 80100.4, 99500.5 };
    static const double fwhm[] = { 0.3, 1.0, 3.2, 7.5, 16.0, 40.0, 90.0, 300.0, 2.0 };
    const int np = 9;
    const int64_t n = 99700;      /* not a multiple of any block */
    float *x = malloc(n * sizeof *x);
    ddtk_sps_params par;
    ddtk_sps_params_init(&par);
    par.baseline = 32.768;        /* 32768 samples: boxcars up to 1024 */
    noise(x, n, 100.0);
    for (int i = 0; i < np; i++)
        add_pulse(x, n, at[i], fwhm[i], 100.0);
    int64_t na, nb, nc;
    ddtk_sps_cand *a = search(x, 1, n, NULL, n, &par, &na);
    ddtk_sps_cand *b = search(x, 1, n, NULL, 0, &par, &nb);
    ddtk_sps_cand *c = search(x, 1, n, NULL, 1, &par, &nc);
    CHECK(same(a, na, b, nb));
    CHECK(same(a, na, c, nc));
    CHECK(na == np);
    for (int i = 0; i < np && na == np; i++) {
        double w = (double)a[i].width;
        double width = fwhm[i] > 1 ? fwhm[i] : 1;
        if (fabs(a[i].sample + 0.5 - at[i]) > width || a[i].snr < 0.9 * 100.0)
            fprintf(stderr, "pulse %d at %g FWHM %g: found at %lld, S/N %.2f, width %g\n", i,
                    at[i], fwhm[i], (long long)a[i].sample, a[i].snr, w);
        CHECK(fabs(a[i].sample + 0.5 - at[i]) <= width);
        CHECK(a[i].snr >= 0.9 * 100.0);
        CHECK(a[i].begin <= a[i].sample && a[i].end >= a[i].sample);
    }
    free(a);
    free(b);
    free(c);
    free(x);
}

/* The same pulse in neighbouring DMs (fainter away from DM index 2): one
 * event, headed by the brightest, with a member per DM at least. */
static void test_cluster(void)
{
    const int64_t n = 20000;
    const int ndm = 5;
    float *x = noise_rows(ndm, n);
    ddtk_sps_params par;
    ddtk_sps_params_init(&par);
    for (int d = 0; d < ndm; d++)
        add_pulse(x + d * n, n, 12000.0 + d, 4.0, 40.0 - 6.0 * abs(d - 2));
    int64_t nc;
    ddtk_sps_cand *c = search(x, ndm, n, NULL, 1000, &par, &nc);
    CHECK(nc == 1);
    if (nc == 1) {
        CHECK(c[0].dm_index == 2);
        CHECK(c[0].dm == 20.0);
        CHECK(c[0].members >= ndm);
        CHECK(fabs(c[0].sample - 12002.0) <= 4);
    }
    free(c);
    free(x);
}

/* Friends across DM indices exactly dm_tol apart, and no further: pulses in
 * DMs 0, 5 and 10 at one time chain into one event; in DMs 0 and 6 at
 * another they are two; the last DM's pulse, 3 samples before its
 * neighbour's 5 DMs below, joins it. */
static void test_cluster_dm_reach(void)
{
    const int64_t n = 30000;
    const int ndm = 13;
    float *x = noise_rows(ndm, n);
    ddtk_sps_params par;
    ddtk_sps_params_init(&par);
    const int chain[] = { 0, 5, 10 }, apart[] = { 0, 6 }, top[] = { 7, 12 };
    for (int i = 0; i < 3; i++)
        add_pulse(x + chain[i] * n, n, 6000.0, 2.0, 30.0);
    for (int i = 0; i < 2; i++)
        add_pulse(x + apart[i] * n, n, 15000.0, 2.0, 30.0);
    for (int i = 0; i < 2; i++)
        add_pulse(x + top[i] * n, n, 24003.0 - 3.0 * i, 2.0, 30.0);
    int64_t nc;
    ddtk_sps_cand *c = search(x, ndm, n, NULL, 1000, &par, &nc);
    CHECK(nc == 4);
    if (nc == 4) {
        CHECK(fabs(c[0].sample - 6000.0) <= 2 && c[0].members >= 3);
        CHECK(fabs(c[1].sample - 15000.0) <= 2 && fabs(c[2].sample - 15000.0) <= 2);
        CHECK(c[1].dm_index != c[2].dm_index);
        CHECK(fabs(c[3].sample - 24001.5) <= 3 && c[3].members >= 2);
    }
    free(c);
    free(x);
}

/* A series of 50 samples, and one whose pulse is in its last 20 samples. */
static void test_short(void)
{
    float x[50];
    ddtk_sps_params par;
    ddtk_sps_params_init(&par);
    par.max_width = 8;
    noise(x, 50, 5.0);
    add_pulse(x, 50, 43.5, 1.0, 20.0);
    int64_t nc;
    ddtk_sps_cand *c = search(x, 1, 50, NULL, 7, &par, &nc);
    CHECK(nc == 1);
    CHECK(nc == 1 && c[0].sample == 43);
    free(c);
}

/*
 * Pure noise: giants of a boxcar of width w are upcrossings of the threshold
 * s. For w = 1 the samples are independent: at most n Q(s) runs. For w >= 2
 * the boxcar steps by the difference of two samples (variance 2/w), and
 * Rice's formula gives n phi(s) / sqrt(pi w) upcrossings, summed over the
 * widths 2, 3, 4, 6, 8 .... Candidates (after
 * clustering) can only be fewer; the test allows the bound plus 3 of its
 * Poisson sigmas.
 */
static void test_noise(void)
{
    const int64_t n = 200000;
    const double s = 4.0;
    float *x = malloc(n * sizeof *x);
    ddtk_sps_params par;
    ddtk_sps_params_init(&par);
    par.snr = s;
    par.max_width = 64;
    noise(x, n, 0.0);
    double phi = exp(-0.5 * s * s) / sqrt(2 * M_PI), bound = n * 0.5 * erfc(s / M_SQRT2);
    for (int w = 2; w <= par.max_width; w *= 2)
        bound += n * phi / sqrt(M_PI * w) + (w >= 4 ? n * phi / sqrt(M_PI * w * 0.75) : 0);
    int64_t nc;
    ddtk_sps_cand *c = search(x, 1, n, NULL, 0, &par, &nc);
    fprintf(stderr, "noise: %lld candidates above S/N %g in %lld samples, bound %.1f\n",
            (long long)nc, s, (long long)n, bound);
    CHECK(nc <= bound + 3 * sqrt(bound));
    CHECK(nc > 0);                /* the bound is not vacuous: noise does cross 4 sigma */
    free(c);
    par.snr = 6.0;
    c = search(x, 1, n, NULL, 0, &par, &nc);
    CHECK(nc == 0);
    free(c);
    free(x);
}

/* The threshold is exact: a noise peak's own S/N as the threshold finds it
 * (S/N >= thr), and the next float above it does not; for the brightest
 * peak of each width range (the narrowest boxcars to the widest), which
 * the search's quick test of each boxcar must not drop. */
static void test_threshold(void)
{
    const int64_t n = 100000;
    float *x = malloc(n * sizeof *x);
    ddtk_sps_params par;
    ddtk_sps_params_init(&par);
    noise(x, n, 50.0);
    const int widths[] = { 1, 8, 1024 };
    for (int i = 0; i < 3; i++) {
        par.max_width = widths[i];
        par.snr = 3.0;
        int64_t nc, na, nb;
        ddtk_sps_cand *c = search(x, 1, n, NULL, n, &par, &nc);
        double top = 0;
        for (int64_t j = 0; j < nc; j++)
            top = c[j].snr > top ? c[j].snr : top;
        par.snr = top;
        ddtk_sps_cand *a = search(x, 1, n, NULL, n, &par, &na);
        par.snr = nextafterf((float)top, INFINITY);
        ddtk_sps_cand *b = search(x, 1, n, NULL, n, &par, &nb);
        CHECK(nc > 1 && top > 3.0);
        CHECK(na == 1 && a[0].snr == top);
        CHECK(nb == 0);
        free(a);
        free(b);
        free(c);
    }
    free(x);
}

/* A series downsampled by 4: its samples and widths count finest samples. */
static void test_downsampled(void)
{
    const int64_t n = 10000;
    float *x = malloc(n * sizeof *x);
    int f = 4;
    ddtk_sps_params par;
    ddtk_sps_params_init(&par);
    noise(x, n, 0.0);
    add_pulse(x, n, 5000.5, 1.0, 30.0);
    int64_t nc;
    ddtk_sps_cand *c = search(x, 1, n, &f, 333, &par, &nc);
    CHECK(nc == 1);
    if (nc == 1) {
        CHECK(c[0].width >= 4 && c[0].width % 4 == 0);
        CHECK(labs((long)(c[0].sample - 4 * 5000)) <= 4);
        CHECK(fabs(c[0].time - c[0].sample * 1e-3) < 1e-9);
    }
    free(c);
    free(x);
}

static void test_file(void)
{
    /* Every width searched up to 2^24 survives the round trip. */
    ddtk_sps_cand c[3] = {
        { 12.5, 1000, 1.0, 12, 7, 475.5, 12, 990, 1010 },
        { 8.25, 50000, 50.0, 1, 0, 0.0, 1, 50000, 50000 },
        { 7.0, 9, 0.5, 3 << 23, 1, 10.0, 2, 0, 9 },
    };
    FILE *fp = tmpfile();
    CHECK(ddtk_sps_write_heimdall(fp, c, 3) == 0);
    rewind(fp);
    ddtk_sps_cand *r;
    int64_t n;
    CHECK(ddtk_sps_read_heimdall(fp, "tmp", &r, &n) == 0);
    CHECK(n == 3 && same(r, n, c, 3));
    free(r);
    for (int64_t w = 1; w <= (1 << 24); w *= 2) {
        int64_t ws[2] = { w, w >= 4 ? w / 4 * 3 : w };
        for (int i = 0; i < 2; i++) {
            c[0].width = ws[i];
            rewind(fp);
            CHECK(ftruncate(fileno(fp), 0) == 0);
            CHECK(ddtk_sps_write_heimdall(fp, c, 1) == 0);
            rewind(fp);
            CHECK(ddtk_sps_read_heimdall(fp, "tmp", &r, &n) == 0);
            CHECK(n == 1 && r[0].width == ws[i]);
            free(r);
        }
    }
    fclose(fp);
    fp = tmpfile();
    fputs("12 13 14\n", fp);
    rewind(fp);
    CHECK(ddtk_sps_read_heimdall(fp, "bad.cand", &r, &n) == DDTK_EDATA);
    CHECK(strstr(ddtk_errmsg(), "bad.cand") && strstr(ddtk_errmsg(), "line 1"));
    fclose(fp);
}

static void test_bad(void)
{
    ddtk_sps *s;
    ddtk_sps_params par;
    double dm = 0;
    int f = 3;
    ddtk_sps_params_init(&par);
    par.max_width = 12;
    CHECK(ddtk_sps_create(&s, &par, 1, &dm, NULL, 1e-3) == DDTK_EUSAGE);
    par.max_width = 16;
    CHECK(ddtk_sps_create(&s, &par, 1, &dm, &f, 1e-3) == DDTK_EUSAGE);
    par.snr = 0;
    CHECK(ddtk_sps_create(&s, &par, 1, &dm, NULL, 1e-3) == DDTK_EUSAGE);
    /* samples after a series' end */
    float x[100] = { 0 };
    ddtk_sps_params_init(&par);
    CHECK(ddtk_sps_create(&s, &par, 1, &dm, NULL, 1e-3) == 0);
    CHECK(ddtk_sps_feed(s, 0, x, 100) == 0);
    CHECK(ddtk_sps_end(s, 0) == 0);
    CHECK(ddtk_sps_end(s, 0) == 0);
    CHECK(ddtk_sps_feed(s, 0, x, 100) == DDTK_EUSAGE);
    CHECK(strstr(ddtk_errmsg(), "after its end") != NULL);
    ddtk_sps_destroy(s);
}

int main(void)
{
    test_pulses();
    test_cluster();
    test_cluster_dm_reach();
    test_short();
    test_noise();
    test_threshold();
    test_downsampled();
    test_file();
    test_bad();
    return check_result();
}
