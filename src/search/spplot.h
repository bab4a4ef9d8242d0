/*
 * spplot.h - what a candidate plot shows, computed from the filterbank
 * (spplot.c) for tools/spplot.c, which draws it with cairo. Not installed.
 *
 * Around a candidate (sample s, boxcar w, DM d) the window holds 2H input
 * samples, H = max(64, 8w), centred on s and binned by b (at most
 * DDTK_SPPLOT_BINS bins). The bow-tie has DDTK_SPPLOT_NDM rows, DM d in the
 * middle one and the others step apart, the step chosen so that the pulse
 * smears over about H samples at the outer rows (rows below DM 0 are
 * empty). The waterfall has at most DDTK_SPPLOT_NSUB sub-bands.
 */
#ifndef DDTK_SPPLOT_H
#define DDTK_SPPLOT_H

#include "sps.h"

#define DDTK_SPPLOT_BINS 256
#define DDTK_SPPLOT_NDM 101
#define DDTK_SPPLOT_NSUB 64

typedef struct ddtk_spplot {
    int nbins, ndm, nsub;
    int64_t first;                /* input sample of bin 0's start */
    int bin;                      /* input samples per bin */
    double tsamp, dm, dm_step, flo, fhi;
    float *waterfall;             /* [sub][bin], sub 0 the highest frequency */
    float *bowtie;                /* [row][bin], row 0 the lowest DM, through the candidate's
                                     boxcar; NAN below DM 0 */
    float *profile;               /* [bin]: the series at DM d, S/N units per bin */
    float *snr;                   /* [row]: the best boxcar's S/N in the window; NAN below 0 */
    double *row_dm;               /* [row] */
    int box;                      /* the boxcar in bins */
} ddtk_spplot;

/* The plot data of candidate c from the open SIGPROC file in (seeked as
 * needed; kdm and the reference frequency as dd_direct's defaults). */
int ddtk_spplot_make(ddtk_input *in, const ddtk_sps_cand *c, ddtk_spplot *p);
void ddtk_spplot_free(ddtk_spplot *p);

#endif
