/*
 * engine.h - internals of the dedispersion engine (engine.c), shared by the
 * algorithm plug-ins (direct.c), the CPU streaming layer (stream_cpu.c), the
 * output writer (writer.c) and the GPU streaming layer (cuda/stream.cu).
 *
 * A plan (the public ddtk_plan) is the geometry of a problem: channels,
 * sample time, DM list and per-DM time-scrunch factors, the input sample
 * format and the kernel configurations. Its DMs are grouped into levels by
 * factor 2^k; each level holds one level plan of the algorithm (algo.h)
 * built for tsamp * 2^k. A streaming layer (one per backend) reads a source in
 * gulps, unpacks, applies --zerodm, halves the rows level by level (the
 * time-scrunch cascade, for any plug-in), runs the plug-in's gulp on every
 * level with DMs and hands the series to the writer, which maps them to the
 * plan's DMs, keeps the --pad sums and counts the work.
 */
#ifndef DDTK_ENGINE_H
#define DDTK_ENGINE_H

#include "algo.h"
#include "internal.h"

DDTK_BEGIN_DECLS

#define DDTK_DEFAULT_MAX_MEM ((int64_t)2 << 30)
/* The plan's host memory bound: --max-mem, else the default. Tables a plan
 * builds in proportion to its DMs (the tree's routes, the tuner's block) are
 * held to it too, with the option named in the refusal. */
int64_t ddtk_plan_max_mem(const ddtk_plan_desc *d);
int ddtk_check_mem(const ddtk_plan_desc *d, double bytes, const char *what);

/* Streaming state of a backend, kept between runs of one plan. */
typedef struct ddtk_cpu_stream ddtk_cpu_stream;
typedef struct ddtk_gpu_stream ddtk_gpu_stream;
typedef struct ddtk_gpu_warm ddtk_gpu_warm;

struct ddtk_plan {
    ddtk_plan_desc d;             /* arrays below are the plan's own copies */
    double *freqs, *dms;
    uint8_t *kill;
    int *downsamp;
    int *per_dm[DDTK_MAX_PARAMS]; /* the algorithm's per-DM parameter values */
    const ddtk_algo *algo;
    ddtk_header fmt;              /* the input sample format (nchans, nbits, nifs, signed) */
    int pol;                      /* resolved IF selection */
    ddtk_channels ch;
    int nlevels, first;           /* levels 0 .. nlevels-1; first: the finest with DMs */
    ddtk_level lv[DDTK_MAX_LEVELS];
    int32_t maxdelay;             /* largest delay of the DM list at full resolution */
    int64_t keep;                 /* full-resolution spectra kept between gulps */
    int align;                    /* every gulp step is a multiple of this */
    int use_gpu;
    int ngpu, gpus[DDTK_MAX_GPUS];  /* the GPUs sharing the DMs (resolved --gpu LIST) */
    ddtk_cpu_stream *cpu;
    ddtk_gpu_stream *gpu;
    ddtk_gpu_warm *warm;          /* the GPUs' contexts in the making (ddtk_gpu_warm_start) */
    double last_kernel;           /* kernel seconds of the last ddtk_plan_execute (tuner) */
};


/* ---- the writer: level series -> plan DMs, --pad, work done ------------------ */

typedef struct ddtk_writer {
    const ddtk_plan *p;
    ddtk_sink *sink;
    int pad, length;              /* --pad; the sink's DDTK_LEN_* rule */
    double *sums;                 /* per plan DM */
    int64_t *count;               /* samples computed per plan DM */
    float *held;                  /* even rule: each DM's latest sample, written when the
                                     next one comes or at the end if the length is even */
    int64_t *given;               /* samples the sink has had per plan DM */
    int progress;                 /* reports progress (ddtk_report_progress) */
    int light;                    /* series discarded, no sums: counted on one thread */
    int64_t total;                /* input spectra, -1 when unknown */
} ddtk_writer;

/* show: progress for runs of files (not with the plan's quiet); total: input
 * spectra for the bar, -1 when unknown. */
int ddtk_writer_init(ddtk_writer *w, const ddtk_plan *p, ddtk_sink *sink, int pad,
                     int show, int64_t total);
/* After each gulp: progress. */
void ddtk_writer_gulp(ddtk_writer *w, const ddtk_source *src);
/* n samples of each of level k's series, rows pitch floats apart. */
int ddtk_writer_level(ddtk_writer *w, int k, const float *x, size_t pitch, int64_t n);
/* The same for the series of a level's view (a device's share). */
int ddtk_writer_view(ddtk_writer *w, const ddtk_level *lv, const float *x, size_t pitch,
                     int64_t n);
/* n samples more of each of a view's series, kept on the device (the GPU's
 * search with nothing written): counted, not written. */
void ddtk_writer_count(ddtk_writer *w, const ddtk_level *lv, int64_t n);
/* How many of data samples of a level-k series its sink gets as data (the
 * even length rule drops an odd last one): what the search may see. */
int64_t ddtk_writer_kept(const ddtk_writer *w, int k, int64_t data);
/* End of a run: the length check (no sample, or none past the maximum delay,
 * is bad data), --pad and the length rule, and the run statistics. */
int ddtk_writer_finish(ddtk_writer *w, const ddtk_source *src, int rc, ddtk_run_stats *st);
void ddtk_writer_free(ddtk_writer *w);
/* 1 when the series go nowhere (an output set that discards them). */
int ddtk_writer_discards(const ddtk_writer *w);

/* ---- what both streaming layers compute (gulp.c) ------------------------------- */

int64_t ddtk_round_up(int64_t x, int64_t m);
/* The level of plan DM dm (its scrunch factor's log2; -1 for a factor that is
 * not a power of two up to 2^(DDTK_MAX_LEVELS - 1)). */
int ddtk_plan_level(const ddtk_plan *p, int dm);
/* Output samples of level k for a gulp of fill spectra with step new ones
 * (all it can on the last gulp), never negative. */
int64_t ddtk_level_nout(const ddtk_plan *p, int k, int64_t step, int64_t fill, int last);
/* The most outputs level k gives in one gulp of step new spectra (a last
 * gulp may give more than step / 2^k): the length of its output buffers. */
int64_t ddtk_level_most_out(const ddtk_plan *p, int k, int64_t step);
/* Bytes of nspectra raw spectra in the plan's format. */
int64_t ddtk_plan_raw_bytes(const ddtk_plan *p, int64_t nspectra);
/* Read through src->read, keeping samples_read and eof (a short read ends it). */
int ddtk_source_pull(ddtk_source *s, void *raw, int64_t n, int64_t *got);
/* A read's bookkeeping: rc, else the samples counted and eof set when got < n. */
int ddtk_source_count(ddtk_source *s, int rc, int64_t n, int64_t got);
/* 1 for a file source whose input decodes straight into channel rows
 * (ddtk_input_reads_rows); ddtk_source_pull_rows is then its read. */
int ddtk_source_rows(const ddtk_source *s);
int ddtk_source_pull_rows(ddtk_source *s, int64_t n, const int *row, int pol, float *out,
                          size_t stride, int64_t *got);
/* For the GPU: spectra per row of a file source whose scaled spectra can be
 * read as raw bytes with per-row multiply-adds (ddtk_input_scaled_bytes),
 * else 0; ddtk_source_pull_scaled is then its read. */
int ddtk_source_scaled(const ddtk_source *s, int *sgn);
int ddtk_source_pull_scaled(ddtk_source *s, int64_t n, uint8_t *out, int32_t *seg, float *tab,
                            int maxseg, int *nseg, int64_t *got);
/* For the GPU: a file source's --rfi auto done on the device for one run
 * (ddtk_clean_geometry, ddtk_clean_hand_over, ddtk_clean_take_back). */
int ddtk_source_clean_geometry(const ddtk_source *s, ddtk_clean_geom *g);
void ddtk_source_clean_hand_over(ddtk_source *s);
void ddtk_source_clean_take_back(ddtk_source *s, const ddtk_rfi_report *r, const uint8_t *ever);
/*
 * The gulp step: --gulp, else `preferred` (at least keep), never beyond the
 * input nor `most`, halved (in multiples of 8 spectra) while it does not fit.
 * Returns whether the step chosen fits; the caller reports why not.
 */
int ddtk_choose_step(const ddtk_plan *p, const ddtk_source *src, int64_t preferred,
                     int64_t most, int (*fits)(const ddtk_plan *, int64_t, void *), void *ctx,
                     int64_t *step);

/* The plan's DMs in nparts contiguous ranges [first[j], first[j+1]) of
 * nearly equal work (ddtk_split_cost): a DM of level k costs the plug-in's
 * split_cost / 2^k, and no range starts inside DMs that share work. */
int ddtk_plan_split(const ddtk_plan *p, int nparts, int *first);
/* Level k's DMs with plan index in [dm0, dm1), as a level of its own (a
 * device's share): the level itself when that is all of it, else a new
 * plug-in instance for those DMs (v->ndm 0: none of them). Free with
 * ddtk_level_view_free. */
int ddtk_level_view(const ddtk_plan *p, int k, int dm0, int dm1, ddtk_level *v);
void ddtk_level_view_free(const ddtk_plan *p, ddtk_level *v);

/* ---- --gpu all: how many GPUs (gpu_choice.c) ------------------------------------ */

/* A run's cost on GPUs, in seconds: set-up of one GPU and what each further
 * one adds; one GPU's kernels and device copies (split over the GPUs, each
 * of several at `efficiency` of one GPU's rate); the host's reads and
 * writes (not split). */
typedef struct ddtk_gpu_cost {
    double setup, setup_more;
    double kernel, copy, efficiency;
    double host;
} ddtk_gpu_cost;

/* The model's seconds for a run on n GPUs. */
double ddtk_gpu_cost_time(const ddtk_gpu_cost *c, int n);
/* The GPU count (1 .. avail) for the run: the one predicted fastest, a larger
 * count only when it saves a clear share over the smaller; why (n bytes, may
 * be NULL) gets the prediction, for -v. */
int ddtk_gpu_choose(const ddtk_gpu_cost *c, int avail, char *why, size_t n);
/* The model of plan p over nsamples spectra (series written somewhere that
 * costs the host time, or discarded), from H100 constants. */
void ddtk_gpu_cost_of(const ddtk_plan *p, int64_t nsamples, int written, ddtk_gpu_cost *c);

/* ---- streaming layers ---------------------------------------------------------- */

/* Stream a source through the plan into the writer (stream_cpu.c, cuda/stream.cu). */
int ddtk_cpu_stream_run(ddtk_plan *p, ddtk_source *src, ddtk_writer *w, double *kernel);
void ddtk_cpu_stream_free(ddtk_cpu_stream *s);
int ddtk_gpu_stream_run(ddtk_plan *p, ddtk_source *src, ddtk_writer *w, double *kernel);
void ddtk_gpu_stream_free(ddtk_gpu_stream *s);
/* Contexts of the n GPUs made on background threads (the plan starts them
 * once its GPUs are known); joined by the first GPU run's set-up or by
 * ddtk_plan_destroy. NULL (nothing started) is fine for join. */
ddtk_gpu_warm *ddtk_gpu_warm_start(const int *gpus, int n);
void ddtk_gpu_warm_join(ddtk_gpu_warm *w);

DDTK_END_DECLS

#endif
