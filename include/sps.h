/*
 * sps.h - single-pulse search of dedispersed time series (libddtk, sps.c;
 * installed as <ddtk/sps.h>).
 *
 * A searcher takes the series of a DM list sample by sample, in pieces of
 * any length (a dedispersion gulp, a file read), and gives the same
 * candidates whatever the pieces: each series is cut into fixed blocks of
 * the baseline window from its first sample; a running baseline and robust
 * sigma (1.4826 x the median absolute deviation) interpolated between the
 * blocks' medians normalise it; it is convolved with boxcars of
 * 1, 2, 3, 4, 6, 8, 12, ... samples (powers of two and the 3 x 2^k between
 * them) up to the maximum width, and every run of samples
 * above the S/N threshold gives one "giant" (its highest boxcar). At the end
 * the giants of all DMs are clustered friends-of-friends in (DM, time,
 * width), as Heimdall clusters them, into one candidate per event.
 *
 * Calls to ddtk_sps_feed for different DMs may run at the same time (one
 * thread per series); calls for one DM come in order.
 */
#ifndef DDTK_SPS_H
#define DDTK_SPS_H

#include "ddtk.h"

DDTK_BEGIN_DECLS

#define DDTK_SPS_SNR_DEFAULT 6.0
#define DDTK_SPS_MAX_WIDTH_DEFAULT 1024   /* samples at the finest resolution */
#define DDTK_SPS_BASELINE_DEFAULT 2.0     /* running baseline window, s (Heimdall's) */
#define DDTK_SPS_BLOCK_WIDTHS 16          /* the widest boxcar is at most window / this */

/*
 * Friends-of-friends tolerances (ddtk_sps_params): two giants are friends
 * when their DM indices differ by at most dm_tol, their log2 widths by at
 * most width_tol, and their boxcars [begin, end] (finest samples) are at
 * most time_tol times the wider boxcar's width apart (0: overlapping or
 * touching). An event is a connected set of friends. The default width
 * tolerance links every width: a bright wide pulse lifts the narrow boxcars
 * on top of it over the threshold too, and those giants are the same event.
 * The default time tolerance is 0, boxcars that overlap or touch: a pulse's
 * giants all cover it, and with a gap of a width allowed, the widest
 * boxcars of a bright pulsar's consecutive pulses were friends (10 s of a
 * 163.84 ms pulsar, 512-sample boxcars: 62 pulses, 23 events; 0: 62).
 */
#define DDTK_SPS_DM_TOL 5
#define DDTK_SPS_WIDTH_TOL 24
#define DDTK_SPS_TIME_TOL 0.0

typedef struct ddtk_sps_params {
    double snr;                   /* threshold (default 6) */
    int max_width;                /* widest boxcar, finest samples, a power of two */
    int dm_tol, width_tol;        /* clustering tolerances (above) */
    double time_tol;
    double baseline;              /* running baseline window, seconds */
    int gpu_giants;               /* GPU: giants a gulp brings back with its outputs (0: the
                                     default); more take a slower path (a test knob) */
} ddtk_sps_params;

void ddtk_sps_params_init(ddtk_sps_params *p);
/* The widest boxcar searched in a series sampled at tsamp * f, in samples
 * at tsamp: max_width, halved until the baseline window holds
 * DDTK_SPS_BLOCK_WIDTHS of it (a multiple of f). */
int64_t ddtk_sps_widest(const ddtk_sps_params *par, double tsamp, int f);

/* One event: its brightest member, the members' count and span. */
typedef struct ddtk_sps_cand {
    double snr;
    int64_t sample;               /* centre of the boxcar, finest samples from the start */
    double time;                  /* sample * tsamp (s) */
    int64_t width;                /* boxcar width, finest samples */
    int dm_index;                 /* in the searcher's DM list */
    double dm;
    int members;                  /* giants clustered into the event */
    int64_t begin, end;           /* first and last sample of the members' boxcars */
} ddtk_sps_cand;

typedef struct ddtk_sps ddtk_sps;

/*
 * A searcher for ndm series: DM dms[i] sampled at tsamp * downsamp[i]
 * (downsamp NULL: all 1; each a power of two). tsamp: the finest sample
 * time, the unit of every candidate's samples.
 */
int ddtk_sps_create(ddtk_sps **s, const ddtk_sps_params *par, int ndm, const double *dms,
                    const int *downsamp, double tsamp);
/* The next n samples of series dm. */
int ddtk_sps_feed(ddtk_sps *s, int dm, const float *x, int64_t n);
/* End series dm now: its last block searched, its sample buffer freed (a
 * searcher of series that come one after another, files, then holds only
 * those in flight); no samples may follow. ddtk_sps_finish ends the rest. */
int ddtk_sps_end(ddtk_sps *s, int dm);
/* End every series (its last block searched) and cluster: *cands (malloc'd,
 * the caller frees it) gets the events in order of sample, then DM index. */
int ddtk_sps_finish(ddtk_sps *s, ddtk_sps_cand **cands, int64_t *ncands);
/* Giants found so far (every DM), for reports. */
int64_t ddtk_sps_giants(const ddtk_sps *s);
void ddtk_sps_destroy(ddtk_sps *s);

/*
 * The search inside a dedispersion stream (sps_sink.c): a sink that feeds
 * each series to a searcher and passes it on to next (the output files, or
 * NULL: nothing written). The searcher's DMs are the plan's in ascending
 * order (candidates' DM indices count them so, as spsearch counts files),
 * sampled at the plan's tsamp times each DM's scrunch factor. Padding
 * (--pad, fft lengths) goes to next alone: only data is searched, exactly
 * the samples written. After ddtk_plan_stream, ddtk_sps_sink_finish gives
 * the candidates. On the GPU backend the series are searched on the device,
 * with the same arithmetic (the same candidates), and with next NULL they
 * never leave it: only the giants come back.
 */
typedef struct ddtk_sps_sink {
    ddtk_sink sink;               /* give &this->sink to ddtk_plan_stream */
    ddtk_sink *next;
    ddtk_sps *search;
    int *rank;                    /* plan DM -> searcher series */
    int on_device;                /* set by the GPU stream, which searches the series where
                                     it makes them and adds the giants to search: write
                                     passes series on to next only */
} ddtk_sps_sink;

int ddtk_sps_sink_init(ddtk_sps_sink *t, const ddtk_sps_params *par, const ddtk_plan *plan,
                       ddtk_sink *next);
int ddtk_sps_sink_finish(ddtk_sps_sink *t, ddtk_sps_cand **cands, int64_t *ncands);
void ddtk_sps_sink_free(ddtk_sps_sink *t);

enum { DDTK_SPS_HEIMDALL = 0, DDTK_SPS_PRESTO = 1 };

/* Heimdall's .cand lines: S/N, sample, time, log2 width, DM index, DM,
 * members, begin, end (one candidate a line, no header). log2 width is an
 * integer for boxcars of 2^k samples and has decimals for 3 x 2^k (1.585
 * for 3): the boxcars between the powers of two keep the S/N of every
 * Gaussian pulse above 90% of its matched filter's, where powers of two
 * alone fall to 86% (a pulse of FWHM 2 samples, or 1.4 x 2^k). */
int ddtk_sps_write_heimdall(FILE *fp, const ddtk_sps_cand *c, int64_t n);
/* PRESTO's .singlepulse header, and the lines of the candidates at DM index
 * dm (DM, Sigma, Time, Sample, Downfact; samples in units of factor finest
 * samples, as the series of that DM counts them). */
int ddtk_sps_write_presto(FILE *fp, const ddtk_sps_cand *c, int64_t n, int dm, int factor);

/* ---- series files (sps_io.c) ---------------------------------------------- */

/* A SIGPROC .tim (any nbits, or stdin) or a PRESTO .dat with its .inf, as
 * the search reads it: DM, sample time and the samples of data (a .dat's
 * padded tail, which its .inf declares as prepdata does, is left out). */
typedef struct ddtk_sps_file {
    char *path;                   /* "stdin" for standard input */
    double dm, tsamp;
    int64_t nvalid;               /* samples to search; -1: to the end (stdin) */
    int dat;
    ddtk_input *in;               /* stdin: kept open between probe and feed */
} ddtk_sps_file;

/* Read a series' header (path "-": stdin, a .tim). */
int ddtk_sps_file_probe(ddtk_sps_file *f, const char *path);
/* Stream its samples into series dm of s. */
int ddtk_sps_file_feed(ddtk_sps *s, int dm, ddtk_sps_file *f);
void ddtk_sps_file_free(ddtk_sps_file *f);

/*
 * Search n probed series of one observation together: they are ordered by
 * DM (index[i]: file i's DM index in the candidates) and counted in samples
 * of the finest sample time (*tsamp; factor[i]: file i's samples per that
 * sample, a power of two, else bad data). threads: the files fed at once
 * (0: OpenMP's default). done, when not NULL, is called with the number of
 * files searched so far after each one (one call at a time).
 */
int ddtk_sps_files_search(ddtk_sps_file *files, int n, const ddtk_sps_params *par, int threads,
                          int *index, int *factor, double *tsamp, ddtk_sps_cand **cands,
                          int64_t *ncands, void (*done)(void *ctx, int nfiles), void *ctx);

/* Read a Heimdall .cand file (name for messages): *cands malloc'd. */
int ddtk_sps_read_heimdall(FILE *fp, const char *name, ddtk_sps_cand **cands, int64_t *n);

DDTK_END_DECLS

#endif
