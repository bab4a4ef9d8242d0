/*
 * select.c - the k-th smallest of an array (Hoare's selection, in place):
 * the medians of the layers' robust statistics (the .tim baseline, integer
 * output's noise, the single-pulse search's baseline and sigma).
 */
#include "internal.h"

float ddtk_select_kth(float *x, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        float pivot = x[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (x[i] < pivot)
                i++;
            while (x[j] > pivot)
                j--;
            if (i <= j) {
                float t = x[i];
                x[i++] = x[j];
                x[j--] = t;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return x[k];
    }
    return x[k];
}

