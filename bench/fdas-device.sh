#!/bin/bash
# bench/fdas-device.sh - one lease on a GPU machine for fdas: build (with the
# FFTW and bats staged under .deps by scripts/stage-device-deps), GPU-vs-CPU
# checks, the bats suite, the --gpu benchmark and, where ncu exists, a kernel
# profile. Logs under $OUT.
cd "$(dirname "$0")/.."
export CPATH=$PWD/.deps/fftw/include LIBRARY_PATH=$PWD/.deps/fftw/lib PATH=$PWD/.deps/bats/bin:$PATH
log=${OUT:-/tmp}/fdas-device.log
{
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv
make -j16 CUDA_ARCHS=90 all build/test/fdas_gpucmp > build.log 2>&1 || { tail -30 build.log; echo BUILD FAILED; exit 1; }
f=/tmp/p40.tim
bin/fbsim --tim --force --tsamp 0.001 --nsamples 131072 --seed 18 --pulsar 0.0218,0,0.1,0.5,15222 -o $f
bin/fbsim --tim --force --tsamp 0.001 --nsamples 131072 --seed 18 -o /tmp/n.tim
echo "== bats"
timeout 200 bats test/fdas.bats
for i in exact interbin; do DDTK_FDAS_GPU_MEM=32 bin/fdas -v --backend gpu --interp $i $f | head -3; done
echo "== bench"
timeout 300 bench/fdas --gpu
bin/fbsim --tim --force --nsamples 8388608 --tsamp 0.000064 --seed 7 --pulsar 0.00731,0,0.1,0.3,20 -o /tmp/s23.tim
echo "== ncu (2^23 x 257, numharm 8)"
timeout 150 ncu --section SpeedOfLight --section Occupancy -k 'regex:k_corr|k_harmsum' -c 2 \
    bin/fdas -q --backend gpu --zmax 256 -o /tmp/x.tsv /tmp/s23.tim
} > "$log" 2>&1
cat "$log" | tail -60
