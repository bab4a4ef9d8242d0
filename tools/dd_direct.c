/*
 * dd_direct - direct (brute-force) dedispersion of a SIGPROC filterbank over a DM list.
 */
#include "ddcli.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("Usage: dd_direct [FILE|-] (--dm DM[,DM...] | --dm-min A --dm-max B [--dm-step S]\n"
           "                 | --dm-list F | --plan F) [--scrunch auto|none]\n"
           "                 [-o FILE | --prefix P] [--format tim|dat] [options]\n"
           "Direct dedispersion of a SIGPROC filterbank: sums every channel at its delay\n"
           "for each DM trial, writing one time series per DM.\n\n%s", ddtk_ddcli_help);
}

static char *run_notes(const ddtk_ddargs *a, const ddtk_channels *ch, int nkilled,
                       const char *backend)
{
    char *notes = malloc(1024);
    if (notes)
        snprintf(notes, 1024,
                 "Dedispersed by ddtk %s dd_direct (direct algorithm, %s backend)\n"
                 "Dispersion constant %.10g s MHz^2 pc^-1 cm^3, reference frequency %.6f MHz, "
                 "delays rounded %s\n"
                 "Killed channels: %d of %d%s%s%s%s",
                 DDTK_VERSION, backend, a->opt.kdm, ch->fref,
                 a->opt.rounding == DDTK_ROUND_FLOOR ? "down (floor)" : "to nearest",
                 nkilled, ch->nchans, a->opt.zerodm ? "\nZero-DM filter applied" : "",
                 a->opt.pad ? "\nPadded to the input length with the series mean" : "",
                 a->out.even ? "\nTrimmed to an even length when odd (--even)" : "",
                 a->downsamp ? "\nTime scrunched: each series at its DM's downsampling "
                               "factor times the input tsamp" : "");
    return notes;
}

static int dedisperse(ddtk_ddargs *a, ddtk_input *in)
{
    ddtk_direct_plan *plan;
    ddtk_outset out;
    ddtk_run_stats stats;
    int rc = ddtk_ddargs_resolve(a, &in->hdr);
    if (rc || (rc = ddtk_direct_plan_create(&plan, in, a->dms.dm, a->dms.n, &a->opt)))
        return rc;
    const ddtk_channels *ch = ddtk_direct_plan_channels(plan);
    char *notes = run_notes(a, ch, ch->nchans - ch->nlive, ddtk_direct_plan_backend(plan));
    ddtk_series_meta meta = {
        .in = &in->hdr, .tsamp = in->hdr.tsamp, .fref = ch->fref, .flow = ch->fmin,
        .bandwidth = ch->chan_bw * ch->nchans, .chan_bw = ch->chan_bw, .nchans = ch->nchans,
        .notes = notes, .downsamp = a->downsamp,
    };
    if (!(rc = ddtk_outset_open(&out, a->dms.dm, a->dms.n, &a->out, &meta))) {
        rc = ddtk_direct_plan_execute(plan, &out, &stats);
        rc = rc ? (ddtk_outset_abort(&out), rc) : ddtk_outset_close(&out);
        if (!rc && !a->opt.quiet)
            ddtk_print_summary(&stats, "direct");
    }
    free(notes);
    ddtk_direct_plan_destroy(plan);
    return rc;
}

int main(int argc, char **argv)
{
    ddtk_ddargs args;
    ddtk_input in;
    int rc;
    ddtk_set_progname(argv[0]);
    ddtk_ddargs_init(&args);
    rc = ddtk_ddargs_parse(&args, argc, argv, NULL, 0, NULL, NULL, help);
    if (rc == DDTK_DONE)
        rc = DDTK_OK;
    else if (!rc && args.list_gpus)
        rc = ddtk_gpu_list(stdout);
    else if (!rc) {
        rc = ddtk_input_open(&in, args.input);
        if (!rc)
            rc = dedisperse(&args, &in);
        ddtk_input_close(&in);
    }
    if (rc)
        ddtk_msg("%s", ddtk_errmsg());
    ddtk_ddargs_free(&args);
    return rc;
}
