/*
 * output.c - dedispersed time series: SIGPROC .tim and PRESTO .dat + .inf.
 *
 * An output set is all or nothing. Every file is written under a hidden
 * temporary in its final directory (tempfile.c); at the end all of them are
 * completed, flushed and fsynced, and only then renamed into place, one by
 * one, in turn with other runs in the directory. If a rename fails, the
 * files this run already renamed are removed, so a failed run leaves none of
 * its outputs. Existing outputs are refused unless --force is given, also
 * when they appear while the run is going (another run on the same prefix).
 */
#define _GNU_SOURCE               /* sync_file_range */
#include "inf.h"
#include "tempfile.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <pwd.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- SIGPROC .tim -------------------------------------------------------- */

int ddtk_tim_header_write(FILE *fp, const ddtk_series_meta *m, double dm)
{
    const ddtk_header *in = m->in;
    ddtk_header h;
    ddtk_header_init(&h);
#define CARRY(key) do { h.key = in->key; ddtk_header_mark(&h, #key); } while (0)
#define SET(key, value) do { h.key = (value); ddtk_header_mark(&h, #key); } while (0)
    memcpy(h.source_name, in->source_name, sizeof h.source_name);
    ddtk_header_mark(&h, "source_name");
    CARRY(telescope_id);
    CARRY(machine_id);
    CARRY(src_raj);
    CARRY(src_dej);
    CARRY(az_start);
    CARRY(za_start);
    SET(data_type, 2);
    SET(refdm, dm);
    SET(fch1, m->fref);
    CARRY(barycentric);
    SET(nchans, 1);
    SET(nbits, m->nbits ? m->nbits : 32);
    CARRY(tstart);
    SET(tsamp, m->tsamp);
    SET(nifs, 1);
    if (ddtk_header_has(in, "nbeams"))
        CARRY(nbeams);
    if (ddtk_header_has(in, "ibeam"))
        CARRY(ibeam);
#undef CARRY
#undef SET
    return ddtk_header_write(fp, &h);
}

/* ---- output lengths ------------------------------------------------------- */

const char *const ddtk_length_names[] = { "auto", "exact", "even", "fft", NULL };

int64_t ddtk_good_length(int64_t n)
{
    int64_t best = INT64_MAX;
    for (int64_t p7 = 1; p7 < 2 * n; p7 *= 7)
        for (int64_t p5 = p7; p5 < 2 * n; p5 *= 5)
            for (int64_t p3 = p5; p3 < 2 * n; p3 *= 3) {
                int64_t m = 2 * p3;
                while (m < n)
                    m *= 2;
                if (m < best)
                    best = m;
            }
    return best;
}

int ddtk_outspec_length(const ddtk_outspec *spec)
{
    if (spec->length != DDTK_LEN_AUTO)
        return spec->length;
    return spec->format == DDTK_FMT_DAT ? DDTK_LEN_FFT : DDTK_LEN_EXACT;
}

/* ---- PRESTO .inf --------------------------------------------------------- */

static double beam_arcsec(int telescope_id, double fcentre_mhz)
{
    static const struct { int id; double diameter_m; } dish[] = {
        { 1, 225.0 }, { 4, 64.0 }, { 5, 76.0 }, { 6, 100.0 }, { 7, 45.0 }, { 8, 100.0 },
        { 10, 64.0 }, { 21, 300.0 }, { 64, 13.5 },
    };
    for (size_t i = 0; i < sizeof dish / sizeof dish[0]; i++)
        if (dish[i].id == telescope_id && fcentre_mhz > 0)
            return 1.2 * (299.792458 / fcentre_mhz) / dish[i].diameter_m * 206264.806;
    return 0.0;
}

static void inf_line(FILE *fp, const char *label, const char *value)
{
    fprintf(fp, " %-39s=  %s\n", label, value && *value ? value : "Unknown");
}

static void format_epoch(double mjd, char *out, size_t n)
{
    double whole = floor(mjd);
    char frac[32];
    snprintf(frac, sizeof frac, "%.15f", mjd - whole);
    if (frac[0] == '1') {
        whole += 1;
        snprintf(frac, sizeof frac, "%.15f", 0.0);
    }
    snprintf(out, n, "%.0f%s", whole, frac + 1);
}

/* Set by the program (the tools: $USER, as the shell sees it); kept, not copied. */
static const char *analyst;

void ddtk_set_analyst(const char *name)
{
    analyst = name;
}

/* PRESTO (backend_common.c) takes the user's login name from the password
 * database; the name the program set first. */
static const char *analyzer(void)
{
    if (analyst && *analyst)
        return analyst;
    const struct passwd *pw = getpwuid(geteuid());
    return pw ? pw->pw_name : NULL;
}

/* PRESTO's readinf reads notes with fgets(100): a longer line is split and
 * its rest lost. Lines are wrapped at a space (or cut) to fit. */
static void inf_notes(FILE *fp, const char *notes)
{
    const size_t indent = 4, room = DDTK_INF_NOTE_MAX - indent;
    while (*notes) {
        size_t len = strcspn(notes, "\n"), take = len;
        if (take > room) {
            take = room;
            while (take > room / 2 && notes[take] != ' ')
                take--;
            if (notes[take] != ' ')
                take = room;
        }
        fprintf(fp, "%*s%.*s\n", (int)indent, "", (int)take, notes);
        notes += take;
        while (*notes == ' ')
            notes++;
        if (*notes == '\n')
            notes++;
    }
}

/* The breaks line and, for a padded series, prepdata's two On/Off pairs. */
static void inf_breaks(FILE *fp, int64_t nsamples, int64_t nvalid)
{
    int breaks = nvalid > 0 && nvalid < nsamples;
    inf_line(fp, "Any breaks in the data? (1 yes, 0 no)", breaks ? "1" : "0");
    if (!breaks)
        return;
    fprintf(fp, " On/Off bin pair #%3d                   =  %-11.0f, %-11.0f\n", 1, 0.0,
            (double)(nvalid - 1));
    fprintf(fp, " On/Off bin pair #%3d                   =  %-11.0f, %-11.0f\n", 2,
            (double)(nsamples - 1), (double)(nsamples - 1));
}

void ddtk_inf_print(FILE *fp, const char *basename, const ddtk_series_meta *m,
                    double dm, int64_t nsamples, int64_t nvalid)
{
    const ddtk_header *in = m->in;
    char v[128];
    inf_line(fp, "Data file name without suffix", basename);
    inf_line(fp, "Telescope used", in->telescope_id ? ddtk_telescope_name(in->telescope_id) : "");
    inf_line(fp, "Instrument used", in->machine_id ? ddtk_machine_name(in->machine_id) : "");
    inf_line(fp, "Object being observed", in->source_name);
    ddtk_format_sexagesimal(in->src_raj, v, sizeof v);
    inf_line(fp, "J2000 Right Ascension (hh:mm:ss.ssss)", v);
    ddtk_format_sexagesimal(in->src_dej, v, sizeof v);
    inf_line(fp, "J2000 Declination     (dd:mm:ss.ssss)", v);
    inf_line(fp, "Data observed by", "");
    format_epoch(in->tstart, v, sizeof v);
    inf_line(fp, "Epoch of observation (MJD)", v);
    inf_line(fp, "Barycentered?           (1 yes, 0 no)", in->barycentric ? "1" : "0");
    snprintf(v, sizeof v, "%-11.0f", (double)nsamples);
    inf_line(fp, "Number of bins in the time series", v);
    snprintf(v, sizeof v, "%.15g", m->tsamp);
    inf_line(fp, "Width of each time series bin (sec)", v);
    inf_breaks(fp, nsamples, nvalid);
    inf_line(fp, "Type of observation (EM band)", "Radio");
    snprintf(v, sizeof v, "%.6g", beam_arcsec(in->telescope_id, m->flow + m->bandwidth / 2));
    inf_line(fp, "Beam diameter (arcsec)", v);
    snprintf(v, sizeof v, "%.12g", dm);
    inf_line(fp, "Dispersion measure (cm-3 pc)", v);
    snprintf(v, sizeof v, "%.12g", m->flow);
    inf_line(fp, "Central freq of low channel (MHz)", v);
    snprintf(v, sizeof v, "%.12g", m->bandwidth);
    inf_line(fp, "Total bandwidth (MHz)", v);
    snprintf(v, sizeof v, "%d", m->nchans);
    inf_line(fp, "Number of channels", v);
    snprintf(v, sizeof v, "%.12g", m->chan_bw);
    inf_line(fp, "Channel bandwidth (MHz)", v);
    inf_line(fp, "Data analyzed by", analyzer());
    fprintf(fp, " Any additional notes:\n");
    inf_notes(fp, m->notes ? m->notes : "");
}

/* The metadata of output i: a scrunched series has its own sample time. */
/* A scrunched series (factor f) holds sums of f samples: its divisor is f
 * times the run's, which keeps the largest sum in range. */
static ddtk_series_meta file_meta(const ddtk_outset *o, int i)
{
    ddtk_series_meta m = o->meta;
    if (m.downsamp) {
        m.tsamp *= m.downsamp[i];
        m.scale *= m.downsamp[i];
    }
    return m;
}

/* ---- integer output ------------------------------------------------------- */

double ddtk_integer_scale(double largest, int nbits)
{
    double scale = 1, top = ldexp(1.0, nbits) - 1;
    while (largest / scale > top)
        scale *= 2;
    return scale;
}

uint32_t ddtk_quantise(double x, double scale, int nbits)
{
    return (uint32_t)fmin(fmax(round(x / scale), 0.0), ldexp(1.0, nbits) - 1);
}

static int bytes_per_sample(const ddtk_outset *o)
{
    return o->meta.nbits == 8 || o->meta.nbits == 16 ? o->meta.nbits / 8 : 4;
}

/* ddtk_quantise for float samples, inlined and vectorised: floor(v + 0.5)
 * is round(v) exactly for float v (v + 0.5 needs no more than 53 bits below
 * the clamp), and the comparisons send NaN to 0 as fmax does. Per sample the
 * library call cost 20 ns (22 s of a 1196-DM htru run); scalar, 2.4 ns.
 * zero is the level of x = 0 (noise scaling); clamped samples are counted. */
#define QUANTISE(type, x, n, scale, zero, top, out, clipped) do {       \
        for (size_t t_ = 0; t_ < (n); t_++) {                           \
            double v_ = floor((double)(x)[t_] / (scale) + (zero) + 0.5); \
            (clipped) += !(v_ >= 0) | (v_ > (top));                     \
            v_ = v_ > 0 ? v_ : 0;                                       \
            (out)[t_] = (type)(v_ < (top) ? v_ : (top));                \
        }                                                               \
    } while (0)

static int64_t quantise(const float *restrict x, size_t n, double scale, double zero,
                        int nbits, void *restrict out)
{
    const double top = ldexp(1.0, nbits) - 1;
    int64_t clipped = 0;
    if (nbits == 8)
        QUANTISE(uint8_t, x, n, scale, zero, top, (uint8_t *)out, clipped);
    else
        QUANTISE(uint16_t, x, n, scale, zero, top, (uint16_t *)out, clipped);
    return clipped;
}

/* n samples of series i as the file holds them: float32, or quantised. */
static size_t put_samples(ddtk_outset *o, ddtk_series_file *f, const float *x, int64_t n)
{
    int bytes = bytes_per_sample(o);
    if (bytes == 4)
        return fwrite(x, sizeof *x, (size_t)n, f->fp);
    uint16_t buf[4096];
    size_t put = 0, most = sizeof buf / (size_t)bytes;
    while (put < (size_t)n) {
        size_t len = (size_t)n - put < most ? (size_t)n - put : most;
        f->clipped += quantise(x + put, len, f->scale, f->zero, o->meta.nbits, buf);
        size_t done = fwrite(buf, (size_t)bytes, len, f->fp);
        put += done;
        if (done != len)
            break;
    }
    return put;
}

/* ---- blocks: SIGPROC's baseline, the noise of integer output ---------------------- */

static int noise_scaled(const ddtk_outset *o)
{
    return (o->meta.nbits == 8 || o->meta.nbits == 16) && o->meta.quant == DDTK_QUANT_NOISE;
}

/* The first block sets an integer series' scale to its noise (baselined:
 * about 0; otherwise about the block's median). A noiseless series keeps 1. */
static void set_noise_scale(ddtk_outset *o, ddtk_series_file *f, double base, float *scratch)
{
    int nbits = o->meta.nbits;
    double sigma = ddtk_robust_sigma(f->block, f->held, base, scratch);
    f->scale = sigma > 0 && isfinite(sigma) ? sigma / DDTK_QUANT_SIGMA(nbits) : 1.0;
    f->zero = DDTK_QUANT_MID(nbits) - base / f->scale;
}

/* Write the held block: less its median (a full one, or a first short one),
 * or the last full block's median (a short last one, as dedisperse). */
static int put_block(ddtk_outset *o, ddtk_series_file *f)
{
    float *scratch = ddtk_malloc((size_t)f->held * sizeof *scratch, "baseline block");
    if (!scratch)
        return DDTK_ESYS;
    if (f->held == o->block || f->nblocks == 0)
        f->offset = ddtk_block_median(f->block, f->held, scratch);
    int baseline = o->spec.baseline;
    if (baseline)
        for (int64_t t = 0; t < f->held; t++)
            f->block[t] -= f->offset;
    if (f->nblocks == 0 && noise_scaled(o))
        set_noise_scale(o, f, baseline ? 0.0 : f->offset, scratch);
    free(scratch);
    size_t put = put_samples(o, f, f->block, f->held);
    if (put != (size_t)f->held)
        return ddtk_fail(DDTK_ESYS, "%s: write error: %s", f->path ? f->path : "stdout",
                         strerror(errno));
    f->held = 0;
    f->nblocks++;
    return DDTK_OK;
}

static int write_blocked(ddtk_outset *o, ddtk_series_file *f, const float *x, int64_t n)
{
    if (!f->block && !(f->block = ddtk_malloc((size_t)o->block * sizeof *f->block,
                                              "baseline block")))
        return DDTK_ESYS;
    while (n > 0) {
        int64_t take = o->block - f->held < n ? o->block - f->held : n;
        memcpy(f->block + f->held, x, (size_t)take * sizeof *x);
        f->held += take;
        x += take;
        n -= take;
        if (f->held == o->block) {
            int rc = put_block(o, f);
            if (rc)
                return rc;
        }
    }
    return DDTK_OK;
}

/* Every series' last, short block; the clamped samples counted. */
static int end_blocks(ddtk_outset *o)
{
    int rc = DDTK_OK;
    for (int i = 0; i < o->n; i++) {
        ddtk_series_file *f = &o->f[i];
        if (!rc && f->held > 0)
            rc = put_block(o, f);
        free(f->block);
        f->block = NULL;
        o->clipped += f->clipped;
        o->quantised += f->nwritten;
    }
    if (bytes_per_sample(o) == 4)
        o->quantised = 0;
    return rc;
}

/* ---- writeback while the run computes ---------------------------------------- */

/* Every 25 ms a thread of the output set hands the temporaries' written
 * pages to the disk (sync_file_range starts their writeback and returns).
 * Left to the page cache, writeback started at the commit's fsyncs and the
 * disk idled while the run computed (H100 host, htru's 1196 8-bit files:
 * 1.14-1.28 s, 0.93-1.05 s with this thread, dd of as many bytes 0.88-1.15
 * s). Only this thread waits where the disk's queue is full: started from
 * the writers' threads, the writeback held them up and gained nothing.
 * Errors come back from the commit's fsyncs. */
#define WRITEBACK_PERIOD_NS 25000000L
struct ddtk_flusher {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int stop;            /* read unlocked between files: a stop is prompt */
    int n;
    int fd[];
};

static void *flush_loop(void *arg)
{
    ddtk_flusher *fl = arg;
    pthread_mutex_lock(&fl->mu);
    while (!fl->stop) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_nsec += WRITEBACK_PERIOD_NS;
        t.tv_sec += t.tv_nsec / 1000000000L;
        t.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&fl->cv, &fl->mu, &t);
        pthread_mutex_unlock(&fl->mu);
        for (int i = 0; i < fl->n && !fl->stop; i++)
            sync_file_range(fl->fd[i], 0, 0, SYNC_FILE_RANGE_WRITE);
        pthread_mutex_lock(&fl->mu);
    }
    pthread_mutex_unlock(&fl->mu);
    return NULL;
}

/* Without a thread the outputs are only written later: nothing fails. */
static void start_flusher(ddtk_outset *o)
{
    ddtk_flusher *fl = malloc(sizeof *fl + (size_t)o->n * sizeof fl->fd[0]);
    if (!fl)
        return;
    fl->stop = 0;
    fl->n = o->n;
    for (int i = 0; i < o->n; i++)
        fl->fd[i] = fileno(o->f[i].fp);
    pthread_mutex_init(&fl->mu, NULL);
    pthread_cond_init(&fl->cv, NULL);
    if (pthread_create(&fl->thread, NULL, flush_loop, fl) != 0) {
        pthread_cond_destroy(&fl->cv);
        pthread_mutex_destroy(&fl->mu);
        free(fl);
        return;
    }
    o->flusher = fl;
}

/* Before the files are closed: the thread holds their descriptors. */
static void stop_flusher(ddtk_outset *o)
{
    ddtk_flusher *fl = o->flusher;
    if (!fl)
        return;
    pthread_mutex_lock(&fl->mu);
    fl->stop = 1;
    pthread_cond_signal(&fl->cv);
    pthread_mutex_unlock(&fl->mu);
    pthread_join(fl->thread, NULL);
    pthread_cond_destroy(&fl->cv);
    pthread_mutex_destroy(&fl->mu);
    free(fl);
    o->flusher = NULL;
}

/* ---- output sets ---------------------------------------------------------- */

static char *name_for(const char *prefix, double dm, const char *ext)
{
    size_t n = strlen(prefix) + 64;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s_DM%.2f.%s", prefix, dm, ext);
    return s;
}

static int by_path(const void *a, const void *b)
{
    return strcmp((*(const ddtk_series_file *const *)a)->path,
                  (*(const ddtk_series_file *const *)b)->path);
}

/* Two DMs of the list, anywhere in it, that give one name would overwrite
 * each other: found by sorting the names, before any work is done. */
static int check_unique(ddtk_outset *o)
{
    ddtk_series_file **f = ddtk_malloc((size_t)o->n * sizeof *f, "output names");
    if (!f)
        return DDTK_ESYS;
    for (int i = 0; i < o->n; i++)
        f[i] = &o->f[i];
    qsort(f, (size_t)o->n, sizeof *f, by_path);
    int rc = DDTK_OK;
    for (int i = 1; i < o->n && !rc; i++)
        if (strcmp(f[i]->path, f[i - 1]->path) == 0)
            rc = ddtk_fail(DDTK_EUSAGE, "DMs %.6g and %.6g both give the name %s: PRESTO "
                           "names carry two decimals; use a coarser DM step or drop the "
                           "repeated DM", f[i - 1]->dm, f[i]->dm, f[i]->path);
    free(f);
    return rc;
}

static int check_names(ddtk_outset *o)
{
    int rc = check_unique(o);
    if (rc)
        return rc;
    for (int i = 0; i < o->n; i++) {
        const char *path = o->f[i].path;
        struct stat st;
        if (!o->spec.force && stat(path, &st) == 0 && !ddtk_temp_is_special(path))
            return ddtk_fail(DDTK_EUSAGE, "%s: exists (overwriting it needs force)", path);
        if (!o->spec.force && o->f[i].inf && stat(o->f[i].inf, &st) == 0)
            return ddtk_fail(DDTK_EUSAGE, "%s: .inf exists (overwriting it needs force)", path);
    }
    return DDTK_OK;
}

static int name_outputs(ddtk_outset *o, const char *output, const char *prefix)
{
    const char *ext = o->spec.format == DDTK_FMT_DAT ? "dat" : "tim";
    if (output && o->n > 1)
        return ddtk_fail(DDTK_EUSAGE, "an output name is for a single DM; "
                         "use a prefix for %d DMs", o->n);
    for (int i = 0; i < o->n; i++) {
        ddtk_series_file *f = &o->f[i];
        f->path = output ? strdup(output) : name_for(prefix, f->dm, ext);
        if (!f->path || (o->spec.format == DDTK_FMT_DAT && !(f->inf = ddtk_inf_path(f->path))))
            return ddtk_fail(DDTK_ESYS, "out of memory");
    }
    for (int i = 1; i < o->n; i++)
        if (fabs(o->f[i].dm - o->f[i - 1].dm) < 0.01) {
            ddtk_report(DDTK_MSG_WARNING, "DM step %.4g is below 0.01: file names (%%.2f) cannot "
                        "tell these DMs apart", fabs(o->f[i].dm - o->f[i - 1].dm));
            break;
        }
    return check_names(o);
}

static const char *last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Whether a stale temporary's final name belongs to this set's scheme: with
 * -o, the output or its .inf; else "<prefix>_DM....tim|.dat|.inf". */
static int owned_name(const char *name, const void *ctx)
{
    const ddtk_outset *o = ctx;
    const char *mine = last_component(o->f[0].path);
    if (o->spec.output)
        return strcmp(name, mine) == 0
            || (o->f[0].inf && strcmp(name, last_component(o->f[0].inf)) == 0);
    const char *dm = strstr(mine, "_DM"), *next;
    while (dm && (next = strstr(dm + 1, "_DM")))
        dm = next;
    return dm && strncmp(name, mine, (size_t)(dm - mine) + 3) == 0
        && (ddtk_ends_with(name, ".tim") || ddtk_ends_with(name, ".dat") || ddtk_ends_with(name, ".inf"));
}

/* Temporaries for every output (and a .tim header in each), created while
 * the directory is locked, after removing those of dead runs. */
static int create_files(ddtk_outset *o)
{
    int special = ddtk_temp_is_special(o->f[0].path), rc = DDTK_OK;
    int lock = special ? -1 : ddtk_tempdir_lock(o->f[0].path);
    if (lock >= 0)
        ddtk_temp_sweep(o->f[0].path, owned_name, o);
    for (int i = 0; i < o->n && !rc; i++) {
        ddtk_series_file *f = &o->f[i];
        ddtk_series_meta m = file_meta(o, i);
        if (!(f->fp = ddtk_temp_open(f->path, &f->tmp))) {
            rc = DDTK_ESYS;
            break;
        }
        setvbuf(f->fp, NULL, _IOFBF, 1 << 16);
        if (o->spec.format == DDTK_FMT_TIM)
            rc = ddtk_tim_header_write(f->fp, &m, f->dm);
    }
    ddtk_tempdir_unlock(lock);
    return rc;
}

/* "-o -": the one .tim series goes to stdout, as with neither -o nor --prefix. */
static int wants_stdout(int ndm, const ddtk_outspec *spec)
{
    if (spec->output)
        return strcmp(spec->output, "-") == 0 && ndm == 1;
    return ndm == 1 && !spec->prefix;
}

int ddtk_outset_open(ddtk_outset *o, const double *dms, int ndm,
                     const ddtk_outspec *spec, const ddtk_series_meta *meta)
{
    int rc, format = spec->format;
    memset(o, 0, sizeof *o);
    o->n = ndm;
    o->spec = *spec;
    o->meta = *meta;
    o->f = ddtk_calloc((size_t)ndm, sizeof *o->f, "output files");
    if (!o->f)
        return DDTK_ESYS;
    for (int i = 0; i < ndm; i++) {
        o->f[i].dm = dms[i];
        o->f[i].scale = file_meta(o, i).scale;
    }
    /* .dat files hold prepdata's raw sums; the sum scaling keeps them raw too. */
    if (format == DDTK_FMT_DAT || (meta->nbits != 32 && meta->nbits && meta->quant == DDTK_QUANT_SUM))
        o->spec.baseline = 0;
    o->block = ddtk_baseline_block(meta->nchans);
    o->blocked = o->spec.baseline || noise_scaled(o);
    if (meta->nbits && meta->nbits != 32 && format == DDTK_FMT_DAT) {
        rc = ddtk_fail(DDTK_EUSAGE, "output bits %d: PRESTO .dat files hold float32; "
                       ".tim files hold integers", meta->nbits);
        goto fail;
    }
    if (spec->discard)
        return DDTK_OK;         /* no files: writes only count samples */
    if (wants_stdout(ndm, spec) && format == DDTK_FMT_TIM) {
        o->to_stdout = 1;
        o->f[0].fp = stdout;
        ddtk_series_meta m = file_meta(o, 0);
        return ddtk_tim_header_write(stdout, &m, dms[0]);
    }
    if (wants_stdout(ndm, spec) && spec->output) {
        rc = ddtk_fail(DDTK_EUSAGE, "output -: a PRESTO .dat and its .inf cannot go to stdout; "
                       "name a file");
        goto fail;
    }
    if ((rc = name_outputs(o, spec->output,
                           spec->prefix ? spec->prefix : spec->default_prefix))
        || (rc = create_files(o)))
        goto fail;
    start_flusher(o);
    return DDTK_OK;
fail:
    ddtk_outset_abort(o);
    return rc;
}

int ddtk_outset_write(ddtk_outset *o, int i, const float *x, int64_t n)
{
    ddtk_series_file *f = &o->f[i];
    if (n > 0 && !o->spec.discard && o->blocked) {
        int rc = write_blocked(o, f, x, n);
        if (rc)
            return rc;
    } else if (n > 0 && !o->spec.discard && put_samples(o, f, x, n) != (size_t)n)
        return ddtk_fail(DDTK_ESYS, "%s: write error: %s",
                         f->path ? f->path : "stdout", strerror(errno));
    f->nwritten += n;
    if (!f->padded)
        f->nvalid = f->nwritten;
    return DDTK_OK;
}

int ddtk_outset_pad(ddtk_outset *o, int i, float value, int64_t n)
{
    o->f[i].padded |= n > 0;
    float chunk[4096];
    int64_t len = n < 4096 ? n : 4096;
    for (int64_t t = 0; t < len; t++)
        chunk[t] = value;
    for (int64_t done = 0; done < n; done += len) {
        int rc = ddtk_outset_write(o, i, chunk, n - done < len ? n - done : len);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

/* The .inf of output i, complete and on disk under its temporary (beside
 * the .dat's, so that it lives as long as that one). */
static int write_inf(ddtk_outset *o, int i)
{
    ddtk_series_file *f = &o->f[i];
    ddtk_series_meta m = file_meta(o, i);
    char *base = strdup(last_component(f->path));
    if (!base)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    if (ddtk_ends_with(base, ".dat") && strlen(base) > 4)
        base[strlen(base) - 4] = '\0';
    FILE *fp = f->tmp ? ddtk_temp_open_beside(f->tmp, ".inf", f->inf, &f->inf_tmp)
                      : ddtk_temp_open(f->inf, &f->inf_tmp);
    int rc = fp ? DDTK_OK : DDTK_ESYS;
    if (fp) {
        ddtk_inf_print(fp, base, &m, f->dm, f->nwritten, f->nvalid);
        rc = ddtk_temp_flush(fp, f->inf_tmp, f->inf);
        if (fclose(fp) != 0 && !rc)
            rc = ddtk_fail(DDTK_ESYS, "%s: write error: %s", f->inf, strerror(errno));
    }
    free(base);
    return rc;
}

/* Everything complete and on disk before the first rename: every temporary
 * flushed and fsynced, then the .inf files. The syncs run on SYNC_THREADS
 * threads: one by one, 1196 fsyncs took 1.9 s of an 8-bit htru run on the
 * H100 host's disk, where the file system batches concurrent ones. */
#define SYNC_THREADS 8
static int finish_files(ddtk_outset *o)
{
    ddtk_thread_error err;
    ddtk_thread_error_init(&err);
#pragma omp parallel for num_threads(SYNC_THREADS) schedule(dynamic)
    for (int i = 0; i < o->n; i++) {
        ddtk_series_file *f = &o->f[i];
        int rc = ddtk_thread_error_code(&err) ? DDTK_OK : ddtk_temp_flush(f->fp, f->tmp, f->path);
        if (rc)
            ddtk_thread_error_keep(&err, i, rc);
    }
    int rc = ddtk_thread_error_end(&err);
    for (int i = 0; i < o->n && !rc; i++)
        if (o->f[i].inf)
            rc = write_inf(o, i);
    return rc;
}

/* After a failed commit: remove what this run had renamed into place
 * (a committed temporary is NULL; devices and pipes were never temporaries). */
static void uncommit(ddtk_outset *o)
{
    for (int i = 0; i < o->n; i++) {
        ddtk_series_file *f = &o->f[i];
        if (!f->tmp && !ddtk_temp_is_special(f->path))
            unlink(f->path);
        if (f->inf && !f->inf_tmp)
            unlink(f->inf);
    }
}

static int close_files(ddtk_outset *o)
{
    int rc = DDTK_OK;
    for (int i = 0; i < o->n; i++) {
        ddtk_series_file *f = &o->f[i];
        if (fclose(f->fp) != 0 && !rc)
            rc = ddtk_fail(DDTK_ESYS, "%s: write error: %s", f->path, strerror(errno));
        f->fp = NULL;
    }
    return rc;
}

/* Rename every temporary into place, in turn with other runs in the
 * directory and with the cleanup signals held; without --force an existing
 * name is never replaced. If any step fails, what this run renamed is
 * removed again, so the set is all or nothing. */
static int commit_files(ddtk_outset *o)
{
    sigset_t old;
    int rc = DDTK_OK, lock = ddtk_tempdir_lock(o->f[0].path);
    ddtk_temp_hold_signals(&old);
    for (int i = 0; i < o->n && !rc; i++) {
        ddtk_series_file *f = &o->f[i];
        rc = ddtk_temp_rename(&f->tmp, f->path, o->spec.force);
        if (!rc && f->inf)
            rc = ddtk_temp_rename(&f->inf_tmp, f->inf, o->spec.force);
    }
    if (!rc)
        rc = close_files(o);
    if (rc)
        uncommit(o);
    else if (lock >= 0)
        fsync(lock);              /* the renames themselves, where the system allows */
    ddtk_temp_release_signals(&old);
    ddtk_tempdir_unlock(lock);
    return rc;
}

static void free_files(ddtk_outset *o)
{
    for (int i = 0; o->f && i < o->n; i++) {
        free(o->f[i].block);
        free(o->f[i].path);
        free(o->f[i].inf);
    }
    free(o->f);
    o->f = NULL;
}

int ddtk_outset_close(ddtk_outset *o)
{
    int rc = o->spec.discard ? DDTK_OK : end_blocks(o);
    if (rc) {
        ddtk_outset_abort(o);
        return rc;
    }
    if (o->to_stdout && (fflush(stdout) != 0 || ferror(stdout)))
        rc = ddtk_fail(DDTK_ESYS, "stdout: write error: %s", strerror(errno));
    if (o->spec.discard || o->to_stdout) {
        free(o->f);
        o->f = NULL;
        return rc;
    }
    stop_flusher(o);
    if ((rc = finish_files(o)) || (rc = commit_files(o))) {
        ddtk_outset_abort(o);
        return rc;
    }
    free_files(o);
    return DDTK_OK;
}

void ddtk_outset_abort(ddtk_outset *o)
{
    stop_flusher(o);
    for (int i = 0; o->f && i < o->n && !o->to_stdout; i++) {
        ddtk_series_file *f = &o->f[i];
        ddtk_temp_discard(f->fp, &f->tmp);
        ddtk_temp_remove(&f->inf_tmp);
        f->fp = NULL;
    }
    free_files(o);
}
