/*
 * sps_dev.h - what the single-pulse search on the GPU (cuda/sps_gpu.cu) needs
 * of the host's (sps.c, sps_sink.c): each series' shape (the sample factor,
 * the baseline block, the boxcars, the threshold), a way to hand the giants
 * the device found to the host's searcher (which clusters them with any it
 * found itself), and the search sink of a stream. Internal to libddtk.
 */
#ifndef DDTK_SPS_DEV_H
#define DDTK_SPS_DEV_H

#include "sps.h"

DDTK_BEGIN_DECLS

#define DDTK_SPS_MAX_BOXCARS 50
/* The boxcars' prefix sums are summed DDTK_SPS_CHUNK samples at a time, then
 * each chunk's sums added to the sum of the chunks before (sps.c's
 * prefix_sums): the device sums the chunks side by side, in the same order. */
#define DDTK_SPS_CHUNK 1024

/* Series `series` as the host searches it: f finest samples per sample,
 * blocks of `block` samples, boxcars width[0 .. nw-1] samples (widest the
 * last), S/N threshold thr. */
typedef struct ddtk_sps_shape {
    int f, nw;
    int64_t block, widest;
    int64_t width[DDTK_SPS_MAX_BOXCARS];
    double thr;
    int gpu_giants;               /* the params' gpu_giants (0: the device's default) */
} ddtk_sps_shape;

void ddtk_sps_shape_of(const ddtk_sps *s, int series, ddtk_sps_shape *shape);
/* A giant of series `series` found elsewhere: boxcar k's run, highest at
 * series sample t with S/N snr (as sps.c's runs give them). */
int ddtk_sps_add_giant(ddtk_sps *s, int series, int k, float snr, int64_t t);
/* The search sink behind s (ddtk_sps_sink_init), or NULL for any other sink. */
ddtk_sps_sink *ddtk_sps_sink_of(ddtk_sink *s);

DDTK_END_DECLS

#endif
