/*
 * subband_plugin.cu - the GPU half of the sub-band algorithm (src/algos/subband.c
 * has the descriptor and the CPU half; the level plan it reads, a
 * ddtk_subband_level, is src/algos/subband.h). Both stages are direct problems run by the
 * direct plug-in's device plans (DirectPlan, direct_plugin.cu): the same
 * shared-memory and fallback kernels, block tables and configurations.
 *
 * Stage 1, per sub-band b: the sub-band's channels at every nominal DM
 * (delays d1, below the sub-band's top channel) into the intermediate series
 * (g, b) at buf + (g * nsub + b) * S, i.e. out = buf + b * S with a DM
 * stride of nsub * S. Stage 2, per group g: the group's nsub series at its
 * trial DMs (delays d2) into the level's outputs.
 *
 * The same sums as the CPU's: integer input (8 bits or less: the lane
 * kernel) sums exactly, so stage 1 stores its sums as integers (biased to
 * non-negative, in the encoding scrunched_encoding gives sums of the widest
 * sub-band's channels) and stage 2 runs the lane kernel, or the float kernel
 * on 16-bit rows, on them; exact below 2^24 as the CPU's float sums are.
 * Other input (16-bit, float, --zerodm) keeps float series: the float kernel
 * and the fallback add in the CPU kernel's order (groups of four channels
 * from each launch's first row, (a+b)+(x+y), then the leftovers one by one),
 * and each stage's launch starts where the CPU's ddtk_direct_cpu call does
 * (the sub-band's first channel; the group's first series), so every sum is
 * the CPU's bit for bit.
 */
#include "check.cuh"
#include "engine.cuh"
#include "subband.h"

#include <stdlib.h>
#include <string.h>

namespace ddgpu {

/* The intermediate series of one CUDA stream (the streaming layer overlaps
 * gulps on two streams), and the events that time its stages. */
struct Slot {
    cudaStream_t st;
    void *buf;
    int64_t stride;                       /* S, elements of a series */
    cudaEvent_t ev[3];                    /* before stage 1, between, after stage 2 */
    int timed;                            /* events recorded, not yet counted */
};

struct SubbandLevel {
    const ddtk_subband_level *t;          /* the level plan */
    Encoding enc, mid;                    /* input rows; intermediate series */
    DirectPlan *s1;                       /* [nsub] */
    DirectPlan *s2;                       /* [ngroups] */
    int64_t *more1;                       /* [nsub]: stage-1 outputs past nout (largest width2) */
    int64_t reach2;                       /* stage 2 reads a series below nout + reach2 */
    Slot slot[2];
    double time[2];                       /* seconds of stage 1 and 2 not yet reported */
};

/* Integer sums of up to `widest` channels as integers (lane input), else floats. */
static Encoding intermediate(Encoding enc, int widest)
{
    if (enc.kind == K_LANES)
        return scrunched_encoding(enc, widest);
    Encoding f = { ST_F32, K_FLOAT, 0, 0 };
    return f;
}

static int64_t series_stride(const SubbandLevel *L, int64_t ostride)
{
    return ddtk_round_up(ostride + L->reach2, 64);
}

static void destroy(void *state)
{
    SubbandLevel *L = (SubbandLevel *)state;
    if (!L)
        return;
    for (int b = 0; L->s1 && b < L->t->nsub; b++)
        direct_plan_free(&L->s1[b]);
    for (int g = 0; L->s2 && g < L->t->ngroups; g++)
        direct_plan_free(&L->s2[g]);
    for (int i = 0; i < 2; i++) {
        cudaFree(L->slot[i].buf);
        for (int e = 0; e < 3; e++)
            if (L->slot[i].ev[e])
                cudaEventDestroy(L->slot[i].ev[e]);
    }
    free(L->s1);
    free(L->s2);
    free(L->more1);
    free(L);
}

/* Stage 1: sub-band b's columns of d1 as a [ngroups][nchan] table. The
 * rows hold nout + overlap + slack columns: *need is what stage 1 reads
 * past nout. */
static int plan_stage1(SubbandLevel *L, const ddtk_plan *p, const cudaDeviceProp &prop,
                       int64_t *need)
{
    const ddtk_subband_level *t = L->t;
    int32_t *tab = (int32_t *)ddtk_malloc((size_t)t->ngroups * t->nlive * sizeof *tab,
                                          "stage-1 delays");
    if (!tab)
        return DDTK_ESYS;
    int rc = DDTK_OK;
    *need = 0;
    for (int b = 0; !rc && b < t->nsub; b++) {
        const int c0 = t->sub_first[b], nc = t->sub_first[b + 1] - c0;
        L->more1[b] = 0;
        for (int g = 0; g < t->ngroups; g++) {
            memcpy(tab + (size_t)g * nc, t->d1 + (size_t)g * t->nlive + c0, (size_t)nc * sizeof *tab);
            if (t->width2[g * t->nsub + b] > L->more1[b])
                L->more1[b] = t->width2[g * t->nsub + b];
        }
        rc = direct_plan_init(&L->s1[b], tab, nc, t->ngroups, L->enc, &p->d.gpu_config, prop);
        if (!rc && L->more1[b] + L->s1[b].reach > *need)
            *need = L->more1[b] + L->s1[b].reach;
    }
    free(tab);
    return rc;
}

/* Stage 2: group g's rows of d2 ([n][nsub], contiguous) over its series. */
static int plan_stage2(SubbandLevel *L, const ddtk_plan *p, const cudaDeviceProp &prop)
{
    const ddtk_subband_level *t = L->t;
    int rc = DDTK_OK;
    /* Stage 1 writes series (g, b) up to nout + more1[b] <= nout + max2. */
    L->reach2 = t->max2;
    for (int g = 0; !rc && g < t->ngroups; g++) {
        const int i0 = t->group_first[g], n = t->group_first[g + 1] - i0;
        rc = direct_plan_init(&L->s2[g], t->d2 + (size_t)i0 * t->nsub, t->nsub, n, L->mid,
                              &p->d.gpu_config, prop);
        if (!rc && L->s2[g].reach > L->reach2)
            L->reach2 = L->s2[g].reach;
    }
    return rc;
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    SubbandLevel *L = (SubbandLevel *)ddtk_calloc(1, sizeof *L, "GPU sub-band level");
    if (!L)
        return DDTK_ESYS;
    *state = L;
    L->t = (const ddtk_subband_level *)lv->state;
    const ddtk_subband_level *t = L->t;
    int widest = 0;
    for (int b = 0; b < t->nsub; b++)
        if (t->sub_first[b + 1] - t->sub_first[b] > widest)
            widest = t->sub_first[b + 1] - t->sub_first[b];
    L->enc = enc;
    L->mid = intermediate(enc, widest);
    L->s1 = (DirectPlan *)ddtk_calloc((size_t)t->nsub, sizeof *L->s1, "GPU sub-band plans");
    L->s2 = (DirectPlan *)ddtk_calloc((size_t)t->ngroups, sizeof *L->s2, "GPU sub-band plans");
    L->more1 = (int64_t *)ddtk_calloc((size_t)t->nsub, sizeof *L->more1, "GPU sub-band plans");
    if (!L->s1 || !L->s2 || !L->more1)
        return DDTK_ESYS;
    int64_t need = 0;
    int rc = plan_stage1(L, p, prop, &need);
    if (!rc)
        rc = plan_stage2(L, p, prop);
    *slack = need > lv->overlap ? need - lv->overlap : 0;
    return rc;
}

/* One stream's intermediate series: ngroups x nsub series of S elements. */
static int64_t dev_bytes(const void *state, int64_t most)
{
    const SubbandLevel *L = (const SubbandLevel *)state;
    return (int64_t)L->t->ngroups * L->t->nsub * series_stride(L, ddtk_round_up(most, 64))
         * storage_bytes(L->mid.storage);
}

/* Stream st's slot, its series allocated for outputs ostride apart (the
 * streaming layer's pitch, fixed for the plan) and cleared once: stage 2
 * reads past what stage 1 writes (outputs dropped), and the lane kernel
 * needs every value it reads within the encoding's range. */
static int reserve(SubbandLevel *L, cudaStream_t st, int64_t ostride, Slot **out)
{
    Slot *sl = NULL;
    for (int i = 0; i < 2 && !sl; i++)
        if (L->slot[i].buf && L->slot[i].st == st)
            sl = &L->slot[i];
    for (int i = 0; i < 2 && !sl; i++)
        if (!L->slot[i].buf)
            sl = &L->slot[i];
    if (!sl)
        return ddtk_fail(DDTK_ESYS, "GPU sub-band: more than two CUDA streams");
    *out = sl;
    const int64_t need = series_stride(L, ostride);
    if (sl->buf && need <= sl->stride)
        return DDTK_OK;
    if (sl->buf)
        DDTK_CUDA(cudaStreamSynchronize(sl->st), "waiting for a gulp");
    cudaFree(sl->buf);
    sl->buf = NULL;
    for (int e = 0; e < 3; e++)
        if (!sl->ev[e])
            DDTK_CUDA(cudaEventCreate(&sl->ev[e]), "creating an event");
    size_t bytes = (size_t)L->t->ngroups * L->t->nsub * need * storage_bytes(L->mid.storage);
    DDTK_CUDA(cudaMalloc(&sl->buf, bytes), "allocating the sub-band series");
    /* On st: a plain cudaMemset runs on the legacy stream, unordered with st. */
    DDTK_CUDA(cudaMemsetAsync(sl->buf, 0, bytes, st), "clearing the sub-band series");
    sl->st = st;
    sl->stride = need;
    return DDTK_OK;
}

/* Add the stage times of sl's last gulp (long finished when its stream
 * comes back: the streaming layer waits for a gulp before reusing its set). */
static void count_times(SubbandLevel *L, Slot *sl)
{
    if (!sl->timed || cudaEventSynchronize(sl->ev[2]) != cudaSuccess)
        return;
    L->time[0] += event_seconds(sl->ev[0], sl->ev[1]);
    L->time[1] += event_seconds(sl->ev[1], sl->ev[2]);
    sl->timed = 0;
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    SubbandLevel *L = (SubbandLevel *)state;
    const ddtk_subband_level *t = L->t;
    Slot *sl = NULL;
    int rc = reserve(L, st, ostride, &sl);
    if (rc)
        return rc;
    count_times(L, sl);
    const size_t es = (size_t)storage_bytes(L->enc.storage), ms = (size_t)storage_bytes(L->mid.storage);
    const int64_t S = sl->stride;
    char *buf = (char *)sl->buf;
    DDTK_CUDA(cudaEventRecord(sl->ev[0], st), "recording an event");
    for (int b = 0; !rc && b < t->nsub; b++)
        rc = direct_plan_run(&L->s1[b], (const char *)rows + (size_t)t->sub_first[b] * stride * es,
                             stride, nout + L->more1[b], buf + (size_t)b * S * ms,
                             (int64_t)t->nsub * S, L->mid.storage, L->mid.bias, st);
    DDTK_CUDA(cudaEventRecord(sl->ev[1], st), "recording an event");
    for (int g = 0; !rc && g < t->ngroups; g++)
        rc = direct_plan_run(&L->s2[g], buf + (size_t)g * t->nsub * S * ms, S, nout,
                             out + (size_t)t->group_first[g] * ostride, ostride, ST_F32, 0, st);
    DDTK_CUDA(cudaEventRecord(sl->ev[2], st), "recording an event");
    sl->timed = 1;
    return rc;
}

/* Seconds of stage 1 and 2 since the last call, added to t[0] and t[1]. */
static void stage_times(void *state, double t[2])
{
    SubbandLevel *L = (SubbandLevel *)state;
    for (int i = 0; i < 2; i++)
        if (L->slot[i].buf)
            count_times(L, &L->slot[i]);
    t[0] += L->time[0];
    t[1] += L->time[1];
    L->time[0] = L->time[1] = 0;
}

static const char *storage_name(Storage s)
{
    return s == ST_U8 ? "8-bit" : s == ST_U16 ? "16-bit" : "float";
}

static void report(const void *state, char *buf, size_t n)
{
    const SubbandLevel *L = (const SubbandLevel *)state;
    char one[256], two[256];
    int sh1 = 0, nb1 = 0, sh2 = 0, nb2 = 0;
    for (int b = 0; b < L->t->nsub; b++)
        sh1 += L->s1[b].nshared, nb1 += L->s1[b].nblocks;
    for (int g = 0; g < L->t->ngroups; g++)
        sh2 += L->s2[g].nshared, nb2 += L->s2[g].nblocks;
    snprintf(one, sizeof one, "%s kernel config %d", direct_plan_kernel(&L->s1[0]),
             L->s1[0].config);
    snprintf(two, sizeof two, "%s kernel config %d", direct_plan_kernel(&L->s2[0]),
             L->s2[0].config);
    snprintf(buf, n, "sub-band: stage 1 %d sub-bands x %d nominal DMs on the %s (%d of %d DM "
             "blocks in shared memory), %s series, stage 2 %d groups on the %s (%d of %d)",
             L->t->nsub, L->t->ngroups, one, sh1, nb1, storage_name(L->mid.storage), L->t->ngroups,
             two, sh2, nb2);
}

}  // namespace ddgpu

extern "C" const ddtk_gpu_algo ddtk_gpu_subband = { ddgpu::create, ddgpu::gulp, ddgpu::report,
                                                    ddgpu::destroy, ddgpu::dev_bytes,
                                                    ddgpu::stage_times };
