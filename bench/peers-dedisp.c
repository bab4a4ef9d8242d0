/*
 * bench/peers-dedisp.c - bench/peers' driver for dedisp (Barsdell et al.),
 * built against dedisp's public C API (dedisp.h) outside the project tree;
 * none of dedisp's code is here. It times one dedisp_execute over a whole
 * 8-bit filterbank already in host memory, after one untimed warm-up call
 * (lazy module loading, first-touch allocations):
 *   device    input copied to the GPU once (timed as h2d_s), dedisp_execute
 *             on device pointers timed with CUDA events (kernel_s); the
 *             output stays on the GPU; wall_s = h2d_s + kernel_s
 *   host      dedisp_execute on host pointers: dedisp copies the input over
 *             in gulps and each gulp's output back to host memory (wall_s,
 *             wall clock; no kernel time is separable)
 *   adaptive  as host, with dedisp_enable_adaptive_dt(width, tol)
 * The DM list is dedisp's own (dedisp_generate_dm_list: tolerance, pulse
 * width). The caller reads the header with fbinfo and passes its figures.
 *
 *   peers-dedisp MODE FILE HEADER_BYTES NSAMPLES NCHANS TSAMP FCH1 FOFF
 *                DM_MIN DM_MAX WIDTH_US TOL
 * prints one line of key=value pairs (mode, dms, max_delay, nout, nchans,
 * df, setup_s, h2d_s, kernel_s, wall_s; "-" where there is none).
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dedisp.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "peers-dedisp: %s: %s\n", what, why);
    return 1;
}

static int dd_check(dedisp_error e, const char *what)
{
    return e == DEDISP_NO_ERROR ? 0 : fail(what, dedisp_get_error_string(e));
}

static int cu_check(cudaError_t e, const char *what)
{
    return e == cudaSuccess ? 0 : fail(what, cudaGetErrorString(e));
}

/* Reads NBYTES of samples after the header of FILE into a new buffer. */
static unsigned char *read_data(const char *file, long header, size_t nbytes)
{
    FILE *fp = fopen(file, "rb");
    unsigned char *buf = malloc(nbytes);
    int ok = fp && buf && fseek(fp, header, SEEK_SET) == 0 && fread(buf, 1, nbytes, fp) == nbytes;
    if (fp)
        fclose(fp);
    if (!ok) {
        fail(file, "cannot read the samples (short file?)");
        free(buf);
        return NULL;
    }
    return buf;
}

/* Device pointers: returns the H2D and execute times; the output stays on the GPU. */
static int run_device(dedisp_plan plan, const unsigned char *in, size_t in_bytes, size_t nsamps,
                      size_t out_bytes, double *h2d, double *kernel)
{
    unsigned char *d_in = NULL, *d_out = NULL;
    cudaEvent_t e0, e1;
    float ms = 0;
    int rc = cu_check(cudaMalloc((void **)&d_in, in_bytes), "cudaMalloc input") ||
             cu_check(cudaMalloc((void **)&d_out, out_bytes), "cudaMalloc output") ||
             cu_check(cudaEventCreate(&e0), "cudaEventCreate") ||
             cu_check(cudaEventCreate(&e1), "cudaEventCreate");
    if (!rc) {
        double t0 = now();
        rc = cu_check(cudaMemcpy(d_in, in, in_bytes, cudaMemcpyHostToDevice), "H2D copy");
        *h2d = now() - t0;
    }
    rc = rc || dd_check(dedisp_execute(plan, nsamps, d_in, 8, d_out, 32, DEDISP_DEVICE_POINTERS),
                        "dedisp_execute (warm-up)");
    rc = rc || cu_check(cudaEventRecord(e0, 0), "cudaEventRecord") ||
         dd_check(dedisp_execute(plan, nsamps, d_in, 8, d_out, 32, DEDISP_DEVICE_POINTERS),
                  "dedisp_execute") ||
         cu_check(cudaEventRecord(e1, 0), "cudaEventRecord") ||
         cu_check(cudaEventSynchronize(e1), "cudaEventSynchronize") ||
         cu_check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    *kernel = 1e-3 * ms;
    cudaFree(d_in);
    cudaFree(d_out);
    return rc;
}

/* Host pointers: dedisp moves the data both ways; returns the execute wall time. */
static int run_host(dedisp_plan plan, const unsigned char *in, size_t nsamps, size_t out_bytes,
                    double *wall)
{
    unsigned char *out = malloc(out_bytes);
    if (!out)
        return fail("output buffer", "out of memory");
    int rc = dd_check(dedisp_execute(plan, nsamps, in, 8, out, 32, DEDISP_HOST_POINTERS),
                      "dedisp_execute (warm-up)");
    double t0 = now();
    rc = rc || dd_check(dedisp_execute(plan, nsamps, in, 8, out, 32, DEDISP_HOST_POINTERS),
                        "dedisp_execute");
    *wall = now() - t0;
    free(out);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 13)
        return fail("usage", "peers-dedisp MODE FILE HEADER_BYTES NSAMPLES NCHANS TSAMP FCH1 "
                             "FOFF DM_MIN DM_MAX WIDTH_US TOL");
    const char *mode = argv[1], *file = argv[2];
    long header = atol(argv[3]);
    size_t nsamps = strtoul(argv[4], NULL, 10), nchans = strtoul(argv[5], NULL, 10);
    float tsamp = strtof(argv[6], NULL), fch1 = strtof(argv[7], NULL);
    float foff = strtof(argv[8], NULL), dm_min = strtof(argv[9], NULL);
    float dm_max = strtof(argv[10], NULL), width = strtof(argv[11], NULL);
    float tol = strtof(argv[12], NULL);
    if (strcmp(mode, "device") != 0 && strcmp(mode, "host") != 0 && strcmp(mode, "adaptive") != 0)
        return fail(mode, "unknown mode (device, host or adaptive)");

    unsigned char *in = read_data(file, header, nsamps * nchans);
    if (!in)
        return 1;
    double t0 = now();
    dedisp_plan plan = NULL;
    if (dd_check(dedisp_create_plan(&plan, nchans, tsamp, fch1, foff), "dedisp_create_plan") ||
        dd_check(dedisp_generate_dm_list(plan, dm_min, dm_max, width, tol),
                 "dedisp_generate_dm_list") ||
        (strcmp(mode, "adaptive") == 0 &&
         dd_check(dedisp_enable_adaptive_dt(plan, width, tol), "dedisp_enable_adaptive_dt"))) {
        free(in);
        return 1;
    }
    double setup = now() - t0;
    size_t ndm = dedisp_get_dm_count(plan), max_delay = dedisp_get_max_delay(plan);
    if (max_delay >= nsamps) {
        free(in);
        return fail(file, "shorter than the maximum DM delay");
    }
    size_t nout = nsamps - max_delay, out_bytes = nout * ndm * sizeof(float);
    double h2d = -1, kernel = -1, wall = -1;
    int rc;
    if (strcmp(mode, "device") == 0) {
        rc = run_device(plan, in, nsamps * nchans, nsamps, out_bytes, &h2d, &kernel);
        wall = h2d + kernel;
    } else {
        rc = run_host(plan, in, nsamps, out_bytes, &wall);
    }
    if (!rc) {
        printf("peers-dedisp: mode=%s dms=%zu max_delay=%zu nout=%zu nchans=%zu df=%g setup_s=%.4f",
               mode, ndm, max_delay, nout, nchans, (double)dedisp_get_df(plan), setup);
        if (h2d >= 0)
            printf(" h2d_s=%.4f kernel_s=%.4f", h2d, kernel);
        else
            printf(" h2d_s=- kernel_s=-");
        printf(" wall_s=%.4f\n", wall);
    }
    dedisp_destroy_plan(plan);
    free(in);
    return rc;
}
