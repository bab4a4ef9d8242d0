/*
 * fuzz_killfile - killfiles (0/1 masks and index/range lists); the first
 * byte picks the channel count.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int nchans = 1 + data[0];
    uint8_t *kill = NULL;
    int nkilled = 0;
    if (ddtk_killfile_read(fuzz_path(data + 1, size - 1), nchans, &kill, &nkilled) == DDTK_OK) {
        int n = 0;
        for (int c = 0; c < nchans; c++)
            n += kill[c];
        if (n != nkilled || n >= nchans)
            abort();
    }
    free(kill);
    return 0;
}
