/*
 * stream_stats.c - libddtk's streaming seam with both ends the program's
 * own: a source that generates an observation as it is read (8-bit noise
 * and one dispersed pulse, never held whole in memory, its length not told
 * in advance) and a sink that keeps running statistics of every DM's series
 * (count, mean, standard deviation, peak and where it is) as they are made.
 * Prints a line per DM and exits non-zero unless the brightest peak, in
 * units of its series' deviation, is at the pulse's DM and time.
 *
 * Build against an installed libddtk (CUDA builds add -lcufft -lcudart -lstdc++):
 *   cc -O2 stream_stats.c -o stream_stats -lddtk -lfftw3f -lfftw3f_omp -lm -fopenmp
 * with #include <ddtk/ddtk.h>; `make test` builds it from include/ alone.
 */
#include <ddtk/ddtk.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCHANS 128
#define NSAMPS 60000               /* spectra the source makes */
#define TSAMP 128e-6               /* seconds */
#define FTOP 1400.0                /* MHz, channel 0; the band descends */
#define CHAN_BW 1.0
#define NDM 41                     /* DM 0, 5, ..., 200 */
#define PULSE_DM 125.0
#define PULSE_T 41000              /* arrival sample at the top of the band */

/* ---- the source: spectra made on demand -------------------------------------- */

typedef struct generator {
    int64_t next;                  /* the next spectrum to make */
    unsigned seed;
    int delay[NCHANS];             /* the pulse's delay per channel, in samples */
} generator;

static int generate(ddtk_source *s, void *raw, int64_t n, int64_t *got)
{
    generator *g = s->ctx;
    uint8_t *out = raw;
    int64_t left = NSAMPS - g->next;
    *got = n < left ? n : left;
    for (int64_t t = 0; t < *got; t++, g->next++)
        for (int c = 0; c < NCHANS; c++) {
            g->seed = g->seed * 1103515245u + 12345u;
            int v = 120 + (int)((g->seed >> 16) & 15);
            if (g->next == PULSE_T + g->delay[c])
                v += 10;
            out[t * NCHANS + c] = (uint8_t)v;
        }
    return 0;
}

/* ---- the sink: running statistics per DM --------------------------------------- */

typedef struct stats {
    int64_t n, peak_at;
    double sum, sum2;
    float peak;
} stats;

/* Calls for one DM come in order, different DMs perhaps on several threads:
 * each DM has its own entry, so no locking is needed. */
static int accumulate(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n)
{
    stats *st = (stats *)s->ctx + dm;
    for (int64_t t = 0; t < n; t++) {
        st->sum += x[t];
        st->sum2 += (double)x[t] * x[t];
        if (offset + t == 0 || x[t] > st->peak) {
            st->peak = x[t];
            st->peak_at = offset + t;
        }
    }
    st->n += n;
    return 0;
}

int main(void)
{
    double freqs[NCHANS], dms[NDM];
    stats st[NDM];
    generator gen = { .seed = 4321 };
    for (int c = 0; c < NCHANS; c++) {
        freqs[c] = FTOP - c * CHAN_BW;
        gen.delay[c] = (int)lround(ddtk_delay_seconds(PULSE_DM, freqs[c], FTOP,
                                                      DDTK_KDM_DEFAULT) / TSAMP);
    }
    for (int i = 0; i < NDM; i++)
        dms[i] = 5.0 * i;
    memset(st, 0, sizeof st);

    ddtk_plan_desc d;
    ddtk_plan *plan;
    ddtk_plan_desc_init(&d);
    d.nchans = NCHANS;
    d.tsamp = TSAMP;
    d.freqs = freqs;
    d.nbits = 8;
    d.dms = dms;
    d.ndm = NDM;
    d.gulp = 8192;                /* several gulps, so the sink sees pieces */
    d.backend = DDTK_BACKEND_CPU;
    int rc = ddtk_plan_create(&plan, &d);
    if (rc) {
        fprintf(stderr, "stream_stats: %s\n", ddtk_errmsg());
        return rc;
    }
    ddtk_source src = { .name = "generated", .nsamples = -1, .read = generate, .ctx = &gen };
    ddtk_sink sink = { .write = accumulate, .ctx = st };
    ddtk_run_stats run;
    rc = ddtk_plan_stream(plan, &src, &sink, NULL, &run);
    ddtk_plan_destroy(plan);
    if (rc) {
        fprintf(stderr, "stream_stats: %s\n", ddtk_errmsg());
        return rc;
    }

    int best = 0;
    double best_snr = -INFINITY;
    printf("%8s %8s %10s %8s %8s %8s\n", "DM", "samples", "mean", "sigma", "peak_snr", "at");
    for (int i = 0; i < NDM; i++) {
        double mean = st[i].sum / (double)st[i].n;
        double sigma = sqrt(st[i].sum2 / (double)st[i].n - mean * mean);
        double snr = (st[i].peak - mean) / sigma;
        printf("%8.2f %8lld %10.3f %8.3f %8.2f %8lld\n", dms[i], (long long)st[i].n, mean, sigma,
               snr, (long long)st[i].peak_at);
        if (snr > best_snr) {
            best_snr = snr;
            best = i;
        }
    }
    printf("%lld spectra in, brightest: DM %.2f at sample %lld, S/N %.1f\n",
           (long long)run.nin, dms[best], (long long)st[best].peak_at, best_snr);
    return run.nin == NSAMPS && dms[best] == PULSE_DM && st[best].peak_at == PULSE_T ? 0 : 1;
}
