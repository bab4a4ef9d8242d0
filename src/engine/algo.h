/*
 * algo.h - the seam between the engine and its algorithms: one descriptor
 * (ddtk_algo) per algorithm, and the level it works on (ddtk_level). The
 * registry of descriptors and the parameters' public face
 * (ddtk_plan_desc_set_param, ddtk_algorithm_param) are algo.c.
 *
 * The engine (engine.c) groups a plan's DMs into levels by time-scrunch
 * factor 2^k and asks the descriptor for one level plan per level; the
 * streaming layers (stream_cpu.c, cuda/stream.cu) read the input in gulps,
 * unpack, apply --zerodm and halve the rows level by level, then run the
 * algorithm's gulp on each level and hand its series to the writer. An
 * algorithm so never sees files, gulps, scrunching, several GPUs or outputs.
 *
 * HOW TO ADD AN ALGORITHM (FDMT, say):
 *   1. src/algos/fdmt.c: its level plan and CPU half, ending with the descriptor
 *        const ddtk_algo ddtk_algo_fdmt = { .name = "fdmt", .params = ..., ... };
 *      Its parameters (name, type, default, range) are listed in that
 *      descriptor and nowhere else: the plan description carries them by name
 *      (ddtk_plan_desc_set_param), the tools make an option --NAME of each
 *      (ddcli.c), and the level plan reads them with ddtk_param(p, i), i its
 *      index in the list. Those the tuner may vary, with the values to try,
 *      are its tunables (ddtk_tunable): ddtune --algorithm fdmt then tunes
 *      them and keeps them in the wisdom, which dd_fdmt reads back. A
 *      header of its own (src/algos/fdmt.h) names the type of lv->state
 *      when its GPU half or its tool needs the level tables.
 *   2. optional, cuda/fdmt.cu: the GPU half, a
 *        extern "C" const ddtk_gpu_algo ddtk_gpu_fdmt = { ... };   (cuda/engine.cuh)
 *      named in the descriptor as .gpu = DDTK_GPU_HALF(ddtk_gpu_fdmt), after
 *        extern const struct ddtk_gpu_algo ddtk_gpu_fdmt;
 *      It reads the level plan (lv->state, typed by the algorithm's header)
 *      and never the CPU half's working memory (lv->cpu).
 *   3. one line in the registry, algorithms[] in src/engine/algo.c.
 *   4. a tool, tools/dd_fdmt.c on the shared command line (ddcli.h:
 *      ddtk_ddtool with .algorithm = "fdmt"), and its man page.
 * Nothing else names an algorithm: the engine, the streaming layers, the
 * multi-GPU split, the wisdom, the tuner and the tools' common options go
 * through the descriptor.
 */
#ifndef DDTK_ALGO_H
#define DDTK_ALGO_H

#include "dmplan.h"
#include "internal.h"

DDTK_BEGIN_DECLS

/* One time resolution of a plan: the DMs dedispersed at tsamp * 2^k. */
typedef struct ddtk_level {
    int k;
    double tsamp;
    int ndm;
    double *dms;                  /* the level's DMs */
    int *index;                   /* level DM -> plan DM */
    int64_t overlap;              /* samples at this resolution a gulp reads past its outputs */
    void *state;                  /* the level plan (create): the tables both halves read,
                                     of the type the algorithm's header names */
    void *cpu;                    /* the CPU half's working memory (cpu_reserve), or NULL */
    int view;                     /* a device's share of a level (ddtk_level_view): no reports */
    double stage_s[2];            /* two-stage algorithms: seconds in each stage so far, added
                                     by the half that ran them (CPU thread-seconds, or GPU
                                     seconds from CUDA events) */
} ddtk_level;

struct ddtk_plan;
struct ddtk_gpu_algo;             /* the GPU half (cuda/engine.cuh) */

/* What the tuner may vary for an algorithm (ddtk_tune, ddtune --algorithm,
 * --tune, the wisdom): the direct kernels' configurations (ddtk_cpu_config,
 * ddtk_gpu_config) where the algorithm runs them, and its own tunable
 * parameters (ddtk_tunable). */
enum { DDTK_TUNE_NONE = 0, DDTK_TUNE_DIRECT_KERNEL = 1 };

/* The backends where a tunable parameter changes the speed. */
enum { DDTK_TUNE_CPU = 1, DDTK_TUNE_GPU = 2 };

/*
 * A parameter the tuner may vary: one of the descriptor's params by name,
 * the backends where it matters, and the values to try. An exact one
 * changes the speed only: the tuner checks that every value gives the
 * default's bytes. One that is not exact (a sub-band layout) changes the
 * series within the algorithm's accuracy budget: the tuner keeps only
 * values whose plan the descriptor's within_budget accepts, and the
 * fastest becomes the reference of the exact ones after it.
 */
typedef struct ddtk_tunable {
    const char *param;
    int backends;                 /* DDTK_TUNE_CPU | DDTK_TUNE_GPU */
    const double *values;
    int nvalues;
    int exact;
} ddtk_tunable;

/*
 * An algorithm. create builds lv->state for the level's DMs and sets
 * lv->overlap; cpu_gulp dedisperses nout samples of every DM of the level
 * from rows (nchan live rows, descending frequency, stride floats apart,
 * each holding at least nout + overlap samples) into out[d * ostride + t];
 * destroy frees lv->state and lv->cpu. The optional members may be NULL.
 */
typedef struct ddtk_algo {
    const char *name;             /* "subband": the plan description's and the wisdom's */
    const char *label;            /* in prose: "sub-band" (.inf notes, ddplan) */
    const ddtk_param_info *params;/* its parameters, nparams of them (at most DDTK_MAX_PARAMS) */
    int nparams;
    int tune;                     /* DDTK_TUNE_*: the direct kernels it runs */
    const ddtk_tunable *tunables; /* its parameters the tuner may vary, ntunables of them,
                                     in the order it tries them */
    int ntunables;
    /* Optional, with tunables that are not exact: nonzero when plan p keeps
     * the algorithm's accuracy budget (the sub-band smearing bound). */
    int (*within_budget)(const struct ddtk_plan *p);
    int (*create)(const struct ddtk_plan *p, ddtk_level *lv);
    void (*cpu_gulp)(const struct ddtk_plan *p, ddtk_level *lv, const float *rows,
                     size_t stride, int64_t nout, float *out, size_t ostride);
    void (*destroy)(ddtk_level *lv);
    /* Optional: lv->cpu for gulps of up to `most` outputs, made by the CPU
     * streaming layer before it runs (cpu_gulp cannot fail). */
    int (*cpu_reserve)(ddtk_level *lv, int64_t most);
    /* Optional: the bytes cpu_reserve takes for `most` outputs (--max-mem). */
    int64_t (*cpu_bytes)(const ddtk_level *lv, int64_t most);
    /* Optional, for the multi-GPU split: the work per output sample of level
     * DM i, in a unit common to the algorithm's DMs (NULL: 1 each), and
     * *start = 0 where a device's share may not start (DMs that share work
     * stay together). */
    double (*split_cost)(const ddtk_level *lv, int i, int *start);
    /* Optional: the algorithm's own DMs (the tree's eq. 9), from dm_min to
     * dm_max for the channels ch and d's sample time and parameters, each
     * with its scrunch factor (scrunch: coarser past the diagonal DM), for a
     * pulse of `width` s; parameters the list resolves are set in d
     * (ddtk_plan_desc_own_dms). */
    int (*own_dms)(ddtk_plan_desc *d, const ddtk_channels *ch, double dm_min, double dm_max,
                   double width, int scrunch, double **dms, int **downsamp, int *ndm);
    /* Optional, ddplan's model (plan.c: ddtk_model_smear, ddtk_model_adds):
     * the smearing (s) the algorithm adds in quadrature to the direct terms
     * of row r (NULL: none) with sub-bands of chans_per_sub channels, and
     * its sample-adds per output sample for ndm DMs at one resolution,
     * dms_per_sub of them per sub-band DM (0: not planned). */
    double (*model_smear)(const ddtk_obs *o, const ddtk_dmplan_row *r, int chans_per_sub);
    double (*model_adds)(const ddtk_obs *o, int ndm, int dms_per_sub, int chans_per_sub);
    /* The GPU half, DDTK_GPU_HALF(symbol); NULL: the CPU only. */
    const struct ddtk_gpu_algo *gpu;
} ddtk_algo;

/* A GPU half exists in CUDA builds (make CUDA=1 defines DDTK_CUDA). */
#ifdef DDTK_CUDA
#define DDTK_GPU_HALF(symbol) (&(symbol))
#else
#define DDTK_GPU_HALF(symbol) NULL
#endif

/* The descriptor of an algorithm by name (NULL: "direct"), or NULL. */
const ddtk_algo *ddtk_algo_find(const char *name);
/* The index of a's parameter `name` in a->params, or -1. */
int ddtk_algo_param(const ddtk_algo *a, const char *name);

/* Parameter i of the plan's algorithm (its index in the descriptor's list):
 * the value set in the description, else the default; and its per-DM
 * values (plan DM order), NULL when none were given. */
double ddtk_param(const struct ddtk_plan *p, int i);
int ddtk_param_given(const struct ddtk_plan *p, int i);
const int *ddtk_param_per_dm(const struct ddtk_plan *p, int i);
/* Every parameter given in d within its range (ddtk_plan_create). */
int ddtk_params_check(const ddtk_plan_desc *d);

DDTK_END_DECLS

#endif
