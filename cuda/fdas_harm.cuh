/*
 * fdas_harm.cuh - the fused harmonic-sum and threshold kernel of the fdas GPU
 * backend: reads the plane (or, when the plane is tiled, the top tile and one
 * buffer per subharmonic fraction), keeps the best z of every position and
 * stage in registers and emits only hits above the stage's power cut.
 */
#ifndef DDTK_FDAS_HARM_CUH
#define DDTK_FDAS_HARM_CUH

#include <cuda_runtime.h>

extern "C" {
#include "fdas_impl.h"
}

namespace fdas {

constexpr int HS_THREADS = 128;

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

/*
 * NP positions per thread, blockDim apart (coalesced along r). Per z row the
 * row address of each fraction is computed once and shared by the NP
 * positions; the fraction and stage loops unroll, so the z and position
 * mappings (divisions by 2^s) become shifts. The summation order is the
 * CPU's: top row, then each stage's fractions by increasing k.
 */
/* Fraction f (stage order, then k) is k/2^s with s = log2(f + 1) + 1, k = 2 (f + 1 - 2^(s-1)) + 1. */
__host__ __device__ constexpr int frac_stage(int f) { return f < 1 ? 1 : 1 + frac_stage((f - 1) / 2); }
__host__ __device__ constexpr int frac_den(int f) { return 1 << frac_stage(f); }
__host__ __device__ constexpr int frac_k(int f) { return 2 * (f + 1 - frac_den(f) / 2) + 1; }

template <int NS, int NP>
__global__ void __launch_bounds__(HS_THREADS) k_harmsum(const hs_args a)
{
    constexpr int NF = (1 << (NS - 1)) - 1;
    long long first = a.plo + (long long)blockIdx.x * HS_THREADS * NP + threadIdx.x;
    long long pp[NP];
    int tcol[NP], col[NF > 0 ? NF : 1][NP], bestz[NS][NP];
    float best[NS][NP];
#pragma unroll
    for (int j = 0; j < NP; j++) {
        pp[j] = min(first + j * HS_THREADS, a.phi - 1);    /* clamped ones emit nothing */
        tcol[j] = (int)(pp[j] - a.top.p0);
#pragma unroll
        for (int f = 0; f < NF; f++)
            col[f][j] = (int)(ddtk_fdas_frac_pos(pp[j], frac_k(f), frac_den(f)) - a.frac[f].p0);
#pragma unroll
        for (int s = 0; s < NS; s++) {
            best[s][j] = a.cut[s];
            bestz[s][j] = -1;
        }
    }
    for (int zi = 0; zi < a.numz; zi++) {
        const float *trow = a.top.base + (long long)(zi - a.top.zlo) * a.top.ld;
        float acc[NP];
#pragma unroll
        for (int j = 0; j < NP; j++) {
            acc[j] = __ldg(trow + tcol[j]);
            if (acc[j] > best[0][j]) {
                best[0][j] = acc[j];
                bestz[0][j] = zi;
            }
        }
#pragma unroll
        for (int f = 0; f < NF; f++) {
            int zk = ddtk_fdas_frac_zi(zi, a.zmax, frac_k(f), frac_den(f));
            const float *row = a.frac[f].base + (long long)(zk - a.frac[f].zlo) * a.frac[f].ld;
#pragma unroll
            for (int j = 0; j < NP; j++)
                acc[j] += __ldg(row + col[f][j]);
            if (((f + 2) & (f + 1)) == 0) {          /* last fraction of stage s */
                int s = frac_stage(f);
#pragma unroll
                for (int j = 0; j < NP; j++)
                    if (acc[j] > best[s][j]) {
                        best[s][j] = acc[j];
                        bestz[s][j] = zi;
                    }
            }
        }
    }
#pragma unroll
    for (int j = 0; j < NP; j++) {
        if (first + j * HS_THREADS >= a.phi)
            continue;
#pragma unroll
        for (int s = 0; s < NS; s++) {
            if (bestz[s][j] < 0 || pp[j] < a.slo[s] || pp[j] > a.shi[s])
                continue;
            unsigned long long at = atomicAdd(a.nhits, 1ULL);
            if (at < a.max_hits)
                a.hits[at] = ddtk_fdas_hit{ pp[j], bestz[s][j], s, best[s][j] };
        }
    }
}

/* Positions per thread: fewer where the fraction offsets take many registers. */
template <int NS>
constexpr int hs_np() { return NS <= 4 ? 4 : NS == 5 ? 2 : 1; }

} // namespace fdas

#endif
