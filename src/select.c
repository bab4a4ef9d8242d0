/*
 * select.c - the k-th smallest of an array: Hoare's selection in place
 * (the .tim baseline, integer output's noise, the RFI cleaning's
 * statistics), and an exact radix selection on order-preserving float keys,
 * optionally tried first within a guessed range (the single-pulse search's
 * block median and MAD, where Hoare's selection was most of the search's
 * time).
 */
#include "internal.h"
#include "hoare.h"

#include <string.h>

/* Hoare's selection (hoare.h) for floats and for the radix selection's keys */
DDTK_DEFINE_HOARE(hoare_float, float, int64_t)
DDTK_DEFINE_HOARE(hoare_key, uint32_t, int64_t)

float ddtk_select_kth(float *x, int64_t n, int64_t k)
{
    return hoare_float(x, n, k);
}

/* ---- radix selection on keys ---------------------------------------------------------- */

#define RADIX_BITS 11                 /* 2048 bins: 16 kB of counts, in L1 */
#define RADIX_SMALL 256               /* fewer keys: Hoare's selection */

/* The keys first .. first + width packed to the front of key[] (a write
 * never passes the read), their count returned. They are a small share of
 * the keys, so most chunks of PACK_CHUNK hold none: the test of a chunk
 * vectorises, and only chunks with one are copied. */
#define PACK_CHUNK 64
static int64_t pack(uint32_t *key, int64_t n, uint32_t first, uint32_t width)
{
    int64_t m = 0, i = 0;
    for (; i + PACK_CHUNK <= n; i += PACK_CHUNK) {
        int hit = 0;
        for (int j = 0; j < PACK_CHUNK; j++)
            hit |= key[i + j] - first <= width;
        if (!hit)
            continue;
        for (int j = 0; j < PACK_CHUNK; j++) {
            key[m] = key[i + j];
            m += key[i + j] - first <= width;
        }
    }
    for (; i < n; i++) {
        key[m] = key[i];
        m += key[i] - first <= width;
    }
    return m;
}

/*
 * Each round counts the keys by the top RADIX_BITS bits of their offset
 * from the smallest possible key (the span lo..hi known so far, so the bins
 * cover the keys present however the floats are spread), finds the bin of
 * the k-th, and keeps only that bin's keys. Each round divides the span by
 * 2^11, so at most three rounds of counting; in practice one count and one
 * packing pass leave a few hundred keys for the small selection.
 */
uint32_t ddtk_select_key(uint32_t *key, int64_t n, int64_t k)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        lo = key[i] < lo ? key[i] : lo;
        hi = key[i] > hi ? key[i] : hi;
    }
    int64_t count[1 << RADIX_BITS];
    while (lo != hi && n > RADIX_SMALL) {
        uint32_t span = hi - lo;
        int bits = 32 - __builtin_clz(span);
        int shift = bits > RADIX_BITS ? bits - RADIX_BITS : 0;
        int64_t nbins = (int64_t)(span >> shift) + 1;
        memset(count, 0, (size_t)nbins * sizeof *count);
        for (int64_t i = 0; i < n; i++)
            count[(key[i] - lo) >> shift]++;
        int64_t b = 0;
        while (k >= count[b])
            k -= count[b++];
        uint32_t first = lo + ((uint32_t)b << shift), last = first + ((1u << shift) - 1);
        n = pack(key, n, first, last - first);
        lo = first;
        hi = last < hi ? last : hi;
    }
    return lo == hi ? lo : hoare_key(key, n, k);
}

/*
 * A guess of where the k-th lies (the previous block's statistic, in a
 * stationary series) saves the counting: one vectorised pass counts the
 * keys below the guess and in it, and when the k-th is in it, only those
 * are packed and searched. Else, the radix selection; the answer is exact
 * either way.
 */
uint32_t ddtk_select_key_near(uint32_t *key, int64_t n, int64_t k, uint32_t glo, uint32_t ghi)
{
    if (ghi < glo)
        return ddtk_select_key(key, n, k);
    const uint32_t width = ghi - glo;
    int64_t below = 0, inside = 0;
    for (int64_t i = 0; i < n; i++) {
        below += key[i] < glo;
        inside += key[i] - glo <= width;
    }
    if (k < below || k >= below + inside)
        return ddtk_select_key(key, n, k);
    n = pack(key, n, glo, width);
    return ddtk_select_key(key, n, k - below);
}
