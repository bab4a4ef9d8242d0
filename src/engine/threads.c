/*
 * threads.c - the CPU threads a plan's work runs on: a count the library's
 * entry points set for the calling thread while they work, read by every
 * parallel region's num_threads clause. The process's own OpenMP setting
 * (omp_set_num_threads, OMP_NUM_THREADS) is never changed.
 */
#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

static __thread int threads;

int ddtk_threads_set(int n)
{
    int old = threads;
    threads = n > 0 ? n : 0;
    return old;
}

int ddtk_threads(void)
{
#ifdef _OPENMP
    return threads > 0 ? threads : omp_get_max_threads();
#else
    return 1;
#endif
}
