/*
 * fdas.cu - the fdas GPU backend: cuFFT for the long real FFT and the batched
 * block FFTs of the overlap-save correlation; kernels for de-meaning, red-noise
 * whitening, block loading, template multiply, power/interbinning, harmonic
 * summing and thresholding. The whole f-z plane stays on the device and only
 * hits (position, z row, stage, power) come back.
 */
#include <cuda_runtime.h>
#include <cufft.h>

extern "C" {
#include "fdas_impl.h"
}

#include <math.h>
#include <string.h>

#define MAX_HITS (1 << 20)
#define RN_MAXLEN 256

typedef struct gpu_state {
    float *x, *plane;
    cufftComplex *spec, *spread, *tmpl, *blk, *prod;
    long long *rn_start;
    double *rn_mean, *rn_centre, *sum;
    ddtk_fdas_hit *hits;
    unsigned long long *nhits;
    cufftHandle rfft, fwd, inv;
    int chunk;                    /* blocks per batch */
    int64_t nblocks;
} gpu_state;

static int cuda_fail(cudaError_t e, const char *what)
{
    return ddtk_fail(DDTK_ESYS, "GPU: %s: %s", what, cudaGetErrorString(e));
}

#define CU(call, what)                                                           \
    do {                                                                         \
        cudaError_t e_ = (call);                                                 \
        if (e_ != cudaSuccess)                                                   \
            return cuda_fail(e_, what);                                          \
    } while (0)
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
    int k = (n - 1) / 2, lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = v[(lo + hi) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                float t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    mean[b] = fmax(v[k] / M_LN2, 1e-30);
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

__global__ void k_multiply(const cufftComplex *blk, const cufftComplex *tmpl, int L, int nblk,
                           int numz, cufftComplex *prod)
{
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long per_z = (long long)nblk * L;
    if (idx >= per_z * numz)
        return;
    int zi = (int)(idx / per_z);
    long long r = idx % per_z;
    prod[idx] = cuCmulf(blk[r], tmpl[(long long)zi * L + r % L]);
}

__device__ float pw(cufftComplex v)
{
    return v.x * v.x + v.y * v.y;
}

/* Plane positions of each block: exact = every output, interbin = output + midpoint. */
__global__ void k_power(const cufftComplex *prod, int L, int khalf, int uselen, int nblk,
                        int numz, int res, long long p_first, int width, long long plane_len,
                        float *plane)
{
    long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    long long per_z = (long long)nblk * width;
    if (idx >= per_z * numz)
        return;
    int zi = (int)(idx / per_z);
    long long r = idx % per_z;
    int b = (int)(r / width), i = (int)(r % width);
    long long p = p_first + (long long)b * width + i;
    if (p >= plane_len)
        return;
    const cufftComplex *y = prod + ((long long)zi * nblk + b) * L + khalf;
    float v;
    if (res == 2) {
        v = pw(y[i]);
    } else if (i % 2 == 0) {
        v = pw(y[i / 2]);
    } else {
        cufftComplex a = y[i / 2], c = y[i / 2 + 1];
        const float k = (float)(M_PI / 4);
        v = pw(make_cuFloatComplex(k * (a.x - c.x), k * (a.y - c.y)));
    }
    plane[(long long)zi * plane_len + p] = v;
}

struct hs_args {
    const float *plane;
    long long plane_len, plo, phi;
    int numz, zmax, nstages;
    double rlo, rhi;
    float cut[DDTK_FDAS_MAXSTAGES];
    ddtk_fdas_hit *hits;
    unsigned long long *nhits;
};

/*
 * One thread per top-plane position: walk every z row, add the subharmonic
 * fractions stage by stage (same order as the CPU), keep the best z per stage,
 * and emit a hit per stage above its cut.
 */
__global__ void k_harmsum(hs_args a)
{
    long long pp = a.plo + blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (pp >= a.phi)
        return;
    float best[DDTK_FDAS_MAXSTAGES];
    int bestz[DDTK_FDAS_MAXSTAGES];
    for (int s = 0; s < a.nstages; s++) {
        best[s] = a.cut[s];
        bestz[s] = -1;
    }
    for (int zi = 0; zi < a.numz; zi++) {
        float acc = a.plane[(long long)zi * a.plane_len + pp];
        if (acc > best[0]) {
            best[0] = acc;
            bestz[0] = zi;
        }
        for (int s = 1; s < a.nstages; s++) {
            int den = 1 << s;
            for (int k = 1; k < den; k += 2) {
                long long q = ddtk_fdas_frac_pos(pp, k, den);
                int zk = ddtk_fdas_frac_zi(zi, a.zmax, k, den);
                acc += a.plane[(long long)zk * a.plane_len + q];
            }
            if (acc > best[s]) {
                best[s] = acc;
                bestz[s] = zi;
            }
        }
    }
    for (int s = 0; s < a.nstages; s++) {
        double scale = 2.0 * (1 << s);
        if (bestz[s] < 0 || pp < ceil(scale * a.rlo) || pp > floor(scale * a.rhi))
            continue;
        unsigned long long at = atomicAdd(a.nhits, 1ULL);
        if (at < MAX_HITS) {
            ddtk_fdas_hit h;
            h.p = pp;
            h.zi = bestz[s];
            h.stage = s;
            h.power = best[s];
            a.hits[at] = h;
        }
    }
}

/* ---- host side ------------------------------------------------------------ */

static unsigned grid(long long n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

static int alloc_all(ddtk_fdas_plan *p, gpu_state *g)
{
    size_t L = (size_t)p->fftlen, plane = (size_t)p->numz * (size_t)p->plane_len * sizeof(float);
    size_t free_b = 0, total_b = 0;
    CU(cudaMemGetInfo(&free_b, &total_b), "memory query");
    g->nblocks = (p->plane_len + p->width - 1) / p->width;
    size_t per_block = (size_t)p->numz * L * sizeof(cufftComplex);
    g->chunk = (int)fmax(1.0, fmin((double)g->nblocks, (512.0 * 1048576) / per_block));
    size_t need = plane + (size_t)g->chunk * per_block + 64 * 1048576;
    if (need > free_b)
        return ddtk_fail(DDTK_ESYS, "GPU: the f-z plane needs %.1f GiB, %.1f GiB free; "
                         "use --backend cpu or a shorter series", need / 1073741824.0,
                         free_b / 1073741824.0);
    CU(cudaMalloc(&g->x, sizeof(float) * p->n), "alloc");
    CU(cudaMalloc(&g->spec, sizeof(cufftComplex) * (p->nbins + 1)), "alloc");
    CU(cudaMalloc(&g->spread, sizeof(cufftComplex) * p->res * p->nbins), "alloc");
    CU(cudaMalloc(&g->tmpl, sizeof(cufftComplex) * L * p->numz), "alloc");
    CU(cudaMalloc(&g->blk, sizeof(cufftComplex) * L * g->chunk), "alloc");
    CU(cudaMalloc(&g->prod, per_block * g->chunk), "alloc");
    CU(cudaMalloc(&g->plane, plane), "alloc plane");
    CU(cudaMalloc(&g->rn_start, sizeof(long long) * (p->rn_nblocks + 1)), "alloc");
    CU(cudaMalloc(&g->rn_mean, sizeof(double) * p->rn_nblocks), "alloc");
    CU(cudaMalloc(&g->rn_centre, sizeof(double) * p->rn_nblocks), "alloc");
    CU(cudaMalloc(&g->sum, sizeof(double)), "alloc");
    CU(cudaMalloc(&g->hits, sizeof(ddtk_fdas_hit) * MAX_HITS), "alloc");
    CU(cudaMalloc(&g->nhits, sizeof(unsigned long long)), "alloc");
    return DDTK_OK;
}

static int plan_ffts(ddtk_fdas_plan *p, gpu_state *g)
{
    CUFFT(cufftPlan1d(&g->rfft, (int)p->n, CUFFT_R2C, 1), "R2C plan");
    CUFFT(cufftPlan1d(&g->fwd, p->fftlen, CUFFT_C2C, g->chunk), "block plan");
    CUFFT(cufftPlan1d(&g->inv, p->fftlen, CUFFT_C2C, g->chunk * p->numz), "batched plan");
    return DDTK_OK;
}

extern "C" int ddtk_fdas_gpu_init(ddtk_fdas_plan *p)
{
    gpu_state *g = (gpu_state *)calloc(1, sizeof *g);
    if (!g)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    p->gpu = g;
    CU(cudaSetDevice(p->cfg.gpu), "select device");
    int rc = alloc_all(p, g);
    if (rc || (rc = plan_ffts(p, g)))
        return rc;
    CU(cudaMemcpy(g->tmpl, p->templates, sizeof(cufftComplex) * p->fftlen * p->numz,
                  cudaMemcpyHostToDevice), "upload templates");
    CU(cudaMemcpy(g->rn_start, p->rn_start, sizeof(long long) * (p->rn_nblocks + 1),
                  cudaMemcpyHostToDevice), "upload red-noise blocks");
    return DDTK_OK;
}

static int whiten(ddtk_fdas_plan *p, gpu_state *g, const float *x)
{
    double t0 = ddtk_now();
    CU(cudaMemcpy(g->x, x, sizeof(float) * p->n, cudaMemcpyHostToDevice), "upload series");
    CU(cudaMemset(g->sum, 0, sizeof(double)), "memset");
    k_sum<<<512, 256>>>(g->x, p->n, g->sum);
    k_subtract<<<grid(p->n, 256), 256>>>(g->x, p->n, g->sum);
    CUFFT(cufftExecR2C(g->rfft, g->x, g->spec), "R2C");
    CU(cudaDeviceSynchronize(), "FFT");
    double t1 = ddtk_now();
    p->times.fft = t1 - t0;
    k_rn_medians<<<grid(p->rn_nblocks, 128), 128>>>(g->spec, g->rn_start, p->rn_nblocks,
                                                   g->rn_mean, g->rn_centre);
    k_rn_apply<<<grid(p->nbins, 256), 256>>>(g->spec, p->nbins, g->rn_mean, g->rn_centre,
                                              p->rn_nblocks, g->spread, p->res);
    CU(cudaDeviceSynchronize(), "red-noise whitening");
    p->times.rednoise = ddtk_now() - t1;
    return DDTK_OK;
}

static int correlate(ddtk_fdas_plan *p, gpu_state *g)
{
    double t0 = ddtk_now();
    int L = p->fftlen, step = p->uselen;
    for (int64_t b0 = 0; b0 < g->nblocks; b0 += g->chunk) {
        int nb = g->chunk;   /* a full batch always: blocks past the end are ignored */
        long long m_first = b0 * step - p->khalf;
        k_load<<<grid((long long)nb * L, 256), 256>>>(g->spread, (long long)p->res * p->nbins,
                                                      m_first, step, L, nb, g->blk);
        CUFFT(cufftExecC2C(g->fwd, g->blk, g->blk, CUFFT_FORWARD), "block FFT");
        k_multiply<<<grid((long long)nb * L * p->numz, 256), 256>>>(g->blk, g->tmpl, L, nb,
                                                                     p->numz, g->prod);
        CUFFT(cufftExecC2C(g->inv, g->prod, g->prod, CUFFT_INVERSE), "inverse FFTs");
        k_power<<<grid((long long)nb * p->width * p->numz, 256), 256>>>(
            g->prod, L, p->khalf, p->uselen, nb, p->numz, p->res, b0 * p->width, p->width,
            p->plane_len, g->plane);
    }
    CU(cudaDeviceSynchronize(), "correlation");
    p->times.correlate = ddtk_now() - t0;
    return DDTK_OK;
}

static int harmsum(ddtk_fdas_plan *p, gpu_state *g)
{
    double t0 = ddtk_now();
    hs_args a;
    memset(&a, 0, sizeof a);
    a.plane = g->plane;
    a.plane_len = p->plane_len;
    a.plo = p->plo;
    a.phi = p->phi;
    a.numz = p->numz;
    a.zmax = p->zmax;
    a.nstages = p->nstages;
    a.rlo = p->rlo;
    a.rhi = p->rhi;
    for (int s = 0; s < p->nstages; s++)
        a.cut[s] = p->powcut[s];
    a.hits = g->hits;
    a.nhits = g->nhits;
    CU(cudaMemset(g->nhits, 0, sizeof(unsigned long long)), "memset");
    k_harmsum<<<grid(p->phi - p->plo, 128), 128>>>(a);
    CU(cudaDeviceSynchronize(), "harmonic sums");
    double t1 = ddtk_now();
    p->times.harmsum = t1 - t0;
    unsigned long long n = 0;
    CU(cudaMemcpy(&n, g->nhits, sizeof n, cudaMemcpyDeviceToHost), "hit count");
    if (n > MAX_HITS)
        ddtk_msg("warning: %llu plane hits; only the first %d kept (raise --sigma)", n, MAX_HITS);
    n = n > MAX_HITS ? MAX_HITS : n;
    p->hits.n = 0;
    if (n > (unsigned long long)p->hits.cap) {
        ddtk_fdas_hit *h = (ddtk_fdas_hit *)realloc(p->hits.h, sizeof *h * n);
        if (!h)
            return ddtk_fail(DDTK_ESYS, "out of memory for candidates");
        p->hits.h = h;
        p->hits.cap = (int64_t)n;
    }
    CU(cudaMemcpy(p->hits.h, g->hits, sizeof(ddtk_fdas_hit) * n, cudaMemcpyDeviceToHost),
       "hits");
    p->hits.n = (int64_t)n;
    p->times.candidates = ddtk_now() - t1;
    return DDTK_OK;
}

extern "C" int ddtk_fdas_gpu_search(ddtk_fdas_plan *p, const float *x)
{
    gpu_state *g = (gpu_state *)p->gpu;
    int rc;
    CU(cudaSetDevice(p->cfg.gpu), "select device");
    if ((rc = whiten(p, g, x)) || (rc = correlate(p, g)) || (rc = harmsum(p, g)))
        return rc;
    p->spec_on_host = 0;
    return DDTK_OK;
}

extern "C" int ddtk_fdas_gpu_sync_spectrum(ddtk_fdas_plan *p)
{
    gpu_state *g = (gpu_state *)p->gpu;
    CU(cudaMemcpy(p->spec, g->spec, sizeof(cufftComplex) * p->nbins, cudaMemcpyDeviceToHost),
       "spectrum");
    return DDTK_OK;
}

extern "C" int ddtk_fdas_gpu_plane(ddtk_fdas_plan *p, int zi0, int zi1, int64_t p0, int64_t np,
                                   float *out)
{
    gpu_state *g = (gpu_state *)p->gpu;
    for (int zi = zi0; zi < zi1; zi++)
        CU(cudaMemcpy(out + (size_t)(zi - zi0) * np, g->plane + (size_t)zi * p->plane_len + p0,
                      sizeof(float) * np, cudaMemcpyDeviceToHost), "plane");
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
    if (g->inv)
        cufftDestroy(g->inv);
    void *bufs[] = { g->x, g->plane, g->spec, g->spread, g->tmpl, g->blk, g->prod, g->rn_start,
                     g->rn_mean, g->rn_centre, g->sum, g->hits, g->nhits };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        cudaFree(bufs[i]);
    free(g);
    p->gpu = NULL;
}
