/*
 * fdas_buffer.h - the fdas plan's series buffer, for the library's fdas input
 * code (fdas_io.c), which sees the plan through fdas.h and this alone (the
 * plan's internals, cpu/fdas_kernels.h, stay with the driver and the kernels).
 */
#ifndef DDTK_FDAS_BUFFER_H
#define DDTK_FDAS_BUFFER_H

#include "fdas.h"

/* The buffer a series of *n samples at *tsamp may be read into for a search
 * with this plan (GPU: pinned, uploaded in one DMA); NULL where the backend
 * has none (CPU). */
float *ddtk_fdas_series_buffer(const ddtk_fdas_plan *plan, int64_t *n, double *tsamp);

#endif
