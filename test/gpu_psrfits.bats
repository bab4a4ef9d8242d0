#!/usr/bin/env bats
# gpu_psrfits.bats - PSRFITS input and RFI excision under --backend gpu: the
# GPU's series equal the CPU's (within 1e-6 of the scale where rows are
# scaled), and the GPU's --rfi auto report the CPU's. Skips with "no GPU"
# elsewhere.

load common
load gpu_common

# rfi_same FILE OPTIONS...: the CPU's and the GPU's --rfi auto runs give the
# same series, byte for byte, and the same report (.inf notes of the first DM)
rfi_same() {
    local file=$1; shift
    rm -rf cpu gpu
    mkdir -p cpu gpu
    dd_direct "$file" --backend cpu --prefix cpu/x -q --format dat --rfi auto "$@"
    dd_direct "$file" --backend gpu --prefix gpu/x -q --format dat --rfi auto "$@"
    local n=0 f
    for f in cpu/*.dat; do
        cmp "$f" "gpu/${f#cpu/}"
        n=$((n + 1))
    done
    [ "$n" -gt 0 ]
    [ "$(ls gpu/*.dat | wc -l)" -eq "$n" ]
    f=$(ls cpu/*.inf | head -1)
    grep -A3 "RFI excision" "$f" > cpu.rfi
    grep -A3 "RFI excision" "gpu/${f#cpu/}" > gpu.rfi
    [ -s cpu.rfi ]
    diff cpu.rfi gpu.rfi
}

@test "gpu: RFI excision (--rfi auto) runs on the GPU: its series and report equal the CPU's (every sample width, 2 IFs, unaligned spectra, gulps inside blocks, a short last block, two pipelines, stdin, PSRFITS)" {
    need_gpu
    fbsim -q -o rfi.fil --nchans 128 --nbits 8 --tsamp 0.000256 --tobs 4 --fch1 1500 --foff -1 \
        --pulse 2.3,120,0.002,20 --rfi chans:0.1:5 --rfi impulses:1:50 --rfi dropouts:1:0.05
    rfi_same rfi.fil --dm-min 0 --dm-max 200 --dm-step 10
    grep -q "spectra clipped" cpu.rfi
    ! grep -q " 0 channels flagged" cpu.rfi
    dd_direct rfi.fil --backend gpu -v --dm 0 --rfi auto -o v.tim 2>&1 |
        grep -q "RFI excision on the GPU (blocks of 2048 spectra"
    # the GPU cleans beside heavy plans too, and on a pipe; inputs wider
    # than its cleaning takes are cleaned by the host, to the same bytes
    dd_direct rfi.fil --backend gpu -v --dm-min 0 --dm-max 2000 --dm-step 0.5 --rfi auto \
        --discard 2>&1 | grep -q "RFI excision on the GPU"
    dd_direct - --backend gpu -v --dm-min 0 --dm-max 2000 --dm-step 0.5 --rfi auto --discard \
        < rfi.fil 2>&1 | grep -q "RFI excision on the GPU"
    fbsim -q -o wide.fil --nchans 8200 --nbits 8 --tsamp 0.000256 --nsamples 4500 --fch1 1500 \
        --foff -0.01 --pulse 0.5,60,0.002,20 --rfi chans:0.1:5 --rfi impulses:1:50
    rfi_same wide.fil --dm 0,60
    grep -q "spectra clipped" cpu.rfi
    dd_direct wide.fil --backend gpu -v --dm 0 --rfi auto -o v.tim 2>&1 |
        grep -q "RFI excision on the host (8200 channels of 1 IFs; the GPU cleans up to 8192"
    # the first gulp is read and cleaned beside the warm-up; gulps end inside blocks
    rfi_same rfi.fil --dm 0,50,120 --gulp 1000
    dd_direct rfi.fil --backend gpu -v --dm 0 --rfi auto --gulp 1000 -o v.tim 2>&1 |
        grep -q "beside the warm-up"
    rfi_same rfi.fil --dm 0,50,120 --gulp 1500 --gpu 0,0
    mkdir stdin
    dd_direct - --backend gpu --prefix stdin/x -q --dm 0,50,120 --rfi auto --gulp 1500 \
        --format dat < rfi.fil
    for f in cpu/*.dat; do cmp "$f" "stdin/${f#cpu/}"; done
    # every width; spectra of 77 1-bit channels end inside bytes, of 70
    # 8-bit channels inside 4- and 16-byte words; 2 IFs; the last block 20
    # spectra (too few for statistics: left as it is)
    local G="--tsamp 0.000256 --fch1 1500 --pulse 1.1,60,0.002,20 --rfi chans:0.1:6 --rfi impulses:0.5:40"
    fbsim -q -o w2.fil --nchans 96 --nbits 2 --foff -1 --nsamples 12308 $G
    rfi_same w2.fil --dm 0,30,60 --gulp 3000
    fbsim -q -o w1.fil --nchans 77 --nbits 1 --foff -1 --nsamples 10256 $G
    rfi_same w1.fil --dm 0,30,60 --gulp 2500
    fbsim -q -o w4.fil --nchans 64 --nbits 4 --foff 1 --nsamples 9000 $G
    rfi_same w4.fil --dm 0,30,60
    fbsim -q -o w16.fil --nchans 80 --nbits 16 --signed --foff -1 --nsamples 9000 $G
    rfi_same w16.fil --dm 0,30,60 --gulp 4100
    fbsim -q -o w32.fil --nchans 70 --nbits 32 --foff -1 --nsamples 9000 $G
    rfi_same w32.fil --dm 0,30,60 --gulp 2000
    fbsim -q -o w8.fil --nchans 70 --nbits 8 --foff -1 --nsamples 9000 $G
    rfi_same w8.fil --dm 0,30,60 --gulp 2000
    fbsim -q -o i2.fil --nchans 64 --nbits 8 --nifs 2 --foff -1 --nsamples 9000 $G
    rfi_same i2.fil --dm 0,30,60 --gulp 2000
    fbsim -q -o rfi8.fits --format psrfits --nsblk 512 --nchans 64 --tsamp 0.000256 --tobs 2 \
        --pulse 1.1,60,0.002,20 --rfi chans:0.1:5 --rfi impulses:0.5:40
    rfi_same rfi8.fits --dm 0,30,60 --gulp 700
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
