/*
 * fbsim - synthetic SIGPROC filterbanks, time series and PSRFITS search-mode
 * files for tests, demos and benchmarks.
 */
#include "internal.h"
#include "cli.h"
#include "psrfits.h"
#include "tempfile.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    OPT_NCHANS = 1000, OPT_NBITS, OPT_TSAMP, OPT_TOBS, OPT_NSAMPLES, OPT_FCH1, OPT_FOFF,
    OPT_NIFS, OPT_SIGNED, OPT_SEED, OPT_PULSE, OPT_PULSAR, OPT_TIM, OPT_FREQ_TABLE,
    OPT_SOURCE, OPT_TSTART, OPT_TELESCOPE, OPT_MACHINE, OPT_RAJ, OPT_DEJ, OPT_MEAN,
    OPT_SIGMA, OPT_KDM, OPT_FORCE, OPT_FORMAT, OPT_NSBLK, OPT_ROWS_PER_FILE, OPT_POL_TYPE,
    OPT_DAT_SCL, OPT_DAT_OFFS, OPT_ZERO_OFF, OPT_ZERO_WEIGHT, OPT_DROP_ROWS, OPT_RFI,
    OPT_VERSION
};

static const struct option options[] = {
    { "output", required_argument, 0, 'o' },
    { "nchans", required_argument, 0, OPT_NCHANS },
    { "nbits", required_argument, 0, OPT_NBITS },
    { "tsamp", required_argument, 0, OPT_TSAMP },
    { "tobs", required_argument, 0, OPT_TOBS },
    { "nsamples", required_argument, 0, OPT_NSAMPLES },
    { "fch1", required_argument, 0, OPT_FCH1 },
    { "foff", required_argument, 0, OPT_FOFF },
    { "nifs", required_argument, 0, OPT_NIFS },
    { "signed", no_argument, 0, OPT_SIGNED },
    { "seed", required_argument, 0, OPT_SEED },
    { "pulse", required_argument, 0, OPT_PULSE },
    { "pulsar", required_argument, 0, OPT_PULSAR },
    { "tim", no_argument, 0, OPT_TIM },
    { "freq-table", no_argument, 0, OPT_FREQ_TABLE },
    { "source", required_argument, 0, OPT_SOURCE },
    { "tstart", required_argument, 0, OPT_TSTART },
    { "telescope-id", required_argument, 0, OPT_TELESCOPE },
    { "machine-id", required_argument, 0, OPT_MACHINE },
    { "src-raj", required_argument, 0, OPT_RAJ },
    { "src-dej", required_argument, 0, OPT_DEJ },
    { "mean", required_argument, 0, OPT_MEAN },
    { "sigma", required_argument, 0, OPT_SIGMA },
    { "kdm", required_argument, 0, OPT_KDM },
    { "force", no_argument, 0, OPT_FORCE },
    { "format", required_argument, 0, OPT_FORMAT },
    { "nsblk", required_argument, 0, OPT_NSBLK },
    { "rows-per-file", required_argument, 0, OPT_ROWS_PER_FILE },
    { "pol-type", required_argument, 0, OPT_POL_TYPE },
    { "dat-scl", required_argument, 0, OPT_DAT_SCL },
    { "dat-offs", required_argument, 0, OPT_DAT_OFFS },
    { "zero-off", required_argument, 0, OPT_ZERO_OFF },
    { "zero-weight", required_argument, 0, OPT_ZERO_WEIGHT },
    { "drop-rows", required_argument, 0, OPT_DROP_ROWS },
    { "rfi", required_argument, 0, OPT_RFI },
    DDTK_STANDARD_OPTIONS(OPT_VERSION),
    { 0, 0, 0, 0 },
};

static void help(void)
{
    printf(
"Usage: fbsim [-o FILE] --nchans N --nbits B --tsamp S (--tobs T | --nsamples N)\n"
"             --fch1 F --foff DF [--seed N] [--pulse t,dm,width,amp ...]\n"
"             [--pulsar period,dm,duty,amp[,accel] ...] [options]\n"
"Write a synthetic SIGPROC filterbank (or, with --tim, a time series): Gaussian\n"
"noise plus dispersed single pulses and periodic pulsars. Output goes to stdout\n"
"unless -o is given.\n\n"
"  -o, --output FILE       output file (default stdout)\n"
"  --nchans N              channels (default 256; 1 with --tim)\n"
"  --nbits B               1, 2, 4, 8, 16 or 32 (float) (default 8; 32 with --tim)\n"
"  --tsamp S               sample time in seconds (default 6.4e-05)\n"
"  --tobs T | --nsamples N length in seconds or samples (default 1 s)\n"
"  --fch1 F --foff DF      centre of channel 0 and channel step, MHz (default 1500, -1)\n"
"  --freq-table            describe channels with a frequency table, not fch1/foff\n"
"  --nifs N                IFs (polarisations), each with its own noise (default 1)\n"
"  --signed                signed 8/16-bit samples\n"
"  --mean M --sigma S      noise mean and sigma in sample units\n"
"                          (default per nbits: 8-bit 127.5 and 16, 2-bit 1.5 and 1, ...)\n"
"  --seed N                random seed; a seed always gives the same bytes (default 1)\n"
"  --pulse t,dm,width,amp  single pulse arriving at the top of the band at t seconds,\n"
"                          Gaussian FWHM width in seconds, amp = peak S/N once dedispersed\n"
"  --pulsar P,dm,duty,amp[,accel]\n"
"                          pulsar of period P seconds, FWHM duty cycle (fraction),\n"
"                          single-pulse peak S/N amp, acceleration accel m/s^2 (default 0)\n"
"  --tim                   write a time series (nchans 1, float, data_type 2)\n"
"  --source NAME --tstart MJD --telescope-id N --machine-id N --src-raj hhmmss.s\n"
"  --src-dej ddmmss.s      header values (defaults: fbsim, 60000, 0, 0, 0, 0)\n"
"  --kdm K                 dispersion constant (default 4148.741601)\n"
"  --force                 overwrite an existing output\n"
"\n"
"PSRFITS search mode (--format psrfits, needs -o; the same samples as the\n"
"filterbank the other options describe, --nifs 1, 2 or 4 as NPOL):\n"
"  --format fil|psrfits    output format (default fil)\n"
"  --nsblk N               spectra per row (default 1024; a last partial row is\n"
"                          padded with zeros)\n"
"  --rows-per-file R       split the rows over files FILE_0001.ext, FILE_0002.ext, ...\n"
"  --pol-type T            POL_TYPE (default AA+BB, AABB or AABBCRCI by --nifs; IQUV)\n"
"  --dat-scl S --dat-offs O --zero-off Z\n"
"                          DAT_SCL, DAT_OFFS and ZERO_OFF of every row (default 1, 0, 0):\n"
"                          a reader's value is (sample - Z) * S + O\n"
"  --zero-weight FILE      channels with DAT_WTS 0 (a killfile: ranges 0:10,40 ...)\n"
"  --drop-rows LIST        rows (from 0, over the observation) left out, as missing rows\n"
"\n"
"RFI, on the same noise as without it (repeat --rfi for several kinds):\n"
"  --rfi chans:F:A         persistent narrow-band RFI in a fraction F of the channels\n"
"                          (chosen from the seed), A noise sigmas each, modulated by\n"
"                          A/2 at 0.3-3 Hz\n"
"  --rfi impulses:P:A      broadband impulses at DM 0 every P seconds (first at P/2),\n"
"                          one sample wide, peak S/N A at DM 0\n"
"  --rfi periodic:P:A      periodic RFI at DM 0: period P s, duty 0.05, peak S/N A\n"
"  --rfi dropouts:R:L      R dropouts a second, L seconds each: every sample 0\n"
"  -q, --quiet  -v, --verbose  -h, --help  --version\n");
}

typedef struct args {
    ddtk_sim sim;
    const char *output;
    int psrfits;
    ddtk_psrfits_layout layout;
    const char *zero_weight;
    int64_t *drop;
    double impulse_period, impulse_amp;
    double tobs;
    int nsamples_given, tim, freq_table, force, quiet, verbose, nchans_given, nbits_given;
} args;

/* Parse "a,b,c[,d...]" into exactly min..max doubles. */
static int parse_tuple(const char *opt, const char *arg, double *v, int min, int max, int *n)
{
    char *copy = strdup(arg), *save = NULL;
    *n = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == max || ddtk_parse_double(tok, &v[*n])) {
            free(copy);
            return ddtk_bad_option(opt, arg, "expected comma-separated numbers");
        }
        (*n)++;
    }
    free(copy);
    return *n < min ? ddtk_bad_option(opt, arg, "too few values") : DDTK_OK;
}

static int add_pulse(args *a, const char *arg)
{
    double v[4];
    int n, rc = parse_tuple("--pulse", arg, v, 4, 4, &n);
    if (rc)
        return rc;
    if (v[1] < 0 || v[2] <= 0)
        return ddtk_bad_option("--pulse", arg, "need dm >= 0 and width > 0");
    ddtk_sim_pulse *p = realloc(a->sim.pulses, (size_t)(a->sim.npulses + 1) * sizeof *p);
    if (!p)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    p[a->sim.npulses++] = (ddtk_sim_pulse){ v[0], v[1], v[2], v[3] };
    a->sim.pulses = p;
    return DDTK_OK;
}

static int add_pulsar(args *a, const char *arg)
{
    double v[5] = { 0 };
    int n, rc = parse_tuple("--pulsar", arg, v, 4, 5, &n);
    if (rc)
        return rc;
    if (v[0] <= 0 || v[1] < 0 || v[2] <= 0 || v[2] >= 1)
        return ddtk_bad_option("--pulsar", arg, "need period > 0, dm >= 0 and 0 < duty < 1");
    ddtk_sim_pulsar *p = realloc(a->sim.pulsars, (size_t)(a->sim.npulsars + 1) * sizeof *p);
    if (!p)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    p[a->sim.npulsars++] = (ddtk_sim_pulsar){ v[0], v[1], v[2], v[3], v[4] };
    a->sim.pulsars = p;
    return DDTK_OK;
}

/* --rfi KIND:X:Y; impulses and periodic RFI become pulses and a pulsar at DM 0. */
static int add_rfi(args *a, const char *arg)
{
    double v[2];
    char kind[16];
    int n = 0;
    if (sscanf(arg, "%15[a-z]:%lf:%lf%n", kind, &v[0], &v[1], &n) != 3 || arg[n]
        || !(v[0] > 0) || !(v[1] > 0) || !isfinite(v[0]) || !isfinite(v[1]))
        return ddtk_bad_option("--rfi", arg, "expected chans:F:A, impulses:P:A, periodic:P:A "
                               "or dropouts:R:L with positive numbers");
    if (strcmp(kind, "chans") == 0 && v[0] <= 1) {
        a->sim.rfi_chan_frac = v[0];
        a->sim.rfi_chan_amp = v[1];
    } else if (strcmp(kind, "impulses") == 0) {
        a->impulse_period = v[0];
        a->impulse_amp = v[1];
    } else if (strcmp(kind, "periodic") == 0) {
        char text[64];
        snprintf(text, sizeof text, "%.17g,0,0.05,%.17g", v[0], v[1]);
        return add_pulsar(a, text);
    } else if (strcmp(kind, "dropouts") == 0) {
        a->sim.dropout_rate = v[0];
        a->sim.dropout_len = v[1];
    } else
        return ddtk_bad_option("--rfi", arg, "unknown kind (chans, impulses, periodic, "
                               "dropouts; chans needs F <= 1)");
    return DDTK_OK;
}

/* The impulses of --rfi impulses, once the length is known. */
static int add_impulses(args *a)
{
    const double ts = a->sim.hdr.tsamp, tobs = (double)a->sim.nsamples * ts;
    for (double t = a->impulse_period / 2; a->impulse_period > 0 && t < tobs;
         t += a->impulse_period) {
        char text[96];
        snprintf(text, sizeof text, "%.17g,0,%.17g,%.17g", t, ts, a->impulse_amp);
        int rc = add_pulse(a, text);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

/* --drop-rows 3,7,8 */
static int drop_rows(args *a, const char *arg)
{
    char *copy = strdup(arg), *save = NULL;
    int rc = copy ? DDTK_OK : ddtk_fail(DDTK_ESYS, "out of memory");
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !rc;
         tok = strtok_r(NULL, ",", &save)) {
        int64_t *d = realloc(a->drop, (size_t)(a->layout.ndrop + 1) * sizeof *d);
        if (!d) {
            rc = ddtk_fail(DDTK_ESYS, "out of memory");
            break;
        }
        a->drop = d;
        rc = ddtk_opt_int64("--drop-rows", tok, 0, INT64_MAX, &d[a->layout.ndrop++]);
    }
    free(copy);
    a->layout.drop = a->drop;
    return rc;
}

static int option(int code, const char *arg, void *ctx)
{
    args *a = ctx;
    ddtk_header *h = &a->sim.hdr;
    int64_t seed;
    switch (code) {
    case 'o': a->output = arg; break;
    case OPT_NCHANS: a->nchans_given = 1; return ddtk_opt_int("--nchans", arg, 1, 1 << 20, &h->nchans);
    case OPT_NBITS: a->nbits_given = 1; return ddtk_opt_int("--nbits", arg, 1, 32, &h->nbits);
    case OPT_TSAMP: return ddtk_opt_double("--tsamp", arg, &h->tsamp);
    case OPT_TOBS: return ddtk_opt_double("--tobs", arg, &a->tobs);
    case OPT_NSAMPLES:
        a->nsamples_given = 1;
        return ddtk_opt_int64("--nsamples", arg, 1, INT64_MAX, &a->sim.nsamples);
    case OPT_FCH1: return ddtk_opt_double("--fch1", arg, &h->fch1);
    case OPT_FOFF: return ddtk_opt_double("--foff", arg, &h->foff);
    case OPT_NIFS: return ddtk_opt_int("--nifs", arg, 1, 16, &h->nifs);
    case OPT_SIGNED: h->signed_data = 1; break;
    case OPT_SEED:
        if (ddtk_opt_int64("--seed", arg, 0, ((int64_t)1 << 48) - 1, &seed))
            return DDTK_EUSAGE;
        a->sim.seed = (unsigned long)seed;
        break;
    case OPT_PULSE: return add_pulse(a, arg);
    case OPT_PULSAR: return add_pulsar(a, arg);
    case OPT_TIM: a->tim = 1; break;
    case OPT_FREQ_TABLE: a->freq_table = 1; break;
    case OPT_SOURCE:
        if (strlen(arg) < 1 || strlen(arg) > 79)
            return ddtk_bad_option("--source", arg, "must be 1 to 79 characters");
        strcpy(h->source_name, arg);
        break;
    case OPT_TSTART: return ddtk_opt_double("--tstart", arg, &h->tstart);
    case OPT_TELESCOPE: return ddtk_opt_int("--telescope-id", arg, 0, 1000, &h->telescope_id);
    case OPT_MACHINE: return ddtk_opt_int("--machine-id", arg, 0, 1000, &h->machine_id);
    case OPT_RAJ: return ddtk_opt_double("--src-raj", arg, &h->src_raj);
    case OPT_DEJ: return ddtk_opt_double("--src-dej", arg, &h->src_dej);
    case OPT_MEAN: return ddtk_opt_double("--mean", arg, &a->sim.mean);
    case OPT_SIGMA: return ddtk_opt_double("--sigma", arg, &a->sim.sigma);
    case OPT_KDM: return ddtk_opt_double("--kdm", arg, &a->sim.kdm);
    case OPT_FORCE: a->force = 1; break;
    case OPT_FORMAT: {
        static const char *const formats[] = { "fil", "psrfits", NULL };
        return ddtk_opt_choice("--format", arg, formats, &a->psrfits);
    }
    case OPT_NSBLK: return ddtk_opt_int("--nsblk", arg, 1, 1 << 24, &a->layout.nsblk);
    case OPT_ROWS_PER_FILE:
        return ddtk_opt_int64("--rows-per-file", arg, 1, INT64_MAX, &a->layout.rows_per_file);
    case OPT_POL_TYPE: a->layout.pol_type = arg; break;
    case OPT_DAT_SCL: return ddtk_opt_double("--dat-scl", arg, &a->layout.scale);
    case OPT_DAT_OFFS: return ddtk_opt_double("--dat-offs", arg, &a->layout.offset);
    case OPT_ZERO_OFF: return ddtk_opt_double("--zero-off", arg, &a->layout.zero_off);
    case OPT_ZERO_WEIGHT: a->zero_weight = arg; break;
    case OPT_DROP_ROWS: return drop_rows(a, arg);
    case OPT_RFI: return add_rfi(a, arg);
    case 'q': a->quiet = 1; break;
    case 'v': a->verbose = 1; break;
    default: return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
    }
    return DDTK_OK;
}

static void defaults(args *a)
{
    ddtk_header *h = &a->sim.hdr;
    memset(a, 0, sizeof *a);
    ddtk_header_init(h);
    h->nchans = 256;
    h->nbits = 8;
    h->tsamp = 64e-6;
    h->fch1 = 1500.0;
    h->foff = -1.0;
    h->tstart = 60000.0;
    strcpy(h->source_name, "fbsim");
    a->tobs = 1.0;
    a->sim.seed = 1;
    a->sim.kdm = DDTK_KDM_DEFAULT;
    a->sim.mean = a->sim.sigma = NAN;
    a->layout.nsblk = 1024;
    a->layout.scale = 1;
}

/* Fill in the header keywords in SIGPROC's usual order. */
static int finish_header(args *a)
{
    ddtk_header *h = &a->sim.hdr;
    static const char *filterbank_keys[] = {
        "source_name", "telescope_id", "machine_id", "src_raj", "src_dej", "data_type",
        "fch1", "foff", "nchans", "nbeams", "ibeam", "nbits", "tstart", "tsamp", "nifs"
    };
    if (a->tim) {
        h->data_type = 2;
        h->nchans = a->nchans_given ? h->nchans : 1;
        h->nbits = a->nbits_given ? h->nbits : 32;
        if (h->nchans != 1)
            return ddtk_fail(DDTK_EUSAGE, "--tim writes one channel (drop --nchans)");
    } else
        h->data_type = 1;
    if (h->nbits != 1 && h->nbits != 2 && h->nbits != 4 && h->nbits != 8 && h->nbits != 16 &&
        h->nbits != 32)
        return ddtk_fail(DDTK_EUSAGE, "--nbits %d: expected 1, 2, 4, 8, 16 or 32", h->nbits);
    if (!(h->tsamp > 0))
        return ddtk_fail(DDTK_EUSAGE, "--tsamp %g: must be > 0", h->tsamp);
    if (!(a->sim.kdm > 0))
        return ddtk_fail(DDTK_EUSAGE, "--kdm %g: must be > 0", a->sim.kdm);
    if (h->signed_data && h->nbits != 8 && h->nbits != 16)
        return ddtk_fail(DDTK_EUSAGE, "--signed applies to 8- and 16-bit data only");
    if (!a->nsamples_given) {
        if (!(a->tobs > 0))
            return ddtk_fail(DDTK_EUSAGE, "--tobs %g: must be > 0", a->tobs);
        a->sim.nsamples = (int64_t)llround(a->tobs / h->tsamp);
        if (a->sim.nsamples < 1)
            return ddtk_fail(DDTK_EUSAGE, "--tobs %g is shorter than one sample", a->tobs);
    }
    for (size_t i = 0; i < sizeof filterbank_keys / sizeof filterbank_keys[0]; i++)
        ddtk_header_mark(h, filterbank_keys[i]);
    if (h->signed_data)
        ddtk_header_mark(h, "signed");
    if (a->tim)
        ddtk_header_mark(h, "refdm");
    if (a->freq_table) {
        double *f = ddtk_malloc((size_t)h->nchans * sizeof *f, "frequency table");
        if (!f)
            return DDTK_ESYS;
        for (int c = 0; c < h->nchans; c++)
            f[c] = h->fch1 + c * h->foff;
        int rc = ddtk_header_set_freqs(h, f, h->nchans);
        free(f);
        ddtk_header_unmark(h, "fch1");
        ddtk_header_unmark(h, "foff");
        return rc;
    }
    return DDTK_OK;
}

/* PSRFITS: the filterbank into a temporary beside the output, then its rows. */
static int write_psrfits(args *a)
{
    char *tmp = NULL;
    uint8_t *zero = NULL;
    int nkilled, nfiles = 0, rc;
    ddtk_input in;
    struct stat st;
    if (!a->output)
        return ddtk_fail(DDTK_EUSAGE, "--format psrfits writes files: give -o FILE");
    if (a->tim)
        return ddtk_fail(DDTK_EUSAGE, "--format psrfits writes filterbanks, not --tim");
    if (!a->force && stat(a->output, &st) == 0)
        return ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", a->output);
    if (a->zero_weight && (rc = ddtk_killfile_read(a->zero_weight, a->sim.hdr.nchans, &zero,
                                                   &nkilled)))
        return rc;
    a->layout.zero_weight = zero;
    FILE *fp = ddtk_temp_create(a->output, &tmp);
    if (!fp) {
        free(zero);
        return DDTK_ESYS;
    }
    rc = ddtk_sim_write(&a->sim, fp, a->output);
    if (!rc && fflush(fp) != 0)
        rc = ddtk_fail(DDTK_ESYS, "%s: write error", a->output);
    if (!rc && !(rc = ddtk_input_open(&in, tmp))) {
        rc = ddtk_psrfits_write(&in, &a->layout, a->output, &nfiles);
        ddtk_input_close(&in);
    }
    ddtk_temp_discard(fp, &tmp);
    free(zero);
    if (!rc && a->verbose)
        ddtk_msg("PSRFITS: %d file%s of %d-spectrum rows", nfiles, nfiles > 1 ? "s" : "",
                 a->layout.nsblk);
    return rc;
}

static void show_progress(void *ctx, int64_t done)
{
    ddtk_progress_update(ctx, done);
}

static int write_filterbank(args *a)
{
    char *tmp = NULL;
    FILE *fp = stdout;
    if (a->output) {
        struct stat st;
        if (!a->force && stat(a->output, &st) == 0 && S_ISREG(st.st_mode))
            return ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", a->output);
        if (!(fp = ddtk_temp_create(a->output, &tmp)))
            return DDTK_ESYS;
    }
    int rc = ddtk_sim_write(&a->sim, fp, a->output ? a->output : "stdout");
    if (a->output) {
        if (!rc)
            rc = ddtk_temp_commit(fp, &tmp, a->output);
        else
            ddtk_temp_discard(fp, &tmp);
    } else if (!rc && fflush(stdout) != 0)
        rc = ddtk_fail(DDTK_ESYS, "stdout: write error");
    return rc;
}

/* Either format, with progress on stderr while the spectra are made. */
static int write_output(args *a)
{
    ddtk_progress prog;
    ddtk_progress_start(&prog, "spectra", a->sim.nsamples, a->quiet, a->verbose);
    a->sim.progress = show_progress;
    a->sim.progress_ctx = &prog;
    int rc = a->psrfits ? write_psrfits(a) : write_filterbank(a);
    ddtk_progress_end(&prog);
    return rc;
}

int main(int argc, char **argv)
{
    args a;
    int rc;
    ddtk_set_progname(argv[0]);
    defaults(&a);
    rc = ddtk_getopt(argc, argv, ":o:qvh", options, OPT_VERSION, help, option, &a);
    if (!rc && optind < argc)
        rc = ddtk_fail(DDTK_EUSAGE, "unexpected argument '%s' (see --help)", argv[optind]);
    if (!rc && !(rc = finish_header(&a)) && !(rc = add_impulses(&a)) && !a.output && isatty(STDOUT_FILENO))
        rc = ddtk_fail(DDTK_EUSAGE, "refusing to write binary data to a terminal; use -o FILE");
    if (!rc)
        rc = write_output(&a);
    if (!rc && a.verbose)
        ddtk_msg("%lld samples, %d channels, %d bits, %d pulses, %d pulsars",
                 (long long)a.sim.nsamples, a.sim.hdr.nchans, a.sim.hdr.nbits,
                 a.sim.npulses, a.sim.npulsars);
    free(a.sim.pulses);
    free(a.sim.pulsars);
    free(a.drop);
    ddtk_header_free(&a.sim.hdr);
    return ddtk_exit_status(rc);
}
