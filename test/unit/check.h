/*
 * check.h - the smallest unit-test harness: CHECK(cond) records a failure
 * with its line; main returns check_result(). Also the tests' normal
 * deviates (check_gauss) and uniform integers (check_rand).
 */
#ifndef DDTK_CHECK_H
#define DDTK_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int check_failures;

#define CHECK(cond) do { \
        if (!(cond)) { \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++; \
        } \
    } while (0)

#define CHECK_NEAR(a, b, tol) do { \
        double a_ = (a), b_ = (b); \
        if (!(fabs(a_ - b_) <= (tol))) { \
            fprintf(stderr, "%s:%d: %s = %.17g, expected %.17g +- %g\n", __FILE__, __LINE__, \
                    #a, a_, b_, (double)(tol)); \
            check_failures++; \
        } \
    } while (0)

/* A 24-bit uniform integer from the linear congruential state x. */
static inline unsigned check_rand(unsigned *x)
{
    *x = *x * 1103515245u + 12345u;
    return *x >> 8;
}

/* A standard normal deviate (Marsaglia's polar method) from the erand48
 * state rng. */
static inline double check_gauss(unsigned short rng[3])
{
    double u, v, q;
    do {
        u = 2 * erand48(rng) - 1;
        v = 2 * erand48(rng) - 1;
        q = u * u + v * v;
    } while (q >= 1 || q == 0);
    return u * sqrt(-2 * log(q) / q);
}

static int check_result(void)
{
    if (check_failures)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}

#endif
