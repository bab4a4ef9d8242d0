/*
 * fdmt.cu - the GPU half of the FDMT (src/algos/fdmt.c has the descriptor and the
 * merge tree, cpu/fdmt.c the CPU kernel): each merge depth of the tree is
 * one kernel over every row its nodes compute, then one kernel merges the
 * root's halves into the DMs' series.
 *
 * A row of a node is upper[t] + lower[t + mid] over the gulp's outputs plus
 * the row's own reach, as on the CPU: the same operands in the same order,
 * so the series equal the CPU's byte for byte (float input included).
 * Leaves are the level's device rows, decoded as they are read; node rows
 * live in one buffer per CUDA stream, row r at r * pitch. The kernels of a
 * gulp run in depth order on its stream. The halves of a node differ by at
 * most one channel, so their depths by at most one: a node of depth j reads
 * depths j - 1 and j - 2 (or the input), and the rows of depth j can take the
 * place of depth j - 3's, which nothing reads any more. The buffer holds
 * three regions, depth j in region j mod 3: htru's level 0 (1337 DMs) keeps
 * 4008 rows instead of all 11734.
 *
 * Memory traffic per output sample: 8 bytes read and 4 written per row the
 * tree computes (the plan's adds: about 1.4e4 per input spectrum for htru's
 * 1024 channels, DM 0-1000 scrunched), 170 KB, under 60 ns at 3 TB/s;
 * direct dedispersion's 2.1e6 adds take about 0.56 us at its measured
 * 3.7e12 adds/s. No shared-memory staging: each operand is read once.
 */
#include "check.cuh"
#include "engine.cuh"
#include "fdmt.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define THREADS 256
#define MAX_GRID_Y 65535
#define NO_ROW INT_MIN            /* a one-row band's root: no lower half */

/* One computed row: o = u + l shifted by mid, over nout + need samples. Rows
 * >= 0 are node rows of the buffer; -1 - r is the level's input row r. */
struct Entry {
    int o, u, l, mid, need;
};

struct Buffers {
    cudaStream_t st;
    float *rows;
    size_t floats;
};

struct FdmtLevel {
    const ddtk_fdmt_plan *f;
    Encoding enc;
    int ndepth;                   /* merge depths below the root */
    int *nent;                    /* per depth: entries */
    Entry **d_ent;
    Entry *d_root;
    int nrows;                    /* node rows in the buffer */
    int64_t reach;                /* the most any node row is computed past the outputs */
    Buffers buf[2];
};

template <typename T>
__device__ __forceinline__ float operand(const float *buf, int64_t pitch, const T *in,
                                         int64_t istride, int bias, int row, int64_t t)
{
    if (row >= 0)
        return buf[(int64_t)row * pitch + t];
    return decode<T>(in[(int64_t)(-1 - row) * istride + t], bias);
}

/* Every entry of one depth: blockIdx.y walks the entries, x the samples. */
template <typename T>
__global__ void merge(const Entry *e, int n, const T *in, int64_t istride, int bias, float *buf,
                      int64_t pitch, int64_t nout)
{
    for (int k = blockIdx.y; k < n; k += gridDim.y) {
        const Entry x = e[k];
        const int64_t len = nout + x.need;
        for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < len;
             t += (int64_t)gridDim.x * blockDim.x)
            buf[(int64_t)x.o * pitch + t] = operand<T>(buf, pitch, in, istride, bias, x.u, t)
                                            + operand<T>(buf, pitch, in, istride, bias, x.l,
                                                         t + x.mid);
    }
}

/* The root: series d from its halves, both read from the DM's offset (need). */
template <typename T>
__global__ void root(const Entry *e, int n, const T *in, int64_t istride, int bias,
                     const float *buf, int64_t pitch, int64_t nout, float *out, int64_t ostride)
{
    for (int k = blockIdx.y; k < n; k += gridDim.y) {
        const Entry x = e[k];
        float *o = out + (int64_t)x.o * ostride;
        for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < nout;
             t += (int64_t)gridDim.x * blockDim.x) {
            const int64_t s = t + x.need;
            o[t] = x.l == NO_ROW
                       ? operand<T>(buf, pitch, in, istride, bias, x.u, s)
                       : operand<T>(buf, pitch, in, istride, bias, x.u, s)
                             + operand<T>(buf, pitch, in, istride, bias, x.l, s + x.mid);
        }
    }
}

/* ---- the tables ------------------------------------------------------------------ */

static int upload(void **dst, const void *src, size_t bytes)
{
    DDTK_CUDA(cudaMalloc(dst, bytes > 0 ? bytes : 4), "allocating an FDMT table");
    if (bytes)
        DDTK_CUDA(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice),
                  "uploading an FDMT table");
    return DDTK_OK;
}

/* Buffer row of row i of node s (base: each stored node's first row), or
 * the input row of a leaf. */
static int row_id(const ddtk_fdmt_plan *f, const int *base, int s, int i)
{
    return f->node[s].up < 0 ? -1 - f->node[s].a : base[s] + i;
}

/* Entries of the nodes of depth j (stored nodes only). */
static int depth_entries(FdmtLevel *L, const int *base, int j, Entry *e)
{
    const ddtk_fdmt_plan *f = L->f;
    int n = 0;
    for (int s = 0; s < f->nnode - 1; s++) {
        const ddtk_fdmt_node *S = &f->node[s];
        if (S->up < 0 || S->depth != j)
            continue;
        for (int i = 0; i < S->nd; i++) {
            const int32_t *r = S->route + 4 * (size_t)i;
            if (r[3] < 0)
                continue;
            if (e)
                e[n] = Entry{ base[s] + i, row_id(f, base, S->up, r[0]),
                              row_id(f, base, S->lo, r[1]), r[2], r[3] };
            n++;
        }
    }
    return n;
}

static int upload_entries(FdmtLevel *L, const int *base)
{
    const ddtk_fdmt_plan *f = L->f;
    int most = f->ndm, rc = DDTK_OK;
    for (int j = 1; j <= L->ndepth; j++) {
        L->nent[j - 1] = depth_entries(L, base, j, NULL);
        most = L->nent[j - 1] > most ? L->nent[j - 1] : most;
    }
    Entry *e = (Entry *)ddtk_malloc((size_t)most * sizeof *e, "FDMT entries");
    if (!e)
        return DDTK_ESYS;
    for (int j = 1; !rc && j <= L->ndepth; j++) {
        depth_entries(L, base, j, e);
        rc = upload((void **)&L->d_ent[j - 1], e, (size_t)L->nent[j - 1] * sizeof *e);
    }
    const int R = f->nnode - 1;
    const ddtk_fdmt_node *root_node = &f->node[R];
    for (int d = 0; !rc && d < f->ndm; d++) {
        const int32_t *r = f->out_route + 4 * (size_t)d;
        e[d] = root_node->up < 0
                   ? Entry{ d, -1 - root_node->a, NO_ROW, 0, r[3] }
                   : Entry{ d, row_id(f, base, root_node->up, r[0]),
                            row_id(f, base, root_node->lo, r[1]), r[2], r[3] };
    }
    if (!rc)
        rc = upload((void **)&L->d_root, e, (size_t)f->ndm * sizeof *e);
    free(e);
    return rc;
}

static void destroy(void *state)
{
    FdmtLevel *L = (FdmtLevel *)state;
    if (!L)
        return;
    for (int j = 0; L->d_ent && j < L->ndepth; j++)
        cudaFree(L->d_ent[j]);
    free(L->d_ent);
    free(L->nent);
    cudaFree(L->d_root);
    for (int i = 0; i < 2; i++)
        cudaFree(L->buf[i].rows);
    free(L);
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    (void)p;
    (void)prop;
    FdmtLevel *L = (FdmtLevel *)ddtk_calloc(1, sizeof *L, "GPU FDMT level");
    if (!L)
        return DDTK_ESYS;
    *state = L;
    const ddtk_fdmt_plan *f = (const ddtk_fdmt_plan *)lv->state;
    L->f = f;
    L->enc = enc;
    L->ndepth = f->depth > 0 ? f->depth - 1 : 0;
    L->nent = (int *)ddtk_calloc((size_t)L->ndepth + 1, sizeof *L->nent, "FDMT entries");
    L->d_ent = (Entry **)ddtk_calloc((size_t)L->ndepth + 1, sizeof *L->d_ent, "FDMT entries");
    int *base = (int *)ddtk_malloc((size_t)f->nnode * sizeof *base, "FDMT rows");
    int *fill = (int *)ddtk_calloc((size_t)f->depth + 1, sizeof *fill, "FDMT rows");
    int rc = L->nent && L->d_ent && base && fill ? DDTK_OK : DDTK_ESYS;
    /* Rows of depth j in region j mod 3 (see the header comment). */
    int region[3] = { 0, 0, 0 };
    for (int s = 0; !rc && s < f->nnode - 1; s++)
        if (f->node[s].up >= 0) {
            const int j = f->node[s].depth;
            base[s] = fill[j];
            fill[j] += f->node[s].nd;
            region[j % 3] = fill[j] > region[j % 3] ? fill[j] : region[j % 3];
            L->reach = f->node[s].reach > L->reach ? f->node[s].reach : L->reach;
        }
    for (int s = 0; !rc && s < f->nnode - 1; s++)
        if (f->node[s].up >= 0)
            base[s] += f->node[s].depth % 3 == 0 ? 0
                       : f->node[s].depth % 3 == 1 ? region[0] : region[0] + region[1];
    L->nrows = region[0] + region[1] + region[2];
    free(fill);
    if (!rc)
        rc = upload_entries(L, base);
    free(base);
    *slack = 0;                   /* every read is within the outputs plus the overlap */
    return rc;
}

static int64_t pitch_of(const FdmtLevel *L, int64_t nout)
{
    return ddtk_round_up(nout + L->reach, 64);
}

static int64_t dev_bytes(const void *state, int64_t most)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    return (int64_t)L->nrows * pitch_of(L, most) * (int64_t)sizeof(float);
}

/* Stream st's node rows, grown to `floats` (contents not kept). */
static int reserve(FdmtLevel *L, cudaStream_t st, size_t floats, Buffers **out)
{
    Buffers *B = L->buf[0].st == st || !L->buf[0].st ? &L->buf[0] : &L->buf[1];
    B->st = st;
    *out = B;
    if (B->floats >= floats)
        return DDTK_OK;
    cudaFree(B->rows);
    B->rows = NULL;
    B->floats = 0;
    DDTK_CUDA(cudaMalloc((void **)&B->rows, (floats ? floats : 1) * sizeof(float)),
              "allocating FDMT rows");
    B->floats = floats;
    return DDTK_OK;
}

static unsigned grid_x(int64_t len)
{
    int64_t b = (len + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b < 65535 ? b : 65535);
}

template <typename T>
static int run(FdmtLevel *L, const Buffers *B, const void *rows, int64_t stride, int64_t nout,
               float *out, int64_t ostride, int64_t pitch, cudaStream_t st)
{
    const T *in = (const T *)rows;
    for (int j = 0; j < L->ndepth; j++) {
        if (L->nent[j] == 0)
            continue;
        dim3 grid(grid_x(nout + L->reach),
                  (unsigned)(L->nent[j] < MAX_GRID_Y ? L->nent[j] : MAX_GRID_Y));
        merge<T><<<grid, THREADS, 0, st>>>(L->d_ent[j], L->nent[j], in, stride, L->enc.bias,
                                           B->rows, pitch, nout);
        DDTK_CUDA(cudaGetLastError(), "launching an FDMT merge");
    }
    const int ndm = L->f->ndm;
    dim3 grid(grid_x(nout), (unsigned)(ndm < MAX_GRID_Y ? ndm : MAX_GRID_Y));
    root<T><<<grid, THREADS, 0, st>>>(L->d_root, ndm, in, stride, L->enc.bias, B->rows, pitch,
                                      nout, out, ostride);
    DDTK_CUDA(cudaGetLastError(), "launching the FDMT root");
    return DDTK_OK;
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    FdmtLevel *L = (FdmtLevel *)state;
    const int64_t pitch = pitch_of(L, nout);
    Buffers *B;
    int rc = reserve(L, st, (size_t)L->nrows * (size_t)pitch, &B);
    if (rc)
        return rc;
    if (L->enc.storage == ST_U8)
        return run<uint8_t>(L, B, rows, stride, nout, out, ostride, pitch, st);
    if (L->enc.storage == ST_U16)
        return run<uint16_t>(L, B, rows, stride, nout, out, ostride, pitch, st);
    return run<float>(L, B, rows, stride, nout, out, ostride, pitch, st);
}

static void report(const void *state, char *buf, size_t n)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    snprintf(buf, n, "fdmt: %d DMs, %d merge depths, %d node rows, %lld adds per output",
             L->f->ndm, L->ndepth + 1, L->nrows, (long long)L->f->adds);
}

}  // namespace ddgpu

extern "C" const ddtk_gpu_algo ddtk_gpu_fdmt = { ddgpu::create, ddgpu::gulp, ddgpu::report,
                                                 ddgpu::destroy, ddgpu::dev_bytes, NULL };
