#!/usr/bin/env bats
# dd_tree on the CPU: its DM list (eq. 9, scrunched extensions), recovered
# S/N against dd_direct at the same DMs and scrunch factors (piecewise >= 90%,
# padded >= 97%), gulp invariance, the .inf, bad options. The exactness of the
# tree against brute-force sums along its delay paths is test/unit/test_tree.c.

load common

# 256 channels, 8-bit: a burst at DM 50 (t = 0.5 s) and one at DM 400 (t = 1.5 s).
make_pulses() {
    fbsim -o p.fil --nchans 256 --nbits 8 --tsamp 0.000064 --tobs 3 --fch1 1581.8 \
        --foff -1.5625 --seed 3 --pulse 0.5,50,0.001,10 --pulse 1.5,400,0.002,10
}

data_of() {   # the samples of a .tim, without its header
    tail -c +$(( $(fbinfo -k header_size "$1") + 1 )) "$1"
}

# best_snr FILES...: the highest peak S/N of the series
best_snr() {
    timpeak "$@" | sort -t$'\t' -k4,4g | tail -1 | cut -f4
}

# compare METHOD LO HI RATIO: dd_tree's best S/N in LO..HI is at least RATIO
# times dd_direct's over the same DMs at the same scrunch factor.
compare() {
    local method=$1 lo=$2 hi=$3 ratio=$4
    mkdir -p "t$lo" "d$lo"
    dd_tree p.fil --method "$method" --dm-min "$lo" --dm-max "$hi" --list-dms > dms.txt
    [ "$(cut -f2 dms.txt | sort -u | wc -l)" -eq 1 ]     # one scrunch level
    awk 'BEGIN { print "dm_lo\tdm_hi\tdm_step\tdownsamp\tndm" }
         NR == 1 { lo = $1; ds = $2 } NR == 2 { st = $1 - lo } { n = NR }
         END { printf "%.9f\t%.9f\t%.9f\t%d\t%d\n", lo, lo + n * st, st, ds, n }' dms.txt > plan.tsv
    dd_tree p.fil --method "$method" --dm-min "$lo" --dm-max "$hi" --prefix "t$lo/p" -q
    dd_direct p.fil --plan plan.tsv --prefix "d$lo/p" -q
    [ "$(ls "t$lo" | wc -l)" -eq "$(wc -l < dms.txt)" ]
    tree=$(best_snr "t$lo"/*.tim)
    direct=$(best_snr "d$lo"/*.tim)
    echo "$method $lo..$hi: tree $tree direct $direct"
    awk -v t="$tree" -v d="$direct" -v r="$ratio" 'BEGIN { exit !(d > 10 && t >= r * d) }'
}

@test "the DMs are eq. 9's: a constant step per scrunch level, doubling with the factor" {
    make_pulses
    dd_tree p.fil --dm-max 1000 --list-dms > dms.txt
    [ "$(head -1 dms.txt | cut -f1)" = 0.000000 ]
    # eq. 9 at tsamp: the step that moves the sweep across the band by one sample
    step=$(awk 'BEGIN { fh = 1581.8; fl = fh - 255 * 1.5625;
                        printf "%.9f", 0.000064 / (4148.741601 * (fl^-2 - fh^-2)) }')
    awk -v s="$step" -F'\t' '
        NR > 1 && $2 == f { d = $1 - p; if (d < s * f - 2e-6 || d > s * f + 2e-6) bad++ }
        NR > 1 && $2 != f { if ($2 != 2 * f) bad++ }
        { p = $1; f = $2 } END { exit bad > 0 || f < 16 || p > 1000 }' dms.txt
}

@test "piecewise (default): S/N at least 90% of dd_direct's at the same DMs" {
    make_pulses
    compare piecewise 45 55 0.90
    compare piecewise 390 410 0.90
}

@test "frequency-padded: S/N at least 97% of dd_direct's at the same DMs" {
    make_pulses
    compare padded 45 55 0.97
    compare padded 390 410 0.97
}

@test "the gulp size does not change a byte, nor the number of sub-bands the DMs" {
    make_pulses
    dd_tree p.fil --dm-min 40 --dm-max 200 --prefix a -q
    dd_tree p.fil --dm-min 40 --dm-max 200 --prefix b --gulp 136 -q
    n=0
    for f in a_DM*.tim; do cmp "$f" "b${f#a}"; n=$((n + 1)); done
    [ "$n" -gt 100 ]
    dd_tree p.fil --dm-max 200 --nsub 4 --list-dms > four.txt
    dd_tree p.fil --dm-max 200 --sub-chans 64 --list-dms > sixtyfour.txt
    cmp four.txt sixtyfour.txt
}

@test "the .inf carries each series' tree DM and scrunched sample time" {
    make_pulses
    dd_tree p.fil --dm-min 390 --dm-max 395 --format dat --prefix q -q
    for inf in q_DM*.inf; do
        dm=${inf#q_DM}; dm=${dm%.inf}
        grep -q "Dispersion measure (cm-3 pc)           =  $dm" "$inf"
        grep -q "Width of each time series bin (sec)    =  0.002048" "$inf"
        grep -q "dd_tree (tree algorithm, " "$inf" && grep -q "Tree: piecewise-linear, " "$inf"
    done
}

@test "bad options: one line, exit 2" {
    make_pulses
    run_err "--dm-max" dd_tree p.fil --dm 10
    [ "$status" -eq 2 ]
    run_err "--nsub" dd_tree p.fil --dm-max 10 --nsub 3
    [ "$status" -eq 2 ]
    run_err "--method" dd_tree p.fil --dm-max 10 --method quadratic
    [ "$status" -eq 2 ]
    run_err "--dm-max" dd_tree p.fil
    [ "$status" -eq 2 ]
    run_err "no tree DM" dd_tree p.fil --dm-min 10.01 --dm-max 10.02
    [ "$status" -eq 2 ]
}

# ---- GPU (skipped without one) ----------------------------------------------


# same_on_gpu ARGS...: CPU and GPU series identical byte for byte
same_on_gpu() {
    rm -rf c g && mkdir c g
    dd_tree p.fil "$@" --backend cpu --prefix c/x -q
    dd_tree p.fil "$@" --backend gpu --prefix g/x -q
    n=0
    for f in c/x_DM*.tim; do cmp "$f" "g/${f#c/}"; n=$((n + 1)); done
    [ "$n" -gt 10 ]
}

@test "GPU: piecewise output equals the CPU's byte for byte (8-bit input)" {
    need_gpu
    make_pulses
    same_on_gpu --dm-max 450
    same_on_gpu --dm-min 30 --dm-max 120 --sub-chans 64 --gulp 4096
}

@test "GPU: padded and unscrunched output equal the CPU's byte for byte" {
    need_gpu
    make_pulses
    same_on_gpu --dm-max 120 --method padded
    same_on_gpu --dm-max 60 --scrunch none --sub-chans 8
}

@test "GPU: 2-bit input with killed channels equal the CPU's" {
    need_gpu
    fbsim -o p.fil --nchans 200 --nbits 2 --tsamp 0.000128 --tobs 4 --fch1 1500 \
        --foff -1 --seed 5 --pulse 2,150,0.002,8
    echo "0:9,100" > kill.txt
    same_on_gpu --dm-max 300 --killfile kill.txt
}

@test "GPU: passes of fewer rows, a sub-band wider than one pass, small gulps equal the CPU's" {
    need_gpu
    make_pulses
    # 256 channels a sub-band: two shared-memory passes (16 x 16 rows), the
    # second on rows 16 apart pre-shifted by their bit-reversed residue
    same_on_gpu --dm-max 200 --sub-chans 256
    # passes of at most 4 rows (2 x 4 x 4), and one stage per pass (padded: 9)
    DDTK_TREE_GROUP=4 same_on_gpu --dm-max 200 --sub-chans 32
    DDTK_TREE_GROUP=2 same_on_gpu --dm-max 120 --method padded
    same_on_gpu --dm-min 30 --dm-max 200 --gulp 136
}

@test "GPU: 32-bit float input equals the CPU's byte for byte (the sums keep its order)" {
    need_gpu
    fbsim -o p.fil --nchans 120 --nbits 32 --tsamp 0.000128 --tobs 3 --fch1 1500 \
        --foff -2 --seed 9 --pulse 1,200,0.002,10
    echo "7,40:47" > kill.txt
    same_on_gpu --dm-max 400 --killfile kill.txt
    same_on_gpu --dm-max 300 --method padded --gulp 5000
}

@test "GPU: -v names the shared-memory passes and times both stages; DDTK_TREE_GROUP is checked" {
    need_gpu
    make_pulses
    run dd_tree p.fil --dm-max 200 --sub-chans 256 --backend gpu --discard -v
    [ "$status" -eq 0 ]
    [[ "$output" == *"stage 1 in 2 shared-memory kernels of 16 x 16 rows"* ]]
    line=$(printf '%s\n' "$output" | grep "GPU kernels: stage 1 ")
    awk -v l="$line" 'BEGIN { if (!match(l, /stage 1 [0-9.]+ s, stage 2 [0-9.]+ s/)) exit 1
        split(substr(l, RSTART, RLENGTH), x, " "); exit !(x[3] > 0 && x[7] > 0) }'
    run_err "DDTK_TREE_GROUP" env DDTK_TREE_GROUP=3 dd_tree p.fil --dm-max 10 --backend gpu \
        --discard -q
    [ "$status" -eq 2 ]
}

@test "a band-flipped copy and stdin give identical bytes" {
    make_pulses
    fbflip p.fil flipped.fil
    dd_tree p.fil --dm-min 380 --dm-max 420 --prefix a -q
    dd_tree flipped.fil --dm-min 380 --dm-max 420 --prefix b -q
    dd_tree - --dm-min 380 --dm-max 420 --prefix c -q < p.fil
    n=0
    for f in a_DM*.tim; do
        cmp <(data_of "$f") <(data_of "b${f#a}")
        cmp "$f" "c${f#a}" || cmp <(data_of "$f") <(data_of "c${f#a}")
        n=$((n + 1))
    done
    [ "$n" -gt 20 ]
}

@test "--max-mem counts the tree's stage-1 buffers: a smaller gulp, the same bytes" {
    make_pulses
    # the CPU's host buffers (on a GPU machine auto takes the GPU, which budgets its own)
    dd_tree p.fil --dm-max 200 --prefix a -q --backend cpu
    dd_tree p.fil --dm-max 200 --prefix b -q --max-mem 80M --backend cpu
    for f in a_DM*.tim; do cmp "$f" "b${f#a}"; done
    # 8 spectra need about 42 MiB with the tree's buffers (rows alone: under 5 MiB)
    run_err "--max-mem" dd_tree p.fil --dm-max 200 --discard -q --max-mem 40M --backend cpu
    [ "$status" -eq 2 ]
}

@test "dd_tree --help lists only the DM options the tree takes" {
    run dd_tree --help
    [ "$status" -eq 0 ]
    [[ "$output" == *"--dm-max B"* ]] && [[ "$output" == *"--pulse-width W"* ]]
    ! grep -Eq -- '--dm[ ,]|--dm-list|--plan|--dm-step|--tol' <<<"$output"
    run dd_direct --help
    grep -q -- '--plan FILE' <<<"$output"
}
