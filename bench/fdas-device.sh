#!/bin/bash
# bench/fdas-device.sh - one lease on a GPU machine for fdas: build (with the
# FFTW and bats staged under .deps), GPU-vs-CPU checks, the bats suite, the
# --gpu benchmark and, where ncu exists, a kernel profile. Logs under $OUT.
cd "$(dirname "$0")/.."
export CPATH=$PWD/.deps/include LIBRARY_PATH=$PWD/.deps/lib PATH=$PWD/.deps/bats/bin:$PATH
log=${OUT:-/tmp}/fdas-device.log
{
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv
make -j16 CUDA_ARCHS=90 all build/test/fdas_gpucmp > build.log 2>&1 || { tail -30 build.log; echo BUILD FAILED; exit 1; }
f=/tmp/p40.tim
bin/fbsim --tim --tsamp 0.001 --nsamples 131072 --seed 18 --pulsar 0.0218,0,0.1,0.5,15222 -o $f
bin/fbsim --tim --tsamp 0.001 --nsamples 131072 --seed 18 -o /tmp/n.tim
echo "== gpucmp (maxreldiff ncpu ngpu matched): pulsar, noise, pulsar tiled"
build/test/fdas_gpucmp $f; echo "rc $?"
build/test/fdas_gpucmp /tmp/n.tim; echo "rc $?"
DDTK_FDAS_GPU_MEM=16 build/test/fdas_gpucmp $f; echo "rc $?"
echo "== interbin and numharm 16/32 top candidates, cpu vs gpu"
for o in "--interp interbin" "--numharm 16" "--numharm 32 --zmax 50"; do
    bin/fdas -q --backend cpu $o $f | head -4 | cut -f1-8 > c.tsv
    bin/fdas -q --backend gpu $o $f | head -4 | cut -f1-8 > g.tsv
    echo "[$o]"; paste c.tsv g.tsv
done
echo "== bats"
timeout 200 bats test/fdas.bats
for i in exact interbin; do DDTK_FDAS_GPU_MEM=16 bin/fdas -v --backend gpu --interp $i $f | head -3; done
echo "== bench"
timeout 300 bench/fdas --gpu
which ncu nsys
} > "$log" 2>&1
cat "$log" | tail -60
