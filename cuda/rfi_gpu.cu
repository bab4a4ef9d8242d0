/*
 * rfi_gpu.cu - --rfi auto on the device: the blocks of src/io/rfi.c cleaned
 * in a GPU's raw input buffer, for every input of the GPU path that fits
 * (ddtk_rfi_gpu_supports; stream.cu says why not the host's cleaning).
 *
 * Every block goes through the host cleaner's passes, each a kernel over a
 * gulp's blocks: the channels' sums over the statistics' subsample (a
 * channel's spectra in slices for integer samples, whose sums are exact in
 * any order, a word of four channels a thread for 8-bit; in the host's
 * order for floats), their moments; IQRM over the
 * channels (each lag's differences sorted in shared memory, the lags side
 * by side: a sort gives the host's quantiles, which come from any sort); the
 * zero-DM weights and offset, each spectrum's weighted sum in the host's
 * RFI_LANES partial sums and the block's robust clip; where spectra were
 * clipped, the statistics and flags again without them; the replaced
 * samples' levels; the replacement, in the raw buffer for the gulp's last
 * block (the next gulp carries it) and for the others over the unpacked rows
 * (direct_gpu.cu, through ddtk_rfi_gpu_view), which saves a pass over the
 * gulp's bytes. The arithmetic the host does is rfi_math.h's, built
 * here with -fmad=false as the host's with -ffp-contract=off (in the
 * unpacking, rfi_quantise's one product, by a power of two, is exact, so a
 * fused add rounds as the plain one), so flags, clips and samples are the
 * host's bit for bit (test/gpu_psrfits.bats compares every series and the
 * report).
 */
#include "check.cuh"
#include "direct.cuh"
#include "rfi_gpu.cuh"
#include "rfi_math.h"

#include <stdlib.h>
#include <string.h>

#define SORT_THREADS 512          /* a block's sorts */
#define ROBUST_MOST 512           /* the zero-DM subsample's most (rfi_robust_step) */

/* A gulp's workspace: per block, its sums, statistics, flags, zero-DM series
 * and clips; room for `cap` blocks. */
struct work {
    int64_t cap;
    float *med, *stat, *mean;     /* [block][if][chan] means; [block][chan] std and mean */
    float *w, *z, *level;         /* [block][chan] zero-DM weights; [block][t]; [block][if][chan] */
    double *off;                  /* [block] the zero-DM sum's constant */
    int *live, *nclip, *nflag;    /* [block] channels weighed, spectra clipped, channels flagged */
    int *votes;                   /* IQRM's [block][statistic][chan] votes, then as many tries */
    uint8_t *flag, *clip;         /* [block][chan]; [block][t] */
};

struct ddtk_rfi_gpu {
    ddtk_clean_geom g;
    int nsets, count;
    work *ws;
    unsigned long long *counts;   /* blocks, chan_blocks, spectra_clipped, samples, masked */
    uint8_t *ever;                /* [chan] */
};

/* The kernels' view of a gulp: nb blocks of raw (the first the
 * observation's block at / block), the last of last spectra. */
struct Gulp {
    uint8_t *raw;
    int64_t at, block, last;
    int nb, nc, ni, nbits, sgn;
    float clip_sigma;
    work w;
};

__device__ __forceinline__ int64_t spectra_of(const Gulp &k, int j)
{
    return j == k.nb - 1 ? k.last : k.block;
}

/* Element e of the raw data as the host's ddtk_sample reads it. */
__device__ __forceinline__ float sample(const uint8_t *raw, int64_t e, int nbits, int sgn)
{
    return nbits == 32 ? reinterpret_cast<const float *>(raw)[e]
                       : (float)ddgpu::int_element(raw, e, nbits, sgn);
}

/* The detected value of spectrum t's channel c (IF 0, or IFs 0 and 1 summed). */
__device__ __forceinline__ float detected(const Gulp &k, const uint8_t *raw, int64_t t, int c)
{
    const int64_t e = t * k.nc * k.ni + c;
    const float x = sample(raw, e, k.nbits, k.sgn);
    return k.ni >= 2 ? x + sample(raw, e + k.nc, k.nbits, k.sgn) : x;
}

/* ---- statistics ------------------------------------------------------------ */

/* Channel c's IQRM votes and tries in block j, zeroed for the pass about
 * to vote (by the statistics' kernels, which every pass runs first). */
__device__ __forceinline__ void clear_votes(const Gulp &k, int j, int c)
{
    int *v = k.w.votes + (size_t)j * 2 * k.nc + c, *t = v + (size_t)2 * k.nb * k.nc;
    v[0] = v[k.nc] = t[0] = t[k.nc] = 0;
}

#define STATS_CHANS 32            /* a stats block's channels, */
#define STATS_SLICES 16           /* each summed by this many threads (integer samples) */

/* Block blockIdx.y's channel sums over its subsample (but its clipped spectra
 * on the second pass, and only where it clipped some), and their moments. A
 * block where every spectrum was clipped keeps its first pass's. Integer
 * samples' sums are integers, exact in double in any order, so
 * STATS_SLICES threads share a channel's spectra (one thread a channel took
 * 0.33 ms a gulp of htru); floats are added by one thread in the host's
 * order. */
__global__ void __launch_bounds__(STATS_CHANS * STATS_SLICES) stats_kernel(Gulp k, int second)
{
    __shared__ double part[STATS_SLICES][DDTK_RFI_GPU_MAX_IFS + 2][STATS_CHANS];
    __shared__ int64_t parts_m[STATS_SLICES][STATS_CHANS];
    const int j = blockIdx.y, cx = threadIdx.x % STATS_CHANS, sl = threadIdx.x / STATS_CHANS;
    const int c = blockIdx.x * STATS_CHANS + cx, slices = k.nbits == 32 ? 1 : STATS_SLICES;
    const int64_t n = spectra_of(k, j);
    if ((second && k.w.nclip[j] == 0) || (second && n < RFI_MIN_STATS))
        return;
    const int nv = k.nc * k.ni;
    const uint8_t *raw = k.raw + (size_t)((int64_t)j * k.block * nv * k.nbits / 8);
    const uint8_t *skip = second ? k.w.clip + (size_t)j * k.block : NULL;
    if (c < k.nc && sl == 0)
        clear_votes(k, j, c);
    const int64_t step = rfi_stats_step(n);
    double sum[DDTK_RFI_GPU_MAX_IFS] = { 0, 0, 0, 0 }, dsum = 0, dsq = 0;
    int64_t m = 0;
    for (int64_t t = sl * step; c < k.nc && sl < slices && t < n; t += slices * step) {
        if (skip && skip[t])
            continue;
        m++;
        const int64_t e = t * nv + c;
        float x0 = 0, x1 = 0;
        for (int i = 0; i < k.ni; i++) {
            const float x = sample(raw, e + (int64_t)i * k.nc, k.nbits, k.sgn);
            x0 = i == 0 ? x : x0;
            x1 = i == 1 ? x : x1;
            sum[i] += x;
        }
        const double d = k.ni >= 2 ? x0 + x1 : x0;
        dsum += d;
        dsq += d * d;
    }
    for (int i = 0; i < DDTK_RFI_GPU_MAX_IFS; i++)
        part[sl][i][cx] = sum[i];
    part[sl][DDTK_RFI_GPU_MAX_IFS][cx] = dsum;
    part[sl][DDTK_RFI_GPU_MAX_IFS + 1][cx] = dsq;
    parts_m[sl][cx] = m;
    __syncthreads();
    if (sl || c >= k.nc)
        return;
    for (int q = 1; q < slices; q++) {
        for (int i = 0; i < DDTK_RFI_GPU_MAX_IFS; i++)
            sum[i] += part[q][i][cx];
        dsum += part[q][DDTK_RFI_GPU_MAX_IFS][cx];
        dsq += part[q][DDTK_RFI_GPU_MAX_IFS + 1][cx];
        m += parts_m[q][cx];
    }
    if (m == 0)
        return;
    for (int i = 0; i < k.ni; i++)
        k.w.med[((size_t)j * k.ni + i) * k.nc + c] = (float)(sum[i] / (double)m);
    const size_t jc = (size_t)j * k.nc + c;
    rfi_moments(dsum, dsq, m, &k.w.mean[jc], &k.w.stat[jc]);
}

#define STATS8_SLICES 8           /* stats8's threads sharing a word's spectra */

/* stats_kernel for 8-bit samples of one IF (signed or not): a word of four
 * channels a thread, 32 words side by side, STATS8_SLICES threads sharing
 * their spectra, in 32-bit integers (fewer than 1024 spectra of at most
 * 255^2: they fit), exact as the host's sums. A byte a thread (the general
 * kernel) took 38 us of a 32768-spectra gulp of htru, this one 30 (H100);
 * with eight spectra's reads in flight a thread 19 us, but htru's streaming
 * beside the lane kernel was no faster (bench/psrfits-results.md, stop 46). */
__global__ void __launch_bounds__(32 * STATS8_SLICES) stats8_kernel(Gulp k, int second)
{
    __shared__ int psum[STATS8_SLICES][128], psq[STATS8_SLICES][128], pm[STATS8_SLICES];
    const int j = blockIdx.y, lane = threadIdx.x % 32, sl = threadIdx.x / 32;
    const int c0 = blockIdx.x * 128, words = (k.nc - c0 < 128 ? k.nc - c0 : 128) / 4;
    const int64_t n = spectra_of(k, j);
    if (second && (k.w.nclip[j] == 0 || n < RFI_MIN_STATS))
        return;
    if (threadIdx.x < 4 * words)
        clear_votes(k, j, c0 + threadIdx.x);
    const uint32_t *raw = reinterpret_cast<const uint32_t *>(k.raw + (size_t)j * k.block * k.nc);
    const uint8_t *skip = second ? k.w.clip + (size_t)j * k.block : NULL;
    const int64_t step = rfi_stats_step(n);
    int sum[4] = { 0, 0, 0, 0 }, sq[4] = { 0, 0, 0, 0 }, m = 0;
    for (int64_t t = sl * step; t < n; t += STATS8_SLICES * step) {
        if (skip && skip[t])
            continue;
        m++;
        const uint32_t w = lane < words ? raw[t * (k.nc / 4) + c0 / 4 + lane] : 0;
        for (int b = 0; b < 4; b++) {
            const int v = k.sgn ? (int)(int8_t)(w >> (8 * b)) : (int)((w >> (8 * b)) & 0xffu);
            sum[b] += v;
            sq[b] += v * v;
        }
    }
    for (int b = 0; b < 4; b++) {
        psum[sl][4 * lane + b] = sum[b];
        psq[sl][4 * lane + b] = sq[b];
    }
    if (lane == 0)
        pm[sl] = m;
    __syncthreads();
    const int cx = threadIdx.x;
    if (cx >= 4 * words)
        return;
    int64_t s1 = 0, s2 = 0, mm = 0;
    for (int q = 0; q < STATS8_SLICES; q++) {
        s1 += psum[q][cx];
        s2 += psq[q][cx];
        mm += pm[q];
    }
    if (mm == 0)
        return;
    const size_t jc = (size_t)j * k.nc + c0 + cx;
    k.w.med[jc] = (float)((double)s1 / (double)mm);
    rfi_moments((double)s1, (double)s2, mm, &k.w.mean[jc], &k.w.stat[jc]);
}

/* ---- IQRM ---------------------------------------------------------------------- */

/* keys[0..p) (p a power of two) in ascending order, by the whole block. */
__device__ void bitonic_sort(uint32_t *keys, int p)
{
    for (int size = 2; size <= p; size <<= 1)
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            __syncthreads();
            for (int i = threadIdx.x; i < p / 2; i += blockDim.x) {
                const int lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
                const int up = (lo & size) == 0;
                const uint32_t a = keys[lo], b = keys[hi];
                if ((a > b) == up) {
                    keys[lo] = b;
                    keys[hi] = a;
                }
            }
        }
    __syncthreads();
}

#define NLAGS 7                   /* lags 1, 2, 4 ... RFI_IQRM_MAX_LAG */

/* IQRM's votes of one lag on one statistic of a block (blockIdx.x: the
 * statistic, deviations then means, times NLAGS plus the lag's index;
 * blockIdx.y: the block), as the host's iqrm() makes them for that lag:
 * added to the block's votes and tries, which voted_flag reads. The
 * lags run side by side (one after another in a block they were its
 * latency: 14 sorts). */
__global__ void iqrm_lag_kernel(Gulp k, int p, int second)
{
    extern __shared__ uint32_t keys[];
    const int j = blockIdx.y, stat = blockIdx.x / NLAGS, lag = 1 << (blockIdx.x % NLAGS);
    const int nc = k.nc, n = nc - lag;
    const int64_t ns = spectra_of(k, j);
    if (ns < RFI_MIN_STATS || (second && k.w.nclip[j] == 0) || lag > nc / 4
        || lag > RFI_IQRM_MAX_LAG || n < 8)
        return;
    const float *s = (stat ? k.w.mean : k.w.stat) + (size_t)j * nc;
    int *votes = k.w.votes + ((size_t)j * 2 + stat) * nc, *tries = votes + (size_t)2 * k.nb * nc;
    for (int c = threadIdx.x; c < p; c += blockDim.x)
        keys[c] = c < n ? ddtk_float_key(s[c] - s[c + lag]) : 0xffffffffu;
    bitonic_sort(keys, p);
    for (int dir = -1; dir <= 1; dir += 2) {
        const float q1 = dir > 0 ? ddtk_key_float(keys[n / 4]) : -ddtk_key_float(keys[n - 1 - n / 4]);
        const float q3 = dir > 0 ? ddtk_key_float(keys[3 * n / 4])
                                 : -ddtk_key_float(keys[n - 1 - 3 * n / 4]);
        const float med = dir > 0 ? ddtk_key_float(keys[n / 2]) : -ddtk_key_float(keys[n - 1 - n / 2]);
        const float lim = rfi_iqrm_limit(q1, q3, med);
        for (int c = threadIdx.x; c < nc; c += blockDim.x) {
            const int o = c + dir * lag;
            if (o < 0 || o >= nc)
                continue;
            atomicAdd(&tries[c], 1);
            if (s[c] - s[o] > lim && q3 > q1)
                atomicAdd(&votes[c], 1);
        }
    }
}

/* Channel c's flag in block j (n spectra) from the votes: a majority of
 * its comparisons on either statistic. A short block (fewer than
 * RFI_MIN_STATS spectra) is flagged nowhere. */
__device__ __forceinline__ int voted_flag(const Gulp &k, int j, int c, int64_t n)
{
    const int *v = k.w.votes + (size_t)j * 2 * k.nc + c, *t = v + (size_t)k.nb * 2 * k.nc;
    return n >= RFI_MIN_STATS && ((t[0] > 0 && 2 * v[0] > t[0])
                                  || (t[k.nc] > 0 && 2 * v[k.nc] > t[k.nc]));
}

#define OFF_CHANS 2048            /* channels an offset's products stage at once */

/* Block blockIdx.x's first flags and zero-DM weights, then its zero-DM
 * sum's constant: the weighted means added in the host's order, one chain
 * of adds (each product of two floats is exact in double, so only the adds
 * round: the products are made side by side, the chain by one thread from
 * shared memory; from device memory it took 0.08 ms a gulp), and the
 * channels weighed. */
__global__ void offset_kernel(Gulp k)
{
    __shared__ double prod[OFF_CHANS];
    __shared__ int live;
    const int j = blockIdx.x;
    const int64_t n = spectra_of(k, j);
    for (int c = threadIdx.x; c < k.nc; c += blockDim.x) {
        const size_t at = (size_t)j * k.nc + c;
        const int f = voted_flag(k, j, c, n);
        k.w.flag[at] = (uint8_t)f;
        k.w.w[at] = rfi_weight(f, k.w.stat[at]);
    }
    __syncthreads();
    if (n < RFI_MIN_STATS)
        return;
    const float *w = k.w.w + (size_t)j * k.nc, *mean = k.w.mean + (size_t)j * k.nc;
    double off = 0;
    if (threadIdx.x == 0)
        live = 0;
    for (int c0 = 0; c0 < k.nc; c0 += OFF_CHANS) {
        const int m = k.nc - c0 < OFF_CHANS ? k.nc - c0 : OFF_CHANS;
        int mine = 0;
        __syncthreads();
        for (int c = threadIdx.x; c < m; c += blockDim.x) {
            prod[c] = (double)w[c0 + c] * mean[c0 + c];
            mine += w[c0 + c] > 0;
        }
        atomicAdd(&live, mine);
        __syncthreads();
        for (int c = 0; c < m && threadIdx.x == 0; c++)
            off += prod[c];
    }
    if (threadIdx.x == 0) {
        k.w.off[j] = off;
        k.w.live[j] = live;
    }
}

/* ---- zero-DM clipping ---------------------------------------------------------- */

/* Each spectrum's zero-DM sum, a half warp a spectrum: lane l adds channels
 * l, l + RFI_LANES ... in float as the host's vector lane l, then the first
 * lane adds -off, the channels past the last whole RFI_LANES and the lanes
 * in double, in the host's order. */
__global__ void zsum_kernel(Gulp k)
{
    const int j = blockIdx.y, lane = threadIdx.x % RFI_LANES;
    const int64_t n = spectra_of(k, j),
                  t = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / RFI_LANES;
    if (n < RFI_MIN_STATS || k.w.live[j] < 1)
        return;
    const uint8_t *raw = k.raw + (size_t)((int64_t)j * k.block * k.nc * k.ni * k.nbits / 8);
    const float *w = k.w.w + (size_t)j * k.nc;
    const int whole = k.nc - k.nc % RFI_LANES;
    float acc = 0;
    if (t < n)
        for (int c = lane; c < whole; c += RFI_LANES)
            acc += w[c] * detected(k, raw, t, c);
    double zt = -k.w.off[j];
    for (int c = whole; c < k.nc && lane == 0 && t < n; c++)
        zt += (double)w[c] * detected(k, raw, t, c);
    for (int l = 0; l < RFI_LANES; l++) {
        const float a = __shfl_sync(0xffffffffu, acc, (threadIdx.x & ~(RFI_LANES - 1)) + l);
        zt += a;
    }
    if (lane == 0 && t < n)
        k.w.z[(size_t)j * k.block + t] = (float)zt;
}

/* zsum_kernel for unsigned 8-bit samples of one IF: a thread a spectrum,
 * its RFI_LANES partial sums side by side as the host's vector lanes, 16
 * channels a load (the half warp a spectrum took 0.08 ms a gulp of htru). */
__global__ void zsum8_kernel(Gulp k)
{
    extern __shared__ float ws[];
    const int j = blockIdx.y;
    const int64_t n = spectra_of(k, j), t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (n < RFI_MIN_STATS || k.w.live[j] < 1)
        return;
    for (int c = threadIdx.x; c < k.nc; c += blockDim.x)
        ws[c] = k.w.w[(size_t)j * k.nc + c];
    __syncthreads();
    if (t >= n)
        return;
    const uint8_t *row = k.raw + ((int64_t)j * k.block + t) * k.nc;
    const int whole = k.nc - k.nc % RFI_LANES;
    float acc[RFI_LANES];
    for (int l = 0; l < RFI_LANES; l++)
        acc[l] = 0;
    for (int c = 0; c < whole; c += RFI_LANES) {
        uint8_t x[RFI_LANES];
        if (k.nc % RFI_LANES == 0)
            *(uint4 *)x = *(const uint4 *)(row + c);
        else
            for (int l = 0; l < RFI_LANES; l++)
                x[l] = row[c + l];
        for (int l = 0; l < RFI_LANES; l++)
            acc[l] += ws[c + l] * (float)x[l];
    }
    double zt = -k.w.off[j];
    for (int c = whole; c < k.nc; c++)
        zt += (double)ws[c] * (float)row[c];
    for (int l = 0; l < RFI_LANES; l++)
        zt += acc[l];
    k.w.z[(size_t)j * k.block + t] = (float)zt;
}

/* The value at rank m / 2 of vals[0..m) (m <= p), by a sort of keys. */
__device__ float middle(const float *vals, int m, uint32_t *keys, int p)
{
    __syncthreads();
    for (int i = threadIdx.x; i < p; i += blockDim.x)
        keys[i] = i < m ? ddtk_float_key(vals[i]) : 0xffffffffu;
    bitonic_sort(keys, p);
    return ddtk_key_float(keys[m / 2]);
}

/* Block blockIdx.x's clipped spectra: the robust median and deviation of a
 * subsample of its zero-DM series (the host's robust()), then every
 * spectrum against them. */
__global__ void clip_kernel(Gulp k)
{
    __shared__ uint32_t keys[ROBUST_MOST];
    __shared__ float vals[ROBUST_MOST];
    __shared__ int clipped;
    const int j = blockIdx.x;
    const int64_t n = spectra_of(k, j);
    uint8_t *clip = k.w.clip + (size_t)j * k.block;
    const float *z = k.w.z + (size_t)j * k.block;
    const int on = n >= RFI_MIN_STATS && k.w.live[j] >= 1;
    const int64_t step = rfi_robust_step(n);
    const int m = on ? (int)((n + step - 1) / step) : 0;
    float med = 0, sig = 0;
    if (threadIdx.x == 0)
        clipped = 0;
    if (on) {
        for (int i = threadIdx.x; i < m; i += blockDim.x)
            vals[i] = z[i * step];
        med = middle(vals, m, keys, ROBUST_MOST);
        for (int i = threadIdx.x; i < m; i += blockDim.x)
            vals[i] = fabsf(z[i * step] - med);
        sig = 1.4826f * middle(vals, m, keys, ROBUST_MOST);
    }
    const int any = on && sig > 0;
    const float lim = (float)k.clip_sigma * sig;
    __syncthreads();
    int mine = 0;
    for (int64_t t = threadIdx.x; t < n; t += blockDim.x) {
        const uint8_t x = any && fabsf(z[t] - med) > lim;
        clip[t] = x;
        mine += x;
    }
    atomicAdd(&clipped, mine);
    __syncthreads();
    if (threadIdx.x == 0)
        k.w.nclip[j] = clipped;
}

/* ---- replacement ------------------------------------------------------------------ */

/* IF i's level in channel c of block j: its mean, or for a flagged channel
 * the median of its nearest eight good neighbours' means. */
__device__ float level_of(const Gulp &k, int j, int i, int c)
{
    const uint8_t *flag = k.w.flag + (size_t)j * k.nc;
    const float *med = k.w.med + ((size_t)j * k.ni + i) * k.nc;
    float got[8];
    int n = 0;
    for (int d = 1; d < k.nc && n < 8 && flag[c]; d++)
        for (int o = c - d; o <= c + d && n < 8; o += 2 * d)
            if (o >= 0 && o < k.nc && !flag[o]) {
                float x = med[o];
                int at = n++;
                for (; at > 0 && got[at - 1] > x; at--)
                    got[at] = got[at - 1];
                got[at] = x;
            }
    return n ? got[n / 2] : med[c];
}

/* Block blockIdx.x's flags after its second pass (where it clipped
 * spectra), then the level a replaced sample of each channel takes (the
 * host's levels()): its mean over the block, or for a flagged channel the
 * median of its nearest eight good neighbours' means; its flagged channels
 * counted, and with `count` into the report. One kernel a block for all
 * four (they took 20 us a gulp of htru in four, H100). */
__global__ void level_kernel(Gulp k, unsigned long long *counts, uint8_t *ever)
{
    __shared__ int nflag;
    const int j = blockIdx.x;
    const int64_t n = spectra_of(k, j);
    uint8_t *flag = k.w.flag + (size_t)j * k.nc;
    if (threadIdx.x == 0)
        nflag = 0;
    const int again = k.w.nclip[j] > 0 && n >= RFI_MIN_STATS;
    for (int c = threadIdx.x; c < k.nc && again; c += blockDim.x)
        flag[c] = (uint8_t)voted_flag(k, j, c, n);
    __syncthreads();
    int mine = 0;
    for (int c = threadIdx.x; c < k.nc; c += blockDim.x) {
        mine += flag[c];
        if (flag[c] && ever)
            ever[c] = 1;
        for (int i = 0; i < k.ni; i++)
            k.w.level[((size_t)j * k.ni + i) * k.nc + c] = level_of(k, j, i, c);
    }
    atomicAdd(&nflag, mine);
    __syncthreads();
    if (threadIdx.x)
        return;
    k.w.nflag[j] = nflag;
    if (!counts)
        return;
    const int64_t nf = nflag, nclip = k.w.nclip[j];
    atomicAdd(&counts[0], 1ull);
    atomicAdd(&counts[1], (unsigned long long)nf);
    atomicAdd(&counts[2], (unsigned long long)nclip);
    atomicAdd(&counts[3], (unsigned long long)(n * k.nc));
    atomicAdd(&counts[4], (unsigned long long)(nclip * k.nc + (n - nclip) * nf));
}

/* The replacement in block j where a spectrum is whole bytes: a thread
 * block a spectrum (blockIdx.x), a thread a byte of samples narrower than
 * 8 bits (a byte holds several channels), else a sample; only flagged
 * channels, or all of a clipped spectrum. */
__global__ void replace_kernel(Gulp k, int j)
{
    const int t = blockIdx.x;
    const int nv = k.nc * k.ni;
    if (t >= spectra_of(k, j))
        return;
    const uint8_t *flag = k.w.flag + (size_t)j * k.nc;
    const int clipped = k.w.clip[(size_t)j * k.block + t];
    if (!clipped && k.w.nflag[j] == 0)
        return;
    const float *level = k.w.level + (size_t)j * nv;
    const int per = k.nbits < 8 ? 8 / k.nbits : 1, units = nv / per;
    const int64_t s0 = (int64_t)j * k.block + t;          /* within the gulp */
    uint8_t *row = k.raw + s0 * nv * k.nbits / 8;
    for (int u = threadIdx.x; u < units; u += blockDim.x)
        for (int v = u * per; v < (u + 1) * per; v++)
            if (clipped || flag[v % k.nc])
                rfi_put(row, v, (k.at + s0) * nv + v, level[v], k.nbits, k.sgn);
}

/* The same where spectra end inside bytes (77 1-bit channels): a thread a
 * byte of block j, its samples found by their place. */
__global__ void replace_bytes_kernel(Gulp k, int j)
{
    if (k.w.nflag[j] == 0 && k.w.nclip[j] == 0)
        return;
    const int64_t n = spectra_of(k, j), nv = (int64_t)k.nc * k.ni;
    const int per = 8 / k.nbits;
    const int64_t unit = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t base = (int64_t)j * k.block * nv;       /* the block's first element */
    const uint8_t *flag = k.w.flag + (size_t)j * k.nc, *clip = k.w.clip + (size_t)j * k.block;
    const float *level = k.w.level + (size_t)j * nv;
    uint8_t *raw = k.raw + (base * k.nbits >> 3);
    for (int64_t e = unit * per; e < (unit + 1) * per && e < n * nv; e++) {
        const int v = (int)(e % nv);
        if (flag[v % k.nc] || clip[e / nv])
            rfi_put(raw, e, k.at * nv + base + e, level[v], k.nbits, k.sgn);
    }
}

/* ---- the host's side ---------------------------------------------------------------- */

static int pow2_at_least(int n)
{
    int p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

int ddtk_rfi_gpu_supports(const ddtk_clean_geom *g)
{
    return g->nchans <= DDTK_RFI_GPU_MAX_CHANS && g->nifs <= DDTK_RFI_GPU_MAX_IFS
           && g->block % 8 == 0
           && (g->nbits == 1 || g->nbits == 2 || g->nbits == 4 || g->nbits == 8
               || g->nbits == 16 || g->nbits == 32);
}

/* Room in w for cap blocks of geometry g. */
static int work_alloc(work *w, const ddtk_clean_geom *g, int64_t cap)
{
    const size_t nc = (size_t)g->nchans, nv = nc * g->nifs, b = (size_t)g->block, n = (size_t)cap;
    w->cap = cap;
    DDTK_CUDA(cudaMalloc((void **)&w->med, n * nv * sizeof(float)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->stat, n * nc * sizeof(float)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->mean, n * nc * sizeof(float)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->w, n * nc * sizeof(float)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->z, n * b * sizeof(float)), "allocating RFI series");
    DDTK_CUDA(cudaMalloc((void **)&w->level, n * nv * sizeof(float)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->off, n * sizeof(double)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->live, n * sizeof(int)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->nclip, n * sizeof(int)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->nflag, n * sizeof(int)), "allocating RFI stats");
    DDTK_CUDA(cudaMalloc((void **)&w->votes, 4 * n * nc * sizeof(int)), "allocating RFI votes");
    DDTK_CUDA(cudaMalloc((void **)&w->flag, n * nc), "allocating RFI flags");
    DDTK_CUDA(cudaMalloc((void **)&w->clip, n * b), "allocating RFI flags");
    return DDTK_OK;
}

static void work_free(work *w)
{
    void *p[] = { w->med, w->stat, w->mean, w->w, w->z, w->level,
                  w->off, w->live, w->nclip, w->nflag, w->votes, w->flag, w->clip };
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        cudaFree(p[i]);
    memset(w, 0, sizeof *w);
}

int ddtk_rfi_gpu_create(ddtk_rfi_gpu **out, const ddtk_clean_geom *g, int nsets, int count)
{
    ddtk_rfi_gpu *r = (ddtk_rfi_gpu *)ddtk_calloc(1, sizeof *r, "GPU RFI cleaner");
    *out = r;
    if (!r)
        return DDTK_ESYS;
    r->g = *g;
    r->count = count;
    r->ws = (work *)ddtk_calloc((size_t)nsets, sizeof *r->ws, "GPU RFI cleaner");
    if (!r->ws)
        return DDTK_ESYS;
    r->nsets = nsets;
    DDTK_CUDA(cudaMalloc((void **)&r->counts, 5 * sizeof *r->counts), "allocating RFI counts");
    DDTK_CUDA(cudaMalloc((void **)&r->ever, (size_t)g->nchans), "allocating RFI counts");
    return ddtk_rfi_gpu_zero(r);
}

int ddtk_rfi_gpu_reserve(ddtk_rfi_gpu *r, int set, int64_t spectra)
{
    /* a gulp's spectra start at a block's first, or one past a carried block's */
    const int64_t cap = spectra / r->g.block + 2;
    if (r->ws[set].cap >= cap)
        return DDTK_OK;
    work_free(&r->ws[set]);
    return work_alloc(&r->ws[set], &r->g, cap);
}

int ddtk_rfi_gpu_zero(ddtk_rfi_gpu *r)
{
    DDTK_CUDA(cudaMemset(r->counts, 0, 5 * sizeof *r->counts), "clearing RFI counts");
    DDTK_CUDA(cudaMemset(r->ever, 0, (size_t)r->g.nchans), "clearing RFI counts");
    DDTK_CUDA(cudaDeviceSynchronize(), "clearing RFI counts");
    return DDTK_OK;
}

/* A gulp's passes on stream st. The replaced samples are written in raw
 * for its last block alone, which the next gulp carries: the unpacking
 * replaces the others in its rows (ddtk_rfi_gpu_view). Written in raw
 * for every block, a pass over the whole gulp's bytes, they cost htru's
 * streaming beside its 1196 DMs' kernels 13%, the rest of the cleaning 3%.
 * Beside those kernels each launch costs more than its time alone (16
 * launches and copies a gulp, 0.16 ms alone, cost htru 0.33 ms a gulp), so
 * the passes are few: the votes are cleared by the statistics' kernels, the
 * first flags made by offset_kernel, the second with the levels and the
 * counts by level_kernel. */
static int clean_passes(const ddtk_rfi_gpu *r, const Gulp &k, cudaStream_t st)
{
    const int nc = r->g.nchans, p = pow2_at_least(nc);
    const size_t smem = (size_t)p * sizeof(uint32_t);
    const dim3 lags(2 * NLAGS, (unsigned)k.nb);
    const int per_cta = 256 / RFI_LANES;      /* spectra a zsum block takes */
    const dim3 spectra((unsigned)((k.block + per_cta - 1) / per_cta), (unsigned)k.nb);
    const int bytes8 = r->g.nbits == 8 && r->g.nifs == 1 && nc % 4 == 0;
    for (int second = 0; second < 2; second++) {
        if (bytes8)
            stats8_kernel<<<dim3((unsigned)((nc + 127) / 128), (unsigned)k.nb), 32 * STATS8_SLICES,
                            0, st>>>(k, second);
        else
            stats_kernel<<<dim3((unsigned)((nc + STATS_CHANS - 1) / STATS_CHANS), (unsigned)k.nb),
                           STATS_CHANS * STATS_SLICES, 0, st>>>(k, second);
        iqrm_lag_kernel<<<lags, SORT_THREADS, smem, st>>>(k, p, second);
        if (second)
            break;
        offset_kernel<<<k.nb, 256, 0, st>>>(k);
        if (r->g.nbits == 8 && !r->g.sgn && r->g.nifs == 1)
            zsum8_kernel<<<dim3((unsigned)((k.block + 127) / 128), (unsigned)k.nb), 128,
                           (size_t)nc * sizeof(float), st>>>(k);
        else
            zsum_kernel<<<spectra, 256, 0, st>>>(k);
        clip_kernel<<<k.nb, SORT_THREADS, 0, st>>>(k);
    }
    level_kernel<<<k.nb, 256, 0, st>>>(k, r->count ? r->counts : NULL, r->count ? r->ever : NULL);
    const int64_t nv = (int64_t)nc * r->g.nifs;
    if (nv * r->g.nbits % 8 == 0)
        replace_kernel<<<dim3((unsigned)k.block), 128, 0, st>>>(k, k.nb - 1);
    else
        replace_bytes_kernel<<<dim3((unsigned)((k.block * nv / (8 / r->g.nbits) + 255) / 256)),
                               256, 0, st>>>(k, k.nb - 1);
    DDTK_CUDA(cudaGetLastError(), "cleaning RFI");
    return DDTK_OK;
}

int ddtk_rfi_gpu_clean(ddtk_rfi_gpu *r, int set, uint8_t *raw, int64_t n, int64_t at,
                       cudaStream_t st)
{
    const ddtk_clean_geom *g = &r->g;
    const int64_t b = g->block, nblocks = (n + b - 1) / b;
    if (nblocks > r->ws[set].cap)
        return ddtk_fail(DDTK_ESYS, "GPU RFI cleaning: %lld blocks in a gulp, room for %lld",
                         (long long)nblocks, (long long)r->ws[set].cap);
    Gulp k;
    k.nb = (int)nblocks;
    k.raw = raw;
    k.at = at;
    k.block = b;
    k.last = n - (nblocks - 1) * b;
    k.nc = g->nchans;
    k.ni = g->nifs;
    k.nbits = g->nbits;
    k.sgn = g->sgn;
    k.clip_sigma = (float)g->clip_sigma;
    k.w = r->ws[set];
    return clean_passes(r, k, st);
}

void ddtk_rfi_gpu_view(const ddtk_rfi_gpu *r, int set, ddgpu::UnpackRfi *v)
{
    const work *w = &r->ws[set];
    v->flag = w->flag;
    v->clip = w->clip;
    v->level = w->level;
    v->nclip = w->nclip;
    v->block = (int)r->g.block;
}

int ddtk_rfi_gpu_report(ddtk_rfi_gpu *r, ddtk_rfi_report *rep, uint8_t *ever)
{
    unsigned long long c[5];
    DDTK_CUDA(cudaMemcpy(c, r->counts, sizeof c, cudaMemcpyDeviceToHost), "reading RFI counts");
    DDTK_CUDA(cudaMemcpy(ever, r->ever, (size_t)r->g.nchans, cudaMemcpyDeviceToHost),
              "reading RFI counts");
    memset(rep, 0, sizeof *rep);
    rep->blocks = (int64_t)c[0];
    rep->chan_blocks = (int64_t)c[1];
    rep->spectra_clipped = (int64_t)c[2];
    rep->samples = (int64_t)c[3];
    rep->samples_masked = (int64_t)c[4];
    return DDTK_OK;
}

void ddtk_rfi_gpu_free(ddtk_rfi_gpu *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->nsets && r->ws; i++)
        work_free(&r->ws[i]);
    free(r->ws);
    cudaFree(r->counts);
    cudaFree(r->ever);
    free(r);
}
