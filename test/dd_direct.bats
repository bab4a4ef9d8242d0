#!/usr/bin/env bats
# dd_direct on the CPU: recovered DM and S/N, bit-exactness across band order,
# stdin, gulp sizes and killfiles, and a brute-force reference.

load common

# A 256-channel 8-bit observation with one bright burst at DM 60, t = 1.2 s.
make_burst() {
    fbsim -o burst.fil --nchans 256 --nbits 8 --tsamp 0.000256 --tobs 3 \
        --fch1 1500 --foff -1 --seed 7 --pulse 1.2,60,0.002,50 "$@"
}

data_of() {   # the samples of a .tim, without its header
    tail -c +$(( $(fbinfo -k header_size "$1") + 1 )) "$1"
}

@test "peak S/N at the injected DM is within 10% of the injected S/N" {
    make_burst
    dd_direct burst.fil --dm 60 -o at60.tim -q
    read -r dm sample t snr < <(timpeak at60.tim)
    approx "$snr" 50 5
    approx "$t" 1.2 0.002
}

@test "the best DM of a sweep is the injected one within one trial" {
    make_burst
    dd_direct burst.fil --dm-min 0 --dm-max 120 --dm-step 2 --prefix sweep -q
    [ "$(ls sweep_DM*.tim | wc -l)" -eq 61 ]
    best=$(timpeak sweep_DM*.tim | sort -t$'\t' -k4,4g | tail -1 | cut -f1)
    approx "$best" 60 2
}

@test "a band-flipped copy gives bit-identical output" {
    make_burst
    fbflip burst.fil flipped.fil
    [ "$(fbinfo -k foff flipped.fil)" = 1 ]
    dd_direct burst.fil --dm 0,33.3,60 --prefix a -q
    dd_direct flipped.fil --dm 0,33.3,60 --prefix b -q
    for dm in 0.00 33.30 60.00; do
        cmp a_DM$dm.tim b_DM$dm.tim
    done
}

@test "band flip is bit-identical for float32 data with a frequency table" {
    fbsim -o f.fil --nchans 64 --nbits 32 --tsamp 0.000256 --tobs 1 --fch1 1400 \
        --foff -2 --freq-table --pulse 0.5,40,0.002,30
    fbflip f.fil g.fil
    dd_direct f.fil --dm 40 -o f.tim -q
    dd_direct g.fil --dm 40 -o g.tim -q
    cmp <(data_of f.tim) <(data_of g.tim)
}

@test "stdin gives the same bytes as the file" {
    make_burst
    dd_direct burst.fil --dm 60 -q > file.tim
    cat burst.fil | dd_direct --dm 60 -q > pipe.tim
    dd_direct - --dm 60 -q < burst.fil > dash.tim
    cmp file.tim pipe.tim
    cmp file.tim dash.tim
}

@test "large reads of a file, in parts on several threads, give the pipe's bytes" {
    # gulps of 40000 spectra of 1 KiB: reads of 39 MiB in 2 MiB parts; the last
    # read is short and ends in a partial spectrum
    fbsim -o big.fil --nchans 1024 --nbits 8 --tsamp 0.000064 --nsamples 90000 \
        --fch1 1500 --foff -0.25 --seed 3 --pulse 2.0,100,0.002,30
    head -c 100 /dev/urandom >> big.fil
    dd_direct big.fil --dm 0,100 --gulp 40000 --prefix f -q 2> /dev/null
    dd_direct - --dm 0,100 --gulp 40000 --prefix p -q < big.fil 2> /dev/null
    cmp f_DM0.00.tim p_DM0.00.tim
    cmp f_DM100.00.tim p_DM100.00.tim
    read -r dm sample t snr < <(timpeak f_DM100.00.tim)
    approx "$t" 2.0 0.002
    # gulps of 5000 spectra: reads of 4.9 MiB, the smallest that go in parts
    dd_direct big.fil --dm 0,100 --gulp 5000 --prefix s -q 2> /dev/null
    cmp f_DM0.00.tim s_DM0.00.tim
    cmp f_DM100.00.tim s_DM100.00.tim
}

@test "gulp size does not change a single output byte" {
    make_burst
    dd_direct burst.fil --dm 0,25,60,90 --prefix g0 -q
    for g in 8 100 1000 4096; do
        dd_direct burst.fil --dm 0,25,60,90 --prefix g$g --gulp $g -q
        for dm in 0.00 25.00 60.00 90.00; do
            cmp g0_DM$dm.tim g${g}_DM$dm.tim
        done
    done
}

@test "--rounding floor equals the brute-force reference" {
    make_burst
    for dm in 0 17.5 60 123.4; do
        dd_direct burst.fil --dm $dm --rounding floor -o floor.tim -q --force --no-baseline
        ddref burst.fil $dm floor > ref.f32
        [ -s ref.f32 ]
        cmp <(data_of floor.tim) ref.f32
    done
}

@test "--rounding nearest (default) equals the brute-force reference" {
    make_burst --nifs 1
    dd_direct burst.fil --dm 77.7 -o near.tim -q --no-baseline
    ddref burst.fil 77.7 nearest > ref.f32
    cmp <(data_of near.tim) ref.f32
}

@test "killfile zeroes exactly the listed channels (ranges and mask forms)" {
    make_burst
    echo "0:9,40,100:127" > kill.txt
    dd_direct burst.fil --dm 60 --killfile kill.txt -o k.tim -q --no-baseline
    ddref burst.fil 60 nearest "$(seq -s, 0 9),40,$(seq -s, 100 127)" > ref.f32
    cmp <(data_of k.tim) ref.f32
    # the same channels as a 0/1 mask (0 kills)
    for c in $(seq 0 255); do
        if [ "$c" -le 9 ] || [ "$c" -eq 40 ] || { [ "$c" -ge 100 ] && [ "$c" -le 127 ]; }; then
            echo 0; else echo 1; fi
    done > mask.txt
    dd_direct burst.fil --dm 60 --killfile mask.txt -o m.tim -q --no-baseline
    cmp k.tim m.tim
    run dd_direct burst.fil --dm 60 --killfile kill.txt -o v.tim -v
    [[ "$output" == *"39 of 256 channels killed"* ]]
}

@test "output length is N_in - maxdelay for every DM; --pad restores N_in" {
    make_burst
    n=$(fbinfo -k nsamples burst.fil)
    dd_direct burst.fil --dm 10,100 --prefix len -q
    # maxdelay at DM 100 across 1500..1245 MHz at 256 us
    md=$(awk 'BEGIN { printf "%d", 4148.741601*100*(1/1245^2-1/1500^2)/0.000256 + 0.5 }')
    hdr=$(fbinfo -k header_size len_DM10.00.tim)
    for f in len_DM10.00.tim len_DM100.00.tim; do
        [ $(( ($(stat -c %s $f) - hdr) / 4 )) -eq $((n - md)) ]
    done
    dd_direct burst.fil --dm 10,100 --prefix pad --pad -q
    [ $(( ($(stat -c %s pad_DM100.00.tim) - hdr) / 4 )) -eq "$n" ]
}

@test "PRESTO .dat + .inf output" {
    make_burst --source B1234+56 --src-raj 123456.7 --src-dej -561234.5 --telescope-id 4
    dd_direct burst.fil --dm 60 --format dat --prefix p --even -q
    [ -f p_DM60.00.dat ] && [ -f p_DM60.00.inf ]
    n=$(( $(stat -c %s p_DM60.00.dat) / 4 ))
    [ $((n % 2)) -eq 0 ]
    grep -q "^ Data file name without suffix          =  p_DM60.00$" p_DM60.00.inf
    grep -q "^ Telescope used                         =  Parkes$" p_DM60.00.inf
    grep -q "^ Object being observed                  =  B1234+56$" p_DM60.00.inf
    grep -q "^ J2000 Right Ascension (hh:mm:ss.ssss)  =  12:34:56.7000$" p_DM60.00.inf
    grep -q "^ J2000 Declination     (dd:mm:ss.ssss)  =  -56:12:34.5000$" p_DM60.00.inf
    grep -q "^ Epoch of observation (MJD)             =  60000.000000000000000$" p_DM60.00.inf
    grep -q "^ Number of bins in the time series      =  $n *$" p_DM60.00.inf
    grep -q "^ Width of each time series bin (sec)    =  0.000256$" p_DM60.00.inf
    grep -q "^ Dispersion measure (cm-3 pc)           =  60$" p_DM60.00.inf
    grep -q "^ Central freq of low channel (MHz)      =  1245$" p_DM60.00.inf
    grep -q "^ Total bandwidth (MHz)                  =  256$" p_DM60.00.inf
    grep -q "^ Number of channels                     =  256$" p_DM60.00.inf
    grep -q "^ Any additional notes:$" p_DM60.00.inf
    # every label line has '=' at column 40 (0-based)
    awk 'NR <= 20 && index($0, "=") != 41 { exit 1 }' p_DM60.00.inf
}

@test ".tim header carries refdm, the reference frequency and the source" {
    make_burst --source FRB_TEST --nifs 2
    dd_direct burst.fil --dm 60 -o t.tim -q
    [ "$(fbinfo -k refdm t.tim)" = 60 ]
    [ "$(fbinfo -k fch1 t.tim)" = 1500 ]
    [ "$(fbinfo -k nbits t.tim)" = 32 ]
    [ "$(fbinfo -k data_type t.tim)" = 2 ]
    [ "$(fbinfo -k source_name t.tim)" = FRB_TEST ]
    [ "$(fbinfo -k tstart t.tim)" = "$(fbinfo -k tstart burst.fil)" ]
    # two IFs are summed by default: the burst is still found at full S/N
    read -r dm sample t snr < <(timpeak t.tim)
    approx "$snr" 50 5
}

@test "sub-byte data: a 2-bit burst is found and matches the 8-bit delays" {
    fbsim -o two.fil --nchans 512 --nbits 2 --tsamp 0.000128 --tobs 2 --fch1 1581.8 \
        --foff -0.390625 --pulse 1.0,250,0.003,40
    dd_direct two.fil --dm-min 200 --dm-max 300 --dm-step 5 --prefix two -q
    best=$(timpeak two_DM*.tim | sort -t$'\t' -k4,4g | tail -1 | cut -f1)
    approx "$best" 250 5
}

@test "the tolerance list follows the recurrence and spacing grows with DM" {
    make_burst
    dd_direct burst.fil --dm-min 0 --dm-max 100 --tol 1.25 --pulse-width 40 --prefix tol -q
    n=$(ls tol_DM*.tim | wc -l)
    [ "$n" -gt 10 ] && [ "$n" -lt 200 ]
}

@test "--max-mem bounds the gulp without changing the output; too little is refused" {
    make_burst
    dd_direct burst.fil --dm 0,60,120 --prefix big -q
    dd_direct burst.fil --dm 0,60,120 --prefix small --max-mem 600K -q
    for dm in 0.00 60.00 120.00; do cmp big_DM$dm.tim small_DM$dm.tim; done
    run_err max-mem dd_direct burst.fil --dm 0,60,120 --prefix none --max-mem 100K
    [ "$status" -eq 2 ]
    [ ! -e none_DM0.00.tim ]
}

@test "--pad with a gulp much shorter than the maximum delay pads with the mean" {
    make_burst
    n=$(fbinfo -k nsamples burst.fil)
    dd_direct burst.fil --dm 120 --gulp 8 --pad -o p8.tim -q
    dd_direct burst.fil --dm 120 --pad -o p0.tim -q
    cmp p8.tim p0.tim
    [ $(( ($(stat -c %s p8.tim) - $(fbinfo -k header_size p8.tim)) / 4 )) -eq "$n" ]
    # the last sample is padding: the mean of the series, well below the burst
    last=$(data_of p8.tim | tail -c 4 | od -An -tf4 | tr -d ' ')
    approx "$last" "$(data_of p8.tim | head -c $(( (n - 500) * 4 )) | od -An -v -tf4 -w4 | awk '{ s += $1 } END { print s / NR }')" 50
}

@test "the summary's wall and real-time factor include committing the output files" {
    make_burst
    run dd_direct burst.fil --dm-min 0 --dm-max 40 --dm-step 2 --prefix s
    [ "$status" -eq 0 ]
    line=$(grep "samples in" <<<"$output")
    wall=$(sed -E 's/.* ([0-9.]+) s wall.*/\1/' <<<"$line")
    rtf=$(sed -E 's/.*real-time factor ([0-9.e+]+).*/\1/' <<<"$line")
    commit=$(sed -E 's/.*wall includes ([0-9.]+) s committing the output files.*/\1/' <<<"$line")
    awk -v w="$wall" -v c="$commit" -v r="$rtf" 'BEGIN { exit !(c > 0 && c <= w && r > 0.8 * 3 / w && r < 1.2 * 3 / w) }'
    run dd_direct burst.fil --dm-min 0 --dm-max 40 --dm-step 2 --discard
    [ "$status" -eq 0 ] && [[ "$output" == *"samples in"* ]] && [[ "$output" != *committing* ]]
}

@test "--dm-max alone starts at DM 0: the same files as --dm-min 0, with a step or a tolerance" {
    make_burst
    mkdir a b c d
    dd_direct burst.fil --dm-max 20 --dm-step 5 --prefix a/x -q
    dd_direct burst.fil --dm-min 0 --dm-max 20 --dm-step 5 --prefix b/x -q
    [ "$(ls a)" = "$(ls b)" ]
    [ "$(ls a | head -1)" = x_DM0.00.tim ] && [ "$(ls a | wc -l)" -eq 5 ]
    for f in a/*.tim; do cmp "$f" "b/${f#a/}"; done
    dd_direct burst.fil --dm-max 80 --prefix c/x -q
    dd_direct burst.fil --dm-min 0 --dm-max 80 --prefix d/x -q
    [ "$(ls c)" = "$(ls d)" ] && [ "$(ls c | wc -l)" -gt 5 ]
    run_err "--dm-min needs --dm-max" dd_direct burst.fil --dm-min 10 -q
    [ "$status" -eq 2 ]
}

# ---- the .tim baseline (SIGPROC dedisperse's default) -------------------------------

@test ".tim: each block of 32 x nchans samples less its median, as dedisperse; --no-baseline: raw sums" {
    fbsim -q -o slow.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 4 --fch1 1500 --foff -2 \
        --pulsar 0.253,56.7,0.03,2
    dd_direct slow.fil --dm 56.7 -o x.tim -q
    dd_direct slow.fil --dm 56.7 -o raw.tim -q --no-baseline
    # blocks of 2048: 7 full ones and a short last one (the previous median)
    [ "$(fbinfo -k nsamples x.tim)" -gt $((7 * 2048)) ]
    timcmp --baseline 2048 x.tim raw.tim
    ! timcmp --baseline 1024 x.tim raw.tim
    ! timcmp x.tim raw.tim
    read -r mean std _ < <(timsnr x.tim)
    read -r rmean rstd _ < <(timsnr raw.tim)
    echo "mean $mean std $std; raw mean $rmean"
    approx "$mean" 0 "$(awk -v x="$std" 'BEGIN { print 0.05 * x }')"
    awk -v a="$rmean" -v b="$std" 'BEGIN { exit !(a > 50 * b) }'
    # the pulsar folds as bright as in the raw sums
    f=$(timsnr --fold 0.253 x.tim | cut -f3) r=$(timsnr --fold 0.253 raw.tim | cut -f3)
    echo "folded S/N: $f baselined, $r raw"
    approx "$f" "$r" "$(awk -v x="$r" 'BEGIN { print 0.1 * x }')"
    # stdout and several DMs the same; a series shorter than one block less its own median
    dd_direct slow.fil --dm 56.7 -q > out.tim
    cmp out.tim x.tim
    dd_direct slow.fil --dm 0,56.7 --prefix m -q
    cmp m_DM56.70.tim x.tim
    fbsim -q -o short.fil --nchans 64 --nbits 8 --tsamp 0.000256 --nsamples 1500 --fch1 1500 --foff -2
    dd_direct short.fil --dm 10 -o s.tim -q
    dd_direct short.fil --dm 10 -o sraw.tim -q --no-baseline
    timcmp --baseline 2048 s.tim sraw.tim
}

@test ".dat stays as prepdata writes it: raw sums, --no-baseline or not" {
    fbsim -q -o slow.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 2 --fch1 1500 --foff -2
    dd_direct slow.fil --dm 30 --format dat -o a.dat -q
    dd_direct slow.fil --dm 30 --format dat -o b.dat -q --no-baseline
    cmp a.dat b.dat
    dd_direct slow.fil --dm 30 -o raw.tim -q --no-baseline
    cmp <(head -c "$(( $(fbinfo -k nsamples raw.tim) * 4 ))" a.dat) <(data_of raw.tim)
}
