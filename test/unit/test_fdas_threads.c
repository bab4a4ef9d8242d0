/*
 * test_fdas_threads.c - two fdas plans in one process are independent: plans
 * of different lengths and zmax (so different block FFT lengths), created and
 * executed at the same time on two threads, give exactly the candidates that
 * each plan gives when it runs alone, and keep doing so on a second round.
 */
#include "fdas.h"
#include "check.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define TSAMP 1e-3
#define MAXCANDS 256

typedef struct job {
    int64_t n;
    double zmax;
    uint64_t seed;
    float *x;
    ddtk_fdas_plan *plan;
    ddtk_fdas_cand cands[MAXCANDS];
    int ncands, rc;
} job;

static double uniform(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return ((*s >> 11) + 0.5) / 9007199254740992.0;
}

/* Noise plus a drifting 10%-duty pulsar, so that every plan has candidates. */
static void make_series(job *j)
{
    uint64_t s = j->seed * 2654435761u + 88172645463325252ull;
    double T = j->n * TSAMP, f0 = 1000.3 / T, fdot = 30.0 / (T * T), sig = 0.1 / 2.354820045;
    j->x = malloc(sizeof(float) * (size_t)j->n);
    for (int64_t i = 0; i < j->n; i++) {
        double t = i * TSAMP, ph = f0 * t + 0.5 * fdot * t * t, d = ph - floor(ph + 0.5);
        double g = sqrt(-2 * log(uniform(&s))) * cos(2 * M_PI * uniform(&s));
        j->x[i] = (float)(0.5 * exp(-0.5 * d * d / (sig * sig)) + g);
    }
}

/* Execute the plan (creating it first if need be) and keep its candidates. */
static void *run(void *arg)
{
    job *j = arg;
    ddtk_fdas_config cfg;
    ddtk_fdas_config_init(&cfg);
    cfg.zmax = j->zmax;
    cfg.backend = DDTK_BACKEND_CPU;
    cfg.threads = 2;
    j->rc = j->plan ? DDTK_OK : ddtk_fdas_plan_create(&j->plan, j->n, TSAMP, &cfg);
    if (!j->rc)
        j->rc = ddtk_fdas_execute(j->plan, j->x);
    j->ncands = 0;
    if (!j->rc) {
        const ddtk_fdas_cand *c = ddtk_fdas_candidates(j->plan, &j->ncands);
        if (j->ncands > MAXCANDS)
            j->ncands = MAXCANDS;
        memcpy(j->cands, c, sizeof *c * (size_t)j->ncands);
    }
    return NULL;
}

static int same_cands(const job *a, const job *b)
{
    if (a->ncands != b->ncands)
        return 0;
    for (int i = 0; i < a->ncands; i++) {
        const ddtk_fdas_cand *x = &a->cands[i], *y = &b->cands[i];
        if (x->sigma != y->sigma || x->power != y->power || x->numharm != y->numharm ||
            x->r != y->r || x->z != y->z || x->accel != y->accel)
            return 0;
    }
    return 1;
}

static void run_both(job *j)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, run, &j[i]) == 0);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(j[0].rc == DDTK_OK && j[1].rc == DDTK_OK);
}

int main(void)
{
    job both[2] = { { .n = 1 << 16, .zmax = 200, .seed = 1 },
                    { .n = 3 << 14, .zmax = 600, .seed = 2 } };
    job alone[2];
    for (int i = 0; i < 2; i++)
        make_series(&both[i]);
    run_both(both);
    for (int i = 0; i < 2; i++) {
        alone[i] = both[i];
        run(&alone[i]);
        CHECK(alone[i].rc == DDTK_OK);
        CHECK(alone[i].ncands > 0);
        CHECK(same_cands(&alone[i], &both[i]));
    }
    run_both(both);
    for (int i = 0; i < 2; i++) {
        CHECK(same_cands(&alone[i], &both[i]));
        ddtk_fdas_plan_destroy(both[i].plan);
        free(both[i].x);
    }
    return check_result();
}
