/*
 * gulp.c - the arithmetic both streaming layers (stream_cpu.c and
 * cuda/stream.cu) share, so that they cannot drift apart: a plan DM's level,
 * the outputs a level gives per gulp and at most, the bytes of raw input and
 * the reads of a source, the gulp step within a memory bound, and the split
 * of the DMs over several GPUs with the level views that hold each GPU's
 * share.
 */
#include "engine.h"
#include "internal.h"
#include "dmplan.h"

#include <stdlib.h>

int64_t ddtk_round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

int ddtk_plan_level(const ddtk_plan *p, int dm)
{
    int f = p->downsamp ? p->downsamp[dm] : 1, k = 0;
    while (k < DDTK_MAX_LEVELS && (1 << k) < f)
        k++;
    return k < DDTK_MAX_LEVELS && (1 << k) == f ? k : -1;
}

int64_t ddtk_level_nout(const ddtk_plan *p, int k, int64_t step, int64_t fill, int last)
{
    int64_t n = last ? (fill >> k) - p->lv[k].overlap : step >> k;
    return n > 0 ? n : 0;
}

int64_t ddtk_level_most_out(const ddtk_plan *p, int k, int64_t step)
{
    int64_t last = ((p->keep + step) >> k) - p->lv[k].overlap;
    return last > step >> k ? last : step >> k;
}

int64_t ddtk_plan_raw_bytes(const ddtk_plan *p, int64_t n)
{
    int64_t bits = (int64_t)p->fmt.nchans * p->fmt.nifs * p->fmt.nbits;
    return (n * bits + 7) / 8;
}

int ddtk_source_count(ddtk_source *s, int rc, int64_t n, int64_t got)
{
    if (rc)
        return rc;
    s->samples_read += got;
    if (got < n)
        s->eof = 1;
    return DDTK_OK;
}

int ddtk_source_pull(ddtk_source *s, void *raw, int64_t n, int64_t *got)
{
    *got = 0;
    int rc = s->read(s, raw, n, got);
    return ddtk_source_count(s, rc, n, *got);
}

int ddtk_choose_step(const ddtk_plan *p, const ddtk_source *src, int64_t preferred,
                     int64_t most, int (*fits)(const ddtk_plan *, int64_t, void *), void *ctx,
                     int64_t *step)
{
    int64_t s = p->d.gulp > 0 ? ddtk_round_up(p->d.gulp, 8)
                              : ddtk_round_up(preferred > p->keep ? preferred : p->keep, 8);
    if (src->nsamples >= 0 && s > ddtk_round_up(src->nsamples, 8))
        s = ddtk_round_up(src->nsamples > 8 ? src->nsamples : 8, 8);
    s = s < most ? s : most;
    while (p->d.gulp <= 0 && s > 8 && !fits(p, s, ctx))
        s = ddtk_round_up(s / 2, 8);
    *step = s;
    return fits(p, s, ctx);
}

/* ---- several GPUs: the DM split ------------------------------------------------------- */

/* starts[k][j]: whether a share may start at level k's DM j (j = ndm: the end). */
static int level_starts(const ddtk_plan *p, uint8_t *starts[], double *lcost[])
{
    for (int k = 0; k < p->nlevels; k++) {
        const ddtk_level *lv = &p->lv[k];
        starts[k] = ddtk_malloc((size_t)lv->ndm + 1, "DM split");
        lcost[k] = ddtk_malloc(((size_t)lv->ndm + 1) * sizeof *lcost[k], "DM split");
        if (!starts[k] || !lcost[k])
            return DDTK_ESYS;
        for (int j = 0; j < lv->ndm; j++) {
            int start = 1;
            double c = p->algo->split_cost ? p->algo->split_cost(lv, j, &start) : 1.0;
            lcost[k][j] = c / (1 << k);
            starts[k][j] = (uint8_t)(start || j == 0);
        }
        starts[k][lv->ndm] = 1;
    }
    return DDTK_OK;
}

int ddtk_plan_split(const ddtk_plan *p, int nparts, int *first)
{
    const int n = p->d.ndm;
    uint8_t *starts[DDTK_MAX_LEVELS] = { 0 };
    double *lcost[DDTK_MAX_LEVELS] = { 0 };
    int pos[DDTK_MAX_LEVELS] = { 0 };
    double *cost = ddtk_malloc((size_t)n * sizeof *cost, "DM split");
    uint8_t *cut = ddtk_malloc((size_t)n, "DM split");
    int rc = cost && cut ? level_starts(p, starts, lcost) : DDTK_ESYS;
    /* A range starting at plan DM i cuts every level where its DMs so far end:
     * each of those cuts must be allowed. */
    for (int i = 0; !rc && i < n; i++) {
        cut[i] = 1;
        for (int k = 0; k < p->nlevels; k++)
            cut[i] &= starts[k][pos[k]];
        int k = ddtk_plan_level(p, i);
        cost[i] = lcost[k][pos[k]++];
    }
    if (!rc)
        rc = ddtk_split_cost(cost, cut, n, nparts, first);
    for (int k = 0; k < DDTK_MAX_LEVELS; k++) {
        free(starts[k]);
        free(lcost[k]);
    }
    free(cost);
    free(cut);
    return rc;
}

int ddtk_level_view(const ddtk_plan *p, int k, int dm0, int dm1, ddtk_level *v)
{
    const ddtk_level *lv = &p->lv[k];
    int lo = 0, hi;
    while (lo < lv->ndm && lv->index[lo] < dm0)
        lo++;
    for (hi = lo; hi < lv->ndm && lv->index[hi] < dm1; hi++)
        ;
    *v = *lv;
    v->dms += lo;
    v->index += lo;
    v->ndm = hi - lo;
    if (v->ndm == lv->ndm)
        return DDTK_OK;
    v->state = v->cpu = NULL;
    v->overlap = 0;
    v->view = 1;
    v->stage_s[0] = v->stage_s[1] = 0;
    int rc = v->ndm ? p->algo->create(p, v) : DDTK_OK;
    if (rc)
        ddtk_level_view_free(p, v);
    return rc;
}

void ddtk_level_view_free(const ddtk_plan *p, ddtk_level *v)
{
    if (v->view && v->state)
        p->algo->destroy(v);
    v->state = NULL;
}
