#!/usr/bin/env bats
# gpu.bats - the GPU backend of dd_direct. Where a GPU is usable, GPU output
# must equal CPU output: bit for bit for integer input (sums below 2^24),
# within 1e-6 of the series scale for float input; over every nbits, both
# band orders, killfiles, gulp boundaries and DM lists whose steps force the
# cached fallback kernel. Those tests skip with "no GPU" elsewhere. The
# backend-selection tests at the end run everywhere.

load common
load gpu_common

@test "gpu: 1/2/4/8-bit input, descending band, bit-identical" {
    need_gpu
    for nbits in 1 2 4 8; do
        rm -rf cpu gpu
        sim --nbits $nbits --nchans 200 --fch1 1500 --foff -1
        same_output exact in.fil --dm-min 0 --dm-max 120 --dm-step 1.5
    done
}

@test "gpu: 1/2/4/8-bit input, ascending band, bit-identical" {
    need_gpu
    for nbits in 1 2 4 8; do
        rm -rf cpu gpu
        sim --nbits $nbits --nchans 133 --fch1 1300 --foff 1.5
        same_output exact in.fil --dm-min 0 --dm-max 80 --dm-step 0.7
    done
}

@test "gpu: 16-bit input (unsigned and signed), bit-identical" {
    need_gpu
    sim --nbits 16 --nchans 128 --fch1 1500 --foff -2
    same_output exact in.fil --dm-min 0 --dm-max 100 --dm-step 2
    rm -rf cpu gpu
    sim --nbits 16 --signed --nchans 130 --fch1 1300 --foff 2
    same_output exact in.fil --dm-min 0 --dm-max 100 --dm-step 2
}

@test "gpu: 32-bit float input within 1e-6" {
    need_gpu
    sim --nbits 32 --nchans 203 --fch1 1500 --foff -1
    same_output 1e-6 in.fil --dm-min 0 --dm-max 100 --dm-step 1
    rm -rf cpu gpu
    sim --nbits 32 --nchans 64 --fch1 1400 --foff 3
    same_output 1e-6 in.fil --dm-min 0 --dm-max 100 --dm-step 3
}

@test "gpu: signed 8-bit, two IFs summed and one IF chosen" {
    need_gpu
    sim --nbits 8 --signed --nchans 96 --fch1 1500 --foff -2
    same_output exact in.fil --dm-min 0 --dm-max 90 --dm-step 3
    rm -rf cpu gpu
    sim --nbits 8 --nifs 2 --nchans 96 --fch1 1500 --foff -2
    same_output exact in.fil --dm-min 0 --dm-max 90 --dm-step 3
    rm -rf cpu gpu
    same_output exact in.fil --dm-min 0 --dm-max 90 --dm-step 3 --pol 1
    rm -rf cpu gpu
    sim --nbits 16 --nifs 2 --nchans 64 --fch1 1500 --foff -2
    same_output exact in.fil --dm-min 0 --dm-max 90 --dm-step 3
}

@test "gpu: killfile" {
    need_gpu
    sim --nbits 8 --nchans 256 --fch1 1500 --foff -1
    echo "0:10,40,100:120,255" > kill.txt
    same_output exact in.fil --dm-min 0 --dm-max 150 --dm-step 2 --killfile kill.txt
    rm -rf cpu gpu
    sim --nbits 32 --nchans 256 --fch1 1500 --foff -1
    same_output 1e-6 in.fil --dm-min 0 --dm-max 150 --dm-step 2 --killfile kill.txt
}

@test "gpu: gulp boundaries (several --gulp values)" {
    need_gpu
    sim --nbits 4 --nchans 64 --fch1 1500 --foff -2 --nsamples 7777
    for gulp in 8 96 1000 2048 5000 100000; do
        rm -rf cpu gpu
        same_output exact in.fil --dm-min 0 --dm-max 100 --dm-step 5 --gulp $gulp
    done
    rm -rf cpu gpu
    sim --nbits 32 --nchans 64 --fch1 1500 --foff -2 --nsamples 7777
    same_output 1e-6 in.fil --dm-min 0 --dm-max 100 --dm-step 5 --gulp 700
}

@test "gpu: large DM steps use the cached fallback, same output" {
    need_gpu
    sim --nbits 8 --nchans 128 --fch1 1500 --foff -2 --nsamples 30000
    printf '%s\n' 0 400 900 1500 2000 > dms.txt
    mkdir -p v
    run dd_direct in.fil --backend gpu --dm-list dms.txt --prefix v/x -v
    [ "$status" -eq 0 ]
    [[ "$output" == *"by the cached fallback"* ]]
    [[ "$output" != *" 0 by the cached fallback"* ]]
    same_output exact in.fil --dm-list dms.txt
    rm -rf cpu gpu
    sim --nbits 16 --nchans 128 --fch1 1500 --foff -2 --nsamples 30000
    same_output exact in.fil --dm-list dms.txt
    # 16-bit sums of 300 channels pass 2^24 here (mean 60000): the fallback
    # adds floats in the CPU's order there, integers would differ
    rm -rf cpu gpu
    sim --nbits 16 --nchans 300 --fch1 1500 --foff -0.5 --nsamples 30000 --mean 60000 --sigma 2000
    same_output exact in.fil --dm-list dms.txt
}

@test "gpu: DM list out of order, both kernels in one run" {
    need_gpu
    sim --nbits 2 --nchans 256 --fch1 1500 --foff -1 --nsamples 20000
    { seq 0 0.5 40; echo 900; seq 39.75 -1 10; } > dms.txt
    same_output exact in.fil --dm-list dms.txt
}

@test "gpu: --nbits-out 8 and 16 series are the CPU's byte for byte" {
    need_gpu
    sim --nbits 8 --nchans 128 --fch1 1500 --foff -1
    for b in 8 16; do
        dd_direct in.fil --backend cpu --dm-min 0 --dm-max 60 --dm-step 6 --nbits-out $b \
            --prefix c$b -q
        dd_direct in.fil --backend gpu --dm-min 0 --dm-max 60 --dm-step 6 --nbits-out $b \
            --prefix g$b -q
        [ "$(ls c${b}_*.tim | wc -l)" -eq 11 ]
        for f in c${b}_*.tim; do cmp "$f" "g${f#c}"; done
    done
}

@test "gpu: --zerodm, --pad, .dat output and stdin" {
    need_gpu
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -2
    same_output 1e-6 in.fil --dm-min 0 --dm-max 50 --dm-step 5 --zerodm --pad
    dd_direct in.fil --backend cpu --dm 30 -q > cpu.tim
    dd_direct - --backend gpu --dm 30 -q < in.fil > gpu.tim
    timcmp cpu.tim gpu.tim
    mkdir -p dc dg
    dd_direct in.fil --backend cpu --format dat --prefix dc/x --dm 10,20 -q
    dd_direct in.fil --backend gpu --format dat --prefix dg/x --dm 10,20 -q
    cmp dc/x_DM10.00.dat dg/x_DM10.00.dat
    cmp dc/x_DM20.00.dat dg/x_DM20.00.dat
    grep -q "gpu backend" dg/x_DM20.00.inf
}

@test "gpu: a pulse is found at its DM" {
    need_gpu
    fbsim -q -o p.fil --nbits 8 --nchans 512 --fch1 1500 --foff -0.5 --tsamp 64e-6 \
        --nsamples 40000 --pulse 1.0,250,0.001,30
    dd_direct p.fil --backend gpu --dm 250 -q > p.tim
    run timpeak p.tim
    [ "$status" -eq 0 ]
    echo "$output"
    awk '{ exit !($2 >= 15620 && $2 <= 15630 && $4 > 20) }' <<< "$output"
}

# ---- backend selection: runs with or without a GPU ----

@test "backend: --backend gpu without a usable GPU exits 3 with one line" {
    gpu_usable && skip "a GPU is usable here"
    fbsim -q -o in.fil --nbits 8 --nchans 16 --nsamples 2000
    run_err "backend gpu" dd_direct in.fil --dm 10 --backend gpu
    [ "$status" -eq 3 ]
    [[ "$output" == *"GPU"* || "$output" == *"CUDA"* ]]
}

@test "backend: --backend auto falls back to the CPU (or says which GPU)" {
    fbsim -q -o in.fil --nbits 8 --nchans 32 --nsamples 3000
    mkdir -p c a
    dd_direct in.fil --dm 0,10,20 --backend cpu --prefix c/x -q
    run dd_direct in.fil --dm 0,10,20 --backend auto --prefix a/x -v
    [ "$status" -eq 0 ]
    if gpu_usable; then
        [[ "$output" == *"using GPU 0"* ]]
    else
        [[ "$output" == *"uses the CPU"* ]]
    fi
    for f in c/*.tim; do timcmp "$f" "a/${f#c/}"; done
}

@test "backend: --list-gpus answers in one line or more, exit 0" {
    run dd_direct --list-gpus
    [ "$status" -eq 0 ]
    [ -n "$output" ]
}

@test "backend: --discard writes nothing" {
    fbsim -q -o in.fil --nbits 8 --nchans 32 --nsamples 3000
    run dd_direct in.fil --dm 0,10 --discard --prefix out/x
    [ "$status" -eq 0 ]
    [ ! -e out ]
    [[ "$output" == *"real-time"* || "$output" == *"DMs"* ]]
}

@test "gpu: DDTK_GPU_MEM and DDTK_FDAS_GPU_MEM out of range are usage errors naming them (issue 32)" {
    need_gpu
    sim --nchans 64 --nbits 8
    for v in 1e300 nan -5 junk; do
        run_err DDTK_GPU_MEM env DDTK_GPU_MEM=$v dd_direct in.fil --backend gpu --dm 10 -o x.tim
        [ "$status" -eq 2 ] && [ ! -e x.tim ]
    done
    dd_direct -q in.fil --backend cpu --dm 0 -o s.tim
    run_err DDTK_FDAS_GPU_MEM env DDTK_FDAS_GPU_MEM=1e300 fdas --backend gpu s.tim -o c.tsv
    [ "$status" -eq 2 ] && [ ! -e c.tsv ]
}
