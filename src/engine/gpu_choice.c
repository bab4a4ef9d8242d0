/*
 * gpu_choice.c - how many GPUs --gpu all uses: a cost model of a run on n
 * GPUs, its inputs from a plan and an input length, and the choice.
 *
 * A run is its set-up, then its streaming. The set-up is one GPU's and
 * what each further GPU adds (what stays serial: the driver's share of the
 * contexts, the device plans of shares, pinning for every device). The
 * streaming is as slow as its slowest part: the host's (reads and writes,
 * which no GPU count shortens) or a GPU's (kernels, or device copies where
 * they are longer, both split over the GPUs with the DMs). More GPUs are used only when the model
 * gives them a clear lead (CHOICE_MARGIN), so an error in its constants
 * costs a missed gain rather than a slower run.
 */
#include "engine.h"
#include "internal.h"

#include <stdio.h>

/* Measured with htru 60 s (1024 channels of 2 bits, 64 us, the 0-1000
 * tolerance list of 1196 DMs), output discarded, on hosts of two H100s and
 * of two H200s (PCIe, 16 cores; the same kernel times): kernels 0.137-0.138 s
 * for 1.15e12 sample-adds, 4.79e12 in the split's cost (the direct
 * plug-in's: an add and its share of the shared-memory staging),
 * KERNEL_RATE; the host's reads 0.015 s for 240 MB (READ_RATE); D2H 0.079 s
 * for 4.4 GB of series (COPY_RATE); set-up 0.12-0.15 s on one GPU, 0.23 s on
 * two (H200; 0.29-0.30 s on the H100s): the driver makes the contexts one at
 * a time (SETUP_ONE, SETUP_MORE); streaming on two GPUs 0.097 s where the
 * kernels took 0.064 s (MULTI_EFFICIENCY: the host's share of each gulp,
 * issued and written for both, no longer hides behind the kernels). */
#define KERNEL_RATE 3.47e13       /* the split's cost units x channels x samples per second */
#define READ_RATE 1.4e10          /* input bytes per second into pinned memory (8 threads) */
#define COPY_RATE 5.5e10          /* device-to-host bytes per second, per GPU */
#define WRITE_RATE 2e9            /* series bytes per second written to files */
#define SETUP_ONE 0.135           /* seconds: one GPU's set-up */
#define SETUP_MORE 0.12           /* seconds each further GPU adds to it */
#define MULTI_EFFICIENCY 0.8      /* each GPU's share of its rate when several split the DMs */
#define CHOICE_MARGIN 0.10        /* a larger count must save this share of the run */

double ddtk_gpu_cost_time(const ddtk_gpu_cost *c, int n)
{
    /* Two buffer sets alternate: a gulp's copies overlap the next one's kernels. */
    double gpu = (c->kernel > c->copy ? c->kernel : c->copy) / (n > 1 ? n * c->efficiency : 1);
    double stream = gpu > c->host ? gpu : c->host;
    return c->setup + (n - 1) * c->setup_more + stream;
}

int ddtk_gpu_choose(const ddtk_gpu_cost *c, int avail, char *why, size_t n)
{
    int best = 1;
    for (int k = 2; k <= avail; k++)
        if (ddtk_gpu_cost_time(c, k) < (1 - CHOICE_MARGIN) * ddtk_gpu_cost_time(c, best))
            best = k;
    if (why) {
        const double t1 = ddtk_gpu_cost_time(c, 1), tb = ddtk_gpu_cost_time(c, best);
        int other = best > 1 ? best : avail;
        snprintf(why, n, "predicted %.3f s on 1 GPU, %.3f s on %d (set-up %.3f s + %.3f s per "
                 "further GPU, kernels %.3f s and device copies %.3f s on one GPU, %.0f%% of "
                 "that rate each on several, host reads and writes %.3f s)", t1,
                 best > 1 ? tb : ddtk_gpu_cost_time(c, other), other, c->setup, c->setup_more,
                 c->kernel, c->copy, 100 * c->efficiency, c->host);
    }
    return best;
}

/* The run's work in the split's unit: every DM's cost per output sample
 * times live channels and its level's output samples. */
static double run_work(const ddtk_plan *p, int64_t nsamples)
{
    double work = 0;
    for (int k = 0; k < p->nlevels; k++) {
        const ddtk_level *lv = &p->lv[k];
        double nout = (double)((nsamples >> k) - lv->overlap);
        for (int j = 0; nout > 0 && j < lv->ndm; j++) {
            int start;
            double cost = p->algo->split_cost ? p->algo->split_cost(lv, j, &start) : 1.0;
            work += cost * p->ch.nlive * nout;
        }
    }
    return work;
}

/* Series bytes the run gives (float samples). */
static double run_series_bytes(const ddtk_plan *p, int64_t nsamples)
{
    double bytes = 0;
    for (int k = 0; k < p->nlevels; k++) {
        double nout = (double)((nsamples >> k) - p->lv[k].overlap);
        bytes += nout > 0 ? 4.0 * nout * p->lv[k].ndm : 0;
    }
    return bytes;
}

void ddtk_gpu_cost_of(const ddtk_plan *p, int64_t nsamples, int written, ddtk_gpu_cost *c)
{
    const double series = run_series_bytes(p, nsamples);
    c->kernel = run_work(p, nsamples) / KERNEL_RATE;
    c->copy = series / COPY_RATE;
    c->host = (double)ddtk_plan_raw_bytes(p, nsamples) / READ_RATE
              + (written ? series / WRITE_RATE : 0);
    c->setup = SETUP_ONE;
    c->setup_more = SETUP_MORE;
    c->efficiency = MULTI_EFFICIENCY;
}
