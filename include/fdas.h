/*
 * fdas.h - public API of the Fourier-domain acceleration search (the fdas
 * tool), installed as <ddtk/fdas.h>.
 *
 * Owns: time-series input for a search (.tim of any nbits, .dat + PRESTO .inf,
 * stdin), the search plan (spectrum, red-noise whitening, z templates, overlap-
 * save correlation, harmonic summing, significance) and its candidates, and
 * access to the f-z plane for plotting.
 *
 * Conventions follow PRESTO's accelsearch: r is the Fourier frequency in bins
 * of the *average* frequency over the observation, z the drift in bins over
 * the observation (z = fdot * T^2), z steps of 2, half-bin resolution, powers
 * normalised to mean 1 in noise, sigma from chi-square with 2*numharm dof and
 * PRESTO's number of independent trials.
 */
#ifndef DDTK_FDAS_H
#define DDTK_FDAS_H

#include "ddtk.h"

DDTK_BEGIN_DECLS

#define DDTK_FDAS_MAXHARM 32
#define DDTK_FDAS_MAXSTAGES 6      /* 1, 2, 4, 8, 16, 32 harmonics */
#define DDTK_SPEED_OF_LIGHT 299792458.0

enum { DDTK_FDAS_EXACT = 0, DDTK_FDAS_INTERBIN = 1 };

typedef struct ddtk_fdas_config {
    double zmax;                  /* largest |z| searched (rounded down to even) */
    int numharm;                  /* 1, 2, 4, 8, 16 or 32 */
    double sigma;                 /* candidate threshold (after trials) */
    int interp;                   /* DDTK_FDAS_EXACT or DDTK_FDAS_INTERBIN */
    double flo, fhi;              /* fundamental range in Hz; fhi <= 0: Nyquist */
    int harm_remove;              /* drop harmonically related candidates */
    int backend, gpu, threads;    /* DDTK_BACKEND_*, GPU index, OpenMP threads */
    int64_t gpu_mem;              /* GPU: bound on the plane and its work buffers (bytes);
                                     0: none (the tools: $DDTK_FDAS_GPU_MEM, in MiB) */
    int verbose;
} ddtk_fdas_config;

void ddtk_fdas_config_init(ddtk_fdas_config *c);

/* One time series to search, with what the outputs need to describe it. */
typedef struct ddtk_fdas_series {
    float *x;
    int64_t n;
    double tsamp, dm;
    ddtk_header hdr;              /* source, position, tstart (from .tim or .inf) */
    char *name;                   /* file name for messages ("stdin") */
    char *base;                   /* output base name: path without .tim/.dat */
    char *inf_text;               /* the .inf of a .dat input, verbatim; else NULL */
    int64_t nvalid;               /* samples read: n is more when padded for the search */
    int borrowed;                 /* x is the plan's series buffer (ddtk_fdas_read_for) */
} ddtk_fdas_series;

typedef struct ddtk_fdas_plan ddtk_fdas_plan;

/* Read a .tim (any nbits, nchans 1), a .dat (with its .inf) or "-" (stdin .tim). */
int ddtk_fdas_read(const char *path, ddtk_fdas_series *s);
/*
 * Likewise, for a search with `plan` (may be NULL): a series of the plan's
 * length and sample time is read into the plan's series buffer where the
 * backend has one (GPU: pinned memory, so the upload is a single DMA); s->x
 * then stays valid while the plan lives and until its next read_for.
 */
int ddtk_fdas_read_for(const char *path, ddtk_fdas_series *s, ddtk_fdas_plan *plan);
void ddtk_fdas_series_free(ddtk_fdas_series *s);
/* The length a series of n samples is searched at: n when even, else
 * ddtk_good_length(n) (the real FFT needs an even length). */
int64_t ddtk_fdas_search_length(int64_t n);
/* Pad s to n samples (n >= s->n) with its mean; s->nvalid keeps the count
 * read, and the outputs give r and z for that many samples, as the .inf of
 * the input says. */
int ddtk_fdas_series_pad(ddtk_fdas_series *s, int64_t n);

typedef struct ddtk_fdas_cand {
    double sigma;                 /* significance after trials */
    double power;                 /* summed normalised power */
    double cpow;                  /* coherent power (sum of |A_h|)^2 */
    int numharm;
    double r, z;                  /* fundamental, bins */
    double freq, fdot, accel;     /* Hz, Hz/s, m/s^2 */
} ddtk_fdas_cand;

typedef struct ddtk_fdas_times {
    double fft, rednoise, correlate, harmsum, candidates, total;
} ddtk_fdas_times;

/* Plan a search of n-sample series at tsamp seconds (n even, >= 64). */
int ddtk_fdas_plan_create(ddtk_fdas_plan **plan, int64_t n, double tsamp,
                          const ddtk_fdas_config *cfg);
/* Search one series; candidates stay in the plan until the next execute. */
int ddtk_fdas_execute(ddtk_fdas_plan *plan, const float *x);
const ddtk_fdas_cand *ddtk_fdas_candidates(const ddtk_fdas_plan *plan, int *n);
/* Keep only candidates with acceleration in [amin, amax] m/s^2. */
void ddtk_fdas_filter_accel(ddtk_fdas_plan *plan, double amin, double amax);
const ddtk_fdas_times *ddtk_fdas_timing(const ddtk_fdas_plan *plan);
const char *ddtk_fdas_backend_name(const ddtk_fdas_plan *plan);
void ddtk_fdas_plan_destroy(ddtk_fdas_plan *plan);

/* Plane geometry: z of row zi is -zmax + 2*zi; position p is r = p/2 bins. */
typedef struct ddtk_fdas_geometry {
    int numz, zmax, numharm, nstages;
    int64_t nbins;                /* spectrum bins searched over (n/2) */
    int64_t plane_len;            /* plane positions (half bins) */
    double rlo, rhi, T;
    int fftlen, uselen, halfwidth;
    double numindep[DDTK_FDAS_MAXSTAGES], powcut[DDTK_FDAS_MAXSTAGES];
} ddtk_fdas_geometry;
void ddtk_fdas_get_geometry(const ddtk_fdas_plan *plan, ddtk_fdas_geometry *g);

/*
 * The f-z plane of the last execute (for plots): normalised powers of rows
 * [zi0, zi1) at positions [p0, p0+np) into out[(zi-zi0)*np + i]; computed on
 * the fly from the whitened spectrum with the plan's backend kernels (CPU).
 */
int ddtk_fdas_plane(ddtk_fdas_plan *plan, int zi0, int zi1, int64_t p0, int64_t np, float *out);

/*
 * Complex amplitude at arbitrary (r, z) by direct correlation (for harmonics),
 * from the whitened spectrum of the last execute as held on the host: with the
 * GPU backend, call ddtk_fdas_host_spectrum after the execute (it copies the
 * spectrum back once; with the CPU backend it does nothing).
 */
void ddtk_fdas_rz_amp(const ddtk_fdas_plan *plan, double r, double z, double *re, double *im);
int ddtk_fdas_host_spectrum(ddtk_fdas_plan *plan);

/* ---- output (fdas_out.c) --------------------------------------------------- */

enum { DDTK_FDAS_TSV = 0, DDTK_FDAS_PRESTO = 1 };

int ddtk_fdas_write_tsv(FILE *fp, const ddtk_fdas_plan *plan, const ddtk_fdas_series *s);
int ddtk_fdas_write_presto(FILE *fp, ddtk_fdas_plan *plan, const ddtk_fdas_series *s);
/*
 * PRESTO's binary <base>_ACCEL_<zmax>.cand, which prepfold -accelcand reads:
 * one 88-byte record per candidate in the order of the text, native byte
 * order, fields at byte offsets r 0 (double), rerr 8 (float), z 16 (double),
 * zerr 24, w 32 (double), werr 40, then floats pow 44, powerr 48, sig 52,
 * rawpow 56, phs 60, phserr 64, cen 68, cenerr 72, pur 76, purerr 80,
 * locpow 84 (gaps are zero). r and z are the average Fourier frequency and
 * drift for the input's length; w is 0; pow, rawpow and phs are those of the
 * fundamental (normalised power, local power 1); the error, centroid and
 * purity fields are 0.
 */
#define DDTK_FDAS_CAND_BYTES 88
int ddtk_fdas_write_cand(FILE *fp, ddtk_fdas_plan *plan, const ddtk_fdas_series *s);

DDTK_END_DECLS

#endif
