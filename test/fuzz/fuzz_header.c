/*
 * fuzz_header - SIGPROC headers: read, validate, print, and write back; a
 * header that was read and validated must read and validate again.
 */
#include "fuzz.h"

#include <string.h>

/* Read and validate as ddtk_input_open does. */
static int read_valid(FILE *fp, ddtk_header *h)
{
    int rc = ddtk_header_read(fp, "fuzz", h);
    if (rc)
        return rc;
    if (!ddtk_header_has(h, "nchans") && h->data_type == 2)
        h->nchans = 1;
    return ddtk_header_validate(h, "fuzz");
}

static void round_trip(const ddtk_header *h)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&buf, &n);
    if (!fp || ddtk_header_write(fp, h) != DDTK_OK || fclose(fp) != 0)
        abort();
    ddtk_header again;
    FILE *in = fmemopen(buf, n, "rb");
    if (!in || read_valid(in, &again))
        abort();                  /* what was accepted once must be accepted again */
    fclose(in);
    ddtk_header_free(&again);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    if (!devnull && !(devnull = fopen("/dev/null", "w")))
        abort();
    ddtk_header h;
    FILE *fp = fmemopen((void *)data, size, "rb");
    if (!fp)
        return 0;                 /* fmemopen refuses size 0 */
    int rc = read_valid(fp, &h);
    fclose(fp);
    if (rc == DDTK_OK) {
        ddtk_header_print(devnull, &h, "fuzz", (int64_t)(size - (size_t)h.header_bytes));
        ddtk_header_print_key(devnull, &h, "fchannel", 0);
        for (int c = 0; c < h.nchans; c += 1 + h.nchans / 64)
            (void)ddtk_chan_freq(&h, c);
        round_trip(&h);
    }
    ddtk_header_free(&h);
    return 0;
}
