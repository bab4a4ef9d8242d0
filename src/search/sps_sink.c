/*
 * sps_sink.c - the single-pulse search as a sink of the dedispersion stream
 * (include/sps.h): every series written is searched too, by the same
 * searcher spsearch uses, so both give the same candidates. The GPU stream
 * finds this sink (ddtk_sps_sink_of), searches on the device and sets
 * on_device: the sink then only passes the series on.
 */
#include "sps_dev.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static int write_search(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n)
{
    ddtk_sps_sink *t = s->ctx;
    int rc = t->on_device ? DDTK_OK : ddtk_sps_feed(t->search, t->rank[dm], x, n);
    return rc || !t->next ? rc : t->next->write(t->next, dm, offset, x, n);
}

ddtk_sps_sink *ddtk_sps_sink_of(ddtk_sink *s)
{
    return s->write == write_search ? s->ctx : NULL;
}

static int pad_search(ddtk_sink *s, int dm, int64_t offset, float value, int64_t n)
{
    ddtk_sps_sink *t = s->ctx;
    if (!t->next)
        return DDTK_OK;
    if (t->next->pad)
        return t->next->pad(t->next, dm, offset, value, n);
    for (int64_t i = 0; i < n; i++) {
        int rc = t->next->write(t->next, dm, offset + i, &value, 1);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

static int finish_search(ddtk_sink *s, int rc)
{
    ddtk_sps_sink *t = s->ctx;
    return t->next && t->next->finish ? t->next->finish(t->next, rc) : rc;
}

typedef struct dm_at {
    double dm;
    int i;
} dm_at;

static int by_dm(const void *a, const void *b)
{
    const dm_at *x = a, *y = b;
    if (x->dm != y->dm)
        return x->dm < y->dm ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int ddtk_sps_sink_init(ddtk_sps_sink *t, const ddtk_sps_params *par, const ddtk_plan *plan,
                       ddtk_sink *next)
{
    memset(t, 0, sizeof *t);
    const int n = ddtk_plan_ndm(plan);
    const double *dms = ddtk_plan_dms(plan);
    dm_at *o = ddtk_malloc((size_t)n * sizeof *o, "search DMs");
    double *sorted = ddtk_malloc((size_t)n * sizeof *sorted, "search DMs");
    int *ds = ddtk_malloc((size_t)n * sizeof *ds, "search DMs");
    t->rank = ddtk_malloc((size_t)n * sizeof *t->rank, "search DMs");
    int rc = o && sorted && ds && t->rank ? DDTK_OK : DDTK_ESYS;
    for (int i = 0; !rc && i < n; i++) {
        o[i].dm = dms[i];
        o[i].i = i;
    }
    if (!rc) {
        qsort(o, (size_t)n, sizeof *o, by_dm);
        for (int r = 0; r < n; r++) {
            t->rank[o[r].i] = r;
            sorted[r] = o[r].dm;
            ds[r] = ddtk_plan_downsamp(plan, o[r].i);
        }
        rc = ddtk_sps_create(&t->search, par, n, sorted, ds, ddtk_plan_tsamp(plan));
    }
    free(o);
    free(sorted);
    free(ds);
    if (rc) {
        ddtk_sps_sink_free(t);
        return rc;
    }
    t->next = next;
    t->sink.write = write_search;
    t->sink.pad = pad_search;
    t->sink.finish = finish_search;
    t->sink.length = next ? next->length : DDTK_LEN_EXACT;
    t->sink.serial = next ? next->serial : 0;
    t->sink.ctx = t;
    return DDTK_OK;
}

int ddtk_sps_sink_finish(ddtk_sps_sink *t, ddtk_sps_cand **cands, int64_t *ncands)
{
    return ddtk_sps_finish(t->search, cands, ncands);
}

void ddtk_sps_sink_free(ddtk_sps_sink *t)
{
    ddtk_sps_destroy(t->search);
    free(t->rank);
    memset(t, 0, sizeof *t);
}
