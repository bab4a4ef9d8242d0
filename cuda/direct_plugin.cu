/*
 * direct_plugin.cu - the GPU half of the direct plug-in: per level, the
 * kernel variant (from the plan's ddtk_gpu_config or the device default),
 * the DM blocks split between the shared-memory kernel and the cached
 * fallback (a block whose delays spread too far for a shared tile), the
 * device delay tables, and the launches of one gulp.
 */
#include "check.cuh"
#include "engine.cuh"

#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define SPAN_TILES 4                      /* shared tile: span <= 4 tile widths */

struct DirectLevel {
    const ddtk_delays *dl;
    Encoding enc;
    int config, nblocks, nshared, span;
    ConfigInfo ci;
    size_t smem;
    int32_t *d_delay, *d_lo;
    int *d_blocks;
};

/* Smallest delay of each DM block per channel, and each block's spread. */
static int block_tables(DirectLevel *L, int32_t **lo, int32_t **spans)
{
    const int bd = L->ci.dms_per_block, nc = L->dl->nchan;
    L->nblocks = (L->dl->ndm + bd - 1) / bd;
    *lo = (int32_t *)ddtk_malloc((size_t)L->nblocks * nc * sizeof **lo, "GPU delay table");
    *spans = (int32_t *)ddtk_calloc((size_t)L->nblocks, sizeof **spans, "GPU delay table");
    if (!*lo || !*spans)
        return DDTK_ESYS;
    for (int b = 0; b < L->nblocks; b++) {
        int d0 = b * bd, d1 = d0 + bd < L->dl->ndm ? d0 + bd : L->dl->ndm;
        for (int c = 0; c < nc; c++) {
            int32_t mn = INT32_MAX, mx = INT32_MIN;
            for (int d = d0; d < d1; d++) {
                int32_t v = L->dl->delay[(size_t)d * nc + c];
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
            (*lo)[(size_t)b * nc + c] = mn;
            if (mx - mn > (*spans)[b])
                (*spans)[b] = mx - mn;
        }
    }
    return DDTK_OK;
}

/* Shared-kernel blocks first, then the fallback's; the span sets the tile. */
static void partition_blocks(DirectLevel *L, size_t limit, const int32_t *spans, int *order)
{
    int max_span = SPAN_TILES * L->ci.tile_words;
    while (max_span > 0 && shared_bytes(L->enc.kind, L->config, L->ci.tile_words + max_span) > limit)
        max_span -= 32;
    int n = 0, span = 0;
    for (int b = 0; b < L->nblocks; b++)
        if (spans[b] <= max_span) {
            order[n++] = b;
            span = spans[b] > span ? spans[b] : span;
        }
    L->nshared = n;
    for (int b = 0; b < L->nblocks; b++)
        if (spans[b] > max_span)
            order[n++] = b;
    L->span = (int)ddtk_round_up(span, 4);
    L->smem = shared_bytes(L->enc.kind, L->config, L->ci.tile_words + L->span);
}

static int choose_config(DirectLevel *L, const ddtk_gpu_config *cfg, int major)
{
    int want = L->enc.kind == K_LANES ? cfg->lane_variant : cfg->float_variant;
    L->config = want >= 0 ? want : default_config(L->enc.kind, major);
    if (L->config >= config_count(L->enc.kind))
        return ddtk_fail(DDTK_EUSAGE, "GPU %s kernel variant %d: expected 0..%d",
                         L->enc.kind == K_LANES ? "lane" : "float", L->config,
                         config_count(L->enc.kind) - 1);
    L->ci = config_info(L->enc.kind, L->config);
    return DDTK_OK;
}

static int upload(void **dst, const void *src, size_t bytes)
{
    DDTK_CUDA(cudaMalloc(dst, bytes), "allocating a delay table");
    DDTK_CUDA(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice), "uploading a delay table");
    return DDTK_OK;
}

static int upload_level(DirectLevel *L, size_t smem_limit)
{
    int32_t *lo = NULL, *spans = NULL;
    int *order = NULL;
    int rc = block_tables(L, &lo, &spans);
    if (!rc && !(order = (int *)ddtk_malloc((size_t)L->nblocks * sizeof *order, "GPU DM blocks")))
        rc = DDTK_ESYS;
    if (!rc)
        partition_blocks(L, smem_limit, spans, order);
    size_t nc = (size_t)L->dl->nchan;
    if (!rc)
        rc = upload((void **)&L->d_delay, L->dl->delay, (size_t)L->dl->ndm * nc * 4);
    if (!rc)
        rc = upload((void **)&L->d_lo, lo, (size_t)L->nblocks * nc * 4);
    if (!rc)
        rc = upload((void **)&L->d_blocks, order, (size_t)L->nblocks * sizeof *order);
    free(lo);
    free(spans);
    free(order);
    return rc;
}

static void destroy(void *state)
{
    DirectLevel *L = (DirectLevel *)state;
    if (!L)
        return;
    cudaFree(L->d_delay);
    cudaFree(L->d_lo);
    cudaFree(L->d_blocks);
    free(L);
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    DirectLevel *L = (DirectLevel *)ddtk_calloc(1, sizeof *L, "GPU level");
    if (!L)
        return DDTK_ESYS;
    *state = L;
    L->dl = ddtk_direct_delays(lv);
    L->enc = enc;
    int rc = choose_config(L, &p->d.gpu_config, prop.major);
    if (!rc)
        rc = upload_level(L, prop.sharedMemPerBlockOptin);
    if (!rc && L->nshared)
        DDTK_CUDA(prepare_kernels(L->enc.kind, L->config, L->enc.storage, L->smem),
                  "setting the kernel's shared memory");
    /* The last tiles may run one tile past the last output. */
    *slack = 2 * (int64_t)L->ci.tile_samples + 256;
    return rc;
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    const DirectLevel *L = (const DirectLevel *)state;
    DirectArgs a;
    memset(&a, 0, sizeof a);
    a.rows = rows;
    a.stride = stride;
    a.nchan = L->dl->nchan;
    a.ndm = L->dl->ndm;
    a.delay = L->d_delay;
    a.lo = L->d_lo;
    a.rowlen = L->ci.tile_words + L->span;
    a.bias = L->enc.bias;
    a.bias_total = L->enc.bias * L->dl->nchan;
    int per_pass = L->enc.maxval > 0 ? 65535 / L->enc.maxval / L->ci.chans_per_stage : 1;
    a.spill_stages = per_pass > 0 ? per_pass : 1;
    a.out = out;
    a.ostride = ostride;
    a.nout = nout;
    a.blocks = L->d_blocks;
    a.nblocks = L->nshared;
    DDTK_CUDA(launch_shared(L->enc.kind, L->config, L->enc.storage, a, L->smem, st),
              "launching the shared-memory kernel");
    a.blocks = L->d_blocks + L->nshared;
    a.nblocks = L->nblocks - L->nshared;
    DDTK_CUDA(launch_fallback(L->enc.storage, L->ci.dms_per_block, a, st),
              "launching the fallback kernel");
    return DDTK_OK;
}

static void report(const void *state, char *buf, size_t n)
{
    const DirectLevel *L = (const DirectLevel *)state;
    snprintf(buf, n, "%s kernel config %d (%d DMs x %d samples per block, %d channels per "
             "pass), %d of %d DM blocks in shared memory (span %d), %d by the cached fallback",
             L->enc.kind == K_LANES ? "16-bit-lane" : "float", L->config, L->ci.dms_per_block,
             L->ci.tile_samples, L->ci.chans_per_stage, L->nshared, L->nblocks, L->span,
             L->nblocks - L->nshared);
}

const GpuAlgo direct_gpu = { DDTK_ALGO_DIRECT, create, gulp, report, destroy, NULL };

}  // namespace ddgpu

extern "C" int ddtk_gpu_variants(int lane)
{
    return ddgpu::config_count(lane ? ddgpu::K_LANES : ddgpu::K_FLOAT);
}
