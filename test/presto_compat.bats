#!/usr/bin/env bats
# presto_compat.bats - ddtk outputs PRESTO and SIGPROC can use as they are,
# checked without those programs (test/interop.bats runs the real ones):
# output length rules (--length, --even, also on stdout), padding declared in
# the .inf as prepdata declares it, .inf notes within PRESTO's reader limits,
# fdas on any length, its binary .cand read back by an independent reader,
# sigmas never negative, and no candidate that is only a stronger pulsar's
# harmonic crossing its template.
load common

# a filterbank with a pulsar: name nsamples [period dm amp]
make_fil() {
    fbsim -o "$1" --nchans 64 --nbits 8 --tsamp 0.000128 --nsamples "$2" --fch1 1500 \
        --foff -2 --pulsar "${3:-0.0893},${4:-56},0.04,${5:-1}" -q
}

inf_value() { # FILE LABEL
    awk -v l="$2" 'index($0, l) { sub(/^[^=]*=[ \t]*/, ""); sub(/[ \t]+$/, ""); print; exit }' "$1"
}

samples() { echo $(( $(stat -c %s "$1") / 4 )); }

# even and no prime factor above 7
is_good() {
    awk -v n="$1" 'BEGIN { if (n % 2) exit 1; for (p = 2; p <= 7; p++) while (n % p == 0) n /= p; exit n != 1 }'
}

@test "length: .dat defaults to the next even 7-smooth length, padded with the mean and declared" {
    for ns in 20001 20002 20117; do
        make_fil "s$ns.fil" "$ns"
        dd_direct "s$ns.fil" --dm 0,56 --format dat --prefix "f$ns" -q
        dd_direct "s$ns.fil" --dm 0,56 --format dat --prefix "x$ns" --length exact -q
        nvalid=$(samples "x${ns}_DM56.00.dat")
        n=$(samples "f${ns}_DM56.00.dat")
        echo "N_in $ns: exact $nvalid, fft $n"
        is_good "$n"
        [ "$n" -ge "$nvalid" ]
        for ((m = nvalid; m < n; m++)); do ! is_good "$m"; done
        [ "$(inf_value "f${ns}_DM56.00.inf" "Number of bins")" = "$n" ]
        [ "$(inf_value "x${ns}_DM56.00.inf" "Number of bins")" = "$nvalid" ]
        [ "$(inf_value "x${ns}_DM56.00.inf" "Any breaks")" = 0 ]
        if [ "$n" -gt "$nvalid" ]; then
            [ "$(inf_value "f${ns}_DM56.00.inf" "Any breaks")" = 1 ]
            grep -Eq "^ On/Off bin pair #  1 +=  0 +, $((nvalid - 1)) *\$" "f${ns}_DM56.00.inf"
            grep -Eq "^ On/Off bin pair #  2 +=  $((n - 1)) +, $((n - 1)) *\$" "f${ns}_DM56.00.inf"
        fi
        # the data are the exact series, the tail is their mean
        cmp -n $((4 * nvalid)) "f${ns}_DM56.00.dat" "x${ns}_DM56.00.dat"
        od -An -v -tf4 -w4 "f${ns}_DM56.00.dat" | awk -v nv="$nvalid" '
            NR <= nv { s += $1; next } { tail[++k] = $1 }
            END { m = s / nv; for (i = 1; i <= k; i++) if ((tail[i] - m)^2 > 1e-6 * (m^2 + 1)) exit 1 }'
    done
}

@test "length: .tim and stdout stay exact by default; --length fft pads them too" {
    make_fil s.fil 20001
    dd_direct s.fil --dm 56 --format dat -o x.dat --length exact -q
    nvalid=$(samples x.dat)
    dd_direct s.fil --dm 56 -q > exact.tim
    dd_direct s.fil --dm 56 -q --length fft > fft.tim
    hdr=$(( $(stat -c %s exact.tim) - 4 * nvalid ))
    [ "$hdr" -gt 100 ] && [ "$hdr" -lt 1000 ]
    n=$(( ($(stat -c %s fft.tim) - hdr) / 4 ))
    echo "exact $nvalid fft $n"
    is_good "$n"
    cmp -n $((hdr + 4 * nvalid)) exact.tim fft.tim    # the summary says what was written
    dd_direct s.fil --dm 56 --length fft -o f.tim 2>&1 | grep -q "$nvalid out per DM (padded to $n)"
    dd_direct s.fil --dm 56 -o x.tim 2>&1 | grep -q "$nvalid out per DM, "
}

@test "length: --even drops an odd last sample on stdout as in files; conflicts are usage errors" {
    for ns in 20001 20002; do
        make_fil "s$ns.fil" "$ns"
        dd_direct "s$ns.fil" --dm 56 -q > exact.tim
        dd_direct "s$ns.fil" --dm 56 -q --even > even.tim
        dd_direct "s$ns.fil" --dm 56 -q --even -o even_file.tim --force
        dd_direct "s$ns.fil" --dm 56 --format dat -o x.dat --length exact -q --force
        nvalid=$(samples x.dat)
        hdr=$(( $(stat -c %s exact.tim) - 4 * nvalid ))
        n=$(( ($(stat -c %s even.tim) - hdr) / 4 ))
        echo "N_in $ns: exact $nvalid, --even on stdout $n"
        [ "$n" -eq $(( nvalid - nvalid % 2 )) ]
        cmp -n $((hdr + 4 * n)) exact.tim even.tim
        cmp even.tim even_file.tim
    done
    run_err "--length" dd_direct s20001.fil --dm 56 --even --length fft
    [ "$status" -eq 2 ]
    run_err "--even" dd_direct s20001.fil --dm 56 --length exact --even
    [ "$status" -eq 2 ]
}

@test "length: --pad is declared in the .inf (breaks and On/Off pairs)" {
    make_fil s.fil 20001
    dd_direct s.fil --dm 56 --format dat -o x.dat --length exact -q
    dd_direct s.fil --dm 56 --format dat -o p.dat --length exact --pad -q
    nvalid=$(samples x.dat)
    [ "$(samples p.dat)" -eq 20001 ]
    [ "$(inf_value p.inf "Any breaks")" = 1 ]
    grep -Eq "^ On/Off bin pair #  1 +=  0 +, $((nvalid - 1)) *\$" p.inf
    grep -Eq "^ On/Off bin pair #  2 +=  20000 +, 20000 *\$" p.inf
}

@test ".inf: notes lines fit PRESTO's reader, killed channels kept, analyst from the password database" {
    make_fil s.fil 20001
    echo 3,7:9 > kill.txt
    dd_direct s.fil --dm 56 --format dat -o x.dat --killfile kill.txt --zerodm --kdm 4149.377593360996 -q
    awk '/Any additional notes/ { on = 1; next } on { n++; if (length($0) > 98) { print "long: " $0; exit 1 } }
         END { exit n < 3 }' x.inf
    # PRESTO keeps about 500 characters of notes: the killed channels come early
    awk '/Any additional notes/ { on = 1; next } on && ++n <= 3 && /Killed channels: 4 of 64/ { ok = 1 } END { exit !ok }' x.inf
    grep -q "kDM 4149.377593 s MHz^2" x.inf
    [ "$(inf_value x.inf "Data analyzed by")" = "${USER:-$(id -un)}" ]
    env -u USER dd_direct s.fil --dm 56 --format dat -o y.dat -q
    [ "$(inf_value y.inf "Data analyzed by")" = "$(id -un)" ]
}

@test "fdas: odd lengths are searched (padded to a good length, said with -v), r for the input's length" {
    make_fil s.fil 40002 0.0893 56 2
    dd_direct s.fil --dm 56 --length exact -q -o odd.tim
    run bash -c 'fdas -v --zmax 20 odd.tim 2>&1 >/dev/null'
    [ "$status" -eq 0 ]
    [[ "$output" == *"searched as"*"padded with the series mean"* ]]
    fdas -q --zmax 20 odd.tim > c.tsv
    nin=$(awk -F'\t' 'NR == 2 { print $7 / $6 / 0.000128 }' c.tsv)
    nvalid=$(dd_direct s.fil --dm 56 --length exact --format dat -o x.dat -q && samples x.dat)
    echo "odd series of $nvalid samples; r/f/tsamp = $nvalid? got $nin"
    [ $((nvalid % 2)) -eq 1 ]
    approx "$nin" "$nvalid" 0.5
    awk -F'\t' 'NR == 2 { exit !($5 > 89.2 && $5 < 89.4) }' c.tsv
}

@test "fdas: the binary .cand holds the text's candidates (independent reader); sigmas never negative" {
    fbsim --tim --tsamp 0.001 --nsamples 32768 --seed 5 --pulsar 0.0218,0,0.1,0.4 -o n.tim
    fdas -q --zmax 20 --sigma 0.5 --no-harm-remove --format presto n.tim
    [ -s n_ACCEL_20 ] && [ -s n_ACCEL_20.cand ]
    candread n_ACCEL_20.cand > recs
    ncand=$(awk '/^-+$/ { sec++; next } sec == 1 && $1 ~ /^[0-9]+$/ { n++ } END { print n }' n_ACCEL_20)
    echo "$ncand candidates"
    [ "$ncand" -gt 10 ]
    [ "$(wc -l < recs)" -eq "$ncand" ]
    [ "$(stat -c %s n_ACCEL_20.cand)" -eq $((88 * ncand)) ]
    # r, z, sigma of each record against the text's fundamentals table
    awk 'NR == FNR { r[$1] = $2; z[$1] = $3; s[$1] = $6; w[$1] = $4; next }
         /^-+$/ { sec++; next }
         sec == 1 && $1 ~ /^[0-9]+$/ { i = $1; if ((r[i] - $8)^2 > 1e-6 || (z[i] - $10)^2 > 1e-4 ||
                                             (s[i] - $2)^2 > 1e-4 || w[i] != 0) { print "cand " i; bad = 1 } }
         END { exit bad }' recs n_ACCEL_20
    # sigma columns: fundamentals and every harmonic row, and the TSV
    awk '/^-+$/ { sec++; next } sec == 1 && $1 ~ /^[0-9]+$/ && $2 < 0 { exit 1 }
         sec == 2 && /^ [0-9]/ && $3 < 0 { exit 1 } sec == 2 && /^            [0-9]/ && $2 < 0 { exit 1 }' n_ACCEL_20
    fdas -q --zmax 20 --sigma 0.5 --no-harm-remove n.tim | awk -F'\t' 'NR > 1 && $2 < 0 { exit 1 }'
    # a low-sigma harmonic row exists, so the floor was exercised
    awk '/^-+$/ { sec++; next } sec == 2 && /^            [0-9]/ && $2 == "0.00" { z = 1 } END { exit !z }' n_ACCEL_20
}

# For each candidate above sigma 4 and each stronger one: no harmonic j of the
# weaker (drifting j z bins over the observation) may cross within 2 bins a
# harmonic h of the stronger unless their drifts agree (|j z - h z'| <= 2).
crossings() {
    awk -F'\t' 'NR > 1 { n++; s[n] = $2; nh[n] = $4; r[n] = $7; z[n] = $8 }
        END {
            for (i = 1; i <= n; i++) if (s[i] > 4) for (k = 1; k < i; k++) if (s[k] > s[i])
                for (j = 1; j <= nh[i]; j++) for (h = 1; h <= 64; h++) {
                    d = j * r[i] - h * r[k]; dz = j * z[i] - h * z[k]
                    if (d < 0) d = -d; if (dz < 0) dz = -dz
                    if (d <= dz / 2 + 2 && dz > 2) { printf "cand %d (r %s z %s) crosses harmonic %d of cand %d\n", i, r[i], z[i], h, k; bad++ }
                }
            exit bad > 0
        }' "$1"
}

@test "fdas: a strong pulsar's harmonics crossing drifting templates leave no candidates" {
    fbsim -o p.fil --nchans 64 --nbits 8 --tsamp 0.000128 --tobs 10 --fch1 1500 --foff -2 \
        --pulsar 0.0893,56,0.04,5 -q
    dd_direct p.fil --dm 56 --format dat -o p.dat -q
    fdas -q --zmax 50 p.dat > c.tsv
    head -5 c.tsv
    awk -F'\t' 'NR == 2 { exit !($5 > 89.29 && $5 < 89.31 && $2 > 50) }' c.tsv
    crossings c.tsv
    # the rule removes them: without it they are there
    fdas -q --zmax 50 --no-harm-remove p.dat > all.tsv
    ! crossings all.tsv > /dev/null
}
