/*
 * engine.cuh - the GPU half of an algorithm plug-in (src/engine.h has the
 * CPU half): what the GPU streaming layer (stream.cu) needs to run an
 * algorithm on one level's device rows.
 */
#ifndef DDTK_CUDA_ENGINE_CUH
#define DDTK_CUDA_ENGINE_CUH

#include "direct.cuh"

#include "engine.h"

namespace ddgpu {

/*
 * create builds the device state of level lv for rows encoded as `enc`, and
 * says how many columns its kernels may read past a gulp's last output plus
 * the level's overlap (*slack: the rows are allocated that much longer and
 * zeroed). gulp dedisperses nout samples of every DM of the level from rows
 * (stride elements apart) into out (ostride floats apart) on stream st.
 * report prints the level's kernel choice (-v). stage_times (optional, two
 * stage algorithms) adds the seconds of each stage since its last call.
 */
struct GpuAlgo {
    int id;
    int (*create)(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack);
    int (*gulp)(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st);
    void (*report)(const void *state, char *buf, size_t n);
    void (*destroy)(void *state);
    void (*stage_times)(void *state, double t[2]);
};

extern const GpuAlgo direct_gpu, subband_gpu;
extern const GpuAlgo tree_gpu;

}  // namespace ddgpu

#endif
