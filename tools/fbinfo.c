/*
 * fbinfo - print SIGPROC headers, like SIGPROC's `header`, or one value with -k.
 */
#include "internal.h"
#include "cli.h"

#include <getopt.h>
#include <string.h>

enum { OPT_VERSION = 1000 };

static void help(void)
{
    printf("Usage: fbinfo [-k KEY] [FILE|-]...\n"
           "Print the SIGPROC header of each filterbank or time series (stdin when no\n"
           "file or '-'), or with -k the value of one keyword.\n\n"
           "  -k, --key KEY   print only KEY's value: any header keyword (tsamp, fch1,\n"
           "                  nchans, source_name, fchannel, ...) or nsamples (from the\n"
           "                  file size), tobs (seconds) or header_size (bytes)\n"
           "  -h, --help      this help\n"
           "  --version       print the version\n");
}

/* From stdin the sample count is only known by reading to the end (no seeking). */
static int count_stream(ddtk_input *in)
{
    static uint8_t buf[1 << 16];
    int64_t bytes = 0;
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, in->fp)) > 0)
        bytes += (int64_t)got;
    if (ferror(in->fp))
        return ddtk_fail(DDTK_ESYS, "%s: read error", in->name);
    in->nsamples = bytes * 8 / in->bits_per_spectrum;
    return DDTK_OK;
}

static int option(int code, const char *arg, void *ctx)
{
    if (code != 'k')
        return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
    *(const char **)ctx = arg;
    return DDTK_OK;
}

static int show(const char *path, const char *key, int several)
{
    ddtk_input in;
    int rc = ddtk_input_open(&in, path);
    if (!rc && in.nsamples < 0)
        rc = count_stream(&in);
    if (!rc) {
        if (key) {
            if ((rc = ddtk_header_print_key(stdout, &in.hdr, key, in.nsamples))) {
                char why[512];
                snprintf(why, sizeof why, "%s", ddtk_errmsg());
                rc = ddtk_fail(rc, "%s: %s", in.name, why);
            }
        } else {
            if (several)
                printf("\n");
            ddtk_header_print(stdout, &in.hdr, in.name, in.nsamples);
        }
    }
    ddtk_input_close(&in);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "key", required_argument, 0, 'k' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, OPT_VERSION },
        { 0, 0, 0, 0 },
    };
    const char *key = NULL;
    ddtk_set_progname(argv[0]);
    int rc = ddtk_getopt(argc, argv, ":k:h", options, OPT_VERSION, help, option, &key);
    if (!rc && optind == argc)
        rc = show("-", key, 0);
    for (int i = optind; i < argc && !rc; i++)
        rc = show(argv[i], key, i > optind && !key);
    return ddtk_exit_status(rc);
}
