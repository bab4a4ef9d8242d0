/*
 * direct_gpu.cu - GPU direct-dedispersion kernels: device-side unpacking of raw
 * SIGPROC samples into channel rows, --zerodm, the halving kernel of time
 * scrunching (Barsdell 2.1) and each level's row encoding, the shared-memory
 * kernels (Novotny et al. 2023, Algorithm 3) and the cache-based fallback kernel.
 *
 * Shared-memory kernels: a block owns DMS_PER_BLOCK DM trials (one or more per
 * warp) times one time tile. For each pass of DCH channels it stages, per
 * channel, the input the whole block needs (starting at the smallest delay
 * of its DMs, `lo`, and `span` samples longer than the tile) in shared
 * memory; each thread then adds NREG words per DM from shared memory into
 * registers. A warp is one DM, so the per-channel shift is warp-uniform and
 * consecutive lanes read consecutive words (no bank conflicts).
 *
 * Lane kernel (integers of 8 bits or less): shared word w holds samples w
 * (low 16 bits) and w + tile_words (high 16 bits) of the tile, so one 32-bit
 * load and add advances two output samples whatever the delay. With byte
 * lanes (8-bit rows, configurations with q = 4) the word holds samples w + i
 * tile_words in byte i, four per load, split into two 16-bit-lane words by
 * two integer operations. Lanes are
 * spilled into 32-bit partial sums every `spill_stages` passes, before
 * 65535 could be exceeded. Integer sums are exact, so the result equals the
 * CPU's float sums bit for bit while those stay below 2^24.
 *
 * Float kernel and fallback on floats: float accumulation in exactly the
 * CPU's order (cpu/direct.c: groups of four channels, (a+b)+(x+y), added to
 * the running sum; leftover channels one by one), so they reproduce the CPU
 * bit for bit. The fallback on integer rows adds words of packed samples as
 * integers where that is exact. The float kernel writes floats only; the
 * lane and fallback kernels may also write integer sums (sub-band stage 1,
 * DirectArgs).
 */
#include "direct.cuh"
#include "rfi_math.h"

#include <type_traits>

namespace ddgpu {

/* ---- configurations -------------------------------------------------------- */

struct Cfg {
    int nw, dpw, nreg, dch, minb, q;
};

/* Configurations: warps, DMs per warp, words per thread, channels per pass,
 * the blocks per SM the register allocation must allow (occupancy) and, for
 * the samples a tile word holds: lane kernel, of 8-bit rows 2 or 4 (byte
 * lanes; 16-bit rows always 2); float kernel, of 16-bit rows 1 (a float) or
 * 2 (a pair of codes; float rows always 1). The small blocks (2, 4 and 8 DMs) are
 * for the tuner: with a few DM trials, a block of 16 leaves most of its
 * warps without a DM. */
#define LANE_CONFIGS(X) X(0, 8, 2, 8, 8, 1, 2) X(1, 8, 2, 4, 16, 1, 2) X(2, 16, 1, 8, 8, 1, 2) \
    X(3, 8, 4, 4, 8, 1, 2) X(4, 4, 4, 8, 8, 1, 2) X(5, 8, 2, 8, 8, 4, 2) X(6, 8, 2, 8, 16, 3, 2) \
    X(7, 8, 1, 8, 16, 4, 2) X(8, 1, 2, 8, 16, 8, 2) X(9, 2, 2, 8, 16, 8, 2) \
    X(10, 4, 1, 8, 16, 8, 2) X(11, 4, 2, 8, 16, 4, 2) X(12, 8, 2, 8, 8, 5, 2) \
    X(13, 8, 1, 8, 8, 8, 2) X(14, 4, 2, 8, 8, 8, 2) X(15, 8, 2, 4, 8, 5, 4) \
    X(16, 8, 2, 4, 16, 4, 4) X(17, 8, 1, 8, 8, 5, 4) X(18, 8, 2, 8, 8, 3, 4) \
    X(19, 8, 4, 4, 8, 3, 4)
#define FLOAT_CONFIGS(X) X(0, 8, 2, 8, 8, 1, 1) X(1, 8, 2, 4, 8, 1, 1) X(2, 16, 1, 8, 8, 1, 1) \
    X(3, 8, 4, 4, 8, 1, 1) X(4, 1, 2, 8, 8, 8, 1) X(5, 2, 2, 8, 8, 8, 1) X(6, 4, 2, 8, 8, 4, 1) \
    X(7, 8, 2, 8, 8, 4, 1) X(8, 8, 1, 8, 8, 6, 1) X(9, 8, 2, 4, 8, 4, 2) X(10, 8, 2, 8, 8, 3, 2) \
    X(11, 8, 1, 8, 8, 4, 2)
#define AS_CFG(i, nw, dpw, nreg, dch, minb, q) { nw, dpw, nreg, dch, minb, q },

/* A configuration's blocks per SM, as many as the architecture holds
 * threads for (1024 per SM on sm_75, 1536 on sm_86/87/89, 2048 on sm_80 and
 * sm_90): a larger minimum is out of range there, and ptxas ignores it with
 * a warning. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750
#define SM_THREADS 1024
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870 || __CUDA_ARCH__ == 890)
#define SM_THREADS 1536
#else
#define SM_THREADS 2048
#endif
#define FIT_BLOCKS(threads, minb) ((minb) * (threads) <= SM_THREADS ? (minb) : SM_THREADS / (threads))
static const Cfg lane_cfgs[] = { LANE_CONFIGS(AS_CFG) };
static const Cfg float_cfgs[] = { FLOAT_CONFIGS(AS_CFG) };

int config_count(KernelKind k)
{
    return k == K_LANES ? (int)(sizeof lane_cfgs / sizeof lane_cfgs[0])
                        : (int)(sizeof float_cfgs / sizeof float_cfgs[0]);
}

ConfigInfo config_info(KernelKind k, int i, Storage s)
{
    const Cfg &c = k == K_LANES ? lane_cfgs[i] : float_cfgs[i];
    ConfigInfo info;
    info.dms_per_block = c.nw * c.dpw;
    info.tile_words = 32 * c.nreg;
    info.lanes = k == K_LANES ? (s == ST_U8 ? c.q : 2) : (s == ST_U16 ? c.q : 1);
    info.tile_samples = info.lanes * info.tile_words;
    info.chans_per_stage = c.dch;
    info.threads = 32 * c.nw;
    return info;
}

/* Defaults from H100 runs (bench/gpu-results.md), kernel sample-adds/s with
 * DDTK_GPU_SERIAL=1: 8-bit rows take byte-lane config 18 (AstroAccelerate's
 * ranges of workload A 1.17e13, aa-high 1.41e13, against config 12's 1.06e13
 * and 1.15e13; config 19, 32 DMs a block, reads 1.20e13 and 1.43e13 but
 * 6.4e12 on the tolerance list against 18's 7.75e12: the tuner's to pick);
 * 16-bit-lane rows (16-bit input, scrunched levels) config 12
 * (partial sums in shared memory, registers capped at 48 for five blocks per
 * SM); the float kernel on 16-bit rows config 10 (code pairs, integer group
 * sums: 6.44e12 on 16-bit input, 1024 channels, against config 7's 4.49e12),
 * on float rows config 7. Pre-Ampere parts have less shared memory and fewer
 * registers per SM. */
int default_config(KernelKind k, Storage s, int major)
{
    if (major < 8)
        return 1;
    if (k == K_LANES)
        return s == ST_U8 ? 18 : 12;
    return s == ST_U16 ? 10 : 7;
}

/* Tile and shifts; the lane kernel adds its 32-bit partial sums, one a lane
 * (lane_kernel). */
size_t shared_bytes(KernelKind k, const ConfigInfo &c, int rowlen)
{
    size_t sums = k == K_LANES ? (size_t)c.dms_per_block * c.tile_samples * 4 : 0;
    return (size_t)c.chans_per_stage * ((size_t)rowlen + (size_t)c.dms_per_block) * 4 + sums;
}

int storage_bytes(Storage s)
{
    return s == ST_U8 ? 1 : s == ST_U16 ? 2 : 4;
}

Encoding choose_encoding(int nbits, int sgn, int polsum, int zerodm)
{
    Encoding e;
    int npol = polsum ? 2 : 1;
    if (zerodm || nbits == 32 || (nbits == 16 && polsum)) {
        e.storage = ST_F32;
        e.kind = K_FLOAT;
        e.bias = 0;
        e.maxval = 0;
    } else if (nbits == 16) {
        e.storage = ST_U16;
        e.kind = K_FLOAT;
        e.bias = sgn ? 32768 : 0;
        e.maxval = 65535;
    } else {
        int sgn8 = nbits == 8 && sgn;
        e.kind = K_LANES;
        e.bias = sgn8 ? 128 * npol : 0;
        e.maxval = ((1 << nbits) - 1) * npol;
        e.storage = e.maxval <= 255 ? ST_U8 : ST_U16;
    }
    return e;
}

static int widest_lane_pass()
{
    int most = 0;
    for (const Cfg &c : lane_cfgs)
        most = c.dch > most ? c.dch : most;
    return most;
}

Encoding scrunched_encoding(Encoding base, int factor)
{
    Encoding e = base;
    if (base.storage == ST_F32)
        return e;
    e.maxval = base.maxval * factor;
    e.bias = base.bias * factor;
    if (e.maxval <= 255)
        e.storage = ST_U8;
    else if (e.maxval <= 65535)
        e.storage = ST_U16;
    else
        e.storage = ST_F32, e.bias = 0, e.maxval = 0;
    if (e.maxval == 0 || e.maxval * widest_lane_pass() > 65535)
        e.kind = K_FLOAT;
    return e;
}

/* ---- unpacking --------------------------------------------------------------- */

/* Element (IF i, channel c) of raw spectrum sb, of cleaning block j, as the
 * GPU's RFI cleaning replaces it: the integer rfi_put writes (a float for
 * 32-bit data), as a float. */
__device__ __forceinline__ float replaced(const UnpackArgs &u, int64_t sb, int j, int i, int c)
{
    const float x = u.rfi.level[((int64_t)j * u.nifs + i) * u.nchans + c];
    const int64_t where = (u.rfi.at + sb - u.rfi.from) * u.nchans * u.nifs
                          + (int64_t)i * u.nchans + c;
    return u.nbits == 32 ? x : (float)rfi_quantise(x, where, u.nbits, u.sgn);
}

/* IF i's element of spectrum sb, channel c, as the CPU's ddtk_unpack reads
 * it: the raw value, or where the cleaning replaced it (j, its block; -1:
 * not replaced) the value written in its place. */
__device__ __forceinline__ float float_at(const UnpackArgs &u, int64_t sb, int c, int i, int j)
{
    if (j >= 0)
        return replaced(u, sb, j, i, c);
    const int64_t e = sb * u.nchans * u.nifs + (int64_t)i * u.nchans + c;
    return u.nbits == 32 ? reinterpret_cast<const float *>(u.raw)[e]
                         : (float)int_element(u.raw, e, u.nbits, u.sgn);
}

__device__ __forceinline__ int int_at(const UnpackArgs &u, int64_t sb, int c, int i, int j)
{
    return j >= 0 ? (int)replaced(u, sb, j, i, c)
                  : int_element(u.raw, sb * u.nchans * u.nifs + (int64_t)i * u.nchans + c,
                                u.nbits, u.sgn);
}

/* One sample as the CPU's ddtk_unpack computes it (float), or its integer code. */
__device__ __forceinline__ float float_sample(const UnpackArgs &u, int64_t sb, int c, int j)
{
    return u.pol < 0 ? float_at(u, sb, c, 0, j) + float_at(u, sb, c, 1, j)
                     : float_at(u, sb, c, u.pol, j);
}

__device__ __forceinline__ uint32_t int_sample(const UnpackArgs &u, int64_t sb, int c, int j)
{
    const int v = u.pol < 0 ? int_at(u, sb, c, 0, j) + int_at(u, sb, c, 1, j)
                            : int_at(u, sb, c, u.pol, j);
    return (uint32_t)(v + u.enc.bias);
}

/* A scaled PSRFITS sample (spectrum j, channel c) as the CPU decodes it:
 * one fused multiply-add per IF (the host build's -march=native contracts
 * its own), the IFs then summed. */
__device__ __forceinline__ float scaled_sample(const UnpackArgs &u, int64_t j, int c)
{
    const int64_t vals = (int64_t)u.nchans * u.nifs;
    const uint8_t *r = u.raw + j * vals;
    const float *mul = u.tab + (int64_t)u.seg[j] * 2 * vals, *add = mul + vals;
    const int bias = u.sgn ? 128 : 0;
    if (u.pol < 0)
        return fmaf((float)((int)r[c] - bias), mul[c], add[c])
             + fmaf((float)((int)r[c + u.nchans] - bias), mul[c + u.nchans], add[c + u.nchans]);
    const int64_t i = (int64_t)u.pol * u.nchans + c;
    return fmaf((float)((int)r[i] - bias), mul[i], add[i]);
}

/* 32x32 (spectrum, channel) tiles transposed through shared memory, so raw
 * reads run along channels and row writes along time. */
template <typename T>
__global__ void __launch_bounds__(256) unpack_kernel(UnpackArgs u)
{
    __shared__ uint32_t tile[32][33];
    const int64_t s0 = (int64_t)blockIdx.x * 32;
    const int c0 = blockIdx.y * 32, tx = threadIdx.x, ty = threadIdx.y;
    const int c = c0 + tx;
    const int64_t ns = u.n - s0 < 32 ? u.n - s0 : 32;
    for (int s = ty; s < 32; s += 8) {
        uint32_t v = 0;
        if (c < u.nchans && s < ns) {
            const int64_t sb = u.first + s0 + s;
            if (u.tab)
                v = __float_as_uint(scaled_sample(u, s0 + s, c));
            else
                v = u.enc.storage == ST_F32 ? __float_as_uint(float_sample(u, sb, c, -1))
                                            : int_sample(u, sb, c, -1);
        }
        tile[tx][s] = v;
    }
    __syncthreads();
    T *rows = static_cast<T *>(u.rows);
    for (int k = ty; k < 32; k += 8) {
        int c = c0 + k;
        if (c >= u.nchans || s0 + tx >= u.n)
            continue;
        int r = u.rowmap[c];
        if (r < 0)
            continue;
        uint32_t v = tile[k][tx];
        T *dst = rows + (int64_t)r * u.stride + u.col + s0 + tx;
        if constexpr (sizeof(T) == 4)
            *dst = __uint_as_float(v);
        else
            *dst = (T)v;
    }
}

/* Byte i of x. */
__device__ __forceinline__ uint32_t byte_of(uint32_t x, int i)
{
    return (x >> (8 * i)) & 0xffu;
}

#define U8_SPECTRA 128            /* an unpack8 tile's spectra, */
#define U8_CHANS 128              /* channels */

/* The same for 8-bit samples of one IF into byte rows, a word at a time: a
 * tile of U8_SPECTRA x U8_CHANS, each thread reading four spectra's words
 * of four channels (a warp a spectrum's 128 bytes), turning the 4x4 bytes
 * round in registers and writing four channels' words of four spectra to
 * shared memory, from where warps write the rows 128 bytes at a time. One
 * byte a thread, the unpacking took 0.25 ms a 32768-spectra gulp of htru;
 * this kernel 0.06 ms (H100). */
__global__ void __launch_bounds__(256) unpack8_kernel(UnpackArgs u)
{
    __shared__ uint32_t out[U8_CHANS][U8_SPECTRA / 4 + 1];
    const int64_t s0 = (int64_t)blockIdx.x * U8_SPECTRA;
    const int c0 = blockIdx.y * U8_CHANS, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int ns = u.n - s0 < U8_SPECTRA ? (int)(u.n - s0) : U8_SPECTRA;
    const int words = (u.nchans - c0 < U8_CHANS ? u.nchans - c0 : U8_CHANS) / 4;
    const uint32_t flip = u.enc.bias ? 0x80808080u : 0;   /* signed bytes + 128 */
    const uint32_t *raw = reinterpret_cast<const uint32_t *>(u.raw);
    const int64_t wps = u.nchans / 4;                      /* words a spectrum */
    for (int a = warp; a < U8_SPECTRA / 4 && lane < words; a += 8) {
        uint32_t w[4];
        for (int i = 0; i < 4; i++)
            w[i] = 4 * a + i < ns ? raw[(u.first + s0 + 4 * a + i) * wps + c0 / 4 + lane] : 0;
        for (int b = 0; b < 4; b++)
            out[4 * lane + b][a] = (byte_of(w[0], b) | byte_of(w[1], b) << 8 | byte_of(w[2], b) << 16
                                    | byte_of(w[3], b) << 24) ^ flip;
    }
    __syncthreads();
    const int aligned = (u.col + s0) % 4 == 0 && u.stride % 4 == 0;
    for (int c = warp; c < 4 * words; c += 8) {
        const int r = u.rowmap[c0 + c];
        if (r < 0)
            continue;
        uint8_t *dst = static_cast<uint8_t *>(u.rows) + (int64_t)r * u.stride + u.col + s0;
        for (int a = lane; 4 * a < ns; a += 32) {
            const uint32_t v = out[c][a];
            if (aligned && 4 * a + 4 <= ns)
                *reinterpret_cast<uint32_t *>(dst + 4 * a) = v;
            else
                for (int i = 0; i < 4 && 4 * a + i < ns; i++)
                    dst[4 * a + i] = (uint8_t)byte_of(v, i);
        }
    }
}

/* The cleaning's replacements (u.rfi) written over the unpacked rows: a
 * thread block a channel (blockIdx.x) of cleaning block j0 + blockIdx.y,
 * its threads along the block's spectra in this gulp, where the channel is
 * flagged there or a spectrum clipped; a row takes what the unpacking
 * would have made of the replaced sample. Looked for in the unpacking, the
 * replacements diverged its warps (a flagged channel in most words of four)
 * and cost htru's 1196-DM streaming 3% beside the lane kernel (0.1349 s
 * against 0.1301 s uncleaned, one H100, stop 47); here only flagged
 * channels' blocks and clipped spectra take threads. */
template <typename T>
__global__ void __launch_bounds__(128) replace_rows_kernel(UnpackArgs u, int64_t j0)
{
    const int c = blockIdx.x, r = u.rowmap[c];
    const int64_t j = j0 + blockIdx.y, b = u.rfi.block;
    const int flagged = u.rfi.flag[j * u.nchans + c];
    if (r < 0 || (!flagged && u.rfi.nclip[j] == 0))
        return;
    /* the block's spectra k in the cleaning's arrays, within the gulp's */
    const int64_t lo = u.first - u.rfi.from, k0 = j * b > lo ? j * b : lo,
                  k1 = (j + 1) * b < lo + u.n ? (j + 1) * b : lo + u.n;
    T *row = static_cast<T *>(u.rows) + (int64_t)r * u.stride + u.col;
    for (int64_t k = k0 + threadIdx.x; k < k1; k += blockDim.x) {
        if (!flagged && !u.rfi.clip[k])
            continue;
        const int64_t sb = k + u.rfi.from;
        if constexpr (sizeof(T) == 4)
            row[k - lo] = float_sample(u, sb, c, (int)j);
        else
            row[k - lo] = (T)int_sample(u, sb, c, (int)j);
    }
}

/* Rows of T: the unpacking (unpack8_kernel where it applies), then the
 * cleaning's replacements over what it wrote. */
template <typename T>
static void launch_rows(const UnpackArgs &u, cudaStream_t st)
{
    if (sizeof(T) == 1 && u.nbits == 8 && u.nifs == 1 && u.pol == 0 && !u.tab
        && u.nchans % 4 == 0)
        unpack8_kernel<<<dim3((unsigned)((u.n + U8_SPECTRA - 1) / U8_SPECTRA),
                              (unsigned)((u.nchans + U8_CHANS - 1) / U8_CHANS)), 256, 0, st>>>(u);
    else
        unpack_kernel<T><<<dim3((unsigned)((u.n + 31) / 32), (unsigned)((u.nchans + 31) / 32)),
                           dim3(32, 8), 0, st>>>(u);
    const int64_t lo = u.first - u.rfi.from, b = u.rfi.block;
    if (!u.rfi.flag || lo + u.n <= 0)
        return;
    const int64_t j0 = (lo > 0 ? lo : 0) / b, j1 = (lo + u.n - 1) / b;
    replace_rows_kernel<T><<<dim3((unsigned)u.nchans, (unsigned)(j1 - j0 + 1)), 128, 0, st>>>(u, j0);
}

cudaError_t launch_unpack(const UnpackArgs &u, cudaStream_t st)
{
    if (u.enc.storage == ST_U8)
        launch_rows<uint8_t>(u, st);
    else if (u.enc.storage == ST_U16)
        launch_rows<uint16_t>(u, st);
    else
        launch_rows<float>(u, st);
    return cudaGetLastError();
}

/* Same arithmetic and order as the CPU's zero_dm(): double sum over rows. */
__global__ void zerodm_kernel(float *rows, int64_t stride, int nrows, int64_t col, int64_t n)
{
    int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float *x = rows + col + t;
    double mean = 0;
    for (int r = 0; r < nrows; r++)
        mean += x[(int64_t)r * stride];
    mean /= nrows;
    for (int r = 0; r < nrows; r++)
        x[(int64_t)r * stride] -= (float)mean;
}

cudaError_t launch_zerodm(float *rows, int64_t stride, int nrows, int64_t col, int64_t n,
                          cudaStream_t st)
{
    zerodm_kernel<<<(unsigned)((n + 255) / 256), 256, 0, st>>>(rows, stride, nrows, col, n);
    return cudaGetLastError();
}

/* ---- time scrunching: halving ------------------------------------------- */

/* v - bias as a float, exactly. For 8- and 16-bit codes without the
 * quarter-rate integer-to-float conversion: 0x4B000000 | v is the float
 * 2^23 + v, and subtracting 2^23 + bias (exact, below 2^24) leaves v - bias. */
__device__ __forceinline__ float code_offset(int bias)
{
    return 8388608.0f + (float)bias;
}

template <typename T>
__device__ __forceinline__ float to_float(T v, float offset)
{
    if constexpr (sizeof(T) == 4)
        return v;
    else
        return __uint_as_float(0x4B000000u | (uint32_t)v) - offset;
}

/* Integers add exactly (their biases add too); floats add as the CPU does. */
template <typename Ti, typename To>
__global__ void __launch_bounds__(256) halve_kernel(HalveArgs h)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= h.n)
        return;
    const Ti *src = static_cast<const Ti *>(h.src);
    To *dst = static_cast<To *>(h.dst);
    const float off = code_offset(h.in.bias);
    for (int r = blockIdx.y; r < h.nrows; r += gridDim.y) {
        const Ti *a = src + (int64_t)r * h.sstride + 2 * t;
        if constexpr (sizeof(To) == 4)
            dst[(int64_t)r * h.dstride + t] = to_float<Ti>(a[0], off) + to_float<Ti>(a[1], off);
        else
            dst[(int64_t)r * h.dstride + t] = (To)((uint32_t)a[0] + (uint32_t)a[1]);
    }
}

template <typename Ti>
static void launch_halve_from(const HalveArgs &h, dim3 grid, cudaStream_t st)
{
    if (h.out.storage == ST_U8)
        halve_kernel<Ti, uint8_t><<<grid, 256, 0, st>>>(h);
    else if (h.out.storage == ST_U16)
        halve_kernel<Ti, uint16_t><<<grid, 256, 0, st>>>(h);
    else
        halve_kernel<Ti, float><<<grid, 256, 0, st>>>(h);
}

cudaError_t launch_halve(const HalveArgs &h, cudaStream_t st)
{
    if (h.n <= 0)
        return cudaSuccess;
    dim3 grid((unsigned)((h.n + 255) / 256), (unsigned)(h.nrows < 65535 ? h.nrows : 65535));
    if (h.in.storage == ST_U8)
        launch_halve_from<uint8_t>(h, grid, st);
    else if (h.in.storage == ST_U16)
        launch_halve_from<uint16_t>(h, grid, st);
    else
        launch_halve_from<float>(h, grid, st);
    return cudaGetLastError();
}

/* ---- output ------------------------------------------------------------------- */

/* Output element i of an integer sum v (exact): a float, or v + obias in
 * the integer storage of sub-band intermediate series. */
__device__ __forceinline__ void store_int(const DirectArgs &a, int64_t i, int v)
{
    if (a.ostorage == ST_F32)
        static_cast<float *>(a.out)[i] = (float)v;
    else if (a.ostorage == ST_U8)
        static_cast<uint8_t *>(a.out)[i] = (uint8_t)(v + a.obias);
    else
        static_cast<uint16_t *>(a.out)[i] = (uint16_t)(v + a.obias);
}

/* A float sum; integer storage only ever receives exact integer sums. */
__device__ __forceinline__ void store_sum(const DirectArgs &a, int64_t i, float v)
{
    if (a.ostorage == ST_F32)
        static_cast<float *>(a.out)[i] = v;
    else
        store_int(a, i, (int)v);
}

/* ---- shared-memory kernels ------------------------------------------------- */

/* Stage per channel k of this pass the delay of each DM of the block
 * relative to lo, shift[dm][k]: a thread reads four channels' shifts of
 * its DM in one 16-byte load. Missing DMs reuse the last one. */
template <int BD, int DCH>
__device__ __forceinline__ void stage_shifts(const DirectArgs &a, int b, int c0, int *shift)
{
    for (int i = threadIdx.x; i < DCH * BD; i += blockDim.x) {
        int m = i / DCH, k = i % DCH, d = min(b * BD + m, a.ndm - 1), c = c0 + k;
        shift[i] = c < a.nchan ? a.delay[(int64_t)d * a.nchan + c] - a.lo[(int64_t)b * a.nchan + c]
                               : 0;
    }
}

/* The aligned 32-bit word holding the sample at p, and the bits (sh) its
 * first byte lies past that word's start: __funnelshift_r(q[j], q[j + 1], sh)
 * is word j of the samples from p on, whatever p's alignment. */
__device__ __forceinline__ const uint32_t *aligned_words(const void *p, unsigned &sh)
{
    const uintptr_t at = (uintptr_t)p;
    const uint32_t *q = reinterpret_cast<const uint32_t *>(at & ~(uintptr_t)3);
    sh = 8u * (unsigned)(at & 3);
    return q;
}

/* Samples 4g .. 4g + 3 of a 16-bit row segment starting q (aligned down) plus
 * sh bits, as two words: three aligned loads, two funnel shifts. */
__device__ __forceinline__ uint2 code_words(const uint32_t *q, int g, unsigned sh)
{
    const uint32_t *r = q + 2 * g, l1 = __ldg(r + 1);
    return make_uint2(__funnelshift_r(__ldg(r), l1, sh), __funnelshift_r(l1, __ldg(r + 2), sh));
}

/* Four lane words from group g of a row segment starting q (aligned down)
 * plus sh bits: word j = sample 4g + j | sample 4g + j + TWW << 16. The
 * samples are read as aligned 32-bit words and funnel-shifted into place
 * (a warp's load brings 128 bytes, not 32 single samples), then interleaved
 * with byte permutes. */
template <typename T, int TWW>
__device__ __forceinline__ uint4 lane_words(const uint32_t *q, int g, unsigned sh)
{
    constexpr int HI = TWW * (int)sizeof(T) / 4;   /* the high lane, in words */
    if constexpr (sizeof(T) == 1) {
        const uint32_t lo = __funnelshift_r(__ldg(q + g), __ldg(q + g + 1), sh);
        const uint32_t hi = __funnelshift_r(__ldg(q + g + HI), __ldg(q + g + HI + 1), sh);
        const uint32_t t01 = __byte_perm(lo, hi, 0x5410), t23 = __byte_perm(lo, hi, 0x7632);
        return make_uint4(t01 & 0x00FF00FFu, (t01 >> 8) & 0x00FF00FFu, t23 & 0x00FF00FFu,
                          (t23 >> 8) & 0x00FF00FFu);
    } else {
        const uint2 lo = code_words(q, g, sh), hi = code_words(q + HI, g, sh);
        return make_uint4(__byte_perm(lo.x, hi.x, 0x5410), __byte_perm(lo.x, hi.x, 0x7632),
                          __byte_perm(lo.y, hi.y, 0x5410), __byte_perm(lo.y, hi.y, 0x7632));
    }
}

/* Byte-lane words of 8-bit rows (configurations with q = 4): word j of
 * group g = sample 4g + j + qq TWW in byte qq, quarters qq = 0..3 of the
 * tile. Each quarter's four samples come in one aligned word, funnel-shifted
 * into place; six byte permutes transpose the 4 x 4 bytes. A 32-bit shared
 * load then brings four samples where the 16-bit lanes bring two: the
 * kernel is bound by shared-memory loads, not by the two integer operations
 * that split a word into 16-bit lanes. */
template <int TWW>
__device__ __forceinline__ uint4 byte_words(const uint32_t *q, int g, unsigned sh)
{
    constexpr int QW = TWW / 4;     /* a quarter of the tile, in words of 8-bit samples */
    uint32_t w[4];
#pragma unroll
    for (int qq = 0; qq < 4; qq++)
        w[qq] = __funnelshift_r(__ldg(q + g + qq * QW), __ldg(q + g + qq * QW + 1), sh);
    const uint32_t t0 = __byte_perm(w[0], w[1], 0x5140), t1 = __byte_perm(w[0], w[1], 0x7362);
    const uint32_t u0 = __byte_perm(w[2], w[3], 0x5140), u1 = __byte_perm(w[2], w[3], 0x7362);
    return make_uint4(__byte_perm(t0, u0, 0x5410), __byte_perm(t0, u0, 0x7632),
                      __byte_perm(t1, u1, 0x5410), __byte_perm(t1, u1, 0x7632));
}

/* Lane tile: word w of channel k = sample w | sample w + TWW << 16 (Q = 2)
 * or the byte lanes of byte_words (Q = 4), from lo on; a warp per channel,
 * four words (16 bytes) per thread and store. Reads up to WORD_TAIL samples
 * past the tile's last (direct.cuh). */
template <typename T, int NW, int TWW, int DCH, int Q>
__device__ __forceinline__ void stage_lanes(const DirectArgs &a, int b, int c0, int64_t t0,
                                            uint32_t *tile)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, groups = a.rowlen >> 2;
    for (int k = warp; k < DCH; k += NW) {
        const int c = c0 + k;
        uint4 *dst = reinterpret_cast<uint4 *>(tile + k * a.rowlen);
        if (c >= a.nchan) {
            for (int g = lane; g < groups; g += 32)
                dst[g] = make_uint4(0, 0, 0, 0);
            continue;
        }
        unsigned sh;
        const uint32_t *q = aligned_words(static_cast<const T *>(a.rows) + (int64_t)c * a.stride
                                          + t0 + a.lo[(int64_t)b * a.nchan + c], sh);
#pragma unroll 1
        for (int g = lane; g < groups; g += 32)
            dst[g] = Q == 4 ? byte_words<TWW>(q, g, sh) : lane_words<T, TWW>(q, g, sh);
    }
}

/* Lane sums of two words (two channels): their 16-bit lanes (Q = 2) or, of
 * byte lanes, quarters 0 and 2 into l[0] and 1 and 3 into l[1]. The two
 * channels are summed before the running sum: ptxas fused word-by-word sums
 * into IADD3s too, but this order gives a shorter loop (config 18: 2648
 * instructions against 2672) and 2.5% on workload A's ranges (H100). */
template <int Q>
__device__ __forceinline__ void add_lanes(uint32_t (&l)[Q / 2], uint32_t x, uint32_t y)
{
    if constexpr (Q == 4) {
        l[0] += (x & 0x00FF00FFu) + (y & 0x00FF00FFu);
        l[1] += __byte_perm(x, 0, 0x4341) + __byte_perm(y, 0, 0x4341);
    } else {
        l[0] += x + y;
    }
}

/* The 16-bit lanes are spilled into 32-bit partial sums, one a tile sample
 * (quarter qq of word w: sums[w].qq), that live in shared memory, each
 * thread's own: in registers they took two thirds of a thread's 64 (config
 * 5) and capped the blocks per SM. Q: samples a tile word holds (2 or 4). */
template <typename T, int NW, int DPW, int NREG, int DCH, int MINB, int Q>
__global__ void __launch_bounds__(NW * 32, FIT_BLOCKS(NW * 32, MINB)) lane_kernel(DirectArgs a)
{
    static_assert(Q == 2 || (Q == 4 && sizeof(T) == 1), "byte lanes hold 8-bit samples only");
    constexpr int BD = NW * DPW, TWW = 32 * NREG;
    typedef typename std::conditional<Q == 4, uint4, uint2>::type Sums;
    extern __shared__ uint32_t smem[];
    uint32_t *tile = smem;
    int *shift = reinterpret_cast<int *>(smem + DCH * a.rowlen);
    const int b = a.blocks[blockIdx.x], warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    Sums *sums = reinterpret_cast<Sums *>(shift + BD * DCH) + warp * DPW * TWW + lane;
    const int64_t t0 = (int64_t)blockIdx.y * Q * TWW;
    uint32_t acc[DPW][NREG][Q / 2];
#pragma unroll
    for (int dd = 0; dd < DPW; dd++)
#pragma unroll
        for (int i = 0; i < NREG; i++) {
#pragma unroll
            for (int h = 0; h < Q / 2; h++)
                acc[dd][i][h] = 0;
            sums[dd * TWW + i * 32] = Sums{};
        }

    int passes = 0;
    for (int c0 = 0; c0 < a.nchan; c0 += DCH) {
        __syncthreads();
        stage_shifts<BD, DCH>(a, b, c0, shift);
        stage_lanes<T, NW, TWW, DCH, Q>(a, b, c0, t0, tile);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < DCH; k += 4) {
            int sk[DPW][4];
#pragma unroll
            for (int dd = 0; dd < DPW; dd++) {
                const int4 s = *reinterpret_cast<const int4 *>(shift + (warp * DPW + dd) * DCH + k);
                sk[dd][0] = s.x, sk[dd][1] = s.y, sk[dd][2] = s.z, sk[dd][3] = s.w;
            }
#pragma unroll
            for (int j = 0; j < 4; j += 2) {
                const uint32_t *row = tile + (k + j) * a.rowlen + lane;
#pragma unroll
                for (int dd = 0; dd < DPW; dd++) {
                    const uint32_t *p = row + sk[dd][j], *q = row + a.rowlen + sk[dd][j + 1];
#pragma unroll
                    for (int i = 0; i < NREG; i++)
                        add_lanes<Q>(acc[dd][i], p[i * 32], q[i * 32]);
                }
            }
        }
        if (++passes == a.spill_stages || c0 + DCH >= a.nchan) {
            passes = 0;
#pragma unroll
            for (int dd = 0; dd < DPW; dd++)
#pragma unroll
                for (int i = 0; i < NREG; i++) {
                    Sums v = sums[dd * TWW + i * 32];
                    const uint32_t *l = acc[dd][i];
                    if constexpr (Q == 4) {
                        v.x += l[0] & 0xffffu, v.y += l[1] & 0xffffu;
                        v.z += l[0] >> 16, v.w += l[1] >> 16;
                    } else {
                        v.x += l[0] & 0xffffu, v.y += l[0] >> 16;
                    }
                    sums[dd * TWW + i * 32] = v;
#pragma unroll
                    for (int h = 0; h < Q / 2; h++)
                        acc[dd][i][h] = 0;
                }
        }
    }
#pragma unroll
    for (int dd = 0; dd < DPW; dd++) {
        int d = b * BD + warp * DPW + dd;
        if (d >= a.ndm)
            continue;
        const int64_t o = (int64_t)d * a.ostride;
#pragma unroll
        for (int i = 0; i < NREG; i++) {
            const Sums v = sums[dd * TWW + i * 32];
            const int64_t t = t0 + lane + i * 32;
            uint32_t q[4] = { v.x, v.y, 0, 0 };
            if constexpr (Q == 4)
                q[2] = v.z, q[3] = v.w;
#pragma unroll
            for (int qq = 0; qq < Q; qq++)
                if (t + qq * TWW < a.nout)
                    store_int(a, o + t + qq * TWW, (int)q[qq] - a.bias_total);
        }
    }
}

/* A 16-bit code (the high or low half of w) as a float, as to_float does. */
__device__ __forceinline__ float half_code(uint32_t w, unsigned sel, float offset)
{
    return __uint_as_float(__byte_perm(w, 0x4B000000u, sel)) - offset;
}

/* Float tile: word w of channel k = sample w from lo on, a warp per channel
 * and four samples (16 bytes) per thread and store; 16-bit codes are read as
 * aligned 32-bit words, funnel-shifted into place. Reads up to WORD_TAIL
 * samples past the tile's last (direct.cuh). */
template <typename T, int NW, int DCH>
__device__ __forceinline__ void stage_floats(const DirectArgs &a, int b, int c0, int64_t t0,
                                             float *tile)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, groups = a.rowlen >> 2;
    const float off = code_offset(a.bias);
    for (int k = warp; k < DCH; k += NW) {
        const int c = c0 + k;
        if (c >= a.nchan)
            continue;           /* never read: the pass stops at nchan */
        float4 *dst = reinterpret_cast<float4 *>(tile + k * a.rowlen);
        const T *src = static_cast<const T *>(a.rows) + (int64_t)c * a.stride + t0
                     + a.lo[(int64_t)b * a.nchan + c];
        if constexpr (sizeof(T) == 2) {
            unsigned sh;
            const uint32_t *q = aligned_words(src, sh);
            for (int g = lane; g < groups; g += 32) {
                const uint2 w = code_words(q, g, sh);
                dst[g] = make_float4(half_code(w.x, 0x7610, off), half_code(w.x, 0x7632, off),
                                     half_code(w.y, 0x7610, off), half_code(w.y, 0x7632, off));
            }
        } else {
            for (int g = lane; g < groups; g += 32) {
                const T *r = src + 4 * g;
                dst[g] = make_float4(to_float<T>(__ldg(r), off), to_float<T>(__ldg(r + 1), off),
                                     to_float<T>(__ldg(r + 2), off), to_float<T>(__ldg(r + 3), off));
            }
        }
    }
}

/* Half h of tile word x as a float sample: the word itself (Q = 1) or the
 * h-th 16-bit code of a pair (Q = 2), as to_float converts it. */
template <int Q>
__device__ __forceinline__ float tile_sample(uint32_t x, int h, float off)
{
    if constexpr (Q == 1)
        return __uint_as_float(x);
    else
        return half_code(x, h ? 0x7632 : 0x7610, off);
}

/* One group of four channels (k..k+3), in the CPU's association. With code
 * pairs (Q = 2) the group's sum (a + b) + (x + y) is an integer below 2^24,
 * the same in any order: the codes are added as integers, both halves of the
 * words at once (the high codes' sum taken out of the words' sum), and each
 * half's sum becomes a float by the 2^23 trick (goff: 2^23 plus four
 * biases), the float the CPU adds to acc. */
template <int DCH, int DPW, int NREG, int Q>
__device__ __forceinline__ void add_group(float (&acc)[DPW][NREG][Q], const uint32_t *tile,
                                          int rowlen, const int *shift, int k, int warp, int lane,
                                          float goff)
{
#pragma unroll
    for (int dd = 0; dd < DPW; dd++) {
        const int4 s = *reinterpret_cast<const int4 *>(shift + (warp * DPW + dd) * DCH + k);
        const uint32_t *p0 = tile + (k + 0) * rowlen + s.x + lane;
        const uint32_t *p1 = tile + (k + 1) * rowlen + s.y + lane;
        const uint32_t *p2 = tile + (k + 2) * rowlen + s.z + lane;
        const uint32_t *p3 = tile + (k + 3) * rowlen + s.w + lane;
#pragma unroll
        for (int i = 0; i < NREG; i++) {
            const uint32_t x0 = p0[i * 32], x1 = p1[i * 32], x2 = p2[i * 32], x3 = p3[i * 32];
            if constexpr (Q == 2) {
                const uint32_t hi = (x0 >> 16) + (x1 >> 16) + (x2 >> 16) + (x3 >> 16);
                const uint32_t lo = x0 + x1 + x2 + x3 + 0x4B000000u - (hi << 16);
                acc[dd][i][0] += __uint_as_float(lo) - goff;
                acc[dd][i][1] += __uint_as_float(hi + 0x4B000000u) - goff;
            } else {
                acc[dd][i][0] += (__uint_as_float(x0) + __uint_as_float(x1))
                               + (__uint_as_float(x2) + __uint_as_float(x3));
            }
        }
    }
}

/* Q = 1: the tile holds floats (16-bit codes converted while staging). Q = 2
 * (16-bit rows): it holds code pairs, word w = code w | code w + TW << 16, as
 * the lane kernel's: one shared load brings two samples, and a group of four
 * channels costs integer adds and one float conversion a half (add_group).
 * The sums are the same: the same floats added to acc in the same order. */
template <typename T, int NW, int DPW, int NREG, int DCH, int MINB, int Q>
__global__ void __launch_bounds__(NW * 32, FIT_BLOCKS(NW * 32, MINB)) float_kernel(DirectArgs a)
{
    static_assert(DCH % 4 == 0, "passes must keep the CPU's groups of four channels");
    static_assert(Q == 1 || (Q == 2 && sizeof(T) == 2), "code pairs hold 16-bit rows only");
    constexpr int BD = NW * DPW, TW = 32 * NREG;
    extern __shared__ uint32_t fsmem[];
    uint32_t *tile = fsmem;
    int *shift = reinterpret_cast<int *>(fsmem + DCH * a.rowlen);
    const int b = a.blocks[blockIdx.x], warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t t0 = (int64_t)blockIdx.y * Q * TW;
    const float off = code_offset(a.bias), goff = code_offset(4 * a.bias);
    float acc[DPW][NREG][Q];
#pragma unroll
    for (int dd = 0; dd < DPW; dd++)
#pragma unroll
        for (int i = 0; i < NREG; i++)
#pragma unroll
            for (int h = 0; h < Q; h++)
                acc[dd][i][h] = 0.0f;

    for (int c0 = 0; c0 < a.nchan; c0 += DCH) {
        __syncthreads();
        stage_shifts<BD, DCH>(a, b, c0, shift);
        if constexpr (Q == 2)
            stage_lanes<T, NW, TW, DCH, 2>(a, b, c0, t0, tile);
        else
            stage_floats<T, NW, DCH>(a, b, c0, t0, reinterpret_cast<float *>(tile));
        __syncthreads();
        const int nk = min(DCH, a.nchan - c0);
        if (nk == DCH) {
#pragma unroll
            for (int k = 0; k < DCH; k += 4)
                add_group<DCH, DPW, NREG, Q>(acc, tile, a.rowlen, shift, k, warp, lane, goff);
        } else {
            int k = 0;
            for (; k + 4 <= nk; k += 4)
                add_group<DCH, DPW, NREG, Q>(acc, tile, a.rowlen, shift, k, warp, lane, goff);
            for (; k < nk; k++)
#pragma unroll
                for (int dd = 0; dd < DPW; dd++) {
                    const uint32_t *p = tile + k * a.rowlen + shift[(warp * DPW + dd) * DCH + k]
                                      + lane;
#pragma unroll
                    for (int i = 0; i < NREG; i++)
#pragma unroll
                        for (int h = 0; h < Q; h++)
                            acc[dd][i][h] += tile_sample<Q>(p[i * 32], h, off);
                }
        }
    }
#pragma unroll
    for (int dd = 0; dd < DPW; dd++) {
        int d = b * BD + warp * DPW + dd;
        if (d >= a.ndm)
            continue;
        float *out = static_cast<float *>(a.out) + (int64_t)d * a.ostride + t0 + lane;
#pragma unroll
        for (int i = 0; i < NREG; i++)
#pragma unroll
            for (int h = 0; h < Q; h++)
                if (t0 + lane + i * 32 + h * TW < a.nout)
                    out[i * 32 + h * TW] = acc[dd][i][h];
    }
}

/* ---- fallback: no staging, input through L1/L2 -------------------------- */

/* Fallback shapes: warps per block and samples per thread (a tile of 32 x
 * NREG outputs). Shape 0 is the default; the others are for the tuner, whose
 * variants past the shared-memory configurations send every DM block to the
 * fallback in one of these shapes (few DMs, or spans too wide to stage). */
#define FALLBACK_SHAPES(X) X(0, 8, 8) X(1, 4, 8) X(2, 8, 4) X(3, 8, 16) X(4, 4, 16) X(5, 16, 4) \
    X(6, 2, 16) X(7, 4, 32)
#define AS_SHAPE(i, nw, nreg) { nw, nreg },
static const struct { int nw, nreg; } fb_shapes[] = { FALLBACK_SHAPES(AS_SHAPE) };

int fallback_count()
{
    return (int)(sizeof fb_shapes / sizeof fb_shapes[0]);
}

int fallback_tile(int shape)
{
    return 32 * fb_shapes[shape].nreg;
}

/* Float sums in the CPU's order of additions (float rows, and integer rows
 * whose sums could pass 2^24). */
template <typename T, int FB_WARPS, int FB_NREG>
__global__ void __launch_bounds__(FB_WARPS * 32) fallback_kernel(DirectArgs a, int bd)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t t0 = (int64_t)blockIdx.y * 32 * FB_NREG + lane;
    const T *rows = static_cast<const T *>(a.rows);
    const float off = code_offset(a.bias);
    for (int m = warp; m < bd; m += FB_WARPS) {
        const int d = a.blocks[blockIdx.x] * bd + m;
        if (d >= a.ndm)
            break;
        const int32_t *delay = a.delay + (int64_t)d * a.nchan;
        float acc[FB_NREG];
#pragma unroll
        for (int i = 0; i < FB_NREG; i++)
            acc[i] = 0.0f;
        int c = 0;
        for (; c + 4 <= a.nchan; c += 4) {
            const T *p0 = rows + (int64_t)c * a.stride + t0 + delay[c];
            const T *p1 = rows + (int64_t)(c + 1) * a.stride + t0 + delay[c + 1];
            const T *p2 = rows + (int64_t)(c + 2) * a.stride + t0 + delay[c + 2];
            const T *p3 = rows + (int64_t)(c + 3) * a.stride + t0 + delay[c + 3];
#pragma unroll
            for (int i = 0; i < FB_NREG; i++)
                acc[i] += (to_float<T>(__ldg(p0 + i * 32), off) + to_float<T>(__ldg(p1 + i * 32), off))
                        + (to_float<T>(__ldg(p2 + i * 32), off) + to_float<T>(__ldg(p3 + i * 32), off));
        }
        for (; c < a.nchan; c++) {
            const T *p = rows + (int64_t)c * a.stride + t0 + delay[c];
#pragma unroll
            for (int i = 0; i < FB_NREG; i++)
                acc[i] += to_float<T>(__ldg(p + i * 32), off);
        }
        const int64_t o = (int64_t)d * a.ostride + t0;
#pragma unroll
        for (int i = 0; i < FB_NREG; i++)
            if (t0 + i * 32 < a.nout)
                store_sum(a, o + i * 32, acc[i]);
    }
}

/* Exact integer sums of integer rows (exact_ints). Each thread adds 32-bit
 * words of consecutive samples (4 of 8 bits, 2 of 16), consecutive lanes
 * consecutive words: a row segment starts anywhere, so the words are read
 * aligned and funnel-shifted into place, and a warp's load brings 128 bytes
 * where one of single samples brings 32 (the cached kernel is bound by load
 * requests). 8-bit samples add in 16-bit lanes (even and odd samples apart),
 * spilled into 32-bit sums before 65535 could be passed. */
template <typename T, int FB_WARPS, int FB_NREG>
__global__ void __launch_bounds__(FB_WARPS * 32) fallback_words_kernel(DirectArgs a, int bd)
{
    constexpr int SPW = 4 / (int)sizeof(T), NW = FB_NREG / SPW;
    static_assert(NW >= 1 && NW * SPW == FB_NREG, "a shape's samples fill whole words");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int64_t t0 = (int64_t)blockIdx.y * 32 * FB_NREG;
    const T *rows = static_cast<const T *>(a.rows);
    const int spill = sizeof(T) == 1 ? max(65535 / max(a.maxval, 1), 1) : 1;
    for (int m = warp; m < bd; m += FB_WARPS) {
        const int d = a.blocks[blockIdx.x] * bd + m;
        if (d >= a.ndm)
            break;
        const int32_t *delay = a.delay + (int64_t)d * a.nchan;
        uint32_t sum[NW][SPW], lanes[NW][2];
#pragma unroll
        for (int i = 0; i < NW; i++) {
#pragma unroll
            for (int k = 0; k < SPW; k++)
                sum[i][k] = 0;
            lanes[i][0] = lanes[i][1] = 0;
        }
        int pending = 0;
        /* Four channels' loads in flight per thread, as the scalar kernel's groups. */
#pragma unroll 4
        for (int c = 0; c < a.nchan; c++) {
            const uintptr_t at = (uintptr_t)(rows + (int64_t)c * a.stride + t0 + delay[c]);
            const uint32_t *q = reinterpret_cast<const uint32_t *>(at & ~(uintptr_t)3);
            const unsigned sh = 8u * (unsigned)(at & 3);
#pragma unroll
            for (int i = 0; i < NW; i++) {
                const int j = lane + 32 * i;
                const uint32_t x = __funnelshift_r(__ldg(q + j), __ldg(q + j + 1), sh);
                if constexpr (sizeof(T) == 1) {
                    lanes[i][0] += x & 0x00FF00FFu;
                    lanes[i][1] += (x >> 8) & 0x00FF00FFu;
                } else {
                    sum[i][0] += x & 0xFFFFu;
                    sum[i][1] += x >> 16;
                }
            }
            if constexpr (sizeof(T) == 1) {
                if (++pending == spill || c + 1 == a.nchan) {
                    pending = 0;
#pragma unroll
                    for (int i = 0; i < NW; i++) {
                        sum[i][0] += lanes[i][0] & 0xFFFFu;
                        sum[i][2] += lanes[i][0] >> 16;
                        sum[i][1] += lanes[i][1] & 0xFFFFu;
                        sum[i][3] += lanes[i][1] >> 16;
                        lanes[i][0] = lanes[i][1] = 0;
                    }
                }
            }
        }
        const int64_t o = (int64_t)d * a.ostride;
#pragma unroll
        for (int i = 0; i < NW; i++) {
            const int64_t t = t0 + SPW * (lane + 32 * i);
#pragma unroll
            for (int k = 0; k < SPW; k++)
                if (t + k < a.nout)
                    store_int(a, o + t + k, (int)sum[i][k] - a.bias_total);
        }
    }
}

/* Integer rows add as integers where every partial sum of the CPU's floats
 * is an exact integer (below 2^24), so both give the same bits. */
static bool exact_ints(Storage s, const DirectArgs &a)
{
    int64_t most = a.maxval - a.bias > a.bias ? a.maxval - a.bias : a.bias;
    return s != ST_F32 && (int64_t)a.nchan * most <= (1 << 24);
}

typedef void (*fallback_fn)(DirectArgs, int);

/* Instances by shape and by rows and sums: u8 and u16 rows with integer
 * (word) or float sums, float rows. */
#define FB_FNS(i, nw, nreg) { fallback_words_kernel<uint8_t, nw, nreg>, \
    fallback_kernel<uint8_t, nw, nreg>, fallback_words_kernel<uint16_t, nw, nreg>, \
    fallback_kernel<uint16_t, nw, nreg>, fallback_kernel<float, nw, nreg> },
static const fallback_fn fb_fns[][5] = { FALLBACK_SHAPES(FB_FNS) };

cudaError_t launch_fallback(Storage s, int shape, int bd, const DirectArgs &a, cudaStream_t st)
{
    if (a.nblocks == 0)
        return cudaSuccess;
    const int tile = fallback_tile(shape);
    dim3 grid((unsigned)a.nblocks, (unsigned)((a.nout + tile - 1) / tile));
    const int which = s == ST_F32 ? 4 : 2 * (s == ST_U16) + !exact_ints(s, a);
    fb_fns[shape][which]<<<grid, fb_shapes[shape].nw * 32, 0, st>>>(a, bd);
    return cudaGetLastError();
}

/* ---- run-time selection of the compiled instances ------------------------- */

typedef void (*kernel_fn)(DirectArgs);

#define LANE_U8(i, nw, dpw, nreg, dch, minb, q) lane_kernel<uint8_t, nw, dpw, nreg, dch, minb, q>,
#define LANE_U16(i, nw, dpw, nreg, dch, minb, q) lane_kernel<uint16_t, nw, dpw, nreg, dch, minb, 2>,
#define FLOAT_U16(i, nw, dpw, nreg, dch, minb, q) \
    float_kernel<uint16_t, nw, dpw, nreg, dch, minb, q>,
#define FLOAT_F32(i, nw, dpw, nreg, dch, minb, q) float_kernel<float, nw, dpw, nreg, dch, minb, 1>,
static const kernel_fn lane_fns[2][sizeof lane_cfgs / sizeof lane_cfgs[0]] = {
    { LANE_CONFIGS(LANE_U8) }, { LANE_CONFIGS(LANE_U16) } };
static const kernel_fn float_fns[2][sizeof float_cfgs / sizeof float_cfgs[0]] = {
    { FLOAT_CONFIGS(FLOAT_U16) }, { FLOAT_CONFIGS(FLOAT_F32) } };

/* The lane kernel reads u8/u16 rows, the float kernel u16/float rows. */
static kernel_fn kernel_for(KernelKind k, int config, Storage s)
{
    if (k == K_LANES)
        return lane_fns[s == ST_U8 ? 0 : 1][config];
    return float_fns[s == ST_U16 ? 0 : 1][config];
}

/* Levels prepare their instances one by one: an instance keeps the largest
 * shared memory any of them launches it with. */
cudaError_t prepare_kernels(KernelKind k, int config, Storage s, size_t smem)
{
    kernel_fn fn = kernel_for(k, config, s);
    cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, (const void *)fn);
    if (e != cudaSuccess || (size_t)fa.maxDynamicSharedSizeBytes >= smem)
        return e;
    return cudaFuncSetAttribute((const void *)fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)smem);
}

cudaError_t launch_shared(KernelKind k, int config, Storage s, const DirectArgs &a, size_t smem,
                          cudaStream_t st)
{
    if (a.nblocks == 0)
        return cudaSuccess;
    ConfigInfo c = config_info(k, config, s);
    dim3 grid((unsigned)a.nblocks, (unsigned)((a.nout + c.tile_samples - 1) / c.tile_samples));
    void *args[] = { const_cast<DirectArgs *>(&a) };
    return cudaLaunchKernel((const void *)kernel_for(k, config, s), grid, dim3(c.threads), args,
                            smem, st);
}

}  // namespace ddgpu
