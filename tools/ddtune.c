/*
 * ddtune - tune an algorithm (its tunable parameters and the direct kernel
 * it runs) for an observing set-up and keep the result in the wisdom file,
 * as fftw-wisdom does for FFTW.
 */
#include "ddcli.h"
#include "internal.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

enum { OPT_BUDGET = 2000, OPT_ALGORITHM };

static const struct option options[] = {
    { "budget", required_argument, 0, OPT_BUDGET },
    { "algorithm", required_argument, 0, OPT_ALGORITHM },
};

typedef struct tune_args {
    double budget;
    const char *algorithm;        /* read before the command line is parsed */
} tune_args;

static void help(void)
{
    printf("Usage: ddtune [FILE|-] [--algorithm direct|subband|tree|fdmt]\n"
           "              (--dm DM[,DM...] | [--dm-min A] --dm-max B [--dm-step S]\n"
           "              | --dm-list F | --plan F) [--budget SECONDS] [--wisdom FILE]\n"
           "              [--backend cpu|gpu|auto] [--threads N] [options]\n"
           "Times configurations of an algorithm for the set-up of FILE's header (only the\n"
           "header is read) and this DM list, on synthetic data in memory, and stores the\n"
           "fastest in the wisdom file, where the algorithm's dd_* tool finds it. What is\n"
           "varied: the direct kernel's tiles or GPU variants (direct, subband), the\n"
           "sub-band layout --nsub/--dm-group within --max-smear-ratio (subband), the CPU\n"
           "--chunk (tree, fdmt) and the GPU --gpu-group (tree); a parameter given on the\n"
           "command line is kept. Prints each configuration tried and the best. The tree\n"
           "and the FDMT compute their own DMs: give them --dm-min/--dm-max only.\n"
           "A set-up without a file: fbsim --nsamples 1 ... | ddtune - --dm-max ...\n\n"
           "  --algorithm NAME         direct (default), subband, tree or fdmt; its\n"
           "                           parameters are options as in its dd_* tool\n"
           "  --budget SECONDS         stop trying configurations after this long (60)\n"
           "  --wisdom FILE            the wisdom file (default $DDTK_WISDOM, else\n"
           "                           $XDG_CACHE_HOME/ddtk/wisdom or ~/.cache/ddtk/wisdom)\n"
           "  --no-wisdom              print the table, keep nothing\n\n%s",
           ddtk_ddcli_tune_help);
}

static int option(int code, const char *arg, void *ctx)
{
    tune_args *t = ctx;
    if (code == OPT_ALGORITHM)    /* read already: an abbreviation would be missed there */
        return strcmp(arg, t->algorithm) == 0 ? DDTK_OK
               : ddtk_fail(DDTK_EUSAGE, "--algorithm: spell the option out (--algorithm NAME)");
    if (code != OPT_BUDGET)
        return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
    if (ddtk_parse_double(arg, &t->budget) || !(t->budget > 0))
        return ddtk_bad_option("--budget", arg, "expected seconds > 0");
    return DDTK_OK;
}

static int tune(ddtk_ddargs *a, ddtk_input *in, void *ctx)
{
    const tune_args *t = ctx;
    char *path = a->no_wisdom ? NULL : a->wisdom ? strdup(a->wisdom) : ddtk_cli_wisdom_path();
    char key[1024];
    int rc = ddtk_algorithm_own_dms(a->desc.algorithm) ? ddtk_ddargs_own_dms(a, in) : DDTK_OK;
    if (!rc)
        rc = ddtk_ddargs_describe(a, in);
    if (!rc)
        rc = ddtk_tune_check(&a->desc);
    if (!rc)
        rc = ddtk_wisdom_key(&a->desc, key, sizeof key);
    if (!rc) {
        printf("set-up: %s\n", key);
        rc = ddtk_tune(&a->desc, path, t->budget, stdout);
    }
    if (!rc && path && !a->desc.quiet)
        ddtk_msg("wisdom kept in %s", path);
    free(path);
    return rc;
}

/* The last --algorithm NAME or --algorithm=NAME before "--": the algorithm
 * decides which parameter options the command line takes. */
static const char *algorithm_of(int argc, char **argv)
{
    const char *name = "direct";
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--algorithm") == 0 && i + 1 < argc)
            name = argv[++i];
        else if (strncmp(argv[i], "--algorithm=", 12) == 0)
            name = argv[i] + 12;
    }
    return name;
}

int main(int argc, char **argv)
{
    ddtk_ddargs args;
    tune_args t = { 60, algorithm_of(argc, argv) };
    const ddtk_ddtool tool = {
        .algorithm = t.algorithm, .options = options, .noptions = 2, .option = option,
        .ctx = &t, .help = help, .check = ddtk_ddargs_no_outputs, .run = tune,
    };
    return ddtk_ddtool_main(&tool, &args, argc, argv);
}
