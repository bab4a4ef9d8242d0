/*
 * timideal - test helper: the ideal matched-filter S/N of a pulse in a
 * dedispersed float32 .tim, from the same series made without the pulse
 * (the same noise: fbsim with the same seed). The pulse is the difference
 * d; its matched filter's S/N is sqrt(sum d^2) / sigma, sigma the RMS of
 * the pulse-free series about its mean. Prints that S/N for samples
 * [FROM, TO] (clipped to the series):
 *   timideal WITH.tim WITHOUT.tim FROM TO
 */
#include "internal.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>

static int load(const char *path, float **x, int64_t *n)
{
    ddtk_input in;
    int rc = ddtk_input_open(&in, path);
    if (!rc && (in.hdr.nbits != 32 || in.hdr.nchans != 1 || in.nsamples < 2))
        rc = ddtk_fail(DDTK_EDATA, "%s: not a float32 time series", path);
    int64_t got = 0;
    if (!rc && !(*x = malloc((size_t)in.nsamples * sizeof **x)))
        rc = ddtk_fail(DDTK_ESYS, "out of memory");
    if (!rc)
        rc = ddtk_input_read(&in, (uint8_t *)*x, in.nsamples, &got);
    *n = got;
    ddtk_input_close(&in);
    return rc;
}

int main(int argc, char **argv)
{
    ddtk_set_progname(argv[0]);
    if (argc != 5)
        return ddtk_exit_status(ddtk_fail(DDTK_EUSAGE, "usage: timideal WITH.tim WITHOUT.tim "
                                          "FROM TO"));
    float *a = NULL, *b = NULL;
    int64_t na, nb;
    int rc = load(argv[1], &a, &na);
    if (!rc)
        rc = load(argv[2], &b, &nb);
    if (!rc && na != nb)
        rc = ddtk_fail(DDTK_EDATA, "%s and %s differ in length", argv[1], argv[2]);
    if (!rc) {
        double mean = 0, var = 0, sig = 0;
        for (int64_t t = 0; t < nb; t++)
            mean += b[t];
        mean /= (double)nb;
        for (int64_t t = 0; t < nb; t++)
            var += (b[t] - mean) * (b[t] - mean);
        int64_t lo = atoll(argv[3]), hi = atoll(argv[4]);
        lo = lo < 0 ? 0 : lo;
        hi = hi >= na ? na - 1 : hi;
        for (int64_t t = lo; t <= hi; t++)
            sig += ((double)a[t] - b[t]) * ((double)a[t] - b[t]);
        printf("%.4f\n", sqrt(sig) / sqrt(var / (double)nb));
    }
    free(a);
    free(b);
    return ddtk_exit_status(rc);
}
