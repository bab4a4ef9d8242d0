/*
 * fdas_gpu.cu - the fdas GPU backend: cuFFT for the long real FFT and the batched
 * forward FFTs of the spectrum blocks; kernels for de-meaning, red-noise
 * whitening and block loading; the fused correlation kernel (fdas_corr.cuh)
 * and the fused harmonic-sum/threshold kernel (fdas_harm.cuh); plane tiling
 * when the plane does not fit in device memory; per-stage event timing. The
 * f-z plane stays on the device; the hits are sorted there (CUB) and only
 * they come back.
 */
/* CUB's NVTX ranges (profiler annotations) would read NVTX_INJECTION64_PATH
 * from the environment: the library reads none. */
#define CCCL_DISABLE_NVTX
#include <cub/device/device_radix_sort.cuh>
#include <cuda_runtime.h>
#include <cufft.h>

#include "check.cuh"
#include "fdas_corr.cuh"
#include "fdas_harm.cuh"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_HITS (1 << 20)
#define RN_MAXLEN 256
#define MIB 1048576.0

enum { EV_START, EV_FFT, EV_RN, EV_T0, EV_T1, EV_T2, NEV };

typedef struct gpu_state {
    float *x;
    float *plane;                 /* untiled: the whole plane; tiled: the tile buffers */
    cufftComplex *spec, *spread, *tmpl, *blk;
    float2 *tw;                   /* inverse twiddles exp(+2 pi i t / fftlen) */
    long long *rn_start;
    double *rn_mean, *rn_centre, *sum;
    ddtk_fdas_hit *hits;          /* 2 MAX_HITS: as found, then sorted */
    unsigned long long *keys;     /* 2 MAX_HITS likewise (fdas::k_hit_keys) */
    int key_bits, pos_bits;       /* significant key bits (0: too many positions,
                                     the host sorts), position bits */
    void *sort_tmp;
    size_t sort_bytes;
    unsigned long long *nhits;
    cufftHandle rfft, fwd;
    int blk_cap;                  /* spectrum blocks per forward-FFT batch */
    int64_t tile;                 /* top positions per tile; 0: the plane is whole */
    fdas::hs_view view[DDTK_FDAS_MAXHARM];   /* tiled: top tile, then each fraction */
    cudaEvent_t ev[NEV];
} gpu_state;

#define CUFFT(call, what)                                                        \
    do {                                                                         \
        if ((call) != CUFFT_SUCCESS)                                             \
            return ddtk_fail(DDTK_ESYS, "GPU: cuFFT %s failed", what);           \
    } while (0)

/* ---- kernels -------------------------------------------------------------- */

__global__ void k_sum(const float *x, long long n, double *sum)
{
    __shared__ double part[256];
    double s = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        s += x[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w)
            part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(sum, part[0]);
}

__global__ void k_subtract(float *x, long long n, const double *sum)
{
    float mean = (float)(*sum / n);
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        x[i] -= mean;
}

/* One thread per red-noise block: median power / ln 2 (same selection as the CPU). */
__global__ void k_rn_medians(const cufftComplex *spec, const long long *start, int nb,
                             double *mean, double *centre)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb)
        return;
    float v[RN_MAXLEN];
    long long s = start[b];
    int n = (int)(start[b + 1] - s);
    for (int i = 0; i < n; i++)
        v[i] = spec[s + i].x * spec[s + i].x + spec[s + i].y * spec[s + i].y;
    mean[b] = fmax(ddtk_fdas_select_median(v, n) / M_LN2, 1e-30);
    centre[b] = s + 0.5 * (n - 1);
}

/* Normalise bin k by the interpolated local mean; write the spread spectrum. */
__global__ void k_rn_apply(cufftComplex *spec, long long nbins, const double *mean,
                           const double *centre, int nb, cufftComplex *spread, int res)
{
    long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (k >= nbins)
        return;
    cufftComplex v = spec[k];
    if (k == 0) {
        v.x = v.y = 0;
    } else {
        int lo = 0, hi = nb - 1;          /* last b with centre[b] <= k, or 0 */
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (centre[mid] <= k)
                lo = mid;
            else
                hi = mid - 1;
        }
        int b = lo;
        double m = mean[b];
        if (b + 1 < nb && k > centre[b])
            m += (mean[b + 1] - mean[b]) * (k - centre[b]) / (centre[b + 1] - centre[b]);
        float sc = (float)(1.0 / sqrt(m));
        v.x *= sc;
        v.y *= sc;
    }
    spec[k] = v;
    spread[res * k] = v;
    if (res == 2)
        spread[2 * k + 1] = make_cuFloatComplex(0, 0);
}

__global__ void k_load(const cufftComplex *spread, long long len, long long m_first, int step,
                       int L, int nblk, cufftComplex *blk)
{
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (idx >= (long long)nblk * L)
        return;
    int b = (int)(idx / L), j = (int)(idx % L);
    long long m = m_first + (long long)b * step + j;
    blk[idx] = m >= 0 && m < len ? spread[m] : make_cuFloatComplex(0, 0);
}

/* ---- host side ------------------------------------------------------------ */

static unsigned grid(long long n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

static int frac_zlo(const ddtk_fdas_plan *p, int f)
{
    return ddtk_fdas_frac_zi(0, p->zmax, p->frac[f].num, p->frac[f].den);
}

static int frac_zhi(const ddtk_fdas_plan *p, int f)
{
    return ddtk_fdas_frac_zi(p->numz - 1, p->zmax, p->frac[f].num, p->frac[f].den);
}

/* Floats of the tile buffers for tiles of w top positions; row strides into ld. */
static size_t tile_floats(const ddtk_fdas_plan *p, int64_t w, long long *ld)
{
    size_t n = (size_t)p->numz * w;
    if (ld)
        ld[0] = w;
    for (int f = 0; f < p->nfrac; f++) {
        long long q = w * p->frac[f].num / p->frac[f].den + 4;
        if (ld)
            ld[f + 1] = q;
        n += (size_t)(frac_zhi(p, f) - frac_zlo(p, f) + 1) * q;
    }
    return n;
}

static double blk_bytes(const ddtk_fdas_plan *p, int64_t nblk)
{
    return (double)nblk * p->fftlen * sizeof(cufftComplex);
}

/* cfg.gpu_mem caps the plane and its work buffers (a tuning and test knob). */
static double mem_cap(const ddtk_fdas_plan *p)
{
    return p->cfg.gpu_mem > 0 ? (double)p->cfg.gpu_mem : INFINITY;
}

/* The whole plane if it fits, else the widest tile (a multiple of 2 blocks) that does. */
static int plan_tiles(ddtk_fdas_plan *p, gpu_state *g, size_t fixed)
{
    size_t free_b = 0, total_b = 0;
    DDTK_CUDA(cudaMemGetInfo(&free_b, &total_b), "memory query");
    /* 256 MiB stays free for the cuFFT work areas */
    double avail = fmin((double)free_b - (double)fixed - 256 * MIB, mem_cap(p));
    int64_t width = p->width, nblk = (p->plane_len + width - 1) / width;
    g->tile = 0;
    g->blk_cap = (int)nblk;
    if (4.0 * p->numz * p->plane_len + blk_bytes(p, nblk) <= avail)
        return DDTK_OK;
    int64_t step = 2 * width, w = (p->phi - p->plo + step - 1) / step * step;
    double need;
    while ((need = 4.0 * tile_floats(p, w, NULL) + blk_bytes(p, w / width + 2)) > avail) {
        if (w <= step)
            return ddtk_fail(DDTK_ESYS, "GPU: %.0f MiB of device memory is too little for "
                             "one plane tile of %d templates (%.0f MiB); use the CPU backend",
                             fmax(avail, 0) / MIB, p->numz, need / MIB);
        w = (w / 2 + step - 1) / step * step;
    }
    g->tile = w;
    g->blk_cap = (int)(w / width + 2);
    return DDTK_OK;
}

static void tile_views(const ddtk_fdas_plan *p, gpu_state *g)
{
    long long ld[DDTK_FDAS_MAXHARM];
    tile_floats(p, g->tile, ld);
    const float *base = g->plane;
    g->view[0] = fdas::hs_view{ base, ld[0], 0, 0 };
    base += (size_t)p->numz * ld[0];
    for (int f = 0; f < p->nfrac; f++) {
        g->view[f + 1] = fdas::hs_view{ base, ld[f + 1], 0, frac_zlo(p, f) };
        base += (size_t)(frac_zhi(p, f) - frac_zlo(p, f) + 1) * ld[f + 1];
    }
}

static int alloc_all(ddtk_fdas_plan *p, gpu_state *g)
{
    size_t L = (size_t)p->fftlen, nb = (size_t)p->nbins;
    while (g->pos_bits < 62 && (1LL << g->pos_bits) < p->phi)
        g->pos_bits++;
    int bits = fdas::KEY_FIXED_BITS + g->pos_bits;
    g->key_bits = bits <= 64 ? bits : 0;
    DDTK_CUDA(cub::DeviceRadixSort::SortPairs(NULL, g->sort_bytes, g->keys, g->keys, g->hits, g->hits,
                                       MAX_HITS), "sort size");
    size_t fixed = sizeof(float) * p->n + sizeof(cufftComplex) * (nb + 1 + p->res * nb + L * p->numz) +
                   sizeof(float2) * L + 2 * (sizeof(ddtk_fdas_hit) + sizeof(*g->keys)) * MAX_HITS +
                   g->sort_bytes;
    int rc = plan_tiles(p, g, fixed);
    if (rc)
        return rc;
    size_t plane = g->tile ? tile_floats(p, g->tile, NULL) : (size_t)p->numz * p->plane_len;
    DDTK_CUDA(cudaMalloc(&g->x, sizeof(float) * p->n), "alloc");
    DDTK_CUDA(cudaMallocHost(&p->series, sizeof(float) * p->n), "alloc pinned series");
    DDTK_CUDA(cudaMalloc(&g->spec, sizeof(cufftComplex) * (nb + 1)), "alloc");
    DDTK_CUDA(cudaMalloc(&g->spread, sizeof(cufftComplex) * p->res * nb), "alloc");
    DDTK_CUDA(cudaMalloc(&g->tmpl, sizeof(cufftComplex) * L * p->numz), "alloc");
    DDTK_CUDA(cudaMalloc(&g->tw, sizeof(float2) * L), "alloc");
    DDTK_CUDA(cudaMalloc(&g->blk, (size_t)blk_bytes(p, g->blk_cap)), "alloc");
    DDTK_CUDA(cudaMalloc(&g->plane, sizeof(float) * (plane + fdas::HS_SLACK)), "alloc plane");
    DDTK_CUDA(cudaMalloc(&g->rn_start, sizeof(long long) * (p->rn_nblocks + 1)), "alloc");
    DDTK_CUDA(cudaMalloc(&g->rn_mean, sizeof(double) * p->rn_nblocks), "alloc");
    DDTK_CUDA(cudaMalloc(&g->rn_centre, sizeof(double) * p->rn_nblocks), "alloc");
    DDTK_CUDA(cudaMalloc(&g->sum, sizeof(double)), "alloc");
    DDTK_CUDA(cudaMalloc(&g->hits, 2 * sizeof(ddtk_fdas_hit) * MAX_HITS), "alloc");
    DDTK_CUDA(cudaMalloc(&g->keys, 2 * sizeof(*g->keys) * MAX_HITS), "alloc");
    DDTK_CUDA(cudaMalloc(&g->sort_tmp, g->sort_bytes), "alloc");
    DDTK_CUDA(cudaMalloc(&g->nhits, sizeof(unsigned long long)), "alloc");
    for (int i = 0; i < NEV; i++)
        DDTK_CUDA(cudaEventCreate(&g->ev[i]), "event");
    if (g->tile)
        tile_views(p, g);
    if (g->tile && p->cfg.verbose)
        ddtk_report(DDTK_MSG_VERBOSE, "GPU: the %.0f MiB plane does not fit; tiles of %lld "
                    "positions (%.0f MiB)", 4.0 * p->numz * p->plane_len / MIB,
                    (long long)g->tile, 4.0 * plane / MIB);
    return DDTK_OK;
}

template <int L>
static cudaError_t corr_prepare()
{
    return cudaFuncSetAttribute(fdas::k_corr<L>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)fdas::corr_smem(L));
}

template <int L>
static cudaError_t corr_launch(const fdas::corr_args &a, int nb)
{
    fdas::k_corr<L><<<dim3(nb, (a.nz + fdas::ZPER - 1) / fdas::ZPER), L / 16,
                      fdas::corr_smem(L)>>>(a);
    return cudaGetLastError();
}

/* The block lengths plan_blocks can choose (zmax <= 1200). */
static cudaError_t corr_dispatch(int L, const fdas::corr_args *a, int nb)
{
    switch (L) {
    case 2048: return a ? corr_launch<2048>(*a, nb) : corr_prepare<2048>();
    case 4096: return a ? corr_launch<4096>(*a, nb) : corr_prepare<4096>();
    case 8192: return a ? corr_launch<8192>(*a, nb) : corr_prepare<8192>();
    case 16384: return a ? corr_launch<16384>(*a, nb) : corr_prepare<16384>();
    default: return cudaErrorInvalidValue;
    }
}

static int upload_constants(ddtk_fdas_plan *p, gpu_state *g)
{
    int L = p->fftlen;
    float2 *tw = (float2 *)malloc(sizeof(float2) * L);
    if (!tw)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    for (int t = 0; t < L; t++)
        tw[t] = make_float2((float)cos(2 * M_PI * t / L), (float)sin(2 * M_PI * t / L));
    cudaError_t e = cudaMemcpy(g->tw, tw, sizeof(float2) * L, cudaMemcpyHostToDevice);
    free(tw);
    DDTK_CUDA(e, "upload twiddles");
    DDTK_CUDA(cudaMemcpy(g->tmpl, p->templates, sizeof(cufftComplex) * L * p->numz,
                  cudaMemcpyHostToDevice), "upload templates");
    DDTK_CUDA(cudaMemcpy(g->rn_start, p->rn_start, sizeof(long long) * (p->rn_nblocks + 1),
                  cudaMemcpyHostToDevice), "upload red-noise blocks");
    if (corr_dispatch(L, NULL, 0) != cudaSuccess)
        return ddtk_fail(DDTK_ESYS, "GPU: %d-point blocks need %zu KiB of shared memory, more "
                         "than this GPU gives a block; lower zmax or use the CPU backend", L,
                         fdas::corr_smem(L) / 1024);
    return DDTK_OK;
}

extern "C" int ddtk_fdas_gpu_init(ddtk_fdas_plan *p)
{
    gpu_state *g = (gpu_state *)calloc(1, sizeof *g);
    if (!g)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    p->gpu = g;
    DDTK_CUDA(cudaSetDevice(p->cfg.gpu), "select device");
    int rc = alloc_all(p, g);
    if (rc)
        return rc;
    CUFFT(cufftPlan1d(&g->rfft, (int)p->n, CUFFT_R2C, 1), "R2C plan");
    CUFFT(cufftPlan1d(&g->fwd, p->fftlen, CUFFT_C2C, g->blk_cap), "block plan");
    return upload_constants(p, g);
}

/* The series upload is one DMA when x is the plan's pinned series buffer
 * (ddtk_fdas_read_for read it there); other memory goes the pageable way. */
static int whiten(ddtk_fdas_plan *p, gpu_state *g, const float *x)
{
    DDTK_CUDA(cudaEventRecord(g->ev[EV_START]), "event");
    DDTK_CUDA(cudaMemcpyAsync(g->x, x, sizeof(float) * p->n, cudaMemcpyHostToDevice), "upload series");
    DDTK_CUDA(cudaMemsetAsync(g->sum, 0, sizeof(double)), "memset");
    k_sum<<<512, 256>>>(g->x, p->n, g->sum);
    k_subtract<<<grid(p->n, 256), 256>>>(g->x, p->n, g->sum);
    CUFFT(cufftExecR2C(g->rfft, g->x, g->spec), "R2C");
    DDTK_CUDA(cudaEventRecord(g->ev[EV_FFT]), "event");
    k_rn_medians<<<grid(p->rn_nblocks, 128), 128>>>(g->spec, g->rn_start, p->rn_nblocks,
                                                   g->rn_mean, g->rn_centre);
    k_rn_apply<<<grid(p->nbins, 256), 256>>>(g->spec, p->nbins, g->rn_mean, g->rn_centre,
                                              p->rn_nblocks, g->spread, p->res);
    DDTK_CUDA(cudaEventRecord(g->ev[EV_RN]), "event");
    DDTK_CUDA(cudaGetLastError(), "red-noise whitening");
    return DDTK_OK;
}

/*
 * Plane rows [z0, z1) at positions [q0, q0 + nq) into out (row stride ld),
 * q0 even when interbinning: spectrum blocks are loaded and forward
 * transformed a batch at a time, then correlated with every row.
 */
static int corr_region(ddtk_fdas_plan *p, gpu_state *g, int64_t q0, int64_t nq, int z0, int z1,
                       float *out, long long ld)
{
    int L = p->fftlen;
    int64_t nb = (nq + p->width - 1) / p->width, m0 = p->res == 2 ? q0 : q0 / 2;
    for (int64_t b0 = 0; b0 < nb; b0 += g->blk_cap) {
        int n = (int)(nb - b0 < g->blk_cap ? nb - b0 : g->blk_cap);
        /* the batch FFT always transforms blk_cap blocks; those past n are ignored */
        k_load<<<grid((long long)n * L, 256), 256>>>(g->spread, (long long)p->res * p->nbins,
                                                      m0 + b0 * p->uselen - p->khalf,
                                                      p->uselen, L, n, g->blk);
        CUFFT(cufftExecC2C(g->fwd, g->blk, g->blk, CUFFT_FORWARD), "block FFTs");
        fdas::corr_args a = { (const float2 *)g->blk, (const float2 *)g->tmpl, g->tw, z0,
                              z1 - z0, p->khalf, p->uselen, p->width, p->res,
                              nq - b0 * p->width, out + b0 * p->width, ld };
        DDTK_CUDA(corr_dispatch(L, &a, n), "correlation kernel");
    }
    return DDTK_OK;
}

/* Fill what the harmonic sums of top positions [P0, P1) read: the whole plane
 * once when untiled, else the top tile and each fraction's band of rows. */
static int fill_tile(ddtk_fdas_plan *p, gpu_state *g, int64_t P0, int64_t P1)
{
    if (!g->tile)
        return corr_region(p, g, 0, p->plane_len, 0, p->numz, g->plane, p->plane_len);
    g->view[0].p0 = P0;
    int rc = corr_region(p, g, P0, P1 - P0, 0, p->numz, (float *)g->view[0].base, g->view[0].ld);
    for (int f = 0; f < p->nfrac && !rc; f++) {
        fdas::hs_view *v = &g->view[f + 1];
        int64_t lo = ddtk_fdas_frac_pos(P0, p->frac[f].num, p->frac[f].den);
        int64_t hi = ddtk_fdas_frac_pos(P1 - 1, p->frac[f].num, p->frac[f].den);
        v->p0 = p->res == 1 ? lo & ~(int64_t)1 : lo;
        rc = corr_region(p, g, v->p0, hi - v->p0 + 1, v->zlo, frac_zhi(p, f) + 1,
                         (float *)v->base, v->ld);
    }
    return rc;
}

template <int NS>
static void hs_launch(const fdas::hs_args &a)
{
    constexpr int per = fdas::HS_THREADS * fdas::hs_np<NS>();
    fdas::k_harmsum<NS, fdas::hs_np<NS>()>
        <<<grid(a.phi - a.plo, per), fdas::HS_THREADS>>>(a);
}

static int harmsum_tile(ddtk_fdas_plan *p, gpu_state *g, int64_t P0, int64_t P1)
{
    fdas::hs_args a;
    memset(&a, 0, sizeof a);
    fdas::hs_view whole = { g->plane, p->plane_len, 0, 0 };
    a.top = g->tile ? g->view[0] : whole;
    for (int f = 0; f < p->nfrac; f++)
        a.frac[f] = g->tile ? g->view[f + 1] : whole;
    a.plo = P0;
    a.phi = P1;
    for (int s = 0; s < p->nstages; s++) {
        double scale = 2.0 * (1 << s);
        a.slo[s] = (long long)ceil(scale * p->rlo);
        a.shi[s] = (long long)floor(scale * p->rhi);
        a.cut[s] = p->powcut[s];
    }
    a.numz = p->numz;
    a.zmax = p->zmax;
    a.hits = g->hits;
    a.nhits = g->nhits;
    a.max_hits = MAX_HITS;
    switch (p->nstages) {
    case 1: hs_launch<1>(a); break;
    case 2: hs_launch<2>(a); break;
    case 3: hs_launch<3>(a); break;
    case 4: hs_launch<4>(a); break;
    case 5: hs_launch<5>(a); break;
    default: hs_launch<6>(a); break;
    }
    DDTK_CUDA(cudaGetLastError(), "harmonic-sum kernel");
    return DDTK_OK;
}

static float elapsed_ms(gpu_state *g, int a, int b)
{
    float ms = 0;
    cudaEventElapsedTime(&ms, g->ev[a], g->ev[b]);
    return ms;
}

/* Tile by tile (one tile when the plane is whole): correlate, then sum and threshold. */
static int search_tiles(ddtk_fdas_plan *p, gpu_state *g)
{
    DDTK_CUDA(cudaMemsetAsync(g->nhits, 0, sizeof(unsigned long long)), "memset");
    int64_t w = g->tile ? g->tile : p->phi - p->plo;
    double corr = 0, sum = 0;
    for (int64_t P0 = p->plo; P0 < p->phi; P0 += w) {
        int64_t P1 = P0 + w < p->phi ? P0 + w : p->phi;
        int rc;
        DDTK_CUDA(cudaEventRecord(g->ev[EV_T0]), "event");
        if ((rc = fill_tile(p, g, P0, P1)))
            return rc;
        DDTK_CUDA(cudaEventRecord(g->ev[EV_T1]), "event");
        if ((rc = harmsum_tile(p, g, P0, P1)))
            return rc;
        DDTK_CUDA(cudaEventRecord(g->ev[EV_T2]), "event");
        DDTK_CUDA(cudaEventSynchronize(g->ev[EV_T2]), "correlation and harmonic sums");
        corr += elapsed_ms(g, EV_T0, EV_T1);
        sum += elapsed_ms(g, EV_T1, EV_T2);
    }
    p->times.fft = elapsed_ms(g, EV_START, EV_FFT) / 1e3;
    p->times.rednoise = elapsed_ms(g, EV_FFT, EV_RN) / 1e3;
    p->times.correlate = corr / 1e3;
    p->times.harmsum = sum / 1e3;
    return DDTK_OK;
}

static int fetch_hits(ddtk_fdas_plan *p, gpu_state *g)
{
    double t0 = ddtk_now();
    unsigned long long n = 0;
    DDTK_CUDA(cudaMemcpy(&n, g->nhits, sizeof n, cudaMemcpyDeviceToHost), "hit count");
    if (n > MAX_HITS)
        ddtk_report(DDTK_MSG_WARNING, "%llu plane hits; only the first %d kept (raise the "
                    "threshold)", n, MAX_HITS);
    n = n > MAX_HITS ? MAX_HITS : n;
    p->hits.n = 0;
    if (n > (unsigned long long)p->hits.cap) {
        ddtk_fdas_hit *h = (ddtk_fdas_hit *)realloc(p->hits.h, sizeof *h * n);
        if (!h)
            return ddtk_fail(DDTK_ESYS, "out of memory for candidates");
        p->hits.h = h;
        p->hits.cap = (int64_t)n;
    }
    const ddtk_fdas_hit *src = g->hits;
    if (n && g->key_bits) {
        fdas::k_hit_keys<<<grid((long long)n, 256), 256>>>(g->hits, (int)n, g->pos_bits, g->keys);
        DDTK_CUDA(cub::DeviceRadixSort::SortPairs(g->sort_tmp, g->sort_bytes, g->keys, g->keys + MAX_HITS,
                                           g->hits, g->hits + MAX_HITS, (int)n, 0, g->key_bits),
           "sort hits");
        src = g->hits + MAX_HITS;
    }
    if (n)
        DDTK_CUDA(cudaMemcpy(p->hits.h, src, sizeof(ddtk_fdas_hit) * n, cudaMemcpyDeviceToHost), "hits");
    p->hits.n = (int64_t)n;
    p->hits.sorted = g->key_bits != 0;
    p->times.candidates = ddtk_now() - t0;
    return DDTK_OK;
}

extern "C" int ddtk_fdas_gpu_search(ddtk_fdas_plan *p, const float *x)
{
    gpu_state *g = (gpu_state *)p->gpu;
    int rc;
    DDTK_CUDA(cudaSetDevice(p->cfg.gpu), "select device");
    if ((rc = whiten(p, g, x)) || (rc = search_tiles(p, g)) || (rc = fetch_hits(p, g)))
        return rc;
    p->spec_on_host = 0;
    return DDTK_OK;
}

extern "C" int ddtk_fdas_gpu_sync_spectrum(ddtk_fdas_plan *p)
{
    gpu_state *g = (gpu_state *)p->gpu;
    DDTK_CUDA(cudaMemcpy(p->spec, g->spec, sizeof(cufftComplex) * p->nbins, cudaMemcpyDeviceToHost),
       "spectrum");
    return DDTK_OK;
}

/* Tiled: the plane is not held, so the requested band is correlated again. */
static int plane_band(ddtk_fdas_plan *p, gpu_state *g, int zi0, int zi1, int64_t p0, int64_t np,
                      float *out)
{
    int64_t q0 = p->res == 1 ? p0 & ~(int64_t)1 : p0, nq = p0 + np - q0;
    float *tmp = NULL;
    DDTK_CUDA(cudaMalloc(&tmp, sizeof(float) * (size_t)nq * (zi1 - zi0)), "alloc plane band");
    int rc = corr_region(p, g, q0, nq, zi0, zi1, tmp, nq);
    cudaError_t e = rc ? cudaSuccess
                       : cudaMemcpy2D(out, sizeof(float) * np, tmp + (p0 - q0), sizeof(float) * nq,
                                      sizeof(float) * np, zi1 - zi0, cudaMemcpyDeviceToHost);
    cudaFree(tmp);
    DDTK_CUDA(e, "plane band");
    return rc;
}

extern "C" int ddtk_fdas_gpu_plane(ddtk_fdas_plan *p, int zi0, int zi1, int64_t p0, int64_t np,
                                   float *out)
{
    gpu_state *g = (gpu_state *)p->gpu;
    if (g->tile)
        return plane_band(p, g, zi0, zi1, p0, np, out);
    DDTK_CUDA(cudaMemcpy2D(out, sizeof(float) * np, g->plane + (size_t)zi0 * p->plane_len + p0,
                    sizeof(float) * p->plane_len, sizeof(float) * np, zi1 - zi0,
                    cudaMemcpyDeviceToHost), "plane");
    return DDTK_OK;
}

extern "C" void ddtk_fdas_gpu_free(ddtk_fdas_plan *p)
{
    gpu_state *g = (gpu_state *)p->gpu;
    if (!g)
        return;
    if (g->rfft)
        cufftDestroy(g->rfft);
    if (g->fwd)
        cufftDestroy(g->fwd);
    for (int i = 0; i < NEV; i++)
        if (g->ev[i])
            cudaEventDestroy(g->ev[i]);
    void *bufs[] = { g->x, g->plane, g->spec, g->spread, g->tmpl, g->tw, g->blk, g->rn_start,
                     g->rn_mean, g->rn_centre, g->sum, g->hits, g->keys, g->sort_tmp, g->nhits };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    cudaFreeHost(p->series);
    p->series = NULL;
    free(g);
    p->gpu = NULL;
}
