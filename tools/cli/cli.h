/*
 * cli.h - the command-line layer every tool shares (cli.c, progress.c), above
 * libddtk and outside it (build/libddtkcli.a): the getopt_long loop and option
 * values, the program name and messages, the handlers that print the
 * library's messages and progress on stderr, progress on a terminal and the
 * run summary. Not installed.
 */
#ifndef DDTK_CLI_H
#define DDTK_CLI_H

#include "ddtk.h"
#include "internal.h"

DDTK_BEGIN_DECLS

/* Returned after --help or --version (or an option that does its job at once): exit 0. */
#define DDTK_DONE 100

struct option;
/* The entries every tool's getopt_long table ends with (before its terminator). */
#define DDTK_STANDARD_OPTIONS(version_code) \
    { "quiet", 0, 0, 'q' }, { "verbose", 0, 0, 'v' }, { "help", 0, 0, 'h' }, \
    { "version", 0, 0, (version_code) }
/* A tool's handler for its own options: DDTK_OK, DDTK_DONE or an error code. */
typedef int (*ddtk_option_handler)(int code, const char *arg, void *ctx);

/*
 * The option loop every tool shares: getopt_long over argv; -h/--help prints
 * help() and --version (code version_code) the version, both returning
 * DDTK_DONE; unknown options and missing values are usage errors; every other
 * option goes to handler. Stops at the first error. Operands are left from optind.
 */
int ddtk_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
                int version_code, void (*help)(void), ddtk_option_handler handler, void *ctx);

/* Option values: each returns DDTK_OK or records the usage error
 * "OPT 'ARG': WHY (see --help)" and returns DDTK_EUSAGE. */
int ddtk_bad_option(const char *opt, const char *arg, const char *why);
int ddtk_opt_double(const char *opt, const char *arg, double *v);
int ddtk_opt_int(const char *opt, const char *arg, int lo, int hi, int *v);
int ddtk_opt_int64(const char *opt, const char *arg, int64_t lo, int64_t hi, int64_t *v);
/* arg must be one of the NULL-terminated names; *v gets its index. */
int ddtk_opt_choice(const char *opt, const char *arg, const char *const *names, int *v);
/* The single input operand left after the options (NULL: stdin). */
int ddtk_one_input(int argc, char **argv, const char **input);
/* --gpu LIST: "N", "N,M,..." (DDTK_MAX_GPUS at most; an index may repeat)
 * or "all" (*ngpus = DDTK_GPUS_ALL) into gpus[DDTK_MAX_GPUS]; a usage error
 * names opt. Touches no GPU. */
int ddtk_gpus_parse(const char *opt, const char *arg, int *gpus, int *ngpus);

extern const char *ddtk_progname;
/* The wisdom file of the environment: $DDTK_WISDOM, $XDG_CACHE_HOME, $HOME
 * (ddtk_wisdom_path). */
char *ddtk_cli_wisdom_path(void);
/* Set the name messages start with, install the library's handlers (below,
 * and SIGINT, SIGTERM, SIGHUP, SIGPIPE removing uncommitted outputs), and
 * check stdout at exit: a tool that returns 0 but whose stdout could not be
 * written exits 3 with one line. */
void ddtk_set_progname(const char *argv0);
/* A library message in the command line's words: the options for the
 * settings it names by value ("backend gpu: " -> "--backend gpu: "), into buf. */
const char *ddtk_cli_words(const char *text, char *buf, size_t n);
/* The exit status of a tool whose work returned rc: 0 for DDTK_OK and
 * DDTK_DONE (after --help or --version); an error's message goes to stderr. */
int ddtk_exit_status(int rc);
/* Print "prog: message" to stderr. */
void ddtk_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The handlers ddtk_set_progname installs: the library's messages as
 * "prog: [warning: |note: ]text" on stderr, and its progress as a bar on a
 * terminal, else (with ddtk_cli_verbose) a line every few seconds. */
void ddtk_cli_message(void *ctx, int level, const char *text);
void ddtk_cli_progress(void *ctx, int stage, const char *what, int64_t done, int64_t total);
extern int ddtk_cli_verbose;
int ddtk_parse_double(const char *s, double *v);
/* A size in MiB from environment variable name (DDTK_GPU_MEM, a test and
 * tuning knob) into *bytes: 0 when unset or empty, else a number from 1 to
 * 2^30 MiB; anything else is a usage error naming the variable, as the
 * options' values are. */
#define DDTK_ENV_MIB_MAX 1073741824.0
int ddtk_env_mib(const char *name, int64_t *bytes);
int ddtk_parse_int64(const char *s, int64_t *v);
/* "512M", "2G", "1048576" */
int ddtk_parse_size(const char *s, int64_t *v);

typedef struct ddtk_progress {
    double start, last;
    int64_t total, done;
    int tty, quiet, verbose;
    const char *what;
} ddtk_progress;

void ddtk_progress_start(ddtk_progress *p, const char *what, int64_t total,
                         int quiet, int verbose);
void ddtk_progress_update(ddtk_progress *p, int64_t done);
void ddtk_progress_end(ddtk_progress *p);
void ddtk_print_summary(const ddtk_run_stats *s, const char *algorithm);

DDTK_END_DECLS

#endif
