/*
 * test_fdas - fdas search on synthetic series held in memory: a sinusoid and a
 * 10%-duty pulsar at z in {-150, -40, 0, 40, 150} are found at the injected
 * fundamental (|dr| <= 1, |dz| <= 2), with both interpolation schemes;
 * (red-noise whitening by running medians takes part of the power of a
 * strong, widely drifting signal, as in PRESTO, so sigma > 4 is asked); harmonic
 * summing raises the pulsar's sigma; noise alone stays below sigma 6;
 * bad plans are refused with the right codes.
 */
#include "fdas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N (1 << 16)
#define TSAMP 1e-3
#define R0 3000.3

static int failures;

static void check(int ok, const char *fmt, double a, double b, double c)
{
    if (!ok) {
        printf("FAIL ");
        printf(fmt, a, b, c);
        printf("\n");
        failures++;
    }
}

static uint64_t rng_state;

static double gauss(void)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        u[i] = ((rng_state >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2 * log(u[0])) * cos(2 * M_PI * u[1]);
}

/* Noise plus a signal whose frequency drifts by z bins; pulsar: 10% FWHM pulses. */
static void make_series(float *x, double z, int pulsar, double amp, uint64_t seed)
{
    double T = N * TSAMP, f0 = R0 / T, fdot = z / (T * T), sig = 0.1 / 2.354820045;
    rng_state = seed * 2654435761u + 88172645463325252ull;
    for (int i = 0; i < N; i++) {
        double t = i * TSAMP, ph = f0 * t + 0.5 * fdot * t * t, s;
        if (pulsar) {
            double d = ph - floor(ph + 0.5);
            s = amp * exp(-0.5 * d * d / (sig * sig));
        } else
            s = amp * cos(2 * M_PI * ph);
        x[i] = (float)(s + gauss());
    }
}

static const ddtk_fdas_cand *top(ddtk_fdas_plan *plan, const float *x, int *n)
{
    if (ddtk_fdas_execute(plan, x)) {
        printf("FAIL execute: %s\n", ddtk_errmsg());
        failures++;
        *n = 0;
        return NULL;
    }
    return ddtk_fdas_candidates(plan, n);
}

static void recovery(int interp)
{
    static const double zs[] = { -150, -40, 0, 40, 150 };
    ddtk_fdas_config cfg;
    ddtk_fdas_config_init(&cfg);
    cfg.interp = interp;
    cfg.backend = DDTK_BACKEND_CPU;
    ddtk_fdas_plan *plan;
    if (ddtk_fdas_plan_create(&plan, N, TSAMP, &cfg)) {
        printf("FAIL plan: %s\n", ddtk_errmsg());
        failures++;
        return;
    }
    float *x = malloc(sizeof(float) * N);
    for (int pulsar = 0; pulsar < 2; pulsar++)
        for (int i = 0; i < 5; i++) {
            int n;
            make_series(x, zs[i], pulsar, pulsar ? 0.4 : 0.1, 7 + i);
            const ddtk_fdas_cand *c = top(plan, x, &n);
            double want_r = R0 + zs[i] / 2;
            if (!n) {
                check(0, "no candidate for z %g pulsar %g interp %g", zs[i], pulsar, interp);
                continue;
            }
            check(fabs(c[0].r - want_r) <= 1.0, "r %g want %g (z %g)", c[0].r, want_r, zs[i]);
            check(fabs(c[0].z - zs[i]) <= 2.0, "z %g want %g (sigma %g)", c[0].z, zs[i],
                  c[0].sigma);
            check(c[0].sigma > 4, "sigma %g too low (z %g, numharm %g)", c[0].sigma, zs[i],
                  c[0].numharm);
        }
    free(x);
    ddtk_fdas_plan_destroy(plan);
}

static double best_sigma(int numharm, const float *x, int *nh)
{
    ddtk_fdas_config cfg;
    ddtk_fdas_config_init(&cfg);
    cfg.numharm = numharm;
    cfg.backend = DDTK_BACKEND_CPU;
    ddtk_fdas_plan *plan;
    int n;
    if (ddtk_fdas_plan_create(&plan, N, TSAMP, &cfg))
        return -1;
    const ddtk_fdas_cand *c = top(plan, x, &n);
    double s = n ? c[0].sigma : -1;
    *nh = n ? c[0].numharm : 0;
    ddtk_fdas_plan_destroy(plan);
    return s;
}

static void harmonic_gain(void)
{
    float *x = malloc(sizeof(float) * N);
    int nh1, nh8;
    make_series(x, 0, 1, 0.25, 99);
    double s1 = best_sigma(1, x, &nh1), s8 = best_sigma(8, x, &nh8);
    check(s8 > s1 + 1, "harmonic summing sigma %g not above single-harmonic %g (numharm %g)",
          s8, s1, nh8);
    free(x);
}

static void noise_only(void)
{
    ddtk_fdas_config cfg;
    ddtk_fdas_config_init(&cfg);
    cfg.backend = DDTK_BACKEND_CPU;
    ddtk_fdas_plan *plan;
    float *x = malloc(sizeof(float) * N);
    if (ddtk_fdas_plan_create(&plan, N, TSAMP, &cfg))
        return;
    for (int seed = 1; seed <= 4; seed++) {
        int n;
        make_series(x, 0, 0, 0.0, 1000 + seed);
        const ddtk_fdas_cand *c = top(plan, x, &n);
        check(n == 0 || c[0].sigma < 6.0, "noise seed %g gave sigma %g (%g cands)", seed,
              n ? c[0].sigma : 0, n);
    }
    free(x);
    ddtk_fdas_plan_destroy(plan);
}

static void bad_plans(void)
{
    ddtk_fdas_config cfg;
    ddtk_fdas_plan *plan;
    ddtk_fdas_config_init(&cfg);
    check(ddtk_fdas_plan_create(&plan, 1001, 1e-3, &cfg) == DDTK_EDATA, "odd length %g%g%g", 0, 0, 0);
    check(ddtk_fdas_plan_create(&plan, 0, 1e-3, &cfg) == DDTK_EDATA, "empty %g%g%g", 0, 0, 0);
    check(ddtk_fdas_plan_create(&plan, 4096, 0, &cfg) == DDTK_EDATA, "tsamp 0 %g%g%g", 0, 0, 0);
    cfg.numharm = 3;
    check(ddtk_fdas_plan_create(&plan, 4096, 1e-3, &cfg) == DDTK_EUSAGE, "numharm 3 %g%g%g", 0, 0, 0);
    cfg.numharm = 8;
    cfg.zmax = -2;
    check(ddtk_fdas_plan_create(&plan, 4096, 1e-3, &cfg) == DDTK_EUSAGE, "zmax<0 %g%g%g", 0, 0, 0);
}

int main(void)
{
    recovery(DDTK_FDAS_EXACT);
    recovery(DDTK_FDAS_INTERBIN);
    harmonic_gain();
    noise_only();
    bad_plans();
    if (failures)
        printf("%d failures\n", failures);
    return failures != 0;
}
