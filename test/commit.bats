#!/usr/bin/env bats
# Committing output sets: a run that fails leaves none of its outputs (a disk
# that fills, a rename or fsync that fails), concurrent runs on one prefix never
# replace each other's files without --force, and temporaries of dead runs are
# cleaned by the next run on the prefix.

load common
# ls orders names by the locale (dots count in C, not in en_US): compare in C.
export LC_ALL=C

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    fbsim -o good.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 1 --fch1 1400 --foff -1
    mkdir out
}

teardown() {
    if mountpoint -q "$BATS_TEST_TMPDIR/mnt" 2>/dev/null; then umount "$BATS_TEST_TMPDIR/mnt"; fi
}

nothing_in() {   # nothing_in DIR: not even a hidden temporary
    [ -z "$(ls -A "$1")" ] || { echo "$(ls -A "$1" | wc -l) files left:"; ls -A "$1" | head; return 1; }
}

# env $FAULT DDTK_FAULT=SPEC cmd...: cmd with one call failing (test/fault/fault.c)
FAULT="LD_PRELOAD=$TBIN/fault.so"

small_tmpfs() {   # small_tmpfs SIZE: mount a tmpfs of SIZE at mnt, or skip
    [ "$(id -u)" -eq 0 ] || skip "mounting a tmpfs needs root"
    mkdir mnt
    mount -t tmpfs -o "size=$1" tmpfs mnt 2>/dev/null || skip "cannot mount a tmpfs here"
}

@test "a rename failing in the middle of the commit removes what the run had already committed" {
    run_err x_DM30.00.tim env $FAULT DDTK_FAULT=rename:3:ENOSPC dd_direct good.fil --dm 10,20,30,40 --prefix out/x
    [ "$status" -eq 3 ]
    nothing_in out
    run_err x_DM20.00.dat env $FAULT DDTK_FAULT=rename:3:EIO dd_direct good.fil --dm 10,20,30 --prefix out/x --format dat
    [ "$status" -eq 3 ]
    nothing_in out
}

@test "an fsync failing before the commit leaves nothing" {
    # the series are synced on several threads: the third fsync is any one's
    run_err "write error: Input/output error" env $FAULT DDTK_FAULT=fsync:3:EIO \
        dd_direct good.fil --dm 10,20,30,40 --prefix out/x
    [ "$status" -eq 3 ]
    [[ "$output" =~ out/x_DM(10|20|30|40)\.00\.tim ]]
    nothing_in out
    # both .dat files are synced before the first .inf is written
    run_err inf env $FAULT DDTK_FAULT=fsync:3:EDQUOT dd_direct good.fil --dm 10,20 --prefix out/x --format dat
    [ "$status" -eq 3 ]
    nothing_in out
}

@test "--force: a failed commit leaves no complete set, and none of its own files" {
    fbsim -o other.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 1 --fch1 1400 --foff -1 --seed 9
    mkdir old
    dd_direct good.fil --dm 10,20,30,40 --prefix old/x -q
    cp old/* out/
    run_err x_DM30.00.tim env $FAULT DDTK_FAULT=rename:3:EIO dd_direct other.fil --dm 10,20,30,40 --prefix out/x --force
    [ "$status" -eq 3 ]
    [ ! -e out/x_DM10.00.tim ] && [ ! -e out/x_DM20.00.tim ]
    cmp out/x_DM30.00.tim old/x_DM30.00.tim
    cmp out/x_DM40.00.tim old/x_DM40.00.tim
    [ "$(ls -A out | wc -l)" -eq 2 ]
}

@test "a disk that fills while 512 outputs are flushed at the end leaves none of them (tmpfs)" {
    small_tmpfs 4m
    run_err mnt/x dd_direct good.fil --dm-min 0 --dm-max 51.1 --dm-step 0.1 --prefix mnt/x -q
    [ "$status" -eq 3 ]
    [[ "$output" == *"No space left"* ]]
    nothing_in mnt
    run_err mnt/x dd_direct good.fil --dm-min 0 --dm-max 25.5 --dm-step 0.1 --prefix mnt/x -q --format dat
    [ "$status" -eq 3 ]
    nothing_in mnt
}

@test "a disk that fills while the series are written leaves nothing (tmpfs)" {
    small_tmpfs 1m
    fbsim -o long.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 20 --fch1 1400 --foff -1
    run_err mnt/x dd_direct long.fil --dm 10,20,30,40,50,60,70,80 --prefix mnt/x -q
    [ "$status" -eq 3 ]
    [[ "$output" == *"No space left"* ]]
    nothing_in mnt
}

@test "four concurrent runs on one prefix: one succeeds, the others exit 2 naming a file; the outputs are whole and from one run" {
    for i in 1 2 3 4; do
        fbsim -o in$i.fil --nchans 64 --nbits 8 --tsamp 0.000256 --tobs 1 --fch1 1400 --foff -1 --seed $i
        mkdir ref$i
        dd_direct in$i.fil --dm-min 0 --dm-max 20 --dm-step 0.5 --prefix ref$i/x -q
    done
    for round in 1 2 3; do
        rm -rf out && mkdir out
        pids=()
        for i in 1 2 3 4; do
            dd_direct in$i.fil --dm-min 0 --dm-max 20 --dm-step 0.5 --prefix out/x -q 2> err$i &
            pids+=($!)
        done
        winners=() status=()
        for i in 1 2 3 4; do
            if wait "${pids[$((i - 1))]}"; then winners+=($i); status+=(0); else status+=($?); fi
        done
        [ "${#winners[@]}" -eq 1 ] || { echo "round $round: statuses ${status[*]}"; cat err*; return 1; }
        w=${winners[0]}
        for i in 1 2 3 4; do
            [ "$i" = "$w" ] && continue
            [ "${status[$((i - 1))]}" -eq 2 ] || { echo "run $i: ${status[$((i - 1))]}"; cat err$i; return 1; }
            [ "$(wc -l < err$i)" -eq 1 ] && grep -q "out/x_DM.*exists" err$i || { cat err$i; return 1; }
        done
        [ "$(ls -A out | wc -l)" -eq "$(ls ref$w | wc -l)" ] || { ls -A out; return 1; }
        for f in ref$w/*; do cmp "$f" "out/${f#ref$w/}"; done
    done
}

# A run blocked reading a FIFO holds its temporaries until it is killed
# (fd 3 is bats's own).
start_blocked_run() {   # start_blocked_run DMS: pid in $blocked, writer on fd 8
    mkfifo fifo
    dd_direct fifo --dm "$1" --prefix out/x -q &
    blocked=$!
    exec 8<> fifo               # read-write: never blocks, even if dd_direct died
    head -c $(( $(fbinfo -k header_size good.fil) + 1000 )) good.fil >&8
    for _ in $(seq 100); do
        [ "$(ls -A out | wc -l)" -ge 1 ] && return 0
        sleep 0.05
    done
    echo "no temporaries appeared"; return 1
}

@test "temporaries of a run killed with SIGKILL are removed by the next run on the prefix, with a note" {
    start_blocked_run 10,20
    kill -KILL "$blocked"
    wait "$blocked" || true
    exec 8>&-
    [ "$(ls -A out | grep -c '^\.x_DM')" -eq 2 ]
    run dd_direct good.fil --dm 10,20 --prefix out/x -q
    [ "$status" -eq 0 ]
    [[ "$output" == *"removed 2 stale temporaries"* ]]
    [ "$(ls -A out)" = "$(printf 'x_DM10.00.tim\nx_DM20.00.tim')" ]
}

@test "the temporaries of a live run on the same prefix are left alone" {
    start_blocked_run 10,20
    run dd_direct good.fil --dm 30 --prefix out/x -q
    [ "$status" -eq 0 ]
    [[ "$output" != *stale* ]]
    [ "$(ls -A out | grep -c '^\.x_DM')" -eq 2 ]
    kill -TERM "$blocked"
    wait "$blocked" || true
    exec 8>&-
    [ "$(ls -A out)" = x_DM30.00.tim ]
}

@test "stale temporaries are recognised by name: other prefixes and other files are kept" {
    touch out/.x_DM10.00.inf.AbC123 out/.x_DM10.00.dat.XyZ789.inf out/.x_DM5.00.tim.Q1w2E3
    touch out/.y_DM10.00.tim.AbC123 out/.x_DM10.00.tim.toolong1 out/x_notes.txt
    run dd_direct good.fil --dm 10 --prefix out/x -q
    [ "$status" -eq 0 ]
    [[ "$output" == *"removed 3 stale temporaries"* ]]
    [ "$(ls -A out | tr '\n' ' ')" = ".x_DM10.00.tim.toolong1 .y_DM10.00.tim.AbC123 x_DM10.00.tim x_notes.txt " ]
}

@test "-o - writes the series to stdout, not to a file named -" {
    dd_direct good.fil --dm 10 > a.tim
    dd_direct good.fil --dm 10 -o - > b.tim
    cmp a.tim b.tim
    [ ! -e ./- ]
    run_err "-o -" dd_direct good.fil --dm 10 -o - --format dat
    [ "$status" -eq 2 ]
    [ ! -e ./- ]
}

@test "outputs get mode 0666 less the umask, .tim, .dat and .inf alike" {
    (umask 027 && dd_direct good.fil --dm 10,20 --prefix out/a -q)
    (umask 027 && dd_direct good.fil --dm 10 --format dat --prefix out/d -q)
    (umask 002 && dd_direct good.fil --dm 10 -o out/w.tim -q)
    [ "$(stat -c %a out/a_DM10.00.tim out/a_DM20.00.tim | sort -u)" = 640 ]
    [ "$(stat -c %a out/d_DM10.00.dat out/d_DM10.00.inf | sort -u)" = 640 ]
    [ "$(stat -c %a out/w.tim)" = 664 ]
}

@test "fdas --format presto: a failing disk leaves neither file of the pair, one message naming one path; a rerun works (issue 32.5)" {
    dd_direct -q good.fil --dm 0 -o out/s.tim
    mkdir ref && cp out/s.tim ref/ && fdas -q --format presto --zmax 50 ref/s.tim
    for fault in fsync:2:ENOSPC rename:2:EIO fsync:1:EDQUOT rename:1:ENOSPC; do
        run_err s_ACCEL_50 env $FAULT DDTK_FAULT=$fault fdas -q --format presto --zmax 50 out/s.tim
        [ "$status" -eq 3 ]
        # the path once: "out/s_ACCEL_50...: write error: ...", not prefixed twice
        [[ "$output" != *": out/s_ACCEL_50"*": out/s_ACCEL_50"* ]]
        [ "$(ls -A out)" = "s.tim" ] || { ls -A out; false; }
    done
    fdas -q --format presto --zmax 50 out/s.tim
    # (the .cand's doubles may differ in their last bit from run to run: the
    # search's threads; the whole pair is what this test is about)
    cmp out/s_ACCEL_50 ref/s_ACCEL_50
    [ "$(stat -c %s out/s_ACCEL_50.cand)" -eq "$(stat -c %s ref/s_ACCEL_50.cand)" ]
}

@test "tscrunch of a .dat: a failing disk leaves neither the .dat nor its .inf" {
    dd_direct -q good.fil --dm 0 --prefix in --format dat
    tscrunch -q -n 4 in_DM0.00.dat -o ref.dat
    for fault in rename:1:EIO rename:2:ENOSPC fsync:2:EIO; do
        run_err out/t env $FAULT DDTK_FAULT=$fault tscrunch -q -n 4 in_DM0.00.dat -o out/t.dat
        [ "$status" -eq 3 ]
        nothing_in out
    done
    tscrunch -q -n 4 in_DM0.00.dat -o out/t.dat
    cmp out/t.dat ref.dat && diff <(sed 1d out/t.inf) <(sed 1d ref.inf)
}
