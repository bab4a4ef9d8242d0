#!/usr/bin/env bats
# fbsim and fbinfo: reproducible data, header bookkeeping, every format.

load common

@test "fbsim: a seed always gives the same bytes; another seed does not" {
    fbsim -o a.fil --nchans 32 --nbits 4 --tobs 0.5 --seed 11
    fbsim --nchans 32 --nbits 4 --tobs 0.5 --seed 11 > b.fil
    fbsim -o c.fil --nchans 32 --nbits 4 --tobs 0.5 --seed 12
    cmp a.fil b.fil
    ! cmp -s a.fil c.fil
}

@test "fbsim: header values and sizes for every nbits and nifs" {
    for nbits in 1 2 4 8 16 32; do
        fbsim -o x$nbits.fil --nchans 12 --nbits $nbits --nifs 2 --tsamp 0.001 --nsamples 100 \
            --fch1 400 --foff 0.5
        [ "$(fbinfo -k nbits x$nbits.fil)" = "$nbits" ]
        [ "$(fbinfo -k nsamples x$nbits.fil)" = 100 ]
        [ "$(fbinfo -k nifs x$nbits.fil)" = 2 ]
        hdr=$(fbinfo -k header_size x$nbits.fil)
        [ $(( $(stat -c %s x$nbits.fil) - hdr )) -eq $(( (100 * 12 * 2 * nbits + 7) / 8 )) ]
    done
    [ "$(fbinfo -k foff x8.fil)" = 0.5 ]
    [ "$(fbinfo -k tobs x8.fil)" = 0.10000000000000001 ]
}

@test "fbsim: noise levels follow the format (8-bit mean 127.5, sigma 16)" {
    fbsim -o n.fil --nchans 64 --nbits 8 --nsamples 2000 --pulse 0.05,0,0.001,0
    hdr=$(fbinfo -k header_size n.fil)
    tail -c +$((hdr + 1)) n.fil | od -An -v -tu1 -w64 | awk '
        { for (i = 1; i <= NF; i++) { s += $i; ss += $i * $i; n++ } }
        END { m = s / n; sd = sqrt(ss / n - m * m); exit !(m > 127 && m < 128 && sd > 15.5 && sd < 16.5) }'
}

@test "fbsim --tim writes a float time series and a pulsar that folds up" {
    fbsim -o p.tim --tim --tsamp 0.001 --tobs 20 --pulsar 0.5,0,0.02,8
    [ "$(fbinfo -k data_type p.tim)" = 2 ]
    [ "$(fbinfo -k nchans p.tim)" = 1 ]
    [ "$(fbinfo -k nbits p.tim)" = 32 ]
    # fold at 0.5 s: the profile peak sits at phase 0 (bin 0 of 500 1-ms bins)
    hdr=$(fbinfo -k header_size p.tim)
    peak=$(tail -c +$((hdr + 1)) p.tim | od -An -v -tf4 -w4 | awk '
        { prof[(NR - 1) % 500] += $1 }
        END { b = 0; for (i = 1; i < 500; i++) if (prof[i] > prof[b]) b = i; print b }')
    [ "$peak" -le 1 ] || [ "$peak" -ge 499 ]
}

@test "fbsim --freq-table writes a frequency table that fbinfo and dd_direct read" {
    fbsim -o t.fil --nchans 4 --nbits 8 --tobs 0.1 --fch1 1400 --foff -10 --freq-table
    [ "$(fbinfo -k fchannel t.fil)" = "1400 1390 1380 1370" ]
    run fbinfo -k fch1 t.fil
    [ "$status" -eq 1 ]
    dd_direct t.fil --dm 10 -o t.tim -q
    [ "$(fbinfo -k fch1 t.tim)" = 1400 ]
}

@test "fbinfo prints a SIGPROC-style header; stdin works" {
    fbsim -o h.fil --nchans 64 --nbits 2 --tsamp 0.000064 --tobs 0.5 --source J0534+2200 \
        --telescope-id 4 --machine-id 10 --src-raj 053431.9 --src-dej 220052.1
    run fbinfo h.fil
    [ "$status" -eq 0 ]
    [[ "$output" == *"Telescope                        : Parkes"* ]]
    [[ "$output" == *"Datataking Machine               : BPSR"* ]]
    [[ "$output" == *"Source Name                      : J0534+2200"* ]]
    [[ "$output" == *"Source RA (J2000)                : 05:34:31.9000"* ]]
    [[ "$output" == *"Number of samples                : 7813"* ]]
    [[ "$output" == *"Sample time (us)                 : 64.00000"* ]]
    [ "$(fbinfo -k source_name < h.fil)" = J0534+2200 ]
    approx "$(cat h.fil | fbinfo -k tsamp)" 0.000064 1e-15
}

@test "a header nsamples that disagrees with the file size gives a warning" {
    fbsim -o w.fil --nchans 8 --tobs 0.1
    # insert an nsamples keyword that claims 99 samples
    perl -e '
        local $/; open my $in, "<", "w.fil" or die; binmode $in; my $d = <$in>;
        my $i = index($d, "HEADER_END") - 4;
        my $ins = pack("l<", 8) . "nsamples" . pack("l<", 99);
        open my $out, ">", "w2.fil" or die; binmode $out;
        print $out substr($d, 0, $i) . $ins . substr($d, $i);'
    run bash -c 'dd_direct w2.fil --dm 1 -o w.tim -q 2>&1'
    [[ "$output" == *"header nsamples 99 disagrees"* ]]
}

@test "fbinfo -k error names the file once; stdin counts samples to EOF" {
    fbsim -o s.fil --nchans 8 --nbits 8 --nsamples 333
    run_err s.fil fbinfo -k bogus s.fil
    [ "$output" = "fbinfo: s.fil: unknown header keyword 'bogus'" ]
    [ "$(fbinfo -k nsamples < s.fil)" = 333 ]
    [ "$(fbinfo -k nifs s.fil)" = 1 ]
    fbsim -o t.tim --tim --nsamples 10
    [ "$(fbinfo -k nchans t.tim)" = 1 ]
}

@test "fbsim seeds use 48 bits; out-of-range seeds and nonsense options are refused" {
    fbsim -o a.fil --nchans 4 --nsamples 64 --seed 5
    fbsim -o b.fil --nchans 4 --nsamples 64 --seed $((5 + (1 << 32)))
    ! cmp -s a.fil b.fil
    run_err seed fbsim -o c.fil --seed $((1 << 48))
    run_err signed fbsim -o c.fil --nbits 4 --signed
    run_err tobs fbsim -o c.fil --tsamp 0.001 --tobs 0.0001
    run_err kdm fbsim -o c.fil --kdm -1
    [ ! -e c.fil ]
}

@test "fbinfo fails (exit 3, one line) when stdout cannot be written: full disk, closed stdout" {
    fbsim -o a.fil --nchans 8 --tobs 0.01
    run_err stdout bash -c 'fbinfo a.fil > /dev/full'
    [ "$status" -eq 3 ]
    run_err stdout bash -c 'fbinfo -k nchans a.fil >&-'
    [ "$status" -eq 3 ]
    run_err stdout bash -c 'fbinfo --help > /dev/full'
    [ "$status" -eq 3 ]
    # nothing for stdout: a closed stdout is no error
    run bash -c 'fbsim -o b.fil --nchans 8 --tobs 0.01 >&-'
    [ "$status" -eq 0 ]
}
