/*
 * fuzz_dmlist - DM lists: --dm-list files and --dm values. Every DM accepted
 * is finite and >= 0.
 */
#include "fuzz.h"

#include <math.h>

static void check(const ddtk_dmlist *l)
{
    for (int i = 0; i < l->n; i++)
        if (!isfinite(l->dm[i]) || l->dm[i] < 0)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddtk_dmlist l = { 0 };
    if (ddtk_dmlist_file(&l, fuzz_path(data, size)) == DDTK_OK)
        check(&l);
    ddtk_dmlist_free(&l);
    char *text = fuzz_text(data, size);
    if (ddtk_dmlist_parse(&l, text) == DDTK_OK)
        check(&l);
    ddtk_dmlist_free(&l);
    free(text);
    return 0;
}
