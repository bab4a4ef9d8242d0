/*
 * dmlist.c - DM trial lists: explicit, linear ranges, files, tolerance-spaced.
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void ddtk_dmlist_free(ddtk_dmlist *l)
{
    free(l->dm);
    memset(l, 0, sizeof *l);
}

int ddtk_dmlist_push(ddtk_dmlist *l, double dm)
{
    if (!isfinite(dm) || dm < 0)
        return ddtk_fail(DDTK_EUSAGE, "DM %g is not a finite number >= 0", dm);
    if (l->n == DDTK_MAX_DMS)
        return ddtk_fail(DDTK_EUSAGE, "over 10^7 DMs in one list");
    if (l->n == l->cap) {
        int64_t cap = l->cap;     /* the public struct's int: DDTK_MAX_DMS bounds it */
        double *p = ddtk_grow(l->dm, &cap, sizeof *p, 64, "the DM list");
        if (!p)
            return DDTK_ESYS;
        l->dm = p;
        l->cap = (int)cap;
    }
    l->dm[l->n++] = dm;
    return DDTK_OK;
}

int ddtk_dmlist_parse(ddtk_dmlist *l, const char *text)
{
    const char *p = text;
    for (;;) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || (*end && *end != ','))
            return ddtk_fail(DDTK_EUSAGE, "DM list '%s': not a DM or comma-separated DM list",
                             text);
        int rc = ddtk_dmlist_push(l, v);
        if (rc)
            return ddtk_fail(rc, "DM list '%s': DM %g is not a finite number >= 0", text, v);
        if (!*end)
            return DDTK_OK;
        p = end + 1;
    }
}

int ddtk_dmlist_range(ddtk_dmlist *l, double lo, double hi, double step)
{
    if (!isfinite(lo) || !isfinite(hi) || lo < 0 || hi < lo)
        return ddtk_fail(DDTK_EUSAGE, "DM range %g..%g: need 0 <= dm-min <= dm-max", lo, hi);
    if (!(step > 0) || !isfinite(step))
        return ddtk_fail(DDTK_EUSAGE, "DM step of %g: need a step > 0", step);
    double n = floor((hi - lo) / step * (1 + 1e-12)) + 1;
    if (n > DDTK_MAX_DMS)
        return ddtk_fail(DDTK_EUSAGE, "DM range %g..%g in steps of %g gives %.0f DMs (over 10^7)",
                         lo, hi, step, n);
    for (int i = 0; i < (int)n; i++) {
        int rc = ddtk_dmlist_push(l, lo + i * step);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

/* One line of a DM list: blank, a comment, or one DM. */
static int parse_dm_line(ddtk_dmlist *l, const char *line, const char *path, long lineno)
{
    const char *p = line + strspn(line, " \t");
    if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0')
        return DDTK_OK;
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    end += strspn(end, " \t\r\n");
    if (end == p || errno || *end || !isfinite(v) || v < 0)
        return ddtk_fail(DDTK_EDATA, "%s: line %ld: not a DM (a finite number >= 0)", path, lineno);
    return ddtk_dmlist_push(l, v);
}

int ddtk_dmlist_file(ddtk_dmlist *l, const char *path)
{
    FILE *fp;
    int rc = ddtk_text_open(path, &fp);
    if (rc)
        return rc;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, len;
    int64_t total = 0;
    while (!rc && (len = ddtk_text_line(fp, path, ++lineno, &line, &cap, &total)) != 0)
        rc = len < 0 ? (int)-len : parse_dm_line(l, line, path, lineno);
    if (!rc && l->n == 0)
        rc = ddtk_fail(DDTK_EDATA, "%s: no DMs in the file", path);
    free(line);
    fclose(fp);
    return rc;
}

/*
 * The effective width at the previous DM p is W(p)^2 = s^2 + a^2 p^2, with s^2
 * the sampling time and intrinsic width in quadrature and a p the smearing
 * within one channel (8.3 us * chan_bw[MHz] * DM / f[GHz]^3). Trying DM x
 * after p adds the smearing of the DM error across the band, b (x - p), with
 * b = a * nchans / 4. The next DM solves
 *     s^2 + a^2 x^2 + b^2 (x - p)^2 = tol^2 W(p)^2,
 * a quadratic in x whose larger root we take.
 */
typedef struct tol_step {
    double a2, b2, tol2, s2;
} tol_step;

/* The DM after p, or a value <= p when the recurrence does not advance. */
static double tol_next(const tol_step *t, double p)
{
    double k = t->s2 * (t->tol2 - 1.0) + t->tol2 * t->a2 * p * p;
    return (t->b2 * p + sqrt(-t->a2 * t->b2 * p * p + (t->a2 + t->b2) * k)) / (t->a2 + t->b2);
}

/* Walk the list from lo to hi; with l, push each DM. Fails past DDTK_MAX_DMS. */
static int tol_walk(const tol_step *t, double lo, double hi, ddtk_dmlist *l)
{
    double p = lo;
    int n = 1, rc = l ? ddtk_dmlist_push(l, lo) : DDTK_OK;
    while (!rc && p < hi) {
        double x = tol_next(t, p);
        if (!(x > p))
            return ddtk_fail(DDTK_EUSAGE, "the tolerance DM list does not advance at DM %g", p);
        if (x > hi)
            break;
        if (++n > DDTK_MAX_DMS)
            return ddtk_fail(DDTK_EUSAGE, "the tolerance DM list for %g..%g has over 10^7 DMs; "
                             "raise the tolerance or narrow the range", lo, hi);
        if (l)
            rc = ddtk_dmlist_push(l, x);
        p = x;
    }
    return rc;
}

int ddtk_dmlist_tol(ddtk_dmlist *l, double lo, double hi, double tsamp,
                    double pulse_width_us, double tol, double fcentre_mhz,
                    double chan_bw_mhz, int nchans)
{
    if (!isfinite(lo) || !isfinite(hi) || lo < 0 || hi < lo)
        return ddtk_fail(DDTK_EUSAGE, "DM range %g..%g: need 0 <= dm-min <= dm-max", lo, hi);
    if (!(tol > 1) || !isfinite(tol))
        return ddtk_fail(DDTK_EUSAGE, "tolerance %g: the tolerance must be > 1", tol);
    if (!(pulse_width_us >= 0) || !isfinite(pulse_width_us))
        return ddtk_fail(DDTK_EUSAGE, "pulse width %g: need a width >= 0 (microseconds)",
                         pulse_width_us);
    double ts = tsamp * 1e6, f = fcentre_mhz * 1e-3;
    double a = 8.3 * fabs(chan_bw_mhz) / (f * f * f);
    tol_step t = { .a2 = a * a, .tol2 = tol * tol,
                   .s2 = ts * ts + pulse_width_us * pulse_width_us };
    t.b2 = t.a2 * (double)nchans * nchans / 16.0;
    int rc = tol_walk(&t, lo, hi, NULL);   /* count first: refuse before allocating */
    return rc ? rc : tol_walk(&t, lo, hi, l);
}
