#!/usr/bin/env bats
# signals.bats - SIGTERM or SIGINT at any moment of a run (before the first
# write, while the outputs are written, inside the commit) leaves no temporary
# and no partial output: of 20 runs of each tool killed at times spread over a
# whole run, each left all of its files, byte for byte a whole run's, or none.
# The fault shim's DDTK_SLOW makes every fchmod (just after a temporary is
# made), fsync and rename wait, so that the kills land inside those steps.

load common
export LC_ALL=C

SLOW=2000           # microseconds (test/fault/fault.c)
# a run that hangs after its signal fails the test instead of the suite
BATS_TEST_TIMEOUT=300
KILLS=20

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
    fbsim -q -o in.fil --nchans 32 --nbits 8 --tsamp 0.000256 --tobs 0.5 --fch1 1400 --foff -2 \
        --pulse 0.2,20,0.002,30
    mkdir ref out
}

slowed() {
    exec env LD_PRELOAD="$TBIN/fault.so" DDTK_SLOW=$SLOW "$@"
}

# kill_runs CMD...: CMD, with OUT standing for an output name, run whole once
# (OUT = ref/r), then KILLS times (OUT = out/rI) each sent TERM or INT after a
# delay from 0 to 1.2 times the whole run's time.
kill_runs() {
    local t0 t1 ms i pid
    t0=$(date +%s%N)
    (slowed "${@//OUT/ref/r}") > /dev/null 2>&1
    t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 + 1 ))
    [ "$(ls ref | wc -l)" -ge 1 ]
    for (( i = 0; i < KILLS; i++ )); do
        # with job control on, a background job keeps SIGINT (bash ignores
        # it in background jobs otherwise)
        set -m
        slowed "${@//OUT/out/r$i}" > /dev/null 2>&1 &
        pid=$!
        set +m
        sleep "$(awk -v i=$i -v n=$KILLS -v ms=$ms 'BEGIN { printf "%.4f", i * 1.2 * ms / n / 1000 }')"
        kill -s "$( (( i % 2 )) && echo INT || echo TERM)" "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
        # checked at once: the next run would sweep a dead run's temporaries
        no_temporaries "run $i"
    done
    echo "whole run: $ms ms"
}

no_temporaries() {
    local hidden
    hidden=$(ls -A out | grep '^\.' || true)
    [ -z "$hidden" ] || { echo "$1 left temporaries: $hidden"; return 1; }
}

# Equal files; .inf files name their own data file.
same() {
    if [[ "$1" == *.inf ]]; then
        diff <(grep -v 'Data file name' "$1") <(grep -v 'Data file name' "$2")
    else
        cmp "$1" "$2"
    fi
}

# Each killed run left all of ref's files (same bytes) or none; no temporary.
only_whole_outputs() {
    local i f n=$(ls ref | wc -l) complete=0
    for (( i = 0; i < KILLS; i++ )); do
        local got=$(ls out | grep -c "^r${i}[_.]" || true)
        if [ "$got" -ne 0 ]; then
            [ "$got" -eq "$n" ] || { echo "run $i left $got of $n files"; ls out | grep "^r${i}[_.]"; return 1; }
            for f in ref/*; do
                same "$f" "out/r$i${f#ref/r}" || return 1
            done
            complete=$((complete + 1))
        fi
    done
    echo "$complete of $KILLS killed runs had finished"
}

@test "dd_direct killed 20 times: whole series sets or nothing (.tim and .dat/.inf)" {
    kill_runs dd_direct in.fil --dm-min 0 --dm-max 30 --dm-step 2 --prefix OUT -q --backend cpu
    only_whole_outputs
    rm -rf ref out && mkdir ref out
    kill_runs dd_direct in.fil --dm-min 0 --dm-max 30 --dm-step 4 --prefix OUT -q --format dat --backend cpu
    only_whole_outputs
}

@test "dd_subband killed 20 times: whole series sets or nothing" {
    kill_runs dd_subband in.fil --dm-min 0 --dm-max 30 --dm-step 2 --prefix OUT -q --backend cpu
    only_whole_outputs
}

@test "dd_tree killed 20 times: whole series sets or nothing" {
    kill_runs dd_tree in.fil --dm-max 30 --prefix OUT -q --backend cpu
    only_whole_outputs
}

@test "tscrunch of a .dat and fdas --format presto killed 20 times: whole pairs or nothing" {
    dd_direct -q in.fil --dm 20 --prefix s --format dat
    kill_runs tscrunch -q -n 4 s_DM20.00.dat -o OUT.dat
    only_whole_outputs
    dd_direct -q in.fil --dm 20 -o s.tim
    rm -rf ref out && mkdir ref out
    kill_runs fdas -q --format presto --zmax 20 s.tim -o OUT_ACCEL_20 --backend cpu --threads 1
    only_whole_outputs
}
