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
    printf("Usage: fbinfo [-k KEY] [-q|-v] [FILE|-]...\n"
           "Print the SIGPROC header of each filterbank or time series (stdin when no\n"
           "file or '-'), or with -k the value of one keyword.\n\n"
           "  -k, --key KEY   print only KEY's value: any header keyword (tsamp, fch1,\n"
           "                  nchans, source_name, fchannel, ...) or nsamples (from the\n"
           "                  file size), tobs (seconds) or header_size (bytes)\n"
           "  -q, --quiet     print nothing: the exit status says whether every header\n"
           "                  reads (0) or not (1 bad data, 3 unreadable file)\n"
           "  -v, --verbose   also list the keywords the header holds, in SIGPROC's names\n"
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

typedef struct args {
    const char *key;
    int quiet, verbose;
} args;

static int option(int code, const char *arg, void *ctx)
{
    args *a = ctx;
    switch (code) {
    case 'k': a->key = arg; break;
    case 'q': a->quiet = 1; break;
    case 'v': a->verbose = 1; break;
    default: return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
    }
    return DDTK_OK;
}

/* -v: the keywords present, in the order SIGPROC's header program lists them. */
static void list_keywords(const ddtk_header *h)
{
    static const char *const names[] = {
        "source_name", "rawdatafile", "telescope_id", "machine_id", "data_type",
        "barycentric", "pulsarcentric", "az_start", "za_start", "src_raj", "src_dej",
        "tstart", "tsamp", "nbits", "nsamples", "fch1", "foff", "fchannel", "nchans",
        "nifs", "nbins", "refdm", "period", "nbeams", "ibeam", "signed",
    };
    printf("Header keywords                  :");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (ddtk_header_has(h, names[i]))
            printf(" %s", names[i]);
    printf("\n");
}

static int show(const char *path, const args *a, int several)
{
    const char *key = a->key;
    ddtk_input in;
    int rc = ddtk_input_open(&in, path);
    if (!rc && in.nsamples < 0)
        rc = count_stream(&in);
    if (!rc && !a->quiet) {
        if (key) {
            if ((rc = ddtk_header_print_key(stdout, &in.hdr, key, in.nsamples)))
                rc = ddtk_fail(rc, "%s: %s", in.name, ddtk_errmsg());
        } else {
            if (several)
                printf("\n");
            ddtk_header_print(stdout, &in.hdr, in.name, in.nsamples);
            if (a->verbose)
                list_keywords(&in.hdr);
        }
    }
    ddtk_input_close(&in);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        { "key", required_argument, 0, 'k' },
        DDTK_STANDARD_OPTIONS(OPT_VERSION),
        { 0, 0, 0, 0 },
    };
    args a = { 0 };
    ddtk_set_progname(argv[0]);
    int rc = ddtk_getopt(argc, argv, ":k:qvh", options, OPT_VERSION, help, option, &a);
    if (!rc && optind == argc)
        rc = show("-", &a, 0);
    for (int i = optind; i < argc && !rc; i++)
        rc = show(argv[i], &a, i > optind && !a.key);
    return ddtk_exit_status(rc);
}
