/*
 * fdmt_bands.c - the GPU FDMT's plan (cuda/fdmt.cu executes it): the merge
 * depths in bands, each band's target rows in groups, and for each group
 * the rows it stages from device memory and every row it makes in shared
 * memory, with their windows and slots. Host code only, so that the unit
 * tests run the plan against the CPU's transform without a GPU.
 *
 * A band's targets are the rows read above it (or the DMs): only they
 * reach device memory. A group is up to 64 target rows of one node; what
 * it needs is found walking down from them: a row made within the band
 * (an item of a depth above the band's bottom) or a row staged (an input
 * row, or a target of the band below). Each row's window is where its
 * readers read it, relative to a tile's first output (the tile's length T
 * added at launch), a staged row's start rounded down to a multiple of 8
 * so that staging reads whole packs; a slot is shared memory of one row's
 * window, reused from the depth after its last reader's.
 */
#include "fdmt.h"

#include <stdlib.h>
#include <string.h>

#define BAND0 5                   /* depths of the lowest band */
#define BANDN 5                   /* the most depths of each band above it: 5 and 5 ran
                                     htru in 0.015 s on an H100, 5 and 3 in 0.017 s, 4 and
                                     4 in 0.017 s, 6 and 4 in 0.0168 s (cuda/fdmt.cu) */
#define GROUP_MAX 64              /* target rows a group holds at most */
#define TILE_MAX 2048             /* samples a tile makes at most */

/* One computed row: d[t] = u[t + ua] + l[t + la]. */
typedef struct item {
    int ukind, uref, ulim, ua;
    int lkind, lref, llim, la;
    int dkind, dref, dlim;
} item;

/* What the groups are made from: the items with their depths and nodes,
 * each stored row's item, the depth that reads it and its id among the
 * stored targets; per-group scratch by key (an item for a row made in the
 * group, nitem + channel for an input row, nitem + nchan + row for a
 * stored row staged). */
typedef struct ctx {
    const ddtk_fdmt_plan *f;
    item *it;
    int n, nchan, esize, nrows;
    int *depth, *inode, *rowbase, *rowitem, *cdepth, *gid;
    int *stamp, *start, *end, *death, *slot, *lim, *list, *isk;
    int nlist, gen;
} ctx;

int ddtk_fdmt_widest(const ddtk_fdmt_plan *f)
{
    int widest = 0;
    for (int s = 0; s < f->nnode - 1; s++)
        if (f->node[s].up >= 0 && f->node[s].b - f->node[s].a > widest)
            widest = f->node[s].b - f->node[s].a;
    return widest;
}

/* Stored rows: every node but the leaves and the root, rowbase[s] its first. */
static void store_rows(ctx *C, ddtk_fdmt_bands *B)
{
    const ddtk_fdmt_plan *f = C->f;
    C->nrows = 0;
    for (int s = 0; s < f->nnode; s++) {
        const ddtk_fdmt_node *N = &f->node[s];
        C->rowbase[s] = -1;
        if (N->up < 0 || s == f->nnode - 1)
            continue;
        C->rowbase[s] = C->nrows;
        C->nrows += N->nd;
        B->reach = N->reach > B->reach ? N->reach : B->reach;
    }
}

/* Row `row` of node s as an operand. */
static void operand(const ctx *C, int s, int row, int *kind, int *ref, int *lim)
{
    const ddtk_fdmt_node *n = &C->f->node[s];
    *kind = n->up < 0 ? DDTK_FDMT_IN : DDTK_FDMT_ROW;
    *ref = n->up < 0 ? n->a : C->rowbase[s] + row;
    *lim = n->up < 0 ? 0 : n->route[4 * (size_t)row + 3];
}

/* The item making row r (route r) of node s into (dkind, dref, dlim), both
 * operands shifted by a more. */
static item make_item(const ctx *C, int s, const int32_t *r, int a, int dkind, int dref,
                      int dlim)
{
    const ddtk_fdmt_node *N = &C->f->node[s];
    item x;
    memset(&x, 0, sizeof x);
    if (N->up < 0) {              /* a one-row band: the root is the input row */
        x.ukind = DDTK_FDMT_IN;
        x.uref = N->a;
        x.ua = a;
        x.lkind = DDTK_FDMT_NONE;
    } else {
        operand(C, N->up, r[0], &x.ukind, &x.uref, &x.ulim);
        x.ua = a;
        operand(C, N->lo, r[1], &x.lkind, &x.lref, &x.llim);
        x.la = a + r[2];
    }
    x.dkind = dkind;
    x.dref = dref;
    x.dlim = dlim;
    return x;
}

/* Every computed row's item, its node and depth, by depth (the root's DMs
 * last). */
static int build_items(ctx *C, int ndepth)
{
    const ddtk_fdmt_plan *f = C->f;
    const int R = f->nnode - 1;
    size_t most = (size_t)f->ndm;
    for (int s = 0; s < R; s++)
        most += (size_t)f->node[s].nd;
    C->it = ddtk_malloc(most * sizeof *C->it, "FDMT items");
    C->inode = ddtk_malloc(most * sizeof *C->inode, "FDMT items");
    C->depth = ddtk_malloc(most * sizeof *C->depth, "FDMT items");
    if (!C->it || !C->inode || !C->depth)
        return DDTK_ESYS;
    int n = 0;
    for (int d = 1; d <= ndepth; d++) {
        for (int s = 0; s < R && d < ndepth; s++) {
            const ddtk_fdmt_node *N = &f->node[s];
            if (N->depth != d)
                continue;
            for (int i = 0; i < N->nd; i++) {
                const int32_t *r = N->route + 4 * (size_t)i;
                if (r[3] < 0)
                    continue;
                C->inode[n] = s;
                C->depth[n] = d;
                C->it[n++] = make_item(C, s, r, 0, DDTK_FDMT_ROW, C->rowbase[s] + i, r[3]);
            }
        }
        for (int i = 0; i < f->ndm && d == ndepth; i++) {
            C->inode[n] = R;
            C->depth[n] = d;
            C->it[n++] = make_item(C, R, f->out_route + 4 * (size_t)i, f->out_route[4 * i + 3],
                                   DDTK_FDMT_OUT, i, 0);
        }
    }
    C->n = n;
    return DDTK_OK;
}

static int key_of(const ctx *C, int d0, int kind, int ref)
{
    if (kind == DDTK_FDMT_ROW && C->depth[C->rowitem[ref]] > d0)
        return C->rowitem[ref];
    return C->n + (kind == DDTK_FDMT_IN ? ref : C->nchan + ref);
}

/* Key k's window grown to what a row of stage `stage` over start..end
 * (tile-relative, before T) reads at shift sh. */
static void reach_key(ctx *C, int k, int start, int end, int sh, int stage, int lim)
{
    if (C->stamp[k] != C->gen) {
        C->stamp[k] = C->gen;
        C->start[k] = start + sh;
        C->end[k] = end + sh;
        C->death[k] = stage;
        C->lim[k] = lim;
        C->isk[k] = 0;
        C->list[C->nlist++] = k;
        return;
    }
    C->start[k] = start + sh < C->start[k] ? start + sh : C->start[k];
    C->end[k] = end + sh > C->end[k] ? end + sh : C->end[k];
    C->death[k] = stage > C->death[k] ? stage : C->death[k];
}

/* The rows targets tg[0 .. nt) need in band (d0, d1]: every row made within
 * the band and every row staged, their windows and slots; returns the
 * slots, *H the most a slot holds past T. */
static int group_rows(ctx *C, const int *tg, int nt, int d0, int d1, int *H)
{
    C->gen++;
    C->nlist = 0;
    for (int i = 0; i < nt; i++) {
        reach_key(C, tg[i], 0, 0, 0, 0, 0);
        C->death[tg[i]] = -1;
        C->isk[tg[i]] = 1;
    }
    for (int d = d1; d > d0; d--)
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            if (k >= C->n || C->depth[k] != d)
                continue;
            const item *x = &C->it[k];
            reach_key(C, key_of(C, d0, x->ukind, x->uref), C->start[k], C->end[k], x->ua,
                      d - d0, x->ulim);
            if (x->lkind != DDTK_FDMT_NONE)
                reach_key(C, key_of(C, d0, x->lkind, x->lref), C->start[k], C->end[k], x->la,
                          d - d0, x->llim);
        }
    /* Staged rows start at a multiple of 8 (whole packs of device memory);
     * rows made here start where their readers' reads do (rounding theirs
     * down too would start a reader's reads before their windows). */
    *H = 0;
    for (int i = 0; i < C->nlist; i++) {
        const int k = C->list[i];
        C->start[k] = k >= C->n ? C->start[k] / 8 * 8 : C->start[k];
        const int ext = (C->end[k] - C->start[k] + 7) / 8 * 8;
        *H = !C->isk[k] && ext > *H ? ext : *H;
    }
    /* Slots by stage: a row's slot is free from the stage after its last reader. */
    int nslot = 0, nfree = 0;
    int *freed = C->list + C->nlist;
    for (int s = 0; s <= d1 - d0; s++) {
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            if (!C->isk[k] && C->death[k] == s - 1)
                freed[nfree++] = C->slot[k];
        }
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            const int born = k >= C->n ? 0 : C->depth[k] - d0;
            if (!C->isk[k] && born == s)
                C->slot[k] = nfree ? freed[--nfree] : nslot++;
        }
    }
    return nslot;
}

/* The last group_rows' descriptors for tiles of T samples, from D[*nd]:
 * its staged rows, then its rows stage by stage. */
static void group_emit(const ctx *C, int d0, int d1, int T, ddtk_fdmt_group *G,
                       ddtk_fdmt_op *D, int *nd)
{
    _Static_assert(sizeof(ddtk_fdmt_ext) == sizeof(ddtk_fdmt_op),
                   "a group's descriptors share one array");
    const int np = DDTK_FDMT_PACK / C->esize;     /* samples a pack holds */
    memset(G, 0, sizeof *G);
    G->desc0 = *nd;
    G->nstage = d1 - d0;
    for (int i = 0; i < C->nlist; i++) {
        const int k = C->list[i];
        if (k < C->n)
            continue;
        const int ch = k - C->n < C->nchan;
        const ddtk_fdmt_ext e = { C->slot[k], ch ? DDTK_FDMT_IN : DDTK_FDMT_ROW,
                                  ch ? k - C->n : C->gid[k - C->n - C->nchan], C->lim[k],
                                  C->start[k], { 0, 0, 0 } };
        memcpy(&D[(*nd)++], &e, sizeof e);
        G->next++;
    }
    for (int s = 1; s <= d1 - d0; s++)
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            if (k >= C->n || C->depth[k] != d0 + s)
                continue;
            const item *x = &C->it[k];
            const int u = key_of(C, d0, x->ukind, x->uref);
            const int l = x->lkind == DDTK_FDMT_NONE ? -1 : key_of(C, d0, x->lkind, x->lref);
            ddtk_fdmt_op o;
            o.u = C->slot[u];
            o.su = C->start[k] + x->ua - C->start[u];
            o.l = l < 0 ? -1 : C->slot[l];
            o.sl = l < 0 ? 0 : C->start[k] + x->la - C->start[l];
            o.dst = C->isk[k] ? (x->dkind == DDTK_FDMT_OUT ? -2 : -1) : C->slot[k];
            o.npk = C->isk[k] ? T / np : (T + C->end[k] - C->start[k] + np - 1) / np;
            o.gref = x->dkind == DDTK_FDMT_OUT ? x->dref
                     : x->dkind == DDTK_FDMT_ROW ? C->gid[x->dref] : 0;
            o.glim = x->dlim;
            D[(*nd)++] = o;
            G->nops[s - 1]++;
            G->nop++;
        }
}

/* Targets tg[0 .. nt) (item order) split node by node into groups of at
 * most gmax: group i is tg[gs[i] .. gs[i + 1]). */
static int band_groups(const ctx *C, const int *tg, int nt, int gmax, int *gs)
{
    int ng = 0;
    for (int a = 0; a < nt;) {
        int b = a;
        while (b < nt && C->inode[tg[b]] == C->inode[tg[a]])
            b++;
        const int parts = (b - a + gmax - 1) / gmax;
        for (int j = 0; j < parts; j++)
            gs[ng++] = a + (int)((int64_t)(b - a) * j / parts);
        a = b;
    }
    gs[ng] = nt;
    return ng;
}

/* A band's shape: groups of at most gmax targets, tiles of T samples,
 * slots of T + H + PAD samples (nslot a block), ndesc descriptors a group
 * at most, rows descriptors in all; the modelled bytes per output sample. */
typedef struct shape {
    int gmax, T, H, nslot, ndesc;
    size_t rows;
    double cost;
} shape;

/* A slot holds a pack more than its rows read: a shifted read takes the
 * pack after the last one, which must not be another slot's. */
#define PAD 8

/* Shared memory a block of shape h takes with tiles of T samples: the
 * slots, a spare pack, one group's descriptors. */
static size_t smem_of(const shape *h, int T, int esize)
{
    return (size_t)h->nslot * (T + h->H + PAD) * esize + 64
           + (size_t)h->ndesc * sizeof(ddtk_fdmt_op);
}

/* The group size and tile of band (d0, d1] that move the fewest bytes per
 * output sample (staged rows read, targets written, and a warp's sums in
 * shared memory counted as 0.3 bytes a lane's sample, idle lanes
 * included) within `budget` bytes of shared memory a block: best->gmax 0
 * where none fits. */
static void choose(ctx *C, const int *tg, int nt, int d0, int d1, size_t budget, int *gs,
                   shape *best)
{
    best->gmax = 0;
    for (int gm = GROUP_MAX; gm >= 1; gm /= 2) {
        const int ng = band_groups(C, tg, nt, gm, gs);
        shape h = { gm, 0, 0, 1, 0, 0, 0 };
        double next = 0, ops = 0, outb = 0;
        for (int g = 0; g < ng; g++) {
            int H;
            const int s = group_rows(C, tg + gs[g], gs[g + 1] - gs[g], d0, d1, &H);
            h.nslot = s > h.nslot ? s : h.nslot;
            h.H = H > h.H ? H : h.H;
            h.ndesc = C->nlist > h.ndesc ? C->nlist : h.ndesc;
            for (int i = 0; i < C->nlist; i++) {
                const int k = C->list[i];
                next += k >= C->n;
                ops += k < C->n;
                outb += C->isk[k] ? (C->it[k].dkind == DDTK_FDMT_OUT ? 4 : C->esize) : 0;
            }
        }
        h.rows = (size_t)(next + ops);
        const int warp = 32 * DDTK_FDMT_PACK / C->esize;      /* samples a warp's pass makes */
        for (int t = 8; t <= TILE_MAX && smem_of(&h, t, C->esize) <= budget; t += 8) {
            const double passes = (t + h.H + PAD + warp - 1) / warp;  /* of a warp over a row */
            h.T = t;
            h.cost = (next * C->esize * (t + h.H) + 0.3 * ops * warp * passes) / t + outb;
            if (!best->gmax || h.cost < best->cost)
                *best = h;
        }
    }
}

/* Band (d0, d1] planned into *B. */
static int plan_band(ctx *C, int d0, int d1, size_t budget, ddtk_fdmt_band *B, double *bytes)
{
    int nt = 0;
    for (int k = 0; k < C->n; k++)
        if (C->depth[k] > d0 && C->depth[k] <= d1
            && (C->it[k].dkind == DDTK_FDMT_OUT || C->cdepth[C->it[k].dref] > d1))
            C->list[nt++] = k;
    int *tg = ddtk_malloc((size_t)(nt ? nt : 1) * sizeof *tg, "FDMT bands");
    int *gs = ddtk_malloc((size_t)(nt + 1) * sizeof *gs, "FDMT bands");
    shape h = { 0, 0, 0, 0, 0, 0, 0 };
    int rc = tg && gs ? DDTK_OK : DDTK_ESYS;
    if (!rc) {
        memcpy(tg, C->list, (size_t)nt * sizeof *tg);
        choose(C, tg, nt, d0, d1, budget, gs, &h);
        if (!h.gmax)
            rc = ddtk_fail(DDTK_ESYS, "FDMT: the GPU's shared memory (%zu bytes a block) "
                           "holds no group of depths %d-%d", budget, d0 + 1, d1);
    }
    const int ng = rc ? 0 : band_groups(C, tg, nt, h.gmax, gs);
    B->group = rc ? NULL : ddtk_calloc((size_t)(ng ? ng : 1), sizeof *B->group, "FDMT bands");
    B->desc = rc ? NULL : ddtk_malloc((h.rows ? h.rows : 1) * sizeof *B->desc, "FDMT bands");
    if (!rc && (!B->group || !B->desc))
        rc = DDTK_ESYS;
    B->ndesc = 0;
    for (int g = 0; !rc && g < ng; g++) {
        int H;
        group_rows(C, tg + gs[g], gs[g + 1] - gs[g], d0, d1, &H);
        group_emit(C, d0, d1, h.T, &B->group[g], B->desc, &B->ndesc);
    }
    B->d0 = d0;
    B->d1 = d1;
    B->tile = h.T;
    B->pitch = h.T + h.H + PAD;
    B->ngroup = ng;
    B->nslot = h.nslot;
    B->smem = smem_of(&h, h.T, C->esize);
    B->lim = 0;
    for (int i = 0; i < B->ndesc; i++)
        B->lim = B->desc[i].dst == -1 && B->desc[i].glim > B->lim ? B->desc[i].glim : B->lim;
    *bytes += h.cost;
    free(tg);
    free(gs);
    return rc;
}

/* Depths (0, cut[1]], (cut[1], cut[2]], ...: BAND0 at the bottom, the rest
 * in near-equal bands of at most BANDN; returns how many. */
static int band_cuts(int ndepth, int *cut)
{
    cut[0] = 0;
    cut[1] = ndepth < BAND0 ? ndepth : BAND0;
    const int r = ndepth - cut[1], nb = (r + BANDN - 1) / BANDN;
    for (int j = 1; j <= nb; j++)
        cut[1 + j] = cut[1] + (int)((int64_t)r * j / nb);
    return 1 + nb;
}

/* Each stored row's item and reader depth; the stored targets' ids. */
static void link_rows(ctx *C, ddtk_fdmt_bands *B, const int *cut, int nb)
{
    for (int k = 0; k < C->n; k++) {
        const item *x = &C->it[k];
        if (x->dkind == DDTK_FDMT_ROW)
            C->rowitem[x->dref] = k;
        if (x->ukind == DDTK_FDMT_ROW)
            C->cdepth[x->uref] = C->depth[k];
        if (x->lkind == DDTK_FDMT_ROW)
            C->cdepth[x->lref] = C->depth[k];
    }
    B->nstore = 0;
    for (int b = 0; b < nb; b++)
        for (int k = 0; k < C->n; k++)
            if (C->depth[k] > cut[b] && C->depth[k] <= cut[b + 1]
                && C->it[k].dkind == DDTK_FDMT_ROW)
                C->gid[C->it[k].dref] = C->cdepth[C->it[k].dref] > cut[b + 1] ? B->nstore++ : -1;
}

int ddtk_fdmt_bands_init(ddtk_fdmt_bands *B, const ddtk_fdmt_plan *f, int esize, size_t budget)
{
    memset(B, 0, sizeof *B);
    B->esize = esize;
    ctx C;
    memset(&C, 0, sizeof C);
    C.f = f;
    C.nchan = f->nrows;
    C.esize = esize;
    const int ndepth = f->depth > 0 ? f->depth : 1;
    int rc = (C.rowbase = ddtk_malloc((size_t)f->nnode * sizeof *C.rowbase, "FDMT rows"))
             ? DDTK_OK : DDTK_ESYS;
    if (!rc) {
        store_rows(&C, B);
        rc = build_items(&C, ndepth);
    }
    const int nkeys = C.n + C.nchan + C.nrows, nr = C.nrows ? C.nrows : 1;
    int **arrays[] = { &C.rowitem, &C.cdepth, &C.gid, &C.stamp, &C.start, &C.end,
                       &C.death, &C.slot, &C.lim, &C.isk, &C.list };
    const int sizes[] = { nr, nr, nr, nkeys, nkeys, nkeys, nkeys, nkeys, nkeys, nkeys,
                          2 * nkeys };
    for (int i = 0; !rc && i < 11; i++)
        if (!(*arrays[i] = ddtk_calloc((size_t)sizes[i], sizeof(int), "FDMT bands")))
            rc = DDTK_ESYS;
    int cut[64];                  /* depths: below 32 (channels below 2^31) */
    const int nb = band_cuts(ndepth, cut);
    if (!rc && !(B->band = ddtk_calloc((size_t)nb, sizeof *B->band, "FDMT bands")))
        rc = DDTK_ESYS;
    if (!rc)
        link_rows(&C, B, cut, nb);
    for (int b = 0; !rc && b < nb; b++)
        rc = plan_band(&C, cut[b], cut[b + 1], budget, &B->band[B->nband++], &B->bytes);
    for (int i = 0; i < 11; i++)
        free(*arrays[i]);
    free(C.rowbase);
    free(C.it);
    free(C.inode);
    free(C.depth);
    if (rc)
        ddtk_fdmt_bands_free(B);
    return rc;
}

void ddtk_fdmt_bands_free(ddtk_fdmt_bands *B)
{
    for (int b = 0; B->band && b < B->nband; b++) {
        free(B->band[b].group);
        free(B->band[b].desc);
    }
    free(B->band);
    memset(B, 0, sizeof *B);
}
