/*
 * dd_subband - two-stage sub-band dedispersion of a SIGPROC filterbank over a
 * DM list (Barsdell et al. 2012 section 4.1, PRESTO prepsubband): the engine's
 * sub-band plug-in (src/algos/subband.c) behind dd_direct's command line.
 */
#include "ddcli.h"
#include "dmplan.h"
#include "internal.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("Usage: dd_subband [FILE|-] (--dm DM[,DM...] | [--dm-min A] --dm-max B\n"
           "                  [--dm-step S] | --dm-list F | --plan F) [--nsub N] [--dm-group M]\n"
           "                  [--sub-dm D] [--max-smear-ratio R] [options]\n"
           "Sub-band dedispersion of a SIGPROC filterbank: each sub-band is dedispersed at\n"
           "a nominal DM per group of M trial DMs, then the sub-band series at every trial\n"
           "DM, writing one time series per DM.\n\n"
           "  --nsub N              sub-bands (default: the wisdom's tuned layout, else the\n"
           "                        cheapest within the budget)\n"
           "  --dm-group M          trial DMs per nominal DM, N'DM (default: as --nsub;\n"
           "                        a --plan file's dms_per_sub column when it has one)\n"
           "  --sub-dm D            one nominal DM for every trial (prepsubband -subdm)\n"
           "  --max-smear-ratio R   extra smearing at most R times the direct smearing of\n"
           "                        a 40 us pulse at every DM (default 0.1)\n%s",
           ddtk_ddcli_help);
}

/* A parameter's value in a->desc (set, else its default). */
static double param(const ddtk_ddargs *a, const char *name)
{
    double v = 0;
    ddtk_plan_desc_get_param(&a->desc, name, &v);
    return v;
}

/* A --plan file's dms_per_sub column, per DM, when every row has one. */
static int plan_groups(ddtk_ddargs *a, int **per_dm)
{
    ddtk_dmplan plan = { 0 };
    int rc = ddtk_dmplan_read(&plan, a->plan_file), k = 0, planned = 1;
    for (int i = 0; !rc && i < plan.n; i++)
        planned &= plan.row[i].dms_per_sub > 0;
    if (!rc && param(a, "sub_dm") >= 0 && plan.n > 1)
        rc = ddtk_fail(DDTK_EUSAGE, "%s: --sub-dm gives one nominal DM, but the plan's %d "
                       "ranges need one each", a->plan_file, plan.n);
    if (!rc && planned && param(a, "sub_dm") < 0 && param(a, "dm_group") == 0) {
        if (!(*per_dm = ddtk_malloc((size_t)ddtk_dmplan_ndm(&plan) * sizeof **per_dm,
                                    "DM groups")))
            rc = DDTK_ESYS;
        for (int i = 0; !rc && i < plan.n; i++)
            for (int j = 0; j < plan.row[i].ndm; j++)
                (*per_dm)[k++] = plan.row[i].dms_per_sub;
    }
    ddtk_dmplan_free(&plan);
    return rc;
}

/* The sub-band choice, in the .inf notes before the killed channels. */
static void notes_lead(const ddtk_ddargs *a, const ddtk_plan *plan, int per_dm, char *s,
                       size_t n)
{
    ddtk_subband_info sb;
    ddtk_plan_subband_info(plan, &sb);
    snprintf(s, n,
             "Sub-bands: %d of up to %d channels\n"
             "%s%d trial DMs per nominal DM, %d nominal DMs%s\n"
             "Predicted extra smearing (Barsdell B1, centred): at most %.4g ms\n"
             "Total smearing at most %.1f%% above direct (B3); work 1/%.2f of direct\n",
             sb.nsub, sb.chans_per_sub, per_dm ? "Plan file, first range: " : "", sb.dm_group,
             sb.nnominal, param(a, "sub_dm") >= 0 ? " (--sub-dm)" : "", sb.max_extra * 1e3,
             sb.max_ratio * 100, sb.work_ratio);
}

/* After the run's own summary: the sub-band choice, the predicted smearing of
 * each DM range (one per time-scrunch level) and where the kernel time went. */
static void summary(const ddtk_plan *plan)
{
    ddtk_subband_info sb, lv;
    ddtk_plan_subband_info(plan, &sb);
    ddtk_msg("sub-band: nsub %d, N'DM %d, %d nominal DMs, predicted extra smearing %.4g ms "
             "(%.1f%% of direct), work 1/%.2f of direct; stage 1 %.3f s, stage 2 %.3f s "
             "(%s)", sb.nsub, sb.dm_group, sb.nnominal, sb.max_extra * 1e3,
             sb.max_ratio * 100, sb.work_ratio, sb.stage1_s, sb.stage2_s,
             strcmp(ddtk_plan_backend(plan), "gpu") ? "CPU thread-seconds" : "GPU seconds");
    for (int k = 0; k < DDTK_MAX_LEVELS; k++)
        if (!ddtk_plan_subband_level(plan, k, &lv) && lv.downsamp)
            ddtk_msg("sub-band: DM %.3f-%.3f (downsampled x%d): %d nominal DMs, predicted "
                     "extra smearing %.4g ms (%.1f%% of direct)", lv.dm_lo, lv.dm_hi,
                     lv.downsamp, lv.nnominal, lv.max_extra * 1e3, lv.max_ratio * 100);
}

static int dedisperse(ddtk_ddargs *a, ddtk_input *in, void *ctx)
{
    (void)ctx;
    ddtk_plan *plan;
    int *per_dm = NULL, rc = DDTK_OK;
    if (a->plan_file && (rc = plan_groups(a, &per_dm)))
        return rc;
    if (per_dm)
        rc = ddtk_plan_desc_set_param_per_dm(&a->desc, "dm_group", per_dm);
    if (!rc && !(rc = ddtk_ddargs_plan(a, in, &plan))) {
        char lead[1024];
        notes_lead(a, plan, per_dm != NULL, lead, sizeof lead);
        const ddtk_notes notes = { .tool = "dd_subband", .algorithm = "sub-band", .lead = lead,
                                   .trail = "", .rounding = 1, .scrunched = a->downsamp != NULL };
        rc = ddtk_ddargs_run(a, in, plan, &notes);
        if (!rc && !a->desc.quiet)
            summary(plan);
        ddtk_plan_destroy(plan);
    }
    free(per_dm);
    return rc;
}

int main(int argc, char **argv)
{
    ddtk_ddargs args;
    const ddtk_ddtool tool = { .algorithm = "subband", .help = help, .run = dedisperse };
    return ddtk_ddtool_main(&tool, &args, argc, argv);
}
