/*
 * backend.c - the one backend policy of every tool: --backend auto|cpu|gpu
 * and --gpu N|LIST|all decide whether a run goes to GPUs, which, and why not.
 *
 * auto takes GPU N when it is usable and otherwise runs on the CPU (saying so
 * with -v); gpu insists, failing with the reason (no CUDA in this build, no
 * device, index out of range) as a system error; cpu never touches CUDA.
 */
#include "internal.h"


#include <string.h>

const char *const ddtk_backend_names[] = { "auto", "cpu", "gpu", NULL };

int ddtk_backend_resolve(int backend, int gpu, int verbose, int *use_gpu)
{
    char name[256], why[256];
    *use_gpu = 0;
    if (backend != DDTK_BACKEND_CPU)
        *use_gpu = ddtk_gpu_usable(gpu, name, sizeof name, why, sizeof why);
    if (backend == DDTK_BACKEND_GPU && !*use_gpu)
        return ddtk_fail(DDTK_ESYS, "backend gpu: %s", why);
    if (*use_gpu && verbose)
        ddtk_report(DDTK_MSG_VERBOSE, "using GPU %d: %s", gpu, name);
    else if (backend == DDTK_BACKEND_AUTO && verbose) {
        int n = ddtk_threads();
        ddtk_report(DDTK_MSG_NOTE, "backend auto uses the CPU (%d thread%s): %s", n,
                    n == 1 ? "" : "s", why);
    }
    return DDTK_OK;
}

int ddtk_backend_resolve_gpus(int backend, const int *gpus, int ngpus, int gpu, int verbose,
                              int *use_gpu, int *list, int *n)
{
    *n = 1;
    list[0] = gpu;
    if (ngpus == DDTK_GPUS_ALL) {
        int count = backend == DDTK_BACKEND_CPU ? 0 : ddtk_gpu_count();
        *n = count < 2 ? 1 : count < DDTK_MAX_GPUS ? count : DDTK_MAX_GPUS;
        for (int i = 0; i < *n; i++)
            list[i] = i;
    } else if (ngpus > 0) {
        *n = ngpus;
        memcpy(list, gpus, (size_t)ngpus * sizeof *list);
    }
    /* The first GPU that cannot be used decides, with its reason. */
    for (int i = 0; i < *n; i++) {
        int rc = ddtk_backend_resolve(backend, list[i], 0, use_gpu);
        if (rc || !*use_gpu)
            return ddtk_backend_resolve(backend, list[i], verbose, use_gpu);
    }
    for (int i = 0; verbose && i < *n; i++)
        ddtk_backend_resolve(backend, list[i], verbose, use_gpu);
    return DDTK_OK;
}
