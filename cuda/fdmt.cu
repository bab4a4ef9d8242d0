/*
 * fdmt.cu - the GPU half of the FDMT (src/algos/fdmt.c has the descriptor and the
 * merge tree, cpu/fdmt.c the CPU kernel): every row of the merge tree's
 * nodes (the root's: the DMs' series) made from two rows below it.
 *
 * The plan (src/algos/fdmt_bands.c, host code the unit tests run without
 * a GPU) puts the depths in bands of up to five, a launch a band
 * (band_kernel). A band's targets are the rows read above it (or the
 * DMs), split into groups (up to 64 rows of one node); for each group it
 * lists the rows to stage from device memory (input rows, or targets of
 * the band below) and every row between, each with a window of samples
 * relative to a tile and a slot of shared memory. A block stages a tile's
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
#define FTHREADS 512
#define FBLOCKS 2                 /* blocks a multiprocessor: shared memory's share */
#define FWARPS (FTHREADS / 32)

/* The plan's descriptors (src/algos/fdmt.h). */
typedef ddtk_fdmt_ext FExt;
typedef ddtk_fdmt_op FOp;
typedef ddtk_fdmt_group FGroup;

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

/* A pack of a slot (DDTK_FDMT_PACK bytes): NP samples of E. */
template <typename E>
__host__ __device__ constexpr int np_of()
{
    return DDTK_FDMT_PACK / (int)sizeof(E);
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
    if (e.kind == DDTK_FDMT_IN && g < A.inlen)
        v = load_pack<T, E>(A.in + (int64_t)e.ref * A.istride, g, A.inlen, A.bias);
    else if (e.kind == DDTK_FDMT_ROW && g < A.nout + e.lim)
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

/* ---- the level (host) ---------------------------------------------------------- */

/* A level: the plan's bands (fdmt_bands.c) and their descriptors on the
 * device; the stored rows of each stream. */
struct FdmtLevel {
    const ddtk_fdmt_plan *f;
    Encoding enc;
    int narrow;                   /* rows as 16-bit integers (else floats) */
    int nsm;                      /* multiprocessors */
    int (*run)(const FdmtLevel *, void *, const void *, int64_t, int64_t, float *, int64_t,
               cudaStream_t);     /* run_bands for the input's and the rows' types */
    ddtk_fdmt_bands plan;
    struct DevBand {
        FGroup *groups;
        FOp *desc;
    } *dev;
    struct Buffers {
        cudaStream_t st;
        void *rows;
        size_t bytes;
    } buf[2];
};

static void destroy(void *state)
{
    FdmtLevel *L = (FdmtLevel *)state;
    if (!L)
        return;
    for (int b = 0; L->dev && b < L->plan.nband; b++) {
        cudaFree(L->dev[b].groups);
        cudaFree(L->dev[b].desc);
    }
    free(L->dev);
    ddtk_fdmt_bands_free(&L->plan);
    for (int i = 0; i < 2; i++)
        cudaFree(L->buf[i].rows);
    free(L);
}

static int64_t pitch_of(const FdmtLevel *L, int64_t nout)
{
    return ddtk_round_up(nout + L->plan.reach, 64);
}

static int64_t row_bytes(const FdmtLevel *L, int64_t nout)
{
    return pitch_of(L, nout) * (L->narrow ? 2 : 4);
}

static int64_t dev_bytes(const void *state, int64_t most)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    return (int64_t)L->plan.nstore * row_bytes(L, most);
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
    for (int b = 0; b < L->plan.nband; b++) {
        const ddtk_fdmt_band &B = L->plan.band[b];
        const int ntile = (int)((nout + B.lim + B.tile - 1) / B.tile);
        const BandArgs<T, E> A = { (const T *)rows, stride, (int)(nout + L->f->overlap),
                                   L->enc.bias, (E *)stored, pitch_of(L, nout), (int)nout, out,
                                   ostride, B.tile, B.pitch / np_of<E>(), B.nslot, ntile };
        /* Four waves of blocks, each looping over its group's tiles. */
        const int per = std::max(1, 4 * FBLOCKS * L->nsm / B.ngroup);
        dim3 grid((unsigned)B.ngroup, (unsigned)std::min(ntile, std::min(per, MAX_GRID_Y)));
        band_kernel<T, E><<<grid, FTHREADS, B.smem, st>>>(L->dev[b].groups,
                                                          (const uint4 *)L->dev[b].desc, A);
        DDTK_CUDA(cudaGetLastError(), "launching an FDMT band");
    }
    return DDTK_OK;
}

template <typename T, typename E>
static int bind(FdmtLevel *L, int budget)
{
    L->run = run_bands<T, E>;
    /* the same for every level: the attribute is the kernel's */
    DDTK_CUDA(cudaFuncSetAttribute(band_kernel<T, E>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   budget), "sizing the FDMT's bands");
    return DDTK_OK;
}

/* L's kernel for its input's samples and its rows': 16-bit rows for byte
 * input whose sums fit them, else floats. */
static int bind_types(FdmtLevel *L, int budget)
{
    if (L->narrow)
        return bind<uint8_t, int16_t>(L, budget);
    if (L->enc.storage == ST_U8)
        return bind<uint8_t, float>(L, budget);
    if (L->enc.storage == ST_U16)
        return bind<uint16_t, float>(L, budget);
    return bind<float, float>(L, budget);
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
    /* Integer samples lie in [-bias, maxval - bias]: a stored row's sums fit
     * 16 bits while its channels times the largest magnitude do. */
    const int64_t big = enc.bias > enc.maxval - enc.bias ? enc.bias : enc.maxval - enc.bias;
    L->narrow = enc.storage == ST_U8 && enc.maxval > 0
                && big * ddtk_fdmt_widest(L->f) <= 32767;
    const size_t budget = std::min((size_t)prop.sharedMemPerBlockOptin,
                                   (size_t)prop.sharedMemPerMultiprocessor / FBLOCKS - 1024);
    int rc = ddtk_fdmt_bands_init(&L->plan, L->f, L->narrow ? 2 : 4, budget);
    if (!rc && !(L->dev = (FdmtLevel::DevBand *)ddtk_calloc((size_t)L->plan.nband,
                                                             sizeof *L->dev, "FDMT bands")))
        rc = DDTK_ESYS;
    for (int b = 0; !rc && b < L->plan.nband; b++) {
        const ddtk_fdmt_band &B = L->plan.band[b];
        rc = ddtk_cuda_upload((void **)&L->dev[b].groups, B.group,
                              (size_t)B.ngroup * sizeof *B.group, "uploading the FDMT's bands");
        if (!rc)
            rc = ddtk_cuda_upload((void **)&L->dev[b].desc, B.desc,
                                  (size_t)B.ndesc * sizeof *B.desc, "uploading the FDMT's bands");
    }
    return rc ? rc : bind_types(L, (int)budget);
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
    return L->run(L, B->rows, rows, stride, nout, out, ostride, st);
}

/* -v: the kernels, the stored rows and the traffic model. */
static void report(const void *state, char *buf, size_t n)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    snprintf(buf, n, "fdmt: %d DMs, %d merge depths (%d bands in shared memory), %d stored "
             "rows (%s), %lld adds per output, DRAM model %.3g KB per output sample",
             L->f->ndm, L->f->depth, L->plan.nband, L->plan.nstore,
             L->narrow ? "16-bit" : "float", (long long)L->f->adds, L->plan.bytes / 1e3);
}

}  // namespace ddgpu

extern "C" const ddtk_gpu_algo ddtk_gpu_fdmt = { ddgpu::create, ddgpu::gulp, ddgpu::report,
                                                 ddgpu::destroy, ddgpu::dev_bytes, NULL };
