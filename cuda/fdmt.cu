/*
 * fdmt.cu - the GPU half of the FDMT (src/algos/fdmt.c has the descriptor and the
 * merge tree, cpu/fdmt.c the CPU kernel): every row of the merge tree's
 * nodes (the root's: the DMs' series) made from two rows below it.
 *
 * At create the host walks the tree once into items, one per computed row:
 * its two operands (a stored row of a child, or an input row for a leaf)
 * with their shifts, and its destination (a stored row, or a DM's series),
 * grouped by depth.
 *
 * The depths run in bands of up to five (BAND0, BANDN), a launch a band
 * (band_kernel). A band's targets are the rows read above it (or the DMs);
 * the host splits them into groups (up to 64 rows of one node) and lists
 * what each group needs: the rows it stages from device memory (input
 * rows, or targets of the band below) and every row between, each with a
 * window of samples relative to a tile and a slot of shared memory (slots
 * reused once their last reader's depth is done). A block stages a tile's
 * rows and makes the group's rows depth by depth in slots, the targets
 * into device memory: the rows between never leave the multiprocessor.
 * Rows are 16-bit integers summed two to a word where every stored sum
 * fits (1-, 2- and 4-bit data, 8-bit data of up to 256 channels), else
 * floats (a pack of 16 bytes holds 8 samples or 4).
 *
 * Each row is upper[t + a] + lower[t + b] as on the CPU: the same operands in
 * the same order, so every series equals the CPU's byte for byte (float
 * input included; integer sums are exact in any order). Reads past what a
 * row holds give zero or, in a slot, whatever it held; neither reaches an
 * output.
 *
 * The history, htru 30 s (1024 channels, 2-bit, DM 0-1000, 3952 DMs),
 * kernel seconds. Kernels that fused the depths three or four at a time
 * with the rows between them in shared rings, a sample a thread
 * (fd3821b-15416e7), were bound by instructions and barriers (180 warp
 * instructions per 32 adds): 0.063-0.086 s on one H200, where a kernel per
 * depth over rows in device memory, vectors of 8 a thread, gave 0.041 s
 * (stop 39). On one H100 (stop 42) 16-bit sums two to a word, the second
 * vector from the next lane, warp pipelines (cp.async) and one launch a
 * gulp whose warps took items over chunks in dependency order (flags in
 * device memory) took that to 0.0258 s, with DRAM at 60% of its peak and
 * every stored row written to it (bench/fdmt-results.md, stop 42). The
 * bands (stop 43, one H100, five runs each) move a row between depths
 * through shared memory: 0.0254 -> 0.020 s with bands of 5 and 3 depths,
 * the descriptors in global memory (L1 has no room left beside the slots:
 * ncu showed L1TEX stalls, 95 warp instructions a pass of a warp over a
 * row); 0.017 s with the descriptors copied into shared memory and a block
 * looping over its group's tiles; 0.015 s with bands of 5 and 5 (4 and 4:
 * 0.017 s, 6 and 4: 0.0168 s); 0.014 s with each row's shift as word
 * selects instead of 16-bit moves (ncu: 134 -> 120 million instructions in
 * the first band of htru 8 s) and the row's destination chosen once a row
 * (4 and 5: 0.016 s, 6 and 5: 0.0154 s). 256 threads and four blocks a
 * multiprocessor instead of 512 and two: 0.0254 s against 0.020 s.
 *
 * Float rows in bands replaced a launch a depth over rows in device
 * memory (10 s of 1024 channels, 8-bit, 16-bit and float input: 0.012,
 * 0.011 and 0.010 s -> 0.005 s each). Only the targets of every band but
 * the top one are stored (1326 rows for htru's level 0 instead of about
 * 11,700), the gulp chosen to fit them (dev_bytes).
 */
#include "check.cuh"
#include "engine.cuh"
#include "fdmt.h"

#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define MAX_GRID_Y 65535
#ifndef FTHREADS
#define FTHREADS 512
#endif
#ifndef FBLOCKS
#define FBLOCKS 2                 /* blocks a multiprocessor: shared memory's share */
#endif
#define FWARPS (FTHREADS / 32)
#define MAXSTAGE 8                /* depths a band fuses at most */

/* Where an operand comes from or a row goes: a stored row (ref: its row;
 * lim: it holds nout + lim samples), an input row, nothing (a one-row
 * band's root), a DM's series. */
enum { K_ROW, K_IN, K_NONE, K_OUT };

/* One row (host): d[t] = u[t + ua] + l[t + la]. */
struct Op {
    int ukind, uref, ulim, ua;
    int lkind, lref, llim, la;
    int dkind, dref, dlim;
};

/* A group's row staged from device memory: an input row (K_IN) or a
 * stored row of a band below (K_ROW), samples t0 + off .. of a tile into
 * slot `slot` (off a multiple of 8). */
struct __align__(16) FExt {
    int slot, kind, ref, lim, off, pad[3];
};

/* One row of a group over npk packs: u[su + t] + l[sl + t] (l < 0: none)
 * into slot dst, or for a target (dst < 0) into stored row gref (K_ROW,
 * holding nout + glim samples) or DM series gref (K_OUT). */
struct __align__(16) FOp {
    int u, su, l, sl, dst, npk, gref, glim;
};

/* A group: its descriptors from desc0 (in FOps), the staged rows' then
 * its rows', stage by stage (a depth each). */
struct FGroup {
    int desc0, next, nstage, nop;
    int nops[MAXSTAGE];
};

/* A band's launch over input samples of type T and rows of type E
 * (int16_t where every stored sum fits, else float). */
template <typename T, typename E>
struct BandArgs {
    const T *in;
    int64_t istride;
    int inlen, bias;
    E *rows;                      /* the stored rows (targets of bands below the top) */
    int64_t pitch;
    int nout;
    float *out;
    int64_t ostride;
    int tile, pw, nslot, ntile;   /* samples a tile makes, packs a slot holds, slots, tiles */
};

/* N elements as one aligned vector: one load or store. */
template <typename V, int N>
struct alignas(N * sizeof(V)) Vec {
    V v[N];
};

/* A pack: 16 bytes of a slot, NP samples of E. */
template <typename E>
__host__ __device__ constexpr int np_of()
{
    return 16 / (int)sizeof(E);
}

/* Samples g .. g + NP - 1 of row r as E, integer codes less the bias,
 * zero from end on (g < end: a pack that starts below a row's end lies
 * within its pitch or stride, multiples of 64). */
template <typename T, typename E>
__device__ __forceinline__ uint4 load_pack(const T *r, int g, int end, int bias)
{
    constexpr int NP = np_of<E>();
    E e[NP];
    if constexpr (sizeof(T) == 1 && sizeof(E) == 2) {
        /* bytes widened two to a word, the bias taken from both halves */
        const uint2 b = __ldg((const uint2 *)(r + g));
        const uint32_t bias2 = (uint32_t)(bias & 0xffff) * 0x10001u;
        uint32_t w[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            w[j] = __vsub2(__byte_perm(j < 2 ? b.x : b.y, 0, j % 2 ? 0x4342 : 0x4140), bias2);
        memcpy(e, w, sizeof e);
    } else if constexpr (sizeof(T) == sizeof(E)) {
        const Vec<T, NP> v = *(const Vec<T, NP> *)(r + g);
        memcpy(e, &v, sizeof e);
    } else {
        const Vec<T, NP> v = *(const Vec<T, NP> *)(r + g);
#pragma unroll
        for (int j = 0; j < NP; j++)
            e[j] = (E)decode<T>(v.v[j], bias);
    }
    if (g + NP > end) {
#pragma unroll
        for (int j = 0; j < NP; j++)
            if (g + j >= end)
                e[j] = 0;
    }
    uint4 p;
    memcpy(&p, e, sizeof p);
    return p;
}

/* Pack p of an external row into its slot, zero from the row's end on. */
template <typename T, typename E>
__device__ __forceinline__ void stage_ext(const FExt &e, int t0, int p,
                                          const BandArgs<T, E> &A, uint4 *slot)
{
    const int g = t0 + e.off + np_of<E>() * p;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (e.kind == K_IN && g < A.inlen)
        v = load_pack<T, E>(A.in + (int64_t)e.ref * A.istride, g, A.inlen, A.bias);
    else if (e.kind == K_ROW && g < A.nout + e.lim)
        v = load_pack<E, E>(A.rows + (int64_t)e.ref * A.pitch, g, A.nout + e.lim, 0);
    slot[p] = v;
}

/* Pack p of a slot's samples from s on, as four words: the pack they start
 * in and the next one, the words selected in two steps (and for 16-bit
 * samples shifted by a half where s is odd), without branches on the
 * shift (the same for a whole row) or half-word moves. */
template <typename E>
__device__ __forceinline__ void slot_words(const uint4 *slot, int s, int p, uint32_t (&o)[4])
{
    constexpr int NP = np_of<E>(), SH = NP == 8 ? 3 : 2;
    const uint4 a = slot[p + (s >> SH)];
    const int m = s & (NP - 1);
    if (!m) {
        o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w;
        return;
    }
    const uint4 b = slot[p + (s >> SH) + 1];
    const int q = NP == 8 ? m >> 1 : m;           /* words into the pack */
    const bool two = q & 2, one = q & 1;
    const uint32_t x[6] = { two ? a.z : a.x, two ? a.w : a.y, two ? b.x : a.z,
                            two ? b.y : a.w, two ? b.z : b.x, two ? b.w : b.y };
    uint32_t y[5];
#pragma unroll
    for (int j = 0; j < 5; j++)
        y[j] = one ? x[j + 1] : x[j];
    const unsigned r = NP == 8 ? (s & 1) * 16 : 0;
#pragma unroll
    for (int j = 0; j < 4; j++)
        o[j] = __funnelshift_r(y[j], y[j + 1], r);
}

/* 16-bit integer j of four words of two. */
__device__ __forceinline__ int half_of(const uint32_t (&w)[4], int j)
{
    return (int16_t)(j % 2 ? w[j / 2] >> 16 : w[j / 2] & 0xffffu);
}

/* Samples t .. t + N - 1 of a row within its end: one store where whole. */
template <typename V, int N>
__device__ __forceinline__ void put_samples(V *row, int t, int end, const V (&v)[N])
{
    if (t + N <= end) {
        Vec<V, N> x;
        memcpy(&x, v, sizeof x);
        *(Vec<V, N> *)(row + t) = x;
        return;
    }
    for (int j = 0; j < N && t + j < end; j++)
        row[t + j] = v[j];
}

enum { TO_SLOT, TO_ROW, TO_DM };

/* Pack p of row x from its operands' words: upper plus lower as on the CPU
 * (16-bit integers two to a word, or floats), into r. */
template <typename E>
__device__ __forceinline__ void sum_words(const uint32_t (&v)[4], const uint32_t (&w)[4],
                                          bool lower, uint32_t (&r)[4])
{
#pragma unroll
    for (int j = 0; j < 4; j++)
        r[j] = !lower ? v[j]
               : sizeof(E) == 2 ? __vadd2(v[j], w[j])
                                : __float_as_uint(__uint_as_float(v[j]) + __uint_as_float(w[j]));
}

/* Row x of a group over its packs from this lane's: into its slot, or a
 * target into its stored row or its DM's series (16-bit sums widened to
 * 32 bits there: the DMs' sums pass 16 bits). */
template <int TO, typename T, typename E>
__device__ __forceinline__ void band_row(const FOp &x, int t0, int lane,
                                         const BandArgs<T, E> &A, uint4 *S)
{
    constexpr int NP = np_of<E>();
    const uint4 *u = S + x.u * A.pw, *l = S + (x.l < 0 ? 0 : x.l) * A.pw;
    for (int p = lane; p < x.npk; p += 32) {
        uint32_t v[4], w[4] = { 0, 0, 0, 0 }, r[4];
        slot_words<E>(u, x.su, p, v);
        if (x.l >= 0)
            slot_words<E>(l, x.sl, p, w);
        const int t = t0 + NP * p;
        if constexpr (TO == TO_DM && sizeof(E) == 2) {
            float f[8];
#pragma unroll
            for (int j = 0; j < 8; j++)
                f[j] = (float)(half_of(v, j) + half_of(w, j));
            put_samples<float, 8>(A.out + (int64_t)x.gref * A.ostride, t, A.nout, f);
        } else {
            sum_words<E>(v, w, x.l >= 0, r);
            E e[NP];
            memcpy(e, r, sizeof e);
            if constexpr (TO == TO_SLOT)
                S[x.dst * A.pw + p] = make_uint4(r[0], r[1], r[2], r[3]);
            else if constexpr (TO == TO_ROW)
                put_samples<E, NP>(A.rows + (int64_t)x.gref * A.pitch, t, A.nout + x.glim, e);
            else
                put_samples<float, NP>(A.out + (int64_t)x.gref * A.ostride, t, A.nout, e);
        }
    }
}

/* A band: blockIdx.x a group, tiles of `tile` samples from blockIdx.y on.
 * The group's descriptors are copied into shared memory once (the slots
 * leave L1 no room to cache them). Each tile stages the group's external
 * rows into slots, then makes its rows depth by depth in slots, the
 * targets into device memory: the rows between never leave the
 * multiprocessor. A warp takes a row at a time, its lanes consecutive
 * packs (rows differ in their shifts). */
template <typename T, typename E>
__global__ void __launch_bounds__(FTHREADS, FBLOCKS)
    band_kernel(const FGroup *__restrict__ G, const uint4 *__restrict__ D, BandArgs<T, E> A)
{
    extern __shared__ uint4 S[];
    __shared__ FGroup g;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0)
        g = G[blockIdx.x];
    __syncthreads();
    uint4 *desc = S + A.nslot * A.pw + 4;
    for (int i = threadIdx.x; i < 2 * (g.next + g.nop); i += FTHREADS)
        desc[i] = D[2 * (int64_t)g.desc0 + i];
    __syncthreads();
    const FExt *E_ = (const FExt *)desc;
    const FOp *O = (const FOp *)(desc + 2 * g.next);
    for (int tile = blockIdx.y; tile < A.ntile; tile += gridDim.y) {
        const int t0 = tile * A.tile;
        for (int i = warp; i < g.next; i += FWARPS) {
            const FExt e = E_[i];
            for (int p = lane; p < A.pw; p += 32)
                stage_ext<T, E>(e, t0, p, A, S + e.slot * A.pw);
        }
        __syncthreads();
        for (int s = 0, o = 0; s < g.nstage; o += g.nops[s++]) {
            for (int i = warp; i < g.nops[s]; i += FWARPS) {
                const FOp x = O[o + i];
                if (x.dst >= 0)
                    band_row<TO_SLOT>(x, t0, lane, A, S);
                else if (x.dst == -1)
                    band_row<TO_ROW>(x, t0, lane, A, S);
                else
                    band_row<TO_DM>(x, t0, lane, A, S);
            }
            __syncthreads();
        }
    }
}

/* ---- the items (host) ---------------------------------------------------------- */

struct FdmtLevel {
    const ddtk_fdmt_plan *f;
    Encoding enc;
    int ndepth;                   /* the tree's depth (1 for a one-row band) */
    int *first;                   /* depth k's items: [first[k], first[k + 1]) */
    int nrows;                    /* rows of the nodes but the leaves and the root */
    int narrow;                   /* rows as 16-bit integers (else floats) */
    int64_t reach;                /* the most a stored row holds past the outputs */
    double bytes;                 /* DRAM bytes per output sample (the model) */
    int nband, nstore;            /* bands of depths; stored rows they write */
    int nsm;                      /* multiprocessors */
    struct Band *band;
    struct Buffers {
        cudaStream_t st;
        void *rows;
        size_t bytes;
    } buf[2];
};

/* Stored rows: every node but the leaves and the root, rowbase[s] its
 * first; whether 16-bit integers hold them. */
static void store_rows(FdmtLevel *L, int *rowbase)
{
    const ddtk_fdmt_plan *f = L->f;
    int widest = 0;
    L->nrows = 0;
    for (int s = 0; s < f->nnode; s++) {
        const ddtk_fdmt_node *N = &f->node[s];
        rowbase[s] = -1;
        if (N->up < 0 || s == f->nnode - 1)
            continue;
        rowbase[s] = L->nrows;
        L->nrows += N->nd;
        L->reach = N->reach > L->reach ? N->reach : L->reach;
        widest = N->b - N->a > widest ? N->b - N->a : widest;
    }
    /* Integer samples lie in [-bias, maxval - bias]: a stored row's sums fit
     * 16 bits while its channels times the largest magnitude do. */
    const Encoding e = L->enc;
    const int64_t big = e.bias > e.maxval - e.bias ? e.bias : e.maxval - e.bias;
    L->narrow = e.storage == ST_U8 && e.maxval > 0 && big * widest <= 32767;
}

/* Row `row` of node s as an operand shifted by `shift`. */
static void operand(const ddtk_fdmt_plan *f, const int *rowbase, int s, int row, int shift,
                    int *kind, int *ref, int *lim, int *sh)
{
    const ddtk_fdmt_node *n = &f->node[s];
    *kind = n->up < 0 ? K_IN : K_ROW;
    *ref = n->up < 0 ? n->a : rowbase[s] + row;
    *lim = n->up < 0 ? 0 : n->route[4 * (size_t)row + 3];
    *sh = shift;
}

/* The item making row r (route r) of node s into (dkind, dref, dlim), both
 * operands shifted by a more. */
static Op item(const ddtk_fdmt_plan *f, const int *rowbase, int s, const int32_t *r, int a,
               int dkind, int dref, int dlim)
{
    const ddtk_fdmt_node *N = &f->node[s];
    Op x;
    memset(&x, 0, sizeof x);
    if (N->up < 0) {              /* a one-row band: the root is the input row */
        x.ukind = K_IN;
        x.uref = N->a;
        x.ua = a;
        x.lkind = K_NONE;
    } else {
        operand(f, rowbase, N->up, r[0], a, &x.ukind, &x.uref, &x.ulim, &x.ua);
        operand(f, rowbase, N->lo, r[1], a + r[2], &x.lkind, &x.lref, &x.llim, &x.la);
    }
    x.dkind = dkind;
    x.dref = dref;
    x.dlim = dlim;
    return x;
}

/* Every computed row's item, by depth (the root's DMs last); the DRAM model. */
static int build_items(FdmtLevel *L, const int *rowbase, Op **items, int **inode, int *nitems)
{
    const ddtk_fdmt_plan *f = L->f;
    const int R = f->nnode - 1;
    size_t most = (size_t)f->ndm;
    for (int s = 0; s < R; s++)
        most += (size_t)f->node[s].nd;
    Op *it = (Op *)ddtk_malloc(most * sizeof *it, "FDMT items");
    int *in = (int *)ddtk_malloc(most * sizeof *in, "FDMT items");
    if (!it || !in) {
        free(it);
        free(in);
        return DDTK_ESYS;
    }
    int n = 0;
    for (int d = 1; d <= L->ndepth; d++) {
        L->first[d] = n;
        for (int s = 0; s < R && d < L->ndepth; s++) {
            const ddtk_fdmt_node *N = &f->node[s];
            if (N->depth != d)
                continue;
            for (int i = 0; i < N->nd; i++) {
                const int32_t *r = N->route + 4 * (size_t)i;
                if (r[3] < 0)
                    continue;
                in[n] = s;
                it[n++] = item(f, rowbase, s, r, 0, K_ROW, rowbase[s] + i, r[3]);
            }
        }
        for (int i = 0; i < f->ndm && d == L->ndepth; i++) {
            in[n] = R;
            it[n++] = item(f, rowbase, R, f->out_route + 4 * (size_t)i, f->out_route[4 * i + 3],
                           K_OUT, i, 0);
        }
    }
    L->first[L->ndepth + 1] = n;
    *items = it;
    *inode = in;
    *nitems = n;
    return DDTK_OK;
}

/* ---- the bands (host) ---------------------------------------------------------- */

#ifndef BAND0
#define BAND0 5                   /* depths of the lowest band */
#endif
#ifndef BANDN
#define BANDN 5                   /* the most depths of each band above it */
#endif

/* The launch of a band of depths (d0, d1]: its groups, tiles of T samples,
 * slots of pitch samples, shared memory, the targets' largest lim. */
struct Band {
    int d0, d1, T, pitch, ngroup, nslot, lim;
    size_t smem;
    FGroup *d_groups;
    FOp *d_desc;
};

/* What the groups are made from: the items with their depths and nodes,
 * each stored row's item, the depth that reads it and its id among the
 * stored targets; per-group scratch by key (an item for a row made in the
 * group, nitem + channel for an input row, nitem + nchan + row for a
 * stored row staged). */
struct BandCtx {
    const Op *it;
    int n, nchan, esize;          /* esize: bytes of a row's sample */
    int *depth, *inode, *rowitem, *cdepth, *gid;
    int *stamp, *start, *end, *death, *slot, *lim, *list, *isk;
    int nlist, gen;
};

static int key_of(const BandCtx *C, int d0, int kind, int ref)
{
    if (kind == K_ROW && C->depth[C->rowitem[ref]] > d0)
        return C->rowitem[ref];
    return C->n + (kind == K_IN ? ref : C->nchan + ref);
}

/* Key k's window grown to what a row of stage `stage` starting at start..end
 * (tile-relative, before T) reads at shift sh. */
static void reach_key(BandCtx *C, int g, int k, int start, int end, int sh, int stage, int lim)
{
    if (C->stamp[k] != g) {
        C->stamp[k] = g;
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

/* Group g's rows for targets tg[0 .. nt): every row they need within the
 * band and the rows staged, their windows (off a multiple of 8) and slots;
 * returns the slots, *H the most a slot holds past T. */
static int group_rows(BandCtx *C, const int *tg, int nt, int d0, int d1, int *H)
{
    const int g = ++C->gen;
    C->nlist = 0;
    for (int i = 0; i < nt; i++) {
        reach_key(C, g, tg[i], 0, 0, 0, 0, 0);
        C->death[tg[i]] = -1;
        C->isk[tg[i]] = 1;
    }
    for (int d = d1; d > d0; d--)
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            if (k >= C->n || C->depth[k] != d)
                continue;
            const Op &x = C->it[k];
            reach_key(C, g, key_of(C, d0, x.ukind, x.uref), C->start[k], C->end[k], x.ua, d - d0,
                      x.ulim);
            if (x.lkind != K_NONE)
                reach_key(C, g, key_of(C, d0, x.lkind, x.lref), C->start[k], C->end[k], x.la,
                          d - d0, x.llim);
        }
    *H = 0;
    for (int i = 0; i < C->nlist; i++) {
        const int k = C->list[i];
        C->start[k] = C->start[k] / 8 * 8;
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

/* Group g's descriptors for tiles of T samples, from D[*nd]: its staged
 * rows, then its rows stage by stage. */
static void group_emit(BandCtx *C, int d0, int d1, int T, FGroup *G, FOp *D, int *nd)
{
    static_assert(sizeof(FExt) == sizeof(FOp), "a group's descriptors share one array");
    memset(G, 0, sizeof *G);
    G->desc0 = *nd;
    G->nstage = d1 - d0;
    for (int i = 0; i < C->nlist; i++) {
        const int k = C->list[i];
        if (k < C->n)
            continue;
        const int ch = k - C->n < C->nchan;
        const FExt e = { C->slot[k], ch ? K_IN : K_ROW,
                         ch ? k - C->n : C->gid[k - C->n - C->nchan], C->lim[k], C->start[k],
                         { 0, 0, 0 } };
        memcpy(&D[(*nd)++], &e, sizeof e);
        G->next++;
    }
    for (int s = 1; s <= d1 - d0; s++)
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            if (k >= C->n || C->depth[k] != d0 + s)
                continue;
            const Op &x = C->it[k];
            const int u = key_of(C, d0, x.ukind, x.uref);
            const int l = x.lkind == K_NONE ? -1 : key_of(C, d0, x.lkind, x.lref);
            FOp o;
            o.u = C->slot[u];
            o.su = C->start[k] + x.ua - C->start[u];
            o.l = l < 0 ? -1 : C->slot[l];
            o.sl = l < 0 ? 0 : C->start[k] + x.la - C->start[l];
            o.dst = C->isk[k] ? (x.dkind == K_OUT ? -2 : -1) : C->slot[k];
            const int np = 16 / C->esize;
            o.npk = C->isk[k] ? T / np : (T + C->end[k] - C->start[k] + np - 1) / np;
            o.gref = x.dkind == K_OUT ? x.dref : x.dkind == K_ROW ? C->gid[x.dref] : 0;
            o.glim = x.dlim;
            D[(*nd)++] = o;
            G->nops[s - 1]++;
            G->nop++;
        }
}

/* Targets of band (d0, d1] in item order, split node by node into groups
 * of at most gmax: group i is tg[gs[i] .. gs[i + 1]). */
static int band_groups(const BandCtx *C, const int *tg, int nt, int gmax, int *gs)
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

/* Band (d0, d1] planned for the group size and tile that move the fewest
 * bytes per output sample (staged rows read, targets written, and a warp's
 * sums in shared memory counted as 0.3 bytes a lane's sample, idle lanes
 * included) in the shared memory of FBLOCKS blocks a multiprocessor, and
 * uploaded. */
static int plan_band(BandCtx *C, int d0, int d1, size_t budget, Band *B, double *bytes)
{
    int nt = 0;
    for (int k = 0; k < C->n; k++)
        if (C->depth[k] > d0 && C->depth[k] <= d1
            && (C->it[k].dkind == K_OUT || C->cdepth[C->it[k].dref] > d1))
            C->list[nt++] = k;
    int *tg = (int *)ddtk_malloc((size_t)(nt ? nt : 1) * sizeof *tg, "FDMT bands");
    int *gs = (int *)ddtk_malloc((size_t)(nt + 1) * sizeof *gs, "FDMT bands");
    if (!tg || !gs) {
        free(tg);
        free(gs);
        return DDTK_ESYS;
    }
    memcpy(tg, C->list, (size_t)nt * sizeof *tg);
    int best = 0, T = 0;
    size_t rows = 0;
    double cost = 0;
    for (int gmax = 64; gmax >= 1; gmax /= 2) {
        const int ng = band_groups(C, tg, nt, gmax, gs);
        int nslot = 1, H = 0, ndesc = 0;
        double next = 0, ops = 0, outb = 0;
        for (int g = 0; g < ng; g++) {
            int h;
            const int s = group_rows(C, tg + gs[g], gs[g + 1] - gs[g], d0, d1, &h);
            nslot = s > nslot ? s : nslot;
            H = h > H ? h : H;
            ndesc = C->nlist > ndesc ? C->nlist : ndesc;
            for (int i = 0; i < C->nlist; i++) {
                const int k = C->list[i];
                next += k >= C->n;
                ops += k < C->n;
                outb += C->isk[k] ? (C->it[k].dkind == K_OUT ? 4 : C->esize) : 0;
            }
        }
        const int64_t room = ((int64_t)budget - 64 - ndesc * (int64_t)sizeof(FOp))
                             / (C->esize * nslot) - H - 8;
        const int warp = 32 * 16 / C->esize;                   /* samples a warp's pass makes */
        for (int t = 8; t <= room && t <= 2048; t += 8) {
            const double passes = (t + H + 8 + warp - 1) / warp;  /* of a warp over a row */
            const double c = (next * C->esize * (t + H) + 0.3 * ops * warp * passes) / t + outb;
            if (!best || c < cost) {
                best = gmax, T = t, cost = c, rows = (size_t)(next + ops);
            }
        }
    }
    const int ng = best ? band_groups(C, tg, nt, best, gs) : 0;
    FGroup *G = (FGroup *)ddtk_calloc((size_t)(ng ? ng : 1), sizeof *G, "FDMT bands");
    FOp *D = (FOp *)ddtk_malloc((rows ? rows : 1) * sizeof *D, "FDMT bands");
    int rc = !best ? ddtk_fail(DDTK_ESYS, "FDMT: the GPU's shared memory (%zu bytes a block) "
                               "holds no group of depths %d-%d", budget, d0 + 1, d1)
             : G && D ? DDTK_OK : DDTK_ESYS;
    int H = 0, nslot = 1, nd = 0, ndesc = 0;
    for (int g = 0; !rc && g < ng; g++) {
        int h;
        const int s = group_rows(C, tg + gs[g], gs[g + 1] - gs[g], d0, d1, &h);
        nslot = s > nslot ? s : nslot;
        H = h > H ? h : H;
        ndesc = C->nlist > ndesc ? C->nlist : ndesc;
        group_emit(C, d0, d1, T, G + g, D, &nd);
    }
    /* A slot holds a pack more than its rows read: a shifted read takes the
     * pack after the last one, which must not be another slot's. */
    const int pitch = T + H + 8;
    *B = Band{ d0, d1, T, pitch, ng, nslot, 0,
               (size_t)nslot * pitch * C->esize + 64 + (size_t)ndesc * sizeof(FOp), NULL, NULL };
    for (int i = 0; i < nd; i++)
        B->lim = D[i].dst == -1 && D[i].glim > B->lim ? D[i].glim : B->lim;
    *bytes += cost;
    if (!rc)
        rc = ddtk_cuda_upload((void **)&B->d_groups, G, (size_t)ng * sizeof *G,
                              "uploading the FDMT's bands");
    if (!rc)
        rc = ddtk_cuda_upload((void **)&B->d_desc, D, (size_t)nd * sizeof *D,
                              "uploading the FDMT's bands");
    free(tg);
    free(gs);
    free(G);
    free(D);
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

/* Every band of level L planned from its items (it[0 .. n), node inode[k]). */
static int build_bands(FdmtLevel *L, const Op *it, int n, const int *inode, size_t budget)
{
    const int nkeys = n + L->f->nrows + L->nrows, nr = L->nrows ? L->nrows : 1;
    BandCtx C;
    memset(&C, 0, sizeof C);
    C.it = it;
    C.n = n;
    C.nchan = L->f->nrows;
    C.esize = L->narrow ? 2 : 4;
    C.inode = (int *)inode;
    int **arrays[] = { &C.depth, &C.rowitem, &C.cdepth, &C.gid, &C.stamp, &C.start, &C.end,
                       &C.death, &C.slot, &C.lim, &C.isk, &C.list };
    const int sizes[] = { n, nr, nr, nr, nkeys, nkeys, nkeys, nkeys, nkeys, nkeys, nkeys,
                          2 * nkeys };
    int rc = DDTK_OK;
    for (int i = 0; i < 12; i++)
        if (!(*arrays[i] = (int *)ddtk_calloc((size_t)sizes[i], sizeof(int), "FDMT bands")))
            rc = DDTK_ESYS;
    L->band = (Band *)ddtk_calloc((size_t)L->ndepth + 1, sizeof *L->band, "FDMT bands");
    int cut[64];                  /* depths: below 32 (channels below 2^31) */
    const int nb = band_cuts(L->ndepth, cut);
    rc = rc ? rc : L->band ? DDTK_OK : DDTK_ESYS;
    for (int d = 1; d <= L->ndepth; d++)
        for (int k = L->first[d]; k < L->first[d + 1]; k++)
            C.depth[k] = d;
    for (int k = 0; !rc && k < n; k++) {
        if (it[k].dkind == K_ROW)
            C.rowitem[it[k].dref] = k;
        if (it[k].ukind == K_ROW)
            C.cdepth[it[k].uref] = C.depth[k];
        if (it[k].lkind == K_ROW)
            C.cdepth[it[k].lref] = C.depth[k];
    }
    /* Stored rows: the targets of every band but the top one. */
    L->nstore = 0;
    for (int b = 0; !rc && b < nb; b++)
        for (int k = 0; k < n; k++)
            if (C.depth[k] > cut[b] && C.depth[k] <= cut[b + 1] && it[k].dkind == K_ROW)
                C.gid[it[k].dref] = C.cdepth[it[k].dref] > cut[b + 1] ? L->nstore++ : -1;
    L->bytes = 0;
    for (int b = 0; !rc && b < nb; b++)
        rc = plan_band(&C, cut[b], cut[b + 1], budget, &L->band[L->nband++], &L->bytes);
    for (int i = 0; i < 12; i++)
        free(*arrays[i]);
    return rc;
}

/* ---- the level ------------------------------------------------------------------ */

static void destroy(void *state)
{
    FdmtLevel *L = (FdmtLevel *)state;
    if (!L)
        return;
    for (int b = 0; L->band && b < L->nband; b++) {
        cudaFree(L->band[b].d_groups);
        cudaFree(L->band[b].d_desc);
    }
    free(L->band);
    for (int i = 0; i < 2; i++)
        cudaFree(L->buf[i].rows);
    free(L->first);
    free(L);
}

template <typename T, typename E>
static int band_attribute(int budget)
{
    DDTK_CUDA(cudaFuncSetAttribute(band_kernel<T, E>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   budget), "sizing the FDMT's bands");
    return DDTK_OK;
}

/* The shared memory the band kernel of L's input and rows may take. */
static int band_attributes(const FdmtLevel *L, int budget)
{
    if (L->narrow)
        return band_attribute<uint8_t, int16_t>(budget);
    if (L->enc.storage == ST_U8)
        return band_attribute<uint8_t, float>(budget);
    if (L->enc.storage == ST_U16)
        return band_attribute<uint16_t, float>(budget);
    return band_attribute<float, float>(budget);
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
    L->nsm = prop.multiProcessorCount;
    *slack = 0;                   /* input reads past nout + overlap give zero */
    const ddtk_fdmt_plan *f = L->f;
    int *rowbase = (int *)ddtk_malloc((size_t)f->nnode * sizeof *rowbase, "FDMT rows");
    L->ndepth = f->depth > 0 ? f->depth : 1;
    L->first = (int *)ddtk_calloc((size_t)L->ndepth + 2, sizeof *L->first, "FDMT depths");
    if (!rowbase || !L->first) {
        free(rowbase);
        return DDTK_ESYS;
    }
    store_rows(L, rowbase);
    Op *items = NULL;
    int *inode = NULL, n = 0;
    int rc = build_items(L, rowbase, &items, &inode, &n);
    free(rowbase);
    if (rc)
        return rc;
    const size_t budget = std::min((size_t)prop.sharedMemPerBlockOptin,
                                   (size_t)prop.sharedMemPerMultiprocessor / FBLOCKS - 1024);
    rc = build_bands(L, items, n, inode, budget);
    free(items);
    free(inode);
    if (!rc)                      /* the same for every level: the attribute is the kernel's */
        rc = band_attributes(L, (int)budget);
    return rc;
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
    return (int64_t)L->nstore * row_bytes(L, most);
}

/* Stream st's stored rows, grown to `bytes` (contents not kept). */
static int reserve(FdmtLevel *L, cudaStream_t st, size_t bytes, FdmtLevel::Buffers **buf)
{
    FdmtLevel::Buffers *B = L->buf[0].st == st || !L->buf[0].st ? &L->buf[0] : &L->buf[1];
    *buf = B;
    B->st = st;
    if (B->bytes < bytes) {
        cudaFree(B->rows);
        B->rows = NULL;
        B->bytes = 0;
        DDTK_CUDA(cudaMalloc(&B->rows, bytes ? bytes : 4), "allocating FDMT rows");
        /* Zeroed once: a pack that straddles a row's end is read whole (the
         * samples past it masked), and compute-sanitizer's initcheck should
         * find no read of memory never written. */
        DDTK_CUDA(cudaMemsetAsync(B->rows, 0, bytes ? bytes : 4, st), "clearing FDMT rows");
        B->bytes = bytes;
    }
    return DDTK_OK;
}

/* The bands in order, a launch each. */
template <typename T, typename E>
static int run_bands(const FdmtLevel *L, void *stored, const void *rows, int64_t stride,
                     int64_t nout, float *out, int64_t ostride, cudaStream_t st)
{
    for (int b = 0; b < L->nband; b++) {
        const Band &B = L->band[b];
        const int ntile = (int)((nout + B.lim + B.T - 1) / B.T);
        const BandArgs<T, E> A = { (const T *)rows, stride, (int)(nout + L->f->overlap),
                                   L->enc.bias, (E *)stored, pitch_of(L, nout), (int)nout, out,
                                   ostride, B.T, B.pitch / np_of<E>(), B.nslot, ntile };
        /* Four waves of blocks, each looping over its group's tiles. */
        const int per = std::max(1, 4 * FBLOCKS * L->nsm / B.ngroup);
        dim3 grid((unsigned)B.ngroup, (unsigned)std::min(ntile, std::min(per, MAX_GRID_Y)));
        band_kernel<T, E><<<grid, FTHREADS, B.smem, st>>>(B.d_groups, (const uint4 *)B.d_desc,
                                                          A);
        DDTK_CUDA(cudaGetLastError(), "launching an FDMT band");
    }
    return DDTK_OK;
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    FdmtLevel *L = (FdmtLevel *)state;
    if (nout <= 0)
        return DDTK_OK;
    FdmtLevel::Buffers *B = NULL;
    int rc = reserve(L, st, (size_t)dev_bytes(L, nout), &B);
    if (rc)
        return rc;
    void *stored = B->rows;
    if (L->narrow)
        return run_bands<uint8_t, int16_t>(L, stored, rows, stride, nout, out, ostride, st);
    if (L->enc.storage == ST_U8)
        return run_bands<uint8_t, float>(L, stored, rows, stride, nout, out, ostride, st);
    if (L->enc.storage == ST_U16)
        return run_bands<uint16_t, float>(L, stored, rows, stride, nout, out, ostride, st);
    return run_bands<float, float>(L, stored, rows, stride, nout, out, ostride, st);
}

/* -v: the kernels, the stored rows and the traffic model. */
static void report(const void *state, char *buf, size_t n)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    snprintf(buf, n, "fdmt: %d DMs, %d merge depths (%d bands in shared memory), %d stored "
             "rows (%s), %lld adds per output, DRAM model %.3g KB per output sample",
             L->f->ndm, L->f->depth, L->nband, L->nstore, L->narrow ? "16-bit" : "float",
             (long long)L->f->adds, L->bytes / 1e3);
}

}  // namespace ddgpu

extern "C" const ddtk_gpu_algo ddtk_gpu_fdmt = { ddgpu::create, ddgpu::gulp, ddgpu::report,
                                                 ddgpu::destroy, ddgpu::dev_bytes, NULL };
