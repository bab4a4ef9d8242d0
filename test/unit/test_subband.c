/*
 * test_subband.c - the sub-band plug-in through the in-memory plan API:
 * exact where the algorithm is (N'DM = 1, one channel per sub-band) against
 * the direct plan and the independent reference (test/helpers/ddref.h), both
 * band orders and killed channels; the budget's choice and its report
 * (ddtk_plan_subband_info); plan errors; repeated executes with gulps.
 */
#include "engine.h"
#include "check.h"
#include "../helpers/ddref.h"

#include <string.h>

#define NCHANS 64
#define NSAMP 8000
#define TSAMP 0.000256
#define FCH1 1500.0
#define NDM 40

static double dms[NDM];

static void fill(uint8_t *v, unsigned seed)
{
    unsigned x = seed;
    for (size_t i = 0; i < (size_t)NSAMP * NCHANS; i++) {
        x = x * 1103515245u + 12345u;
        v[i] = (uint8_t)(x >> 16);
    }
}

static void desc_of(ddtk_plan_desc *d, const double *freqs, const char *algorithm)
{
    ddtk_plan_desc_init(d);
    d->nchans = NCHANS;
    d->tsamp = TSAMP;
    d->freqs = freqs;
    d->nbits = 8;
    d->dms = dms;
    d->ndm = NDM;
    d->backend = DDTK_BACKEND_CPU;
    CHECK(ddtk_plan_desc_set_algorithm(d, algorithm) == DDTK_OK);
    d->quiet = 1;
}

static float *run(const ddtk_plan_desc *d, const uint8_t *raw, int64_t *nout)
{
    ddtk_plan *p;
    float *out = calloc((size_t)NDM * NSAMP, sizeof *out);
    CHECK(ddtk_plan_create(&p, d) == DDTK_OK);
    if (!p)
        return out;
    *nout = ddtk_plan_nout(p, 0, NSAMP);
    CHECK(ddtk_plan_execute(p, NSAMP, raw, 8, out, NSAMP, 32) == DDTK_OK);
    ddtk_plan_destroy(p);
    return out;
}

/* N'DM = 1 and nsub = nchans are exact: equal to direct and to ddref. */
static void test_exact(double foff, int killing)
{
    uint8_t *raw = malloc((size_t)NSAMP * NCHANS), kill[NCHANS] = { 0 };
    char killed[NCHANS] = { 0 };
    double freqs[NCHANS];
    for (int c = 0; c < NCHANS; c++) {
        freqs[c] = FCH1 + c * foff;
        killed[c] = kill[c] = killing && (c % 7 == 3);
    }
    fill(raw, 11);
    ddtk_plan_desc d;
    desc_of(&d, freqs, "direct");
    d.kill = kill;
    int64_t n0 = 0, n1 = 0, n2 = 0;
    float *direct = run(&d, raw, &n0);
    CHECK(ddtk_plan_desc_set_algorithm(&d, "subband") == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&d, "dm_group", 1) == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&d, "nsub", 5) == DDTK_OK);
    float *g1 = run(&d, raw, &n1);
    CHECK(ddtk_plan_desc_set_param(&d, "dm_group", 6) == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&d, "nsub", NCHANS - (killing ? 10 : 0)) == DDTK_OK);
    float *nn = run(&d, raw, &n2);
    CHECK(n0 > 1000 && n1 == n0 && n2 == n0);
    float *ref = malloc(NSAMP * sizeof *ref);
    for (int i = 0; i < NDM; i++) {
        CHECK(memcmp(direct + (size_t)i * NSAMP, g1 + (size_t)i * NSAMP, (size_t)n0 * 4) == 0);
        CHECK(memcmp(direct + (size_t)i * NSAMP, nn + (size_t)i * NSAMP, (size_t)n0 * 4) == 0);
        size_t m = ddref_series(raw, NSAMP, NCHANS, FCH1, foff, TSAMP, dms[i], 0, killed, ref);
        CHECK(m >= (size_t)n0 && memcmp(ref, g1 + (size_t)i * NSAMP, (size_t)n0 * 4) == 0);
    }
    free(raw);
    free(direct);
    free(g1);
    free(nn);
    free(ref);
}

/* The default budget: some grouping, the bound kept, less work than direct. */
static void test_budget(void)
{
    double freqs[NCHANS];
    for (int c = 0; c < NCHANS; c++)
        freqs[c] = FCH1 - 4.0 * c;
    ddtk_plan_desc d;
    desc_of(&d, freqs, "subband");
    ddtk_plan *p;
    ddtk_subband_info in;
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    CHECK(ddtk_plan_subband_info(p, &in) == DDTK_OK);
    CHECK(in.nsub >= 1 && in.nsub <= NCHANS && in.dm_group > 1);
    CHECK(in.max_ratio > 0 && in.max_ratio <= 0.1);
    CHECK(in.work_ratio > 1.5);
    CHECK(in.nnominal == (NDM + in.dm_group - 1) / in.dm_group);
    ddtk_plan_destroy(p);
    CHECK(ddtk_plan_desc_set_param(&d, "max_smear_ratio", 0.01) == DDTK_OK);
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    ddtk_subband_info tight;
    CHECK(ddtk_plan_subband_info(p, &tight) == DDTK_OK);
    CHECK(tight.max_ratio <= 0.01 && tight.work_ratio < in.work_ratio);
    ddtk_plan_destroy(p);
}

static void test_errors(void)
{
    double freqs[NCHANS];
    for (int c = 0; c < NCHANS; c++)
        freqs[c] = FCH1 - c;
    ddtk_plan_desc d;
    ddtk_plan *p;
    desc_of(&d, freqs, "subband");
    CHECK(ddtk_plan_desc_set_param(&d, "nsub", NCHANS + 1) == DDTK_OK);
    CHECK(ddtk_plan_create(&p, &d) == DDTK_EUSAGE && !p);
    CHECK(ddtk_plan_desc_set_param(&d, "nsub", 8) == DDTK_OK);
    /* Out of the parameter's range: refused when set, and in a description
     * filled by hand, when the plan is made. */
    CHECK(ddtk_plan_desc_set_param(&d, "dm_group", -1) == DDTK_EUSAGE);
    CHECK(strstr(ddtk_errmsg(), "dm_group") && strstr(ddtk_errmsg(), "from 1 to"));
    d.param[1] = 0;
    d.param_set |= 2;
    CHECK(ddtk_plan_create(&p, &d) == DDTK_EUSAGE && !p);
    CHECK(ddtk_plan_desc_set_param(&d, "dm_group", 2.5) == DDTK_EUSAGE);
    CHECK(ddtk_plan_desc_set_param(&d, "max_smear_ratio", 0) == DDTK_EUSAGE);
    CHECK(ddtk_plan_desc_set_param(&d, "tree_chans", 4) == DDTK_EUSAGE);
    CHECK(ddtk_plan_desc_set_algorithm(&d, "fast") == DDTK_EUSAGE);
    CHECK(strstr(ddtk_errmsg(), "direct, subband, tree or fdmt"));
    CHECK(ddtk_plan_desc_set_algorithm(&d, "subband") == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&d, "dm_group", 4) == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&d, "sub_dm", 30) == DDTK_OK);
    CHECK(ddtk_plan_create(&p, &d) == DDTK_EUSAGE && !p);
    desc_of(&d, freqs, "direct");
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    ddtk_subband_info in;
    CHECK(ddtk_plan_subband_info(p, &in) == DDTK_EUSAGE);
    ddtk_plan_destroy(p);
}

/* The parameters by name: introspection, per-DM values equal to the same
 * scalar, getting a default, and an algorithm's own DM list. */
static void test_params(void)
{
    double freqs[NCHANS], v;
    for (int c = 0; c < NCHANS; c++)
        freqs[c] = FCH1 - c;
    uint8_t *raw = malloc((size_t)NSAMP * NCHANS);
    fill(raw, 5);
    ddtk_param_info pi;
    int n = 0;
    while (ddtk_algorithm_param("subband", n, &pi) == DDTK_OK)
        n++;
    CHECK(n == 4 && ddtk_algorithm_param("subband", 1, &pi) == DDTK_OK
          && strcmp(pi.name, "dm_group") == 0 && pi.per_dm && pi.lo == 1);
    CHECK(ddtk_algorithm_param("direct", 0, &pi) == DDTK_EUSAGE);
    CHECK(ddtk_algorithm(0) && strcmp(ddtk_algorithm(0), "direct") == 0 && !ddtk_algorithm(9));
    ddtk_plan_desc d;
    desc_of(&d, freqs, "subband");
    CHECK(ddtk_plan_desc_get_param(&d, "max_smear_ratio", &v) == DDTK_OK && v == 0.1);
    CHECK(ddtk_plan_desc_set_param(&d, "nsub", 8) == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&d, "dm_group", 3) == DDTK_OK);
    int64_t n1 = 0, n2 = 0;
    float *scalar = run(&d, raw, &n1);
    int per[NDM];
    for (int i = 0; i < NDM; i++)
        per[i] = 3;
    desc_of(&d, freqs, "subband");
    CHECK(ddtk_plan_desc_set_param(&d, "nsub", 8) == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param_per_dm(&d, "dm_group", per) == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param_per_dm(&d, "nsub", per) == DDTK_EUSAGE);
    float *perdm = run(&d, raw, &n2);
    CHECK(n1 > 1000 && n1 == n2 && memcmp(scalar, perdm, (size_t)NDM * NSAMP * 4) == 0);
    per[7] = 0;                   /* out of range: refused when the plan is made */
    ddtk_plan *p;
    CHECK(ddtk_plan_create(&p, &d) == DDTK_EUSAGE && !p);
    double *dms;
    int *ds, ndm;
    CHECK(ddtk_plan_desc_own_dms(&d, 0, 100, 40e-6, 1, &dms, &ds, &ndm) == DDTK_EUSAGE);
    CHECK(ddtk_plan_desc_set_algorithm(&d, "tree") == DDTK_OK);
    CHECK(ddtk_plan_desc_own_dms(&d, 0, 100, 40e-6, 1, &dms, &ds, &ndm) == DDTK_OK);
    CHECK(ndm > 10 && dms[0] == 0 && dms[ndm - 1] <= 100);
    CHECK(ddtk_plan_desc_get_param(&d, "sub_chans", &v) == DDTK_OK && v >= 1);
    free(dms);
    free(ds);
    free(scalar);
    free(perdm);
    free(raw);
}

int main(void)
{
    for (int i = 0; i < NDM; i++)
        dms[i] = 2.5 * i;
    test_exact(-1.0, 0);
    test_exact(+1.0, 1);
    test_budget();
    test_errors();
    test_params();
    return check_result();
}
