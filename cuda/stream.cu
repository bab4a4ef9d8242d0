/*
 * stream.cu - the GPU streaming layer: any plug-in, any source, in gulps, on
 * one GPU or several.
 *
 * The gulps are the CPU layer's (stream_cpu.c): `step` new spectra behind
 * `keep`. Two buffer sets, each with its own CUDA stream and pinned host
 * buffers, alternate between gulps: while the GPU copies in, unpacks,
 * halves, dedisperses and copies out gulp g, the host writes the outputs of
 * gulp g-1 and reads gulp g+1. A set's input is staged (copied in,
 * cleaned, unpacked) on a stream of its own of the highest priority, so
 * that it runs beside the other set's kernels rather than after them, as
 * soon as it is read and the set's kernels of gulp g-1 are done. Raw
 * bytes travel to the device and are unpacked there; the `keep` overlap
 * moves device-to-device from the other set's rows. Level k's rows are
 * level k-1's halved (time scrunching), in an encoding that grows with the
 * factor (direct.cuh); each level with DMs runs its plug-in's GPU gulp.
 * Every CUDA call is checked (check.cuh).
 *
 * Several GPUs (--gpu LIST): the plan's DMs are split by cost into one
 * contiguous range per GPU (ddtk_plan_split), and each GPU is a pipeline of
 * its own (buffer sets, streams, rows, plug-in instances on level views of
 * its DMs) with the same gulp step, so every gulp gives every DM the same
 * samples as one GPU would. The host reads each gulp once, into a raw buffer
 * pinned for every device (cudaHostRegisterPortable): each GPU copies it in and
 * unpacks its own rows, so no host time goes to per-device copies or
 * unpacking, and PCIe carries packed samples.
 *
 * Set-up and streaming are threaded differently. Set-up is mostly waiting on
 * the driver (a context per device, device plans, page-locking the pinned
 * buffers at about half a second per GiB), so it runs on one host thread per
 * device (contexts and device plans), then, once the step is chosen from
 * every pipeline's bounds, one per buffer set (allocation and pinning); the
 * contexts themselves are started on background threads when the plan is made
 * (ddtk_gpu_warm_start), while the host builds it, opens the outputs and
 * makes and faults in the blocks it will pin (prefault).
 * Streaming has one host thread driving all pipelines: every device call is
 * asynchronous and the writer stays single-threaded; each call selects its
 * pipeline's device first (cudaSetDevice is per thread). The first read of
 * a run that makes the plan goes on while the set-up's warm-up gulps run on
 * the GPUs (warm_up); the reads after it run on a thread of their own (the
 * reader), beside the wait for and the writing of the gulp before, and
 * stage what they read (its only device calls, asynchronous like the
 * loop's). -v reports the two phases' times apart.
 *
 * Scaled PSRFITS of 8 bits or fewer (DAT_SCL, DAT_OFFS, DAT_WTS not the
 * identity: the plan's format is float32) travels as its raw integers, one
 * byte a value, with each row's multiply-add per IF and channel and each
 * spectrum's row (ddtk_source_pull_scaled), in the raw buffer sized for the
 * float32 spectra; the unpacking applies them, as the CPU decodes the rows.
 *
 * --rfi auto (without a mask) cleans on the device (rfi_gpu.cuh) what the
 * host's cleaner would clean, in its blocks counted from the input's start:
 * the input's cleaner hands its reads over for the run (they are then raw),
 * and each read goes on to a block's end (read_gulp), the spectra past the
 * gulp's end carried, cleaned, to the next gulp's raw buffer on the device
 * (stage_input), so that every block is cleaned whole, once; the unpacking
 * replaces what the cleaning flagged in the other blocks in its rows.
 *
 * A search sink (--search) is searched on the device (sps_gpu.cuh): after
 * each gulp's kernels, on the gulp's stream; with nothing else to write, the
 * series are not copied back at all.
 */
#include "check.cuh"
#include "engine.cuh"
#include "rfi_gpu.cuh"
#include "sps_gpu.cuh"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

using namespace ddgpu;

#define DEFAULT_STEP ((int64_t)1 << 17)
#define SMALLEST_PREFERRED ((int64_t)1 << 15)
#define PINNED_SET ((int64_t)256 << 20)  /* bytes of one buffer set, preferred most */
#define PIN_RATE 4e9                      /* bytes/s pinned in set-up (H100 host, two sets) */
#define GULP_COST 5e-4                    /* seconds of streaming a gulp adds (H100) */
#define MAX_STEP ((int64_t)1 << 22)       /* keeps the time-tile grid within 65535 */
#define WARM_UP 1                         /* a gulp of zeros on each set in the set-up */

/* A gulp's scaled PSRFITS in its raw buffer (ddtk_source_pull_scaled): the
 * bytes from 0, the spectra's rows at seg_off, nseg tables at tab_off. */
struct scaled_gulp {
    int64_t seg_off, tab_off;
    int nseg, sgn;
};

/* What read_gulp put in a raw buffer when the GPUs clean: nnew spectra from
 * `at` (a block's first), to follow on the device the carried block from
 * cstart (at - cstart spectra, cleaned by the gulp before); the gulp's got
 * spectra from the observation's spectrum cstart + first. */
struct clean_gulp {
    int64_t at, nnew, cstart, first, got;
    int done;                   /* the gulp is the input's last */
};

/* One level's device side: row encoding, the plug-in's state, pitches. */
struct gpu_level {
    Encoding enc;
    void *state;                /* NULL: no DM here at this factor (its rows feed the next) */
    int64_t slack;              /* columns the kernels may read past the data */
    int64_t stride, ostride;    /* device row and output pitches (elements) */
    int64_t hpitch;             /* host output row: the most outputs one gulp gives */
};

/* One of a pipeline's two alternating buffer sets, with rows and outputs per
 * level. Level 0 runs on st, level k > 0 on lst[k], forked after the halving
 * (k0) and joined by lev[k]: a scrunched level's grid is a fraction of the
 * GPU (AstroAccelerate's ranges: 72 to 192 blocks against 660 resident), so
 * the levels run side by side. */
struct gulp_set {
    cudaStream_t st, lst[DDTK_MAX_LEVELS], stage;   /* stage: stage_input's */
    cudaEvent_t h2d0, h2d1, k0, k1, done, unpacked, lev[DDTK_MAX_LEVELS];
    uint8_t *draw;
    void *drows[DDTK_MAX_LEVELS];
    float *hout[DDTK_MAX_LEVELS], *dout[DDTK_MAX_LEVELS];
    int64_t nout[DDTK_MAX_LEVELS];
    int issued;
    int staged;                 /* its staging's times not yet counted (stage_times) */
    int64_t cstart;             /* the GPUs cleaning: the observation's spectrum at draw */
};

/* One GPU's pipeline: its DMs [dm0, dm1) of the plan, held by level views
 * (view[k]: level k's DMs among them), levels 0 .. nlevels-1. */
struct gpu_pipe {
    int dev, dm0, dm1, nlevels;
    cudaDeviceProp prop;
    ddtk_level view[DDTK_MAX_LEVELS];
    gpu_level lv[DDTK_MAX_LEVELS];
    int *d_rowmap;
    gulp_set set[2];
    double t_h2d, t_unpack, t_kernel, t_d2h;
    int warmed;                 /* its context was made early (ddtk_gpu_warm_start) */
    double t_context, t_ready;  /* set-up (-v): its context's making and when it was ready
                                   (from the set-up's start: < 0 before), device plans, */
    double t_plans, t_sets[2];  /* each buffer set's allocation and pinning, the warm-up */
    double t_warm;
    ddtk_sps_gpu *search;       /* this run's single-pulse search, or NULL */
    int d2h;                    /* the series go to the host (not when only searched) */
    ddtk_rfi_gpu *rfi;          /* its RFI cleaner, the GPUs cleaning; or NULL */
};

/* Host blocks made and faulted in while the contexts start (prefault), taken
 * by pin() by their exact size; what none takes is freed after the set-up.
 * Past MAX_PREFAULTED blocks (many GPUs) the rest are pinned as they come. */
#define MAX_PREFAULTED (2 + 2 * DDTK_MAX_LEVELS * 8)
struct prefaulted {
    int64_t step;               /* the step they were made for */
    int n;
    void *p[MAX_PREFAULTED];
    size_t bytes[MAX_PREFAULTED];
};

struct ddtk_gpu_stream {
    const ddtk_plan *plan;      /* read only: the views made for shares are freed here */
    const ddtk_gpu_algo *algo;
    int npipe;
    gpu_pipe *pipe;
    int64_t step;
    uint8_t *hraw[2];           /* each set's raw spectra, pinned for every device */
    int scaled, maxseg;         /* this run reads scaled PSRFITS as bytes and tables: */
    scaled_gulp sc[2];          /* each raw buffer's */
    int cleaning;               /* the GPUs clean (--rfi auto, rfi_gpu.cu) inputs of cg, */
    ddtk_clean_geom cg;
    int64_t extra;              /* with host raw buffers of keep + step + extra spectra (a
                                   block: reads end on one's end), the GPUs' a block more; */
    int64_t c_read, c_used;     /* the run's spectra read, and given to gulps; */
    clean_gulp cl[2];           /* each raw buffer's */
    prefaulted pre;
    /* -v: the set-up's start and its pinning of each raw buffer, and the
     * host's part of the last run's streaming: reads, waits on the GPUs, the
     * writer, and the gulps' spans (one gulp's issue to the next's) */
    double t_setup, t_pin[2];
    double t_read, t_wait, t_write, t_first, t_slowest, t_gulps, t_mark;
    int nspans, slowest;
    /* The first gulp of a run that made the plan, read into hraw[0] during
     * the warm-up (warm_up): its spectra (-1: none read) and read's time. */
    int64_t first_got;
    double t_first_read;
};

/* ---- levels ------------------------------------------------------------------------ */

/* The pipeline's device selected, its context made here where no thread
 * made it early (--gpu all's further GPUs), timed for -v. */
static int start_device(const ddtk_gpu_stream *s, gpu_pipe *g)
{
    int n = 0;
    DDTK_CUDA(cudaGetDeviceCount(&n), "counting GPUs");
    if (g->dev >= n)
        return ddtk_fail(DDTK_ESYS, "GPU index %d: only %d GPU%s visible", g->dev, n,
                         n == 1 ? "" : "s");
    DDTK_CUDA(cudaSetDevice(g->dev), "selecting the GPU");
    if (!g->warmed) {
        const double t = ddtk_now();
        DDTK_CUDA(cudaFree(0), "making the GPU's context");
        g->t_context = ddtk_now() - t;
        g->t_ready = ddtk_now() - s->t_setup;
    }
    DDTK_CUDA(cudaGetDeviceProperties(&g->prop, g->dev), "reading the GPU's properties");
    return DDTK_OK;
}

/* The pipeline's levels: views of its DMs, up to the coarsest holding any. */
static int plan_levels(const ddtk_gpu_algo *algo, gpu_pipe *g, const ddtk_plan *p)
{
    Encoding base = choose_encoding(p->fmt.nbits, p->fmt.signed_data == 1,
                                    p->pol == DDTK_POL_SUM, p->d.zerodm);
    for (int k = 0; k < p->nlevels; k++) {
        int rc = ddtk_level_view(p, k, g->dm0, g->dm1, &g->view[k]);
        if (rc)
            return rc;
        g->nlevels = g->view[k].ndm ? k + 1 : g->nlevels;
    }
    for (int k = 0; k < g->nlevels; k++) {
        gpu_level *L = &g->lv[k];
        L->enc = scrunched_encoding(base, 1 << k);
        L->slack = 256;
        if (!g->view[k].ndm)
            continue;
        int rc = algo->create(p, &g->view[k], L->enc, g->prop, &L->state, &L->slack);
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

/* Bytes of a gulp's raw input, and of level k's host outputs for ndm DMs,
 * at step s: every buffer's size comes from these (prefault matches by size). */
static size_t raw_bytes(const ddtk_plan *p, int64_t s, int64_t extra)
{
    return (size_t)ddtk_plan_raw_bytes(p, p->keep + s + extra);
}

static size_t out_bytes(const ddtk_plan *p, int k, int64_t ndm, int64_t s)
{
    return (size_t)ndm * (size_t)ddtk_level_most_out(p, k, s) * sizeof(float);
}

/* Host bytes of one buffer set (a gulp's raw input and outputs) at step s. */
static int64_t set_bytes(const ddtk_plan *p, int64_t s, int64_t extra)
{
    size_t bytes = raw_bytes(p, s, extra);
    for (int k = 0; k < p->nlevels; k++)
        bytes += out_bytes(p, k, p->lv[k].ndm, s);
    return (int64_t)bytes;
}

/* Memory bounds of a step: host (--max-mem) for the raw buffers and every
 * pipeline's outputs, and per pipeline its share of its device's free memory. */
typedef struct budget {
    const ddtk_gpu_stream *g;
    int64_t host_max, host;
    int64_t dev_max[DDTK_MAX_GPUS], dev[DDTK_MAX_GPUS];
    int worst;                  /* the pipeline nearest its bound */
} budget;

/* Two buffer sets of a step. */
static int fits(const ddtk_plan *p, int64_t step, void *ctx)
{
    budget *b = (budget *)ctx;
    int64_t raw = (int64_t)raw_bytes(p, step, 2 * b->g->extra);
    int ok = 1;
    b->host = set_bytes(p, step, b->g->extra);
    b->worst = 0;
    for (int i = 0; i < b->g->npipe; i++) {
        const gpu_pipe *g = &b->g->pipe[i];
        b->dev[i] = raw;
        for (int k = 0; k < g->nlevels; k++) {
            const gpu_level *L = &g->lv[k];
            int64_t ndm = g->view[k].ndm;
            b->dev[i] += (int64_t)p->ch.nlive * row_stride(p, L, k, step)
                         * storage_bytes(L->enc.storage);
            const int64_t most = ddtk_level_most_out(p, k, step);
            b->dev[i] += ndm * ddtk_round_up(most, 64) * 4;
            if (L->state && b->g->algo->dev_bytes)
                b->dev[i] += b->g->algo->dev_bytes(L->state, most);
        }
        ok &= 2 * b->dev[i] <= b->dev_max[i];
        if ((double)b->dev[i] / b->dev_max[i] > (double)b->dev[b->worst] / b->dev_max[b->worst])
            b->worst = i;
    }
    return ok && 2 * b->host <= b->host_max;
}

/* The plan's gpu_mem caps the device memory of the gulp buffers (a test knob). */
static int64_t device_budget(const ddtk_plan *p, size_t free_b)
{
    int64_t cap = p->d.gpu_mem, have = (int64_t)(free_b * 0.8);
    return cap > 0 && cap < have ? cap : have;
}

/* Each pipeline may take 80% of its device's free memory, shared equally by
 * pipelines on one device (--gpu 0,0). */
static int device_bounds(const ddtk_gpu_stream *g, const ddtk_plan *p, budget *b)
{
    for (int i = 0; i < g->npipe; i++) {
        size_t free_b = 0, total_b = 0;
        int same = 0;
        for (int j = 0; j < g->npipe; j++)
            same += g->pipe[j].dev == g->pipe[i].dev;
        DDTK_CUDA(cudaSetDevice(g->pipe[i].dev), "selecting the GPU");
        DDTK_CUDA(cudaMemGetInfo(&free_b, &total_b), "reading free GPU memory");
        b->dev_max[i] = device_budget(p, free_b) / same;
    }
    return DDTK_OK;
}

/* The gulp to start from: DEFAULT_STEP, halved while one buffer set would
 * pass PINNED_SET or, for an input of known length, the set that costs least.
 * Set-up pins two sets before the first gulp, at about PIN_RATE, and every
 * gulp adds about GULP_COST to the streaming (launches, waits between
 * streams), so 2 B / PIN_RATE + GULP_COST * total / B is least for sets of
 * B = sqrt(GULP_COST * PIN_RATE * total / 2) bytes (total: every gulp's set
 * bytes). H100, workload A, tolerance list --scrunch auto (1196 DMs, 67 s):
 * wall 0.41 s at 2^17 spectra, 0.35 s at 2^16, 0.30 s at 2^15; inputs past
 * about 15 minutes keep the PINNED_SET bound. */
static int64_t preferred_step(const ddtk_plan *p, const ddtk_source *src)
{
    for (int64_t s = DEFAULT_STEP;; s /= 2) {
        double bytes = (double)set_bytes(p, s, 0), most = (double)PINNED_SET;
        if (src->nsamples > 0)
            most = fmin(most, sqrt(GULP_COST * PIN_RATE * bytes * src->nsamples / s / 2));
        if (s <= SMALLEST_PREFERRED || bytes <= most)
            return s;
    }
}

/* The step from preferred_step down that fits ctx's bounds, rounded to the
 * plan's alignment: one rule for the buffers and the blocks prefaulted for
 * them, which are matched by size. */
static int gpu_step(const ddtk_plan *p, const ddtk_source *src,
                    int (*fit)(const ddtk_plan *, int64_t, void *), void *ctx, int64_t *step)
{
    if (!ddtk_choose_step(p, src, preferred_step(p, src), MAX_STEP, fit, ctx, step))
        return 0;
    *step = ddtk_round_up(*step, p->align);
    return 1;
}

static int choose_step(const ddtk_gpu_stream *g, const ddtk_plan *p, const ddtk_source *src,
                       int64_t *step)
{
    budget b;
    memset(&b, 0, sizeof b);
    b.g = g;
    b.host_max = p->d.max_mem > 0 ? p->d.max_mem : DDTK_DEFAULT_MAX_MEM;
    int rc = device_bounds(g, p, &b);
    if (rc)
        return rc;
    if (!gpu_step(p, src, fits, &b, step))
        return ddtk_fail(DDTK_EUSAGE, "%s: a GPU gulp of %lld spectra plus the maximum delay of "
                         "%d needs %.0f MiB of host and %.0f MiB of GPU memory (memory bound "
                         "%.0f MiB, %.0f MiB for it on GPU %d)", src->name, (long long)*step,
                         p->maxdelay,
                         2 * b.host / 1048576.0, 2 * b.dev[b.worst] / 1048576.0,
                         b.host_max / 1048576.0, b.dev_max[b.worst] / 0.8 / 1048576.0,
                         g->pipe[b.worst].dev);
    return DDTK_OK;
}

static void set_pitches(gpu_pipe *g, const ddtk_plan *p, int64_t step)
{
    for (int k = 0; k < g->nlevels; k++) {
        gpu_level *L = &g->lv[k];
        L->stride = row_stride(p, L, k, step);
        if (g->view[k].ndm) {
            L->hpitch = ddtk_level_most_out(p, k, step);
            L->ostride = ddtk_round_up(L->hpitch, 64);
        }
    }
}

/* A block of exactly bytes from the prefaulted ones, or NULL; set-up jobs
 * call this on several threads. */
static void *take_prefaulted(prefaulted *pre, size_t bytes)
{
    for (int i = 0; i < pre->n; i++)
        if (pre->bytes[i] == bytes) {
            void *q = __atomic_exchange_n(&pre->p[i], (void *)NULL, __ATOMIC_ACQ_REL);
            if (q)
                return q;
        }
    return NULL;
}

static void drop_prefaulted(prefaulted *pre)
{
    for (int i = 0; i < pre->n; i++)
        free(pre->p[i]);
    pre->n = 0;
}

/* The host's bound on a step: --max-mem for two sets of raw buffers with
 * `extra` spectra each. */
typedef struct host_budget {
    int64_t most, extra;
} host_budget;

static int host_fits(const ddtk_plan *p, int64_t step, void *ctx)
{
    const host_budget *b = (const host_budget *)ctx;
    return 2 * set_bytes(p, step, b->extra) <= b->most;
}

/* Level k's DMs among plan DMs [dm0, dm1) (a pipeline's share). */
static int share_ndm(const ddtk_plan *p, int k, int dm0, int dm1)
{
    int n = 0;
    for (int j = 0; j < p->lv[k].ndm; j++)
        n += p->lv[k].index[j] >= dm0 && p->lv[k].index[j] < dm1;
    return n;
}

/* While the contexts start, the host has nothing to do: make the pinned
 * buffers' blocks for the step the host's memory allows (the device's rarely
 * lowers it; then they go unused) and fault their pages in, so that
 * registering them later only pins them (H100 host, 256 MiB: 0.007 s
 * against 0.056 s for untouched memory, whose faults the registration
 * takes): the raw input and every pipeline's outputs of its share. */
static void prefault(prefaulted *pre, const ddtk_gpu_stream *s, const ddtk_plan *p,
                     const ddtk_source *src)
{
    host_budget b = { p->d.max_mem > 0 ? p->d.max_mem : DDTK_DEFAULT_MAX_MEM, s->extra };
    int64_t step;
    if (!gpu_step(p, src, host_fits, &b, &step))
        return;
    pre->step = step;
    size_t want[MAX_PREFAULTED];
    int n = 0;
    for (int set = 0; set < 2; set++) {
        want[n++] = raw_bytes(p, step, s->extra);
        for (int i = 0; i < s->npipe; i++)
            for (int k = 0; k < p->nlevels; k++) {
                int ndm = share_ndm(p, k, s->pipe[i].dm0, s->pipe[i].dm1);
                if (ndm && n < MAX_PREFAULTED)
                    want[n++] = out_bytes(p, k, ndm, step);
            }
    }
    for (pre->n = 0; pre->n < n; pre->n++) {
        const size_t bytes = want[pre->n], chunk = (size_t)2 << 20;
        uint8_t *q = (uint8_t *)ddtk_malloc_large(bytes, "host buffers");
        if (!q)
            break;
        pre->p[pre->n] = q;
        pre->bytes[pre->n] = bytes;
#pragma omp parallel for schedule(static) num_threads(ddtk_threads())
        for (size_t at = 0; at < bytes; at += chunk)
            memset(q + at, 0, bytes - at < chunk ? bytes - at : chunk);
    }
}

/* Page-locked host memory: 2 MiB pages registered with the driver. On the
 * H100 host this pins 1 GiB in 0.18 s where cudaHostAlloc takes 0.56 s, and
 * several threads pinning at once scale (0.08 s on 8), where cudaHostAlloc
 * stays serial. Blocks made while the contexts started (prefault) have
 * their pages already, so registering them only pins them. */
static int pin(prefaulted *pre, void **p, size_t bytes, unsigned flags, const char *what)
{
    if (!(*p = take_prefaulted(pre, bytes)) && !(*p = ddtk_malloc_large(bytes, what)))
        return DDTK_ESYS;
    cudaError_t e = cudaHostRegister(*p, bytes, flags);
    if (e != cudaSuccess) {
        free(*p);
        *p = NULL;
        return ddtk_cuda_fail(what, e);
    }
    return DDTK_OK;
}

static void unpin(void *p)
{
    if (p && cudaHostUnregister(p) != cudaSuccess)
        cudaGetLastError();
    free(p);
}

static int allocate_set(const gpu_pipe *g, const ddtk_plan *p, int64_t step, int64_t extra,
                        gulp_set *s, prefaulted *pre)
{
    size_t raw = raw_bytes(p, step, 2 * extra);    /* and a carried block (clean_gulp) */
    DDTK_CUDA(cudaStreamCreateWithFlags(&s->st, cudaStreamNonBlocking), "creating a stream");
    int least, greatest;
    DDTK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest), "reading stream priorities");
    DDTK_CUDA(cudaStreamCreateWithPriority(&s->stage, cudaStreamNonBlocking, greatest),
              "creating a stream");
    cudaEvent_t *ev[] = { &s->h2d0, &s->h2d1, &s->k0, &s->k1, &s->done, &s->unpacked };
    for (int i = 0; i < 6; i++)
        DDTK_CUDA(cudaEventCreate(ev[i]), "creating an event");
    DDTK_CUDA(cudaMalloc((void **)&s->draw, raw), "allocating input");
    if (g->rfi) {
        int rc = ddtk_rfi_gpu_reserve(g->rfi, (int)(s - g->set), p->keep + step + 2 * extra);
        if (rc)
            return rc;
    }
    s->lst[0] = s->st;
    for (int k = 0; k < g->nlevels; k++) {
        const gpu_level *L = &g->lv[k];
        if (k && g->view[k].ndm) {
            DDTK_CUDA(cudaStreamCreateWithFlags(&s->lst[k], cudaStreamNonBlocking),
                      "creating a stream");
            DDTK_CUDA(cudaEventCreateWithFlags(&s->lev[k], cudaEventDisableTiming),
                      "creating an event");
        }
        size_t rows = (size_t)p->ch.nlive * L->stride * storage_bytes(L->enc.storage);
        DDTK_CUDA(cudaMalloc(&s->drows[k], rows), "allocating rows");
        /* Columns past the data are read by the last tiles (their outputs are dropped). */
        DDTK_CUDA(cudaMemset(s->drows[k], 0, rows), "clearing rows");
        if (!g->view[k].ndm)
            continue;
        size_t ndm = (size_t)g->view[k].ndm;
        int rc = pin(pre, (void **)&s->hout[k], out_bytes(p, k, g->view[k].ndm, step),
                     cudaHostRegisterDefault, "pinning outputs");
        if (rc)
            return rc;
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
    if (s->stage) {
        cudaStreamSynchronize(s->stage);
        cudaStreamDestroy(s->stage);
    }
    cudaEvent_t ev[] = { s->h2d0, s->h2d1, s->k0, s->k1, s->done, s->unpacked };
    for (int i = 0; i < 6; i++)
        if (ev[i])
            cudaEventDestroy(ev[i]);
    cudaFree(s->draw);
    for (int k = 0; k < DDTK_MAX_LEVELS; k++) {
        if (k && s->lst[k]) {
            cudaStreamSynchronize(s->lst[k]);
            cudaStreamDestroy(s->lst[k]);
        }
        if (s->lev[k])
            cudaEventDestroy(s->lev[k]);
        cudaFree(s->drows[k]);
        unpin(s->hout[k]);
        cudaFree(s->dout[k]);
    }
}

static void free_pipe(const ddtk_gpu_algo *algo, const ddtk_plan *p, gpu_pipe *g)
{
    if (cudaSetDevice(g->dev) != cudaSuccess)
        cudaGetLastError();
    for (int i = 0; i < 2; i++)
        free_set(&g->set[i]);
    for (int k = 0; k < DDTK_MAX_LEVELS; k++) {
        if (g->lv[k].state)
            algo->destroy(g->lv[k].state);
        ddtk_level_view_free(p, &g->view[k]);
    }
    cudaFree(g->d_rowmap);
    ddtk_rfi_gpu_free(g->rfi);
}

extern "C" void ddtk_gpu_stream_free(ddtk_gpu_stream *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->npipe; i++)
        free_pipe(g->algo, g->plan, &g->pipe[i]);
    for (int i = 0; i < 2; i++)
        unpin(g->hraw[i]);
    free(g->pipe);
    free(g);
}

/* ---- contexts made early ------------------------------------------------------------ */

/* A context takes a few tenths of a second per device: the plan's are made on
 * background threads, one per device, while the host builds the plan and
 * opens the outputs. A failure here is left for the set-up to meet and report. */
struct warm_context {
    int dev, joined;
    double start, end;          /* when its thread began and ended (ddtk_now) */
    pthread_t thread;
};

struct ddtk_gpu_warm {
    int n;
    warm_context c[DDTK_MAX_GPUS];
};

static void *make_context(void *arg)
{
    warm_context *c = (warm_context *)arg;
    c->start = ddtk_now();
    if (cudaSetDevice(c->dev) != cudaSuccess || cudaFree(0) != cudaSuccess)
        cudaGetLastError();
    c->end = ddtk_now();
    return NULL;
}

extern "C" ddtk_gpu_warm *ddtk_gpu_warm_start(const int *gpus, int n)
{
    ddtk_gpu_warm *w = (ddtk_gpu_warm *)calloc(1, sizeof *w);
    for (int i = 0; w && i < n && i < DDTK_MAX_GPUS; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= gpus[j] == gpus[i];
        w->c[w->n].dev = gpus[i];
        if (!seen && pthread_create(&w->c[w->n].thread, NULL, make_context, &w->c[w->n]) == 0)
            w->n++;
    }
    return w;
}

/* The contexts of s's pipelines made, with how long each took (-v); those
 * of GPUs --gpu all leaves unused are joined with the plan. Returns whether
 * any is left. */
static int warm_join(ddtk_gpu_warm *w, ddtk_gpu_stream *s, double t0)
{
    int left = 0;
    for (int i = 0; w && i < w->n; i++) {
        warm_context *c = &w->c[i];
        int used = !s;
        for (int j = 0; s && j < s->npipe; j++)
            used |= s->pipe[j].dev == c->dev;
        if (c->joined || !used) {
            left |= !c->joined;
            continue;
        }
        pthread_join(c->thread, NULL);
        c->joined = 1;
        for (int j = 0; s && j < s->npipe; j++)
            if (s->pipe[j].dev == c->dev) {
                s->pipe[j].warmed = 1;
                s->pipe[j].t_context = c->end - c->start;
                s->pipe[j].t_ready = c->end - t0;
            }
    }
    return left;
}

extern "C" void ddtk_gpu_warm_join(ddtk_gpu_warm *w)
{
    warm_join(w, NULL, 0);
    free(w);
}

static void report_plan(const ddtk_gpu_stream *s, const ddtk_plan *p)
{
    for (int i = 0; i < s->npipe; i++) {
        const gpu_pipe *g = &s->pipe[i];
        if (s->npipe > 1)
            ddtk_report(DDTK_MSG_VERBOSE, "GPU %d (%s): DMs %d to %d of %d (%g to %g pc cm^-3)",
                        g->dev, g->prop.name, g->dm0, g->dm1 - 1, p->d.ndm, p->dms[g->dm0],
                        p->dms[g->dm1 - 1]);
        for (int k = 0; k < g->nlevels; k++) {
            char level[64] = "", what[512];
            if (!g->lv[k].state)
                continue;
            if (p->nlevels > 1)
                snprintf(level, sizeof level, ", scrunched x%d (%d DMs)", 1 << k,
                         g->view[k].ndm);
            s->algo->report(g->lv[k].state, what, sizeof what);
            ddtk_report(DDTK_MSG_VERBOSE, "GPU %d (%s, compute capability %d.%d)%s: %s; gulp "
                        "%lld spectra", g->dev, g->prop.name, g->prop.major, g->prop.minor, level,
                        what, (long long)s->step);
        }
    }
}

/* ---- set-up ------------------------------------------------------------------------ */

/* A set-up job: its part i of a stream's set-up, on a host thread of its own. */
typedef int (*setup_job)(ddtk_gpu_stream *s, const ddtk_plan *p, int i);

/* Jobs 0 .. n-1 on n host threads. The lowest failing job's code and message
 * are returned (ddtk_fail's slot is per thread, so it is carried over); the
 * other jobs run to their end and what they made is freed with the stream. */
static int run_jobs(setup_job job, ddtk_gpu_stream *s, const ddtk_plan *p, int n)
{
    ddtk_thread_error err;
    ddtk_thread_error_init(&err);
#pragma omp parallel for num_threads(n > 0 ? n : 1) schedule(static, 1)
    for (int i = 0; i < n; i++) {
        int rc = job(s, p, i);
        if (rc)
            ddtk_thread_error_keep(&err, i, rc);
    }
    return ddtk_thread_error_end(&err);
}

/* Job i: if pipeline i is the first on its device, the context and device
 * plans of every pipeline on that device, in order. Pipelines sharing a
 * device (--gpu 0,0) share a thread because plug-ins raise a kernel's
 * shared-memory limit, a per-device attribute, by a read and a write
 * (prepare_kernels, allow_smem) that two threads could interleave. */
static int start_pipes(ddtk_gpu_stream *s, const ddtk_plan *p, int i)
{
    const int dev = s->pipe[i].dev;
    for (int j = 0; j < i; j++)
        if (s->pipe[j].dev == dev)
            return DDTK_OK;
    for (int j = i; j < s->npipe; j++) {
        gpu_pipe *g = &s->pipe[j];
        const double t = ddtk_now();
        int rc = g->dev != dev ? DDTK_OK : start_device(s, g);
        if (!rc && g->dev == dev)
            rc = plan_levels(s->algo, g, p);
        if (!rc && g->dev == dev && s->cleaning)    /* every pipeline cleans; the first counts */
            rc = ddtk_rfi_gpu_create(&g->rfi, &s->cg, 2, j == 0);
        if (rc)
            return rc;
        g->t_plans = ddtk_now() - t;
    }
    return DDTK_OK;
}

static int warm_up(ddtk_gpu_stream *s, const ddtk_plan *p, ddtk_source *src);

/* Jobs 0 and 1: the raw input buffers, pinned for every device; job 2 + 2j + k:
 * buffer set k of pipeline j. */
static int allocate_job(ddtk_gpu_stream *s, const ddtk_plan *p, int i)
{
    gpu_pipe *g = &s->pipe[i < 2 ? 0 : (i - 2) / 2];
    const double t = ddtk_now();
    DDTK_CUDA(cudaSetDevice(g->dev), "selecting the GPU");
    int rc = i < 2 ? pin(&s->pre, (void **)&s->hraw[i], raw_bytes(p, s->step, s->extra),
                         cudaHostRegisterPortable, "pinning input")
                   : allocate_set(g, p, s->step, s->extra, &g->set[i % 2], &s->pre);
    *(i < 2 ? &s->t_pin[i] : &g->t_sets[i % 2]) = ddtk_now() - t;
    return rc;
}

/* How many of the plan's GPUs to use: an explicit list as given; all of
 * them (--gpu all) as many as the cost model finds faster than fewer, every
 * one for an input of unknown length (a stream is long). */
static int gpus_to_use(const ddtk_plan *p, const ddtk_source *src, const ddtk_writer *w)
{
    if (p->d.ngpus != DDTK_GPUS_ALL || p->ngpu < 2)
        return p->ngpu;
    char why[512] = "the input's length is unknown";
    int n = p->ngpu;
    if (src->nsamples > 0) {
        ddtk_gpu_cost c;
        ddtk_gpu_cost_of(p, src->nsamples, !ddtk_writer_discards(w), &c);
        n = ddtk_gpu_choose(&c, p->ngpu, why, sizeof why);
    }
    if (p->d.verbose)
        ddtk_report(DDTK_MSG_VERBOSE, "all GPUs: using %d of %d: %s", n, p->ngpu, why);
    return n;
}

/* One pipeline per GPU of the first n with a share of the DMs (none for more
 * GPUs than DMs): host work only, before the contexts are ready. */
static int split_pipes(ddtk_gpu_stream *s, const ddtk_plan *p, int n)
{
    int first[DDTK_MAX_GPUS + 1];
    int rc = ddtk_plan_split(p, n, first);
    if (rc)
        return rc;
    if (!(s->pipe = (gpu_pipe *)ddtk_calloc((size_t)n, sizeof *s->pipe, "GPU pipelines")))
        return DDTK_ESYS;
    for (int j = 0; j < n; j++) {
        if (first[j] == first[j + 1]) {
            if (p->d.verbose)
                ddtk_report(DDTK_MSG_VERBOSE, "GPU %d: no DMs (%d GPUs for %d DMs)", p->gpus[j],
                            n, p->d.ndm);
            continue;
        }
        gpu_pipe *g = &s->pipe[s->npipe++];
        g->dev = p->gpus[j];
        g->dm0 = first[j];
        g->dm1 = first[j + 1];
    }
    return DDTK_OK;
}

/* The device plan of a first run; kept while later runs need the same step.
 * The step needs every pipeline's device bounds: pipelines first, then the
 * step, then the buffers, then a warm-up gulp. part: seconds waiting for the
 * contexts, making the device plans, allocating and pinning the buffers,
 * warming up. */
static int create(ddtk_plan *p, ddtk_source *src, const ddtk_writer *w,
                  const ddtk_clean_geom *cg, double part[4])
{
    double t0 = ddtk_now();
    ddtk_gpu_stream *s = (ddtk_gpu_stream *)ddtk_calloc(1, sizeof *s, "GPU plan");
    if (!s)
        return DDTK_ESYS;
    p->gpu = s;
    s->plan = p;
    s->algo = p->algo->gpu;
    s->t_setup = t0;
    s->first_got = -1;
    if (cg) {
        s->cleaning = 1;
        s->cg = *cg;
        s->extra = cg->block;
    }
    int rc = split_pipes(s, p, gpus_to_use(p, src, w));
    if (!rc)
        prefault(&s->pre, s, p, src);
    if (!warm_join(p->warm, s, t0)) {   /* else GPUs left unused: joined with the plan */
        ddtk_gpu_warm_join(p->warm);
        p->warm = NULL;
    }
    double t1 = ddtk_now();
    if (!rc)
        rc = run_jobs(start_pipes, s, p, s->npipe);
    double t2 = ddtk_now();
    if (!rc)
        rc = choose_step(s, p, src, &s->step);
    for (int i = 0; i < s->npipe && !rc; i++)
        set_pitches(&s->pipe[i], p, s->step);
    if (s->step != s->pre.step)  /* lowered for the device: no block fits */
        drop_prefaulted(&s->pre);
    if (!rc)
        rc = run_jobs(allocate_job, s, p, 2 + 2 * s->npipe);
    drop_prefaulted(&s->pre);
    double t3 = ddtk_now();
    if (!rc && WARM_UP) {
        memset(s->hraw[0], 0, raw_bytes(p, s->step, s->extra));
        memset(s->hraw[1], 0, raw_bytes(p, s->step, s->extra));
        rc = warm_up(s, p, src);
    }
    part[0] = t1 - t0, part[1] = t2 - t1, part[2] = t3 - t2, part[3] = ddtk_now() - t3;
    if (!rc && p->d.verbose)
        report_plan(s, p);
    return rc;
}

/* A plan's stream for this run: the last run's where its step and its
 * cleaning (cg: the GPUs clean inputs of this geometry; NULL: none) are
 * this run's. */
static int prepare(ddtk_plan *p, ddtk_source *src, const ddtk_writer *w,
                   const ddtk_clean_geom *cg, double part[4])
{
    if (p->gpu) {
        int64_t step;
        ddtk_gpu_stream *g = p->gpu;
        const int same = g->cleaning == (cg != NULL)
                         && (!cg || memcmp(&g->cg, cg, sizeof *cg) == 0);
        int rc = same ? choose_step(g, p, src, &step) : DDTK_OK;
        g->first_got = -1;
        if (rc || (same && step == g->step))
            return rc;
        ddtk_gpu_stream_free(g);
        p->gpu = NULL;
    }
    int rc = create(p, src, w, cg, part);
    if (rc) {
        ddtk_gpu_stream_free(p->gpu);
        p->gpu = NULL;
    }
    return rc;
}

/* ---- execution ---------------------------------------------------------------------- */

/* The GPUs cleaning: the gulp's raw spectra on the device, cleaned. The
 * carried block (cleaned by the gulp before, in prev's staging) comes from
 * prev's raw buffer, then the new spectra after it; this stream waits for
 * prev's staging first, as the gulp after this one writes prev's buffer. */
static int stage_cleaned(const gpu_pipe *g, const ddtk_plan *p, gulp_set *s,
                         const gulp_set *prev, const uint8_t *hraw, const clean_gulp *cl,
                         cudaStream_t st)
{
    const int64_t carry = cl->at - cl->cstart;
    const size_t cbytes = (size_t)ddtk_plan_raw_bytes(p, carry);
    if (prev)
        DDTK_CUDA(cudaStreamWaitEvent(st, prev->unpacked, 0), "ordering streams");
    if (carry > 0)
        DDTK_CUDA(cudaMemcpyAsync(s->draw, prev->draw + ddtk_plan_raw_bytes(p, cl->cstart
                                                                            - prev->cstart),
                                  cbytes, cudaMemcpyDeviceToDevice, st),
                  "carrying a cleaned block");
    if (cl->nnew > 0)
        DDTK_CUDA(cudaMemcpyAsync(s->draw + cbytes, hraw, (size_t)ddtk_plan_raw_bytes(p, cl->nnew),
                                  cudaMemcpyHostToDevice, st), "copying input to the GPU");
    DDTK_CUDA(cudaEventRecord(s->h2d1, st), "recording an event");
    s->cstart = cl->cstart;
    return cl->nnew > 0 ? ddtk_rfi_gpu_clean(g->rfi, (int)(s - g->set), s->draw + cbytes,
                                             cl->nnew, cl->at, st)
                        : DDTK_OK;
}

/* H2D of `got` new spectra (the GPUs cleaning: cl's), the keep overlap from
 * the other set, unpacking at col. */
static int stage_input(const gpu_pipe *g, const ddtk_plan *p, int64_t step, gulp_set *s,
                       const gulp_set *prev, const uint8_t *hraw, int64_t got, int64_t col,
                       const scaled_gulp *sc, const clean_gulp *cl)
{
    const gpu_level *L0 = &g->lv[0];
    size_t es = (size_t)storage_bytes(L0->enc.storage);
    /* The staging goes first: its own stream of the highest priority, after
     * the set's last gulp. On the gulp's stream, queued behind the other
     * set's kernels, it waited for their end (one H100, htru8 60 s,
     * streaming: dd_fdmt 0.180 -> 0.150-0.155 s, dd_tree 0.196 -> 0.158 s,
     * dd_direct's 1196 DMs 0.1347 s either way; the GPU's RFI cleaning cost
     * 2 ms a gulp there). It waits for that gulp's kernels, which read the
     * rows it writes, not for their outputs' copy (stage_gulp). */
    cudaStream_t st = s->stage;
    DDTK_CUDA(cudaStreamWaitEvent(st, s->k1, 0), "ordering streams");
    DDTK_CUDA(cudaEventRecord(s->h2d0, st), "recording an event");
    const int64_t vals = (int64_t)p->fmt.nifs * p->fmt.nchans;
    if (cl) {
        int rc = stage_cleaned(g, p, s, prev, hraw, cl, st);
        if (rc)
            return rc;
    } else if (got > 0 && sc) {
        DDTK_CUDA(cudaMemcpyAsync(s->draw, hraw, (size_t)(got * vals), cudaMemcpyHostToDevice,
                                  st), "copying input to the GPU");
        DDTK_CUDA(cudaMemcpyAsync(s->draw + sc->seg_off, hraw + sc->seg_off,
                                  (size_t)got * sizeof(int32_t), cudaMemcpyHostToDevice, st),
                  "copying input to the GPU");
        DDTK_CUDA(cudaMemcpyAsync(s->draw + sc->tab_off, hraw + sc->tab_off,
                                  (size_t)(sc->nseg * 2 * vals) * sizeof(float),
                                  cudaMemcpyHostToDevice, st), "copying input to the GPU");
    } else if (got > 0)
        DDTK_CUDA(cudaMemcpyAsync(s->draw, hraw, (size_t)ddtk_plan_raw_bytes(p, got),
                                  cudaMemcpyHostToDevice, st), "copying input to the GPU");
    if (!cl)
        DDTK_CUDA(cudaEventRecord(s->h2d1, st), "recording an event");
    if (prev && p->keep > 0) {
        DDTK_CUDA(cudaStreamWaitEvent(st, prev->unpacked, 0), "ordering streams");
        DDTK_CUDA(cudaMemcpy2DAsync(s->drows[0], L0->stride * es,
                                    (char *)prev->drows[0] + step * es, L0->stride * es,
                                    p->keep * es, p->ch.nlive, cudaMemcpyDeviceToDevice, st),
                  "moving the overlap");
    }
    if (got > 0) {
        UnpackArgs u;
        u.raw = s->draw;
        u.first = cl ? cl->first : 0;
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
        u.seg = sc ? (const int32_t *)(s->draw + sc->seg_off) : NULL;
        u.tab = sc ? (const float *)(s->draw + sc->tab_off) : NULL;
        memset(&u.rfi, 0, sizeof u.rfi);
        if (cl && cl->nnew > 0) {     /* the cleaning's replacements, in the rows */
            ddtk_rfi_gpu_view(g->rfi, (int)(s - g->set), &u.rfi);
            u.rfi.at = cl->at;
            u.rfi.from = cl->at - cl->cstart;
        }
        if (sc)
            u.sgn = sc->sgn;
        DDTK_CUDA(launch_unpack(u, st), "unpacking");
        if (p->d.zerodm)
            DDTK_CUDA(launch_zerodm((float *)s->drows[0], L0->stride, p->ch.nlive, col, got,
                                    st), "zero-DM filtering");
    }
    DDTK_CUDA(cudaEventRecord(s->unpacked, st), "recording an event");
    DDTK_CUDA(cudaStreamWaitEvent(s->st, s->unpacked, 0), "ordering streams");
    return DDTK_OK;
}

/* The scrunch cascade: level k's rows from level k-1's, fill >> k spectra. */
static int halve_levels(const gpu_pipe *g, const ddtk_plan *p, gulp_set *s, int64_t fill)
{
    for (int k = 1; k < g->nlevels; k++) {
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

/* A set's last staging's copy and unpacking times, counted once it is
 * done: before the set is staged again (the reader stages gulp i+1 before
 * gulp i-1 is finished) and at the run's end. */
static int stage_times(gpu_pipe *g, gulp_set *s)
{
    if (!s->staged)
        return DDTK_OK;
    s->staged = 0;
    DDTK_CUDA(cudaEventSynchronize(s->unpacked), "waiting for an input's staging");
    g->t_h2d += event_seconds(s->h2d0, s->h2d1);
    g->t_unpack += event_seconds(s->h2d1, s->unpacked);
    return DDTK_OK;
}

/* Stage a gulp (stage_input) of got spectra at column col on set `set` of
 * every pipeline; prev: whether the other set holds the gulp before. */
static int stage_gulp(ddtk_gpu_stream *gs, const ddtk_plan *p, int set, int prev, int64_t got,
                      int64_t col)
{
    for (int i = 0; i < gs->npipe; i++) {
        gpu_pipe *g = &gs->pipe[i];
        gulp_set *s = &g->set[set];
        DDTK_CUDA(cudaSetDevice(g->dev), "selecting the GPU");
        int rc = stage_times(g, s);
        if (!rc)
            rc = stage_input(g, p, gs->step, s, prev ? &g->set[!set] : NULL, gs->hraw[set], got,
                             col, gs->scaled ? &gs->sc[set] : NULL,
                             gs->cleaning ? &gs->cl[set] : NULL);
        if (rc)
            return rc;
        s->staged = 1;
    }
    return DDTK_OK;
}

/* A staged gulp's kernels and outputs' copy on its set's stream. */
static int issue_gulp(const ddtk_gpu_algo *algo, const gpu_pipe *g, const ddtk_plan *p,
                      int64_t step, gulp_set *s, int64_t fill, int last)
{
    DDTK_CUDA(cudaSetDevice(g->dev), "selecting the GPU");
    int rc = halve_levels(g, p, s, fill);
    if (rc)
        return rc;
    DDTK_CUDA(cudaEventRecord(s->k0, s->st), "recording an event");
    for (int k = 0; k < g->nlevels; k++) {
        const gpu_level *L = &g->lv[k];
        s->nout[k] = g->view[k].ndm ? ddtk_level_nout(p, k, step, fill, last) : 0;
        if (s->nout[k] <= 0)
            continue;
        if (k)
            DDTK_CUDA(cudaStreamWaitEvent(s->lst[k], s->k0, 0), "ordering the levels");
        if ((rc = algo->gulp(L->state, s->drows[k], L->stride, s->nout[k], s->dout[k],
                             L->ostride, s->lst[k])))
            return rc;
        if (k)
            DDTK_CUDA(cudaEventRecord(s->lev[k], s->lst[k]), "recording an event");
    }
    for (int k = 1; k < g->nlevels; k++)
        if (s->nout[k] > 0)
            DDTK_CUDA(cudaStreamWaitEvent(s->st, s->lev[k], 0), "joining the levels");
    DDTK_CUDA(cudaEventRecord(s->k1, s->st), "recording an event");
    if (g->search && (rc = ddtk_sps_gpu_gulp(g->search, (int)(s - g->set), s->dout, s->nout,
                                             last, s->st)))
        return rc;
    for (int k = 0; k < g->nlevels && g->d2h; k++)
        if (s->nout[k] > 0)
            DDTK_CUDA(cudaMemcpy2DAsync(s->hout[k], g->lv[k].hpitch * sizeof(float), s->dout[k],
                                        g->lv[k].ostride * sizeof(float),
                                        s->nout[k] * sizeof(float), g->view[k].ndm,
                                        cudaMemcpyDeviceToHost, s->st),
                      "copying outputs from the GPU");
    DDTK_CUDA(cudaEventRecord(s->done, s->st), "recording an event");
    s->issued = 1;
    return DDTK_OK;
}

/* Wait for a pipeline's gulp and write its outputs. */
static int finish_gulp(gpu_pipe *g, gulp_set *s, ddtk_writer *w, double *waited)
{
    if (!s->issued)
        return DDTK_OK;
    s->issued = 0;
    DDTK_CUDA(cudaSetDevice(g->dev), "selecting the GPU");
    double t = ddtk_now();
    DDTK_CUDA(cudaEventSynchronize(s->done), "waiting for a gulp");
    *waited += ddtk_now() - t;
    g->t_kernel += event_seconds(s->k0, s->k1);
    g->t_d2h += event_seconds(s->k1, s->done);
    int rc = g->search ? ddtk_sps_gpu_collect(g->search, (int)(s - g->set)) : DDTK_OK;
    for (int k = 0; !rc && k < g->nlevels; k++) {
        if (s->nout[k] > 0 && !g->d2h)
            ddtk_writer_count(w, &g->view[k], s->nout[k]);
        else if (s->nout[k] > 0)
            rc = ddtk_writer_view(w, &g->view[k], s->hout[k], (size_t)g->lv[k].hpitch,
                                  s->nout[k]);
    }
    return rc;
}

static int finish_all(ddtk_gpu_stream *g, int set, ddtk_writer *w)
{
    double t = ddtk_now(), waited = 0;
    int rc = DDTK_OK;
    for (int i = 0; i < g->npipe && !rc; i++)
        rc = finish_gulp(&g->pipe[i], &g->pipe[i].set[set], w, &waited);
    g->t_wait += waited;
    g->t_write += ddtk_now() - t - waited;
    return rc;
}

/* Job i: a gulp of zeros on each buffer set of pipeline i, its outputs
 * dropped, so that the streaming's first gulps do not pay for what a GPU
 * does once: loading the kernels (lazily, at their first launch), the
 * plug-ins' first allocations, the first copies through the pinned buffers,
 * the clocks' climb from idle. The rows' data columns are those the first
 * gulp writes again. warm_issue issues them; warm_finish waits for them and
 * drains the kernels' stage times. */
static int warm_issue(ddtk_gpu_stream *s, const ddtk_plan *p, int i)
{
    gpu_pipe *g = &s->pipe[i];
    const int64_t fill = p->keep + s->step;
    g->t_warm = ddtk_now();
    g->d2h = 1;                 /* the copies warm up too; each run sets its own (start_search) */
    const clean_gulp zeros = { 0, fill, 0, 0, fill, 0 };   /* the cleaning's kernels too */
    DDTK_CUDA(cudaSetDevice(g->dev), "selecting the GPU");
    for (int j = 0; j < 2; j++) {
        int rc = stage_input(g, p, s->step, &g->set[j], NULL, s->hraw[j], fill, 0, NULL,
                             s->cleaning ? &zeros : NULL);
        if (!rc)
            rc = issue_gulp(s->algo, g, p, s->step, &g->set[j], fill, 0);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

static int warm_finish(ddtk_gpu_stream *s, const ddtk_plan *p, int i)
{
    (void)p;
    gpu_pipe *g = &s->pipe[i];
    DDTK_CUDA(cudaSetDevice(g->dev), "selecting the GPU");
    for (int j = 0; j < 2; j++) {
        if (!g->set[j].issued)
            continue;
        g->set[j].issued = 0;
        DDTK_CUDA(cudaEventSynchronize(g->set[j].done), "warming up");
    }
    if (g->rfi) {               /* the warm-up's zeros are not the input's */
        int rc = ddtk_rfi_gpu_zero(g->rfi);
        if (rc)
            return rc;
    }
    for (int k = 0; s->algo->stage_times && k < g->nlevels; k++) {
        double drained[2] = { 0, 0 };
        if (g->lv[k].state)
            s->algo->stage_times(g->lv[k].state, drained);
    }
    g->t_warm = ddtk_now() - g->t_warm;
    return DDTK_OK;
}

/* Before gulp i+1 is read into a raw buffer, gulp i-1 (the last to use it)
 * must have copied it to every GPU. */
static int input_free(ddtk_gpu_stream *g, int set)
{
    const double t = ddtk_now();
    for (int j = 0; j < g->npipe; j++) {
        gulp_set *s = &g->pipe[j].set[set];
        if (!s->issued)
            continue;
        DDTK_CUDA(cudaSetDevice(g->pipe[j].dev), "selecting the GPU");
        DDTK_CUDA(cudaEventSynchronize(s->h2d1), "waiting for an input copy");
    }
    g->t_wait += ddtk_now() - t;
    return DDTK_OK;
}

/* Scaled PSRFITS as bytes and tables where its raw buffer holds them: the
 * bytes and rows of keep + step spectra and a table for each row they may
 * touch (a row of few spectra has a table as large as itself); the layout
 * is fixed, so every read of the run uses the same offsets. */
static void scaled_layout(ddtk_gpu_stream *g, const ddtk_plan *p, ddtk_source *src)
{
    int sgn;
    const int64_t nsblk = ddtk_source_scaled(src, &sgn), cap = p->keep + g->step;
    const int64_t vals = (int64_t)p->fmt.nifs * p->fmt.nchans;
    g->scaled = 0;
    if (!nsblk)
        return;
    scaled_gulp sc;
    sc.seg_off = ddtk_round_up(cap * vals, 16);
    sc.tab_off = ddtk_round_up(sc.seg_off + cap * 4, 16);
    sc.nseg = 0;
    sc.sgn = sgn;
    const int64_t room = ((int64_t)raw_bytes(p, g->step, g->extra) - sc.tab_off) / (8 * vals);
    if (room < cap / nsblk + 3 || room > INT32_MAX) {
        ddtk_report(DDTK_MSG_VERBOSE, "GPU input: scaled PSRFITS as float32 spectra (rows of "
                    "%lld spectra: their tables would not fit)", (long long)nsblk);
        return;
    }
    ddtk_report(DDTK_MSG_VERBOSE, "GPU input: scaled PSRFITS as raw bytes with each row's "
                "multiply-add, applied on the GPU");
    g->scaled = 1;
    g->maxseg = (int)room;
    g->sc[0] = g->sc[1] = sc;
}

/* The GPUs cleaning: a gulp's n spectra, read on to the end of the block
 * the gulp ends in (those read past it are the next gulp's carried block):
 * what goes to buf and from where into its clean_gulp. */
static int read_cleaned(ddtk_gpu_stream *g, ddtk_source *src, uint8_t *buf, int64_t n,
                        int64_t *got)
{
    clean_gulp *cl = &g->cl[buf == g->hraw[1]];
    const int64_t b = g->cg.block, used = g->c_used, read = g->c_read,
                  want = ddtk_round_up(used + n, b) - read;
    cl->at = read;
    cl->cstart = used == read ? read : used / b * b;
    cl->first = used - cl->cstart;
    cl->nnew = 0;
    int rc = want > 0 && !src->eof ? ddtk_source_pull(src, buf, want, &cl->nnew) : DDTK_OK;
    g->c_read = read + cl->nnew;
    *got = cl->got = n < g->c_read - used ? n : g->c_read - used;
    g->c_used = used + cl->got;
    cl->done = src->eof && g->c_used == g->c_read;
    return rc;
}

/* n spectra into buf, the time added to the host's reads (-v). */
static int read_gulp(ddtk_gpu_stream *g, ddtk_source *src, uint8_t *buf, int64_t n, int64_t *got)
{
    double t = ddtk_now();
    scaled_gulp *sc = &g->sc[buf == g->hraw[1]];
    int rc = g->cleaning ? read_cleaned(g, src, buf, n, got)
             : g->scaled ? ddtk_source_pull_scaled(src, n, buf, (int32_t *)(buf + sc->seg_off),
                                                   (float *)(buf + sc->tab_off), g->maxseg,
                                                   &sc->nseg, got)
                         : ddtk_source_pull(src, buf, n, got);
    g->t_read += ddtk_now() - t;
    return rc;
}

/* A run's first gulp, keep + step spectra into hraw[0], after its input's
 * layout (scaled_layout). */
static int read_first(ddtk_gpu_stream *g, const ddtk_plan *p, ddtk_source *src, int64_t *got)
{
    scaled_layout(g, p, src);
    g->c_read = g->c_used = 0;
    return read_gulp(g, src, g->hraw[0], p->keep + g->step, got);
}

/* The warm-up of every pipeline (a thread each: warm_issue, warm_finish)
 * with the first gulp read into hraw[0] once every GPU has copied in its
 * zeros: the read, with --rfi auto the cleaning of keep + step spectra, goes
 * on beside the warm-up's kernels instead of before the first gulp's (htru
 * 1196 DMs: 2.2-3.4 ms of reading, 5.3-7.9 ms with the cleaning, within
 * the warm-up's two gulps, which took 23-29 ms with their buffers' zeroing
 * either way; H100 and H200 hosts, stop 40). */
static int warm_up(ddtk_gpu_stream *s, const ddtk_plan *p, ddtk_source *src)
{
    int rc = run_jobs(warm_issue, s, p, s->npipe);
    if (!rc)
        rc = input_free(s, 0);
    if (!rc) {
        s->t_read = 0;
        rc = read_first(s, p, src, &s->first_got);
        s->t_first_read = s->t_read;
    }
    if (rc)
        s->first_got = -1;
    const int done = run_jobs(warm_finish, s, p, s->npipe);
    return rc ? rc : done;
}

/* The span of the gulp before gulp i (its issue to gulp i's) for -v: the
 * first, the slowest and their sum. i == 0 starts the clock. */
static void span(ddtk_gpu_stream *g, int i)
{
    const double now = ddtk_now(), t = now - g->t_mark;
    g->t_mark = now;
    if (!i)
        return;
    g->t_gulps += t;
    g->nspans = i;
    if (i == 1)
        g->t_first = t;
    if (t > g->t_slowest) {
        g->t_slowest = t;
        g->slowest = i - 1;
    }
}

/* The reads of gulps after the first, on a thread of their own, so that
 * a gulp's read and the wait for and the writing of the one before go side
 * by side: with --rfi auto on an H100's 16-core host (htru 540 s, 1196
 * DMs) a read took 3.7 ms a gulp and the rest of the host's loop 0.8 ms
 * against 5.1 ms of GPU work, and one after the other they left the GPU
 * waiting (streaming 1.30-1.38 s against 1.20 s without the cleaning).
 * The reader stages each gulp it reads (stage_gulp) at once: staged by the
 * loop after the wait for the gulp two before, its copy and unpacking (and
 * the GPU's cleaning) came after that gulp's outputs' copy and before the
 * next gulp's kernels could start (htru8 60 s, 1196 DMs, one H100,
 * streaming, medians of 7: GPU-cleaned 0.1404 -> 0.1349 s, uncleaned
 * 0.1301 s either way; stop 47). */
enum reader_state { R_IDLE, R_JOB, R_DONE, R_QUIT };

struct reader {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ddtk_gpu_stream *g;
    ddtk_source *src;
    int threads;                /* the caller's (ddtk_threads is per thread) */
    const ddtk_plan *p;
    reader_state state;
    int set;                    /* the job: n spectra into set's raw buffer, staged at col */
    int64_t n, col, got;
    int rc;
    char msg[1024];             /* the read's or the staging's error */
};

/* The reader's state becomes `state`, the other thread woken (r->mu held). */
static void reader_set(reader *r, reader_state state)
{
    r->state = state;
    pthread_cond_broadcast(&r->cv);
}

static void *reader_main(void *arg)
{
    reader *r = (reader *)arg;
    ddtk_threads_set(r->threads);
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->state == R_IDLE || r->state == R_DONE)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->state == R_QUIT)
            break;
        pthread_mutex_unlock(&r->mu);
        int64_t got = 0;
        int rc = read_gulp(r->g, r->src, r->g->hraw[r->set], r->n, &got);
        if (!rc)
            rc = stage_gulp(r->g, r->p, r->set, 1, got, r->col);
        if (rc)
            snprintf(r->msg, sizeof r->msg, "%s", ddtk_errmsg());
        pthread_mutex_lock(&r->mu);
        r->got = got;
        r->rc = rc;
        reader_set(r, R_DONE);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static int reader_start(reader *r, ddtk_gpu_stream *g, const ddtk_plan *p, ddtk_source *src)
{
    memset(r, 0, sizeof *r);
    r->g = g;
    r->p = p;
    r->src = src;
    r->threads = ddtk_threads();
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->th, NULL, reader_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        return ddtk_fail(DDTK_ESYS, "starting the GPU streaming's reader thread");
    }
    return DDTK_OK;
}

static void reader_post(reader *r, int set, int64_t n, int64_t col)
{
    pthread_mutex_lock(&r->mu);
    r->set = set;
    r->n = n;
    r->col = col;
    reader_set(r, R_JOB);
    pthread_mutex_unlock(&r->mu);
}

/* The posted read's end: its spectra and code (its message as ddtk_fail's). */
static int reader_collect(reader *r, int64_t *got)
{
    pthread_mutex_lock(&r->mu);
    while (r->state != R_DONE)
        pthread_cond_wait(&r->cv, &r->mu);
    r->state = R_IDLE;
    *got = r->got;
    const int rc = r->rc;
    pthread_mutex_unlock(&r->mu);
    return rc ? ddtk_fail(rc, "%s", r->msg) : DDTK_OK;
}

static void reader_stop(reader *r)
{
    pthread_mutex_lock(&r->mu);
    reader_set(r, R_QUIT);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->th, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
}

/* The gulp loop: issue gulp i on every pipeline; then, while the GPUs
 * finish gulp i-1 and run gulp i, read gulp i+1 (the reader) and wait for
 * and write gulp i-1 (this thread). Reading before the wait keeps the
 * host's read off the GPUs' critical path: read after it, a gulp's read and
 * its predecessor's GPU time add up (two sets alternate). */
static int run_gulps(ddtk_gpu_stream *g, const ddtk_plan *p, ddtk_source *src, ddtk_writer *w)
{
    const int64_t cap = p->keep + g->step;
    /* gpu_serial (a benchmark knob) finishes each gulp before the next is
     * read, so the kernel events time the kernels alone: otherwise the next
     * gulp's copies and unpacking share the GPU with them. */
    const int serial = p->d.gpu_serial;
    int64_t got, fill = 0;
    reader r;
    g->t_read = g->t_wait = g->t_write = g->t_first = g->t_slowest = g->t_gulps = 0;
    g->nspans = g->slowest = 0;
    int rc = DDTK_OK;
    if (g->first_got >= 0) {    /* read during the warm-up */
        got = g->first_got;
        g->t_read = g->t_first_read;
    } else
        rc = read_first(g, p, src, &got);
    if (rc || (rc = reader_start(&r, g, p, src)))
        return rc;
    for (int i = 0; !rc; i++) {
        const int cur = i & 1, last = g->cleaning ? g->cl[cur].done : src->eof;
        int posted = 0;
        span(g, i);
        fill += got;
        if (!i)                   /* the reader stages the others */
            rc = stage_gulp(g, p, cur, 0, got, 0);
        for (int j = 0; j < g->npipe && !rc; j++) {
            gpu_pipe *pp = &g->pipe[j];
            rc = issue_gulp(g->algo, pp, p, g->step, &pp->set[cur], fill, last);
        }
        if (!rc && serial)
            rc = finish_all(g, cur, w);
        if (!rc && !last) {
            fill -= g->step;
            if (!(rc = input_free(g, !cur))) {
                reader_post(&r, !cur, cap - fill, fill);
                posted = 1;
            }
        }
        if (!rc && i)
            rc = finish_all(g, !cur, w);
        if (posted) {
            const int read_rc = reader_collect(&r, &got);
            rc = rc ? rc : read_rc;
        }
        if (!rc)
            ddtk_writer_gulp(w, src);
        if (!rc && last) {
            rc = finish_all(g, cur, w);
            span(g, i + 1);
            break;
        }
    }
    reader_stop(&r);
    for (int j = 0; j < g->npipe && !rc; j++)
        for (int k = 0; k < 2 && !rc; k++)
            rc = stage_times(&g->pipe[j], &g->pipe[j].set[k]);
    return rc;
}

/* setup: contexts, device plans, pinned buffers and the warm-up (none on a
 * run that keeps the last one's; its warm-up reads the first gulp), part:
 * its four phases (create); streaming: the set-up's end (on a run that keeps
 * the plan, the first read) to the last output written. */
static void report_times(const ddtk_gpu_stream *g, const ddtk_plan *p, double setup,
                         const double part[4], double streaming, double wall)
{
    char line[1024] = "";
    size_t len = 0;
    for (int i = 0; i < g->npipe; i++) {
        const gpu_pipe *pp = &g->pipe[i];
        char who[32] = "GPU";      /* one GPU: "GPU times:", as bench/gpu reads it */
        if (g->npipe > 1)
            snprintf(who, sizeof who, "GPU %d", pp->dev);
        if (p->d.verbose)
            ddtk_report(DDTK_MSG_VERBOSE, "%s times: set-up %.4f s (waiting for contexts %.4f s, "
                        "device plans %.4f s, buffers %.4f s, warm-up %.4f s; all GPUs), H2D "
                        "%.4f s, overlap copy + unpack%s (with waits on the other stream) %.4f "
                        "s, kernels %.4f s, D2H %.4f s, streaming %.4f s (the set-up's end "
                        "to the last output; the host's reads %.4f s), wall %.4f s", who, setup, part[0],
                        part[1], part[2], part[3], pp->t_h2d, pp->nlevels > 1 ? " + halving" : "", pp->t_unpack,
                        pp->t_kernel, pp->t_d2h, streaming, g->t_read, wall);
        if (len < sizeof line)
            len += (size_t)snprintf(line + len, sizeof line - len, "%sGPU %d %.3f s",
                                    i ? ", " : "", pp->dev, pp->t_kernel);
    }
    if (g->npipe > 1 && !p->d.quiet)
        ddtk_report(DDTK_MSG_INFO, "kernels on %d GPUs: %s (the summary's kernel time is the "
                    "slowest)", g->npipe, line);
    if (!p->d.verbose)
        return;
    char pre[64] = "";
    if (g->first_got >= 0)
        snprintf(pre, sizeof pre, " (the first %.4f s, beside the warm-up)", g->t_first_read);
    ddtk_report(DDTK_MSG_VERBOSE, "GPU streaming: %d gulps, host reads %.4f s%s, waits on the "
                "GPUs %.4f s, writer %.4f s; gulps %.4f s: first %.4f s, slowest %.4f s (gulp "
                "%d), mean %.4f s", g->nspans, g->t_read, pre, g->t_wait, g->t_write, g->t_gulps,
                g->t_first, g->t_slowest, g->slowest, g->nspans ? g->t_gulps / g->nspans : 0.0);
}

/* Each GPU's set-up (-v) on the run that made it: the contexts and device
 * plans are made on one thread per GPU, the buffers on one per set. */
static void report_setup(const ddtk_gpu_stream *g)
{
    ddtk_report(DDTK_MSG_VERBOSE, "GPU set-up: input buffers pinned for every GPU in %.4f s "
                "and %.4f s", g->t_pin[0], g->t_pin[1]);
    for (int i = 0; i < g->npipe; i++) {
        const gpu_pipe *pp = &g->pipe[i];
        ddtk_report(DDTK_MSG_VERBOSE, "GPU %d set-up: context %.4f s (ready %.4f s from the "
                    "set-up's start), device plans %.4f s, buffer sets %.4f s and %.4f s, "
                    "warm-up %.4f s", pp->dev, pp->t_context, pp->t_ready, pp->t_plans,
                    pp->t_sets[0], pp->t_sets[1], pp->t_warm);
    }
}

/* A search sink: each pipeline searches its DMs on its device; with no sink
 * after the search, the series stay there. */
static int start_search(ddtk_gpu_stream *g, const ddtk_plan *p, ddtk_writer *w)
{
    ddtk_sps_sink *search = ddtk_sps_sink_of(w->sink);
    for (int i = 0; i < g->npipe; i++) {
        gpu_pipe *pp = &g->pipe[i];
        int64_t ostride[DDTK_MAX_LEVELS];
        pp->d2h = !search || search->next;
        pp->search = NULL;
        if (!search)
            continue;
        for (int k = 0; k < pp->nlevels; k++)
            ostride[k] = pp->lv[k].ostride;
        DDTK_CUDA(cudaSetDevice(pp->dev), "selecting the GPU");
        int rc = ddtk_sps_gpu_create(&pp->search, search, w, p, pp->view, pp->nlevels, g->step,
                                     ostride);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

static void end_search(ddtk_gpu_stream *g, const ddtk_plan *p, int rc)
{
    for (int i = 0; i < g->npipe; i++) {
        gpu_pipe *pp = &g->pipe[i];
        if (!pp->search)
            continue;
        double sec;
        int64_t blocks, giants, replays;
        ddtk_sps_gpu_report(pp->search, &sec, &blocks, &giants, &replays);
        if (!rc && p->d.verbose)
            ddtk_report(DDTK_MSG_VERBOSE, "GPU %d: single-pulse search %.4f s (%lld blocks, "
                        "%lld giants, %lld gulps replayed), series %s", pp->dev, sec,
                        (long long)blocks, (long long)giants, (long long)replays,
                        pp->d2h ? "copied back" : "kept on the GPU");
        if (cudaSetDevice(pp->dev) != cudaSuccess)
            cudaGetLastError();
        ddtk_sps_gpu_free(pp->search);
        pp->search = NULL;
    }
}

/* The input's cleaning back to the host with what the GPUs cleaned (the
 * first pipeline's count; g NULL: nothing). */
static int take_back(const ddtk_plan *p, ddtk_gpu_stream *g, ddtk_source *src)
{
    ddtk_rfi_report r;
    memset(&r, 0, sizeof r);
    uint8_t *ever = (uint8_t *)ddtk_calloc((size_t)p->fmt.nchans, 1, "RFI report");
    int rc = ever ? DDTK_OK : DDTK_ESYS;
    if (!rc && g && g->pipe[0].rfi) {
        if ((rc = ddtk_rfi_gpu_report(g->pipe[0].rfi, &r, ever)) == DDTK_OK)
            for (int i = 0; i < g->npipe; i++)
                if ((rc = ddtk_rfi_gpu_zero(g->pipe[i].rfi)))
                    break;
    }
    if (ever)
        ddtk_source_clean_take_back(src, &r, ever);
    free(ever);
    return rc;
}

extern "C" int ddtk_gpu_stream_run(ddtk_plan *p, ddtk_source *src, ddtk_writer *w,
                                   double *kernel)
{
    double t0 = ddtk_now(), part[4] = { 0, 0, 0, 0 };
    ddtk_clean_geom cg;
    memset(&cg, 0, sizeof cg);    /* compared whole by prepare */
    /* --rfi auto (without a mask): the GPU cleans every input it can, the
     * host the others. Until stop 48 the host cleaned where its pace,
     * measured on the input's first blocks, beat the GPU's work; the GPU's
     * cleaning cost less in every plan tried against it (htru 60 s with RFI,
     * one H200, streaming, medians of 9, cleaned on the GPU, on the host,
     * not at all: 2-bit 1196 DMs 0.135, 0.249, 0.132 s; 8-bit, DMs 0-2000 at
     * tolerance 1.1, 0.4325, 0.4338, 0.4319 s; 2-bit the same, 0.4294,
     * 0.4301, 0.4285 s; dd_subband 8-bit 0.126, 0.129, 0.120 s), and the
     * measure, 16 threads cleaning while the driver made the contexts, put
     * 7 ms on the set-up (8-bit 1196 DMs, process wall, medians of 21:
     * 0.553 s measured, 0.539 s not, 0.538 s without excision). */
    const int clean_geom = ddtk_source_clean_geometry(src, &cg),
              cleaning = clean_geom && ddtk_rfi_gpu_supports(&cg);
    if (cleaning)
        ddtk_source_clean_hand_over(src);
    int rc = prepare(p, src, w, cleaning ? &cg : NULL, part);
    if (rc) {
        if (cleaning)
            take_back(p, NULL, src);
        return rc;
    }
    double t1 = ddtk_now();
    ddtk_gpu_stream *g = p->gpu;
    if (cleaning && p->d.verbose)
        ddtk_report(DDTK_MSG_VERBOSE, "GPU input: RFI excision on the GPU (blocks of %lld spectra)",
                    (long long)cg.block);
    else if (clean_geom && p->d.verbose)
        ddtk_report(DDTK_MSG_VERBOSE, "GPU input: RFI excision on the host (%d channels of %d IFs; "
                    "the GPU cleans up to %d channels of %d IFs)", cg.nchans, cg.nifs,
                    DDTK_RFI_GPU_MAX_CHANS, DDTK_RFI_GPU_MAX_IFS);
    for (int i = 0; i < g->npipe; i++) {
        gpu_pipe *pp = &g->pipe[i];
        pp->t_h2d = pp->t_unpack = pp->t_kernel = pp->t_d2h = 0;
        pp->set[0].staged = pp->set[1].staged = 0;
    }
    rc = start_search(g, p, w);
    if (!rc)
        rc = run_gulps(g, p, src, w);
    end_search(g, p, rc);
    if (cleaning) {
        const int taken = take_back(p, g, src);
        rc = rc ? rc : taken;
    }
    double t2 = ddtk_now();
    *kernel = 0;
    double stages[2] = { 0, 0 };
    for (int i = 0; i < g->npipe; i++) {
        gpu_pipe *pp = &g->pipe[i];
        for (int j = 0; j < 2; j++)     /* after a failure, nothing stays in flight */
            pp->set[j].issued = 0;
        *kernel = pp->t_kernel > *kernel ? pp->t_kernel : *kernel;
        for (int k = 0; !rc && g->algo->stage_times && k < pp->nlevels; k++) {
            double t[2] = { 0, 0 };
            if (pp->lv[k].state)
                g->algo->stage_times(pp->lv[k].state, t);
            for (int j = 0; j < 2; j++) {   /* every GPU's share into the plan's level */
                p->lv[k].stage_s[j] += t[j];
                stages[j] += t[j];
            }
        }
    }
    if (!rc && p->d.verbose && part[0] + part[1] + part[2] + part[3] > 0)
        report_setup(g);
    if (!rc)
        report_times(g, p, t1 - t0, part, t2 - t1, ddtk_now() - t0);
    if (!rc && p->d.verbose && g->algo->stage_times)
        ddtk_report(DDTK_MSG_VERBOSE, "GPU kernels: stage 1 %.4f s, stage 2 %.4f s (all GPUs)",
                    stages[0], stages[1]);
    return rc;
}
