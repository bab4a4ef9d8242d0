/*
 * check.h - the smallest unit-test harness: CHECK(cond) records a failure
 * with its line; main returns check_result().
 */
#ifndef DDTK_CHECK_H
#define DDTK_CHECK_H

#include <math.h>
#include <stdio.h>

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

static int check_result(void)
{
    if (check_failures)
        fprintf(stderr, "%d check(s) failed\n", check_failures);
    return check_failures != 0;
}

#endif
