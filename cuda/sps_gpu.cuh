/*
 * sps_gpu.cuh - the single-pulse search's GPU operations (sps_gpu.cu), beside
 * its CPU ones (src/search/sps.c): what the GPU stream (stream.cu) calls
 * when its sink is a search sink (ddtk_sps_sink_of). One searcher per
 * pipeline: create before the first gulp (it sets the sink's on_device),
 * gulp on each gulp's stream after its kernels (the series of buffer set
 * `set`, still on the device), collect once that stream is done (the gulp's
 * giants to the sink's searcher), free after the run. The host's
 * ddtk_sps_finish then clusters the giants into the CPU's candidates.
 */
#ifndef DDTK_CUDA_SPS_GPU_CUH
#define DDTK_CUDA_SPS_GPU_CUH

#include <cuda_runtime.h>

#include "engine.h"
#include "sps_dev.h"

typedef struct sps_gpu ddtk_sps_gpu;

/* A searcher for the DMs of a pipeline's level views views[0 .. nlevels-1],
 * gulps of step new spectra, outputs ostride[k] floats apart; w: the run's
 * writer (the samples its sink keeps). On the current device. */
int ddtk_sps_gpu_create(ddtk_sps_gpu **g, ddtk_sps_sink *sink, const ddtk_writer *w,
                        const ddtk_plan *p, const ddtk_level *views, int nlevels, int64_t step,
                        const int64_t *ostride);
/* Search nout[k] new samples of level k's series, dout[k], on st. */
int ddtk_sps_gpu_gulp(ddtk_sps_gpu *g, int set, float *const *dout, const int64_t *nout,
                      int last, cudaStream_t st);
/* After set's gulp has ended on its stream: its giants to the host searcher. */
int ddtk_sps_gpu_collect(ddtk_sps_gpu *g, int set);
/* Seconds searching (CUDA events), blocks searched, giants, replayed gulps. */
void ddtk_sps_gpu_report(const ddtk_sps_gpu *g, double *seconds, int64_t *blocks,
                         int64_t *giants, int64_t *replays);
void ddtk_sps_gpu_free(ddtk_sps_gpu *g);

#endif
