/*
 * algo.c - the registry of algorithms (one line each) and their parameters'
 * public face: setting, checking and reading them by name on a plan
 * description, and by index in a plan (algo.h says how to add an algorithm).
 */
#include "engine.h"

#include <math.h>
#include <string.h>

extern const ddtk_algo ddtk_algo_direct, ddtk_algo_subband, ddtk_algo_tree, ddtk_algo_fdmt;

/* The registry: in this order in ddtk_algorithm, the tools' messages and ddplan. */
static const ddtk_algo *const algorithms[] = {
    &ddtk_algo_direct,
    &ddtk_algo_subband,
    &ddtk_algo_tree,
    &ddtk_algo_fdmt,
};
#define NALGORITHMS ((int)(sizeof algorithms / sizeof algorithms[0]))

const char *ddtk_algorithm(int i)
{
    return i >= 0 && i < NALGORITHMS ? algorithms[i]->name : NULL;
}

const char *ddtk_algorithm_label(int i)
{
    return i >= 0 && i < NALGORITHMS ? algorithms[i]->label : NULL;
}

const ddtk_algo *ddtk_algo_find(const char *name)
{
    for (int i = 0; i < NALGORITHMS; i++)
        if (strcmp(algorithms[i]->name, name ? name : "direct") == 0)
            return algorithms[i];
    return NULL;
}

/* "direct, subband, tree or fdmt", for messages. */
static void names(char *s, size_t n)
{
    s[0] = '\0';
    for (int i = 0; i < NALGORITHMS; i++)
        snprintf(s + strlen(s), n - strlen(s), "%s%s", i == 0 ? "" : i + 1 < NALGORITHMS
                 ? ", " : " or ", algorithms[i]->name);
}

static int find_algo(const char *name, const ddtk_algo **a)
{
    char known[256];
    if ((*a = ddtk_algo_find(name)))
        return DDTK_OK;
    names(known, sizeof known);
    return ddtk_fail(DDTK_EUSAGE, "unknown algorithm '%s' (expected %s)", name, known);
}

int ddtk_algorithm_param(const char *algorithm, int i, ddtk_param_info *info)
{
    const ddtk_algo *a;
    int rc = find_algo(algorithm, &a);
    if (rc)
        return rc;
    if (i < 0 || i >= a->nparams)
        return ddtk_fail(DDTK_EUSAGE, "the %s algorithm has no parameter %d", a->name, i);
    *info = a->params[i];
    return DDTK_OK;
}

int ddtk_plan_desc_set_algorithm(ddtk_plan_desc *d, const char *name)
{
    const ddtk_algo *a;
    int rc = find_algo(name, &a);
    if (rc)
        return rc;
    d->algorithm = a->name;
    memset(d->param, 0, sizeof d->param);
    memset(d->param_per_dm, 0, sizeof d->param_per_dm);
    d->param_set = 0;
    return DDTK_OK;
}

int ddtk_algo_param(const ddtk_algo *a, const char *name)
{
    for (int i = 0; i < a->nparams; i++)
        if (strcmp(a->params[i].name, name) == 0)
            return i;
    return -1;
}

/* The index of d's algorithm's parameter `name`. */
static int param_index(const ddtk_plan_desc *d, const char *name, const ddtk_algo **a, int *i)
{
    int rc = find_algo(d->algorithm, a);
    if (rc)
        return rc;
    if ((*i = ddtk_algo_param(*a, name)) >= 0)
        return DDTK_OK;
    return ddtk_fail(DDTK_EUSAGE, "the %s algorithm has no parameter '%s'", (*a)->name, name);
}

/* A value the parameter may be given: in range, whole for integers and choices. */
static int check_value(const ddtk_param_info *pi, double v)
{
    if (pi->type != DDTK_PARAM_REAL && v != floor(v))
        return ddtk_fail(DDTK_EUSAGE, "%s %g: must be a whole number", pi->name, v);
    if (!(pi->lo_open ? v > pi->lo : v >= pi->lo) || !(v <= pi->hi))
        return isinf(pi->hi) ? ddtk_fail(DDTK_EUSAGE, "%s %g: must be %s %g", pi->name, v,
                                         pi->lo_open ? ">" : ">=", pi->lo)
                             : ddtk_fail(DDTK_EUSAGE, "%s %g: must be from %g to %g", pi->name,
                                         v, pi->lo, pi->hi);
    return DDTK_OK;
}

int ddtk_plan_desc_set_param(ddtk_plan_desc *d, const char *name, double value)
{
    const ddtk_algo *a;
    int i, rc = param_index(d, name, &a, &i);
    if (!rc)
        rc = check_value(&a->params[i], value);
    if (!rc) {
        d->param[i] = value;
        d->param_set |= 1u << i;
    }
    return rc;
}

int ddtk_plan_desc_set_param_per_dm(ddtk_plan_desc *d, const char *name, const int *values)
{
    const ddtk_algo *a;
    int i, rc = param_index(d, name, &a, &i);
    if (!rc && !a->params[i].per_dm)
        rc = ddtk_fail(DDTK_EUSAGE, "%s: not a per-DM parameter of the %s algorithm", name,
                       a->name);
    if (!rc) {
        d->param_per_dm[i] = values;
        d->param_set |= values ? 1u << i : 0;
    }
    return rc;
}

int ddtk_plan_desc_get_param(const ddtk_plan_desc *d, const char *name, double *value)
{
    const ddtk_algo *a;
    int i, rc = param_index(d, name, &a, &i);
    if (!rc)
        *value = d->param_set & (1u << i) ? d->param[i] : a->params[i].def;
    return rc;
}

int ddtk_plan_desc_own_dms(ddtk_plan_desc *d, double dm_min, double dm_max, double width,
                           int scrunch, double **dms, int **downsamp, int *ndm)
{
    const ddtk_algo *a;
    ddtk_channels ch;
    int rc = find_algo(d->algorithm, &a);
    *dms = NULL;
    *downsamp = NULL;
    *ndm = 0;
    if (!rc && !a->own_dms)
        rc = ddtk_fail(DDTK_EUSAGE, "the %s algorithm has no DM list of its own", a->name);
    if (!rc && (d->nchans < 1 || !d->freqs))
        rc = ddtk_fail(DDTK_EUSAGE, "no channels to list the DMs of");
    if (rc || (rc = ddtk_channels_from_freqs(&ch, d->nchans, d->freqs, d->chan_bw, NULL,
                                             d->fref)))
        return rc;
    rc = a->own_dms(d, &ch, dm_min, dm_max, width, scrunch, dms, downsamp, ndm);
    ddtk_channels_free(&ch);
    return rc;
}

int ddtk_algorithm_own_dms(const char *algorithm)
{
    const ddtk_algo *a = ddtk_algo_find(algorithm);
    return a && a->own_dms;
}

/* ---- in a plan ---------------------------------------------------------------- */

int ddtk_param_given(const ddtk_plan *p, int i)
{
    return (p->d.param_set >> i) & 1u;
}

double ddtk_param(const ddtk_plan *p, int i)
{
    return ddtk_param_given(p, i) && !p->d.param_per_dm[i] ? p->d.param[i]
                                                           : p->algo->params[i].def;
}

const int *ddtk_param_per_dm(const ddtk_plan *p, int i)
{
    return p->d.param_per_dm[i];
}

int ddtk_params_check(const ddtk_plan_desc *d)
{
    const ddtk_algo *a;
    int rc = find_algo(d->algorithm, &a);
    for (int i = 0; !rc && i < a->nparams; i++) {
        if (!(d->param_set & (1u << i)))
            continue;
        if (!d->param_per_dm[i])
            rc = check_value(&a->params[i], d->param[i]);
        for (int j = 0; !rc && d->param_per_dm[i] && j < d->ndm; j++)
            rc = check_value(&a->params[i], d->param_per_dm[i][j]);
    }
    if (!rc && d->param_set >> a->nparams)
        rc = ddtk_fail(DDTK_EUSAGE, "a parameter the %s algorithm does not have is set",
                       a->name);
    return rc;
}
