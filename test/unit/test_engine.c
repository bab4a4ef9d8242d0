/*
 * test_engine.c - the in-memory plan API: plans built from arrays, executed
 * on blocks of 1/2/4/8-bit samples in memory, checked against the
 * independent reference (test/helpers/ddref.h) sample for sample; gulps,
 * repeated executes, the time-scrunch cascade, errors (those of worker
 * threads too); and the GPU against
 * the CPU where a GPU is usable.
 */
#include "engine.h"
#include "cli.h"
#include "check.h"
#include "../helpers/ddref.h"

#include <string.h>

#define NCHANS 64
#define NSAMP 6000
#define TSAMP 0.000256
#define FCH1 1500.0

static const double dms[] = { 0.0, 13.7, 60.0, 97.25 };
#define NDM 4

/* Integer samples 0 .. 2^nbits - 1 with a dispersed pulse, one per byte. */
static void make_values(uint8_t *v, int nbits, unsigned seed)
{
    unsigned x = seed;
    for (size_t i = 0; i < (size_t)NSAMP * NCHANS; i++) {
        x = x * 1103515245u + 12345u;
        v[i] = (uint8_t)((x >> 16) & ((1u << nbits) - 1));
    }
}

/* SIGPROC packing: low bits first, a bit stream across spectra. */
static void pack(const uint8_t *v, int nbits, uint8_t *raw)
{
    size_t n = (size_t)NSAMP * NCHANS;
    memset(raw, 0, (n * (size_t)nbits + 7) / 8);
    for (size_t i = 0; i < n; i++)
        raw[i * (size_t)nbits / 8] |= (uint8_t)(v[i] << (i * (size_t)nbits % 8));
}

static void freqs_of(double *f, double foff)
{
    for (int c = 0; c < NCHANS; c++)
        f[c] = FCH1 + c * foff;
}

static void desc_of(ddtk_plan_desc *d, const double *freqs, int nbits, int backend)
{
    ddtk_plan_desc_init(d);
    d->nchans = NCHANS;
    d->tsamp = TSAMP;
    d->freqs = freqs;
    d->nbits = nbits;
    d->dms = dms;
    d->ndm = NDM;
    d->backend = backend;
    d->quiet = 1;
}

static float *run(const ddtk_plan_desc *d, const void *raw, int64_t nsamp, int64_t *nout)
{
    ddtk_plan *p;
    float *out = NULL;
    CHECK(ddtk_plan_create(&p, d) == DDTK_OK);
    if (!p)
        return NULL;
    *nout = ddtk_plan_nout(p, 0, nsamp);
    out = calloc((size_t)NDM * NSAMP, sizeof *out);
    CHECK(ddtk_plan_execute(p, nsamp, raw, d->nbits, out, NSAMP, 32) == DDTK_OK);
    ddtk_plan_destroy(p);
    return out;
}

/* Every nbits and both band orders, with killed channels: equal to ddref. */
static void test_reference(int nbits, double foff, int killing)
{
    uint8_t *v = malloc((size_t)NSAMP * NCHANS), *raw = malloc((size_t)NSAMP * NCHANS);
    uint8_t kill[NCHANS] = { 0 };
    char killed[NCHANS] = { 0 };
    double freqs[NCHANS];
    float ref[NSAMP];
    int64_t nout = 0;
    ddtk_plan_desc d;
    make_values(v, nbits, 7u + (unsigned)nbits);
    pack(v, nbits, raw);
    freqs_of(freqs, foff);
    desc_of(&d, freqs, nbits, DDTK_BACKEND_CPU);
    if (killing)
        for (int c = 3; c < NCHANS; c += 7)
            kill[c] = 1, killed[c] = 1;
    d.kill = killing ? kill : NULL;
    float *out = run(&d, nbits == 8 ? v : raw, NSAMP, &nout);
    for (int i = 0; out && i < NDM; i++) {
        size_t n = ddref_series(v, NSAMP, NCHANS, FCH1, foff, TSAMP, dms[i], 0, killed, ref);
        CHECK((int64_t)n >= nout);
        CHECK(memcmp(out + (size_t)i * NSAMP, ref, (size_t)nout * sizeof *ref) == 0);
    }
    free(out);
    free(v);
    free(raw);
}

/* One plan, several executes: repeatable, and a shorter block gives a prefix. */
static void test_repeat_and_gulps(void)
{
    uint8_t *v = malloc((size_t)NSAMP * NCHANS);
    double freqs[NCHANS];
    ddtk_plan_desc d;
    ddtk_plan *p, *q;
    make_values(v, 8, 3);
    freqs_of(freqs, -1.0);
    desc_of(&d, freqs, 8, DDTK_BACKEND_CPU);
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    d.gulp = 64;
    CHECK(ddtk_plan_create(&q, &d) == DDTK_OK);
    float *a = calloc((size_t)NDM * NSAMP, sizeof *a), *b = calloc((size_t)NDM * NSAMP, sizeof *b);
    float *c = calloc((size_t)NDM * NSAMP, sizeof *c), *g = calloc((size_t)NDM * NSAMP, sizeof *g);
    int64_t n = ddtk_plan_nout(p, 0, NSAMP), m = ddtk_plan_nout(p, 0, NSAMP / 2);
    CHECK(n == NSAMP - ddtk_plan_max_delay(p));
    CHECK(ddtk_plan_execute(p, NSAMP, v, 8, a, NSAMP, 32) == DDTK_OK);
    CHECK(ddtk_plan_execute(p, NSAMP / 2, v, 8, b, NSAMP, 32) == DDTK_OK);
    CHECK(ddtk_plan_execute(p, NSAMP, v, 8, c, NSAMP, 32) == DDTK_OK);
    CHECK(ddtk_plan_execute(q, NSAMP, v, 8, g, NSAMP, 32) == DDTK_OK);
    for (int i = 0; i < NDM; i++) {
        CHECK(memcmp(a + (size_t)i * NSAMP, c + (size_t)i * NSAMP, (size_t)n * 4) == 0);
        CHECK(memcmp(a + (size_t)i * NSAMP, g + (size_t)i * NSAMP, (size_t)n * 4) == 0);
        CHECK(memcmp(a + (size_t)i * NSAMP, b + (size_t)i * NSAMP, (size_t)m * 4) == 0);
    }
    ddtk_plan_destroy(p);
    ddtk_plan_destroy(q);
    free(a), free(b), free(c), free(g), free(v);
}

/* A DM at factor 2 equals the unscrunched plan on a block halved by hand. */
static void test_scrunch_cascade(void)
{
    uint8_t *v = malloc((size_t)NSAMP * NCHANS);
    float *half = malloc((size_t)NSAMP / 2 * NCHANS * sizeof *half);
    double freqs[NCHANS];
    const int ds[NDM] = { 1, 2, 2, 4 };
    ddtk_plan_desc d;
    ddtk_plan *p, *h;
    make_values(v, 8, 11);
    for (int t = 0; t < NSAMP / 2; t++)
        for (int c = 0; c < NCHANS; c++)
            half[(size_t)t * NCHANS + c] = (float)v[(size_t)(2 * t) * NCHANS + c]
                                         + (float)v[(size_t)(2 * t + 1) * NCHANS + c];
    freqs_of(freqs, -1.0);
    desc_of(&d, freqs, 8, DDTK_BACKEND_CPU);
    d.downsamp = ds;
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    desc_of(&d, freqs, 32, DDTK_BACKEND_CPU);
    d.tsamp = 2 * TSAMP;
    CHECK(ddtk_plan_create(&h, &d) == DDTK_OK);
    float *a = calloc((size_t)NDM * NSAMP, sizeof *a), *b = calloc((size_t)NDM * NSAMP, sizeof *b);
    CHECK(ddtk_plan_execute(p, NSAMP, v, 8, a, NSAMP, 32) == DDTK_OK);
    CHECK(ddtk_plan_execute(h, NSAMP / 2, half, 32, b, NSAMP, 32) == DDTK_OK);
    for (int i = 1; i <= 2; i++) {
        int64_t n = ddtk_plan_nout(p, i, NSAMP), m = ddtk_plan_nout(h, i, NSAMP / 2);
        n = m < n ? m : n;
        CHECK(n > 1000);
        CHECK(memcmp(a + (size_t)i * NSAMP, b + (size_t)i * NSAMP, (size_t)n * 4) == 0);
    }
    ddtk_plan_destroy(p);
    ddtk_plan_destroy(h);
    free(a), free(b), free(v), free(half);
}

static void test_errors(void)
{
    uint8_t *v = calloc((size_t)NSAMP * NCHANS, 1);
    double freqs[NCHANS];
    float *out = calloc((size_t)NDM * NSAMP, sizeof *out);
    ddtk_plan_desc d;
    ddtk_plan *p;
    freqs_of(freqs, -1.0);
    desc_of(&d, freqs, 8, DDTK_BACKEND_CPU);
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    int64_t short_block = ddtk_plan_max_delay(p);
    CHECK(ddtk_plan_execute(p, short_block, v, 8, out, NSAMP, 32) == DDTK_EDATA);
    CHECK(strstr(ddtk_errmsg(), "maximum delay") != NULL);
    CHECK(ddtk_plan_execute(p, NSAMP, v, 4, out, NSAMP, 32) == DDTK_EUSAGE);
    CHECK(ddtk_plan_execute(p, NSAMP, v, 8, out, NSAMP, 8) == DDTK_EUSAGE);
    CHECK(ddtk_plan_execute(p, NSAMP, v, 8, out, 10, 32) == DDTK_EUSAGE);
    CHECK(ddtk_plan_execute(p, NSAMP, v, 8, out, NSAMP, 32) == DDTK_OK);
    ddtk_plan_destroy(p);
    freqs[5] = 0.0;
    CHECK(ddtk_plan_create(&p, &d) == DDTK_EDATA && !p);
    CHECK(strstr(ddtk_errmsg(), "channel 5") != NULL);
    free(v), free(out);
}

/* A failure on worker threads reaches the reporting thread with its own
 * message; of several, the lowest job's (GPU set-up, fdas batches, writer). */
static void test_thread_error(void)
{
    ddtk_thread_error e;
    ddtk_thread_error_init(&e);
#pragma omp parallel for num_threads(4) schedule(dynamic, 1)
    for (int i = 0; i < 64; i++) {
        if (i == 40 || i == 17 || i == 55)
            ddtk_thread_error_keep(&e, i, ddtk_fail(i == 17 ? DDTK_EDATA : DDTK_ESYS,
                                                    "job %d failed", i));
    }
    CHECK(ddtk_thread_error_code(&e) == DDTK_EDATA);
    ddtk_fail(DDTK_EUSAGE, "an older message of this thread");
    CHECK(ddtk_thread_error_end(&e) == DDTK_EDATA);
    CHECK(strcmp(ddtk_errmsg(), "job 17 failed") == 0);
    ddtk_thread_error_init(&e);
    CHECK(ddtk_thread_error_code(&e) == DDTK_OK);
    CHECK(ddtk_thread_error_end(&e) == DDTK_OK);
}

/* The GPU gives the CPU's bytes for integer input, scrunched too. */
static void test_gpu(void)
{
    char name[256], why[256];
    if (!ddtk_gpu_usable(0, name, sizeof name, why, sizeof why)) {
        fprintf(stderr, "skip GPU against CPU: %s\n", why);
        return;
    }
    const int ds[NDM] = { 1, 1, 2, 4 };
    uint8_t *v = malloc((size_t)NSAMP * NCHANS), *raw = malloc((size_t)NSAMP * NCHANS);
    double freqs[NCHANS];
    int64_t n;
    freqs_of(freqs, -1.0);
    for (int nbits = 1; nbits <= 8; nbits *= 2) {
        ddtk_plan_desc d;
        make_values(v, nbits, 5);
        pack(v, nbits, raw);
        for (int scrunch = 0; scrunch < 2; scrunch++) {
            desc_of(&d, freqs, nbits, DDTK_BACKEND_CPU);
            d.downsamp = scrunch ? ds : NULL;
            float *c = run(&d, raw, NSAMP, &n);
            d.backend = DDTK_BACKEND_GPU;
            d.gulp = 1024;
            float *g = run(&d, raw, NSAMP, &n);
            CHECK(c && g && memcmp(c, g, (size_t)NDM * NSAMP * sizeof *c) == 0);
            free(c), free(g);
        }
    }
    free(v), free(raw);
}

/* Environment knobs and configuration fields: one validated range each. */
static void test_ranges(void)
{
    int64_t mib = -1;
    setenv("DDTK_TEST_MIB", "", 1);
    CHECK(ddtk_env_mib("DDTK_TEST_MIB", &mib) == DDTK_OK && mib == 0);
    setenv("DDTK_TEST_MIB", "512", 1);
    CHECK(ddtk_env_mib("DDTK_TEST_MIB", &mib) == DDTK_OK && mib == 512 << 20);
    const char *bad[] = { "1e300", "nan", "-5", "0", "12x", "inf" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("DDTK_TEST_MIB", bad[i], 1);
        CHECK(ddtk_env_mib("DDTK_TEST_MIB", &mib) == DDTK_EUSAGE);
        CHECK(strstr(ddtk_errmsg(), "DDTK_TEST_MIB") != NULL);
    }
    unsetenv("DDTK_TEST_MIB");
    ddtk_cpu_config c = { 1024, 64, 32 };
    ddtk_gpu_config g = { -1, 5 };
    CHECK(ddtk_config_check(&c, &g) == DDTK_OK);
    c.chan_block = 2147483647;
    CHECK(ddtk_config_check(&c, NULL) == DDTK_EUSAGE);
    CHECK(strstr(ddtk_errmsg(), "cpu chans 2147483647: expected 0 to 4096") != NULL);
    g.lane_variant = -2;
    CHECK(ddtk_config_check(NULL, &g) == DDTK_EUSAGE);
}

int main(void)
{
    for (int nbits = 1; nbits <= 8; nbits *= 2) {
        test_reference(nbits, -1.0, 0);
        test_reference(nbits, +1.0, 1);
    }
    test_repeat_and_gulps();
    test_scrunch_cascade();
    test_errors();
    test_thread_error();
    test_gpu();
    test_ranges();
    return check_result();
}
