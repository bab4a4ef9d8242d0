/*
 * tune.c - the auto-tuner (Sclocco et al. 2016): times configurations of a
 * plan's kernel on a synthetic block in memory (ddtk_plan_execute, no files)
 * and keeps the fastest, in the plan description and in the wisdom file.
 *
 * The block has the plan's geometry (channels, sample format, DMs, scrunch
 * factors) and enough output samples for about 2e9 (CPU) or 2e10 (GPU)
 * sample-adds a run (as many fewer as the budget is shorter than 60 s, at
 * least 4096 output samples), so one timing is long against the clock and
 * short against the budget. What is timed is the kernel (the plug-ins' gulps, as
 * the engine measures them), as in Sclocco's experiment: copies, unpacking
 * and the block's transfers to and from a GPU do not depend on the
 * configuration and would only dilute the differences.
 *
 * What is varied is the descriptor's (algo.h): first the algorithm's own
 * tunable parameters (the sub-band layout, the tree's and the FDMT's CPU
 * chunk, the tree's GPU rows per pass), each through its list of values from
 * the best so far; then, where the algorithm runs the direct kernel, its
 * configuration: on the CPU the space (tile, DM block, channel block) one
 * coordinate at a time, on the GPU every compiled variant of the kernel the
 * input uses. An exact change must give the best configuration's series byte
 * for byte; a change that is not (a sub-band layout) must keep the
 * algorithm's accuracy budget, and a faster one becomes the reference. Tried
 * and skipped configurations are one line each in the table.
 */
#include "engine.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TARGET_ADDS 2e9
#define TARGET_ADDS_GPU 2e10
#define FULL_BUDGET 60.0          /* s: a shorter budget times smaller blocks */
#define MOST_BYTES (128.0 * (1 << 20))    /* of the synthetic input block; twice
                                             that for each copy of the output */

typedef struct bench {
    ddtk_plan_desc d;             /* the configuration under test */
    const ddtk_algo *algo;
    unsigned given;               /* parameters the caller set: never varied */
    int use_gpu;
    int64_t nsamps;
    void *in;
    float *ref, *out;             /* the best configuration's series, and this one's */
    size_t stride;
    double deadline;
    FILE *table;
} bench;

/* Samples of the in-memory block, integers in range for every format. */
static void fill_block(void *in, int64_t nsamps, const ddtk_plan_desc *d)
{
    size_t n = (size_t)nsamps * (size_t)d->nchans * (size_t)d->nifs;
    unsigned x = 2463534242u;
    if (d->nbits == 32) {
        for (size_t i = 0; i < n; i++)
            ((float *)in)[i] = (float)((x = x * 1103515245u + 12345u) >> 24);
        return;
    }
    for (size_t i = 0; i < n * (size_t)d->nbits / 8; i++)
        ((uint8_t *)in)[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
}

/* The most output samples any DM of d's DMs has from nsamps inputs: the
 * direct algorithm's, whose delays no algorithm undercuts (a tunable that
 * changes a layout may give more outputs than the default layout did). */
static int most_outputs(const ddtk_plan_desc *d, int64_t nsamps, int64_t *most)
{
    ddtk_plan_desc direct = *d;
    ddtk_plan *p;
    int rc = ddtk_plan_desc_set_algorithm(&direct, "direct");
    if (!rc)
        rc = ddtk_plan_create(&p, &direct);
    if (rc)
        return rc;
    *most = 0;
    for (int i = 0; i < d->ndm; i++) {
        int64_t n = ddtk_plan_nout(p, i, nsamps);
        *most = n > *most ? n : *most;
    }
    ddtk_plan_destroy(p);
    return DDTK_OK;
}

/* Size the block from the default plan: max delay plus enough output. */
static int bench_init(bench *b, const ddtk_plan_desc *d, double budget, FILE *table)
{
    ddtk_plan *p;
    int64_t most_out;
    memset(b, 0, sizeof *b);
    b->d = *d;
    b->d.quiet = 1;
    b->d.verbose = 0;
    b->d.ngpus = 0;               /* the kernel is tuned on one GPU, the wisdom key's */
    b->algo = ddtk_algo_find(d->algorithm);
    b->given = d->param_set;
    b->table = table;
    b->deadline = ddtk_now() + budget;
    int rc = ddtk_plan_create(&p, &b->d);
    if (rc)
        return rc;
    b->use_gpu = p->use_gpu;
    double per_sample = (double)d->ndm * ddtk_plan_nlive(p);
    double most = MOST_BYTES * 8 / ((double)d->nchans * d->nifs * d->nbits);
    double target = (p->use_gpu ? TARGET_ADDS_GPU : TARGET_ADDS) * fmin(1, budget / FULL_BUDGET);
    double most_series = MOST_BYTES * 2 / (sizeof(float) * (double)d->ndm);
    int64_t nout = (int64_t)fmin(fmin(fmax(target / per_sample, 4096), 1 << 20),
                                 fmin(most, most_series));
    b->nsamps = ddtk_round_up(ddtk_plan_max_delay(p) + nout, 1024);
    ddtk_plan_destroy(p);
    if ((rc = most_outputs(&b->d, b->nsamps, &most_out)))
        return rc;
    b->stride = (size_t)most_out;
    size_t values = (size_t)b->nsamps * (size_t)d->nchans * (size_t)d->nifs;
    /* the block and two copies of its series: the best's and the one timed */
    rc = ddtk_check_mem(d, (double)values * d->nbits / 8
                        + 2.0 * d->ndm * (double)b->stride * sizeof(float),
                        "tuning: the synthetic block and its series");
    if (rc)
        return rc;
    b->in = ddtk_malloc((values * (size_t)d->nbits + 7) / 8, "tuning block");
    b->ref = ddtk_calloc((size_t)d->ndm * b->stride, sizeof(float), "tuning output");
    b->out = ddtk_calloc((size_t)d->ndm * b->stride, sizeof(float), "tuning output");
    if (!b->in || !b->ref || !b->out)
        return DDTK_ESYS;
    fill_block(b->in, b->nsamps, d);
    return DDTK_OK;
}

static void bench_free(bench *b)
{
    free(b->in);
    free(b->ref);
    free(b->out);
}

/* Every DM's series of plan p equal in out and ref. */
static int same_series(const bench *b, const ddtk_plan *p)
{
    for (int i = 0; i < b->d.ndm; i++)
        if (memcmp(b->out + (size_t)i * b->stride, b->ref + (size_t)i * b->stride,
                   (size_t)ddtk_plan_nout(p, i, b->nsamps) * sizeof(float)))
            return 0;
    return 1;
}

/* A configuration that is not one for this set-up (a value the plan refuses,
 * a layout past the accuracy budget or the block): a line in the table, *rate 0. */
static int skip(const bench *b, const char *cfg, const char *why)
{
    if (b->table)
        fprintf(b->table, "%-48s skipped: %s\n", cfg, why);
    return DDTK_OK;
}

/* Kernel sample-adds per second of b->d (best of two runs after a warm-up)
 * into *rate, 0 when it is skipped; its series go to out. check: 1, they
 * must equal ref (an exact change); 0, the plan must keep the algorithm's
 * accuracy budget; -1, neither (the first, default configuration). */
static int measure(bench *b, float *out, int check, double *rate)
{
    ddtk_plan *p;
    double best = INFINITY, adds = 0;
    char cfg[256];
    ddtk_config_text(&b->d, cfg, sizeof cfg);
    *rate = 0;
    int rc = ddtk_plan_create(&p, &b->d);
    if (rc == DDTK_EUSAGE && check >= 0)
        return skip(b, cfg, ddtk_errmsg());
    if (rc)
        return rc;
    int fits = 1;
    for (int i = 0; i < b->d.ndm; i++) {
        adds += (double)ddtk_plan_nout(p, i, b->nsamps) * ddtk_plan_nlive(p);
        fits &= ddtk_plan_nout(p, i, b->nsamps) <= (int64_t)b->stride;
    }
    if (!fits || (check == 0 && b->algo->within_budget && !b->algo->within_budget(p))) {
        ddtk_plan_destroy(p);
        return skip(b, cfg, !fits ? "more output samples than the block holds"
                                  : "past the accuracy budget");
    }
    /* Past the time budget a configuration is still listed, so that the
     * table says what was not timed rather than ending short. */
    if (check >= 0 && ddtk_now() >= b->deadline) {
        ddtk_plan_destroy(p);
        return skip(b, cfg, "not timed, the time budget was spent");
    }
    for (int run = 0; run < 3 && !rc; run++) {
        rc = ddtk_plan_execute(p, b->nsamps, b->in, b->d.nbits, out, b->stride, 32);
        if (run > 0)
            best = fmin(best, p->last_kernel);
    }
    if (!rc && check > 0 && !same_series(b, p))
        rc = ddtk_fail(DDTK_ESYS, "tuning: configuration '%s' changed the output; "
                       "keeping the default", cfg);
    ddtk_plan_destroy(p);
    *rate = rc ? 0 : adds / best;
    if (!rc && b->table)
        fprintf(b->table, "%-48s %12.4g sample-adds/s\n", cfg, *rate);
    return rc;
}

/* Try b->d; keep it in *keep when faster. A faster change that is not
 * exact makes its series the reference of the exact changes after it. */
static int try_config(bench *b, ddtk_plan_desc *keep, double *best, int exact)
{
    double rate;
    int rc = measure(b, b->out, exact, &rate);
    if (!rc && rate > *best) {
        *best = rate;
        *keep = b->d;
        if (!exact) {
            float *t = b->ref;
            b->ref = b->out;
            b->out = t;
        }
    }
    return rc;
}

/* The algorithm's own tunable parameters for this backend, each in turn
 * from the best so far, except those the caller gave. */
static int tune_params(bench *b, ddtk_plan_desc *best_d, double *best)
{
    int rc = DDTK_OK;
    for (int t = 0; t < b->algo->ntunables && !rc; t++) {
        const ddtk_tunable *tp = &b->algo->tunables[t];
        double now;
        if (!(tp->backends & (b->use_gpu ? DDTK_TUNE_GPU : DDTK_TUNE_CPU))
            || ddtk_plan_desc_get_param(best_d, tp->param, &now))
            continue;
        if (b->given & (1u << ddtk_algo_param(b->algo, tp->param)))
            continue;
        for (int v = 0; v < tp->nvalues && !rc; v++) {
            b->d = *best_d;
            if (tp->values[v] == now || ddtk_plan_desc_set_param(&b->d, tp->param,
                                                                 tp->values[v]))
                continue;
            rc = try_config(b, best_d, best, tp->exact);
        }
    }
    return rc;
}

static const int tiles[] = { 256, 512, 1024, 2048, 4096 };
static const int dm_blocks[] = { 8, 16, 32, 64, 128 };
static const int chan_blocks[] = { 8, 16, 32, 64, 128, 256 };

/* One pass of coordinate descent over the CPU tiles from the default: each
 * axis in turn, keeping the best value before the next. */
static int tune_cpu(bench *b, ddtk_plan_desc *best_d, double *best)
{
    struct { const int *v; int n; int *field; } axes[] = {
        { tiles, 5, &b->d.cpu.time_tile },
        { dm_blocks, 5, &b->d.cpu.dm_block },
        { chan_blocks, 6, &b->d.cpu.chan_block },
    };
    int rc = DDTK_OK;
    ddtk_cpu_config_resolve(&best_d->cpu);
    for (int a = 0; a < 3 && !rc; a++) {
        for (int i = 0; i < axes[a].n && !rc; i++) {
            b->d = *best_d;
            if (*axes[a].field == axes[a].v[i])
                continue;
            *axes[a].field = axes[a].v[i];
            rc = try_config(b, best_d, best, 1);
        }
    }
    return rc;
}

/* Every compiled variant of the GPU kernel the input's rows use, the cached
 * kernel's shapes first: they are few, and where one try is slow (many DMs
 * at low frequencies, delays far past the diagonal) every DM block goes to
 * the cached kernel anyway, so a budget that ends early has timed the shapes
 * that decide, not shared-memory configurations that all run the same
 * fallback (lofar-like, 512+ DMs: 5 tries in 5 s). */
static int tune_gpu(bench *b, ddtk_plan_desc *best_d, double *best)
{
    int lane = b->d.nbits <= 8 && !b->d.zerodm, rc = DDTK_OK;
    const int n = ddtk_gpu_variants(lane), nshared = n - ddtk_gpu_fallback_shapes();
    for (int i = 0; i < n && !rc; i++) {
        b->d = *best_d;
        *(lane ? &b->d.gpu_config.lane_variant : &b->d.gpu_config.float_variant) =
            (nshared + i) % n;
        rc = try_config(b, best_d, best, 1);
    }
    return rc;
}

/* Whether d's algorithm has anything to tune where d runs. */
static int tunes(const ddtk_algo *a, int use_gpu)
{
    int rc = a->tune != DDTK_TUNE_NONE;
    for (int t = 0; t < a->ntunables; t++)
        rc |= (a->tunables[t].backends & (use_gpu ? DDTK_TUNE_GPU : DDTK_TUNE_CPU)) != 0;
    return rc;
}

int ddtk_tune_check(const ddtk_plan_desc *d)
{
    const ddtk_algo *a = ddtk_algo_find(d->algorithm);
    int use_gpu = 0;
    int rc = a ? ddtk_backend_resolve(d->backend, d->gpu, 0, &use_gpu)
               : ddtk_fail(DDTK_EUSAGE, "unknown algorithm '%s'", d->algorithm);
    if (!rc && !tunes(a, use_gpu))
        rc = ddtk_fail(DDTK_EUSAGE, "the %s algorithm has nothing to tune on the %s", a->name,
                       use_gpu ? "GPU" : "CPU");
    return rc;
}

int ddtk_tune(ddtk_plan_desc *d, const char *path, double budget, FILE *table)
{
    bench b;
    char key[1024], cfg[256];
    double best = 0;
    int rc = ddtk_tune_check(d);
    if (rc || (rc = ddtk_wisdom_key(d, key, sizeof key)))
        return rc;
    rc = bench_init(&b, d, budget, table);
    ddtk_plan_desc best_d = b.d;
    if (!rc)
        rc = measure(&b, b.ref, -1, &best);
    if (!rc)
        rc = tune_params(&b, &best_d, &best);
    if (!rc && ddtk_algo_find(d->algorithm)->tune == DDTK_TUNE_DIRECT_KERNEL)
        rc = b.use_gpu ? tune_gpu(&b, &best_d, &best) : tune_cpu(&b, &best_d, &best);
    bench_free(&b);
    if (rc)
        return rc;
    d->cpu = best_d.cpu;
    d->gpu_config = best_d.gpu_config;
    memcpy(d->param, best_d.param, sizeof d->param);
    d->param_set = best_d.param_set;
    ddtk_config_text(d, cfg, sizeof cfg);
    if (table)
        fprintf(table, "best: %s, %.4g sample-adds/s\n", cfg, best);
    return path ? ddtk_wisdom_store(path, key, cfg, best) : DDTK_OK;
}
