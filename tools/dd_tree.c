/*
 * dd_tree - tree (Taylor) dedispersion of a SIGPROC filterbank (Barsdell et
 * al. 2012 section 3) at the DMs the tree computes (eq. 9 and its scrunched
 * extensions), through the same engine, options and outputs as dd_direct.
 */
#include "ddcli.h"
#include "tree.h"
#include "internal.h"
#include "cli.h"

#include <math.h>

/* The algorithm's parameters (--method, --sub-chans, --max-smear, --gpu-group, --chunk)
 * are the shared command line's; these two are dd_tree's own. */
enum { OPT_NSUB = 2000, OPT_LIST_DMS };

static const struct option tree_options[] = {
    { "nsub", required_argument, 0, OPT_NSUB },
    { "list-dms", no_argument, 0, OPT_LIST_DMS },
};

typedef struct tree_args {
    int nsub, list;
} tree_args;

static void help(void)
{
    printf("Usage: dd_tree [FILE|-] [--dm-min A] --dm-max B [--method piecewise|padded]\n"
           "               [--nsub N | --sub-chans C] [--scrunch auto|none] [--list-dms]\n"
           "               [-o FILE | --prefix P] [--format tim|dat] [options]\n"
           "Tree dedispersion of a SIGPROC filterbank (Barsdell et al. 2012, section 3).\n"
           "Its DMs are those of the tree (eq. 9): the DM step moves the sweep across the\n"
           "band by one sample; past the diagonal DM the tree is repeated with a diagonal\n"
           "delay, and the time resolution is halved per doubling (unless --scrunch none).\n\n"
           "Tree:\n"
           "  --method piecewise|padded  piecewise-linear sub-bands (default), or channels\n"
           "                           scattered linearly in f^-2 onto a padded band\n"
           "  --nsub N                 piecewise: N sub-bands (a power of two)\n"
           "  --sub-chans C            piecewise: C channels per sub-band (a power of two);\n"
           "                           default: the largest within --max-smear\n"
           "  --max-smear R            smearing budget of Appendix A, W_tree/W (default 1.1)\n"
           "                           for a pulse of --pulse-width\n"
           "  --pulse-width W          intrinsic pulse width in us (default 40)\n"
           "  --gpu-group G            GPU: rows per shared-memory pass of stage 1, a power of\n"
           "                           two 2..1024 (default 128, or $DDTK_TREE_GROUP)\n"
           "  --chunk N                CPU: output samples per stage-1 task (2048, raised to\n"
           "                           4 x the channels per sub-band; speed only; ddtune\n"
           "                           --algorithm tree tunes it and --gpu-group)\n"
           "  --list-dms               print the DMs and scrunch factors and exit\n\n"
           "%s", ddtk_ddcli_own_dms_help);
}

static int tree_option(int code, const char *arg, void *ctx)
{
    tree_args *t = ctx;
    switch (code) {
    case OPT_NSUB: return ddtk_opt_int("--nsub", arg, 1, 1 << 20, &t->nsub);
    case OPT_LIST_DMS: t->list = 1; return DDTK_OK;
    default: return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
    }
}

/* A parameter's value in the description (set, else its default). */
static double param(const ddtk_ddargs *a, const char *name)
{
    double v = 0;
    ddtk_plan_desc_get_param(&a->desc, name, &v);
    return v;
}

static int check_args(const ddtk_ddargs *a, const tree_args *t)
{
    const int sub_chans = (int)param(a, "sub_chans");
    if (t->nsub && sub_chans)
        return ddtk_fail(DDTK_EUSAGE, "--nsub and --sub-chans exclude each other");
    if ((t->nsub || sub_chans) && param(a, "method") == DDTK_TREE_PADDED)
        return ddtk_fail(DDTK_EUSAGE, "--nsub and --sub-chans are for --method piecewise");
    int n = t->nsub ? t->nsub : sub_chans;
    if (n & (n - 1))
        return ddtk_fail(DDTK_EUSAGE, "--%s %d: must be a power of two",
                         t->nsub ? "nsub" : "sub-chans", n);
    return DDTK_OK;
}

static int pow2_at_least(int n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

/* Per scrunch range: DMs, step and the Appendix-A smearing bound. */
static void report(const ddtk_ddargs *a, const ddtk_tree_setup *s, const ddtk_input *in)
{
    ddtk_channels ch;
    if (a->desc.quiet || ddtk_channels_init(&ch, &in->hdr, NULL, a->desc.fref))
        return;
    const double *dm = a->dms.dm;
    const int *ds = a->downsamp;
    ddtk_msg("tree: %s, %d channels per sub-band, %d DMs", s->method ? "frequency-padded"
             : "piecewise-linear", s->cps, a->dms.n);
    for (int i = 0, j; i < a->dms.n; i = j) {
        for (j = i + 1; j < a->dms.n && ds[j] == ds[i];)
            j++;
        double mu = ddtk_tree_list_smear(s, &ch, in->hdr.tsamp, dm + i, ds + i, j - i);
        ddtk_msg("tree: DM %.3f - %.3f step %.4f (%d DMs) at %d x tsamp: smearing W_tree/W <= "
                 "%.3f", dm[i], dm[j - 1], j - i > 1 ? dm[i + 1] - dm[i] : 0.0, j - i, ds[i],
                 mu);
    }
    ddtk_channels_free(&ch);
}

/* The tree's DMs for the input (the algorithm's own list) into a->dms and
 * a->downsamp, and its sub-band size into a->desc (ddtk_ddargs_own_dms copies
 * what the list resolved); s: the set-up for report. */
static int tree_dms(ddtk_ddargs *a, const tree_args *t, const ddtk_input *in,
                    ddtk_tree_setup *s)
{
    const int np = pow2_at_least(in->hdr.nchans);
    int rc = t->nsub ? ddtk_plan_desc_set_param(&a->desc, "sub_chans",
                                                np > t->nsub ? np / t->nsub : 1) : DDTK_OK;
    if (!rc)
        rc = ddtk_ddargs_own_dms(a, in);
    *s = (ddtk_tree_setup){
        .method = (int)param(a, "method"), .cps = (int)param(a, "sub_chans"),
        .scrunch = a->scrunch != 0, .dm_min = isnan(a->dm_min) ? 0 : a->dm_min,
        .dm_max = a->dm_max, .width = a->pulse_width * 1e-6, .kdm = a->desc.kdm,
        .max_smear = param(a, "max_smear"),
    };
    return rc;
}

static int dedisperse(ddtk_ddargs *a, ddtk_input *in, void *ctx)
{
    const tree_args *t = ctx;
    ddtk_tree_setup s;
    ddtk_plan *plan;
    int rc = check_args(a, t);
    if (!rc)
        rc = tree_dms(a, t, in, &s);
    if (rc || t->list)
        return rc ? rc : ddtk_ddargs_list_dms(a);
    if ((rc = ddtk_ddargs_plan(a, in, &plan)))
        return rc;
    report(a, &s, in);
    char trail[256];
    snprintf(trail, sizeof trail, "Tree: %s, %d channels per sub-band, DMs of eq. 9 (Barsdell "
             "2012)\n", s.method ? "frequency-padded" : "piecewise-linear", s.cps);
    const ddtk_notes notes = { .tool = "dd_tree", .algorithm = "tree", .lead = "",
                               .trail = trail, .rounding = 0, .scrunched = a->scrunch != 0 };
    rc = ddtk_ddargs_run(a, in, plan, &notes);
    ddtk_plan_destroy(plan);
    return rc;
}

int main(int argc, char **argv)
{
    ddtk_ddargs args;
    tree_args t = { 0 };
    const ddtk_ddtool tool = {
        .algorithm = "tree", .options = tree_options,
        .noptions = (int)(sizeof tree_options / sizeof tree_options[0]), .option = tree_option,
        .ctx = &t, .help = help, .run = dedisperse,
    };
    return ddtk_ddtool_main(&tool, &args, argc, argv);
}
