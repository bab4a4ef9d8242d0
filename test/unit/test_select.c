/*
 * test_select.c - the radix selection (select.c's ddtk_select_key) against
 * sorting: every rank of small arrays and sampled ranks of large ones, over
 * Gaussian noise, a large offset, ties, negatives, signed zeros, outliers
 * and constant arrays, with and without guesses of where the k-th lies
 * (ddtk_select_key_near: right, wrong, inverted); the same values, as
 * floats, as Hoare's selection (ddtk_select_kth); the float keys' order.
 */
#include "check.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static unsigned short rng[3] = { 3, 5, 8 };

static int by_key(const void *a, const void *b)
{
    uint32_t x = ddtk_float_key(*(const float *)a), y = ddtk_float_key(*(const float *)b);
    return (x > y) - (x < y);
}

enum { GAUSS, OFFSET, TIES, ZEROS, OUTLIERS, CONSTANT, TINY, NKINDS };

static void fill(float *x, int64_t n, int kind)
{
    for (int64_t i = 0; i < n; i++) {
        double g = check_gauss(rng);
        switch (kind) {
        case GAUSS: x[i] = (float)g; break;
        case OFFSET: x[i] = (float)(1500 + 30 * g); break;
        case TIES: x[i] = (float)round(1.5 * g); break;
        case ZEROS:
            x[i] = erand48(rng) < 0.8 ? (erand48(rng) < 0.5 ? -0.0f : 0.0f) : (float)g;
            break;
        case OUTLIERS: x[i] = erand48(rng) < 0.01 ? (float)(g * 1e30) : (float)(g * 1e-3); break;
        case CONSTANT: x[i] = -2.5f; break;
        case TINY: x[i] = (float)(g * 1e-42); break;     /* subnormals */
        }
    }
}

/* The k-th smallest by keys and by Hoare's selection against sorted[k]. */
static void check_rank(const float *x, const float *sorted, int64_t n, int64_t k, uint32_t *key,
                       float *scratch)
{
    for (int64_t i = 0; i < n; i++)
        key[i] = ddtk_float_key(x[i]);
    float r = ddtk_key_float(ddtk_select_key(key, n, k));
    CHECK(memcmp(&r, &sorted[k], sizeof r) == 0);
    memcpy(scratch, x, (size_t)n * sizeof *x);
    CHECK(ddtk_select_kth(scratch, n, k) == r);
    /* guesses: the value alone, around it, just above or below it, far
     * off, inverted; the answer is the same whatever the guess */
    const uint32_t v = ddtk_float_key(sorted[k]), lo = ddtk_float_key(sorted[0]);
    const uint32_t hi = ddtk_float_key(sorted[n - 1]);
    const uint32_t g[][2] = { { v, v }, { v - 5, v + 5 }, { v + 1, v + 100 }, { v - 100, v - 1 },
                              { lo, hi }, { 0, lo }, { hi, UINT32_MAX }, { v + 3, v - 3 } };
    for (size_t j = 0; j < sizeof g / sizeof *g; j++) {
        for (int64_t i = 0; i < n; i++)
            key[i] = ddtk_float_key(x[i]);
        CHECK(ddtk_select_key_near(key, n, k, g[j][0], g[j][1]) == v);
    }
}

static void test_against_sort(void)
{
    const int64_t sizes[] = { 1, 2, 3, 7, 64, 255, 256, 257, 1000, 31250, 200001 };
    int64_t most = 200001;
    float *x = malloc((size_t)most * sizeof *x), *sorted = malloc((size_t)most * sizeof *x);
    float *scratch = malloc((size_t)most * sizeof *x);
    uint32_t *key = malloc((size_t)most * sizeof *key);
    for (int kind = 0; kind < NKINDS; kind++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            int64_t n = sizes[s];
            fill(x, n, kind);
            memcpy(sorted, x, (size_t)n * sizeof *x);
            qsort(sorted, (size_t)n, sizeof *sorted, by_key);
            if (n <= 300)
                for (int64_t k = 0; k < n; k++)
                    check_rank(x, sorted, n, k, key, scratch);
            else {
                const int64_t ks[] = { 0, 1, (n - 1) / 2, n / 2, n - 2, n - 1,
                                       (int64_t)(erand48(rng) * n) };
                for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
                    check_rank(x, sorted, n, ks[j], key, scratch);
            }
        }
    free(x);
    free(sorted);
    free(scratch);
    free(key);
}

/* Signed zeros: -0.0 is the key just below +0.0, so the k-th smallest is
 * -0.0 up to the last -0.0's rank; both are 0 to Hoare's selection. */
static void test_signed_zeros(void)
{
    float x[6] = { 0.0f, -0.0f, 1.0f, -0.0f, -1.0f, 0.0f };
    uint32_t key[6];
    CHECK(ddtk_float_key(-0.0f) + 1 == ddtk_float_key(0.0f));
    for (int k = 0; k < 6; k++) {
        for (int i = 0; i < 6; i++)
            key[i] = ddtk_float_key(x[i]);
        float r = ddtk_key_float(ddtk_select_key(key, 6, k));
        CHECK(r == (k == 0 ? -1.0f : k == 5 ? 1.0f : 0.0f));
        CHECK(k < 1 || k > 4 || !!signbit(r) == (k <= 2));
    }
}

/* The keys order the floats (NaN-free), and map back to the same bits. */
static void test_keys(void)
{
    const float v[] = { -INFINITY, -3e38f, -1.0f, -1e-45f, -0.0f, 0.0f, 1e-45f, 1.0f, 3e38f,
                        INFINITY };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        float back = ddtk_key_float(ddtk_float_key(v[i]));
        CHECK(memcmp(&back, &v[i], sizeof back) == 0);
        if (i > 0)
            CHECK(ddtk_float_key(v[i - 1]) < ddtk_float_key(v[i]));
    }
}

int main(void)
{
    test_keys();
    test_signed_zeros();
    test_against_sort();
    return check_result();
}
