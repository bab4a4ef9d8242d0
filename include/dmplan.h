/*
 * dmplan.h - DM plans (plan.c): tolerance lists with per-DM time scrunching,
 * PRESTO DDplan-style ranges, the smearing and cost models (each
 * algorithm's its descriptor's), and the --plan TSV files that ddplan
 * writes and the dedispersion tools read.
 */
#ifndef DDTK_DMPLAN_H
#define DDTK_DMPLAN_H

#include "ddtk.h"

DDTK_BEGIN_DECLS

/* The observing set-up a plan is made for. Frequencies in MHz, times in s. */
typedef struct ddtk_obs {
    int nchans;
    double tsamp, kdm;
    double fhi, flo;              /* centres of the highest and lowest channels */
    double chan_bw;               /* |channel width| */
    double bw, fctr;              /* nchans * chan_bw, and the band centre */
    int64_t nsamples;             /* 0 when unknown */
} ddtk_obs;

int ddtk_obs_init(ddtk_obs *o, int nchans, double fch1, double foff, double tsamp,
                  int64_t nsamples, double kdm);
int ddtk_obs_from_header(ddtk_obs *o, const ddtk_header *h, int64_t nsamples, double kdm);

/* DMs dm_lo + i*dm_step, i < ndm, dedispersed at downsamp times tsamp;
 * dm_hi = dm_lo + ndm*dm_step is where the next row starts. */
typedef struct ddtk_dmplan_row {
    double dm_lo, dm_hi, dm_step;
    int downsamp, ndm;
    int dms_per_sub;              /* DDplan's DMs per sub-band DM; 0: not planned */
} ddtk_dmplan_row;

typedef struct ddtk_dmplan {
    ddtk_dmplan_row *row;
    int n, cap;
} ddtk_dmplan;

void ddtk_dmplan_free(ddtk_dmplan *p);
int ddtk_dmplan_push(ddtk_dmplan *p, const ddtk_dmplan_row *r);

/* DM where the dispersion sweep across one channel (at the band centre)
 * equals one sample: Barsdell's "diagonal". */
double ddtk_diagonal_dm(const ddtk_obs *o);
/* Time-scrunch factor for a DM: 2^k for 2^k <= DM/diagonal < 2^(k+1), else 1. */
int ddtk_scrunch_factor(const ddtk_obs *o, double dm);

/* PRESTO DDplan.py's plan for lo..hi with nsub sub-bands (0: none). */
int ddtk_dmplan_ranges(ddtk_dmplan *p, const ddtk_obs *o, double lo, double hi, int nsub);
/* One row per DM of a list; ds (NULL: all 1) gives each DM's scrunch factor. */
int ddtk_dmplan_from_list(ddtk_dmplan *p, const double *dm, const int *ds, int n);
/* The DM list and the per-DM scrunch factors (*ds malloc'd) of a plan. */
int ddtk_dmplan_expand(const ddtk_dmplan *p, ddtk_dmlist *dms, int **ds);
int ddtk_dmplan_ndm(const ddtk_dmplan *p);

/* --plan files: TSV, header row "dm_lo dm_hi dm_step downsamp ndm", '#' comments. */
int ddtk_dmplan_read(ddtk_dmplan *p, const char *path);
int ddtk_dmplan_write(const ddtk_dmplan *p, const char *path, int force);
/* Rows must be ascending and contiguous, with sane values; name is for messages. */
int ddtk_dmplan_validate(const ddtk_dmplan *p, const char *name);

/* Smearing (seconds) of one row at its largest DM for a pulse of intrinsic
 * width `width`: the terms of the direct algorithm and their total. */
typedef struct ddtk_smear {
    double samp, width, chan, step;   /* sampling, intrinsic, channel, DM step */
    double direct;                    /* in quadrature */
} ddtk_smear;

void ddtk_smear_row(const ddtk_obs *o, const ddtk_dmplan_row *r, double width, ddtk_smear *s);

/*
 * An algorithm's model (ddtk_algorithm names them; ddplan prints them), with
 * sub-bands of chans_per_sub channels: the total smearing of row r, the
 * direct terms s and the algorithm's own in quadrature (Barsdell eq. B1 for
 * the sub-band's nominal DMs, A1 for the tree's piecewise-linear sub-bands),
 * and the sample-adds of plan p over nsamples input samples. DDTK_EUSAGE for
 * an algorithm without a model.
 */
int ddtk_model_smear(const char *algorithm, const ddtk_obs *o, const ddtk_dmplan_row *r,
                     const ddtk_smear *s, int chans_per_sub, double *total);
int ddtk_model_adds(const char *algorithm, const ddtk_obs *o, const ddtk_dmplan *p,
                    int64_t nsamples, int chans_per_sub, double *adds);
/* Bytes of float32 output of plan p over nsamples input samples. */
double ddtk_dmplan_out_bytes(const ddtk_dmplan *p, int64_t nsamples);

/*
 * Split n DMs of cost[i] >= 0 into nparts contiguous ranges [first[j],
 * first[j+1]) (first[0] = 0, first[nparts] = n) of nearly equal cost: range j
 * ends at the DM whose cost prefix is nearest j * total / nparts, among those
 * where a range may start (cut[i] != 0; NULL: every DM). Each range's cost is
 * then within one DM's cost (one uncut run's) of the mean. Ranges are empty
 * when there are more parts than DMs. The multi-GPU split of the engine.
 */
int ddtk_split_cost(const double *cost, const uint8_t *cut, int n, int nparts, int *first);

DDTK_END_DECLS

#endif
