/*
 * spplot - PNG plots of single-pulse candidates (a Heimdall .cand from
 * spsearch or --search) from the filterbank (SIGPROC or PSRFITS) they came from: per
 * candidate the dedispersed waterfall, the DM-time bow-tie, the profile,
 * S/N against DM and the header's facts; per input an overview (DM against
 * time, marker size by S/N). The numbers come from the library
 * (src/search/spplot.c); this file draws them with cairo, Debian's libcairo2: a C
 * library with PNG output built in and no GUI toolkit, so the tool stays a
 * C program of the suite with one dependency.
 */
#include "spplot.h"
#include "internal.h"
#include "cli.h"
#include "tempfile.h"

#include <cairo.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The layout (man page, test/spplot.bats): a candidate's PNG is CAND_W x
 * CAND_H pixels; the plot frames are FRAME_W wide, TOP_H (waterfall at
 * LEFT_X, bow-tie at RIGHT_X, from TOP_Y down) and BOTTOM_H high (profile
 * and S/N against DM, from BOTTOM_Y down); an overview is OVER_W x OVER_H. */
#define CAND_W 1200
#define CAND_H 900
#define FRAME_W 500
#define TOP_H 330
#define BOTTOM_H 300
#define LEFT_X 80
#define RIGHT_X 660
#define TOP_Y 130
#define BOTTOM_Y 550
#define OVER_W 1000
#define OVER_H 600

enum { OPT_OUTDIR = 1000, OPT_TOP, OPT_FORCE, OPT_VERSION };

static const struct option options[] = {
    { "outdir", required_argument, 0, OPT_OUTDIR },
    { "top", required_argument, 0, OPT_TOP },
    { "force", no_argument, 0, OPT_FORCE },
    DDTK_STANDARD_OPTIONS(OPT_VERSION),
    { 0, 0, 0, 0 },
};

static void help(void)
{
    printf(
"Usage: spplot CANDFILE INPUT [--outdir DIR] [--top N] [options]\n"
"PNG plots of single-pulse candidates (a Heimdall .cand file from spsearch or\n"
"dd_* --search) from the filterbank (SIGPROC or PSRFITS) INPUT they came from: one per\n"
"candidate, brightest first (dedispersed waterfall, DM-time bow-tie, pulse\n"
"profile, S/N against DM, header facts), and one overview (DM against time,\n"
"marker size by S/N). Named <input>_<rank>_DM<dm>_t<time>.png and\n"
"<input>_overview.png.\n\n"
"  --outdir DIR    folder for the PNGs (default: the current folder)\n"
"  --top N         plot the N brightest candidates only (default: all)\n"
"  --force         overwrite existing PNGs\n"
"  -q, --quiet     no summary                -v, --verbose  a line per plot\n"
"  -h, --help      this help                 --version      print the version\n");
}

typedef struct args {
    const char *outdir;
    int64_t top;
    int force, quiet, verbose;
} args;

static int option(int code, const char *arg, void *ctx)
{
    args *a = ctx;
    switch (code) {
    case OPT_OUTDIR: a->outdir = arg; return DDTK_OK;
    case OPT_TOP: return ddtk_opt_int64("--top", arg, 1, INT64_MAX, &a->top);
    case OPT_FORCE: a->force = 1; return DDTK_OK;
    case 'q': a->quiet = 1; return DDTK_OK;
    case 'v': a->verbose = 1; return DDTK_OK;
    }
    return ddtk_fail(DDTK_EUSAGE, "unknown option (see --help)");
}

/* ---- drawing ---------------------------------------------------------------------- */

/* Black, red, yellow, white: brightness grows with the value (0..1). */
static void colour(cairo_t *cr, double v)
{
    v = v < 0 ? 0 : v > 1 ? 1 : v;
    double r = 3 * v, g = 3 * v - 1, b = 3 * v - 2;
    cairo_set_source_rgb(cr, r > 1 ? 1 : r, g < 0 ? 0 : g > 1 ? 1 : g, b < 0 ? 0 : b);
}

static void text(cairo_t *cr, double x, double y, double size, const char *s)
{
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_select_font_face(cr, "monospace", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
    cairo_move_to(cr, x, y);
    cairo_show_text(cr, s);
}

/* A frame with its title, axis names and the ranges at its corners. */
static void frame(cairo_t *cr, double x, double y, double w, double h, const char *title,
                  const char *xname, double x0, double x1, const char *yname, double y0,
                  double y1)
{
    char s[96];
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, x - 0.5, y - 0.5, w + 1, h + 1);
    cairo_stroke(cr);
    text(cr, x, y - 8, 14, title);
    snprintf(s, sizeof s, "%s %.4g .. %.4g", xname, x0, x1);
    text(cr, x, y + h + 18, 11, s);
    snprintf(s, sizeof s, "%s %.4g .. %.4g", yname, y0, y1);
    cairo_save(cr);
    cairo_move_to(cr, x - 10, y + h);
    cairo_rotate(cr, -M_PI / 2);
    cairo_select_font_face(cr, "monospace", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 11);
    cairo_show_text(cr, s);
    cairo_restore(cr);
}

static int by_value(const void *a, const void *b)
{
    float p = *(const float *)a, q = *(const float *)b;
    return (p > q) - (p < q);
}

/* An image of rows x cols values (row 0 at the bottom; NAN left white),
 * scaled from the median of the finite values to their maximum. */
static void image(cairo_t *cr, double x, double y, double w, double h, const float *v,
                  int rows, int cols)
{
    size_t n = (size_t)rows * cols, m = 0;
    float *t = malloc(n * sizeof *t), hi = -INFINITY;
    for (size_t i = 0; t && i < n; i++)
        if (isfinite(v[i])) {
            t[m++] = v[i];
            hi = v[i] > hi ? v[i] : hi;
        }
    double lo = 0;
    if (m) {
        qsort(t, m, sizeof *t, by_value);
        lo = t[m / 2];
    }
    free(t);
    double cw = w / cols, ch = h / rows;
    cairo_save(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);   /* no seams between cells */
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float val = v[(size_t)r * cols + c];
            if (!isfinite(val))
                continue;
            colour(cr, hi > lo ? (val - lo) / (hi - lo) : 0);
            double x0 = floor(x + c * cw), x1 = floor(x + (c + 1) * cw);
            double y0 = floor(y + h - (r + 1) * ch), y1 = floor(y + h - r * ch);
            cairo_rectangle(cr, x0, y0, x1 - x0, y1 - y0);
            cairo_fill(cr);
        }
    cairo_restore(cr);
}

/* A line through the n points (xs[i], v[i]), NANs skipped; *lo, *hi: the
 * range of v drawn from the bottom to the top of the frame. */
static void curve(cairo_t *cr, double x, double y, double w, double h, const float *v,
                  const double *xs, int n, double xlo, double xhi, double *vlo, double *vhi)
{
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
    if (!(hi > lo))
        hi = lo + 1;
    *vlo = lo;
    *vhi = hi;
    cairo_set_source_rgb(cr, 0.1, 0.2, 0.7);
    cairo_set_line_width(cr, 1.5);
    int pen = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            pen = 0;
            continue;
        }
        double px = x + (xs[i] - xlo) / (xhi - xlo) * w, py = y + h - (v[i] - lo) / (hi - lo) * h;
        if (pen)
            cairo_line_to(cr, px, py);
        else
            cairo_move_to(cr, px, py);
        pen = 1;
    }
    cairo_stroke(cr);
}

static cairo_status_t to_file(void *fp, const unsigned char *data, unsigned int len)
{
    return fwrite(data, 1, len, fp) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

/* The PNG whole under its name, or nothing. */
static int save(cairo_surface_t *s, const char *path, int force)
{
    if (!force && access(path, F_OK) == 0)
        return ddtk_fail(DDTK_EUSAGE, "%s: exists (use --force to overwrite)", path);
    char *tmp = NULL;
    FILE *fp = ddtk_temp_create(path, &tmp);
    if (!fp)
        return DDTK_ESYS;
    if (cairo_surface_write_to_png_stream(s, to_file, fp) != CAIRO_STATUS_SUCCESS) {
        ddtk_temp_discard(fp, &tmp);
        return ddtk_fail(DDTK_ESYS, "%s: writing the PNG failed", path);
    }
    return ddtk_temp_commit(fp, &tmp, path);
}

/* ---- a candidate ------------------------------------------------------------------- */

static void header_facts(cairo_t *cr, const ddtk_input *in, const ddtk_sps_cand *c,
                         const ddtk_spplot *p)
{
    const ddtk_header *h = &in->hdr;
    char s[256];
    /* Names are cut to what fits a line. */
    snprintf(s, sizeof s, "%.120s   source %.60s   MJD %.8f", in->name,
             h->source_name[0] ? h->source_name : "?", h->tstart);
    text(cr, 20, 28, 15, s);
    snprintf(s, sizeof s, "S/N %.2f   DM %.3f pc/cc   t %.6f s (sample %lld)   width %.3f ms "
             "(%lld samples)   members %d", c->snr, c->dm, c->time, (long long)c->sample,
             c->width * h->tsamp * 1e3, (long long)c->width, c->members);
    text(cr, 20, 54, 13, s);
    snprintf(s, sizeof s, "%d channels %.3f-%.3f MHz   tsamp %.3f us   %d bits   "
             "plotted: %d bins of %d samples, DMs %.2f-%.2f", h->nchans, p->flo, p->fhi,
             h->tsamp * 1e6, h->nbits, p->nbins, p->bin, p->row_dm[0] > 0 ? p->row_dm[0] : 0.0,
             p->row_dm[p->ndm - 1]);
    text(cr, 20, 78, 13, s);
}

static int plot_candidate(const args *a, ddtk_input *in, const ddtk_sps_cand *c,
                          const char *path)
{
    ddtk_spplot p;
    int rc = ddtk_spplot_make(in, c, &p);
    if (rc)
        return rc;
    if (a->verbose)
        ddtk_msg("%s: bow-tie DM %.4f .. %.4f in %d rows, time %.6f .. %.6f s in %d bins", path,
                 p.row_dm[0], p.row_dm[p.ndm - 1], p.ndm, p.first * p.tsamp,
                 (p.first + (int64_t)p.nbins * p.bin) * p.tsamp, p.nbins);
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, CAND_W, CAND_H);
    cairo_t *cr = cairo_create(s);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    header_facts(cr, in, c, &p);
    double t0 = p.first * p.tsamp, t1 = (p.first + (int64_t)p.nbins * p.bin) * p.tsamp;
    image(cr, LEFT_X, TOP_Y, FRAME_W, TOP_H, p.waterfall, p.nsub, p.nbins);
    /* The waterfall's rows are drawn bottom up: sub-band 0 (highest) on top. */
    frame(cr, LEFT_X, TOP_Y, FRAME_W, TOP_H, "dedispersed waterfall", "time (s)", t0, t1,
          "MHz", p.fhi, p.flo);
    image(cr, RIGHT_X, TOP_Y, FRAME_W, TOP_H, p.bowtie, p.ndm, p.nbins);
    frame(cr, RIGHT_X, TOP_Y, FRAME_W, TOP_H, "DM-time bow-tie", "time (s)", t0, t1,
          "DM", p.row_dm[0], p.row_dm[p.ndm - 1]);
    double *tx = malloc((size_t)p.nbins * sizeof *tx), lo = 0, hi = 0;
    for (int j = 0; tx && j < p.nbins; j++)
        tx[j] = t0 + (j + 0.5) * p.bin * p.tsamp;
    if (tx)
        curve(cr, LEFT_X, BOTTOM_Y, FRAME_W, BOTTOM_H, p.profile, tx, p.nbins, t0, t1, &lo, &hi);
    frame(cr, LEFT_X, BOTTOM_Y, FRAME_W, BOTTOM_H, "profile at the candidate's DM",
          "time (s)", t0, t1, "S/N per bin", lo, hi);
    curve(cr, RIGHT_X, BOTTOM_Y, FRAME_W, BOTTOM_H, p.snr, p.row_dm, p.ndm, p.row_dm[0],
          p.row_dm[p.ndm - 1], &lo, &hi);
    frame(cr, RIGHT_X, BOTTOM_Y, FRAME_W, BOTTOM_H, "S/N against DM (the candidate's boxcar)",
          "DM", p.row_dm[0], p.row_dm[p.ndm - 1], "S/N", lo, hi);
    free(tx);
    cairo_destroy(cr);
    cairo_surface_flush(s);
    rc = cairo_surface_status(s) ? ddtk_fail(DDTK_ESYS, "%s: drawing failed", path)
                                 : save(s, path, a->force);
    cairo_surface_destroy(s);
    ddtk_spplot_free(&p);
    return rc;
}

/* ---- the overview ----------------------------------------------------------------- */

static int plot_overview(const args *a, const ddtk_input *in, const ddtk_sps_cand *c,
                         int64_t n, const char *path)
{
    const double x = 80, y = 50, w = OVER_W - 120, h = OVER_H - 110;
    double tmax = in->nsamples > 0 ? in->nsamples * in->hdr.tsamp : 1, dmax = 1, smin = 1e30;
    for (int64_t i = 0; i < n; i++) {
        dmax = c[i].dm > dmax ? c[i].dm : dmax;
        tmax = c[i].time > tmax ? c[i].time : tmax;
        smin = c[i].snr < smin ? c[i].snr : smin;
    }
    dmax *= 1.05;
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, OVER_W, OVER_H);
    cairo_t *cr = cairo_create(s);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    char title[256];
    snprintf(title, sizeof title, "%s: %lld candidates (marker area by S/N)", in->name,
             (long long)n);
    frame(cr, x, y, w, h, title, "time (s)", 0, tmax, "DM", 0, dmax);
    cairo_set_line_width(cr, 1);
    for (int64_t i = 0; i < n; i++) {
        double r = 2 + 2.5 * sqrt(c[i].snr - smin + 1);
        cairo_new_path(cr);
        cairo_arc(cr, x + c[i].time / tmax * w, y + h - c[i].dm / dmax * h, r, 0, 2 * M_PI);
        cairo_set_source_rgba(cr, 0.8, 0.1, 0.1, 0.5);
        cairo_fill_preserve(cr);
        cairo_set_source_rgb(cr, 0.3, 0, 0);
        cairo_stroke(cr);
    }
    cairo_destroy(cr);
    cairo_surface_flush(s);
    int rc = cairo_surface_status(s) ? ddtk_fail(DDTK_ESYS, "%s: drawing failed", path)
                                     : save(s, path, a->force);
    cairo_surface_destroy(s);
    return rc;
}

/* ---- the run ----------------------------------------------------------------------- */

static int by_snr(const void *p, const void *q)
{
    const ddtk_sps_cand *x = p, *y = q;
    if (x->snr != y->snr)
        return x->snr < y->snr ? 1 : -1;
    return (x->sample > y->sample) - (x->sample < y->sample);
}

/* The input's name without folder or suffix. */
static char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *b = strdup(slash ? slash + 1 : path), *dot = b ? strrchr(b, '.') : NULL;
    if (dot && dot != b)
        *dot = '\0';
    return b;
}

static int read_cands(const char *path, ddtk_sps_cand **c, int64_t *n)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return ddtk_fail(DDTK_ESYS, "%s: cannot open: %s", path, strerror(errno));
    int rc = ddtk_sps_read_heimdall(fp, path, c, n);
    fclose(fp);
    return rc;
}

static int run(const args *a, const char *cands, const char *input)
{
    ddtk_sps_cand *c = NULL;
    int64_t n = 0;
    ddtk_input in;
    char path[4096];
    const char *dir = a->outdir ? a->outdir : ".";
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return ddtk_fail(DDTK_EUSAGE, "--outdir %s: not a folder", dir);
    int rc = read_cands(cands, &c, &n);
    if (rc)
        return rc;
    rc = ddtk_input_open(&in, input);
    if (!rc && in.is_stdin)
        rc = ddtk_fail(DDTK_EUSAGE, "spplot reads its INPUT from a file (it seeks in it)");
    if (!rc && in.hdr.nchans < 2)
        rc = ddtk_fail(DDTK_EDATA, "%s: %d channel: a filterbank is needed, not a time series",
                       in.name, in.hdr.nchans);
    char *base = rc ? NULL : base_of(input);
    if (!rc && !base)
        rc = ddtk_fail(DDTK_ESYS, "out of memory");
    qsort(c, (size_t)n, sizeof *c, by_snr);
    int64_t plots = a->top > 0 && a->top < n ? a->top : n;
    for (int64_t i = 0; !rc && i < plots; i++) {
        snprintf(path, sizeof path, "%s/%s_%lld_DM%.2f_t%.4f.png", dir, base, (long long)i + 1,
                 c[i].dm, c[i].time);
        rc = plot_candidate(a, &in, &c[i], path);
    }
    if (!rc) {
        snprintf(path, sizeof path, "%s/%s_overview.png", dir, base);
        rc = plot_overview(a, &in, c, n, path);
    }
    if (!rc && !a->quiet)
        ddtk_msg("%lld candidate plots and %s", (long long)plots, path);
    free(base);
    free(c);
    ddtk_input_close(&in);
    return rc;
}

int main(int argc, char **argv)
{
    args a = { 0 };
    ddtk_set_progname(argv[0]);
    int rc = ddtk_getopt(argc, argv, ":qvh", options, OPT_VERSION, help, option, &a);
    if (!rc && argc - optind != 2)
        rc = ddtk_fail(DDTK_EUSAGE, "give CANDFILE and INPUT (see --help)");
    if (!rc)
        rc = run(&a, argv[optind], argv[optind + 1]);
    /* cairo's font caches (fontconfig patterns) are kept for the process:
     * released, so that leak checkers see only the tool's own memory. */
    cairo_debug_reset_static_data();
    return ddtk_exit_status(rc);
}
