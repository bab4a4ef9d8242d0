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

/* Short lines, the killed channels early: PRESTO's reader keeps lines of
 * under 100 characters and about the first 500 characters of the notes. */
static char *run_notes(const ddtk_ddargs *a, const ddtk_plan *plan, const ddtk_input *in)
{
    char *notes = malloc(1024);
    int nchans = in->hdr.nchans;
    if (notes)
        snprintf(notes, 1024,
                 "Dedispersed by ddtk %s dd_direct (direct algorithm, %s backend)\n"
                 "Killed channels: %d of %d\n"
                 "kDM %.10g s MHz^2 pc^-1 cm^3, fref %.6f MHz, delays rounded %s%s%s",
                 DDTK_VERSION, ddtk_plan_backend(plan), nchans - ddtk_plan_nlive(plan), nchans,
                 a->desc.kdm, ddtk_plan_fref(plan),
                 a->desc.rounding == DDTK_ROUND_FLOOR ? "down (floor)" : "to nearest",
                 a->desc.zerodm ? "\nZero-DM filter applied" : "",
                 a->downsamp ? "\nTime scrunched: tsamp is the DM's downsampling factor "
                               "times the input's" : "");
    return notes;
}

static int dedisperse(ddtk_ddargs *a, ddtk_input *in, void *ctx)
{
    (void)ctx;
    ddtk_plan *plan;
    int rc = ddtk_ddargs_plan(a, in, &plan);
    if (rc)
        return rc;
    rc = ddtk_ddargs_run(a, in, plan, run_notes(a, plan, in));
    ddtk_plan_destroy(plan);
    return rc;
}

int main(int argc, char **argv)
{
    static const ddtk_ddtool tool = { .algorithm = "direct", .help = help, .run = dedisperse };
    ddtk_ddargs args;
    return ddtk_ddtool_main(&tool, &args, argc, argv);
}
