/*
 * fdas.c - the fdas plan (driver): geometry, search ranges and trials,
 * red-noise blocks, backend choice, dispatch to the CPU kernels (cpu/) or the
 * GPU kernels (cuda/), the candidates (fdas_cands.c) and f-z plane access.
 */
#include "fdas_buffer.h"
#include "fdas_cands.h"
#include "internal.h"
#include "fdas_math.h"
#include "fdas_resp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ddtk_fdas_config_init(ddtk_fdas_config *c)
{
    memset(c, 0, sizeof *c);
    c->zmax = 200;
    c->numharm = 8;
    c->sigma = 2.0;
    c->interp = DDTK_FDAS_EXACT;
    c->flo = 1.0;
    c->harm_remove = 1;
    c->backend = DDTK_BACKEND_AUTO;
}

static int check_config(const ddtk_fdas_config *c, int64_t n, double tsamp)
{
    int h = c->numharm;
    if (h != 1 && h != 2 && h != 4 && h != 8 && h != 16 && h != 32)
        return ddtk_fail(DDTK_EUSAGE, "harmonics %d: expected 1, 2, 4, 8, 16 or 32", h);
    if (!(c->zmax >= 0) || c->zmax > 1200)
        return ddtk_fail(DDTK_EUSAGE, "zmax %g: expected 0 to 1200", c->zmax);
    if (!(tsamp > 0) || !isfinite(tsamp))
        return ddtk_fail(DDTK_EDATA, "sample time %g: must be > 0", tsamp);
    if (n < 64)
        return ddtk_fail(DDTK_EDATA, "%lld samples: too few to search (need 64 or more)",
                         (long long)n);
    if (n % 2)
        return ddtk_fail(DDTK_EDATA, "%lld samples: odd length (the real FFT needs an even "
                         "count: pad it to ddtk_fdas_search_length)", (long long)n);
    return DDTK_OK;
}

/* Search range and the number of independent trials and threshold per stage. */
static int plan_ranges(ddtk_fdas_plan *p)
{
    const ddtk_fdas_config *c = &p->cfg;
    double nyq = (double)(p->nbins - 1);
    p->rlo = fmax(1.0, c->flo * p->T);
    p->rhi = c->fhi > 0 ? fmin(c->fhi * p->T, nyq) : nyq;
    if (!(p->rhi > p->rlo))
        return ddtk_fail(DDTK_EUSAGE, "flo %g fhi %g: empty frequency range for a "
                         "%.6g s observation", c->flo, c->fhi, p->T);
    p->plane_len = 2 * p->nbins;
    p->plo = (int64_t)floor(2 * p->rlo);
    p->phi = (int64_t)fmin((double)p->plane_len, floor(2.0 * c->numharm * p->rhi) + 1);
    if (p->res == 1)
        p->plo &= ~(int64_t)1;
    for (int s = 0; s < p->nstages; s++) {
        /* PRESTO: dr * (numz + 1) * (dz / 6.95) / numharm_stage */
        double ni = (p->rhi - p->rlo) * (p->numz + 1) * (2.0 / 6.95) / (1 << s);
        p->numindep[s] = fmax(1.0, ni);
        p->powcut[s] = (float)ddtk_fdas_power_for_sigma(c->sigma, 1 << s, p->numindep[s]);
    }
    p->nfrac = 0;
    for (int s = 1; s < p->nstages; s++)
        for (int k = 1; k < (1 << s); k += 2)
            p->frac[p->nfrac++] = (ddtk_fdas_frac){ k, 1 << s, s };
    return DDTK_OK;
}

/* Block FFT length: >= 2048, at least 4x the template span. */
static void plan_blocks(ddtk_fdas_plan *p)
{
    p->khalf = p->res * ddtk_fdas_halfwidth(p->zmax);
    int len = 2048;
    while (len < 8 * p->khalf)
        len *= 2;
    p->fftlen = len;
    p->uselen = len - 2 * p->khalf - 1;
    p->width = p->uselen * 2 / p->res;
}

/* PRESTO-style red-noise blocks: 6 bins, then int(6 ln(start)) up to 200. */
static int plan_rednoise(ddtk_fdas_plan *p)
{
    int cap = 64;
    p->rn_start = malloc(sizeof(int64_t) * (size_t)cap);
    int64_t start = 1;
    int len = 6, nb = 0;
    while (p->rn_start && start < p->nbins) {
        if (nb + 2 > cap) {
            cap *= 2;
            int64_t *r = realloc(p->rn_start, sizeof(int64_t) * (size_t)cap);
            if (!r)
                break;
            p->rn_start = r;
        }
        p->rn_start[nb++] = start;
        start += len;
        len = (int)fmin(200.0, fmax(1.0, floor(6.0 * log((double)start))));
    }
    if (!p->rn_start || start < p->nbins)
        return ddtk_fail(DDTK_ESYS, "out of memory for red-noise blocks");
    p->rn_start[nb] = p->nbins;
    p->rn_nblocks = nb;
    return DDTK_OK;
}

/* The GPU needs cuFFT, loaded when first used (cuda/cufft_load.cu): without
 * it the automatic backend runs on the CPU, a GPU asked for fails. */
static int choose_backend(ddtk_fdas_plan *p)
{
    const char *why = "";
    int rc = ddtk_backend_resolve(p->cfg.backend, p->cfg.gpu, p->cfg.verbose, &p->use_gpu);
    if (!rc && p->use_gpu && !ddtk_cufft_usable(&why)) {
        if (p->cfg.backend != DDTK_BACKEND_AUTO)
            return ddtk_fail(DDTK_ESYS, "GPU: cuFFT cannot be loaded (%s); backend cpu "
                             "searches on the CPU", why);
        ddtk_report(DDTK_MSG_NOTE, "backend auto uses the CPU: cuFFT cannot be loaded (%s)",
                    why);
        p->use_gpu = 0;
    }
    return rc ? rc : p->use_gpu ? ddtk_fdas_gpu_init(p) : ddtk_fdas_cpu_init(p);
}

int ddtk_fdas_plan_create(ddtk_fdas_plan **plan, int64_t n, double tsamp,
                          const ddtk_fdas_config *cfg)
{
    int rc = check_config(cfg, n, tsamp);
    if (rc)
        return rc;
    ddtk_fdas_plan *p = calloc(1, sizeof *p);
    if (!p)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    p->cfg = *cfg;
    p->n = n;
    p->nbins = n / 2;
    p->tsamp = tsamp;
    p->T = n * tsamp;
    p->res = cfg->interp == DDTK_FDAS_INTERBIN ? 1 : 2;
    p->zmax = 2 * (int)(cfg->zmax / 2);
    p->numz = p->zmax + 1;
    p->nstages = 1;
    while ((1 << (p->nstages - 1)) < cfg->numharm)
        p->nstages++;
    plan_blocks(p);
    if ((rc = plan_ranges(p)) || (rc = plan_rednoise(p)) || (rc = ddtk_fdas_cpu_tables(p)) ||
        (rc = choose_backend(p))) {
        ddtk_fdas_plan_destroy(p);
        return rc;
    }
    *plan = p;
    return DDTK_OK;
}

void ddtk_fdas_plan_destroy(ddtk_fdas_plan *p)
{
    if (!p)
        return;
    if (p->use_gpu)
        ddtk_fdas_gpu_free(p);
    ddtk_fdas_cpu_free(p);
    free(p->rn_start);
    free(p->hits.h);
    free(p->cands);
    free(p);
}

int ddtk_fdas_execute(ddtk_fdas_plan *p, const float *x)
{
    double t0 = ddtk_now(), t;
    int threads = ddtk_threads_set(p->cfg.threads);
    memset(&p->times, 0, sizeof p->times);
    p->hits.n = 0;
    p->hits.sorted = 0;
    int rc = p->use_gpu ? ddtk_fdas_gpu_search(p, x) : ddtk_fdas_cpu_search(p, x);
    t = ddtk_now();
    if (!rc)
        rc = ddtk_fdas_candidates_build(p);
    p->times.candidates += ddtk_now() - t;
    p->times.total = ddtk_now() - t0;
    ddtk_threads_set(threads);
    return rc;
}

const ddtk_fdas_cand *ddtk_fdas_candidates(const ddtk_fdas_plan *p, int *n)
{
    *n = p->ncands;
    return p->cands;
}

const ddtk_fdas_times *ddtk_fdas_timing(const ddtk_fdas_plan *p)
{
    return &p->times;
}

float *ddtk_fdas_series_buffer(const ddtk_fdas_plan *p, int64_t *n, double *tsamp)
{
    *n = p->n;
    *tsamp = p->tsamp;
    return p->series;
}

const char *ddtk_fdas_backend_name(const ddtk_fdas_plan *p)
{
    return p->use_gpu ? "gpu" : "cpu";
}

void ddtk_fdas_get_geometry(const ddtk_fdas_plan *p, ddtk_fdas_geometry *g)
{
    memset(g, 0, sizeof *g);
    g->numz = p->numz;
    g->zmax = p->zmax;
    g->numharm = p->cfg.numharm;
    g->nstages = p->nstages;
    g->nbins = p->nbins;
    g->plane_len = p->plane_len;
    g->rlo = p->rlo;
    g->rhi = p->rhi;
    g->T = p->T;
    g->fftlen = p->fftlen;
    g->uselen = p->uselen;
    g->halfwidth = p->khalf;
    for (int s = 0; s < p->nstages; s++) {
        g->numindep[s] = p->numindep[s];
        g->powcut[s] = p->powcut[s];
    }
}

int ddtk_fdas_plane(ddtk_fdas_plan *p, int zi0, int zi1, int64_t p0, int64_t np, float *out)
{
    if (zi0 < 0 || zi1 > p->numz || zi0 >= zi1 || p0 < 0 || np < 1 || p0 + np > p->plane_len)
        return ddtk_fail(DDTK_EUSAGE, "plane request outside the plane");
    return p->use_gpu ? ddtk_fdas_gpu_plane(p, zi0, zi1, p0, np, out)
                      : ddtk_fdas_cpu_plane(p, zi0, zi1, p0, np, out);
}
