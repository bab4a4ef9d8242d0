/*
 * fdas_resp.h - the z response of fdas's kernels (fdas_resp.c): Fresnel
 * integrals, PRESTO's response of a drifting signal, a template's half
 * width. Used by the kernels (the templates) and the search above them (the
 * amplitude at (r, z)). Not installed.
 */
#ifndef DDTK_FDAS_RESP_H
#define DDTK_FDAS_RESP_H

#include "ddtk.h"

DDTK_BEGIN_DECLS

/* Fresnel integrals C(x) = int_0^x cos(pi t^2/2) dt, S(x) likewise with sin. */
void ddtk_fresnel(double x, double *c, double *s);
/* PRESTO's z response at offset q bins from the average frequency. */
void ddtk_fdas_zresp(double q, double z, double *re, double *im);
int ddtk_fdas_halfwidth(double z);

DDTK_END_DECLS

#endif
