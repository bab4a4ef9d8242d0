#!/usr/bin/env bats
# search.bats - --search in the dedispersion tools: the candidates spsearch
# finds in the written series, whatever the gulp, with files or --discard,
# for dd_direct, dd_subband and dd_tree (scrunched levels included); the
# real burst of your_28; CPU = GPU (skipped without a GPU); bad options.
load common

REAL=$BATS_TEST_DIRNAME/../../shared/data/real

# Bursts at DM 100 (0.2 s, 1 ms), 400 (0.655 s = output sample 10240, a gulp
# boundary of --gulp 2048 and 10240, 4 ms) and 700 (1.1 s, 0.3 ms).
setup_file() {
    cd "$BATS_FILE_TMPDIR" || return 1
    fbsim -o b.fil --nchans 128 --foff -2 --tobs 2 --seed 9 --pulse 0.2,100,0.001,12 \
        --pulse 0.65536,400,0.004,6 --pulse 1.1,700,0.0003,25
}

B=$BATS_FILE_TMPDIR/b.fil
DMS=(--dm-min 0 --dm-max 800 --dm-step 8)

@test "--search: dd_direct's candidates are spsearch's on the written series, any gulp" {
    mkdir o
    dd_direct "$B" "${DMS[@]}" --prefix o/b --gulp 2048 --search --no-baseline -q
    cat o/b.cand
    [ "$(wc -l < o/b.cand)" -eq 3 ]
    spsearch -q o/*.tim > s.cand
    diff o/b.cand s.cand
    dd_direct "$B" "${DMS[@]}" --prefix d --gulp 10240 --search --discard -q
    [ ! -e d_DM0.00.tim ]
    diff o/b.cand d.cand
    # The bursts, at their DM within a step.
    for dm in 100 400 700; do
        awk -v d=$dm '($6 - d) ^ 2 <= 64' o/b.cand | grep -q .
    done
}

@test "--search: .dat output (padded to an FFT length) gives the same candidates" {
    mkdir o
    dd_direct "$B" "${DMS[@]}" --prefix o/b --format dat --search -q
    spsearch -q o/*.dat > s.cand
    diff o/b.cand s.cand
}

@test "--search: dd_subband and dd_tree (scrunched DMs) search their own series" {
    mkdir s t
    dd_subband "$B" "${DMS[@]}" --prefix s/b --search --no-baseline -q
    spsearch -q s/*.tim > s.cand
    diff s/b.cand s.cand
    dd_tree "$B" --dm-max 800 --prefix t/b --search --no-baseline -q
    # The tree's DMs past the diagonal are scrunched: tsamp 2x, 4x ...
    [ "$(ls t/*.tim | xargs -n1 fbinfo -k tsamp | sort -u | wc -l)" -gt 1 ]
    spsearch -q t/*.tim > t.cand
    diff t/b.cand t.cand
    for f in s/b.cand t/b.cand; do
        for dm in 100 400 700; do
            awk -v d=$dm '($6 - d) ^ 2 <= 100' $f | grep -q . || { echo "$f: no DM $dm"; return 1; }
        done
    done
}

@test "--search --discard finds your_28's burst as one candidate" {
    [ -f "$REAL/your_28.fil" ] || skip "no $REAL/your_28.fil"
    dd_direct "$REAL/your_28.fil" --dm-min 0 --dm-max 1000 --search --discard --prefix y -q
    cat y.cand
    [ "$(wc -l < y.cand)" -eq 1 ]
    read -r snr sample t lw di dm _ < y.cand
    approx "$dm" 475.284 3
    awk -v t="$t" -v lw="$lw" 'BEGIN { d = t - 2.02888; w = 2 ^ lw * 0.00126646875
                                       exit !(d * d <= w * w) }'
}

@test "--search --rfi auto: your_28.fits (its last row padded with 403 zero spectra) gives the .fil's one candidate" {
    [ -f "$REAL/your_28.fits" ] || skip "no $REAL/your_28.fits"
    dd_direct "$REAL/your_28.fil" --dm-min 400 --dm-max 550 --rfi auto --search --discard \
        --prefix l -q
    dd_direct "$REAL/your_28.fits" --dm-min 400 --dm-max 550 --rfi auto --search --discard \
        --prefix s -q
    cat l.cand s.cand
    [ "$(wc -l < l.cand)" -eq 1 ]
    cmp l.cand s.cand
}

@test "--search: the GPU's candidates are the CPU's" {
    need_gpu
    dd_direct "$B" "${DMS[@]}" --backend cpu --prefix c --search --discard -q
    dd_direct "$B" "${DMS[@]}" --backend gpu --prefix g --search --discard -q
    diff c.cand g.cand
    dd_tree "$B" --dm-max 800 --backend cpu --prefix tc --search --discard -q
    dd_tree "$B" --dm-max 800 --backend gpu --prefix tg --search --discard -q
    diff tc.cand tg.cand
    dd_subband "$B" "${DMS[@]}" --backend cpu --prefix sc --search --discard -q
    dd_subband "$B" "${DMS[@]}" --backend gpu --prefix sg --search --discard -q
    diff sc.cand sg.cand
}

@test "--search: options without it, and an existing .cand, are usage errors" {
    run_err search dd_direct "$B" --dm 100 --snr 5
    [ "$status" -eq 2 ]
    touch x.cand
    run_err x.cand dd_direct "$B" "${DMS[@]}" --prefix x --search
    [ "$status" -eq 2 ]
    [ ! -e x_DM0.00.tim ]
    dd_direct "$B" "${DMS[@]}" --prefix x --search --force --discard -q
    [ -s x.cand ]
    run_err max-width dd_direct "$B" --dm 100 --search --max-width 3
}
