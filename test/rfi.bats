#!/usr/bin/env bats
# RFI excision (--rfi auto, --mask) against fbsim's injected RFI, whose clean
# twin (the same noise and signals without it) is the truth.
load common

# an 8 s observation: a pulsar at DM 60 and a burst at DM 120, t 4.3 s
OBS="--nchans 128 --nbits 8 --tsamp 0.000256 --tobs 8 --fch1 1500 --foff -1 --seed 5
     --pulsar 0.2137,60,0.04,0.6 --pulse 4.3,120,0.002,20 -q --force"

# snr PREFIX: the burst's S/N (2 ms boxcar, robust noise) in PREFIX_DM120.00.dat
# and the pulsar's folded S/N in PREFIX_DM60.00.dat
snr() {
    "$PYTHON" - "$1" <<'EOF'
import sys
import numpy as np
ts = 0.000256
def robust(x):
    m = np.median(x)
    return m, 1.4826 * np.median(np.abs(x - m))
x = np.fromfile(sys.argv[1] + '_DM120.00.dat', np.float32).astype(np.float64)
m, s = robust(x)
c = np.convolve(x - m, np.ones(8), 'valid') / np.sqrt(8)
cm, cs = robust(c)
i = int(4.3 / ts)
burst = (c[i - 40:i + 40].max() - cm) / cs
x = np.fromfile(sys.argv[1] + '_DM60.00.dat', np.float32).astype(np.float64)
b = ((np.arange(len(x)) * ts / 0.2137) % 1 * 64).astype(int)
n = np.bincount(b, None, 64)
prof = np.bincount(b, x, 64) / n
m, s = robust(x)
print('%.3f %.3f' % (burst, (prof.max() - np.median(prof)) / (s / np.sqrt(n.mean()))))
EOF
}

series() {
    dd_direct -q --dm 60,120 --format dat --length exact --force "$@"
}

@test "rfi: a pulsar and a burst under heavy RFI keep >= 90% of their clean S/N with --rfi auto" {
    fbsim -o clean.fil $OBS
    # 10% of the channels persistent, 50-sigma broadband impulses each second
    fbsim -o rfi.fil $OBS --rfi chans:0.1:5 --rfi impulses:1:50
    series clean.fil --prefix c
    series rfi.fil --prefix r
    run series rfi.fil --prefix a --rfi auto -v
    [ "$status" -eq 0 ]
    [[ "$output" == *"11 channels flagged"* ]]
    # 8 impulses, each one or two samples
    [[ "$output" =~ ([0-9]+)\ spectra\ clipped ]]
    [ "${BASH_REMATCH[1]}" -ge 8 ] && [ "${BASH_REMATCH[1]}" -le 24 ]
    grep -q "RFI excision: .*% of samples replaced" a_DM60.00.inf
    read -r cb cp < <(snr c)
    read -r rb rp < <(snr r)
    read -r ab ap < <(snr a)
    echo "clean $cb $cp  rfi $rb $rp  excised $ab $ap"
    # the RFI costs real S/N without excision: the test can fail
    awk -v a="$rb" -v c="$cb" 'BEGIN { exit !(a < 0.6 * c) }'
    awk -v a="$ab" -v c="$cb" -v p="$ap" -v q="$cp" 'BEGIN { exit !(a >= 0.9 * c && p >= 0.9 * q) }'
}

@test "rfi: with --rfi auto no RFI event outranks the burst over a DM sweep; without, an impulse does" {
    fbsim -o rfi.fil $OBS --rfi chans:0.1:5 --rfi impulses:1:50
    dd_direct -q --dm-min 0 --dm-max 200 --dm-step 4 --prefix a --rfi auto rfi.fil
    read -r dm sample t snr < <(timpeak a_DM*.tim | sort -t$'\t' -k4,4g | tail -1)
    approx "$dm" 120 8
    approx "$t" 4.3 0.01
    dd_direct -q --dm-min 0 --dm-max 200 --dm-step 4 --prefix n rfi.fil
    read -r dm sample t snr < <(timpeak n_DM*.tim | sort -t$'\t' -k4,4g | tail -1)
    [ "$dm" = 0.000000 ]
}

@test "rfi: --rfi auto leaves a clean observation byte for byte; off by default" {
    fbsim -o clean.fil $OBS
    series clean.fil --prefix c
    series clean.fil --prefix a --rfi auto
    cmp c_DM60.00.dat a_DM60.00.dat
    cmp c_DM120.00.dat a_DM120.00.dat
    series clean.fil --prefix n --rfi none
    cmp c_DM120.00.dat n_DM120.00.dat
    ! grep -q "RFI" c_DM60.00.inf
}

@test "rfi: dropouts are clipped; periodic RFI with --zerodm; the cleaning does not depend on the gulp" {
    fbsim -o clean.fil $OBS
    fbsim -o drop.fil $OBS --rfi dropouts:0.5:0.01
    series clean.fil --prefix c
    series drop.fil --prefix d
    series drop.fil --prefix a --rfi auto
    read -r cb cp < <(snr c)
    read -r db dp < <(snr d)
    read -r ab ap < <(snr a)
    echo "clean $cb $cp  dropouts $db $dp  excised $ab $ap"
    awk -v a="$ab" -v c="$cb" -v p="$ap" -v q="$cp" 'BEGIN { exit !(a >= 0.98 * c && p >= 0.98 * q) }'
    awk -v p="$dp" -v q="$cp" 'BEGIN { exit !(p > 1.1 * q) }'
    # a 25 ms wide 30-sigma pulse every 0.5 s at DM 0: clipping takes its core,
    # --zerodm its wings
    fbsim -o bad.fil $OBS --rfi periodic:0.5:30 --rfi dropouts:0.5:0.01
    series bad.fil --prefix b
    series bad.fil --prefix z --rfi auto --zerodm
    read -r bb bp < <(snr b)
    read -r zb zp < <(snr z)
    echo "periodic $bb  excised with --zerodm $zb"
    awk -v a="$zb" -v c="$cb" -v b="$bb" 'BEGIN { exit !(a >= 0.9 * c && b < 0.8 * c) }'
    dd_subband -q --dm 120 --nsub 16 --sub-dm 120 --format dat --length exact -o s.dat \
        --rfi auto bad.fil
    dd_subband -q --dm 120 --nsub 16 --sub-dm 120 --format dat --length exact -o t.dat \
        --rfi auto bad.fil --gulp 5000
    cmp s.dat t.dat
}

@test "rfi: the cleaning and its figures do not depend on the threads or the gulp, nor on stdin" {
    # 3 s: 5 blocks of 2048 spectra and a partial one
    fbsim -o bad.fil $OBS --tobs 3 --rfi chans:0.1:5 --rfi impulses:1:50 \
        --rfi dropouts:0.5:0.01
    figures() { grep -E "replaced|flagged|clipped" "$1" | sed 's/^[^:]*: [^:]*: //'; }
    dd_direct -q --dm 0,120 --format dat --prefix r --rfi auto --threads 1 -v bad.fil 2> r.log
    figures r.log > r.fig
    grep -q "11 channels flagged (66 channel-blocks of 6 blocks)" r.fig
    for threads in 1 2 3 7; do
        # gulps of less than a block, of a block, of a block and a half, of 4
        for gulp in 1000 2048 3000 8192; do
            OMP_NUM_THREADS=$threads dd_direct -q --dm 0,120 --format dat --prefix g --force \
                --rfi auto --gulp $gulp -v bad.fil 2> g.log
            cmp r_DM0.00.dat g_DM0.00.dat
            cmp r_DM120.00.dat g_DM120.00.dat
            figures g.log | diff - r.fig
            diff <(grep -v "file name" r_DM0.00.inf) <(grep -v "file name" g_DM0.00.inf)
        done
        dd_direct -q --dm 0,120 --format dat --prefix s --force --rfi auto --threads $threads \
            --gulp 1000 -v - < bad.fil 2> s.log
        cmp r_DM120.00.dat s_DM120.00.dat
        figures s.log | diff - r.fig
    done
}

# mask FILE NCHAN NINT PTS ZAPCHANS ZAPINTS: a PRESTO rfifind mask (mask.c's
# layout) zapping channels (rfifind's numbering: lowest frequency first) and
# whole intervals
write_mask() {
    "$PYTHON" - "$@" <<'EOF'
import struct, sys
path, nchan, nint, pts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
chans = [int(c) for c in sys.argv[5].split(',') if c]
ints = [int(i) for i in sys.argv[6].split(',') if i]
with open(path, 'wb') as f:
    f.write(struct.pack('6d', 6.0, 10.0, 60000.0, pts * 0.000256, 1373.0, 1.0))
    f.write(struct.pack('4i', nchan, nint, pts, len(chans)))
    f.write(struct.pack('%di' % len(chans), *chans))
    f.write(struct.pack('i', len(ints)))
    f.write(struct.pack('%di' % len(ints), *ints))
    per = [nchan if i in ints else len(chans) for i in range(nint)]
    f.write(struct.pack('%di' % nint, *per))
    for i in range(nint):
        if 0 < per[i] < nchan:
            f.write(struct.pack('%di' % per[i], *chans))
EOF
}

@test "rfi: an rfifind mask of the RFI channels and impulse intervals recovers the signals" {
    fbsim -o clean.fil $OBS
    fbsim -o rfi.fil $OBS --rfi chans:0.1:5 --rfi impulses:1:50
    # the injected channels (file order 7 9 20 41 43 51 55 64 81 88 100) in
    # rfifind's ascending order, and three 2048-spectrum intervals with impulses
    write_mask m.mask 128 16 2048 27,39,46,63,72,76,84,86,107,118,120 0,2,14
    series clean.fil --prefix c
    run series rfi.fil --prefix m --mask m.mask -v
    [ "$status" -eq 0 ]
    # (11 x 31250 + 3 x 2048 x 117) / (128 x 31250) of the samples
    [[ "$output" == *"RFI excision: 26.6% of samples replaced by channel levels"* ]]
    grep -q "rfifind mask m.mask applied" m_DM60.00.inf
    read -r cb cp < <(snr c)
    read -r mb mp < <(snr m)
    echo "clean $cb $cp  masked $mb $mp"
    awk -v a="$mb" -v c="$cb" -v p="$mp" -v q="$cp" 'BEGIN { exit !(a >= 0.9 * c && p >= 0.9 * q) }'
    write_mask bad.mask 64 16 2048 1 ""
    run_err bad.mask dd_direct --dm 60 -o x.tim --mask bad.mask rfi.fil
    [ "$status" -eq 1 ]
    head -c 40 m.mask > short.mask
    run_err short.mask dd_direct --dm 60 -o x.tim --mask short.mask rfi.fil
    [ "$status" -eq 1 ]
    [ ! -e x.tim ]
}

# stats FILE NCHAN NINT: rfifind's .stats layout (5 ints, then NINT x NCHAN
# floats of powers and as many of averages); interval i's average of
# rfifind channel c is 10 c + i, except channel 2's: -1000 in interval 0 and
# 1000 in the last (the middle 80% leaves both out)
write_stats() {
    "$PYTHON" - "$@" <<'PY'
import struct, sys
path, nchan, nint = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
avg = [[10.0 * c + i for c in range(nchan)] for i in range(nint)]
avg[0][2], avg[nint - 1][2] = -1000.0, 1000.0
with open(path, 'wb') as f:
    f.write(struct.pack('5i', nchan, nint, 1024, 0, 0))
    f.write(struct.pack('%df' % (nchan * nint), *([0.0] * nchan * nint)))
    for row in avg:
        f.write(struct.pack('%df' % nchan, *row))
PY
}

@test "rfi: with rfifind's .stats beside the mask, masked samples take PRESTO's padding (mid-80% channel average)" {
    # 16 channels descending, float samples; the mask zaps rfifind channel 2
    # (file channel 13) in 10 intervals of 1024 spectra; every channel but
    # 13 killed, so the DM-0 series is channel 13's samples
    fbsim -o f.fil --nchans 16 --nbits 32 --tsamp 0.000256 --nsamples 10240 --fch1 1500 \
        --foff -1 --seed 2 -q --force
    write_mask m_rfifind.mask 16 10 1024 2 ""
    echo 0:12,14:15 > kill.txt
    dd_direct f.fil --dm 0 --killfile kill.txt --mask m_rfifind.mask --format dat -o a.dat -q
    write_stats m_rfifind.stats 16 10
    dd_direct f.fil --dm 0 --killfile kill.txt --mask m_rfifind.mask --format dat -o b.dat -q
    # without the .stats ddtk's neighbour level (about the noise mean); with
    # it the mean of 21 .. 28 = 24.5, in every sample
    "$PYTHON" -c "
import numpy as np
a = np.fromfile('a.dat', np.float32); b = np.fromfile('b.dat', np.float32)
assert len(a) == len(b) == 10240, (len(a), len(b))
assert np.all(b == 24.5), b[:4]
assert abs(a.mean() - 24.5) > 1, a[:4]"
    write_stats m_rfifind.stats 32 10
    run_err m_rfifind.stats dd_direct f.fil --dm 0 --mask m_rfifind.mask -o x.dat
    [ "$status" -eq 1 ]
    [ ! -e x.dat ]
}

@test "rfi: a dropout of a quarter of a block leaves the burst alone at its clean S/N (the levels from the unclipped spectra)" {
    # 0.15 s of zeros (586 spectra of a 2048-spectrum block) under 10% RFI
    # channels: with the block's levels taken over the zeros too, the
    # replaced samples stepped at the block's edges and the search found
    # eight S/N 6 events beside the burst, whose S/N fell from 43 to 37
    local o="--nchans 128 --nbits 8 --tsamp 0.000256 --tobs 8.747008 --fch1 1500 --foff -1
             --seed 5 --pulse 4.3,120,0.002,20 --rfi chans:0.1:5 -q --force"
    fbsim -o a.fil $o
    fbsim -o d.fil $o --rfi dropouts:0.125:0.15
    dd_direct a.fil --dm-max 300 --rfi auto --search --discard --prefix a -q
    dd_direct d.fil --dm-max 300 --rfi auto --search --discard --prefix d -q -v 2> d.err
    cat a.cand d.cand
    grep -q "586 spectra clipped" d.err
    [ "$(wc -l < d.cand)" -eq 1 ]
    read -r as _ at _ < a.cand
    read -r ds _ dt _ < d.cand
    [ "$at" = "$dt" ]
    awk -v a="$as" -v d="$ds" 'BEGIN { exit !(d >= 0.97 * a) }'
}

@test "rfi: a mask claiming more intervals than its bytes hold: one line, exit 1, nothing allocated for them" {
    # found by fuzz_mask: 2^28 intervals in a 68-byte mask asked for 4 GB
    fbsim -o f.fil --nchans 16 --nbits 8 --tsamp 0.000256 --nsamples 4096 --fch1 1500 --foff -1 \
        -q --force
    "$PYTHON" -c "
import struct
with open('big.mask', 'wb') as f:
    f.write(struct.pack('6d', 6.0, 10.0, 60000.0, 0.26, 1373.0, 1.0))
    f.write(struct.pack('4i', 16, 1 << 28, 1024, 0))
    f.write(struct.pack('i', 0))"
    # within 2 GB of address space 4 GB asked for would fail as out of memory
    # (not under ASan, which reserves terabytes of shadow)
    local lim='ulimit -v 2000000;'
    [ -z "${ASAN_OPTIONS:-}" ] || lim=
    run_err big.mask bash -c "$lim"' exec dd_direct f.fil --dm 0 --mask big.mask -o x.tim'
    [ "$status" -eq 1 ]
    [[ "$output" == *"truncated rfifind mask (268435456 intervals in 68 bytes)"* ]]
    [ ! -e x.tim ]
    # one interval of 2^30 spectra: longer than the input's 4096 (12 GB of workspace)
    "$PYTHON" -c "
import struct
with open('long.mask', 'wb') as f:
    f.write(struct.pack('6d', 6.0, 10.0, 60000.0, 0.26, 1373.0, 1.0))
    f.write(struct.pack('4i', 16, 1, 1 << 30, 0))
    f.write(struct.pack('2i', 0, 0))"
    run_err long.mask bash -c "$lim"' exec dd_direct f.fil --dm 0 --mask long.mask -o x.tim'
    [ "$status" -eq 1 ]
    [[ "$output" == *"intervals of 1073741824 spectra, longer than f.fil (4096)"* ]]
    [ ! -e x.tim ]
}
