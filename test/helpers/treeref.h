/*
 * treeref.h - the tree dedispersion reference of the tests, written apart
 * from libddtk's kernels: the integer delay path of each tree sweep from the
 * top-down definition of Taylor's tree (a sweep over 2m channels is the same
 * sweep index halved in each half, the lower half started (d'+1)/2 samples
 * later), and brute-force sums along such paths.
 */
#ifndef DDTK_TEST_TREEREF_H
#define DDTK_TEST_TREEREF_H

/* Delay (samples) of channel nu in sweep d of a tree over n = 2^m channels. */
static inline int treeref_path(int n, int d, int nu)
{
    int delay = 0;
    while (n > 1) {
        n /= 2;
        if (nu >= n) {
            delay += (d + 1) / 2;
            nu -= n;
        }
        d /= 2;
    }
    return delay;
}

/* Sum of rows x[nu * stride + t + pass * nu + path(d, nu)] over n rows. */
static inline double treeref_sum(const float *x, size_t stride, int n, int pass, int d,
                                 long t)
{
    double s = 0;
    for (int nu = 0; nu < n; nu++)
        s += x[(size_t)nu * stride + (size_t)(t + (long)pass * nu + treeref_path(n, d, nu))];
    return s;
}

#endif
