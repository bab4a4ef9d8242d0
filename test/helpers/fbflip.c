/*
 * fbflip - test helper: reverse the channel order of a filterbank (any nbits)
 * and describe the band with the opposite foff sign, so the copy holds the
 * same sky in the other band order.   fbflip IN OUT
 */
#include "ddtk.h"

#include <stdlib.h>
#include <string.h>

static unsigned get(const uint8_t *raw, int64_t e, int nbits)
{
    int64_t bit = e * nbits;
    if (nbits < 8)
        return (raw[bit >> 3] >> (bit & 7)) & ((1u << nbits) - 1u);
    unsigned v = 0;
    memcpy(&v, raw + bit / 8, (size_t)nbits / 8);
    return v;
}

static void put(uint8_t *raw, int64_t e, int nbits, unsigned v)
{
    int64_t bit = e * nbits;
    if (nbits < 8)
        raw[bit >> 3] = (uint8_t)((raw[bit >> 3] & ~(((1u << nbits) - 1u) << (bit & 7)))
                                  | (v << (bit & 7)));
    else
        memcpy(raw + bit / 8, &v, (size_t)nbits / 8);
}

int main(int argc, char **argv)
{
    ddtk_input in;
    if (argc != 3 || ddtk_input_open(&in, argv[1]))
        return 1;
    ddtk_header h;
    ddtk_header_copy(&h, &in.hdr);
    int nc = h.nchans, per = nc * h.nifs, nbits = h.nbits;
    h.fch1 = h.fch1 + (nc - 1) * h.foff;
    h.foff = -h.foff;
    for (int c = 0; c < h.nfreqs / 2; c++) {
        double f = h.freqs[c];
        h.freqs[c] = h.freqs[h.nfreqs - 1 - c];
        h.freqs[h.nfreqs - 1 - c] = f;
    }
    int64_t n = in.nsamples, bytes = ddtk_input_bytes(&in, n);
    uint8_t *a = malloc((size_t)bytes), *b = calloc((size_t)bytes, 1);
    int64_t got;
    ddtk_input_read(&in, a, n, &got);
    for (int64_t s = 0; s < n; s++)
        for (int i = 0; i < h.nifs; i++)
            for (int c = 0; c < nc; c++)
                put(b, s * per + i * nc + (nc - 1 - c), nbits, get(a, s * per + i * nc + c, nbits));
    FILE *fp = fopen(argv[2], "wb");
    ddtk_header_write(fp, &h);
    fwrite(b, 1, (size_t)bytes, fp);
    fclose(fp);
    free(a);
    free(b);
    ddtk_header_free(&h);
    ddtk_input_close(&in);
    return 0;
}
