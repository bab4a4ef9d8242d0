/*
 * test_tree.c - tree dedispersion: the basic tree kernel against brute-force
 * sums along the tree's own delay paths (test/helpers/treeref.h), those paths
 * against the rounded linear sweeps, and whole plans (piecewise and padded,
 * past the diagonal, with scrunch levels, killed channels and padding to a
 * power of two) against the same sums along each DM's route, for any gulp.
 */
#include "engine.h"
#include "tree.h"
#include "check.h"
#include "../helpers/treeref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned next(unsigned *x)
{
    *x = *x * 1103515245u + 12345u;
    return (*x >> 16) & 255u;
}

/* The kernel equals the path sums exactly on integer input, every sweep. */
static void test_kernel(int n)
{
    const int64_t len = n + 37;
    float *a = malloc((size_t)n * len * sizeof *a), *b = malloc((size_t)n * len * sizeof *b);
    float *x = malloc((size_t)n * len * sizeof *x), *out = malloc((size_t)n * len * sizeof *out);
    unsigned seed = 7u + (unsigned)n;
    for (int64_t i = 0; i < n * len; i++)
        x[i] = a[i] = (float)next(&seed);
    ddtk_tree_cpu(a, b, (size_t)len, n, len, out, (size_t)len);
    int bad = 0;
    for (int d = 0; d < n; d++)
        for (long t = 0; t <= len - n; t++)
            bad += out[(size_t)d * len + t] != treeref_sum(x, (size_t)len, n, 0, d, t);
    CHECK(bad == 0);
    free(a);
    free(b);
    free(x);
    free(out);
}

/* Paths: 0 at the first channel, d' at the last, within `tol` samples of
 * round(d' nu / (n - 1)) everywhere: one sample up to 512 channels, two from
 * 1024 (the halvings' truncations add up: 1024 channels, sweep 1023 is off
 * by two at some channels, for eqs. 14-15 as printed too). */
static void test_paths(int n, int tol)
{
    int worst = 0, ends = 0;
    for (int d = 0; d < n; d++) {
        ends += treeref_path(n, d, 0) != 0 || treeref_path(n, d, n - 1) != d;
        for (int nu = 0; nu < n; nu++) {
            int e = abs(treeref_path(n, d, nu) - (int)lround((double)d * nu / (n - 1)));
            worst = e > worst ? e : worst;
        }
    }
    CHECK(ends == 0);
    CHECK(worst <= tol);
    if (n >= 1024)
        CHECK(worst == 2);
}

#define NCH 48
#define NSAMP 5000
#define TSAMP 0.000512
#define FCH1 1450.0
#define FOFF -2.0

/* Brute force along a DM's routes: level-k rows are the input halved k times. */
static double route_sum(const ddtk_tree_geom *g, const float *rows, size_t stride, double dm,
                        double tsamp, long t)
{
    double s = 0;
    int span = g->cps > 1 ? g->cps - 1 : 1;
    for (int n = 0; n < g->nsb; n++) {
        int e, off;
        if (!ddtk_tree_route(g, n, dm, tsamp, DDTK_ROUND_NEAREST, &e, &off))
            continue;
        int j = e / span, d = g->cps > 1 ? e - j * span : 0;
        for (int q = 0; q < g->cps; q++)
            for (int i = g->first[n * g->cps + q]; i < g->first[n * g->cps + q + 1]; i++) {
                const float *row = rows + (size_t)g->rows[i] * stride;
                s += row[t + off + (long)j * q + treeref_path(g->cps, d, q)];
            }
    }
    return s;
}

static float *execute(ddtk_plan_desc *dsc, const uint8_t *raw, int64_t gulp)
{
    ddtk_plan *p;
    dsc->gulp = gulp;
    float *out = calloc((size_t)dsc->ndm * NSAMP, sizeof *out);
    CHECK(ddtk_plan_create(&p, dsc) == DDTK_OK);
    if (p) {
        CHECK(ddtk_plan_execute(p, NSAMP, raw, 8, out, NSAMP, 32) == DDTK_OK);
        ddtk_plan_destroy(p);
    }
    return out;
}

static void test_plan(int method, int cps)
{
    double freqs[NCH];
    uint8_t kill[NCH] = { 0 }, *raw = malloc((size_t)NSAMP * NCH);
    ddtk_channels ch;
    ddtk_tree_geom g;
    unsigned seed = 99;
    kill[5] = 1;
    for (int c = 0; c < NCH; c++)
        freqs[c] = FCH1 + c * FOFF;
    for (size_t i = 0; i < (size_t)NSAMP * NCH; i++)
        raw[i] = (uint8_t)next(&seed);
    CHECK(ddtk_channels_from_freqs(&ch, NCH, freqs, 0, kill, 0) == DDTK_OK);
    ddtk_tree_setup s = { .method = method, .cps = cps, .scrunch = 1, .dm_min = 0,
                          .dm_max = 400, .width = 40e-6, .kdm = DDTK_KDM_DEFAULT,
                          .max_smear = 1.1 };
    double *dms;
    int *ds, ndm;
    CHECK(ddtk_tree_dms(&s, &ch, TSAMP, &dms, &ds, &ndm) == DDTK_OK);
    CHECK(ndm > 100 && ds[ndm - 1] >= (cps == 1 ? 1 : 4));
    CHECK(ddtk_tree_geom_init(&g, &ch, DDTK_KDM_DEFAULT, method, s.cps) == DDTK_OK);

    ddtk_plan_desc dsc;
    ddtk_plan_desc_init(&dsc);
    dsc.nchans = NCH;
    dsc.tsamp = TSAMP;
    dsc.freqs = freqs;
    dsc.kill = kill;
    dsc.nbits = 8;
    dsc.dms = dms;
    dsc.downsamp = ds;
    dsc.ndm = ndm;
    CHECK(ddtk_plan_desc_set_algorithm(&dsc, "tree") == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&dsc, "method", method) == DDTK_OK);
    CHECK(ddtk_plan_desc_set_param(&dsc, "sub_chans", s.cps) == DDTK_OK);
    dsc.backend = DDTK_BACKEND_CPU;
    dsc.quiet = 1;
    float *out = execute(&dsc, raw, 0), *small = execute(&dsc, raw, 200);
    CHECK(memcmp(out, small, (size_t)ndm * NSAMP * sizeof *out) == 0);

    /* Live rows in descending frequency, halved per level like the engine. */
    size_t stride = NSAMP;
    float *rows = calloc((size_t)ch.nlive * stride, sizeof *rows);
    for (int c = 0; c < NCH; c++)
        if (ch.row[c] >= 0)
            for (size_t t = 0; t < NSAMP; t++)
                rows[(size_t)ch.row[c] * stride + t] = raw[t * NCH + (size_t)c];
    ddtk_plan *p;
    CHECK(ddtk_plan_create(&p, &dsc) == DDTK_OK);
    int bad = 0, f = 1;
    for (int i = 0; i < ndm; i++) {
        for (; f < ds[i]; f *= 2)
            for (int r = 0; r < ch.nlive; r++)
                for (size_t t = 0; t < NSAMP / (size_t)(2 * f); t++)
                    rows[r * stride + t] = rows[r * stride + 2 * t] + rows[r * stride + 2 * t + 1];
        int64_t n = ddtk_plan_nout(p, i, NSAMP);
        CHECK(n > 100);
        for (long t = 0; t < n; t++)
            bad += out[(size_t)i * NSAMP + t] != route_sum(&g, rows, stride, dms[i], TSAMP * f, t);
    }
    CHECK(bad == 0);
    ddtk_plan_destroy(p);
    ddtk_tree_geom_free(&g);
    ddtk_channels_free(&ch);
    free(rows);
    free(out);
    free(small);
    free(dms);
    free(ds);
    free(raw);
}

int main(void)
{
    for (int n = 1; n <= 64; n *= 2)
        test_kernel(n);
    for (int n = 2; n <= 4096; n *= 2)
        test_paths(n, n <= 512 ? 1 : 2);
    test_plan(DDTK_TREE_PIECEWISE, 8);
    test_plan(DDTK_TREE_PIECEWISE, 64);
    test_plan(DDTK_TREE_PIECEWISE, 1);
    test_plan(DDTK_TREE_PADDED, 0);
    return check_result();
}
