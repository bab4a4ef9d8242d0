/*
 * fdmt.h - the fast dispersion-measure transform (Zackay & Ofek 2017, ApJ
 * 835:11): the DMs it computes (one sample of delay across the band apart,
 * time scrunched past the diagonal), the merge tree of a level (lv->state of
 * the FDMT's levels) and its CPU kernel (cpu/fdmt.c). The descriptor is
 * src/algos/fdmt.c, the GPU half cuda/fdmt.cu.
 *
 * The transform, on the live rows in descending frequency (u_r = f_r^-2 -
 * f_0^-2, increasing): a node is a run of rows [a, b); a leaf is one row.
 * Row delta of a node is the sum of its rows along the track whose delay
 * from row a to row b-1 is delta samples. A node is the merge of its upper
 * half [a, m) and lower half [m, b): with x = delta / (u_{b-1} - u_a),
 *   mid = round(x (u_m - u_a)), up = round(x (u_{m-1} - u_a)), lo = delta - mid,
 *   node[delta][t] = upper[up][t] + lower[lo][t + mid]
 * (round half away from zero). Each output is thus the exact sum of one
 * input sample per row along an integer-delay path; only the path is
 * rounded, level by level. Each DM of a level is the root's row
 * D = round(DM * K (u_last - u_0) / tsamp), read from the offset
 * round(DM * K (f_0^-2 - fref^-2) / tsamp) (0 unless --ref-freq is above
 * the highest live channel).
 */
#ifndef DDTK_FDMT_H
#define DDTK_FDMT_H

#include "internal.h"

DDTK_BEGIN_DECLS

/* ---- the DMs ----------------------------------------------------------------------- */

/* The native DM step at tsamp: one sample of delay between the centres of the
 * highest and lowest channels. */
double ddtk_fdmt_step(const ddtk_channels *ch, double kdm, double tsamp);
/* The diagonal DM at tsamp: the delay between the two lowest channels'
 * centres reaches one sample (INFINITY for one channel). */
double ddtk_fdmt_diagonal(const ddtk_channels *ch, double kdm, double tsamp);

/* What dd_fdmt computes, as dd_tree: DMs m * step * 2^k at level k (time
 * scrunched 2^k), level 0 below twice the diagonal, level k >= 1 in
 * [2^k, 2^(k+1)) diagonals (all at level 0 with scrunch 0). */
typedef struct ddtk_fdmt_setup {
    int scrunch;
    double dm_min, dm_max, kdm;
} ddtk_fdmt_setup;

int ddtk_fdmt_dms(const ddtk_fdmt_setup *s, const ddtk_channels *ch, double tsamp,
                  double **dms, int **downsamp, int *ndm);

/* ---- the merge tree of a level --------------------------------------------------- */

/*
 * A node with nd rows (local delays dlo .. dlo + nd - 1). route[4 i ..]: for
 * row i, the upper child's row, the lower child's row, the lower child's
 * shift (mid) and how many samples past a chunk's n outputs the row is read
 * (it is computed over n + that; -1: no DM uses the row, never computed).
 * reach: the largest of those. Leaves have one row, no route, and are the
 * input rows.
 */
typedef struct ddtk_fdmt_node {
    int a, b, up, lo;             /* rows [a, b); children (-1: a leaf) */
    int dlo, nd;
    int64_t reach;
    int32_t *route;
    int depth;                    /* merges below it (0: a leaf) */
    size_t buf;                   /* CPU: offset of its rows in a chunk's workspace (floats) */
} ddtk_fdmt_node;

/*
 * A level: nodes in post-order (children first, the root last). The root's
 * rows are not stored: out_route[4 d ..] gives, for level DM d, the root's
 * upper row, lower row, mid and the output offset (a one-row band: the row,
 * 0, 0, offset). overlap = the most any DM reads past an output,
 * max(offset + D).
 */
typedef struct ddtk_fdmt_plan {
    int nrows, nnode, ndm, depth;
    ddtk_fdmt_node *node;
    int32_t *out_route;
    int64_t overlap;
    int64_t adds;                 /* sample-adds per output sample (ddplan, -v) */
    int chunk;                    /* the chunk parameter: output samples a CPU thread
                                     computes at once */
    int workers;                  /* CPU threads, each with a chunk's workspace */
} ddtk_fdmt_plan;

/* The tree for live rows with frequencies freq[0 .. nrows-1] (descending) at
 * tsamp and the DMs dms[0 .. ndm-1]; rounding (DDTK_ROUND_*) rounds the offsets. */
int ddtk_fdmt_plan_init(ddtk_fdmt_plan *f, const double *freq, int nrows, double fref,
                        double kdm, int rounding, double tsamp, const double *dms, int ndm);
void ddtk_fdmt_plan_free(ddtk_fdmt_plan *f);

/* ---- CPU kernel (cpu/fdmt.c) ------------------------------------------------------- */

/* Floats of one chunk's workspace (node rows) for chunks of `chunk` outputs;
 * also sets every node's buf. */
size_t ddtk_fdmt_workspace(ddtk_fdmt_plan *f, int64_t chunk);
/* Outputs t0 .. t0 + n - 1 (n <= chunk) of every DM into out[d * ostride + t]
 * (out already at t0), from rows (stride floats apart, starting at t0), with
 * ws the chunk's workspace. */
void ddtk_fdmt_chunk_cpu(const ddtk_fdmt_plan *f, const float *rows, size_t stride, int64_t n,
                         int64_t chunk, float *ws, float *out, size_t ostride);

/* ---- the GPU's plan: bands of depths in shared memory (fdmt_bands.c) ---------- */

/* Where a GPU row's operand comes from or where it goes. */
enum { DDTK_FDMT_ROW, DDTK_FDMT_IN, DDTK_FDMT_NONE, DDTK_FDMT_OUT };

#ifdef __cplusplus
#define DDTK_ALIGN16 alignas(16)
#else
#define DDTK_ALIGN16 _Alignas(16)
#endif

/* A group's row staged from device memory: an input row (IN, ref its
 * channel) or a stored target of a band below (ROW, ref its id among the
 * stored rows, holding n + lim samples), samples t0 + off .. (off a
 * multiple of 8) of a tile from t0 into slot `slot`. */
typedef struct ddtk_fdmt_ext {
    DDTK_ALIGN16 int32_t slot;
    int32_t kind, ref, lim, off, pad[3];
} ddtk_fdmt_ext;

/* One row of a group over npk packs of 16 bytes (8 samples of 16 bits or
 * 4 floats): u[su + t] + l[sl + t] (l < 0: none) into slot dst, or for a
 * target (dst < 0) into stored row gref (-1, holding n + glim samples) or
 * DM series gref (-2). */
typedef struct ddtk_fdmt_op {
    DDTK_ALIGN16 int32_t u;
    int32_t su, l, sl, dst, npk, gref, glim;
} ddtk_fdmt_op;

#define DDTK_FDMT_MAXSTAGE 8      /* depths a band holds at most */
#define DDTK_FDMT_PACK 16         /* bytes of a pack, what a lane makes of a row at once */

/* A group: its descriptors from desc[desc0], next staged rows', then nop
 * rows', nops[s] of them at the band's depth d0 + 1 + s. */
typedef struct ddtk_fdmt_group {
    int32_t desc0, next, nstage, nop;
    int32_t nops[DDTK_FDMT_MAXSTAGE];
} ddtk_fdmt_group;

/* A band of depths (d0, d1]: ngroup groups, tiles of `tile` samples, slots
 * of `pitch` samples (nslot of them), smem bytes of shared memory a block
 * (slots and one group's descriptors), lim: the most its stored targets
 * hold past the outputs. */
typedef struct ddtk_fdmt_band {
    int d0, d1, tile, pitch, ngroup, nslot, lim, ndesc;
    size_t smem;
    ddtk_fdmt_group *group;
    ddtk_fdmt_op *desc;           /* staged rows as ddtk_fdmt_ext, same size */
} ddtk_fdmt_band;

/* The bands of a level: nstore stored rows of n + reach samples each; the
 * modelled bytes of device memory per output sample. */
typedef struct ddtk_fdmt_bands {
    int nband, nstore, esize;
    int64_t reach;
    double bytes;
    ddtk_fdmt_band *band;
} ddtk_fdmt_bands;

/* Channels of the widest node whose rows are stored (16-bit rows need its
 * sums to fit). */
int ddtk_fdmt_widest(const ddtk_fdmt_plan *f);
/* The bands of plan f for rows of esize bytes a sample (2: 16-bit
 * integers, 4: floats) in blocks of at most `budget` bytes of shared
 * memory. */
int ddtk_fdmt_bands_init(ddtk_fdmt_bands *B, const ddtk_fdmt_plan *f, int esize, size_t budget);
void ddtk_fdmt_bands_free(ddtk_fdmt_bands *B);

DDTK_END_DECLS

#endif
