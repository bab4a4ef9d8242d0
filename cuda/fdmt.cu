/*
 * fdmt.cu - the GPU half of the FDMT (src/algos/fdmt.c has the descriptor and the
 * merge tree, cpu/fdmt.c the CPU kernel): every row of the merge tree's
 * nodes (the root's: the DMs' series) made from two rows below it, stored
 * in device memory.
 *
 * At create the host walks the tree once into items, one per computed row:
 * its two operands (a stored row of a child, or an input row for a leaf)
 * with their shifts, and its destination (a stored row, or a DM's series),
 * grouped by depth.
 *
 * Byte input with 16-bit rows (flow_kernel; 1-, 2- and 4-bit data, and
 * 8-bit data of up to 256 channels): one launch a gulp. A unit is an
 * item over a chunk of WSPAN samples; warps take units in an order where
 * every unit a unit reads comes first (flow_columns), wait for the chunks
 * they read to be flagged made, and make them as warp_item does: the
 * operands' aligned vectors of 8 copied into shared memory stages ahead
 * (cp.async), each lane's 8 samples shifted out of two vectors and summed
 * as 16-bit integers two to a word. Other input (depth_kernel): a launch a
 * depth, blockIdx.y an item, VEC consecutive samples a thread, read and
 * written as aligned vectors of 8 (the second vector the next lane's, by a
 * shuffle), summed as floats.
 *
 * Each row is upper[t + a] + lower[t + b] as on the CPU: the same operands in
 * the same order, so every series equals the CPU's byte for byte (float
 * input included). Reads past what a row holds give zero; they never reach
 * an output.
 *
 * The history, htru 30 s (1024 channels, 2-bit, DM 0-1000, 3952 DMs),
 * kernel seconds. Kernels that fused the depths three or four at a time
 * with the rows between them in shared rings (fd3821b-15416e7) cut the
 * modelled DRAM traffic of level 0 from 78 to 18 KB per output sample but
 * were bound by instructions and barriers (ncu, htru 8 s: about 180 warp
 * instructions per 32 adds, 17-53% of warp time stalled on barriers): on
 * one H200 0.086 s, 0.063 s with depths 1-4 fused and a kernel per depth
 * after, 0.043-0.062 s with a kernel per depth throughout (0.079-0.512 s
 * with the first 2, 3, 5 or 6 depths fused). With a kernel per depth,
 * vectors of 8 took it from 0.059 s (a load and a store per sample) to
 * 0.048 s, shifting them as 32-bit words to 0.047 s, at most 42 registers
 * a thread to 0.041 s (interleaved runs on one H200, stop 39). Then, on
 * one H100 (stop 42): ncu found the depths bound by L2 (94% of its peak,
 * 15 bytes of L2 traffic an add, 300 warp instructions a pack); the second
 * vector taken from the next lane and 16-bit sums two to a word cut L2
 * traffic from 17.8 to 10.1 GB and instructions by 27% (first 60 launches
 * of htru 8 s): 0.043-0.046 -> 0.035-0.037 s (8-bit input, float rows, the
 * shuffle alone: 0.017 -> 0.012 s). Long-scoreboard stalls then led (DRAM
 * at 54%): the warp pipelines (4 stages in flight, 8 a warp's share of a
 * row; 3 and 8, 4 and 16, 2 and 4 gave 0.031-0.032 s) took it to 0.031 s,
 * DRAM to 64%, the stalls to issue. A launch per depth still ended each
 * depth in a partial wave, 50 launches a gulp over 5 levels (bigger gulps
 * hid it: 0.023 s at 65536 spectra): the one launch of units took it to
 * 0.026-0.027 s (0.021 s at 65536), the same with column orders of slack
 * 2, 3, 4 or 6 (kmul) and polling sleeps of 20 or 100 ns; slack 1 (every
 * read a chunk behind, fewer bytes in L2 between a write and its read)
 * waited more: 0.031 s; chunks of 512, 1024 or 4096 samples: 0.039,
 * 0.036, 0.029 s. Finding a unit's column by a ballot from the warp's last
 * one (instead of a binary search) and one release after the warp's
 * barrier (instead of a fence a lane): mean of six 0.0268 -> 0.0258 s;
 * taking the next unit before making this one: 0.029 s (a unit taken
 * early holds up those that read it).
 *
 * Stored rows are 16-bit integers where every stored sum fits (byte
 * input: exact either way), else floats. Every node but the root and the
 * leaves is stored: about 11,700 rows for htru's level 0, the gulp chosen
 * to fit them (dev_bytes).
 */
#include "check.cuh"
#include "engine.cuh"
#include "fdmt.h"

#include <stdlib.h>
#include <string.h>

namespace ddgpu {

#define THREADS 256
#define VEC 8                     /* consecutive samples a thread makes: one pack (16 was
                                     slower: 0.066 s against 0.048 s) */
/* Blocks per multiprocessor the registers allow: six for flow_kernel (42
 * registers a thread) where a multiprocessor holds 1536 threads or more,
 * else four; four for depth_kernel (MIN_BLOCKS_F: its two operands' float
 * packs spill at 42). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define MIN_BLOCKS 4
#else
#define MIN_BLOCKS 6
#endif
#define MIN_BLOCKS_F 4
#define MAX_GRID_Y 65535
/* Lanes of a warp that make samples: the last one reads the pack after
 * theirs for lane 30 (pack_pair), cheaper than a read of its own (a
 * divergent load spilled registers) at 1/32 of the threads. */
#define LANES 31
#define SPAN (THREADS / 32 * LANES * VEC)     /* samples a block makes */

/* Where an operand comes from or a row goes: a stored row (ref: its row;
 * lim: it holds nout + lim samples), an input row, nothing (a one-row
 * band's root), a DM's series. */
enum { K_ROW, K_IN, K_NONE, K_OUT };

/* One row: d[t] = u[t + ua] + l[t + la] (three 16-byte loads). */
struct __align__(16) Op {
    int ukind, uref, ulim, ua;
    int lkind, lref, llim, la;
    int dkind, dref, dlim, pad;
};

/* A launch's arrays: the input rows (stride istride, inlen samples valid,
 * integer codes less bias), the stored rows (pitch apart), the series. */
template <typename T, typename S>
struct Args {
    const T *in;
    int64_t istride;
    int inlen;                    /* samples in a row: a gulp's, far below 2^31 (32-bit
                                     offsets within a row save the registers of 64-bit ones) */
    int bias;
    S *rows;                      /* floats, or 16-bit integers where every stored sum fits one
                                     (integer input): the same values either way */
    int64_t pitch;
    int nout;
    float *out;
    int64_t ostride;
};

/* A thread's VEC consecutive samples as an aligned vector of 8: 16-byte
 * loads and stores of 16-bit rows (bytes of 8-bit input, two of floats)
 * instead of one instruction a sample. */
template <typename E>
struct alignas(8 * sizeof(E)) Pack {
    E e[8];
};

/* Elements m .. m + 7 of two consecutive packs (m < 8), shifted as 32-bit
 * words: the shift is an item's, the same for a whole block, so the
 * switch does not diverge and the words stay in registers. */
template <typename E>
__device__ __forceinline__ Pack<E> shifted(const Pack<E> &a, const Pack<E> &b, int m)
{
    constexpr int W = 2 * (int)sizeof(E);        /* words in a pack */
    uint32_t w[2 * W], o[W];
    memcpy(w, &a, sizeof a);
    memcpy(w + W, &b, sizeof b);
    const int off = m * (int)sizeof(E), r = 8 * (off % 4);
    switch (off / 4) {
#define SHIFT_WORDS(Q)                                                   \
    case Q:                                                              \
        if (Q < W) {                                                     \
            _Pragma("unroll") for (int j = 0; j < W; j++)                \
                o[j] = __funnelshift_r(w[j + Q], w[(j + Q + 1) % (2 * W)], r); \
        }                                                                \
        break;
        SHIFT_WORDS(0) SHIFT_WORDS(1) SHIFT_WORDS(2) SHIFT_WORDS(3)
        SHIFT_WORDS(4) SHIFT_WORDS(5) SHIFT_WORDS(6) SHIFT_WORDS(7)
#undef SHIFT_WORDS
    }
    Pack<E> p;
    memcpy(&p, o, sizeof p);
    return p;
}

/* This lane's aligned pack at b and the one after it, zero where a pack
 * starts at or past end: the one after is the next lane's, by a shuffle
 * (the lanes' packs are consecutive; the warp's last lane only reads, see
 * LANES). One load a lane instead of two halved the L2 traffic the depths
 * are bound by (ncu, htru 8 s on an H100: L2 at 94% of its peak, half the
 * second loads missing L1). Every lane of the warp calls it. A pack that
 * starts below the row's end lies within its pitch or stride (both
 * multiples of 64). */
template <typename E>
__device__ __forceinline__ void pack_pair(const E *p, int b, int end, int m, Pack<E> &a,
                                          Pack<E> &n)
{
    constexpr int W = 2 * (int)sizeof(E);
    const Pack<E> zero = {};
    a = b < end ? *(const Pack<E> *)(p + b) : zero;
    if (!m)
        return;
    uint32_t w[W];
    memcpy(w, &a, sizeof a);
#pragma unroll
    for (int j = 0; j < W; j++)
        w[j] = __shfl_down_sync(0xffffffffu, w[j], 1);
    memcpy(&n, w, sizeof n);
}

/* Samples g .. g + VEC - 1 of row p (VEC = 8) as the pack they span,
 * shifted into place; whether any lies at or past end. */
template <typename E>
__device__ __forceinline__ Pack<E> gather_pack(const E *p, int g, int end, bool *tail)
{
    const int m = (int)(g & 7);
    Pack<E> a, n;
    pack_pair<E>(p, g - m, end, m, a, n);
    *tail = g + VEC > end;
    return m ? shifted<E>(a, n, m) : a;
}

/* Samples g .. g + VEC - 1 of row p (an input row's, T, or a stored row's)
 * as floats, zero from end on, as the CPU reads them. */
template <typename E, typename T>
__device__ __forceinline__ void gather_row(const E *p, int g, int end, int bias,
                                           float (&o)[VEC])
{
    bool tail;
    const Pack<E> s = gather_pack<E>(p, g, end, &tail);
#pragma unroll
    for (int j = 0; j < VEC; j++)
        o[j] = !tail || g + j < end ? decode<T>((T)s.e[j], bias) : 0.0f;
}

/* Samples g .. g + VEC - 1 of an operand: a stored row's or an input row's. */
template <typename T, typename S>
__device__ __forceinline__ void gather(int kind, int ref, int lim, int g,
                                       const Args<T, S> &A, float (&o)[VEC])
{
    if (kind == K_ROW)
        gather_row<S, S>(A.rows + (int64_t)ref * A.pitch, g, A.nout + lim, 0, o);
    else
        gather_row<T, T>(A.in + (int64_t)ref * A.istride, g, A.inlen, A.bias, o);
}

/* Store samples t .. t + VEC - 1 of a row within its range: the whole pack
 * where the range allows. */
template <typename E>
__device__ __forceinline__ void put_pack(E *p, int t, int end, const Pack<E> &r)
{
    if (t + VEC <= end)
        *(Pack<E> *)(p + t) = r;
    else
        for (int j = 0; j < VEC && t + j < end; j++)
            p[t + j] = r.e[j];
}

template <typename E>
__device__ __forceinline__ void put_floats(E *p, int t, int end, const float (&v)[VEC])
{
    Pack<E> r;
#pragma unroll
    for (int j = 0; j < VEC; j++)
        r.e[j] = (E)v[j];
    put_pack<E>(p, t, end, r);
}

/* One depth: blockIdx.y the item, VEC consecutive samples a thread. Each
 * row is upper plus lower, as on the CPU. */
template <typename T, typename S>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS_F)
    depth_kernel(const Op *I, int nitem, Args<T, S> A)
{
    const int lane = threadIdx.x & 31;
    const int t = blockIdx.x * SPAN + ((threadIdx.x >> 5) * LANES + lane) * VEC;
    for (int k = blockIdx.y; k < nitem; k += gridDim.y) {
        const Op x = I[k];
        float v[VEC], l[VEC];
        gather<T, S>(x.ukind, x.uref, x.ulim, t + x.ua, A, v);
        if (x.lkind != K_NONE) {
            gather<T, S>(x.lkind, x.lref, x.llim, t + x.la, A, l);
#pragma unroll
            for (int i = 0; i < VEC; i++)
                v[i] = v[i] + l[i];
        }
        if (lane == LANES)
            continue;
        if (x.dkind == K_ROW)
            put_floats<S>(A.rows + (int64_t)x.dref * A.pitch, t, A.nout + x.dlim, v);
        else if (x.dkind == K_OUT)
            put_floats<float>(A.out + (int64_t)x.dref * A.ostride, t, A.nout, v);
    }
}

/* 16-bit integer j of four words of two. */
__device__ __forceinline__ int half_of(const uint32_t (&w)[4], int j)
{
    return (int16_t)(j % 2 ? w[j / 2] >> 16 : w[j / 2] & 0xffffu);
}

/* ---- the warp pipelines (byte input, 16-bit rows) ---- */

#define WSTAGES 4                 /* copies in flight a warp: stages of 256 samples */
#define WCHUNK 8                  /* stages a warp makes of one row */
#define WPACKS 33                 /* packs a stage holds of an operand: the warp's and the next */
#define WARPS (THREADS / 32)
#define WSPAN (WCHUNK * 256)      /* samples of a row a warp makes */

/* A warp's staging: each operand's packs of WSTAGES stages (16 bytes a
 * pack, bytes of input using the first 8). */
struct WarpBuf {
    uint4 p[2][WSTAGES][WPACKS];
};

/* One operand as a warp sees it: its row, its end, its aligned start and
 * the shift within a pack; kind K_IN (bytes), K_ROW (16-bit) or K_NONE. */
struct Operand {
    const void *row;
    int end, b0, m, kind;
};

template <typename T>
__device__ __forceinline__ Operand operand_of(int kind, int ref, int lim, int g0,
                                              const Args<T, int16_t> &A)
{
    Operand o;
    o.kind = kind;
    o.m = g0 & 7;
    o.b0 = g0 - o.m;
    if (kind == K_ROW) {
        o.row = A.rows + (int64_t)ref * A.pitch;
        o.end = A.nout + lim;
    } else {
        o.row = A.in + (int64_t)ref * A.istride;
        o.end = kind == K_IN ? A.inlen : 0;
    }
    return o;
}

/* cp.async (sm_80 on): a copy of `size` bytes of which `bytes` are read
 * and the rest zero-filled, groups of them committed and waited for.
 * Before sm_80 plain loads and stores, done at once. */
__device__ __forceinline__ void copy_async(uint4 *dst, const char *src, int size, int bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    if (size == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                     "r"(bytes));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(d), "l"(src),
                     "r"(bytes));
#else
    if (size == 16)
        *dst = bytes ? *(const uint4 *)src : make_uint4(0, 0, 0, 0);
    else
        *(uint2 *)dst = bytes ? *(const uint2 *)src : make_uint2(0, 0);
#endif
}

__device__ __forceinline__ void copy_commit()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Wait until at most `pending` committed groups are in flight. */
template <int pending>
__device__ __forceinline__ void copy_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
#endif
}

/* Copy this lane's pack of stage s (and lane 0 the pack after the warp's)
 * into dst, zero-filled where a pack starts at or past the end. */
__device__ __forceinline__ void copy_stage(const Operand &o, int s, int lane, uint4 *dst)
{
    if (o.kind == K_NONE)
        return;
    const int size = o.kind == K_ROW ? 16 : 8;
    for (int j = lane; j < WPACKS; j += 32) {
        const int at = o.b0 + s * 256 + 8 * j;
        const char *src = (const char *)o.row + (int64_t)(at < o.end ? at : 0) * (size / 8);
        copy_async(dst + j, src, size, at < o.end ? size : 0);
    }
}

/* This lane's 8 samples of stage s from the staged packs, as four words of
 * two 16-bit integers, zero from the end on. */
__device__ __forceinline__ void staged(const Operand &o, int s, int lane, const uint4 *buf,
                                       uint32_t bias2, uint32_t (&w)[4])
{
    if (o.kind == K_NONE) {
        w[0] = w[1] = w[2] = w[3] = 0;
        return;
    }
    const int g = o.b0 + o.m + s * 256 + 8 * lane;
    if (o.kind == K_ROW) {
        const Pack<int16_t> a = *(const Pack<int16_t> *)(buf + lane);
        const Pack<int16_t> s2 =
            o.m ? shifted<int16_t>(a, *(const Pack<int16_t> *)(buf + lane + 1), o.m) : a;
        memcpy(w, &s2, sizeof w);
    } else {
        const Pack<uint8_t> a = *(const Pack<uint8_t> *)(buf + lane);
        const Pack<uint8_t> s2 =
            o.m ? shifted<uint8_t>(a, *(const Pack<uint8_t> *)(buf + lane + 1), o.m) : a;
        uint32_t b[2];
        memcpy(b, &s2, sizeof b);
#pragma unroll
        for (int j = 0; j < 4; j++)
            w[j] = __vsub2(__byte_perm(b[j / 2], 0, j % 2 ? 0x4342 : 0x4140), bias2);
    }
    if (g + VEC > o.end) {
#pragma unroll
        for (int j = 0; j < VEC; j++)
            if (g + j >= o.end)
                w[j / 2] &= j % 2 ? 0x0000ffffu : 0xffff0000u;
    }
}

/* Item x's row over WCHUNK stages of 256 samples from t0, a warp: its
 * operands' packs copied into shared memory WSTAGES - 1 stages ahead of
 * the one summed, so that a warp keeps up to 4 KB of reads in flight
 * without registers for them. */
template <typename T>
__device__ __forceinline__ void warp_item(const Op &x, int t0, const Args<T, int16_t> &A,
                                          WarpBuf &B, int lane)
{
    const int dend = x.dkind == K_ROW ? A.nout + x.dlim : A.nout;
    const int nst = min(WCHUNK, (dend - t0 + 255) / 256);
    const uint32_t bias2 = (uint32_t)(A.bias & 0xffff) * 0x10001u;
    const Operand u = operand_of<T>(x.ukind, x.uref, x.ulim, t0 + x.ua, A);
    const Operand l = operand_of<T>(x.lkind, x.lref, x.llim, t0 + x.la, A);
    for (int s = 0; s < WSTAGES - 1; s++) {
        if (s < nst) {
            copy_stage(u, s, lane, B.p[0][s]);
            copy_stage(l, s, lane, B.p[1][s]);
        }
        copy_commit();
    }
    for (int s = 0; s < nst; s++) {
        const int next = s + WSTAGES - 1;
        if (next < nst) {
            copy_stage(u, next, lane, B.p[0][next % WSTAGES]);
            copy_stage(l, next, lane, B.p[1][next % WSTAGES]);
        }
        copy_commit();
        copy_wait<WSTAGES - 1>();
        __syncwarp();
        uint32_t v[4], w[4];
        staged(u, s, lane, B.p[0][s % WSTAGES], bias2, v);
        staged(l, s, lane, B.p[1][s % WSTAGES], bias2, w);
        __syncwarp();
        const int t = t0 + s * 256 + 8 * lane;
        if (x.dkind == K_ROW) {
            Pack<int16_t> r;
#pragma unroll
            for (int j = 0; j < 4; j++)
                v[j] = __vadd2(v[j], w[j]);
            memcpy(&r, v, sizeof r);
            put_pack<int16_t>(A.rows + (int64_t)x.dref * A.pitch, t, dend, r);
        } else if (x.dkind == K_OUT) {
            float f[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++)
                f[j] = (float)(half_of(v, j) + half_of(w, j));
            put_floats<float>(A.out + (int64_t)x.dref * A.ostride, t, dend, f);
        }
    }
}

/* ---- one launch for every depth (byte input, 16-bit rows) ---- */

/* Units of work in the order warps take them: column (d, c) is every item
 * of depth d over chunk c (WSPAN samples from c * WSPAN), its units
 * [start, start + n), items from item0. */
struct Column {
    int start, item0, n, c, d;
};

/* A launch's work list and the flags that say a stored row's chunk is
 * made (flags[row * fpitch + chunk] == epoch). */
struct Flow {
    const Column *col;
    int ncol, total;
    int *next;                    /* the next unit to take */
    int *flags;
    int fpitch, epoch;
};

__device__ __forceinline__ int load_acquire(const int *p)
{
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_release(int *p, int v)
{
    asm volatile("st.release.gpu.global.b32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

/* Wait (lane 0) for the chunks of stored row `ref` (nout + lim samples)
 * that samples from..from + WSPAN + 7 lie in. */
__device__ __forceinline__ void wait_row(const Flow &F, int ref, int lim, int from, int nout)
{
    const int have = (nout + lim + WSPAN - 1) / WSPAN;
    const int hi = min((from + WSPAN + 7) / WSPAN, have - 1);
    for (int c = from / WSPAN; c <= hi; c++)
        while (load_acquire(F.flags + (int64_t)ref * F.fpitch + c) != F.epoch)
            __nanosleep(100);
}

/* Column of unit u, the last whose start is at most u, looked for from
 * column j on (a column at or before it: a warp's units only grow), 32
 * columns a step across the lanes; one step but where u passed 31. */
__device__ __forceinline__ int column_from(const Flow &F, int j, int u, int lane)
{
    for (;;) {
        const int i = j + lane;
        const unsigned b = __ballot_sync(0xffffffffu, i < F.ncol && F.col[i].start <= u);
        if (b != 0xffffffffu)
            return j + 31 - __clz(b);
        j += 31;
    }
}

/* Every depth in one launch: each warp takes the next unit (an item over
 * a chunk), waits for the chunks of the rows it reads and makes it as
 * warp_item does, then flags its own chunk made. The columns are ordered
 * so that every unit a unit reads was taken before it (flow_columns):
 * no unit waits on one that no warp holds. Later depths start while
 * earlier ones finish, with no launch drained between them, and read
 * what the depth before wrote a moment ago, about half of it from L2
 * (ncu, htru 8 s). */
template <typename T>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    flow_kernel(const Op *I, Flow F, Args<T, int16_t> A)
{
    __shared__ WarpBuf sbuf[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int j = 0;;) {
        int u = 0;
        if (lane == 0)
            u = atomicAdd(F.next, 1);
        u = __shfl_sync(0xffffffffu, u, 0);
        if (u >= F.total)
            return;
        j = column_from(F, j, u, lane);
        const Column col = F.col[j];
        const Op x = I[col.item0 + u - col.start];
        const int t0 = col.c * WSPAN;
        if (lane == 0) {
            if (x.ukind == K_ROW)
                wait_row(F, x.uref, x.ulim, t0 + x.ua, A.nout);
            if (x.lkind == K_ROW)
                wait_row(F, x.lref, x.llim, t0 + x.la, A.nout);
        }
        __syncwarp();
        warp_item<T>(x, t0, A, sbuf[warp], lane);
        if (x.dkind == K_ROW) {
            __syncwarp();         /* orders the lanes' stores before lane 0's release */
            if (lane == 0)
                store_release(F.flags + (int64_t)x.dref * F.fpitch + col.c, F.epoch);
        }
    }
}

/* ---- bands of depths in shared memory (byte input, 16-bit rows) ---- */

#ifndef FTHREADS
#define FTHREADS 512
#endif
#ifndef FBLOCKS
#define FBLOCKS 2                 /* blocks a multiprocessor: shared memory's share */
#endif
#define FWARPS (FTHREADS / 32)
#define MAXSTAGE 8                /* depths a band fuses at most */

/* A group's row staged from device memory: an input row (K_IN) or a
 * stored row of a band below (K_ROW), samples t0 + off .. of a tile into
 * slot `slot` (off a multiple of 8). */
struct __align__(16) FExt {
    int slot, kind, ref, lim, off, pad[3];
};

/* One row of a group over npk packs: u[su + t] + l[sl + t] (l < 0: none)
 * into slot dst, or for a target (dst < 0) into stored row gref (K_ROW,
 * holding nout + glim samples) or DM series gref (K_OUT). */
struct __align__(16) FOp {
    int u, su, l, sl, dst, npk, gref, glim;
};

/* A group: its descriptors from desc0 (in FOps), the staged rows' then
 * its rows', stage by stage (a depth each). */
struct FGroup {
    int desc0, next, nstage, nop;
    int nops[MAXSTAGE];
};

struct BandArgs {
    const uint8_t *in;
    int64_t istride;
    int inlen;
    uint32_t bias2;               /* the bias in both halves of a word */
    int16_t *rows;                /* the stored rows (targets of bands below the top) */
    int64_t pitch;
    int nout;
    float *out;
    int64_t ostride;
    int T, pw, nslot, ntile;      /* samples a tile makes, packs a slot holds, slots, tiles */
};

/* Pack p of an external row into its slot: bytes widened less the bias,
 * zero from the row's end on. */
__device__ __forceinline__ void stage_ext(const FExt &e, int t0, int p, const BandArgs &A,
                                          uint4 *slot)
{
    const int g = t0 + e.off + 8 * p;
    const int end = e.kind == K_IN ? A.inlen : A.nout + e.lim;
    uint32_t w[4] = { 0, 0, 0, 0 };
    if (g < end) {
        if (e.kind == K_IN) {
            const uint2 b = __ldg((const uint2 *)(A.in + (int64_t)e.ref * A.istride + g));
#pragma unroll
            for (int j = 0; j < 4; j++)
                w[j] = __vsub2(__byte_perm(j < 2 ? b.x : b.y, 0, j % 2 ? 0x4342 : 0x4140),
                               A.bias2);
        } else {
            const uint4 v = __ldg((const uint4 *)(A.rows + (int64_t)e.ref * A.pitch + g));
            w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
        }
        if (g + VEC > end) {
#pragma unroll
            for (int j = 0; j < VEC; j++)
                if (g + j >= end)
                    w[j / 2] &= j % 2 ? 0x0000ffffu : 0xffff0000u;
        }
    }
    slot[p] = make_uint4(w[0], w[1], w[2], w[3]);
}

/* Samples s + 8 p .. s + 8 p + 7 of a slot as four words of two: the pack
 * they start in and the next one, the words selected in two steps and
 * shifted by a half where s is odd, without branches on the shift (the
 * same for a whole row) or half-word moves. */
__device__ __forceinline__ void slot_words(const uint4 *slot, int s, int p, uint32_t (&o)[4])
{
    const uint4 a = slot[p + (s >> 3)];
    if (!(s & 7)) {
        o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w;
        return;
    }
    const uint4 b = slot[p + (s >> 3) + 1];
    const bool two = s & 4, one = s & 2;
    const uint32_t x[6] = { two ? a.z : a.x, two ? a.w : a.y, two ? b.x : a.z,
                            two ? b.y : a.w, two ? b.z : b.x, two ? b.w : b.y };
    uint32_t y[5];
#pragma unroll
    for (int j = 0; j < 5; j++)
        y[j] = one ? x[j + 1] : x[j];
    const unsigned r = (s & 1) * 16;
#pragma unroll
    for (int j = 0; j < 4; j++)
        o[j] = __funnelshift_r(y[j], y[j + 1], r);
}

enum { TO_SLOT, TO_ROW, TO_DM };

/* Samples t .. t + 7 of a 16-bit row, four words of two, within its end. */
__device__ __forceinline__ void put_words(int16_t *row, int t, int end, const uint32_t (&r)[4])
{
    if (t + VEC <= end) {
        *(uint4 *)(row + t) = make_uint4(r[0], r[1], r[2], r[3]);
        return;
    }
    for (int j = 0; j < VEC && t + j < end; j++)
        row[t + j] = (int16_t)(j % 2 ? r[j / 2] >> 16 : r[j / 2]);
}

/* Row x of a group over its packs from this lane's: into its slot, or a
 * target into its stored row or its DM's series (sums past 16 bits). */
template <int TO>
__device__ __forceinline__ void band_row(const FOp &x, int t0, int lane, const BandArgs &A,
                                         uint4 *S)
{
    const uint4 *u = S + x.u * A.pw, *l = S + (x.l < 0 ? 0 : x.l) * A.pw;
    for (int p = lane; p < x.npk; p += 32) {
        uint32_t v[4], w[4] = { 0, 0, 0, 0 };
        slot_words(u, x.su, p, v);
        if (x.l >= 0)
            slot_words(l, x.sl, p, w);
        const int t = t0 + 8 * p;
        if (TO == TO_DM) {
            float f[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++)
                f[j] = (float)(half_of(v, j) + half_of(w, j));
            put_floats<float>(A.out + (int64_t)x.gref * A.ostride, t, A.nout, f);
        } else {
            uint32_t r[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                r[j] = __vadd2(v[j], w[j]);
            if (TO == TO_SLOT)
                S[x.dst * A.pw + p] = make_uint4(r[0], r[1], r[2], r[3]);
            else
                put_words(A.rows + (int64_t)x.gref * A.pitch, t, A.nout + x.glim, r);
        }
    }
}

/* A band: blockIdx.x a group, tiles of T samples from blockIdx.y on. The
 * group's descriptors are copied into shared memory once (the slots
 * leave L1 no room to cache them). Each tile stages the group's external
 * rows into slots, then makes its rows depth by depth in slots, the
 * targets into device memory: the rows between never leave the
 * multiprocessor. A warp takes a row at a time, its lanes consecutive
 * packs (rows differ in their shifts). */
__global__ void __launch_bounds__(FTHREADS, FBLOCKS)
    band_kernel(const FGroup *__restrict__ G, const uint4 *__restrict__ D, BandArgs A)
{
    extern __shared__ uint4 S[];
    __shared__ FGroup g;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0)
        g = G[blockIdx.x];
    __syncthreads();
    uint4 *desc = S + A.nslot * A.pw + 4;
    for (int i = threadIdx.x; i < 2 * (g.next + g.nop); i += FTHREADS)
        desc[i] = D[2 * (int64_t)g.desc0 + i];
    __syncthreads();
    const FExt *E = (const FExt *)desc;
    const FOp *O = (const FOp *)(desc + 2 * g.next);
    for (int tile = blockIdx.y; tile < A.ntile; tile += gridDim.y) {
        const int t0 = tile * A.T;
        for (int i = warp; i < g.next; i += FWARPS) {
            const FExt e = E[i];
            for (int p = lane; p < A.pw; p += 32)
                stage_ext(e, t0, p, A, S + e.slot * A.pw);
        }
        __syncthreads();
        for (int s = 0, o = 0; s < g.nstage; o += g.nops[s++]) {
            for (int i = warp; i < g.nops[s]; i += FWARPS) {
                const FOp x = O[o + i];
                if (x.dst >= 0)
                    band_row<TO_SLOT>(x, t0, lane, A, S);
                else if (x.dst == -1)
                    band_row<TO_ROW>(x, t0, lane, A, S);
                else
                    band_row<TO_DM>(x, t0, lane, A, S);
            }
            __syncthreads();
        }
    }
}

/* ---- the items (host) ---------------------------------------------------------- */

struct FdmtLevel {
    const ddtk_fdmt_plan *f;
    Encoding enc;
    Op *d_items;                  /* every depth's items, depth by depth */
    int ndepth;                   /* launches: the tree's depth (1 for a one-row band) */
    int *first;                   /* depth k's items: [first[k], first[k + 1]) */
    int *lim;                     /* depth k's largest dlim */
    int nrows;                    /* stored rows */
    int narrow;                   /* stored as 16-bit integers */
    int64_t reach;                /* the most a stored row holds past the outputs */
    double bytes;                 /* DRAM bytes per output sample (the model) */
    int kmul;                     /* column (d, c)'s order: c + kmul * d (flow_columns) */
    int grid;                     /* the flow kernel's blocks: as many as fit at once */
    int nband, nstore;            /* bands of depths; stored rows they write */
    int nsm;                      /* multiprocessors */
    struct Band *band;
    struct Buffers {
        cudaStream_t st;
        void *rows;
        size_t bytes;
        int *flags, *next;        /* the flow kernel's (16-bit rows) */
        int fpitch, epoch;
        Column *cols;
        int ncol, total, colcap;
        int64_t cols_nout;        /* the nout cols were made for */
    } buf[2];
};

/* Stored rows: every node but the leaves and the root, rowbase[s] its
 * first; whether 16-bit integers hold them. */
static void store_rows(FdmtLevel *L, int *rowbase)
{
    const ddtk_fdmt_plan *f = L->f;
    int widest = 0;
    L->nrows = 0;
    for (int s = 0; s < f->nnode; s++) {
        const ddtk_fdmt_node *N = &f->node[s];
        rowbase[s] = -1;
        if (N->up < 0 || s == f->nnode - 1)
            continue;
        rowbase[s] = L->nrows;
        L->nrows += N->nd;
        L->reach = N->reach > L->reach ? N->reach : L->reach;
        widest = N->b - N->a > widest ? N->b - N->a : widest;
    }
    /* Integer samples lie in [-bias, maxval - bias]: a stored row's sums fit
     * 16 bits while its channels times the largest magnitude do. */
    const Encoding e = L->enc;
    const int64_t big = e.bias > e.maxval - e.bias ? e.bias : e.maxval - e.bias;
    L->narrow = e.storage == ST_U8 && e.maxval > 0 && big * widest <= 32767;
}

/* Row `row` of node s as an operand shifted by `shift`. */
static void operand(const ddtk_fdmt_plan *f, const int *rowbase, int s, int row, int shift,
                    int *kind, int *ref, int *lim, int *sh)
{
    const ddtk_fdmt_node *n = &f->node[s];
    *kind = n->up < 0 ? K_IN : K_ROW;
    *ref = n->up < 0 ? n->a : rowbase[s] + row;
    *lim = n->up < 0 ? 0 : n->route[4 * (size_t)row + 3];
    *sh = shift;
}

/* The item making row r (route r) of node s into (dkind, dref, dlim), both
 * operands shifted by a more. */
static Op item(const ddtk_fdmt_plan *f, const int *rowbase, int s, const int32_t *r, int a,
               int dkind, int dref, int dlim)
{
    const ddtk_fdmt_node *N = &f->node[s];
    Op x;
    memset(&x, 0, sizeof x);
    if (N->up < 0) {              /* a one-row band: the root is the input row */
        x.ukind = K_IN;
        x.uref = N->a;
        x.ua = a;
        x.lkind = K_NONE;
    } else {
        operand(f, rowbase, N->up, r[0], a, &x.ukind, &x.uref, &x.ulim, &x.ua);
        operand(f, rowbase, N->lo, r[1], a + r[2], &x.lkind, &x.lref, &x.llim, &x.la);
    }
    x.dkind = dkind;
    x.dref = dref;
    x.dlim = dlim;
    return x;
}

/* Every computed row's item, by depth (the root's DMs last); the DRAM model. */
static int build_items(FdmtLevel *L, const int *rowbase, int insize, Op **items, int **inode,
                       int *nitems)
{
    const ddtk_fdmt_plan *f = L->f;
    const int R = f->nnode - 1, rowsize = L->narrow ? 2 : 4;
    size_t most = (size_t)f->ndm;
    for (int s = 0; s < R; s++)
        most += (size_t)f->node[s].nd;
    Op *it = (Op *)ddtk_malloc(most * sizeof *it, "FDMT items");
    int *in = (int *)ddtk_malloc(most * sizeof *in, "FDMT items");
    if (!it || !in) {
        free(it);
        free(in);
        return DDTK_ESYS;
    }
    int n = 0;
    for (int d = 1; d <= L->ndepth; d++) {
        L->first[d] = n;
        L->lim[d] = 0;
        for (int s = 0; s < R && d < L->ndepth; s++) {
            const ddtk_fdmt_node *N = &f->node[s];
            if (N->depth != d)
                continue;
            for (int i = 0; i < N->nd; i++) {
                const int32_t *r = N->route + 4 * (size_t)i;
                if (r[3] < 0)
                    continue;
                in[n] = s;
                it[n++] = item(f, rowbase, s, r, 0, K_ROW, rowbase[s] + i, r[3]);
                L->lim[d] = r[3] > L->lim[d] ? r[3] : L->lim[d];
                L->bytes += rowsize;
            }
        }
        for (int i = 0; i < f->ndm && d == L->ndepth; i++) {
            in[n] = R;
            it[n++] = item(f, rowbase, R, f->out_route + 4 * (size_t)i, f->out_route[4 * i + 3],
                           K_OUT, i, 0);
            L->bytes += 4;
        }
    }
    L->first[L->ndepth + 1] = n;
    int amax = 0;
    for (int k = 0; k < n; k++) {
        L->bytes += it[k].ukind == K_IN ? insize : rowsize;
        if (it[k].lkind != K_NONE)
            L->bytes += it[k].lkind == K_IN ? insize : rowsize;
        amax = it[k].ukind == K_ROW && it[k].ua > amax ? it[k].ua : amax;
        amax = it[k].lkind == K_ROW && it[k].la > amax ? it[k].la : amax;
    }
    /* A unit over chunk c reads its rows' chunks c .. c + 1 + (a + 7) / WSPAN. */
    L->kmul = 2 + (amax + 7) / WSPAN;
    *items = it;
    *inode = in;
    *nitems = n;
    return DDTK_OK;
}

/* ---- the bands (host) ---------------------------------------------------------- */

#ifndef BAND0
#define BAND0 5                   /* depths of the lowest band */
#endif
#ifndef BANDN
#define BANDN 5                   /* the most depths of each band above it */
#endif

/* The launch of a band of depths (d0, d1]: its groups, tiles of T samples,
 * slots of pitch samples, shared memory, the targets' largest lim. */
struct Band {
    int d0, d1, T, pitch, ngroup, nslot, lim;
    size_t smem;
    FGroup *d_groups;
    FOp *d_desc;
};

/* What the groups are made from: the items with their depths and nodes,
 * each stored row's item, the depth that reads it and its id among the
 * stored targets; per-group scratch by key (an item for a row made in the
 * group, nitem + channel for an input row, nitem + nchan + row for a
 * stored row staged). */
struct BandCtx {
    const Op *it;
    int n, nchan;
    int *depth, *inode, *rowitem, *cdepth, *gid;
    int *stamp, *start, *end, *death, *slot, *lim, *list, *isk;
    int nlist, gen;
};

static int key_of(const BandCtx *C, int d0, int kind, int ref)
{
    if (kind == K_ROW && C->depth[C->rowitem[ref]] > d0)
        return C->rowitem[ref];
    return C->n + (kind == K_IN ? ref : C->nchan + ref);
}

/* Key k's window grown to what a row of stage `stage` starting at start..end
 * (tile-relative, before T) reads at shift sh. */
static void reach_key(BandCtx *C, int g, int k, int start, int end, int sh, int stage, int lim)
{
    if (C->stamp[k] != g) {
        C->stamp[k] = g;
        C->start[k] = start + sh;
        C->end[k] = end + sh;
        C->death[k] = stage;
        C->lim[k] = lim;
        C->isk[k] = 0;
        C->list[C->nlist++] = k;
        return;
    }
    C->start[k] = start + sh < C->start[k] ? start + sh : C->start[k];
    C->end[k] = end + sh > C->end[k] ? end + sh : C->end[k];
    C->death[k] = stage > C->death[k] ? stage : C->death[k];
}

/* Group g's rows for targets tg[0 .. nt): every row they need within the
 * band and the rows staged, their windows (off a multiple of 8) and slots;
 * returns the slots, *H the most a slot holds past T. */
static int group_rows(BandCtx *C, const int *tg, int nt, int d0, int d1, int *H)
{
    const int g = ++C->gen;
    C->nlist = 0;
    for (int i = 0; i < nt; i++) {
        reach_key(C, g, tg[i], 0, 0, 0, 0, 0);
        C->death[tg[i]] = -1;
        C->isk[tg[i]] = 1;
    }
    for (int d = d1; d > d0; d--)
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            if (k >= C->n || C->depth[k] != d)
                continue;
            const Op &x = C->it[k];
            reach_key(C, g, key_of(C, d0, x.ukind, x.uref), C->start[k], C->end[k], x.ua, d - d0,
                      x.ulim);
            if (x.lkind != K_NONE)
                reach_key(C, g, key_of(C, d0, x.lkind, x.lref), C->start[k], C->end[k], x.la,
                          d - d0, x.llim);
        }
    *H = 0;
    for (int i = 0; i < C->nlist; i++) {
        const int k = C->list[i];
        C->start[k] = C->start[k] / 8 * 8;
        const int ext = (C->end[k] - C->start[k] + 7) / 8 * 8;
        *H = !C->isk[k] && ext > *H ? ext : *H;
    }
    /* Slots by stage: a row's slot is free from the stage after its last reader. */
    int nslot = 0, nfree = 0;
    int *freed = C->list + C->nlist;
    for (int s = 0; s <= d1 - d0; s++) {
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            if (!C->isk[k] && C->death[k] == s - 1)
                freed[nfree++] = C->slot[k];
        }
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            const int born = k >= C->n ? 0 : C->depth[k] - d0;
            if (!C->isk[k] && born == s)
                C->slot[k] = nfree ? freed[--nfree] : nslot++;
        }
    }
    return nslot;
}

/* Group g's descriptors for tiles of T samples, from D[*nd]: its staged
 * rows, then its rows stage by stage. */
static void group_emit(BandCtx *C, int d0, int d1, int T, FGroup *G, FOp *D, int *nd)
{
    static_assert(sizeof(FExt) == sizeof(FOp), "a group's descriptors share one array");
    memset(G, 0, sizeof *G);
    G->desc0 = *nd;
    G->nstage = d1 - d0;
    for (int i = 0; i < C->nlist; i++) {
        const int k = C->list[i];
        if (k < C->n)
            continue;
        const int ch = k - C->n < C->nchan;
        const FExt e = { C->slot[k], ch ? K_IN : K_ROW,
                         ch ? k - C->n : C->gid[k - C->n - C->nchan], C->lim[k], C->start[k],
                         { 0, 0, 0 } };
        memcpy(&D[(*nd)++], &e, sizeof e);
        G->next++;
    }
    for (int s = 1; s <= d1 - d0; s++)
        for (int i = 0; i < C->nlist; i++) {
            const int k = C->list[i];
            if (k >= C->n || C->depth[k] != d0 + s)
                continue;
            const Op &x = C->it[k];
            const int u = key_of(C, d0, x.ukind, x.uref);
            const int l = x.lkind == K_NONE ? -1 : key_of(C, d0, x.lkind, x.lref);
            FOp o;
            o.u = C->slot[u];
            o.su = C->start[k] + x.ua - C->start[u];
            o.l = l < 0 ? -1 : C->slot[l];
            o.sl = l < 0 ? 0 : C->start[k] + x.la - C->start[l];
            o.dst = C->isk[k] ? (x.dkind == K_OUT ? -2 : -1) : C->slot[k];
            o.npk = C->isk[k] ? T / 8 : (T + C->end[k] - C->start[k] + 7) / 8;
            o.gref = x.dkind == K_OUT ? x.dref : x.dkind == K_ROW ? C->gid[x.dref] : 0;
            o.glim = x.dlim;
            D[(*nd)++] = o;
            G->nops[s - 1]++;
            G->nop++;
        }
}

/* Targets of band (d0, d1] in item order, split node by node into groups
 * of at most gmax: group i is tg[gs[i] .. gs[i + 1]). */
static int band_groups(const BandCtx *C, const int *tg, int nt, int gmax, int *gs)
{
    int ng = 0;
    for (int a = 0; a < nt;) {
        int b = a;
        while (b < nt && C->inode[tg[b]] == C->inode[tg[a]])
            b++;
        const int parts = (b - a + gmax - 1) / gmax;
        for (int j = 0; j < parts; j++)
            gs[ng++] = a + (int)((int64_t)(b - a) * j / parts);
        a = b;
    }
    gs[ng] = nt;
    return ng;
}

/* Band (d0, d1] planned for the group size and tile that move the fewest
 * bytes per output sample (staged rows read, targets written, and a warp's
 * sums in shared memory counted as 0.3 bytes a lane's sample, idle lanes
 * included) in the shared memory of FBLOCKS blocks a multiprocessor, and
 * uploaded; 1 where no group size fits. */
static int plan_band(BandCtx *C, int d0, int d1, size_t budget, Band *B, double *bytes)
{
    int nt = 0;
    for (int k = 0; k < C->n; k++)
        if (C->depth[k] > d0 && C->depth[k] <= d1
            && (C->it[k].dkind == K_OUT || C->cdepth[C->it[k].dref] > d1))
            C->list[nt++] = k;
    int *tg = (int *)ddtk_malloc((size_t)(nt ? nt : 1) * sizeof *tg, "FDMT bands");
    int *gs = (int *)ddtk_malloc((size_t)(nt + 1) * sizeof *gs, "FDMT bands");
    if (!tg || !gs) {
        free(tg);
        free(gs);
        return DDTK_ESYS;
    }
    memcpy(tg, C->list, (size_t)nt * sizeof *tg);
    int best = 0, T = 0;
    size_t rows = 0;
    double cost = 0;
    for (int gmax = 64; gmax >= 1; gmax /= 2) {
        const int ng = band_groups(C, tg, nt, gmax, gs);
        int nslot = 1, H = 0, ndesc = 0;
        double next = 0, ops = 0, outb = 0;
        for (int g = 0; g < ng; g++) {
            int h;
            const int s = group_rows(C, tg + gs[g], gs[g + 1] - gs[g], d0, d1, &h);
            nslot = s > nslot ? s : nslot;
            H = h > H ? h : H;
            ndesc = C->nlist > ndesc ? C->nlist : ndesc;
            for (int i = 0; i < C->nlist; i++) {
                const int k = C->list[i];
                next += k >= C->n;
                ops += k < C->n;
                outb += C->isk[k] ? (C->it[k].dkind == K_OUT ? 4 : 2) : 0;
            }
        }
        const int64_t room = ((int64_t)budget - 64 - ndesc * (int64_t)sizeof(FOp)) / (2 * nslot)
                             - H - 8;
        for (int t = 64; t <= room && t <= 2048; t += 8) {
            const double passes = (t + H + 8 + 255) / 256;      /* of a warp over a row */
            const double c = (next * 2 * (t + H) + 0.3 * ops * 256 * passes) / t + outb;
            if (!best || c < cost) {
                best = gmax, T = t, cost = c, rows = (size_t)(next + ops);
            }
        }
    }
    const int ng = best ? band_groups(C, tg, nt, best, gs) : 0;
    FGroup *G = (FGroup *)ddtk_calloc((size_t)(ng ? ng : 1), sizeof *G, "FDMT bands");
    FOp *D = (FOp *)ddtk_malloc((rows ? rows : 1) * sizeof *D, "FDMT bands");
    int rc = !best ? 1 : G && D ? DDTK_OK : DDTK_ESYS;
    int H = 0, nslot = 1, nd = 0, ndesc = 0;
    for (int g = 0; !rc && g < ng; g++) {
        int h;
        const int s = group_rows(C, tg + gs[g], gs[g + 1] - gs[g], d0, d1, &h);
        nslot = s > nslot ? s : nslot;
        H = h > H ? h : H;
        ndesc = C->nlist > ndesc ? C->nlist : ndesc;
        group_emit(C, d0, d1, T, G + g, D, &nd);
    }
    /* A slot holds a pack more than its rows read: a shifted read takes the
     * pack after the last one, which must not be another slot's. */
    const int pitch = T + H + 8;
    *B = Band{ d0, d1, T, pitch, ng, nslot, 0,
               (size_t)nslot * pitch * 2 + 64 + (size_t)ndesc * sizeof(FOp), NULL, NULL };
    for (int i = 0; i < nd; i++)
        B->lim = D[i].dst == -1 && D[i].glim > B->lim ? D[i].glim : B->lim;
    *bytes += cost;
    if (!rc)
        rc = ddtk_cuda_upload((void **)&B->d_groups, G, (size_t)ng * sizeof *G,
                              "uploading the FDMT's bands");
    if (!rc)
        rc = ddtk_cuda_upload((void **)&B->d_desc, D, (size_t)nd * sizeof *D,
                              "uploading the FDMT's bands");
    free(tg);
    free(gs);
    free(G);
    free(D);
    return rc;
}

/* Depths (0, cut[1]], (cut[1], cut[2]], ...: BAND0 at the bottom, the rest
 * in near-equal bands of at most BANDN; returns how many. */
static int band_cuts(int ndepth, int *cut)
{
    cut[0] = 0;
    cut[1] = ndepth < BAND0 ? ndepth : BAND0;
    const int r = ndepth - cut[1], nb = (r + BANDN - 1) / BANDN;
    for (int j = 1; j <= nb; j++)
        cut[1 + j] = cut[1] + (int)((int64_t)r * j / nb);
    return 1 + nb;
}

/* Every band of level L planned from its items (it[0 .. n), node inode[k]);
 * 1 where one does not fit shared memory. */
static int build_bands(FdmtLevel *L, const Op *it, int n, const int *inode, size_t budget)
{
    const int nkeys = n + L->f->nrows + L->nrows, nr = L->nrows ? L->nrows : 1;
    BandCtx C;
    memset(&C, 0, sizeof C);
    C.it = it;
    C.n = n;
    C.nchan = L->f->nrows;
    C.inode = (int *)inode;
    int **arrays[] = { &C.depth, &C.rowitem, &C.cdepth, &C.gid, &C.stamp, &C.start, &C.end,
                       &C.death, &C.slot, &C.lim, &C.isk, &C.list };
    const int sizes[] = { n, nr, nr, nr, nkeys, nkeys, nkeys, nkeys, nkeys, nkeys, nkeys,
                          2 * nkeys };
    int rc = DDTK_OK;
    for (int i = 0; i < 12; i++)
        if (!(*arrays[i] = (int *)ddtk_calloc((size_t)sizes[i], sizeof(int), "FDMT bands")))
            rc = DDTK_ESYS;
    L->band = (Band *)ddtk_calloc((size_t)L->ndepth + 1, sizeof *L->band, "FDMT bands");
    int cut[64];                  /* depths: below 32 (channels below 2^31) */
    const int nb = band_cuts(L->ndepth, cut);
    rc = rc ? rc : L->band ? DDTK_OK : DDTK_ESYS;
    for (int d = 1; d <= L->ndepth; d++)
        for (int k = L->first[d]; k < L->first[d + 1]; k++)
            C.depth[k] = d;
    for (int k = 0; !rc && k < n; k++) {
        if (it[k].dkind == K_ROW)
            C.rowitem[it[k].dref] = k;
        if (it[k].ukind == K_ROW)
            C.cdepth[it[k].uref] = C.depth[k];
        if (it[k].lkind == K_ROW)
            C.cdepth[it[k].lref] = C.depth[k];
    }
    /* Stored rows: the targets of every band but the top one. */
    L->nstore = 0;
    for (int b = 0; !rc && b < nb; b++)
        for (int k = 0; k < n; k++)
            if (C.depth[k] > cut[b] && C.depth[k] <= cut[b + 1] && it[k].dkind == K_ROW)
                C.gid[it[k].dref] = C.cdepth[it[k].dref] > cut[b + 1] ? L->nstore++ : -1;
    L->bytes = 0;
    for (int b = 0; !rc && b < nb; b++)
        rc = plan_band(&C, cut[b], cut[b + 1], budget, &L->band[L->nband++], &L->bytes);
    for (int i = 0; i < 12; i++)
        free(*arrays[i]);
    return rc;
}

/* ---- the level ------------------------------------------------------------------ */

static void free_bands(FdmtLevel *L)
{
    for (int b = 0; L->band && b < L->nband; b++) {
        cudaFree(L->band[b].d_groups);
        cudaFree(L->band[b].d_desc);
    }
    free(L->band);
    L->band = NULL;
    L->nband = 0;
}

static void destroy(void *state)
{
    FdmtLevel *L = (FdmtLevel *)state;
    if (!L)
        return;
    cudaFree(L->d_items);
    free_bands(L);
    for (int i = 0; i < 2; i++) {
        cudaFree(L->buf[i].rows);
        cudaFree(L->buf[i].flags);
        cudaFree(L->buf[i].next);
        cudaFree(L->buf[i].cols);
    }
    free(L->first);
    free(L->lim);
    free(L);
}

static int create(const ddtk_plan *p, const ddtk_level *lv, Encoding enc,
                  const cudaDeviceProp &prop, void **state, int64_t *slack)
{
    (void)p;
    FdmtLevel *L = (FdmtLevel *)ddtk_calloc(1, sizeof *L, "GPU FDMT level");
    if (!L)
        return DDTK_ESYS;
    *state = L;
    L->f = (const ddtk_fdmt_plan *)lv->state;
    L->enc = enc;
    L->nsm = prop.multiProcessorCount;
    *slack = 0;                   /* input reads past nout + overlap give zero */
    const ddtk_fdmt_plan *f = L->f;
    const int insize = enc.storage == ST_U8 ? 1 : enc.storage == ST_U16 ? 2 : 4;
    int *rowbase = (int *)ddtk_malloc((size_t)f->nnode * sizeof *rowbase, "FDMT rows");
    L->ndepth = f->depth > 0 ? f->depth : 1;
    L->first = (int *)ddtk_calloc((size_t)L->ndepth + 2, sizeof *L->first, "FDMT depths");
    L->lim = (int *)ddtk_calloc((size_t)L->ndepth + 2, sizeof *L->lim, "FDMT depths");
    if (!rowbase || !L->first || !L->lim) {
        free(rowbase);
        return DDTK_ESYS;
    }
    store_rows(L, rowbase);
    Op *items = NULL;
    int *inode = NULL, n = 0;
    int rc = build_items(L, rowbase, insize, &items, &inode, &n);
    free(rowbase);
    if (rc)
        return rc;
    rc = ddtk_cuda_upload((void **)&L->d_items, items, (size_t)n * sizeof *items,
                          "uploading the FDMT's items");
    const double model = L->bytes;
    const size_t budget = std::min((size_t)prop.sharedMemPerBlockOptin,
                                   (size_t)prop.sharedMemPerMultiprocessor / FBLOCKS - 1024);
    if (!rc && L->narrow)
        rc = build_bands(L, items, n, inode, budget);
    free(items);
    free(inode);
    if (rc == 1) {                /* a band does not fit: the flow kernel */
        free_bands(L);
        L->bytes = model;
        rc = DDTK_OK;
    }
    if (!rc && L->nband)          /* the same for every level: the attribute is the kernel's */
        DDTK_CUDA(cudaFuncSetAttribute(band_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)budget), "sizing the FDMT's bands");
    int per = 0;
    if (!rc && L->narrow && !L->nband)
        DDTK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, flow_kernel<uint8_t>,
                                                                THREADS, 0),
                  "sizing the FDMT's kernel");
    L->grid = (per > 0 ? per : 1) * prop.multiProcessorCount;
    return rc;
}

static int64_t pitch_of(const FdmtLevel *L, int64_t nout)
{
    return ddtk_round_up(nout + L->reach, 64);
}

static int64_t row_bytes(const FdmtLevel *L, int64_t nout)
{
    return pitch_of(L, nout) * (L->narrow ? 2 : 4);
}

static int64_t dev_bytes(const void *state, int64_t most)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    if (L->nband)
        return (int64_t)L->nstore * row_bytes(L, most);
    const int64_t flags = L->narrow ? (pitch_of(L, most) + WSPAN - 1) / WSPAN * 4 : 0;
    return (int64_t)L->nrows * (row_bytes(L, most) + flags);
}

/* Stream st's stored rows, grown to `bytes` (contents not kept). */
static int reserve(FdmtLevel *L, cudaStream_t st, size_t bytes, FdmtLevel::Buffers **buf)
{
    FdmtLevel::Buffers *B = L->buf[0].st == st || !L->buf[0].st ? &L->buf[0] : &L->buf[1];
    *buf = B;
    B->st = st;
    if (B->bytes < bytes) {
        cudaFree(B->rows);
        B->rows = NULL;
        B->bytes = 0;
        DDTK_CUDA(cudaMalloc(&B->rows, bytes ? bytes : 4), "allocating FDMT rows");
        B->bytes = bytes;
    }
    return DDTK_OK;
}

/* A depth's launch over span samples of n items. */
template <typename T, typename S>
static void launch(int64_t span, int n, cudaStream_t st, const Op *items, const Args<T, S> &A)
{
    dim3 grid((unsigned)((span + SPAN - 1) / SPAN), (unsigned)(n < MAX_GRID_Y ? n : MAX_GRID_Y));
    depth_kernel<T, S><<<grid, THREADS, 0, st>>>(items, n, A);
}

/* Chunks of depth d's rows in a gulp of nout outputs. */
static int chunks_of(const FdmtLevel *L, int d, int64_t nout)
{
    return (int)((nout + L->lim[d] + WSPAN - 1) / WSPAN);
}

/* The columns of a gulp of nout outputs, in the order warps take them: by
 * c + kmul * d, then by depth. A unit over chunk c reads chunks up to
 * c + kmul - 1 of rows of lower depths, whose columns come before it
 * (c + kmul * d grows by kmul a depth). */
static int flow_columns(const FdmtLevel *L, int64_t nout, Column **cols, int *ncol, int *total)
{
    int most = 0, last = 0;
    for (int d = 1; d <= L->ndepth; d++) {
        const int nc = chunks_of(L, d, nout), key = nc - 1 + L->kmul * d;
        most += nc;
        last = key > last ? key : last;
    }
    Column *c = (Column *)ddtk_malloc((size_t)most * sizeof *c, "FDMT columns");
    if (!c)
        return DDTK_ESYS;
    int n = 0, at = 0;
    for (int key = 0; key <= last; key++)
        for (int d = 1; d <= L->ndepth; d++) {
            const int k = key - L->kmul * d, items = L->first[d + 1] - L->first[d];
            if (k < 0 || k >= chunks_of(L, d, nout) || !items)
                continue;
            c[n++] = Column{ at, L->first[d], items, k, d };
            at += items;
        }
    *cols = c;
    *ncol = n;
    *total = at;
    return DDTK_OK;
}

/* Buffer set B's flags (zeroed where they grow: a new epoch count) and
 * columns for a gulp of nout. */
static int flow_state(const FdmtLevel *L, FdmtLevel::Buffers *B, int64_t nout, cudaStream_t st)
{
    const int fpitch = (int)((pitch_of(L, nout) + WSPAN - 1) / WSPAN);
    if (!B->next)
        DDTK_CUDA(cudaMalloc(&B->next, sizeof(int)), "allocating the FDMT's counter");
    if (fpitch > B->fpitch) {
        cudaFree(B->flags);
        B->flags = NULL;
        B->fpitch = 0;
        const size_t bytes = (size_t)(L->nrows ? L->nrows : 1) * fpitch * sizeof(int);
        DDTK_CUDA(cudaMalloc(&B->flags, bytes), "allocating the FDMT's flags");
        DDTK_CUDA(cudaMemsetAsync(B->flags, 0, bytes, st), "clearing the FDMT's flags");
        B->fpitch = fpitch;
        B->epoch = 0;
    }
    if (B->cols_nout != nout) {
        Column *c = NULL;
        int n = 0;
        int rc = flow_columns(L, nout, &c, &n, &B->total);
        if (rc)
            return rc;
        if (n > B->colcap) {
            cudaFree(B->cols);
            B->cols = NULL;
            B->colcap = 0;
            if (cudaMalloc(&B->cols, (size_t)n * sizeof *c) != cudaSuccess) {
                free(c);
                return ddtk_cuda_fail("allocating the FDMT's columns", cudaGetLastError());
            }
            B->colcap = n;
        }
        cudaError_t e = cudaMemcpyAsync(B->cols, c, (size_t)n * sizeof *c,
                                        cudaMemcpyHostToDevice, st);
        free(c);
        DDTK_CUDA(e, "uploading the FDMT's columns");
        B->ncol = n;
        B->cols_nout = nout;
    }
    DDTK_CUDA(cudaMemsetAsync(B->next, 0, sizeof(int), st), "clearing the FDMT's counter");
    return DDTK_OK;
}

/* Byte input with 16-bit rows: every depth in one launch. */
static int run_flow(const FdmtLevel *L, FdmtLevel::Buffers *B, const void *rows, int64_t stride,
                    int64_t nout, float *out, int64_t ostride, cudaStream_t st)
{
    int rc = flow_state(L, B, nout, st);
    if (rc)
        return rc;
    const Args<uint8_t, int16_t> A = { (const uint8_t *)rows, stride,
                                       (int)(nout + L->f->overlap), L->enc.bias,
                                       (int16_t *)B->rows, pitch_of(L, nout), (int)nout, out,
                                       ostride };
    const Flow F = { B->cols, B->ncol, B->total, B->next, B->flags, B->fpitch, ++B->epoch };
    flow_kernel<uint8_t><<<L->grid, THREADS, 0, st>>>(L->d_items, F, A);
    DDTK_CUDA(cudaGetLastError(), "launching the FDMT");
    return DDTK_OK;
}

/* Byte input with 16-bit rows in bands: a launch a band. */
static int run_bands(const FdmtLevel *L, void *stored, const void *rows, int64_t stride,
                     int64_t nout, float *out, int64_t ostride, cudaStream_t st)
{
    const uint32_t bias2 = (uint32_t)(L->enc.bias & 0xffff) * 0x10001u;
    for (int b = 0; b < L->nband; b++) {
        const Band &B = L->band[b];
        const int ntile = (int)((nout + B.lim + B.T - 1) / B.T);
        const BandArgs A = { (const uint8_t *)rows, stride, (int)(nout + L->f->overlap), bias2,
                             (int16_t *)stored, pitch_of(L, nout), (int)nout, out, ostride,
                             B.T, B.pitch / 8, B.nslot, ntile };
        /* Four waves of blocks, each looping over its group's tiles. */
        const int per = std::max(1, 4 * FBLOCKS * L->nsm / B.ngroup);
        dim3 grid((unsigned)B.ngroup, (unsigned)std::min(ntile, std::min(per, MAX_GRID_Y)));
        band_kernel<<<grid, FTHREADS, B.smem, st>>>(B.d_groups, (const uint4 *)B.d_desc, A);
        DDTK_CUDA(cudaGetLastError(), "launching an FDMT band");
    }
    return DDTK_OK;
}

/* The depths in order, a launch each. */
template <typename T, typename S>
static int run(const FdmtLevel *L, void *stored, const void *rows, int64_t stride, int64_t nout,
               float *out, int64_t ostride, cudaStream_t st)
{
    const Args<T, S> A = { (const T *)rows, stride, (int)(nout + L->f->overlap), L->enc.bias,
                           (S *)stored, pitch_of(L, nout), (int)nout, out, ostride };
    for (int d = 1; d <= L->ndepth; d++) {
        const int n = L->first[d + 1] - L->first[d];
        if (n == 0)
            continue;
        launch(nout + L->lim[d], n, st, L->d_items + L->first[d], A);
        DDTK_CUDA(cudaGetLastError(), "launching an FDMT depth");
    }
    return DDTK_OK;
}

static int gulp(void *state, const void *rows, int64_t stride, int64_t nout, float *out,
                int64_t ostride, cudaStream_t st)
{
    FdmtLevel *L = (FdmtLevel *)state;
    if (nout <= 0)
        return DDTK_OK;
    FdmtLevel::Buffers *B = NULL;
    const int nrows = L->nband ? L->nstore : L->nrows;
    int rc = reserve(L, st, (size_t)nrows * (size_t)row_bytes(L, nout), &B);
    if (rc)
        return rc;
    void *stored = B->rows;
    if (L->nband)
        return run_bands(L, stored, rows, stride, nout, out, ostride, st);
    if (L->enc.storage == ST_U8 && L->narrow)
        return run_flow(L, B, rows, stride, nout, out, ostride, st);
    if (L->enc.storage == ST_U8)
        return run<uint8_t, float>(L, stored, rows, stride, nout, out, ostride, st);
    if (L->enc.storage == ST_U16)
        return run<uint16_t, float>(L, stored, rows, stride, nout, out, ostride, st);
    return run<float, float>(L, stored, rows, stride, nout, out, ostride, st);
}

/* -v: the kernels, the stored rows and the traffic model. */
static void report(const void *state, char *buf, size_t n)
{
    const FdmtLevel *L = (const FdmtLevel *)state;
    char how[96];
    if (L->nband)
        snprintf(how, sizeof how, "%d bands of depths in shared memory", L->nband);
    else
        snprintf(how, sizeof how, "%s", L->narrow ? "one launch" : "a launch each");
    snprintf(buf, n, "fdmt: %d DMs, %d merge depths (%s), %d stored rows (%s), %lld "
             "adds per output, DRAM model %.3g KB per output sample",
             L->f->ndm, L->f->depth, how, L->nband ? L->nstore : L->nrows,
             L->narrow ? "16-bit" : "float", (long long)L->f->adds, L->bytes / 1e3);
}

}  // namespace ddgpu

extern "C" const ddtk_gpu_algo ddtk_gpu_fdmt = { ddgpu::create, ddgpu::gulp, ddgpu::report,
                                                 ddgpu::destroy, ddgpu::dev_bytes, NULL };
