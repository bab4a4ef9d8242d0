/*
 * fdas_math.c - special functions for fdas: Fresnel integrals, the z response
 * of a linearly drifting signal, chi-square and Gaussian tails, and PRESTO's
 * candidate sigma and its inverse.
 */
#include "fdas.h"
#include "fdas_math.h"

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

/*
 * 2*power is chi-square with 2*numsum dof when the powers are exponential
 * with mean 1; its upper tail is the regularised gamma Q(numsum, power), which
 * for integer numsum is exp(-p) * sum_{k<numsum} p^k / k!  (summed in logs).
 */
double ddtk_chi2_logq(double power, int numsum)
{
    if (power <= 0)
        return 0.0;
    double lp = log(power), maxterm = -INFINITY, terms[DDTK_FDAS_MAXHARM];
    for (int k = 0; k < numsum; k++) {
        terms[k] = k * lp - lgamma(k + 1.0);
        maxterm = fmax(maxterm, terms[k]);
    }
    double sum = 0;
    for (int k = 0; k < numsum; k++)
        sum += exp(terms[k] - maxterm);
    return fmin(0.0, -power + maxterm + log(sum));
}

double ddtk_normal_logq(double x)
{
    if (x < 25.0)
        return log(0.5 * erfc(x / M_SQRT2));
    /* asymptotic: Q(x) ~ phi(x)/x (1 - 1/x^2 + 3/x^4) */
    double x2 = x * x;
    return -0.5 * x2 - log(x * sqrt(2 * M_PI)) + log1p(-1.0 / x2 + 3.0 / (x2 * x2));
}

/* Within ISF_MARGIN of the Newton root the bisection evaluates logq; beyond
 * it the comparison's outcome is known: over the margin logq changes by far
 * more than its rounding, and near 25 (slope ~25) by 2.5e-7, four times the
 * 6.1e-8 step where its formula switches (checked bit for bit against the
 * plain bisection on 2M values, including around 25). */
#define ISF_MARGIN 1e-8

/* Newton's root of logq(x) = logp (logp < -1e-3), checked to lie within
 * ISF_MARGIN of the exact crossing; NAN when it is not. */
static double isf_newton(double logp)
{
    double t = -2.0 * logp, x = t > 2.0 ? sqrt(t - log(2 * M_PI * t)) : 0.0;
    for (int i = 0; i < 30; i++) {
        double q = ddtk_normal_logq(x);
        double dx = (q - logp) / (exp(-0.5 * x * x - q) / sqrt(2 * M_PI));
        x += dx;
        if (!isfinite(x))
            return NAN;
        if (fabs(dx) < 1e-12 * fmax(1.0, fabs(x)))
            break;
    }
    if (ddtk_normal_logq(x - ISF_MARGIN) > logp && !(ddtk_normal_logq(x + ISF_MARGIN) > logp))
        return x;
    return NAN;
}

/*
 * Bisection on [-40, 40] (hi doubled until it brackets) to 1e-10. The
 * comparisons at midpoints farther than ISF_MARGIN from the Newton root are
 * decided without evaluating logq, so the result is bit for bit the plain
 * bisection's with ~14 evaluations of logq instead of ~40.
 */
double ddtk_normal_isf_log(double logp)
{
    double lo = -40.0, hi = 40.0;
    while (ddtk_normal_logq(hi) > logp)
        hi *= 2.0;
    double x0 = logp < -1e-3 ? isf_newton(logp) : NAN;
    for (int i = 0; i < 200 && hi - lo > 1e-10; i++) {
        double mid = 0.5 * (lo + hi);
        int above = fabs(mid - x0) > ISF_MARGIN ? mid < x0 : ddtk_normal_logq(mid) > logp;
        if (above)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double ddtk_fdas_sigma(double power, int numsum, double ntrials)
{
    double logq = ddtk_chi2_logq(power, numsum);
    if (ntrials < 1)
        ntrials = 1;
    double logp;
    if (logq + log(ntrials) < -20.0)
        logp = logq + log(ntrials);   /* 1-(1-q)^N = N q to double precision */
    else
        logp = log(-expm1(ntrials * log1p(-exp(logq))));
    return ddtk_normal_isf_log(logp);
}

double ddtk_fdas_power_for_sigma(double sigma, int numsum, double ntrials)
{
    double lo = 0.0, hi = 64.0;
    while (ddtk_fdas_sigma(hi, numsum, ntrials) < sigma)
        hi *= 2.0;
    for (int i = 0; i < 100 && hi - lo > 1e-7 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (ddtk_fdas_sigma(mid, numsum, ntrials) < sigma)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}
