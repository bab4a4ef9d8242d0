/*
 * test_fdmt.c - the FDMT: whole plans (every input nbits, both band orders,
 * several gulps, a killed channel, scrunch levels past the diagonal, a
 * reference frequency above the band, a single live channel) equal, bit for
 * bit, the reference of test/helpers/fdmtref.h on the same halved rows; the
 * DM list; and the paths against the direct algorithm's rounded delays.
 */
#include "engine.h"
#include "fdmt.h"
#include "check.h"
#include "../helpers/fdmtref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NCH 37
#define NSAMP 3000
#define TSAMP 0.000512
#define FCH1 1450.0
#define FOFF -2.0
#define KILLED 11

/* Random samples of an nbits file, [t][c] in the descending band's order. */
static float *samples(int nbits, unsigned seed)
{
    float *v = malloc((size_t)NSAMP * NCH * sizeof *v);
    for (size_t i = 0; i < (size_t)NSAMP * NCH; i++) {
        unsigned r = check_rand(&seed);
        v[i] = nbits == 32 ? (float)((int)(r % 20001) - 10000) / 64.0f
                           : (float)(r & ((1u << (nbits < 16 ? nbits : 16)) - 1));
    }
    return v;
}

/* Pack v (channel c at index c, or NCH-1-c when flipped) as SIGPROC data:
 * sub-byte samples low bits first. */
static uint8_t *pack(const float *v, int nbits, int flip)
{
    size_t bytes = ((size_t)NSAMP * NCH * nbits + 7) / 8;
    uint8_t *raw = calloc(bytes, 1);
    for (size_t t = 0; t < NSAMP; t++)
        for (int c = 0; c < NCH; c++) {
            float x = v[t * NCH + (size_t)(flip ? NCH - 1 - c : c)];
            size_t i = t * NCH + (size_t)c;
            if (nbits < 8)
                raw[i * nbits / 8] |= (uint8_t)((unsigned)x << (i * nbits % 8));
            else if (nbits == 8)
                raw[i] = (uint8_t)x;
            else if (nbits == 16) {
                uint16_t s = (uint16_t)x;
                memcpy(raw + 2 * i, &s, 2);
            } else
                memcpy(raw + 4 * i, &x, 4);
        }
    return raw;
}

/* The plan's series; each DM's length is checked against nout when given. */
static float *execute(ddtk_plan_desc *d, const uint8_t *raw, int64_t gulp, const int *nout)
{
    ddtk_plan *p;
    d->gulp = gulp;
    float *out = calloc((size_t)d->ndm * NSAMP, sizeof *out);
    CHECK(ddtk_plan_create(&p, d) == DDTK_OK);
    if (p) {
        CHECK(ddtk_plan_execute(p, NSAMP, raw, d->nbits, out, NSAMP, 32) == DDTK_OK);
        for (int i = 0; nout && i < d->ndm; i++)
            CHECK(ddtk_plan_nout(p, i, NSAMP) == nout[i]);
        ddtk_plan_destroy(p);
    }
    return out;
}

/* The reference for every DM from the live rows (descending), halved per level. */
static float *reference(const ddtk_plan_desc *d, const float *v, int *nout)
{
    int nlive = 0;
    double freq[NCH], u[NCH], fref = d->fref > 0 ? d->fref : FCH1;
    float *rows = malloc((size_t)NCH * NSAMP * sizeof *rows);
    for (int c = 0; c < NCH; c++) {
        if (d->kill && d->kill[c])
            continue;
        freq[nlive] = FCH1 + c * FOFF;
        for (size_t t = 0; t < NSAMP; t++)
            rows[(size_t)nlive * NSAMP + t] = v[t * NCH + (size_t)c];
        nlive++;
    }
    for (int r = 0; r < nlive; r++)
        u[r] = pow(freq[r], -2) - pow(freq[0], -2);
    float *ref = calloc((size_t)d->ndm * NSAMP, sizeof *ref);
    long len = NSAMP;
    for (int i = 0, f = 1; i < d->ndm; i++) {
        for (; f < d->downsamp[i]; f *= 2, len /= 2)
            for (int r = 0; r < nlive; r++)
                for (long t = 0; t < len / 2; t++)
                    rows[(size_t)r * NSAMP + t] = rows[(size_t)r * NSAMP + 2 * t]
                                                  + rows[(size_t)r * NSAMP + 2 * t + 1];
        double ts = TSAMP * f;
        int D = (int)lround(d->dms[i] * d->kdm * u[nlive - 1] / ts);
        int off = (int)lround(d->dms[i] * d->kdm * (pow(freq[0], -2) - pow(fref, -2)) / ts);
        nout[i] = (int)len - off - D;
        fdmtref_row(rows + off, NSAMP, u, 0, nlive, D, nout[i], ref + (size_t)i * NSAMP);
    }
    /* A level's series all end where its longest track runs out. */
    for (int i = 0; i < d->ndm; i++)
        for (int j = 0; j < d->ndm; j++)
            if (d->downsamp[j] == d->downsamp[i] && nout[j] < nout[i])
                nout[i] = nout[j];
    free(rows);
    return ref;
}

static int differs(const float *a, const float *b, const int *nout, int ndm)
{
    int bad = 0;
    for (int i = 0; i < ndm; i++)
        bad += memcmp(a + (size_t)i * NSAMP, b + (size_t)i * NSAMP,
                      (size_t)nout[i] * sizeof *a) != 0;
    return bad;
}

/* Plans of every nbits, band order and gulp equal the reference. */
static void test_plans(double fref)
{
    double freqs[2][NCH], *dms;
    uint8_t kill[NCH] = { 0 };
    int *ds, ndm;
    ddtk_channels ch;
    kill[KILLED] = 1;
    for (int c = 0; c < NCH; c++) {
        freqs[0][c] = FCH1 + c * FOFF;
        freqs[1][c] = FCH1 + (NCH - 1 - c) * FOFF;
    }
    CHECK(ddtk_channels_from_freqs(&ch, NCH, freqs[0], 0, NULL, 0) == DDTK_OK);
    ddtk_fdmt_setup s = { .scrunch = 1, .dm_min = 0, .dm_max = 400, .kdm = DDTK_KDM_DEFAULT };
    CHECK(ddtk_fdmt_dms(&s, &ch, TSAMP, &dms, &ds, &ndm) == DDTK_OK);
    CHECK(ndm > 60 && ds[ndm - 1] == 4);
    ddtk_channels_free(&ch);
    int *nout = malloc((size_t)ndm * sizeof *nout);
    for (int nbits = 1; nbits <= 32; nbits *= 2) {
        float *v = samples(nbits, 17u + (unsigned)nbits);
        ddtk_plan_desc d;
        ddtk_plan_desc_init(&d);
        d.nchans = NCH;
        d.tsamp = TSAMP;
        d.nbits = nbits;
        d.kill = kill;
        d.dms = dms;
        d.downsamp = ds;
        d.ndm = ndm;
        d.fref = fref;
        CHECK(ddtk_plan_desc_set_algorithm(&d, "fdmt") == DDTK_OK);
        d.backend = DDTK_BACKEND_CPU;
        d.quiet = 1;
        float *ref = reference(&d, v, nout);
        int bad = 0;
        CHECK(nout[0] > 2000 && nout[ndm - 1] > 500);
        for (int flip = 0; flip < 2; flip++) {
            uint8_t *raw = pack(v, nbits, flip);
            uint8_t fkill[NCH] = { 0 };
            fkill[flip ? NCH - 1 - KILLED : KILLED] = 1;
            d.freqs = freqs[flip];
            d.kill = fkill;
            const int64_t gulps[] = { 0, 8, 136, 1000 };
            for (int g = 0; g < 4; g++) {
                float *out = execute(&d, raw, gulps[g], nout);
                bad += differs(out, ref, nout, ndm);
                free(out);
            }
            free(raw);
        }
        if (bad)
            fprintf(stderr, "nbits %d fref %g: %d series differ\n", nbits, fref, bad);
        CHECK(bad == 0);
        free(ref);
        free(v);
    }
    free(nout);
    free(dms);
    free(ds);
}

/* One live channel: every DM is that channel from its delay. */
static void test_one_channel(void)
{
    double freqs[NCH], dms[] = { 0, 10, 50 };
    uint8_t kill[NCH];
    for (int c = 0; c < NCH; c++) {
        freqs[c] = FCH1 + c * FOFF;
        kill[c] = c != 20;
    }
    float *v = samples(8, 5);
    uint8_t *raw = pack(v, 8, 0);
    ddtk_plan_desc d;
    ddtk_plan_desc_init(&d);
    d.nchans = NCH;
    d.tsamp = TSAMP;
    d.freqs = freqs;
    d.nbits = 8;
    d.kill = kill;
    d.dms = dms;
    d.ndm = 3;
    CHECK(ddtk_plan_desc_set_algorithm(&d, "fdmt") == DDTK_OK);
    d.backend = DDTK_BACKEND_CPU;
    d.quiet = 1;
    float *out = execute(&d, raw, 0, NULL);
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        int off = (int)lround(dms[i] * d.kdm * (pow(freqs[20], -2) - pow(FCH1, -2)) / TSAMP);
        for (int t = 0; t < 1000; t++)
            bad += out[(size_t)i * NSAMP + t] != v[(size_t)(t + off) * NCH + 20];
    }
    CHECK(bad == 0);
    free(out);
    free(raw);
    free(v);
}

/* The DMs: m * step up to twice the diagonal, the step doubling with each scrunch level. */
static void test_dms(void)
{
    double freqs[NCH], *dms;
    int *ds, ndm;
    ddtk_channels ch;
    for (int c = 0; c < NCH; c++)
        freqs[c] = FCH1 + c * FOFF;
    CHECK(ddtk_channels_from_freqs(&ch, NCH, freqs, 0, NULL, 0) == DDTK_OK);
    double step = ddtk_fdmt_step(&ch, DDTK_KDM_DEFAULT, TSAMP);
    double diag = ddtk_fdmt_diagonal(&ch, DDTK_KDM_DEFAULT, TSAMP);
    double flo = FCH1 + (NCH - 1) * FOFF;
    CHECK_NEAR(step, TSAMP / (DDTK_KDM_DEFAULT * (pow(flo, -2) - pow(FCH1, -2))), 1e-12);
    CHECK_NEAR(diag, TSAMP / (DDTK_KDM_DEFAULT * (pow(flo, -2) - pow(flo - FOFF, -2))), 1e-9);
    ddtk_fdmt_setup s = { .scrunch = 1, .dm_min = 5, .dm_max = 700, .kdm = DDTK_KDM_DEFAULT };
    CHECK(ddtk_fdmt_dms(&s, &ch, TSAMP, &dms, &ds, &ndm) == DDTK_OK);
    int bad = 0;
    for (int i = 0; i < ndm; i++) {
        double m = dms[i] / (step * ds[i]);
        bad += fabs(m - round(m)) > 1e-9 || dms[i] < 5 || dms[i] > 700;
        bad += ds[i] == 1 ? dms[i] >= 2 * diag
                          : dms[i] < ds[i] * diag || dms[i] >= 2 * ds[i] * diag;
        if (i)
            bad += dms[i] <= dms[i - 1];
    }
    CHECK(bad == 0 && ds[ndm - 1] == 8);
    free(dms);
    free(ds);
    s.scrunch = 0;
    CHECK(ddtk_fdmt_dms(&s, &ch, TSAMP, &dms, &ds, &ndm) == DDTK_OK);
    CHECK(ds[ndm - 1] == 1 && ndm == (int)floor(700 / step) - (int)ceil(5 / step) + 1);
    free(dms);
    free(ds);
    s.dm_min = 10.01;
    s.dm_max = 10.02;
    CHECK(ddtk_fdmt_dms(&s, &ch, TSAMP, &dms, &ds, &ndm) == DDTK_EUSAGE);
    ddtk_channels_free(&ch);
}

/*
 * Paths of htru's band (1024 channels 1581.8 MHz down by 0.390625): each
 * ends at 0 and D, and stays within `tol` samples of the direct algorithm's
 * round(D u_r / u_last) at every channel, for D up to the diagonal.
 */
static void test_paths(int nch, int dmax, int tol)
{
    double *u = malloc((size_t)nch * sizeof *u);
    int *delay = malloc((size_t)nch * sizeof *delay), worst = 0, ends = 0;
    for (int r = 0; r < nch; r++)
        u[r] = pow(1581.8 - 0.390625 * r, -2) - pow(1581.8, -2);
    for (int D = 0; D <= dmax; D++) {
        fdmtref_path(u, 0, nch, D, 0, delay);
        ends += delay[0] != 0 || delay[nch - 1] != D;
        for (int r = 0; r < nch; r++) {
            int e = abs(delay[r] - (int)lround(D * u[r] / u[nch - 1]));
            worst = e > worst ? e : worst;
        }
    }
    fprintf(stderr, "FDMT paths, %d channels, D <= %d: within %d samples of direct\n", nch,
            dmax, worst);
    CHECK(ends == 0);
    CHECK(worst <= tol);
    free(u);
    free(delay);
}

int main(void)
{
    test_dms();
    test_plans(0);
    test_plans(1500);
    test_one_channel();
    test_paths(64, 64, 1);
    test_paths(1024, 700, 2);
    return check_result();
}
