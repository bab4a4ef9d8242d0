/*
 * fdas_out.c - fdas candidate tables: the headered TSV, PRESTO's
 * <base>_ACCEL_<zmax> text layout (fundamentals, harmonics, then the .inf),
 * which PRESTO's ACCEL_sift parses, and its binary .cand that prepfold
 * -accelcand reads. r and z are given for the input's own length (its .inf's
 * N), also when the search padded it.
 */
#include "fdas.h"
#include "internal.h"
#include "fdas_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fourier bins of the input's own length: r = f T, z = fdot T^2. */
static double input_T(const ddtk_fdas_series *s)
{
    return (double)(s->nvalid ? s->nvalid : s->n) * s->tsamp;
}

/* PRESTO's candidate_sigma floors at zero: so does every sigma written. */
static double sigma_of(double power, int numharm)
{
    return fmax(0.0, ddtk_fdas_sigma(power, numharm, 1));
}

int ddtk_fdas_write_tsv(FILE *fp, const ddtk_fdas_plan *plan, const ddtk_fdas_series *s)
{
    int n;
    const ddtk_fdas_cand *c = ddtk_fdas_candidates(plan, &n);
    double T = input_T(s);
    fprintf(fp, "rank\tsigma\tpower\tnumharm\tperiod_ms\tfreq_hz\tr\tz\tfdot_hz_s\t"
                "accel_m_s2\tdm\n");
    for (int i = 0; i < n; i++)
        fprintf(fp, "%d\t%.3f\t%.3f\t%d\t%.9f\t%.9f\t%.4f\t%.3f\t%.6e\t%.4f\t%.2f\n", i + 1,
                c[i].sigma, c[i].power, c[i].numharm, 1000.0 / c[i].freq, c[i].freq,
                c[i].freq * T, c[i].fdot * T * T, c[i].fdot, c[i].accel, s->dm);
    return ferror(fp) ? ddtk_fail(DDTK_ESYS, "write error") : DDTK_OK;
}

typedef struct harm {
    double r, z, power, phase;
} harm;

/*
 * Normalised amplitudes of every harmonic at (h r, h z), r and z given for
 * the input's length T; returns the coherent power as PRESTO computes it: the
 * harmonics' amplitudes summed with each phase referred to the fundamental's
 * (harmonic h shifted by phi_1 - h phi_1).
 */
static double harmonics(const ddtk_fdas_plan *plan, const ddtk_fdas_cand *c, double T, harm *h)
{
    double sum_re = 0, sum_im = 0;
    for (int k = 0; k < c->numharm; k++) {
        double re, im;
        ddtk_fdas_rz_amp(plan, (k + 1) * c->r, (k + 1) * c->z, &re, &im);
        h[k].r = (k + 1) * c->freq * T;
        h[k].z = (k + 1) * c->fdot * T * T;
        h[k].power = re * re + im * im;
        h[k].phase = atan2(im, re);
        double shift = h[0].phase - fmod((k + 1) * h[0].phase, 2 * M_PI), a = sqrt(h[k].power);
        sum_re += a * cos(h[k].phase + shift);
        sum_im += a * sin(h[k].phase + shift);
    }
    return sum_re * sum_re + sum_im * sum_im;
}

static void fundamentals(FILE *fp, const ddtk_fdas_plan *plan, const ddtk_fdas_cand *c, int n,
                         double T, harm *h)
{
    fprintf(fp, "             Summed  Coherent  Num        Period          Frequency"
                "         FFT 'r'        Freq Deriv       FFT 'z'         Accel\n"
                "Cand  Sigma   Power    Power   Harm         (ms)               (Hz)"
                "             (bin)            (Hz/s)          (bins)        (m/s^2)\n");
    for (int i = 0; i < 135; i++)
        fputc('-', fp);
    fputc('\n', fp);
    for (int i = 0; i < n; i++) {
        double cpow = harmonics(plan, &c[i], T, h);
        fprintf(fp, "%-5d %-7.2f %-8.2f %-8.2f %-4d %-18.12f %-18.10f %-14.4f %-16.6e "
                    "%-10.3f %-12.4f\n",
                i + 1, c[i].sigma, c[i].power, cpow, c[i].numharm, 1000.0 / c[i].freq,
                c[i].freq, h[0].r, c[i].fdot, h[0].z, c[i].accel);
    }
}

/* One row per harmonic; the first row of a candidate starts " N", the others
 * with blanks only, as ACCEL_sift expects. */
static void harmonic_rows(FILE *fp, const ddtk_fdas_plan *plan, const ddtk_fdas_cand *c, int n,
                          double T, harm *h)
{
    fprintf(fp, "\n\n                  Power /          Raw           FFT 'r'          Pred 'r'"
                "       FFT 'z'     Pred 'z'      Phase\n"
                "Cand        Harm  Sigma    Loc Pow    Power            (bin)            (bin)"
                "        (bins)      (bins)     (rad)\n");
    for (int i = 0; i < 120; i++)
        fputc('-', fp);
    fputc('\n', fp);
    for (int i = 0; i < n; i++) {
        harmonics(plan, &c[i], T, h);
        for (int k = 0; k < c[i].numharm; k++) {
            if (k == 0)
                fprintf(fp, " %-11d", i + 1);
            else
                fprintf(fp, "            ");
            fprintf(fp, "%-5d %-8.2f %-10.2f %-10.2f %-16.4f %-16.4f %-11.3f %-11.3f %-8.4f\n",
                    k + 1, sigma_of(h[k].power, 1), h[k].power, h[k].power, h[k].r,
                    h[k].r, h[k].z, h[k].z, h[k].phase);
        }
    }
    fprintf(fp, "\n\n");
}

/* The .inf of a .tim input, in the layout dd_direct writes. */
static void tim_inf(FILE *fp, const ddtk_fdas_series *s)
{
    const char *slash = strrchr(s->base, '/');
    ddtk_series_meta meta = {
        .in = &s->hdr, .tsamp = s->tsamp, .fref = s->hdr.fch1, .flow = s->hdr.fch1,
        .bandwidth = 0, .chan_bw = 0, .nchans = 1,
        .notes = "Searched by ddtk fdas from a SIGPROC time series",
    };
    int64_t n = s->nvalid ? s->nvalid : s->n;
    ddtk_inf_print(fp, slash ? slash + 1 : s->base, &meta, s->dm, n, n);
}

int ddtk_fdas_write_presto(FILE *fp, ddtk_fdas_plan *plan, const ddtk_fdas_series *s)
{
    int n;
    const ddtk_fdas_cand *c = ddtk_fdas_candidates(plan, &n);
    harm h[DDTK_FDAS_MAXHARM];
    int rc = ddtk_fdas_host_spectrum(plan);
    if (rc)
        return rc;
    fundamentals(fp, plan, c, n, input_T(s), h);
    harmonic_rows(fp, plan, c, n, input_T(s), h);
    if (s->inf_text)
        fputs(s->inf_text, fp);
    else
        tim_inf(fp, s);
    return ferror(fp) ? ddtk_fail(DDTK_ESYS, "write error") : DDTK_OK;
}

/* Little helpers for the fixed record layout (fdas.h). */
static void put_f64(unsigned char *rec, int off, double v)
{
    memcpy(rec + off, &v, sizeof v);
}

static void put_f32(unsigned char *rec, int off, double v)
{
    float f = (float)v;
    memcpy(rec + off, &f, sizeof f);
}

int ddtk_fdas_write_cand(FILE *fp, ddtk_fdas_plan *plan, const ddtk_fdas_series *s)
{
    int n;
    const ddtk_fdas_cand *c = ddtk_fdas_candidates(plan, &n);
    harm h[DDTK_FDAS_MAXHARM];
    int rc = ddtk_fdas_host_spectrum(plan);
    double T = input_T(s);
    for (int i = 0; i < n && !rc; i++) {
        unsigned char rec[DDTK_FDAS_CAND_BYTES] = { 0 };
        harmonics(plan, &c[i], T, h);
        put_f64(rec, 0, h[0].r);
        put_f64(rec, 16, h[0].z);
        put_f64(rec, 32, 0.0);
        put_f32(rec, 44, h[0].power);
        put_f32(rec, 52, c[i].sigma);
        put_f32(rec, 56, h[0].power);
        put_f32(rec, 60, h[0].phase);
        put_f32(rec, 84, 1.0);
        if (fwrite(rec, sizeof rec, 1, fp) != 1)
            rc = ddtk_fail(DDTK_ESYS, "write error");
    }
    return rc;
}
