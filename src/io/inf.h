/*
 * inf.h - private helpers of inf.c for PRESTO's .dat + .inf pairs, shared by
 * the library's writers and readers and by the tools: file-name suffixes, the
 * .inf beside a .dat, and opening a .dat as a one-channel input. Not installed.
 */
#ifndef DDTK_INF_H
#define DDTK_INF_H

#include "ddtk.h"

/* 1 if s ends with suffix. */
int ddtk_ends_with(const char *s, const char *suffix);
/* The .inf beside a .dat: "x.dat" -> "x.inf"; any other name gets ".inf"
 * appended. Allocated (caller frees); NULL when out of memory. */
char *ddtk_inf_path(const char *dat);
/* Open a PRESTO .dat (headerless native float32) as a one-channel 32-bit
 * input whose sample time comes from the .inf beside it; *inf gets that .inf
 * and *inf_text, if not NULL, its text; a length that differs from the .inf's
 * is a warning (the file size wins). in can be closed with
 * ddtk_input_close after a failure as well. */
int ddtk_dat_open(ddtk_input *in, const char *path, ddtk_inf *inf, char **inf_text);

#endif
