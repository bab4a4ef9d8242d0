/*
 * fdas_cpu.c - CPU kernels of fdas (FFTW + OpenMP): the z template spectra
 * (computed here for both backends), the CPU backend's FFTW plans and
 * buffers, whitening (real FFT, red-noise removal, spreading), overlap-save
 * correlation of spectrum blocks with the templates into plane tiles, and the
 * harmonic summing search over the plane. The search above (src/search/fdas.c)
 * calls these functions; they include and call nothing of it (fdas_kernels.h).
 *
 * Every FFTW plan belongs to an fdas plan (or, for the template FFT, to its
 * creation). FFTW's planner is not thread-safe: all planning and destruction
 * here holds planner_lock, which also keeps the process-wide
 * fftwf_plan_with_nthreads setting with the plan it is meant for, and FFTW's
 * own planner lock (fftwf_make_planner_thread_safe) guards against planning
 * elsewhere in the process. Plans are executed with the new-array functions
 * or on their own fdas plan's buffers, which needs no lock.
 *
 * The plane is never held whole on the CPU: each thread walks its own run of
 * top-plane tiles, and for every subharmonic fraction k/2^s keeps one tile of
 * the plane around (top position)*k/2^s, recomputed only when the run moves
 * past it (PRESTO's non-in-memory scheme). Memory stays at a few tiles per
 * thread; the extra correlation work is sum over fractions of (k/2^s)^2.
 */
#include "fdas_kernels.h"
#include "fdas_resp.h"
#include "internal.h"

#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- FFTW planning ------------------------------------------------------------ */

static pthread_mutex_t planner_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t safe_once = PTHREAD_ONCE_INIT, threads_once = PTHREAD_ONCE_INIT;

static void make_safe(void)
{
    fftwf_make_planner_thread_safe();
}

/* Set up just before the first threaded plan, as ever: set up before the
 * first template FFT is planned, they change the plan FFTW_ESTIMATE picks
 * for it, and with it the last digits of candidate powers. */
static void init_threads(void)
{
    fftwf_init_threads();
}

static void planner_enter(void)
{
    pthread_once(&safe_once, make_safe);
    pthread_mutex_lock(&planner_lock);
}

static void planner_leave(void)
{
    pthread_mutex_unlock(&planner_lock);
}

static void destroy_plan(void *plan)
{
    if (!plan)
        return;
    planner_enter();
    fftwf_destroy_plan(plan);
    planner_leave();
}

/* ---- tables shared by both backends ------------------------------------------ */

/*
 * Template for row zi: c[d] = conj(R_z(d/res)) for |d| <= res*halfwidth(z),
 * stored at (fftlen - d) mod fftlen so that a cyclic convolution of a block
 * with it correlates the block with the response; normalised to unit energy
 * over whole bins and divided by fftlen for the unnormalised inverse FFT.
 */
static void make_template(ddtk_fdas_plan *p, fftwf_plan fwd, float complex *buf, int zi)
{
    int L = p->fftlen;
    double z = -p->zmax + 2.0 * zi, energy = 0;
    int kz = p->res * ddtk_fdas_halfwidth(z);
    memset(buf, 0, sizeof(float complex) * (size_t)L);
    for (int d = -kz; d <= kz; d++) {
        double re, im;
        ddtk_fdas_zresp((double)d / p->res, z, &re, &im);
        buf[(L - d) % L] = (float)re - I * (float)im;
        if (d % p->res == 0)
            energy += re * re + im * im;
    }
    double scale = 1.0 / (sqrt(energy) * L);
    fftwf_execute(fwd);
    float complex *t = (float complex *)p->templates + (size_t)zi * L;
    for (int j = 0; j < L; j++)
        t[j] = buf[j] * (float)scale;
}

int ddtk_fdas_cpu_tables(ddtk_fdas_plan *p)
{
    int L = p->fftlen;
    float complex *buf = fftwf_malloc(sizeof(float complex) * (size_t)L);
    p->templates = fftwf_malloc(sizeof(float complex) * (size_t)L * p->numz);
    p->spec = fftwf_malloc(2 * sizeof(float) * (size_t)(p->nbins + 1));
    if (!buf || !p->templates || !p->spec) {
        fftwf_free(buf);
        return ddtk_fail(DDTK_ESYS, "out of memory for %d templates", p->numz);
    }
    planner_enter();
    fftwf_plan fwd = fftwf_plan_dft_1d(L, buf, buf, FFTW_FORWARD, FFTW_ESTIMATE);
    planner_leave();
    if (!fwd) {
        fftwf_free(buf);
        return ddtk_fail(DDTK_ESYS, "cannot plan a %d-point FFT", L);
    }
    for (int zi = 0; zi < p->numz; zi++)
        make_template(p, fwd, buf, zi);
    destroy_plan(fwd);
    fftwf_free(buf);
    return DDTK_OK;
}

/* ---- the CPU backend's buffers and FFTW plans ------------------------------------ */

/* The long real FFT, on as many threads as the search. */
static int plan_rfft(ddtk_fdas_plan *p)
{
    planner_enter();
    pthread_once(&threads_once, init_threads);
    fftwf_plan_with_nthreads(p->cfg.threads > 0 ? p->cfg.threads : ddtk_threads());
    p->rfft = fftwf_plan_dft_r2c_1d((int)p->n, p->work, (fftwf_complex *)p->spec,
                                    FFTW_ESTIMATE);
    fftwf_plan_with_nthreads(1);
    planner_leave();
    return p->rfft ? DDTK_OK : ddtk_fail(DDTK_ESYS, "cannot plan a %lld-point FFT",
                                         (long long)p->n);
}

/* The block FFTs of the correlation, executed by every thread on its own arrays. */
static int plan_blocks(ddtk_fdas_plan *p)
{
    int L = p->fftlen;
    float complex *a = fftwf_malloc(sizeof *a * (size_t)L), *b = fftwf_malloc(sizeof *b * (size_t)L);
    if (!a || !b) {
        fftwf_free(a);
        fftwf_free(b);
        return ddtk_fail(DDTK_ESYS, "out of memory for FFT plans");
    }
    planner_enter();
    p->blk_fwd = fftwf_plan_dft_1d(L, a, b, FFTW_FORWARD, FFTW_MEASURE);
    p->blk_inv = fftwf_plan_dft_1d(L, b, a, FFTW_BACKWARD, FFTW_MEASURE);
    planner_leave();
    fftwf_free(a);
    fftwf_free(b);
    return p->blk_fwd && p->blk_inv ? DDTK_OK : ddtk_fail(DDTK_ESYS, "cannot plan FFTs");
}

int ddtk_fdas_cpu_init(ddtk_fdas_plan *p)
{
    p->work = fftwf_malloc(sizeof(float) * (size_t)p->n);
    p->spread = fftwf_malloc(2 * sizeof(float) * (size_t)(p->res * p->nbins));
    if (!p->work || !p->spread)
        return ddtk_fail(DDTK_ESYS, "out of memory for a %lld-sample series",
                         (long long)p->n);
    int rc = plan_rfft(p);
    return rc ? rc : plan_blocks(p);
}

void ddtk_fdas_cpu_free(ddtk_fdas_plan *p)
{
    destroy_plan(p->rfft);
    destroy_plan(p->blk_fwd);
    destroy_plan(p->blk_inv);
    fftwf_free(p->templates);
    fftwf_free(p->work);
    fftwf_free(p->spec);
    fftwf_free(p->spread);
}

/* ---- whitening ------------------------------------------------------------------ */

/*
 * Each block's median power / ln 2 estimates the local mean power (the median
 * of an exponential distribution is ln 2 times its mean) at the block centre;
 * the mean is interpolated linearly between centres and every amplitude is
 * divided by its square root, so that noise powers become exponential, mean 1.
 */
static int rednoise(const ddtk_fdas_plan *p, float complex *spec)
{
    int nb = p->rn_nblocks;
    double *mean = malloc(sizeof(double) * (size_t)nb);
    double *centre = malloc(sizeof(double) * (size_t)nb);
    float pw[256];
    if (!mean || !centre) {
        free(mean);
        free(centre);
        return ddtk_fail(DDTK_ESYS, "out of memory for red-noise blocks");
    }
    for (int b = 0; b < nb; b++) {
        int64_t s = p->rn_start[b];
        int len = (int)(p->rn_start[b + 1] - s);
        for (int i = 0; i < len; i++)
            pw[i] = crealf(spec[s + i] * conjf(spec[s + i]));
        mean[b] = fmax(ddtk_fdas_select_median(pw, len) / M_LN2, 1e-30);
        centre[b] = s + 0.5 * (len - 1);
    }
    spec[0] = 0;
    int b = 0;
    for (int64_t k = 1; k < p->nbins; k++) {
        while (b + 1 < nb && centre[b + 1] <= k)
            b++;
        double m = mean[b];
        if (b + 1 < nb && k > centre[b])
            m += (mean[b + 1] - mean[b]) * (k - centre[b]) / (centre[b + 1] - centre[b]);
        spec[k] *= (float)(1.0 / sqrt(m));
    }
    free(mean);
    free(centre);
    return DDTK_OK;
}

static void demean(ddtk_fdas_plan *p, const float *x)
{
    double sum = 0;
    #pragma omp parallel for reduction(+ : sum) num_threads(ddtk_threads())
    for (int64_t i = 0; i < p->n; i++)
        sum += x[i];
    float mean = (float)(sum / p->n);
    #pragma omp parallel for num_threads(ddtk_threads())
    for (int64_t i = 0; i < p->n; i++)
        p->work[i] = x[i] - mean;
}

static void spread_spectrum(ddtk_fdas_plan *p)
{
    float complex *src = (float complex *)p->spec, *dst = (float complex *)p->spread;
    #pragma omp parallel for num_threads(ddtk_threads())
    for (int64_t k = 0; k < p->nbins; k++) {
        dst[p->res * k] = src[k];
        if (p->res == 2)
            dst[2 * k + 1] = 0;
    }
}

/* Real FFT of the de-meaned series, red-noise removal, spread to the correlation resolution. */
static int whiten(ddtk_fdas_plan *p, const float *x)
{
    double t0 = ddtk_now(), t;
    demean(p, x);
    fftwf_execute(p->rfft);
    p->times.fft = (t = ddtk_now()) - t0;
    int rc = rednoise(p, (float complex *)p->spec);
    spread_spectrum(p);
    p->times.rednoise = ddtk_now() - t;
    return rc;
}

/* ---- correlation ------------------------------------------------------------------ */

typedef struct cpu_ws {
    float complex *blk, *fwd, *prod;
} cpu_ws;

static void ws_free(cpu_ws *w)
{
    if (!w)
        return;
    fftwf_free(w->blk);
    fftwf_free(w->fwd);
    fftwf_free(w->prod);
    free(w);
}

static cpu_ws *ws_new(const ddtk_fdas_plan *p)
{
    cpu_ws *w = calloc(1, sizeof *w);
    size_t bytes = sizeof(float complex) * (size_t)p->fftlen;
    if (w && (w->blk = fftwf_malloc(bytes)) && (w->fwd = fftwf_malloc(bytes)) &&
        (w->prod = fftwf_malloc(bytes)))
        return w;
    ws_free(w);
    return NULL;
}

/* Forward FFT of the spread spectrum samples [m0 - khalf, m0 - khalf + fftlen). */
static void load_block(const ddtk_fdas_plan *p, cpu_ws *w, int64_t m0)
{
    const float complex *s = (const float complex *)p->spread;
    int64_t first = m0 - p->khalf, len = p->res * p->nbins;
    for (int j = 0; j < p->fftlen; j++) {
        int64_t m = first + j;
        w->blk[j] = m >= 0 && m < len ? s[m] : 0;
    }
    fftwf_execute_dft(p->blk_fwd, w->blk, w->fwd);
}

/* Powers of one row: exact (every output) or interbin (outputs and midpoints). */
static void row_powers(const ddtk_fdas_plan *p, const float complex *y, float *out)
{
    const float complex *v = y + p->khalf;
    if (p->res == 2) {
        for (int i = 0; i < p->uselen; i++)
            out[i] = crealf(v[i]) * crealf(v[i]) + cimagf(v[i]) * cimagf(v[i]);
        return;
    }
    const float k = (float)(M_PI / 4);
    for (int i = 0; i < p->uselen; i++) {
        float complex d = k * (v[i] - v[i + 1]);
        out[2 * i] = crealf(v[i]) * crealf(v[i]) + cimagf(v[i]) * cimagf(v[i]);
        out[2 * i + 1] = crealf(d) * crealf(d) + cimagf(d) * cimagf(d);
    }
}

/* Plane rows [zi0, zi1) at positions [p0, p0 + width) into out (ld = width). */
static void tile(const ddtk_fdas_plan *p, cpu_ws *w, int zi0, int zi1, int64_t p0, float *out)
{
    int L = p->fftlen;
    load_block(p, w, p->res == 2 ? p0 : p0 / 2);
    for (int zi = zi0; zi < zi1; zi++) {
        const float complex *t = (const float complex *)p->templates + (size_t)zi * L;
        for (int j = 0; j < L; j++)
            w->prod[j] = w->fwd[j] * t[j];
        fftwf_execute_dft(p->blk_inv, w->prod, w->blk);
        row_powers(p, w->blk, out + (size_t)(zi - zi0) * p->width);
    }
}

int ddtk_fdas_cpu_plane(const ddtk_fdas_plan *p, int zi0, int zi1, int64_t p0, int64_t np,
                        float *out)
{
    int w = p->width, nz = zi1 - zi0;
    float *buf = malloc(sizeof(float) * (size_t)w * (size_t)nz);
    cpu_ws *ws = ws_new(p);
    if (!buf || !ws) {
        free(buf);
        ws_free(ws);
        return ddtk_fail(DDTK_ESYS, "out of memory for the plane");
    }
    int64_t start = p->res == 1 ? p0 & ~(int64_t)1 : p0;
    for (int64_t t = start; t < p0 + np; t += w) {
        tile(p, ws, zi0, zi1, t, buf);
        for (int z = 0; z < nz; z++)
            for (int64_t i = 0; i < w; i++)
                if (t + i >= p0 && t + i < p0 + np)
                    out[z * np + (t + i - p0)] = buf[(size_t)z * w + i];
    }
    free(buf);
    ws_free(ws);
    return DDTK_OK;
}

/* ---- harmonic-summing search ------------------------------------------------ */

static int hits_push(ddtk_fdas_hits *hs, int64_t p, int zi, int stage, float power)
{
    if (hs->n == hs->cap) {
        ddtk_fdas_hit *h = ddtk_grow(hs->h, &hs->cap, sizeof *h, 1024, "candidates");
        if (!h)
            return DDTK_ESYS;
        hs->h = h;
    }
    hs->h[hs->n++] = (ddtk_fdas_hit){ p, zi, stage, power };
    return DDTK_OK;
}

typedef struct frac_tile {
    int64_t p0;                   /* first position held, -1 when empty */
    int zlo, zhi;                 /* rows held (inclusive) */
    float *buf;
} frac_tile;

typedef struct thread_state {
    cpu_ws *ws;
    float *acc, *best;
    int *bestz, *pidx;
    frac_tile ft[DDTK_FDAS_MAXHARM];
    ddtk_fdas_hits hits;
    double t_corr, t_sum;
} thread_state;

static void state_free(const ddtk_fdas_plan *p, thread_state *st)
{
    ws_free(st->ws);
    free(st->acc);
    free(st->best);
    free(st->bestz);
    free(st->pidx);
    for (int f = 0; f < p->nfrac; f++)
        free(st->ft[f].buf);
    free(st->hits.h);
}

static int state_init(const ddtk_fdas_plan *p, thread_state *st)
{
    size_t plane = (size_t)p->numz * p->width;
    memset(st, 0, sizeof *st);
    st->ws = ws_new(p);
    st->acc = malloc(sizeof(float) * plane);
    st->best = malloc(sizeof(float) * (size_t)p->width);
    st->bestz = malloc(sizeof(int) * (size_t)p->width);
    st->pidx = malloc(sizeof(int) * (size_t)p->width);
    int ok = st->ws && st->acc && st->best && st->bestz && st->pidx;
    for (int f = 0; f < p->nfrac && ok; f++) {
        frac_tile *t = &st->ft[f];
        t->p0 = -1;
        t->zlo = ddtk_fdas_frac_zi(0, p->zmax, p->frac[f].num, p->frac[f].den);
        t->zhi = ddtk_fdas_frac_zi(p->numz - 1, p->zmax, p->frac[f].num, p->frac[f].den);
        ok = (t->buf = malloc(sizeof(float) * (size_t)(t->zhi - t->zlo + 1) * p->width)) != NULL;
    }
    return ok ? DDTK_OK : ddtk_fail(DDTK_ESYS, "out of memory for search tiles");
}

/* Make the fraction's tile cover the positions the top tile at P0 needs. */
static void ensure_frac(const ddtk_fdas_plan *p, thread_state *st, int f, int64_t P0)
{
    frac_tile *t = &st->ft[f];
    int num = p->frac[f].num, den = p->frac[f].den;
    int64_t lo = ddtk_fdas_frac_pos(P0, num, den);
    int64_t hi = ddtk_fdas_frac_pos(P0 + p->width - 1, num, den);
    if (t->p0 >= 0 && lo >= t->p0 && hi < t->p0 + p->width)
        return;
    t->p0 = p->res == 1 ? lo & ~(int64_t)1 : lo;
    double t0 = ddtk_now();
    tile(p, st->ws, t->zlo, t->zhi + 1, t->p0, t->buf);
    st->t_corr += ddtk_now() - t0;
}

static void add_frac(const ddtk_fdas_plan *p, thread_state *st, int f, int64_t P0)
{
    const frac_tile *t = &st->ft[f];
    int num = p->frac[f].num, den = p->frac[f].den, w = p->width;
    for (int i = 0; i < w; i++)
        st->pidx[i] = (int)(ddtk_fdas_frac_pos(P0 + i, num, den) - t->p0);
    for (int zi = 0; zi < p->numz; zi++) {
        const float *row = t->buf +
            (size_t)(ddtk_fdas_frac_zi(zi, p->zmax, num, den) - t->zlo) * w;
        float *acc = st->acc + (size_t)zi * w;
        for (int i = 0; i < w; i++)
            acc[i] += row[st->pidx[i]];
    }
}

/* Best z per position for this stage; hits where it beats the stage's cut. */
static int threshold(const ddtk_fdas_plan *p, thread_state *st, int s, int64_t P0)
{
    int w = p->width;
    double scale = 2.0 * (1 << s);
    int64_t lo = (int64_t)ceil(scale * p->rlo), hi = (int64_t)floor(scale * p->rhi);
    int i0 = (int)fmax(0, (double)(lo - P0)), i1 = (int)fmin(w, (double)(fmin(hi + 1, p->phi) - P0));
    if (i0 >= i1)
        return DDTK_OK;
    float cut = p->powcut[s];
    for (int i = i0; i < i1; i++)
        st->best[i] = cut;
    memset(st->bestz, 0xff, sizeof(int) * (size_t)w);
    for (int zi = 0; zi < p->numz; zi++) {
        const float *acc = st->acc + (size_t)zi * w;
        for (int i = i0; i < i1; i++)
            if (acc[i] > st->best[i]) {
                st->best[i] = acc[i];
                st->bestz[i] = zi;
            }
    }
    for (int i = i0; i < i1; i++)
        if (st->bestz[i] >= 0 && hits_push(&st->hits, P0 + i, st->bestz[i], s,
                                                     st->best[i]))
            return DDTK_ESYS;
    return DDTK_OK;
}

static int search_tile(const ddtk_fdas_plan *p, thread_state *st, int64_t P0)
{
    double t0 = ddtk_now();
    tile(p, st->ws, 0, p->numz, P0, st->acc);
    double t1 = ddtk_now();
    st->t_corr += t1 - t0;
    int rc = threshold(p, st, 0, P0);
    for (int s = 1; s < p->nstages && !rc; s++) {
        for (int f = 0; f < p->nfrac; f++)
            if (p->frac[f].stage == s) {
                ensure_frac(p, st, f, P0);
                add_frac(p, st, f, P0);
            }
        rc = threshold(p, st, s, P0);
    }
    st->t_sum += ddtk_now() - t1;
    return rc;
}

static int merge_hits(ddtk_fdas_plan *p, const ddtk_fdas_hits *h)
{
    int rc = DDTK_OK;
    for (int64_t i = 0; i < h->n && !rc; i++)
        rc = hits_push(&p->hits, h->h[i].p, h->h[i].zi, h->h[i].stage, h->h[i].power);
    return rc;
}

int ddtk_fdas_cpu_search(ddtk_fdas_plan *p, const float *x)
{
    int64_t ntiles = (p->phi - p->plo + p->width - 1) / p->width;
    int rc = whiten(p, x);
    if (rc)
        return rc;
    p->spec_on_host = 1;
    double corr = 0, sum = 0;
    int nthreads = 1;
    #pragma omp parallel reduction(+ : corr, sum) num_threads(ddtk_threads())
    {
        int me = omp_get_thread_num(), nt = omp_get_num_threads();
        thread_state st;
        int my = state_init(p, &st);
        /* contiguous runs of tiles keep each thread's fraction tiles reusable */
        for (int64_t t = ntiles * me / nt; t < ntiles * (me + 1) / nt && !my; t++)
            my = search_tile(p, &st, p->plo + t * p->width);
        #pragma omp critical
        {
            if (!rc && !my)
                my = merge_hits(p, &st.hits);
            if (my && !rc)
                rc = my;
            nthreads = nt;
        }
        corr += st.t_corr;
        sum += st.t_sum;
        state_free(p, &st);
    }
    p->times.correlate = corr / nthreads;
    p->times.harmsum = sum / nthreads;
    return rc;
}
