/*
 * tree.cu - the GPU half of the tree algorithm (src/algos/tree.c has the descriptor
 * and the routes, src/algos/tree.h its level plan, cpu/tree.c the reference
 * kernels): stage 1 runs the tree of each (pass, sub-band) slot in shared
 * memory, stage 2 adds the sub-band series of each DM. Every sum has the
 * CPU's operands in the CPU's order, so the series equal the CPU's byte for
 * byte (integer input is also exact).
 *
 * Stage 1, in place. A tile of TILE outputs of G rows lives in shared
 * memory (TILE + G - 1 samples per row: the stages' delays add up to G - 1).
 * Stage r (r = 1, 2, .. G/2) pairs storage rows b + i and b + r + i (b a
 * multiple of 2r, i < r) holding sweep k = bitrev_r(i) of the two halves
 * (bitrev_r: bit reversal over log2 r bits); it writes sweep 2k (upper +
 * lower delayed k) over the upper row and 2k + 1 (delay k + 1) over the
 * lower, so after the last stage storage row i holds sweep bitrev_G(i) and
 * the write-out unscrambles. The operands are cpu/tree.c's (its stage keeps
 * the sweeps in natural order instead). In place is safe because one warp
 * owns a row pair for the whole stage and walks time upwards: a 32-sample
 * chunk reads times >= its own and writes only its own (__syncwarp between).
 *
 * More than G rows (--sub-chans above the shared-memory limit, the padded
 * band): passes of G_0, G_1, .. rows (sizes balanced, product cps). Pass l
 * takes rows p + S m (m < G_l, S = G_0 .. G_{l-1}, p < S): in the full
 * in-place scheme its stages see the delay bitrev_S(p) * 2^i +
 * bitrev_i(m mod 2^i) at stage i, which is the same G_l-row tree run on its
 * rows pre-shifted by bitrev_S(p) * m samples - a load offset, like a pass's
 * diagonal delay. So every pass is the same kernel with halo G_l - 1; pass 0
 * gathers (decodes and sums) the channel rows with the diagonal delay j * q
 * as it loads, the last writes the stage-1 series in sweep order.
 *
 * Stage 2: a block adds COMBINE_DMS DMs over 256 samples in cpu/tree.c's
 * grouping ((a + b) + (x + y) over the leading complete groups of four, then
 * one at a time). The DM groups of a time tile are neighbouring blocks, so
 * the stage-1 columns they share stay in L1/L2.
 *
 * Memory traffic, htru (1024 channels, 2-bit, 64 us, DM 0-1000, scrunched,
 * --sub-chans 32: 59 slots = 1888 rows and 1379 DMs at level 0; levels 1-4:
 * 1824-1728 rows and 689-590 DMs at 1/2 .. 1/16 of the samples), per input
 * spectrum, all levels:
 *   direct: 1024 x (1379 + 689 (1/2 + 1/4 + 1/8) + 590/16) = 2.07e6 adds;
 *     at its measured 3.7e12 adds/s (bench/gpu-results.md) 0.56 us,
 *     0.26 s for TOBS = 30 (468750 spectra).
 *   tree, device memory: stage 1 reads the 1-byte rows (about 1.9 slots per
 *     sub-band, halo (G - 1)/TILE) and writes 4 B per row: level 0
 *     2.2 + 7.6 KB; stage 2 reads the series once (L2) and writes 4 B per
 *     DM: 7.6 + 5.5 KB. About 23 KB at level 0, 41 KB in all: 14 ns at
 *     3 TB/s (6 ms for TOBS = 30), so device memory allows ~40x.
 *   tree, on chip: stage 2 issues 32 (nsb) 4-byte loads per output, 258 KB
 *     per spectrum through L1/L2; stage 1's shared-memory stages move
 *     5 x 2.5 words per row-sample, ~200 KB. At 10-30 TB/s on chip that is
 *     15-45 ns per spectrum: 7-20 ms for TOBS = 30, i.e. 10-35x over direct.
 *   the old kernels (one per stage, DM-major stage 2): 5 x 12 B x 1888 rows
 *     per stage-1 spectrum, plus stage 2 reading 176 KB from device memory
 *     (a DM's blocks swept the whole gulp before the next DM reused a
 *     column): ~500 KB per spectrum, 0.17 us at 3 TB/s (3.3x at best; the
 *     measured 1.1-1.3x is ~40% of that bandwidth).
 *   padded (a 2048-row tree; 3, 2, 2, 1 slots and 3201, 1600, 1600, 959
 *     DMs per level): direct 4.6e6 adds (1.25 us); the old 11 stages moved
 *     ~1.3 MB per spectrum (0.44 us at 3 TB/s, measured 0.70x), the two
 *     passes (32 x 64 rows) ~160 KB.
 */
#include "check.cuh"
#include "engine.cuh"
#include "tree.h"

#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define TILE 256                  /* stage-1 outputs per block and row */
#define GROUP_MAX 128             /* rows per shared-memory pass (the gpu_group parameter) */
#define MAX_PASSES 24
#define COMBINE_DMS 8             /* stage-2 DMs per block */
#define COMBINE_THREADS 256
#define MAX_GRID_Y 65535

/* One pass of stage 1 (see the header comment). */
struct Pass {
    int G, logG, S, logS;
    int64_t extra;                /* samples past the final outputs this pass computes */
};

/* Device buffers of one CUDA stream: the streaming layer overlaps two gulps. */
struct Buffers {
    cudaStream_t st;
    float *s1, *tmp[2];           /* stage-1 series; the passes' intermediate rows */
    size_t floats;                /* of each buffer */
    cudaEvent_t ev[3];            /* stage 1 start, stage 2 start, end */
    int timed;                    /* ev[] recorded, not yet counted */
};

struct TreeLevel {
    const ddtk_tree_level *t;
    Encoding enc;
    int ndm, npass, logcps;
    Pass pass[MAX_PASSES];
    int *d_first, *d_rows, *d_slot_j, *d_slot_n, *d_quad;
    int2 *d_route;                /* per DM and sub-band: stage-1 row (-1: none), offset */
    Buffers buf[2];
    double time1, time2;          /* seconds of stage 1 and 2 not yet reported */
};

/* Arguments of one pass. */
struct PassArgs {
    const void *in;               /* pass 0: the level's rows; else the last pass's rows */
    int64_t istride;              /* elements between rows of in */
    int bias;
    const int *first, *rowidx, *slot_j, *slot_n;
    int cps, logcps, G, logG, S, logS, last, nslot, groups;
    float *out;
    int64_t pitch;                /* floats between rows of out (and of in after pass 0) */
};

/* x reversed over its low `bits` bits. */
__device__ __forceinline__ int bitrev(int x, int bits)
{
    return bits ? (int)(__brev((unsigned)x) >> (32 - bits)) : 0;
}

/* Row idx of slot s into dst (width samples from column col, plus the
 * slot's diagonal delay j * idx): the sum of the live rows at the row's
 * position in channel order, as cpu/tree.c's gather (pass 0). */
template <typename T>
__device__ void gather_row(const PassArgs &a, int s, int idx, int64_t col, float *dst, int width,
                           int lane)
{
    const T *rows = (const T *)a.in;
    const int pos = a.slot_n[s] * a.cps + idx, r0 = a.first[pos], r1 = a.first[pos + 1];
    col += (int64_t)a.slot_j[s] * idx;
    if (r0 == r1) {
        for (int u = lane; u < width; u += 32)
            dst[u] = 0.0f;
        return;
    }
    const T *x = rows + (int64_t)a.rowidx[r0] * a.istride + col;
    if (r1 == r0 + 1) {           /* the usual one channel: loads in flight together */
#pragma unroll 4
        for (int u = lane; u < width; u += 32)
            dst[u] = decode<T>(x[u], a.bias);
        return;
    }
    for (int u = lane; u < width; u += 32) {
        float v = decode<T>(x[u], a.bias);
        for (int i = r0 + 1; i < r1; i++)
            v += decode<T>(rows[(int64_t)a.rowidx[i] * a.istride + col + u], a.bias);
        dst[u] = v;
    }
}

/* Row idx of slot s of the last pass's output into dst (later passes). */
__device__ void copy_row(const PassArgs &a, int s, int idx, int64_t col, float *dst, int width,
                         int lane)
{
    const float *src = (const float *)a.in + ((int64_t)s * a.cps + idx) * a.istride + col;
#pragma unroll 4
    for (int u = lane; u < width; u += 32)
        dst[u] = src[u];
}

/* The log2 G in-place stages over G rows of sm (sp floats apart, len valid
 * samples), leaving len - (G - 1). */
__device__ void run_stages(float *sm, int sp, int G, int len, int lane, int warp, int nwarps)
{
    for (int r = 1, lr = 0; r < G; r *= 2, lr++) {
        len -= r;
        for (int w = warp; w < G / 2; w += nwarps) {
            const int i = w & (r - 1), b = (w >> lr) << (lr + 1), k = bitrev(i, lr);
            float *up = sm + (b + i) * sp, *lo = up + r * sp;
            for (int c = 0; c < len; c += 32) {
                const int t = c + lane;
                float u = 0.0f, v0 = 0.0f, v1 = 0.0f;
                if (t < len) {
                    u = up[t];
                    v0 = lo[t + k];
                    v1 = lo[t + k + 1];
                }
                __syncwarp();
                if (t < len) {
                    up[t] = u + v0;
                    lo[t] = u + v1;
                }
            }
        }
        __syncthreads();
    }
}

/* One pass over every slot: block (x, y) takes time tile x of row group y
 * (slot y / groups; group y % groups: residue p and base of its rows). */
template <typename T, bool GATHER>
__global__ void tree_pass(PassArgs a)
{
    extern __shared__ float sm[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int sp = TILE + a.G, width = TILE + a.G - 1;
    const int64_t t0 = (int64_t)blockIdx.x * TILE;
    for (int y = blockIdx.y; y < a.nslot * a.groups; y += gridDim.y) {
        const int s = y / a.groups, grp = y % a.groups;
        const int p = grp & (a.S - 1), base = (grp >> a.logS) * a.S * a.G;
        const int shift = bitrev(p, a.logS);
        for (int m = warp; m < a.G; m += nwarps) {
            if constexpr (GATHER)
                gather_row<T>(a, s, base + p + m, t0, sm + m * sp, width, lane);
            else
                copy_row(a, s, base + p + a.S * m, t0 + (int64_t)shift * m, sm + m * sp, width,
                         lane);
        }
        __syncthreads();
        run_stages(sm, sp, a.G, width, lane, warp, nwarps);
        for (int m = warp; m < a.G; m += nwarps) {
            const int idx = base + p + a.S * m, row = a.last ? bitrev(idx, a.logcps) : idx;
            float *dst = a.out + ((int64_t)s * a.cps + row) * a.pitch + t0;
            const float *src = sm + m * sp;
            for (int u = lane; u < TILE; u += 32)
                dst[u] = src[u];
        }
        __syncthreads();
    }
}

__device__ __forceinline__ float series(const float *s1, int64_t pitch, int2 r, int64_t t)
{
    return __ldg(s1 + (int64_t)r.x * pitch + r.y + t);
}

/* Stage 2 (eq. 22) in ddtk_tree_combine_cpu's order: quad[d] sub-bands in
 * complete groups of four, then the rest one at a time (-1: no series). */
__global__ void combine(const float *s1, int64_t pitch, const int2 *route, const int *quad,
                        int nsb, int ndm, float *out, int64_t ostride, int64_t nout)
{
    const int d0 = blockIdx.x * COMBINE_DMS, d1 = min(d0 + COMBINE_DMS, ndm);
    for (int64_t y = blockIdx.y; y * blockDim.x < nout; y += gridDim.y) {
        const int64_t t = y * blockDim.x + threadIdx.x;
        if (t >= nout)
            continue;
        for (int d = d0; d < d1; d++) {
            const int2 *r = route + (int64_t)d * nsb;
            const int q = __ldg(quad + d);
            float acc = 0.0f;
            int n = 0;
            for (; n < q; n += 4) {
                const float g = (series(s1, pitch, __ldg(r + n), t)
                                 + series(s1, pitch, __ldg(r + n + 1), t))
                                + (series(s1, pitch, __ldg(r + n + 2), t)
                                   + series(s1, pitch, __ldg(r + n + 3), t));
                acc = n ? acc + g : g;
            }
            for (; n < nsb; n++) {
                const int2 e = __ldg(r + n);
                if (e.x >= 0)
                    acc += series(s1, pitch, e, t);
            }
            out[(int64_t)d * ostride + t] = acc;
        }
    }
}

/* ---- host side ---------------------------------------------------------------------- */

static size_t smem_bytes(int G)
{
    return (size_t)G * (TILE + G) * sizeof(float);
}

/* One warp per row pair up to 8 warps (48 registers a thread: 5 blocks of
 * 8 warps per SM for G <= 32), 16 for the larger tiles (2 or 1 blocks per
 * SM by shared memory). */
static int warps_of(int G)
{
    return G >= 64 ? 16 : G >= 16 ? 8 : G >= 2 ? G / 2 : 1;
}

static int log2i(int n)
{
    int l = 0;
    while ((1 << l) < n)
        l++;
    return l;
}

/* Rows per pass: the gpu_group parameter (bench/tree), else GROUP_MAX,
 * halved while a pass does not fit the device's shared memory. */
static int group_max(const ddtk_tree_level *t, const cudaDeviceProp &prop, int *gmax)
{
    *gmax = t->gpu_group ? t->gpu_group : GROUP_MAX;   /* a power of two (src/algos/tree.c) */
    while (*gmax > 2 && smem_bytes(*gmax) > prop.sharedMemPerBlockOptin)
        *gmax /= 2;
    return DDTK_OK;
}

/* Split the log2 cps stages into the fewest passes of at most gmax rows,
 * their sizes as equal as the powers of two allow. */
static void plan_passes(TreeLevel *L, int cps, int gmax)
{
    const int bits = log2i(cps), per = log2i(gmax);
    L->logcps = bits;
    L->npass = bits ? (bits + per - 1) / per : 1;
    int S = 1, done = 0;
    for (int l = 0; l < L->npass; l++) {
        int b = (bits - done) / (L->npass - l);
        Pass *P = &L->pass[l];
        P->G = 1 << b;
        P->logG = b;
        P->S = S;
        P->logS = done;
        S <<= b;
        done += b;
    }
    /* Pass l computes its outputs this far past the last pass's (the later
     * passes' pre-shifts and halos: S (G - 1) each). */
    int64_t extra = 0;
    for (int l = L->npass - 1; l >= 0; l--) {
        L->pass[l].extra = extra;
        extra += (int64_t)L->pass[l].S * (L->pass[l].G - 1);
    }
}

template <typename T, bool GATHER>
static int allow_smem(size_t bytes)
{
    DDTK_CUDA(cudaFuncSetAttribute(tree_pass<T, GATHER>,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes),
              "configuring the tree kernel");
    return DDTK_OK;
}

/* Stage 2's tables: (row, offset) per DM and sub-band, and the sub-bands
 * ddtk_tree_combine_cpu adds in groups of four. */
static int upload_routes(TreeLevel *L)
{
    const ddtk_tree_level *t = L->t;
    const int nsb = t->g.nsb;
    size_t n = (size_t)L->ndm * nsb;
    int2 *route = (int2 *)ddtk_malloc(n * sizeof *route, "GPU tree routes");
    int *quad = (int *)ddtk_malloc((size_t)L->ndm * sizeof *quad, "GPU tree routes");
    int rc = route && quad ? DDTK_OK : DDTK_ESYS;
    for (int d = 0; !rc && d < L->ndm; d++) {
        const int *sel = t->sel + (size_t)d * nsb;
        for (int k = 0; k < nsb; k++)
            route[(size_t)d * nsb + k] = make_int2(sel[k], t->off[(size_t)d * nsb + k]);
        int k = 0;
        while (k + 4 <= nsb && sel[k] >= 0 && sel[k + 1] >= 0 && sel[k + 2] >= 0
               && sel[k + 3] >= 0)
            k += 4;
        quad[d] = k;
    }
    if (!rc)
        rc = ddtk_cuda_upload((void **)&L->d_route, route, n * sizeof *route,
                              "uploading a tree table");
    if (!rc)
        rc = ddtk_cuda_upload((void **)&L->d_quad, quad, (size_t)L->ndm * sizeof *quad,
                              "uploading a tree table");
    free(route);
    free(quad);
    return rc;
}

static int create_events(TreeLevel *L)
{
    for (int i = 0; i < 2; i++)
        for (int e = 0; e < 3; e++)
            DDTK_CUDA(cudaEventCreate(&L->buf[i].ev[e]), "creating a tree event");
    return DDTK_OK;
}

static void destroy(void *state)
{
    TreeLevel *L = (TreeLevel *)state;
    if (!L)
        return;
    cudaFree(L->d_first);
    cudaFree(L->d_rows);
    cudaFree(L->d_slot_j);
    cudaFree(L->d_slot_n);
    cudaFree(L->d_route);
    cudaFree(L->d_quad);
    for (int i = 0; i < 2; i++) {
        Buffers *B = &L->buf[i];
        cudaFree(B->s1);
        cudaFree(B->tmp[0]);
        cudaFree(B->tmp[1]);
        for (int e = 0; e < 3; e++)
            if (B->ev[e])
                cudaEventDestroy(B->ev[e]);
    }
    free(L);
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    TreeLevel *L = (TreeLevel *)ddtk_calloc(1, sizeof *L, "GPU tree level");
    if (!L)
        return DDTK_ESYS;
    *state = L;
    const ddtk_tree_level *t = (const ddtk_tree_level *)lv->state;
    const ddtk_tree_geom *g = &t->g;
    L->t = t;
    L->enc = enc;
    L->ndm = lv->ndm;
    int gmax;
    int rc = group_max(t, prop, &gmax);
    if (rc)
        return rc;
    if (log2i(g->cps) > MAX_PASSES)
        return ddtk_fail(DDTK_EUSAGE, "tree: %d channels per sub-band are too many for the GPU",
                         g->cps);
    plan_passes(L, g->cps, gmax);
    size_t most = smem_bytes(L->pass[0].G);
    for (int l = 1; l < L->npass; l++)
        most = smem_bytes(L->pass[l].G) > most ? smem_bytes(L->pass[l].G) : most;
    rc = allow_smem<uint8_t, true>(most);
    if (!rc)
        rc = allow_smem<uint16_t, true>(most);
    if (!rc)
        rc = allow_smem<float, true>(most);
    if (!rc)
        rc = allow_smem<float, false>(most);
    if (!rc)
        rc = ddtk_cuda_upload((void **)&L->d_first, g->first, ((size_t)g->np + 1) * sizeof(int),
                              "uploading a tree table");
    if (!rc)
        rc = ddtk_cuda_upload((void **)&L->d_rows, g->rows, (size_t)p->ch.nlive * sizeof(int),
                              "uploading a tree table");
    if (!rc)
        rc = ddtk_cuda_upload((void **)&L->d_slot_j, t->slot_j, (size_t)t->nslot * sizeof(int),
                              "uploading a tree table");
    if (!rc)
        rc = ddtk_cuda_upload((void **)&L->d_slot_n, t->slot_n, (size_t)t->nslot * sizeof(int),
                              "uploading a tree table");
    if (!rc)
        rc = upload_routes(L);
    if (!rc)
        rc = create_events(L);
    /* Pass 0 reads a slot's rows from its diagonal delay j q over the
     * outputs, the largest offset, the tree's cps - 1 and a tile's rounding. */
    *slack = (int64_t)t->maxoff + (int64_t)(t->jmax + 1) * (g->cps - 1) - lv->overlap
             + TILE + 256;
    return rc;
}

/* Stream st's buffers, grown to `floats` each (contents not kept). */
static int reserve(TreeLevel *L, cudaStream_t st, size_t floats, Buffers **out)
{
    Buffers *B = L->buf[0].st == st || !L->buf[0].st ? &L->buf[0] : &L->buf[1];
    B->st = st;
    *out = B;
    if (B->floats >= floats)
        return DDTK_OK;
    cudaFree(B->s1);
    cudaFree(B->tmp[0]);
    cudaFree(B->tmp[1]);
    B->s1 = B->tmp[0] = B->tmp[1] = NULL;
    B->floats = 0;
    DDTK_CUDA(cudaMalloc((void **)&B->s1, floats * sizeof(float)), "allocating tree series");
    for (int i = 0; i < 2 && i + 1 < L->npass; i++)
        DDTK_CUDA(cudaMalloc((void **)&B->tmp[i], floats * sizeof(float)),
                  "allocating tree stage buffers");
    B->floats = floats;
    return DDTK_OK;
}

/* Add the stage times of B's last gulp (long finished when its stream
 * comes back: the streaming layer waits for a gulp before reusing its set). */
static void count_times(TreeLevel *L, Buffers *B)
{
    if (!B->timed || cudaEventSynchronize(B->ev[2]) != cudaSuccess)
        return;
    L->time1 += event_seconds(B->ev[0], B->ev[1]);
    L->time2 += event_seconds(B->ev[1], B->ev[2]);
    B->timed = 0;
}

static void launch_pass(const TreeLevel *L, int l, const void *in, int64_t istride, float *out,
                        int64_t pitch, int64_t width, cudaStream_t st)
{
    const ddtk_tree_level *t = L->t;
    const Pass *P = &L->pass[l];
    PassArgs a;
    a.in = in;
    a.istride = istride;
    a.bias = L->enc.bias;
    a.first = L->d_first;
    a.rowidx = L->d_rows;
    a.slot_j = L->d_slot_j;
    a.slot_n = L->d_slot_n;
    a.cps = t->g.cps;
    a.logcps = L->logcps;
    a.G = P->G;
    a.logG = P->logG;
    a.S = P->S;
    a.logS = P->logS;
    a.last = l == L->npass - 1;
    a.nslot = t->nslot;
    a.groups = t->g.cps / P->G;
    a.out = out;
    a.pitch = pitch;
    const int nblk = a.nslot * a.groups;
    dim3 grid((unsigned)((width + TILE - 1) / TILE),
              (unsigned)(nblk < MAX_GRID_Y ? nblk : MAX_GRID_Y));
    const int threads = 32 * warps_of(P->G);
    const size_t bytes = smem_bytes(P->G);
    if (l > 0)
        tree_pass<float, false><<<grid, threads, bytes, st>>>(a);
    else if (L->enc.storage == ST_U8)
        tree_pass<uint8_t, true><<<grid, threads, bytes, st>>>(a);
    else if (L->enc.storage == ST_U16)
        tree_pass<uint16_t, true><<<grid, threads, bytes, st>>>(a);
    else
        tree_pass<float, true><<<grid, threads, bytes, st>>>(a);
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    TreeLevel *L = (TreeLevel *)state;
    const ddtk_tree_level *t = L->t;
    const int nrows = t->nslot * t->g.cps;
    /* Every slot's series to the largest offset; the first pass computes
     * the most (pass 0's extra), a tile's rounding and the next pass's
     * reads past it stay within two tiles. */
    const int64_t want = nout + t->maxoff, pitch = ddtk_round_up(want + L->pass[0].extra
                                                                 + 2 * TILE, 64);
    Buffers *B;
    int rc = reserve(L, st, (size_t)(nrows > 0 ? nrows : 1) * (size_t)pitch, &B);
    if (rc)
        return rc;
    count_times(L, B);
    DDTK_CUDA(cudaEventRecord(B->ev[0], st), "recording a tree event");
    for (int l = 0; l < L->npass && nrows > 0; l++) {
        const int last = l == L->npass - 1;
        const void *in = l ? B->tmp[(l - 1) & 1] : rows;
        launch_pass(L, l, in, l ? pitch : stride, last ? B->s1 : B->tmp[l & 1], pitch,
                    want + L->pass[l].extra, st);
        DDTK_CUDA(cudaGetLastError(), "launching tree stage 1");
    }
    DDTK_CUDA(cudaEventRecord(B->ev[1], st), "recording a tree event");
    const int64_t tiles = (nout + COMBINE_THREADS - 1) / COMBINE_THREADS;
    dim3 grid((unsigned)((L->ndm + COMBINE_DMS - 1) / COMBINE_DMS),
              (unsigned)(tiles < MAX_GRID_Y ? tiles : MAX_GRID_Y));
    combine<<<grid, COMBINE_THREADS, 0, st>>>(B->s1, pitch, L->d_route, L->d_quad, t->g.nsb,
                                              L->ndm, out, ostride, nout);
    DDTK_CUDA(cudaGetLastError(), "launching tree stage 2");
    DDTK_CUDA(cudaEventRecord(B->ev[2], st), "recording a tree event");
    B->timed = 1;
    return DDTK_OK;
}

static void report(const void *state, char *buf, size_t n)
{
    const TreeLevel *L = (const TreeLevel *)state;
    char passes[128] = "";
    for (int l = 0, used = 0; l < L->npass && used < (int)sizeof passes - 8; l++)
        used += snprintf(passes + used, sizeof passes - used, "%s%d", l ? " x " : "",
                         L->pass[l].G);
    snprintf(buf, n, "tree: %d channels per sub-band, %d sub-bands, %d slots (passes up to %d); "
             "stage 1 in %d shared-memory kernel%s of %s rows, stage 2 %d DMs per block",
             L->t->g.cps, L->t->g.nsb, L->t->nslot, L->t->jmax, L->npass,
             L->npass > 1 ? "s" : "", passes, COMBINE_DMS);
}

/* Seconds of stage 1 and 2 since the last call, added to t[0] and t[1]. */
static void stage_times(void *state, double t[2])
{
    TreeLevel *L = (TreeLevel *)state;
    for (int i = 0; i < 2; i++)
        count_times(L, &L->buf[i]);
    t[0] += L->time1;
    t[1] += L->time2;
    L->time1 = L->time2 = 0;
}

}  // namespace ddgpu

extern "C" const ddtk_gpu_algo ddtk_gpu_tree = { ddgpu::create, ddgpu::gulp, ddgpu::report,
                                                 ddgpu::destroy, NULL, ddgpu::stage_times };
