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
 *
 * Time scrunching (scrunch.h): the run is a cascade of levels, level k at
 * factor 2^k with its own delay table, row encoding, kernel choice, DM blocks
 * and buffers. Each gulp's unpacked rows are halved on the device level by
 * level (as scrunch.c halves them on the CPU) and every level with DMs is
 * dedispersed from its rows; output counts and writing come from scrunch.c.
 * A run without scrunching is the one level of factor 1.
 */
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

extern "C" {
#include "ddtk.h"
#include "scrunch.h"
}
#include "direct.cuh"

using namespace ddgpu;

#define DEFAULT_STEP ((int64_t)1 << 17)
#define MAX_STEP ((int64_t)1 << 22)       /* keeps the time-tile grid within 65535 */
#define DEFAULT_MAX_MEM ((int64_t)2 << 30)
#define SPAN_TILES 4                      /* shared tile: span <= 4 tile widths */
#define MAX_LEVELS DDTK_SCRUNCH_MAX_LEVELS

/* One time resolution: factor 2^k, its DMs' delays, kernel and DM blocks. */
struct gpu_level {
    const ddtk_delays *dl;      /* NULL: no DM at this factor (its rows feed the next) */
    Encoding enc;
    int config, nblocks, nshared, span;
    ConfigInfo ci;
    size_t smem;
    int64_t stride, ostride;    /* device row and output pitches (elements) */
    int64_t hpitch;             /* host output row: the most outputs one gulp gives */
    int32_t *d_delay, *d_lo;
    int *d_blocks;
};

/* One of the two alternating buffer sets, with rows and outputs per level. */
struct gulp_set {
    cudaStream_t st;
    cudaEvent_t h2d0, h2d1, k0, k1, done, unpacked;
    uint8_t *hraw, *draw;
    void *drows[MAX_LEVELS];
    float *hout[MAX_LEVELS], *dout[MAX_LEVELS];
    int64_t nout[MAX_LEVELS];
    int issued;
};

struct ddtk_gpu_direct {
    ddtk_input *in;
    const ddtk_channels *ch;
    const ddtk_delays *dl;      /* every DM of the run at tsamp */
    ddtk_scrunch *sc;           /* NULL: one level, dl */
    ddtk_options opt;
    int pol, dev, env_config;
    cudaDeviceProp prop;
    Encoding enc;               /* of the unpacked rows (level 0) */
    int nlevels, first;         /* first: the finest level with DMs */
    gpu_level lv[MAX_LEVELS];
    int64_t keep, step;
    int *d_rowmap;
    gulp_set set[2];
    double *sums;               /* per DM, for --pad without scrunching */
    double adds;
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

/* ---- plan: per level, kernel choice and DM blocks -------------------------- */

/* Smallest delay of each DM block per channel, and each block's spread. */
static int block_tables(gpu_level *L, int32_t **lo, int32_t **spans)
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
static void partition_blocks(const ddtk_gpu_direct *g, gpu_level *L, const int32_t *spans,
                             int *order)
{
    size_t limit = g->prop.sharedMemPerBlockOptin;
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
    L->span = (int)round_up(span, 4);
    L->smem = shared_bytes(L->enc.kind, L->config, L->ci.tile_words + L->span);
}

/* DDTK_GPU_CONFIG (tuning runs, bench/gpu): a configuration of the rows' kernel. */
static int read_env_config(ddtk_gpu_direct *g)
{
    const char *env = getenv("DDTK_GPU_CONFIG");
    g->env_config = -1;
    if (!env || !*env)
        return DDTK_OK;
    int c = atoi(env);
    if (c < 0 || c >= config_count(g->enc.kind))
        return ddtk_fail(DDTK_EUSAGE, "DDTK_GPU_CONFIG=%s: expected 0..%d", env,
                         config_count(g->enc.kind) - 1);
    g->env_config = c;
    return DDTK_OK;
}

static void choose_config(const ddtk_gpu_direct *g, gpu_level *L)
{
    L->config = default_config(L->enc.kind, g->prop.major);
    if (g->env_config >= 0 && L->enc.kind == g->enc.kind)
        L->config = g->env_config;
    L->ci = config_info(L->enc.kind, L->config);
}

static int upload(ddtk_gpu_direct *g, void **dst, const void *src, size_t bytes)
{
    CK(cudaMalloc(dst, bytes));
    CK(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return DDTK_OK;
}

static int upload_level(ddtk_gpu_direct *g, gpu_level *L)
{
    int32_t *lo = NULL, *spans = NULL;
    int *order = NULL;
    int rc = block_tables(L, &lo, &spans);
    if (!rc && !(order = (int *)ddtk_malloc((size_t)L->nblocks * sizeof *order, "GPU DM blocks")))
        rc = DDTK_ESYS;
    if (!rc)
        partition_blocks(g, L, spans, order);
    size_t nc = (size_t)L->dl->nchan;
    if (!rc)
        rc = upload(g, (void **)&L->d_delay, L->dl->delay, (size_t)L->dl->ndm * nc * 4);
    if (!rc)
        rc = upload(g, (void **)&L->d_lo, lo, (size_t)L->nblocks * nc * 4);
    if (!rc)
        rc = upload(g, (void **)&L->d_blocks, order, (size_t)L->nblocks * sizeof *order);
    free(lo);
    free(spans);
    free(order);
    return rc;
}

/* A kernel instance gets the largest shared memory any level launches it with. */
static int prepare_levels(ddtk_gpu_direct *g)
{
    for (int k = 0; k < g->nlevels; k++) {
        const gpu_level *L = &g->lv[k];
        if (!L->dl || !L->nshared)
            continue;
        size_t most = 0;
        for (int j = 0; j < g->nlevels; j++) {
            const gpu_level *M = &g->lv[j];
            if (M->dl && M->nshared && M->enc.kind == L->enc.kind && M->config == L->config
                && M->enc.storage == L->enc.storage && M->smem > most)
                most = M->smem;
        }
        CK(prepare_kernels(L->enc.kind, L->config, L->enc.storage, most));
    }
    return DDTK_OK;
}

static int plan_levels(ddtk_gpu_direct *g)
{
    int rc = read_env_config(g);
    g->nlevels = g->sc ? ddtk_scrunch_levels(g->sc) : 1;
    g->first = -1;
    for (int k = 0; !rc && k < g->nlevels; k++) {
        gpu_level *L = &g->lv[k];
        L->dl = g->sc ? ddtk_scrunch_level(g->sc, k) : g->dl;
        L->enc = scrunched_encoding(g->enc, 1 << k);
        if (!L->dl)
            continue;
        g->first = g->first < 0 ? k : g->first;
        choose_config(g, L);
        rc = upload_level(g, L);
    }
    if (!rc)
        rc = upload(g, (void **)&g->d_rowmap, g->ch->row, (size_t)g->ch->nchans * sizeof(int));
    return rc ? rc : prepare_levels(g);
}

/* ---- memory ---------------------------------------------------------------- */

/* Level k's rows: (keep + step) / 2^k spectra, and room for the last tiles,
 * which may run one tile past the last output and read up to keep past it. */
static int64_t row_stride(const ddtk_gpu_direct *g, int k, int64_t step)
{
    const gpu_level *L = &g->lv[k];
    int64_t tile = L->dl ? L->ci.tile_samples : 0;
    return round_up(((g->keep + step) >> k) + 2 * tile + 256, 64);
}

/* The most outputs level k gives in one gulp (a last gulp may give more than step / 2^k). */
static int64_t max_out(const ddtk_gpu_direct *g, int k, int64_t step)
{
    int64_t last = ((g->keep + step) >> k) - g->lv[k].dl->maxdelay;
    return last > step >> k ? last : step >> k;
}

static void set_bytes(const ddtk_gpu_direct *g, int64_t step, int64_t *host, int64_t *dev)
{
    int64_t raw = ddtk_input_bytes(g->in, g->keep + step);
    *host = *dev = raw;
    for (int k = 0; k < g->nlevels; k++) {
        const gpu_level *L = &g->lv[k];
        *dev += (int64_t)g->ch->nlive * row_stride(g, k, step) * storage_bytes(L->enc.storage);
        if (L->dl) {
            *host += (int64_t)L->dl->ndm * max_out(g, k, step) * 4;
            *dev += (int64_t)L->dl->ndm * round_up(max_out(g, k, step), 64) * 4;
        }
    }
}

static void set_pitches(ddtk_gpu_direct *g)
{
    for (int k = 0; k < g->nlevels; k++) {
        gpu_level *L = &g->lv[k];
        L->stride = row_stride(g, k, g->step);
        if (L->dl) {
            L->hpitch = max_out(g, k, g->step);
            L->ostride = round_up(L->hpitch, 64);
        }
    }
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
    if (g->sc)          /* every level's gulp starts on a whole scrunched sample */
        step = round_up(step, ddtk_scrunch_max_factor(g->sc));
    g->step = step;
    set_pitches(g);
    return DDTK_OK;
}

static int allocate_set(ddtk_gpu_direct *g, gulp_set *s)
{
    size_t raw = (size_t)ddtk_input_bytes(g->in, g->keep + g->step);
    CK(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking));
    cudaEvent_t *ev[] = { &s->h2d0, &s->h2d1, &s->k0, &s->k1, &s->done, &s->unpacked };
    for (int i = 0; i < 6; i++)
        CK(cudaEventCreate(ev[i]));
    CK(cudaHostAlloc((void **)&s->hraw, raw, cudaHostAllocDefault));
    CK(cudaMalloc((void **)&s->draw, raw));
    for (int k = 0; k < g->nlevels; k++) {
        const gpu_level *L = &g->lv[k];
        size_t rows = (size_t)g->ch->nlive * L->stride * storage_bytes(L->enc.storage);
        CK(cudaMalloc(&s->drows[k], rows));
        /* Columns past the data are read by the last tiles (their outputs are dropped). */
        CK(cudaMemset(s->drows[k], 0, rows));
        if (!L->dl)
            continue;
        CK(cudaHostAlloc((void **)&s->hout[k], (size_t)L->dl->ndm * L->hpitch * sizeof(float),
                         cudaHostAllocDefault));
        CK(cudaMalloc((void **)&s->dout[k], (size_t)L->dl->ndm * L->ostride * sizeof(float)));
    }
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
    for (int k = 0; k < g->nlevels; k++) {
        const gpu_level *L = &g->lv[k];
        char level[64] = "";
        if (!L->dl)
            continue;
        if (g->sc)
            snprintf(level, sizeof level, ", scrunched x%d (%d DMs)", 1 << k, L->dl->ndm);
        ddtk_msg("GPU %d (%s, compute capability %d.%d)%s: %s kernel config %d (%d DMs x %d "
                 "samples per block, %d channels per pass), %d of %d DM blocks in shared memory "
                 "(span %d), %d by the cached fallback; gulp %lld spectra",
                 g->dev, g->prop.name, g->prop.major, g->prop.minor, level,
                 L->enc.kind == K_LANES ? "16-bit-lane" : "float", L->config,
                 L->ci.dms_per_block, L->ci.tile_samples, L->ci.chans_per_stage, L->nshared,
                 L->nblocks, L->span, L->nblocks - L->nshared, (long long)g->step);
    }
}

extern "C" int ddtk_gpu_direct_create(ddtk_gpu_direct **out, ddtk_input *in,
                                      const ddtk_channels *ch, const ddtk_delays *dl,
                                      struct ddtk_scrunch *sc, int64_t keep, int pol,
                                      const ddtk_options *opt)
{
    ddtk_gpu_direct *g = (ddtk_gpu_direct *)ddtk_calloc(1, sizeof *g, "GPU plan");
    *out = NULL;
    if (!g)
        return DDTK_ESYS;
    g->in = in;
    g->ch = ch;
    g->dl = dl;
    g->sc = sc;
    g->opt = *opt;
    g->pol = pol;
    g->dev = opt->gpu;
    g->keep = keep;
    g->enc = choose_encoding(in->hdr.nbits, in->hdr.signed_data == 1, pol == DDTK_POL_SUM,
                             opt->zerodm);
    int rc = start_device(g);
    if (!rc)
        rc = plan_levels(g);
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

static DirectArgs kernel_args(const gpu_level *L, const gulp_set *s, int k)
{
    DirectArgs a;
    memset(&a, 0, sizeof a);
    a.rows = s->drows[k];
    a.stride = L->stride;
    a.nchan = L->dl->nchan;
    a.ndm = L->dl->ndm;
    a.delay = L->d_delay;
    a.lo = L->d_lo;
    a.rowlen = L->ci.tile_words + L->span;
    a.bias = L->enc.bias;
    a.bias_total = L->enc.bias * L->dl->nchan;
    int per_pass = L->enc.maxval > 0 ? 65535 / L->enc.maxval / L->ci.chans_per_stage : 1;
    a.spill_stages = per_pass > 0 ? per_pass : 1;
    a.out = s->dout[k];
    a.ostride = L->ostride;
    a.nout = s->nout[k];
    return a;
}

static int launch_dedisperse(ddtk_gpu_direct *g, gulp_set *s, int k)
{
    const gpu_level *L = &g->lv[k];
    DirectArgs a = kernel_args(L, s, k);
    a.blocks = L->d_blocks;
    a.nblocks = L->nshared;
    CK(launch_shared(L->enc.kind, L->config, L->enc.storage, a, L->smem, s->st));
    a.blocks = L->d_blocks + L->nshared;
    a.nblocks = L->nblocks - L->nshared;
    CK(launch_fallback(L->enc.storage, L->ci.dms_per_block, a, s->st));
    return DDTK_OK;
}

/* H2D of `got` new spectra, the keep overlap from the other set, unpacking at col. */
static int stage_input(ddtk_gpu_direct *g, gulp_set *s, gulp_set *prev, int64_t got, int64_t col)
{
    const gpu_level *L0 = &g->lv[0];
    size_t es = (size_t)storage_bytes(L0->enc.storage);
    CK(cudaEventRecord(s->h2d0, s->st));
    if (got > 0)
        CK(cudaMemcpyAsync(s->draw, s->hraw, (size_t)ddtk_input_bytes(g->in, got),
                           cudaMemcpyHostToDevice, s->st));
    CK(cudaEventRecord(s->h2d1, s->st));
    if (prev && g->keep > 0) {
        CK(cudaStreamWaitEvent(s->st, prev->unpacked, 0));
        CK(cudaMemcpy2DAsync(s->drows[0], L0->stride * es, (char *)prev->drows[0] + g->step * es,
                             L0->stride * es, g->keep * es, g->ch->nlive,
                             cudaMemcpyDeviceToDevice, s->st));
    }
    if (got > 0) {
        UnpackArgs u;
        u.raw = s->draw;
        u.n = got;
        u.col = col;
        u.stride = L0->stride;
        u.nchans = g->in->hdr.nchans;
        u.nifs = g->in->hdr.nifs;
        u.nbits = g->in->hdr.nbits;
        u.pol = g->pol == DDTK_POL_SUM ? -1 : g->pol;
        u.sgn = g->in->hdr.signed_data == 1;
        u.rowmap = g->d_rowmap;
        u.rows = s->drows[0];
        u.enc = g->enc;
        CK(launch_unpack(u, s->st));
        if (g->opt.zerodm)
            CK(launch_zerodm((float *)s->drows[0], L0->stride, g->ch->nlive, col, got, s->st));
    }
    CK(cudaEventRecord(s->unpacked, s->st));
    return DDTK_OK;
}

/* The scrunch cascade: level k's rows from level k-1's, fill >> k spectra. */
static int halve_levels(ddtk_gpu_direct *g, gulp_set *s, int64_t fill)
{
    for (int k = 1; k < g->nlevels; k++) {
        HalveArgs h;
        h.src = s->drows[k - 1];
        h.dst = s->drows[k];
        h.sstride = g->lv[k - 1].stride;
        h.dstride = g->lv[k].stride;
        h.n = fill >> k;
        h.nrows = g->ch->nlive;
        h.in = g->lv[k - 1].enc;
        h.out = g->lv[k].enc;
        CK(launch_halve(h, s->st));
    }
    return DDTK_OK;
}

/* Outputs of level k for a gulp of fill spectra (CPU driver's rule, or scrunch.c's). */
static int64_t level_nout(const ddtk_gpu_direct *g, int k, int64_t fill, int last)
{
    int64_t n = g->sc ? ddtk_scrunch_nout(g->sc, k, g->step, fill, last)
                      : last ? fill - g->dl->maxdelay : g->step;
    return n > 0 ? n : 0;
}

static int issue_gulp(ddtk_gpu_direct *g, gulp_set *s, gulp_set *prev, int64_t got, int64_t fill,
                      int last)
{
    int rc = stage_input(g, s, prev, got, fill - got);
    if (!rc)
        rc = halve_levels(g, s, fill);
    if (rc)
        return rc;
    CK(cudaEventRecord(s->k0, s->st));
    for (int k = 0; k < g->nlevels; k++) {
        s->nout[k] = g->lv[k].dl ? level_nout(g, k, fill, last) : 0;
        if (s->nout[k] > 0 && (rc = launch_dedisperse(g, s, k)))
            return rc;
    }
    CK(cudaEventRecord(s->k1, s->st));
    for (int k = 0; k < g->nlevels; k++)
        if (s->nout[k] > 0)
            CK(cudaMemcpy2DAsync(s->hout[k], g->lv[k].hpitch * sizeof(float), s->dout[k],
                                 g->lv[k].ostride * sizeof(float), s->nout[k] * sizeof(float),
                                 g->lv[k].dl->ndm, cudaMemcpyDeviceToHost, s->st));
    CK(cudaEventRecord(s->done, s->st));
    s->issued = 1;
    return DDTK_OK;
}

static double elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms / 1000.0 : 0.0;
}

/* Level k's series of one gulp to their files (scrunch.c maps a level's DMs to the run's). */
static int write_level(ddtk_gpu_direct *g, const gulp_set *s, int k, ddtk_outset *out)
{
    const gpu_level *L = &g->lv[k];
    g->adds += (double)L->dl->ndm * s->nout[k] * L->dl->nchan;
    if (g->sc)
        return ddtk_scrunch_write(g->sc, k, s->hout[k], (size_t)L->hpitch, s->nout[k], out);
    for (int d = 0; d < L->dl->ndm; d++) {
        const float *series = s->hout[k] + (size_t)d * L->hpitch;
        if (g->opt.pad) {
            double sum = 0;
            for (int64_t t = 0; t < s->nout[k]; t++)
                sum += series[t];
            g->sums[d] += sum;
        }
        int rc = ddtk_outset_write(out, d, series, s->nout[k]);
        if (rc)
            return rc;
    }
    return DDTK_OK;
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
    for (int k = 0; k < g->nlevels; k++) {
        int rc = s->nout[k] > 0 ? write_level(g, s, k, out) : DDTK_OK;
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

/* --pad: extend every series to the input length with its mean (as the CPU driver). */
static int write_padding(ddtk_gpu_direct *g, ddtk_outset *out, int64_t nout)
{
    if (g->sc)
        return ddtk_scrunch_pad(g->sc, out);
    int rc = DDTK_OK;
    for (int d = 0; !rc && d < g->dl->ndm; d++)
        rc = ddtk_outset_pad(out, d, nout > 0 ? (float)(g->sums[d] / (double)nout) : 0.0f,
                             g->dl->maxdelay);
    return rc;
}

/* The gulp loop: read gulp g, issue it, then finish gulp g-1 while g runs.
 * total_out counts the finest level's outputs, as the CPU driver does. */
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
        if ((rc = issue_gulp(g, s, prev, got, fill, last)))
            return rc;
        if (prev && (rc = finish_gulp(g, prev, out)))
            return rc;
        *total_out += s->nout[g->first];
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
    if (!rc)
        rc = ddtk_check_run_length(g->in, g->dl->maxdelay, total_out);
    if (!rc && g->opt.pad)
        rc = write_padding(g, out, total_out);
    stats->nin = g->in->samples_read;
    stats->nout = total_out;
    stats->ndm = g->dl->ndm;
    stats->nlive = g->ch->nlive;
    stats->kernel = g->t_kernel;
    stats->adds = g->adds;
    stats->wall = ddtk_now() - t_start;
    stats->tobs = (double)g->in->samples_read * g->in->hdr.tsamp;
    stats->backend = "gpu";
    if (!rc && g->opt.verbose)
        ddtk_msg("GPU times: H2D %.4f s, overlap copy + unpack%s (with waits on the other stream) "
                 "%.4f s, kernels %.4f s, D2H %.4f s, wall %.4f s; "
                 "%.3g sample-adds/s in the kernels", g->t_h2d, g->sc ? " + halving" : "",
                 g->t_unpack, g->t_kernel, g->t_d2h, stats->wall,
                 g->t_kernel > 0 ? g->adds / g->t_kernel : 0.0);
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
    cudaFree(s->draw);
    for (int k = 0; k < MAX_LEVELS; k++) {
        cudaFree(s->drows[k]);
        cudaFreeHost(s->hout[k]);
        cudaFree(s->dout[k]);
    }
}

extern "C" void ddtk_gpu_direct_destroy(ddtk_gpu_direct *g)
{
    if (!g)
        return;
    for (int i = 0; i < 2; i++)
        free_set(&g->set[i]);
    for (int k = 0; k < MAX_LEVELS; k++) {
        cudaFree(g->lv[k].d_delay);
        cudaFree(g->lv[k].d_lo);
        cudaFree(g->lv[k].d_blocks);
    }
    cudaFree(g->d_rowmap);
    free(g->sums);
    free(g);
}
