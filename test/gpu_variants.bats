#!/usr/bin/env bats
# gpu_variants.bats - every compiled variant of the GPU direct kernel
# (DDTK_GPU_CONFIG) gives the CPU's bytes: the small-block and cached ones,
# 16-bit lanes spilled in time near full scale, scrunched levels. Skips with
# "no GPU" elsewhere.

load common
load gpu_common

# each_variant DM-OPTIONS...: in.fil on the CPU, then with each compiled
# variant (DDTK_GPU_CONFIG, until the one past the last is refused) on the
# GPU, every series with the CPU's samples; the count in nvariants. Call it
# from a test's body: inside $(...) a failed comparison would not fail the test.
each_variant() {
    rm -rf c g && mkdir c g
    dd_direct in.fil --backend cpu "$@" --prefix c/x -q
    local f v=0
    while DDTK_GPU_CONFIG=$v dd_direct in.fil --backend gpu "$@" --prefix g/x -q --force \
            2> err.txt; do
        for f in c/*.tim; do timcmp "$f" "g/${f#c/}"; done
        v=$((v + 1))
    done
    grep -q "kernel variant $v: expected 0\.\.$((v - 1))" err.txt
    nvariants=$v
}

# every_variant NBITS [FBSIM OPTIONS]: each_variant of a 96-channel input on
# 3 and on 37 DMs.
every_variant() {
    sim --nbits "$1" --nchans 96 "${@:2}"
    each_variant --dm 10,50,90
    local three=$nvariants
    each_variant --dm-min 0 --dm-max 72 --dm-step 2
    [ "$nvariants" -eq "$three" ]
}

@test "gpu: every kernel variant, the small-block and cached ones too, gives the CPU's bytes" {
    need_gpu
    every_variant 8
    [ "$nvariants" -ge 28 ]
    every_variant 16
    [ "$nvariants" -ge 20 ]
}

@test "gpu: every lane variant spills its 16-bit lanes in time (1100 channels near full scale)" {
    need_gpu
    # 256 channels of 235 +- 12 pass 65535: a lane not spilled wraps
    every_variant 8 --nchans 1100 --foff -0.1 --mean 235 --sigma 12
    [ "$nvariants" -ge 28 ]
}

@test "gpu: every lane variant on scrunched levels (16-bit-lane rows, spills near full scale)" {
    need_gpu
    { printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n'
      printf '0\t60\t2\t1\t30\n60\t120\t2\t2\t30\n120\t240\t4\t4\t30\n240\t480\t8\t8\t30\n'; } > p.tsv
    # sums of 8 samples near 1880 pass 65535 within 35 channels: a lane not spilled wraps
    sim --nbits 8 --nchans 600 --fch1 1500 --foff -0.25 --mean 235 --sigma 12 --nsamples 20000
    each_variant --plan p.tsv
    [ "$nvariants" -ge 28 ]
}
