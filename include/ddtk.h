/*
 * ddtk.h - public API of libddtk, the dedispersion toolkit library
 * (installed as <ddtk/ddtk.h>, with <ddtk/dmplan.h>, <ddtk/fdas.h> and <ddtk/sps.h>).
 *
 * What a C program needs to dedisperse: SIGPROC headers and input streams,
 * DM lists and killfiles, dedispersion plans built from arrays and executed
 * on memory (ddtk_plan_execute) or streamed from any source into any sink
 * (ddtk_plan_stream: SIGPROC inputs, memory, .tim / .dat output sets, a
 * caller's callbacks), on the CPU or a GPU. Build with
 * `pkg-config --cflags --libs ddtk` (the shared library, libddtk.so), or
 * `pkg-config --static` for libddtk.a and its dependencies.
 * examples/dedisperse_block.c shows a plan on an in-memory block,
 * examples/stream_stats.c a source and a sink of a program's own.
 *
 * Style of use, as in FFTW and dedisp: create a plan, execute, destroy.
 * Functions that can fail return a DDTK_E* code (0 on success) and leave a
 * one-line message in ddtk_errmsg().
 */#ifndef DDTK_H
#define DDTK_H

#include <stdint.h>
#include <stdio.h>
#include <stddef.h>

/* C linkage for C++ and CUDA callers (glibc's __BEGIN_DECLS, for ddtk's headers). */
#ifdef __cplusplus
#define DDTK_BEGIN_DECLS extern "C" {
#define DDTK_END_DECLS }
#else
#define DDTK_BEGIN_DECLS
#define DDTK_END_DECLS
#endif

DDTK_BEGIN_DECLS

#define DDTK_VERSION "0.1.0"

/* Exit codes shared by every tool (SPEC section 4). */
enum {
    DDTK_OK = 0,
    DDTK_EDATA = 1,   /* bad input data or file format */
    DDTK_EUSAGE = 2,  /* bad command line */
    DDTK_ESYS = 3     /* I/O, memory or GPU failure */
};

/* Dispersion constant in s MHz^2 pc^-1 cm^3 (SIGPROC, dedisp, AstroAccelerate). */
#define DDTK_KDM_DEFAULT 4148.741601

/* ---- errors (error.c) ---------------------------------------------------- */

/* The message of the last failure, one line naming the file and the problem. */
const char *ddtk_errmsg(void);
/* Record a message (printf-style) for ddtk_errmsg and return code: what a
 * caller's source or sink (below) does when it fails, `return ddtk_fail(...)`.
 * The message slot is per thread. */
int ddtk_fail(int code, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- messages and progress (report.c) ----------------------------------- */

/*
 * The library never prints: what it has to say goes to the handler a program
 * sets (none: silence). Levels: a warning (the run goes on, but something in
 * the input or the set-up is off), a note (something done on the caller's
 * behalf), information a run gives unless quiet, and the detail of a verbose
 * plan (ddtk_plan_desc.verbose). text is one line without a newline. The
 * handlers are process-wide; set them before work starts. Messages may come
 * from any thread.
 */
enum { DDTK_MSG_WARNING = 0, DDTK_MSG_NOTE = 1, DDTK_MSG_INFO = 2, DDTK_MSG_VERBOSE = 3 };
typedef void (*ddtk_message_fn)(void *ctx, int level, const char *text);
void ddtk_set_message_handler(ddtk_message_fn fn, void *ctx);

/* Progress of a run (ddtk_plan_stream unless quiet): START, then UPDATE after
 * each gulp, then END, with what is counted ("samples"), done so far and
 * total (-1 when the source does not know its length). */
enum { DDTK_PROGRESS_START = 0, DDTK_PROGRESS_UPDATE = 1, DDTK_PROGRESS_END = 2 };
typedef void (*ddtk_progress_fn)(void *ctx, int stage, const char *what, int64_t done,
                                 int64_t total);
void ddtk_set_progress_handler(ddtk_progress_fn fn, void *ctx);

/* ---- SIGPROC headers (sigproc.c) ----------------------------------------- */

#define DDTK_MAX_STRING 4096
#define DDTK_MAX_KEYS 48
/* Largest channel count a header may give (and frequency table length). */
#define DDTK_MAX_NCHANS (1 << 24)

typedef struct ddtk_header {
    int32_t telescope_id, machine_id, data_type, barycentric, pulsarcentric;
    int32_t nchans, nbits, nifs, nbeams, ibeam, nbins, nsamples;
    double az_start, za_start, src_raj, src_dej, tstart, tsamp, period;
    double fch1, foff, refdm;
    char source_name[DDTK_MAX_STRING + 1];
    char rawdatafile[DDTK_MAX_STRING + 1];
    int8_t signed_data;           /* keyword "signed" */
    int64_t npuls;
    double *freqs;                /* frequency table (fchannel), NULL if none */
    int32_t nfreqs;
    /* Keywords present, in the order they were read or set, so that a header
     * written back is byte-identical to the one read. */
    uint8_t order[DDTK_MAX_KEYS];
    int norder;
    int64_t header_bytes;         /* length of the header as read */
} ddtk_header;

void ddtk_header_init(ddtk_header *h);
void ddtk_header_free(ddtk_header *h);
int ddtk_header_copy(ddtk_header *dst, const ddtk_header *src);
/* Mark a keyword present (appending it to the order) after setting its field. */
int ddtk_header_mark(ddtk_header *h, const char *keyword);
void ddtk_header_unmark(ddtk_header *h, const char *keyword);
int ddtk_header_has(const ddtk_header *h, const char *keyword);
int ddtk_header_set_freqs(ddtk_header *h, const double *freqs, int n);
/* Read a header from a stream (no seeking); name is used in messages. */
int ddtk_header_read(FILE *fp, const char *name, ddtk_header *h);
/* Check the values a filterbank or time series needs (SPEC section 2). */
int ddtk_header_validate(const ddtk_header *h, const char *name);
int ddtk_header_write(FILE *fp, const ddtk_header *h);
/* Print every keyword present, SIGPROC `header` style, or one value. */
void ddtk_header_print(FILE *fp, const ddtk_header *h, const char *name, int64_t nsamples);
int ddtk_header_print_key(FILE *fp, const ddtk_header *h, const char *key, int64_t nsamples);
/* Frequency of channel c (file order): the table if present, else fch1 + c*foff. */
double ddtk_chan_freq(const ddtk_header *h, int c);
/* Packed SIGPROC hhmmss.s / ddmmss.s to "hh:mm:ss.ssss". */
void ddtk_format_sexagesimal(double packed, char *out, size_t n);
const char *ddtk_telescope_name(int id);
const char *ddtk_machine_name(int id);

/* ---- input streams (input.c, unpack.c) ----------------------------------- */

typedef struct ddtk_psrfits ddtk_psrfits;
typedef struct ddtk_cleaner ddtk_cleaner;
typedef struct ddtk_input {
    FILE *fp;                     /* a SIGPROC input; NULL for PSRFITS */
    ddtk_psrfits *psrfits;        /* a PSRFITS search-mode input (psrfits.c); NULL for SIGPROC */
    char *name;                   /* path, or "stdin" */
    ddtk_header hdr;
    int is_stdin;
    int64_t nsamples;             /* from the file size; -1 when streaming */
    int64_t bits_per_spectrum;    /* nchans * nifs * nbits */
    int64_t samples_read;
    int eof;
    char *notes;                  /* how the input is read, for .inf notes and -v; or NULL */
    uint8_t *dead;                /* per channel, 1: dead in the input itself (PSRFITS
                                     DAT_WTS 0 in every row), killed as by a killfile; or NULL */
    ddtk_cleaner *clean;          /* RFI excision of what is read (rfi.c); or NULL */
} ddtk_input;

/* Open a filterbank or time series ("-" or NULL: stdin) and read its header;
 * a PSRFITS search-mode file (recognised by content) is read as a filterbank
 * of its total intensity (hdr in SIGPROC terms). */
int ddtk_input_open(ddtk_input *in, const char *path);
/* The same for n inputs: one file, or the PSRFITS files of one observation in
 * time order, read as one. */
int ddtk_input_open_files(ddtk_input *in, const char *const *paths, int n);
/* Read up to n spectra (n*bits_per_spectrum must be a multiple of 8 unless it
 * is the last read) into raw; *got is the number of whole spectra read. */
int ddtk_input_read(ddtk_input *in, uint8_t *raw, int64_t n, int64_t *got);
void ddtk_input_close(ddtk_input *in);
/* DDTK_EDATA, naming the file, unless the input is a filterbank: a
 * dedispersed time series (data_type 2, a .tim) is not. */
int ddtk_input_require_filterbank(const ddtk_input *in);
/* Bytes holding n spectra, rounded up. */
int64_t ddtk_input_bytes(const ddtk_input *in, int64_t n);

/* ---- RFI excision at the input (rfi.c) -------------------------------------- */

/* Spectra per block of statistics, counted from the start of the input. */
#define DDTK_RFI_BLOCK 2048

typedef struct ddtk_clean_opts {
    int auto_rfi;                 /* --rfi auto: IQRM channel flags and zero-DM clipping */
    const char *mask;             /* --mask: a PRESTO rfifind mask; NULL: none */
    double clip_sigma;            /* zero-DM clipping threshold (robust sigmas); 0: 5 */
    int64_t block;                /* spectra per block; 0: DDTK_RFI_BLOCK, or the mask's
                                     interval */
} ddtk_clean_opts;

typedef struct ddtk_rfi_report {
    int64_t blocks, chan_blocks;  /* blocks cleaned; channel-blocks flagged by IQRM */
    int64_t chans_ever;           /* channels flagged in some block */
    int64_t spectra_clipped;      /* spectra replaced for their zero-DM outliers */
    int64_t samples, samples_masked;  /* channel samples read, and replaced */
} ddtk_rfi_report;

/* Clean what in delivers from now on: samples the mask or the statistics
 * flag are replaced by their channel's level over the block (what a PRESTO
 * mask zaps, where rfifind's .stats is beside it: PRESTO's padding), in the
 * input's format, before any backend sees them (the same on the CPU and GPU). */
int ddtk_input_clean(ddtk_input *in, const ddtk_clean_opts *o);
/* What was masked so far (zeros without cleaning). */
void ddtk_input_clean_report(const ddtk_input *in, ddtk_rfi_report *r);

/* Polarisation / IF selection (SPEC section 2). */
enum { DDTK_POL_DEFAULT = -1, DDTK_POL_SUM = -2 };

/* ---- channels, delays and DM lists (delays.c, dmlist.c, killfile.c) ------ */

enum { DDTK_ROUND_NEAREST = 0, DDTK_ROUND_FLOOR = 1 };

/* Delay in seconds of frequency f relative to fref. */
double ddtk_delay_seconds(double dm, double f, double fref, double kdm);
/* Most DMs one list (or plan) may hold: longer ones are refused before they
 * are built. */
#define DDTK_MAX_DMS 10000000

typedef struct ddtk_dmlist {
    double *dm;
    int n, cap;
} ddtk_dmlist;

void ddtk_dmlist_free(ddtk_dmlist *l);
int ddtk_dmlist_push(ddtk_dmlist *l, double dm);
/* "56.7" or "10,20,30.5". */
int ddtk_dmlist_parse(ddtk_dmlist *l, const char *text);
int ddtk_dmlist_range(ddtk_dmlist *l, double lo, double hi, double step);
int ddtk_dmlist_file(ddtk_dmlist *l, const char *path);
/*
 * Tolerance-spaced list (the recurrence of SIGPROC dedisperse_all and dedisp):
 * each DM is the largest for which the smearing from the DM step, combined in
 * quadrature with sampling, intrinsic width and channel smearing, stays within
 * tol times the smearing at the previous DM. pulse_width in microseconds.
 */
int ddtk_dmlist_tol(ddtk_dmlist *l, double lo, double hi, double tsamp,
                    double pulse_width_us, double tol, double fcentre_mhz,
                    double chan_bw_mhz, int nchans);

/* Killfile: "0/1 per line" or "ranges 0:10,40,100:120"; kill[c] = 1 if killed. */
int ddtk_killfile_read(const char *path, int nchans, uint8_t **kill, int *nkilled);

/* ---- PRESTO .inf reading (inf.c) ------------------------------------------- */

typedef struct ddtk_inf {
    char basename[256], telescope[64], object[128];
    double mjd, tsamp, dm;
    int64_t nsamples;
} ddtk_inf;

/* Parse a PRESTO .inf (sample count, sample time, DM, epoch, names); a missing
 * required line is bad data. *text, if not NULL, receives the file verbatim. */
int ddtk_inf_read(const char *path, ddtk_inf *inf, char **text);
/* ---- output series (output.c) -------------------------------------------- */

enum { DDTK_FMT_TIM = 0, DDTK_FMT_DAT = 1 };

typedef struct ddtk_series_meta {
    const ddtk_header *in;        /* input header (source, position, tstart ...) */
    double tsamp;                 /* output sample time */
    double fref;                  /* reference frequency */
    double flow;                  /* centre of the lowest-frequency channel */
    double bandwidth;             /* total bandwidth (MHz) */
    double chan_bw;
    int nchans;
    const char *notes;            /* .inf notes, newline separated */
    const int *downsamp;          /* per DM: tsamp factor of a scrunched series, or NULL */
    int nbits;                    /* samples written: 0 or 32 float32; 8 or 16 unsigned */
    int quant;                    /* nbits 8/16: DDTK_QUANT_NOISE or DDTK_QUANT_SUM */
    double scale;                 /* DDTK_QUANT_SUM: value = x / (scale * downsamp), rounded */
} ddtk_series_meta;

/*
 * Integer output (--nbits-out 8|16). DDTK_QUANT_NOISE: each series is scaled
 * to its own noise, measured (ddtk_robust_sigma) on its first baseline block:
 * value = DDTK_QUANT_MID(nbits) + (x - base) / s with s = sigma /
 * DDTK_QUANT_SIGMA(nbits), base 0 for baselined .tim series, else the first
 * block's median; samples beyond the range are clamped and counted.
 * DDTK_QUANT_SUM: the raw sums divided by the meta's scale (never clamped
 * for unsigned input; no baseline).
 */
enum { DDTK_QUANT_NOISE = 0, DDTK_QUANT_SUM = 1 };
#define DDTK_QUANT_SIGMA(nbits) ((nbits) == 8 ? 8.0 : 512.0)
#define DDTK_QUANT_MID(nbits) ((nbits) == 8 ? 128.0 : 32768.0)

typedef struct ddtk_series_file {
    char *path;                   /* final name; NULL for stdout */
    char *tmp;                    /* temporary name while writing */
    char *inf, *inf_tmp;          /* a .dat's .inf, and its temporary while closing */
    FILE *fp;
    double dm;
    double scale;                 /* integer output: the divisor of this series */
    double zero;                  /* integer output: the level of x = 0 */
    float *block;                 /* blocked output: samples held for their block */
    int64_t held, nblocks;        /* samples held; blocks written */
    float offset;                 /* the median of the last full block */
    int64_t clipped;              /* integer output: samples clamped to the range */
    int64_t nwritten;
    int64_t nvalid;               /* samples of data before any padding */
    int padded;                   /* padding appended: the .inf declares it (breaks) */
} ddtk_series_file;

/*
 * Output length rules (--length): exact is the N_in - maxdelay samples computed
 * (plus --pad's); even drops a last odd sample (--even); fft pads with the
 * series mean to ddtk_good_length, as PRESTO's prepdata does. auto is fft for
 * .dat and exact for .tim and stdout.
 */
enum { DDTK_LEN_AUTO = 0, DDTK_LEN_EXACT = 1, DDTK_LEN_EVEN = 2, DDTK_LEN_FFT = 3 };
/* "auto", "exact", "even", "fft" in enum order, NULL-terminated. */
extern const char *const ddtk_length_names[];
/* The smallest even length >= n with no prime factor above 7 (n >= 1). */
int64_t ddtk_good_length(int64_t n);

typedef struct ddtk_outspec {
    int format;                   /* DDTK_FMT_TIM or DDTK_FMT_DAT */
    const char *output;           /* -o: the one output of a single-DM run */
    const char *prefix;           /* --prefix, NULL if not given */
    const char *default_prefix;   /* used for several DMs when prefix is NULL */
    int force;
    int length;                   /* DDTK_LEN_* (--length, --even) */
    int discard;                  /* --discard: compute, write nothing (benchmarks) */
    int baseline;                 /* .tim: subtract SIGPROC dedisperse's block medians */
} ddtk_outspec;

typedef struct ddtk_flusher ddtk_flusher;
typedef struct ddtk_outset {
    int n, to_stdout;
    int blocked;                  /* samples pass through blocks (baseline, noise scaling) */
    int64_t block;                /* their length: ddtk_baseline_block(nchans) */
    int64_t clipped, quantised;   /* integer output, after close: samples clamped, written */
    ddtk_outspec spec;
    ddtk_series_file *f;
    ddtk_series_meta meta;
    ddtk_flusher *flusher;        /* writeback while the run computes (output.c) */
} ddtk_outset;

/*
 * Plan the outputs of a run: one DM with neither -o nor --prefix (or -o -) and
 * format tim goes to stdout; one DM with -o goes there; otherwise one file per
 * DM, <prefix>_DM%.2f.<ext>. Fails (no file created) if a name exists without
 * force. Temporaries of dead runs on the same names are removed (with a note).
 */
int ddtk_outset_open(ddtk_outset *o, const double *dms, int ndm,
                     const ddtk_outspec *spec, const ddtk_series_meta *meta);
int ddtk_outset_write(ddtk_outset *o, int i, const float *x, int64_t n);
/* Padding (--pad, the fft length rule): append n copies of value (the series
 * mean) to output i; its .inf then declares the padded tail. */
int ddtk_outset_pad(ddtk_outset *o, int i, float value, int64_t n);
/* The length rule of a set: auto resolved by format. */
int ddtk_outspec_length(const ddtk_outspec *spec);
/* Finish every file (.inf), put all of them on disk, then rename them
 * into place: all or nothing. Without force, a name that appeared meanwhile
 * is not replaced: DDTK_EUSAGE "exists", and none of the set is left. */
int ddtk_outset_close(ddtk_outset *o);
/* Remove temporaries after a failure. */
void ddtk_outset_abort(ddtk_outset *o);
/* For a program's handler of SIGINT, SIGTERM, SIGHUP and SIGPIPE (the tools
 * install one; the library installs none): remove the hidden temporaries of
 * every output not yet committed, then call end(sig), which ends the process.
 * Safe in a signal handler, on any thread: while another thread is creating
 * a temporary or committing a set, both wait until it is done (the last
 * thread to finish does them), so an interrupted run leaves nothing. */
void ddtk_remove_temporaries(int sig, void (*end)(int sig));
/* Write a time series .tim header for the given meta and DM. */
int ddtk_tim_header_write(FILE *fp, const ddtk_series_meta *m, double dm);
/* The PRESTO .inf text of a series (SPEC section 3). */
/* nvalid < nsamples: the tail is padding, declared as PRESTO's prepdata does
 * (breaks = 1, On/Off pairs [0, nvalid-1] and [N-1, N-1]). Notes lines are
 * wrapped to PRESTO's reader limit (DDTK_INF_NOTE_MAX characters a line). */
#define DDTK_INF_NOTE_MAX 98
void ddtk_inf_print(FILE *fp, const char *basename, const ddtk_series_meta *m, double dm,
                    int64_t nsamples, int64_t nvalid);
/* The name .inf files give as "Data analyzed by" (the string is kept, not
 * copied); NULL or unset: the login name of the password database. */
void ddtk_set_analyst(const char *name);

/* ---- dedispersion plans (engine.c) ---------------------------------------- */

enum { DDTK_BACKEND_AUTO = 0, DDTK_BACKEND_CPU = 1, DDTK_BACKEND_GPU = 2 };
/* "auto", "cpu", "gpu" in enum order, NULL-terminated, for ddtk_opt_choice. */
extern const char *const ddtk_backend_names[];

/*
 * Algorithms (algo.c): "direct", "subband", "tree", "fdmt", each with parameters of
 * its own, set by name on a plan description (ddtk_plan_desc_set_param) and
 * listed by ddtk_algorithm_param. The tools take each as --NAME (underscores
 * as dashes).
 */
/* The name of algorithm i (0, 1, ...), NULL past the last; its name in
 * prose ("sub-band"). */
const char *ddtk_algorithm(int i);
const char *ddtk_algorithm_label(int i);

enum { DDTK_PARAM_INT = 0, DDTK_PARAM_REAL = 1, DDTK_PARAM_CHOICE = 2 };
#define DDTK_MAX_PARAMS 8

typedef struct ddtk_param_info {
    const char *name;             /* "nsub" */
    const char *help;             /* one line */
    int type;                     /* DDTK_PARAM_*; a choice's value is the index of its name */
    double def;                   /* when not set: outside lo..hi, the algorithm chooses */
    double lo, hi;                /* the values it may be given (a choice: 0 .. n-1) */
    int lo_open;                  /* lo itself excluded: value > lo */
    const char *const *choices;   /* DDTK_PARAM_CHOICE: the names, NULL-terminated */
    int per_dm;                   /* may be given per DM (ddtk_plan_desc_set_param_per_dm) */
} ddtk_param_info;

/* Parameter i (0, 1, ...) of an algorithm; DDTK_EUSAGE past its last or for
 * an unknown algorithm. */
int ddtk_algorithm_param(const char *algorithm, int i, ddtk_param_info *info);

/* The intrinsic pulse width (s) that smearing budgets assume unless given one:
 * the tolerance lists' default, the sub-band budget, the tree's Appendix A. */
#define DDTK_PULSE_WIDTH 40e-6

/* CPU direct kernel tiles (Novotny et al. Algorithm 2); 0 selects the default. */
typedef struct ddtk_cpu_config {
    int time_tile;                /* output samples per tile */
    int dm_block;                 /* DMs sharing a channel block while it is cached */
    int chan_block;               /* channels per block, a multiple of 4 */
} ddtk_cpu_config;

/* GPU direct kernel: the compiled shape (DM trials per block, samples per
 * thread, channels per shared-memory pass) of the 16-bit-lane kernel (input of
 * 8 bits or less) and of the float kernel; -1 selects the device's default. */
typedef struct ddtk_gpu_config {
    int lane_variant, float_variant;
} ddtk_gpu_config;

/* The range of every configuration field, wherever it comes from (a caller's
 * description, wisdom, DDTK_GPU_CONFIG): 0 (CPU) and -1 (GPU) select the
 * default. Values past these would overflow the kernels' index arithmetic. */
#define DDTK_CPU_TILE_MAX 65536
#define DDTK_CPU_BLOCK_MAX 4096
#define DDTK_GPU_VARIANT_MAX 1023
/* DDTK_OK, or DDTK_EUSAGE naming the first field out of range as the
 * configuration's text writes it ("cpu chans 5000: expected 0 to 4096"). */
int ddtk_config_check(const ddtk_cpu_config *c, const ddtk_gpu_config *g);

/*
 * The geometry of a dedispersion problem, as dedisp and FFTW plan it: the
 * channels, the sample time and format of the input, the DM trials, and the
 * choices that shape the work. Arrays are copied into the plan.
 */
typedef struct ddtk_plan_desc {
    const char *name;             /* the input's name, for messages; NULL: "plan" */
    int nchans;
    double tsamp;                 /* seconds */
    const double *freqs;          /* centre of each channel (MHz), file order */
    double chan_bw;               /* |channel width| (MHz); 0: from freqs (needed for 1 channel) */
    const uint8_t *kill;          /* per channel, 1 = killed; NULL: none */
    int nbits, nifs, signed_data; /* input samples: time-major, nifs * nchans per spectrum */
    int pol;                      /* DDTK_POL_DEFAULT, DDTK_POL_SUM or an IF */
    const double *dms;            /* DM trials (pc cm^-3) */
    int ndm;
    const int *downsamp;          /* per DM time-scrunch factor (power of two); NULL: all 1 */
    double kdm;                   /* dispersion constant (default DDTK_KDM_DEFAULT) */
    double fref;                  /* reference frequency (MHz); <= 0: the highest channel */
    int rounding;                 /* DDTK_ROUND_NEAREST or DDTK_ROUND_FLOOR */
    int zerodm;                   /* subtract each spectrum's mean over live channels */
    /* The algorithm, by name (NULL: "direct"), and its parameters: set them
     * with ddtk_plan_desc_set_algorithm and ddtk_plan_desc_set_param. */
    const char *algorithm;
    double param[DDTK_MAX_PARAMS];
    const int *param_per_dm[DDTK_MAX_PARAMS];
    unsigned param_set;           /* bit i: param[i] or param_per_dm[i] given */
    int backend, gpu;             /* DDTK_BACKEND_*, GPU index */
    /* Several GPUs sharing the DMs (--gpu LIST): gpus[0 .. ngpus-1], an index
     * twice being two pipelines on one GPU (for tests); DDTK_GPUS_ALL: every
     * visible GPU; 0: gpu alone. Outputs are those of one GPU, byte for byte. */
    const int *gpus;
    int ngpus;
    int threads;                  /* CPU threads of the plan's work (the process's OpenMP
                                     setting is left alone); 0: OpenMP's default */
    int64_t gulp;                 /* spectra per gulp; 0: automatic */
    int64_t max_mem;              /* host memory bound for the gulp buffers; 0: 2 GiB */
    int64_t gpu_mem;              /* bound on each GPU's gulp buffers (bytes); 0: 80% of its
                                     free memory (the tools: $DDTK_GPU_MEM, in MiB) */
    int gpu_serial;               /* 1: each GPU gulp ends before the next is read, so kernel
                                     times are the kernels' alone ($DDTK_GPU_SERIAL) */
    ddtk_cpu_config cpu;
    ddtk_gpu_config gpu_config;
    int quiet, verbose;           /* no progress; plan reports (DDTK_MSG_VERBOSE) */
} ddtk_plan_desc;

/* Defaults: SIGPROC's K, nearest rounding, direct algorithm, backend auto. */
void ddtk_plan_desc_init(ddtk_plan_desc *d);
/* The algorithm by name ("direct", "subband", "tree"); its parameters start
 * at their defaults. An unknown name is DDTK_EUSAGE. */
int ddtk_plan_desc_set_algorithm(ddtk_plan_desc *d, const char *name);
/* A parameter of d's algorithm, checked against its range (a usage error
 * naming the parameter and the range). */
int ddtk_plan_desc_set_param(ddtk_plan_desc *d, const char *name, double value);
/* Per-DM values of a parameter that takes them (ndm values, checked and
 * copied when the plan is made; the array must live until then). */
int ddtk_plan_desc_set_param_per_dm(ddtk_plan_desc *d, const char *name, const int *values);
/* The value of a parameter: set, else its default. */
int ddtk_plan_desc_get_param(const ddtk_plan_desc *d, const char *name, double *value);
/* The DMs of an algorithm that has its own (the tree's, eq. 9 and its
 * scrunched extensions), from dm_min to dm_max for d's channels and sample
 * time, with a smearing budget for pulses of `width` s: *dms and each DM's
 * scrunch factor *downsamp (all 1 without scrunch), both malloc'd. The
 * parameters the list settles (the tree's sub_chans) are set in d. An
 * algorithm that takes any DM list is DDTK_EUSAGE. */
int ddtk_plan_desc_own_dms(ddtk_plan_desc *d, double dm_min, double dm_max, double width,
                           int scrunch, double **dms, int **downsamp, int *ndm);
/* 1 when the algorithm named computes its own DMs (ddtk_plan_desc_own_dms). */
int ddtk_algorithm_own_dms(const char *algorithm);
/* Channels, tsamp and sample format from a SIGPROC header; *freqs (malloc'd,
 * the caller frees it after planning) holds the channel frequencies. */
int ddtk_plan_desc_header(ddtk_plan_desc *d, const ddtk_header *h, double **freqs);

typedef struct ddtk_plan ddtk_plan;

int ddtk_plan_create(ddtk_plan **plan, const ddtk_plan_desc *desc);
void ddtk_plan_destroy(ddtk_plan *plan);

int ddtk_plan_ndm(const ddtk_plan *plan);
const double *ddtk_plan_dms(const ddtk_plan *plan);
/* Each DM's time-scrunch factor. */
int ddtk_plan_downsamp(const ddtk_plan *plan, int dm);
/* Largest delay of the DM list in input samples (full resolution). */
int32_t ddtk_plan_max_delay(const ddtk_plan *plan);
/* Live and total channels, the reference and the band edges' channel centres. */
int ddtk_plan_nlive(const ddtk_plan *plan);
double ddtk_plan_fref(const ddtk_plan *plan);
/* The input's sample time (s): DM d's series are sampled at it times
 * ddtk_plan_downsamp(d). */
double ddtk_plan_tsamp(const ddtk_plan *plan);
void ddtk_plan_band(const ddtk_plan *plan, double *fmin, double *fmax, double *chan_bw);
/* "cpu" or "gpu": where the plan runs (--backend auto decides at plan time). */
const char *ddtk_plan_backend(const ddtk_plan *plan);
const char *ddtk_plan_algorithm(const ddtk_plan *plan);
/* Output samples of DM `dm` for an input block of nsamps spectra (0 if none). */
int64_t ddtk_plan_nout(const ddtk_plan *plan, int dm, int64_t nsamps);

#define DDTK_MAX_LEVELS 11          /* time-scrunch levels: factors 1 .. 1024 */

/* The sub-band choice of a "subband" plan (subband.c): sub-bands,
 * channels per sub-band (largest), N'DM, nominal DMs of all levels, and the
 * largest predicted extra smearing as a fraction of the direct smearing. */
typedef struct ddtk_subband_info {
    int nsub, chans_per_sub, dm_group, nnominal;
    double max_ratio, max_extra;  /* extra smearing: / direct, and in seconds */
    double work_ratio;            /* sample-adds of direct / of sub-band (whole plan) */
    double stage1_s, stage2_s;    /* seconds in each stage so far: CPU thread-seconds, or
                                     GPU seconds (CUDA events) with the GPU backend */
    double dm_lo, dm_hi;          /* one level: its DM range ... */
    int downsamp;                 /* ... and time-scrunch factor (0: the whole plan) */
} ddtk_subband_info;
int ddtk_plan_subband_info(const ddtk_plan *plan, ddtk_subband_info *info);
/* The same for scrunch level k (downsampling 2^k, 0 <= k < DDTK_MAX_LEVELS)
 * alone; info->downsamp is 0 when the level holds no DMs. */
int ddtk_plan_subband_level(const ddtk_plan *plan, int k, ddtk_subband_info *info);

/*
 * Dedisperse an in-memory block of nsamps spectra in the plan's format
 * (in_nbits must be the plan's): DM d's ddtk_plan_nout(d, nsamps) samples go
 * to out + d * out_stride as float32 (out_nbits 32). A block not longer than
 * the maximum delay is bad data. Repeated calls are independent.
 */
int ddtk_plan_execute(ddtk_plan *plan, int64_t nsamps, const void *in, int in_nbits,
                      float *out, size_t out_stride, int out_nbits);

typedef struct ddtk_run_stats {
    int64_t nin, nout;            /* input spectra, output samples per DM (finest level) */
    int64_t nlen;                 /* samples per series as written there, after --pad
                                     and the length rule */
    int ndm, nlive, nkilled;
    double wall, kernel, tobs;
    double commit;                /* of wall: the sink's finish (flushing, syncing and
                                     renaming output files) */
    double adds;                  /* sample-adds done (scrunched DMs count their own outputs) */
    const char *backend;
} ddtk_run_stats;

/* ---- streaming: sources and sinks (stream.c) -------------------------------- */

/*
 * A source gives raw spectra in the plan's format (nifs * nchans samples of
 * nbits each per spectrum, packed as SIGPROC packs them). The library has
 * two (ddtk_source_file, ddtk_source_memory); a caller makes its own by
 * filling name, nsamples, read and ctx (memset the rest to 0).
 */
typedef struct ddtk_source ddtk_source;
struct ddtk_source {
    const char *name;             /* for messages */
    int64_t nsamples;             /* spectra it holds; -1 when unknown until the end */
    /* Up to n spectra into raw ((n * bits + 7) / 8 bytes): *got is the number
     * of whole spectra given; fewer than n ends the source. n * bits is a
     * multiple of 8 except perhaps on the last read. Returns DDTK_OK or a
     * DDTK_E* code with its message set by ddtk_fail. */
    int (*read)(ddtk_source *s, void *raw, int64_t n, int64_t *got);
    void *ctx;                    /* the read function's own */
    /* Kept by ddtk_plan_stream: bits per spectrum (set before the first read),
     * spectra read so far, and the end (a short read; a read function may set
     * it itself once it knows there is no more). */
    int64_t bits;
    int64_t samples_read;
    int eof;
};

/* A SIGPROC input opened by ddtk_input_open (a file or stdin); the source
 * reads through it and keeps no other state. */
void ddtk_source_file(ddtk_source *s, ddtk_input *in);
/* nsamples spectra at data, in the plan's format; the block is not copied. */
void ddtk_source_memory(ddtk_source *s, const void *data, int64_t nsamples);

/*
 * A sink takes the dedispersed series: for each DM of the plan (index dm),
 * its samples as they are made, float32, in order. Calls for one DM come in
 * order, offset being the samples it has had so far; calls for different DMs
 * may come at the same time from several threads unless serial is set. A
 * caller makes its own by filling write (and pad, finish, length, serial,
 * discard, ctx as it needs) after a memset to 0; one that wraps another
 * copies it and replaces write, finish or ctx, so that its hints stay.
 */
typedef struct ddtk_sink ddtk_sink;
/* The caller's function of a callback sink (ddtk_sink_callback). */
typedef int (*ddtk_series_fn)(void *ctx, int dm, int64_t offset, const float *x, int64_t n);
struct ddtk_sink {
    int (*write)(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n);
    /* n samples of value at the end of series dm (padding with the series
     * mean: options.pad and the fft length rule); NULL: write is called with
     * the values. */
    int (*pad)(ddtk_sink *s, int dm, int64_t offset, float value, int64_t n);
    /* Called once at the end of ddtk_plan_stream with the run's status (0:
     * every series complete); returns the status to report. NULL: nothing. */
    int (*finish)(ddtk_sink *s, int rc);
    int length;                   /* DDTK_LEN_* rule the series end with (0 = exact here) */
    int serial;                   /* 1: one call at a time */
    int discard;                  /* 1: the series go nowhere (not worth the threads) */
    void *ctx;
    /* The library's sinks: memory, the series' stride; callback, the function. */
    size_t stride;
    ddtk_series_fn fn;
};

/* The series into an output set (ddtk_outset_open): .tim / .dat files or
 * stdout, float32 or quantised, with the set's length rule. finish commits
 * the set (ddtk_outset_close) after a good run, else removes it
 * (ddtk_outset_abort). */
void ddtk_sink_outset(ddtk_sink *s, ddtk_outset *out);
/* Series dm at mem + dm * stride (stride >= its length: ddtk_plan_nout). */
void ddtk_sink_memory(ddtk_sink *s, float *mem, size_t stride);
/* Each DM's samples to fn(ctx, ...) as they are made (see the sink's write). */
void ddtk_sink_callback(ddtk_sink *s, ddtk_series_fn fn, void *ctx);

typedef struct ddtk_stream_options {
    int pad;                      /* extend every series to the input length with its mean */
    int quiet;                    /* no progress reports (ddtk_set_progress_handler) */
} ddtk_stream_options;

/*
 * Stream a whole source through the plan into the sink, in gulps of bounded
 * memory, then end each series by the sink's length rule and call its
 * finish. options NULL: the defaults (all 0). stats, when not NULL, gets the
 * run's figures (commit: the seconds of the sink's finish, within wall).
 * A source no longer than the plan's maximum delay is bad data.
 */
int ddtk_plan_stream(ddtk_plan *plan, ddtk_source *source, ddtk_sink *sink,
                     const ddtk_stream_options *options, ddtk_run_stats *stats);

/* Stream a whole input (in the plan's format) into an output set that the
 * caller then closes; pad: --pad. ddtk_plan_stream with the file source and
 * the output set's sink, without its finish. */
int ddtk_plan_run(ddtk_plan *plan, ddtk_input *in, ddtk_outset *out, int pad,
                  ddtk_run_stats *stats);

/* ---- wisdom: tuned configurations (wisdom.c, tune.c) ---------------------- */

/*
 * As FFTW's wisdom: the fastest configuration measured for an algorithm on
 * this machine and set-up, kept in a text file. A configuration is the
 * direct kernel's (where the algorithm runs it) and the algorithm's tunable
 * parameters (its descriptor lists them: the sub-band layout, the tree's and
 * the FDMT's chunk, the tree's GPU rows per pass). The kernel's and the
 * chunks change speed, never output; a sub-band layout changes the series
 * within the algorithm's smearing budget. The key is where a plan runs (CPU
 * model and threads, or GPU name, compute capability and memory) and its
 * set-up (algorithm, nchans, nbits, DM count rounded up to a power of two,
 * DMs below or past the diagonal DM, time scrunching, and each of the
 * algorithm's parameters the description gives, as NAME=VALUE).
 */
/* The wisdom file: file, else xdg/ddtk/wisdom, else home/.cache/ddtk/wisdom
 * (allocated; NULL when none can be named); the tools pass $DDTK_WISDOM,
 * $XDG_CACHE_HOME and $HOME. */
char *ddtk_wisdom_path(const char *file, const char *xdg, const char *home);
int ddtk_wisdom_key(const ddtk_plan_desc *d, char *key, size_t n);
/* Set d->cpu (CPU) or d->gpu_config (GPU), and the tunable parameters d does
 * not give, from the file's entry for d's key; *found = 1 when there was
 * one. A missing file holds no wisdom; a damaged or foreign one, or an entry
 * d's algorithm cannot take, gives one warning and leaves d as it was: never
 * an error. */
int ddtk_wisdom_apply(ddtk_plan_desc *d, const char *path, int *found);
/* The configuration of d as text: the kernel's on d's backend ("cpu tile 1024
 * dms 64 chans 32", "gpu lane 5 float 0"; 0 and -1 mean the built-in default),
 * for an algorithm that runs it, then each tunable parameter d sets ("nsub
 * 32", "chunk 4096"); "defaults" when that is nothing. */
void ddtk_config_text(const ddtk_plan_desc *d, char *s, size_t n);
/*
 * Time configurations of d's algorithm on synthetic in-memory blocks for at
 * most about budget seconds (the default first): its tunable parameters that
 * d does not give, then the direct kernel's configuration where it runs it.
 * Set the fastest in d and, when path is not NULL, store it in that wisdom
 * file (locked, replaced whole). Every configuration's output must equal the
 * best one's byte for byte, or the tuning fails, but for a parameter that
 * changes the series (a sub-band layout), whose values must keep the
 * algorithm's accuracy budget instead. A line per configuration tried (or
 * skipped, and why) goes to table when not NULL.
 */
int ddtk_tune(ddtk_plan_desc *d, const char *path, double budget, FILE *table);
/* DDTK_OK when d's algorithm has something to tune on d's backend, else
 * the error ddtk_tune would fail with: an unknown algorithm, a backend not
 * usable here, or nothing to tune on it (the FDMT on a GPU). */
int ddtk_tune_check(const ddtk_plan_desc *d);

/* GPU availability (cuda/device.cu when built with CUDA, else gpu_none.c). */
int ddtk_gpu_count(void);
int ddtk_gpu_list(FILE *fp);
int ddtk_have_cuda(void);
/* 1 if GPU `index` can be used; else 0 with the reason in why. name gets its name. */
int ddtk_gpu_usable(int index, char *name, size_t n, char *why, size_t nwhy);
/* "NAME, cc M.m, N GiB" of GPU index (the wisdom key); 0 if it is not usable. */
int ddtk_gpu_describe(int index, char *s, size_t n);
/* Variants of the GPU direct kernel for 16-bit lanes (lane 1, input of 8
 * bits or less) or floats (lane 0): the compiled shared-memory configurations
 * and, last, the cached kernel for every DM block in each of its shapes
 * (ddtk_gpu_fallback_shapes of them); 0 without CUDA. */
int ddtk_gpu_variants(int lane);
int ddtk_gpu_fallback_shapes(void);
/* The backend policy of every tool (backend.c): *use_gpu = 1 when a run with
 * --backend `backend` and --gpu `gpu` goes to that GPU. gpu without a usable
 * GPU is DDTK_ESYS naming the reason; auto falls back to the CPU (noted with -v). */
int ddtk_backend_resolve(int backend, int gpu, int verbose, int *use_gpu);

/* Most GPUs one run may use (the "more than 64" of --gpu), and --gpu all. */
#define DDTK_MAX_GPUS 64
#define DDTK_GPUS_ALL (-1)
/* The backend policy for a GPU list (gpus, ngpus as in ddtk_plan_desc; gpu
 * when ngpus is 0): the devices of the run in list[*n]. all is every visible
 * GPU, or GPU 0 when fewer than two are (so it fails or falls back as --gpu 0
 * would). Every GPU must be usable: else gpu fails and auto takes the CPU. */
int ddtk_backend_resolve_gpus(int backend, const int *gpus, int ngpus, int gpu, int verbose,
                              int *use_gpu, int *list, int *n);

DDTK_END_DECLS

#endif
