#!/usr/bin/env bats
# dd_fdmt: its DM list (one sample of delay across the band apart, scrunched
# past the diagonal), pulses found at the right DM and time with at least 97%
# of dd_direct's S/N at the same DMs, gulp and band-order invariance, the
# outputs and options of the suite, bad options, and CPU = GPU (skipped
# without one). The bit-exactness of the transform against an independent
# reference is test/unit/test_fdmt.c; the GPU's band plan, run on the host
# against the CPU's transform, test/unit/test_fdmt_bands.c.

load common

data_of() {   # the samples of a .tim, without its header
    tail -c +$(( $(fbinfo -k header_size "$1") + 1 )) "$1"
}

# 256 channels, 8-bit, 4 s: bright bursts from DM 50 to DM 2000.
make_sweep() {
    fbsim -o s.fil --nchans 256 --nbits 8 --tsamp 0.000064 --tobs 4 --fch1 1581.8 \
        --foff -1.5625 --seed 7 --pulse 0.2,50,0.001,150 --pulse 0.4,150,0.001,200 \
        --pulse 0.6,300,0.001,250 --pulse 0.8,600,0.001,300 --pulse 1.0,1000,0.001,400 \
        --pulse 1.2,2000,0.001,600
}

# the list of --list-dms as a plan file of one row per DM (dd_direct --plan)
plan_of() {
    awk -F'\t' 'BEGIN { print "dm_lo\tdm_hi\tdm_step\tdownsamp\tndm" }
        NR > 1 { printf "%.9f\t%.9f\t%.9f\t%d\t1\n", dm, $1, $1 - dm, ds }
        { dm = $1; ds = $2 }
        END { printf "%.9f\t%.9f\t%.9f\t%d\t1\n", dm, dm + 0.001, 0.001, ds }' "$1"
}

# best FILES...: "dm sample time snr" of the brightest peak
best() {
    timpeak "$@" | sort -t$'\t' -k4,4g | tail -1
}

# compare FILE LO HI DM TOL TIME [ARGS]: over dd_fdmt's DMs in LO..HI, its
# best peak is within TOL of DM (what the smeared pulse resolves) and 3 ms of
# TIME, with at least 97% of dd_direct's best S/N over the same DMs at the
# same scrunch factors.
compare() {
    local fil=$1 lo=$2 hi=$3 dm=$4 tol=$5 time=$6
    shift 6
    rm -rf f d && mkdir f d
    dd_fdmt "$fil" --dm-min "$lo" --dm-max "$hi" --list-dms "$@" > dms.txt
    plan_of dms.txt > plan.tsv
    dd_fdmt "$fil" --dm-min "$lo" --dm-max "$hi" --prefix f/p -q "$@"
    dd_direct "$fil" --plan plan.tsv --prefix d/p -q
    [ "$(ls f | wc -l)" -eq "$(wc -l < dms.txt)" ]
    read -r fdm _ ftime fsnr <<< "$(best f/*.tim)"
    read -r _ _ _ dsnr <<< "$(best d/*.tim)"
    echo "DM $dm: fdmt DM $fdm t $ftime S/N $fsnr; direct S/N $dsnr"
    approx "$fdm" "$dm" "$tol"
    approx "$ftime" "$time" 0.003
    awk -v f="$fsnr" -v d="$dsnr" 'BEGIN { exit !(d > 50 && f >= 0.97 * d) }'
}

@test "the DMs: one sample across the band apart, the step doubling per scrunch level" {
    make_sweep
    dd_fdmt s.fil --dm-max 1000 --list-dms > dms.txt
    [ "$(head -1 dms.txt)" = "$(printf '0.000000\t1')" ]
    step=$(awk 'BEGIN { fh = 1581.8; fl = fh - 255 * 1.5625;
                        printf "%.9f", 0.000064 / (4148.741601 * (fl^-2 - fh^-2)) }')
    # level k >= 1 starts at 2^k diagonals (one sample between the lowest channels)
    diag=$(awk 'BEGIN { fl = 1581.8 - 255 * 1.5625;
                        printf "%.9f", 0.000064 / (4148.741601 * (fl^-2 - (fl + 1.5625)^-2)) }')
    awk -v s="$step" -v g="$diag" -F'\t' '
        NR > 1 && $2 == f { d = $1 - p; if (d < s * f - 2e-6 || d > s * f + 2e-6) bad++ }
        NR > 1 && $2 != f { if ($2 != 2 * f || $1 < $2 * g || p >= $2 * g) bad++ }
        { p = $1; f = $2 } END { exit bad > 0 || f < 16 || p > 1000 }' dms.txt
    dd_fdmt s.fil --dm-max 1000 --scrunch none --list-dms | cut -f2 | sort -u > ds.txt
    [ "$(cat ds.txt)" = 1 ]
}

@test "a burst at DM 300 (scrunched 8x, 1024 channels): right DM and time, >= 97% of dd_direct's S/N" {
    fbsim -o a.fil --nchans 1024 --nbits 8 --tsamp 0.000064 --tobs 1.2 --fch1 1581.8 \
        --foff -0.390625 --seed 5 --pulse 0.5,300,0.006,100
    dd_fdmt a.fil --dm-min 298 --dm-max 302 --list-dms | cut -f2 | sort -u > ds.txt
    [ "$(cat ds.txt)" = 8 ]
    compare a.fil 298 302 300 1 0.5
}

@test "bursts from DM 50 to DM 2000: right DM and time, >= 97% of dd_direct's S/N" {
    make_sweep
    compare s.fil 48 52 50 1 0.2 --scrunch none
    compare s.fil 148 152 150 1 0.4 --scrunch none
    compare s.fil 298 302 300 1 0.6 --scrunch none
    compare s.fil 598 602 600 1 0.8 --scrunch none
    compare s.fil 998 1002 1000 1.5 1.0 --scrunch none
    compare s.fil 1998 2002 2000 1.5 1.2 --scrunch none
}

@test "the gulp does not change a byte; a band-flipped copy and stdin give identical series" {
    make_sweep
    dd_fdmt s.fil --dm-min 240 --dm-max 560 --prefix a -q
    dd_fdmt s.fil --dm-min 240 --dm-max 560 --prefix b --gulp 136 -q
    fbflip s.fil flipped.fil
    dd_fdmt flipped.fil --dm-min 240 --dm-max 560 --prefix c -q
    dd_fdmt - --dm-min 240 --dm-max 560 --prefix e -q < s.fil
    n=0
    for f in a_DM*.tim; do
        cmp "$f" "b${f#a}"
        cmp <(data_of "$f") <(data_of "c${f#a}")
        cmp <(data_of "$f") <(data_of "e${f#a}")
        n=$((n + 1))
    done
    [ "$n" -gt 100 ]
}

@test "many threads and a long delay fit the memory bound: the workspaces are fewer, the bytes the same" {
    # 32 threads' workspaces of a 42148-sample delay were 2.6 GiB, over the
    # default 2 GiB bound: the run was refused on a 32-core machine
    make_sweep
    dd_fdmt s.fil --dm-min 1990 --dm-max 2010 --scrunch none --ref-freq 1600 --threads 32 \
        --prefix a -q
    dd_fdmt s.fil --dm-min 1990 --dm-max 2010 --scrunch none --ref-freq 1600 --threads 1 \
        --prefix b -q
    n=0
    for f in a_DM*.tim; do cmp "$f" "b${f#a}"; n=$((n + 1)); done
    [ "$n" -gt 10 ]
}

@test "the outputs: .dat/.inf with each DM and scrunched tsamp, 8-bit output, killed channels, zero-DM" {
    make_sweep
    dd_fdmt s.fil --dm-min 390 --dm-max 395 --format dat --prefix q -q
    n=0
    for inf in q_DM*.inf; do
        dm=${inf#q_DM}; dm=${dm%.inf}
        grep -q "Dispersion measure (cm-3 pc)           =  $dm" "$inf"
        grep -q "Width of each time series bin (sec)    =  0.002048" "$inf"
        grep -q "dd_fdmt (fdmt algorithm, " "$inf"
        n=$((n + 1))
    done
    [ "$n" -ge 2 ]
    echo "0:9,100" > kill.txt
    dd_fdmt s.fil --dm-min 290 --dm-max 310 --killfile kill.txt --zerodm --format dat \
        --prefix k -q
    inf=$(ls k_DM*.inf | head -1)
    grep -q "Killed channels: 11 of 256" "$inf" && grep -q "Zero-DM filter applied" "$inf"
    dd_fdmt s.fil --dm-min 290 --dm-max 310 --killfile kill.txt --zerodm --prefix z -q
    read -r dm _ t _ <<< "$(best z_DM*.tim)"
    approx "$dm" 300 2 && approx "$t" 0.6 0.005
    run dd_fdmt s.fil --dm-min 295 --dm-max 305 --nbits-out 8 --prefix b
    [ "$status" -eq 0 ]
    [[ "$output" == *"--nbits-out 8: "* ]]
    [ "$(fbinfo -k nbits "$(ls b_DM*.tim | head -1)")" = 8 ]
}

@test "ddplan: the FDMT's smearing (half a sample more than direct's) and cost rows" {
    ddplan --nchans 1024 --fch1 1581.8 --foff -0.390625 --tsamp 0.000064 --dm-max 3000 \
        --scrunch auto > plan.txt
    grep -q "tree    fdmt$" plan.txt
    # each row: fdmt = direct and half a (scrunched) sample in quadrature
    awk '$1 ~ /^[0-9]/ && NF == 14 { n++; want = sqrt($11 ^ 2 + ($7 / 2) ^ 2)
                             if ($14 - want > 3e-4 || want - $14 > 3e-4) bad++ }
         END { exit !(n == 6 && !bad) }' plan.txt
    # sample-adds: log2(1024) rows per DM and one per channel, per (scrunched) sample
    want=$(awk '$1 ~ /^[0-9]/ && NF == 14 { s += (10 * $5 + 1024) * 15625 / $4 } END { print s }' plan.txt)
    got=$(sed -n 's/.*FDMT \([0-9.e+]*\) (.*/\1/p' plan.txt)
    echo "FDMT adds $got, model $want"
    approx "$got" "$want" "$(awk -v w="$want" 'BEGIN { print w * 1e-3 }')"
}

@test "bad options: one line, exit 2" {
    make_sweep
    run_err "--dm-max" dd_fdmt s.fil --dm 10
    [ "$status" -eq 2 ]
    run_err "--dm-max" dd_fdmt s.fil --dm-max 10 --dm-step 1
    [ "$status" -eq 2 ]
    run_err "--dm-max" dd_fdmt s.fil
    [ "$status" -eq 2 ]
    run_err "no FDMT DM" dd_fdmt s.fil --dm-min 10.01 --dm-max 10.02
    [ "$status" -eq 2 ]
    run_err "--method" dd_fdmt s.fil --dm-max 10 --method padded
    [ "$status" -eq 2 ]
}

# ---- GPU (skipped without one) ----------------------------------------------


# same_on_gpu FILE ARGS...: CPU and GPU series identical byte for byte
same_on_gpu() {
    local fil=$1
    shift
    rm -rf c g && mkdir c g
    dd_fdmt "$fil" "$@" --backend cpu --prefix c/x -q
    dd_fdmt "$fil" "$@" --backend gpu --prefix g/x -q
    n=0
    for f in c/x_DM*.tim; do cmp "$f" "g/${f#c/}"; n=$((n + 1)); done
    [ "$n" -gt 10 ]
}

@test "GPU: 8-bit output equals the CPU's byte for byte, scrunched and not, any gulp" {
    need_gpu
    make_sweep
    same_on_gpu s.fil --dm-max 450
    same_on_gpu s.fil --dm-min 30 --dm-max 120 --scrunch none --gulp 4096
    same_on_gpu s.fil --dm-min 30 --dm-max 400 --gulp 136
    same_on_gpu s.fil --dm-min 1990 --dm-max 2010 --scrunch none --ref-freq 1600
}

@test "GPU: 1-, 2-, 4-, 16-bit and float input with killed channels equal the CPU's" {
    need_gpu
    echo "0:9,100" > kill.txt
    for nbits in 1 2 4 16 32; do
        fbsim -o p$nbits.fil --nchans 200 --nbits $nbits --tsamp 0.000128 --tobs 3 \
            --fch1 1500 --foff -1 --seed 5 --pulse 1.5,150,0.002,8
        same_on_gpu p$nbits.fil --dm-max 300 --killfile kill.txt
    done
}

@test "GPU: two pipelines on one GPU (--gpu 0,0: the DMs split) give one GPU's bytes" {
    need_gpu
    make_sweep
    rm -rf one two && mkdir one two
    dd_fdmt s.fil --dm-max 450 --backend gpu --gpu 0 --prefix one/x -q
    dd_fdmt s.fil --dm-max 450 --backend gpu --gpu 0,0 --prefix two/x -q
    n=0
    for f in one/x_DM*.tim; do cmp "$f" "two/${f#one/}"; n=$((n + 1)); done
    [ "$n" -gt 100 ]
}
