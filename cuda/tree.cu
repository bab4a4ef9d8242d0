/*
 * tree.cu - the GPU half of the tree plug-in (src/tree.c has the routes):
 * stage 1 gathers each (pass, sub-band) slot's channel rows with the pass's
 * diagonal delay, runs the log2 cps tree stages one kernel per stage
 * (double-buffered, one thread per output sample, as Barsdell et al. 2012
 * section 3.3 kept), and stage 2 adds the sub-band series of each DM.
 * Integer samples are decoded to floats as they are gathered, so sums are
 * exact below 2^24 and equal to the CPU's.
 */
#include "check.cuh"
#include "engine.cuh"
#include "tree.h"

#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define THREADS 256
#define MAX_GRID_Y 65535

struct TreeLevel {
    const ddtk_tree_level *t;
    Encoding enc;
    int ndm;
    int *d_first, *d_rows, *d_slot_j, *d_slot_n, *d_sel, *d_off;
    float *d_a, *d_b;
    size_t floats;                /* of each of d_a, d_b */
};

template <typename T>
__device__ __forceinline__ float decode(T v, int bias)
{
    return (float)((int)v - bias);
}

template <>
__device__ __forceinline__ float decode<float>(float v, int)
{
    return v;
}

/* a[s * cps + q][t] = sum of the live rows at position q of slot s's
 * sub-band, read j * q samples later (the pass's diagonal delay). */
template <typename T>
__global__ void gather(const T *rows, int64_t stride, int bias, const int *first,
                       const int *rowidx, const int *slot_j, const int *slot_n, int cps,
                       int nrows, int64_t len, float *a, int64_t pitch)
{
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= len)
        return;
    for (int row = blockIdx.y; row < nrows; row += gridDim.y) {
        int s = row / cps, q = row % cps, pos = slot_n[s] * cps + q;
        int64_t shift = (int64_t)slot_j[s] * q + t;
        float v = 0.0f;
        for (int i = first[pos]; i < first[pos + 1]; i++)
            v += decode<T>(rows[(int64_t)rowidx[i] * stride + shift], bias);
        a[(int64_t)row * pitch + t] = v;
    }
}

/* One tree stage merging sub-bands of r rows (cpu/tree.c has the layout). */
__global__ void stage(const float *in, float *out, int64_t pitch, int cps, int r, int nrows,
                      int64_t len)
{
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= len)
        return;
    for (int row = blockIdx.y; row < nrows; row += gridDim.y) {
        int w = row % cps, d = w % (2 * r), base = row - d;
        float hi = in[(int64_t)(base + d / 2) * pitch + t];
        float lo = in[(int64_t)(base + r + d / 2) * pitch + t + (d + 1) / 2];
        out[(int64_t)row * pitch + t] = hi + lo;
    }
}

/* Stage 2 (eq. 22): each DM's sub-band series at their offsets. */
__global__ void combine(const float *s1, int64_t pitch, const int *sel, const int *off,
                        int nsb, int ndm, float *out, int64_t ostride, int64_t nout)
{
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nout)
        return;
    for (int d = blockIdx.y; d < ndm; d += gridDim.y) {
        float acc = 0.0f;
        for (int n = 0; n < nsb; n++) {
            int k = sel[d * nsb + n];
            if (k >= 0)
                acc += s1[(int64_t)k * pitch + off[d * nsb + n] + t];
        }
        out[(int64_t)d * ostride + t] = acc;
    }
}

static dim3 grid_of(int64_t len, int nrows)
{
    return dim3((unsigned)((len + THREADS - 1) / THREADS),
                (unsigned)(nrows < MAX_GRID_Y ? nrows : MAX_GRID_Y));
}

static int upload(int **dst, const int *src, size_t n)
{
    DDTK_CUDA(cudaMalloc(dst, n * sizeof *src > 0 ? n * sizeof *src : 4), "allocating a tree table");
    DDTK_CUDA(cudaMemcpy(*dst, src, n * sizeof *src, cudaMemcpyHostToDevice),
              "uploading a tree table");
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
    cudaFree(L->d_sel);
    cudaFree(L->d_off);
    cudaFree(L->d_a);
    cudaFree(L->d_b);
    free(L);
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    (void)prop;
    TreeLevel *L = (TreeLevel *)ddtk_calloc(1, sizeof *L, "GPU tree level");
    if (!L)
        return DDTK_ESYS;
    *state = L;
    const ddtk_tree_level *t = (const ddtk_tree_level *)lv->state;
    const ddtk_tree_geom *g = &t->g;
    L->t = t;
    L->enc = enc;
    L->ndm = lv->ndm;
    size_t routes = (size_t)lv->ndm * g->nsb;
    int rc = upload(&L->d_first, g->first, (size_t)g->np + 1);
    if (!rc)
        rc = upload(&L->d_rows, g->rows, (size_t)p->ch.nlive);
    if (!rc)
        rc = upload(&L->d_slot_j, t->slot_j, (size_t)t->nslot);
    if (!rc)
        rc = upload(&L->d_slot_n, t->slot_n, (size_t)t->nslot);
    if (!rc)
        rc = upload(&L->d_sel, t->sel, routes);
    if (!rc)
        rc = upload(&L->d_off, t->off, routes);
    /* Every slot is gathered over the longest slot's span at the deepest pass. */
    *slack = (int64_t)t->maxoff + (int64_t)(t->jmax + 1) * (g->cps - 1) - lv->overlap + 256;
    return rc;
}

static int reserve(TreeLevel *L, size_t floats)
{
    if (L->floats >= floats)
        return DDTK_OK;
    cudaFree(L->d_a);
    cudaFree(L->d_b);
    L->d_a = L->d_b = NULL;
    L->floats = 0;
    DDTK_CUDA(cudaMalloc(&L->d_a, floats * sizeof(float)), "allocating tree stage buffers");
    DDTK_CUDA(cudaMalloc(&L->d_b, floats * sizeof(float)), "allocating tree stage buffers");
    L->floats = floats;
    return DDTK_OK;
}

static void launch_gather(const TreeLevel *L, const void *rows, int64_t stride, int64_t len,
                          int64_t pitch, cudaStream_t st)
{
    const ddtk_tree_level *t = L->t;
    int nrows = t->nslot * t->g.cps;
    dim3 grid = grid_of(len, nrows);
#define GATHER(T) gather<T><<<grid, THREADS, 0, st>>>((const T *)rows, stride, L->enc.bias, \
        L->d_first, L->d_rows, L->d_slot_j, L->d_slot_n, t->g.cps, nrows, len, L->d_a, pitch)
    if (L->enc.storage == ST_U8)
        GATHER(uint8_t);
    else if (L->enc.storage == ST_U16)
        GATHER(uint16_t);
    else
        GATHER(float);
#undef GATHER
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    TreeLevel *L = (TreeLevel *)state;
    const ddtk_tree_level *t = L->t;
    const int cps = t->g.cps, nrows = t->nslot * cps;
    int64_t len = nout + t->maxoff + cps - 1, pitch = ddtk_round_up(len, 32);
    int rc = reserve(L, (size_t)nrows * (size_t)pitch);
    if (rc)
        return rc;
    launch_gather(L, rows, stride, len, pitch, st);
    DDTK_CUDA(cudaGetLastError(), "launching the tree gather");
    float *a = L->d_a, *b = L->d_b;
    for (int r = 1; r < cps; r *= 2) {
        len -= r;
        stage<<<grid_of(len, nrows), THREADS, 0, st>>>(a, b, pitch, cps, r, nrows, len);
        DDTK_CUDA(cudaGetLastError(), "launching a tree stage");
        float *x = a;
        a = b;
        b = x;
    }
    combine<<<grid_of(nout, L->ndm), THREADS, 0, st>>>(a, pitch, L->d_sel, L->d_off,
                                                       t->g.nsb, L->ndm, out, ostride, nout);
    DDTK_CUDA(cudaGetLastError(), "launching the tree stage 2");
    return DDTK_OK;
}

static void report(const void *state, char *buf, size_t n)
{
    const TreeLevel *L = (const TreeLevel *)state;
    snprintf(buf, n, "tree: %d channels per sub-band, %d sub-bands, %d slots (passes up to %d), "
             "one kernel per stage", L->t->g.cps, L->t->g.nsb, L->t->nslot, L->t->jmax);
}

const GpuAlgo tree_gpu = { DDTK_ALGO_TREE, create, gulp, report, destroy, NULL, NULL };

}  // namespace ddgpu
