/*
 * cli.c - command-line helpers shared by every tool: messages (the tool's
 * own, and the library's through the handler installed with the program
 * name), number and --gpu list parsing, and the check at exit that what a
 * tool wrote to stdout got out.
 */
#include "internal.h"
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *ddtk_progname = "ddtk";

/* At exit: a run that succeeded fails after all if what it wrote to stdout
 * did not get out (a full disk, a closed descriptor). A closed stdout that
 * nothing was written to is no error. A run that already failed keeps its code. */
static void check_stdout(int status, void *unused)
{
    (void)unused;
    int pending = __fpending(stdout) > 0, failed = ferror(stdout);
    errno = 0;
    int closed = fclose(stdout) == 0;
    if (status != 0 || (!failed && (closed || (errno == EBADF && !pending))))
        return;
    if (errno)
        ddtk_msg("stdout: write error: %s", strerror(errno));
    else
        ddtk_msg("stdout: write error");
    _exit(DDTK_ESYS);
}

/* End the process as sig would have (the signal is blocked in its own
 * handler, and in a thread that held it). */
static void end_by(int sig)
{
    sigset_t set;
    signal(sig, SIG_DFL);
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
}

/* A signal that ends a tool removes its uncommitted outputs first, then ends
 * it as it would have. */
static void on_signal(int sig)
{
    ddtk_remove_temporaries(sig, end_by);
}

static void catch_signals(void)
{
    static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa = { .sa_handler = on_signal }, prev;
        sigaction(sigs[i], NULL, &prev);
        if (prev.sa_handler == SIG_DFL)   /* leave ignored signals ignored */
            sigaction(sigs[i], &sa, NULL);
    }
}

void ddtk_set_progname(const char *argv0)
{
    static int registered;
    const char *slash = strrchr(argv0, '/');
    ddtk_progname = slash ? slash + 1 : argv0;
    ddtk_set_message_handler(ddtk_cli_message, NULL);
    ddtk_set_progress_handler(ddtk_cli_progress, NULL);
    ddtk_set_analyst(getenv("USER"));
    if (!registered++) {
        catch_signals();
        on_exit(check_stdout, NULL);
    }
}

int ddtk_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
                int version_code, void (*help)(void), ddtk_option_handler handler, void *ctx)
{
    int code, rc = DDTK_OK;
    opterr = 0;
    while (!rc && (code = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (code == 'h') {
            help();
            return DDTK_DONE;
        }
        if (code == version_code) {
            printf("%s (ddtk) %s\n", ddtk_progname, DDTK_VERSION);
            return DDTK_DONE;
        }
        if (code == '?')
            rc = ddtk_fail(DDTK_EUSAGE, "unknown option '%s' (see --help)", argv[optind - 1]);
        else if (code == ':')
            rc = ddtk_fail(DDTK_EUSAGE, "option '%s' needs a value (see --help)", argv[optind - 1]);
        else
            rc = handler(code, optarg, ctx);
    }
    return rc;
}

int ddtk_bad_option(const char *opt, const char *arg, const char *why)
{
    return ddtk_fail(DDTK_EUSAGE, "%s '%s': %s (see --help)", opt, arg, why);
}

int ddtk_opt_double(const char *opt, const char *arg, double *v)
{
    return ddtk_parse_double(arg, v) ? ddtk_bad_option(opt, arg, "not a number") : DDTK_OK;
}

int ddtk_opt_int64(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *v)
{
    if (ddtk_parse_int64(arg, v) || *v < lo || *v > hi) {
        char why[96];
        snprintf(why, sizeof why, "expected a whole number from %lld to %lld",
                 (long long)lo, (long long)hi);
        return ddtk_bad_option(opt, arg, why);
    }
    return DDTK_OK;
}

int ddtk_opt_int(const char *opt, const char *arg, int lo, int hi, int *v)
{
    int64_t x;
    int rc = ddtk_opt_int64(opt, arg, lo, hi, &x);
    if (!rc)
        *v = (int)x;
    return rc;
}

int ddtk_opt_choice(const char *opt, const char *arg, const char *const *names, int *v)
{
    char why[128] = "expected ";
    for (int i = 0; names[i]; i++) {
        if (strcmp(arg, names[i]) == 0) {
            *v = i;
            return DDTK_OK;
        }
        snprintf(why + strlen(why), sizeof why - strlen(why), "%s%s", i ? " or " : "", names[i]);
    }
    return ddtk_bad_option(opt, arg, why);
}

int ddtk_one_input(int argc, char **argv, const char **input)
{
    *input = optind < argc ? argv[optind++] : NULL;
    if (optind < argc)
        return ddtk_fail(DDTK_EUSAGE, "one input file only ('%s' is extra; see --help)",
                         argv[optind]);
    return DDTK_OK;
}

/*
 * The library names a setting by its value or field ("backend gpu", "DM step
 * of 0", "overwriting it needs force"); the command line by the option that
 * sets it. Each pair: the library's words and the options', and where they
 * apply: anywhere but after "--" (so words already translated stay), only at
 * the start of a message (a field name there is its subject), or anywhere
 * before a number (a field and its value).
 */
enum { ANYWHERE, START, VALUE };
static const struct {
    const char *lib, *cli;
    int where;
} words[] = {
    { "backend gpu: ", "--backend gpu: ", ANYWHERE },
    { "backend auto uses the CPU", "--backend auto uses the CPU", ANYWHERE },
    { "GPU index ", "--gpu ", ANYWHERE },
    { " (overwriting it needs force)", " (use --force to overwrite)", ANYWHERE },
    { "; .tim files hold integers", "; use --format tim", ANYWHERE },
    { " dropped; the remainder can be kept", " dropped; --keep-remainder keeps them", ANYWHERE },
    { "; raise the tolerance or narrow the range", "; raise --tol or narrow the range", ANYWHERE },
    { ", over the memory bound ", ", over --max-mem ", ANYWHERE },
    { "(memory bound ", "(--max-mem ", ANYWHERE },
    { "; lower zmax or use the CPU backend", "; lower --zmax or use --backend cpu", ANYWHERE },
    { "; use the CPU backend", "; use --backend cpu", ANYWHERE },
    { " (raise the threshold)", " (raise --sigma)", ANYWHERE },
    { "an output name is for a single DM; use a prefix for",
      "-o names the output of a single DM; use --prefix for", ANYWHERE },
    { ".dat input needs an output name FILE.dat", ".dat input needs -o FILE.dat", ANYWHERE },
    { "(GPU variants renumbered; tune again)", "(GPU variants renumbered; run ddtune again)",
      ANYWHERE },
    { "; choose an IF (pol)", "; choose an IF with --pol N", ANYWHERE },
    { ": pol ", ": --pol ", ANYWHERE },
    { "output -: ", "-o -: ", START },
    { "output bits ", "--nbits-out ", START },
    { "reference frequency ", "--ref-freq ", START },
    { "DM list '", "--dm '", START },
    { "DM step of ", "--dm-step ", START },
    { "tolerance ", "--tol ", START },
    { "pulse width ", "--pulse-width ", START },
    { "harmonics ", "--numharm ", START },
    { "zmax ", "--zmax ", START },
    { "nchans ", "--nchans ", START },
    { "tsamp ", "--tsamp ", START },
    { "fch1 ", "--fch1 ", START },
    { "nsub ", "--nsub ", START },
    { "sub_dm ", "--sub-dm ", START },
    { "gpu_group ", "--gpu-group ", START },
    { "flo ", "--flo ", START },
    { " fhi ", " --fhi ", VALUE },
    { " foff ", " --foff ", VALUE },
};

static int applies(const char *text, size_t i, int where, size_t len)
{
    char next = text[i + len];
    if (where == START)
        return i == 0;
    if (where == VALUE && !(next == '-' || next == '.' || (next >= '0' && next <= '9')))
        return 0;
    return i < 2 || text[i - 1] != '-' || text[i - 2] != '-';
}

const char *ddtk_cli_words(const char *text, char *buf, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; text[i] && len + 1 < n;) {
        size_t j = 0, k = sizeof words / sizeof words[0];
        for (; j < k; j++)
            if (strncmp(text + i, words[j].lib, strlen(words[j].lib)) == 0
                && applies(text, i, words[j].where, strlen(words[j].lib)))
                break;
        if (j < k) {
            len += (size_t)snprintf(buf + len, n - len, "%s", words[j].cli);
            len = len < n ? len : n - 1;
            i += strlen(words[j].lib);
        } else
            buf[len++] = text[i++];
    }
    buf[len < n ? len : n - 1] = '\0';
    return buf;
}

int ddtk_exit_status(int rc)
{
    char text[1280];
    if (rc == DDTK_DONE)
        return DDTK_OK;
    if (rc)
        ddtk_msg("%s", ddtk_cli_words(ddtk_errmsg(), text, sizeof text));
    return rc;
}

void ddtk_msg(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", ddtk_progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

char *ddtk_cli_wisdom_path(void)
{
    return ddtk_wisdom_path(getenv("DDTK_WISDOM"), getenv("XDG_CACHE_HOME"), getenv("HOME"));
}

void ddtk_cli_message(void *ctx, int level, const char *text)
{
    char words[1280];
    (void)ctx;
    ddtk_msg("%s%s", level == DDTK_MSG_WARNING ? "warning: " : level == DDTK_MSG_NOTE ? "note: "
                     : "", ddtk_cli_words(text, words, sizeof words));
}

int ddtk_parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && !*end && !errno && isfinite(*v) ? DDTK_OK : DDTK_EUSAGE;
}

int ddtk_env_mib(const char *name, int64_t *bytes)
{
    const char *s = getenv(name);
    double mib;
    *bytes = 0;
    if (!s || !*s)
        return DDTK_OK;
    if (ddtk_parse_double(s, &mib) || !(mib >= 1 && mib <= DDTK_ENV_MIB_MAX))
        return ddtk_fail(DDTK_EUSAGE, "%s '%s': expected MiB from 1 to %.0f", name, s,
                         DDTK_ENV_MIB_MAX);
    *bytes = (int64_t)(mib * 1048576.0);
    return DDTK_OK;
}

int ddtk_parse_int64(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    *v = x;
    return end != s && !*end && !errno ? DDTK_OK : DDTK_EUSAGE;
}

int ddtk_parse_size(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    double unit = 1;
    switch (*end) {
    case 'k': case 'K': unit = 1024.0; end++; break;
    case 'm': case 'M': unit = 1024.0 * 1024; end++; break;
    case 'g': case 'G': unit = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': unit = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (*end == 'i' || *end == 'B')
        end += (*end == 'i') + (end[*end == 'i'] == 'B');
    if (end == s || *end || errno || !(x > 0) || x * unit > 9e18)
        return DDTK_EUSAGE;
    *v = (int64_t)(x * unit);
    return DDTK_OK;
}

int ddtk_gpus_parse(const char *opt, const char *arg, int *gpus, int *ngpus)
{
    if (strcmp(arg, "all") == 0) {
        *ngpus = DDTK_GPUS_ALL;
        return DDTK_OK;
    }
    int n = 0;
    for (const char *s = arg;; n++) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char item[16];
        int64_t v = -1;
        if (n == DDTK_MAX_GPUS)
            return ddtk_bad_option(opt, arg, "more than 64 GPUs");
        if (len > 0 && len < sizeof item) {
            memcpy(item, s, len);
            item[len] = '\0';
            if (ddtk_parse_int64(item, &v))
                v = -1;
        }
        if (v < 0 || v > 1023)
            return ddtk_bad_option(opt, arg, "expected a GPU index 0..1023, a comma-separated "
                                   "list of them, or all");
        gpus[n] = (int)v;
        if (!comma)
            break;
        s = comma + 1;
    }
    *ngpus = n + 1;
    return DDTK_OK;
}
