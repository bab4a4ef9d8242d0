/*
 * fuzz_cand - Heimdall .cand files, as spplot reads them: every candidate
 * accepted has what spplot relies on (a DM index, finite S/N, DM and time,
 * a width of at least one sample), and as many as the reader says.
 */
#include "fuzz.h"
#include "sps.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *fp = fmemopen((void *)data, size, "rb");
    if (!fp)
        return 0;                 /* fmemopen refuses size 0 */
    ddtk_sps_cand *c = NULL;
    int64_t n = -1;
    if (ddtk_sps_read_heimdall(fp, "fuzz", &c, &n) == DDTK_OK)
        for (int64_t i = 0; i < n; i++)
            if (c[i].dm_index < 0 || !isfinite(c[i].snr) || !isfinite(c[i].dm)
                || !isfinite(c[i].time) || c[i].width < 1)
                abort();
    free(c);
    fclose(fp);
    return 0;
}
