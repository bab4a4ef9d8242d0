/*
 * direct.c - CPU direct dedispersion kernel (Novotny et al. 2023, Algorithm 2).
 *
 * The output is tiled over (DM block, time tile); OpenMP threads take tiles.
 * Within a tile, channels are visited in cache-sized blocks so the input rows
 * of a block are reused by every DM of the tile while they sit in L2, and the
 * innermost loop adds four time-contiguous channel rows into the output row,
 * which the compiler vectorises (built with -O3; see `make vecreport`).
 *
 * The order of additions for an output sample depends only on the channel
 * index, never on the tiling or the gulp, so outputs are bit-identical for
 * any --gulp or thread count.
 */
#include "internal.h"

/* Defaults (ddtk_cpu_config): measured on 2 cores (htru, 1196 DMs), 64 DMs per
 * block reuse each cached input row often enough that two threads scale 1.9x
 * instead of 1.2x with 16. */
#define TIME_TILE 1024          /* output samples per tile: 4 KiB per DM row */
#define DM_BLOCK 64             /* DMs sharing a channel block while it is cached */
#define CHAN_BLOCK 32           /* channels per block, a multiple of 4 */

static int or_default(int v, int dflt)
{
    return v > 0 ? v : dflt;
}

void ddtk_cpu_config_resolve(ddtk_cpu_config *c)
{
    c->time_tile = or_default(c->time_tile, TIME_TILE);
    c->dm_block = or_default(c->dm_block, DM_BLOCK);
    c->chan_block = (or_default(c->chan_block, CHAN_BLOCK) + 3) / 4 * 4;
}

static void add_channels(float *restrict o, const float *in, size_t istride,
                         const int32_t *delay, int c0, int c1, int64_t t0, int64_t tn)
{
    int c = c0;
    for (; c + 4 <= c1; c += 4) {
        const float *restrict a = in + (size_t)c * istride + t0 + delay[c];
        const float *restrict b = in + (size_t)(c + 1) * istride + t0 + delay[c + 1];
        const float *restrict x = in + (size_t)(c + 2) * istride + t0 + delay[c + 2];
        const float *restrict y = in + (size_t)(c + 3) * istride + t0 + delay[c + 3];
        for (int64_t t = 0; t < tn; t++)
            o[t] += (a[t] + b[t]) + (x[t] + y[t]);
    }
    for (; c < c1; c++) {
        const float *restrict a = in + (size_t)c * istride + t0 + delay[c];
        for (int64_t t = 0; t < tn; t++)
            o[t] += a[t];
    }
}

void ddtk_direct_cpu(const float *in, size_t istride, int nchan, int64_t nout,
                     const int32_t *delay, int ndm, float *out, size_t ostride,
                     const ddtk_cpu_config *cfg)
{
    ddtk_cpu_config c = *cfg;
    ddtk_cpu_config_resolve(&c);
    const int time_tile = c.time_tile, dm_block = c.dm_block, chan_block = c.chan_block;
    const int64_t ntiles = (nout + time_tile - 1) / time_tile;
    const int nblocks = (ndm + dm_block - 1) / dm_block;

#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(ddtk_threads())
    for (int blk = 0; blk < nblocks; blk++) {
        for (int64_t tile = 0; tile < ntiles; tile++) {
            const int d0 = blk * dm_block, d1 = d0 + dm_block < ndm ? d0 + dm_block : ndm;
            const int64_t t0 = tile * time_tile;
            const int64_t tn = t0 + time_tile < nout ? time_tile : nout - t0;
            for (int d = d0; d < d1; d++)
                for (int64_t t = 0; t < tn; t++)
                    out[(size_t)d * ostride + t0 + t] = 0.0f;
            for (int c0 = 0; c0 < nchan; c0 += chan_block) {
                const int c1 = c0 + chan_block < nchan ? c0 + chan_block : nchan;
                for (int d = d0; d < d1; d++)
                    add_channels(out + (size_t)d * ostride + t0, in, istride,
                                 delay + (size_t)d * nchan, c0, c1, t0, tn);
            }
        }
    }
}
