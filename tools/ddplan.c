/*
 * ddplan - plan the DM trials of a search: a tolerance-spaced list (with
 * optional time scrunching) or PRESTO DDplan-style ranges, with the smearing
 * per algorithm and the cost of each. Writes --write-dm-list and --write-plan
 * files (--dm-list and --plan name the files the dd_* tools read: here they
 * are usage errors that say the new name).
 */
#include "dmplan.h"
#include "internal.h"
#include "cli.h"
#include "tempfile.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_NCHANS = 1000, OPT_FCH1, OPT_FOFF, OPT_TSAMP, OPT_NSAMPLES, OPT_TOBS, OPT_NBITS,
    OPT_DM_MIN, OPT_DM_MAX, OPT_MODE, OPT_TOL, OPT_WIDTH, OPT_NSUB, OPT_SCRUNCH, OPT_DM_LIST,
    OPT_PLAN, OPT_WRITE_DM_LIST, OPT_WRITE_PLAN, OPT_KDM, OPT_FORCE, OPT_VERSION
};

typedef struct args {
    const char *input, *dm_list, *plan;
    int nchans, nbits, nsub, ranges, scrunch, force, quiet, verbose;
    double fch1, foff, tsamp, tobs, dm_min, dm_max, tol, width, kdm;
    int64_t nsamples;
} args;

static const struct option options[] = {
    { "nchans", required_argument, 0, OPT_NCHANS }, { "fch1", required_argument, 0, OPT_FCH1 },
    { "foff", required_argument, 0, OPT_FOFF }, { "tsamp", required_argument, 0, OPT_TSAMP },
    { "nsamples", required_argument, 0, OPT_NSAMPLES }, { "tobs", required_argument, 0, OPT_TOBS },
    { "nbits", required_argument, 0, OPT_NBITS }, { "dm-min", required_argument, 0, OPT_DM_MIN },
    { "dm-max", required_argument, 0, OPT_DM_MAX }, { "mode", required_argument, 0, OPT_MODE },
    { "tol", required_argument, 0, OPT_TOL }, { "pulse-width", required_argument, 0, OPT_WIDTH },
    { "nsub", required_argument, 0, OPT_NSUB }, { "scrunch", required_argument, 0, OPT_SCRUNCH },
    { "dm-list", required_argument, 0, OPT_DM_LIST }, { "plan", required_argument, 0, OPT_PLAN },
    { "write-dm-list", required_argument, 0, OPT_WRITE_DM_LIST },
    { "write-plan", required_argument, 0, OPT_WRITE_PLAN },
    { "kdm", required_argument, 0, OPT_KDM }, { "force", no_argument, 0, OPT_FORCE },
    DDTK_STANDARD_OPTIONS(OPT_VERSION),
    { 0, 0, 0, 0 },
};

static void help(void)
{
    printf(
        "Usage: ddplan [FILE] [--nchans N --fch1 F --foff DF --tsamp S] --dm-min A --dm-max B\n"
        "              [--mode tol|ranges] [--tol T --pulse-width W] [--nsub N]\n"
        "              [--scrunch auto|none] [--write-dm-list F] [--write-plan F]\n"
        "Plan the DM trials of a search and report the smearing and cost of each\n"
        "algorithm. The set-up comes from a SIGPROC header (FILE) or the options.\n\n"
        "  --nchans N --fch1 F --foff DF --tsamp S   channels, centre of channel 0 (MHz),\n"
        "                           channel step (MHz), sample time (s) (no defaults)\n"
        "  --nsamples N | --tobs T  length for the cost model (default: the file's, else 1 s)\n"
        "  --nbits B                input bits per sample, for the input rate (default 8)\n"
        "  --dm-min A --dm-max B    DM range (default 0 and 1000 pc cm^-3)\n"
        "  --mode tol|ranges        tolerance-spaced list, or PRESTO DDplan.py-style ranges\n"
        "                           (default tol)\n"
        "  --tol T                  smearing tolerance between DMs, > 1 (default 1.25)\n"
        "  --pulse-width W          intrinsic pulse width in us (default 40)\n"
        "  --nsub N                 sub-bands, for DDplan's sub-band term and the sub-band\n"
        "                           and tree smearing and cost (default 64, at most nchans)\n"
        "  --scrunch auto|none      tol mode: scrunch by 2^k past 2^k times the diagonal DM\n"
        "                           (default none; ranges always downsample)\n"
        "  --kdm K                  dispersion constant (default 4148.741601)\n"
        "  --write-dm-list FILE     write the DMs, one per line (the dd_* tools' --dm-list)\n"
        "  --write-plan FILE        write the plan as TSV (dm_lo dm_hi dm_step downsamp ndm;\n"
        "                           the dd_* tools' --plan)\n"
        "  --force                  overwrite existing --write-dm-list/--write-plan files\n"
        "  -q, --quiet              no table    -v, --verbose  one line per DM (tol mode)\n"
        "  -h, --help               this help   --version      print the version\n");
}

static const char *const modes[] = { "tol", "ranges", NULL };
static const char *const scrunch_modes[] = { "none", "auto", NULL };

static int option(int code, const char *arg, void *ctx)
{
    args *a = ctx;
    switch (code) {
    case OPT_NCHANS: return ddtk_opt_int("--nchans", arg, 1, 1 << 24, &a->nchans);
    case OPT_FCH1: return ddtk_opt_double("--fch1", arg, &a->fch1);
    case OPT_FOFF: return ddtk_opt_double("--foff", arg, &a->foff);
    case OPT_TSAMP: return ddtk_opt_double("--tsamp", arg, &a->tsamp);
    case OPT_NSAMPLES: return ddtk_opt_int64("--nsamples", arg, 1, (int64_t)1 << 40, &a->nsamples);
    case OPT_TOBS: return ddtk_opt_double("--tobs", arg, &a->tobs);
    case OPT_NBITS: return ddtk_opt_int("--nbits", arg, 1, 32, &a->nbits);
    case OPT_DM_MIN: return ddtk_opt_double("--dm-min", arg, &a->dm_min);
    case OPT_DM_MAX: return ddtk_opt_double("--dm-max", arg, &a->dm_max);
    case OPT_MODE: return ddtk_opt_choice("--mode", arg, modes, &a->ranges);
    case OPT_TOL: return ddtk_opt_double("--tol", arg, &a->tol);
    case OPT_WIDTH: return ddtk_opt_double("--pulse-width", arg, &a->width);
    case OPT_NSUB: return ddtk_opt_int("--nsub", arg, 1, 1 << 24, &a->nsub);
    case OPT_SCRUNCH: return ddtk_opt_choice("--scrunch", arg, scrunch_modes, &a->scrunch);
    case OPT_WRITE_DM_LIST: a->dm_list = arg; break;
    case OPT_WRITE_PLAN: a->plan = arg; break;
    case OPT_DM_LIST:
    case OPT_PLAN:
        return ddtk_fail(DDTK_EUSAGE, "%s %s: ddplan writes this file with %s FILE (%s FILE "
                         "reads one in the dd_* tools)", code == OPT_PLAN ? "--plan" : "--dm-list",
                         arg, code == OPT_PLAN ? "--write-plan" : "--write-dm-list",
                         code == OPT_PLAN ? "--plan" : "--dm-list");
    case OPT_KDM:
        if (ddtk_opt_double("--kdm", arg, &a->kdm))
            return DDTK_EUSAGE;
        if (!(a->kdm > 0))
            return ddtk_bad_option("--kdm", arg, "must be > 0");
        break;
    case OPT_FORCE: a->force = 1; break;
    case 'q': a->quiet = 1; break;
    case 'v': a->verbose = 1; break;
    default: return DDTK_EUSAGE;
    }
    return DDTK_OK;
}

static int parse(args *a, int argc, char **argv)
{
    int rc = ddtk_getopt(argc, argv, ":qvh", options, OPT_VERSION, help, option, a);
    return rc ? rc : ddtk_one_input(argc, argv, &a->input);
}

static int check(const args *a)
{
    if (!isfinite(a->dm_min) || !isfinite(a->dm_max) || a->dm_min < 0 || !(a->dm_max > a->dm_min))
        return ddtk_fail(DDTK_EUSAGE, "--dm-min %g --dm-max %g: need 0 <= dm-min < dm-max",
                         a->dm_min, a->dm_max);
    if (!(a->tol > 1))
        return ddtk_fail(DDTK_EUSAGE, "--tol %g: the tolerance must be > 1", a->tol);
    if (!(a->width >= 0))
        return ddtk_fail(DDTK_EUSAGE, "--pulse-width %g: need a width >= 0 us", a->width);
    if (a->tobs < 0 || (a->tobs > 0 && a->nsamples > 0))
        return ddtk_fail(DDTK_EUSAGE, "--tobs %g: give one positive length, --tobs or --nsamples",
                         a->tobs);
    if (a->ranges && a->scrunch)
        return ddtk_fail(DDTK_EUSAGE, "--scrunch is for --mode tol; ranges carry their own "
                         "downsampling");
    return DDTK_OK;
}

static int setup(const args *a, ddtk_obs *o)
{
    if (!a->input) {
        if (!a->nchans || isnan(a->fch1) || isnan(a->foff) || isnan(a->tsamp))
            return ddtk_fail(DDTK_EUSAGE, "give a filterbank FILE, or --nchans, --fch1, --foff "
                             "and --tsamp (see --help)");
        return ddtk_obs_init(o, a->nchans, a->fch1, a->foff, a->tsamp, a->nsamples, a->kdm);
    }
    ddtk_input in;
    int rc = ddtk_input_open(&in, a->input);
    if (!rc)
        rc = ddtk_input_require_filterbank(&in);
    if (!rc)
        rc = ddtk_obs_from_header(o, &in.hdr, in.nsamples > 0 ? in.nsamples : 0, a->kdm);
    ddtk_input_close(&in);
    if (!rc && a->nsamples > 0)
        o->nsamples = a->nsamples;
    return rc;
}

static int make_plan(const args *a, const ddtk_obs *o, ddtk_dmplan *p)
{
    if (a->ranges)
        return ddtk_dmplan_ranges(p, o, a->dm_min, a->dm_max, a->nsub);
    ddtk_dmlist l = { 0 };
    int rc = ddtk_dmlist_tol(&l, a->dm_min, a->dm_max, o->tsamp, a->width, a->tol, o->fctr,
                             o->chan_bw, o->nchans);
    int *ds = rc ? NULL : ddtk_malloc((size_t)l.n * sizeof *ds, "scrunch factors");
    if (!rc && !ds)
        rc = DDTK_ESYS;
    for (int i = 0; !rc && i < l.n; i++)
        ds[i] = a->scrunch ? ddtk_scrunch_factor(o, l.dm[i]) : 1;
    if (!rc)
        rc = ddtk_dmplan_from_list(p, l.dm, ds, l.n);
    free(ds);
    ddtk_dmlist_free(&l);
    return rc;
}

/* A table line: rows merged while they share a downsampling factor (a tol
 * plan has one row per DM). *probe is the row the smearing is judged on:
 * the line's last DM with its largest step. */
typedef struct line {
    double lo, hi, max_step;
    int downsamp, ndm, rows;
    ddtk_dmplan_row probe;
} line;

static int next_line(const ddtk_dmplan *p, int i, line *l)
{
    const ddtk_dmplan_row *r = &p->row[i];
    *l = (line){ .lo = r->dm_lo, .hi = r->dm_hi, .max_step = r->dm_step,
                 .downsamp = r->downsamp, .ndm = r->ndm, .rows = 1, .probe = *r };
    while (r->ndm == 1 && i + l->rows < p->n && p->row[i + l->rows].ndm == 1
           && p->row[i + l->rows].downsamp == l->downsamp) {
        const ddtk_dmplan_row *q = &p->row[i + l->rows++];
        l->hi = q->dm_hi;
        l->max_step = fmax(l->max_step, q->dm_step);
        l->ndm++;
        l->probe = *q;
    }
    l->probe.dm_step = l->max_step;
    return i + l->rows;
}

/* The algorithms with a smearing and cost model, as index + 1 (0 ends). */
#define NMODELS 16
static int models[NMODELS];

static void find_models(const ddtk_obs *o)
{
    const ddtk_dmplan none = { 0 };
    double adds;
    for (int i = 0, n = 0; ddtk_algorithm(i) && n < NMODELS; i++)
        if (!ddtk_model_adds(ddtk_algorithm(i), o, &none, 0, 1, &adds))
            models[n++] = i + 1;
}

static void print_header(const args *a, const ddtk_obs *o, int chans_per_sub)
{
    printf("# ddplan: %d channels, %.6g..%.6g MHz (centre %.6g, BW %.6g, channel %.6g MHz), "
           "tsamp %.6g us\n", o->nchans, o->flo, o->fhi, o->fctr, o->bw, o->chan_bw,
           o->tsamp * 1e6);
    printf("# mode %s, DM %g..%g, ", a->ranges ? "ranges (DDplan.py)" : "tol", a->dm_min, a->dm_max);
    if (a->ranges)
        printf("%d sub-bands", a->nsub);
    else
        printf("tol %g, pulse width %g us, scrunch %s", a->tol, a->width,
               a->scrunch ? "auto" : "none");
    printf("; diagonal DM %.4g\n", ddtk_diagonal_dm(o));
    printf("# smearing in ms at each line's highest DM: sampling, intrinsic width, channel,\n"
           "# DM step, and totals in quadrature for direct, sub-band (%d ch/sub-band, Barsdell\n"
           "# eq. B1) and piecewise-linear tree (eq. A1)\n", chans_per_sub);
    printf("%9s %9s %7s %8s %7s %9s %7s %7s %7s %7s", "Low_DM", "High_DM", "dDM",
           "DownSamp", "#DMs", "WorkFract", "t_samp", "t_width", "t_chan", "t_step");
    for (int i = 0; i < NMODELS && models[i]; i++)
        printf(" %7s", ddtk_algorithm(models[i] - 1));
    printf("\n");
}

static void print_table(const args *a, const ddtk_obs *o, const ddtk_dmplan *p, int chans_per_sub)
{
    double work = 0;
    for (int i = 0; i < p->n; i++)
        work += (double)p->row[i].ndm / p->row[i].downsamp;
    print_header(a, o, chans_per_sub);
    for (int i = 0; i < p->n;) {
        line l;
        ddtk_smear s;
        i = next_line(p, i, &l);
        ddtk_smear_row(o, &l.probe, a->width * 1e-6, &s);
        printf("%9.3f %9.3f %7.4g %8d %7d %9.4g %7.4f %7.4f %7.4f %7.4f", l.lo, l.hi,
               l.max_step, l.downsamp, l.ndm, (double)l.ndm / l.downsamp / work, s.samp * 1e3,
               s.width * 1e3, s.chan * 1e3, s.step * 1e3);
        for (int m = 0; m < NMODELS && models[m]; m++) {
            double total = 0;
            ddtk_model_smear(ddtk_algorithm(models[m] - 1), o, &l.probe, &s, chans_per_sub,
                             &total);
            printf(" %7.4f", total * 1e3);
        }
        printf("\n");
    }
}

static void print_cost(const ddtk_obs *o, const ddtk_dmplan *p, int nbits, int chans_per_sub)
{
    int64_t n = o->nsamples > 0 ? o->nsamples : (int64_t)llround(1.0 / o->tsamp);
    double tobs = n * o->tsamp, adds[NMODELS], out = ddtk_dmplan_out_bytes(p, n);
    int m = 0;
    printf("# total: %d DMs; cost for %lld samples (%.6g s):\n", ddtk_dmplan_ndm(p),
           (long long)n, tobs);
    printf("#   sample-adds:");
    for (; m < NMODELS && models[m]; m++) {
        ddtk_model_adds(ddtk_algorithm(models[m] - 1), o, p, n, chans_per_sub, &adds[m]);
        printf("%s %s %.4g", m ? "," : "", ddtk_algorithm_label(models[m] - 1), adds[m]);
    }
    for (int i = 0; i < m; i++)
        printf("%s%.4g", i ? ", " : " (", adds[i] / tobs);
    printf(" per s of data)\n");
    printf("#   output %.4g bytes (%.4g MB/s of data); input %.4g MB/s at %d bits\n", out,
           out / tobs / 1e6, o->nchans * (double)nbits / 8 / o->tsamp / 1e6, nbits);
}

static void print_dms(const ddtk_dmplan *p)
{
    for (int i = 0; i < p->n; i++)
        for (int j = 0; j < p->row[i].ndm; j++)
            printf("# DM %.6f downsamp %d\n", p->row[i].dm_lo + j * p->row[i].dm_step,
                   p->row[i].downsamp);
}

static int write_dm_list(const ddtk_dmplan *p, const char *path, int force)
{
    if (access(path, F_OK) == 0 && !force)
        return ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", path);
    char *tmp;
    FILE *fp = ddtk_temp_create(path, &tmp);
    if (!fp)
        return DDTK_ESYS;
    for (int i = 0; i < p->n; i++)
        for (int j = 0; j < p->row[i].ndm; j++)
            fprintf(fp, "%.10g\n", p->row[i].dm_lo + j * p->row[i].dm_step);
    return ddtk_temp_commit(fp, &tmp, path);
}

static int run(args *a)
{
    ddtk_obs o;
    ddtk_dmplan p = { 0 };
    int rc = check(a);
    if (!rc)
        rc = setup(a, &o);
    if (rc)
        return rc;
    if (a->nsub > o.nchans)
        a->nsub = o.nchans;
    if (a->tobs > 0)
        o.nsamples = (int64_t)llround(a->tobs / o.tsamp);
    int chans_per_sub = (o.nchans + a->nsub - 1) / a->nsub;
    rc = make_plan(a, &o, &p);
    /* check both names before writing either, so a refusal leaves nothing */
    if (!rc && a->dm_list && !a->force && access(a->dm_list, F_OK) == 0)
        rc = ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", a->dm_list);
    if (!rc && a->plan && !a->force && access(a->plan, F_OK) == 0)
        rc = ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", a->plan);
    if (!rc && !a->quiet) {
        find_models(&o);
        print_table(a, &o, &p, chans_per_sub);
        if (a->verbose)
            print_dms(&p);
        print_cost(&o, &p, a->nbits, chans_per_sub);
    }
    if (!rc && a->dm_list)
        rc = write_dm_list(&p, a->dm_list, a->force);
    if (!rc && a->plan && (rc = ddtk_dmplan_write(&p, a->plan, a->force)) && a->dm_list)
        unlink(a->dm_list);
    ddtk_dmplan_free(&p);
    return rc;
}

int main(int argc, char **argv)
{
    args a = { .nbits = 8, .nsub = 64, .fch1 = NAN, .foff = NAN, .tsamp = NAN,
               .dm_max = 1000, .tol = 1.25, .width = 40, .kdm = DDTK_KDM_DEFAULT };
    ddtk_set_progname(argv[0]);
    int rc = parse(&a, argc, argv);
    if (!rc)
        rc = run(&a);
    return ddtk_exit_status(rc);
}
