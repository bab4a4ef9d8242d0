/*
 * fdas_math.h - statistics of the acceleration search (fdas_math.c):
 * chi-square and Gaussian tails, candidate sigma. Not installed. (The z
 * response is the kernels': cpu/fdas_resp.h.)
 */
#ifndef DDTK_FDAS_MATH_H
#define DDTK_FDAS_MATH_H

#include "ddtk.h"

DDTK_BEGIN_DECLS

/* log of the chi-square upper tail with 2*numsum dof at 2*power. */
double ddtk_chi2_logq(double power, int numsum);
/* log of the one-sided Gaussian upper tail at x; and its inverse. */
double ddtk_normal_logq(double x);
double ddtk_normal_isf_log(double logp);
/* PRESTO candidate_sigma: Gaussian sigma of a summed power after ntrials. */
double ddtk_fdas_sigma(double power, int numsum, double ntrials);
/* The summed power whose sigma is `sigma` after ntrials. */
double ddtk_fdas_power_for_sigma(double sigma, int numsum, double ntrials);

DDTK_END_DECLS

#endif
