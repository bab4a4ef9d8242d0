/*
 * fdas - Fourier-domain acceleration search of time series (.tim, .dat+.inf or
 * stdin), PRESTO accelsearch style, on the CPU (FFTW) or GPU (cuFFT). A batch
 * of inputs with --gpu LIST is shared by the GPUs, one thread and plan each.
 */
#include "fdas.h"
#include "internal.h"
#include "cli.h"
#include "tempfile.h"

#include <getopt.h>
#include <pthread.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum {
    OPT_ZMAX = 1000, OPT_NUMHARM, OPT_SIGMA, OPT_FORMAT, OPT_INTERP, OPT_FLO, OPT_FHI,
    OPT_AMIN, OPT_AMAX, OPT_BACKEND, OPT_GPU, OPT_THREADS, OPT_NO_HARM, OPT_FORCE,
    OPT_LIST_GPUS, OPT_VERSION
};

static const struct option options[] = {
    { "zmax", required_argument, 0, OPT_ZMAX },
    { "numharm", required_argument, 0, OPT_NUMHARM },
    { "sigma", required_argument, 0, OPT_SIGMA },
    { "format", required_argument, 0, OPT_FORMAT },
    { "interp", required_argument, 0, OPT_INTERP },
    { "flo", required_argument, 0, OPT_FLO },
    { "fhi", required_argument, 0, OPT_FHI },
    { "accel-min", required_argument, 0, OPT_AMIN },
    { "accel-max", required_argument, 0, OPT_AMAX },
    { "output", required_argument, 0, 'o' },
    { "backend", required_argument, 0, OPT_BACKEND },
    { "gpu", required_argument, 0, OPT_GPU },
    { "threads", required_argument, 0, OPT_THREADS },
    { "no-harm-remove", no_argument, 0, OPT_NO_HARM },
    { "force", no_argument, 0, OPT_FORCE },
    { "list-gpus", no_argument, 0, OPT_LIST_GPUS },
    DDTK_STANDARD_OPTIONS(OPT_VERSION),
    { 0, 0, 0, 0 },
};

static void help(void)
{
    printf(
"Usage: fdas [FILE.tim|FILE.dat|-]... [--zmax Z] [--numharm H] [--sigma S]\n"
"            [--format tsv|presto] [--interp exact|interbin] [options]\n"
"Fourier-domain acceleration search (PRESTO accelsearch conventions): red-noise\n"
"whitening, correlation with z templates, harmonic summing, candidates by sigma.\n"
"Each input is searched in turn, with one output per input.\n\n"
"  --zmax Z              largest |z| (drift in Fourier bins over the observation);\n"
"                        rounded down to even (default 200)\n"
"  --numharm H           harmonics summed: 1, 2, 4, 8, 16 or 32 (default 8)\n"
"  --sigma S             candidate threshold, Gaussian sigma after trials (default 2.0)\n"
"  --format tsv|presto   tab-separated table (default), or PRESTO's <base>_ACCEL_<zmax>\n"
"  --interp exact|interbin\n"
"                        half-bin resolution by 2x correlation (default exact) or\n"
"                        interbinning after correlation\n"
"  --flo F --fhi F       fundamental frequency range in Hz (default 1 Hz to Nyquist)\n"
"  --accel-min A --accel-max A\n"
"                        acceleration range in m/s^2 instead of --zmax: zmax is set for\n"
"                        the highest frequency searched and candidates outside are dropped\n"
"  -o, --output FILE     output of a single input (default: stdout for tsv,\n"
"                        <base>_ACCEL_<zmax> for presto; several inputs: <base>_ACCEL_<zmax>\n"
"                        with .tsv appended for tsv)\n"
"  --no-harm-remove      keep harmonically related candidates\n"
"  --backend cpu|gpu|auto  (default auto: GPU when usable)\n"
"  --gpu N|LIST|all      GPU index (default 0), or GPUs sharing a batch of inputs:\n"
"                        0,1,... or all: every visible GPU (each input searched on\n"
"                        one of them; no cost model, unlike the dd_* tools')\n"
"  --threads N           CPU threads (default: all)\n"
"  --force               overwrite existing outputs\n"
"  --list-gpus  -q, --quiet  -v, --verbose  -h, --help  --version\n");
}

typedef struct args {
    ddtk_fdas_config cfg;
    int gpus[DDTK_MAX_GPUS], ngpus;   /* --gpu LIST */
    int format, force, quiet, have_amin, have_amax, zmax_given;
    double amin, amax;
    const char *output;
} args;

static const char *const formats[] = { "tsv", "presto", NULL };
static const char *const interps[] = { "exact", "interbin", NULL };

static int option(int code, const char *arg, void *ctx)
{
    args *a = ctx;
    ddtk_fdas_config *c = &a->cfg;
    switch (code) {
    case OPT_LIST_GPUS: {
        int rc = ddtk_gpu_list(stdout);
        return rc ? rc : DDTK_DONE;
    }
    case OPT_ZMAX:
        a->zmax_given = 1;
        return ddtk_opt_double("--zmax", arg, &c->zmax) ? DDTK_EUSAGE :
               c->zmax < 0 ? ddtk_bad_option("--zmax", arg, "must be >= 0") : DDTK_OK;
    case OPT_NUMHARM: return ddtk_opt_int("--numharm", arg, 1, 32, &c->numharm);
    case OPT_SIGMA: return ddtk_opt_double("--sigma", arg, &c->sigma);
    case OPT_FORMAT: return ddtk_opt_choice("--format", arg, formats, &a->format);
    case OPT_INTERP: return ddtk_opt_choice("--interp", arg, interps, &c->interp);
    case OPT_FLO: return ddtk_opt_double("--flo", arg, &c->flo);
    case OPT_FHI: return ddtk_opt_double("--fhi", arg, &c->fhi);
    case OPT_AMIN: a->have_amin = 1; return ddtk_opt_double("--accel-min", arg, &a->amin);
    case OPT_AMAX: a->have_amax = 1; return ddtk_opt_double("--accel-max", arg, &a->amax);
    case 'o': a->output = arg; return DDTK_OK;
    case OPT_BACKEND: return ddtk_opt_choice("--backend", arg, ddtk_backend_names, &c->backend);
    case OPT_GPU: {
        int rc = ddtk_gpus_parse("--gpu", arg, a->gpus, &a->ngpus);
        c->gpu = a->ngpus > 0 ? a->gpus[0] : 0;
        return rc;
    }
    case OPT_THREADS: return ddtk_opt_int("--threads", arg, 1, 4096, &c->threads);
    case OPT_NO_HARM: c->harm_remove = 0; return DDTK_OK;
    case OPT_FORCE: a->force = 1; return DDTK_OK;
    case 'q': a->quiet = 1; return DDTK_OK;
    case 'v': c->verbose = 1; return DDTK_OK;
    }
    return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
}

/* --accel-min/max: z = a f T^2 / c at the top of the fundamental range. */
static int accel_to_z(args *a, const ddtk_fdas_series *s)
{
    if (!a->have_amin && !a->have_amax)
        return DDTK_OK;
    if (a->zmax_given)
        return ddtk_fail(DDTK_EUSAGE, "give either --zmax or --accel-min/--accel-max");
    if (!a->have_amin)
        a->amin = -fabs(a->amax);
    if (!a->have_amax)
        a->amax = fabs(a->amin);
    if (a->amin > a->amax)
        return ddtk_fail(DDTK_EUSAGE, "--accel-min %g is above --accel-max %g", a->amin, a->amax);
    double T = s->n * s->tsamp, f = a->cfg.fhi > 0 ? a->cfg.fhi : 0.5 / s->tsamp;
    double zlo = a->amin * f * T * T / DDTK_SPEED_OF_LIGHT;
    double zhi = a->amax * f * T * T / DDTK_SPEED_OF_LIGHT;
    a->cfg.zmax = ceil(fmax(fabs(zlo), fabs(zhi)));
    if (a->cfg.zmax > 1200)
        return ddtk_fail(DDTK_EUSAGE, "--accel-min/--accel-max: z range %.0f..%.0f at %g Hz is "
                         "beyond 1200 (lower --fhi)", zlo, zhi, f);
    if (!a->quiet)
        ddtk_msg("%s: accelerations %g..%g m/s^2 at up to %g Hz: z %.1f..%.1f (zmax %g)",
                 s->name, a->amin, a->amax, f, zlo, zhi, a->cfg.zmax);
    return DDTK_OK;
}

static char *output_name(const args *a, const ddtk_fdas_series *s, int ninputs)
{
    if (a->output)
        return strdup(a->output);
    if (a->format == DDTK_FDAS_TSV && ninputs == 1)
        return NULL;
    size_t len = strlen(s->base) + 40;
    char *name = malloc(len);
    if (name)
        snprintf(name, len, "%s_ACCEL_%d%s", s->base, 2 * (int)(a->cfg.zmax / 2),
                 a->format == DDTK_FDAS_TSV ? ".tsv" : "");
    return name;
}

typedef int (*writer_fn)(FILE *fp, ddtk_fdas_plan *plan, const ddtk_fdas_series *s);

static int write_tsv(FILE *fp, ddtk_fdas_plan *plan, const ddtk_fdas_series *s)
{
    return ddtk_fdas_write_tsv(fp, plan, s);
}

/* The binary candidates beside PRESTO's text: <text name>.cand. */
static char *cand_name(const char *name)
{
    size_t len = strlen(name) + 6;
    char *c = malloc(len);
    if (c)
        snprintf(c, len, "%s.cand", name);
    return c;
}

/* Prefix the recorded message with the input's name. */
static int named(int rc, const char *name)
{
    char msg[1024];
    ddtk_cli_words(ddtk_errmsg(), msg, sizeof msg);
    return ddtk_fail(rc, "%s: %s", name, msg);
}

/* An input's output files (the ACCEL text and its .cand, or one table),
 * each written to a temporary and committed together: all or nothing. */
static int write_files(const args *a, int n, const char *const *names, const writer_fn *write,
                       ddtk_fdas_plan *plan, const ddtk_fdas_series *s)
{
    FILE *fp[2] = { NULL, NULL };
    char *tmp[2] = { NULL, NULL };
    int rc = DDTK_OK;
    for (int i = 0; i < n && !rc; i++) {
        if (!(fp[i] = ddtk_temp_create(names[i], &tmp[i])))
            rc = DDTK_ESYS;
        else if ((rc = write[i](fp[i], plan, s)))
            rc = named(rc, names[i]);
    }
    if (!rc)
        return ddtk_temp_commit_all(fp, tmp, names, n, a->force);
    for (int i = 0; i < n; i++)
        if (fp[i])
            ddtk_temp_discard(fp[i], &tmp[i]);
    return rc;
}

static int write_output(const args *a, ddtk_fdas_plan *plan, const ddtk_fdas_series *s,
                        int ninputs)
{
    char *name = output_name(a, s, ninputs);
    if (!name) {
        if (a->output || a->format != DDTK_FDAS_TSV || ninputs != 1)
            return ddtk_fail(DDTK_ESYS, "out of memory");
        int rc = ddtk_fdas_write_tsv(stdout, plan, s);
        if (!rc && fflush(stdout) != 0)
            rc = ddtk_fail(DDTK_ESYS, "stdout: write error");
        return rc;
    }
    int rc;
    if (a->format == DDTK_FDAS_PRESTO) {
        char *cand = cand_name(name);
        const char *names[2] = { name, cand };
        const writer_fn write[2] = { ddtk_fdas_write_presto, ddtk_fdas_write_cand };
        rc = cand ? write_files(a, 2, names, write, plan, s)
                  : ddtk_fail(DDTK_ESYS, "out of memory");
        free(cand);
    } else {
        const char *names[1] = { name };
        const writer_fn write[1] = { write_tsv };
        rc = write_files(a, 1, names, write, plan, s);
    }
    free(name);
    return rc;
}

static int check_output(const args *a, const ddtk_fdas_series *s, int ninputs)
{
    char *name = output_name(a, s, ninputs);
    char *cand = name && a->format == DDTK_FDAS_PRESTO ? cand_name(name) : NULL;
    int rc = DDTK_OK;
    if (name && !a->force && access(name, F_OK) == 0)
        rc = ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", name);
    else if (cand && !a->force && access(cand, F_OK) == 0)
        rc = ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", cand);
    free(name);
    free(cand);
    return rc;
}

/* A series whose length the real FFT cannot take is padded with its mean. */
static int fit_length(const args *a, ddtk_fdas_series *s)
{
    int64_t n = ddtk_fdas_search_length(s->n);
    if (n == s->n)
        return DDTK_OK;
    if (a->cfg.verbose)
        ddtk_msg("%s: %lld samples: searched as %lld (an even length with no prime factor "
                 "above 7), padded with the series mean", s->name, (long long)s->n,
                 (long long)n);
    return ddtk_fdas_series_pad(s, n);
}

static void summary(const args *a, ddtk_fdas_plan *plan, const ddtk_fdas_series *s, int ncand)
{
    if (a->quiet)
        return;
    const ddtk_fdas_times *t = ddtk_fdas_timing(plan);
    ddtk_fdas_geometry g;
    ddtk_fdas_get_geometry(plan, &g);
    ddtk_msg("%s: %lld samples, %d templates (zmax %d), %d harmonics, %d candidates; "
             "fdas, %s backend, %.2f s wall, real-time factor %.1f", s->name, (long long)s->n,
             g.numz, g.zmax, g.numharm, ncand, ddtk_fdas_backend_name(plan), t->total,
             s->n * s->tsamp / t->total);
    if (a->cfg.verbose) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        ddtk_msg("stages (ms): fft %.3f, rednoise %.3f, correlation %.3f, harmonic sums "
                 "%.3f, candidates %.3f; peak memory %.1f MiB", 1e3 * t->fft,
                 1e3 * t->rednoise, 1e3 * t->correlate, 1e3 * t->harmsum, 1e3 * t->candidates,
                 ru.ru_maxrss / 1024.0);
    }
}

/* Outputs are checked and written one thread at a time (the temporaries
 * pending removal on a signal are one list per process). */
static int locked_output(const args *a, ddtk_fdas_plan *plan, const ddtk_fdas_series *s,
                         int ninputs, int write, pthread_mutex_t *lock)
{
    if (lock)
        pthread_mutex_lock(lock);
    int rc = write ? write_output(a, plan, s, ninputs) : check_output(a, s, ninputs);
    if (lock)
        pthread_mutex_unlock(lock);
    return rc;
}

static int search_one(args *a, const char *path, int ninputs, ddtk_fdas_plan **plan,
                      int64_t *plan_n, double *plan_tsamp, pthread_mutex_t *lock)
{
    ddtk_fdas_series s;
    args local = *a;
    /* a series read into the plan's buffer has its n and tsamp: the plan is kept */
    int rc = ddtk_fdas_read_for(path, &s, *plan);
    if (!rc)
        rc = fit_length(&local, &s);
    if (!rc)
        rc = accel_to_z(&local, &s);
    if (!rc)
        rc = locked_output(&local, *plan, &s, ninputs, 0, lock);
    if (!rc && (!*plan || *plan_n != s.n || *plan_tsamp != s.tsamp ||
                (*plan && local.cfg.zmax != a->cfg.zmax))) {
        ddtk_fdas_plan_destroy(*plan);
        *plan = NULL;
        if ((rc = ddtk_fdas_plan_create(plan, s.n, s.tsamp, &local.cfg)))
            rc = named(rc, s.name);
        *plan_n = s.n;
        *plan_tsamp = s.tsamp;
    }
    if (!rc && (rc = ddtk_fdas_execute(*plan, s.x)))
        rc = named(rc, s.name);
    if (!rc && (local.have_amin || local.have_amax))
        ddtk_fdas_filter_accel(*plan, local.amin, local.amax);
    int ncand = 0;
    if (!rc) {
        ddtk_fdas_candidates(*plan, &ncand);
        rc = locked_output(&local, *plan, &s, ninputs, 1, lock);
    }
    if (!rc)
        summary(&local, *plan, &s, ncand);
    if (local.have_amin || local.have_amax) {
        ddtk_fdas_plan_destroy(*plan);   /* zmax depends on each input */
        *plan = NULL;
    }
    ddtk_fdas_series_free(&s);
    return rc;
}

static int parse(args *a, int argc, char **argv)
{
    int rc = ddtk_getopt(argc, argv, ":o:qvh", options, OPT_VERSION, help, option, a);
    int h = a->cfg.numharm;
    if (!rc && (h & (h - 1)))
        rc = ddtk_fail(DDTK_EUSAGE, "--numharm %d: expected 1, 2, 4, 8, 16 or 32", h);
    if (!rc && a->output && argc - optind > 1)
        rc = ddtk_fail(DDTK_EUSAGE, "-o names the output of one input; %d inputs given",
                       argc - optind);
    return rc;
}

/* ---- a batch of inputs on several GPUs ------------------------------------------ */

typedef struct batch {
    const args *a;
    char **inputs;
    int ninputs;
    pthread_mutex_t lock;         /* next, and the outputs */
    int next;
    ddtk_thread_error err;
} batch;

typedef struct worker {
    batch *b;
    int gpu;
    pthread_t tid;
} worker;

/* Take inputs until none is left or one failed (then the others stop at
 * their current input, as a serial run stops: its error is the run's). */
static void *work(void *arg)
{
    worker *w = arg;
    batch *b = w->b;
    args a = *b->a;
    ddtk_fdas_plan *plan = NULL;
    int64_t plan_n = 0;
    double plan_tsamp = 0;
    a.cfg.gpu = w->gpu;
    for (;;) {
        pthread_mutex_lock(&b->lock);
        int i = ddtk_thread_error_code(&b->err) ? b->ninputs : b->next++;
        pthread_mutex_unlock(&b->lock);
        if (i >= b->ninputs)
            break;
        int rc = search_one(&a, b->inputs[i], b->ninputs, &plan, &plan_n, &plan_tsamp,
                            &b->lock);
        if (rc)
            ddtk_thread_error_keep(&b->err, 0, rc);
    }
    ddtk_fdas_plan_destroy(plan);
    return NULL;
}

static int run_batch(const args *a, char **inputs, int ninputs, const int *gpus, int ngpus)
{
    batch b = { .a = a, .inputs = inputs, .ninputs = ninputs };
    worker w[DDTK_MAX_GPUS];
    int started = 0;
    pthread_mutex_init(&b.lock, NULL);
    ddtk_thread_error_init(&b.err);
    if (a->cfg.verbose)
        ddtk_msg("%d inputs shared by %d GPUs", ninputs, ngpus);
    for (; started < ngpus && started < ninputs; started++) {
        w[started] = (worker){ .b = &b, .gpu = gpus[started] };
        if (pthread_create(&w[started].tid, NULL, work, &w[started]) != 0) {
            ddtk_thread_error_keep(&b.err, 0, ddtk_fail(DDTK_ESYS, "cannot start a thread for "
                                                        "GPU %d", gpus[started]));
            break;
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    pthread_mutex_destroy(&b.lock);
    return ddtk_thread_error_end(&b.err);
}

/* Inputs in turn on one device, or a batch shared by the GPUs of --gpu LIST. */
static int run_inputs(args *a, char **inputs, int ninputs)
{
    int list[DDTK_MAX_GPUS], n = 1, use_gpu = 0, rc = DDTK_OK;
    if (ninputs > 1 && a->ngpus != 0) {
        rc = ddtk_backend_resolve_gpus(a->cfg.backend, a->gpus, a->ngpus, a->cfg.gpu, 0,
                                       &use_gpu, list, &n);
        if (!rc && use_gpu && n > 1)
            return run_batch(a, inputs, ninputs, list, n);
        a->cfg.gpu = list[0];
    }
    ddtk_fdas_plan *plan = NULL;
    int64_t plan_n = 0;
    double plan_tsamp = 0;
    for (int i = 0; i < ninputs && !rc; i++)
        rc = search_one(a, inputs[i], ninputs, &plan, &plan_n, &plan_tsamp, NULL);
    ddtk_fdas_plan_destroy(plan);
    return rc;
}

int main(int argc, char **argv)
{
    args a;
    char *std_in[] = { "-" };
    memset(&a, 0, sizeof a);
    ddtk_fdas_config_init(&a.cfg);
    ddtk_set_progname(argv[0]);
    /* $DDTK_FDAS_GPU_MEM (MiB) caps the GPU plane and its work buffers (a
     * tuning and test knob) */
    int rc = ddtk_env_mib("DDTK_FDAS_GPU_MEM", &a.cfg.gpu_mem);
    if (!rc)
        rc = parse(&a, argc, argv);
    if (!rc)
        rc = argc > optind ? run_inputs(&a, argv + optind, argc - optind)
                           : run_inputs(&a, std_in, 1);
    return ddtk_exit_status(rc);
}
