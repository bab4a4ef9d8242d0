/*
 * dedisperse_block.c - libddtk from C, with no file involved: a plan built
 * from arrays (channel frequencies, sample time, DM trials), executed on an
 * in-memory block of 8-bit samples that holds one dispersed pulse, on the CPU
 * and, where one is usable, on a GPU. Prints the DM and time of the brightest
 * output sample and exits non-zero unless they are the pulse's, or unless the
 * GPU's series differ from the CPU's.
 *
 * Build against an installed libddtk:
 *   cc -O2 dedisperse_block.c -o dedisperse_block $(pkg-config --cflags --libs ddtk) -lm
 * `make test` builds it from include/ alone, and test/install.bats so against
 * an installed libddtk.so.
 */
#include <ddtk/ddtk.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCHANS 256
#define NSAMPS 8192
#define TSAMP 64e-6                /* seconds */
#define FTOP 1500.0                /* MHz, channel 0; the band descends */
#define CHAN_BW 0.390625
#define NDM 101                    /* DM 0, 2, ..., 200 */
#define PULSE_DM 100.0
#define PULSE_T 4000               /* arrival sample at the top of the band */

/* 8-bit noise around 128 (a small LCG, so the example needs nothing else)
 * and a one-sample pulse 12 counts high, delayed by the cold-plasma law. */
static void observe(uint8_t *block, const double *freqs)
{
    unsigned x = 12345;
    for (size_t i = 0; i < (size_t)NSAMPS * NCHANS; i++) {
        x = x * 1103515245u + 12345u;
        block[i] = (uint8_t)(120 + ((x >> 16) & 15));
    }
    for (int c = 0; c < NCHANS; c++) {
        double d = ddtk_delay_seconds(PULSE_DM, freqs[c], FTOP, DDTK_KDM_DEFAULT) / TSAMP;
        block[(size_t)(PULSE_T + lround(d)) * NCHANS + (size_t)c] += 12;
    }
}

/* Dedisperse the block on one backend: NDM series of `nout` samples into out. */
static int dedisperse(const double *freqs, const double *dms, const uint8_t *block,
                      int backend, float *out, int64_t *nout)
{
    ddtk_plan_desc d;
    ddtk_plan *plan;
    ddtk_plan_desc_init(&d);
    d.nchans = NCHANS;
    d.tsamp = TSAMP;
    d.freqs = freqs;
    d.nbits = 8;
    d.dms = dms;
    d.ndm = NDM;
    d.backend = backend;
    d.quiet = 1;
    int rc = ddtk_plan_create(&plan, &d);
    if (rc)
        return rc;
    *nout = ddtk_plan_nout(plan, 0, NSAMPS);
    rc = ddtk_plan_execute(plan, NSAMPS, block, 8, out, NSAMPS, 32);
    ddtk_plan_destroy(plan);
    return rc;
}

int main(void)
{
    double freqs[NCHANS], dms[NDM];
    uint8_t *block = malloc((size_t)NSAMPS * NCHANS);
    float *cpu = calloc((size_t)NDM * NSAMPS, sizeof *cpu);
    float *gpu = calloc((size_t)NDM * NSAMPS, sizeof *gpu);
    int64_t nout;
    if (!block || !cpu || !gpu)
        return 3;
    for (int c = 0; c < NCHANS; c++)
        freqs[c] = FTOP - c * CHAN_BW;
    for (int i = 0; i < NDM; i++)
        dms[i] = 2.0 * i;
    observe(block, freqs);

    if (dedisperse(freqs, dms, block, DDTK_BACKEND_CPU, cpu, &nout)) {
        fprintf(stderr, "dedisperse_block: %s\n", ddtk_errmsg());
        return 1;
    }
    int best_dm = 0;
    int64_t best_t = 0;
    for (int i = 0; i < NDM; i++)
        for (int64_t t = 0; t < nout; t++)
            if (cpu[(size_t)i * NSAMPS + t] > cpu[(size_t)best_dm * NSAMPS + best_t])
                best_dm = i, best_t = t;
    printf("cpu: %d DMs x %lld samples; brightest at DM %g, sample %lld\n", NDM,
           (long long)nout, dms[best_dm], (long long)best_t);
    int bad = dms[best_dm] != PULSE_DM || best_t != PULSE_T;

    char name[256], why[256];
    if (ddtk_gpu_usable(0, name, sizeof name, why, sizeof why)) {
        if (dedisperse(freqs, dms, block, DDTK_BACKEND_GPU, gpu, &nout)) {
            fprintf(stderr, "dedisperse_block: %s\n", ddtk_errmsg());
            return 1;
        }
        size_t ndiff = 0;
        for (int i = 0; i < NDM; i++)
            ndiff += memcmp(cpu + (size_t)i * NSAMPS, gpu + (size_t)i * NSAMPS,
                            (size_t)nout * sizeof *cpu) != 0;
        printf("gpu (%s): %zu of %d series differ from the CPU's\n", name, ndiff, NDM);
        bad |= ndiff != 0;
    } else {
        printf("gpu: not run (%s)\n", why);
    }
    free(block);
    free(cpu);
    free(gpu);
    return bad;
}
