#!/usr/bin/env bats
# gpu_scrunch.bats - time-scrunched plans (--plan with downsampling, --scrunch
# auto) on the GPU equal the CPU's files byte for byte, over gulps, IF sums,
# 16-bit and float input; and the GPU's automatic gulp. Skips with "no GPU"
# elsewhere.

load common
load gpu_common

plan3() {   # 3 rows at factors 1, 2, 4
    printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n'
    printf '0\t100\t10\t1\t10\n100\t300\t20\t2\t10\n300\t600\t30\t4\t10\n'
}

# same_files: the CPU and GPU series are the same files, headers (tsamp) included.
same_files() {
    local f
    for f in cpu/*.tim; do cmp "$f" "gpu/${f#cpu/}"; done
}

@test "gpu: scrunched plan (factors 1, 2, 4), 2- and 8-bit, several gulps, bit-identical" {
    need_gpu
    plan3 > p.tsv
    for nbits in 2 8; do
        sim --nbits $nbits --nchans 128 --fch1 1500 --foff -2 --nsamples 20000
        for gulp in 8 100 1000 4096 0; do
            rm -rf cpu gpu
            local g=(--gulp $gulp); [ "$gulp" = 0 ] && g=()
            same_output exact in.fil --plan p.tsv "${g[@]}"
            same_files
        done
    done
    approx "$(fbinfo gpu/x_DM300.00.tim -k tsamp)" 0.000256 1e-12
    approx "$(fbinfo gpu/x_DM100.00.tim -k tsamp)" 0.000128 1e-12
}

@test "gpu: --scrunch auto, 2- and 8-bit, several gulps, bit-identical" {
    need_gpu
    for nbits in 2 8; do
        sim --nbits $nbits --nchans 64 --fch1 1500 --foff -4 --nsamples 30000
        for gulp in 512 3000 0; do
            rm -rf cpu gpu
            local g=(--gulp $gulp); [ "$gulp" = 0 ] && g=()
            same_output exact in.fil --dm-min 0 --dm-max 400 --dm-step 5 --scrunch auto "${g[@]}"
            same_files
        done
    done
    [ "$(fbinfo gpu/x_DM400.00.tim -k tsamp)" != "$(fbinfo gpu/x_DM0.00.tim -k tsamp)" ]
}

@test "gpu: DDTK_GPU_SERIAL=1 (gulps one at a time) gives the pipelined run's bytes, levels and all" {
    need_gpu
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 30000
    same_output exact in.fil --dm-min 0 --dm-max 400 --dm-step 5 --scrunch auto --gulp 3000
    mkdir ser
    DDTK_GPU_SERIAL=1 dd_direct in.fil --backend gpu --prefix ser/x -q --dm-min 0 --dm-max 400 \
        --dm-step 5 --scrunch auto --gulp 3000
    local f n=0
    for f in gpu/*.tim; do cmp "$f" "ser/${f#gpu/}"; n=$((n + 1)); done
    [ "$n" -eq 81 ]
}

@test "gpu: scrunched levels past the 16-bit lanes (factors to 64), IF sums, 16-bit" {
    need_gpu
    { printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n'
      printf '0\t40\t10\t1\t4\n40\t200\t40\t8\t4\n200\t600\t100\t64\t4\n'; } > p.tsv
    sim --nbits 8 --signed --nifs 2 --nchans 96 --fch1 1500 --foff -2 --nsamples 40000
    same_output exact in.fil --plan p.tsv --gulp 5000
    same_files
    rm -rf cpu gpu
    same_output exact in.fil --plan p.tsv --pol 1
    rm -rf cpu gpu
    sim --nbits 16 --nchans 64 --fch1 1500 --foff -2 --nsamples 40000
    same_output exact in.fil --plan p.tsv --gulp 7000
}

@test "gpu: scrunched --zerodm, --pad, float input and stdin" {
    need_gpu
    plan3 > p.tsv
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -2 --nsamples 20000
    same_output 1e-6 in.fil --plan p.tsv --zerodm --pad --gulp 3000
    rm -rf cpu gpu
    sim --nbits 32 --nchans 70 --fch1 1500 --foff -2 --nsamples 20000
    same_output 1e-6 in.fil --plan p.tsv
    printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n300\t301\t1\t4\t1\n' > one.tsv
    dd_direct in.fil --backend cpu --plan one.tsv -q > cpu.tim
    dd_direct - --backend gpu --plan one.tsv --gulp 512 -q < in.fil > gpu.tim
    cmp cpu.tim gpu.tim
}

@test "gpu: scrunched run says which levels run where (-v)" {
    need_gpu
    plan3 > p.tsv
    sim --nbits 2 --nchans 128 --fch1 1500 --foff -2 --nsamples 20000
    run dd_direct in.fil --backend gpu --plan p.tsv --discard -v
    [ "$status" -eq 0 ]
    [[ "$output" == *"scrunched x2 (10 DMs)"* && "$output" == *"scrunched x4 (10 DMs)"* ]]
    [[ "$output" == *"backend gpu"* || "$output" == *", gpu;"* ]]
}

# gulp_of ARGS...: the GPU gulp dd_direct -v reports
gulp_of() {
    dd_direct "$@" --backend gpu --dm-min 0 --dm-max 4 --dm-step 1 --discard -v 2>&1 \
        | grep -oE "gulp [0-9]+ spectra" | cut -d' ' -f2
}

@test "gpu: the automatic gulp grows with the file's length (pinning against gulps), stdin 131072" {
    need_gpu
    # 8 channels, 5 DMs: 28 bytes a spectrum, so the balanced set is
    # sqrt(1e6 * 28 * n) bytes: 1.2 MB (n 50000), 2.4 MB, 5.3 MB.
    local n
    for n in 50000 200000 1000000; do
        fbsim -q --force -o n$n.fil --nchans 8 --fch1 1500 --foff -2 --tsamp 64e-6 --nsamples $n
    done
    [ "$(gulp_of n50000.fil)" -eq 32768 ]
    [ "$(gulp_of n200000.fil)" -eq 65536 ]
    [ "$(gulp_of n1000000.fil)" -eq 131072 ]
    [ "$(gulp_of - < n50000.fil)" -eq 131072 ]
}
