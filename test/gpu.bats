#!/usr/bin/env bats
# gpu.bats - the GPU backend of dd_direct. Where a GPU is usable, GPU output
# must equal CPU output: bit for bit for integer input (sums below 2^24),
# within 1e-6 of the series scale for float input; over every nbits, both
# band orders, killfiles, gulp boundaries and DM lists whose steps force the
# cached fallback kernel. Those tests skip with "no GPU" elsewhere. The
# backend-selection tests at the end run everywhere.

load common

# same_output TOL FILE DM-OPTIONS...: CPU and GPU runs, every series compared
# (TOL "exact" for bit-identical).
same_output() {
    local tol=$1 file=$2; shift 2
    mkdir -p cpu gpu
    dd_direct "$file" --backend cpu --prefix cpu/x -q "$@"
    dd_direct "$file" --backend gpu --prefix gpu/x -q "$@"
    local n=0 f
    for f in cpu/*.tim; do
        if [ "$tol" = exact ]; then
            timcmp "$f" "gpu/${f#cpu/}"
        else
            timcmp --tol "$tol" "$f" "gpu/${f#cpu/}"
        fi
        n=$((n + 1))
    done
    [ "$n" -gt 0 ]
    [ "$(ls gpu | wc -l)" -eq "$n" ]
}

sim() {
    fbsim -q --force -o in.fil --tsamp 64e-6 --nsamples 5000 --pulse 0.1,60,0.002,20 "$@"
}

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

# ---- time scrunching (--plan with downsampling, --scrunch auto) ----

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

@test "gpu: RFI excision (--rfi auto, filterbank and scaled PSRFITS) runs on the host: the GPU's series equal the CPU's" {
    need_gpu
    fbsim -q -o rfi.fil --nchans 128 --nbits 8 --tsamp 0.000256 --tobs 4 --fch1 1500 --foff -1 \
        --pulse 2.3,120,0.002,20 --rfi chans:0.1:5 --rfi impulses:1:50
    same_output exact rfi.fil --dm-min 0 --dm-max 200 --dm-step 10 --rfi auto
    rm -r cpu gpu
    fbsim -q -o rfi4.fits --format psrfits --nsblk 512 --nchans 64 --nbits 4 --tsamp 0.000256 \
        --tobs 2 --pulse 1.1,60,0.002,20 --rfi impulses:0.5:40 --dat-scl 2 --zero-off 1
    same_output 1e-6 rfi4.fits --dm 0,30,60 --rfi auto
}

@test "gpu: scaled PSRFITS (raw bytes and row tables to the GPU; rows decoded on the CPU) gives the CPU's series" {
    need_gpu
    # NPOL 2, missing rows, zero weights, several files; whole-row reads on
    # several threads and reads that end inside rows
    echo 3:5,20 > kill.txt
    fbsim -q -o s.fits --format psrfits --nsblk 300 --nifs 2 --rows-per-file 20 --drop-rows 4,30 \
        --dat-scl 1.5 --dat-offs -2 --zero-off 0.5 --zero-weight kill.txt --nchans 64 \
        --tsamp 64e-6 --nsamples 15000 --pulse 0.5,60,0.002,20
    same_output 1e-6 s_0001.fits s_0002.fits s_0003.fits --dm-min 0 --dm-max 120 --dm-step 3
    rm -r cpu gpu
    same_output 1e-6 s_0001.fits s_0002.fits s_0003.fits --dm 0,60 --gulp 1000 --pol 1
}

@test "gpu: scaled 8-bit and 4-bit PSRFITS as raw bytes with each row's multiply-add on the GPU give the CPU's series" {
    need_gpu
    # several rows a gulp and gulps ending inside rows, a gap, signed 8-bit
    fbsim -q -o s8.fits --format psrfits --nsblk 256 --nchans 64 --dat-scl 1.5 --dat-offs -2 \
        --zero-off 0.5 --tsamp 64e-6 --nsamples 20000 --drop-rows 7 --pulse 0.5,60,0.002,20
    same_output 1e-6 s8.fits --dm-min 0 --dm-max 120 --dm-step 3
    rm -r cpu gpu
    same_output 1e-6 s8.fits --dm 0,60 --gulp 1000
    rm -r cpu gpu
    fbsim -q -o s4.fits --format psrfits --nsblk 200 --nbits 4 --nifs 2 --nchans 64 --dat-scl 2 \
        --zero-off 1 --dat-offs 3 --tsamp 64e-6 --nsamples 12000 --pulse 0.4,60,0.002,20
    same_output 1e-6 s4.fits --dm-min 0 --dm-max 120 --dm-step 3
    rm -r cpu gpu
    same_output 1e-6 s4.fits --dm 0,60 --gulp 999 --pol 1
    rm -r cpu gpu
    fbsim -q -o sg.fits --format psrfits --nsblk 300 --signed --nchans 64 --dat-scl 0.5 \
        --dat-offs 1 --tsamp 64e-6 --nsamples 10000 --pulse 0.3,60,0.002,20
    same_output 1e-6 sg.fits --dm 0,30,60 --gulp 1234
    dd_direct sg.fits --backend gpu -v --dm 0 -o v.tim 2>&1 | grep -q "scaled PSRFITS as raw bytes"
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
