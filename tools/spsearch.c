/*
 * spsearch - single-pulse search of dedispersed time series (.tim, .dat +
 * .inf, or one .tim on stdin): every series of one observation searched
 * together and clustered across DM into candidates, written as Heimdall's
 * .cand lines or PRESTO's .singlepulse files. The command line around
 * ddtk_sps_files_search (src/search/sps_io.c).
 */
#include "sps.h"
#include "inf.h"
#include "internal.h"
#include "cli.h"
#include "tempfile.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { OPT_SNR = 1000, OPT_MAX_WIDTH, OPT_FORMAT, OPT_THREADS, OPT_FORCE, OPT_DM_TOL,
       OPT_TIME_TOL, OPT_BASELINE, OPT_VERSION };

static const struct option options[] = {
    { "output", required_argument, 0, 'o' },
    { "snr", required_argument, 0, OPT_SNR },
    { "max-width", required_argument, 0, OPT_MAX_WIDTH },
    { "format", required_argument, 0, OPT_FORMAT },
    { "search-window", required_argument, 0, OPT_BASELINE },
    { "dm-tol", required_argument, 0, OPT_DM_TOL },
    { "time-tol", required_argument, 0, OPT_TIME_TOL },
    { "threads", required_argument, 0, OPT_THREADS },
    { "force", no_argument, 0, OPT_FORCE },
    DDTK_STANDARD_OPTIONS(OPT_VERSION),
    { 0, 0, 0, 0 },
};

static void help(void)
{
    printf(
"Usage: spsearch FILE.tim|FILE.dat... [-o OUT.cand] [--snr S] [--max-width W]\n"
"                [--format heimdall|presto] [options]\n"
"Single-pulse search of dedispersed time series of one observation (one per DM):\n"
"each series is normalised block by block (median, robust sigma), convolved with\n"
"boxcars of 1, 2, 3, 4, 6, 8, ... samples, and every run above the threshold is a\n"
"giant; giants are clustered friends-of-friends across DM, time and width into one\n"
"candidate per event. Every sample is searched, short series and tails included.\n"
"A single '-' reads one .tim from stdin.\n\n"
"  -o, --output FILE     heimdall: the .cand file (default stdout);\n"
"                        presto: the folder for the .singlepulse files (default:\n"
"                        beside each input)\n"
"  --snr S               S/N threshold (default %g)\n"
"  --max-width W         widest boxcar in samples of the finest series, a power of\n"
"                        two (default %d; at most a 16th of the baseline window)\n"
"  --search-window T     running baseline window in seconds (default %g)\n"
"  --format heimdall|presto\n"
"                        Heimdall .cand lines (S/N, sample, time, log2 width, DM index,\n"
"                        DM, members, first and last sample; default), or one PRESTO\n"
"                        <base>.singlepulse per input (DM Sigma Time Sample Downfact)\n"
"  --dm-tol N            clustering: DM indices at most N apart are neighbours (default %d)\n"
"  --time-tol T          clustering: boxcars at most T widths apart are neighbours\n"
"                        (default %g)\n"
"  --threads N           series read at once (default: all cores)\n"
"  --force               overwrite existing outputs\n"
"  -q, --quiet           no summary                -v, --verbose  more detail\n"
"  -h, --help            this help                 --version      print the version\n",
        DDTK_SPS_SNR_DEFAULT, DDTK_SPS_MAX_WIDTH_DEFAULT, DDTK_SPS_BASELINE_DEFAULT,
        DDTK_SPS_DM_TOL, DDTK_SPS_TIME_TOL);
}

typedef struct args {
    ddtk_sps_params par;
    const char *output;
    int format, threads, force, quiet, verbose;
} args;

static const char *const formats[] = { "heimdall", "presto", NULL };

static int option(int code, const char *arg, void *ctx)
{
    args *a = ctx;
    switch (code) {
    case 'o': a->output = arg; return DDTK_OK;
    case OPT_SNR:
        return ddtk_opt_double("--snr", arg, &a->par.snr) ? DDTK_EUSAGE
               : a->par.snr > 0 ? DDTK_OK : ddtk_bad_option("--snr", arg, "must be > 0");
    case OPT_MAX_WIDTH: {
        int rc = ddtk_opt_int("--max-width", arg, 1, 1 << 24, &a->par.max_width);
        return rc ? rc : (a->par.max_width & (a->par.max_width - 1))
               ? ddtk_bad_option("--max-width", arg, "must be a power of two") : DDTK_OK;
    }
    case OPT_FORMAT: return ddtk_opt_choice("--format", arg, formats, &a->format);
    case OPT_BASELINE:
        return ddtk_opt_double("--search-window", arg, &a->par.baseline) ? DDTK_EUSAGE
               : a->par.baseline > 0 ? DDTK_OK : ddtk_bad_option("--search-window", arg, "must be > 0");
    case OPT_DM_TOL: return ddtk_opt_int("--dm-tol", arg, 0, 1 << 20, &a->par.dm_tol);
    case OPT_TIME_TOL:
        return ddtk_opt_double("--time-tol", arg, &a->par.time_tol) ? DDTK_EUSAGE
               : a->par.time_tol >= 0 ? DDTK_OK : ddtk_bad_option("--time-tol", arg, "must be >= 0");
    case OPT_THREADS: return ddtk_opt_int("--threads", arg, 1, 4096, &a->threads);
    case OPT_FORCE: a->force = 1; return DDTK_OK;
    case 'q': a->quiet = 1; return DDTK_OK;
    case 'v': a->verbose = 1; return DDTK_OK;
    }
    return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A file written whole to a temporary and renamed into place. */
static int write_file(const char *path, int force, int (*write)(FILE *, const void *),
                      const void *ctx)
{
    if (!force && exists(path) && !ddtk_temp_is_special(path))
        return ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", path);
    char *tmp = NULL;
    FILE *fp = ddtk_temp_create(path, &tmp);
    if (!fp)
        return DDTK_ESYS;
    int rc = write(fp, ctx);
    if (!rc)
        return ddtk_temp_commit(fp, &tmp, path);
    ddtk_temp_discard(fp, &tmp);
    return rc;
}

typedef struct result {
    const ddtk_sps_cand *c;
    int64_t n;
    int dm, factor;
} result;

static int write_heimdall(FILE *fp, const void *ctx)
{
    const result *r = ctx;
    return ddtk_sps_write_heimdall(fp, r->c, r->n);
}

static int write_presto(FILE *fp, const void *ctx)
{
    const result *r = ctx;
    return ddtk_sps_write_presto(fp, r->c, r->n, r->dm, r->factor);
}

/* <dir>/<base>.singlepulse for input path (dir: beside it when NULL). */
static char *presto_name(const char *path, const char *dir)
{
    const char *slash = strrchr(path, '/');
    const char *base = dir && slash ? slash + 1 : path;
    size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(base) + 16;
    char *name = malloc(len);
    if (!name)
        return NULL;
    snprintf(name, len, "%s%s%s", dir ? dir : "", dir ? "/" : "", base);
    if (ddtk_ends_with(name, ".dat") || ddtk_ends_with(name, ".tim"))
        name[strlen(name) - 4] = '\0';
    strcat(name, ".singlepulse");
    return name;
}

static int write_outputs(const args *a, const ddtk_sps_file *f, int n, const int *index,
                         const int *factor, const ddtk_sps_cand *c, int64_t nc)
{
    result r = { c, nc, 0, 1 };
    if (a->format == DDTK_SPS_HEIMDALL) {
        if (!a->output || strcmp(a->output, "-") == 0) {
            int rc = ddtk_sps_write_heimdall(stdout, c, nc);
            return rc ? rc : fflush(stdout) ? ddtk_fail(DDTK_ESYS, "stdout: write failed") : 0;
        }
        return write_file(a->output, a->force, write_heimdall, &r);
    }
    if (a->output) {
        struct stat st;
        if (stat(a->output, &st) != 0 || !S_ISDIR(st.st_mode))
            return ddtk_fail(DDTK_EUSAGE, "%s: not a folder (--format presto writes one "
                             ".singlepulse per input there)", a->output);
    }
    int rc = DDTK_OK;
    for (int i = 0; !rc && i < n; i++) {
        char *name = presto_name(f[i].path, a->output);
        r.dm = index[i];
        r.factor = factor[i];
        rc = name ? write_file(name, a->force, write_presto, &r)
                  : ddtk_fail(DDTK_ESYS, "out of memory");
        free(name);
    }
    return rc;
}

static void progress(void *ctx, int nfiles)
{
    ddtk_progress_update(ctx, nfiles);
}

static int run(const args *a, int argc, char **argv)
{
    int n = argc - optind;
    if (n < 1)
        return ddtk_fail(DDTK_EUSAGE, "no time series given (see --help)");
    for (int i = optind; i < argc; i++)
        if (strcmp(argv[i], "-") == 0 && n > 1)
            return ddtk_fail(DDTK_EUSAGE, "stdin ('-') can only be searched alone");
    if (a->format == DDTK_SPS_PRESTO && n == 1 && strcmp(argv[optind], "-") == 0 && !a->output)
        return ddtk_fail(DDTK_EUSAGE, "--format presto from stdin needs -o FOLDER");
    ddtk_sps_file *f = ddtk_calloc((size_t)n, sizeof *f, "series list");
    int *index = ddtk_malloc((size_t)n * sizeof *index, "series list");
    int *factor = ddtk_malloc((size_t)n * sizeof *factor, "series list");
    int rc = f && index && factor ? DDTK_OK : DDTK_ESYS;
    for (int i = 0; !rc && i < n; i++)
        rc = ddtk_sps_file_probe(&f[i], argv[optind + i]);
    ddtk_sps_cand *c = NULL;
    int64_t nc = 0;
    double tsamp = 0, t0 = ddtk_now();
    ddtk_progress bar;
    ddtk_progress_start(&bar, "series", n, a->quiet, a->verbose);
    if (!rc)
        rc = ddtk_sps_files_search(f, n, &a->par, a->threads, index, factor, &tsamp, &c, &nc,
                                   progress, &bar);
    ddtk_progress_end(&bar);
    if (!rc)
        rc = write_outputs(a, f, n, index, factor, c, nc);
    if (!rc && !a->quiet)
        ddtk_msg("%d series searched (S/N >= %g, boxcars up to %lld samples of %.6g s, "
                 "baseline %g s): %lld candidates in %.2f s", n, a->par.snr,
                 (long long)ddtk_sps_widest(&a->par, tsamp, 1), tsamp, a->par.baseline,
                 (long long)nc, ddtk_now() - t0);
    for (int i = 0; f && i < n; i++)
        ddtk_sps_file_free(&f[i]);
    free(f);
    free(index);
    free(factor);
    free(c);
    return rc;
}

int main(int argc, char **argv)
{
    args a = { .format = DDTK_SPS_HEIMDALL };
    ddtk_set_progname(argv[0]);
    ddtk_sps_params_init(&a.par);
    int rc = ddtk_getopt(argc, argv, ":o:qvh", options, OPT_VERSION, help, option, &a);
    if (!rc)
        rc = run(&a, argc, argv);
    return ddtk_exit_status(rc);
}
