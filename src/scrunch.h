/*
 * scrunch.h - time scrunching inside the streaming direct driver (scrunch.c).
 */
#ifndef DDTK_SCRUNCH_H
#define DDTK_SCRUNCH_H

#include "ddtk.h"

typedef struct ddtk_scrunch ddtk_scrunch;

#define DDTK_SCRUNCH_MAX_LEVELS 11      /* factors 1 .. 1024 */

/* The dedispersion kernel a level runs (ddtk_direct_cpu's signature). */
typedef void (*ddtk_kernel_fn)(const float *in, size_t istride, int nchan, int64_t nout,
                               const int32_t *delay, int ndm, float *out, size_t ostride);

/* Group the DMs by their factor (powers of two, ds[i] per dms[i]) and build a
 * delay table per resolution. *s stays NULL when every factor is 1. */
int ddtk_scrunch_create(ddtk_scrunch **s, const ddtk_channels *ch, double tsamp,
                        const double *dms, const int *ds, int ndm, const ddtk_options *opt);
/* Full-resolution spectra the gulp must keep for the slowest level, and the
 * largest factor (the gulp step must be a multiple of it). */
int64_t ddtk_scrunch_keep(const ddtk_scrunch *s);
int ddtk_scrunch_max_factor(const ddtk_scrunch *s);
/* Levels 0 .. n-1 of the cascade (level k: factor 2^k), and level k's delay
 * table at tsamp * 2^k, NULL when no DM has that factor. The GPU driver
 * (cuda/pipeline.cu) runs the same cascade from these. */
int ddtk_scrunch_levels(const ddtk_scrunch *s);
const ddtk_delays *ddtk_scrunch_level(const ddtk_scrunch *s, int k);
/* Output samples of level k for a gulp of fill spectra (step new ones, a
 * multiple of every factor): step / 2^k, or all it can on the last gulp. */
int64_t ddtk_scrunch_nout(const ddtk_scrunch *s, int k, int64_t step, int64_t fill, int last);
/* Write n samples of each of level k's series (rows pitch floats apart) to
 * the run's DMs, keeping the --pad sums. */
int ddtk_scrunch_write(ddtk_scrunch *s, int k, const float *x, size_t pitch, int64_t n,
                       ddtk_outset *out);
/* Sample-adds done so far: output samples of every DM times channels. */
double ddtk_scrunch_adds(const ddtk_scrunch *s);
/* Allocate the level buffers for gulps of step new spectra behind keep. */
int ddtk_scrunch_alloc(ddtk_scrunch *s, int64_t keep, int64_t step);
/*
 * Dedisperse one gulp: buf holds fill spectra per row (stride apart) starting
 * at an input sample that is a multiple of step; every level writes step/f
 * samples, or all it can on the last gulp. *nout gets the finest level's count.
 */
int ddtk_scrunch_gulp(ddtk_scrunch *s, const float *buf, size_t stride, int64_t fill,
                      int last, ddtk_kernel_fn kernel, ddtk_outset *out, int64_t *nout);
/* --pad: extend each series to its resolution's input length with its mean. */
int ddtk_scrunch_pad(ddtk_scrunch *s, ddtk_outset *out);
void ddtk_scrunch_destroy(ddtk_scrunch *s);

#endif
