#!/usr/bin/env bats
# multigpu.bats - several GPUs in one process (--gpu LIST|all). The DMs are
# split by cost into one pipeline per GPU; every output must equal the one-GPU
# run's byte for byte: dd_direct (scrunched levels, several gulps), dd_subband,
# dd_tree, and an fdas batch shared by the GPUs. Two GPUs are needed for the
# real split ("fewer than 2 GPUs" skips); --gpu 0,0 (two pipelines on one GPU,
# allowed for testing) checks the same split logic on any GPU, the set-up's
# threads (a failure's message, the -v set-up and streaming times) and the
# direct plug-in's cost. The usage and fallback tests at the end run
# everywhere.

load common

gpu_count() {
    dd_direct --list-gpus 2>/dev/null | grep -c "compute capability"
}

need_gpus() {
    [ "$(gpu_count)" -ge 2 ] || skip "fewer than 2 GPUs ($(gpu_count) usable)"
}

sim() {
    fbsim -q --force -o in.fil --tsamp 64e-6 --pulse 0.3,120,0.002,20 "$@"
}

# same_dirs A B: the same file names, each equal byte for byte.
same_dirs() {
    [ "$(ls "$1")" = "$(ls "$2")" ] || { echo "file sets differ: $1 $2"; return 1; }
    local n=0 f
    for f in "$1"/*; do
        cmp "$f" "$2/${f#"$1"/}" || return 1
        n=$((n + 1))
    done
    [ "$n" -gt 0 ]
}

# by_gpus TOOL FILE REF-LIST LIST... -- ARGS...: TOOL's outputs with --gpu
# REF-LIST and with each LIST, compared byte for byte.
by_gpus() {
    local tool=$1 file=$2 ref=$3; shift 3
    local lists=()
    while [ "$1" != -- ]; do lists+=("$1"); shift; done
    shift
    rm -rf ref && mkdir ref
    "$tool" "$file" --backend gpu --gpu "$ref" --prefix ref/x -q "$@"
    local l
    for l in "${lists[@]}"; do
        rm -rf "g$l" && mkdir "g$l"
        "$tool" "$file" --backend gpu --gpu "$l" --prefix "g$l/x" -q "$@"
        same_dirs ref "g$l"
    done
}

plan3() {
    printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n'
    printf '0\t100\t5\t1\t20\n100\t300\t10\t2\t20\n300\t700\t20\t4\t20\n'
}

# ---- two or more GPUs ----

@test "multigpu: dd_direct --scrunch auto, --gpu all and 0,1 equal --gpu 0, several gulps" {
    need_gpus
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 30000
    by_gpus dd_direct in.fil 0 all 0,1 1,0 -- --dm-min 0 --dm-max 400 --dm-step 5 \
        --scrunch auto --gulp 3000
    [ "$(fbinfo g0,1/x_DM400.00.tim -k tsamp)" != "$(fbinfo g0,1/x_DM0.00.tim -k tsamp)" ]
    by_gpus dd_direct in.fil 0 all -- --dm-min 0 --dm-max 400 --dm-step 5 --scrunch auto
}

@test "multigpu: dd_direct plan of three levels, 2-bit and float, --pad and .dat" {
    need_gpus
    plan3 > p.tsv
    sim --nbits 2 --nchans 128 --fch1 1500 --foff -2 --nsamples 20000
    by_gpus dd_direct in.fil 0 0,1 -- --plan p.tsv --gulp 4096
    sim --nbits 32 --nchans 70 --fch1 1500 --foff -2 --nsamples 20000
    by_gpus dd_direct in.fil 0 all -- --plan p.tsv --pad --format dat
}

@test "multigpu: dd_subband --gpu 0,1 equals --gpu 0 (shares start at DM groups)" {
    need_gpus
    sim --nbits 8 --nchans 128 --fch1 1500 --foff -2 --nsamples 20000
    by_gpus dd_subband in.fil 0 0,1 all -- --dm-min 0 --dm-max 300 --dm-step 1 \
        --nsub 16 --dm-group 7
    by_gpus dd_subband in.fil 0 all -- --dm-min 0 --dm-max 500 --scrunch auto
}

@test "multigpu: dd_tree --gpu 0,1 equals --gpu 0" {
    need_gpus
    sim --nbits 8 --nchans 128 --fch1 1500 --foff -2 --nsamples 20000
    by_gpus dd_tree in.fil 0 0,1 all -- --dm-max 400
    by_gpus dd_tree in.fil 0 all -- --dm-max 400 --method padded
}

@test "multigpu: -v names each GPU and its DMs; one progress and one summary" {
    need_gpus
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 20000
    run dd_direct in.fil --backend gpu --gpu 0,1 --dm-min 0 --dm-max 200 --dm-step 2 \
        --discard -v
    [ "$status" -eq 0 ]
    [[ "$output" == *"GPU 0 ("*"DMs 0 to "* ]]
    [[ "$output" == *"GPU 1 ("*"of 101"* ]]
    [[ "$output" == *"kernels on 2 GPUs"* ]]
    [ "$(grep -c "samples in" <<<"$output")" -eq 1 ]
}

make_series() {
    local i
    for i in 1 2 3 4 5; do
        fbsim --tim --tsamp 0.001 --nsamples 65536 --seed $i \
            --pulsar "0.0$((i + 1))3,0,0.1,0.5,$i" -o "s$i.tim"
    done
}

@test "multigpu: fdas batch on --gpu 0,1 and all equals --gpu 0" {
    need_gpus
    make_series
    for l in 0 0,1 all; do
        mkdir "f$l" && (cd "f$l" && ln -s ../s*.tim . &&
            fdas -q --backend gpu --gpu "$l" --zmax 50 s1.tim s2.tim s3.tim s4.tim s5.tim &&
            fdas -q --backend gpu --gpu "$l" --zmax 50 --format presto s1.tim s2.tim s3.tim)
        rm "f$l"/s*.tim
    done
    same_dirs f0 f0,1
    same_dirs f0 fall
    [ "$(ls f0 | wc -l)" -eq 11 ]
}

# ---- one GPU: --gpu 0,0 runs the split as two pipelines on one device ----

@test "multigpu: --gpu 0,0 equals --gpu 0 (dd_direct scrunched, dd_subband, dd_tree)" {
    need_gpu
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 30000
    by_gpus dd_direct in.fil 0 0,0 0,0,0 -- --dm-min 0 --dm-max 400 --dm-step 5 \
        --scrunch auto --gulp 3000
    plan3 > p.tsv
    by_gpus dd_direct in.fil 0 0,0 -- --plan p.tsv --pad
    by_gpus dd_subband in.fil 0 0,0 -- --dm-min 0 --dm-max 300 --dm-step 1 --nsub 16 \
        --dm-group 7
    by_gpus dd_tree in.fil 0 0,0,0 -- --dm-max 400
}

@test "multigpu: more pipelines than DMs, and one DM" {
    need_gpu
    sim --nbits 4 --nchans 64 --fch1 1500 --foff -4 --nsamples 20000
    by_gpus dd_direct in.fil 0 0,0,0,0 -- --dm 10,200
    dd_direct in.fil --backend gpu --gpu 0 --dm 120 -q > one.tim
    dd_direct in.fil --backend gpu --gpu 0,0,0 --dm 120 -q > three.tim
    cmp one.tim three.tim
}

@test "multigpu: --gpu all on any number of GPUs equals --gpu 0; fdas --gpu 0,0 batch" {
    need_gpu
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 20000
    by_gpus dd_direct in.fil 0 all -- --dm-min 0 --dm-max 300 --dm-step 3 --scrunch auto
    make_series
    for l in 0 0,0; do
        mkdir "f$l" && (cd "f$l" && ln -s ../s*.tim . &&
            fdas -q --backend gpu --gpu "$l" --zmax 50 s1.tim s2.tim s3.tim s4.tim s5.tim)
        rm "f$l"/s*.tim
    done
    same_dirs f0 f0,0
}

# dms_growing: 100 DMs 0.05 i^2 (the delay step grows from under one sample
# to 127 at 64 channels from 1500 MHz down by 4).
dms_growing() {
    awk 'BEGIN { for (i = 0; i < 100; i++) printf "%.2f\n", 0.05 * i * i }' > dms.txt
}

@test "multigpu: the direct split gives the cheap low DMs the larger share; output unchanged" {
    need_gpu
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 30000
    dms_growing
    run dd_direct in.fil --backend gpu --gpu 0,0 --dm-list dms.txt --discard -v
    [ "$status" -eq 0 ]
    local last
    last=$(sed -n 's/.*GPU 0 (.*): DMs 0 to \([0-9]*\) of 100 .*/\1/p' <<<"$output" | head -1)
    [ "$last" -ge 60 ] && [ "$last" -le 75 ]
    by_gpus dd_direct in.fil 0 0,0 0,0,0 -- --dm-list dms.txt --gulp 4096
}

# times_ok: the number of -v "times:" lines whose set-up and streaming are
# positive and add up to no more than the wall time, the set-up's four parts
# (contexts, plans, buffers, warm-up) to no more than the set-up.
times_ok() {
    awk '/ times: set-up / {
            for (i = 1; i <= NF; i++) {
                if ($i == "set-up") a = $(i + 1)
                if ($i == "streaming") b = $(i + 1)
                if ($i == "wall") w = $(i + 1)
                if ($i == "contexts" || $i == "plans" || $i == "buffers" || $i == "warm-up")
                    parts += $(i + 1)
            }
            if (a > 0 && b > 0 && a + b <= w + 0.001 && parts > 0 && parts <= a + 0.001) n++
            parts = 0
        }
        END { print n + 0 }'
}

@test "multigpu: -v reports set-up and streaming apart, for one pipeline and for --gpu 0,0" {
    need_gpu
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 30000
    run dd_direct in.fil --backend gpu --gpu 0 --dm-min 0 --dm-max 200 --dm-step 2 --discard -v
    [ "$status" -eq 0 ]
    [[ "$output" == *"GPU times: set-up "* ]]
    [ "$(times_ok <<<"$output")" -eq 1 ]
    run dd_direct in.fil --backend gpu --gpu 0,0 --dm-min 0 --dm-max 200 --dm-step 2 --discard -v
    [ "$status" -eq 0 ]
    [ "$(grep -c "GPU 0 times: set-up " <<<"$output")" -eq 2 ]
    [ "$(times_ok <<<"$output")" -eq 2 ]
}

@test "multigpu: --gpu all takes one GPU for a short input and says why; a list is used as given" {
    need_gpus
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 30000
    run dd_direct in.fil --backend gpu --gpu all --dm-min 0 --dm-max 200 --dm-step 2 --discard -v
    [ "$status" -eq 0 ]
    [[ "$output" == *"all GPUs: using 1 of $(gpu_count): predicted "*" s on 1 GPU, "* ]]
    [[ "$output" == *"GPU times: set-up "* ]]
    [[ "$output" != *"GPU 1 times:"* ]]
    run dd_direct in.fil --backend gpu --gpu 0,1 --dm-min 0 --dm-max 200 --dm-step 2 --discard -v
    [ "$status" -eq 0 ]
    [[ "$output" != *"all GPUs: using"* ]]
    [[ "$output" == *"GPU 1 times: set-up "* ]]
    [ "$(grep -c "GPU [01] set-up: context " <<<"$output")" -eq 2 ]
}

# streaming_ok N: 1 when -v's "GPU streaming:" line counts N gulps or more and its
# host parts (reads, waits, writer) and gulps add up to no more than the
# streaming of the "times:" line.
streaming_ok() {
    awk -v want="$1" '/ times: set-up / { for (i = 1; i <= NF; i++) if ($i == "streaming") s = $(i + 1) }
        /GPU streaming:/ {
            for (i = 1; i <= NF; i++) {
                if ($i == "gulps,") n = $(i - 1)
                if ($i == "reads" || $i == "GPUs" || $i == "writer") host += $(i + 1)
                if ($i == "gulps" && $(i + 1) ~ /^[0-9.]+$/) g = $(i + 1)
            }
        }
        END { print (n >= want && host > 0 && host <= s + 0.001 && g > 0 && g <= s + 0.001) }'
}

@test "multigpu: -v gives each pipeline's set-up and the streaming's host side" {
    need_gpu
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 30000
    run dd_direct in.fil --backend gpu --gpu 0,0 --dm-min 0 --dm-max 200 --dm-step 2 --discard \
        --gulp 8192 -v
    [ "$status" -eq 0 ]
    [ "$(grep -c "GPU 0 set-up: context [0-9.]* s (ready " <<<"$output")" -eq 2 ]
    [[ "$output" == *"GPU set-up: input buffers pinned for every GPU in "* ]]
    [ "$(streaming_ok 3 <<<"$output")" -eq 1 ]     # 30000 spectra in gulps of 8192
}

@test "multigpu: a pinning failure on a set-up thread is the one message, as with one pipeline" {
    need_gpu
    ldd "$(command -v dd_direct)" | grep -q libcudart ||
        skip "the static CUDA runtime is out of LD_PRELOAD's reach: build with CUDA_RUNTIME=shared"
    sim --nbits 8 --nchans 64 --fch1 1500 --foff -4 --nsamples 20000
    local l one=""
    for l in 0 0,0 0,0,0; do
        run_err "GPU 0: pinning outputs: out of memory" env DDTK_CUDA_FAULT=pin-outputs \
            LD_PRELOAD="$TBIN/cudafault.so" dd_direct in.fil --backend gpu --gpu "$l" \
            --dm-min 0 --dm-max 200 --dm-step 2 --prefix x
        [ "$status" -eq 3 ]
        [ -z "$one" ] || [ "$output" = "$one" ]
        one=$output
        [ -z "$(ls)" ] || [ "$(ls)" = in.fil ]
    done
    dd_direct in.fil --backend gpu --gpu 0,0 --dm 100 -q > ok.tim
    [ -s ok.tim ]
}

# ---- everywhere: usage, fallback ----

@test "multigpu: bad --gpu lists are usage errors naming --gpu, on every tool" {
    sim --nbits 8 --nchans 16 --fch1 1500 --foff -4 --nsamples 2000
    local tool list
    for tool in dd_direct dd_subband dd_tree; do
        for list in 0,x , 0, ,1 -1 0,1024 all,1 1.5; do
            run_err "--gpu" "$tool" in.fil --dm 10 --gpu "$list" --backend cpu
            [ "$status" -eq 2 ]
        done
    done
    fbsim --tim --tsamp 0.001 --nsamples 4096 -o s.tim
    run_err "--gpu" fdas s.tim --gpu 0,x
    [ "$status" -eq 2 ]
    run_err "--gpu" fdas s.tim --gpu ,
    [ "$status" -eq 2 ]
}

@test "multigpu: every tool's --help documents --gpu N|LIST|all" {
    local tool
    for tool in dd_direct dd_subband dd_tree fdas; do
        "$tool" --help | grep -q -- "--gpu N|LIST|all"
    done
}

@test "multigpu: --backend gpu --gpu all without a GPU fails as --backend gpu does" {
    [ "$(gpu_count)" -eq 0 ] || skip "a GPU is usable here"
    sim --nbits 8 --nchans 16 --fch1 1500 --foff -4 --nsamples 2000
    run_err "backend gpu" dd_direct in.fil --dm 10 --backend gpu --gpu all
    [ "$status" -eq 3 ]
    local one=$output
    run_err "backend gpu" dd_direct in.fil --dm 10 --backend gpu
    [ "$output" = "$one" ]
    run_err "backend gpu" dd_tree in.fil --dm-max 50 --backend gpu --gpu 0,1
    [ "$status" -eq 3 ]
}

@test "multigpu: --backend auto --gpu all (or a list) equals the CPU's output" {
    sim --nbits 8 --nchans 32 --fch1 1500 --foff -4 --nsamples 8000
    mkdir c a l
    dd_direct in.fil --dm-min 0 --dm-max 100 --dm-step 5 --backend cpu --prefix c/x -q
    dd_direct in.fil --dm-min 0 --dm-max 100 --dm-step 5 --gpu all --prefix a/x -q
    same_dirs c a
    dd_direct in.fil --dm-min 0 --dm-max 100 --dm-step 5 --backend cpu --gpu 0,1 \
        --prefix l/x -q
    same_dirs c l
}
