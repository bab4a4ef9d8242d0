/*
 * ddcli.c - the command line shared by the dedispersion tools (dd_direct,
 * dd_subband, dd_tree): one option table, one help text, one DM-list
 * resolution, so the three tools cannot drift apart.
 */
#include "ddcli.h"
#include "dmplan.h"
#include "internal.h"
#include "cli.h"
#include "tempfile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    OPT_PREFIX = 1000, OPT_FORMAT, OPT_DM, OPT_DM_MIN, OPT_DM_MAX, OPT_DM_STEP, OPT_DM_LIST,
    OPT_TOL, OPT_PULSE_WIDTH, OPT_KILLFILE, OPT_ZERODM, OPT_REF_FREQ, OPT_KDM, OPT_ROUNDING,
    OPT_GULP, OPT_MAX_MEM, OPT_THREADS, OPT_BACKEND, OPT_GPU, OPT_LIST_GPUS, OPT_FORCE,
    OPT_POL, OPT_PAD, OPT_EVEN, OPT_LENGTH, OPT_DISCARD, OPT_VERSION, OPT_PLAN, OPT_SCRUNCH,
    OPT_NBITS_OUT, OPT_WISDOM, OPT_NO_WISDOM, OPT_TUNE, OPT_RFI, OPT_MASK, OPT_RFI_CLIP,
    OPT_NO_BASELINE, OPT_NBITS_SCALE, OPT_SEARCH, OPT_SNR, OPT_MAX_WIDTH, OPT_SEARCH_WINDOW
};

static const struct option common_options[] = {
    { "output", required_argument, 0, 'o' },
    { "prefix", required_argument, 0, OPT_PREFIX },
    { "format", required_argument, 0, OPT_FORMAT },
    { "dm", required_argument, 0, OPT_DM },
    { "dm-min", required_argument, 0, OPT_DM_MIN },
    { "dm-max", required_argument, 0, OPT_DM_MAX },
    { "dm-step", required_argument, 0, OPT_DM_STEP },
    { "dm-list", required_argument, 0, OPT_DM_LIST },
    { "plan", required_argument, 0, OPT_PLAN },
    { "scrunch", required_argument, 0, OPT_SCRUNCH },
    { "tol", required_argument, 0, OPT_TOL },
    { "pulse-width", required_argument, 0, OPT_PULSE_WIDTH },
    { "killfile", required_argument, 0, OPT_KILLFILE },
    { "zerodm", no_argument, 0, OPT_ZERODM },
    { "ref-freq", required_argument, 0, OPT_REF_FREQ },
    { "kdm", required_argument, 0, OPT_KDM },
    { "rounding", required_argument, 0, OPT_ROUNDING },
    { "gulp", required_argument, 0, OPT_GULP },
    { "max-mem", required_argument, 0, OPT_MAX_MEM },
    { "threads", required_argument, 0, OPT_THREADS },
    { "backend", required_argument, 0, OPT_BACKEND },
    { "gpu", required_argument, 0, OPT_GPU },
    { "list-gpus", no_argument, 0, OPT_LIST_GPUS },
    { "force", no_argument, 0, OPT_FORCE },
    { "pol", required_argument, 0, OPT_POL },
    { "pad", no_argument, 0, OPT_PAD },
    { "even", no_argument, 0, OPT_EVEN },
    { "nbits-out", required_argument, 0, OPT_NBITS_OUT },
    { "nbits-scale", required_argument, 0, OPT_NBITS_SCALE },
    { "no-baseline", no_argument, 0, OPT_NO_BASELINE },
    { "length", required_argument, 0, OPT_LENGTH },
    { "wisdom", required_argument, 0, OPT_WISDOM },
    { "no-wisdom", no_argument, 0, OPT_NO_WISDOM },
    { "tune", no_argument, 0, OPT_TUNE },
    { "discard", no_argument, 0, OPT_DISCARD },
    { "rfi", required_argument, 0, OPT_RFI },
    { "rfi-clip", required_argument, 0, OPT_RFI_CLIP },
    { "mask", required_argument, 0, OPT_MASK },
    { "search", no_argument, 0, OPT_SEARCH },
    { "snr", required_argument, 0, OPT_SNR },
    { "max-width", required_argument, 0, OPT_MAX_WIDTH },
    { "search-window", required_argument, 0, OPT_SEARCH_WINDOW },
    DDTK_STANDARD_OPTIONS(OPT_VERSION),
};
#define NCOMMON ((int)(sizeof common_options / sizeof common_options[0]))

#define HELP_INPUT \
    "Input: a SIGPROC filterbank FILE, or '-' (or nothing) for stdin; or PSRFITS\n" \
    "search-mode FILEs (several: one observation, in time order).\n" \
    "\n"

#define HELP_TRIALS \
    "DM trials (one of):\n" \
    "  --dm DM[,DM...]          explicit DMs (pc cm^-3)\n" \
    "  [--dm-min A] --dm-max B --dm-step S   linear range, A and B included\n" \
    "  [--dm-min A] --dm-max B [--tol T] [--pulse-width W]\n" \
    "                           tolerance-spaced list (dedisperse_all/dedisp recurrence;\n" \
    "                           defaults T=1.25, W=40 us); A is 0 unless given\n" \
    "  --dm-list FILE           one DM per line\n" \
    "  --plan FILE              a ddplan plan (TSV: dm_lo dm_hi dm_step downsamp ndm);\n" \
    "                           DMs of a row with downsamp f are dedispersed at f*tsamp\n"

#define HELP_SCRUNCH \
    "  --scrunch auto|none      auto: halve the time resolution each time the DM passes\n" \
    "                           2^k times the diagonal DM (Barsdell 2.1); none: full\n" \
    "                           resolution (default: the plan's factors, else none)\n" \
    "\n"

#define HELP_DMS HELP_INPUT HELP_TRIALS HELP_SCRUNCH

#define HELP_OUTPUT \
    "Output:\n" \
    "  -o, --output FILE        output of a single-DM run (default: .tim to stdout)\n" \
    "  --prefix P               several DMs: P_DM%.2f.tim or .dat/.inf\n" \
    "                           (default: the input's name without its suffix)\n" \
    "  --format tim|dat         SIGPROC .tim or PRESTO .dat + .inf (default tim)\n" \
    "  --pad                    pad each series to the input length with its mean\n" \
    "  --length exact|even|fft  series length: exact (N_in - max delay), even (drop an odd\n" \
    "                           last sample), fft (pad with the mean to an even length with\n" \
    "                           no prime factor above 7, declared in the .inf, as prepdata);\n" \
    "                           default fft for dat, exact for tim\n" \
    "  --even                   --length even\n" \
    "  --no-baseline            .tim: raw sums (SIGPROC dedisperse -nobaseline); by default\n" \
    "                           each block of 32 x nchans samples less its median, as\n" \
    "                           dedisperse writes (.dat: always raw, as prepdata)\n" \
    "  --nbits-out B            8 or 16: .tim samples as unsigned integers (32: float32)\n" \
    "  --nbits-scale noise|sum  noise (default): each series scaled to its noise, sigma =\n" \
    "                           8 levels about 128 (8 bits) or 512 about 32768 (16 bits),\n" \
    "                           clipped samples counted; sum: raw sums / S, S the smallest\n" \
    "                           power of two keeping the largest possible sum in range\n" \
    "  --force                  overwrite existing outputs\n" \
    "  --discard                dedisperse but write no output (benchmarks)\n" \
    "\n" \
    "Single-pulse search (spsearch's, on each gulp as it is made):\n" \
    "  --search                 search every series, candidates to PREFIX.cand (Heimdall\n" \
    "                           columns; PREFIX as for the series, or -o without suffix);\n" \
    "                           with --discard, the candidates alone are written\n" \
    "  --snr S                  S/N threshold (default 6)\n" \
    "  --max-width W            widest boxcar, input samples, a power of two (default 1024;\n" \
    "                           at most a 16th of the baseline window)\n" \
    "  --search-window T        running baseline window in seconds (default 2)\n" \
    "\n"
#define HELP_KERNEL \
    "Tuned configuration (the wisdom: speed only, but for dd_subband's layout):\n" \
    "  --wisdom FILE            tuned configurations (default $DDTK_WISDOM, else\n" \
    "                           $XDG_CACHE_HOME/ddtk/wisdom or ~/.cache/ddtk/wisdom)\n" \
    "  --no-wisdom              built-in defaults, no wisdom file\n" \
    "  --tune                   tune this set-up first if the wisdom has no entry\n" \
    "                           (at most DDTK_TUNE_BUDGET seconds, default 30)\n" \
    "\n"

#define HELP_REST \
    "Dedispersion:\n" \
    "  --kdm K                  dispersion constant (default 4148.741601 s MHz^2 pc^-1 cm^3)\n" \
    "  --ref-freq MHz           reference frequency (default: highest channel centre)\n" \
    "  --rounding nearest|floor delay rounding (default nearest; floor = SIGPROC dedisperse)\n" \
    "  --killfile FILE          channels to kill: 0/1 mask per line (0 kills) or\n" \
    "                           a list of indices and ranges, e.g. 0:10,40,100:120\n" \
    "  --zerodm                 subtract each spectrum's mean before dedispersing\n" \
    "  --rfi auto|none          RFI excision before dedispersing (default none): per\n" \
    "                           2048-spectrum block, channels whose deviation is an IQRM\n" \
    "                           outlier and spectra whose zero-DM sum is (broadband\n" \
    "                           impulses, dropouts) are replaced by channel levels\n" \
    "  --rfi-clip S             zero-DM clipping threshold in robust sigmas (default 5)\n" \
    "  --mask FILE              a PRESTO rfifind mask (FILE_rfifind.mask): its channels\n" \
    "                           and intervals are replaced by channel levels\n" \
    "  --pol sum|N              IFs: sum of IFs 0 and 1, or IF N (default sum if nifs is 2 or 4)\n" \
    "\n" \
    "Resources:\n" \
    "  --gulp N                 spectra per gulp (default: automatic, >= 16384 and the max delay)\n" \
    "  --max-mem SIZE           memory bound for the gulp buffers and the tables\n" \
    "                           that grow with the DMs (default 2G)\n" \
    "  --threads N              CPU threads (default: OpenMP's, all cores)\n" \
    "  --backend cpu|gpu|auto   (default auto: the GPU when usable, else the CPU)\n" \
    "  --gpu N|LIST|all         GPU index (default 0; respects CUDA_VISIBLE_DEVICES), or\n" \
    "                           GPUs sharing the DMs (same outputs): 0,1,... as given, or\n" \
    "                           all: as many as the run's cost model finds faster than\n" \
    "                           fewer (-v says why; the driver makes each GPU's context\n" \
    "                           in turn, about 0.1 s)\n" \
    "  --list-gpus              list usable GPUs and exit\n" \
    "\n" \
    "  -q, --quiet              no progress or summary    -v, --verbose  more detail\n" \
    "  -h, --help               this help                 --version      print the version\n"

const char ddtk_ddcli_help[] = HELP_DMS HELP_OUTPUT HELP_KERNEL HELP_REST;
const char ddtk_ddcli_own_dms_help[] = HELP_INPUT
    "DM trials: the algorithm's own (above), from --dm-min A (default 0) to --dm-max B\n"
    "  --scrunch auto|none      auto (default): halve the time resolution per doubling\n"
    "                           of the DM past the diagonal DM; none: full resolution\n"
    "\n"
    HELP_OUTPUT HELP_KERNEL HELP_REST;
const char ddtk_ddcli_tune_help[] = HELP_DMS HELP_REST;

int ddtk_ddargs_no_outputs(const ddtk_ddargs *a)
{
    const ddtk_outspec *o = &a->out;
    if (o->output || o->prefix || o->format != DDTK_FMT_TIM || o->force
        || o->length != DDTK_LEN_AUTO || o->discard || a->pad || a->nbits_out != 32 || a->tune
        || !o->baseline || a->nbits_scale_given || a->search || a->search_opts)
        return ddtk_fail(DDTK_EUSAGE, "output options (-o, --prefix, --format, --pad, --length, "
                         "--even, --no-baseline, --nbits-out, --nbits-scale, --force, --discard, "
                         "--tune, --search) do not apply here: "
                         "this tool writes no series");
    return DDTK_OK;
}

void ddtk_ddargs_init(ddtk_ddargs *a)
{
    memset(a, 0, sizeof *a);
    ddtk_plan_desc_init(&a->desc);
    a->tol = 1.25;
    a->pulse_width = DDTK_PULSE_WIDTH * 1e6;
    a->dm_min = a->dm_max = a->dm_step = NAN;
    a->out.format = DDTK_FMT_TIM;
    a->scrunch = -1;
    a->nbits_out = 32;
    a->out.baseline = 1;
    ddtk_sps_params_init(&a->sps);
}

void ddtk_ddargs_free(ddtk_ddargs *a)
{
    ddtk_dmlist_free(&a->dms);
    free(a->default_prefix);
    free(a->downsamp);
    free(a->freqs);
    free(a->kill);
}

static const char *const formats[] = { "tim", "dat", NULL };
static const char *const scrunch_modes[] = { "none", "auto", NULL };
static const char *const roundings[] = { "nearest", "floor", NULL };

/* --length and --even: one length rule; two different ones are a usage error. */
static int length_rule(ddtk_ddargs *a, const char *opt, const char *arg, int rule)
{
    int rc = arg ? ddtk_opt_choice(opt, arg, ddtk_length_names, &rule) : DDTK_OK;
    if (!rc && a->out.length != DDTK_LEN_AUTO && rule != a->out.length)
        rc = ddtk_fail(DDTK_EUSAGE, "%s%s%s: conflicts with --length %s given before",
                       opt, arg ? " " : "", arg ? arg : "", ddtk_length_names[a->out.length]);
    if (!rc)
        a->out.length = rule;
    return rc;
}

/* A number that must be > 0. */
static int positive(const char *opt, const char *arg, double *v)
{
    int rc = ddtk_opt_double(opt, arg, v);
    return rc ? rc : *v > 0 ? DDTK_OK : ddtk_bad_option(opt, arg, "must be > 0");
}

static int common_option(ddtk_ddargs *a, int code, const char *arg)
{
    switch (code) {
    case 'o': a->out.output = arg; break;
    case OPT_PREFIX: a->out.prefix = arg; break;
    case OPT_FORMAT: return ddtk_opt_choice("--format", arg, formats, &a->out.format);
    case OPT_DM: a->dm_given = 1; return ddtk_dmlist_parse(&a->dms, arg);
    case OPT_DM_MIN: return ddtk_opt_double("--dm-min", arg, &a->dm_min);
    case OPT_DM_MAX: return ddtk_opt_double("--dm-max", arg, &a->dm_max);
    case OPT_DM_STEP: return ddtk_opt_double("--dm-step", arg, &a->dm_step);
    case OPT_DM_LIST: a->dm_list_file = arg; break;
    case OPT_PLAN: a->plan_file = arg; break;
    case OPT_SCRUNCH: return ddtk_opt_choice("--scrunch", arg, scrunch_modes, &a->scrunch);
    case OPT_TOL: a->tol_given = 1; return ddtk_opt_double("--tol", arg, &a->tol);
    case OPT_PULSE_WIDTH:
        a->tol_given = 1;
        return ddtk_opt_double("--pulse-width", arg, &a->pulse_width);
    case OPT_KILLFILE: a->killfile = arg; break;
    case OPT_ZERODM: a->desc.zerodm = 1; break;
    case OPT_REF_FREQ: return positive("--ref-freq", arg, &a->desc.fref);
    case OPT_KDM: return positive("--kdm", arg, &a->desc.kdm);
    case OPT_ROUNDING: return ddtk_opt_choice("--rounding", arg, roundings, &a->desc.rounding);
    case OPT_GULP: return ddtk_opt_int64("--gulp", arg, 1, INT64_MAX / 2, &a->desc.gulp);
    case OPT_MAX_MEM:
        if (ddtk_parse_size(arg, &a->desc.max_mem))
            return ddtk_bad_option("--max-mem", arg, "expected a size such as 512M or 4G");
        break;
    case OPT_THREADS: return ddtk_opt_int("--threads", arg, 1, 4096, &a->desc.threads);
    case OPT_BACKEND: return ddtk_opt_choice("--backend", arg, ddtk_backend_names, &a->desc.backend);
    case OPT_GPU: {
        int rc = ddtk_gpus_parse("--gpu", arg, a->gpus, &a->desc.ngpus);
        a->desc.gpus = a->gpus;
        a->desc.gpu = a->desc.ngpus > 0 ? a->gpus[0] : 0;
        return rc;
    }
    case OPT_LIST_GPUS: a->list_gpus = 1; break;
    case OPT_FORCE: a->out.force = 1; break;
    case OPT_DISCARD: a->out.discard = 1; break;
    case OPT_SEARCH: a->search = 1; break;
    case OPT_SNR: a->search_opts = 1; return positive("--snr", arg, &a->sps.snr);
    case OPT_MAX_WIDTH: {
        int rc = ddtk_opt_int("--max-width", arg, 1, 1 << 24, &a->sps.max_width);
        a->search_opts = 1;
        return rc ? rc : (a->sps.max_width & (a->sps.max_width - 1))
               ? ddtk_bad_option("--max-width", arg, "must be a power of two") : DDTK_OK;
    }
    case OPT_SEARCH_WINDOW: a->search_opts = 1; return positive("--search-window", arg, &a->sps.baseline);
    case OPT_POL:
        if (strcmp(arg, "sum") == 0)
            a->desc.pol = DDTK_POL_SUM;
        else
            return ddtk_opt_int("--pol", arg, 0, 1023, &a->desc.pol);
        break;
    case OPT_PAD: a->pad = 1; break;
    case OPT_EVEN: return length_rule(a, "--even", NULL, DDTK_LEN_EVEN);
    case OPT_LENGTH: return length_rule(a, "--length", arg, DDTK_LEN_AUTO);
    case OPT_WISDOM: a->wisdom = arg; break;
    case OPT_NO_WISDOM: a->no_wisdom = 1; break;
    case OPT_TUNE: a->tune = 1; break;
    case OPT_RFI: {
        static const char *const modes[] = { "none", "auto", NULL };
        return ddtk_opt_choice("--rfi", arg, modes, &a->clean.auto_rfi);
    }
    case OPT_RFI_CLIP: return positive("--rfi-clip", arg, &a->clean.clip_sigma);
    case OPT_MASK: a->clean.mask = arg; break;
    case OPT_NBITS_OUT: {
        static const char *const widths[] = { "8", "16", "32", NULL };
        int i;
        if (ddtk_opt_choice("--nbits-out", arg, widths, &i))
            return DDTK_EUSAGE;
        a->nbits_out = 8 << i;
        break;
    }
    case OPT_NBITS_SCALE: {
        static const char *const scalings[] = { "noise", "sum", NULL };
        a->nbits_scale_given = 1;
        return ddtk_opt_choice("--nbits-scale", arg, scalings, &a->nbits_scale);
    }
    case OPT_NO_BASELINE: a->out.baseline = 0; break;
    case 'q': a->desc.quiet = 1; break;
    case 'v': a->desc.verbose = ddtk_cli_verbose = 1; break;
    default: return -1;
    }
    return DDTK_OK;
}

/* ---- the algorithm's parameters as options ------------------------------------- */

#define OPT_PARAM 3000            /* + the parameter's index */

/* "--dm_group" -> "--dm-group". */
static void option_name(const char *param, char *opt, size_t n)
{
    snprintf(opt, n, "--%s", param);
    for (char *c = opt + 2; *c; c++)
        *c = *c == '_' ? '-' : *c;
}

/* arg for parameter i of a's algorithm: parsed and checked as the option
 * values of every tool are, with the descriptor's type and range. */
static int param_option(ddtk_ddargs *a, int i, const char *arg)
{
    ddtk_param_info pi;
    char opt[64], why[64];
    double v;
    int n, rc = ddtk_algorithm_param(a->desc.algorithm, i, &pi);
    if (rc)
        return rc;
    option_name(pi.name, opt, sizeof opt);
    if (pi.type == DDTK_PARAM_CHOICE)
        rc = ddtk_opt_choice(opt, arg, pi.choices, &n), v = n;
    else if (pi.type == DDTK_PARAM_INT)
        rc = ddtk_opt_int(opt, arg, (int)pi.lo + pi.lo_open, (int)pi.hi, &n), v = n;
    else if (!(rc = ddtk_opt_double(opt, arg, &v)) && !(pi.lo_open ? v > pi.lo : v >= pi.lo)) {
        snprintf(why, sizeof why, "must be %s %g", pi.lo_open ? ">" : ">=", pi.lo);
        rc = ddtk_bad_option(opt, arg, why);
    }
    return rc ? rc : ddtk_plan_desc_set_param(&a->desc, pi.name, v);
}

/* One getopt entry per parameter; names[] holds their names. */
static void param_options(const ddtk_ddargs *a, struct option *opts, char names[][64], int *n)
{
    ddtk_param_info pi;
    for (*n = 0; *n < DDTK_MAX_PARAMS && !ddtk_algorithm_param(a->desc.algorithm, *n, &pi);
         ++*n) {
        option_name(pi.name, names[*n], sizeof names[*n]);
        opts[*n] = (struct option){ names[*n] + 2, required_argument, 0, OPT_PARAM + *n };
    }
}

typedef struct parse_ctx {
    ddtk_ddargs *a;
    ddtk_option_handler extra;
    void *extra_ctx;
} parse_ctx;

static int any_option(int code, const char *arg, void *ctx)
{
    parse_ctx *p = ctx;
    int rc = common_option(p->a, code, arg);
    if (rc != -1)
        return rc;
    if (code >= OPT_PARAM && code < OPT_PARAM + DDTK_MAX_PARAMS)
        return param_option(p->a, code - OPT_PARAM, arg);
    return p->extra ? p->extra(code, arg, p->extra_ctx)
                    : ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
}

int ddtk_ddargs_parse(ddtk_ddargs *a, int argc, char **argv,
                      const struct option *extra, int nextra,
                      ddtk_option_handler handler, void *ctx, void (*help)(void))
{
    char names[DDTK_MAX_PARAMS][64];
    int nparams;
    struct option *opts = calloc((size_t)(NCOMMON + DDTK_MAX_PARAMS + nextra + 1), sizeof *opts);
    if (!opts)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    memcpy(opts, common_options, sizeof common_options);
    param_options(a, opts + NCOMMON, names, &nparams);
    if (nextra)
        memcpy(opts + NCOMMON + nparams, extra, (size_t)nextra * sizeof *opts);
    parse_ctx p = { a, handler, ctx };
    int rc = ddtk_getopt(argc, argv, ":o:qvh", opts, OPT_VERSION, help, any_option, &p);
    free(opts);
    if (!rc && a->search_opts && !a->search)
        rc = ddtk_fail(DDTK_EUSAGE, "--snr, --max-width and --search-window go with --search");
    if (rc)
        return rc;
    a->inputs = (const char *const *)argv + optind;
    a->ninputs = argc - optind;
    a->input = a->ninputs ? argv[optind] : NULL;
    return DDTK_OK;
}

int ddtk_ddargs_open(const ddtk_ddargs *a, ddtk_input *in)
{
    int rc = a->ninputs > 1 ? ddtk_input_open_files(in, a->inputs, a->ninputs)
                            : ddtk_input_open(in, a->input);
    if (!rc)
        rc = ddtk_input_clean(in, &a->clean);
    if (!rc && in->notes && a->desc.verbose)
        for (const char *l = in->notes; *l;) {
            size_t n = strcspn(l, "\n");
            ddtk_msg("%s: %.*s", in->name, (int)n, l);
            l += n + (l[n] == '\n');
        }
    return rc;
}

/* The input's name without directory or suffix, as the default output prefix. */
static char *prefix_from(const char *input)
{
    if (!input || strcmp(input, "-") == 0)
        return strdup("stdin");
    const char *slash = strrchr(input, '/');
    char *p = strdup(slash ? slash + 1 : input);
    char *dot = p ? strrchr(p, '.') : NULL;
    if (dot && dot != p)
        *dot = '\0';
    return p;
}

static int read_plan(ddtk_ddargs *a)
{
    ddtk_dmplan plan = { 0 };
    int rc = ddtk_dmplan_read(&plan, a->plan_file);
    if (!rc)
        rc = ddtk_dmplan_expand(&plan, &a->dms, &a->downsamp);
    ddtk_dmplan_free(&plan);
    return rc;
}

/* --scrunch auto: factors from the diagonal DM; none: drop a plan's factors. */
static int resolve_scrunch(ddtk_ddargs *a, const ddtk_header *h)
{
    ddtk_obs o;
    int rc;
    if (a->scrunch == 0 || (a->scrunch == 1 && a->downsamp)) {
        free(a->downsamp);
        a->downsamp = NULL;
    }
    if (a->scrunch == 1) {
        if ((rc = ddtk_obs_from_header(&o, h, 0, a->desc.kdm)))
            return rc;
        if (!(a->downsamp = ddtk_malloc((size_t)a->dms.n * sizeof *a->downsamp, "scrunch factors")))
            return DDTK_ESYS;
        for (int i = 0; i < a->dms.n; i++)
            a->downsamp[i] = ddtk_scrunch_factor(&o, a->dms.dm[i]);
    }
    return DDTK_OK;
}

int ddtk_ddargs_resolve(ddtk_ddargs *a, const ddtk_header *h)
{
    int have_range = !isnan(a->dm_min) || !isnan(a->dm_max);
    int sources = a->dm_given + (a->dm_list_file != NULL) + have_range + (a->plan_file != NULL);
    int rc;
    if (a->dms_fixed)
        goto prefix;
    if (sources != 1)
        return ddtk_fail(DDTK_EUSAGE, "give exactly one of --dm, --dm-min/--dm-max, "
                         "--dm-list or --plan (see --help)");
    if (a->dm_list_file && (rc = ddtk_dmlist_file(&a->dms, a->dm_list_file)))
        return rc;
    if (a->plan_file && (rc = read_plan(a)))
        return rc;
    if (have_range) {
        /* --dm-max alone starts at DM 0, in every tool (dd_tree's rule). */
        double lo = isnan(a->dm_min) ? 0 : a->dm_min;
        if (isnan(a->dm_max))
            return ddtk_fail(DDTK_EUSAGE, "--dm-min needs --dm-max");
        if (!isnan(a->dm_step) && a->tol_given)
            return ddtk_fail(DDTK_EUSAGE, "--dm-step and --tol/--pulse-width exclude each other");
        if (!isnan(a->dm_step))
            rc = ddtk_dmlist_range(&a->dms, lo, a->dm_max, a->dm_step);
        else {
            ddtk_channels ch;
            if ((rc = ddtk_channels_init(&ch, h, NULL, 0)))
                return rc;
            rc = ddtk_dmlist_tol(&a->dms, lo, a->dm_max, h->tsamp, a->pulse_width,
                                 a->tol, 0.5 * (ch.fmin + ch.fmax), ch.chan_bw, h->nchans);
            ddtk_channels_free(&ch);
        }
        if (rc)
            return rc;
    } else if (!isnan(a->dm_step))
        return ddtk_fail(DDTK_EUSAGE, "--dm-step needs --dm-min and --dm-max");
    if ((rc = resolve_scrunch(a, h)))
        return rc;
prefix:
    if (!a->default_prefix && !(a->default_prefix = prefix_from(a->input)))
        return ddtk_fail(DDTK_ESYS, "out of memory");
    a->out.default_prefix = a->default_prefix;
    return DDTK_OK;
}

static int load_killfile(const ddtk_ddargs *a, int nchans, uint8_t **kill)
{
    int nkilled;
    *kill = NULL;
    if (!a->killfile)
        return DDTK_OK;
    int rc = ddtk_killfile_read(a->killfile, nchans, kill, &nkilled);
    if (!rc && a->desc.verbose)
        ddtk_msg("%s: %d of %d channels killed", a->killfile, nkilled, nchans);
    return rc;
}

/* Channels the input itself marks dead (PSRFITS weights of 0) join the killfile's. */
static int kill_dead(ddtk_ddargs *a, const ddtk_input *in)
{
    int nchans = in->hdr.nchans;
    if (!in->dead)
        return DDTK_OK;
    if (!a->kill && !(a->kill = ddtk_calloc((size_t)nchans, 1, "kill mask")))
        return DDTK_ESYS;
    for (int c = 0; c < nchans; c++)
        a->kill[c] |= in->dead[c];
    return DDTK_OK;
}

/* DDTK_GPU_CONFIG=N: the variant of the kernel the input's rows use (bench/gpu). */
static int gpu_config_from_env(ddtk_plan_desc *d)
{
    const char *env = getenv("DDTK_GPU_CONFIG");
    int v;
    if (!env || !*env)
        return DDTK_OK;
    if (ddtk_opt_int("DDTK_GPU_CONFIG", env, 0, DDTK_GPU_VARIANT_MAX, &v))
        return DDTK_EUSAGE;
    if (d->nbits <= 8 && !d->zerodm)
        d->gpu_config.lane_variant = v;
    else
        d->gpu_config.float_variant = v;
    return DDTK_OK;
}

/* Seconds --tune may spend: $DDTK_TUNE_BUDGET, default 30. */
static int tune_budget(double *budget)
{
    const char *env = getenv("DDTK_TUNE_BUDGET");
    *budget = 30;
    if (env && *env && (ddtk_parse_double(env, budget) || !(*budget > 0)))
        return ddtk_fail(DDTK_EUSAGE, "DDTK_TUNE_BUDGET '%s': expected seconds > 0", env);
    return DDTK_OK;
}

/* The kernel configuration: wisdom (tuned first with --tune when it has no
 * entry for this set-up), then DDTK_GPU_CONFIG; -v says which ran and why. */
static int configure(ddtk_ddargs *a)
{
    char *path = a->no_wisdom ? NULL : a->wisdom ? strdup(a->wisdom) : ddtk_cli_wisdom_path();
    const char *from = "built-in defaults";
    int found = 0, rc = DDTK_OK;
    double budget;
    if (path)
        rc = ddtk_wisdom_apply(&a->desc, path, &found);
    if (found)
        from = "wisdom";
    else if (!rc && a->tune && !(rc = tune_budget(&budget))) {
        ddtk_msg("tuning the kernel for this set-up (at most %g s)%s", budget,
                 path ? "" : "; --no-wisdom: not kept");
        rc = ddtk_tune(&a->desc, path, budget, a->desc.verbose ? stderr : NULL);
        from = "tuned now";
    }
    if (!rc)
        rc = gpu_config_from_env(&a->desc);
    if (!rc && a->desc.verbose) {
        char cfg[128];
        ddtk_config_text(&a->desc, cfg, sizeof cfg);
        ddtk_msg("kernel configuration: %s (%s)", cfg, from);
    }
    free(path);
    return rc;
}

/* The environment's knobs (dd_direct(1), ENVIRONMENT), read here once into
 * the plan's description: the library reads no environment. DDTK_TREE_GROUP
 * sets the parameter gpu_group of an algorithm that has one (the tree) where
 * --gpu-group did not. */
static int environment(ddtk_ddargs *a)
{
    const char *serial = getenv("DDTK_GPU_SERIAL"), *group = getenv("DDTK_TREE_GROUP");
    double given;
    int g;
    if (ddtk_env_mib("DDTK_GPU_MEM", &a->desc.gpu_mem))
        return DDTK_EUSAGE;
    a->desc.gpu_serial = serial && *serial && strcmp(serial, "0") != 0;
    const char *giants = getenv("DDTK_SPS_GPU_GIANTS");
    if (giants && *giants && ddtk_opt_int("DDTK_SPS_GPU_GIANTS", giants, 1, 1 << 24,
                                          &a->sps.gpu_giants))
        return DDTK_EUSAGE;
    if (group && *group && !ddtk_plan_desc_get_param(&a->desc, "gpu_group", &given)
        && given == 0 && (ddtk_opt_int("DDTK_TREE_GROUP", group, 2, 1024, &g) || (g & (g - 1))
                          || ddtk_plan_desc_set_param(&a->desc, "gpu_group", g)))
        return ddtk_fail(DDTK_EUSAGE, "DDTK_TREE_GROUP=%s: must be a power of two from 2 "
                         "to 1024", group);
    return DDTK_OK;
}

int ddtk_ddargs_describe(ddtk_ddargs *a, const ddtk_input *in)
{
    int rc = ddtk_ddargs_resolve(a, &in->hdr);
    if (!rc)
        rc = load_killfile(a, in->hdr.nchans, &a->kill);
    if (!rc)
        rc = kill_dead(a, in);
    if (!rc)
        rc = ddtk_plan_desc_header(&a->desc, &in->hdr, &a->freqs);
    if (!rc) {
        a->desc.name = in->name;
        a->desc.kill = a->kill;
        a->desc.dms = a->dms.dm;
        a->desc.ndm = a->dms.n;
        a->desc.downsamp = a->downsamp;
        rc = environment(a);
    }
    return rc;
}

int ddtk_ddargs_own_dms(ddtk_ddargs *a, const ddtk_input *in)
{
    ddtk_plan_desc d = a->desc;
    double *freqs = NULL, lo = isnan(a->dm_min) ? 0 : a->dm_min;
    if (a->dm_given || a->dm_list_file || a->plan_file || !isnan(a->dm_step) || a->tol_given)
        return ddtk_fail(DDTK_EUSAGE, "the %s algorithm computes its own DMs: select them with "
                         "--dm-min/--dm-max (--dm, --dm-list, --plan, --dm-step and --tol do "
                         "not apply)", a->desc.algorithm);
    if (isnan(a->dm_max))
        return ddtk_fail(DDTK_EUSAGE, "--dm-max is needed (see --help)");
    if (lo > a->dm_max || lo < 0)
        return ddtk_fail(DDTK_EUSAGE, "--dm-min %g --dm-max %g: need 0 <= min <= max", lo,
                         a->dm_max);
    int rc = ddtk_plan_desc_header(&d, &in->hdr, &freqs);
    if (!rc)
        rc = ddtk_plan_desc_own_dms(&d, lo, a->dm_max, a->pulse_width * 1e-6, a->scrunch != 0,
                                    &a->dms.dm, &a->downsamp, &a->dms.n);
    free(freqs);
    a->dms.cap = a->dms.n;
    a->dms_fixed = 1;
    /* the parameters the list resolved (the tree's sub_chans) */
    for (int i = 0; !rc && i < DDTK_MAX_PARAMS; i++)
        if ((d.param_set & (1u << i)) && !(a->desc.param_set & (1u << i))) {
            a->desc.param[i] = d.param[i];
            a->desc.param_set |= 1u << i;
        }
    return rc;
}

int ddtk_ddargs_list_dms(const ddtk_ddargs *a)
{
    for (int i = 0; i < a->dms.n; i++)
        printf("%.6f\t%d\n", a->dms.dm[i], a->downsamp[i]);
    return fflush(stdout) ? ddtk_fail(DDTK_ESYS, "stdout: write failed") : DDTK_OK;
}

int ddtk_ddargs_plan(ddtk_ddargs *a, const ddtk_input *in, ddtk_plan **plan)
{
    int rc = ddtk_ddargs_describe(a, in);
    if (!rc)
        rc = configure(a);
    return rc ? rc : ddtk_plan_create(plan, &a->desc);
}

/* --nbits-out 8|16. Noise scaling measures each series (output.c); the sum
 * scaling needs integer sums of unsigned samples, and its S keeps the largest
 * possible sum (every live channel, and both IFs when summed, at its
 * maximum) in range. */
static int integer_output(const ddtk_ddargs *a, const ddtk_input *in, const ddtk_plan *plan,
                          ddtk_series_meta *m)
{
    const ddtk_header *h = &in->hdr;
    m->nbits = a->nbits_out;
    m->quant = a->nbits_scale;
    if (a->nbits_scale_given && a->nbits_out == 32)
        return ddtk_fail(DDTK_EUSAGE, "--nbits-scale: applies to --nbits-out 8 or 16");
    if (a->nbits_out == 32 || a->nbits_scale == DDTK_QUANT_NOISE)
        return DDTK_OK;
    if (h->nbits > 16 || h->signed_data || a->desc.zerodm)
        return ddtk_fail(DDTK_EUSAGE, "--nbits-scale sum: %s holds %s; raw integer sums need "
                         "unsigned integer samples without --zerodm", in->name,
                         a->desc.zerodm ? "zero-DM filtered sums" : h->signed_data
                         ? "signed samples" : "float samples");
    double largest = (ldexp(1.0, h->nbits) - 1) * ddtk_plan_nlive(plan)
                     * (a->desc.pol == DDTK_POL_SUM ? 2 : 1);
    m->scale = ddtk_integer_scale(largest, a->nbits_out);
    return DDTK_OK;
}

/* The outset's sink, whose finish first adds what RFI excision replaced to
 * the .inf notes (and says it with -v): it is known only once all is read. */
typedef struct rfi_sink {
    ddtk_sink inner;
    const ddtk_ddargs *a;
    ddtk_input *in;
    ddtk_outset *out;
    const char *notes;
    char *all;
} rfi_sink;

static int rfi_write(ddtk_sink *s, int dm, int64_t offset, const float *x, int64_t n)
{
    rfi_sink *r = s->ctx;
    return r->inner.write(&r->inner, dm, offset, x, n);
}

static int rfi_pad(ddtk_sink *s, int dm, int64_t offset, float value, int64_t n)
{
    rfi_sink *r = s->ctx;
    return r->inner.pad(&r->inner, dm, offset, value, n);
}

static char *rfi_notes(const ddtk_ddargs *a, const ddtk_input *in, const char *notes)
{
    ddtk_rfi_report rep;
    ddtk_input_clean_report(in, &rep);
    char *s = malloc(strlen(notes) + 512);
    if (!s)
        return NULL;
    double pct = rep.samples ? 100.0 * (double)rep.samples_masked / (double)rep.samples : 0;
    int n = sprintf(s, "%s\nRFI excision: %.3g%% of samples replaced by channel levels", notes,
                    pct);
    if (a->clean.mask)
        n += sprintf(s + n, "\nrfifind mask %.60s applied", a->clean.mask);
    if (a->clean.auto_rfi)
        sprintf(s + n, "\n--rfi auto: %lld channels flagged (%lld channel-blocks of %lld "
                "blocks),\n%lld spectra clipped (zero-DM > %g sigma)", (long long)rep.chans_ever,
                (long long)rep.chan_blocks, (long long)rep.blocks, (long long)rep.spectra_clipped,
                a->clean.clip_sigma > 0 ? a->clean.clip_sigma : 5.0);
    return s;
}

static int rfi_finish(ddtk_sink *s, int rc)
{
    rfi_sink *r = s->ctx;
    if (!rc && !(r->all = rfi_notes(r->a, r->in, r->notes)))
        rc = ddtk_fail(DDTK_ESYS, "out of memory");
    if (!rc) {
        r->out->meta.notes = r->all;
        if (r->a->desc.verbose)
            for (const char *l = r->all + strlen(r->notes) + 1; *l;) {
                size_t k = strcspn(l, "\n");
                ddtk_msg("%s: %.*s", r->in->name, (int)k, l);
                l += k + (l[k] == '\n');
            }
    }
    return r->inner.finish(&r->inner, rc);
}

/* What integer output did: its scaling and the samples it clipped. */
static void report_integer(const ddtk_ddargs *a, const ddtk_series_meta *m, const ddtk_outset *o)
{
    if (m->nbits == 32 || a->desc.quiet)
        return;
    if (m->quant == DDTK_QUANT_SUM)
        ddtk_msg("--nbits-out %d: output value = sum / %g%s, rounded", m->nbits, m->scale,
                 a->downsamp ? " (times each DM's downsampling factor)" : "");
    else
        ddtk_msg("--nbits-out %d: each series scaled to its noise (sigma = %g levels about "
                 "%g); %lld of %lld samples clipped (%.3g%%)", m->nbits,
                 DDTK_QUANT_SIGMA(m->nbits), DDTK_QUANT_MID(m->nbits), (long long)o->clipped,
                 (long long)o->quantised,
                 o->quantised ? 100.0 * (double)o->clipped / (double)o->quantised : 0.0);
}

/* A single .tim series goes to stdout (no -o or --prefix, or -o -): never
 * binary samples onto a terminal. */
static int refuse_terminal(const ddtk_ddargs *a)
{
    const ddtk_outspec *o = &a->out;
    int to_stdout = a->dms.n == 1 && o->format == DDTK_FMT_TIM && !o->discard
                    && (o->output ? strcmp(o->output, "-") == 0 : !o->prefix);
    if (to_stdout && isatty(STDOUT_FILENO))
        return ddtk_fail(DDTK_EUSAGE, "refusing to write a binary time series to a terminal; "
                         "use -o FILE or redirect stdout");
    return DDTK_OK;
}

/* --search: PREFIX.cand, PREFIX as for the series (-o without its suffix). */
static char *cand_path(const ddtk_ddargs *a)
{
    const char *base = a->out.prefix ? a->out.prefix
                       : a->out.output && strcmp(a->out.output, "-") != 0 ? a->out.output
                       : a->default_prefix;
    size_t len = strlen(base) + 6;
    char *path = malloc(len);
    if (!path)
        return NULL;
    snprintf(path, len, "%s", base);
    char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!a->out.prefix && a->out.output && dot && dot > (slash ? slash + 1 : path))
        *dot = '\0';
    strcat(path, ".cand");
    return path;
}

static int write_cands(FILE *fp, const ddtk_sps_cand *c, int64_t n)
{
    return ddtk_sps_write_heimdall(fp, c, n);
}

/* The candidates, whole or not at all, once the series are committed. */
static int save_cands(const ddtk_ddargs *a, const char *path, ddtk_sps_sink *search)
{
    ddtk_sps_cand *c = NULL;
    int64_t n = 0;
    char *tmp = NULL;
    int rc = ddtk_sps_sink_finish(search, &c, &n);
    FILE *fp = rc ? NULL : ddtk_temp_create(path, &tmp);
    if (!rc && !fp)
        rc = DDTK_ESYS;
    if (fp && (rc = write_cands(fp, c, n)))
        ddtk_temp_discard(fp, &tmp);
    else if (fp)
        rc = ddtk_temp_commit(fp, &tmp, path);
    if (!rc && !a->desc.quiet)
        ddtk_msg("%s: %lld single-pulse candidates (S/N >= %g, %lld giants)", path, (long long)n,
                 a->sps.snr, (long long)ddtk_sps_giants(search->search));
    free(c);
    return rc;
}

static int run_plan(ddtk_ddargs *a, ddtk_input *in, ddtk_plan *plan, const char *notes)
{
    ddtk_outset out;
    ddtk_run_stats stats;
    double fmin, fmax, chan_bw;
    ddtk_plan_band(plan, &fmin, &fmax, &chan_bw);
    ddtk_series_meta meta = {
        .in = &in->hdr, .tsamp = in->hdr.tsamp, .fref = ddtk_plan_fref(plan), .flow = fmin,
        .bandwidth = chan_bw * in->hdr.nchans, .chan_bw = chan_bw, .nchans = in->hdr.nchans,
        .notes = notes, .downsamp = a->downsamp,
    };
    char *cands = a->search ? cand_path(a) : NULL;
    int rc = a->search && !cands ? ddtk_fail(DDTK_ESYS, "out of memory") : DDTK_OK;
    if (!rc && cands && !a->out.force && access(cands, F_OK) == 0)
        rc = ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", cands);
    if (!rc)
        rc = integer_output(a, in, plan, &meta);
    if (!rc)
        rc = refuse_terminal(a);
    if (!rc)
        rc = ddtk_outset_open(&out, a->dms.dm, a->dms.n, &a->out, &meta);
    if (rc) {
        free(cands);
        return rc;
    }
    /* The files count only once on disk: the sink's finish commits them, and
     * the real-time factor includes it. --search puts its sink in front. */
    ddtk_source src;
    ddtk_sink sink;
    ddtk_sps_sink search;
    ddtk_stream_options opt = { .pad = a->pad };
    rfi_sink rs = { .a = a, .in = in, .out = &out, .notes = notes };
    ddtk_source_file(&src, in);
    ddtk_sink_outset(&sink, &out);
    if (in->clean) {
        rs.inner = sink;
        sink.write = rfi_write;
        sink.pad = rfi_pad;
        sink.finish = rfi_finish;
        sink.ctx = &rs;
    }
    /* --search --discard: the search has no next sink (on the GPU the series
     * then stay on the device) and the empty output set is closed here. */
    ddtk_sink *next = a->out.discard ? NULL : &sink;
    if (cands && (rc = ddtk_sps_sink_init(&search, &a->sps, plan, next))) {
        sink.finish(&sink, rc);
        free(cands);
        return rc;
    }
    rc = ddtk_plan_stream(plan, &src, cands ? &search.sink : &sink, &opt, &stats);
    if (cands && !next)
        rc = sink.finish(&sink, rc);
    free(rs.all);
    if (!rc)
        report_integer(a, &meta, &out);
    if (!rc && !a->desc.quiet)
        ddtk_print_summary(&stats, ddtk_plan_algorithm(plan));
    if (cands) {
        if (!rc)
            rc = save_cands(a, cands, &search);
        ddtk_sps_sink_free(&search);
        free(cands);
    }
    return rc;
}

/* The tool's notes, then how the input was read (PSRFITS). */
static char *input_notes(char *notes, const ddtk_input *in)
{
    if (!notes || !in->notes)
        return notes;
    size_t n = strlen(notes), m = strlen(in->notes);
    char *all = realloc(notes, n + m + 2);
    if (!all) {
        free(notes);
        return NULL;
    }
    all[n] = '\n';
    memcpy(all + n + 1, in->notes, m + 1);
    return all;
}

static char *notes_text(const ddtk_ddargs *a, const ddtk_plan *plan, const ddtk_input *in,
                        const ddtk_notes *n)
{
    const size_t size = 1024 + strlen(n->lead) + strlen(n->trail);
    const int nchans = in->hdr.nchans;
    char *text = malloc(size), rounding[64] = "";
    if (n->rounding)
        snprintf(rounding, sizeof rounding, ", delays rounded %s",
                 a->desc.rounding == DDTK_ROUND_FLOOR ? "down (floor)" : "to nearest");
    if (text)
        snprintf(text, size,
                 "Dedispersed by ddtk %s %s (%s algorithm, %s backend)\n"
                 "%sKilled channels: %d of %d\n"
                 "%skDM %.10g s MHz^2 pc^-1 cm^3, fref %.6f MHz%s%s%s",
                 DDTK_VERSION, n->tool, n->algorithm, ddtk_plan_backend(plan), n->lead,
                 nchans - ddtk_plan_nlive(plan), nchans, n->trail, a->desc.kdm,
                 ddtk_plan_fref(plan), rounding, a->desc.zerodm ? "\nZero-DM filter applied" : "",
                 n->scrunched ? "\nTime scrunched: tsamp is the DM's downsampling factor "
                                "times the input's" : "");
    return text;
}

int ddtk_ddargs_run(ddtk_ddargs *a, ddtk_input *in, ddtk_plan *plan, const ddtk_notes *notes)
{
    char *text = input_notes(notes_text(a, plan, in, notes), in);
    if (!text)
        return ddtk_fail(DDTK_ESYS, "out of memory");
    int rc = run_plan(a, in, plan, text);
    free(text);
    return rc;
}

int ddtk_ddtool_main(const ddtk_ddtool *t, ddtk_ddargs *a, int argc, char **argv)
{
    ddtk_input in;
    ddtk_set_progname(argv[0]);
    ddtk_ddargs_init(a);
    int rc = ddtk_plan_desc_set_algorithm(&a->desc, t->algorithm);
    if (!rc)
        rc = ddtk_ddargs_parse(a, argc, argv, t->options, t->noptions, t->option, t->ctx,
                               t->help);
    if (!rc && a->tune)
        rc = ddtk_tune_check(&a->desc);
    if (!rc && t->check)
        rc = t->check(a);
    if (!rc && a->list_gpus)
        rc = ddtk_gpu_list(stdout);
    else if (!rc) {
        rc = ddtk_ddargs_open(a, &in);
        if (!rc)
            rc = ddtk_input_require_filterbank(&in);
        if (!rc)
            rc = t->run(a, &in, t->ctx);
        ddtk_input_close(&in);
    }
    ddtk_ddargs_free(a);
    return ddtk_exit_status(rc);
}
