/*
 * test_gpu_choice.c - how many GPUs --gpu all uses (gpu_choice.c): the cost
 * model's arithmetic, the choice on the figures measured on two H100s (htru
 * 60 s: set-up 0.13 s per GPU and kernels 0.138 s on one, so one GPU; 600 s:
 * two), a larger count only for a clear gain, and the model of a real htru
 * plan (SPEC section 6): its kernel seconds near the 0.138 s measured, one
 * GPU at 60 s, two at 600 s discarded, one when files written at the
 * disk's speed bound the run.
 */
#include "engine.h"
#include "dmplan.h"
#include "check.h"
#include "htru_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_arithmetic(void)
{
    ddtk_gpu_cost c = { .setup = 0.1, .setup_more = 0.05, .kernel = 1.0, .copy = 0.2,
                        .efficiency = 1, .host = 0.3 };
    CHECK_NEAR(ddtk_gpu_cost_time(&c, 1), 0.1 + 1.0, 1e-12);
    CHECK_NEAR(ddtk_gpu_cost_time(&c, 2), 0.15 + 0.5, 1e-12);
    CHECK_NEAR(ddtk_gpu_cost_time(&c, 4), 0.25 + 0.3, 1e-12);   /* the host bounds it */
    CHECK_NEAR(ddtk_gpu_cost_time(&c, 8), 0.45 + 0.3, 1e-12);
    /* 3 GPUs: 0.533 s; 4 save less than the margin over 3, 5 and more lose. */
    CHECK(ddtk_gpu_choose(&c, 8, NULL, 0) == 3);
    CHECK(ddtk_gpu_choose(&c, 2, NULL, 0) == 2);
    CHECK(ddtk_gpu_choose(&c, 1, NULL, 0) == 1);
    c.copy = 3.0;                          /* copies longer than the kernels bound the GPUs */
    CHECK_NEAR(ddtk_gpu_cost_time(&c, 2), 0.15 + 1.5, 1e-12);
    c.copy = 0.2, c.efficiency = 0.8;      /* several GPUs at 80% of one's rate each */
    CHECK_NEAR(ddtk_gpu_cost_time(&c, 1), 0.1 + 1.0, 1e-12);
    CHECK_NEAR(ddtk_gpu_cost_time(&c, 2), 0.15 + 1.0 / 1.6, 1e-12);
    CHECK(ddtk_gpu_choose(&c, 8, NULL, 0) == 3);   /* 0.617 s; 4 GPUs 0.563 s, not 10% less */
}

/* The figures: one H100's set-up 0.13 s, which a second GPU adds
 * again, kernels 0.138 s and reads 0.074 s per 60 s. */
static void test_measured(void)
{
    ddtk_gpu_cost c = { .setup = 0.13, .setup_more = 0.13, .kernel = 0.138, .copy = 0,
                        .efficiency = 1, .host = 0.074 };
    char why[512];
    CHECK(ddtk_gpu_choose(&c, 2, why, sizeof why) == 1);
    CHECK(strstr(why, "0.268 s on 1 GPU") && strstr(why, "0.334 s on 2"));
    c.kernel *= 10, c.host *= 10;          /* 600 s */
    CHECK(ddtk_gpu_choose(&c, 2, why, sizeof why) == 2);
    CHECK(strstr(why, "1.510 s on 1 GPU") && strstr(why, "1.000 s on 2"));
    /* Within the margin: 5% faster on paper is not enough. */
    ddtk_gpu_cost m = { .setup = 0.1, .setup_more = 0.0, .kernel = 0.2, .efficiency = 1,
                        .host = 0.18 };
    CHECK(ddtk_gpu_cost_time(&m, 2) < ddtk_gpu_cost_time(&m, 1));
    CHECK(ddtk_gpu_choose(&m, 2, NULL, 0) == 1);
}

static void test_htru_plan(void)
{
    ddtk_dmlist l = { 0 };
    int *ds = NULL;
    ddtk_plan *p = htru_plan(0, &l, &ds);
    if (!p)
        return;
    const int64_t n60 = 937500;        /* 60 s of 64 us */
    ddtk_gpu_cost c, c10, files;
    ddtk_gpu_cost_of(p, n60, 0, &c);
    ddtk_gpu_cost_of(p, 10 * n60, 0, &c10);
    ddtk_gpu_cost_of(p, n60, 1, &files);
    fprintf(stderr, "htru 60 s: kernel %.4f copy %.4f host %.4f; files host %.4f\n", c.kernel,
            c.copy, c.host, files.host);
    CHECK_NEAR(c.kernel, 0.138, 0.01);
    CHECK_NEAR(c.host, 0.017, 0.002);       /* 240 MB read */
    CHECK_NEAR(c.copy, 0.080, 0.002);       /* 4.4 GB of series */
    CHECK(c10.kernel > 10 * c.kernel && c10.kernel < 10.3 * c.kernel);   /* less overlap */
    CHECK(ddtk_gpu_choose(&c, 2, NULL, 0) == 1);
    CHECK(ddtk_gpu_choose(&c10, 2, NULL, 0) == 2);
    CHECK(files.host > 1.0);                /* 4.5 GB of series */
    CHECK(ddtk_gpu_choose(&files, 2, NULL, 0) == 1);
    ddtk_plan_destroy(p);
    ddtk_dmlist_free(&l);
    free(ds);
}

int main(void)
{
    test_arithmetic();
    test_measured();
    test_htru_plan();
    return check_result();
}
