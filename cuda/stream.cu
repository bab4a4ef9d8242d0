/*
 * stream.cu - the GPU streaming layer: any plug-in, any source, in gulps.
 *
 * The gulps are the CPU layer's (stream_cpu.c): `step` new spectra behind
 * `keep`. Two buffer sets, each with its own CUDA stream and pinned host
 * buffers, alternate between gulps: while the GPU copies in, unpacks,
 * halves, dedisperses and copies out gulp g, the host writes the outputs of
 * gulp g-1 and reads gulp g+1. Raw bytes travel to the device and are
 * unpacked there; the `keep` overlap moves device-to-device from the other
 * set's rows. Level k's rows are level k-1's halved (time scrunching), in an
 * encoding that grows with the factor (direct.cuh); each level with DMs runs
 * its plug-in's GPU gulp. Every CUDA call is checked (check.cuh).
 */
#include "check.cuh"
#include "engine.cuh"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

using namespace ddgpu;

#define DEFAULT_STEP ((int64_t)1 << 17)
#define MAX_STEP ((int64_t)1 << 22)       /* keeps the time-tile grid within 65535 */

static const GpuAlgo *const gpu_algorithms[] = { &direct_gpu, &tree_gpu, &subband_gpu };

/* One level's device side: row encoding, the plug-in's state, pitches. */
struct gpu_level {
    Encoding enc;
    void *state;                /* NULL: no DM at this factor (its rows feed the next) */
    int64_t slack;              /* columns the kernels may read past the data */
    int64_t stride, ostride;    /* device row and output pitches (elements) */
    int64_t hpitch;             /* host output row: the most outputs one gulp gives */
};

/* One of the two alternating buffer sets, with rows and outputs per level. */
struct gulp_set {
    cudaStream_t st;
    cudaEvent_t h2d0, h2d1, k0, k1, done, unpacked;
    uint8_t *hraw, *draw;
    void *drows[DDTK_MAX_LEVELS];
    float *hout[DDTK_MAX_LEVELS], *dout[DDTK_MAX_LEVELS];
    int64_t nout[DDTK_MAX_LEVELS];
    int issued;
};

struct ddtk_gpu_stream {
    const GpuAlgo *algo;
    int dev;
    cudaDeviceProp prop;
    gpu_level lv[DDTK_MAX_LEVELS];
    int64_t step;
    int *d_rowmap;
    gulp_set set[2];
    double t_h2d, t_unpack, t_kernel, t_d2h;
};

/* ---- levels ------------------------------------------------------------------------ */

static int start_device(ddtk_gpu_stream *g, int dev)
{
    int n = 0;
    DDTK_CUDA(cudaGetDeviceCount(&n), "counting GPUs");
    if (dev >= n)
        return ddtk_fail(DDTK_ESYS, "--gpu %d: only %d GPU%s visible", dev, n, n == 1 ? "" : "s");
    g->dev = dev;
    DDTK_CUDA(cudaSetDevice(dev), "selecting the GPU");
    DDTK_CUDA(cudaGetDeviceProperties(&g->prop, dev), "reading the GPU's properties");
    return DDTK_OK;
}

static int plan_levels(ddtk_gpu_stream *g, const ddtk_plan *p)
{
    Encoding base = choose_encoding(p->fmt.nbits, p->fmt.signed_data == 1,
                                    p->pol == DDTK_POL_SUM, p->d.zerodm);
    for (int k = 0; k < p->nlevels; k++) {
        gpu_level *L = &g->lv[k];
        L->enc = scrunched_encoding(base, 1 << k);
        L->slack = 256;
        if (!p->lv[k].ndm)
            continue;
        int rc = g->algo->create(p, &p->lv[k], L->enc, g->prop, &L->state, &L->slack);
        if (rc)
            return rc;
    }
    size_t bytes = (size_t)p->ch.nchans * sizeof(int);
    DDTK_CUDA(cudaMalloc((void **)&g->d_rowmap, bytes), "allocating the channel map");
    DDTK_CUDA(cudaMemcpy(g->d_rowmap, p->ch.row, bytes, cudaMemcpyHostToDevice),
              "uploading the channel map");
    return DDTK_OK;
}

/* ---- memory ------------------------------------------------------------------------ */

/* Level k's rows: (keep + step) / 2^k spectra and the plug-in's slack. */
static int64_t row_stride(const ddtk_plan *p, const gpu_level *L, int k, int64_t step)
{
    return ddtk_round_up(((p->keep + step) >> k) + L->slack, 64);
}

/* The most outputs level k gives in one gulp (a last gulp may give more than step / 2^k). */
static int64_t max_out(const ddtk_plan *p, int k, int64_t step)
{
    int64_t last = ((p->keep + step) >> k) - p->lv[k].overlap;
    return last > step >> k ? last : step >> k;
}

typedef struct budget {
    const ddtk_gpu_stream *g;
    int64_t host_max, dev_max, host, dev;
} budget;

/* Two buffer sets of a step: host (raw and outputs) and device bytes. */
static int fits(const ddtk_plan *p, int64_t step, void *ctx)
{
    budget *b = (budget *)ctx;
    b->host = b->dev = ddtk_plan_raw_bytes(p, p->keep + step);
    for (int k = 0; k < p->nlevels; k++) {
        const gpu_level *L = &b->g->lv[k];
        b->dev += (int64_t)p->ch.nlive * row_stride(p, L, k, step) * storage_bytes(L->enc.storage);
        if (p->lv[k].ndm) {
            b->host += (int64_t)p->lv[k].ndm * max_out(p, k, step) * 4;
            b->dev += (int64_t)p->lv[k].ndm * ddtk_round_up(max_out(p, k, step), 64) * 4;
        }
    }
    return 2 * b->host <= b->host_max && 2 * b->dev <= b->dev_max;
}

static int choose_step(const ddtk_gpu_stream *g, const ddtk_plan *p, const ddtk_source *src,
                       int64_t *step)
{
    size_t free_b = 0, total_b = 0;
    DDTK_CUDA(cudaMemGetInfo(&free_b, &total_b), "reading free GPU memory");
    budget b = { g, p->d.max_mem > 0 ? p->d.max_mem : DDTK_DEFAULT_MAX_MEM,
                 (int64_t)(free_b * 0.8), 0, 0 };
    if (!ddtk_choose_step(p, src, DEFAULT_STEP, MAX_STEP, fits, &b, step))
        return ddtk_fail(DDTK_EUSAGE, "%s: a GPU gulp of %lld spectra plus the maximum delay of "
                         "%d needs %.0f MiB of host and %.0f MiB of GPU memory (--max-mem %.0f MiB, "
                         "%.0f MiB free on GPU %d)", src->name, (long long)*step, p->maxdelay,
                         2 * b.host / 1048576.0, 2 * b.dev / 1048576.0, b.host_max / 1048576.0,
                         free_b / 1048576.0, g->dev);
    *step = ddtk_round_up(*step, p->align);
    return DDTK_OK;
}

static void set_pitches(ddtk_gpu_stream *g, const ddtk_plan *p)
{
    for (int k = 0; k < p->nlevels; k++) {
        gpu_level *L = &g->lv[k];
        L->stride = row_stride(p, L, k, g->step);
        if (p->lv[k].ndm) {
            L->hpitch = max_out(p, k, g->step);
            L->ostride = ddtk_round_up(L->hpitch, 64);
        }
    }
}

static int allocate_set(const ddtk_gpu_stream *g, const ddtk_plan *p, gulp_set *s)
{
    size_t raw = (size_t)ddtk_plan_raw_bytes(p, p->keep + g->step);
    DDTK_CUDA(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking), "creating a stream");
    cudaEvent_t *ev[] = { &s->h2d0, &s->h2d1, &s->k0, &s->k1, &s->done, &s->unpacked };
    for (int i = 0; i < 6; i++)
        DDTK_CUDA(cudaEventCreate(ev[i]), "creating an event");
    DDTK_CUDA(cudaHostAlloc((void **)&s->hraw, raw, cudaHostAllocDefault), "pinning input");
    DDTK_CUDA(cudaMalloc((void **)&s->draw, raw), "allocating input");
    for (int k = 0; k < p->nlevels; k++) {
        const gpu_level *L = &g->lv[k];
        size_t rows = (size_t)p->ch.nlive * L->stride * storage_bytes(L->enc.storage);
        DDTK_CUDA(cudaMalloc(&s->drows[k], rows), "allocating rows");
        /* Columns past the data are read by the last tiles (their outputs are dropped). */
        DDTK_CUDA(cudaMemset(s->drows[k], 0, rows), "clearing rows");
        if (!p->lv[k].ndm)
            continue;
        size_t ndm = (size_t)p->lv[k].ndm;
        DDTK_CUDA(cudaHostAlloc((void **)&s->hout[k], ndm * L->hpitch * sizeof(float),
                                cudaHostAllocDefault), "pinning outputs");
        DDTK_CUDA(cudaMalloc((void **)&s->dout[k], ndm * L->ostride * sizeof(float)),
                  "allocating outputs");
    }
    return DDTK_OK;
}

static void free_set(gulp_set *s)
{
    if (s->st) {
        cudaStreamSynchronize(s->st);
        cudaStreamDestroy(s->st);
    }
    cudaEvent_t ev[] = { s->h2d0, s->h2d1, s->k0, s->k1, s->done, s->unpacked };
    for (int i = 0; i < 6; i++)
        if (ev[i])
            cudaEventDestroy(ev[i]);
    cudaFreeHost(s->hraw);
    cudaFree(s->draw);
    for (int k = 0; k < DDTK_MAX_LEVELS; k++) {
        cudaFree(s->drows[k]);
        cudaFreeHost(s->hout[k]);
        cudaFree(s->dout[k]);
    }
}

extern "C" void ddtk_gpu_stream_free(ddtk_gpu_stream *g)
{
    if (!g)
        return;
    for (int i = 0; i < 2; i++)
        free_set(&g->set[i]);
    for (int k = 0; k < DDTK_MAX_LEVELS; k++)
        if (g->lv[k].state)
            g->algo->destroy(g->lv[k].state);
    cudaFree(g->d_rowmap);
    free(g);
}

static void report_plan(const ddtk_gpu_stream *g, const ddtk_plan *p)
{
    for (int k = 0; k < p->nlevels; k++) {
        char level[64] = "", what[512];
        if (!g->lv[k].state)
            continue;
        if (p->nlevels > 1)
            snprintf(level, sizeof level, ", scrunched x%d (%d DMs)", 1 << k, p->lv[k].ndm);
        g->algo->report(g->lv[k].state, what, sizeof what);
        ddtk_msg("GPU %d (%s, compute capability %d.%d)%s: %s; gulp %lld spectra", g->dev,
                 g->prop.name, g->prop.major, g->prop.minor, level, what, (long long)g->step);
    }
}

/* The device plan of a first run; kept while later runs need the same step. */
static int create(ddtk_plan *p, const ddtk_source *src)
{
    ddtk_gpu_stream *g = (ddtk_gpu_stream *)ddtk_calloc(1, sizeof *g, "GPU plan");
    if (!g)
        return DDTK_ESYS;
    p->gpu = g;
    g->algo = gpu_algorithms[p->algo->id];
    int rc = start_device(g, p->d.gpu);
    if (!rc)
        rc = plan_levels(g, p);
    if (!rc)
        rc = choose_step(g, p, src, &g->step);
    if (!rc)
        set_pitches(g, p);
    for (int i = 0; i < 2 && !rc; i++)
        rc = allocate_set(g, p, &g->set[i]);
    if (!rc && p->d.verbose)
        report_plan(g, p);
    return rc;
}

static int prepare(ddtk_plan *p, const ddtk_source *src)
{
    if (p->gpu) {
        int64_t step;
        int rc = choose_step(p->gpu, p, src, &step);
        if (rc || step == p->gpu->step)
            return rc;
        ddtk_gpu_stream_free(p->gpu);
        p->gpu = NULL;
    }
    int rc = create(p, src);
    if (rc) {
        ddtk_gpu_stream_free(p->gpu);
        p->gpu = NULL;
    }
    return rc;
}

/* ---- execution ---------------------------------------------------------------------- */

/* H2D of `got` new spectra, the keep overlap from the other set, unpacking at col. */
static int stage_input(const ddtk_gpu_stream *g, const ddtk_plan *p, gulp_set *s,
                       const gulp_set *prev, int64_t got, int64_t col)
{
    const gpu_level *L0 = &g->lv[0];
    size_t es = (size_t)storage_bytes(L0->enc.storage);
    DDTK_CUDA(cudaEventRecord(s->h2d0, s->st), "recording an event");
    if (got > 0)
        DDTK_CUDA(cudaMemcpyAsync(s->draw, s->hraw, (size_t)ddtk_plan_raw_bytes(p, got),
                                  cudaMemcpyHostToDevice, s->st), "copying input to the GPU");
    DDTK_CUDA(cudaEventRecord(s->h2d1, s->st), "recording an event");
    if (prev && p->keep > 0) {
        DDTK_CUDA(cudaStreamWaitEvent(s->st, prev->unpacked, 0), "ordering streams");
        DDTK_CUDA(cudaMemcpy2DAsync(s->drows[0], L0->stride * es,
                                    (char *)prev->drows[0] + g->step * es, L0->stride * es,
                                    p->keep * es, p->ch.nlive, cudaMemcpyDeviceToDevice, s->st),
                  "moving the overlap");
    }
    if (got > 0) {
        UnpackArgs u;
        u.raw = s->draw;
        u.n = got;
        u.col = col;
        u.stride = L0->stride;
        u.nchans = p->fmt.nchans;
        u.nifs = p->fmt.nifs;
        u.nbits = p->fmt.nbits;
        u.pol = p->pol == DDTK_POL_SUM ? -1 : p->pol;
        u.sgn = p->fmt.signed_data == 1;
        u.rowmap = g->d_rowmap;
        u.rows = s->drows[0];
        u.enc = L0->enc;
        DDTK_CUDA(launch_unpack(u, s->st), "unpacking");
        if (p->d.zerodm)
            DDTK_CUDA(launch_zerodm((float *)s->drows[0], L0->stride, p->ch.nlive, col, got,
                                    s->st), "zero-DM filtering");
    }
    DDTK_CUDA(cudaEventRecord(s->unpacked, s->st), "recording an event");
    return DDTK_OK;
}

/* The scrunch cascade: level k's rows from level k-1's, fill >> k spectra. */
static int halve_levels(const ddtk_gpu_stream *g, const ddtk_plan *p, gulp_set *s, int64_t fill)
{
    for (int k = 1; k < p->nlevels; k++) {
        HalveArgs h;
        h.src = s->drows[k - 1];
        h.dst = s->drows[k];
        h.sstride = g->lv[k - 1].stride;
        h.dstride = g->lv[k].stride;
        h.n = fill >> k;
        h.nrows = p->ch.nlive;
        h.in = g->lv[k - 1].enc;
        h.out = g->lv[k].enc;
        DDTK_CUDA(launch_halve(h, s->st), "halving");
    }
    return DDTK_OK;
}

static int issue_gulp(const ddtk_gpu_stream *g, const ddtk_plan *p, gulp_set *s,
                      const gulp_set *prev, int64_t got, int64_t fill, int last)
{
    int rc = stage_input(g, p, s, prev, got, fill - got);
    if (!rc)
        rc = halve_levels(g, p, s, fill);
    if (rc)
        return rc;
    DDTK_CUDA(cudaEventRecord(s->k0, s->st), "recording an event");
    for (int k = 0; k < p->nlevels; k++) {
        const gpu_level *L = &g->lv[k];
        s->nout[k] = p->lv[k].ndm ? ddtk_level_nout(p, k, g->step, fill, last) : 0;
        if (s->nout[k] > 0 && (rc = g->algo->gulp(L->state, s->drows[k], L->stride, s->nout[k],
                                                   s->dout[k], L->ostride, s->st)))
            return rc;
    }
    DDTK_CUDA(cudaEventRecord(s->k1, s->st), "recording an event");
    for (int k = 0; k < p->nlevels; k++)
        if (s->nout[k] > 0)
            DDTK_CUDA(cudaMemcpy2DAsync(s->hout[k], g->lv[k].hpitch * sizeof(float), s->dout[k],
                                        g->lv[k].ostride * sizeof(float),
                                        s->nout[k] * sizeof(float), p->lv[k].ndm,
                                        cudaMemcpyDeviceToHost, s->st),
                      "copying outputs from the GPU");
    DDTK_CUDA(cudaEventRecord(s->done, s->st), "recording an event");
    s->issued = 1;
    return DDTK_OK;
}

static double elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms / 1000.0 : 0.0;
}

/* Wait for a gulp and write its outputs. */
static int finish_gulp(ddtk_gpu_stream *g, const ddtk_plan *p, gulp_set *s, ddtk_writer *w)
{
    if (!s->issued)
        return DDTK_OK;
    s->issued = 0;
    DDTK_CUDA(cudaEventSynchronize(s->done), "waiting for a gulp");
    g->t_h2d += elapsed(s->h2d0, s->h2d1);
    g->t_unpack += elapsed(s->h2d1, s->k0);
    g->t_kernel += elapsed(s->k0, s->k1);
    g->t_d2h += elapsed(s->k1, s->done);
    for (int k = 0; k < p->nlevels; k++) {
        int rc = s->nout[k] > 0 ? ddtk_writer_level(w, k, s->hout[k], (size_t)g->lv[k].hpitch,
                                                     s->nout[k]) : DDTK_OK;
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

/* The gulp loop: read gulp i, issue it, then finish gulp i-1 while i runs. */
static int run_gulps(ddtk_gpu_stream *g, const ddtk_plan *p, ddtk_source *src, ddtk_writer *w)
{
    const int64_t cap = p->keep + g->step;
    int64_t fill = 0;
    gulp_set *prev = NULL;
    for (int i = 0;; i++) {
        gulp_set *s = &g->set[i & 1];
        int64_t got;
        int rc = src->read(src, s->hraw, cap - fill, &got);
        if (rc)
            return rc;
        fill += got;
        int last = src->eof;
        if ((rc = issue_gulp(g, p, s, prev, got, fill, last)))
            return rc;
        if (prev && (rc = finish_gulp(g, p, prev, w)))
            return rc;
        ddtk_writer_gulp(w, src);
        if (last)
            return finish_gulp(g, p, s, w);
        fill -= g->step;
        prev = s;
    }
}

extern "C" int ddtk_gpu_stream_run(ddtk_plan *p, ddtk_source *src, ddtk_writer *w,
                                   double *kernel)
{
    double t0 = ddtk_now();
    int rc = prepare(p, src);
    if (rc)
        return rc;
    ddtk_gpu_stream *g = p->gpu;
    g->t_h2d = g->t_unpack = g->t_kernel = g->t_d2h = 0;
    rc = run_gulps(g, p, src, w);
    for (int i = 0; i < 2; i++)     /* after a failure, nothing stays in flight */
        g->set[i].issued = 0;
    *kernel = g->t_kernel;
    double stages[2] = { 0, 0 };
    for (int k = 0; !rc && g->algo->stage_times && k < p->nlevels; k++)
        if (g->lv[k].state)
            g->algo->stage_times(g->lv[k].state, stages);
    if (!rc && p->d.verbose)
        ddtk_msg("GPU times: H2D %.4f s, overlap copy + unpack%s (with waits on the other "
                 "stream) %.4f s, kernels %.4f s, D2H %.4f s, wall %.4f s", g->t_h2d,
                 p->nlevels > 1 ? " + halving" : "", g->t_unpack, g->t_kernel, g->t_d2h,
                 ddtk_now() - t0);
    if (!rc && p->d.verbose && g->algo->stage_times)
        ddtk_msg("GPU kernels: stage 1 %.4f s, stage 2 %.4f s", stages[0], stages[1]);
    return rc;
}
