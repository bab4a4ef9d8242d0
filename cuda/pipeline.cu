/*
 * pipeline.cu - the GPU direct-dedispersion driver: the streamed host pipeline
 * behind ddtk_direct_plan_execute when the backend is the GPU.
 *
 * Same gulp logic as the CPU driver (dedisperse.c): gulps of `step` new
 * spectra behind `keep` >= the largest delay. Two buffer sets, each with its
 * own CUDA stream and pinned host buffers, alternate between gulps: while the
 * GPU copies in, unpacks, dedisperses and copies out gulp g, the host writes
 * the outputs of gulp g-1 and reads gulp g+1. Raw bytes travel to the device
 * and are unpacked there; the `keep` overlap moves device-to-device from the
 * other set's rows. Every CUDA call is checked; failures are DDTK_ESYS with
 * CUDA's message.
 */
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "ddtk.h"
}
#include "direct.cuh"

using namespace ddgpu;

#define DEFAULT_STEP ((int64_t)1 << 17)
#define MAX_STEP ((int64_t)1 << 22)       /* keeps the time-tile grid within 65535 */
#define DEFAULT_MAX_MEM ((int64_t)2 << 30)
#define SPAN_TILES 4                      /* shared tile: span <= 4 tile widths */

/* One of the two alternating buffer sets. */
struct gulp_set {
    cudaStream_t st;
    cudaEvent_t h2d0, h2d1, k0, k1, done, unpacked;
    uint8_t *hraw, *draw;
    float *hout, *dout;
    void *drows;
    int64_t nout;
    int issued, copied_in;
};

struct ddtk_gpu_direct {
    ddtk_input *in;
    const ddtk_channels *ch;
    const ddtk_delays *dl;
    ddtk_options opt;
    int pol, dev;
    cudaDeviceProp prop;
    Encoding enc;
    int config, nblocks, nshared, span;
    ConfigInfo ci;
    size_t smem;
    int64_t keep, step, stride, ostride;
    int64_t hpitch;             /* host output row: a last gulp may hold step + 7 outputs */
    int32_t *d_delay, *d_lo;
    int *d_blocks, *d_rowmap;
    gulp_set set[2];
    double *sums;
    double t_h2d, t_unpack, t_kernel, t_d2h;
};

static int cuda_fail(const ddtk_gpu_direct *g, const char *what, cudaError_t err)
{
    return ddtk_fail(DDTK_ESYS, "GPU %d: %s: %s", g->dev, what, cudaGetErrorString(err));
}

#define CK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) return cuda_fail(g, #call, e_); } while (0)

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* ---- plan: kernel choice and DM blocks ------------------------------------- */

/* Smallest delay of each DM block per channel, and each block's spread. */
static int block_tables(ddtk_gpu_direct *g, int32_t **lo, int32_t **spans)
{
    const int bd = g->ci.dms_per_block, nc = g->dl->nchan;
    g->nblocks = (g->dl->ndm + bd - 1) / bd;
    *lo = (int32_t *)ddtk_malloc((size_t)g->nblocks * nc * sizeof **lo, "GPU delay table");
    *spans = (int32_t *)ddtk_calloc((size_t)g->nblocks, sizeof **spans, "GPU delay table");
    if (!*lo || !*spans)
        return DDTK_ESYS;
    for (int b = 0; b < g->nblocks; b++) {
        int d0 = b * bd, d1 = d0 + bd < g->dl->ndm ? d0 + bd : g->dl->ndm;
        for (int c = 0; c < nc; c++) {
            int32_t mn = INT32_MAX, mx = INT32_MIN;
            for (int d = d0; d < d1; d++) {
                int32_t v = g->dl->delay[(size_t)d * nc + c];
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
static int partition_blocks(ddtk_gpu_direct *g, const int32_t *spans, int *order)
{
    size_t limit = g->prop.sharedMemPerBlockOptin;
    int max_span = SPAN_TILES * g->ci.tile_words;
    while (max_span > 0 && shared_bytes(g->enc.kind, g->config, g->ci.tile_words + max_span) > limit)
        max_span -= 32;
    int n = 0, span = 0;
    for (int b = 0; b < g->nblocks; b++)
        if (spans[b] <= max_span) {
            order[n++] = b;
            span = spans[b] > span ? spans[b] : span;
        }
    g->nshared = n;
    for (int b = 0; b < g->nblocks; b++)
        if (spans[b] > max_span)
            order[n++] = b;
    g->span = (int)round_up(span, 4);
    g->smem = shared_bytes(g->enc.kind, g->config, g->ci.tile_words + g->span);
    if (g->nshared > 0)
        CK(prepare_kernels(g->enc.kind, g->config, g->enc.storage, g->smem));
    return DDTK_OK;
}

static int choose_config(ddtk_gpu_direct *g)
{
    g->config = default_config(g->enc.kind, g->prop.major);
    const char *env = getenv("DDTK_GPU_CONFIG");   /* tuning runs (bench/gpu) */
    if (env && *env) {
        int c = atoi(env);
        if (c < 0 || c >= config_count(g->enc.kind))
            return ddtk_fail(DDTK_EUSAGE, "DDTK_GPU_CONFIG=%s: expected 0..%d", env,
                             config_count(g->enc.kind) - 1);
        g->config = c;
    }
    g->ci = config_info(g->enc.kind, g->config);
    return DDTK_OK;
}

static int upload_tables(ddtk_gpu_direct *g)
{
    int32_t *lo = NULL, *spans = NULL;
    int *order = NULL;
    int rc = block_tables(g, &lo, &spans);
    if (!rc && !(order = (int *)ddtk_malloc((size_t)g->nblocks * sizeof *order, "GPU DM blocks")))
        rc = DDTK_ESYS;
    if (!rc)
        rc = partition_blocks(g, spans, order);
    size_t nc = (size_t)g->dl->nchan;
    cudaError_t e = cudaSuccess;
    if (!rc) {
        const void *src[] = { g->dl->delay, lo, order, g->ch->row };
        void **dst[] = { (void **)&g->d_delay, (void **)&g->d_lo, (void **)&g->d_blocks,
                         (void **)&g->d_rowmap };
        size_t bytes[] = { (size_t)g->dl->ndm * nc * 4, (size_t)g->nblocks * nc * 4,
                           (size_t)g->nblocks * 4, (size_t)g->ch->nchans * 4 };
        for (int i = 0; i < 4 && e == cudaSuccess; i++)
            if ((e = cudaMalloc(dst[i], bytes[i])) == cudaSuccess)
                e = cudaMemcpy(*dst[i], src[i], bytes[i], cudaMemcpyHostToDevice);
        if (e != cudaSuccess)
            rc = cuda_fail(g, "uploading the delay tables", e);
    }
    free(lo);
    free(spans);
    free(order);
    return rc;
}

/* ---- memory ---------------------------------------------------------------- */

static int64_t row_stride(const ddtk_gpu_direct *g, int64_t step)
{
    /* Tiles may run one tile past the last output; they read up to keep past it. */
    return round_up(g->keep + step + 2 * g->ci.tile_samples + 256, 64);
}

static void set_bytes(const ddtk_gpu_direct *g, int64_t step, int64_t *host, int64_t *dev)
{
    int64_t raw = ddtk_input_bytes(g->in, g->keep + step);
    *host = raw + (int64_t)g->dl->ndm * (step + 8) * 4;
    *dev = raw + (int64_t)g->dl->nchan * row_stride(g, step) * storage_bytes(g->enc.storage)
         + (int64_t)g->dl->ndm * round_up(step + 8, 64) * 4;
}

static int choose_step(ddtk_gpu_direct *g)
{
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    int64_t host_max = g->opt.max_mem > 0 ? g->opt.max_mem : DEFAULT_MAX_MEM;
    int64_t dev_max = (int64_t)(free_b * 0.8);
    int64_t step = g->opt.gulp > 0 ? round_up(g->opt.gulp, 8)
                                   : round_up(DEFAULT_STEP > g->keep ? DEFAULT_STEP : g->keep, 8);
    if (g->in->nsamples >= 0 && step > round_up(g->in->nsamples, 8))
        step = round_up(g->in->nsamples > 8 ? g->in->nsamples : 8, 8);
    step = step < MAX_STEP ? step : MAX_STEP;
    int64_t host, dev;
    for (;;) {
        set_bytes(g, step, &host, &dev);
        if ((2 * host <= host_max && 2 * dev <= dev_max) || g->opt.gulp > 0 || step <= 8)
            break;
        step = round_up(step / 2, 8);
    }
    if (2 * host > host_max || 2 * dev > dev_max)
        return ddtk_fail(DDTK_EUSAGE, "%s: a GPU gulp of %lld spectra plus the maximum delay of "
                         "%d needs %.0f MiB of host and %.0f MiB of GPU memory (--max-mem %.0f MiB, "
                         "%.0f MiB free on GPU %d)", g->in->name, (long long)step, g->dl->maxdelay,
                         2 * host / 1048576.0, 2 * dev / 1048576.0, host_max / 1048576.0,
                         free_b / 1048576.0, g->dev);
    g->step = step;
    g->stride = row_stride(g, step);
    g->ostride = round_up(step + 8, 64);
    g->hpitch = step + 8;
    return DDTK_OK;
}

static int allocate_set(ddtk_gpu_direct *g, gulp_set *s)
{
    size_t raw = (size_t)ddtk_input_bytes(g->in, g->keep + g->step);
    size_t rows = (size_t)g->dl->nchan * g->stride * storage_bytes(g->enc.storage);
    size_t out = (size_t)g->dl->ndm * g->ostride * sizeof(float);
    CK(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking));
    cudaEvent_t *ev[] = { &s->h2d0, &s->h2d1, &s->k0, &s->k1, &s->done, &s->unpacked };
    for (int i = 0; i < 6; i++)
        CK(cudaEventCreate(ev[i]));
    CK(cudaHostAlloc((void **)&s->hraw, raw, cudaHostAllocDefault));
    CK(cudaHostAlloc((void **)&s->hout, (size_t)g->dl->ndm * g->hpitch * sizeof(float),
                     cudaHostAllocDefault));
    CK(cudaMalloc((void **)&s->draw, raw));
    CK(cudaMalloc(&s->drows, rows));
    CK(cudaMalloc((void **)&s->dout, out));
    /* Columns past the data are read by the last tiles (their outputs are dropped). */
    CK(cudaMemset(s->drows, 0, rows));
    return DDTK_OK;
}

static int start_device(ddtk_gpu_direct *g)
{
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (g->dev >= n)
        return ddtk_fail(DDTK_ESYS, "--gpu %d: only %d GPU%s visible", g->dev, n, n == 1 ? "" : "s");
    CK(cudaSetDevice(g->dev));
    CK(cudaGetDeviceProperties(&g->prop, g->dev));
    return DDTK_OK;
}

static void report_plan(const ddtk_gpu_direct *g)
{
    if (!g->opt.verbose)
        return;
    ddtk_msg("GPU %d (%s, compute capability %d.%d): %s kernel config %d (%d DMs x %d samples "
             "per block, %d channels per pass), %d of %d DM blocks in shared memory "
             "(span %d), %d by the cached fallback; gulp %lld spectra",
             g->dev, g->prop.name, g->prop.major, g->prop.minor,
             g->enc.kind == K_LANES ? "16-bit-lane" : "float", g->config, g->ci.dms_per_block,
             g->ci.tile_samples, g->ci.chans_per_stage, g->nshared, g->nblocks, g->span,
             g->nblocks - g->nshared, (long long)g->step);
}

extern "C" int ddtk_gpu_direct_create(ddtk_gpu_direct **out, ddtk_input *in,
                                      const ddtk_channels *ch, const ddtk_delays *dl, int pol,
                                      const ddtk_options *opt)
{
    ddtk_gpu_direct *g = (ddtk_gpu_direct *)ddtk_calloc(1, sizeof *g, "GPU plan");
    *out = NULL;
    if (!g)
        return DDTK_ESYS;
    g->in = in;
    g->ch = ch;
    g->dl = dl;
    g->opt = *opt;
    g->pol = pol;
    g->dev = opt->gpu;
    g->keep = round_up(dl->maxdelay, 8);
    g->enc = choose_encoding(in->hdr.nbits, in->hdr.signed_data == 1, pol == DDTK_POL_SUM,
                             opt->zerodm);
    int rc = start_device(g);
    if (!rc)
        rc = choose_config(g);
    if (!rc)
        rc = upload_tables(g);
    if (!rc)
        rc = choose_step(g);
    for (int i = 0; i < 2 && !rc; i++)
        rc = allocate_set(g, &g->set[i]);
    if (!rc && !(g->sums = (double *)ddtk_calloc((size_t)dl->ndm, sizeof(double), "output sums")))
        rc = DDTK_ESYS;
    if (rc) {
        ddtk_gpu_direct_destroy(g);
        return rc;
    }
    report_plan(g);
    *out = g;
    return DDTK_OK;
}

/* ---- execution ------------------------------------------------------------- */

static DirectArgs kernel_args(const ddtk_gpu_direct *g, const gulp_set *s)
{
    DirectArgs a;
    memset(&a, 0, sizeof a);
    a.rows = s->drows;
    a.stride = g->stride;
    a.nchan = g->dl->nchan;
    a.ndm = g->dl->ndm;
    a.delay = g->d_delay;
    a.lo = g->d_lo;
    a.rowlen = g->ci.tile_words + g->span;
    a.bias = g->enc.bias;
    a.bias_total = g->enc.bias * g->dl->nchan;
    int per_pass = g->enc.maxval > 0 ? 65535 / g->enc.maxval / g->ci.chans_per_stage : 1;
    a.spill_stages = per_pass > 0 ? per_pass : 1;
    a.out = s->dout;
    a.ostride = g->ostride;
    a.nout = s->nout;
    return a;
}

static int launch_dedisperse(ddtk_gpu_direct *g, gulp_set *s)
{
    DirectArgs a = kernel_args(g, s);
    a.blocks = g->d_blocks;
    a.nblocks = g->nshared;
    CK(launch_shared(g->enc.kind, g->config, g->enc.storage, a, g->smem, s->st));
    a.blocks = g->d_blocks + g->nshared;
    a.nblocks = g->nblocks - g->nshared;
    CK(launch_fallback(g->enc.storage, g->ci.dms_per_block, a, s->st));
    return DDTK_OK;
}

/* H2D of `got` new spectra, the keep overlap from the other set, unpacking at col. */
static int stage_input(ddtk_gpu_direct *g, gulp_set *s, gulp_set *prev, int64_t got, int64_t col)
{
    size_t es = (size_t)storage_bytes(g->enc.storage);
    CK(cudaEventRecord(s->h2d0, s->st));
    if (got > 0)
        CK(cudaMemcpyAsync(s->draw, s->hraw, (size_t)ddtk_input_bytes(g->in, got),
                           cudaMemcpyHostToDevice, s->st));
    CK(cudaEventRecord(s->h2d1, s->st));
    if (prev && g->keep > 0) {
        CK(cudaStreamWaitEvent(s->st, prev->unpacked, 0));
        CK(cudaMemcpy2DAsync(s->drows, g->stride * es, (char *)prev->drows + g->step * es,
                             g->stride * es, g->keep * es, g->dl->nchan,
                             cudaMemcpyDeviceToDevice, s->st));
    }
    if (got > 0) {
        UnpackArgs u;
        u.raw = s->draw;
        u.n = got;
        u.col = col;
        u.stride = g->stride;
        u.nchans = g->in->hdr.nchans;
        u.nifs = g->in->hdr.nifs;
        u.nbits = g->in->hdr.nbits;
        u.pol = g->pol == DDTK_POL_SUM ? -1 : g->pol;
        u.sgn = g->in->hdr.signed_data == 1;
        u.rowmap = g->d_rowmap;
        u.rows = s->drows;
        u.enc = g->enc;
        CK(launch_unpack(u, s->st));
        if (g->opt.zerodm)
            CK(launch_zerodm((float *)s->drows, g->stride, g->dl->nchan, col, got, s->st));
    }
    CK(cudaEventRecord(s->unpacked, s->st));
    s->copied_in = 1;
    return DDTK_OK;
}

static int issue_gulp(ddtk_gpu_direct *g, gulp_set *s, gulp_set *prev, int64_t got, int64_t col,
                      int64_t nout)
{
    int rc = stage_input(g, s, prev, got, col);
    if (rc)
        return rc;
    s->nout = nout > 0 ? nout : 0;
    CK(cudaEventRecord(s->k0, s->st));
    if (nout > 0) {
        if ((rc = launch_dedisperse(g, s)))
            return rc;
    }
    CK(cudaEventRecord(s->k1, s->st));
    if (nout > 0)
        CK(cudaMemcpy2DAsync(s->hout, g->hpitch * sizeof(float), s->dout, g->ostride * sizeof(float),
                             nout * sizeof(float), g->dl->ndm, cudaMemcpyDeviceToHost, s->st));
    CK(cudaEventRecord(s->done, s->st));
    s->issued = 1;
    return DDTK_OK;
}

static double elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms / 1000.0 : 0.0;
}

/* Wait for a gulp and write its outputs. */
static int finish_gulp(ddtk_gpu_direct *g, gulp_set *s, ddtk_outset *out)
{
    if (!s->issued)
        return DDTK_OK;
    s->issued = 0;
    CK(cudaEventSynchronize(s->done));
    g->t_h2d += elapsed(s->h2d0, s->h2d1);
    g->t_unpack += elapsed(s->h2d1, s->k0);
    g->t_kernel += elapsed(s->k0, s->k1);
    g->t_d2h += elapsed(s->k1, s->done);
    for (int d = 0; d < g->dl->ndm && s->nout > 0; d++) {
        const float *series = s->hout + (size_t)d * g->hpitch;
        if (g->opt.pad) {
            double sum = 0;
            for (int64_t t = 0; t < s->nout; t++)
                sum += series[t];
            g->sums[d] += sum;
        }
        int rc = ddtk_outset_write(out, d, series, s->nout);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

/* --pad: extend every series to the input length with its mean (as the CPU driver). */
static int write_padding(ddtk_gpu_direct *g, ddtk_outset *out, int64_t nout)
{
    float *buf = g->set[0].hout;
    for (int d = 0; d < g->dl->ndm; d++) {
        float mean = nout > 0 ? (float)(g->sums[d] / (double)nout) : 0.0f;
        int64_t n = g->dl->maxdelay, chunk = n < g->step ? n : g->step;
        for (int64_t t = 0; t < chunk; t++)
            buf[t] = mean;
        for (int64_t done = 0; done < n; done += chunk) {
            int rc = ddtk_outset_write(out, d, buf, n - done < chunk ? n - done : chunk);
            if (rc)
                return rc;
        }
    }
    return DDTK_OK;
}

/* The gulp loop: read gulp g, issue it, then finish gulp g-1 while g runs. */
static int run_gulps(ddtk_gpu_direct *g, ddtk_outset *out, int64_t *total_out, ddtk_progress *prog)
{
    const int64_t cap = g->keep + g->step;
    int64_t fill = 0;
    gulp_set *prev = NULL;
    for (int i = 0;; i++) {
        gulp_set *s = &g->set[i & 1];
        int64_t got;
        int rc = ddtk_input_read(g->in, s->hraw, cap - fill, &got);
        if (rc)
            return rc;
        fill += got;
        int last = g->in->eof;
        int64_t nout = last ? fill - g->dl->maxdelay : g->step;
        if ((rc = issue_gulp(g, s, prev, got, fill - got, nout)))
            return rc;
        if (prev && (rc = finish_gulp(g, prev, out)))
            return rc;
        *total_out += nout > 0 ? nout : 0;
        ddtk_progress_update(prog, g->in->samples_read);
        if (last)
            return finish_gulp(g, s, out);
        fill -= g->step;
        prev = s;
    }
}

extern "C" int ddtk_gpu_direct_execute(ddtk_gpu_direct *g, ddtk_outset *out, ddtk_run_stats *stats)
{
    double t_start = ddtk_now();
    int64_t total_out = 0;
    ddtk_progress prog;
    ddtk_progress_start(&prog, "samples", g->in->nsamples, g->opt.quiet, g->opt.verbose);
    int rc = run_gulps(g, out, &total_out, &prog);
    ddtk_progress_end(&prog);
    if (!rc && g->in->samples_read == 0)
        rc = ddtk_fail(DDTK_EDATA, "%s: no data after the header (shorter than one sample)",
                       g->in->name);
    else if (!rc && total_out == 0)
        rc = ddtk_fail(DDTK_EDATA, "%s: %lld samples is not longer than the maximum delay "
                       "(%d samples)", g->in->name, (long long)g->in->samples_read,
                       g->dl->maxdelay);
    if (!rc && g->opt.pad)
        rc = write_padding(g, out, total_out);
    stats->nin = g->in->samples_read;
    stats->nout = total_out;
    stats->ndm = g->dl->ndm;
    stats->nlive = g->ch->nlive;
    stats->kernel = g->t_kernel;
    stats->wall = ddtk_now() - t_start;
    stats->tobs = (double)g->in->samples_read * g->in->hdr.tsamp;
    stats->backend = "gpu";
    if (!rc && g->opt.verbose)
        ddtk_msg("GPU times: H2D %.4f s, overlap copy + unpack (with waits on the other stream) "
                 "%.4f s, kernels %.4f s, D2H %.4f s, wall %.4f s; "
                 "%.3g sample-adds/s in the kernels", g->t_h2d, g->t_unpack, g->t_kernel, g->t_d2h,
                 stats->wall, g->t_kernel > 0 ? (double)g->dl->ndm * total_out * g->dl->nchan
                                                / g->t_kernel : 0.0);
    return rc;
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
    cudaFreeHost(s->hout);
    cudaFree(s->draw);
    cudaFree(s->drows);
    cudaFree(s->dout);
}

extern "C" void ddtk_gpu_direct_destroy(ddtk_gpu_direct *g)
{
    if (!g)
        return;
    for (int i = 0; i < 2; i++)
        free_set(&g->set[i]);
    cudaFree(g->d_delay);
    cudaFree(g->d_lo);
    cudaFree(g->d_blocks);
    cudaFree(g->d_rowmap);
    free(g->sums);
    free(g);
}
