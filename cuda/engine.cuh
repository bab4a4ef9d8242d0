/*
 * engine.cuh - the GPU half of an algorithm (its descriptor, src/engine/algo.h,
 * names it): what the GPU streaming layer (stream.cu) needs to run an
 * algorithm on one level's device rows; and the direct device plans the
 * direct and sub-band halves share.
 */
#ifndef DDTK_CUDA_ENGINE_CUH
#define DDTK_CUDA_ENGINE_CUH

#include "direct.cuh"

#include "engine.h"

/*
 * A GPU half, defined as extern "C" const ddtk_gpu_algo ddtk_gpu_NAME. create
 * builds the device state of level lv (its level plan lv->state, never the
 * CPU half's lv->cpu) for rows encoded as `enc`, and says how many columns
 * its kernels may read past a gulp's last output plus the level's overlap
 * (*slack: the rows are allocated that much longer and zeroed). gulp
 * dedisperses nout samples of every DM of the level from rows (stride
 * elements apart) into out (ostride floats apart) on stream st. report
 * prints the level's kernel choice (-v). Optional (NULL: none): dev_bytes,
 * the device memory the half allocates per CUDA stream when a gulp gives at
 * most `most` outputs (the gulp is chosen to fit it); stage_times, for
 * two-stage algorithms, adds the seconds of each stage since its last call
 * to t (called after a run, all gulps done: the levels' stage_s and -v).
 */
struct ddtk_gpu_algo {
    int (*create)(const ddtk_plan *p, const ddtk_level *lv, ddgpu::Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack);
    int (*gulp)(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st);
    void (*report)(const void *state, char *buf, size_t n);
    void (*destroy)(void *state);
    int64_t (*dev_bytes)(const void *state, int64_t most);
    void (*stage_times)(void *state, double t[2]);
};

namespace ddgpu {

/*
 * One direct-dedispersion problem on the device (direct_plugin.cu): ndm DMs
 * over nchan rows of encoding enc, delays [ndm][nchan]; the kernel
 * configuration, the DM blocks split between the shared-memory kernel and
 * the cached fallback, and the device tables. The direct plug-in builds one
 * per level; the sub-band plug-in one per sub-band (stage 1) and one per DM
 * group (stage 2). reach: a run of nout outputs reads row columns below
 * nout + reach.
 */
struct DirectPlan {
    Encoding enc;
    int nchan, ndm;
    int config, cached, nblocks, nshared, span;   /* cached: every block by the fallback */
    int fallback;                                 /* the fallback's shape */
    ConfigInfo ci;
    size_t smem;
    int64_t reach;
    int32_t *d_delay, *d_lo;
    int *d_blocks;
};

int direct_plan_init(DirectPlan *P, const int32_t *delay, int nchan, int ndm, Encoding enc,
                     const ddtk_gpu_config *cfg, const cudaDeviceProp &prop);
void direct_plan_free(DirectPlan *P);
/* nout outputs of every DM from rows (stride elements apart) into out
 * (ostride elements of ostorage apart; integer storage gets sums + obias). */
int direct_plan_run(const DirectPlan *P, const void *rows, int64_t stride, int64_t nout,
                    void *out, int64_t ostride, Storage ostorage, int obias, cudaStream_t st);
/* The kernel and the block split, for -v. */
void direct_plan_describe(const DirectPlan *P, char *buf, size_t n);
/* The kind of shared-memory kernel P runs, as -v names it. */
const char *direct_plan_kernel(const DirectPlan *P);

/* A level's device row sample as a float: integer codes less the format's
 * bias (unsigned samples are stored offset), floats as they are. */
template <typename T>
__device__ __forceinline__ float decode(T v, int bias)
{
    return (float)((int)v - bias);
}

template <>
__device__ __forceinline__ float decode<float>(float v, int)
{
    return v;
}

/* Seconds between two events recorded on a completed stream (0 where CUDA
 * cannot time them), for the stage times of -v. */
inline double event_seconds(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms / 1000.0 : 0.0;
}

}  // namespace ddgpu

#endif
