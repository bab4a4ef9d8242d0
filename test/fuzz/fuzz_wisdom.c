/*
 * fuzz_wisdom - wisdom files: an entry that is accepted for the key "k" holds
 * a configuration in ddtk_config_check's range, which resolves to positive
 * blocks the kernel can index, and with which the CPU kernel gives the same
 * sums as the plain loop on a small block (configurations change speed, never
 * output).
 */
#include "fuzz.h"
#include "internal.h"

enum { NCHAN = 5, NDM = 3, NOUT = 37, MAXD = 4 };

/* The kernel with config c on a fixed block against the plain sum. */
static void check_kernel(const ddtk_cpu_config *c)
{
    float in[NCHAN][NOUT + MAXD], out[NDM][NOUT];
    int32_t delay[NDM][NCHAN];
    for (int ch = 0; ch < NCHAN; ch++)
        for (int t = 0; t < NOUT + MAXD; t++)
            in[ch][t] = (float)((ch * 7 + t * 3) % 11);
    for (int d = 0; d < NDM; d++)
        for (int ch = 0; ch < NCHAN; ch++)
            delay[d][ch] = (d * ch) % (MAXD + 1);
    ddtk_direct_cpu(&in[0][0], NOUT + MAXD, NCHAN, NOUT, &delay[0][0], NDM, &out[0][0], NOUT, c);
    for (int d = 0; d < NDM; d++)
        for (int t = 0; t < NOUT; t++) {
            float sum = 0;
            for (int ch = 0; ch < NCHAN; ch++)
                sum += in[ch][t + delay[d][ch]];
            if (sum != out[d][t])       /* small integers: exact in any order */
                abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ddtk_plan_desc d;
    int found = 0;
    ddtk_plan_desc_init(&d);
    if (ddtk_wisdom_lookup(fuzz_path(data, size), "k", &d, &found) != DDTK_OK || !found)
        return 0;
    if (ddtk_config_check(&d.cpu, &d.gpu_config))
        abort();
    ddtk_cpu_config c = d.cpu;
    ddtk_cpu_config_resolve(&c);
    if (c.time_tile < 1 || c.dm_block < 1 || c.chan_block < 4 || c.chan_block % 4
        || c.chan_block > DDTK_CPU_BLOCK_MAX + 3)
        abort();
    check_kernel(&d.cpu);
    return 0;
}
