/*
 * direct.c - the direct (brute-force) algorithm as an engine plug-in: one
 * delay table per level, and the CPU gulp is the tiled kernel of cpu/direct.c.
 * Its GPU gulp is cuda/direct_plugin.cu.
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

static void cpu_gulp(const ddtk_plan *p, const ddtk_level *lv, const float *rows, size_t stride,
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

const ddtk_delays *ddtk_direct_delays(const ddtk_level *lv)
{
    return lv->state;
}

const ddtk_algo ddtk_algo_direct = {
    .id = DDTK_ALGO_DIRECT,
    .name = "direct",
    .create = create,
    .cpu_gulp = cpu_gulp,
    .destroy = destroy,
    .gpu = 1,
};
