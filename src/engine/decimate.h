/*
 * decimate.h - time decimation in the library (decimate.c), private to the
 * library and its tools (tscrunch is a command line around it).
 */
#ifndef DDTK_DECIMATE_H
#define DDTK_DECIMATE_H

#include "ddtk.h"

typedef struct ddtk_decimate_opts {
    int64_t n;                    /* samples per output sample, >= 1 */
    int mean;                     /* average instead of sum */
    int nbits_out;                /* 8 or 16: unsigned integers, value = result / S with S
                                     the smallest power of two that fits; 0 or 32: float */
    int keep;                     /* a last sample from the final partial group */
    int force;                    /* overwrite an existing output */
    int quiet;                    /* no scale note, no summary */
    const char *input;            /* SIGPROC file, .dat (with its .inf), PSRFITS, or NULL/"-":
                                     stdin */
    const char *const *inputs;    /* several: the PSRFITS files of one observation */
    int ninputs;
    const char *output;           /* NULL: stdout (SIGPROC input only) */
} ddtk_decimate_opts;

/* Decimate o->input into o->output (a .dat input writes a .dat and its .inf).
 * Unless quiet, notes the integer scale and ends with a summary, as messages (ddtk_report). */
int ddtk_decimate_file(const ddtk_decimate_opts *o);

#endif
