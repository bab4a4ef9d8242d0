/*
 * htru_plan.h - a direct plan of htru's set-up for unit tests of what the
 * engine predicts from a plan (the multi-GPU split, the GPU chooser).
 */
#ifndef DDTK_HTRU_PLAN_H
#define DDTK_HTRU_PLAN_H

#include "check.h"
#include "engine.h"

#include <stdlib.h>

/* A direct plan of htru's set-up (SPEC section 6): 1024 channels of 2 bits,
 * 64 us, the 0-1000 tolerance list; scrunch: --scrunch auto's factors. */
static ddtk_plan *htru_plan(int scrunch, ddtk_dmlist *l, int **ds)
{
    ddtk_obs o;
    static double f[1024];
    CHECK(!ddtk_obs_init(&o, 1024, 1581.8, -0.390625, 64e-6, 0, DDTK_KDM_DEFAULT));
    CHECK(!ddtk_dmlist_tol(l, 0, 1000, o.tsamp, 40, 1.25, o.fctr, o.chan_bw, o.nchans));
    *ds = malloc((size_t)l->n * sizeof **ds);
    for (int i = 0; i < l->n; i++)
        (*ds)[i] = scrunch ? ddtk_scrunch_factor(&o, l->dm[i]) : 1;
    for (int c = 0; c < 1024; c++)
        f[c] = 1581.8 - 0.390625 * c;
    ddtk_plan_desc d;
    ddtk_plan *p = NULL;
    ddtk_plan_desc_init(&d);
    d.nchans = 1024;
    d.tsamp = o.tsamp;
    d.chan_bw = 0.390625;
    d.nbits = 2;
    d.freqs = f;
    d.dms = l->dm;
    d.ndm = l->n;
    d.downsamp = *ds;
    d.backend = DDTK_BACKEND_CPU;
    d.quiet = 1;
    CHECK(ddtk_plan_create(&p, &d) == DDTK_OK);
    return p;
}

#endif
