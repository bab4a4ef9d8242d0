#!/usr/bin/env bats
# fdas.bats - the fdas tool: recovery of accelerated pulsars from fbsim series,
# harmonic summing, honest sigmas on noise, inputs (.tim, .dat+.inf, stdin),
# outputs (tsv, presto, batch), bad input, and CPU/GPU agreement.
load common

# 2^17 samples of 1 ms; P = 21.8 ms -> r0 = f0 T = 6012.477 bins.
P=0.0218
NS=131072
T=131.072

# acceleration giving drift z: a = z c / (f0 T^2)
accel_for_z() {
    awk -v z="$1" -v p="$P" -v t="$T" 'BEGIN { printf "%.6f", z * 299792458 * p / (t * t) }'
}

make_pulsar() { # z seed [amp]
    fbsim --tim --tsamp 0.001 --nsamples $NS --seed "$2" \
        --pulsar "$P,0,0.1,${3:-0.5},$(accel_for_z "$1")" -o "psr$1.tim"
}

# top candidate: r z numharm sigma
top() { awk -F'\t' 'NR == 2 { print $7, $8, $4, $2 }' "$1"; }

check_recovery() { # z
    make_pulsar "$1" 11
    fdas -q "psr$1.tim" > c.tsv
    read -r r z nh sigma < <(top c.tsv)
    want_r=$(awk -v z="$1" -v p="$P" -v t="$T" 'BEGIN { print t / p + z / 2 }')
    echo "z=$1: found r=$r z=$z numharm=$nh sigma=$sigma (want r=$want_r)"
    approx "$r" "$want_r" 1
    approx "$z" "$1" 2
}

@test "fdas: --help lists the options with defaults, --version" {
    run fdas --help
    [ "$status" -eq 0 ]
    for o in --zmax --numharm --sigma --format --interp --flo --fhi --accel-min --backend; do
        [[ "$output" == *"$o"* ]]
    done
    [[ "$output" == *"default 200"* ]]
    run fdas --version
    [[ "$output" == "fdas (ddtk) "* ]]
}

@test "fdas: pulsar at z = -150 found at the fundamental" { check_recovery -150; }
@test "fdas: pulsar at z = -40 found at the fundamental" { check_recovery -40; }
@test "fdas: pulsar at z = 0 found at the fundamental" { check_recovery 0; }
@test "fdas: pulsar at z = +40 found at the fundamental" { check_recovery 40; }
@test "fdas: pulsar at z = +150 found at the fundamental" { check_recovery 150; }

@test "fdas: --interp interbin finds the pulsar too" {
    make_pulsar 40 12
    fdas -q --interp interbin psr40.tim > c.tsv
    read -r r z nh sigma < <(top c.tsv)
    approx "$r" 6032.5 1
    approx "$z" 40 2
}

@test "fdas: harmonic summing raises the pulsar's sigma" {
    make_pulsar 0 13 0.3
    fdas -q --numharm 1 psr0.tim > one.tsv
    fdas -q --numharm 8 psr0.tim > eight.tsv
    read -r _ _ nh1 s1 < <(top one.tsv)
    read -r _ _ nh8 s8 < <(top eight.tsv)
    echo "numharm 1: sigma $s1; numharm 8: sigma $s8 ($nh8 harmonics)"
    awk -v a="$s1" -v b="$s8" 'BEGIN { exit !(b > a + 2) }'
    [ "$nh8" -gt 1 ]
}

@test "fdas: noise alone gives no candidate above sigma 6 (4 seeds)" {
    for seed in 21 22 23 24; do
        fbsim --tim --tsamp 0.001 --nsamples $NS --seed $seed -o n.tim --force
        fdas -q n.tim > c.tsv
        best=$(awk -F'\t' 'NR == 2 { print $2 } END { if (NR < 2) print 0 }' c.tsv)
        echo "seed $seed: best sigma $best"
        awk -v s="$best" 'BEGIN { exit !(s < 6) }'
    done
}

@test "fdas: .dat + .inf and stdin give the same candidates as the .tim" {
    make_pulsar 40 14
    fdas -q psr40.tim > tim.tsv
    hdr=$(fbinfo psr40.tim -k header_size 2>/dev/null || echo "")
    [ -n "$hdr" ] || hdr=$(( $(stat -c %s psr40.tim) - 4 * NS ))
    tail -c +$((hdr + 1)) psr40.tim > s_DM0.00.dat
    cat > s_DM0.00.inf <<INF
 Data file name without suffix          =  s_DM0.00
 Telescope used                         =  Unknown
 Epoch of observation (MJD)             =  60000.000000000000000
 Number of bins in the time series      =  $NS
 Width of each time series bin (sec)    =  0.001
 Dispersion measure (cm-3 pc)           =  0
 Any additional notes:
    test
INF
    fdas -q s_DM0.00.dat > dat.tsv
    fdas -q - < psr40.tim > stdin.tsv
    diff tim.tsv dat.tsv
    diff tim.tsv stdin.tsv
}

@test "fdas: --format presto writes <base>_ACCEL_<zmax> with harmonics and the .inf" {
    make_pulsar 0 15
    fdas -q --format presto --zmax 50 psr0.tim
    [ -f psr0_ACCEL_50 ]
    # fundamentals start with a digit; first harmonic rows with one blank
    grep -qE '^1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ ' psr0_ACCEL_50
    grep -qE '^ 1 +1 ' psr0_ACCEL_50
    grep -q 'Width of each time series bin (sec)    =  0.001' psr0_ACCEL_50
    run_err psr0_ACCEL_50 fdas -q --format presto --zmax 50 psr0.tim
    [ "$status" -eq 2 ]
    fdas -q --format presto --zmax 50 --force psr0.tim
}

@test "fdas: batch mode writes one output per input" {
    make_pulsar 0 16
    cp psr0.tim second.tim
    fdas -q --zmax 20 psr0.tim second.tim
    [ -s psr0_ACCEL_20.tsv ] && [ -s second_ACCEL_20.tsv ]
    diff psr0_ACCEL_20.tsv second_ACCEL_20.tsv
}

@test "fdas: batch inputs read into the plan's series buffer give their single-run lists" {
    make_pulsar 0 16
    hdr=$(( $(stat -c %s psr0.tim) - 4 * NS ))
    tail -c +$((hdr + 1)) psr0.tim > d_DM0.00.dat
    cat > d_DM0.00.inf <<INF
 Data file name without suffix          =  d_DM0.00
 Epoch of observation (MJD)             =  60000.000000000000000
 Number of bins in the time series      =  $NS
 Width of each time series bin (sec)    =  0.001
 Dispersion measure (cm-3 pc)           =  0
INF
    head -c $((hdr + 2 * NS)) psr0.tim > short.tim
    cp psr0.tim third.tim
    for f in psr0.tim d_DM0.00.dat short.tim; do fdas -q --zmax 20 $f > "$f.one"; done
    fdas -q --zmax 20 psr0.tim d_DM0.00.dat - short.tim third.tim < psr0.tim
    diff psr0.tim.one psr0_ACCEL_20.tsv
    diff psr0.tim.one d_DM0.00_ACCEL_20.tsv
    diff psr0.tim.one stdin_ACCEL_20.tsv
    diff short.tim.one short_ACCEL_20.tsv
    diff psr0.tim.one third_ACCEL_20.tsv
}

@test "fdas: --accel-min/--accel-max set zmax and filter candidates" {
    make_pulsar 40 17
    run bash -c 'fdas --accel-min 0 --accel-max 20000 --fhi 60 psr40.tim 2>&1 >/dev/null'
    [[ "$output" == *"zmax"* ]]
    fdas -q --accel-min 0 --accel-max 20000 --fhi 60 psr40.tim > c.tsv
    awk -F'\t' 'NR > 1 && ($10 < 0 || $10 > 20000) { exit 1 }' c.tsv
}

@test "fdas: bad input gives one-line errors and the right exit codes" {
    fbsim --tim --tsamp 0.001 --nsamples 62 -o short.tim
    run_err short.tim fdas short.tim
    [ "$status" -eq 1 ]
    fbsim --tim --tsamp 0.001 --nsamples 4097 -o odd.tim
    : > empty.dat
    printf ' Epoch of observation (MJD)             =  60000\n Number of bins in the time series      =  0\n Width of each time series bin (sec)    =  0.001\n Dispersion measure (cm-3 pc)           =  0\n' > empty.inf
    run_err empty.dat fdas empty.dat
    [ "$status" -eq 1 ]
    head -c 1000 /dev/zero > zero_DM1.00.dat
    sed 's/0.001/0/' empty.inf > zero_DM1.00.inf
    run_err zero_DM1.00 fdas zero_DM1.00.dat
    [ "$status" -eq 1 ]
    head -n 2 empty.inf > trunc.inf
    : > trunc.dat
    run_err trunc.inf fdas trunc.dat
    [ "$status" -eq 1 ]
    run_err zmax fdas --zmax -2 odd.tim
    [ "$status" -eq 2 ]
    run_err numharm fdas --numharm 3 odd.tim
    [ "$status" -eq 2 ]
    run_err interp fdas --interp cubic odd.tim
    [ "$status" -eq 2 ]
}

@test "fdas: CPU and GPU planes agree within 1e-4 and give the same candidates" {
    if ! fdas --list-gpus | grep -q '^0'; then
        skip "no GPU"
    fi
    make_pulsar 40 18
    run fdas_gpucmp psr40.tim
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "fdas: CPU and GPU agree for every block length (zmax 40-1000) and interbinning" {
    if ! fdas --list-gpus | grep -q '^0'; then
        skip "no GPU"
    fi
    make_pulsar 40 18
    for args in "40 exact" "200 interbin" "400 exact" "600 exact" "1000 exact"; do
        run fdas_gpucmp psr40.tim $args
        echo "$args: $output"
        [ "$status" -eq 0 ]
    done
}

@test "fdas: GPU plane tiling (DDTK_FDAS_GPU_MEM) gives the untiled candidates" {
    if ! fdas --list-gpus | grep -q '^0'; then
        skip "no GPU"
    fi
    make_pulsar 40 19
    for interp in exact interbin; do
        fdas -q --backend gpu --interp $interp psr40.tim > whole.tsv
        DDTK_FDAS_GPU_MEM=32 fdas -v --backend gpu --interp $interp psr40.tim \
            > tiled.tsv 2> tiled.log || { cat tiled.log; false; }
        cat tiled.log
        grep -q 'tiles of' tiled.log
        [ "$(wc -l < whole.tsv)" -gt 1 ]
        [ "$(wc -l < whole.tsv)" -eq "$(wc -l < tiled.tsv)" ]
        # same rank, numharm, r, z; sigma and power equal to rounding
        paste whole.tsv tiled.tsv | awk -F'\t' -v n="$(head -1 whole.tsv | awk -F'\t' '{ print NF }')" '
            NR > 1 && ($1 != $(n + 1) || $4 != $(n + 4) || $7 != $(n + 7) || $8 != $(n + 8) ||
                       ($2 - $(n + 2))^2 > 1e-6 || ($3 - $(n + 3))^2 > 1e-4 * $3^2) {
                print "differs: " $0; bad = 1 }
            END { exit bad }'
    done
    run env DDTK_FDAS_GPU_MEM=32 fdas_gpucmp psr40.tim
    echo "$output"
    [ "$status" -eq 0 ]
}
