/*
 * fuzz_plan - --plan files (ddplan's TSV): a plan that is read is valid, and
 * a small one expands to its DM count.
 */
#include "fuzz.h"
#include "dmplan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddtk_dmplan p = { 0 };
    if (ddtk_dmplan_read(&p, fuzz_path(data, size)) == DDTK_OK) {
        int n = ddtk_dmplan_ndm(&p);
        if (ddtk_dmplan_validate(&p, "again") || n < 1 || n > DDTK_MAX_DMS)
            abort();
        if (n <= 100000) {        /* expanding 10^7 DMs per input would crawl */
            ddtk_dmlist l = { 0 };
            int *ds = NULL;
            if (ddtk_dmplan_expand(&p, &l, &ds) == DDTK_OK && l.n != n)
                abort();
            free(ds);
            ddtk_dmlist_free(&l);
        }
    }
    ddtk_dmplan_free(&p);
    return 0;
}
