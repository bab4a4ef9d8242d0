/*
 * fuzz_mask - PRESTO rfifind masks (--mask), applied to a fixed 16-channel
 * 8-bit filterbank of 4096 spectra: the mask is read, checked against the
 * input and used over every spectrum; an input of odd length also runs
 * --rfi auto beside it.
 */
#include "fuzz.h"

#define NCHAN 16
#define NSPEC 4096

/* The filterbank, written once into its own memfd. */
static const char *filterbank(void)
{
    static char path[64];
    if (path[0])
        return path;
    int fd = memfd_create("ddtk-fuzz-fil", MFD_CLOEXEC);
    FILE *fp = fd < 0 ? NULL : fdopen(dup(fd), "wb");
    ddtk_header h;
    ddtk_header_init(&h);
    h.nchans = NCHAN;
    h.nbits = 8;
    h.nifs = 1;
    h.tsamp = 0.000256;
    h.fch1 = 1500;
    h.foff = -1;
    h.tstart = 60000;
    h.data_type = 1;
    static const char *const keys[] = { "data_type", "nchans", "nbits", "nifs", "tsamp",
                                        "fch1", "foff", "tstart" };
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
        if (ddtk_header_mark(&h, keys[k]) != DDTK_OK)
            abort();
    if (!fp || ddtk_header_write(fp, &h) != DDTK_OK)
        abort();
    for (int i = 0; i < NCHAN * NSPEC; i++)
        fputc((i * 7919 + i / NCHAN) & 255, fp);
    if (fclose(fp) != 0)
        abort();
    ddtk_header_free(&h);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddtk_input in;
    if (ddtk_input_open(&in, filterbank()) != DDTK_OK)
        abort();
    ddtk_clean_opts o;
    memset(&o, 0, sizeof o);
    o.mask = fuzz_path(data, size);
    o.auto_rfi = size & 1;
    if (ddtk_input_clean(&in, &o) == DDTK_OK) {
        uint8_t raw[NCHAN * 1000];
        int64_t got = 0;
        while (ddtk_input_read(&in, raw, 1000, &got) == DDTK_OK && got > 0)
            ;
    }
    ddtk_input_close(&in);
    return 0;
}
