/*
 * fdas_math.c - statistics of the acceleration search: chi-square and
 * Gaussian tails, and PRESTO's candidate sigma and its inverse. (The z
 * response and Fresnel integrals are the kernels', cpu/fdas_resp.c.)
 */
#include "fdas.h"
#include "fdas_math.h"

#include <math.h>

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
