/*
 * fdas_resp.c - the z response of fdas's kernels: Fresnel integrals, the
 * response of a signal whose frequency drifts by z bins (the templates the
 * kernels correlate with, and the search's amplitude at (r, z)), and the
 * half width of a template. Below the search: it calls nothing above.
 */
#include "fdas_resp.h"

#include <complex.h>
#include <math.h>

/* Power series, accurate for |x| < 2.5 (terms peak near 1e4, 1e-12 lost). */
static void fresnel_series(double x, double *c, double *s)
{
    double t = M_PI_2 * x * x, t2 = t * t, term = x, sc = 0, ss = 0;
    /* term_n = (-1)^n t^(2n) x / (2n)!  for C; the S series uses t^(2n+1)/(2n+1)! */
    for (int n = 0; n < 60; n++) {
        double tc = term / (4 * n + 1);
        double ts = term * t / ((2 * n + 1) * (4.0 * n + 3));
        sc += tc;
        ss += ts;
        if (fabs(tc) < 1e-17 * fabs(sc) && fabs(ts) < 1e-17 * fabs(ss) + 1e-300)
            break;
        term *= -t2 / ((2 * n + 1.0) * (2 * n + 2.0));
    }
    *c = sc;
    *s = ss;
}

/*
 * For x >= 2.5: C + iS = (1+i)/2 * (1 - erfc(w)), w = sqrt(pi)/2 (1-i) x, with
 * erfc(w) = exp(-w^2) / (sqrt(pi) * (w + (1/2)/(w + 1/(w + (3/2)/(w + ...)))))
 * evaluated by the modified Lentz method (converges for Re w > 0).
 */
static void fresnel_cf(double x, double *c, double *s)
{
    const double tiny = 1e-300;
    double complex w = 0.5 * sqrt(M_PI) * (1.0 - I) * x;
    double complex f = w, cc = w, d = 0;
    for (int n = 1; n < 500; n++) {
        double a = 0.5 * n;
        d = w + a * d;
        d = cabs(d) < tiny ? tiny : d;
        cc = w + a / cc;
        cc = cabs(cc) < tiny ? tiny : cc;
        d = 1.0 / d;
        double complex delta = cc * d;
        f *= delta;
        if (cabs(delta - 1.0) < 1e-16)
            break;
    }
    double complex erfc_w = cexp(-w * w) / (sqrt(M_PI) * f);
    double complex cs = 0.5 * (1.0 + I) * (1.0 - erfc_w);
    *c = creal(cs);
    *s = cimag(cs);
}

void ddtk_fresnel(double x, double *c, double *s)
{
    double ax = fabs(x);
    if (ax < 2.5)
        fresnel_series(ax, c, s);
    else
        fresnel_cf(ax, c, s);
    if (x < 0) {
        *c = -*c;
        *s = -*s;
    }
}

/*
 * Response R(q) = int_0^1 exp(2 pi i [-(q + z/2) u + z u^2 / 2]) du of a unit
 * signal whose frequency drifts by z bins, at q bins from its average frequency.
 * With b = q + z/2, completing the square gives Fresnel integrals between
 * v0 = -sqrt(2|z|) b/z and v1 = sqrt(2|z|) (1 - b/z).
 */
void ddtk_fdas_zresp(double q, double z, double *re, double *im)
{
    double b = q + 0.5 * z;
    if (fabs(z) < 1e-4) {
        /* int_0^1 exp(-2 pi i b u) du = exp(-i pi b) sinc(b) */
        double sinc = fabs(b) < 1e-12 ? 1.0 : sin(M_PI * b) / (M_PI * b);
        *re = cos(M_PI * b) * sinc;
        *im = -sin(M_PI * b) * sinc;
        return;
    }
    double k = sqrt(2.0 * fabs(z)), sg = z > 0 ? 1.0 : -1.0;
    double c0, s0, c1, s1;
    ddtk_fresnel(-k * b / z, &c0, &s0);
    ddtk_fresnel(k * (1.0 - b / z), &c1, &s1);
    double complex integral = ((c1 - c0) + I * sg * (s1 - s0)) / k;
    double complex r = cexp(-I * M_PI * b * b / z) * integral;
    *re = creal(r);
    *im = cimag(r);
}

int ddtk_fdas_halfwidth(double z)
{
    return (int)(0.55 * fabs(z)) + 16;
}
