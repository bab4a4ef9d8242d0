/*
 * subband.c - two-stage sub-band dedispersion (Barsdell et al. 2012, section
 * 4.1; PRESTO prepsubband) as an engine plug-in, CPU side. Its GPU gulp is
 * cuda/subband_plugin.cu.
 *
 * The live channels are split into nsub sub-bands (the first nlive % nsub of
 * them one channel wider). The level's trial DMs are split into groups of
 * N'DM consecutive DMs, each with one nominal DM (the middle of the group's
 * DMs, or --sub-dm). Stage 1 dedisperses each sub-band at its group's nominal
 * DM with delays relative to the sub-band's highest channel; stage 2
 * dedisperses those nsub series at each trial DM with the delay of each
 * sub-band's highest channel. Both stages are the CPU direct kernel
 * (ddtk_direct_cpu) on strided rows. The level plan (the tables both halves
 * read) is a ddtk_subband_level (subband.h). Stage-1 delays are differences of the
 * direct delay table, so with N'DM = 1 (or one channel per sub-band) every
 * channel is summed at exactly its direct delay.
 *
 * The choice of nsub and N'DM, when not given, is the cheapest (sample-adds)
 * whose predicted extra smearing (Barsdell eq. B1 for a nominal DM in the
 * middle of its group: half the group's DM span times the delay change
 * across the widest-sweeping sub-band) keeps sqrt(W^2 + t^2) / W - 1 at most
 * max_smear_ratio at every trial, W being the direct smearing of a pulse of
 * DDTK_PULSE_WIDTH (ddtk_smear_row).
 */
#include "engine.h"
#include "internal.h"
#include "dmplan.h"
#include "subband.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <stdlib.h>
#include <string.h>

#define MAX_AUTO_GROUP 256

/* The parameters, in the order of the P_* indices. */
enum { P_NSUB, P_DM_GROUP, P_SUB_DM, P_MAX_SMEAR_RATIO };
static const ddtk_param_info params[] = {
    { "nsub", "sub-bands (default: the cheapest within the budget)", DDTK_PARAM_INT,
      0, 1, 1 << 20, 0, NULL, 0 },
    { "dm_group", "trial DMs per nominal DM, N'DM (default: as nsub)", DDTK_PARAM_INT,
      0, 1, 1 << 20, 0, NULL, 1 },
    { "sub_dm", "one nominal DM for every trial (prepsubband -subdm)", DDTK_PARAM_REAL,
      -1, 0, INFINITY, 0, NULL, 0 },
    { "max_smear_ratio", "extra smearing at most this times the direct smearing",
      DDTK_PARAM_REAL, 0.1, 0, INFINITY, 1, NULL, 0 },
};

/* What the tuner may vary (algo.h): the layout, within max_smear_ratio. The
 * groups go from the cheapest down, so that those past the budget (skipped
 * without a timing) come first. */
static const double nsub_values[] = { 4, 8, 16, 32, 64, 128, 256 };
static const double group_values[] = { 128, 64, 32, 16, 8, 4, 2, 1 };
static const ddtk_tunable tunables[] = {
    { "nsub", DDTK_TUNE_CPU | DDTK_TUNE_GPU, nsub_values, 7, 0 },
    { "dm_group", DDTK_TUNE_CPU | DDTK_TUNE_GPU, group_values, 8, 0 },
};

typedef ddtk_subband_level sb_state;

/* The CPU half's working memory (ddtk_level.cpu). */
typedef struct sb_cpu {
    float *buf;                     /* per thread: nsub series of one group, bstride apart */
    size_t bstride;
    int nbuf;
} sb_cpu;

/* The sub-band / group layout the plan asks for, resolved once per level. */
typedef struct sb_choice {
    int nsub, group;                /* group: N'DM, or 0 with sub_dm / dms_per_sub */
} sb_choice;

/* ---- parameters --------------------------------------------------------------- */

static double sub_dm(const ddtk_plan *p)
{
    return ddtk_param(p, P_SUB_DM);
}

static int dm_group(const ddtk_plan *p)
{
    return (int)ddtk_param(p, P_DM_GROUP);
}

static const int *dms_per_sub(const ddtk_plan *p)
{
    return ddtk_param_per_dm(p, P_DM_GROUP);
}

/* ---- layout ----------------------------------------------------------------- */

static void split_subbands(int nlive, int nsub, int *first)
{
    int base = nlive / nsub, extra = nlive % nsub;
    first[0] = 0;
    for (int s = 0; s < nsub; s++)
        first[s + 1] = first[s] + base + (s < extra);
}

/* Level DMs -> groups: N'DM at a time (per DM from dms_per_sub, a group
 * ending where the value changes), or one group with sub_dm. */
static int make_groups(const ddtk_plan *p, const ddtk_level *lv, int group, int *first)
{
    int n = 0;
    if (sub_dm(p) >= 0) {
        first[0] = 0;
        first[1] = lv->ndm;
        return 1;
    }
    for (int i = 0; i < lv->ndm; n++) {
        const int *per = dms_per_sub(p);
        int m = per ? per[lv->index[i]] : group, j = i + 1;
        while (j < lv->ndm && j - i < (m > 0 ? m : 1) && (!per || per[lv->index[j]] == m))
            j++;
        first[n] = i;
        i = j;
    }
    first[n] = lv->ndm;
    return n;
}

static double group_nominal(const ddtk_plan *p, const ddtk_level *lv, const int *first, int g)
{
    if (sub_dm(p) >= 0)
        return sub_dm(p);
    return 0.5 * (lv->dms[first[g]] + lv->dms[first[g + 1] - 1]);
}

/* ---- smearing budget ---------------------------------------------------------- */

/* The largest delay change (s per unit DM) across one sub-band. */
static double widest_sweep(const ddtk_plan *p, const int *sub_first, int nsub)
{
    double w = 0;
    for (int s = 0; s < nsub; s++) {
        double hi = p->ch.freq[sub_first[s]], lo = p->ch.freq[sub_first[s + 1] - 1];
        double sweep = p->d.kdm * (1.0 / (lo * lo) - 1.0 / (hi * hi));
        w = sweep > w ? sweep : w;
    }
    return w;
}

/* The direct smearing (s) of level DM i (ddplan's terms, step: the nearest DM). */
static double direct_smear(const ddtk_obs *o, const ddtk_level *lv, int i)
{
    double step = 0;
    for (int j = i - 1; j <= i + 1; j += 2)
        if (j >= 0 && j < lv->ndm) {
            double gap = fabs(lv->dms[j] - lv->dms[i]);
            step = step == 0 || (gap > 0 && gap < step) ? gap : step;
        }
    ddtk_dmplan_row r = { .dm_lo = lv->dms[i], .dm_step = step, .downsamp = 1 << lv->k,
                          .ndm = 1 };
    ddtk_smear sm;
    ddtk_smear_row(o, &r, DDTK_PULSE_WIDTH, &sm);
    return sm.direct;
}

/* Level k's DMs as the finished plan will hold them (the levels above the
 * one being created are not built yet), in scratch arrays of ndm entries. */
static void level_view(const ddtk_plan *p, int k, ddtk_level *v, double *dms, int *index)
{
    memset(v, 0, sizeof *v);
    v->k = k;
    v->dms = dms;
    v->index = index;
    for (int i = 0; i < p->d.ndm; i++)
        if ((p->downsamp ? p->downsamp[i] : 1) == 1 << k) {
            v->dms[v->ndm] = p->dms[i];
            v->index[v->ndm++] = i;
        }
}

typedef struct sb_eval {
    double ratio, extra, adds;
    double lv_ratio[DDTK_MAX_LEVELS], lv_extra[DDTK_MAX_LEVELS];   /* per level */
} sb_eval;

/* Predicted smearing and sample-adds (per input sample) of a choice over all levels. */
typedef struct sb_scratch {
    int *sub_first, *first, *index;
    double *dms;
    double *direct;                 /* per plan DM: its direct smearing */
} sb_scratch;

static void evaluate(const ddtk_plan *p, sb_choice c, sb_scratch *w, sb_eval *e)
{
    int *first = w->first;
    split_subbands(p->ch.nlive, c.nsub, w->sub_first);
    double sweep = widest_sweep(p, w->sub_first, c.nsub);
    memset(e, 0, sizeof *e);
    for (int k = 0; k < p->nlevels; k++) {
        ddtk_level view, *lv = &view;
        level_view(p, k, lv, w->dms, w->index);
        if (!lv->ndm)
            continue;
        int ng = make_groups(p, lv, c.group, first);
        e->adds += ((double)p->ch.nlive * ng + (double)lv->ndm * c.nsub) / (1 << k);
        for (int g = 0; g < ng; g++) {
            double nom = group_nominal(p, lv, first, g);
            for (int i = first[g]; i < first[g + 1]; i++) {
                double t = fabs(lv->dms[i] - nom) * sweep, wd = w->direct[lv->index[i]];
                double ratio = sqrt(wd * wd + t * t) / wd - 1.0;
                e->lv_ratio[k] = ratio > e->lv_ratio[k] ? ratio : e->lv_ratio[k];
                e->lv_extra[k] = t > e->lv_extra[k] ? t : e->lv_extra[k];
            }
        }
        e->ratio = e->lv_ratio[k] > e->ratio ? e->lv_ratio[k] : e->ratio;
        e->extra = e->lv_extra[k] > e->extra ? e->lv_extra[k] : e->extra;
    }
}

static int check_choice(const ddtk_plan *p, sb_choice c)
{
    if (c.nsub > p->ch.nlive)
        return ddtk_fail(DDTK_EUSAGE, "nsub %d exceeds the input's %d live channels",
                         c.nsub, p->ch.nlive);
    if (sub_dm(p) >= 0 && (dm_group(p) > 0 || dms_per_sub(p)))
        return ddtk_fail(DDTK_EUSAGE, "sub_dm gives one nominal DM for every trial; "
                         "it cannot be combined with DM groups");
    return DDTK_OK;
}

/* The given nsub / N'DM, the others the cheapest within the budget. */
static int choose(const ddtk_plan *p, sb_choice *best, sb_eval *be)
{
    const int nsub = (int)ddtk_param(p, P_NSUB), group = dm_group(p);
    sb_choice c = { nsub, group };
    int rc = check_choice(p, c);
    if (rc)
        return rc;
    ddtk_obs o;
    if ((rc = ddtk_obs_init(&o, p->ch.nchans, p->ch.fmax, -p->ch.chan_bw, p->d.tsamp, 0,
                            p->d.kdm)))
        return rc;
    sb_scratch w = {
        .sub_first = ddtk_malloc((size_t)(p->ch.nlive + 1) * sizeof *w.sub_first, "sub-bands"),
        .first = ddtk_malloc((size_t)(p->d.ndm + 1) * sizeof *w.first, "DM groups"),
        .index = ddtk_malloc((size_t)p->d.ndm * sizeof *w.index, "DM groups"),
        .dms = ddtk_malloc((size_t)p->d.ndm * sizeof *w.dms, "DM groups"),
        .direct = ddtk_malloc((size_t)p->d.ndm * sizeof *w.direct, "DM groups"),
    };
    if (!w.sub_first || !w.first || !w.index || !w.dms || !w.direct)
        rc = DDTK_ESYS;
    for (int k = 0; !rc && k < p->nlevels; k++) {
        ddtk_level lv;
        level_view(p, k, &lv, w.dms, w.index);
        for (int i = 0; i < lv.ndm; i++)
            w.direct[lv.index[i]] = direct_smear(&o, &lv, i);
    }
    double budget = ddtk_param(p, P_MAX_SMEAR_RATIO);
    int fixed_group = sub_dm(p) >= 0 || dms_per_sub(p) || group > 0;
    int found = 0;
    const int m_lo = fixed_group ? group : 1, m_hi = fixed_group ? m_lo : MAX_AUTO_GROUP;
    for (int n = nsub > 0 ? nsub : 1; !rc && n <= p->ch.nlive; n *= 2) {
        for (int m = m_lo; m <= m_hi; m++) {
            sb_choice t = { n, m };
            sb_eval e;
            evaluate(p, t, &w, &e);
            /* Beyond the budget only a fully given choice is kept; else the
             * exact layout of one channel per sub-band is the fallback. */
            int ok = e.ratio <= budget || (nsub > 0 && fixed_group);
            if (ok && (!found || e.adds < be->adds)) {
                *best = t;
                *be = e;
                found = 1;
            }
        }
        if (nsub > 0)
            break;
    }
    if (!rc && !found) {
        *best = (sb_choice){ p->ch.nlive, fixed_group ? group : 1 };
        evaluate(p, *best, &w, be);
    }
    free(w.sub_first);
    free(w.first);
    free(w.index);
    free(w.dms);
    free(w.direct);
    return rc;
}

/* ---- the plug-in -------------------------------------------------------------- */

static void destroy(ddtk_level *lv)
{
    sb_state *s = lv->state;
    sb_cpu *c = lv->cpu;
    if (s) {
        free(s->sub_first);
        free(s->group_first);
        free(s->nominal);
        free(s->d1);
        free(s->d2);
        free(s->width2);
    }
    if (c)
        free(c->buf);
    free(s);
    free(c);
    lv->state = lv->cpu = NULL;
}

/* Channel c's stage-1 delay at nominal DM `nom` below its sub-band's top
 * channel `top`: a difference of the direct table's rounded delays (`diff`),
 * so that one trial per nominal DM reproduces dd_direct exactly; with
 * --sub-dm, prepsubband's rule instead, the delay difference rounded once
 * (PRESTO's subband_search_delays), so that the series equal its arithmetic. */
static int32_t stage1_delay(const ddtk_plan *p, const ddtk_delays *d, double nom, int c, int top,
                            int32_t diff)
{
    if (sub_dm(p) < 0)
        return diff;
    return ddtk_round_delay(nom * (d->per_dm[c] - d->per_dm[top]), p->d.rounding);
}

/* d1 from the nominal DMs' delay table, d2 from the trials'; the overlap is
 * the largest d1 + d2 any output reads. */
static int delay_tables(const ddtk_plan *p, ddtk_level *lv, sb_state *s)
{
    ddtk_delays nom = { 0 }, tri = { 0 };
    int rc = ddtk_delays_init(&nom, &p->ch, lv->tsamp, s->nominal, s->ngroups, p->d.kdm,
                              p->d.rounding);
    if (!rc)
        rc = ddtk_delays_init(&tri, &p->ch, lv->tsamp, lv->dms, lv->ndm, p->d.kdm,
                              p->d.rounding);
    const int nl = s->nlive, ns = s->nsub;
    s->d1 = ddtk_malloc((size_t)s->ngroups * nl * sizeof *s->d1, "stage-1 delays");
    s->d2 = ddtk_malloc((size_t)lv->ndm * ns * sizeof *s->d2, "stage-2 delays");
    s->width2 = ddtk_calloc((size_t)s->ngroups * ns, sizeof *s->width2, "stage-2 delays");
    if (!rc && (!s->d1 || !s->d2 || !s->width2))
        rc = DDTK_ESYS;
    for (int g = 0; !rc && g < s->ngroups; g++)
        for (int b = 0; b < ns; b++) {
            const int32_t *row = nom.delay + (size_t)g * nl;
            int32_t top = row[s->sub_first[b]], d1max = 0, *w = &s->width2[g * ns + b];
            for (int c = s->sub_first[b]; c < s->sub_first[b + 1]; c++) {
                int32_t d = stage1_delay(p, &nom, s->nominal[g], c, s->sub_first[b], row[c] - top);
                s->d1[(size_t)g * nl + c] = d;
                d1max = d > d1max ? d : d1max;
            }
            for (int i = s->group_first[g]; i < s->group_first[g + 1]; i++) {
                int32_t d2 = tri.delay[(size_t)i * nl + s->sub_first[b]];
                s->d2[(size_t)i * ns + b] = d2;
                *w = d2 > *w ? d2 : *w;
            }
            s->max2 = *w > s->max2 ? *w : s->max2;
            lv->overlap = *w + d1max > lv->overlap ? *w + d1max : lv->overlap;
        }
    /* Never more outputs than direct gives for the same DMs. */
    lv->overlap = tri.maxdelay > lv->overlap ? tri.maxdelay : lv->overlap;
    if (!rc && s->d1 && s->d1[0] < 0)
        rc = ddtk_fail(DDTK_EUSAGE, "sub-band delays need DMs >= 0");
    ddtk_delays_free(&nom);
    ddtk_delays_free(&tri);
    return rc;
}

static void report(const ddtk_plan *p, const ddtk_level *lv, const sb_state *s)
{
    if (!p->d.verbose || lv->k != p->first || lv->view)
        return;
    ddtk_subband_info in;
    ddtk_plan_subband_info(p, &in);
    ddtk_report(DDTK_MSG_VERBOSE, "sub-band: %d sub-bands of up to %d channels, N'DM %d, %d "
                "nominal DMs; predicted extra smearing <= %.3g ms (%.1f%% of direct), work "
                "1/%.1f of direct",
                in.nsub, in.chans_per_sub, in.dm_group, in.nnominal, in.max_extra * 1e3,
                in.max_ratio * 100, in.work_ratio);
    (void)s;
}

static int create(const ddtk_plan *p, ddtk_level *lv)
{
    sb_state *s = ddtk_calloc(1, sizeof *s, "sub-band plan");
    if (!s)
        return DDTK_ESYS;
    lv->state = s;
    sb_choice c;
    sb_eval e;
    int rc = choose(p, &c, &e);
    if (rc)
        return rc;
    s->nsub = c.nsub;
    s->nlive = p->ch.nlive;
    s->max_ratio = e.ratio;
    s->max_extra = e.extra;
    s->lv_ratio = e.lv_ratio[lv->k];
    s->lv_extra = e.lv_extra[lv->k];
    s->work = e.adds;
    s->sub_first = ddtk_malloc((size_t)(s->nsub + 1) * sizeof *s->sub_first, "sub-bands");
    s->group_first = ddtk_malloc((size_t)(lv->ndm + 1) * sizeof *s->group_first, "DM groups");
    s->nominal = ddtk_malloc((size_t)lv->ndm * sizeof *s->nominal, "nominal DMs");
    if (!s->sub_first || !s->group_first || !s->nominal)
        return DDTK_ESYS;
    split_subbands(s->nlive, s->nsub, s->sub_first);
    s->ngroups = make_groups(p, lv, c.group, s->group_first);
    for (int g = 0; g < s->ngroups; g++)
        s->nominal[g] = group_nominal(p, lv, s->group_first, g);
    lv->overlap = 0;
    if ((rc = delay_tables(p, lv, s)))
        return rc;
    report(p, lv, s);
    return DDTK_OK;
}

/* One intermediate buffer per thread: threads take whole groups. */
static int buffers(void)
{
    return ddtk_threads();
}

static size_t buffer_stride(const sb_state *s, int64_t most)
{
    return (size_t)ddtk_round_up(most + s->max2, 16);
}

static int64_t cpu_bytes(const ddtk_level *lv, int64_t most)
{
    const sb_state *s = lv->state;
    return (int64_t)buffers() * s->nsub * (int64_t)buffer_stride(s, most) * 4;
}

static int cpu_reserve(ddtk_level *lv, int64_t most)
{
    const sb_state *s = lv->state;
    sb_cpu *c = lv->cpu;
    if (!c && !(c = lv->cpu = ddtk_calloc(1, sizeof *c, "sub-band series")))
        return DDTK_ESYS;
    free(c->buf);
    c->nbuf = buffers();
    c->bstride = buffer_stride(s, most);
    c->buf = ddtk_malloc_large((size_t)c->nbuf * s->nsub * c->bstride * sizeof *c->buf,
                               "sub-band series");
    return c->buf ? DDTK_OK : DDTK_ESYS;
}

static double now(void)
{
#ifdef _OPENMP
    return omp_get_wtime();
#else
    return 0;
#endif
}

static void group_gulp(const ddtk_plan *p, ddtk_level *lv, int g, float *buf,
                       const float *rows, size_t stride, int64_t nout, float *out, size_t ostride)
{
    const sb_state *s = lv->state;
    const size_t bstride = ((const sb_cpu *)lv->cpu)->bstride;
    const int i0 = s->group_first[g], n = s->group_first[g + 1] - i0;
    double t0 = now();
    for (int b = 0; b < s->nsub; b++) {
        const int c0 = s->sub_first[b];
        ddtk_direct_cpu(rows + (size_t)c0 * stride, stride, s->sub_first[b + 1] - c0,
                        nout + s->width2[g * s->nsub + b], s->d1 + (size_t)g * s->nlive + c0, 1,
                        buf + b * bstride, bstride, &p->d.cpu);
    }
    double t1 = now();
    ddtk_direct_cpu(buf, bstride, s->nsub, nout, s->d2 + (size_t)i0 * s->nsub, n,
                    out + (size_t)i0 * ostride, ostride, &p->d.cpu);
    double t2 = now();
#pragma omp atomic
    lv->stage_s[0] += t1 - t0;
#pragma omp atomic
    lv->stage_s[1] += t2 - t1;
}

/* Threads take groups (the direct kernel then runs serially in each); with
 * fewer groups than buffers the kernel's own threads take its tiles. */
static void cpu_gulp(const ddtk_plan *p, ddtk_level *lv, const float *rows, size_t stride,
                     int64_t nout, float *out, size_t ostride)
{
    const sb_state *s = lv->state;
    const sb_cpu *c = lv->cpu;
#pragma omp parallel for schedule(dynamic) if (s->ngroups >= c->nbuf && c->nbuf > 1) \
    num_threads(ddtk_threads())
    for (int g = 0; g < s->ngroups; g++) {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        group_gulp(p, lv, g, c->buf + (size_t)t * s->nsub * c->bstride, rows, stride, nout, out,
                   ostride);
    }
}

/* Add level k's figures to info: its smearing, or the plan's when `whole`. */
static double add_level(const ddtk_plan *p, int k, int whole, ddtk_subband_info *info)
{
    const ddtk_level *lv = &p->lv[k];
    const sb_state *s = lv->state;
    info->nsub = s->nsub;
    info->chans_per_sub = s->sub_first[1] - s->sub_first[0];
    info->dm_group = s->group_first[1] - s->group_first[0];
    info->nnominal += s->ngroups;
    info->max_ratio = whole ? s->max_ratio : s->lv_ratio;
    info->max_extra = whole ? s->max_extra : s->lv_extra;
    info->stage1_s += lv->stage_s[0];
    info->stage2_s += lv->stage_s[1];
    for (int i = 0; i < lv->ndm; i++) {
        info->dm_lo = info->downsamp && info->dm_lo < lv->dms[i] ? info->dm_lo : lv->dms[i];
        info->dm_hi = info->downsamp && info->dm_hi > lv->dms[i] ? info->dm_hi : lv->dms[i];
        info->downsamp = 1 << k;
    }
    return (double)p->ch.nlive * lv->ndm / (1 << k);
}

static int subband_plan(const ddtk_plan *p)
{
    if (strcmp(p->algo->name, "subband") != 0)
        return ddtk_fail(DDTK_EUSAGE, "plan: not a sub-band plan");
    return DDTK_OK;
}

int ddtk_plan_subband_info(const ddtk_plan *p, ddtk_subband_info *info)
{
    memset(info, 0, sizeof *info);
    int rc = subband_plan(p);
    double direct = 0, work = 0;
    for (int k = 0; !rc && k < p->nlevels; k++) {
        const sb_state *s = p->lv[k].state;
        if (!p->lv[k].ndm || !s)
            continue;
        direct += add_level(p, k, 1, info);
        work = s->work;
    }
    info->work_ratio = work > 0 ? direct / work : 1.0;
    info->downsamp = 0;
    return rc;
}

int ddtk_plan_subband_level(const ddtk_plan *p, int k, ddtk_subband_info *info)
{
    memset(info, 0, sizeof *info);
    int rc = subband_plan(p);
    if (!rc && (k < 0 || k >= DDTK_MAX_LEVELS))
        return ddtk_fail(DDTK_EUSAGE, "plan: no scrunch level %d", k);
    if (!rc && k < p->nlevels && p->lv[k].ndm && p->lv[k].state)
        add_level(p, k, 0, info);
    return rc;
}

/* The multi-GPU split: a group's DMs share its stage 1, so a device's share
 * starts at a group; a DM costs its nsub stage-2 adds and its part of the
 * group's nlive stage-1 adds, per output sample (a direct DM: nlive). */
static double split_cost(const ddtk_level *lv, int i, int *start)
{
    const sb_state *s = lv->state;
    int lo = 0, hi = s->ngroups;
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (s->group_first[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    *start = s->group_first[lo] == i;
    int size = s->group_first[lo + 1] - s->group_first[lo];
    return ((double)s->nsub + (double)s->nlive / size) / s->nlive;
}

/* The tuner's check of a layout it chose: the predicted extra smearing of
 * the whole plan within max_smear_ratio (a fully given layout is kept
 * past it; a tuned one is not). */
static int within_budget(const ddtk_plan *p)
{
    for (int k = 0; k < p->nlevels; k++) {
        const sb_state *s = p->lv[k].state;
        if (p->lv[k].ndm && s)
            return s->max_ratio <= ddtk_param(p, P_MAX_SMEAR_RATIO);
    }
    return 1;
}

/* ---- ddplan's model ---------------------------------------------------------- */

/* B1: the nominal-DM spacing (dms_per_sub DM steps, else as many as the
 * channels of a sub-band) times the delay change across the lowest sub-band. */
static double model_smear(const ddtk_obs *o, const ddtk_dmplan_row *r, int chans_per_sub)
{
    double sub_bw = chans_per_sub * o->chan_bw, flo = o->flo;
    int per_sub = r->dms_per_sub ? r->dms_per_sub : chans_per_sub;
    return per_sub * r->dm_step * o->kdm * (1.0 / (flo * flo) - 1.0 / ((flo + sub_bw)
                                                                      * (flo + sub_bw)));
}

/* Barsdell 4.2: every channel once per nominal DM, then one add per
 * sub-band per DM. */
static double model_adds(const ddtk_obs *o, int ndm, int dms_per_sub, int chans_per_sub)
{
    int per_sub = dms_per_sub ? dms_per_sub : chans_per_sub;
    int nsub = (o->nchans + chans_per_sub - 1) / chans_per_sub;
    return ceil((double)ndm / per_sub) * o->nchans + (double)ndm * nsub;
}

extern const struct ddtk_gpu_algo ddtk_gpu_subband;

const ddtk_algo ddtk_algo_subband = {
    .name = "subband",
    .label = "sub-band",
    .model_smear = model_smear,
    .model_adds = model_adds,
    .params = params,
    .nparams = (int)(sizeof params / sizeof params[0]),
    .tune = DDTK_TUNE_DIRECT_KERNEL,
    .tunables = tunables,
    .ntunables = (int)(sizeof tunables / sizeof tunables[0]),
    .within_budget = within_budget,
    .create = create,
    .cpu_gulp = cpu_gulp,
    .destroy = destroy,
    .cpu_reserve = cpu_reserve,
    .split_cost = split_cost,
    .cpu_bytes = cpu_bytes,
    .gpu = DDTK_GPU_HALF(ddtk_gpu_subband),
};
