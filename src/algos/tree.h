/*
 * tree.h - tree (Taylor) dedispersion, Barsdell et al. 2012 section 3: the
 * channel geometry of a tree (positions, sub-bands), the DMs it computes
 * (eq. 9 and its scrunched extensions), the Appendix-A smearing bound, and
 * the CPU kernels (cpu/tree.c). The algorithm's descriptor is src/algos/tree.c.
 */
#ifndef DDTK_TREE_H
#define DDTK_TREE_H

#include "internal.h"

DDTK_BEGIN_DECLS

enum { DDTK_TREE_PIECEWISE = 0, DDTK_TREE_PADDED = 1 };

/*
 * Where the live channels sit in a tree: positions 0 .. np-1 in delay order
 * (the highest frequency first), np a multiple of the sub-band size cps (a
 * power of two). Piecewise: position = channel index, the band padded with
 * empty channels. Padded (eqs. 24-25): positions linear in f^-2, one
 * sub-band. Several live rows may share a position (padded), so positions
 * hold row lists: rows first[q] .. first[q+1]-1 of rows[].
 */
typedef struct ddtk_tree_geom {
    int method, cps, np, nsb;     /* nsb = np / cps sub-bands */
    int *first, *rows;
    double *dt;                   /* live row -> delay per unit DM (s) relative to fref */
    double *dt0, *slope;          /* per sub-band chord: delay per unit DM (s) at its first
                                   * position and per position (NaN: no live channel) */
    double slope_max;             /* largest per-position delay slope per unit DM (s) */
} ddtk_tree_geom;

int ddtk_tree_geom_init(ddtk_tree_geom *g, const ddtk_channels *ch, double kdm, int method,
                        int cps);
void ddtk_tree_geom_free(ddtk_tree_geom *g);

/* A DM's route through sub-band n at sample time tsamp: the linear sweep E
 * (end delay across the sub-band, in samples) and the sub-band's offset.
 * Returns 0 when the sub-band has no live channel. */
int ddtk_tree_route(const ddtk_tree_geom *g, int n, double dm, double tsamp, int rounding,
                    int *sweep, int *offset);

/* The diagonal DM at tsamp (eqs. 21, 26): the largest DM whose sweeps stay
 * within one tree pass (E <= cps - 1 in every sub-band). */
double ddtk_tree_diagonal(const ddtk_tree_geom *g, double tsamp);

/* Appendix A: relative smearing mu_tree (A6) of a pulse of intrinsic width
 * `width` (s) at `dm` dedispersed at tsamp with sub-bands of cps channels. */
double ddtk_tree_smear(const ddtk_channels *ch, double kdm, double tsamp, int cps, double dm,
                       double width);

/* What dd_tree computes: the set-up and the DMs (with per-DM scrunch factors). */
typedef struct ddtk_tree_setup {
    int method, cps;              /* cps 0: the default from the smearing budget */
    int scrunch;                  /* halve the time resolution per doubling of the diagonal */
    double dm_min, dm_max, width; /* width: intrinsic pulse width (s) for the budget */
    double kdm, max_smear;        /* max_smear: the budget (1.1: 10% extra smearing) */
} ddtk_tree_setup;

/* Resolve s->cps and list the DMs (eq. 9 at each level's sample time, the
 * level of a DM by its multiple of the diagonal) within dm_min .. dm_max. */
int ddtk_tree_dms(ddtk_tree_setup *s, const ddtk_channels *ch, double tsamp, double **dms,
                  int **downsamp, int *ndm);
/* Largest smearing bound mu over a DM list (each DM at its scrunched tsamp). */
double ddtk_tree_list_smear(const ddtk_tree_setup *s, const ddtk_channels *ch, double tsamp,
                            const double *dms, const int *downsamp, int ndm);

/*
 * The level plan of the tree algorithm (ddtk_level.state), the tables its
 * CPU and GPU (cuda/tree.cu) halves both read: every DM routed through a
 * (pass j, sub-band n) slot per sub-band.
 */
typedef struct ddtk_tree_level {
    ddtk_tree_geom g;
    int nslot, jmax;
    int *slot_j, *slot_n, *slot_off;  /* pass, sub-band, largest offset a DM reads */
    int *sel, *off;               /* per DM and sub-band: slot * cps + d' (-1: none), offset */
    int maxoff;
    int gpu_group;                /* the gpu_group parameter (0: the GPU half's default) */
    int chunk;                    /* the chunk parameter: the CPU half's stage-1 task */
} ddtk_tree_level;

/* ---- CPU kernels (cpu/tree.c) ---- */

/*
 * The basic tree (eqs. 10-15) over n = 2^m rows of a (stride floats apart,
 * each len samples long), b scratch of the same shape: row d' of out
 * (ostride apart) receives the sum along sweep d' (0 .. n-1), samples
 * 0 .. len - n. a and b are overwritten.
 */
void ddtk_tree_cpu(float *a, float *b, size_t stride, int n, int64_t len, float *out,
                   size_t ostride);
/* Stage 2 (eq. 22): out[d][t] = sum_k src[d * nsb + k][t] for t < nout; a
 * NULL source is skipped. */
void ddtk_tree_combine_cpu(const float *const *src, int nsb, int ndm, int64_t nout, float *out,
                           size_t ostride);

DDTK_END_DECLS

#endif
