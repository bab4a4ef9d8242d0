/*
 * internal.h - what the library's own files share and libddtk does not
 * install: failure recording and allocation, unpacking, channel and delay
 * tables, .inf line parsing, synthetic observations and the CPU direct
 * kernel. Unit tests and tools may use it; C users of libddtk see only
 * include/ (ddtk.h, dmplan.h, fdas.h).
 */
#ifndef DDTK_INTERNAL_H
#define DDTK_INTERNAL_H

#include "ddtk.h"

#include <pthread.h>
#include <string.h>
#include <sys/types.h>

DDTK_BEGIN_DECLS

/* ---- errors and allocation (error.c) ------------------------------------- */

/* ddtk_fail (ddtk.h) records a message and returns a code. */

/* A failure on worker threads, carried to the thread that reports it: the
 * message slot is per thread. Of several failures the one of the lowest job
 * number is kept (equal numbers: the first). */
typedef struct ddtk_thread_error {
    pthread_mutex_t lock;
    int rc, job;
    char msg[1024];
} ddtk_thread_error;
void ddtk_thread_error_init(ddtk_thread_error *e);
/* Called by the failing thread, with its code (non-zero) and message. */
void ddtk_thread_error_keep(ddtk_thread_error *e, int job, int rc);
/* The code kept so far (0: none), for workers that stop once one failed. */
int ddtk_thread_error_code(ddtk_thread_error *e);
/* Ends e: the code kept, with its message in the calling thread's slot. */
int ddtk_thread_error_end(ddtk_thread_error *e);
/* Allocation that records a DDTK_ESYS message on failure. */
void *ddtk_malloc(size_t bytes, const char *what);
void *ddtk_calloc(size_t n, size_t size, const char *what);
/* A growing array full: buf (elements of elem bytes) reallocated twice *cap
 * long, or first long when empty, and *cap set; NULL with a DDTK_ESYS message
 * ("out of memory for what") leaves buf and *cap as they were. */
void *ddtk_grow(void *buf, int64_t *cap, size_t elem, int64_t first, const char *what);
/* ddtk_malloc for buffers of many MiB (series, stage buffers): 64-byte
 * aligned, and on 2 MiB pages where the kernel allows it; freed with free(). */
void *ddtk_malloc_large(size_t bytes, const char *what);

/* ---- messages, progress and the clock (report.c) ------------------------- */

/* A message of level DDTK_MSG_* to the caller's handler (ddtk_set_message_handler). */
void ddtk_report(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ddtk_report_progress(int stage, const char *what, int64_t done, int64_t total);
/* Seconds on the monotonic clock. */
double ddtk_now(void);

/* ---- threads (threads.c) ---------------------------------------------------- */

/* The threads of this calling thread's parallel regions: n (0: OpenMP's
 * default) until set again; returns the count it replaces, to restore. */
int ddtk_threads_set(int n);
/* The count to give num_threads(): the one set, else OpenMP's default. */
int ddtk_threads(void);

/* ---- inputs decoded into channel rows (input.c) --------------------------- */

/* Reads of a regular file this large (a filterbank's spectra, PSRFITS
 * rows) go in DDTK_PREAD_CHUNK parts to DDTK_PREAD_THREADS threads: one
 * thread copies from the page cache at about 3.5 GB/s (the H100 host),
 * which left the GPU waiting on a gulp's read. The parts are small enough
 * that the GPU's shortest gulps keep several threads busy: 8 MiB for
 * htru's 2^15 spectra of 1024 2-bit channels, whose reads (0.074 s a
 * minute on one thread) bounded two GPUs' streaming (kernels 0.064 s). */
#define DDTK_PREAD_MIN ((size_t)4 << 20)
#define DDTK_PREAD_CHUNK ((size_t)2 << 20)
#define DDTK_PREAD_THREADS 8

/* len bytes of fd at pos (fewer at the end of the file), by pread past
 * EINTR and short reads; -1 with errno on an error. */
ssize_t ddtk_pread_all(int fd, uint8_t *dst, size_t len, off_t pos);
/* For a reader that reads what comes next in parts on several threads
 * itself (the RFI cleaner: a block a thread, cleaned while in that core's
 * cache): whether the input allows it (a filterbank in a regular file),
 * its position, a part's read from anywhere (any thread), and the end of
 * such a read, have of the want bytes from pos: the position moved past
 * them, and the spectra, the end and the counts as ddtk_input_read keeps
 * them. */
int ddtk_input_positional(const ddtk_input *in);
int ddtk_input_tell(ddtk_input *in, int64_t *pos);
int ddtk_input_pread(const ddtk_input *in, int64_t pos, uint8_t *dst, size_t len, size_t *have);
int ddtk_input_pread_done(ddtk_input *in, int64_t pos, size_t want, size_t have, int64_t *got);

/* 1 for an input the CPU engine may take decoded straight into its channel
 * rows, skipping the raw spectra and ddtk_unpack: scaled (float32) PSRFITS,
 * without RFI excision (which cleans spectra). */
int ddtk_input_reads_rows(const ddtk_input *in);
/* Up to n spectra of such an input into channel rows, as ddtk_unpack would
 * give them from ddtk_input_read's spectra; *got < n only at the end. */
int ddtk_input_read_rows(ddtk_input *in, int64_t n, const int *row, int pol, float *out,
                         size_t stride, int64_t *got);
/* For the GPU: the same input's spectra per row where they can be read as
 * raw bytes with per-row multiply-adds (ddtk_psrfits_read_scaled), else 0. */
int ddtk_input_scaled_bytes(const ddtk_input *in, int *sgn);
int ddtk_input_read_scaled(ddtk_input *in, int64_t n, uint8_t *out, int32_t *seg, float *tab,
                           int maxseg, int *nseg, int64_t *got);

/* ---- RFI excision (rfi.c) ---------------------------------------------------- */

/* ddtk_input_read through the cleaner: read reads raw spectra. */
int ddtk_clean_read(ddtk_input *in, uint8_t *raw, int64_t n, int64_t *got,
                    int (*read)(ddtk_input *, uint8_t *, int64_t, int64_t *));
int ddtk_clean_eof(const ddtk_input *in);
int64_t ddtk_clean_delivered(const ddtk_input *in);
void ddtk_cleaner_free(ddtk_cleaner *k);

/* What a device cleaning in's spectra as the host would (cuda/rfi_gpu.cu)
 * needs: the raw layout, the blocks and the clip. */
typedef struct ddtk_clean_geom {
    int nchans, nifs, nbits, sgn;
    int64_t block;                /* spectra per block, counted from the input's start */
    double clip_sigma;
} ddtk_clean_geom;
/* Whether in's cleaning can be a device's (--rfi auto without a mask, nothing
 * read yet), with *g its geometry. */
int ddtk_clean_geometry(const ddtk_input *in, ddtk_clean_geom *g);
/* From now on in's reads are raw, its cleaning the device's, until
 * ddtk_clean_take_back adds what the device cleaned (r, and ever[c]: channel
 * c flagged in some block) to in's report (ddtk_input_clean_report). */
void ddtk_clean_hand_over(ddtk_input *in);
int ddtk_clean_on_device(const ddtk_input *in);
void ddtk_clean_take_back(ddtk_input *in, const ddtk_rfi_report *r, const uint8_t *ever);

/* ---- unpacking (unpack.c) ----------------------------------------------- */

/*
 * Unpack n spectra of raw data into channel rows of floats:
 * out[row[c] * stride + t] for file channel c, skipping channels with
 * row[c] < 0. pol selects the IF (>= 0) or DDTK_POL_SUM the sum of IFs 0 and 1.
 */
void ddtk_unpack(const ddtk_header *h, const uint8_t *raw, int64_t n,
                 const int *row, int pol, float *out, size_t stride);
/* Resolve --pol for this header; returns the pol to pass to ddtk_unpack. */
int ddtk_resolve_pol(const ddtk_header *h, int requested, const char *name, int *pol);

/* ---- channels and delays (delays.c) -------------------------------------- */

typedef struct ddtk_channels {
    int nchans;                   /* channels in the file */
    int nlive;                    /* channels not killed */
    int *row;                     /* file channel -> live row, -1 if killed */
    double *freq;                 /* live row -> frequency (MHz), descending */
    double fref;                  /* reference frequency (MHz) */
    double fmin, fmax;            /* centres of the lowest and highest channels */
    double chan_bw;               /* |channel width| (MHz) */
} ddtk_channels;

/* Live channels ordered by descending frequency, so both band orders sum
 * identically. kill may be NULL; fref <= 0 selects the highest channel. */
int ddtk_channels_init(ddtk_channels *ch, const ddtk_header *h,
                       const uint8_t *kill, double fref);
/* The same from a frequency array (file order); chan_bw is used for one channel. */
int ddtk_channels_from_freqs(ddtk_channels *ch, int nchans, const double *freqs,
                             double chan_bw, const uint8_t *kill, double fref);
/* The channel frequencies of a header, file order (*freqs malloc'd). */
int ddtk_header_freqs(const ddtk_header *h, double **freqs);
void ddtk_channels_free(ddtk_channels *ch);

typedef struct ddtk_delays {
    int ndm, nchan;
    double tsamp, kdm;
    int rounding;
    double *dm;                   /* DM list */
    double *per_dm;               /* per live row: delay in samples per unit DM */
    int32_t *delay;               /* [dm * nchan + row] in samples */
    int32_t maxdelay;             /* largest delay of the run */
} ddtk_delays;

int ddtk_delays_init(ddtk_delays *d, const ddtk_channels *ch, double tsamp,
                     const double *dms, int ndm, double kdm, int rounding);
void ddtk_delays_free(ddtk_delays *d);

/* The largest delay (samples) of DM dm over the live channels, as a delay
 * table at tsamp would hold it. */
int ddtk_max_delay(const ddtk_channels *ch, double tsamp, double dm, double kdm, int rounding,
                   int32_t *maxdelay);
/* Round a delay in samples per the rounding mode (half away from zero / floor). */
int32_t ddtk_round_delay(double samples, int rounding);

/* ---- PRESTO .inf lines and text files (inf.c) ------------------------------ */

/* The value of a line " Label ... =  value", or NULL if the line has another label. */
const char *ddtk_inf_value(const char *line, const char *label);
/*
 * Text inputs (kill lists, DM lists, plans, .inf files) are bounded before
 * they are trusted: a regular file of at most DDTK_TEXT_MAX bytes, or a pipe
 * (process substitution) read to at most that; devices and directories are
 * refused, a NUL byte or a line past DDTK_TEXT_LINE_MAX is an error naming
 * the file (DDTK_EDATA), so /dev/zero or a binary file never fills memory.
 */
#define DDTK_TEXT_MAX (256 << 20)
#define DDTK_TEXT_LINE_MAX 65536
/* Open path for reading text into *fp (never blocks on a FIFO without a
 * writer): DDTK_OK, or an error with the message set. */
int ddtk_text_open(const char *path, FILE **fp);
/* The next line of fp into *line (grown as getline's; newline kept): its
 * length, 0 at the end, or minus an error code with the message set. *total
 * counts the bytes read. */
long ddtk_text_line(FILE *fp, const char *path, long lineno, char **line, size_t *cap,
                    int64_t *total);
/* Read a whole text file into a NUL-terminated buffer (caller frees). */
int ddtk_slurp(const char *path, char **text);

/* ---- integer output (output.c) ------------------------------------------ */

/* The divisor S of integer output (--nbits-out 8|16): the smallest power of
 * two, at least 1, that brings `largest` into 0 .. 2^nbits - 1. */
double ddtk_integer_scale(double largest, int nbits);
/* x / scale rounded half away from zero, clamped to 0 .. 2^nbits - 1. */
uint32_t ddtk_quantise(double x, double scale, int nbits);

/* ---- series statistics (select.c, baseline.c) ------------------------------ */

/* The k-th smallest (0-based) of x[0..n), n >= 1; x is reordered. */
float ddtk_select_kth(float *x, int64_t n, int64_t k);
/* The k-th smallest (0-based) of key[0..n), n >= 1, by radix selection
 * (exact, O(n)); key[] is overwritten. */
uint32_t ddtk_select_key(uint32_t *key, int64_t n, int64_t k);
/* The same, faster when the k-th smallest is likely in glo..ghi (a guess:
 * the answer is exact wherever it lies). */
uint32_t ddtk_select_key_near(uint32_t *key, int64_t n, int64_t k, uint32_t glo, uint32_t ghi);
/* Float keys: unsigned integers in the order of the floats (NaN-free): the
 * negatives' bits inverted, the sign bit of the others set. -0.0 sorts just
 * below +0.0, where comparisons take them as equal. The GPU's RFI cleaner
 * sorts by them too (DDTK_HD). */
#ifdef __CUDACC__
#define DDTK_HD __host__ __device__
#else
#define DDTK_HD
#endif
static inline DDTK_HD uint32_t ddtk_float_key(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u ^ ((uint32_t)((int32_t)u >> 31) | 0x80000000u);
}
static inline DDTK_HD float ddtk_key_float(uint32_t u)
{
    u = u & 0x80000000u ? u & 0x7fffffffu : ~u;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Element e of SIGPROC raw data (1/2/4-bit packed from the low bits, 8/16-bit
 * signed or not, 32-bit float) as a float: unpack.c's, and the RFI
 * cleaner's for the widths it has no faster loop for. */
static inline float ddtk_sample(const uint8_t *raw, int64_t e, int nbits, int sgn)
{
    switch (nbits) {
    case 1: case 2: case 4: {
        int64_t bit = e * nbits;
        return (float)((raw[bit >> 3] >> (bit & 7)) & ((1u << nbits) - 1u));
    }
    case 8:
        return sgn ? (float)(int8_t)raw[e] : (float)raw[e];
    case 16: {
        uint16_t v;
        memcpy(&v, raw + 2 * e, 2);
        return sgn ? (float)(int16_t)v : (float)v;
    }
    default: {
        float v;
        memcpy(&v, raw + 4 * e, 4);
        return v;
    }
    }
}

/* SIGPROC dedisperse's baseline block: 32 * nchans output samples. */
int64_t ddtk_baseline_block(int nchans);
/* The median of x[0..n) (the ((n+1)/2)-th smallest: dedisperse's for even n),
 * using scratch (n floats). */
float ddtk_block_median(const float *x, int64_t n, float *scratch);
/* 1.4826 * median |x - centre|: the noise's standard deviation, robust to
 * pulses; scratch holds n floats. */
double ddtk_robust_sigma(const float *x, int64_t n, double centre, float *scratch);

/* ---- wisdom (wisdom.c) ------------------------------------------------------ */

/* Replace or add key's entry in the wisdom file at path (its directory made
 * when missing), under the directory's lock, by renaming a whole new file. */
int ddtk_wisdom_store(const char *path, const char *key, const char *config, double rate);
/* Set d->cpu or d->gpu_config, and the tunable parameters d does not give,
 * from path's entry for key (*found = 1 when there is one). A missing file
 * holds no wisdom (DDTK_OK); one that is not wisdom (not a regular file, too
 * large, a damaged line or field, a parameter d's algorithm does not tune) is
 * DDTK_EDATA with the message set and d unchanged. Prints nothing. */
int ddtk_wisdom_lookup(const char *path, const char *key, ddtk_plan_desc *d, int *found);

/* ---- synthetic observations (sim.c) --------------------------------------- */

typedef struct ddtk_sim_pulse {
    double t;                     /* arrival time at the reference frequency (s) */
    double dm, width;             /* width: Gaussian FWHM (s) */
    double amp;                   /* peak S/N of the ideally dedispersed pulse */
} ddtk_sim_pulse;

typedef struct ddtk_sim_pulsar {
    double period, dm, duty;      /* duty: FWHM as a fraction of the period */
    double amp;                   /* peak S/N of one dedispersed pulse */
    double accel;                 /* line-of-sight acceleration (m/s^2) */
} ddtk_sim_pulsar;

typedef struct ddtk_sim {
    ddtk_header hdr;              /* nchans, nbits, nifs, tsamp, fch1, foff, ... */
    int64_t nsamples;
    double mean, sigma;           /* noise level in output units; NAN: default per nbits */
    unsigned long seed;
    double kdm;
    ddtk_sim_pulse *pulses;
    int npulses;
    ddtk_sim_pulsar *pulsars;
    int npulsars;
    /* RFI added to the same noise (which draws nothing for it): persistent
     * narrow-band channels (a fraction of the channels, chosen from the seed,
     * each at chan_amp noise sigmas, modulated by half of that at 0.3-3 Hz)
     * and dropouts (dropout_rate per second, dropout_len seconds each, every
     * sample 0). Broadband impulses and periodic RFI are pulses and pulsars
     * at DM 0. */
    double rfi_chan_frac, rfi_chan_amp;
    double dropout_rate, dropout_len;
    /* Called after each block written (NULL: none): spectra written so far. */
    void (*progress)(void *ctx, int64_t done);
    void *progress_ctx;
} ddtk_sim;

/* Write header and data of a synthetic observation (Gaussian noise plus signals). */
int ddtk_sim_write(const ddtk_sim *s, FILE *fp, const char *name);
/* Default noise mean and sigma for an nbits format. */
void ddtk_sim_levels(int nbits, int sgn, double *mean, double *sigma);

/* ---- the direct kernel on the CPU (cpu/direct.c) ------------------------- */

/* CPU kernel: out[d*ostride + t] = sum over rows c of in[c*istride + t + delay[d*nchan + c]]
 * for t in [0, nout); in must hold nout + max delay samples per row. */
/* Zero fields of c take the kernel's defaults; chan_block rounds up to a multiple of 4. */
void ddtk_cpu_config_resolve(ddtk_cpu_config *c);
void ddtk_direct_cpu(const float *in, size_t istride, int nchan, int64_t nout,
                     const int32_t *delay, int ndm, float *out, size_t ostride,
                     const ddtk_cpu_config *cfg);

DDTK_END_DECLS

#endif
