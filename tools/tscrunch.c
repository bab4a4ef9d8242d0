/*
 * tscrunch - add (or average) groups of N adjacent samples of a SIGPROC
 * filterbank (any nbits, every IF kept), a .tim time series, or a PRESTO
 * .dat + .inf pair. Streams in bounded memory: works as a stdin -> stdout
 * filter for SIGPROC data. The command line around ddtk_decimate_file
 * (src/engine/decimate.c).
 */
#include "decimate.h"
#include "internal.h"
#include "cli.h"

#include <unistd.h>

#include <getopt.h>

enum { OPT_MEAN = 1000, OPT_NBITS_OUT, OPT_KEEP, OPT_FORCE, OPT_VERSION };

static const struct option options[] = {
    { "output", required_argument, 0, 'o' }, { "mean", no_argument, 0, OPT_MEAN },
    { "nbits-out", required_argument, 0, OPT_NBITS_OUT },
    { "keep-remainder", no_argument, 0, OPT_KEEP }, { "force", no_argument, 0, OPT_FORCE },
    DDTK_STANDARD_OPTIONS(OPT_VERSION),
    { 0, 0, 0, 0 },
};

static void help(void)
{
    printf(
        "Usage: tscrunch -n N [FILE|-] [-o FILE] [--mean] [--nbits-out B] [--keep-remainder]\n"
        "Add N adjacent samples of a SIGPROC filterbank (any nbits; every IF kept), a .tim\n"
        "time series or a PRESTO .dat (with its .inf). tsamp is multiplied by N, tstart is\n"
        "unchanged. Reads stdin and writes stdout when no file is named (SIGPROC data).\n"
        "A PSRFITS search-mode file (or the files of one observation, in order) is read\n"
        "as a filterbank of AA and BB (or I): tscrunch -n 1 --nbits-out 8 obs.fits -o\n"
        "obs.fil converts 8-bit data as they are.\n\n"
        "  -n N                 samples per output sample, N >= 1 (required)\n"
        "  -o, --output FILE    output (default stdout; required for .dat input, which\n"
        "                       writes FILE and its .inf)\n"
        "  --mean               average instead of sum\n"
        "  --nbits-out B        8 or 16: unsigned integers, value = result / S with S the\n"
        "                       smallest power of two that fits the range (S is printed);\n"
        "                       integer filterbank input only (default: 32-bit float)\n"
        "  --keep-remainder     make a last sample from the final partial group (its mean,\n"
        "                       times N unless --mean) instead of dropping it\n"
        "  --force              overwrite an existing output\n"
        "  -q, --quiet          no summary     -v, --verbose   more detail\n"
        "  -h, --help           this help      --version       print the version\n");
}

static int option(int code, const char *arg, void *ctx)
{
    ddtk_decimate_opts *o = ctx;
    switch (code) {
    case 'n':
        return ddtk_opt_int64("-n", arg, 1, (int64_t)1 << 40, &o->n);
    case 'o': o->output = arg; break;
    case OPT_MEAN: o->mean = 1; break;
    case OPT_NBITS_OUT: {
        static const char *const widths[] = { "8", "16", "32", NULL };
        int i;
        if (ddtk_opt_choice("--nbits-out", arg, widths, &i))
            return DDTK_EUSAGE;
        o->nbits_out = 8 << i;
        break;
    }
    case OPT_KEEP: o->keep = 1; break;
    case OPT_FORCE: o->force = 1; break;
    case 'q': o->quiet = 1; break;
    case 'v': break;              /* accepted; tscrunch has no more to say */
    default: return DDTK_EUSAGE;
    }
    return DDTK_OK;
}

static int parse(ddtk_decimate_opts *o, int argc, char **argv)
{
    int rc = ddtk_getopt(argc, argv, ":n:o:qvh", options, OPT_VERSION, help, option, o);
    if (!rc) {
        o->inputs = (const char *const *)argv + optind;
        o->ninputs = argc - optind;
        o->input = o->ninputs ? argv[optind] : NULL;
    }
    if (!rc && o->n == 0)
        rc = ddtk_fail(DDTK_EUSAGE, "-n N is required: the number of samples to add (see --help)");
    return rc;
}

int main(int argc, char **argv)
{
    ddtk_decimate_opts o = { 0 };
    ddtk_set_progname(argv[0]);
    int rc = parse(&o, argc, argv);
    if (!rc && !o.output && isatty(STDOUT_FILENO))
        rc = ddtk_fail(DDTK_EUSAGE, "refusing to write binary data to a terminal; use -o FILE "
                       "or redirect stdout");
    if (!rc)
        rc = ddtk_decimate_file(&o);
    return ddtk_exit_status(rc);
}
