/*
 * dd_direct - direct (brute-force) dedispersion of a SIGPROC filterbank over a DM list.
 */
#include "ddcli.h"
#include "internal.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("Usage: dd_direct [FILE|-] (--dm DM[,DM...] | [--dm-min A] --dm-max B\n"
           "                 [--dm-step S] | --dm-list F | --plan F) [--scrunch auto|none]\n"
           "                 [-o FILE | --prefix P] [--format tim|dat] [options]\n"
           "Direct dedispersion of a SIGPROC filterbank: sums every channel at its delay\n"
           "for each DM trial, writing one time series per DM.\n\n%s", ddtk_ddcli_help);
}

static int dedisperse(ddtk_ddargs *a, ddtk_input *in, void *ctx)
{
    (void)ctx;
    ddtk_plan *plan;
    int rc = ddtk_ddargs_plan(a, in, &plan);
    if (rc)
        return rc;
    const ddtk_notes notes = { .tool = "dd_direct", .algorithm = "direct", .lead = "",
                               .trail = "", .rounding = 1, .scrunched = a->downsamp != NULL };
    rc = ddtk_ddargs_run(a, in, plan, &notes);
    ddtk_plan_destroy(plan);
    return rc;
}

int main(int argc, char **argv)
{
    static const ddtk_ddtool tool = { .algorithm = "direct", .help = help, .run = dedisperse };
    ddtk_ddargs args;
    return ddtk_ddtool_main(&tool, &args, argc, argv);
}
