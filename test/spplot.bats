#!/usr/bin/env bats
# spplot.bats - candidate plots: every PNG decodes at the stated size, the
# panels' frames are where the man page puts them, the bow-tie's brightest
# pixel is at the candidate's DM and time, --top, the overview, bad input.
load common

# Two bursts (DM 300 at 0.5 s, 2 ms; DM 800 at 0.9 s, 0.5 ms) and their candidates.
setup_file() {
    cd "$BATS_FILE_TMPDIR" || return 1
    fbsim -o b.fil --nchans 128 --foff -2 --tobs 2 --seed 4 --pulse 0.5,300,0.002,8 \
        --pulse 0.9,800,0.0005,20
    dd_direct b.fil --dm-min 0 --dm-max 1000 --dm-step 5 --search --discard --prefix b -q
}

@test "spplot: a PNG per candidate and an overview, at the stated sizes" {
    [ "$(wc -l < "$BATS_FILE_TMPDIR/b.cand")" -eq 2 ]
    spplot -q "$BATS_FILE_TMPDIR/b.cand" "$BATS_FILE_TMPDIR/b.fil"
    ls *.png
    [ "$(ls b_[0-9]*_DM*_t*.png | wc -l)" -eq 2 ]
    # Brightest first: ranks by S/N.
    best=$(sort -g -r -k1,1 "$BATS_FILE_TMPDIR/b.cand" | head -1 | awk '{ printf "%.2f", $6 }')
    ls b_1_DM"$best"_t*.png
    for f in b_[0-9]*.png; do
        [ "$(pngpeak "$f")" = "1200 900" ]
    done
    [ "$(pngpeak b_overview.png)" = "1000 600" ]
}

@test "spplot: the panels' frames are where stated" {
    spplot -q "$BATS_FILE_TMPDIR/b.cand" "$BATS_FILE_TMPDIR/b.fil" --top 1
    f=$(ls b_1_*.png)
    # Frames 500 wide: the waterfall's from x 80, the bow-tie's from x 660; 330
    # high from y 130, the bottom ones 300 high from y 550. Their lines are the
    # pixels just outside: black there, white one further out.
    for x0 in 80 660; do
        [ "$(pngpeak "$f" --pixel $((x0 - 1)) 140)" = "0 0 0" ]
        [ "$(pngpeak "$f" --pixel $((x0 - 2)) 140)" = "255 255 255" ]
        [ "$(pngpeak "$f" --pixel $((x0 + 500)) 140)" = "0 0 0" ]
        [ "$(pngpeak "$f" --pixel $((x0 + 501)) 140)" = "255 255 255" ]
        [ "$(pngpeak "$f" --pixel $((x0 + 250)) 129)" = "0 0 0" ]
        [ "$(pngpeak "$f" --pixel $((x0 + 250)) 460)" = "0 0 0" ]
        [ "$(pngpeak "$f" --pixel $((x0 + 250)) 549)" = "0 0 0" ]
        [ "$(pngpeak "$f" --pixel $((x0 + 250)) 850)" = "0 0 0" ]
    done
}

@test "spplot: the bow-tie's brightest pixel is at the candidate's DM and time" {
    spplot -v "$BATS_FILE_TMPDIR/b.cand" "$BATS_FILE_TMPDIR/b.fil" 2> log
    cat log
    while read -r snr sample t lw di dm _; do
        f=$(ls b_*_DM"$(printf %.2f "$dm")"_t*.png)
        # -v: the bow-tie's DM rows (first and last) and time range.
        read -r lo hi rows t0 t1 < <(grep "^spplot: ./$f: bow-tie" log |
            sed 's/.*DM \([^ ]*\) \.\. \([^ ]*\) in \([0-9]*\) rows, time \([^ ]*\) \.\. \([^ ]*\) s.*/\1 \2 \3 \4 \5/')
        read -r fx fy < <(pngpeak "$f" 660 130 500 330)
        # The brightest cell's DM and time, against the candidate's: within one
        # trial step of the search (5) and one boxcar width.
        read -r pdm pt < <(awk -v lo="$lo" -v hi="$hi" -v n="$rows" -v t0="$t0" -v t1="$t1" \
            -v fx="$fx" -v fy="$fy" 'BEGIN { r = int(fy * n); print lo + r * (hi - lo) / (n - 1), t0 + fx * (t1 - t0) }')
        w=$(awk -v lw="$lw" 'BEGIN { print 2 ^ lw * 6.4e-5 }')
        echo "$f: brightest at DM $pdm, t $pt; candidate DM $dm, t $t, width $w s"
        approx "$pdm" "$dm" 5
        approx "$pt" "$t" "$w"
    done < "$BATS_FILE_TMPDIR/b.cand"
}

@test "spplot: a PSRFITS input (your_28.fits): its burst at the bow-tie's centre" {
    REAL=$BATS_TEST_DIRNAME/../../shared/data/real
    [ -f "$REAL/your_28.fits" ] || skip "no $REAL/your_28.fits"
    dd_direct "$REAL/your_28.fits" --dm-min 0 --dm-max 1000 --search --discard --prefix y -q
    [ "$(wc -l < y.cand)" -eq 1 ]
    spplot -q y.cand "$REAL/your_28.fits"
    f=$(ls your_28_1_DM*.png)
    [ "$(pngpeak "$f")" = "1200 900" ]
    read -r fx fy < <(pngpeak "$f" 660 130 500 330)
    echo "brightest at $fx, $fy of the bow-tie"
    approx "$fx" 0.5 0.03
    approx "$fy" 0.5 0.05
}

@test "spplot: --outdir, --top and existing files" {
    mkdir out
    spplot -q "$BATS_FILE_TMPDIR/b.cand" "$BATS_FILE_TMPDIR/b.fil" --outdir out --top 1
    [ "$(ls out | wc -l)" -eq 2 ]
    run_err exists spplot -q "$BATS_FILE_TMPDIR/b.cand" "$BATS_FILE_TMPDIR/b.fil" --outdir out
    [ "$status" -eq 2 ]
    spplot -q "$BATS_FILE_TMPDIR/b.cand" "$BATS_FILE_TMPDIR/b.fil" --outdir out --force
    [ "$(ls out | wc -l)" -eq 3 ]
}

@test "spplot: bad input is one line naming the file" {
    printf '12 x\n' > bad.cand
    run_err bad.cand spplot bad.cand "$BATS_FILE_TMPDIR/b.fil"
    [ "$status" -eq 1 ]
    run_err missing.fil spplot "$BATS_FILE_TMPDIR/b.cand" missing.fil
    fbsim --tim --nsamples 1000 -o s.tim
    run_err s.tim spplot "$BATS_FILE_TMPDIR/b.cand" s.tim
    run_err CANDFILE spplot "$BATS_FILE_TMPDIR/b.cand"
    [ "$status" -eq 2 ]
    run_err outdir spplot "$BATS_FILE_TMPDIR/b.cand" "$BATS_FILE_TMPDIR/b.fil" --outdir nowhere
}
