#!/usr/bin/env bats
# tscrunch: sums against a reference, header bookkeeping, filters, bad input.
load common

# samples of a float32 series after its header, one per line
values() {
    local hdr
    hdr=$(fbinfo "$1" | awk -F: '/Header size/ { print $2 + 0 }')
    tail -c +$((hdr + 1)) "$1" | od -An -v -f -w4 | awk '{ print $1 + 0 }'
}

@test "tscrunch: sums of 8-bit data match a reference computed here" {
    fbsim -q -o a.fil --nchans 4 --nbits 8 --nsamples 103 --seed 3
    tscrunch -q -n 5 a.fil -o b.fil
    hdr=$(fbinfo a.fil | awk -F: '/Header size/ { print $2 + 0 }')
    tail -c +$((hdr + 1)) a.fil | od -An -v -tu1 -w4 |
        awk '{ for (c = 1; c <= 4; c++) s[c] += $c } NR % 5 == 0 { for (c = 1; c <= 4; c++) { print s[c]; s[c] = 0 } }' > ref.txt
    values b.fil > got.txt
    [ "$(wc -l < got.txt)" -eq 80 ]
    cmp ref.txt got.txt
}

@test "tscrunch: --mean of 2-bit data (low bits first) matches a reference" {
    fbsim -q -o a.fil --nchans 4 --nbits 2 --nsamples 64 --seed 5
    tscrunch -q -n 4 --mean a.fil -o b.fil
    hdr=$(fbinfo a.fil | awk -F: '/Header size/ { print $2 + 0 }')
    tail -c +$((hdr + 1)) a.fil | od -An -v -tu1 -w1 |
        awk '{ b = $1; s[1] += b % 4; s[2] += int(b / 4) % 4; s[3] += int(b / 16) % 4; s[4] += int(b / 64) }
             NR % 4 == 0 { for (c = 1; c <= 4; c++) { print s[c] / 4; s[c] = 0 } }' > ref.txt
    values b.fil > got.txt
    cmp ref.txt got.txt
}

@test "tscrunch: header bookkeeping: tsamp*N, tstart unchanged, remainder reported" {
    fbsim -q -o a.fil --nchans 8 --nbits 8 --nsamples 1003 --tsamp 0.0001 --tstart 59000.5
    run tscrunch -n 4 a.fil -o b.fil
    [ "$status" -eq 0 ]
    [[ "$output" == *"3 trailing samples"*dropped* ]]
    approx "$(fbinfo b.fil -k tsamp)" 0.0004 1e-12
    [ "$(fbinfo b.fil -k tstart)" = "$(fbinfo a.fil -k tstart)" ]
    [ "$(fbinfo b.fil -k nbits)" = 32 ]
    [ "$(fbinfo b.fil -k nsamples)" = 250 ]
}

@test "tscrunch: --keep-remainder makes a last sample from the partial group" {
    fbsim -q -o a.fil --tim --nsamples 10 --seed 2
    tscrunch -q -n 4 --keep-remainder a.fil -o b.tim
    values a.fil > a.txt
    values b.tim > b.txt
    [ "$(wc -l < b.txt)" -eq 3 ]
    want=$(tail -2 a.txt | awk '{ s += $1 } END { print s * 2 }')
    approx "$(tail -1 b.txt)" "$want" 1e-3
}

@test "tscrunch: stdin to stdout filter equals the file run" {
    fbsim -q -o a.fil --nchans 16 --nbits 4 --nsamples 5000
    tscrunch -q -n 3 a.fil -o b.fil
    cat a.fil | tscrunch -q -n 3 | cmp - b.fil
    cat a.fil | tscrunch -q -n 3 - | cmp - b.fil
}

@test "tscrunch: nifs 2 keeps both IFs" {
    fbsim -q -o a.fil --nchans 4 --nbits 8 --nifs 2 --nsamples 40
    tscrunch -q -n 2 a.fil -o b.fil
    [ "$(fbinfo b.fil -k nifs)" = 2 ]
    [ "$(values b.fil | wc -l)" -eq 160 ]
}

@test "tscrunch: --nbits-out 8 keeps integers and states the scale" {
    fbsim -q -o a.fil --nchans 4 --nbits 2 --nsamples 64
    run tscrunch -n 4 --nbits-out 8 a.fil -o b.fil
    [ "$status" -eq 0 ]
    [[ "$output" == *"sum / 1"* ]]
    [ "$(fbinfo b.fil -k nbits)" = 8 ]
    fbsim -q -o c.fil --nchans 4 --nbits 8 --nsamples 64
    run tscrunch -n 4 --nbits-out 8 c.fil -o d.fil
    [[ "$output" == *"sum / 4"* ]]
}

@test "tscrunch: .dat + .inf input writes .dat + .inf" {
    fbsim -q -o a.fil --nchans 16 --nbits 8 --tobs 0.5
    dd_direct -q a.fil --dm 10 --format dat -o s.dat
    tscrunch -q -n 2 s.dat -o t.dat
    grep -q "Width of each time series bin (sec) *=  0.000128" t.inf
    n=$(awk -F= '/Number of bins/ { print $2 + 0 }' s.inf)
    grep -q "Number of bins in the time series *=  $((n / 2)) " t.inf
    grep -q "Data file name without suffix *=  t$" t.inf
    [ "$(stat -c %s t.dat)" -eq $((n / 2 * 4)) ]
}

@test "tscrunch: a .dat shorter than its .inf says is read with a warning naming both counts" {
    fbsim -q -o a.fil --nchans 16 --nbits 8 --tobs 0.5
    dd_direct -q a.fil --dm 10 --format dat -o s.dat
    n=$(awk -F= '/Number of bins/ { print $2 + 0 }' s.inf)
    truncate -s $(( (n - 100) * 4 )) s.dat
    run tscrunch -n 2 s.dat -o t.dat
    [ "$status" -eq 0 ]
    [[ "$output" == *"s.dat: $((n - 100)) samples, but its .inf says $n; using the file size"* ]]
    [ "$(stat -c %s t.dat)" -eq $(( (n - 100) / 2 * 4 )) ]
}

@test "tscrunch: factor 0, missing -n and bad values are usage errors" {
    fbsim -q -o a.fil --nchans 4 --nbits 8 --nsamples 10
    run_err "-n" tscrunch -n 0 a.fil -o b.fil
    [ "$status" -eq 2 ] && [ ! -e b.fil ]
    run_err "-n" tscrunch a.fil -o b.fil
    [ "$status" -eq 2 ]
    run_err nbits-out tscrunch -n 2 --nbits-out 12 a.fil -o b.fil
    [ "$status" -eq 2 ]
}

@test "tscrunch: bad input file is a data error naming it, nothing left" {
    echo garbage > bad.fil
    run_err bad.fil tscrunch -n 2 bad.fil -o b.fil
    [ "$status" -eq 1 ]
    [ -z "$(ls -A | grep '^\.\?b\.fil')" ]
    fbsim -q -o f.fil --tim --nsamples 10
    run_err f.fil tscrunch -n 2 --nbits-out 8 f.fil -o b.fil
    [ ! -e b.fil ]
}

@test "tscrunch: an existing output needs --force" {
    fbsim -q -o a.fil --nchans 4 --nbits 8 --nsamples 10
    echo keep > b.fil
    run_err b.fil tscrunch -n 2 a.fil -o b.fil
    [ "$(cat b.fil)" = keep ]
    tscrunch -q -n 2 a.fil -o b.fil --force
}
