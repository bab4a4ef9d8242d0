/*
 * fdas_kernels.h - the fdas plan and its kernels' interface: the CPU kernels
 * (cpu/fdas_cpu.c, with the z response of cpu/fdas_resp.h) and the GPU
 * backend (cuda/fdas_*.cu*, or src/search/fdas_gpu_none.c). The search above
 * (src/search/fdas.c, the driver, and fdas_cands.c, its candidates) calls
 * these; they include and call nothing of the search. I/O and output code
 * use the public API (fdas.h) and fdas_buffer.h only.
 *
 * Geometry. The whitened spectrum F[k], k < nbins, is "spread" to the
 * correlation resolution res (2 for exact half-bin interpolation, 1 for
 * interbinning): spread[res*k] = F[k], zeros between. Output sample m of the
 * correlation is r = m/res. The plane is always at half-bin resolution:
 * position p is r = p/2 (interbinning fills odd p from neighbours).
 * A block of fftlen spread samples starting at m0 - khalf yields uselen
 * outputs m0 .. m0+uselen-1 (overlap-save), i.e. width = uselen*2/res plane
 * positions. Complex arrays are interleaved float pairs (C and CUDA share them).
 */
#ifndef DDTK_FDAS_KERNELS_H
#define DDTK_FDAS_KERNELS_H

#include "fdas.h"
#include "fdas_select.h"

#include <stdlib.h>

DDTK_BEGIN_DECLS

typedef struct ddtk_fdas_hit {
    int64_t p;                    /* top-plane position */
    int zi, stage;
    float power;
} ddtk_fdas_hit;

typedef struct ddtk_fdas_hits {
    ddtk_fdas_hit *h;
    int64_t n, cap;
    int sorted;                   /* by stage, power (descending), position: the GPU sorts them */
} ddtk_fdas_hits;

/* One subharmonic fraction k/2^s (k odd) used by stage s. */
typedef struct ddtk_fdas_frac {
    int num, den, stage;
} ddtk_fdas_frac;

struct ddtk_fdas_plan {
    ddtk_fdas_config cfg;
    int64_t n, nbins;
    double tsamp, T;
    int res, zmax, numz, khalf, fftlen, uselen, width, nstages;
    double rlo, rhi;
    int64_t plo, phi;             /* top-plane positions searched [plo, phi) */
    int64_t plane_len;            /* positions covered by the spectrum: 2*nbins */
    double numindep[DDTK_FDAS_MAXSTAGES];
    float powcut[DDTK_FDAS_MAXSTAGES];
    ddtk_fdas_frac frac[DDTK_FDAS_MAXHARM];
    int nfrac;
    float *templates;             /* numz x fftlen complex: template spectra / fftlen */
    float *spec;                  /* nbins+1 complex: whitened spectrum */
    float *spread;                /* CPU: res*nbins complex: whitened spectrum, spread */
    float *work;                  /* CPU: n floats: de-meaned series for the real FFT */
    void *rfft;                   /* CPU: fftwf_plan of the long real FFT */
    void *blk_fwd, *blk_inv;      /* CPU: fftwf_plans of the correlation blocks */
    int64_t *rn_start;            /* red-noise blocks: first bin of each, plus end */
    int rn_nblocks;
    ddtk_fdas_hits hits;
    ddtk_fdas_cand *cands;
    int ncands;
    ddtk_fdas_times times;
    int use_gpu;
    int spec_on_host;             /* spec holds the last whitened spectrum */
    void *gpu;                    /* backend state of cuda/fdas_gpu.cu */
    float *series;                /* GPU: pinned n-float buffer that ddtk_fdas_read_for
                                     fills (one-DMA upload); CPU: NULL */
};

/* CPU kernels (cpu/fdas_cpu.c). */
/* Every plan, either backend: the template spectra and the host spectrum buffer. */
int ddtk_fdas_cpu_tables(ddtk_fdas_plan *p);
/* The CPU backend: its buffers and FFTW plans. */
int ddtk_fdas_cpu_init(ddtk_fdas_plan *p);
/* Frees what the two above made (either may have been left part done). */
void ddtk_fdas_cpu_free(ddtk_fdas_plan *p);
/* Whiten x, then correlate, harmonic-sum and threshold the whole plane; hits
 * into p->hits. */
int ddtk_fdas_cpu_search(ddtk_fdas_plan *p, const float *x);
/* Plane rows [zi0, zi1) at positions [p0, p0 + np) from the whitened spectrum. */
int ddtk_fdas_cpu_plane(const ddtk_fdas_plan *p, int zi0, int zi1, int64_t p0, int64_t np,
                        float *out);

/* Fraction index helpers shared by CPU and GPU: nearest half bin / even z. */
static inline DDTK_HD int64_t ddtk_fdas_frac_pos(int64_t p, int num, int den)
{
    return (2 * p * num + den) / (2 * den);
}

static inline DDTK_HD int ddtk_fdas_frac_zi(int zi, int zmax, int num, int den)
{
    /* z = -zmax + 2 zi; nearest even z*num/den, halves away from zero */
    int z = -zmax + 2 * zi;
    int znum = z * num;                        /* target z*num/den, in units of 2 */
    int q = (abs(znum) + den) / (2 * den);     /* round(|z num/den| / 2) */
    int zk = 2 * (znum < 0 ? -q : q);
    return (zk + zmax) / 2;
}

/* GPU backend (cuda/fdas_gpu.cu, or src/search/fdas_gpu_none.c without CUDA). */
/* Whether cuFFT could be loaded; *why (if given) says why not. */
int ddtk_cufft_usable(const char **why);
int ddtk_fdas_gpu_init(ddtk_fdas_plan *p);
int ddtk_fdas_gpu_search(ddtk_fdas_plan *p, const float *x);
/* Copy the whitened spectrum of the last search back into spec. */
int ddtk_fdas_gpu_sync_spectrum(ddtk_fdas_plan *p);
/* The plane rows computed on the GPU, copied back (for tests). */
int ddtk_fdas_gpu_plane(ddtk_fdas_plan *p, int zi0, int zi1, int64_t p0, int64_t np, float *out);
void ddtk_fdas_gpu_free(ddtk_fdas_plan *p);

DDTK_END_DECLS

#endif
