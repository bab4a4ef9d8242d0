#!/usr/bin/env bats
# ddplan: the published plan numbers, --plan/--dm-list files and bad input.
load common

HTRU="--nchans 1024 --fch1 1581.8 --foff -0.390625 --tsamp 0.000064"
# PRESTO DDplan.py -l 0 -d 1000 -f 1381.8 -b 400 -n 1024 -t 0.000064 -s 64
PRESTO="--nchans 1024 --fch1 1581.6 --foff -0.390625 --tsamp 0.000064 --dm-min 0 --dm-max 1000"

@test "ddplan: htru tol list has Barsdell's 1196 DMs within 2%" {
    ddplan $HTRU --dm-min 0 --dm-max 1000 --write-dm-list dms.txt -q
    n=$(wc -l < dms.txt)
    approx "$n" 1196 24
    [ "$(head -1 dms.txt)" = 0 ]
}

@test "ddplan: ranges mode matches PRESTO DDplan.py rows" {
    run ddplan $PRESTO --mode ranges --nsub 64
    [ "$status" -eq 0 ]
    rows=$(printf '%s\n' "$output" | grep -v '^#' | tail -n +2)
    [ "$(printf '%s\n' "$rows" | wc -l)" -eq 4 ]
    read -r -a r1 <<< "$(sed -n 1p <<< "$rows")"
    read -r -a r2 <<< "$(sed -n 2p <<< "$rows")"
    read -r -a r3 <<< "$(sed -n 3p <<< "$rows")"
    read -r -a r4 <<< "$(sed -n 4p <<< "$rows")"
    [ "${r1[2]}" = 0.1 ] && [ "${r2[2]}" = 0.2 ] && [ "${r3[2]}" = 0.3 ] && [ "${r4[2]}" = 0.5 ]
    [ "${r1[3]}" = 1 ] && [ "${r2[3]}" = 2 ] && [ "${r3[3]}" = 4 ] && [ "${r4[3]}" = 8 ]
    approx "${r1[1]}" 202.8 10.14
    approx "${r2[1]}" 358.8 17.94
    approx "${r3[1]}" 592.8 29.64
}

@test "ddplan: --plan file has the header row and contiguous rows" {
    ddplan $PRESTO --mode ranges --write-plan p.tsv -q
    [ "$(head -1 p.tsv)" = "$(printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\tdms_per_sub')" ]
    awk -F'\t' 'NR > 2 && $1 != prev { exit 1 } NR > 1 { prev = $2 }' p.tsv
    # DDplan's DMs per sub-band call are kept, and each row is a whole number of calls
    awk -F'\t' 'NR > 1 && !($6 > 0 && $5 % $6 == 0) { exit 1 }' p.tsv
    ddplan $PRESTO --mode tol --write-plan t.tsv -q
    [ "$(head -1 t.tsv)" = "$(printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm')" ]
}

@test "ddplan: --plan round trip through dd_direct gives the plan's DMs and tsamp" {
    fbsim -q -o a.fil --nchans 64 --nbits 8 --tsamp 0.000064 --tobs 1 --fch1 1500 --foff -1
    printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n0\t20\t10\t1\t2\n20\t60\t20\t2\t2\n' > p.tsv
    dd_direct -q a.fil --plan p.tsv --prefix out
    ls out_DM0.00.tim out_DM10.00.tim out_DM20.00.tim out_DM40.00.tim
    [ "$(ls out_*.tim | wc -l)" -eq 4 ]
    approx "$(fbinfo out_DM10.00.tim -k tsamp)" 0.000064 1e-12
    approx "$(fbinfo out_DM40.00.tim -k tsamp)" 0.000128 1e-12
}

@test "ddplan: tol plan written and read back gives the same DM list" {
    ddplan $HTRU --dm-max 300 --scrunch auto --write-plan p.tsv --write-dm-list d.txt -q
    awk -F'\t' 'NR > 1 { for (i = 0; i < $5; i++) printf "%.6f\n", $1 + i * $3 }' p.tsv > a.txt
    awk '{ printf "%.6f\n", $1 }' d.txt > b.txt
    cmp a.txt b.txt
    # scrunch factors are powers of two and never decrease
    awk -F'\t' 'NR > 1 { x = $4; while (x > 1 && x % 2 == 0) x /= 2; if (x != 1 || $4 < last) exit 1; last = $4 }' p.tsv
    [ "$(awk -F'\t' 'END { print $4 }' p.tsv)" -ge 4 ]
}

@test "ddplan: reads the set-up from a filterbank header" {
    fbsim -q -o a.fil --nchans 1024 --nbits 2 --tsamp 0.000064 --nsamples 64 --fch1 1581.8 --foff -0.390625
    ddplan a.fil --dm-max 1000 --write-dm-list d.txt -q
    ddplan $HTRU --dm-max 1000 --write-dm-list e.txt -q
    cmp d.txt e.txt
}

@test "ddplan: nonsense DM range is a usage error naming the option" {
    run_err dm-max ddplan $HTRU --dm-min 100 --dm-max 10
    [ "$status" -eq 2 ]
    run_err dm-min ddplan $HTRU --dm-min -5 --dm-max 10
    [ "$status" -eq 2 ]
}

@test "ddplan: tol <= 1 is a usage error, no file left" {
    run_err tol ddplan $HTRU --tol 1 --write-plan p.tsv
    [ "$status" -eq 2 ]
    [ ! -e p.tsv ]
    run_err tol ddplan $HTRU --tol 0.5 --write-dm-list d.txt
    [ ! -e d.txt ]
}

@test "ddplan: missing set-up and unknown options are usage errors" {
    run_err nchans ddplan --dm-max 100
    [ "$status" -eq 2 ]
    run_err bogus ddplan $HTRU --bogus
    [ "$status" -eq 2 ]
}

@test "ddplan: an existing --plan is not overwritten without --force" {
    echo keep > p.tsv
    run_err p.tsv ddplan $HTRU --write-plan p.tsv
    [ "$(cat p.tsv)" = keep ]
    ddplan $HTRU --write-plan p.tsv --force -q
    [ "$(head -c 5 p.tsv)" = dm_lo ]
}

@test "ddplan: --help and --version" {
    run ddplan --help
    [ "$status" -eq 0 ] && [[ "$output" == *"--mode tol|ranges"* ]]
    run ddplan --version
    [ "$status" -eq 0 ] && [[ "$output" == *ddtk* ]]
}

@test "ddplan: a table that cannot be written is exit 3 with one line" {
    run_err stdout bash -c "ddplan $HTRU --dm-max 100 > /dev/full"
    [ "$status" -eq 3 ]
    run_err stdout bash -c "ddplan $HTRU --dm-max 100 >&-"
    [ "$status" -eq 3 ]
}

@test "ddplan: --plan and --dm-list (read by the dd_* tools) are usage errors naming --write-plan/--write-dm-list" {
    run_err "--write-plan" ddplan $HTRU --plan p.tsv
    [ "$status" -eq 2 ] && [ ! -e p.tsv ]
    run_err "--write-dm-list" ddplan $HTRU --dm-list d.txt
    [ "$status" -eq 2 ] && [ ! -e d.txt ]
    ddplan $HTRU --dm-max 100 --write-plan p.tsv --write-dm-list d.txt -q
    [ -s p.tsv ] && [ -s d.txt ]
    run ddplan --help
    [[ "$output" == *"--write-plan FILE"* ]] && [[ "$output" != *" --plan FILE"* ]]
}
