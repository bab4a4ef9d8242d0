/*
 * ddref - the brute-force reference the dd_direct tests compare against,
 * written independently of libddtk's kernels: its own header walk (8-bit
 * files written by fbsim only) around ddref.h's delays and plain loops.
 *
 *   ddref FILE DM floor|nearest [KILLED,CHANNELS,...]  > series.f32
 *
 * Writes N - maxdelay float32 samples (no header) to stdout.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddref.h"

/* Header strings sit at any byte offset: lengths are copied, not loaded. */
static int32_t get_int(const uint8_t *h, size_t n, const char *key, size_t *off)
{
    size_t k = strlen(key);
    int32_t len;
    for (size_t i = 4; i + k + 4 <= n; i++)
        if (memcmp(h + i, key, k) == 0 && (memcpy(&len, h + i - 4, 4), len == (int32_t)k)) {
            *off = i + k;
            return 1;
        }
    return 0;
}

static double get_double(const uint8_t *h, size_t n, const char *key)
{
    size_t off;
    double v = 0;
    if (get_int(h, n, key, &off))
        memcpy(&v, h + off, 8);
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    FILE *fp = fopen(argv[1], "rb");
    if (!fp)
        return 1;
    fseek(fp, 0, SEEK_END);
    size_t size = (size_t)ftell(fp);
    rewind(fp);
    uint8_t *data = malloc(size);
    if (fread(data, 1, size, fp) != size)
        return 1;
    fclose(fp);
    size_t hdr = 0, off;
    for (size_t i = 0; i + 10 <= size; i++)
        if (memcmp(data + i, "HEADER_END", 10) == 0) {
            hdr = i + 10;
            break;
        }
    int nchans = 0;
    if (get_int(data, hdr, "nchans", &off))
        memcpy(&nchans, data + off, 4);
    double fch1 = get_double(data, hdr, "fch1"), foff = get_double(data, hdr, "foff");
    double tsamp = get_double(data, hdr, "tsamp"), dm = atof(argv[2]);
    int use_floor = strcmp(argv[3], "floor") == 0;
    char *killed = calloc((size_t)nchans, 1);
    if (argc > 4)
        for (char *t = strtok(argv[4], ","); t; t = strtok(NULL, ","))
            killed[atoi(t)] = 1;
    size_t nsamp = (size_t)(size - hdr) / (size_t)nchans;
    float *out = malloc(nsamp * sizeof *out);
    size_t n = ddref_series(data + hdr, nsamp, nchans, fch1, foff, tsamp, dm, use_floor, killed,
                            out);
    fwrite(out, sizeof *out, n, stdout);
    free(out);
    free(data);
    free(killed);
    return 0;
}
