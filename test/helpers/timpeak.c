/*
 * timpeak - test and demo helper: the brightest sample of each SIGPROC float32
 * time series (.tim). Prints, per file:
 *   dm  sample  time_s  snr
 * where snr = (peak - median) / (1.4826 * MAD), robust to the pulse itself.
 */
#include "internal.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static float median(float *v, size_t n)
{
    qsort(v, n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

static int peak(const char *path)
{
    ddtk_input in;
    int rc = ddtk_input_open(&in, path);
    if (rc || in.hdr.nbits != 32 || in.hdr.nchans != 1) {
        if (!rc)
            rc = ddtk_fail(DDTK_EDATA, "%s: not a float32 time series", path);
        ddtk_input_close(&in);
        return rc;
    }
    size_t cap = 1 << 20, n = 0;
    float *x = malloc(cap * sizeof *x);
    int64_t got;
    while (x && !(rc = ddtk_input_read(&in, (uint8_t *)(x + n), (int64_t)(cap - n), &got)) && got > 0) {
        n += (size_t)got;
        if (n == cap)
            x = realloc(x, (cap *= 2) * sizeof *x);
    }
    if (!rc && x && n > 0) {
        size_t imax = 0;
        for (size_t i = 1; i < n; i++)
            if (x[i] > x[imax])
                imax = i;
        float top = x[imax];
        float *work = malloc(n * sizeof *work);
        memcpy(work, x, n * sizeof *work);
        float med = median(work, n);
        for (size_t i = 0; i < n; i++)
            work[i] = fabsf(x[i] - med);
        float mad = median(work, n);
        free(work);
        printf("%.6f\t%zu\t%.6f\t%.3f\n", in.hdr.refdm, imax, imax * in.hdr.tsamp,
               (top - med) / (1.4826 * mad));
    }
    free(x);
    ddtk_input_close(&in);
    return rc;
}

int main(int argc, char **argv)
{
    ddtk_set_progname(argv[0]);
    for (int i = 1; i < argc; i++)
        if (peak(argv[i])) {
            ddtk_msg("%s", ddtk_errmsg());
            return 1;
        }
    return 0;
}
