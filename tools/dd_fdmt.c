/*
 * dd_fdmt - the fast dispersion-measure transform (Zackay & Ofek 2017) of a
 * SIGPROC filterbank at the DMs it computes (one sample of delay across the
 * band apart, time scrunched past the diagonal as dd_tree's), through the
 * same engine, options and outputs as dd_direct.
 */
#include "ddcli.h"
#include "internal.h"
#include "cli.h"

enum { OPT_LIST_DMS = 2000 };

static const struct option fdmt_options[] = {
    { "list-dms", no_argument, 0, OPT_LIST_DMS },
};

static void help(void)
{
    printf("Usage: dd_fdmt [FILE|-] [--dm-min A] --dm-max B [--scrunch auto|none] [--list-dms]\n"
           "               [-o FILE | --prefix P] [--format tim|dat] [options]\n"
           "The fast dispersion-measure transform (Zackay & Ofek 2017) of a SIGPROC\n"
           "filterbank. Its DMs are those of the transform: the DM step moves the sweep\n"
           "across the band by one sample; past twice the diagonal DM the time resolution\n"
           "is halved per doubling (unless --scrunch none). Every output is the exact sum\n"
           "of one sample per channel along an integer-delay track within 2 samples of\n"
           "dd_direct's rounded delays (1024 channels).\n\n"
           "FDMT:\n"
           "  --chunk N                CPU: output samples a thread computes at once (2048;\n"
           "                           speed only; ddtune --algorithm fdmt tunes it)\n"
           "  --list-dms               print the DMs and scrunch factors and exit\n\n"
           "%s", ddtk_ddcli_own_dms_help);
}

static int fdmt_option(int code, const char *arg, void *ctx)
{
    (void)arg;
    int *list = ctx;
    if (code != OPT_LIST_DMS)
        return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
    *list = 1;
    return DDTK_OK;
}

/* Per scrunch range: DMs and step. */
static void report(const ddtk_ddargs *a)
{
    if (a->desc.quiet)
        return;
    const double *dm = a->dms.dm;
    const int *ds = a->downsamp;
    ddtk_msg("fdmt: %d DMs", a->dms.n);
    for (int i = 0, j; i < a->dms.n; i = j) {
        for (j = i + 1; j < a->dms.n && ds[j] == ds[i];)
            j++;
        ddtk_msg("fdmt: DM %.3f - %.3f step %.4f (%d DMs) at %d x tsamp", dm[i], dm[j - 1],
                 j - i > 1 ? dm[i + 1] - dm[i] : 0.0, j - i, ds[i]);
    }
}

static int dedisperse(ddtk_ddargs *a, ddtk_input *in, void *ctx)
{
    const int *list = ctx;
    ddtk_plan *plan;
    int rc = ddtk_ddargs_own_dms(a, in);
    if (rc || *list)
        return rc ? rc : ddtk_ddargs_list_dms(a);
    if ((rc = ddtk_ddargs_plan(a, in, &plan)))
        return rc;
    report(a);
    const ddtk_notes notes = { .tool = "dd_fdmt", .algorithm = "fdmt", .lead = "",
                               .trail = "FDMT (Zackay & Ofek 2017): integer-delay tracks, DM step "
                                        "1 sample/band\n",
                               .rounding = 0, .scrunched = a->scrunch != 0 };
    rc = ddtk_ddargs_run(a, in, plan, &notes);
    ddtk_plan_destroy(plan);
    return rc;
}

int main(int argc, char **argv)
{
    ddtk_ddargs args;
    int list = 0;
    const ddtk_ddtool tool = {
        .algorithm = "fdmt", .options = fdmt_options, .noptions = (int)(sizeof fdmt_options / sizeof fdmt_options[0]),
        .option = fdmt_option, .ctx = &list, .help = help, .run = dedisperse,
    };
    return ddtk_ddtool_main(&tool, &args, argc, argv);
}
