/*
 * fdas_corr.cuh - the fused correlation kernel of the fdas GPU backend.
 *
 * One thread block takes one forward-transformed spectrum block and a run of
 * z rows. Per row it multiplies by the template spectrum while loading, does
 * the inverse FFT in shared memory (Stockham autosort: radix-16 passes held in
 * registers, one radix-2/4/8 pass where fftlen is not a power of 16), and
 * writes the powers of the useful outputs straight into the plane: exact
 * powers from the last pass's registers, interbins (which pair neighbouring
 * outputs of different threads) through shared memory. Only the plane is written to device memory: no
 * product buffer, no separate multiply and power kernels (the custom-FFT
 * scheme of Dimoudi et al. 2018).
 */
#ifndef DDTK_FDAS_CORR_CUH
#define DDTK_FDAS_CORR_CUH

#include <cuda_runtime.h>

namespace fdas {

constexpr int ZPER = 8;           /* z rows per thread block */

__device__ __forceinline__ float2 cmul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

/* exp(+2 pi i n / 16); n is a compile-time constant after unrolling. */
__device__ __forceinline__ float2 root16(int n)
{
    const float c[16] = { 1.0f, 0.923879533f, 0.707106781f, 0.382683432f,
                          0.0f, -0.382683432f, -0.707106781f, -0.923879533f,
                          -1.0f, -0.923879533f, -0.707106781f, -0.382683432f,
                          0.0f, 0.382683432f, 0.707106781f, 0.923879533f };
    return make_float2(c[n & 15], c[(n + 12) & 15]);
}

/*
 * o exp(+2 pi i n / 16) for the n < 8 of the radix-2 steps (compile-time after
 * unrolling): quarter turns are sign swaps, eighth turns two products, the
 * odd n a complex product. Without fast-math a product by 0 is not folded, so
 * a plain cmul by root16(0) or root16(4) would issue it.
 */
__device__ __forceinline__ float2 rot16(float2 o, int n)
{
    const float h = 0.707106781f;
    switch (n) {
    case 0: return o;
    case 2: return make_float2(h * (o.x - o.y), h * (o.x + o.y));
    case 4: return make_float2(-o.y, o.x);
    case 6: return make_float2(-h * (o.x + o.y), h * (o.x - o.y));
    default: return cmul(o, root16(n));
    }
}

/*
 * In-register inverse DFT of the R points v[O + S i], i < R, in place and in
 * natural order (recursive radix-2 decimation in time). Every index is a
 * compile-time constant, so v stays in registers.
 */
template <int R, int S, int O>
__device__ __forceinline__ void idft(float2 (&v)[16])
{
    if constexpr (R > 1) {
        idft<R / 2, 2 * S, O>(v);
        idft<R / 2, 2 * S, O + S>(v);
        float2 t[R];
#pragma unroll
        for (int k = 0; k < R / 2; k++) {
            float2 e = v[O + 2 * S * k], o = rot16(v[O + S + 2 * S * k], k * (16 / R));
            t[k] = make_float2(e.x + o.x, e.y + o.y);
            t[k + R / 2] = make_float2(e.x - o.x, e.y - o.y);
        }
#pragma unroll
        for (int k = 0; k < R; k++)
            v[O + S * k] = t[k];
    }
}

/* Shared-memory index (complex elements) with one pad element per 16: the
 * stride-16 stores of the first pass would otherwise hit one bank pair. */
__device__ __forceinline__ int pad(int i) { return i + (i >> 4); }

/* Radix of the last pass: 16 where fftlen is a power of 16, else 2, 4 or 8. */
__host__ __device__ constexpr int last_radix(int n) { return n > 16 ? last_radix(n / 16) : n; }

/*
 * One Stockham pass over L points with radix R after sub-transforms of size
 * NS: thread t owns j = t + Q T (Q < 16/R), v[Q R + r] = X[j + r L/R] on
 * entry. Twiddles exp(+2 pi i r k / (NS R)), k = j mod NS: the first from tw
 * (the L-th roots of unity), the others by repeated products (error ~r ulp).
 * Outputs Y[(j - k) R + k + r NS] go to shared memory when st, else stay in
 * v (the last pass of an exact row).
 */
template <int L, int R, int NS, int Q = 0>
__device__ __forceinline__ void pass_out(float2 (&v)[16], const float2 *__restrict__ tw,
                                         float2 *sm, bool st)
{
    if constexpr (Q < 16 / R) {
        int j = threadIdx.x + Q * (L / 16), k = j & (NS - 1);
        if constexpr (NS > 1) {
            float2 w1 = __ldg(tw + k * (L / (NS * R))), w = w1;
#pragma unroll
            for (int r = 1; r < R; r++) {
                v[Q * R + r] = cmul(v[Q * R + r], w);
                w = cmul(w, w1);
            }
        }
        idft<R, 1, Q * R>(v);
        int base = (j - k) * R + k;
        if (st)
#pragma unroll
            for (int r = 0; r < R; r++)
                sm[pad(base + r * NS)] = v[Q * R + r];
        pass_out<L, R, NS, Q + 1>(v, tw, sm, st);
    }
}

/* Passes after the first: read X from shared memory, then pass_out in place;
 * the last pass stores only when st. */
template <int L, int NS>
__device__ __forceinline__ void passes_from(float2 (&v)[16], const float2 *__restrict__ tw,
                                            float2 *sm, bool st)
{
    if constexpr (NS < L) {
        constexpr int R = L / NS >= 16 ? 16 : L / NS, T = L / 16, J = 16 / R;
#pragma unroll
        for (int q = 0; q < J; q++)
#pragma unroll
            for (int r = 0; r < R; r++)
                v[q * R + r] = sm[pad(threadIdx.x + q * T + r * (L / R))];
        __syncthreads();
        pass_out<L, R, NS>(v, tw, sm, st || NS * R < L);
        if (NS * R < L)
            __syncthreads();
        passes_from<L, NS * R>(v, tw, sm, st);
    }
}

__device__ __forceinline__ float pw2(float x, float y) { return x * x + y * y; }

struct corr_args {
    const float2 *blk;            /* forward FFTs of the batch's spectrum blocks */
    const float2 *tmpl;           /* numz x L template spectra (/ L) */
    const float2 *tw;             /* exp(+2 pi i t / L), t < L */
    int z0, nz;                   /* template rows z0 .. z0+nz-1 -> output rows 0 .. nz-1 */
    int khalf, uselen, width, res;
    long long nq;                 /* output positions left from this batch's first */
    float *out;                   /* first position of the batch, row 0 */
    long long ld;                 /* output row stride */
};

/* Register budget per thread. The block spectrum is re-read per row (L1 hits)
 * instead of being held in 32 registers, so 64 registers fit without spills
 * and four 256-thread blocks share an SM (128 registers: two; 80 measured no
 * faster). */
constexpr int CORR_REGS = 64;
/* Blocks per SM for the launch bounds; 8192-point blocks would spill at 64
 * registers (their radix-2 pass), so they keep one 512-thread block's 128. */
template <int L>
constexpr int corr_minb() { return L >= 8192 ? 1 : 65536 / (CORR_REGS * (L / 16)); }

/* Exact powers straight from the last pass: v[q R + r] is output
 * m = t + q T + r L/R; position i = m - khalf when 0 <= i < lim. */
template <int L>
__device__ __forceinline__ void out_exact(const float2 (&v)[16], float *o, int khalf, long long lim)
{
    constexpr int R = last_radix(L), T = L / 16;
#pragma unroll
    for (int q = 0; q < 16 / R; q++)
#pragma unroll
        for (int r = 0; r < R; r++) {
            int i = threadIdx.x + q * T + r * (L / R) - khalf;
            if (i >= 0 && i < lim)
                o[i] = pw2(v[q * R + r].x, v[q * R + r].y);
        }
}

/* Powers (even i) and interbins (odd i) from the outputs in shared memory. */
__device__ __forceinline__ void out_interbin(const float2 *sm, float *o, int khalf, long long lim,
                                             int T)
{
    const float kib = 0.785398163f;               /* pi / 4 */
    for (int i = threadIdx.x; i < lim; i += T) {
        int m = khalf + (i >> 1);
        float2 a = sm[pad(m)];
        if (i & 1) {
            float2 b = sm[pad(m + 1)];
            o[i] = pw2(kib * (a.x - b.x), kib * (a.y - b.y));
        } else {
            o[i] = pw2(a.x, a.y);
        }
    }
}

/* grid.x: blocks of the batch; grid.y: runs of ZPER rows. Block size L/16. */
template <int L>
__global__ void __launch_bounds__(L / 16, corr_minb<L>()) k_corr(const corr_args a)
{
    extern __shared__ float2 sm[];
    constexpr int T = L / 16;
    const float2 *blk = a.blk + (size_t)blockIdx.x * L;
    float2 v[16];
    long long q0 = (long long)blockIdx.x * a.width, lim = min((long long)a.width, a.nq - q0);
    bool ib = a.res == 1;
    int zend = min(a.nz, (int)(blockIdx.y + 1) * ZPER);
    for (int row = blockIdx.y * ZPER; row < zend; row++) {
        const float2 *t = a.tmpl + (size_t)(a.z0 + row) * L;
#pragma unroll
        for (int r = 0; r < 16; r++)
            v[r] = cmul(__ldg(blk + threadIdx.x + r * T), __ldg(t + threadIdx.x + r * T));
        if (ib)
            __syncthreads();      /* the previous row's outputs have been read */
        pass_out<L, 16, 1>(v, a.tw, sm, true);
        __syncthreads();
        passes_from<L, 16>(v, a.tw, sm, ib);
        float *o = a.out + (size_t)row * a.ld + q0;
        if (ib) {
            __syncthreads();
            out_interbin(sm, o, a.khalf, lim, T);
        } else {
            out_exact<L>(v, o, a.khalf, lim);
        }
    }
}

constexpr size_t corr_smem(int L) { return sizeof(float2) * (size_t)(L + L / 16); }

} // namespace fdas

#endif
