#!/usr/bin/env bats
# sps_gpu.bats - --search on the GPU (cuda/sps_gpu.cu): the device searches
# the series where it makes them and its candidate list is the CPU's byte
# for byte, for dd_direct, dd_subband, dd_tree and dd_fdmt, with --scrunch
# auto (several resolutions), with --discard (the series never leave the
# GPU) and with files, over gulps and baseline blocks that cut through the
# bursts, blocks whose MAD is 0 (dropouts), boxcars too wide for the flags'
# float screen, blocks too long for the statistics' guess, and the path for
# more giants than a gulp brings back. Every test skips without a GPU.
load common

# Bursts over DM 60-780, widths 0.2-20 ms and S/N 9-80; the DM 400 one is
# at output sample 10240 (gulps of 2048 and 10240 end there), the DM 250 one
# at sample 6250, where the 0.1 s baseline blocks 4 and 5 meet (6252).
setup_file() {
    cd "$BATS_FILE_TMPDIR" || return 1
    fbsim -q -o b.fil --nchans 128 --foff -2 --tobs 2 --seed 11 --pulse 0.2,60,0.0002,30 \
        --pulse 0.4,250,0.003,10 --pulse 0.65536,400,0.004,8 --pulse 1.0,700,0.02,6 \
        --pulse 1.25,780,0.0005,15
    fbsim -q -o drop.fil --nchans 64 --nbits 8 --foff -4 --tobs 1.5 --seed 3 \
        --rfi dropouts:2:0.12 --pulse 0.9,150,0.001,20
}

B=$BATS_FILE_TMPDIR/b.fil
DMS=(--dm-min 0 --dm-max 800 --dm-step 8)

# same TOOL ARGS...: CPU and GPU --search --discard, candidate files equal
# byte for byte, and not empty. When they differ: whether the series
# differ too (the dedispersion) or only their search.
same() {
    local tool=$1; shift
    rm -f c.cand g.cand
    "$tool" --backend cpu --prefix c --search --discard -q "$@"
    "$tool" --backend gpu --prefix g --search --discard -q "$@"
    [ -s c.cand ]
    cmp c.cand g.cand && return 0
    diff c.cand g.cand | head -6
    rm -rf sc sg
    mkdir sc sg
    "$tool" --backend cpu --prefix sc/x --no-baseline --search -q "$@"
    "$tool" --backend gpu --prefix sg/x --no-baseline --search -q "$@"
    local f n=0
    for f in sc/*.tim; do
        cmp -s "$f" "sg/${f#sc/}" || n=$((n + 1))
    done
    echo "SPS-GPU-DIFF $tool $*: the series differ in $n of $(ls sc/*.tim | wc -l) files"
    return 1
}

@test "sps gpu: dd_direct, gulps and baseline blocks through the bursts, = CPU" {
    need_gpu
    same dd_direct "$B" "${DMS[@]}"
    # all five bursts
    [ "$(wc -l < c.cand)" -ge 5 ]
    same dd_direct "$B" "${DMS[@]}" --gulp 2048 --search-window 0.1
    same dd_direct "$B" "${DMS[@]}" --gulp 10240 --search-window 0.25 --max-width 64
    same dd_direct "$B" "${DMS[@]}" --scrunch auto --gulp 4096 --search-window 0.1
}

@test "sps gpu: noise at S/N 4 (hundreds of events) = CPU" {
    need_gpu
    same dd_direct "$B" "${DMS[@]}" --snr 4 --search-window 0.1 --gulp 3000
    [ "$(wc -l < c.cand)" -ge 100 ]
}

@test "sps gpu: dd_subband, dd_tree (scrunched levels) and dd_fdmt = CPU" {
    need_gpu
    same dd_subband "$B" "${DMS[@]}" --gulp 4096 --search-window 0.1
    same dd_subband "$B" "${DMS[@]}" --scrunch auto
    same dd_tree "$B" --dm-max 800 --search-window 0.1
    same dd_tree "$B" --dm-max 800 --gulp 4096
    same dd_fdmt "$B" --dm-max 800 --search-window 0.1
}

# --even: DM 0's series (31043 samples, level 0) loses its odd last sample.
# --no-baseline: spsearch reads the series as written, the search the sums.
@test "sps gpu: with files (.tim, FFT-padded .dat, --even) = CPU, = spsearch" {
    need_gpu
    mkdir c g
    for fmt in tim dat "tim --even"; do
        rm -rf c/* g/*
        # shellcheck disable=SC2086
        dd_direct "$B" "${DMS[@]}" --scrunch auto --gulp 4096 --backend cpu --prefix c/b \
            --format $fmt --search --no-baseline -q
        # shellcheck disable=SC2086
        dd_direct "$B" "${DMS[@]}" --scrunch auto --gulp 4096 --backend gpu --prefix g/b \
            --format $fmt --search --no-baseline -q
        [ -s c/b.cand ]
        cmp c/b.cand g/b.cand
        spsearch -q g/*.${fmt%% *} > s.cand
        cmp c/b.cand s.cand
    done
}

@test "sps gpu: blocks of dropouts (MAD 0: RMS about the median) = CPU" {
    need_gpu
    same dd_direct "$BATS_FILE_TMPDIR/drop.fil" --dm-min 0 --dm-max 300 --dm-step 5 \
        --search-window 0.05 --snr 5
    same dd_tree "$BATS_FILE_TMPDIR/drop.fil" --dm-max 300 --search-window 0.05 --snr 5
}

@test "sps gpu: boxcars past the flags' shared span, blocks past the guess's window = CPU" {
    need_gpu
    # boxcars to 4096 samples: past FLAG_BACK (3072), the flags test every sum exactly
    same dd_direct "$B" "${DMS[@]}" --max-width 4096 --snr 5
    # 16 us samples and blocks of 10 s: 625000 samples (in global memory), of
    # which about 6.4 sqrt(n) = 5000 lie in the median's guessed window, past
    # the 4096 it holds in shared memory: the full selection
    fbsim -q -o long.fil --nchans 16 --fch1 1500 --foff -4 --tsamp 0.000016 --tobs 25 \
        --seed 5 --pulse 12,100,0.002,25
    same dd_direct long.fil --dm 0,100,200 --search-window 10
}

@test "sps gpu: more giants than a gulp brings back (replayed) = CPU" {
    need_gpu
    same dd_direct "$B" "${DMS[@]}" --snr 4 --search-window 0.1 --gulp 4096
    cp c.cand want.cand
    DDTK_SPS_GPU_GIANTS=3 dd_direct "$B" "${DMS[@]}" --snr 4 --search-window 0.1 --gulp 4096 \
        --backend gpu --prefix r --search --discard -v 2> r.err
    grep "single-pulse search" r.err
    grep -Eq "giants, [1-9][0-9]* gulps replayed" r.err
    cmp want.cand r.cand
}

@test "sps gpu: --discard keeps the series on the GPU; files copy them back" {
    need_gpu
    dd_direct "$B" "${DMS[@]}" --backend gpu --prefix k --search --discard -v 2> k.err
    grep -q "series kept on the GPU" k.err
    mkdir f
    dd_direct "$B" "${DMS[@]}" --backend gpu --prefix f/b --search -v 2> f.err
    grep -q "series copied back" f.err
    cmp k.cand f/b.cand
}
