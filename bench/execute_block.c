/*
 * execute_block.c - the C side of bench/python: ddtk_plan_execute on one
 * in-memory block, timed, for the Python wrapper's plan.execute to be
 * measured against. 1024 channels (fch1 1581.8 MHz, foff -0.390625, 64 us),
 * 8-bit samples, NSAMPS spectra, the tolerance list of DM 0-1000 (tol 1.25,
 * 40 us: 1196 DMs), as bench/python's execute_block.py builds it.
 *
 * Usage: execute_block BACKEND(cpu|gpu) THREADS REPS [NSAMPS]
 * Prints one line per timed execute: "c WALL CPU" (seconds of wall clock and
 * of the process's CPU time).
 */
#include <ddtk/ddtk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCHANS 1024

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: execute_block cpu|gpu THREADS REPS [NSAMPS]\n");
        return 2;
    }
    int gpu = strcmp(argv[1], "gpu") == 0, threads = atoi(argv[2]), reps = atoi(argv[3]);
    int64_t nsamps = argc > 4 ? atoll(argv[4]) : 65536;
    double freqs[NCHANS];
    for (int c = 0; c < NCHANS; c++)
        freqs[c] = 1581.8 - 0.390625 * c;
    ddtk_dmlist dms = { 0 };
    if (ddtk_dmlist_tol(&dms, 0, 1000, 64e-6, 40, 1.25, 0.5 * (freqs[0] + freqs[NCHANS - 1]),
                        0.390625, NCHANS)) {
        fprintf(stderr, "execute_block: %s\n", ddtk_errmsg());
        return 1;
    }
    uint8_t *block = malloc((size_t)nsamps * NCHANS);
    unsigned x = 1;
    for (size_t i = 0; block && i < (size_t)nsamps * NCHANS; i++) {
        x = x * 1103515245u + 12345u;
        block[i] = (uint8_t)(x >> 24);
    }
    ddtk_plan_desc d;
    ddtk_plan_desc_init(&d);
    d.nchans = NCHANS;
    d.tsamp = 64e-6;
    d.freqs = freqs;
    d.chan_bw = 0.390625;
    d.nbits = 8;
    d.dms = dms.dm;
    d.ndm = dms.n;
    d.backend = gpu ? DDTK_BACKEND_GPU : DDTK_BACKEND_CPU;
    d.threads = threads;
    d.quiet = 1;
    ddtk_plan *plan;
    if (!block || ddtk_plan_create(&plan, &d)) {
        fprintf(stderr, "execute_block: %s\n", block ? ddtk_errmsg() : "out of memory");
        return 1;
    }
    int64_t nout = ddtk_plan_nout(plan, 0, nsamps);
    float *out = malloc((size_t)dms.n * nout * sizeof *out);
    fprintf(stderr, "c: %d DMs x %lld samples, max delay %d\n", dms.n, (long long)nout,
            ddtk_plan_max_delay(plan));
    for (int r = 0; r <= reps; r++) {   /* the first is a warm-up */
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        if (!out || ddtk_plan_execute(plan, nsamps, block, 8, out, nout, 32)) {
            fprintf(stderr, "execute_block: %s\n", out ? ddtk_errmsg() : "out of memory");
            return 1;
        }
        if (r)
            printf("c %.6f %.6f\n", now(CLOCK_MONOTONIC) - t0, now(CLOCK_PROCESS_CPUTIME_ID) - c0);
    }
    ddtk_plan_destroy(plan);
    ddtk_dmlist_free(&dms);
    free(out);
    free(block);
    return 0;
}
