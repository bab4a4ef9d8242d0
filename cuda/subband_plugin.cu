/*
 * subband_plugin.cu - the GPU half of the sub-band plug-in (src/subband.c has
 * the CPU half and the tables): per gulp, stage 1 runs the direct fallback
 * kernel (cuda/direct_gpu.cu) on each sub-band's rows at its group's nominal
 * DM into a device buffer of nsub float series, and stage 2 runs the same
 * kernel on that buffer at the group's trial DMs. The fallback kernel sums
 * channels in the CPU kernel's order, so integer input gives the CPU's bytes.
 */
#include "check.cuh"
#include "engine.cuh"

#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define STAGE2_DMS 8                      /* trial DMs per block of stage 2 */
#define READ_PAST 256                     /* the fallback reads this far past nout */

struct SubbandLevel {
    ddtk_subband_layout t;
    Encoding enc;
    int32_t *d_d1, *d_d2;
    int *d_blocks;                        /* 0, 1, 2 ...: every DM block of a launch */
    /* The intermediate series of one group, one per CUDA stream: the
     * streaming layer overlaps gulps on two streams. */
    struct Slot {
        cudaStream_t st;
        float *buf;
        int64_t stride;
    } slot[2];
};

static int upload(void **dst, const void *src, size_t bytes)
{
    DDTK_CUDA(cudaMalloc(dst, bytes), "allocating a sub-band table");
    DDTK_CUDA(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice), "uploading a sub-band table");
    return DDTK_OK;
}

static void destroy(void *state)
{
    SubbandLevel *L = (SubbandLevel *)state;
    if (!L)
        return;
    cudaFree(L->d_d1);
    cudaFree(L->d_d2);
    cudaFree(L->d_blocks);
    for (int i = 0; i < 2; i++)
        cudaFree(L->slot[i].buf);
    free(L);
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    (void)p;
    (void)prop;
    SubbandLevel *L = (SubbandLevel *)ddtk_calloc(1, sizeof *L, "GPU sub-band level");
    if (!L)
        return DDTK_ESYS;
    *state = L;
    ddtk_subband_layout_of(lv, &L->t);
    L->enc = enc;
    int most = 1;
    for (int g = 0; g < L->t.ngroups; g++) {
        int n = L->t.group_first[g + 1] - L->t.group_first[g];
        most = n > most ? n : most;
    }
    int nb = (most + STAGE2_DMS - 1) / STAGE2_DMS;
    int *blocks = (int *)ddtk_malloc((size_t)nb * sizeof *blocks, "GPU DM blocks");
    if (!blocks)
        return DDTK_ESYS;
    for (int b = 0; b < nb; b++)
        blocks[b] = b;
    int rc = upload((void **)&L->d_blocks, blocks, (size_t)nb * sizeof *blocks);
    free(blocks);
    if (!rc)
        rc = upload((void **)&L->d_d1, L->t.d1, (size_t)L->t.ngroups * L->t.nlive * 4);
    if (!rc)
        rc = upload((void **)&L->d_d2, L->t.d2, (size_t)lv->ndm * L->t.nsub * 4);
    *slack = 2 * READ_PAST;
    return rc;
}

/* Stream st's intermediate series, grown to the gulp (zeroed so the
 * fallback's reads past the data see numbers). */
static int reserve(SubbandLevel *L, cudaStream_t st, int64_t nout, SubbandLevel::Slot **out)
{
    SubbandLevel::Slot *sl = L->slot[0].buf && L->slot[0].st != st ? &L->slot[1] : &L->slot[0];
    *out = sl;
    int64_t need = ddtk_round_up(nout + L->t.max2 + 2 * READ_PAST, 64);
    if (sl->buf && need <= sl->stride)
        return DDTK_OK;
    cudaFree(sl->buf);
    sl->buf = NULL;
    size_t bytes = (size_t)L->t.nsub * need * sizeof(float);
    DDTK_CUDA(cudaMalloc((void **)&sl->buf, bytes), "allocating the sub-band series");
    DDTK_CUDA(cudaMemset(sl->buf, 0, bytes), "clearing the sub-band series");
    sl->st = st;
    sl->stride = need;
    return DDTK_OK;
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    SubbandLevel *L = (SubbandLevel *)state;
    const ddtk_subband_layout *t = &L->t;
    SubbandLevel::Slot *sl;
    int rc = reserve(L, st, nout, &sl);
    if (rc)
        return rc;
    const size_t es = (size_t)storage_bytes(L->enc.storage);
    DirectArgs a;
    for (int g = 0; g < t->ngroups; g++) {
        for (int b = 0; b < t->nsub; b++) {
            const int c0 = t->sub_first[b];
            memset(&a, 0, sizeof a);
            a.rows = (const char *)rows + (size_t)c0 * stride * es;
            a.stride = stride;
            a.nchan = t->sub_first[b + 1] - c0;
            a.ndm = 1;
            a.delay = L->d_d1 + (size_t)g * t->nlive + c0;
            a.blocks = L->d_blocks;
            a.nblocks = 1;
            a.bias = L->enc.bias;
            a.out = sl->buf + (size_t)b * sl->stride;
            a.ostride = sl->stride;
            a.nout = nout + t->width2[g * t->nsub + b];
            DDTK_CUDA(launch_fallback(L->enc.storage, 1, a, st), "launching sub-band stage 1");
        }
        const int i0 = t->group_first[g], n = t->group_first[g + 1] - i0;
        memset(&a, 0, sizeof a);
        a.rows = sl->buf;
        a.stride = sl->stride;
        a.nchan = t->nsub;
        a.ndm = n;
        a.delay = L->d_d2 + (size_t)i0 * t->nsub;
        a.blocks = L->d_blocks;
        a.nblocks = (n + STAGE2_DMS - 1) / STAGE2_DMS;
        a.out = out + (size_t)i0 * ostride;
        a.ostride = ostride;
        a.nout = nout;
        DDTK_CUDA(launch_fallback(ST_F32, STAGE2_DMS, a, st), "launching sub-band stage 2");
    }
    return DDTK_OK;
}

static void report(const void *state, char *buf, size_t n)
{
    const SubbandLevel *L = (const SubbandLevel *)state;
    snprintf(buf, n, "sub-band: %d sub-bands, %d nominal DMs, stage 1 and 2 on the direct "
             "fallback kernel", L->t.nsub, L->t.ngroups);
}

const GpuAlgo subband_gpu = { DDTK_ALGO_SUBBAND, create, gulp, report, destroy, NULL };

}  // namespace ddgpu
