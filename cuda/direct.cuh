/*
 * direct.cuh - the interface between the GPU streaming layer (stream.cu), the
 * direct plug-in (direct_plugin.cu) and the kernels (direct_gpu.cu): how raw
 * samples are stored on the device, which kernel and tuning configuration a
 * level uses, and the launchers.
 */
#ifndef DDTK_CUDA_DIRECT_CUH
#define DDTK_CUDA_DIRECT_CUH

#include <cuda_runtime.h>
#include <stdint.h>

namespace ddgpu {

/* Element type of the device channel rows. */
enum Storage { ST_U8 = 0, ST_U16 = 1, ST_F32 = 2 };

/* The shared-memory kernels: packed 16-bit lanes (integers of 8 bits or less)
 * and float accumulation (16-bit and float input, --zerodm). */
enum KernelKind { K_LANES = 0, K_FLOAT = 1 };

/* How raw samples become device rows: integers get `bias` added so that they
 * are non-negative (signed data), and never exceed maxval. */
struct Encoding {
    Storage storage;
    KernelKind kind;
    int bias, maxval;
};

Encoding choose_encoding(int nbits, int sgn, int polsum, int zerodm);
/* Rows of a time-scrunch level, each sample the sum of `factor` samples of
 * base rows: integers grow (and their bias with them) into wider storage, and
 * leave the lane kernel for the float kernel once a pass of the widest lane
 * configuration could overflow a 16-bit lane; past 16 bits they become floats. */
Encoding scrunched_encoding(Encoding base, int factor);
int storage_bytes(Storage s);

/* A tuning configuration: DM trials per block, samples per block (time tile)
 * and channels staged per shared-memory pass. */
struct ConfigInfo {
    int dms_per_block, tile_samples, tile_words, chans_per_stage, threads;
    int lanes;                  /* samples a tile word holds: 1 (floats), 2 or 4 */
};

int config_count(KernelKind k);
ConfigInfo config_info(KernelKind k, int index, Storage s);
/* Default configuration for rows of storage s on a device of compute capability major. */
int default_config(KernelKind k, Storage s, int major);

/* Everything one gulp's kernels need. rows hold nchan live channels of
 * `stride` elements, descending frequency; delay is [ndm][nchan]; lo is the
 * smallest delay of each DM block per channel, [nblocks][nchan]. out holds
 * ndm rows of ostride elements of ostorage: floats (the sums), or, for the
 * integer intermediate series of sub-band stage 1 (lane and fallback kernels
 * only), each sum plus obias. */
struct DirectArgs {
    const void *rows;
    int64_t stride;
    int nchan, ndm;
    const int32_t *delay, *lo;
    const int *blocks;          /* DM blocks this launch covers */
    int nblocks;
    int rowlen;                 /* shared row length in words: tile_words + span */
    int bias_total;             /* bias times nchan, removed from integer sums */
    int spill_stages;           /* lane kernel: stages between 16-bit lane spills */
    int bias;                   /* per-sample bias (float and fallback kernels) */
    int maxval;                 /* largest integer code (0: float rows) */
    void *out;
    int64_t ostride, nout;
    Storage ostorage;
    int obias;
};

/* Shared-memory bytes a launch of configuration c (of kernel k) with this row length needs. */
size_t shared_bytes(KernelKind k, const ConfigInfo &c, int rowlen);
/* Allow an instance at least smem bytes of shared memory on the current device (opt-in). */
cudaError_t prepare_kernels(KernelKind k, int config, Storage s, size_t smem);
cudaError_t launch_shared(KernelKind k, int config, Storage s, const DirectArgs &a,
                          size_t smem, cudaStream_t st);
/* The cache-based fallback in one of its shapes (0: the default). */
int fallback_count();
/* Output samples of one fallback block row (its time tile). */
int fallback_tile(int shape);
/* Samples read past a segment's last by the aligned 32-bit loads of the
 * shared kernels' staging and the fallback's words. */
#define WORD_TAIL 4
cudaError_t launch_fallback(Storage s, int shape, int dms_per_block, const DirectArgs &a,
                            cudaStream_t st);

/* The GPU's RFI cleaning (rfi_gpu.cu) as the unpacking replaces it in its
 * rows: spectrum sb of the raw buffer, from `from` on (the observation's
 * at + sb - from), is in block j = (sb - from) / block at t = (sb - from) %
 * block of the cleaning's arrays; its channels flagged there, or all where
 * the spectrum was clipped, take the levels rfi_put would have written.
 * flag NULL: nothing to replace. */
struct UnpackRfi {
    const uint8_t *flag, *clip;   /* [block][chan]; [block][t] */
    const float *level;           /* [block][if][chan] */
    const int *nclip;             /* [block] spectra clipped */
    int64_t at, from;
    int block;
};

struct UnpackArgs {
    const uint8_t *raw;
    int64_t first, n, col, stride;
    int nchans, nifs, nbits, pol, sgn;
    const int *rowmap;
    void *rows;
    Encoding enc;
    /* Scaled PSRFITS (tab non-NULL): raw holds one byte per value (nifs IFs;
     * byte - 128 when sgn), spectrum j's value is byte * mul + add with
     * tab + seg[j] * 2 * nifs * nchans its multipliers, then its addends. */
    const int32_t *seg;
    const float *tab;
    UnpackRfi rfi;
};
/* Unpack n raw spectra, from raw's spectrum `first` on, into rows at column
 * col (rowmap: file channel -> row or -1), then write the cleaning's
 * replacements (rfi) over them. */
cudaError_t launch_unpack(const UnpackArgs &u, cudaStream_t st);
/* Integer element e of SIGPROC raw data (1/2/4-bit packed from the low
 * bits, 8/16-bit signed or not): the unpacking's and the RFI cleaner's. */
__device__ __forceinline__ int int_element(const uint8_t *raw, int64_t e, int nbits, int sgn)
{
    if (nbits <= 4) {
        int64_t bit = e * nbits;
        return (raw[bit >> 3] >> (bit & 7)) & ((1 << nbits) - 1);
    }
    if (nbits == 8)
        return sgn ? (int)(int8_t)raw[e] : (int)raw[e];
    uint16_t v = (uint16_t)(raw[2 * e] | (raw[2 * e + 1] << 8));
    return sgn ? (int)(int16_t)v : (int)v;
}

/* One step of the time-scrunch cascade: dst[r][t] = src[r][2t] + src[r][2t+1]
 * for t < n over nrows rows, in dst's encoding (the CPU's float sum). */
struct HalveArgs {
    const void *src;
    void *dst;
    int64_t sstride, dstride, n;
    int nrows;
    Encoding in, out;
};
cudaError_t launch_halve(const HalveArgs &h, cudaStream_t st);
/* --zerodm on float rows: subtract each spectrum's mean over the live rows. */
cudaError_t launch_zerodm(float *rows, int64_t stride, int nrows, int64_t col, int64_t n,
                          cudaStream_t st);

}  // namespace ddgpu

#endif
