/*
 * fuzz_inf - PRESTO .inf files, as fdas and tscrunch read them.
 */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddtk_inf inf;
    char *text = NULL;
    if (ddtk_inf_read(fuzz_path(data, size), &inf, &text) == DDTK_OK && !text)
        abort();
    free(text);
    return 0;
}
