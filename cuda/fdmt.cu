/*
 * fdmt.cu - the GPU half of the FDMT (src/algos/fdmt.c has the descriptor and the
 * merge tree, cpu/fdmt.c the CPU kernel): the tree's merge depths fused a
 * few at a time into kernels that keep the rows between them in shared
 * memory.
 *
 * The depths are cut into stages: depths 1-4, then three at a time (the
 * root's stage takes up to four). A stage is one kernel. Each of its blocks
 * makes a group of the stage's top rows (a window of consecutive rows of a
 * node whose parent lies in a later stage, or of the root's DMs) along a
 * strip of output samples, TILE samples a step (strips as long as the
 * launch keeps WAVES blocks per multiprocessor, at most STEPS steps: a
 * gulp may be short). Every row the group reads lives in shared memory as
 * a ring holding what one step reads of it (TILE samples plus the spread
 * of the tracks' shifts): the rows of the stage below (or the input,
 * decoded) are loaded from DRAM, TILE new samples a step, and the stage's
 * own rows below the top are made there, TILE new samples a step; the top
 * rows go to DRAM (the root's: the DMs' series). The host walks each
 * group's tracks once, at create, into items (one row each: operands and
 * their shifts, sample range, destination), sorted by depth; a step runs
 * them a depth at a time, a warp making BATCH items at once (their reads
 * in flight together), samples across the lanes.
 *
 * Each row is upper[t] + lower[t + mid] as on the CPU: the same operands in
 * the same order, so every series equals the CPU's byte for byte (float
 * input included). A ring's first step may compute samples no consumer
 * reads, from reads clamped to zero; they never reach an output.
 *
 * DRAM traffic per output sample (-v prints the model per level): each
 * group loads its source rows once (4 bytes a sample, 1 or 2 for integer
 * input) and writes its top rows; stored rows are 16-bit integers where
 * their sums fit (integer input: exact either way), else floats. For htru's
 * level 0 (1024 channels, 1337 DMs, 13071 rows a sample over 10 depths) the
 * old kernels, one per depth through DRAM, moved 12 bytes per row, about
 * 157 KB a sample. In three stages (depths 1-4, 5-7, 8-10) the input is
 * read once (1 KB at 8 bits), about 1300 rows are written at each of
 * depths 4 and 7 (2 bytes) and read back about 1.2 times (windows of
 * tracks share the rows below them but for the rounding's extra row per
 * node), and the DMs are written (4 bytes): about 18 KB a sample, 5.3 KB of
 * it the output (26 KB with float rows).
 */
#include "check.cuh"
#include "engine.cuh"
#include "fdmt.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define THREADS 256
#define WARPS (THREADS / 32)
#define TILE 64                   /* output samples a block adds per step (a multiple of 32) */
#define STEPS 64                  /* the most steps of a block: a strip of TILE * STEPS outputs */
#define BATCH 4                   /* items a warp makes at once in a step */
#define WAVES 8                   /* blocks a launch aims at per multiprocessor */
#define SMEM_MOST (64 * 1024)     /* shared memory of a block (three to an H100 multiprocessor),
                                     or the device's most */
#define MAX_STAGES 16
#define MAX_PHASES 8              /* depths of a stage */
#define MAX_GRID_Y 65535

/* Where an operand comes from or a row goes: shared memory (a ring: sample
 * t at ref + (t & lim)), a stored row of the buffer (ref: its row, lim:
 * it holds nout + lim samples), an input row, nothing (a one-row band), a
 * DM's series. */
enum { K_SMEM, K_ROW, K_IN, K_NONE, K_OUT };

struct Opnd {
    int kind, ref, lim;
};

/* One row of a group over samples t0 + [s, s + n) at a block's first step,
 * t0 + [s + n - TILE, s + n) at the later ones: d[t] = u[t + a] + l[t + b]. */
struct Item {
    Opnd u, l, d;
    int a, b, s, n;
};

/* An item as the kernel reads it (three 16-byte loads): the operands' and
 * the destination's ref and lim, their kinds in kinds (u, l, d: 4 bits
 * each from bit 0). */
struct __align__(16) Op {
    int uref, ulim, lref, llim;
    int dref, dlim, a, b;
    int s, n, kinds, pad;
};

static Op pack(const Item &x)
{
    return Op{ x.u.ref, x.u.lim, x.l.ref, x.l.lim, x.d.ref, x.d.lim, x.a, x.b, x.s, x.n,
               x.u.kind | x.l.kind << 4 | x.d.kind << 8, 0 };
}

/* A block's work: items [ph[p], ph[p + 1]) are depth p of the stage's;
 * lim: its outputs stop at nout + lim. */
struct Group {
    int nphase, lim;
    int ph[MAX_PHASES + 1];
};

struct Stage {
    int ng, nitem, lim;
    size_t smem;
    Group *d_g;
    Op *d_i;
    double bytes;                 /* DRAM bytes per output sample (the model) */
};

struct Buffers {
    cudaStream_t st;
    void *rows;
    size_t bytes;
};

struct FdmtLevel {
    const ddtk_fdmt_plan *f;
    Encoding enc;
    int nstage;
    Stage stage[MAX_STAGES];
    int nrows;                    /* stored rows (tops of the stages below the root's) */
    int narrow;                   /* stored as 16-bit integers */
    int64_t blocks;               /* blocks a launch aims at: WAVES per multiprocessor */
    int64_t reach;                /* the most a stored row holds past the outputs */
    Buffers buf[2];
};

/* A launch's arrays: the input rows (stride istride, inlen samples valid,
 * integer codes less bias), the stored rows (pitch apart), the series. */
template <typename T, typename S>
struct Args {
    const T *in;
    int64_t istride, inlen;
    int bias;
    S *rows;                      /* floats, or 16-bit integers where every stored sum fits one
                                     (integer input): the same values either way */
    int64_t pitch, nout;
    float *out;
    int64_t ostride;
};

template <typename T, typename S>
__device__ __forceinline__ float fetch(int kind, int ref, int lim, int64_t g, const float *sm,
                                       const Args<T, S> &A)
{
    if (kind == K_SMEM)
        return sm[ref + ((int)g & lim)];
    if (kind == K_ROW)
        return g < A.nout + lim ? (float)A.rows[(int64_t)ref * A.pitch + g] : 0.0f;
    return g < A.inlen ? decode<T>(A.in[(int64_t)ref * A.istride + g], A.bias) : 0.0f;
}

/* Sample g of item x: upper plus lower, as on the CPU. */
template <typename T, typename S>
__device__ __forceinline__ float value_of(const Op &x, int64_t g, const float *sm,
                                          const Args<T, S> &A)
{
    const int lk = x.kinds >> 4 & 15;
    float v = fetch<T, S>(x.kinds & 15, x.uref, x.ulim, g + x.a, sm, A);
    if (lk != K_NONE)
        v = v + fetch<T, S>(lk, x.lref, x.llim, g + x.b, sm, A);
    return v;
}

/* Store sample g of a row to its destination (kind dk; K_NONE: nowhere). */
template <typename T, typename S>
__device__ __forceinline__ void put(int dk, int ref, int lim, int64_t g, float v, float *sm,
                                    const Args<T, S> &A)
{
    if (dk == K_SMEM)
        sm[ref + ((int)g & lim)] = v;
    else if (dk == K_ROW && g < A.nout + lim)
        A.rows[(int64_t)ref * A.pitch + g] = (S)v;
    else if (dk == K_OUT && g < A.nout)
        A.out[(int64_t)ref * A.ostride + g] = v;
}

/* A strip's first step: every item over its whole range, a warp per item. */
template <typename T, typename S>
__device__ void first_step(const Group &g, int64_t t0, float *sm, const Op *I,
                           const Args<T, S> &A)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int p = 0; p < g.nphase; p++) {
        for (int k = g.ph[p] + warp; k < g.ph[p + 1]; k += WARPS) {
            const Op x = I[k];
            for (int t = x.s + lane; t < x.s + x.n; t += 32)
                put<T, S>(x.kinds >> 8, x.dref, x.dlim, t0 + t, value_of<T, S>(x, t0 + t, sm, A),
                          sm, A);
        }
        __syncthreads();
    }
}

/* A later step: the TILE new samples of every item, BATCH items a warp at a
 * time, their reads in flight together before any store. */
template <typename T, typename S>
__device__ void next_step(const Group &g, int64_t t0, float *sm, const Op *I,
                          const Args<T, S> &A)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int p = 0; p < g.nphase; p++) {
        const int end = g.ph[p + 1];
        for (int k0 = g.ph[p] + warp * BATCH; k0 < end; k0 += WARPS * BATCH) {
            float v[BATCH][TILE / 32];
            int dk[BATCH], dref[BATCH], dlim[BATCH];
            int64_t g0[BATCH];
#pragma unroll
            for (int b = 0; b < BATCH; b++) {
                dk[b] = K_NONE;
                dref[b] = dlim[b] = 0;
                g0[b] = 0;
                if (k0 + b < end) {
                    const Op x = I[k0 + b];
                    dk[b] = x.kinds >> 8;
                    dref[b] = x.dref;
                    dlim[b] = x.dlim;
                    g0[b] = t0 + x.s + x.n - TILE + lane;
#pragma unroll
                    for (int i = 0; i < TILE / 32; i++)
                        v[b][i] = value_of<T, S>(x, g0[b] + 32 * i, sm, A);
                }
            }
#pragma unroll
            for (int b = 0; b < BATCH; b++)
#pragma unroll
                for (int i = 0; i < TILE / 32; i++)
                    put<T, S>(dk[b], dref[b], dlim[b], g0[b] + 32 * i, v[b][i], sm, A);
        }
        __syncthreads();
    }
}

/* One stage: blockIdx.x the strip (steps x TILE samples), y the group. */
template <typename T, typename S>
__global__ void stage_kernel(const Group *G, int ng, const Op *I, int steps, Args<T, S> A)
{
    extern __shared__ float sm[];
    for (int gi = blockIdx.y; gi < ng; gi += gridDim.y) {
        const Group g = G[gi];
        for (int j = 0; j < steps; j++) {
            const int64_t t0 = ((int64_t)blockIdx.x * steps + j) * TILE;
            if (t0 >= A.nout + g.lim)
                break;
            if (j == 0)
                first_step<T, S>(g, t0, sm, I, A);
            else
                next_step<T, S>(g, t0, sm, I, A);
        }
    }
}

/* ---- the stages (host) -------------------------------------------------------- */

/* A row made in a group's shared memory: node, row, depth, samples [lo, hi)
 * past a step's t0, its ring (size: a power of two) at off. */
struct Local {
    int node, row, depth, lo, hi, off, size;
};

struct Builder {
    const ddtk_fdmt_plan *f;
    int cut_lo, cut_hi;           /* the stage: depths (cut_lo, cut_hi] */
    int rowsize;                  /* bytes of a stored row's sample */
    const int *rowbase;           /* stored rows: a node's first (-1: not stored) */
    int **slot;                   /* per node and row: its Local (-1: none) */
    Local *loc;
    int nloc, cap_loc;
    Item *it;
    int *dep;                     /* per item: its depth */
    int nit, cap_it, cap_dep;
    int err;
};

static int grow(void **p, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return 0;
    int n = *cap ? *cap : 256;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, (size_t)n * size);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int need_of(const ddtk_fdmt_plan *f, int s, int row)
{
    return f->node[s].route[4 * (size_t)row + 3];
}

/* Where row `row` of node s below the stage is read from: an input or a
 * stored row. */
static Opnd source(const Builder *B, int s, int row)
{
    const ddtk_fdmt_node *n = &B->f->node[s];
    if (n->up < 0)
        return Opnd{ K_IN, n->a, 0 };
    return Opnd{ K_ROW, B->rowbase[s] + row, need_of(B->f, s, row) };
}

/* The operand for row `row` of node s read over samples [lo, hi) past a
 * step's t0: a row in shared memory (made a Local, or its range widened;
 * ref is the Local until the layout), made there by the stage or, for rows
 * below it (depth cut_lo here), loaded. */
static Opnd operand(Builder *B, int s, int row, int lo, int hi)
{
    const ddtk_fdmt_node *n = &B->f->node[s];
    const int depth = n->depth > B->cut_lo ? n->depth : B->cut_lo;
    int k = B->slot[s][row];
    if (k < 0) {
        if (grow((void **)&B->loc, &B->cap_loc, B->nloc + 1, sizeof *B->loc)) {
            B->err = 1;
            return Opnd{ K_NONE, 0, 0 };
        }
        k = B->slot[s][row] = B->nloc++;
        B->loc[k] = Local{ s, row, depth, lo, hi, 0, 0 };
    }
    Local *L = &B->loc[k];
    L->lo = lo < L->lo ? lo : L->lo;
    L->hi = hi > L->hi ? hi : L->hi;
    return Opnd{ K_SMEM, k, 0 };
}

static Item *new_item(Builder *B, int depth)
{
    if (grow((void **)&B->it, &B->cap_it, B->nit + 1, sizeof *B->it)
        || grow((void **)&B->dep, &B->cap_dep, B->nit + 1, sizeof *B->dep)) {
        B->err = 1;
        return NULL;
    }
    B->dep[B->nit] = depth;
    return &B->it[B->nit++];
}

/* Item for the row of node s routed by r (children's rows r[0], r[1], the
 * lower one shifted by r[2]) over [s0, s0 + n), both operands shifted by a
 * more; its destination is the caller's. */
static Item *node_item(Builder *B, int s, const int32_t *r, int s0, int n, int a)
{
    const ddtk_fdmt_node *N = &B->f->node[s];
    Item *x = new_item(B, N->depth);
    if (!x)
        return NULL;
    x->a = a;
    x->b = a + r[2];
    x->s = s0;
    x->n = n;
    x->u = operand(B, N->up, r[0], s0 + x->a, s0 + n + x->a);
    x->l = operand(B, N->lo, r[1], s0 + x->b, s0 + n + x->b);
    return x;
}

/* The group whose top items are made (B->it): its shared rows,
 * their layout and the items in depth order, appended to *items (insize:
 * bytes of an input sample; *reads gains the DRAM bytes a tile reads).
 * Returns the shared bytes, or -1. */
static long finish_group(Builder *B, Group *g, Op **items, int *nitems, int *cap,
                         int insize, double *reads)
{
    /* Shared rows from the top down: a row's consumers lie at higher depths,
     * so its range is whole when its depth comes. */
    for (int d = B->cut_hi; d > B->cut_lo && !B->err; d--)
        for (int k = 0; k < B->nloc && !B->err; k++) {
            if (B->loc[k].depth != d)
                continue;
            const Local L = B->loc[k];
            const int32_t *r = B->f->node[L.node].route + 4 * (size_t)L.row;
            Item *x = node_item(B, L.node, r, L.lo, L.hi - L.lo, 0);
            if (x)
                x->d = Opnd{ K_SMEM, k, 0 };
        }
    /* The rows below, each loaded once a step. */
    for (int k = 0; k < B->nloc && !B->err; k++) {
        const Local L = B->loc[k];
        Item *x = L.depth == B->cut_lo ? new_item(B, L.depth) : NULL;
        if (x)
            *x = Item{ source(B, L.node, L.row), Opnd{ K_NONE, 0, 0 }, Opnd{ K_SMEM, k, 0 }, 0,
                       0, L.lo, L.hi - L.lo };
    }
    if (B->err || grow((void **)items, cap, *nitems + B->nit, sizeof **items))
        return -1;
    /* Layout: each row's ring holds what a step reads of it (the later
     * steps keep the samples a step shares with the one before). */
    long fill = 0;
    for (int k = 0; k < B->nloc; k++) {
        int size = 32;
        while (size < B->loc[k].hi - B->loc[k].lo)
            size *= 2;
        B->loc[k].off = (int)fill;
        B->loc[k].size = size;
        fill += size;
    }
    /* Items in depth order (the loads first; a one-row band's root, depth 0,
     * with them), shared references resolved to their rings. */
    g->nphase = B->cut_hi - B->cut_lo + 1;
    for (int p = 0; p < g->nphase; p++) {
        g->ph[p] = *nitems;
        for (int k = 0; k < B->nit; k++) {
            if (B->dep[k] - B->cut_lo != p)
                continue;
            Item y = B->it[k];
            Opnd *o[3] = { &y.u, &y.l, &y.d };
            for (int j = 0; j < 3; j++)
                if (o[j]->kind == K_SMEM) {
                    const Local *L = &B->loc[o[j]->ref];
                    *o[j] = Opnd{ K_SMEM, L->off, L->size - 1 };
                }
            for (int j = 0; j < 2; j++)
                if (o[j]->kind == K_ROW || o[j]->kind == K_IN)
                    *reads += (double)TILE * (o[j]->kind == K_IN ? insize : B->rowsize);
            (*items)[(*nitems)++] = pack(y);
        }
    }
    g->ph[g->nphase] = *nitems;
    for (int k = 0; k < B->nloc; k++)
        B->slot[B->loc[k].node][B->loc[k].row] = -1;
    B->nloc = 0;
    B->nit = 0;
    return fill * (long)sizeof(float);
}

/* A stage's groups for windows of W top rows, on the host. */
struct HostStage {
    Group *g;
    Op *it;
    int ng, cap_g, nit, cap_it, lim;
    long smem;
    double reads, tops;
};

static void host_stage_free(HostStage *h)
{
    free(h->g);
    free(h->it);
    memset(h, 0, sizeof *h);
}

static int add_group(Builder *B, HostStage *h, int lim, int insize)
{
    if (B->err || grow((void **)&h->g, &h->cap_g, h->ng + 1, sizeof *h->g))
        return DDTK_ESYS;
    Group *g = &h->g[h->ng];
    g->lim = lim;
    long smem = finish_group(B, g, &h->it, &h->nit, &h->cap_it, insize, &h->reads);
    if (smem < 0)
        return DDTK_ESYS;
    h->smem = smem > h->smem ? smem : h->smem;
    h->lim = lim > h->lim ? lim : h->lim;
    h->ng++;
    return DDTK_OK;
}

/* The root's stage: groups of W DMs. */
static int root_groups(Builder *B, HostStage *h, int W, int insize)
{
    const ddtk_fdmt_plan *f = B->f;
    const int R = f->nnode - 1;
    int rc = DDTK_OK;
    for (int d0 = 0; !rc && d0 < f->ndm; d0 += W) {
        for (int d = d0; d < f->ndm && d < d0 + W; d++) {
            const int32_t *r = f->out_route + 4 * (size_t)d;
            Item *x;
            if (f->node[R].up < 0) {
                if ((x = new_item(B, 0)))
                    *x = Item{ Opnd{ K_IN, f->node[R].a, 0 }, Opnd{ K_NONE, 0, 0 },
                               Opnd{ K_OUT, d, 0 }, r[3], 0, 0, TILE };
            } else if ((x = node_item(B, R, r, 0, TILE, r[3]))) {
                x->d = Opnd{ K_OUT, d, 0 };
            }
            h->tops++;
        }
        rc = add_group(B, h, 0, insize);
    }
    return rc;
}

/* A lower stage: windows of W computed rows of each stored node of it. */
static int node_groups(Builder *B, HostStage *h, int W, const int *stage_of, int k, int insize)
{
    const ddtk_fdmt_plan *f = B->f;
    int rc = DDTK_OK;
    for (int s = 0; !rc && s < f->nnode - 1; s++) {
        const ddtk_fdmt_node *N = &f->node[s];
        if (B->rowbase[s] < 0 || stage_of[N->depth] != k)
            continue;
        for (int i0 = 0; !rc && i0 < N->nd; i0 += W) {
            int lim = -1;
            for (int i = i0; i < N->nd && i < i0 + W; i++) {
                const int32_t *r = N->route + 4 * (size_t)i;
                if (r[3] < 0)
                    continue;
                Item *x = node_item(B, s, r, 0, TILE, 0);
                if (x)
                    x->d = Opnd{ K_ROW, B->rowbase[s] + i, r[3] };
                lim = r[3] > lim ? r[3] : lim;
                h->tops++;
            }
            if (lim >= 0)
                rc = add_group(B, h, lim, insize);
        }
    }
    return rc;
}

/* ---- the level ------------------------------------------------------------------ */

static int upload(void **dst, const void *src, size_t bytes)
{
    DDTK_CUDA(cudaMalloc(dst, bytes > 0 ? bytes : 4), "allocating an FDMT table");
    if (bytes)
        DDTK_CUDA(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice),
                  "uploading an FDMT table");
    return DDTK_OK;
}

/* Stage k: the widest window (whole nodes first) whose groups fit `most`
 * bytes of shared memory. */
static int make_stage(FdmtLevel *L, Builder *B, const int *stage_of, int k, int insize, long most)
{
    static const int widths[] = { INT_MAX, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1 };
    const bool last = k == L->nstage - 1;
    HostStage h;
    int rc = DDTK_OK;
    const size_t nw = sizeof widths / sizeof *widths;
    for (size_t w = 0; w < nw; w++) {
        memset(&h, 0, sizeof h);
        rc = last ? root_groups(B, &h, widths[w], insize)
                  : node_groups(B, &h, widths[w], stage_of, k, insize);
        if (rc || h.smem <= most || w == nw - 1)
            break;
        host_stage_free(&h);
    }
    if (!rc && h.smem > most)
        rc = ddtk_fail(DDTK_EUSAGE, "FDMT: a merge stage needs %ld bytes of shared memory",
                       h.smem);
    Stage *S = &L->stage[k];
    S->ng = h.ng;
    S->nitem = h.nit;
    S->lim = h.lim;
    S->smem = (size_t)h.smem;
    S->bytes = (h.reads + (last ? 4.0 : B->rowsize) * TILE * h.tops) / TILE;
    if (!rc)
        rc = upload((void **)&S->d_g, h.g, (size_t)h.ng * sizeof *h.g);
    if (!rc)
        rc = upload((void **)&S->d_i, h.it, (size_t)h.nit * sizeof *h.it);
    host_stage_free(&h);
    return rc;
}

/* The depths each stage ends at: 4, then every 3 (the last up to 4 more). */
static int stage_cuts(int depth, int *cut)
{
    int n = 0, c = depth < 4 ? depth : 4;
    cut[n++] = c;
    while (c < depth && n < MAX_STAGES) {
        c = depth - c <= 4 ? depth : c + 3;
        cut[n++] = c;
    }
    return n;
}

/* Stored rows: the nodes read by a node of a later stage. */
static int store_rows(FdmtLevel *L, const int *stage_of, int *rowbase)
{
    const ddtk_fdmt_plan *f = L->f;
    int *parent = (int *)ddtk_malloc((size_t)f->nnode * sizeof *parent, "FDMT nodes");
    if (!parent)
        return DDTK_ESYS;
    for (int s = 0; s < f->nnode; s++) {
        parent[s] = -1;
        rowbase[s] = -1;
    }
    for (int s = 0; s < f->nnode; s++)
        if (f->node[s].up >= 0)
            parent[f->node[s].up] = parent[f->node[s].lo] = s;
    L->nrows = 0;
    int widest = 0;
    for (int s = 0; s < f->nnode - 1; s++) {
        const ddtk_fdmt_node *N = &f->node[s];
        if (N->up < 0 || stage_of[f->node[parent[s]].depth] == stage_of[N->depth])
            continue;
        rowbase[s] = L->nrows;
        L->nrows += N->nd;
        L->reach = N->reach > L->reach ? N->reach : L->reach;
        widest = N->b - N->a > widest ? N->b - N->a : widest;
    }
    free(parent);
    /* Integer samples lie in [-bias, maxval - bias]: a stored row's sums fit
     * 16 bits while its channels times the largest magnitude do. */
    const Encoding e = L->enc;
    const int64_t big = e.bias > e.maxval - e.bias ? e.bias : e.maxval - e.bias;
    L->narrow = e.storage != ST_F32 && e.maxval > 0 && big * widest <= 32767;
    return DDTK_OK;
}

static int build_stages(FdmtLevel *L, int insize, long most)
{
    const ddtk_fdmt_plan *f = L->f;
    int cut[MAX_STAGES];
    L->nstage = stage_cuts(f->depth, cut);
    int *stage_of = (int *)ddtk_malloc(((size_t)f->depth + 1) * sizeof *stage_of, "FDMT");
    int *rowbase = (int *)ddtk_malloc((size_t)f->nnode * sizeof *rowbase, "FDMT rows");
    Builder B;
    memset(&B, 0, sizeof B);
    B.f = f;
    B.rowbase = rowbase;
    B.slot = (int **)ddtk_calloc((size_t)f->nnode, sizeof *B.slot, "FDMT rows");
    int rc = stage_of && rowbase && B.slot ? DDTK_OK : DDTK_ESYS;
    for (int d = 0, k = 0; !rc && d <= f->depth; d++) {
        while (cut[k] < d)
            k++;
        stage_of[d] = k;
    }
    for (int s = 0; !rc && s < f->nnode; s++) {
        const int nd = f->node[s].nd > 0 ? f->node[s].nd : 1;
        if (!(B.slot[s] = (int *)ddtk_malloc((size_t)nd * sizeof **B.slot, "FDMT rows")))
            rc = DDTK_ESYS;
        for (int i = 0; !rc && i < nd; i++)
            B.slot[s][i] = -1;
    }
    if (!rc)
        rc = store_rows(L, stage_of, rowbase);
    B.rowsize = L->narrow ? 2 : 4;
    for (int k = 0; !rc && k < L->nstage; k++) {
        B.cut_lo = k ? cut[k - 1] : 0;
        B.cut_hi = cut[k];
        rc = make_stage(L, &B, stage_of, k, insize, most);
    }
    for (int s = 0; B.slot && s < f->nnode; s++)
        free(B.slot[s]);
    free(B.slot);
    free(B.loc);
    free(B.it);
    free(B.dep);
    free(stage_of);
    free(rowbase);
    return rc;
}

static void destroy(void *state)
{
    FdmtLevel *L = (FdmtLevel *)state;
    if (!L)
        return;
    for (int k = 0; k < L->nstage; k++) {
        cudaFree(L->stage[k].d_g);
        cudaFree(L->stage[k].d_i);
    }
    for (int i = 0; i < 2; i++)
        cudaFree(L->buf[i].rows);
    free(L);
}

template <typename T>
static int allow_smem(size_t bytes)
{
    DDTK_CUDA(cudaFuncSetAttribute(stage_kernel<T, float>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes),
              "configuring the FDMT kernel");
    DDTK_CUDA(cudaFuncSetAttribute(stage_kernel<T, int16_t>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes),
              "configuring the FDMT kernel");
    return DDTK_OK;
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    (void)p;
    FdmtLevel *L = (FdmtLevel *)ddtk_calloc(1, sizeof *L, "GPU FDMT level");
    if (!L)
        return DDTK_ESYS;
    *state = L;
    L->f = (const ddtk_fdmt_plan *)lv->state;
    L->enc = enc;
    L->blocks = (int64_t)WAVES * prop.multiProcessorCount;
    *slack = 0;                   /* input reads past nout + overlap are clamped */
    const int insize = enc.storage == ST_U8 ? 1 : enc.storage == ST_U16 ? 2 : 4;
    /* The same bound for every level: the kernel's attribute is the process's. */
    const long most = (long)prop.sharedMemPerBlockOptin < SMEM_MOST
                          ? (long)prop.sharedMemPerBlockOptin : SMEM_MOST;
    int rc = build_stages(L, insize, most);
    if (rc)
        return rc;
    if (enc.storage == ST_U8)
        return allow_smem<uint8_t>((size_t)most);
    if (enc.storage == ST_U16)
        return allow_smem<uint16_t>((size_t)most);
    return allow_smem<float>((size_t)most);
}

static int64_t pitch_of(const FdmtLevel *L, int64_t nout)
{
    return ddtk_round_up(nout + L->reach, 64);
}

static int64_t row_bytes(const FdmtLevel *L, int64_t nout)
{
    return pitch_of(L, nout) * (L->narrow ? 2 : 4);
}

static int64_t dev_bytes(const void *state, int64_t most)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    return (int64_t)L->nrows * row_bytes(L, most);
}

/* Stream st's stored rows, grown to `bytes` (contents not kept). */
static int reserve(FdmtLevel *L, cudaStream_t st, size_t bytes, Buffers **out)
{
    Buffers *B = L->buf[0].st == st || !L->buf[0].st ? &L->buf[0] : &L->buf[1];
    B->st = st;
    *out = B;
    if (B->bytes >= bytes)
        return DDTK_OK;
    cudaFree(B->rows);
    B->rows = NULL;
    B->bytes = 0;
    DDTK_CUDA(cudaMalloc(&B->rows, bytes ? bytes : 4), "allocating FDMT rows");
    B->bytes = bytes;
    return DDTK_OK;
}

template <typename T, typename S>
static int run(FdmtLevel *L, const Buffers *B, const void *rows, int64_t stride, int64_t nout,
               float *out, int64_t ostride, cudaStream_t st)
{
    const Args<T, S> A = { (const T *)rows, stride, nout + L->f->overlap, L->enc.bias,
                           (S *)B->rows, pitch_of(L, nout), nout, out, ostride };
    for (int k = 0; k < L->nstage; k++) {
        const Stage *G = &L->stage[k];
        if (G->ng == 0)
            continue;
        /* Strips as long as the launch still has `blocks` blocks (a strip's
         * first step makes its rings whole: the longer, the less of that). */
        const int64_t tiles = (nout + G->lim + TILE - 1) / TILE;
        const int64_t strips = (L->blocks + G->ng - 1) / G->ng;
        const int64_t steps = tiles / strips < 1 ? 1 : tiles / strips < STEPS ? tiles / strips
                                                                              : STEPS;
        dim3 grid((unsigned)((tiles + steps - 1) / steps),
                  (unsigned)(G->ng < MAX_GRID_Y ? G->ng : MAX_GRID_Y));
        stage_kernel<T, S><<<grid, THREADS, G->smem, st>>>(G->d_g, G->ng, G->d_i, (int)steps, A);
        DDTK_CUDA(cudaGetLastError(), "launching an FDMT stage");
    }
    return DDTK_OK;
}

template <typename T>
static int run_input(FdmtLevel *L, const Buffers *B, const void *rows, int64_t stride,
                     int64_t nout, float *out, int64_t ostride, cudaStream_t st)
{
    if (L->narrow)
        return run<T, int16_t>(L, B, rows, stride, nout, out, ostride, st);
    return run<T, float>(L, B, rows, stride, nout, out, ostride, st);
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    FdmtLevel *L = (FdmtLevel *)state;
    if (nout <= 0)
        return DDTK_OK;
    Buffers *B;
    int rc = reserve(L, st, (size_t)L->nrows * (size_t)row_bytes(L, nout), &B);
    if (rc)
        return rc;
    if (L->enc.storage == ST_U8)
        return run_input<uint8_t>(L, B, rows, stride, nout, out, ostride, st);
    if (L->enc.storage == ST_U16)
        return run_input<uint16_t>(L, B, rows, stride, nout, out, ostride, st);
    return run_input<float>(L, B, rows, stride, nout, out, ostride, st);
}

/* -v: the stages, their shared memory and the traffic model. */
static void report(const void *state, char *buf, size_t n)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    double bytes = 0;
    size_t smem = 0;
    for (int k = 0; k < L->nstage; k++) {
        bytes += L->stage[k].bytes;
        smem = L->stage[k].smem > smem ? L->stage[k].smem : smem;
    }
    snprintf(buf, n, "fdmt: %d DMs, %d merge depths in %d kernels, %d stored rows (%s), %lld "
             "adds per output, DRAM model %.3g KB per output sample, shared memory %zu bytes",
             L->f->ndm, L->f->depth, L->nstage, L->nrows, L->narrow ? "16-bit" : "float",
             (long long)L->f->adds, bytes / 1e3, smem);
}

}  // namespace ddgpu

extern "C" const ddtk_gpu_algo ddtk_gpu_fdmt = { ddgpu::create, ddgpu::gulp, ddgpu::report,
                                                 ddgpu::destroy, ddgpu::dev_bytes, NULL };
