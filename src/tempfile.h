/*
 * tempfile.h - the temporaries behind outputs (tempfile.c), for output.c.
 */
#ifndef DDTK_TEMPFILE_H
#define DDTK_TEMPFILE_H

#include "ddtk.h"

#include <signal.h>

/* Devices and pipes (-o /dev/null, a FIFO) are written in place, never replaced. */
int ddtk_temp_is_special(const char *path);

#endif
