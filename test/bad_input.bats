#!/usr/bin/env bats
# Bad input: each case exits 1 (data), 2 (usage) or 3 (system) as SPEC section 4
# says, prints one line naming the file or option, and leaves no output behind.

load common

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    fbsim -o good.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 1 --fch1 1400 --foff -1
    mkdir out
}

no_output_left() {
    [ -z "$(ls -A out)" ] || { ls -la out; return 1; }
}

# Header bytes: a length-prefixed string, an int32, a double.
str() { printf "$(printf '\\%03o' $(( ${#1} & 255 )) $(( ${#1} >> 8 )) 0 0)%s" "$1"; }
i32() { printf "$(printf '\\%03o' $(( $1 & 255 )) $(( ($1 >> 8) & 255 )) 0 0)"; }
i32_full() { perl -e 'print pack("l<", $ARGV[0])' -- "$1"; }   # i32 writes 16 bits only
f64() { perl -e 'print pack("d<", $ARGV[0])' -- "$1"; }

header_with() {   # header_with KEY VALUE-WRITER... : a valid header with one change
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; str tsamp; f64 0.001
      str fch1; f64 1400; str foff; f64 -1; "$@"; str HEADER_END; head -c 4000 /dev/zero; }
}

band() {   # band FCH1 FOFF: a 4-channel 8-bit header and data
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; str tsamp; f64 0.001
      str fch1; f64 "$1"; str foff; f64 "$2"; str HEADER_END; head -c 4000 /dev/zero; }
}

# freq_table N F0 DF: a FREQUENCY_START block of N fchannel entries F0 + i*DF
freq_table() {
    perl -e 'sub s_ { pack("l<", length $_[0]) . $_[0] }
             my ($n, $f0, $df) = @ARGV;
             print s_("FREQUENCY_START"), (map { s_("fchannel") . pack("d<", $f0 + $_ * $df) } 0 .. $n - 1),
                   s_("FREQUENCY_END")' -- "$@"
}

@test "a DM list naming one output twice (not side by side) is a usage error before any work" {
    printf '%s\n' 10 20 10.001 > dup.txt
    run_err "both give the name out/x_DM10.00.tim" dd_direct good.fil --dm-list dup.txt --prefix out/x
    [ "$status" -eq 2 ]
    no_output_left
}

@test "truncated header" {
    head -c 30 good.fil > trunc.fil
    run_err trunc.fil dd_direct trunc.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"truncated header"* ]]
    no_output_left
}

@test "missing HEADER_END" {
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; } > noend.fil
    run_err noend.fil dd_direct noend.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"HEADER_END"* ]]
    no_output_left
}

@test "unknown keyword names the keyword and its byte offset" {
    header_with str bogus_key > unk.fil
    run_err unk.fil dd_direct unk.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"'bogus_key' at byte offset 92"* ]]
    no_output_left
}

@test "absurd nbits" {
    { str HEADER_START; str nchans; i32 4; str nbits; i32 7; str tsamp; f64 0.001
      str fch1; f64 1400; str foff; f64 -1; str HEADER_END; head -c 400 /dev/zero; } > nb.fil
    run_err nb.fil dd_direct nb.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"nbits 7"* ]]
    no_output_left
}

@test "nchans 0" {
    { str HEADER_START; str nchans; i32 0; str nbits; i32 8; str tsamp; f64 0.001
      str fch1; f64 1400; str foff; f64 -1; str HEADER_END; } > nc.fil
    run_err nc.fil dd_direct nc.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"nchans 0"* ]]
    no_output_left
}

@test "negative tsamp" {
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; str tsamp; f64 -0.001
      str fch1; f64 1400; str foff; f64 -1; str HEADER_END; head -c 400 /dev/zero; } > ts.fil
    run_err ts.fil dd_direct ts.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"tsamp"* ]]
    no_output_left
}

@test "string length out of range" {
    { str HEADER_START; i32 5000; } > len.fil
    run_err len.fil fbinfo len.fil
    [ "$status" -eq 1 ]
    [[ "$output" == *"length 5000"* ]]
}

@test "not a SIGPROC file" {
    echo "hello world, not a filterbank" > text.fil
    run_err text.fil dd_direct text.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"HEADER_START"* ]]
    no_output_left
}

@test "data shorter than one sample" {
    fbsim -o tiny.fil --nchans 64 --nbits 8 --nsamples 1 --fch1 1400 --foff -1
    head -c -10 tiny.fil > short.fil
    run_err short.fil dd_direct short.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"shorter than one sample"* ]]
    no_output_left
}

@test "bytes past the last whole spectrum: one warning, from a file and from stdin, cleaned or not" {
    cp good.fil part.fil
    printf 'abc' >> part.fil
    for rfi in "" "--rfi auto"; do
        run dd_direct part.fil --dm 10 --discard -q $rfi
        [ "$status" -eq 0 ]
        [ "$(grep -c "part.fil: 3 trailing bytes" <<<"$output")" -eq 1 ] || { echo "$output"; false; }
        run bash -c "cat part.fil | dd_direct --dm 10 --discard -q $rfi"
        [ "$status" -eq 0 ]
        [ "$(grep -c "3 trailing bytes" <<<"$output")" -eq 1 ] || { echo "$output"; false; }
    done
}

@test "data shorter than the maximum delay, from a file and from stdin" {
    run_err good.fil dd_direct good.fil --dm 5000 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"maximum delay"* ]]
    no_output_left
    run_err stdin bash -c 'cat good.fil | dd_direct --dm 5000 --prefix out/x'
    [ "$status" -eq 1 ]
    no_output_left
}

@test "empty stdin" {
    run_err stdin bash -c 'dd_direct --dm 10 --prefix out/x < /dev/null'
    [ "$status" -eq 1 ]
    [[ "$output" == *"empty input"* ]]
    no_output_left
}

@test "killfile of the wrong length" {
    printf '1\n0\n1\n' > kill.txt
    run_err kill.txt dd_direct good.fil --dm 10 --killfile kill.txt --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"3 entries for 64 channels"* ]]
    no_output_left
}

@test "killfile channel out of range" {
    echo "0:10,70" > kill.txt
    run_err kill.txt dd_direct good.fil --dm 10 --killfile kill.txt --prefix out/x
    [ "$status" -eq 1 ]
    no_output_left
}

@test "DM list with NaN, in a file and on the command line" {
    printf '10\nnan\n30\n' > dms.txt
    run_err dms.txt dd_direct good.fil --dm-list dms.txt --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"line 2"* ]]
    run_err nan dd_direct good.fil --dm 10,nan --prefix out/x
    [ "$status" -eq 2 ]
    no_output_left
}

@test "unwritable output" {
    chmod 555 out
    if touch out/probe 2>/dev/null; then skip "running with permissions that ignore chmod"; fi
    run_err out/x dd_direct good.fil --dm 10,20 --prefix out/x
    [ "$status" -eq 3 ]
    chmod 755 out
    no_output_left
}

@test "write error on the output device, and devices are written in place" {
    run_err /dev/full dd_direct good.fil --dm 10 -o /dev/full
    [ "$status" -eq 3 ]
    [[ "$output" == *"write error"* ]]
    [ -c /dev/full ]
    dd_direct good.fil --dm 10 -o /dev/null -q
    [ -c /dev/null ]
    fbsim --nchans 4 --tobs 0.01 -o /dev/null
    [ -c /dev/null ]
}

@test "missing output directory" {
    run_err nodir/x dd_direct good.fil --dm 10,20 --prefix nodir/x
    [ "$status" -eq 3 ]
}

@test "existing output without --force is kept; --force replaces it" {
    echo precious > out/x_DM20.00.tim
    run_err x_DM20.00.tim dd_direct good.fil --dm 10,20 --prefix out/x
    [ "$status" -eq 2 ]
    [[ "$output" == *"--force"* ]]
    [ "$(cat out/x_DM20.00.tim)" = precious ]
    [ ! -e out/x_DM10.00.tim ]
    dd_direct good.fil --dm 10,20 --prefix out/x --force -q
    [ "$(fbinfo -k refdm out/x_DM20.00.tim)" = 20 ]
}

@test "missing input file" {
    run_err nosuch.fil dd_direct nosuch.fil --dm 10
    [ "$status" -eq 3 ]
}

@test "usage errors exit 2 with one line" {
    run_err "--bogus" dd_direct good.fil --dm 10 --bogus
    [ "$status" -eq 2 ]
    run_err "--dm" dd_direct good.fil
    [ "$status" -eq 2 ]
    run_err "dm-step" dd_direct good.fil --dm-min 0 --dm-max 10 --dm-step 0
    [ "$status" -eq 2 ]
    run_err "rounding" dd_direct good.fil --dm 10 --rounding up
    [ "$status" -eq 2 ]
    run_err "-o" dd_direct good.fil --dm 10,20 -o one.tim
    [ "$status" -eq 2 ]
    run_err "tol" dd_direct good.fil --dm-min 0 --dm-max 10 --tol 1
    [ "$status" -eq 2 ]
    run_err "nifs" bash -c 'fbsim --nchans 8 --nifs 3 --tobs 0.1 | dd_direct --dm 1'
    [ "$status" -eq 2 ]
}

@test "--backend gpu without a usable GPU fails with exit 3; auto falls back to the CPU" {
    if dd_direct --list-gpus | grep -q '^[0-9]'; then skip "a GPU is present"; fi
    run_err "--backend gpu" dd_direct good.fil --dm 10 --backend gpu --prefix out/x
    [ "$status" -eq 3 ]
    no_output_left
    # tuning says why, not that there is nothing to tune
    run_err "no usable GPU" ddtune good.fil --dm 10 --backend gpu --no-wisdom
    [ "$status" -eq 3 ]
    run_err "no usable GPU" dd_direct good.fil --dm 10 --backend gpu --tune --no-wisdom \
        --prefix out/x
    [ "$status" -eq 3 ]
    no_output_left
    run dd_direct good.fil --dm 10 --backend auto -v -o out/a.tim
    [ "$status" -eq 0 ]
    [[ "$output" == *"CPU"* ]]
}

@test "fbsim refuses nonsense" {
    run_err nbits fbsim --nbits 3 -o out/x.fil
    [ "$status" -eq 2 ]
    run_err pulse fbsim --pulse 1,2 -o out/x.fil
    [ "$status" -eq 2 ]
    no_output_left
}

@test "fbinfo -k of an unknown key" {
    run_err nonsense fbinfo -k nonsense good.fil
    [ "$status" -eq 2 ]
}

@test "an interrupted run leaves no output and no temporary behind" {
    # on one CPU thread the run takes minutes; a GPU (the automatic backend)
    # would finish it before the signal
    fbsim -o big.fil --nchans 1024 --nbits 8 --tsamp 0.000064 --tobs 20
    for sig in INT TERM; do
        run timeout -s $sig 1 dd_direct big.fil --dm-min 0 --dm-max 500 --dm-step 1 --prefix out/x -q \
            --backend cpu --threads 1
        [ "$status" -eq 124 ]
        [ -z "$(ls -A out)" ] || { ls -la out; return 1; }
    done
}

@test "a run interrupted while it creates its outputs leaves no temporary behind" {
    # 2001 outputs of a short input: most of the run is creating them, and a
    # signal between a temporary's creation and its listing left it behind
    # (19 of 20 runs before the fix)
    fbsim -o s.fil --nchans 16 --nbits 8 --tsamp 0.001 --tobs 1 --fch1 1500 --foff -1
    for t in 0.02 0.035 0.05 0.065 0.08 0.095 0.11 0.125 0.14 0.155; do
        rm -rf out && mkdir out
        run timeout -s INT $t dd_direct s.fil --dm-min 0 --dm-max 200 --dm-step 0.1 --prefix out/x \
            -q --backend cpu
        if [ "$status" -eq 0 ]; then
            [ "$(ls out | wc -l)" -eq 2001 ]
        else
            [ "$status" -eq 124 ]
            [ -z "$(ls -A out)" ] || { echo "after $t s:"; ls -A out | head; return 1; }
        fi
    done
}

@test "a second frequency table is bad data, not a heap overflow" {
    { str HEADER_START; str nchans; i32 1024; str nbits; i32 8; str tsamp; f64 0.001
      freq_table 1024 1400 -0.25; freq_table 1024 1400 -0.25; str HEADER_END
      head -c 40000 /dev/zero; } > two.fil
    run_err two.fil fbinfo two.fil
    [ "$status" -eq 1 ]
    [[ "$output" == *"second frequency table"* ]]
    run_err two.fil dd_direct two.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    no_output_left
}

@test "fch1 0 is bad data naming the file, with nothing left (not even a hidden temporary)" {
    band 0 -1 > f0.fil
    run_err f0.fil dd_direct f0.fil --dm 10,20 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"0 MHz"* ]]
    no_output_left
    run_err f0.fil ddplan f0.fil --dm-max 100
    [ "$status" -eq 1 ]
}

@test "negative channel frequencies are bad data, from fch1/foff and from a frequency table" {
    band 1.5 -1.25 > neg.fil
    run_err neg.fil dd_direct neg.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"channel 2"* ]]
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; str tsamp; f64 0.001
      freq_table 4 1.5 -1; str HEADER_END; head -c 4000 /dev/zero; } > negtab.fil
    run_err negtab.fil dd_direct negtab.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"channel 2"* ]]
    no_output_left
}

@test "a filterbank header without fch1 or a frequency table is bad data" {
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; str tsamp; f64 0.001
      str foff; f64 -1; str HEADER_END; head -c 4000 /dev/zero; } > nof.fil
    run_err nof.fil dd_direct nof.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"fch1"* ]]
    no_output_left
}

@test "a time series with fch1 0 is read, but dedispersing it is bad data, refused before any delay is cast" {
    # refused as a time series first (no filterbank), before its frequency is looked at
    { str HEADER_START; str data_type; i32 2; str nchans; i32 1; str nbits; i32 32
      str tsamp; f64 0.001; str fch1; f64 0; str HEADER_END; head -c 4000 /dev/zero; } > ts0.tim
    run fbinfo -k nsamples ts0.tim
    [ "$status" -eq 0 ] && [ "$output" = 1000 ]
    run_err "ts0.tim: a dedispersed time series" dd_direct ts0.tim --dm 10,20 --prefix out/x
    [ "$status" -eq 1 ]
    no_output_left
}

@test "channel and IF counts that overflow the spectrum size are bad data" {
    { str HEADER_START; str nchans; i32_full 2147483647; str nbits; i32 8; str tsamp; f64 0.001
      str fch1; f64 1400; str foff; f64 -0.0000001; str HEADER_END; head -c 4000 /dev/zero; } > big.fil
    run_err big.fil dd_direct big.fil --dm 10 --prefix out/x
    [ "$status" -eq 1 ]
    [[ "$output" == *"nchans"* ]]
    { str HEADER_START; str nchans; i32 1024; str nifs; i32_full 2147483647; str nbits; i32 32
      str tsamp; f64 0.001; str fch1; f64 1400; str foff; f64 -0.1; str HEADER_END
      head -c 4000 /dev/zero; } > ifs.fil
    run_err ifs.fil fbinfo ifs.fil
    [ "$status" -eq 1 ]
    [[ "$output" == *"nifs"* ]]
    no_output_left
}

@test "fbinfo prints extreme but finite positions and epochs without garbage; a NaN epoch is bad data" {
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; str tsamp; f64 0.001
      str fch1; f64 1400; str foff; f64 -1; str src_raj; f64 1e300; str src_dej; f64 -1e300
      str tstart; f64 1e300; str HEADER_END; head -c 4000 /dev/zero; } > far.fil
    run fbinfo far.fil
    [ "$status" -eq 0 ]
    [[ "$output" != *"2147483648"* ]] || { echo "$output"; return 1; }
    [[ "$output" == *"Source RA (J2000)"*"1e+300"* ]]
    [[ "$output" == *"Gregorian date (YYYY/MM/DD)"*"out of range"* ]]
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; str tsamp; f64 0.001
      str fch1; f64 1400; str foff; f64 -1; str tstart; f64 nan; str HEADER_END
      head -c 4000 /dev/zero; } > nan.fil
    run_err nan.fil fbinfo nan.fil
    [ "$status" -eq 1 ]
    [[ "$output" == *"tstart"* ]]
}

@test "a directory as input is bad data, not a read error" {
    run_err out dd_direct out --dm 10 --prefix x
    [ "$status" -eq 1 ]
    [[ "$output" == *"directory"* ]]
    run_err out fbinfo out
    [ "$status" -eq 1 ]
}

@test "dd_tree: a DM list past 10^7 is refused before it is built, fast (issue 32.2)" {
    fbsim -q -o low.fil --nchans 64 --nbits 8 --tsamp 0.000256 --nsamples 1000 --fch1 130 --foff -2
    { str HEADER_START; str nchans; i32 4; str nbits; i32 8; str tsamp; f64 1e-300
      str fch1; f64 1400; str foff; f64 -1; str HEADER_END; head -c 4000 /dev/zero; } > tiny.fil
    for args in "low.fil --dm-max 100" "tiny.fil --dm-max 10" "good.fil --dm-max 1e308" \
                "good.fil --dm-min 1e300 --dm-max 1e308" "low.fil --dm-max 100 --scrunch none"; do
        # shellcheck disable=SC2086
        run_err "10^7" timeout 20 dd_tree $args --prefix out/x
        [ "$status" -eq 2 ]
        no_output_left
        # shellcheck disable=SC2086
        run_err "10^7" timeout 20 dd_tree $args --list-dms
        [ "$status" -eq 2 ]
    done
}

@test "a file with foff 0 and one channel width unknown: exit 1 naming the file, every tool (issue 32.11)" {
    band 1400 0 > flat.fil
    for tool in dd_direct dd_subband dd_tree; do
        run_err flat.fil $tool flat.fil --dm-min 0 --dm-max 10 --prefix out/x
        [ "$status" -eq 1 ] || { echo "$tool: exit $status: $output"; return 1; }
        [[ "$output" != *"see --help"* ]]
    done
    no_output_left
}

@test "tables that grow with the DMs are held to --max-mem: ddtune's block, dd_tree's routes (issue 32.6)" {
    # under 3 GB of address space an allocation past the bound would fail as
    # exit 3 (not under ASan, which reserves terabytes of shadow)
    local lim='ulimit -v 3000000;'
    [ -z "${ASAN_OPTIONS:-}" ] || lim=
    run_err "--max-mem" bash -c "$lim"' exec ddtune good.fil --dm-min 0 --dm-max 1000 \
        --dm-step 0.001 --max-mem 256M --budget 1 --no-wisdom --backend cpu'
    [ "$status" -eq 2 ] && [[ "$output" == *"tuning: the synthetic block"*"over --max-mem 256 MiB"* ]]
    run_err "--max-mem" bash -c "$lim"' exec timeout 20 dd_tree good.fil --dm-max 1e6 \
        --scrunch none --prefix out/x --max-mem 16M --backend cpu'
    [ "$status" -eq 2 ] && [[ "$output" == *"routing table"* ]]
    no_output_left
}

@test "a killfile mask with a typo, a NUL byte, a device or a huge file is refused, naming it (issue 32.9)" {
    { for i in $(seq 64); do [ "$i" -eq 5 ] && echo 2 || echo 1; done; } > typo.kill
    run_err typo.kill dd_direct good.fil --dm 10 --killfile typo.kill --prefix out/x
    [ "$status" -eq 1 ] && [[ "$output" == *"line 5: '2'"* ]]
    printf '0:3\0 5\n' > nul.kill
    run_err nul.kill dd_direct good.fil --dm 10 --killfile nul.kill --prefix out/x
    [ "$status" -eq 1 ] && [[ "$output" == *"NUL"* ]]
    run_err /dev/zero timeout 10 dd_direct good.fil --dm 10 --killfile /dev/zero --prefix out/x
    [ "$status" -eq 1 ] && [[ "$output" == *"not a regular file"* ]]
    truncate -s 300M huge.kill
    run_err huge.kill timeout 10 dd_direct good.fil --dm 10 --killfile huge.kill --prefix out/x
    [ "$status" -eq 1 ] && [[ "$output" == *"larger than"* ]]
    no_output_left
    # a mask still reads as a mask, a list as a list (a pipe too)
    dd_direct -q good.fil --dm 10 --killfile <(printf '0:3\n') -o a.tim
    dd_direct -q good.fil --dm 10 --killfile <(for i in $(seq 64); do [ "$i" -le 4 ] && echo 0 || echo 1; done) -o b.tim
    cmp a.tim b.tim
}

@test "DM lists, plans and .inf files: devices, huge files, endless lines and NUL bytes refused (issue 32.8)" {
    printf '10\n20\n' > ok.dms
    for bad in /dev/zero nul.dms long.dms; do
        case $bad in
            nul.dms) printf '10\n2\0000\n' > nul.dms ;;
            long.dms) { printf '10\n'; head -c 2000000 /dev/zero | tr '\0' 1; } > long.dms ;;
        esac
        run_err "$bad" timeout 10 dd_direct good.fil --dm-list "$bad" --prefix out/x
        [ "$status" -eq 1 ] || { echo "$bad: $status"; return 1; }
        run_err "$bad" timeout 10 dd_direct good.fil --plan "$bad" --prefix out/x
        [ "$status" -eq 1 ] || { echo "$bad: $status"; return 1; }
    done
    no_output_left
    dd_direct -q good.fil --dm-list <(printf '10\n20\n') --prefix out/p
    [ "$(ls out | wc -l)" -eq 2 ]
}

@test "smaller: an .inf tsamp of inf, a pulse at DM 1e300, a header-only file to tscrunch (issue 32.11)" {
    dd_direct -q good.fil --dm 10 --prefix s --format dat
    sed -i 's/^\( Width of each time series bin (sec) *= *\).*/\1inf/' s_DM10.00.inf
    run_err s_DM10.00.inf tscrunch -n 4 s_DM10.00.dat -o out/t.dat
    [ "$status" -eq 1 ] && [[ "$output" == *"bin width inf"* ]]
    run_err s_DM10.00.inf fdas s_DM10.00.dat -o out/f.tsv
    [ "$status" -eq 1 ]
    # pulses far outside the observation: no undefined conversion (UBSan in check-sanitize)
    fbsim -q -o far.fil --nchans 16 --nbits 8 --tsamp 0.001 --nsamples 500 --fch1 1400 --foff -1 \
        --pulse 0.001,1e300,0.001,10 --pulse 1e300,10,0.001,10 --seed 3
    [ "$(fbinfo -k nsamples far.fil)" -eq 500 ]
    head -c "$(fbinfo -k header_size good.fil)" good.fil > hdr.fil
    run_err hdr.fil tscrunch -n 2 hdr.fil -o out/h.fil
    [ "$status" -eq 1 ]
    run_err "fewer than one group" tscrunch -n 1000000 good.fil -o out/few.fil
    [ "$status" -eq 1 ]
    no_output_left
}

@test "a .tim or .dat given where a filterbank is needed: one line naming it, exit 1, no output" {
    dd_direct -q good.fil --dm 10 -o small.tim
    dd_direct -q good.fil --dm 10 --format dat -o small.dat
    for tool in dd_direct dd_subband dd_tree ddtune; do
        out=(--prefix out/x)
        [ "$tool" != ddtune ] || out=()
        run_err small.tim "$tool" small.tim --dm-max 10 "${out[@]}"
        [ "$status" -eq 1 ] && no_output_left
        [[ "$output" == *"dedispersed time series"*"not a filterbank"* ]]
        run_err small.dat "$tool" small.dat --dm-max 10 "${out[@]}"
        [ "$status" -eq 1 ] && no_output_left
    done
    run_err small.tim dd_direct small.tim --dm 10 -o out/x.tim
    [ "$status" -eq 1 ] && no_output_left
    # ddplan names the file, not options never given
    run_err small.tim ddplan small.tim --dm-max 100
    [ "$status" -eq 1 ] && [[ "$output" != *"--fch1"* ]]
}

@test "binary series are refused on a terminal (dd_direct, tscrunch), written when redirected" {
    command -v script > /dev/null || skip "script (util-linux) not installed"
    run script -qec "dd_direct good.fil --dm 10" /dev/null
    [ "$status" -eq 2 ]
    [[ "$output" == *"dd_direct: refusing to write a binary time series to a terminal"* ]]
    run script -qec "tscrunch -n 2 good.fil" /dev/null
    [ "$status" -eq 2 ] && [[ "$output" == *"tscrunch: refusing to write binary data"* ]]
    # to files, or several DMs to their own files, the terminal is no matter
    run script -qec "dd_direct -q good.fil --dm 10 -o out/a.tim && dd_direct -q good.fil --dm 10,20 --prefix out/b" /dev/null
    [ "$status" -eq 0 ] && [ -s out/a.tim ] && [ -s out/b_DM20.00.tim ]
    dd_direct -q good.fil --dm 10 > piped.tim
    cmp piped.tim out/a.tim
}

@test "fbsim shows progress with the time left on a terminal" {
    command -v script > /dev/null || skip "script (util-linux) not installed"
    run script -qec "fbsim -o p.fil --nchans 1024 --nbits 8 --tsamp 0.000064 --tobs 4" /dev/null
    [ "$status" -eq 0 ] && [ -s p.fil ]
    [[ "$output" == *"fbsim: ["*"%"*" s, "*" s left"* ]]
    run script -qec "fbsim -q -o q.fil --nchans 1024 --nbits 8 --tsamp 0.000064 --tobs 4" /dev/null
    [ -z "$output" ]
}
