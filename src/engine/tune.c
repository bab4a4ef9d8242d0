/*
 * tune.c - the auto-tuner (Sclocco et al. 2016): times configurations of a
 * plan's kernel on a synthetic block in memory (ddtk_plan_execute, no files)
 * and keeps the fastest, in the plan description and in the wisdom file.
 *
 * The block has the plan's geometry (channels, sample format, DMs, scrunch
 * factors) and enough output samples for about 2e9 (CPU) or 2e10 (GPU)
 * sample-adds a run, so one timing is long against the clock and short
 * against the budget. What is timed is the kernel (the plug-ins' gulps, as
 * the engine measures them), as in Sclocco's experiment: copies, unpacking
 * and the block's transfers to and from a GPU do not depend on the
 * configuration and would only dilute the differences. On the
 * CPU the space (tile, DM block, channel block) is searched one coordinate at
 * a time from the default; on the GPU every
 * compiled variant of the kernel the input uses is timed. Each configuration's
 * series are compared with the default's: a configuration may change speed,
 * never a byte.
 */
#include "engine.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TARGET_ADDS 2e9
#define TARGET_ADDS_GPU 2e10
#define MOST_BYTES (128.0 * (1 << 20))    /* of the synthetic input block; twice
                                             that for each copy of the output */

typedef struct bench {
    ddtk_plan_desc d;             /* the configuration under test */
    int64_t nsamps;
    void *in;
    float *ref, *out;             /* the default's series, and this one's */
    size_t stride;
    double adds;
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

/* Size the block from the default plan: max delay plus enough output. */
static int bench_init(bench *b, const ddtk_plan_desc *d, double budget, FILE *table)
{
    ddtk_plan *p;
    memset(b, 0, sizeof *b);
    b->d = *d;
    b->d.quiet = 1;
    b->d.verbose = 0;
    b->d.ngpus = 0;               /* the kernel is tuned on one GPU, the wisdom key's */
    b->table = table;
    b->deadline = ddtk_now() + budget;
    int rc = ddtk_plan_create(&p, &b->d);
    if (rc)
        return rc;
    double per_sample = (double)d->ndm * ddtk_plan_nlive(p);
    double most = MOST_BYTES * 8 / ((double)d->nchans * d->nifs * d->nbits);
    double target = p->use_gpu ? TARGET_ADDS_GPU : TARGET_ADDS;
    double most_out = MOST_BYTES * 2 / (sizeof(float) * (double)d->ndm);
    int64_t nout = (int64_t)fmin(fmin(fmax(target / per_sample, 4096), 1 << 20),
                                 fmin(most, most_out));
    b->nsamps = ddtk_round_up(ddtk_plan_max_delay(p) + nout, 1024);
    b->stride = (size_t)ddtk_plan_nout(p, 0, b->nsamps);
    for (int i = 0; i < d->ndm; i++)
        b->adds += (double)ddtk_plan_nout(p, i, b->nsamps) * ddtk_plan_nlive(p);
    ddtk_plan_destroy(p);
    size_t values = (size_t)b->nsamps * (size_t)d->nchans * (size_t)d->nifs;
    /* the block and two copies of its series: the default's and the one timed */
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

/* Kernel sample-adds per second of b->d (best of two runs after a warm-up) into
 * *rate; its series go to out and must equal ref unless out is ref. */
static int measure(bench *b, float *out, double *rate)
{
    ddtk_plan *p;
    double best = INFINITY;
    int rc = ddtk_plan_create(&p, &b->d);
    for (int run = 0; run < 3 && !rc; run++) {
        rc = ddtk_plan_execute(p, b->nsamps, b->in, b->d.nbits, out, b->stride, 32);
        if (run > 0)
            best = fmin(best, p->last_kernel);
    }
    ddtk_plan_destroy(p);
    char cfg[128];
    ddtk_config_text(&b->d, cfg, sizeof cfg);
    if (!rc && out != b->ref && memcmp(out, b->ref, (size_t)b->d.ndm * b->stride * sizeof *out))
        rc = ddtk_fail(DDTK_ESYS, "tuning: configuration '%s' changed the output; "
                       "keeping the default", cfg);
    *rate = rc ? 0 : b->adds / best;
    if (!rc && b->table)
        fprintf(b->table, "%-40s %12.4g sample-adds/s\n", cfg, *rate);
    return rc;
}

/* Try one configuration; keep it in *keep when faster. */
static int try_config(bench *b, ddtk_plan_desc *keep, double *best)
{
    double rate;
    int rc = measure(b, b->out, &rate);
    if (!rc && rate > *best) {
        *best = rate;
        *keep = b->d;
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
        for (int i = 0; i < axes[a].n && !rc && ddtk_now() < b->deadline; i++) {
            b->d = *best_d;
            if (*axes[a].field == axes[a].v[i])
                continue;
            *axes[a].field = axes[a].v[i];
            rc = try_config(b, best_d, best);
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
    for (int i = 0; i < n && !rc && ddtk_now() < b->deadline; i++) {
        b->d = *best_d;
        *(lane ? &b->d.gpu_config.lane_variant : &b->d.gpu_config.float_variant) =
            (nshared + i) % n;
        rc = try_config(b, best_d, best);
    }
    return rc;
}

int ddtk_tune_applies(const ddtk_plan_desc *d)
{
    const ddtk_algo *a = ddtk_algo_find(d->algorithm);
    return a && a->tune != DDTK_TUNE_NONE;
}

int ddtk_tune(ddtk_plan_desc *d, const char *path, double budget, FILE *table)
{
    bench b;
    char key[1024], cfg[128];
    double best = 0;
    int use_gpu = 0;
    if (!ddtk_tune_applies(d))
        return ddtk_fail(DDTK_EUSAGE, "the %s algorithm has no kernel configuration to tune",
                         d->algorithm);
    int rc = ddtk_wisdom_key(d, key, sizeof key);
    if (!rc)
        rc = ddtk_backend_resolve(d->backend, d->gpu, 0, &use_gpu);
    if (rc)
        return rc;
    rc = bench_init(&b, d, budget, table);
    ddtk_plan_desc best_d = b.d;
    if (!rc)
        rc = measure(&b, b.ref, &best);
    if (!rc)
        rc = use_gpu ? tune_gpu(&b, &best_d, &best) : tune_cpu(&b, &best_d, &best);
    bench_free(&b);
    if (rc)
        return rc;
    d->cpu = best_d.cpu;
    d->gpu_config = best_d.gpu_config;
    ddtk_config_text(d, cfg, sizeof cfg);
    if (table)
        fprintf(table, "best: %s, %.4g sample-adds/s\n", cfg, best);
    return path ? ddtk_wisdom_store(path, key, cfg, best) : DDTK_OK;
}
