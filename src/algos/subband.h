/*
 * subband.h - the level plan of the sub-band algorithm (subband.c), the
 * tables its CPU and GPU halves (cuda/subband_plugin.cu) both read.
 */
#ifndef DDTK_SUBBAND_H
#define DDTK_SUBBAND_H

#include "internal.h"

DDTK_BEGIN_DECLS

/* A level (ddtk_level.state): live rows [sub_first[b], sub_first[b+1]) form
 * sub-band b, level DMs [group_first[g], group_first[g+1]) group g with its
 * nominal DM; d1 [g][row] stage-1 delays (below the sub-band's top row), d2
 * [dm][b] stage-2 delays (of the sub-band's top row), width2 [g][b] the most
 * stage 2 of group g reads past an output, max2 the largest of them. */
typedef struct ddtk_subband_level {
    int nsub, nlive, ngroups;
    int *sub_first;                 /* [nsub + 1] */
    int *group_first;               /* [ngroups + 1] */
    double *nominal;                /* [ngroups] */
    int32_t *d1, *d2, *width2;
    int32_t max2;
    double max_ratio, max_extra, work;  /* predicted smearing and sample-adds, whole plan */
    double lv_ratio, lv_extra;      /* the smearing of this level's DMs only */
} ddtk_subband_level;

DDTK_END_DECLS

#endif
