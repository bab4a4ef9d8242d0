/*
 * psrfits_scaled_cmp.c - scaled PSRFITS read for the GPU as raw bytes with
 * per-row multiply-adds (ddtk_input_read_scaled) gives the float32 spectra
 * ddtk_input_read gives, in gulps of any length (inside rows, across gaps
 * and files). Usage: psrfits_scaled_cmp GULP FILE... (bats makes the files
 * with fbsim: psrfits.bats); prints the largest difference.
 */
#include "ddtk.h"
#include "internal.h"
#include "../unit/check.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: psrfits_scaled_cmp GULP FILE...\n");
        return 2;
    }
    const int64_t gulp = atoll(argv[1]);
    const char *const *paths = (const char *const *)argv + 2;
    ddtk_input a, b;
    CHECK(ddtk_input_open_files(&a, paths, argc - 2) == DDTK_OK);
    CHECK(ddtk_input_open_files(&b, paths, argc - 2) == DDTK_OK);
    if (check_failures)
        return check_result();
    int sgn;
    const int nsblk = ddtk_input_scaled_bytes(&b, &sgn);
    CHECK(a.hdr.nbits == 32 && nsblk > 0);
    const int64_t vals = (int64_t)a.hdr.nifs * a.hdr.nchans;
    const int maxseg = (int)(gulp / (nsblk > 0 ? nsblk : 1) + 3);
    float *f = malloc((size_t)(gulp * vals) * sizeof *f);
    uint8_t *bytes = malloc((size_t)(gulp * vals));
    int32_t *seg = malloc((size_t)gulp * sizeof *seg);
    float *tab = malloc((size_t)(maxseg * 2 * vals) * sizeof *tab);
    double worst = 0, largest = 0;
    int64_t total = 0, ga, gb;
    int nseg = 0, tables = 0;
    do {
        CHECK(ddtk_input_read(&a, (uint8_t *)f, gulp, &ga) == DDTK_OK);
        CHECK(ddtk_input_read_scaled(&b, gulp, bytes, seg, tab, maxseg, &nseg, &gb) == DDTK_OK);
        CHECK(ga == gb && nseg >= 1 && nseg <= maxseg);
        tables += nseg - 1;
        for (int64_t j = 0; j < ga && j < gb; j++) {
            CHECK(seg[j] >= 0 && seg[j] < nseg);
            const float *mul = tab + (int64_t)seg[j] * 2 * vals, *add = mul + vals;
            for (int64_t v = 0; v < vals; v++) {
                const float x = (float)((int)bytes[j * vals + v] - (sgn ? 128 : 0));
                const double d = fabs((double)fmaf(x, mul[v], add[v]) - f[j * vals + v]);
                worst = d > worst ? d : worst;
                largest = fabs(f[j * vals + v]) > largest ? fabs(f[j * vals + v]) : largest;
            }
        }
        total += ga;
    } while (ga == gulp && !check_failures);
    CHECK(total == a.nsamples && tables > 0);
    CHECK(worst <= 1e-6 * largest);
    printf("%lld spectra, %d row tables, largest difference %g of %g\n", (long long)total,
           tables, worst, largest);
    free(f);
    free(bytes);
    free(seg);
    free(tab);
    ddtk_input_close(&a);
    ddtk_input_close(&b);
    return check_result();
}
