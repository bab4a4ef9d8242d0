/*
 * dmt_driver.cu - times pravirkr/dmt's GPU FDMT (FDMTGPU::execute on device
 * arrays) for bench/fdmt-peer/run; built there against a dmt checkout
 * outside the tree, never part of ddtk's build.
 *
 *   dmt_driver NCHANS FMIN FMAX TSAMP NSAMPS DTMAX REPS
 *
 * FMIN/FMAX: band edges (MHz). Prints the fastest execute of REPS (after one
 * warm-up) in seconds, and the number of delays computed.
 */
#include <dmt/fdmt_gpu.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv)
{
    if (argc != 8) {
        std::fprintf(stderr, "usage: dmt_driver NCHANS FMIN FMAX TSAMP NSAMPS DTMAX REPS\n");
        return 2;
    }
    const size_t nchans = std::strtoul(argv[1], nullptr, 10);
    const float fmin = std::strtof(argv[2], nullptr), fmax = std::strtof(argv[3], nullptr);
    const float tsamp = std::strtof(argv[4], nullptr);
    const size_t nsamps = std::strtoul(argv[5], nullptr, 10);
    const size_t dtmax = std::strtoul(argv[6], nullptr, 10);
    const int reps = std::atoi(argv[7]);
    FDMTGPU fdmt(fmin, fmax, nchans, nsamps, tsamp, dtmax);
    const size_t ndt = fdmt.get_dt_grid_final().size();
    std::vector<float> wf(nchans * nsamps);
    unsigned x = 1;
    for (auto &v : wf) {
        x = x * 1103515245u + 12345u;
        v = (float)((x >> 16) & 255u);
    }
    thrust::device_vector<float> wf_d(wf.begin(), wf.end()), out_d(ndt * nsamps);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    float best = 1e30f;
    for (int r = 0; r <= reps; r++) {
        cudaEventRecord(a);
        fdmt.execute(thrust::raw_pointer_cast(wf_d.data()), wf.size(),
                     thrust::raw_pointer_cast(out_d.data()), out_d.size(), true);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        if (r > 0 && ms < best)
            best = ms;
    }
    std::printf("%.6f %zu\n", best / 1000.0, ndt);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
