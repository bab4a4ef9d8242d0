/*
 * sim_file.h - a simulated filterbank for unit tests that need a file: the
 * header (256 us samples from 1500 MHz, the filterbank keywords marked for
 * writing) and noise at the format's levels; the caller adds pulses and RFI
 * between sim_file_init and sim_file_write.
 */
#ifndef DDTK_SIM_FILE_H
#define DDTK_SIM_FILE_H

#include "check.h"
#include "internal.h"

#include <math.h>
#include <string.h>

static void sim_file_init(ddtk_sim *s, int nchans, int nbits, int nifs, double foff,
                          int64_t nsamples, unsigned long seed)
{
    static const char *keys[] = { "source_name", "data_type", "fch1", "foff", "nchans",
                                  "nbeams", "nbits", "tstart", "tsamp", "nifs" };
    memset(s, 0, sizeof *s);
    ddtk_header_init(&s->hdr);
    s->hdr.nchans = nchans;
    s->hdr.nbits = nbits;
    s->hdr.nifs = nifs;
    s->hdr.tsamp = 0.000256;
    s->hdr.fch1 = 1500;
    s->hdr.foff = foff;
    s->hdr.data_type = 1;
    s->hdr.nbeams = 1;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        ddtk_header_mark(&s->hdr, keys[i]);
    s->nsamples = nsamples;
    s->mean = s->sigma = NAN;
    s->seed = seed;
    s->kdm = DDTK_KDM_DEFAULT;
}

/* s written to path (checked), its header freed. */
static void sim_file_write(ddtk_sim *s, const char *path)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp && ddtk_sim_write(s, fp, path) == DDTK_OK);
    if (fp)
        fclose(fp);
    ddtk_header_free(&s->hdr);
}

#endif
