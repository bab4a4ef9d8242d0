/*
 * sps_gpu.cu - the single-pulse search on the GPU, inside the stream
 * (sps_gpu.cuh): the series a gulp makes are searched where they are, and
 * only the giants come back, to the host's searcher (sps.c), which clusters
 * them as it clusters its own. The search is sps.c's, operation for
 * operation: the same float and double operations in the same order (this
 * file is built with -fmad=false, as sps.c is with -ffp-contract=off), so
 * the candidates are the CPU's to the bit.
 *
 * One searcher per level of a pipeline: a level's DMs share a sample factor,
 * hence a block length and boxcars, and every gulp gives each of them the
 * same samples, so the block schedule (when a block is searched, its length,
 * the history before it, the interpolation centres) is computed once on the
 * host. The levels share nothing: each searches on a stream of its own, side
 * by side. On the device each DM keeps what sps.c keeps per series: the samples
 * not yet searched (pend), the last widest - 1 normalised samples (the
 * history, at the front of z), the previous block's median and sigma, and
 * each boxcar's run state. A block of n samples is searched by
 *   stats   one CUDA block per DM: the median and the MAD by exact radix
 *           selection (the order statistic is sps.c's value, whatever the
 *           method), first among the values near the previous block's (one
 *           read of the block, as sps.c guesses), else four passes of 8 bits
 *           over the block's keys; the block from shared memory where it fits
 *           (blocks up to about 52000 samples on an H100: the default 2 s
 *           window up to 38 us samples), else from global memory; O(n) per DM
 *           and block, no sort; a MAD of 0 takes the RMS about the median,
 *           summed in order by one thread as sps.c sums;
 *   norm    the normalised samples, interpolated as sps.c interpolates;
 *   prefix  the double prefix sums of history and block as sps.c sums them:
 *           chunks of DDTK_SPS_CHUNK samples, each in order by a lane of its
 *           own (the chunks' totals, then each DM's chunk bases in order, then
 *           the sums written), so that a block's critical path is one chunk's
 *           adds, not nhist + n of them;
 *   flags   every boxcar over tiles of TILE samples: a flag per DM and tile
 *           where any boxcar may reach the threshold (a float screen of the
 *           sums, as sps.c's crossings);
 *   runs    one thread per DM and boxcar carries sps.c's run state through
 *           the block, visiting only flagged tiles (an unflagged tile ends an
 *           open run at its first sample), and appends each run's giant.
 * Giants go to a buffer per buffer set of the stream, brought back with the
 * gulp's count. More than it holds (a bright burst, RFI): the run state
 * evolves the same whatever is stored, so the set keeps the run state from
 * before its gulp and every block's prefix sums and flags, and collect
 * replays that gulp's runs from them into a buffer of the size counted.
 */
#include "check.cuh"
#include "sps_arith.h"
#include "sps_gpu.cuh"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TILE 1024                        /* samples per flag */
#define DEFAULT_GIANTS 4096              /* giants a gulp brings back with its count */

struct Boxcars {
    int nw;
    double thr;
    int64_t width[DDTK_SPS_MAX_BOXCARS];
    double norm[DDTK_SPS_MAX_BOXCARS];
};

/* A giant as the device finds it: boxcar k of level DM dm, best at series
 * sample t. */
struct DevGiant {
    float snr;
    int dm, k;
    long long t;
};

struct RunState {
    int inrun;
    float best;
    long long best_t;
};

/* One searched block of a gulp: where its sums and flags are. */
struct BlockRec {
    int64_t done, n, nhist, poff, foff;
};

struct sps_set {
    double *P;                  /* ndm x prow: each block's prefix sums */
    unsigned char *flags;       /* ndm x frow */
    RunState *snap;             /* the run state before the gulp */
    DevGiant *giants, *hgiants; /* cap on the device, and pinned */
    unsigned long long *count, *hcount;
    BlockRec *blk;
    int nblk, closed;
    cudaEvent_t t0, t1;
    int timed;
};

struct sps_level {
    int k, ndm;
    int *series;                /* level DM -> searcher series */
    Boxcars box;
    int64_t B, widest, ostride;
    float *pend[2];             /* ndm x pcap, the samples not searched yet */
    int pc;
    int64_t pcap, have, total, done;
    float *z[2];                /* ndm x zcap: history, then the block's normalised samples */
    int zc;
    int64_t zcap, nhist;
    double *stat[2];            /* ndm x (median, sigma): the previous block's, the current's */
    int ps, have_prev;
    double prev_centre;
    RunState *run;
    double *tot, *base;         /* ndm x the chunks of a block's prefix sums */
    int64_t prow, frow, maxblk;
    int64_t smem;               /* the most block bytes the statistics read from shared memory */
    cudaStream_t st;            /* the level's own: levels are searched side by side */
    cudaEvent_t joined;         /* the level's part of a gulp done */
    sps_set set[2];
};

struct sps_gpu {
    ddtk_sps_sink *sink;
    const ddtk_writer *w;
    int nlevels;
    int64_t cap;
    sps_level lv[DDTK_MAX_LEVELS];
    cudaEvent_t fork;           /* a gulp's series made: its levels' searches may start */
    cudaStream_t replay;
    double seconds;
    int64_t blocks, giants, replays;
};

#define LAUNCHED(what) DDTK_CUDA(cudaGetLastError(), what)

/* ---- kernels ------------------------------------------------------------------------- */

/* Float order as unsigned order (NaN aside; -0 below +0, which gives a
 * median or MAD of either zero: the same values downstream). */
__device__ static unsigned key_of(float v)
{
    unsigned u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

__device__ static float float_of(unsigned key)
{
    return __uint_as_float((key & 0x80000000u) ? key & 0x7fffffffu : ~key);
}

/* Bin `bin` (256: none) counted: once per warp where the whole warp shares
 * it (a block's values share their top bytes, and 32 atomics on one address
 * serialise), else per lane. */
__device__ static void count_bin(unsigned *hist, unsigned bin)
{
    const unsigned first = __shfl_sync(0xffffffffu, bin, 0);
    if (__all_sync(0xffffffffu, bin == first)) {
        if ((threadIdx.x & 31) == 0 && first < 256)
            atomicAdd(&hist[first], 32u);
    } else if (bin < 256) {
        atomicAdd(&hist[bin], 1u);
    }
}

/* The bin holding the k-th smallest of a histogram, and k within it: the
 * first warp, eight bins a lane and a scan of the lanes' sums. */
__device__ static void find_bin(const unsigned *hist, long long k, long long *shared_k,
                                unsigned *shared_d)
{
    const int lane = threadIdx.x;
    unsigned c[8], sum = 0;
    for (int b = 0; b < 8; b++) {
        c[b] = hist[lane * 8 + b];
        sum += c[b];
    }
    unsigned incl = sum;
    for (int o = 1; o < 32; o <<= 1) {
        const unsigned v = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o)
            incl += v;
    }
    const long long excl = (long long)incl - sum;
    if (excl <= k && k < (long long)incl) {
        long long left = k - excl;
        int b = 0;
        while (left >= (long long)c[b]) {
            left -= c[b];
            b++;
        }
        *shared_k = left;
        *shared_d = (unsigned)(lane * 8 + b);
    }
}

/* The k-th smallest (from 0) of x[0..n) (mad: of |x - m|) by radix
 * selection: a 256-bin histogram of each byte of the keys that match the
 * bytes chosen so far, most significant first. */
template <bool mad>
__device__ static float select_kth(const float *x, int64_t n, int64_t k, float m,
                                   unsigned *hist, long long *shared_k, unsigned *shared_d)
{
    unsigned prefix = 0, mask = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int i = threadIdx.x; i < 256; i += blockDim.x)
            hist[i] = 0;
        __syncthreads();
        for (int64_t base = 0; base < n; base += blockDim.x) {
            int64_t i = base + threadIdx.x;
            unsigned bin = 256;
            if (i < n) {
                unsigned u = key_of(mad ? fabsf(x[i] - m) : x[i]);
                if ((u & mask) == prefix)
                    bin = (u >> shift) & 255u;
            }
            count_bin(hist, bin);
        }
        __syncthreads();
        if (threadIdx.x < 32)
            find_bin(hist, k, shared_k, shared_d);
        __syncthreads();
        prefix |= *shared_d << shift;
        mask |= 255u << shift;
        k = *shared_k;
        __syncthreads();
    }
    return float_of(prefix);
}

/* select_kth tried first among the keys glo .. ghi (sps.c's select_near and
 * ddtk_select_key_near): one pass counts the keys below and copies the values
 * inside to win; where the k-th is among them and they fit, it is selected
 * from them alone. The block's four passes become one and four over a few
 * per cent of it; the value is the same wherever it lies. */
#define WINDOW 4096               /* values a window holds in shared memory */
template <bool mad>
__device__ static float select_near(const float *x, int64_t n, int64_t k, float m, int guess,
                                    unsigned glo, unsigned ghi, float *win, unsigned *cnt,
                                    unsigned *hist, long long *shared_k, unsigned *shared_d)
{
    if (guess && glo <= ghi) {
        if (threadIdx.x == 0)
            cnt[0] = cnt[1] = 0;
        __syncthreads();
        unsigned below = 0;        /* (blocks are under 2^30 samples) */
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
            const float v = mad ? fabsf(x[i] - m) : x[i];
            const unsigned u = key_of(v);
            below += u < glo;
            if (u - glo <= ghi - glo) {
                const unsigned j = atomicAdd(&cnt[1], 1u);
                if (j < WINDOW)
                    win[j] = v;
            }
        }
        for (int o = 16; o > 0; o >>= 1)
            below += __shfl_down_sync(0xffffffffu, below, o);
        if ((threadIdx.x & 31) == 0)
            atomicAdd(&cnt[0], below);
        __syncthreads();
        const long long nb = cnt[0], ni = cnt[1];
        __syncthreads();
        if (k >= nb && k < nb + ni && ni <= WINDOW)
            return select_kth<false>(win, ni, k - nb, 0.0f, hist, shared_k, shared_d);
    }
    return select_kth<mad>(x, n, k, m, hist, shared_k, shared_d);
}

/* sps.c's block_stats for the block of DM blockIdx.x: stat[dm] = median,
 * sigma. A staged block of samples fills most of an SM's shared memory, so
 * one block is all an SM runs: as many threads as a block may have. */
#define STATS_THREADS 1024
__global__ static void __launch_bounds__(STATS_THREADS)
stats_kernel(const float *pend, int64_t pitch, int64_t n, int staged, const double *prev,
             int have_prev, double *stat)
{
    extern __shared__ float sx[];
    __shared__ float win[WINDOW];
    __shared__ unsigned cnt[2];
    __shared__ unsigned hist[256];
    __shared__ long long sk;
    __shared__ unsigned sd;
    const int dm = blockIdx.x;
    const float *x = pend + (size_t)dm * pitch;
    if (staged) {
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            sx[i] = x[i];
        __syncthreads();
        x = sx;
    }
    /* the windows sps.c's block_stats guesses from the previous block's */
    const double pm = have_prev ? prev[2 * dm] : 0, ps = have_prev ? prev[2 * dm + 1] : 0;
    const int guess = have_prev && ps > 0;
    const int64_t k = (n - 1) / 2;
    double lo[2], hi[2];
    ddtk_sps_guess(pm, ps, n, lo, hi);
    const float median = select_near<false>(x, n, k, 0.0f, guess, key_of((float)lo[0]),
                                            key_of((float)hi[0]), win, cnt, hist, &sk, &sd);
    const float mad = select_near<true>(x, n, k, median, guess, key_of((float)lo[1]),
                                        key_of((float)hi[1]), win, cnt, hist, &sk, &sd);
    if (threadIdx.x != 0)
        return;
    double sigma = DDTK_SPS_MAD_TO_SIGMA * (double)mad;
    if (!(sigma > 0)) {
        double ss = 0;
        for (int64_t t = 0; t < n; t++)
            ss += ((double)x[t] - (double)median) * ((double)x[t] - (double)median);
        sigma = sqrt(ss / (double)n);
    }
    stat[2 * dm] = (double)median;
    stat[2 * dm + 1] = sigma;
}

struct NormArgs {
    const float *x;
    int64_t pitch, n, done, nhist, zcap;
    const double *cur, *prev;
    int have_prev;
    double centre, prev_centre;
    float *z;
};

/* sps.c's normalisation: z after the history, baseline and sigma
 * interpolated between the previous block's centre and this one's. */
__global__ static void norm_kernel(NormArgs a)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int dm = blockIdx.y;
    if (t >= a.n)
        return;
    const double median = a.cur[2 * dm], sigma = a.cur[2 * dm + 1];
    double m = median, sd = sigma, at = (double)(a.done + t);
    if (a.have_prev && at < a.centre) {
        const double pm = a.prev[2 * dm], psd = a.prev[2 * dm + 1];
        double f = (at - a.prev_centre) / (a.centre - a.prev_centre);
        m = ddtk_sps_lerp(pm, median, f);
        sd = ddtk_sps_lerp(psd, sigma, f);
    }
    const double xv = (double)a.x[(size_t)dm * a.pitch + t];
    a.z[(size_t)dm * a.zcap + a.nhist + t] = sd > 0 ? (float)((xv - m) / sd) : 0.0f;
}

/* The prefix sums as sps.c's prefix_sums makes them: chunk c of DM dm (rows
 * of CHUNK samples of the history then the block) summed in order from 0, one
 * lane per chunk of a warp's 32. Chunks of 32 samples of the 32 rows pass
 * through shared memory, so that the loads and stores are whole rows'
 * (coalesced) while each lane adds its own row in order; the next 32 samples'
 * loads are in flight while these are added. Without base, each chunk's total
 * to tot[dm * nch + c]; with it, P[c * CHUNK + j + 1] = base[dm * nch + c] +
 * the chunk's first j + 1 samples, and P[0] = 0. */
#define PT 32
#define CHUNK DDTK_SPS_CHUNK
__global__ static void chunk_kernel(const float *z, int64_t zcap, int64_t len, int nch, int ndm,
                                    double *tot, const double *base, double *P, int64_t prow)
{
    __shared__ float zs[PT][PT + 1];
    __shared__ double ps[PT][PT + 1];
    __shared__ const float *zr[PT];
    __shared__ double *pr[PT];
    __shared__ int rl[PT];
    const int lane = threadIdx.x;
    const int64_t r = (int64_t)blockIdx.x * PT + lane;
    const int dm = (int)(r / nch), c = (int)(r % nch), mine = dm < ndm;
    const int64_t at = (int64_t)c * CHUNK;
    zr[lane] = mine ? z + (size_t)dm * zcap + at : z;
    pr[lane] = mine ? P + (size_t)dm * prow + at + 1 : P;
    rl[lane] = mine ? (int)(len - at < CHUNK ? len - at : CHUNK) : 0;
    double acc = 0, b = mine && base ? base[r] : 0;
    if (mine && base && c == 0)
        P[(size_t)dm * prow] = 0;
    __syncwarp();
    float next[PT];
#pragma unroll
    for (int q = 0; q < PT; q++)
        next[q] = lane < rl[q] ? zr[q][lane] : 0.0f;
    for (int c0 = 0; c0 < CHUNK; c0 += PT) {
        const int i = c0 + lane, j = i + PT;
#pragma unroll
        for (int q = 0; q < PT; q++)
            zs[q][lane] = next[q];
        __syncwarp();
#pragma unroll
        for (int q = 0; q < PT; q++)
            next[q] = j < rl[q] ? zr[q][j] : 0.0f;
        const int m = rl[lane] - c0 < PT ? rl[lane] - c0 : PT;
        if (m == PT) {
#pragma unroll
            for (int k = 0; k < PT; k++) {
                acc = acc + (double)zs[lane][k];
                ps[lane][k] = b + acc;
            }
        } else {
            for (int k = 0; k < m; k++) {
                acc = acc + (double)zs[lane][k];
                ps[lane][k] = b + acc;
            }
        }
        __syncwarp();
        if (base)
            for (int q = 0; q < PT; q++)
                if (i < rl[q])
                    pr[q][i] = ps[q][lane];
        __syncwarp();
    }
    if (mine && !base)
        tot[r] = acc;
}

/* base[dm * nch + c]: the sum of chunks 0 .. c-1 of DM dm, in order. */
__global__ static void base_kernel(const double *tot, double *base, int nch, int ndm)
{
    const int dm = blockIdx.x * blockDim.x + threadIdx.x;
    if (dm >= ndm)
        return;
    double b = 0;
    for (int c = 0; c < nch; c++) {
        base[(size_t)dm * nch + c] = b;
        b = b + tot[(size_t)dm * nch + c];
    }
}

struct BlockArgs {
    const double *P;            /* the block's sums: row dm at P + dm * prow */
    int64_t prow, nhist, n, done;
    unsigned char *flags;       /* the block's flags: row dm at flags + dm * frow */
    int64_t frow;
};

__device__ static float boxcar_snr(const double *hi, int64_t t, int64_t w, double norm)
{
    return (float)((hi[t] - hi[t - w]) * norm);
}

/* flags[dm][tile]: some boxcar ending in the tile may reach the threshold.
 * A flag need only be set where one does: the runs test every sample of a
 * flagged tile exactly. Where the widest boxcar reaches back at most
 * FLAG_BACK samples, the tile's sums come to shared memory as floats and each
 * boxcar's sum is compared with a float threshold set low enough to pass every
 * sum that may cross, as sps.c's crossings does (its bound, with M the
 * largest |sum| read here); a sum not finite flags the tile. Two float
 * operations a boxcar where the exact test takes double ones and two
 * conversions: the flags took as long as the statistics (33 ms of htru 60 s's
 * search, ncu, H200). Wider boxcars take the exact test throughout. */
#define FLAG_BACK 3072
__global__ static void flags_kernel(BlockArgs a, Boxcars box, int screened)
{
    extern __shared__ float fs[];      /* (float)hi[a0 - widest .. a0 + TILE) */
    __shared__ float near[DDTK_SPS_MAX_BOXCARS];
    __shared__ int wk[DDTK_SPS_MAX_BOXCARS], fe[DDTK_SPS_MAX_BOXCARS];
    __shared__ unsigned most;
    const int dm = blockIdx.y;
    const int64_t a0 = (int64_t)blockIdx.x * TILE, widest = box.width[box.nw - 1];
    const int64_t end = a0 + TILE < a.n ? a0 + TILE : a.n;
    const double *hi = a.P + (size_t)dm * a.prow + a.nhist + 1;
    int any = 0;
    if (screened) {
        const int64_t lo = a0 - widest > -a.nhist - 1 ? a0 - widest : -a.nhist - 1;
        const float *f = fs + (widest - a0);
        unsigned mine = 0;
        if (threadIdx.x == 0)
            most = 0;
        __syncthreads();
        for (int64_t i = lo + threadIdx.x; i < end; i += blockDim.x) {
            const float v = (float)hi[i];
            fs[i - (a0 - widest)] = v;
            mine = max(mine, __float_as_uint(v) & 0x7fffffffu);
        }
        atomicMax(&most, mine);
        __syncthreads();
        const float m = __uint_as_float(most);
        if (threadIdx.x < box.nw) {
            const int k = threadIdx.x;
            near[k] = ddtk_sps_near(box.thr, box.width[k], m);
            wk[k] = (int)box.width[k];
            fe[k] = (int)ddtk_sps_first_end(box.width[k], a.done);
        }
        __syncthreads();
        if (most >= 0x7f800000u)
            any = 1;
        else   /* block offsets (int: blocks are under 2^30 samples), no branches: a
                * sum before the series' start is in the staged span, and masked */
            for (int t = (int)a0 + threadIdx.x; t < (int)end; t += blockDim.x) {
                const float here = f[t];
                for (int k = 0; k < box.nw; k++)
                    any |= (t >= fe[k]) & (here - f[t - wk[k]] >= near[k]);
            }
    } else {
        for (int64_t t = a0 + threadIdx.x; t < end; t += blockDim.x)
            for (int k = 0; k < box.nw; k++)
                if (t >= ddtk_sps_first_end(box.width[k], a.done)
                    && (double)boxcar_snr(hi, t, box.width[k], box.norm[k]) >= box.thr)
                    any = 1;
    }
    any = __syncthreads_or(any);
    if (threadIdx.x == 0)
        a.flags[(size_t)dm * a.frow + blockIdx.x] = (unsigned char)any;
}

__device__ static void emit(DevGiant *g, unsigned long long *count, unsigned long long cap,
                            int dm, int k, const RunState &s)
{
    unsigned long long i = atomicAdd(count, 1ull);
    if (i < cap) {
        DevGiant v = { s.best, dm, k, s.best_t };
        g[i] = v;
    }
}

/* sps.c's run_step for boxcar k of DM dm over the block's flagged tiles. */
__global__ static void runs_kernel(BlockArgs a, Boxcars box, int ndm, RunState *state,
                                   DevGiant *giants, unsigned long long *count,
                                   unsigned long long cap)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= ndm * box.nw)
        return;
    const int dm = i / box.nw, k = i % box.nw;
    const int64_t w = box.width[k], t0 = ddtk_sps_first_end(w, a.done);
    const double *hi = a.P + (size_t)dm * a.prow + a.nhist + 1;
    const unsigned char *fl = a.flags + (size_t)dm * a.frow;
    RunState s = state[i];
    for (int64_t tile = 0; tile * TILE < a.n; tile++) {
        if (!fl[tile]) {
            if (s.inrun)
                emit(giants, count, cap, dm, k, s);
            s.inrun = 0;
            continue;
        }
        const int64_t end = (tile + 1) * TILE < a.n ? (tile + 1) * TILE : a.n;
        for (int64_t t = tile * TILE > t0 ? tile * TILE : t0; t < end; t++) {
            const float snr = boxcar_snr(hi, t, w, box.norm[k]);
            if ((double)snr >= box.thr) {
                if (!s.inrun || snr > s.best) {
                    s.best = snr;
                    s.best_t = a.done + t;
                }
                s.inrun = 1;
            } else if (s.inrun) {
                emit(giants, count, cap, dm, k, s);
                s.inrun = 0;
            }
        }
    }
    state[i] = s;
}

/* The series' end: every open run gives its giant (sps.c's finish_series). */
__global__ static void close_kernel(int n, int nw, RunState *state, DevGiant *giants,
                                    unsigned long long *count, unsigned long long cap)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    if (state[i].inrun)
        emit(giants, count, cap, i / nw, i % nw, state[i]);
    state[i].inrun = 0;
}

/* n floats of each row from src (spitch apart) to dst (dpitch apart). */
__global__ static void copy_rows_kernel(float *dst, int64_t dpitch, const float *src,
                                        int64_t spitch, int64_t n)
{
    const size_t row = blockIdx.y;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dst[row * dpitch + i] = src[row * spitch + i];
}

/* ---- one level ------------------------------------------------------------------------ */

static unsigned grid_of(int64_t n, int per)
{
    return (unsigned)((n + per - 1) / per);
}

/* A level's rows copied on the device: one kernel, where a 2D memcpy may take
 * a copy per row (a thousand DMs, several copies a block). */
static int copy_rows(const sps_level *L, float *dst, int64_t dpitch, const float *src,
                     int64_t spitch, int64_t n, cudaStream_t st, const char *what)
{
    if (n <= 0)
        return DDTK_OK;
    const unsigned gx = grid_of(n, 256) < 32 ? grid_of(n, 256) : 32;
    copy_rows_kernel<<<dim3(gx, L->ndm), 256, 0, st>>>(dst, dpitch, src, spitch, n);
    LAUNCHED(what);
    return DDTK_OK;
}

static int runs(const sps_level *L, const BlockRec *b, const sps_set *s, RunState *state,
                DevGiant *giants, unsigned long long *count, unsigned long long cap,
                cudaStream_t st)
{
    BlockArgs a = { s->P + b->poff, L->prow, b->nhist, b->n, b->done, s->flags + b->foff,
                    L->frow };
    runs_kernel<<<grid_of((int64_t)L->ndm * L->box.nw, 128), 128, 0, st>>>(
        a, L->box, L->ndm, state, giants, count, cap);
    LAUNCHED("single-pulse search: runs");
    return DDTK_OK;
}

/* Search the n samples of every DM at pend offset off (sps.c's search_block). */
static int search_block(sps_level *L, sps_set *s, int64_t off, int64_t n, unsigned long long cap,
                        cudaStream_t st)
{
    if (s->nblk == L->maxblk)
        return ddtk_fail(DDTK_ESYS, "single-pulse search: more blocks in a gulp than planned");
    BlockRec *b = &s->blk[s->nblk++];
    b->done = L->done;
    b->n = n;
    b->nhist = L->nhist;
    b->poff = s->nblk > 1 ? b[-1].poff + b[-1].nhist + b[-1].n + 1 : 0;
    b->foff = s->nblk > 1 ? b[-1].foff + grid_of(b[-1].n, TILE) : 0;
    const float *x = L->pend[L->pc] + off;
    double *cur = L->stat[!L->ps];
    const int staged = (int64_t)(n * sizeof(float)) <= L->smem;
    stats_kernel<<<L->ndm, STATS_THREADS, staged ? n * sizeof(float) : 0, st>>>(
        x, L->pcap, n, staged, L->stat[L->ps], L->have_prev, cur);
    LAUNCHED("single-pulse search: block statistics");
    const double centre = (double)L->done + 0.5 * (double)(n - 1);
    NormArgs na = { x, L->pcap, n, L->done, L->nhist, L->zcap, cur, L->stat[L->ps], L->have_prev,
                    centre, L->prev_centre, L->z[L->zc] };
    norm_kernel<<<dim3(grid_of(n, 256), L->ndm), 256, 0, st>>>(na);
    LAUNCHED("single-pulse search: normalisation");
    const int64_t len = L->nhist + n;
    const int nch = (int)((len + CHUNK - 1) / CHUNK);
    const unsigned rows = grid_of((int64_t)L->ndm * nch, PT);
    chunk_kernel<<<rows, PT, 0, st>>>(L->z[L->zc], L->zcap, len, nch, L->ndm, L->tot, NULL,
                                      NULL, 0);
    LAUNCHED("single-pulse search: prefix sums");
    base_kernel<<<grid_of(L->ndm, 128), 128, 0, st>>>(L->tot, L->base, nch, L->ndm);
    LAUNCHED("single-pulse search: prefix sums");
    chunk_kernel<<<rows, PT, 0, st>>>(L->z[L->zc], L->zcap, len, nch, L->ndm, NULL, L->base,
                                      s->P + b->poff, L->prow);
    LAUNCHED("single-pulse search: prefix sums");
    BlockArgs a = { s->P + b->poff, L->prow, b->nhist, n, L->done, s->flags + b->foff, L->frow };
    const int screened = L->widest <= FLAG_BACK;
    flags_kernel<<<dim3(grid_of(n, TILE), L->ndm), 256,
                   screened ? (TILE + L->widest) * sizeof(float) : 0, st>>>(a, L->box, screened);
    LAUNCHED("single-pulse search: boxcars");
    int rc = runs(L, b, s, L->run, s->giants, s->count, cap, st);
    if (rc)
        return rc;
    /* The history: the last widest - 1 normalised samples, to the other z. */
    int64_t keep = L->widest - 1 < L->nhist + n ? L->widest - 1 : L->nhist + n;
    rc = copy_rows(L, L->z[!L->zc], L->zcap, L->z[L->zc] + L->nhist + n - keep, L->zcap, keep,
                   st, "single-pulse search: keeping the history");
    if (rc)
        return rc;
    L->zc = !L->zc;
    L->nhist = keep;
    L->ps = !L->ps;
    L->have_prev = 1;
    L->prev_centre = centre;
    L->done += n;
    return DDTK_OK;
}

/* A gulp's nout samples of every DM: appended, then every block that B/2
 * more samples show is not the last (sps.c's feed); on the last gulp, the
 * rest (as many as the sink keeps) and the open runs. */
static int level_gulp(sps_gpu *g, sps_level *L, sps_set *s, const float *dout, int64_t nout,
                      int last, cudaStream_t st)
{
    const int64_t B = L->B;
    const unsigned long long cap = (unsigned long long)g->cap;
    s->nblk = 0;
    s->closed = 0;
    DDTK_CUDA(cudaMemcpyAsync(s->snap, L->run, (size_t)L->ndm * L->box.nw * sizeof(RunState),
                              cudaMemcpyDeviceToDevice, st), "single-pulse search: run state");
    DDTK_CUDA(cudaMemsetAsync(s->count, 0, sizeof *s->count, st), "single-pulse search: count");
    int rc = copy_rows(L, L->pend[L->pc] + L->have, L->pcap, dout, L->ostride, nout, st,
                       "single-pulse search: taking the series");
    L->have += nout;
    L->total += nout;
    int64_t off = 0;
    for (; !rc && L->have - off >= B + B / 2; off += B)
        rc = search_block(L, s, off, B, cap, st);
    if (!rc && last) {
        int64_t n = L->have - off - (L->total - ddtk_writer_kept(g->w, L->k, L->total));
        if (n > 0)
            rc = search_block(L, s, off, n, cap, st);
        off = L->have;
        if (!rc) {
            close_kernel<<<grid_of((int64_t)L->ndm * L->box.nw, 128), 128, 0, st>>>(
                L->ndm * L->box.nw, L->box.nw, L->run, s->giants, s->count, cap);
            LAUNCHED("single-pulse search: closing runs");
            s->closed = 1;
        }
    }
    if (rc)
        return rc;
    if (off > 0 && L->have > off) {
        if ((rc = copy_rows(L, L->pend[!L->pc], L->pcap, L->pend[L->pc] + off, L->pcap,
                            L->have - off, st, "single-pulse search: keeping the samples not "
                            "searched")))
            return rc;
        L->pc = !L->pc;
    }
    L->have -= off;
    g->blocks += s->nblk;
    DDTK_CUDA(cudaMemcpyAsync(s->hcount, s->count, sizeof *s->count, cudaMemcpyDeviceToHost, st),
              "single-pulse search: copying the count");
    DDTK_CUDA(cudaMemcpyAsync(s->hgiants, s->giants, (size_t)g->cap * sizeof(DevGiant),
                              cudaMemcpyDeviceToHost, st), "single-pulse search: copying giants");
    return DDTK_OK;
}

/* ---- set-up ---------------------------------------------------------------------------- */

static int dev_alloc(void **p, size_t bytes, const char *what)
{
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        *p = NULL;
        cudaGetLastError();
        return ddtk_fail(DDTK_ESYS, "GPU: out of memory for the single-pulse search's %s "
                         "(%.0f MiB; a smaller --gulp or --max-mem needs less)", what,
                         (double)bytes / 1048576.0);
    }
    return DDTK_OK;
}

static int alloc_set(sps_level *L, sps_set *s, int64_t cap)
{
    const size_t nd = (size_t)L->ndm;
    int rc = dev_alloc((void **)&s->P, nd * L->prow * sizeof(double), "prefix sums");
    if (!rc)
        rc = dev_alloc((void **)&s->flags, nd * L->frow, "flags");
    if (!rc)
        rc = dev_alloc((void **)&s->snap, nd * L->box.nw * sizeof(RunState), "run state");
    if (!rc)
        rc = dev_alloc((void **)&s->giants, (size_t)cap * sizeof(DevGiant), "giants");
    if (!rc)
        rc = dev_alloc((void **)&s->count, sizeof *s->count, "giants");
    if (rc)
        return rc;
    DDTK_CUDA(cudaMallocHost((void **)&s->hgiants, (size_t)cap * sizeof(DevGiant)),
              "single-pulse search: pinning giants");
    DDTK_CUDA(cudaMallocHost((void **)&s->hcount, sizeof *s->hcount),
              "single-pulse search: pinning giants");
    DDTK_CUDA(cudaEventCreate(&s->t0), "creating an event");
    DDTK_CUDA(cudaEventCreate(&s->t1), "creating an event");
    s->blk = (BlockRec *)ddtk_calloc((size_t)L->maxblk, sizeof *s->blk, "search blocks");
    return s->blk ? DDTK_OK : DDTK_ESYS;
}

/* Blocks that fit the device's shared memory (beside the histogram and the
 * window) are read once from global memory, then the selection's passes read
 * them there. */
static int stage_blocks(sps_level *L)
{
    int dev = 0, optin = 0;
    DDTK_CUDA(cudaGetDevice(&dev), "single-pulse search: the device");
    DDTK_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev),
              "single-pulse search: shared memory");
    const int64_t most = (L->B + L->B / 2) * (int64_t)sizeof(float),
                  room = optin - 4096 - WINDOW * (int64_t)sizeof(float);
    L->smem = most < room ? most : room;
    if (room > 0)              /* every level's launches: the same bound */
        DDTK_CUDA(cudaFuncSetAttribute(stats_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)room), "single-pulse search: shared memory");
    return DDTK_OK;
}

/* Level k's searcher for the DMs of view v (all of factor f = 2^k): every
 * DM's series has sps.c's shape of its searcher series. */
static int level_create(sps_gpu *g, sps_level *L, int k, const ddtk_level *v, int64_t most,
                        int64_t ostride)
{
    ddtk_sps_sink *sink = g->sink;
    ddtk_sps_shape sh;
    L->k = k;
    L->ndm = v->ndm;
    L->ostride = ostride;
    L->series = (int *)ddtk_malloc((size_t)v->ndm * sizeof *L->series, "search series");
    if (!L->series)
        return DDTK_ESYS;
    for (int d = 0; d < v->ndm; d++) {
        L->series[d] = sink->rank[v->index[d]];
        ddtk_sps_shape_of(sink->search, L->series[d], &sh);
        if (sh.f != 1 << k)
            return ddtk_fail(DDTK_ESYS, "single-pulse search: DM %g has factor %d at level %d",
                             v->dms[d], sh.f, k);
    }
    ddtk_sps_shape_of(sink->search, L->series[0], &sh);
    L->B = sh.block;
    L->widest = sh.widest;
    L->box.nw = sh.nw;
    L->box.thr = sh.thr;
    for (int i = 0; i < sh.nw; i++) {
        L->box.width[i] = sh.width[i];
        L->box.norm[i] = 1.0 / sqrt((double)sh.width[i]);
    }
    /* Before a gulp fewer than 1.5 B samples wait; blocks of B, then the last. */
    const int64_t most_have = L->B + L->B / 2 + most;
    if (L->ndm > 65535)
        return ddtk_fail(DDTK_EUSAGE, "single-pulse search on the GPU: %d DMs at one resolution "
                         "on one GPU (at most 65535; --gpu LIST shares them)", L->ndm);
    if (most_have > INT32_MAX)
        return ddtk_fail(DDTK_EUSAGE, "single-pulse search on the GPU: baseline blocks of %lld "
                         "samples are too long (at most about 2^30)", (long long)L->B);
    L->maxblk = most_have / L->B + 1;
    int rc = stage_blocks(L);
    if (rc)
        return rc;
    L->pcap = ddtk_round_up(most_have, 64);
    L->zcap = ddtk_round_up(L->widest + L->B + L->B / 2, 64);
    L->prow = ddtk_round_up(most_have + L->maxblk * (L->widest + 1), 64);
    L->frow = ddtk_round_up(most_have / TILE + 2 * L->maxblk, 64);
    const size_t nd = (size_t)L->ndm;
    for (int i = 0; !rc && i < 2; i++) {
        rc = dev_alloc((void **)&L->pend[i], nd * L->pcap * sizeof(float), "samples");
        if (!rc)
            rc = dev_alloc((void **)&L->z[i], nd * L->zcap * sizeof(float), "history");
        if (!rc)
            rc = dev_alloc((void **)&L->stat[i], nd * 2 * sizeof(double), "statistics");
    }
    if (!rc)
        rc = dev_alloc((void **)&L->run, nd * L->box.nw * sizeof(RunState), "run state");
    const size_t nch = (size_t)(L->zcap + CHUNK - 1) / CHUNK;
    if (!rc)
        rc = dev_alloc((void **)&L->tot, nd * nch * sizeof(double), "prefix sums");
    if (!rc)
        rc = dev_alloc((void **)&L->base, nd * nch * sizeof(double), "prefix sums");
    if (!rc)
        DDTK_CUDA(cudaStreamCreateWithFlags(&L->st, cudaStreamNonBlocking),
                  "single-pulse search: creating a stream");
    if (!rc)
        DDTK_CUDA(cudaEventCreateWithFlags(&L->joined, cudaEventDisableTiming),
                  "single-pulse search: creating an event");
    if (!rc)
        DDTK_CUDA(cudaMemset(L->run, 0, nd * L->box.nw * sizeof(RunState)),
                  "single-pulse search: run state");
    for (int i = 0; !rc && i < 2; i++)
        rc = alloc_set(L, &L->set[i], g->cap);
    return rc;
}

static void free_set(sps_set *s)
{
    cudaFree(s->P);
    cudaFree(s->flags);
    cudaFree(s->snap);
    cudaFree(s->giants);
    cudaFree(s->count);
    cudaFreeHost(s->hgiants);
    cudaFreeHost(s->hcount);
    if (s->t0)
        cudaEventDestroy(s->t0);
    if (s->t1)
        cudaEventDestroy(s->t1);
    free(s->blk);
}

static void level_free(sps_level *L)
{
    for (int i = 0; i < 2; i++) {
        cudaFree(L->pend[i]);
        cudaFree(L->z[i]);
        cudaFree(L->stat[i]);
        free_set(&L->set[i]);
    }
    cudaFree(L->run);
    cudaFree(L->tot);
    cudaFree(L->base);
    if (L->st)
        cudaStreamDestroy(L->st);
    if (L->joined)
        cudaEventDestroy(L->joined);
    free(L->series);
}

int ddtk_sps_gpu_create(ddtk_sps_gpu **out, ddtk_sps_sink *sink, const ddtk_writer *w,
                                   const ddtk_plan *p, const ddtk_level *views, int nlevels,
                                   int64_t step, const int64_t *ostride)
{
    *out = NULL;
    sps_gpu *g = (sps_gpu *)ddtk_calloc(1, sizeof *g, "GPU search");
    if (!g)
        return DDTK_ESYS;
    g->sink = sink;
    g->w = w;
    ddtk_sps_shape sh;
    ddtk_sps_shape_of(sink->search, 0, &sh);
    g->cap = sh.gpu_giants > 0 ? sh.gpu_giants : DEFAULT_GIANTS;
    int rc = DDTK_OK;
    cudaError_t e = cudaEventCreateWithFlags(&g->fork, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&g->replay, cudaStreamNonBlocking);
    if (e != cudaSuccess)
        rc = ddtk_cuda_fail("single-pulse search: creating a stream", e);
    for (int k = 0; !rc && k < nlevels; k++) {
        if (!views[k].ndm)
            continue;
        rc = level_create(g, &g->lv[g->nlevels++], k, &views[k],
                          ddtk_level_most_out(p, k, step), ostride[k]);
    }
    if (rc) {
        ddtk_sps_gpu_free(g);
        return rc;
    }
    sink->on_device = 1;
    *out = g;
    return DDTK_OK;
}

void ddtk_sps_gpu_free(ddtk_sps_gpu *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nlevels; i++)
        level_free(&g->lv[i]);
    if (g->fork)
        cudaEventDestroy(g->fork);
    if (g->replay)
        cudaStreamDestroy(g->replay);
    free(g);
}

/* ---- per gulp -------------------------------------------------------------------------- */

/* Each level searches on its own stream, forked from st once the gulp's
 * series are made and joined back into st: a level's stream keeps its gulps
 * in order (its state passes from one to the next), and the levels, which
 * share nothing, run side by side. */
int ddtk_sps_gpu_gulp(ddtk_sps_gpu *g, int set, float *const *dout, const int64_t *nout,
                      int last, cudaStream_t st)
{
    if (!g->nlevels)
        return DDTK_OK;
    sps_set *first = &g->lv[0].set[set];
    DDTK_CUDA(cudaEventRecord(first->t0, st), "recording an event");
    DDTK_CUDA(cudaEventRecord(g->fork, st), "recording an event");
    for (int i = 0; i < g->nlevels; i++) {
        sps_level *L = &g->lv[i];
        DDTK_CUDA(cudaStreamWaitEvent(L->st, g->fork, 0), "ordering the search");
        int rc = level_gulp(g, L, &L->set[set], dout[L->k], nout[L->k] > 0 ? nout[L->k] : 0,
                            last, L->st);
        if (rc)
            return rc;
        DDTK_CUDA(cudaEventRecord(L->joined, L->st), "recording an event");
        DDTK_CUDA(cudaStreamWaitEvent(st, L->joined, 0), "joining the search");
    }
    DDTK_CUDA(cudaEventRecord(first->t1, st), "recording an event");
    first->timed = 1;
    return DDTK_OK;
}

/* More giants than the set's buffer: the gulp's runs again from the run
 * state before it, into a buffer of the size counted. */
static int replay(sps_gpu *g, sps_level *L, sps_set *s, unsigned long long n, DevGiant *host)
{
    const size_t states = (size_t)L->ndm * L->box.nw * sizeof(RunState);
    RunState *state = NULL;
    DevGiant *giants = NULL;
    unsigned long long *count = NULL, got = 0;
    int rc = dev_alloc((void **)&state, states, "run state");
    if (!rc)
        rc = dev_alloc((void **)&giants, (size_t)n * sizeof(DevGiant), "giants");
    if (!rc)
        rc = dev_alloc((void **)&count, sizeof *count, "giants");
    cudaStream_t st = g->replay;
    cudaError_t e = rc ? cudaSuccess : cudaMemcpyAsync(state, s->snap, states,
                                                       cudaMemcpyDeviceToDevice, st);
    if (e == cudaSuccess && !rc)
        e = cudaMemsetAsync(count, 0, sizeof *count, st);
    if (e != cudaSuccess)
        rc = ddtk_cuda_fail("single-pulse search: replaying a gulp", e);
    for (int b = 0; !rc && b < s->nblk; b++)
        rc = runs(L, &s->blk[b], s, state, giants, count, n, st);
    if (!rc && s->closed) {
        close_kernel<<<grid_of((int64_t)L->ndm * L->box.nw, 128), 128, 0, st>>>(
            L->ndm * L->box.nw, L->box.nw, state, giants, count, n);
        e = cudaGetLastError();
        if (e != cudaSuccess)
            rc = ddtk_cuda_fail("single-pulse search: closing runs", e);
    }
    if (!rc && ((e = cudaMemcpyAsync(host, giants, (size_t)n * sizeof(DevGiant),
                                     cudaMemcpyDeviceToHost, st)) != cudaSuccess
                || (e = cudaMemcpyAsync(&got, count, sizeof got, cudaMemcpyDeviceToHost, st))
                       != cudaSuccess
                || (e = cudaStreamSynchronize(st)) != cudaSuccess))
        rc = ddtk_cuda_fail("single-pulse search: replaying a gulp", e);
    if (!rc && got != n)
        rc = ddtk_fail(DDTK_ESYS, "single-pulse search: a replayed gulp gave %llu giants, not "
                       "%llu", got, n);
    cudaFree(state);
    cudaFree(giants);
    cudaFree(count);
    g->replays++;
    return rc;
}

static int level_collect(sps_gpu *g, sps_level *L, sps_set *s)
{
    const unsigned long long n = *s->hcount;
    DevGiant *gi = s->hgiants, *own = NULL;
    int rc = DDTK_OK;
    if (n > (unsigned long long)g->cap) {
        own = (DevGiant *)ddtk_malloc((size_t)n * sizeof *own, "search giants");
        rc = own ? replay(g, L, s, n, own) : DDTK_ESYS;
        gi = own;
    }
    for (unsigned long long i = 0; !rc && i < n; i++)
        rc = ddtk_sps_add_giant(g->sink->search, L->series[gi[i].dm], gi[i].k, gi[i].snr,
                                gi[i].t);
    g->giants += rc ? 0 : (int64_t)n;
    free(own);
    return rc;
}

int ddtk_sps_gpu_collect(ddtk_sps_gpu *g, int set)
{
    if (!g->nlevels)
        return DDTK_OK;
    sps_set *first = &g->lv[0].set[set];
    if (first->timed) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, first->t0, first->t1) == cudaSuccess)
            g->seconds += ms / 1000.0;
        first->timed = 0;
    }
    for (int i = 0; i < g->nlevels; i++) {
        int rc = level_collect(g, &g->lv[i], &g->lv[i].set[set]);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

void ddtk_sps_gpu_report(const ddtk_sps_gpu *g, double *seconds, int64_t *blocks,
                                    int64_t *giants, int64_t *replays)
{
    *seconds = g->seconds;
    *blocks = g->blocks;
    *giants = g->giants;
    *replays = g->replays;
}
