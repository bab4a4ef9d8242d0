/*
 * direct_plugin.cu - the device plan of one direct-dedispersion problem
 * (DirectPlan, engine.cuh): the kernel variant (from the plan's
 * ddtk_gpu_config or the device default), the DM blocks split between the
 * shared-memory kernel and the cached fallback (a block whose delays spread
 * too far for a shared tile), the device delay tables and the launches; and
 * the GPU half of the direct plug-in, one such plan per level. The sub-band
 * plug-in (subband_plugin.cu) builds its two stages from the same plans.
 */
#include "check.cuh"
#include "engine.cuh"

#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define SPAN_TILES 4                      /* shared tile: span <= 4 tile widths */

/* Smallest delay of each DM block per channel, and each block's spread. */
static int block_tables(DirectPlan *P, const int32_t *delay, int32_t **lo, int32_t **spans)
{
    const int bd = P->ci.dms_per_block, nc = P->nchan;
    P->nblocks = (P->ndm + bd - 1) / bd;
    *lo = (int32_t *)ddtk_malloc((size_t)P->nblocks * nc * sizeof **lo, "GPU delay table");
    *spans = (int32_t *)ddtk_calloc((size_t)P->nblocks, sizeof **spans, "GPU delay table");
    if (!*lo || !*spans)
        return DDTK_ESYS;
    for (int b = 0; b < P->nblocks; b++) {
        int d0 = b * bd, d1 = d0 + bd < P->ndm ? d0 + bd : P->ndm;
        for (int c = 0; c < nc; c++) {
            int32_t mn = INT32_MAX, mx = INT32_MIN;
            for (int d = d0; d < d1; d++) {
                int32_t v = delay[(size_t)d * nc + c];
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
static void partition_blocks(DirectPlan *P, size_t limit, const int32_t *spans, int *order)
{
    int max_span = P->cached ? -1 : SPAN_TILES * P->ci.tile_words;
    while (max_span > 0 && shared_bytes(P->enc.kind, P->ci, P->ci.tile_words + max_span) > limit)
        max_span -= 32;
    int n = 0, span = 0;
    for (int b = 0; b < P->nblocks; b++)
        if (spans[b] <= max_span) {
            order[n++] = b;
            span = spans[b] > span ? spans[b] : span;
        }
    P->nshared = n;
    for (int b = 0; b < P->nblocks; b++)
        if (spans[b] > max_span)
            order[n++] = b;
    P->span = (int)ddtk_round_up(span, 4);
    P->smem = shared_bytes(P->enc.kind, P->ci, P->ci.tile_words + P->span);
}

/* How far past the last output the launches read: a shared block stages
 * rowlen words from lo on (the lane kernel a further tile_words for each
 * lane past the first) for a tile that starts before nout; a fallback block reads its delays
 * from a tile of the fallback's outputs that starts before nout. Both read
 * aligned words up to WORD_TAIL samples further. */
static void find_reach(DirectPlan *P, const int32_t *delay, const int32_t *lo, const int *order)
{
    const int nc = P->nchan, bd = P->ci.dms_per_block;
    const int64_t staged = P->ci.tile_words + P->span + WORD_TAIL
                         + (int64_t)(P->ci.lanes - 1) * P->ci.tile_words;
    const int tail = fallback_tile(P->fallback) + WORD_TAIL;
    P->reach = 0;
    for (int i = 0; i < P->nblocks; i++) {
        const int b = order[i], d1 = (b + 1) * bd < P->ndm ? (b + 1) * bd : P->ndm;
        for (int c = 0; c < nc; c++) {
            int64_t r = 0;
            if (i < P->nshared)
                r = lo[(size_t)b * nc + c] + staged;
            else
                for (int d = b * bd; d < d1; d++)
                    if (delay[(size_t)d * nc + c] + (int64_t)tail > r)
                        r = delay[(size_t)d * nc + c] + (int64_t)tail;
            P->reach = r > P->reach ? r : P->reach;
        }
    }
}

/* Variants 0 .. config_count - 1 are the shared-memory configurations; the
 * ones after them send every DM block to the cached kernel in each of its
 * shapes (no staging: with a few DMs, staging a tile costs more than the
 * reads it saves). */
static int choose_config(DirectPlan *P, const ddtk_gpu_config *cfg, int major)
{
    const int n = config_count(P->enc.kind), last = n + fallback_count() - 1;
    int want = P->enc.kind == K_LANES ? cfg->lane_variant : cfg->float_variant;
    if (want > last)
        return ddtk_fail(DDTK_EUSAGE, "GPU %s kernel variant %d: expected 0..%d",
                         P->enc.kind == K_LANES ? "lane" : "float", want, last);
    P->cached = want >= n;
    P->fallback = P->cached ? want - n : 0;
    P->config = want >= 0 && !P->cached ? want : default_config(P->enc.kind, P->enc.storage, major);
    P->ci = config_info(P->enc.kind, P->config, P->enc.storage);
    return DDTK_OK;
}

static int upload_tables(DirectPlan *P, const int32_t *delay, size_t smem_limit)
{
    int32_t *lo = NULL, *spans = NULL;
    int *order = NULL;
    int rc = block_tables(P, delay, &lo, &spans);
    if (!rc && !(order = (int *)ddtk_malloc((size_t)P->nblocks * sizeof *order, "GPU DM blocks")))
        rc = DDTK_ESYS;
    if (!rc) {
        partition_blocks(P, smem_limit, spans, order);
        find_reach(P, delay, lo, order);
    }
    size_t nc = (size_t)P->nchan;
    if (!rc)
        rc = ddtk_cuda_upload((void **)&P->d_delay, delay, (size_t)P->ndm * nc * 4,
                              "uploading a delay table");
    if (!rc)
        rc = ddtk_cuda_upload((void **)&P->d_lo, lo, (size_t)P->nblocks * nc * 4,
                              "uploading a delay table");
    if (!rc)
        rc = ddtk_cuda_upload((void **)&P->d_blocks, order, (size_t)P->nblocks * sizeof *order,
                              "uploading a delay table");
    free(lo);
    free(spans);
    free(order);
    return rc;
}

int direct_plan_init(DirectPlan *P, const int32_t *delay, int nchan, int ndm, Encoding enc,
                     const ddtk_gpu_config *cfg, const cudaDeviceProp &prop)
{
    memset(P, 0, sizeof *P);
    P->enc = enc;
    P->nchan = nchan;
    P->ndm = ndm;
    int rc = choose_config(P, cfg, prop.major);
    if (!rc)
        rc = upload_tables(P, delay, prop.sharedMemPerBlockOptin);
    if (!rc && P->nshared)
        DDTK_CUDA(prepare_kernels(P->enc.kind, P->config, P->enc.storage, P->smem),
                  "setting the kernel's shared memory");
    return rc;
}

void direct_plan_free(DirectPlan *P)
{
    cudaFree(P->d_delay);
    cudaFree(P->d_lo);
    cudaFree(P->d_blocks);
    memset(P, 0, sizeof *P);
}

int direct_plan_run(const DirectPlan *P, const void *rows, int64_t stride, int64_t nout,
                    void *out, int64_t ostride, Storage ostorage, int obias, cudaStream_t st)
{
    /* The float kernel writes floats only (direct.cuh). */
    if (ostorage != ST_F32 && P->enc.kind != K_LANES)
        return ddtk_fail(DDTK_ESYS, "GPU float kernel: integer output requested (a bug)");
    DirectArgs a;
    memset(&a, 0, sizeof a);
    a.rows = rows;
    a.stride = stride;
    a.nchan = P->nchan;
    a.ndm = P->ndm;
    a.delay = P->d_delay;
    a.lo = P->d_lo;
    a.rowlen = P->ci.tile_words + P->span;
    a.bias = P->enc.bias;
    a.maxval = P->enc.maxval;
    a.bias_total = P->enc.bias * P->nchan;
    int per_pass = P->enc.maxval > 0 ? 65535 / P->enc.maxval / P->ci.chans_per_stage : 1;
    a.spill_stages = per_pass > 0 ? per_pass : 1;
    a.out = out;
    a.ostride = ostride;
    a.nout = nout;
    a.ostorage = ostorage;
    a.obias = obias;
    a.blocks = P->d_blocks;
    a.nblocks = P->nshared;
    DDTK_CUDA(launch_shared(P->enc.kind, P->config, P->enc.storage, a, P->smem, st),
              "launching the shared-memory kernel");
    a.blocks = P->d_blocks + P->nshared;
    a.nblocks = P->nblocks - P->nshared;
    DDTK_CUDA(launch_fallback(P->enc.storage, P->fallback, P->ci.dms_per_block, a, st),
              "launching the fallback kernel");
    return DDTK_OK;
}

const char *direct_plan_kernel(const DirectPlan *P)
{
    if (P->enc.kind == K_FLOAT)
        return "float";
    return P->ci.lanes == 4 ? "byte-lane" : "16-bit-lane";
}

void direct_plan_describe(const DirectPlan *P, char *buf, size_t n)
{
    snprintf(buf, n, "%s kernel config %d (%d DMs x %d samples per block, %d channels per "
             "pass), %d of %d DM blocks in shared memory (span %d), %d by the cached fallback "
             "(shape %d, %d-sample tiles)", direct_plan_kernel(P), P->config, P->ci.dms_per_block,
             P->ci.tile_samples, P->ci.chans_per_stage, P->nshared, P->nblocks, P->span,
             P->nblocks - P->nshared, P->fallback, fallback_tile(P->fallback));
}

/* ---- the direct plug-in: one plan per level ------------------------------------ */

static void destroy(void *state)
{
    DirectPlan *P = (DirectPlan *)state;
    if (!P)
        return;
    direct_plan_free(P);
    free(P);
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    DirectPlan *P = (DirectPlan *)ddtk_calloc(1, sizeof *P, "GPU level");
    if (!P)
        return DDTK_ESYS;
    *state = P;
    const ddtk_delays *dl = (const ddtk_delays *)lv->state;   /* the level plan (direct.c) */
    int rc = direct_plan_init(P, dl->delay, dl->nchan, dl->ndm, enc, &p->d.gpu_config, prop);
    /* The last tiles may run one tile past the last output. */
    *slack = 2 * (int64_t)P->ci.tile_samples + 256;
    if (P->reach - lv->overlap > *slack)
        *slack = P->reach - lv->overlap;
    return rc;
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    return direct_plan_run((const DirectPlan *)state, rows, stride, nout, out, ostride, ST_F32,
                           0, st);
}

static void report(const void *state, char *buf, size_t n)
{
    direct_plan_describe((const DirectPlan *)state, buf, n);
}

}  // namespace ddgpu

extern "C" const ddtk_gpu_algo ddtk_gpu_direct = { ddgpu::create, ddgpu::gulp, ddgpu::report,
                                                   ddgpu::destroy, NULL, NULL };

extern "C" int ddtk_gpu_variants(int lane)
{
    return ddgpu::config_count(lane ? ddgpu::K_LANES : ddgpu::K_FLOAT) + ddgpu::fallback_count();
}

extern "C" int ddtk_gpu_fallback_shapes(void)
{
    return ddgpu::fallback_count();
}
