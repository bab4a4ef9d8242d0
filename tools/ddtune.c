/*
 * ddtune - tune the dedispersion kernel for an observing set-up and keep the
 * result in the wisdom file, as fftw-wisdom does for FFTW.
 */
#include "ddcli.h"
#include "internal.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_BUDGET = 2000 };

static const struct option options[] = {
    { "budget", required_argument, 0, OPT_BUDGET },
};

static void help(void)
{
    printf("Usage: ddtune [FILE|-] (--dm DM[,DM...] | [--dm-min A] --dm-max B\n"
           "              [--dm-step S] | --dm-list F | --plan F) [--budget SECONDS] [--wisdom FILE]\n"
           "              [--backend cpu|gpu|auto] [--threads N] [options]\n"
           "Times configurations of the direct kernel for the set-up of FILE's header\n"
           "(only the header is read) and this DM list, on synthetic data in memory, and\n"
           "stores the fastest in the wisdom file, where dd_direct finds it. Prints each\n"
           "configuration tried and the best. Configurations change speed, never output.\n"
           "A set-up without a file: fbsim --nsamples 1 ... | ddtune - --dm-max ...\n\n"
           "  --budget SECONDS         stop trying configurations after this long (60)\n"
           "  --wisdom FILE            the wisdom file (default $DDTK_WISDOM, else\n"
           "                           $XDG_CACHE_HOME/ddtk/wisdom or ~/.cache/ddtk/wisdom)\n"
           "  --no-wisdom              print the table, keep nothing\n\n%s",
           ddtk_ddcli_tune_help);
}

static int option(int code, const char *arg, void *ctx)
{
    double *budget = ctx;
    if (code != OPT_BUDGET)
        return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
    if (ddtk_parse_double(arg, budget) || !(*budget > 0))
        return ddtk_bad_option("--budget", arg, "expected seconds > 0");
    return DDTK_OK;
}

static int tune(ddtk_ddargs *a, ddtk_input *in, void *ctx)
{
    const double budget = *(const double *)ctx;
    char *path = a->no_wisdom ? NULL : a->wisdom ? strdup(a->wisdom) : ddtk_cli_wisdom_path();
    char key[1024];
    int rc = ddtk_ddargs_describe(a, in);
    if (!rc)
        rc = ddtk_wisdom_key(&a->desc, key, sizeof key);
    if (!rc) {
        printf("set-up: %s\n", key);
        rc = ddtk_tune(&a->desc, path, budget, stdout);
    }
    if (!rc && path && !a->desc.quiet)
        ddtk_msg("wisdom kept in %s", path);
    free(path);
    return rc;
}

int main(int argc, char **argv)
{
    ddtk_ddargs args;
    double budget = 60;
    const ddtk_ddtool tool = {
        .algorithm = "direct", .options = options, .noptions = 1, .option = option,
        .ctx = &budget, .help = help, .check = ddtk_ddargs_no_outputs, .run = tune,
    };
    return ddtk_ddtool_main(&tool, &args, argc, argv);
}
