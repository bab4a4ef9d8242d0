/*
 * fuzz_psrfits - inputs opened by content, seeded with PSRFITS search-mode
 * files (fbsim's layouts: 1-32 bits, NPOL 1/2/4, scales, a missing row):
 * open, read every spectrum in pieces, close. A file that opens must read
 * to its end or stop with an error, never past a buffer.
 */
#include "fuzz.h"

#define PIECE 100                 /* spectra a read */
#define MOST 100000               /* spectra read at most (a header may claim many) */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddtk_input in;
    if (ddtk_input_open(&in, fuzz_path(data, size)) != DDTK_OK) {
        ddtk_input_close(&in);    /* what a failed open holds, as the tools free it */
        return 0;
    }
    uint8_t *raw = malloc((size_t)ddtk_input_bytes(&in, PIECE));
    if (!raw)
        abort();
    int64_t got = 0, done = 0;
    while (done < MOST && ddtk_input_read(&in, raw, PIECE, &got) == DDTK_OK && got > 0)
        done += got;
    free(raw);
    ddtk_input_close(&in);
    return 0;
}
