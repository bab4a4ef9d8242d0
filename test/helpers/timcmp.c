/*
 * timcmp - test helper: compare two SIGPROC time series (.tim).
 *   timcmp [--tol R] A.tim B.tim
 *   timcmp --quantised S A.tim B.tim
 * Exit 0 when both have the same length and every sample agrees: bit for bit
 * by default, or |a - b| <= R * max|b| with --tol (relative to the series
 * scale, so near-zero samples are not held to a relative bound of their own).
 * With --quantised, A holds unsigned 8- or 16-bit samples and B float32, and
 * each a must be floor(b / S + 1/2) clamped to the range of A's nbits.
 * With --baseline N, B is a raw series and A must be it less SIGPROC
 * dedisperse's baseline, bit for bit: each block of N samples less its median
 * (the (N/2)-th smallest, found here by sorting), a last short block less the
 * previous block's median, a series shorter than N less its own median (the
 * ((n+1)/2)-th smallest).
 * Otherwise print the first difference and exit 1.
 */
#include "ddtk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A .tim's samples as floats (unsigned 8/16-bit or float32); *nbits gets its width. */
static float *load(const char *path, int64_t *n, int *nbits)
{
    ddtk_input in;
    float *x = NULL;
    uint8_t *raw = NULL;
    int64_t got = 0;
    if (ddtk_input_open(&in, path) || in.hdr.nchans != 1
        || (in.hdr.nbits != 8 && in.hdr.nbits != 16 && in.hdr.nbits != 32)) {
        fprintf(stderr, "timcmp: %s: not an 8-, 16- or 32-bit time series\n", path);
    } else if ((x = malloc((size_t)(in.nsamples > 0 ? in.nsamples : 1) * sizeof *x))
               && (raw = malloc((size_t)(in.nsamples > 0 ? in.nsamples : 1) * 4))
               && !ddtk_input_read(&in, raw, in.nsamples, &got)) {
        *n = got;
        *nbits = in.hdr.nbits;
        for (int64_t i = 0; i < got; i++) {
            uint16_t u16;
            if (in.hdr.nbits == 8)
                x[i] = raw[i];
            else if (in.hdr.nbits == 16)
                x[i] = (memcpy(&u16, raw + 2 * i, 2), u16);
            else
                memcpy(&x[i], raw + 4 * i, 4);
        }
    }
    free(raw);
    ddtk_input_close(&in);
    return x;
}

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* y less dedisperse's block medians, in place. */
static int remove_baseline(float *y, int64_t n, int64_t block)
{
    float *sorted = malloc((size_t)block * sizeof *sorted), median = 0;
    if (!sorted)
        return 1;
    for (int64_t s = 0; s < n; s += block) {
        int64_t len = n - s < block ? n - s : block;
        if (len == block || s == 0) {
            memcpy(sorted, y + s, (size_t)len * sizeof *y);
            qsort(sorted, (size_t)len, sizeof *sorted, by_value);
            median = sorted[(len + 1) / 2 - 1];
        }
        for (int64_t t = s; t < s + len; t++)
            y[t] -= median;
    }
    free(sorted);
    return 0;
}

static int same(float a, float b, double tol, double scale, double q, int nbits)
{
    if (q > 0) {
        double v = floor(b / q + 0.5), top = ldexp(1.0, nbits) - 1;
        return a == (v < 0 ? 0 : v > top ? top : v);
    }
    return tol < 0 ? !memcmp(&a, &b, sizeof a) : fabs((double)a - b) <= tol * scale;
}

int main(int argc, char **argv)
{
    double tol = -1, q = 0;
    int a = 1;
    int64_t block = 0;
    if (argc == 5 && !strcmp(argv[1], "--baseline")) {
        block = atoll(argv[2]);
        a = 3;
    } else if (argc == 5 && !strcmp(argv[1], "--tol")) {
        tol = atof(argv[2]);
        a = 3;
    } else if (argc == 5 && !strcmp(argv[1], "--quantised")) {
        q = atof(argv[2]);
        a = 3;
    } else if (argc != 3) {
        fprintf(stderr, "usage: timcmp [--tol R | --quantised S | --baseline N] A.tim B.tim\n");
        return 2;
    }
    int64_t na = -1, nb = -2;
    int abits = 0, bbits = 0;
    float *x = load(argv[a], &na, &abits), *y = load(argv[a + 1], &nb, &bbits);
    if (!x || !y || na != nb) {
        fprintf(stderr, "timcmp: lengths differ: %lld vs %lld\n", (long long)na, (long long)nb);
        return 1;
    }
    if ((q > 0) != (abits < 32) || bbits != 32) {
        fprintf(stderr, "timcmp: %d-bit vs %d-bit series (--quantised: integer vs float32)\n",
                abits, bbits);
        return 1;
    }
    if (block > 0 && remove_baseline(y, nb, block))
        return 1;
    double scale = 0;
    for (int64_t i = 0; i < nb; i++)
        scale = fmax(scale, fabs(y[i]));
    for (int64_t i = 0; i < na; i++) {
        if (!same(x[i], y[i], tol, scale, q, abits)) {
            fprintf(stderr, "timcmp: %s vs %s: sample %lld: %.9g vs %.9g\n", argv[a], argv[a + 1],
                    (long long)i, x[i], y[i]);
            return 1;
        }
    }
    free(x);
    free(y);
    return 0;
}
