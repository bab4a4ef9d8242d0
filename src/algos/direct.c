/*
 * direct.c - the direct (brute-force) algorithm's descriptor (algo.h): its
 * level plan is one delay table (a ddtk_delays, internal.h, which its GPU
 * half cuda/direct_plugin.cu reads), its CPU gulp the tiled kernel of
 * cpu/direct.c. It has no parameters of its own; the tuner varies its
 * kernels' configurations. Its cost per DM, for the multi-GPU split, models
 * the GPU half's shared-memory kernel.
 */
#include "engine.h"
#include "internal.h"

#include <stdlib.h>

static int create(const ddtk_plan *p, ddtk_level *lv)
{
    ddtk_delays *dl = ddtk_calloc(1, sizeof *dl, "delay table");
    if (!dl)
        return DDTK_ESYS;
    lv->state = dl;
    int rc = ddtk_delays_init(dl, &p->ch, lv->tsamp, lv->dms, lv->ndm, p->d.kdm, p->d.rounding);
    lv->overlap = dl->maxdelay;
    return rc;
}

static void cpu_gulp(const ddtk_plan *p, ddtk_level *lv, const float *rows, size_t stride,
                     int64_t nout, float *out, size_t ostride)
{
    const ddtk_delays *dl = lv->state;
    ddtk_direct_cpu(rows, stride, dl->nchan, nout, dl->delay, dl->ndm, out, ostride, &p->d.cpu);
}

static void destroy(ddtk_level *lv)
{
    if (lv->state)
        ddtk_delays_free(lv->state);
    free(lv->state);
    lv->state = NULL;
}

/*
 * The multi-GPU split (ddtk_plan_split). The shared-memory kernel's default
 * configuration (cuda/direct_gpu.cu, lane and float kernels alike) gives a
 * block of SPLIT_BD DMs a tile of SPLIT_TILE words (512 samples of the lane
 * kernel, 256 of the float one) and stages, per channel, tile + span words,
 * span the spread of the block's delays: about SPLIT_BD times the local step,
 * the most a DM's delay moves to the next DM's in any channel. Per word of
 * output a DM so costs 1 add and (1/SPLIT_BD + step / SPLIT_TILE) staged
 * words of SPLIT_STAGED adds each. SPLIT_STAGED is fitted to the one
 * measurement there is: htru 60 s (1024 channels of 2 bits, 64 us, the
 * 0-1000 tolerance list of 1196 DMs) split equally on two H200s ran DMs 0-597
 * (model 598 + 51.8 r) in 0.089 s of kernel and DMs 598-1195 (598 + 104.5 r)
 * in 0.151 s: r = 25. Blocks too wide for the shared tile (the fallback) are
 * costed as if staged.
 */
#define SPLIT_BD 16
#define SPLIT_TILE 256
#define SPLIT_STAGED 25.0

static double split_cost(const ddtk_level *lv, int i, int *start)
{
    const ddtk_delays *dl = lv->state;
    const int32_t *at = dl->delay + (size_t)i * dl->nchan;
    const int j = i + 1 < dl->ndm ? i + 1 : i - 1;   /* the last DM: its step from the one before */
    int32_t step = 0;
    for (int c = 0; j >= 0 && c < dl->nchan; c++) {
        int32_t d = dl->delay[(size_t)j * dl->nchan + c] - at[c];
        d = d < 0 ? -d : d;
        step = d > step ? d : step;
    }
    *start = 1;
    return 1.0 + (1.0 / SPLIT_BD + (double)step / SPLIT_TILE) * SPLIT_STAGED;
}

/* ddplan's cost: every live channel per output sample and DM. */
static double model_adds(const ddtk_obs *o, int ndm, int dms_per_sub, int chans_per_sub)
{
    (void)dms_per_sub, (void)chans_per_sub;
    return (double)ndm * o->nchans;
}

extern const struct ddtk_gpu_algo ddtk_gpu_direct;

const ddtk_algo ddtk_algo_direct = {
    .name = "direct",
    .label = "direct",
    .model_adds = model_adds,
    .tune = DDTK_TUNE_DIRECT_KERNEL,
    .create = create,
    .cpu_gulp = cpu_gulp,
    .destroy = destroy,
    .split_cost = split_cost,
    .gpu = DDTK_GPU_HALF(ddtk_gpu_direct),
};
