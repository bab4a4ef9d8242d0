/*
 * sbref - the brute-force two-stage sub-band reference the dd_subband tests
 * compare against, written independently of libddtk's kernels (8-bit fbsim
 * files with descending channels, no killed channels): plain loops, its own
 * delays (ddref.h's formula), sub-band sums kept whole before stage 2.
 *
 *   sbref FILE NSUB NOMINAL_DM DM floor|nearest [subtop]  > series.f32
 *
 * Sub-band s holds nchans / NSUB channels, the first nchans % NSUB one more.
 * Stage 1 sums a sub-band's channels at the nominal DM's delay of each channel
 * minus that of the sub-band's top channel (both rounded, or with `subtop` the
 * difference rounded once, as prepsubband does); stage 2 sums the sub-band series
 * at DM's delay of each sub-band's top channel. Writes N - L samples, L the
 * larger of DM's largest delay and the most any output reads.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t key_at(const uint8_t *h, size_t n, const char *key)
{
    size_t k = strlen(key);
    int32_t len;
    for (size_t i = 4; i + k + 4 <= n; i++)
        if (memcmp(h + i, key, k) == 0 && (memcpy(&len, h + i - 4, 4), len == (int32_t)k))
            return i + k;
    return 0;
}

static double samples_of(double dm, double f, double ftop, double tsamp)
{
    return 4148.741601 * dm * (1 / (f * f) - 1 / (ftop * ftop)) / tsamp;
}

static long rounded(double s, int use_floor)
{
    return (long)(use_floor ? floor(s) : round(s));
}

static long delay_of(double dm, double f, double ftop, double tsamp, int use_floor)
{
    return rounded(samples_of(dm, f, ftop, tsamp), use_floor);
}

int main(int argc, char **argv)
{
    if (argc != 6 && !(argc == 7 && strcmp(argv[6], "subtop") == 0))
        return 2;
    FILE *fp = fopen(argv[1], "rb");
    if (!fp)
        return 1;
    fseek(fp, 0, SEEK_END);
    size_t size = (size_t)ftell(fp), hdr = 0;
    rewind(fp);
    uint8_t *data = malloc(size);
    if (fread(data, 1, size, fp) != size)
        return 1;
    fclose(fp);
    for (size_t i = 0; i + 10 <= size; i++)
        if (memcmp(data + i, "HEADER_END", 10) == 0) {
            hdr = i + 10;
            break;
        }
    int nchans, nsub = atoi(argv[2]), fl = strcmp(argv[5], "floor") == 0;
    double fch1, foff, tsamp, nom = atof(argv[3]), dm = atof(argv[4]);
    memcpy(&nchans, data + key_at(data, hdr, "nchans"), 4);
    memcpy(&fch1, data + key_at(data, hdr, "fch1"), 8);
    memcpy(&foff, data + key_at(data, hdr, "foff"), 8);
    memcpy(&tsamp, data + key_at(data, hdr, "tsamp"), 8);
    if (foff >= 0 || nsub < 1 || nsub > nchans)
        return 2;
    const uint8_t *x = data + hdr;
    long nsamp = (long)((size - hdr) / (size_t)nchans), reach = 0, maxd = 0;
    int *top = malloc((size_t)nchans * sizeof *top);
    for (int s = 0, c = 0; s < nsub; s++) {
        int width = nchans / nsub + (s < nchans % nsub), t = c;
        for (; c < t + width; c++)
            top[c] = t;
    }
    long *d1 = malloc((size_t)nchans * sizeof *d1), *d2 = malloc((size_t)nchans * sizeof *d2);
    for (int c = 0; c < nchans; c++) {
        double f = fch1 + c * foff, ft = fch1 + top[c] * foff;
        d1[c] = argc == 7 ? rounded(samples_of(nom, f, fch1, tsamp) - samples_of(nom, ft, fch1, tsamp), fl)
                          : delay_of(nom, f, fch1, tsamp, fl) - delay_of(nom, ft, fch1, tsamp, fl);
        d2[c] = delay_of(dm, ft, fch1, tsamp, fl);
        long r = d1[c] + d2[c], own = delay_of(dm, f, fch1, tsamp, fl);
        reach = r > reach ? r : reach;
        maxd = own > maxd ? own : maxd;
    }
    /* an output reads a sub-band series up to its own d2 plus the sub-band's widest d1 */
    for (int c = 0; c < nchans; c++)
        for (int e = top[c]; e < nchans && top[e] == top[c]; e++)
            reach = d2[c] + d1[e] > reach ? d2[c] + d1[e] : reach;
    long L = reach > maxd ? reach : maxd, nout = nsamp - L;
    float *sub = malloc((size_t)nsamp * sizeof *sub), *out = calloc((size_t)(nout > 0 ? nout : 1),
                                                                      sizeof *out);
    for (int s0 = 0; s0 < nchans; s0 = s0 + 1) {
        if (top[s0] != s0)
            continue;
        for (long u = 0; u < nsamp; u++) {
            float v = 0;
            for (int c = s0; c < nchans && top[c] == s0; c++)
                if (u + d1[c] < nsamp)
                    v += x[(size_t)(u + d1[c]) * (size_t)nchans + (size_t)c];
            sub[u] = v;
        }
        for (long t = 0; t < nout; t++)
            out[t] += sub[t + d2[s0]];
    }
    if (nout > 0)
        fwrite(out, sizeof *out, (size_t)nout, stdout);
    free(data);
    free(top);
    free(d1);
    free(d2);
    free(sub);
    free(out);
    return 0;
}
