/*
 * fdas_harm.cuh - the fused harmonic-sum and threshold kernel of the fdas GPU
 * backend: reads the plane (or, when the plane is tiled, the top tile and one
 * buffer per subharmonic fraction), keeps the best z of every position and
 * stage in registers and emits only hits above the stage's power cut; the
 * hits' sort keys for the device sort (k_hit_keys).
 */
#ifndef DDTK_FDAS_HARM_CUH
#define DDTK_FDAS_HARM_CUH

#include <cuda_runtime.h>

#include "fdas_kernels.h"

namespace fdas {

constexpr int HS_THREADS = 128;
/* Resident blocks per SM for the launch bounds: five (96 registers) up to 8
 * harmonics (measured on the H100: 9.5 ms, six at 80 registers 10.0 ms, four
 * 10.0 ms); 16 and 32 harmonics would spill there and keep 128 registers. */
template <int NS>
constexpr int hs_minb() { return NS <= 4 ? 5 : 4; }

/* Plane rows [zlo, ..) at positions [p0, ..): element (zi, q) is base[(zi - zlo) ld + q - p0]. */
struct hs_view {
    const float *base;
    long long ld, p0;
    int zlo;
};

struct hs_args {
    hs_view top, frac[DDTK_FDAS_MAXHARM - 1];     /* fraction k/2^s at (2^(s-1) - 1) + k/2 */
    long long plo, phi;                           /* top positions of this launch */
    long long slo[DDTK_FDAS_MAXSTAGES], shi[DDTK_FDAS_MAXSTAGES];   /* per-stage search range */
    float cut[DDTK_FDAS_MAXSTAGES];
    int numz, zmax;
    ddtk_fdas_hit *hits;
    unsigned long long *nhits, max_hits;
};

/* Fraction f (stage order, then k) is k/2^s with s = log2(f + 1) + 1, k = 2 (f + 1 - 2^(s-1)) + 1. */
__host__ __device__ constexpr int frac_stage(int f) { return f < 1 ? 1 : 1 + frac_stage((f - 1) / 2); }
__host__ __device__ constexpr int frac_den(int f) { return 1 << frac_stage(f); }
__host__ __device__ constexpr int frac_k(int f) { return 2 * (f + 1 - frac_den(f) / 2) + 1; }

/* Floats a harmonic-sum launch may read past the end of its buffers: the
 * positions of a thread's last block beyond phi are read, never emitted. */
constexpr int HS_SLACK = 4 * HS_THREADS + 8;

/* Keep the best power and its z row per stage (registers, NP positions). */
template <int NS, int NP>
struct hs_best {
    float p[NS][NP];
    int z[NS][NP];
};

/*
 * NP positions per thread, HS_THREADS apart (coalesced along r). Position
 * j's column in fraction k/d is column 0's plus j HS_THREADS k / d exactly
 * (d divides HS_THREADS), so a thread keeps one column per fraction; the
 * fraction and stage loops unroll, so the z mappings become shifts. Past phi
 * the reads land in the buffers' HS_SLACK and nothing is emitted. The
 * summation order is the CPU's: top row, then each stage's fractions by
 * increasing k.
 */
template <int NS, int NP>
__global__ void __launch_bounds__(HS_THREADS, hs_minb<NS>()) k_harmsum(const hs_args a)
{
    constexpr int NF = (1 << (NS - 1)) - 1;
    long long first = a.plo + (long long)blockIdx.x * HS_THREADS * NP + threadIdx.x;
    int tcol = (int)(first - a.top.p0), col[NF > 0 ? NF : 1];
#pragma unroll
    for (int f = 0; f < NF; f++)
        col[f] = (int)(ddtk_fdas_frac_pos(first, frac_k(f), frac_den(f)) - a.frac[f].p0);
    hs_best<NS, NP> b;
#pragma unroll
    for (int s = 0; s < NS; s++)
#pragma unroll
        for (int j = 0; j < NP; j++) {
            b.p[s][j] = a.cut[s];
            b.z[s][j] = -1;
        }
    for (int zi = 0; zi < a.numz; zi++) {
        const float *trow = a.top.base + (long long)(zi - a.top.zlo) * a.top.ld + tcol;
        float acc[NP];
#pragma unroll
        for (int j = 0; j < NP; j++) {
            acc[j] = __ldg(trow + j * HS_THREADS);
            if (acc[j] > b.p[0][j]) {
                b.p[0][j] = acc[j];
                b.z[0][j] = zi;
            }
        }
#pragma unroll
        for (int f = 0; f < NF; f++) {
            int zk = ddtk_fdas_frac_zi(zi, a.zmax, frac_k(f), frac_den(f));
            const float *row = a.frac[f].base + (long long)(zk - a.frac[f].zlo) * a.frac[f].ld + col[f];
#pragma unroll
            for (int j = 0; j < NP; j++)
                acc[j] += __ldg(row + j * (HS_THREADS * frac_k(f) / frac_den(f)));
            if (((f + 2) & (f + 1)) == 0) {          /* last fraction of stage s */
                int s = frac_stage(f);
#pragma unroll
                for (int j = 0; j < NP; j++)
                    if (acc[j] > b.p[s][j]) {
                        b.p[s][j] = acc[j];
                        b.z[s][j] = zi;
                    }
            }
        }
    }
#pragma unroll
    for (int j = 0; j < NP; j++) {
        long long pos = first + j * HS_THREADS;
        if (pos >= a.phi)
            continue;
#pragma unroll
        for (int s = 0; s < NS; s++) {
            if (b.z[s][j] < 0 || pos < a.slo[s] || pos > a.shi[s])
                continue;
            unsigned long long at = atomicAdd(a.nhits, 1ULL);
            if (at < a.max_hits)
                a.hits[at] = ddtk_fdas_hit{ pos, b.z[s][j], s, b.p[s][j] };
        }
    }
}

/*
 * Sort key of a hit in 64 bits: stage (3 bits, top), then power descending
 * (a non-negative float's 31 low bits order as the float; complemented),
 * then position (pos_bits, low): the host's cluster order. (stage, position)
 * is unique, so the order is total. Fits while pos_bits <= 30.
 */
constexpr int KEY_FIXED_BITS = 3 + 31;

__global__ void k_hit_keys(const ddtk_fdas_hit *h, int n, int pos_bits, unsigned long long *keys)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        keys[i] = ((unsigned long long)h[i].stage << 31 |
                   (0x7fffffffu - __float_as_uint(h[i].power))) << pos_bits |
                  (unsigned long long)h[i].p;
}

/* Positions per thread: fewer where the fraction offsets take many registers. */
template <int NS>
constexpr int hs_np() { return NS <= 4 ? 4 : NS == 5 ? 2 : 1; }

} // namespace fdas

#endif
