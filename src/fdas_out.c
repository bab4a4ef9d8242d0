/*
 * fdas_out.c - fdas candidate tables: the headered TSV, and PRESTO's
 * <base>_ACCEL_<zmax> text layout (fundamentals, harmonics, then the .inf),
 * which PRESTO's ACCEL_sift parses.
 */
#include "fdas.h"
#include "internal.h"
#include "fdas_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ddtk_fdas_write_tsv(FILE *fp, const ddtk_fdas_plan *plan, const ddtk_fdas_series *s)
{
    int n;
    const ddtk_fdas_cand *c = ddtk_fdas_candidates(plan, &n);
    fprintf(fp, "rank\tsigma\tpower\tnumharm\tperiod_ms\tfreq_hz\tr\tz\tfdot_hz_s\t"
                "accel_m_s2\tdm\n");
    for (int i = 0; i < n; i++)
        fprintf(fp, "%d\t%.3f\t%.3f\t%d\t%.9f\t%.9f\t%.4f\t%.3f\t%.6e\t%.4f\t%.2f\n", i + 1,
                c[i].sigma, c[i].power, c[i].numharm, 1000.0 / c[i].freq, c[i].freq, c[i].r,
                c[i].z, c[i].fdot, c[i].accel, s->dm);
    return ferror(fp) ? ddtk_fail(DDTK_ESYS, "write error") : DDTK_OK;
}

typedef struct harm {
    double r, z, power, phase;
} harm;

/* Amplitudes of every harmonic at (h r, h z); returns the coherent power. */
static double harmonics(const ddtk_fdas_plan *plan, const ddtk_fdas_cand *c, harm *h)
{
    double amp_sum = 0;
    for (int k = 0; k < c->numharm; k++) {
        double re, im;
        h[k].r = (k + 1) * c->r;
        h[k].z = (k + 1) * c->z;
        ddtk_fdas_rz_amp(plan, h[k].r, h[k].z, &re, &im);
        h[k].power = re * re + im * im;
        h[k].phase = atan2(im, re);
        amp_sum += sqrt(h[k].power);
    }
    return amp_sum * amp_sum;
}

static void fundamentals(FILE *fp, const ddtk_fdas_plan *plan, const ddtk_fdas_cand *c, int n,
                         harm *h)
{
    fprintf(fp, "             Summed  Coherent  Num        Period          Frequency"
                "         FFT 'r'        Freq Deriv       FFT 'z'         Accel\n"
                "Cand  Sigma   Power    Power   Harm         (ms)               (Hz)"
                "             (bin)            (Hz/s)          (bins)        (m/s^2)\n");
    for (int i = 0; i < 135; i++)
        fputc('-', fp);
    fputc('\n', fp);
    for (int i = 0; i < n; i++) {
        double cpow = harmonics(plan, &c[i], h);
        fprintf(fp, "%-5d %-7.2f %-8.2f %-8.2f %-4d %-18.12f %-18.10f %-14.4f %-16.6e "
                    "%-10.3f %-12.4f\n",
                i + 1, c[i].sigma, c[i].power, cpow, c[i].numharm, 1000.0 / c[i].freq,
                c[i].freq, c[i].r, c[i].fdot, c[i].z, c[i].accel);
    }
}

/* One row per harmonic; the first row of a candidate starts " N", the others
 * with blanks only, as ACCEL_sift expects. */
static void harmonic_rows(FILE *fp, const ddtk_fdas_plan *plan, const ddtk_fdas_cand *c, int n,
                          harm *h)
{
    fprintf(fp, "\n\n                  Power /          Raw           FFT 'r'          Pred 'r'"
                "       FFT 'z'     Pred 'z'      Phase\n"
                "Cand        Harm  Sigma    Loc Pow    Power            (bin)            (bin)"
                "        (bins)      (bins)     (rad)\n");
    for (int i = 0; i < 120; i++)
        fputc('-', fp);
    fputc('\n', fp);
    for (int i = 0; i < n; i++) {
        harmonics(plan, &c[i], h);
        for (int k = 0; k < c[i].numharm; k++) {
            if (k == 0)
                fprintf(fp, " %-11d", i + 1);
            else
                fprintf(fp, "            ");
            fprintf(fp, "%-5d %-8.2f %-10.2f %-10.2f %-16.4f %-16.4f %-11.3f %-11.3f %-8.4f\n",
                    k + 1, ddtk_fdas_sigma(h[k].power, 1, 1), h[k].power, h[k].power, h[k].r,
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
    ddtk_inf_print(fp, slash ? slash + 1 : s->base, &meta, s->dm, s->n, s->n);
}

int ddtk_fdas_write_presto(FILE *fp, ddtk_fdas_plan *plan, const ddtk_fdas_series *s)
{
    int n;
    const ddtk_fdas_cand *c = ddtk_fdas_candidates(plan, &n);
    harm h[DDTK_FDAS_MAXHARM];
    int rc = ddtk_fdas_host_spectrum(plan);
    if (rc)
        return rc;
    fundamentals(fp, plan, c, n, h);
    harmonic_rows(fp, plan, c, n, h);
    if (s->inf_text)
        fputs(s->inf_text, fp);
    else
        tim_inf(fp, s);
    return ferror(fp) ? ddtk_fail(DDTK_ESYS, "write error") : DDTK_OK;
}
