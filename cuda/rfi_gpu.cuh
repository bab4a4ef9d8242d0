/*
 * rfi_gpu.cuh - --rfi auto on the device (rfi_gpu.cu): the host cleaner's
 * blocks (src/io/rfi.c) cleaned in a GPU's raw input buffer, bit for bit as
 * the host cleans them, so that the GPU path's host only reads.
 */
#ifndef DDTK_CUDA_RFI_GPU_CUH
#define DDTK_CUDA_RFI_GPU_CUH

#include "direct.cuh"
#include "internal.h"

#include <cuda_runtime.h>

/* The widest band the device cleans (IQRM sorts a block's channels in shared
 * memory), and the most IFs (a thread's per-IF sums); wider inputs are
 * cleaned by the host. */
#define DDTK_RFI_GPU_MAX_CHANS 8192
#define DDTK_RFI_GPU_MAX_IFS 4

typedef struct ddtk_rfi_gpu ddtk_rfi_gpu;

/* Whether the device cleans inputs of geometry g. */
int ddtk_rfi_gpu_supports(const ddtk_clean_geom *g);
/* A device cleaner on the current device, with a workspace for each of
 * `nsets` streams; `count`: its blocks go into the report (one pipeline of
 * several counts). */
int ddtk_rfi_gpu_create(ddtk_rfi_gpu **r, const ddtk_clean_geom *g, int nsets, int count);
/* Workspace `set` made room for gulps of up to `spectra` spectra. */
int ddtk_rfi_gpu_reserve(ddtk_rfi_gpu *r, int set, int64_t spectra);
/* Clean on stream st with workspace `set` the n raw spectra at raw, the
 * observation's spectra from `at` (a block's first: blocks are counted from
 * the observation's start; n ends on a block's end or at the
 * observation's): the last block in place, the others in the unpacked
 * rows, through ddtk_rfi_gpu_view's arrays (until the set's next
 * cleaning). */
int ddtk_rfi_gpu_clean(ddtk_rfi_gpu *r, int set, uint8_t *raw, int64_t n, int64_t at,
                       cudaStream_t st);
/* The unpacking's view of workspace `set`'s last cleaning (its arrays and
 * blocks; the caller sets where its spectra are). */
void ddtk_rfi_gpu_view(const ddtk_rfi_gpu *r, int set, ddgpu::UnpackRfi *v);
/* What was cleaned since the last ddtk_rfi_gpu_zero (every stream done):
 * the report and ever[c], channel c flagged in some block. */
int ddtk_rfi_gpu_report(ddtk_rfi_gpu *r, ddtk_rfi_report *rep, uint8_t *ever);
int ddtk_rfi_gpu_zero(ddtk_rfi_gpu *r);
void ddtk_rfi_gpu_free(ddtk_rfi_gpu *r);

#endif
