/*
 * cli.c - command-line helpers shared by every tool: messages, number parsing.
 */
#include "ddtk.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *ddtk_progname = "ddtk";

void ddtk_set_progname(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    ddtk_progname = slash ? slash + 1 : argv0;
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

void ddtk_msg(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", ddtk_progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int ddtk_parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && !*end && !errno && isfinite(*v) ? DDTK_OK : DDTK_EUSAGE;
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

void ddtk_options_init(ddtk_options *o)
{
    memset(o, 0, sizeof *o);
    o->kdm = DDTK_KDM_DEFAULT;
    o->rounding = DDTK_ROUND_NEAREST;
    o->backend = DDTK_BACKEND_AUTO;
    o->pol = DDTK_POL_DEFAULT;
}
