/*
 * rfi.c - RFI excision at the input, before any dedispersion backend: PRESTO
 * rfifind masks (--mask) and the built-in cleaner (--rfi auto).
 *
 * Spectra are cleaned in blocks of DDTK_RFI_BLOCK counted from the start of
 * the observation, whatever the reads' sizes, so the CPU and the GPU (and
 * any gulp) see the same cleaned samples. A masked sample is replaced, in
 * the input's own format, by its channel's mean over the block (per IF;
 * for a flagged or masked channel, its good neighbours' level), with
 * dithered rounding for integer data: the engine, the killfile and --zerodm
 * work as before on data that just lost their RFI. What a PRESTO mask zaps
 * takes, where rfifind's .stats file is beside the mask and the input has
 * one IF, the level PRESTO pads it with (the channel's mid-80% average of
 * rfifind's interval averages), so that ddtk's series equal prepsubband's
 * and prepdata's.
 *
 * --rfi auto flags, per block, the channels whose standard deviation or mean
 * is a high outlier against their neighbours' (IQRM, Morello et al. 2022: lagged
 * differences of the statistic, robust thresholds from their interquartile
 * range, a vote per lag and direction), then clips the spectra whose zero-DM
 * sum (each channel's deviation from its mean in units of its standard
 * deviation, over the unflagged channels) is a robust outlier of the
 * block's: broadband impulses and dropouts.
 *
 * The cost is kept small against the dedispersion it precedes: the data are
 * cleaned in their own layout (spectrum by spectrum, no transposed copy),
 * the channel statistics from a subsample of each block's spectra
 * (RFI_STATS_SPECTRA: their errors are a few per cent, far below what IQRM
 * flags), the zero-DM series of every spectrum as one weighted sum over its
 * channels, IQRM's quantiles of a lag's two directions from one sort, and
 * the flagged channels' replacements of 8-bit data computed in a loop that
 * vectorises; for 8-bit data, the statistics summed as integers and four
 * spectra's weighted sums made side by side. One thread cleans htru's 78
 * blocks of 10 s in about 0.040 s on this project's 2-core machine (0.058 s
 * before those two; per block as 0.046 s for 4 s before the sort and the
 * replacement's loop).
 *
 * Blocks are cleaned on every thread whatever the reads' sizes: each
 * block's cleaning depends on its own spectra only, so the blocks read at
 * once go to the threads. A read whose blocks give the threads three
 * quarters of a block each at least is cleaned in place in the caller's
 * buffer, the block its end falls in read ahead and cleaned in the same
 * pass (the GPU's gulps: 16 blocks of htru, not aligned to them); a smaller
 * one is served from a read-ahead of a few blocks per thread
 * (AHEAD_PER_THREAD, within AHEAD_BYTES; at least one block), read and
 * cleaned at once and copied out on several threads (not on an input of
 * unknown length, a pipe that may be live: there a read waits for no more
 * than its own whole blocks, or one). On a filterbank in a regular file
 * each block is read by the thread that cleans it (clean_blocks). On
 * this project's 2-core machine (with the cleaning's cost before the sort and
 * the vectorised replacement), reading htru (4 s) through the cleaner in
 * reads of one block took 0.044 s on 2 threads before (one block a read,
 * one thread), 0.034 s with a block per thread read ahead and 0.027-0.031 s
 * with 2-6 (the blocks' costs differ; 4 per thread is as fast as reads of 4
 * blocks cleaned in place). Parallel work within a block was the other way,
 * and worse: a block of htru takes under a millisecond of one core in four
 * passes (statistics, IQRM over the channels, zero-DM sums, replacement),
 * so 32 threads would share each pass in parts of a few microseconds, each
 * a fork and a join, and IQRM's sorts do not split by spectra.
 */
#include "internal.h"
#include "rfi_math.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PREFETCH 4                /* spectra of the statistics' subsample read ahead */
/* The read-ahead holds at most this many bytes of whole blocks (as the
 * PSRFITS reader's batches): 64 MiB is one 2 MiB block of htru (1024 8-bit
 * channels) for each of 32 threads; wider spectra get fewer blocks, and
 * always at least one. */
#define AHEAD_BYTES ((int64_t)64 << 20)
#define AHEAD_PER_THREAD 4        /* blocks read ahead for each thread */
#define COPY_CHUNK ((size_t)1 << 20)  /* bytes of the read-ahead a thread copies out */
#define MASK_MOST_STREAMED (1 << 24)  /* spectra of a mask's interval on an input of unknown
                                         length (rfifind's default 2 s at 0.12 us) */

/* A PRESTO rfifind mask (mask.c's layout: native doubles and ints). */
typedef struct rfi_mask {
    double dtint;
    int numchan, numint, ptsperint;
    uint8_t *zap_chan;            /* [file channel] */
    uint8_t *zap_int;             /* [interval] */
    uint8_t *chans;               /* [interval * numchan + file channel] */
    float *pad;                   /* [file channel] PRESTO's padding from the .stats; or NULL */
} rfi_mask;

struct ddtk_cleaner {
    ddtk_clean_opts o;
    rfi_mask mask;
    int have_mask;
    int64_t block;                /* spectra per block */
    uint8_t *raw;                 /* the read-ahead: whole blocks cleaned for small reads */
    int64_t room;                 /* blocks raw holds */
    int64_t have, used;           /* spectra in raw, and already delivered */
    int64_t first;                /* observation index of raw's first spectrum (past the
                                     last read cleaned in place) */
    int64_t at;                   /* that of the block being cleaned */
    int eof;
    float *spec;                  /* one spectrum's values, [if][chan]; or four's */
    double *sum, *dsum, *dsq;     /* [if][chan] sums; [chan] the detected IFs' sum, squares */
    uint32_t *isum, *isq;         /* [chan] the same of unsigned 8-bit samples, as integers */
    float *wts;                   /* [chan] zero-DM weights: 1 / std, 0 if flagged */
    float *scratch;               /* two blocks of floats for selection */
    float *med, *dmed, *sig;      /* [if][chan] means; [chan] detection rows' mean, std */
    float *stat, *mean, *diff;    /* per channel: std, mean; lagged differences */
    int *votes, *tries;
    uint32_t *keys;               /* [2 * chan] sort_floats's */
    uint8_t *flag;                /* [chan] flagged in this block */
    uint8_t *bad;                 /* [chan] flagged or masked: replaced by its neighbours' level */
    float *level;                 /* [if][chan] what a replaced sample becomes */
    uint8_t *clip;                /* [t] spectrum clipped */
    int *list;                    /* the channels replace() replaces */
    float *lx;                    /* [if][list entry] the values they take */
    uint8_t *vals;                /* [chan] put8's */
    int32_t *lfl;                 /* [if][list entry] lx's dither tables (8-bit) */
    uint32_t *lthr;
    ddtk_rfi_report rep;
    uint8_t *ever;                /* [chan] flagged in some block */
    int device;                   /* a device cleans (ddtk_clean_hand_over): reads are raw */
    /* Blocks of one read are cleaned on several threads: thread i > 0 uses
     * workers[i - 1], a copy of this cleaner's settings (o, mask, block)
     * with its own per-block arrays, counts and flags (added up by the
     * report), and no buffer of its own. */
    struct ddtk_cleaner *workers;
    int nworkers;
};

/* ---- PRESTO masks ------------------------------------------------------------- */

static int read_ints(FILE *fp, int *v, size_t n)
{
    return fread(v, sizeof *v, n, fp) == n ? 0 : -1;
}

/* rfifind numbers channels from the lowest frequency; files may descend. */
static int file_chan(int c, int nchans, int descending)
{
    return descending ? nchans - 1 - c : c;
}

static int mask_chan_list(FILE *fp, rfi_mask *m, int n, uint8_t *dst, int descending,
                          const char *path)
{
    int *v = ddtk_malloc((size_t)(n > 0 ? n : 1) * sizeof *v, "mask");
    if (!v)
        return DDTK_ESYS;
    int rc = n > 0 && read_ints(fp, v, (size_t)n) ? DDTK_EDATA : DDTK_OK;
    for (int i = 0; i < n && !rc; i++) {
        if (v[i] < 0 || v[i] >= m->numchan) {
            rc = ddtk_fail(DDTK_EDATA, "%s: channel %d outside the mask's %d", path, v[i],
                           m->numchan);
            break;
        }
        dst[file_chan(v[i], m->numchan, descending)] = 1;
    }
    free(v);
    return rc == DDTK_EDATA && !strstr(ddtk_errmsg(), path)
           ? ddtk_fail(DDTK_EDATA, "%s: truncated rfifind mask", path) : rc;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* PRESTO's padding for masked samples: per channel, the mean of the middle
 * 80% (round(0.8 n) values, from (n - that) / 2 up) of rfifind's interval
 * averages, sorted; from NAME.stats beside NAME.mask (rfifind writes both:
 * numchan, numint, ptsperint, lobin, numbetween as ints, then numint x
 * numchan floats of powers and as many of averages). No .stats: m->pad
 * stays NULL. */
static int read_pad(rfi_mask *m, const char *path, int descending)
{
    const char *slash = strrchr(path, '/'), *dot = strrchr(path, '.');
    size_t root = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
    char *stats = ddtk_malloc(root + 8, "mask");
    int hd[5], rc = DDTK_OK;
    if (!stats)
        return DDTK_ESYS;
    snprintf(stats, root + 8, "%.*s.stats", (int)root, path);
    FILE *fp = fopen(stats, "rb");
    if (!fp) {
        free(stats);
        return DDTK_OK;
    }
    const int64_t nc = m->numchan;
    float *avg = NULL, *v = NULL;
    if (read_ints(fp, hd, 5) || hd[0] != m->numchan || hd[1] < 1 || hd[1] > (1 << 28))
        rc = ddtk_fail(DDTK_EDATA, "%s: not the rfifind statistics of %s", stats, path);
    const int64_t ni = rc ? 0 : hd[1];
    if (!rc && (!(avg = ddtk_malloc((size_t)(ni * nc) * sizeof *avg, "mask statistics"))
                || !(v = ddtk_malloc((size_t)ni * sizeof *v, "mask statistics"))
                || !(m->pad = ddtk_malloc((size_t)nc * sizeof *m->pad, "mask statistics"))))
        rc = DDTK_ESYS;
    if (!rc && (fseeko(fp, (off_t)(ni * nc * (int64_t)sizeof(float)), SEEK_CUR) != 0
                || fread(avg, sizeof *avg, (size_t)(ni * nc), fp) != (size_t)(ni * nc)))
        rc = ddtk_fail(DDTK_EDATA, "%s: truncated rfifind statistics", stats);
    const int64_t len = (int64_t)(ni * 0.8f + 0.5), start = (ni - len) / 2;
    for (int64_t c = 0; c < nc && !rc; c++) {
        double sum = 0;
        for (int64_t i = 0; i < ni; i++)
            v[i] = avg[i * nc + c];
        qsort(v, (size_t)ni, sizeof *v, cmp_float);
        for (int64_t i = start; i < start + len; i++)
            sum += v[i];
        m->pad[file_chan((int)c, (int)nc, descending)] = (float)(sum / (double)len);
    }
    fclose(fp);
    free(stats);
    free(avg);
    free(v);
    return rc;
}

static int read_mask(rfi_mask *m, const char *path, const ddtk_header *h)
{
    double head[6];
    int n[4], rc = DDTK_OK;
    struct stat st;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return ddtk_fail(DDTK_ESYS, "%s: cannot open the mask", path);
    if (fread(head, sizeof(double), 6, fp) != 6 || read_ints(fp, n, 4)) {
        fclose(fp);
        return ddtk_fail(DDTK_EDATA, "%s: truncated rfifind mask", path);
    }
    m->dtint = head[3];
    m->numchan = n[0];
    m->numint = n[1];
    m->ptsperint = n[2];
    if (m->numchan != h->nchans)
        rc = ddtk_fail(DDTK_EDATA, "%s: a mask of %d channels for %d", path, m->numchan,
                       h->nchans);
    else if (m->numint < 1 || m->numint > (1 << 28) || m->ptsperint < 1 || !(m->dtint > 0)
             || n[3] < 0 || n[3] > m->numchan)
        rc = ddtk_fail(DDTK_EDATA, "%s: not an rfifind mask (intervals %d of %d spectra)",
                       path, m->numint, m->ptsperint);
    else if (fstat(fileno(fp), &st) == 0 && (int64_t)m->numint * (int64_t)sizeof(int) > st.st_size)
        /* each interval has its count in the file: its length bounds what is allocated */
        rc = ddtk_fail(DDTK_EDATA, "%s: truncated rfifind mask (%d intervals in %lld bytes)",
                       path, m->numint, (long long)st.st_size);
    const int desc = h->nfreqs > 1 ? h->freqs[h->nfreqs - 1] < h->freqs[0] : h->foff < 0;
    if (!rc && (!(m->zap_chan = ddtk_calloc((size_t)m->numchan, 1, "mask"))
                || !(m->zap_int = ddtk_calloc((size_t)m->numint, 1, "mask"))
                || !(m->chans = ddtk_calloc((size_t)m->numint * m->numchan, 1, "mask"))))
        rc = DDTK_ESYS;
    if (!rc)
        rc = mask_chan_list(fp, m, n[3], m->zap_chan, desc, path);
    int nzi = 0, *per = NULL;
    if (!rc && read_ints(fp, &nzi, 1))
        rc = ddtk_fail(DDTK_EDATA, "%s: truncated rfifind mask", path);
    if (!rc && (nzi < 0 || nzi > m->numint))
        rc = ddtk_fail(DDTK_EDATA, "%s: bad zapped intervals", path);
    int *zi = !rc ? ddtk_malloc((size_t)(nzi > 0 ? nzi : 1) * sizeof *zi, "mask") : NULL;
    if (!rc && (!zi || (nzi && read_ints(fp, zi, (size_t)nzi))))
        rc = ddtk_fail(DDTK_EDATA, "%s: bad zapped intervals", path);
    for (int i = 0; i < nzi && !rc; i++)
        if (zi[i] >= 0 && zi[i] < m->numint)
            m->zap_int[zi[i]] = 1;
    free(zi);
    if (!rc && (!(per = ddtk_malloc((size_t)m->numint * sizeof *per, "mask"))
                || read_ints(fp, per, (size_t)m->numint)))
        rc = ddtk_fail(DDTK_EDATA, "%s: truncated rfifind mask", path);
    for (int i = 0; i < m->numint && !rc; i++) {
        uint8_t *dst = m->chans + (size_t)i * m->numchan;
        if (per[i] == m->numchan)
            memset(dst, 1, (size_t)m->numchan);
        else if (per[i] > 0 && per[i] < m->numchan)
            rc = mask_chan_list(fp, m, per[i], dst, desc, path);
    }
    free(per);
    fclose(fp);
    return rc || h->nifs != 1 ? rc : read_pad(m, path, desc);
}

/* ---- statistics ------------------------------------------------------------ */

static float median_of(float *v, int64_t n)
{
    return n > 0 ? ddtk_select_kth(v, n, n / 2) : 0.0f;
}

/* Median and 1.4826 x MAD of x[0..n-1] from every step-th sample (at
 * least RFI_ROBUST_SAMPLES of them: selection was most of the cleaning's
 * time), using tmp. */
static void robust(const float *x, int64_t n, float *tmp, float *med, float *sig)
{
    const int64_t step = rfi_robust_step(n);
    int64_t m = 0;
    for (int64_t i = 0; i < n; i += step)
        tmp[m++] = x[i];
    *med = median_of(tmp, m);
    for (int64_t i = 0; i < m; i++)
        tmp[i] = fabsf(tmp[i] - *med);
    *sig = 1.4826f * median_of(tmp, m);
}

/* x[0..n-1] in ascending order: a radix sort of their keys (ddtk_float_key),
 * in tmp (2n keys). */
static void sort_floats(float *x, uint32_t *tmp, int n)
{
    uint32_t *a = tmp, *b = tmp + n;
    for (int i = 0; i < n; i++)
        a[i] = ddtk_float_key(x[i]);
    for (int shift = 0; shift < 32; shift += 8) {
        int at[257] = { 0 };
        for (int i = 0; i < n; i++)
            at[((a[i] >> shift) & 255) + 1]++;
        for (int d = 0; d < 256; d++)
            at[d + 1] += at[d];
        for (int i = 0; i < n; i++)
            b[at[(a[i] >> shift) & 255]++] = a[i];
        uint32_t *t = a;
        a = b;
        b = t;
    }
    for (int i = 0; i < n; i++)
        x[i] = ddtk_key_float(a[i]);
}

/* IQRM on the per-channel statistic s (only high outliers count): for each
 * lag, a channel gets a vote when its difference from the channel lag away is
 * above the median difference by RFI_IQRM_THRESHOLD robust sigmas (IQR / 1.349);
 * it is flagged when a majority of its comparisons vote against it. The
 * quartiles and medians of a lag's two directions come from one sort: the
 * differences towards lower channels are those towards higher ones negated
 * (a - b is -(b - a) exactly), so their k-th smallest is minus the other's
 * (n-1-k)-th. Selecting the six was a third of the cleaning's time. */
static void iqrm(ddtk_cleaner *k, int nchan, const float *s, uint8_t *flag)
{
    memset(k->votes, 0, (size_t)nchan * sizeof *k->votes);
    memset(k->tries, 0, (size_t)nchan * sizeof *k->tries);
    for (int lag = 1; lag <= nchan / 4 && lag <= RFI_IQRM_MAX_LAG; lag *= 2) {
        const int n = nchan - lag;
        const float *d = k->diff;
        if (n < 8)
            continue;
        for (int c = 0; c < n; c++)
            k->diff[c] = s[c] - s[c + lag];
        sort_floats(k->diff, k->keys, n);
        for (int dir = -1; dir <= 1; dir += 2) {
            float q1 = dir > 0 ? d[n / 4] : -d[n - 1 - n / 4];
            float q3 = dir > 0 ? d[3 * n / 4] : -d[n - 1 - 3 * n / 4];
            float med = dir > 0 ? d[n / 2] : -d[n - 1 - n / 2];
            float lim = rfi_iqrm_limit(q1, q3, med);
            for (int c = 0; c < nchan; c++) {
                int o = c + dir * lag;
                if (o < 0 || o >= nchan)
                    continue;
                k->tries[c]++;
                k->votes[c] += s[c] - s[o] > lim && q3 > q1;
            }
        }
    }
    for (int c = 0; c < nchan; c++)
        flag[c] |= k->tries[c] > 0 && 2 * k->votes[c] > k->tries[c];
}

/* ---- writing samples back ---------------------------------------------------- */

/* floor(x + u) of rfi_quantise, for x's of unsigned 8-bit samples, as
 * integers: u is u24 / 2^24 and x + u is exact in double, so floor(x + u) is
 * floor(x) + 1 where u24 >= (1 - frac(x)) 2^24, else floor(x). *fl
 * (floor(x) within [-1, 256], which the clamp to [0, 255] then treats as
 * any value beyond) and *thr (that bound, 2^24 for a whole x) per x. */
static void dither_table(float x, int32_t *fl, uint32_t *thr)
{
    const double f = floor((double)x), lo = f < -1 ? -1 : f > 256 ? 256 : f;
    *fl = (int32_t)lo;
    *thr = (uint32_t)ceil((1.0 - ((double)x - f)) * 16777216.0);
}

/* put for unsigned 8-bit samples row[col[j]], j < n, whose x's tables
 * (dither_table) are fl[j] and thr[j], the sample at row[0] being the
 * observation's where: integer arithmetic in a loop that vectorises
 * (through tmp), then the stores. The replacement of flagged channels,
 * sample by sample through put, was half of the cleaning; with put's
 * double arithmetic in the loop, 15 ms of htru 10 s on one thread. */
static void put8(uint8_t *row, int64_t where, const int *col, const int32_t *fl,
                 const uint32_t *thr, int n, uint8_t *restrict tmp)
{
    for (int j = 0; j < n; j++) {
        int32_t v = fl[j] + (rfi_dither_bits(where + col[j]) >= thr[j]);
        tmp[j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    for (int j = 0; j < n; j++)
        row[col[j]] = tmp[j];
}

/* ---- the cleaner ------------------------------------------------------------- */

/* The arrays a cleaner (or a worker) needs for one block. */
static int work_alloc(ddtk_cleaner *k, const ddtk_header *h)
{
    const size_t nc = (size_t)h->nchans, ni = (size_t)h->nifs, b = (size_t)k->block;
    if (!(k->spec = ddtk_malloc((ni > 4 ? ni : 4) * nc * sizeof *k->spec, "RFI stats"))
        || !(k->sum = ddtk_malloc(ni * nc * sizeof *k->sum, "RFI stats"))
        || !(k->dsum = ddtk_malloc(nc * sizeof *k->dsum, "RFI stats"))
        || !(k->dsq = ddtk_malloc(nc * sizeof *k->dsq, "RFI stats"))
        || !(k->isum = ddtk_malloc(nc * sizeof *k->isum, "RFI stats"))
        || !(k->isq = ddtk_malloc(nc * sizeof *k->isq, "RFI stats"))
        || !(k->wts = ddtk_malloc(nc * sizeof *k->wts, "RFI stats"))
        || !(k->scratch = ddtk_malloc(2 * b * sizeof *k->scratch, "RFI block"))
        || !(k->med = ddtk_malloc(ni * nc * sizeof *k->med, "RFI stats"))
        || !(k->sig = ddtk_malloc(nc * sizeof *k->sig, "RFI stats"))
        || !(k->dmed = ddtk_malloc(nc * sizeof *k->dmed, "RFI stats"))
        || !(k->stat = ddtk_malloc(nc * sizeof *k->stat, "RFI stats"))
        || !(k->mean = ddtk_malloc(nc * sizeof *k->mean, "RFI stats"))
        || !(k->diff = ddtk_malloc(nc * sizeof *k->diff, "RFI stats"))
        || !(k->votes = ddtk_malloc(nc * sizeof *k->votes, "RFI stats"))
        || !(k->tries = ddtk_malloc(nc * sizeof *k->tries, "RFI stats"))
        || !(k->keys = ddtk_malloc(2 * nc * sizeof *k->keys, "RFI stats"))
        || !(k->flag = ddtk_calloc(nc, 1, "RFI stats"))
        || !(k->bad = ddtk_calloc(nc, 1, "RFI stats"))
        || !(k->level = ddtk_malloc(ni * nc * sizeof *k->level, "RFI stats"))
        || !(k->ever = ddtk_calloc(nc, 1, "RFI stats"))
        || !(k->clip = ddtk_calloc(b, 1, "RFI stats"))
        || !(k->list = ddtk_malloc(nc * sizeof *k->list, "RFI stats"))
        || !(k->lx = ddtk_malloc(ni * nc * sizeof *k->lx, "RFI stats"))
        || !(k->vals = ddtk_malloc(nc, "RFI stats"))
        || !(k->lfl = ddtk_malloc(ni * nc * sizeof *k->lfl, "RFI stats"))
        || !(k->lthr = ddtk_malloc(ni * nc * sizeof *k->lthr, "RFI stats")))
        return DDTK_ESYS;
    return DDTK_OK;
}

static void work_free(ddtk_cleaner *k)
{
    free(k->spec);
    free(k->sum);
    free(k->dsum);
    free(k->dsq);
    free(k->isum);
    free(k->isq);
    free(k->wts);
    free(k->scratch);
    free(k->med);
    free(k->sig);
    free(k->dmed);
    free(k->stat);
    free(k->mean);
    free(k->diff);
    free(k->votes);
    free(k->tries);
    free(k->keys);
    free(k->flag);
    free(k->bad);
    free(k->level);
    free(k->ever);
    free(k->clip);
    free(k->list);
    free(k->lx);
    free(k->vals);
    free(k->lfl);
    free(k->lthr);
}

/* Workers for n threads in all (the cleaner itself the first). */
static int workers(ddtk_cleaner *k, const ddtk_header *h, int n)
{
    if (n - 1 <= k->nworkers)
        return DDTK_OK;
    ddtk_cleaner *w = realloc(k->workers, (size_t)(n - 1) * sizeof *w);
    if (!w)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    k->workers = w;
    for (; k->nworkers < n - 1; k->nworkers++) {
        ddtk_cleaner *x = &w[k->nworkers];
        memset(x, 0, sizeof *x);
        x->o = k->o;
        x->mask = k->mask;
        x->have_mask = k->have_mask;
        x->block = k->block;
        if (work_alloc(x, h)) {
            work_free(x);
            return DDTK_ESYS;
        }
    }
    return DDTK_OK;
}

/* Spectrum t of raw as floats, [if][chan] (SIGPROC's formats, as ddtk_unpack
 * reads them); 8-bit, the common case, in a loop that vectorises. */
static void spectrum(const ddtk_header *h, const uint8_t *raw, int64_t t, float *restrict x)
{
    const int64_t nv = (int64_t)h->nchans * h->nifs, e0 = t * nv;
    const int nbits = h->nbits, sgn = h->signed_data == 1;
    if (nbits == 8 && !sgn) {
        const uint8_t *restrict r = raw + e0;
        for (int64_t v = 0; v < nv; v++)
            x[v] = (float)r[v];
    } else if (nbits == 8) {
        const int8_t *restrict r = (const int8_t *)raw + e0;
        for (int64_t v = 0; v < nv; v++)
            x[v] = (float)r[v];
    } else if (nbits == 32)
        memcpy(x, raw + 4 * e0, (size_t)nv * sizeof *x);
    else
        for (int64_t v = 0; v < nv; v++)
            x[v] = ddtk_sample(raw, e0 + v, nbits, sgn);
}

/* The detected value of spectrum x's channel c: IF 0, or IFs 0 and 1 summed
 * as the engine sums them. */
static inline float detected(const float *x, int nc, int ni, int c)
{
    return ni >= 2 ? x[c] + x[nc + c] : x[c];
}

/* Unsigned 8-bit samples (of any IFs: replace; of one: the statistics and
 * the zero-DM sums), which the cleaner's fast paths take. */
static inline int unsigned8(const ddtk_header *h)
{
    return h->nbits == 8 && h->signed_data != 1;
}

/* The statistics' subsample, every step-th of n spectra of `bytes` bytes:
 * a spectrum is a page or more from the last, where the hardware's
 * prefetch starts again, so the one PREFETCH ahead of t is asked for (the
 * statistics took 16 ms of htru 10 s on one thread without, 5 ms with). */
static inline void ahead_of(const uint8_t *raw, int64_t t, int64_t step, int64_t n,
                            int64_t bytes)
{
    const int64_t a = t + PREFETCH * step;
    for (int64_t b = 0; a < n && b < bytes; b += 64)
        __builtin_prefetch(raw + a * bytes + b);
}

/* sums for unsigned 8-bit spectra of one IF, as 32-bit integers (fewer
 * than 1024 spectra of at most 255^2: they fit) in a loop that vectorises:
 * the same sums, as sums' doubles of integers are exact (it took a quarter
 * of the cleaning on one thread). */
static int64_t sums8(ddtk_cleaner *k, int nc, const uint8_t *raw, int64_t n, int64_t step,
                     const uint8_t *skip)
{
    uint32_t *restrict s = k->isum, *restrict q = k->isq;
    int64_t m = 0;
    memset(s, 0, (size_t)nc * sizeof *s);
    memset(q, 0, (size_t)nc * sizeof *q);
    for (int64_t t = 0; t < n; t += step) {
        ahead_of(raw, t, step, n, nc);
        if (skip && skip[t])
            continue;
        m++;
        const uint8_t *restrict r = raw + t * nc;
        for (int c = 0; c < nc; c++) {
            const uint32_t v = r[c];
            s[c] += v;
            q[c] += v * v;
        }
    }
    for (int c = 0; c < nc; c++) {
        k->sum[c] = k->dsum[c] = (double)s[c];
        k->dsq[c] = (double)q[c];
    }
    return m;
}

/* block_stats' sums in any format: every step-th of raw's n spectra but
 * those skipped as floats, per IF and of the detected rows, in doubles.
 * Returns the spectra summed. */
static int64_t sums(ddtk_cleaner *k, const ddtk_header *h, const uint8_t *raw, int64_t n,
                    int64_t step, const uint8_t *skip)
{
    const int nc = h->nchans, ni = h->nifs;
    double *restrict sum = k->sum, *restrict dsum = k->dsum, *restrict dsq = k->dsq;
    int64_t m = 0;
    memset(sum, 0, (size_t)ni * nc * sizeof *sum);
    memset(dsum, 0, (size_t)nc * sizeof *dsum);
    memset(dsq, 0, (size_t)nc * sizeof *dsq);
    for (int64_t t = 0; t < n; t += step) {
        ahead_of(raw, t, step, n, (int64_t)nc * ni * h->nbits / 8);
        if (skip && skip[t])
            continue;
        m++;
        spectrum(h, raw, t, k->spec);
        const float *restrict x = k->spec;
        for (int64_t v = 0; v < (int64_t)ni * nc; v++)
            sum[v] += x[v];
        for (int c = 0; c < nc; c++) {
            double d = detected(x, nc, ni, c);
            dsum[c] += d;
            dsq[c] += d * d;
        }
    }
    return m;
}

/* Per-IF means of every channel (the level of replaced samples: a block's
 * few outliers move it little, and integer data's median is biased by up to
 * half a step), the detection rows' mean and standard deviation, from every
 * step-th spectrum of the block (at least RFI_STATS_SPECTRA of them) but those
 * clipped (skip: NULL for none). */
static void block_stats(ddtk_cleaner *k, const ddtk_header *h, const uint8_t *raw, int64_t n,
                        const uint8_t *skip)
{
    const int nc = h->nchans, ni = h->nifs;
    const int64_t step = rfi_stats_step(n);
    const int64_t m = unsigned8(h) && ni == 1 ? sums8(k, nc, raw, n, step, skip)
                                              : sums(k, h, raw, n, step, skip);
    if (m == 0)                   /* every one clipped: the first pass's stand */
        return;
    for (int64_t v = 0; v < (int64_t)ni * nc; v++)
        k->med[v] = (float)(k->sum[v] / (double)m);
    for (int c = 0; c < nc; c++) {
        rfi_moments(k->dsum[c], k->dsq[c], m, &k->mean[c], &k->stat[c]);
        /* the zero-DM normalisation: a block's few impulses move the mean
         * and deviation little, and selection took most of the time */
        k->dmed[c] = k->mean[c];
        k->sig[c] = k->stat[c];
    }
}

typedef float lanes_f __attribute__((vector_size(RFI_LANES * sizeof(float))));

/* z[s] for the ns <= 4 spectra whose floats are x[s nc ...]: each one's
 * sum of w[c] x[c] less off, as RFI_LANES partial sums (each added in channel
 * order, then to the channels past the last whole RFI_LANES in double), so that
 * it vectorises; several spectra's chains go side by side, where one
 * spectrum's adds each waited for the last (four of 8-bit spectra: 15.5 ->
 * 7.8 ms of htru 10 s on one thread). */
static inline void zsums(const float *x, const float *w, int nc, double off, int ns, float *z)
{
    lanes_f acc[4] = { { 0 } };
    int c = 0;
    for (; c + RFI_LANES <= nc; c += RFI_LANES) {
        lanes_f wv;
        memcpy(&wv, w + c, sizeof wv);
        for (int s = 0; s < ns; s++) {
            lanes_f xv;
            memcpy(&xv, x + (int64_t)s * nc + c, sizeof xv);
            acc[s] += wv * xv;
        }
    }
    for (int s = 0; s < ns; s++) {
        double zt = -off;
        for (int i = c; i < nc; i++)
            zt += (double)w[i] * x[(int64_t)s * nc + i];
        for (int j = 0; j < RFI_LANES; j++)
            zt += acc[s][j];
        z[s] = (float)zt;
    }
}

/* Zero-DM outliers among the spectra of the block, over unflagged channels:
 * each spectrum's sum of (x - mean) / std is one weighted sum of its values
 * (RFI_LANES partial sums, so that it vectorises) less a constant. Marks them
 * in k->clip (clear on entry); returns how many. */
static int64_t clip_spectra(ddtk_cleaner *k, const ddtk_header *h, const uint8_t *raw, int64_t n)
{
    const int nc = h->nchans, ni = h->nifs;
    float *restrict w = k->wts, *z = k->scratch, med, sig;
    double off = 0;
    int live = 0;
    for (int c = 0; c < nc; c++) {
        w[c] = rfi_weight(k->flag[c], k->sig[c]);
        off += (double)w[c] * k->dmed[c];
        live += w[c] > 0;
    }
    if (live < 1)
        return 0;
    int64_t t = 0;
    if (unsigned8(h) && ni == 1)
        for (; t + 4 <= n; t += 4) {
            const uint8_t *restrict r = raw + t * nc;
            for (int64_t v = 0; v < 4 * (int64_t)nc; v++)
                k->spec[v] = (float)r[v];
            zsums(k->spec, w, nc, off, 4, z + t);
        }
    for (; t < n; t++) {
        spectrum(h, raw, t, k->spec);
        if (ni >= 2)
            for (int j = 0; j < nc; j++)
                k->spec[j] += k->spec[nc + j];
        zsums(k->spec, w, nc, off, 1, z + t);
    }
    robust(z, n, k->scratch + k->block, &med, &sig);
    if (!(sig > 0))
        return 0;
    int64_t clipped = 0;
    for (t = 0; t < n; t++)
        clipped += k->clip[t] = fabsf(z[t] - med) > (float)k->o.clip_sigma * sig;
    return clipped;
}

/* The level a replaced sample takes: the channel's mean over the block, or
 * for a channel flagged (or masked at the block's middle) the median of the
 * means of its nearest good neighbours, so that the RFI's own level does not
 * step from block to block in the dedispersed series. */
static void levels(ddtk_cleaner *k, const ddtk_header *h, int64_t n)
{
    const int nc = h->nchans, ni = h->nifs;
    const rfi_mask *m = &k->mask;
    const uint8_t *mrow = NULL;
    if (k->have_mask) {
        int64_t iv = (k->at + n / 2) / m->ptsperint;
        iv = iv >= m->numint ? m->numint - 1 : iv;
        /* a whole zapped interval says nothing of its channels */
        mrow = m->zap_int[iv] || memchr(m->chans + (size_t)iv * m->numchan, 0,
                                        (size_t)m->numchan) == NULL
               ? NULL : m->chans + (size_t)iv * m->numchan;
    }
    for (int c = 0; c < nc; c++)
        k->bad[c] = k->flag[c] || (k->have_mask && m->zap_chan[c]) || (mrow && mrow[c]);
    for (int i = 0; i < ni; i++) {
        const float *med = k->med + (size_t)i * nc;
        float *lev = k->level + (size_t)i * nc;
        for (int c = 0; c < nc; c++) {
            int got = 0;
            lev[c] = med[c];
            if (!k->bad[c])
                continue;
            for (int d = 1; d < nc && got < 8; d++)
                for (int o = c - d; o <= c + d && got < 8; o += 2 * d)
                    if (o >= 0 && o < nc && !k->bad[o])
                        k->diff[got++] = med[o];
            if (got)
                lev[c] = median_of(k->diff, got);
        }
    }
}

/* Whether channel c is zapped by the mask itself (its whole interval, its
 * interval's channels or the zapped channels) and takes PRESTO's padding. */
static inline int masked(const ddtk_cleaner *k, int c, int zap_all, const uint8_t *mrow)
{
    return k->mask.pad && (zap_all || mrow[c] || k->mask.zap_chan[c]);
}

/* Replace what the mask and the statistics flag by the channels' levels. */
static void replace(ddtk_cleaner *k, const ddtk_header *h, uint8_t *raw, int64_t n)
{
    const int nc = h->nchans, ni = h->nifs, byte = unsigned8(h), nbits = h->nbits,
              sgn = h->signed_data == 1;
    const rfi_mask *m = &k->mask;
    int64_t iv = -1;
    int nlist = 0, zap_all = 0;
    const uint8_t *mrow = NULL;
    for (int64_t t = 0; t < n; t++) {
        int64_t s = k->at + t;
        /* the channels to replace, listed again when the mask's interval changes */
        int64_t now = k->have_mask ? s / m->ptsperint : 0;
        if (now != iv) {
            iv = now;
            int64_t mi = iv >= m->numint ? m->numint - 1 : iv;
            mrow = k->have_mask ? m->chans + (size_t)mi * m->numchan : NULL;
            zap_all = k->have_mask && m->zap_int[mi];
            nlist = 0;
            for (int c = 0; c < nc; c++)
                if (k->flag[c] || (mrow && (mrow[c] || m->zap_chan[c])))
                    k->list[nlist++] = c;
            for (int i = 0; i < ni; i++)
                for (int j = 0; j < nlist; j++) {
                    int c = k->list[j];
                    const size_t at = (size_t)i * nlist + j;
                    k->lx[at] = masked(k, c, zap_all, mrow) ? m->pad[c]
                                                            : k->level[(size_t)i * nc + c];
                    if (byte)
                        dither_table(k->lx[at], &k->lfl[at], &k->lthr[at]);
                }
        }
        int all = k->clip[t] || zap_all, nrep = all ? nc : nlist;
        if (all)
            for (int c = 0; c < nc; c++)
                for (int i = 0; i < ni; i++)
                    rfi_put(raw, (t * ni + i) * nc + c, (s * ni + i) * nc + c,
                            masked(k, c, zap_all, mrow) ? m->pad[c] : k->level[(size_t)i * nc + c],
                            nbits, sgn);
        else if (byte)
            for (int i = 0; i < ni; i++)
                put8(raw + (t * ni + i) * nc, (s * ni + i) * nc, k->list,
                     k->lfl + (size_t)i * nlist, k->lthr + (size_t)i * nlist, nlist, k->vals);
        else
            for (int i = 0; i < ni; i++)
                for (int j = 0; j < nlist; j++)
                    rfi_put(raw, (t * ni + i) * nc + k->list[j], (s * ni + i) * nc + k->list[j],
                            k->lx[(size_t)i * nlist + j], nbits, sgn);
        k->rep.samples_masked += nrep;
        k->rep.spectra_clipped += k->clip[t];
    }
}

/* IQRM's flags of the block's channels (cleared first): outliers of
 * deviation or mean. */
static void flag_channels(ddtk_cleaner *k, int nc)
{
    memset(k->flag, 0, (size_t)nc);
    iqrm(k, nc, k->stat, k->flag);
    iqrm(k, nc, k->mean, k->flag);
}

/* Clean the n spectra of a block in place. */
static void clean_block(ddtk_cleaner *k, const ddtk_input *in, uint8_t *raw, int64_t n)
{
    const ddtk_header *h = &in->hdr;
    const int nc = h->nchans;
    memset(k->clip, 0, (size_t)n);
    memset(k->flag, 0, (size_t)nc);
    block_stats(k, h, raw, n, NULL);
    if (k->o.auto_rfi && n >= RFI_MIN_STATS) {
        flag_channels(k, nc);
        const int64_t clipped = clip_spectra(k, h, raw, n);
        /* Statistics again without the clipped spectra: a dropout's zeros
         * (a quarter of a block) would otherwise pull the channels' levels
         * down and their deviations up, and the replaced samples' level
         * would step at the block's edges. */
        if (clipped) {
            block_stats(k, h, raw, n, k->clip);
            flag_channels(k, nc);
        }
    }
    for (int c = 0; c < nc; c++) {
        k->rep.chan_blocks += k->flag[c];
        k->ever[c] |= k->flag[c];
    }
    k->rep.blocks++;
    levels(k, h, n);
    replace(k, h, raw, n);
    k->rep.samples += n * nc;
}

int ddtk_input_clean(ddtk_input *in, const ddtk_clean_opts *o)
{
    if (!o->auto_rfi && !o->mask)
        return DDTK_OK;
    ddtk_cleaner *k = ddtk_calloc(1, sizeof *k, "RFI cleaner");
    if (!k)
        return DDTK_ESYS;
    in->clean = k;
    k->o = *o;
    if (!(k->o.clip_sigma > 0))
        k->o.clip_sigma = RFI_CLIP_THRESHOLD;
    k->block = o->block > 0 ? o->block : DDTK_RFI_BLOCK;
    int rc = o->mask ? read_mask(&k->mask, o->mask, &in->hdr) : DDTK_OK;
    k->have_mask = o->mask != NULL;
    if (!rc && k->have_mask && o->block <= 0) {
        /* the intervals are the blocks, each a workspace: one longer than the
         * input is not this input's mask, and would only ask for memory */
        const int64_t most = in->nsamples > 0 ? in->nsamples : MASK_MOST_STREAMED;
        if (k->mask.ptsperint > most)
            rc = ddtk_fail(DDTK_EDATA, "%s: intervals of %d spectra, longer than %s (%lld)",
                           o->mask, k->mask.ptsperint,
                           in->nsamples > 0 ? in->name : "a streamed input's most",
                           (long long)most);
        k->block = k->mask.ptsperint;
    }
    k->block = (k->block + 7) / 8 * 8;   /* whole bytes of any sample format */
    return rc ? rc : work_alloc(k, &in->hdr);
}

/* The spectra at dst (nd of them) and then at tail (nt), from the
 * observation's spectrum at: their blocks cleaned where they are, on
 * several threads when there are several. With pos >= 0 each block is
 * first read, from the input's byte pos on, by the thread that cleans it,
 * so that the cleaning's passes find its spectra in that core's cache (read
 * first on threads of their own, the spectra crossed the memory once more
 * for the cleaning: a 16-core host's reads of 60 s of htru took 0.12 s
 * with the cleaning, 0.03 s without, 8 threads or 16); *have: the bytes
 * read, to the first short block. */
static int clean_blocks(ddtk_cleaner *k, const ddtk_input *in, uint8_t *dst, int64_t nd,
                        uint8_t *tail, int64_t nt, int64_t at, int64_t pos, size_t *have)
{
    const int64_t bits = in->bits_per_spectrum, bytes = ddtk_input_bytes(in, k->block);
    const int64_t bd = (nd + k->block - 1) / k->block, nb = bd + (nt + k->block - 1) / k->block;
    const int threads = nb < ddtk_threads() ? (int)nb : ddtk_threads();
    size_t *got = pos >= 0 ? ddtk_calloc((size_t)nb + 1, sizeof *got, "RFI blocks") : NULL;
    int rc = pos >= 0 && !got ? DDTK_ESYS : threads > 1 ? workers(k, &in->hdr, threads) : DDTK_OK;
    ddtk_thread_error err;
    ddtk_thread_error_init(&err);
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) schedule(dynamic)
    for (int64_t b = 0; b < nb; b++) {
        int t = omp_get_thread_num(), e;
        ddtk_cleaner *w = t ? &k->workers[t - 1] : k;
        const int64_t i = b < bd ? b : b - bd, left = (b < bd ? nd : nt) - i * k->block;
        uint8_t *p = (b < bd ? dst : tail) + i * bytes;
        int64_t n = left < k->block ? left : k->block;
        if (rc || ddtk_thread_error_code(&err))
            continue;
        if (pos >= 0
            && (e = ddtk_input_pread(in, pos + b * bytes, p, (size_t)ddtk_input_bytes(in, n),
                                     &got[b]))) {
            ddtk_thread_error_keep(&err, (int)b, e);
            continue;
        }
        n = pos >= 0 ? (int64_t)got[b] * 8 / bits : n;
        w->at = at + b * k->block;
        if (n > 0)
            clean_block(w, in, p, n);
    }
    rc = rc ? rc : ddtk_thread_error_end(&err);
    for (int64_t b = 0, full = 1; got && b < nb && full; b++) {
        *have += got[b];
        full = (int64_t)got[b] == bytes;
    }
    free(got);
    return rc;
}

/* Blocks for per blocks a thread: within AHEAD_BYTES, no more than the
 * input has left where its length is known, and at least one. */
static int64_t ahead(const ddtk_cleaner *k, const ddtk_input *in, int64_t per)
{
    const int64_t bytes = ddtk_input_bytes(in, k->block);
    int64_t n = per * ddtk_threads(), fit = AHEAD_BYTES / bytes;
    n = n < fit ? n : fit;
    if (in->nsamples >= 0) {
        int64_t left = (in->nsamples - k->first + k->block - 1) / k->block;
        n = n < left ? n : left;
    }
    return n > 1 ? n : 1;
}

/* The read-ahead, room for nb blocks at least (contents not kept). */
static int make_room(ddtk_cleaner *k, const ddtk_input *in, int64_t nb)
{
    if (nb <= k->room)
        return DDTK_OK;
    free(k->raw);
    k->room = 0;
    if (!(k->raw = ddtk_malloc((size_t)ddtk_input_bytes(in, nb * k->block), "RFI read-ahead")))
        return DDTK_ESYS;
    k->room = nb;
    return DDTK_OK;
}

/* nd spectra to dst, then nt to the read-ahead, read and cleaned a block a
 * thread from the input's position (clean_blocks); *have and *more: those
 * that came, the input moved past them. */
static int fetch(ddtk_cleaner *k, ddtk_input *in, uint8_t *dst, int64_t nd, int64_t nt,
                 int64_t *have, int64_t *more)
{
    int64_t pos, got = 0;
    size_t bytes = 0;
    int rc = ddtk_input_tell(in, &pos);
    if (!rc)
        rc = clean_blocks(k, in, dst, nd, k->raw, nt, k->first, pos, &bytes);
    if (!rc)
        rc = ddtk_input_pread_done(in, pos, (size_t)ddtk_input_bytes(in, nd + nt), bytes, &got);
    *have = got < nd ? got : nd;
    *more = got - *have;
    return rc;
}

/* Read and clean what comes next. Where the caller's n spectra give the
 * threads enough blocks (three quarters of one each at least), their whole
 * blocks are read and cleaned where they are (at dst) and the block their
 * end falls in goes to the read-ahead, cleaned in the same pass: the GPU's
 * gulps (16 blocks of htru, not aligned to them) then copy a block at most,
 * not the whole gulp (on a 16-core host that copy, with the read, was the
 * cleaner's pace: 0.17 s of host reads for 60 s of htru against 0.14 s of
 * GPU kernels). Else blocks for AHEAD_PER_THREAD a thread go to the
 * read-ahead (a few each balance blocks of unequal cost). *got: the
 * spectra cleaned at dst; 0 when they all went to the read-ahead (k->have)
 * or there were none. */
static int refill(ddtk_cleaner *k, ddtk_input *in, uint8_t *dst, int64_t n, int64_t *got,
                  int (*read)(ddtk_input *, uint8_t *, int64_t, int64_t *))
{
    *got = 0;
    k->first += k->have;
    k->have = k->used = 0;
    /* An input of unknown length (a pipe) may be a live stream: no reading
     * past the caller's read there, whose spectra would wait for the next. */
    const int live = in->nsamples < 0;
    const int64_t whole = n / k->block, part = !live && n % k->block;
    const int direct = live ? whole >= 1 : 4 * (whole + part) >= 3 * ahead(k, in, 1);
    const int64_t nb = direct ? whole : live ? 1 : ahead(k, in, AHEAD_PER_THREAD);
    const int64_t nt = direct ? part : nb;
    const int64_t want = (nb * direct + nt) * k->block;
    int rc = make_room(k, in, nt);
    int64_t have = 0, more = 0;
    if (!rc && ddtk_input_positional(in))
        rc = fetch(k, in, direct ? dst : NULL, nb * direct * k->block, nt * k->block, &have, &more);
    else {
        if (!rc && direct)
            rc = read(in, dst, nb * k->block, &have);
        if (!rc && nt && have == nb * k->block * direct)
            rc = read(in, k->raw, nt * k->block, &more);
        if (!rc && have + more)
            rc = clean_blocks(k, in, dst, have, k->raw, more, k->first, -1, NULL);
    }
    if (rc)
        return rc;
    k->eof = have + more < want;
    k->first += have;
    *got = have;
    k->have = more;
    return DDTK_OK;
}

/* bytes from src to dst, in COPY_CHUNK parts on several threads when they
 * are many (as input.c's large reads): once the cleaning is spread over
 * every thread, one thread's copy of each gulp is no longer small beside it. */
static void copy_out(uint8_t *dst, const uint8_t *src, size_t bytes)
{
    const size_t nparts = (bytes + COPY_CHUNK - 1) / COPY_CHUNK;
    const int threads = nparts < (size_t)ddtk_threads() ? (int)nparts : ddtk_threads();
#pragma omp parallel for num_threads(threads > 1 ? threads : 1) schedule(static)
    for (size_t i = 0; i < nparts; i++) {
        size_t at = i * COPY_CHUNK;
        memcpy(dst + at, src + at, bytes - at < COPY_CHUNK ? bytes - at : COPY_CHUNK);
    }
}

int ddtk_clean_read(ddtk_input *in, uint8_t *raw, int64_t n, int64_t *got,
                    int (*read)(ddtk_input *, uint8_t *, int64_t, int64_t *))
{
    ddtk_cleaner *k = in->clean;
    const int64_t bits = in->bits_per_spectrum;
    *got = 0;
    while (*got < n) {
        if (k->used == k->have) {
            if (k->eof)
                break;
            /* (whole bytes: blocks and the dd tools' reads are multiples of
             * 8 spectra) */
            int64_t direct;
            int rc = refill(k, in, raw + *got * bits / 8, n - *got, &direct, read);
            if (rc)
                return rc;
            *got += direct;
            if (direct || k->have == 0)
                continue;
        }
        int64_t m = n - *got < k->have - k->used ? n - *got : k->have - k->used;
        copy_out(raw + *got * bits / 8, k->raw + k->used * bits / 8, (size_t)(m * bits / 8));
        k->used += m;
        *got += m;
    }
    return DDTK_OK;
}

int ddtk_clean_eof(const ddtk_input *in)
{
    const ddtk_cleaner *k = in->clean;
    return k->eof && k->used == k->have;
}

int64_t ddtk_clean_delivered(const ddtk_input *in)
{
    const ddtk_cleaner *k = in->clean;
    return k->first + k->used;
}

int ddtk_clean_geometry(const ddtk_input *in, ddtk_clean_geom *g)
{
    const ddtk_cleaner *k = in->clean;
    if (!k || !k->o.auto_rfi || k->have_mask || k->device || k->first || k->have
        || in->samples_read)
        return 0;
    g->nchans = in->hdr.nchans;
    g->nifs = in->hdr.nifs;
    g->nbits = in->hdr.nbits;
    g->sgn = in->hdr.signed_data == 1;
    g->block = k->block;
    g->clip_sigma = k->o.clip_sigma;
    return 1;
}

/* r's counts added to to's. */
static void report_add(ddtk_rfi_report *to, const ddtk_rfi_report *r)
{
    to->blocks += r->blocks;
    to->chan_blocks += r->chan_blocks;
    to->spectra_clipped += r->spectra_clipped;
    to->samples += r->samples;
    to->samples_masked += r->samples_masked;
}

void ddtk_clean_hand_over(ddtk_input *in)
{
    in->clean->device = 1;
}

int ddtk_clean_on_device(const ddtk_input *in)
{
    return in->clean->device;
}

/* The host's cleaner goes on where the device's stopped: its next block is
 * the one after what was delivered. */
void ddtk_clean_take_back(ddtk_input *in, const ddtk_rfi_report *r, const uint8_t *ever)
{
    ddtk_cleaner *k = in->clean;
    k->device = 0;
    k->first = in->samples_read;
    k->have = k->used = 0;
    k->eof = in->eof;
    report_add(&k->rep, r);
    for (int c = 0; c < in->hdr.nchans; c++)
        k->ever[c] |= ever[c];
}

void ddtk_input_clean_report(const ddtk_input *in, ddtk_rfi_report *r)
{
    const ddtk_cleaner *k = in->clean;
    memset(r, 0, sizeof *r);
    if (!k)
        return;
    *r = k->rep;
    for (int i = 0; i < k->nworkers; i++)
        report_add(r, &k->workers[i].rep);
    for (int c = 0; c < in->hdr.nchans; c++) {
        int ever = k->ever[c];
        for (int i = 0; i < k->nworkers; i++)
            ever |= k->workers[i].ever[c];
        r->chans_ever += ever;
    }
}

void ddtk_cleaner_free(ddtk_cleaner *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->nworkers; i++)
        work_free(&k->workers[i]);
    free(k->workers);
    free(k->mask.zap_chan);
    free(k->mask.zap_int);
    free(k->mask.chans);
    free(k->mask.pad);
    free(k->raw);
    work_free(k);
    free(k);
}
