/*
 * backend.c - the one backend policy of every tool: --backend auto|cpu|gpu
 * and --gpu N decide whether a run goes to a GPU, and why not.
 *
 * auto takes GPU N when it is usable and otherwise runs on the CPU (saying so
 * with -v); gpu insists, failing with the reason (no CUDA in this build, no
 * device, index out of range) as a system error; cpu never touches CUDA.
 */
#include "internal.h"
#include "cli.h"

#ifdef _OPENMP
#include <omp.h>
#endif

const char *const ddtk_backend_names[] = { "auto", "cpu", "gpu", NULL };

int ddtk_backend_resolve(int backend, int gpu, int verbose, int *use_gpu)
{
    char name[256], why[256];
    *use_gpu = 0;
    if (backend != DDTK_BACKEND_CPU)
        *use_gpu = ddtk_gpu_usable(gpu, name, sizeof name, why, sizeof why);
    if (backend == DDTK_BACKEND_GPU && !*use_gpu)
        return ddtk_fail(DDTK_ESYS, "--backend gpu: %s", why);
    if (*use_gpu && verbose)
        ddtk_msg("using GPU %d: %s", gpu, name);
    else if (backend == DDTK_BACKEND_AUTO && verbose) {
        int n = 1;
#ifdef _OPENMP
        n = omp_get_max_threads();
#endif
        ddtk_msg("note: --backend auto uses the CPU (%d thread%s): %s", n, n == 1 ? "" : "s",
                 why);
    }
    return DDTK_OK;
}
