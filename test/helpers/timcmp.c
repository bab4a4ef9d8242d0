/*
 * timcmp - test helper: compare two SIGPROC float32 time series (.tim).
 *   timcmp [--tol R] A.tim B.tim
 * Exit 0 when both have the same length and every sample agrees: bit for bit
 * by default, or |a - b| <= R * max|b| with --tol (relative to the series
 * scale, so near-zero samples are not held to a relative bound of their own).
 * Otherwise print the first difference and exit 1.
 */
#include "ddtk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static float *load(const char *path, int64_t *n)
{
    ddtk_input in;
    float *x = NULL;
    int64_t got = 0;
    if (ddtk_input_open(&in, path) || in.hdr.nbits != 32 || in.hdr.nchans != 1) {
        fprintf(stderr, "timcmp: %s: not a float32 time series\n", path);
    } else if ((x = malloc((size_t)(in.nsamples > 0 ? in.nsamples : 1) * sizeof *x))
               && !ddtk_input_read(&in, (uint8_t *)x, in.nsamples, &got)) {
        *n = got;
    }
    ddtk_input_close(&in);
    return x;
}

int main(int argc, char **argv)
{
    double tol = -1;
    int a = 1;
    if (argc == 5 && !strcmp(argv[1], "--tol")) {
        tol = atof(argv[2]);
        a = 3;
    } else if (argc != 3) {
        fprintf(stderr, "usage: timcmp [--tol R] A.tim B.tim\n");
        return 2;
    }
    int64_t na = -1, nb = -2;
    float *x = load(argv[a], &na), *y = load(argv[a + 1], &nb);
    if (!x || !y || na != nb) {
        fprintf(stderr, "timcmp: lengths differ: %lld vs %lld\n", (long long)na, (long long)nb);
        return 1;
    }
    double scale = 0;
    for (int64_t i = 0; i < nb; i++)
        scale = fmax(scale, fabs(y[i]));
    for (int64_t i = 0; i < na; i++) {
        int same = tol < 0 ? !memcmp(&x[i], &y[i], sizeof *x)
                           : fabs((double)x[i] - y[i]) <= tol * scale;
        if (!same) {
            fprintf(stderr, "timcmp: %s vs %s: sample %lld: %.9g vs %.9g\n", argv[a], argv[a + 1],
                    (long long)i, x[i], y[i]);
            return 1;
        }
    }
    free(x);
    free(y);
    return 0;
}
