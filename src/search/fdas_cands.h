/*
 * fdas_cands.h - the candidates of the search (fdas_cands.c), for its driver
 * (fdas.c): one direction, the driver above its candidates above the
 * kernels (cpu/fdas_kernels.h). Not installed.
 */
#ifndef DDTK_FDAS_CANDS_H
#define DDTK_FDAS_CANDS_H

#include "fdas_kernels.h"

DDTK_BEGIN_DECLS

/* Hits -> sigma, clustering, harmonic removal, sorting. */
int ddtk_fdas_candidates_build(ddtk_fdas_plan *p);

DDTK_END_DECLS

#endif
