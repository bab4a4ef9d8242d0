/*
 * timsnr - test helper: the statistics of a SIGPROC time series (.tim, 8-,
 * 16-bit unsigned or float32) and the S/N of its brightest pulse, or of a
 * pulsar folded at a known period. Prints, per file:
 *   mean  std  snr  width  sample
 * snr: the largest boxcar sum of width 1, 2, 4 ... --max-width samples,
 * (sum - width * mean) / (std * sqrt(width)), over the whole series; with
 * --fold P (seconds) the series folded into --bins bins (default 64) and the
 * same boxcar search over the profile (circular), whose noise is
 * std * sqrt(samples per bin). mean and std are over every sample (the pulses
 * add little in the series these tests use).
 */
#include "ddtk.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double *load(const char *path, int64_t *n, double *tsamp)
{
    ddtk_input in;
    double *x = NULL;
    uint8_t *raw = NULL;
    int64_t got = 0;
    if (ddtk_input_open(&in, path) || in.hdr.nchans != 1
        || (in.hdr.nbits != 8 && in.hdr.nbits != 16 && in.hdr.nbits != 32)) {
        fprintf(stderr, "timsnr: %s: not an 8-, 16- or 32-bit time series\n", path);
    } else if ((x = malloc((size_t)(in.nsamples > 0 ? in.nsamples : 1) * sizeof *x))
               && (raw = malloc((size_t)(in.nsamples > 0 ? in.nsamples : 1) * 4))
               && !ddtk_input_read(&in, raw, in.nsamples, &got)) {
        *n = got;
        *tsamp = in.hdr.tsamp;
        for (int64_t i = 0; i < got; i++) {
            uint16_t u16;
            float f;
            if (in.hdr.nbits == 8)
                x[i] = raw[i];
            else if (in.hdr.nbits == 16)
                x[i] = (memcpy(&u16, raw + 2 * i, 2), u16);
            else
                x[i] = (memcpy(&f, raw + 4 * i, 4), f);
        }
    }
    free(raw);
    ddtk_input_close(&in);
    return x;
}

/* The best boxcar of y[0..n) (circular when wrap), noise sigma per sample. */
static void boxcar(const double *y, int64_t n, double mean, double sigma, int maxw, int wrap,
                   double *snr, int *width, int64_t *at)
{
    *snr = -INFINITY;
    for (int w = 1; w <= maxw && w <= n; w *= 2) {
        int64_t last = wrap ? n : n - w + 1;
        for (int64_t t = 0; t < last; t++) {
            double s = 0;
            for (int k = 0; k < w; k++)
                s += y[(t + k) % n];
            double v = (s - w * mean) / (sigma * sqrt(w));
            if (v > *snr) {
                *snr = v;
                *width = w;
                *at = t;
            }
        }
    }
}

int main(int argc, char **argv)
{
    double period = 0;
    int maxw = 64, bins = 64, a = 1;
    for (; a + 1 < argc && argv[a][0] == '-' && argv[a][1] == '-'; a += 2) {
        if (!strcmp(argv[a], "--fold"))
            period = atof(argv[a + 1]);
        else if (!strcmp(argv[a], "--max-width"))
            maxw = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--bins"))
            bins = atoi(argv[a + 1]);
        else
            break;
    }
    if (a >= argc || maxw < 1 || bins < 2) {
        fprintf(stderr, "usage: timsnr [--fold P] [--bins B] [--max-width W] FILE.tim...\n");
        return 2;
    }
    for (; a < argc; a++) {
        int64_t n = 0, at = 0;
        double tsamp = 0, sum = 0, sq = 0, snr;
        int width = 0;
        double *x = load(argv[a], &n, &tsamp);
        if (!x || n < 2)
            return 1;
        for (int64_t i = 0; i < n; i++)
            sum += x[i];
        double mean = sum / (double)n;
        for (int64_t i = 0; i < n; i++)
            sq += (x[i] - mean) * (x[i] - mean);
        double std = sqrt(sq / (double)(n - 1));
        if (period > 0) {
            double *prof = calloc((size_t)bins, sizeof *prof);
            int64_t *count = calloc((size_t)bins, sizeof *count);
            for (int64_t i = 0; i < n; i++) {
                double phase = fmod((double)i * tsamp / period, 1.0);
                int b = (int)(phase * bins) % bins;
                prof[b] += x[i] - mean;
                count[b]++;
            }
            for (int b = 0; b < bins; b++)      /* per bin: S/N units of one sample's std */
                prof[b] /= sqrt(count[b] > 0 ? (double)count[b] : 1.0);
            boxcar(prof, bins, 0.0, std, maxw < bins ? maxw : bins / 2, 1, &snr, &width, &at);
            free(prof);
            free(count);
        } else {
            boxcar(x, n, mean, std, maxw, 0, &snr, &width, &at);
        }
        printf("%.6g\t%.6g\t%.3f\t%d\t%lld\n", mean, std, snr, width, (long long)at);
        free(x);
    }
    return 0;
}
