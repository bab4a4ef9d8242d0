/*
 * plan.c - DM plans: the observing set-up, the scrunch factor per DM
 * (Barsdell 2.1), PRESTO DDplan-style ranges, the smearing model per
 * algorithm (Barsdell appendices A and B) and the cost model (each algorithm's
 * own terms in its descriptor, algo.h), the split of a
 * DM list by cost (the multi-GPU partition), and --plan files.
 */
#include "algo.h"
#include "dmplan.h"
#include "internal.h"
#include "tempfile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DOWNSAMP 1024

static const char plan_columns[] = "dm_lo\tdm_hi\tdm_step\tdownsamp\tndm";
/* The sixth column, written when any row was planned for sub-bands (ranges
 * mode with --nsub): the DMs per nominal sub-band DM that dd_subband uses. */
static const char plan_sub_column[] = "dms_per_sub";

int ddtk_obs_init(ddtk_obs *o, int nchans, double fch1, double foff, double tsamp,
                  int64_t nsamples, double kdm)
{
    if (nchans < 1)
        return ddtk_fail(DDTK_EUSAGE, "nchans %d: need at least one channel", nchans);
    if (!(tsamp > 0) || !isfinite(tsamp))
        return ddtk_fail(DDTK_EUSAGE, "tsamp %g: need a sample time > 0 s", tsamp);
    if (!isfinite(fch1) || !isfinite(foff) || foff == 0)
        return ddtk_fail(DDTK_EUSAGE, "fch1 %g foff %g: need finite values, foff != 0",
                         fch1, foff);
    double last = fch1 + (nchans - 1) * foff;
    memset(o, 0, sizeof *o);
    o->nchans = nchans;
    o->tsamp = tsamp;
    o->kdm = kdm;
    o->fhi = fmax(fch1, last);
    o->flo = fmin(fch1, last);
    o->chan_bw = fabs(foff);
    o->bw = nchans * o->chan_bw;
    o->fctr = 0.5 * (o->fhi + o->flo);
    o->nsamples = nsamples;
    if (!(o->flo - 0.5 * o->chan_bw > 0))
        return ddtk_fail(DDTK_EUSAGE, "band %g..%g MHz reaches 0 MHz", o->flo, o->fhi);
    return DDTK_OK;
}

int ddtk_obs_from_header(ddtk_obs *o, const ddtk_header *h, int64_t nsamples, double kdm)
{
    ddtk_channels ch;
    int rc = ddtk_channels_init(&ch, h, NULL, 0);
    if (rc)
        return rc;
    double foff = h->nchans > 1 ? (ch.fmin - ch.fmax) / (h->nchans - 1) : -ch.chan_bw;
    rc = ddtk_obs_init(o, h->nchans, ch.fmax, foff != 0 ? foff : -ch.chan_bw, h->tsamp,
                       nsamples, kdm);
    ddtk_channels_free(&ch);
    return rc;
}

/* Dispersion sweep (s) of a DM over bw MHz at f MHz: 2 K DM bw / f^3. */
static double dm_smear(const ddtk_obs *o, double dm, double bw)
{
    return 2.0 * o->kdm * fabs(dm) * bw / (o->fctr * o->fctr * o->fctr);
}

double ddtk_diagonal_dm(const ddtk_obs *o)
{
    return o->tsamp / dm_smear(o, 1.0, o->chan_bw);
}

int ddtk_scrunch_factor(const ddtk_obs *o, double dm)
{
    double x = dm / ddtk_diagonal_dm(o);
    int f = 1;
    while (f < MAX_DOWNSAMP && x >= 2.0 * f)
        f *= 2;
    return f;
}

/* ---- plans ---------------------------------------------------------------- */

void ddtk_dmplan_free(ddtk_dmplan *p)
{
    free(p->row);
    memset(p, 0, sizeof *p);
}

int ddtk_dmplan_push(ddtk_dmplan *p, const ddtk_dmplan_row *r)
{
    if (p->n == p->cap) {
        int64_t cap = p->cap;     /* the public struct's int: at most 2^25 rows */
        ddtk_dmplan_row *row = ddtk_grow(p->row, &cap, sizeof *row, 16, "the DM plan");
        if (!row)
            return DDTK_ESYS;
        p->row = row;
        p->cap = (int)cap;
    }
    p->row[p->n++] = *r;
    return DDTK_OK;
}

int ddtk_dmplan_ndm(const ddtk_dmplan *p)
{
    int n = 0;
    for (int i = 0; i < p->n; i++)
        n += p->row[i].ndm;
    return n;
}

int ddtk_dmplan_from_list(ddtk_dmplan *p, const double *dm, const int *ds, int n)
{
    for (int i = 0; i < n; i++) {
        double step = i + 1 < n ? dm[i + 1] - dm[i] : i > 0 ? dm[i] - dm[i - 1] : 1.0;
        ddtk_dmplan_row r = { .dm_lo = dm[i], .dm_hi = dm[i] + step, .dm_step = step,
                            .downsamp = ds ? ds[i] : 1, .ndm = 1 };
        int rc = ddtk_dmplan_push(p, &r);
        if (rc)
            return rc;
    }
    return DDTK_OK;
}

int ddtk_dmplan_expand(const ddtk_dmplan *p, ddtk_dmlist *dms, int **ds)
{
    int n = ddtk_dmplan_ndm(p), k = 0, rc = DDTK_OK;
    *ds = ddtk_malloc((size_t)(n > 0 ? n : 1) * sizeof **ds, "scrunch factors");
    if (!*ds)
        return DDTK_ESYS;
    for (int i = 0; i < p->n && !rc; i++)
        for (int j = 0; j < p->row[i].ndm && !rc; j++) {
            (*ds)[k++] = p->row[i].downsamp;
            rc = ddtk_dmlist_push(dms, p->row[i].dm_lo + j * p->row[i].dm_step);
        }
    return rc;
}

/* ---- DDplan-style ranges ---------------------------------------------------
 * PRESTO DDplan.py's method: DM steps from a fixed list of round values,
 * power-of-two downsampling; each range ends where the channel smearing is
 * twice every other smearing term combined, and the next range takes the next
 * downsampling factor and the largest listed step whose smearing across the
 * band stays below 1.2 times the new sample time. Times here in seconds. */

static const double allowed_steps[] = {
    0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0,
    10.0, 20.0, 30.0, 50.0, 100.0, 200.0, 300.0,
};
#define NSTEPS ((int)(sizeof allowed_steps / sizeof allowed_steps[0]))
#define SOFTEN 1.2              /* "two time scales are equal" within this factor */
#define SMEAR_FACT 2.0          /* channel smearing / other terms at a range's end */

static double step_smear(const ddtk_obs *o, double step)
{
    return dm_smear(o, 0.5 * step, o->bw);
}

static double sub_smear(const ddtk_obs *o, double sub_step, int nsub)
{
    return nsub ? dm_smear(o, 0.5 * sub_step, o->bw / nsub) : 0.0;
}

/* DDplan's sub-band DM step: the largest even multiple of the step whose
 * smearing stays below 0.8 of the smaller of step smearing and sample time. */
static int dms_per_sub(const ddtk_obs *o, double step, int downsamp, int nsub)
{
    double limit = 0.8 * fmin(step_smear(o, step), o->tsamp * downsamp);
    int n = 2;
    while (n < 1 << 20 && sub_smear(o, (n + 2) * step, nsub) <= limit)
        n += 2;
    return n;
}

static int ranges_row(ddtk_dmplan *p, const ddtk_obs *o, double lo, double hi,
                      double step, int downsamp, int nsub)
{
    ddtk_dmplan_row r = { .dm_lo = lo, .dm_step = step, .downsamp = downsamp };
    double sub = 0.0;
    if (nsub) {
        r.dms_per_sub = dms_per_sub(o, step, downsamp, nsub);
        sub = sub_smear(o, r.dms_per_sub * step, nsub);
    }
    double ts = o->tsamp, bs = step_smear(o, step);
    double other = sqrt(ts * ts + ts * downsamp * ts * downsamp + bs * bs + sub * sub);
    double cross = fmin(SMEAR_FACT * other / dm_smear(o, 1.0, o->chan_bw), hi);
    double n = ceil((cross - lo) / step - 1e-9);
    if (n < 1)
        n = 1;
    if (nsub)
        n = ceil(n / r.dms_per_sub) * r.dms_per_sub;
    if (n > DDTK_MAX_DMS)
        return ddtk_fail(DDTK_EUSAGE, "DM range %g..%g needs over 10^7 DMs", lo, hi);
    r.ndm = (int)n;
    r.dm_hi = lo + r.ndm * step;
    return ddtk_dmplan_push(p, &r);
}

/* Initial downsampling: where the least channel smearing (or the step
 * smearing) already exceeds the sample time, the data are finer than needed. */
static int first_downsamp(const ddtk_obs *o, double lo)
{
    double chan = dm_smear(o, lo, o->chan_bw);
    double ok = fmax(fmax(chan, step_smear(o, allowed_steps[0])), o->tsamp);
    int ds = 1;
    if (SOFTEN * chan > o->tsamp || ok > o->tsamp) {
        double okval = ok > SOFTEN * chan ? ok : SOFTEN * chan;
        while (ds < MAX_DOWNSAMP && o->tsamp * ds * 2 < okval)
            ds *= 2;
    }
    return ds;
}

int ddtk_dmplan_ranges(ddtk_dmplan *p, const ddtk_obs *o, double lo, double hi, int nsub)
{
    if (!isfinite(lo) || !isfinite(hi) || lo < 0 || !(hi > lo))
        return ddtk_fail(DDTK_EUSAGE, "DM range %g..%g: need 0 <= dm-min < dm-max", lo, hi);
    int ds = first_downsamp(o, lo), is = 0, rc;
    double guess = o->tsamp * ds / dm_smear(o, 0.5, o->bw);
    while (is + 1 < NSTEPS && allowed_steps[is + 1] < SOFTEN * guess)
        is++;
    rc = ranges_row(p, o, lo, hi, allowed_steps[is], ds, nsub);
    while (!rc && p->row[p->n - 1].dm_hi < hi) {
        if (ds >= MAX_DOWNSAMP)
            return ddtk_fail(DDTK_EUSAGE, "DM range %g..%g needs downsampling over %d",
                             lo, hi, MAX_DOWNSAMP);
        ds *= 2;
        while (is + 1 < NSTEPS && step_smear(o, allowed_steps[is + 1]) < SOFTEN * o->tsamp * ds)
            is++;
        rc = ranges_row(p, o, p->row[p->n - 1].dm_hi, hi, allowed_steps[is], ds, nsub);
    }
    return rc;
}

/* ---- smearing and cost ------------------------------------------------------ */

void ddtk_smear_row(const ddtk_obs *o, const ddtk_dmplan_row *r, double width, ddtk_smear *s)
{
    double dm = r->dm_lo + (r->ndm - 1) * r->dm_step;
    s->samp = o->tsamp * r->downsamp;
    s->width = width;
    s->chan = dm_smear(o, dm, o->chan_bw);
    s->step = step_smear(o, r->dm_step);
    s->direct = sqrt(s->samp * s->samp + width * width + s->chan * s->chan + s->step * s->step);
}

static int model_of(const char *algorithm, const ddtk_algo **a)
{
    *a = ddtk_algo_find(algorithm);
    if (!*a || !(*a)->model_adds)
        return ddtk_fail(DDTK_EUSAGE, "no smearing and cost model for the algorithm '%s'",
                         algorithm ? algorithm : "(null)");
    return DDTK_OK;
}

int ddtk_model_smear(const char *algorithm, const ddtk_obs *o, const ddtk_dmplan_row *r,
                     const ddtk_smear *s, int chans_per_sub, double *total)
{
    const ddtk_algo *a;
    int rc = model_of(algorithm, &a);
    if (rc)
        return rc;
    double w2 = s->samp * s->samp + s->width * s->width + s->chan * s->chan
              + s->step * s->step;
    double own = a->model_smear ? a->model_smear(o, r, chans_per_sub) : 0.0;
    *total = sqrt(w2 + own * own);
    return DDTK_OK;
}

/* Consecutive rows at one resolution (and DMs per sub-band DM) are one run
 * of the cost model (a tol plan has a row per DM). */
int ddtk_model_adds(const char *algorithm, const ddtk_obs *o, const ddtk_dmplan *p,
                    int64_t nsamples, int chans_per_sub, double *adds)
{
    const ddtk_algo *a;
    int rc = model_of(algorithm, &a);
    *adds = 0;
    for (int i = 0; !rc && i < p->n;) {
        const ddtk_dmplan_row *r = &p->row[i];
        int ndm = 0;
        for (; i < p->n && p->row[i].downsamp == r->downsamp
               && p->row[i].dms_per_sub == r->dms_per_sub; i++)
            ndm += p->row[i].ndm;
        *adds += (double)nsamples / r->downsamp
                 * a->model_adds(o, ndm, r->dms_per_sub, chans_per_sub);
    }
    return rc;
}

double ddtk_dmplan_out_bytes(const ddtk_dmplan *p, int64_t nsamples)
{
    double bytes = 0;
    for (int i = 0; i < p->n; i++)
        bytes += (double)nsamples / p->row[i].downsamp * p->row[i].ndm * 4.0;
    return bytes;
}

/* ---- splitting a DM list by cost ------------------------------------------- */

int ddtk_split_cost(const double *cost, const uint8_t *cut, int n, int nparts, int *first)
{
    double *pre = ddtk_malloc(((size_t)n + 1) * sizeof *pre, "DM split");
    if (!pre)
        return DDTK_ESYS;
    pre[0] = 0;
    for (int i = 0; i < n; i++)
        pre[i + 1] = pre[i] + cost[i];
    first[0] = 0;
    for (int j = 1, c = 0; j < nparts; j++) {
        /* The prefixes rise with i: the nearest to the target is at or just past it. */
        double target = pre[n] * j / nparts;
        int best = c;
        for (int i = c + 1; i <= n; i++) {
            if (i < n && cut && !cut[i])
                continue;
            if (fabs(pre[i] - target) < fabs(pre[best] - target))
                best = i;
            if (pre[i] >= target)
                break;
        }
        first[j] = c = best;
    }
    first[nparts > 0 ? nparts : 0] = n;
    free(pre);
    return DDTK_OK;
}

/* ---- --plan files ------------------------------------------------------------ */

static int is_pow2(int n)
{
    return n >= 1 && (n & (n - 1)) == 0;
}

static int check_row(const ddtk_dmplan_row *r, const char *name, int line)
{
    if (!isfinite(r->dm_lo) || r->dm_lo < 0)
        return ddtk_fail(DDTK_EDATA, "%s: row %d: dm_lo %g must be a finite DM >= 0", name, line,
                         r->dm_lo);
    if (!(r->dm_step > 0) || !isfinite(r->dm_step))
        return ddtk_fail(DDTK_EDATA, "%s: row %d: dm_step %g must be > 0", name, line, r->dm_step);
    if (r->ndm < 1)
        return ddtk_fail(DDTK_EDATA, "%s: row %d: ndm %d must be >= 1", name, line, r->ndm);
    if (!is_pow2(r->downsamp) || r->downsamp > MAX_DOWNSAMP)
        return ddtk_fail(DDTK_EDATA, "%s: row %d: downsamp %d must be a power of two, 1..%d",
                         name, line, r->downsamp, MAX_DOWNSAMP);
    double hi = r->dm_lo + r->ndm * r->dm_step;
    if (!(fabs(r->dm_hi - hi) <= 1e-6 * fmax(1.0, hi)))
        return ddtk_fail(DDTK_EDATA, "%s: row %d: dm_hi %g is not dm_lo + ndm*dm_step = %g",
                         name, line, r->dm_hi, hi);
    if (r->dms_per_sub < 0 || (r->dms_per_sub > 0 && r->ndm % r->dms_per_sub))
        return ddtk_fail(DDTK_EDATA, "%s: row %d: dms_per_sub %d must be 0 or divide ndm %d",
                         name, line, r->dms_per_sub, r->ndm);
    return DDTK_OK;
}

int ddtk_dmplan_validate(const ddtk_dmplan *p, const char *name)
{
    double ndm = 0;               /* in double: rows may hold up to 10^9 each */
    if (p->n == 0)
        return ddtk_fail(DDTK_EDATA, "%s: the plan has no rows", name);
    for (int i = 0; i < p->n; i++) {
        int rc = check_row(&p->row[i], name, i + 1);
        if (rc)
            return rc;
        if ((ndm += p->row[i].ndm) > DDTK_MAX_DMS)
            return ddtk_fail(DDTK_EDATA, "%s: over 10^7 DMs by row %d", name, i + 1);
        if (i == 0)
            continue;
        double prev = p->row[i - 1].dm_hi, lo = p->row[i].dm_lo;
        if (fabs(lo - prev) > 1e-6 * fmax(1.0, prev))
            return ddtk_fail(DDTK_EDATA, "%s: row %d: %s between dm_hi %g of row %d and dm_lo %g",
                             name, i + 1, lo > prev ? "gap" : "overlap", prev, i, lo);
    }
    return DDTK_OK;
}

/* A data line: ncols (5 or 6) tab- or space-separated numbers. */
static int parse_row(char *line, int ncols, ddtk_dmplan_row *r)
{
    char *end, *s = line;
    double v[6] = { 0 };
    for (int i = 0; i < ncols; i++) {
        errno = 0;
        v[i] = strtod(s, &end);
        if (end == s || errno || (*end && !strchr(" \t\r\n", *end)))
            return -1;
        s = end;
    }
    for (int i = 3; i < ncols; i++)
        if (v[i] != floor(v[i]) || fabs(v[i]) > 1e9)
            return -1;
    if (s[strspn(s, " \t\r\n")] != '\0')
        return -1;
    *r = (ddtk_dmplan_row){ .dm_lo = v[0], .dm_hi = v[1], .dm_step = v[2],
                          .downsamp = (int)v[3], .ndm = (int)v[4], .dms_per_sub = (int)v[5] };
    return 0;
}

/* The header row: its column count (5, or 6 with dms_per_sub), or 0. */
static int header_line(const char *line)
{
    static const char *const names[] = { "dm_lo", "dm_hi", "dm_step", "downsamp", "ndm",
                                         plan_sub_column };
    char words[7][16];
    int n = sscanf(line, "%15s %15s %15s %15s %15s %15s %15s", words[0], words[1], words[2],
                   words[3], words[4], words[5], words[6]);
    if (n != 5 && n != 6)
        return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(words[i], names[i]))
            return 0;
    return n;
}

/* One line of a plan file: blank, a comment, the header row (first), or a row. */
static int read_line(ddtk_dmplan *p, char *line, const char *path, long lineno, int *ncols)
{
    const char *s = line + strspn(line, " \t");
    ddtk_dmplan_row r;
    if (*s == '#' || *s == '\n' || *s == '\r' || *s == '\0')
        return DDTK_OK;
    if (!*ncols) {
        if (!(*ncols = header_line(s)))
            return ddtk_fail(DDTK_EDATA, "%s: line %ld: expected the header row '%s' "
                             "(and optionally %s)", path, lineno,
                             "dm_lo dm_hi dm_step downsamp ndm", plan_sub_column);
        return DDTK_OK;
    }
    if (parse_row(line, *ncols, &r))
        return ddtk_fail(DDTK_EDATA, "%s: line %ld: expected %s numbers "
                         "(dm_lo dm_hi dm_step downsamp ndm%s)", path, lineno,
                         *ncols == 5 ? "five" : "six", *ncols == 5 ? "" : " dms_per_sub");
    return ddtk_dmplan_push(p, &r);
}

static int read_lines(ddtk_dmplan *p, FILE *fp, const char *path)
{
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, len;
    int64_t total = 0;
    int ncols = 0, rc = DDTK_OK;
    while (!rc && (len = ddtk_text_line(fp, path, ++lineno, &line, &cap, &total)) != 0)
        rc = len < 0 ? (int)-len : read_line(p, line, path, lineno, &ncols);
    free(line);
    return rc;
}

int ddtk_dmplan_read(ddtk_dmplan *p, const char *path)
{
    FILE *fp;
    int rc = ddtk_text_open(path, &fp);
    if (rc)
        return rc;
    rc = read_lines(p, fp, path);
    fclose(fp);
    return rc ? rc : ddtk_dmplan_validate(p, path);
}

int ddtk_dmplan_write(const ddtk_dmplan *p, const char *path, int force)
{
    struct stat st;
    char *tmp;
    if (!force && stat(path, &st) == 0)
        return ddtk_fail(DDTK_EUSAGE, "%s: exists (overwriting it needs force)", path);
    FILE *fp = ddtk_temp_create(path, &tmp);
    if (!fp)
        return DDTK_ESYS;
    int sub = 0;
    for (int i = 0; i < p->n; i++)
        sub |= p->row[i].dms_per_sub > 0;
    fprintf(fp, "%s%s%s\n", plan_columns, sub ? "\t" : "", sub ? plan_sub_column : "");
    for (int i = 0; i < p->n; i++) {
        const ddtk_dmplan_row *r = &p->row[i];
        fprintf(fp, "%.10g\t%.10g\t%.10g\t%d\t%d", r->dm_lo, r->dm_hi, r->dm_step,
                r->downsamp, r->ndm);
        if (sub)
            fprintf(fp, "\t%d", r->dms_per_sub);
        fputc('\n', fp);
    }
    return ddtk_temp_commit(fp, &tmp, path);
}
