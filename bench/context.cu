// bench/context.cu - what the CUDA driver takes to make contexts, with nothing of
// ddtk in the program: the device count (cuInit), then each visible GPU's
// context (cudaSetDevice + cudaFree(0)) one after another, or with an argument
// from one thread per GPU at once; then a first launch. bench/gpu-results.md
// ("What a context costs") has the figures and what they bound.
//
//   nvcc -O2 -std=c++17 -o /tmp/context bench/context.cu && /tmp/context [at-once]
#include <cuda_runtime.h>
#include <stdio.h>
#include <thread>
#include <vector>
#include <chrono>
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
__global__ void k(int *x) { if (x) *x = 1; }
int main(int argc, char **)
{
    int n = 0; double t = now();
    cudaGetDeviceCount(&n);
    printf("cudaGetDeviceCount %.4f s (%d GPUs)\n", now() - t, n);
    int par = argc > 1;
    std::vector<std::thread> th; std::vector<double> d(n);
    double t0 = now();
    for (int i = 0; i < n; i++) {
        auto f = [i, &d]() { double a = now(); cudaSetDevice(i); cudaFree(0); d[i] = now() - a; };
        if (par) th.emplace_back(f); else f();
    }
    for (auto &x : th) x.join();
    for (int i = 0; i < n; i++) printf("GPU %d context %.4f s\n", i, d[i]);
    printf("all %s: %.4f s\n", par ? "in parallel" : "in turn", now() - t0);
    t = now(); k<<<1, 1>>>(nullptr); cudaDeviceSynchronize(); printf("first launch %.4f s\n", now() - t);
    return 0;
}
