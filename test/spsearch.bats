#!/usr/bin/env bats
# spsearch.bats - the single-pulse search: fbsim bursts over DM 50-2000,
# widths 0.2-20 ms and matched-filter S/N 8-50 (two on gulp boundaries)
# found once each, at their DM and time, with >= 90% of their ideal S/N;
# pure noise within the Gaussian tail's bound; the real burst of your_28;
# PRESTO output; stdin; bad input.
load common

REAL=$BATS_TEST_DIRNAME/../../shared/data/real
# t (s), DM, FWHM (s), fbsim amp (peak S/N per sample; the ideal S/N the
# runs measure is 9, 20, 12, 8, 30 and 50). 1.048576 s and 2.097152 s are
# output samples 16384 and 32768: gulp boundaries of --gulp 16384.
PULSES="0.3,60,0.0002,8.2 0.7,300,0.01,1.9 1.048576,500,0.001,6.1 1.6,1000,0.005,1.3
        2.097152,1500,0.02,2.0 2.9,2000,0.002,24.5"
STEP=10

# The same noise with and without the pulses (same seed), dedispersed over
# DM 0-2100 in steps of 10: s/ and n/.
setup_file() {
    cd "$BATS_FILE_TMPDIR" || return 1
    local args=() p
    for p in $PULSES; do args+=(--pulse "$p"); done
    fbsim -o sig.fil --nchans 64 --foff -2 --tobs 4 --seed 5 "${args[@]}"
    fbsim -o noise.fil --nchans 64 --foff -2 --tobs 4 --seed 5
    mkdir s n
    dd_direct sig.fil --dm-min 0 --dm-max 2100 --dm-step $STEP --prefix s/x --gulp 16384 --no-baseline -q
    dd_direct noise.fil --dm-min 0 --dm-max 2100 --dm-step $STEP --prefix n/x --gulp 16384 --no-baseline -q
}

@test "spsearch: --help lists the options with defaults, --version" {
    run spsearch --help
    [ "$status" -eq 0 ]
    for o in --output --snr --max-width --format --search-window --dm-tol --time-tol --threads --force; do
        [[ "$output" == *"$o"* ]] || { echo "missing $o"; return 1; }
    done
    [[ "$output" == *"default 6"* ]]
    run spsearch --version
    [ "$status" -eq 0 ]
    [[ "$output" == *"0."* ]]
}

@test "spsearch: fbsim bursts found once each, at DM and time, with >= 90% of the ideal S/N" {
    spsearch -q "$BATS_FILE_TMPDIR"/s/*.tim -o c.cand
    cat c.cand
    for p in $PULSES; do
        IFS=, read -r t dm w amp <<< "$p"
        # Candidates within one trial step of the DM and one width of the time
        # (the pulse's FWHM or the boxcar's, whichever is wider).
        awk -v t="$t" -v dm="$dm" -v w="$w" -v step=$STEP -v ts=6.4e-5 '
            { bw = 2 ^ $4 * ts; tol = (w > bw ? w : bw) + ts
              if (($6 - dm) ^ 2 <= step ^ 2 && ($3 - t) ^ 2 <= tol ^ 2) print }' c.cand > m
        echo "pulse $p: $(wc -l < m) candidate(s)"
        [ "$(wc -l < m)" -eq 1 ]
        read -r snr sample _ _ _ cdm _ < m
        f=$(printf 'x_DM%.2f.tim' "$cdm")
        ideal=$(timideal "$BATS_FILE_TMPDIR/s/$f" "$BATS_FILE_TMPDIR/n/$f" \
                $((sample - 3000)) $((sample + 3000)))
        echo "  S/N $snr, ideal (matched filter at DM $cdm) $ideal"
        awk -v a="$snr" -v b="$ideal" 'BEGIN { exit !(a >= 0.9 * b) }'
    done
    # Nothing else: one candidate per pulse.
    [ "$(wc -l < c.cand)" -eq 6 ]
}

# Upcrossings of threshold s by the boxcars of white noise over N samples:
# N Q(s) for width 1, and by Rice's formula N phi(s) / sqrt(pi w) for each
# width w >= 2 searched (2, 3, 4, 6, ... 1024); every DM counted as
# independent. Candidates, being clusters of such giants, are at most that;
# the test allows the bound plus three of its Poisson sigmas.
noise_bound() { # s nseries nsamples
    awk -v s="$1" -v m="$2" -v n="$3" 'function q(x) { # upper tail, Abramowitz-Stegun 7.1.26
            t = 1 / (1 + 0.3275911 * x / sqrt(2)); a = -1.453152027 + t * 1.061405429
            a = 0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * a))
            return 0.5 * t * a * exp(-x * x / 2) }
        BEGIN { pi = atan2(0, -1); phi = exp(-s * s / 2) / sqrt(2 * pi); b = n * q(s)
            for (w = 2; w <= 1024; w *= 2) { b += n * phi / sqrt(pi * w)
                if (w >= 4) b += n * phi / sqrt(pi * w * 3 / 4) }
            b *= m; printf "%.1f\n", b + 3 * sqrt(b) }'
}

@test "spsearch: pure noise gives no more candidates than the Gaussian tail predicts" {
    nser=$(ls "$BATS_FILE_TMPDIR"/n/*.tim | wc -l)
    nsamp=$(fbinfo "$BATS_FILE_TMPDIR/n/x_DM0.00.tim" -k nsamples)
    for s in 5 6; do
        n=$(spsearch -q --snr $s "$BATS_FILE_TMPDIR"/n/*.tim | wc -l)
        bound=$(noise_bound $s "$nser" "$nsamp")
        echo "S/N $s: $n candidates in $nser series of $nsamp samples, bound $bound"
        awk -v n="$n" -v b="$bound" 'BEGIN { exit !(n <= b) }'
    done
    # The bound is not vacuous: at 5 sigma noise does give candidates.
    [ "$(spsearch -q --snr 5 "$BATS_FILE_TMPDIR"/n/*.tim | wc -l)" -gt 0 ]
}

@test "spsearch: a bright pulsar's pulses are one candidate each (wide boxcars do not chain them)" {
    # 10 s of a 163.84 ms pulsar, 4.9 ms pulses of peak S/N 12 (boxcar S/N
    # ~50): with the boxcars' gap allowed a whole width, the 512-sample
    # giants of consecutive pulses (1000 samples apart) were friends, and 62
    # pulses came out as 23 events (as GBT J1807-0847's did)
    fbsim -q --tim -o p.tim --tsamp 0.00016384 --tobs 10 --fch1 1400 --foff -1 --nchans 1 \
        --seed 3 --pulsar 0.16384,0,0.03,12
    spsearch p.tim --max-width 512 -o p.cand -q
    [ "$(wc -l < p.cand)" -eq 62 ]
    # each at its pulse (n P, within 2 ms), none spanning more than a period
    awk '{ n = int($3 / 0.16384 + 0.5); d = $3 - n * 0.16384
           if (d * d > 0.002 * 0.002 || $9 - $8 >= 1000) { print "bad: " $0; bad = 1 } }
         END { exit bad }' p.cand
}

@test "spsearch: the same candidates from .dat files, any order, and in pieces of any gulp" {
    spsearch -q "$BATS_FILE_TMPDIR"/s/*.tim > a.cand
    mkdir d
    dd_direct "$BATS_FILE_TMPDIR/sig.fil" --dm-min 0 --dm-max 2100 --dm-step $STEP \
        --prefix d/x --format dat --gulp 4096 -q
    # The .dat files are padded to an FFT length (declared in the .inf): not searched.
    spsearch -q $(ls d/*.dat | sort -r) > b.cand
    diff a.cand b.cand
}

@test "spsearch: --format presto writes one .singlepulse per input, PRESTO's columns" {
    mkdir p
    spsearch -q --format presto -o p "$BATS_FILE_TMPDIR"/s/x_DM500.00.tim \
        "$BATS_FILE_TMPDIR"/s/x_DM490.00.tim "$BATS_FILE_TMPDIR"/s/x_DM510.00.tim
    [ -f p/x_DM490.00.singlepulse ] && [ -f p/x_DM510.00.singlepulse ]
    head -1 p/x_DM500.00.singlepulse | grep -q '^# DM      Sigma      Time (s)     Sample    Downfact$'
    # The burst at 1.048576 s (sample 16384), DM 500.
    awk 'NR > 1 && $1 == 500 && $3 > 1.04 && $3 < 1.06 && $4 > 16300 && $4 < 16450 && $5 >= 1' \
        p/x_DM500.00.singlepulse | grep -q .
    run_err exists spsearch -q --format presto -o p "$BATS_FILE_TMPDIR"/s/x_DM500.00.tim
}

@test "spsearch: one .tim on stdin; a short series and its last samples are searched" {
    fbsim --tim --tsamp 0.001 --nsamples 300 --seed 3 --pulse 0.290,0,0.002,15 -o short.tim
    spsearch -q - < short.tim > c.cand
    cat c.cand
    [ "$(wc -l < c.cand)" -eq 1 ]
    awk '{ exit !($2 >= 288 && $2 <= 292) }' c.cand
}

@test "spsearch: the burst in your_28.fil, dedispersed to .dat files, is one candidate" {
    [ -f "$REAL/your_28.fil" ] || skip "no $REAL/your_28.fil"
    mkdir y
    dd_direct "$REAL/your_28.fil" --dm-min 0 --dm-max 1000 --format dat --prefix y/y -q
    spsearch -q y/*.dat > c.cand
    cat c.cand
    [ "$(wc -l < c.cand)" -eq 1 ]
    read -r snr sample t lw di dm _ < c.cand
    # DM within one trial step of your's 475.284 (the list's step there) and
    # time within the boxcar of your's 2.02888 s.
    step=$(ls y/*.dat | sed 's/.*_DM\(.*\)\.dat/\1/' | sort -g | awk -v d=475.284 '
        { if (p != "" && p <= d && $1 >= d) print $1 - p; p = $1 }')
    echo "S/N $snr at DM $dm (step $step), t $t"
    awk -v a="$dm" -v s="$step" 'BEGIN { d = a - 475.284; exit !(d * d <= s * s) }'
    awk -v t="$t" -v lw="$lw" 'BEGIN { d = t - 2.02888; w = 2 ^ lw * 0.00126646875
                                       exit !(d * d <= w * w) }'
}

@test "spsearch: bad input is one line naming the file" {
    printf 'not a header' > junk.tim
    run_err junk.tim spsearch junk.tim
    [ "$status" -eq 1 ]
    fbsim --nchans 4 --tobs 0.01 -o fb.fil
    run_err fb.fil spsearch fb.fil
    run_err max-width spsearch --max-width 12 "$BATS_FILE_TMPDIR"/s/x_DM0.00.tim
    [ "$status" -eq 2 ]
    run_err stdin spsearch - "$BATS_FILE_TMPDIR"/s/x_DM0.00.tim
    fbsim --tim --tsamp 0.002 --nsamples 1000 -o slow.tim
    fbsim --tim --tsamp 0.003 --nsamples 1000 -o odd.tim
    run_err odd.tim spsearch slow.tim odd.tim
    spsearch -q "$BATS_FILE_TMPDIR"/s/x_DM0.00.tim -o out.cand
    run_err exists spsearch -q "$BATS_FILE_TMPDIR"/s/x_DM0.00.tim -o out.cand
    spsearch -q --force "$BATS_FILE_TMPDIR"/s/x_DM0.00.tim -o out.cand
}

@test "spsearch: a named pipe is one line naming it, not a hang (each file is read twice)" {
    fbsim -q --tim -o x.tim --tsamp 0.000256 --tobs 1 --nchans 1 --fch1 1400 --foff -1 --seed 1
    mkfifo p.tim
    # a writer that gives up after 10 s, so that a reader that waits ends too
    timeout 10 bash -c 'cat x.tim > p.tim' 2>/dev/null &
    run_err p.tim timeout 20 spsearch p.tim
    [ "$status" -eq 1 ]
    [[ "$output" == *"standard input"* ]]
    cat p.tim > /dev/null         # the writer's data, so that it ends now
    wait
    # the same series on standard input is searched
    spsearch -q - < x.tim > /dev/null
}
