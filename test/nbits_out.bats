#!/usr/bin/env bats
# nbits_out.bats - dd_direct --nbits-out 8|16: unsigned integer .tim series.
# The default scales each series to its noise (sigma 8 levels about 128 for 8
# bits): a burst keeps its S/N within 2% of the float series', and clipped
# samples are counted. --nbits-scale sum: value = raw sum / S rounded with S
# the smallest power of two that keeps the largest possible sum in range,
# checked sample for sample against the float series (timcmp --quantised, an
# independent rounding), at the extremes, per downsampling factor; and the
# refusals.

load common

@test "--nbits-out 8 and 16 are the float series divided by the printed S and rounded" {
    fbsim -q -o a.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 2 --fch1 1500 --foff -1 \
        --pulse 1,40,0.001,30
    dd_direct -q a.fil --dm 0,40 --prefix f --no-baseline
    run dd_direct a.fil --dm 0,40 --prefix q8 --nbits-out 8 --nbits-scale sum
    [ "$status" -eq 0 ]
    # 64 channels x 255 = 16320: S = 64 for 8 bits, 1 for 16
    [[ "$output" == *"--nbits-out 8: output value = sum / 64, rounded"* ]]
    run dd_direct a.fil --dm 0,40 --prefix q16 --nbits-out 16 --nbits-scale sum
    [[ "$output" == *"--nbits-out 16: output value = sum / 1, rounded"* ]]
    for dm in 0.00 40.00; do
        [ "$(fbinfo -k nbits q8_DM$dm.tim)" = 8 ] && [ "$(fbinfo -k nbits q16_DM$dm.tim)" = 16 ]
        timcmp --quantised 64 q8_DM$dm.tim f_DM$dm.tim
        timcmp --quantised 1 q16_DM$dm.tim f_DM$dm.tim
    done
    # the rule is checked, not assumed: a wrong S fails
    ! timcmp --quantised 32 q8_DM40.00.tim f_DM40.00.tim
}

@test "--nbits-out: 2-bit sums fit 8 bits as they are (S = 1), to stdout too" {
    fbsim -q -o a.fil --nchans 64 --nbits 2 --tsamp 0.000256 --tobs 1 --fch1 1500 --foff -1
    dd_direct -q a.fil --dm 10 -o f.tim --no-baseline
    dd_direct -q a.fil --dm 10 --nbits-out 8 --nbits-scale sum > q.tim
    timcmp --quantised 1 q.tim f.tim
}

@test "--nbits-out 8: the largest possible sum is 255, not a wrapped value" {
    fbsim -q -o a.fil --nchans 32 --nbits 8 --tsamp 0.000256 --nsamples 4000 --fch1 1500 --foff -1
    hdr=$(fbinfo a.fil | awk -F: '/Header size/ { print $2 + 0 }')
    { head -c "$hdr" a.fil; head -c $((32 * 4000)) /dev/zero | tr '\0' '\377'; } > max.fil
    dd_direct -q max.fil --dm 0,30 --prefix q --nbits-out 8 --nbits-scale sum
    dd_direct -q max.fil --dm 0,30 --prefix f --no-baseline
    timcmp --quantised 32 q_DM30.00.tim f_DM30.00.tim
    n=$(fbinfo -k nsamples q_DM30.00.tim)
    hq=$(fbinfo q_DM30.00.tim | awk -F: '/Header size/ { print $2 + 0 }')
    [ "$(tail -c +$((hq + 1)) q_DM30.00.tim | od -An -v -tu1 | tr -s ' ' '\n' | grep -c '^255$')" -eq "$n" ]
}

@test "--nbits-out with a scrunched plan: each DM's divisor is S times its factor" {
    fbsim -q -o a.fil --nchans 64 --nbits 4 --tsamp 0.000064 --tobs 2 --fch1 1500 --foff -1
    printf 'dm_lo\tdm_hi\tdm_step\tdownsamp\tndm\n0\t20\t10\t1\t2\n20\t60\t20\t4\t2\n' > p.tsv
    dd_direct -q a.fil --plan p.tsv --prefix f --no-baseline
    run dd_direct a.fil --plan p.tsv --prefix q --nbits-out 8 --nbits-scale sum
    [ "$status" -eq 0 ]
    # 64 x 15 = 960: S = 4 at factor 1, 16 at factor 4
    [[ "$output" == *"sum / 4 (times each DM's downsampling factor)"* ]]
    timcmp --quantised 4 q_DM10.00.tim f_DM10.00.tim
    timcmp --quantised 16 q_DM40.00.tim f_DM40.00.tim
}

@test "--nbits-out refusals: .dat; --nbits-scale sum of float or signed input, --zerodm; other widths" {
    fbsim -q -o a.fil --nchans 16 --nbits 8 --tobs 0.5
    fbsim -q -o f.fil --nchans 16 --nbits 32 --tobs 0.5
    run_err ".dat" dd_direct a.fil --dm 10 --format dat -o x.dat --nbits-out 8
    [ "$status" -eq 2 ] && [ ! -e x.dat ] && [ ! -e x.inf ]
    run_err "f.fil holds float samples" dd_direct f.fil --dm 10 -o x.tim --nbits-out 16 \
        --nbits-scale sum
    [ "$status" -eq 2 ] && [ ! -e x.tim ]
    run_err "--zerodm" dd_direct a.fil --dm 10 -o x.tim --nbits-out 8 --zerodm --nbits-scale sum
    [ "$status" -eq 2 ]
    run_err "--nbits-out" dd_direct a.fil --dm 10 -o x.tim --nbits-out 12
    [ "$status" -eq 2 ]
    run_err "--nbits-scale" dd_direct a.fil --dm 10 -o x.tim --nbits-scale sum
    [ "$status" -eq 2 ]
    run_err "--nbits-scale" dd_direct a.fil --dm 10 -o x.tim --nbits-out 8 --nbits-scale max
    [ "$status" -eq 2 ] && [ ! -e x.tim ]
    # noise scaling takes float input and --zerodm sums
    dd_direct -q f.fil --dm 10 -o x.tim --nbits-out 16 --zerodm
    [ "$(fbinfo -k nbits x.tim)" = 16 ]
}

# snr_of FILE: the S/N column of timsnr (best boxcar over the series)
snr_of() {
    timsnr "$@" | cut -f3
}

@test "--nbits-out 8 (noise scaling): a burst's S/N within 2% of the float series', noise 8 levels" {
    fbsim -q -o a.fil --nchans 1024 --nbits 8 --tsamp 0.000064 --tobs 4 --fch1 1500 --foff -0.25 \
        --pulse 2,56.7,0.001,15
    dd_direct -q a.fil --dm 56.7 -o f.tim
    run dd_direct a.fil --dm 56.7 -o q.tim --nbits-out 8
    [ "$status" -eq 0 ]
    [[ "$output" == *"--nbits-out 8: each series scaled to its noise (sigma = 8 levels about 128); 0 of "* ]]
    [ "$(fbinfo -k nbits q.tim)" = 8 ]
    f=$(snr_of f.tim) q=$(snr_of q.tim)
    echo "float S/N $f, 8-bit S/N $q"
    approx "$q" "$f" "$(awk -v x="$f" 'BEGIN { print 0.02 * x }')"
    awk -v a="$f" 'BEGIN { exit !(a > 10) }'
    # the mean sits at 128 and sigma is about 8 levels (not 0.59 as with the sum scaling)
    read -r mean std _ < <(timsnr q.tim)
    approx "$mean" 128 0.5 && approx "$std" 8 0.8
    # the sum scaling of 1024 8-bit channels leaves the noise below one level and loses S/N
    dd_direct -q a.fil --dm 56.7 -o s.tim --nbits-out 8 --nbits-scale sum
    read -r _ std _ < <(timsnr s.tim)
    awk -v a="$std" 'BEGIN { exit !(a < 1) }'
}

@test "--nbits-out 8: a burst brighter than the range is clipped, and the clipped samples counted" {
    fbsim -q -o a.fil --nchans 256 --nbits 8 --tsamp 0.000256 --tobs 4 --fch1 1500 --foff -1 \
        --pulse 2,100,0.002,200
    run dd_direct a.fil --dm 100 -o q.tim --nbits-out 8
    [ "$status" -eq 0 ]
    n=$(echo "$output" | sed -n 's/.* \([0-9]*\) of \([0-9]*\) samples clipped.*/\1/p')
    echo "clipped: $n"
    [ "$n" -gt 0 ] && [ "$n" -lt 50 ]
    # exactly the samples at 255 or 0 (the burst's top and nothing else)
    hq=$(fbinfo -k header_size q.tim)
    [ "$(tail -c +$((hq + 1)) q.tim | od -An -v -tu1 | tr -s ' ' '\n' | grep -c '^255$\|^0$')" -ge "$n" ]
    # 16 bits (sigma 512 levels about 32768) clip fewer of them
    run dd_direct a.fil --dm 100 -o q16.tim --nbits-out 16
    m=$(echo "$output" | sed -n 's/.* \([0-9]*\) of \([0-9]*\) samples clipped.*/\1/p')
    echo "16-bit clipped: $m"
    [ "$m" -lt "$n" ]
}
