/*
 * tree.c - CPU kernels of tree dedispersion (Barsdell et al. 2012 section 3):
 * the log2 N delay-and-add stages of the basic tree, and stage 2 of the
 * piecewise-linear method, which adds one sub-band series per sub-band.
 *
 * Stage i merges sub-bands of r = 2^i channels pairwise. Row b*r + d of the
 * input holds sweep d of sub-band b; sweep d of the merged sub-band (2r
 * channels) adds sweep d/2 of the upper half and sweep d/2 of the lower half
 * delayed by (d+1)/2 samples (the delay and shuffle functions of eqs. 14-15
 * in this row order): the two halves' end delays sum to d. Stages are
 * out-of-place (double-buffered) and each one shortens the valid length by
 * its largest delay r, n - 1 in all. The additions for an output sample do
 * not depend on the gulp, so outputs are identical for any --gulp.
 */
#include "tree.h"

static void stage(const float *in, float *out, size_t istride, size_t ostride, int n, int r,
                  int64_t len)
{
    for (int b = 0; b < n; b += 2 * r)
        for (int d = 0; d < 2 * r; d++) {
            const float *restrict hi = in + (size_t)(b + d / 2) * istride;
            const float *restrict lo = in + (size_t)(b + r + d / 2) * istride + (d + 1) / 2;
            float *restrict o = out + (size_t)(b + d) * ostride;
            for (int64_t t = 0; t < len; t++)
                o[t] = hi[t] + lo[t];
        }
}

void ddtk_tree_cpu(float *a, float *b, size_t stride, int n, int64_t len, float *out,
                   size_t ostride)
{
    if (n == 1) {
        for (int64_t t = 0; t < len; t++)
            out[t] = a[t];
        return;
    }
    for (int r = 1; r < n; r *= 2) {
        len -= r;
        int last = 2 * r == n;
        stage(a, last ? out : b, stride, last ? ostride : stride, n, r, len);
        float *t = a;
        a = b;
        b = t;
    }
}

/* Time tiles outermost: every DM of a tile reads the same stage-1 columns,
 * which stay in cache (nslot * cps rows of TIME_TILE samples). */
#define TIME_TILE 256

void ddtk_tree_combine_cpu(const float *const *src, int nsb, int ndm, int64_t nout, float *out,
                           size_t ostride)
{
    const int64_t ntiles = (nout + TIME_TILE - 1) / TIME_TILE;
#pragma omp parallel for schedule(dynamic) num_threads(ddtk_threads())
    for (int64_t tile = 0; tile < ntiles; tile++) {
        const int64_t t0 = tile * TIME_TILE;
        const int64_t tn = t0 + TIME_TILE < nout ? TIME_TILE : nout - t0;
        for (int d = 0; d < ndm; d++) {
            const float *const *s = src + (size_t)d * nsb;
            float *restrict o = out + (size_t)d * ostride + t0;
            int k = 0;
            for (; k + 4 <= nsb && s[k] && s[k + 1] && s[k + 2] && s[k + 3]; k += 4) {
                const float *restrict a = s[k] + t0, *restrict b = s[k + 1] + t0;
                const float *restrict x = s[k + 2] + t0, *restrict y = s[k + 3] + t0;
                if (k == 0)       /* the first group writes: no zeroing pass */
                    for (int64_t t = 0; t < tn; t++)
                        o[t] = (a[t] + b[t]) + (x[t] + y[t]);
                else
                    for (int64_t t = 0; t < tn; t++)
                        o[t] += (a[t] + b[t]) + (x[t] + y[t]);
            }
            if (k == 0)
                for (int64_t t = 0; t < tn; t++)
                    o[t] = 0.0f;
            for (; k < nsb; k++)
                if (s[k])
                    for (int64_t t = 0; t < tn; t++)
                        o[t] += s[k][t0 + t];
        }
    }
}
