#!/usr/bin/env bats
# golden.bats - byte-for-byte regression pins of dd_direct's outputs.
#
# Each test simulates a small filterbank (fbsim, fbflip), runs dd_direct on the
# CPU backend (-q) into an empty out/ directory, and compares the SHA-256 of
# everything written there (files in C-locale sorted order, each "sha256  name",
# hashed again as a whole) with the line for that case in test/golden.sha256
# ("<case-name> <sha256>"). The inputs themselves (and the ddplan plan) are
# pinned too, by the "input.*" lines, so a changed simulator is told apart
# from a changed dedisperser.
#
# Integer samples (1..16 bits) sum exactly in float, so only the float32
# cases ("*-32bit", "freqtab32*") and partly the --zerodm ones see a change in
# the order of the additions: keep float32 rows for every path (kernel,
# scrunch, pad, IFs, killfile).
#
# The hashes were recorded from main (f8b2d10) before the engine refactor:
# any difference is a change in the bytes dd_direct writes (series, .tim
# header, .dat/.inf, file names, lengths). They depend on the build: recorded
# with gcc 12.2 -O3 -march=native on x86-64 (FMA, AVX-512); compare on one
# machine and compiler.
#
# The pins are of the sums: every case passes --no-baseline (the .tim
# default subtracts SIGPROC dedisperse's block medians since H33); the
# "baseline-*" cases pin that default on its own.
#
# Re-record ONLY when an output change is intended, and say why in the commit:
#   DDTK_GOLDEN_RECORD=1 bats test/golden.bats
# replaces each case's line in test/golden.sha256 (remove the file first to
# drop lines of cases that no longer exist).

load common

GOLDEN=$BATS_TEST_DIRNAME/golden.sha256
DMS=0,30,60,100.5,150

# The sums, as the pins were recorded (see above); baseline_case runs the default.
dd_direct() {
    command dd_direct "$@" --no-baseline
}

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    export USER=ddtk-golden LC_ALL=C    # the .inf says "Data analyzed by $USER"
    mkdir out
}

# ---- golden hashes -----------------------------------------------------------

# listing_of DIR: "sha256  ./name" for every file under DIR, sorted by name
listing_of() {
    (cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# golden_record CASE SUM: write or replace the line of CASE in golden.sha256
golden_record() {
    local case=$1 sum=$2
    (
        flock 9 2>/dev/null || true
        {
            grep '^#' "$GOLDEN" ||
                printf '# %s\n' "SHA-256 of dd_direct outputs per case: see test/golden.bats." \
                    "Re-record (intended output changes only): DDTK_GOLDEN_RECORD=1 bats test/golden.bats"
            { grep -v '^#' "$GOLDEN" | awk -v c="$case" '$1 != c'; echo "$case $sum"; } | sort
        } > "$GOLDEN.tmp.$$"
        cat "$GOLDEN.tmp.$$" > "$GOLDEN"
        rm -f "$GOLDEN.tmp.$$"
    ) 9>>"$GOLDEN"
}

# check_golden CASE LISTING: the hash of LISTING is CASE's golden hash
check_golden() {
    local case=$1 listing=$2 sum expected
    [ -n "$listing" ] || { echo "$case: nothing to hash"; return 1; }
    sum=$(printf '%s\n' "$listing" | sha256sum | cut -d' ' -f1)
    if [ "${DDTK_GOLDEN_RECORD:-0}" = 1 ]; then
        golden_record "$case" "$sum"
        return 0
    fi
    expected=$(awk -v c="$case" '$1 == c { print $2 }' "$GOLDEN" 2>/dev/null)
    [ -n "$expected" ] || { echo "$case: no line in $GOLDEN (record: DDTK_GOLDEN_RECORD=1)"; return 1; }
    [ "$sum" = "$expected" ] && return 0
    echo "$case: sha256 $sum, golden $expected; files:"
    printf '%s\n' "$listing"
    return 1
}

# golden CASE: everything dd_direct wrote under out/
golden() {
    check_golden "$1" "$(listing_of out)"
}

# ---- inputs ------------------------------------------------------------------

# 64 channels of 2 MHz from 1500 MHz down, 4000 samples of 256 us, two pulses.
small() {
    fbsim -q -o "$1.fil" --nchans "${3:-64}" --nbits "$2" --tsamp 0.000256 --nsamples 4000 \
        --fch1 1500 --foff -2 --seed 11 --pulse 0.4,60,0.002,40 --pulse 0.7,150,0.004,25 "${@:4}"
}

# make_input NAME: NAME.fil in the test directory (once)
make_input() {
    local name=$1
    [ -f "$name.fil" ] && return 0
    case $name in
        *-flip) make_input "${name%-flip}" && fbflip "${name%-flip}.fil" "$name.fil" ;;
        b1 | b2 | b4 | b8 | b16 | b32) small "$name" "${name#b}" ;;
        s8 | s16) small "$name" "${name#s}" 64 --signed ;;
        p8 | p2 | p32) small "$name" "${name#p}" 64 --nifs 2 ;;    # two IFs, summed by default
        c19b1) small "$name" 1 19 ;;       # spectra that start inside a byte
        c37b2) small "$name" 2 37 ;;
        c37b4) small "$name" 4 37 ;;
        ft32)                               # float32 described by a frequency table
            fbsim -q -o ft32.fil --nchans 64 --nbits 32 --tsamp 0.000256 --nsamples 4000 \
                --fch1 1400 --foff -2 --freq-table --seed 12 --pulse 0.5,40,0.002,30 ;;
        k256 | k32)                         # 256 channels, for killfiles (8-bit, float32)
            fbsim -q -o "$name.fil" --nchans 256 --nbits "$([ "$name" = k32 ] && echo 32 || echo 8)" \
                --tsamp 0.000256 --nsamples 4000 --fch1 1500 --foff -1 --seed 7 \
                --pulse 0.6,60,0.002,50 ;;
        w8 | w32)                           # 64 us over 64 MHz: diagonal DM 24, for scrunching
            fbsim -q -o "$name.fil" --nchans 64 --nbits "${name#w}" --tsamp 0.000064 \
                --nsamples 8000 --fch1 1500 --foff -1 --seed 5 \
                --pulse 0.15,300,0.001,30 --pulse 0.3,800,0.002,30 ;;
        r8)                                 # RFI: 5 blocks of 2048 spectra and a partial one
            fbsim -q -o r8.fil --nchans 128 --nbits 8 --tsamp 0.000256 --nsamples 11719 \
                --fch1 1500 --foff -1 --seed 5 --pulsar 0.2137,60,0.04,0.6 \
                --pulse 1.3,120,0.002,20 --rfi chans:0.1:5 --rfi impulses:1:50 \
                --rfi dropouts:0.5:0.01 ;;
        long)                               # 40000 samples: three default (16384) gulps
            fbsim -q -o long.fil --nchans 256 --nbits 8 --tsamp 0.000064 --nsamples 40000 \
                --fch1 1500 --foff -1 --seed 3 --pulse 1.5,100,0.001,30 ;;
        *) echo "make_input: unknown input $name"; return 1 ;;
    esac
}

# make_plan: plan.tsv, ddplan's PRESTO-style ranges for w8 over DM 0..1000
make_plan() {
    make_input w8
    ddplan w8.fil --dm-min 0 --dm-max 1000 --mode ranges --write-plan plan.tsv -q
}

ALL_INPUTS="b1 b2 b4 b8 b16 b32 b1-flip b2-flip b4-flip b8-flip b16-flip b32-flip s8 s16
            p8 p2 p32 c19b1 c37b2 c37b4 c37b2-flip ft32 ft32-flip k256 k32 w8 w32 long r8"

# dd_case CASE INPUT ARGS...: dd_direct ../INPUT.fil ARGS in out/, then golden CASE
dd_case() {
    local case=$1 input=$2
    shift 2
    make_input "$input"
    (cd out && dd_direct "../$input.fil" --backend cpu -q "$@")
    golden "$case"
}

# ---- the file itself and the inputs --------------------------------------------

@test "golden: golden.sha256 is well formed (one line per case)" {
    [ "${DDTK_GOLDEN_RECORD:-0}" = 1 ] && skip "recording"
    [ -f "$GOLDEN" ]
    [ -z "$(grep -v '^#' "$GOLDEN" | grep -Ev '^[a-z0-9][a-z0-9.-]* [0-9a-f]{64}$')" ]
    [ -z "$(grep -v '^#' "$GOLDEN" | cut -d' ' -f1 | sort | uniq -d)" ]
}

@test "golden: the simulated inputs and the ddplan plan are unchanged" {
    bad=0
    for i in $ALL_INPUTS; do
        make_input "$i"
        check_golden "input.$i" "$(sha256sum "$i.fil")" || bad=1
    done
    make_plan
    check_golden input.plan "$(sha256sum plan.tsv)" || bad=1
    [ "$bad" -eq 0 ]
}

# ---- every input format, both band orders ------------------------------------

@test "golden: nbits 1" { dd_case nbits1 b1 --dm $DMS --prefix o; }
@test "golden: nbits 2" { dd_case nbits2 b2 --dm $DMS --prefix o; }
@test "golden: nbits 4" { dd_case nbits4 b4 --dm $DMS --prefix o; }
@test "golden: nbits 8" { dd_case nbits8 b8 --dm $DMS --prefix o; }
@test "golden: nbits 16" { dd_case nbits16 b16 --dm $DMS --prefix o; }
@test "golden: nbits 32" { dd_case nbits32 b32 --dm $DMS --prefix o; }
@test "golden: nbits 1, positive foff" { dd_case nbits1-flip b1-flip --dm $DMS --prefix o; }
@test "golden: nbits 2, positive foff" { dd_case nbits2-flip b2-flip --dm $DMS --prefix o; }
@test "golden: nbits 4, positive foff" { dd_case nbits4-flip b4-flip --dm $DMS --prefix o; }
@test "golden: nbits 8, positive foff" { dd_case nbits8-flip b8-flip --dm $DMS --prefix o; }
@test "golden: nbits 16, positive foff" { dd_case nbits16-flip b16-flip --dm $DMS --prefix o; }
@test "golden: nbits 32, positive foff" { dd_case nbits32-flip b32-flip --dm $DMS --prefix o; }
@test "golden: signed 8-bit" { dd_case signed8 s8 --dm $DMS --prefix o; }
@test "golden: signed 16-bit" { dd_case signed16 s16 --dm $DMS --prefix o; }
@test "golden: nifs 2, 8-bit, default pol sum" { dd_case nifs2-sum-8bit p8 --dm $DMS --prefix o; }
@test "golden: nifs 2, 2-bit, default pol sum" { dd_case nifs2-sum-2bit p2 --dm $DMS --prefix o; }
@test "golden: nifs 2, float32, default pol sum" { dd_case nifs2-sum-32bit p32 --dm $DMS --prefix o; }
@test "golden: nifs 2, --pol 1" { dd_case nifs2-pol1 p8 --dm $DMS --prefix o --pol 1; }
@test "golden: 19 channels of 1 bit" { dd_case chans19-1bit c19b1 --dm $DMS --prefix o; }
@test "golden: 37 channels of 2 bits" { dd_case chans37-2bit c37b2 --dm $DMS --prefix o; }
@test "golden: 37 channels of 2 bits, positive foff" { dd_case chans37-2bit-flip c37b2-flip --dm $DMS --prefix o; }
@test "golden: 37 channels of 4 bits, --gulp 64" { dd_case chans37-4bit-gulp64 c37b4 --dm $DMS --prefix o --gulp 64; }
@test "golden: float32 with a frequency table" { dd_case freqtab32 ft32 --dm 0,20,40,80 --prefix o; }
@test "golden: float32 with a frequency table, positive foff" { dd_case freqtab32-flip ft32-flip --dm 0,20,40,80 --prefix o; }

# ---- dedispersion options ------------------------------------------------------

@test "golden: killfile (ranges)" {
    echo "0:9,40,100:127" > kill.txt
    dd_case killfile k256 --dm 0,25,60,90 --prefix o --killfile ../kill.txt
}

@test "golden: killfile (ranges) with --zerodm" {
    echo "0:9,40,100:127" > kill.txt
    dd_case killfile-zerodm k256 --dm 0,25,60,90 --prefix o --killfile ../kill.txt --zerodm
}

@test "golden: killfile (ranges), float32" {
    echo "0:9,40,100:127" > kill.txt
    dd_case killfile-32bit k32 --dm 0,25,60,90 --prefix o --killfile ../kill.txt
}

@test "golden: --zerodm, 8-bit" { dd_case zerodm-8bit b8 --dm $DMS --prefix o --zerodm; }
@test "golden: --zerodm, float32" { dd_case zerodm-32bit b32 --dm $DMS --prefix o --zerodm; }
@test "golden: --pad" { dd_case pad b8 --dm $DMS --prefix o --pad; }
@test "golden: --pad, float32" { dd_case pad-32bit b32 --dm $DMS --prefix o --pad; }
@test "golden: --pad --gulp 64" { dd_case pad-gulp64 b8 --dm $DMS --prefix o --pad --gulp 64; }
@test "golden: --rounding floor" { dd_case rounding-floor b8 --dm $DMS --prefix o --rounding floor; }
@test "golden: --kdm 4149.377593360996" { dd_case kdm b8 --dm $DMS --prefix o --kdm 4149.377593360996; }
@test "golden: --ref-freq 1510" { dd_case ref-freq b8 --dm $DMS --prefix o --ref-freq 1510; }

# ---- DM lists ----------------------------------------------------------------------

@test "golden: --dm-min/--dm-max/--dm-step" { dd_case dm-step b8 --dm-min 0 --dm-max 150 --dm-step 7.5 --prefix o; }
@test "golden: tolerance-spaced DMs (defaults)" { dd_case dm-tol b8 --dm-min 0 --dm-max 200 --prefix o; }
@test "golden: tolerance-spaced DMs (--tol 1.1 --pulse-width 100)" {
    dd_case dm-tol-custom b8 --dm-min 10 --dm-max 200 --tol 1.1 --pulse-width 100 --prefix o
}
@test "golden: --dm-list" {
    printf '%s\n' 150 0 12.25 60 > dms.txt
    dd_case dm-list b8 --dm-list ../dms.txt --prefix o
}

# ---- time scrunching -------------------------------------------------------------

@test "golden: --scrunch auto, DM 0..1000" { dd_case scrunch-auto w8 --dm-min 0 --dm-max 1000 --dm-step 25 --scrunch auto --prefix o; }
@test "golden: --scrunch auto --gulp 1000" {
    dd_case scrunch-auto-gulp1000 w8 --dm-min 0 --dm-max 1000 --dm-step 25 --scrunch auto --prefix o --gulp 1000
}
@test "golden: --scrunch auto, float32" { dd_case scrunch-auto-32bit w32 --dm-min 0 --dm-max 1000 --dm-step 25 --scrunch auto --prefix o; }
@test "golden: --scrunch auto --pad, float32" {
    dd_case scrunch-auto-pad-32bit w32 --dm-min 0 --dm-max 1000 --dm-step 25 --scrunch auto --prefix o --pad
}
@test "golden: --scrunch auto --pad" { dd_case scrunch-auto-pad w8 --dm-min 0 --dm-max 1000 --dm-step 25 --scrunch auto --prefix o --pad; }
@test "golden: --scrunch auto, .dat + .inf" {
    dd_case scrunch-auto-dat w8 --dm-min 0 --dm-max 1000 --dm-step 50 --scrunch auto --prefix o --format dat
}
@test "golden: --plan from ddplan --mode ranges" { make_plan; dd_case plan-ranges w8 --plan ../plan.tsv --prefix o; }
@test "golden: --plan from ddplan --mode ranges, --scrunch none" {
    make_plan
    dd_case plan-ranges-scrunch-none w8 --plan ../plan.tsv --scrunch none --prefix o
}
@test "golden: --plan from ddplan --mode ranges, float32, --gulp 1000" {
    make_plan
    dd_case plan-ranges-32bit-gulp1000 w32 --plan ../plan.tsv --prefix o --gulp 1000
}
@test "golden: --plan, stdin, --gulp 1000" {
    make_plan
    (cd out && cat ../w8.fil | dd_direct - --plan ../plan.tsv --prefix o --gulp 1000 --backend cpu -q)
    golden plan-ranges-stdin-gulp1000
}

# ---- input streams and gulps -------------------------------------------------------

@test "golden: stdin through a pipe, several DMs" {
    make_input b8
    (cd out && cat ../b8.fil | dd_direct - --dm $DMS --prefix o --backend cpu -q)
    golden stdin-pipe
}
@test "golden: stdin with no file named, default prefix" {
    make_input b8
    (cd out && dd_direct --dm 0,60 --backend cpu -q < ../b8.fil)
    golden stdin-default-prefix
}
@test "golden: stdin, single DM to stdout, --gulp 64" {
    make_input b1
    (cd out && dd_direct - --dm 60 --gulp 64 --backend cpu -q < ../b1.fil > stdout.tim)
    golden stdin-stdout-1bit-gulp64
}
@test "golden: --gulp 64" { dd_case gulp64 b8 --dm $DMS --prefix o --gulp 64; }
@test "golden: --gulp 100" { dd_case gulp100 b8 --dm $DMS --prefix o --gulp 100; }
@test "golden: --gulp 1000" { dd_case gulp1000 b8 --dm $DMS --prefix o --gulp 1000; }
@test "golden: --gulp 64, 2-bit" { dd_case gulp64-2bit b2 --dm $DMS --prefix o --gulp 64; }
@test "golden: 40000 samples, default gulps" { dd_case long-default-gulp long --dm 0,50,100,150 --prefix o; }
@test "golden: 40000 samples, --gulp 1000 --pad" { dd_case long-gulp1000-pad long --dm 0,50,100,150 --prefix o --gulp 1000 --pad; }

# ---- RFI excision (the cleaned samples, whatever the reads and threads) ---------------

@test "golden: --rfi auto, .dat + .inf" { dd_case rfi-auto r8 --dm 0,60,120 --prefix o --format dat --rfi auto; }
@test "golden: --rfi auto --gulp 1000 --threads 3" {
    dd_case rfi-auto-gulp1000-threads3 r8 --dm 0,60,120 --prefix o --format dat --rfi auto \
        --gulp 1000 --threads 3
}
@test "golden: --rfi auto, stdin, --gulp 3000" {
    make_input r8
    (cd out && dd_direct - --dm 0,60,120 --prefix o --format dat --rfi auto --gulp 3000 \
        --backend cpu -q < ../r8.fil)
    golden rfi-auto-stdin-gulp3000
}

# ---- outputs -------------------------------------------------------------------------

@test "golden: single DM to stdout" {
    make_input b8
    (cd out && dd_direct ../b8.fil --dm 60 --backend cpu -q > stdout.tim)
    golden single-stdout
}
@test "golden: single DM, -o" { dd_case single-o b16 --dm 100.5 -o one.tim; }
@test "golden: several DMs, default prefix" { dd_case default-prefix b8 --dm $DMS; }
@test "golden: .dat + .inf, several DMs" { dd_case dat b8 --dm $DMS --prefix o --format dat; }
@test "golden: .dat + .inf, --even --pad, source header" {
    fbsim -q -o src.fil --nchans 64 --nbits 8 --tsamp 0.000256 --nsamples 4001 --fch1 1500 --foff -2 \
        --seed 9 --source B1234+56 --src-raj 123456.7 --src-dej -561234.5 --telescope-id 4 \
        --machine-id 10 --tstart 59123.456789 --pulse 0.4,60,0.002,40
    check_golden input.src "$(sha256sum src.fil)"
    dd_case dat-even-pad src --dm 0,60 --prefix o --format dat --even --pad
}
@test "golden: .dat + .inf, single DM, -o" { dd_case dat-single-o b8 --dm 60 --format dat -o one.dat; }
@test "golden: .dat + .inf, single DM, no -o" {
    make_input b8
    (cd out && dd_direct ../b8.fil --dm 60 --format dat --backend cpu -q > stdout.txt)
    golden dat-single-default
}
# ---- the .tim default: SIGPROC dedisperse's baseline ------------------------------------

# baseline_case CASE INPUT ARGS...: dd_direct as users run it, block medians removed
baseline_case() {
    local case=$1 input=$2
    shift 2
    make_input "$input"
    (cd out && command dd_direct "../$input.fil" --backend cpu -q "$@")
    golden "$case"
}
@test "golden: baseline, several DMs (blocks of 2048 samples, a short last one)" {
    baseline_case baseline-dms b8 --dm $DMS --prefix o
}
@test "golden: baseline, float32 to stdout" {
    make_input b32
    (cd out && command dd_direct ../b32.fil --dm 60 --backend cpu -q > stdout.tim)
    golden baseline-stdout-32bit
}
@test "golden: baseline, --scrunch auto --pad" { baseline_case baseline-scrunch-pad w8 --dm-min 0 --dm-max 1000 --scrunch auto --prefix o --pad; }
@test "golden: baseline, 40000 samples of 256 channels" { baseline_case baseline-long long --dm 0,100 --prefix o; }

@test "golden: nifs 2 with a killfile, single DM, -o" {
    echo "3,5:7,63" > kill.txt
    dd_case nifs2-killfile-single-o p8 --dm 33.3 -o k.tim --killfile ../kill.txt
}
