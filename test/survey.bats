#!/usr/bin/env bats
# ddsurvey: a survey of six small files through GNU parallel equals serial runs
# byte for byte, resumes after a kill without redoing finished inputs, reports
# a corrupt input without stopping the others, writes Slurm job-array scripts,
# and runs the same survey on a one-node Slurm cluster started here.

load common

# (not -q: the summary counts DMs from the tools' own summary lines)
DD=(dd_direct --backend cpu --dm-min 0 --dm-max 40 --dm-step 10)

# six 64-channel, 4000-sample observations (0.256 s each) and the serial runs'
# outputs, made once for the file and copied into each test's in/ and ref/
setup_file() {
    local i d=$BATS_FILE_TMPDIR
    mkdir -p "$d/in" "$d/ref"
    for i in 1 2 3 4 5 6; do
        fbsim -q --nchans 64 --nbits 8 --nsamples 4000 --seed "$i" \
            --pulse "0.1,$((i * 5)),0.001,20" -o "$d/in/f$i.fil"
        "${DD[@]}" -q "$d/in/f$i.fil" --prefix "$d/ref/f$i"
    done
}

make_survey() {
    cp -r "$BATS_FILE_TMPDIR/in" "$BATS_FILE_TMPDIR/ref" .
}

# same_as_ref DIR [SUBDIR]: DIR holds exactly the 30 serial outputs, same bytes
# (one sha256sum -c for all: cheaper than 30 cmp)
same_as_ref() {
    local sums
    sums=$(cd ref && sha256sum -- *.tim) || return 1
    [ "$(grep -c . <<< "$sums")" -eq 30 ] || return 1
    [ -z "${2:-}" ] || sums=$(sed -E 's#  (f[0-9]+)_#  \1/\1_#' <<< "$sums")
    (cd "$1" && sha256sum --quiet -c) <<< "$sums" || return 1
    [ "$(find "$1" -name '*.tim' | wc -l)" -eq 30 ]
}

need_parallel() {
    command -v parallel >/dev/null || skip "GNU parallel not installed (apt-get install parallel)"
}

@test "ddsurvey --help, --version; bad usage is one line and exit 2" {
    run ddsurvey --help
    [ "$status" -eq 0 ] && [[ "$output" == *"Usage: ddsurvey"* ]]
    run ddsurvey --version
    [ "$output" = "ddsurvey (ddtk) 0.1.0" ]
    run_err "'--' before COMMAND" ddsurvey --out o dd_direct --dm 1 -- a.fil
    [ "$status" -eq 2 ]
    run_err "'--' between COMMAND and FILE" ddsurvey -- dd_direct --dm 1 a.fil
    [ "$status" -eq 2 ]
    run_err "no input FILE" ddsurvey -- dd_direct --dm 1 --
    [ "$status" -eq 2 ]
    run_err "COMMAND" ddsurvey --jobs 2 --
    [ "$status" -eq 2 ]
    run_err "--jobs" ddsurvey --jobs 0 -- dd_direct -- a.fil
    [ "$status" -eq 2 ]
    run_err "--slurm" ddsurvey --dry-run -- dd_direct -- a.fil
    [ "$status" -eq 2 ]
    run_err "no-such-tool" ddsurvey -- no-such-tool -- a.fil
    [ "$status" -eq 2 ]
    run_err "share the name x" ddsurvey -- dd_direct -- a/x.fil b/x.fil
    [ "$status" -eq 2 ]
    run_err "--prefix" ddsurvey -- dd_direct --prefix p -- a.fil
    [ "$status" -eq 2 ]
}

@test "a survey through GNU parallel equals serial runs byte for byte; --subdir too" {
    need_parallel
    make_survey
    run ddsurvey --out out --jobs 2 -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    same_as_ref out
    [[ "$output" == *"6 files: 6 done (6 in this run), 0 failed, 0 not run; 30 DMs; observation 1.536 s (1.536 s in this run)"* ]]
    [ "$(ls out/logs)" = "$(printf 'f%d.log\n' 1 2 3 4 5 6)" ]
    # the journal: one finished job per input
    [ "$(awk -F'\t' 'NR > 1 && $7 == 0' out/journal/joblog | wc -l)" -eq 6 ]
    # another command in the same directory is refused
    run_err "another survey" ddsurvey --out out -- "${DD[@]}" --zerodm -- in/*.fil
    [ "$status" -eq 2 ]
    # one job per GPU: the first two inputs start on slots 1 and 2
    run ddsurvey --out sub --subdir --gpus 3,5 -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ]
    same_as_ref sub subdir
    grep -q -- '--gpu 3$' sub/logs/f1.log && grep -q -- '--gpu 5$' sub/logs/f2.log
    [ "$(grep -h -o -- '--gpu [0-9]*$' sub/logs/*.log | sort -u | tr '\n' ' ')" = "--gpu 3 --gpu 5 " ]
}

@test "a survey killed midway resumes: finished inputs are not run again" {
    need_parallel
    make_survey
    # the same command both times; on the first run it stops at f3 until killed
    cat > slowdd <<'EOF'
#!/bin/bash
if [ -n "${BLOCK_ON:-}" ] && [[ " $* " == *"/$BLOCK_ON "* ]]; then
    touch "$BLOCK_MARK"
    exec sleep 60
fi
echo "threads=$OMP_NUM_THREADS"
exec "$@"
EOF
    chmod +x slowdd
    # a session of its own: parallel puts each job in its own process group
    BLOCK_ON=f3.fil BLOCK_MARK=$PWD/blocked setsid bash -c \
        'echo $$ > sid; exec ddsurvey --out out --jobs 1 -- ./slowdd "$@" -- in/*.fil' \
        _ "${DD[@]}" > /dev/null 2>&1 &
    local i
    for i in $(seq 400); do [ -e blocked ] && break; sleep 0.05; done
    [ -e blocked ]
    # f1 and f2 are in the journal before f3 starts (one job at a time)
    [ "$(awk -F'\t' 'NR > 1 && $7 == 0' out/journal/joblog | wc -l)" -eq 2 ]
    pkill -KILL -s "$(cat sid)"
    for i in $(seq 100); do pgrep -s "$(cat sid)" > /dev/null || break; sleep 0.05; done
    ! pgrep -s "$(cat sid)" > /dev/null
    [ ! -e out/f3_DM0.00.tim ] && [ ! -e out/f6_DM0.00.tim ]
    before=$(stat -c '%i %y' out/f1_DM*.tim out/f2_DM*.tim)

    run ddsurvey --out out --jobs 2 -- ./slowdd "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    [[ "$output" == *"6 files: 6 done (4 in this run), 0 failed"* ]]
    same_as_ref out
    [ "$(stat -c '%i %y' out/f1_DM*.tim out/f2_DM*.tim)" = "$before" ]
    [ "$(grep -c '^# ddsurvey ' out/logs/f1.log)" -eq 1 ]
    [ "$(grep -c '^# ddsurvey ' out/logs/f2.log)" -eq 1 ]
    # f3: the killed attempt, then the redo (with --force)
    [ "$(grep -c '^# ddsurvey ' out/logs/f3.log)" -eq 2 ]
    [ "$(grep -c -- '--force$' out/logs/f3.log)" -eq 1 ]
    [ "$(grep -c '^# ddsurvey ' out/logs/f4.log)" -eq 1 ]
    # CPU threads split between the jobs: all cores for one job, half for two
    cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
    grep -q "^threads=$cores$" out/logs/f1.log
    half=$((cores / 2)); [ "$half" -ge 1 ] || half=1
    grep -q "^threads=$half$" out/logs/f4.log
}

@test "a corrupt input is reported with its error line and does not stop the others" {
    need_parallel
    make_survey
    head -c 100 in/f1.fil > in/bad.fil
    run ddsurvey --out out --jobs 2 -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 1 ]
    same_as_ref out
    [[ "$output" == *"7 files: 6 done (6 in this run), 1 failed, 0 not run; 30 DMs"* ]]
    [[ "$output" == *"ddsurvey: failed: $PWD/in/bad.fil (exit 1, log $PWD/out/logs/bad.log): dd_direct: $PWD/in/bad.fil: truncated header"* ]]
    # run once, then retried once (--retries 1)
    [ "$(grep -c '^# ddsurvey ' out/logs/bad.log)" -eq 2 ]
    # a rerun tries only the failed input again, --retries 0: once
    run ddsurvey --out out --retries 0 -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 1 ]
    [[ "$output" == *"6 done (0 in this run), 1 failed"* ]]
    [ "$(grep -c '^# ddsurvey ' out/logs/bad.log)" -eq 3 ]
    [ "$(grep -c '^# ddsurvey ' out/logs/f1.log)" -eq 1 ]
}

@test "--slurm --dry-run writes a job-array script: --array, %N, --gres; a rerun asks for what is left" {
    need_parallel
    make_survey
    # an sbatch that must not be called
    mkdir stub && printf '#!/bin/sh\ntouch "%s/called"\n' "$PWD" > stub/sbatch && chmod +x stub/sbatch
    PATH=$PWD/stub:$PATH run ddsurvey --out out --slurm --dry-run --gpus 0,1 --group 2 --jobs 2 \
        --sbatch --partition=gpu -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ] && [ ! -e called ]
    script=out/journal/ddsurvey.sbatch
    [ "${lines[0]}" = "$PWD/$script:" ]
    [ "$(grep -c '^#SBATCH --array=0-2%2$' "$script")" -eq 1 ]
    [ "$(grep -c '^#SBATCH --gres=gpu:2$' "$script")" -eq 1 ]
    [ "$(grep -c '^#SBATCH --partition=gpu$' "$script")" -eq 1 ]
    [ "$(grep -c '"$SLURM_ARRAY_TASK_ID" 1 0,1$' "$script")" -eq 1 ]
    [[ "$output" == *"--run-task"* ]]
    # task 1 (f3, f4) run by hand, as Slurm would run it
    SLURM_ARRAY_TASK_ID=1 bash "$script"
    cmp ref/f3_DM40.00.tim out/f3_DM40.00.tim && cmp ref/f4_DM0.00.tim out/f4_DM0.00.tim
    [ ! -e out/f5_DM0.00.tim ]
    [ "$(grep -c -- '--gpu 1$' out/logs/f4.log)" -eq 1 ]
    run ddsurvey --out out --slurm --dry-run -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 2 ] && [[ "$output" == *"its survey differs"* ]]   # another --group
    PATH=$PWD/stub:$PATH run ddsurvey --out out --slurm --dry-run --group 2 -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ] && [ ! -e called ]
    [ "$(grep -c '^#SBATCH --array=0,2$' "$script")" -eq 1 ]
    [ "$(grep -c 'gres' "$script")" -eq 0 ]
}

@test "with GPUs: --gpus all on the GPU backend equals serial runs, every GPU used" {
    need_parallel
    need_gpu
    make_survey
    local n
    n=$(dd_direct --list-gpus | grep -c "compute capability")
    # 8-bit input: the GPU's sums equal the CPU's bit for bit
    run ddsurvey --out out --gpus all -- "${DD[@]/#cpu/gpu}" -- in/*.fil
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    same_as_ref out
    [ "$(grep -h -o -- '--gpu [0-9]*$' out/logs/*.log | sort -u | wc -l)" -eq "$((n < 6 ? n : 6))" ]
}

# ---- a one-node Slurm cluster: munged, slurmctld and slurmd, all in $SLURM_DIR ----

start_slurm() {
    [ "$(id -u)" = 0 ] || skip "Slurm test: needs root (slurmd runs jobs as their user)"
    local c
    for c in munged slurmctld slurmd sbatch parallel; do
        command -v "$c" >/dev/null || skip "Slurm test: $c not installed (apt-get install slurm-wlm munge parallel)"
    done
    # short paths: munge's and slurmstepd's sockets must fit in sun_path
    SLURM_DIR=$(mktemp -d /tmp/ddtk-slurm.XXXXXX)
    chmod 755 "$SLURM_DIR"
    local d=$SLURM_DIR host port
    host=$(hostname -s)
    port=$((20000 + RANDOM % 20000))
    mkdir -p "$d/munge" "$d/state" "$d/spool"
    chmod 700 "$d/munge"
    dd if=/dev/urandom of="$d/munge/key" bs=1024 count=1 status=none
    chmod 400 "$d/munge/key"
    munged -S "$d/munge.sock" --key-file="$d/munge/key" --log-file="$d/munge/log" \
        --pid-file="$d/munge.pid" --seed-file="$d/munge/seed" ||
        skip "Slurm test: munged did not start: $(tail -n 1 "$d/munge/log" 2>/dev/null)"
    cat > "$d/slurm.conf" <<EOF
ClusterName=ddtk
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge.sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
# schedule at once, and let sbatch --wait poll every 2 s (not 2, 8, 32 s ...)
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MinJobAge=4
ReturnToService=2
NodeName=$host CPUs=2 RealMemory=500 State=UNKNOWN
PartitionName=ddtk Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF=$d/slurm.conf
    slurmctld -i > "$d/slurmctld.out" 2>&1 || skip "Slurm test: slurmctld did not start: $(tail -n 1 "$d/slurmctld.log")"
    slurmd > "$d/slurmd.out" 2>&1 || skip "Slurm test: slurmd did not start: $(tail -n 1 "$d/slurmd.log")"
    local i
    for i in $(seq 100); do
        [ "$(sinfo -h -o %T 2>/dev/null)" = idle ] && return 0
        sleep 0.2
    done
    skip "Slurm test: the node did not come up within 20 s: $(tail -n 1 "$d/slurmctld.log")"
}

teardown() {
    [ -n "${SLURM_DIR:-}" ] || return 0
    # a failed test may leave a task held: release it, cancel what is left
    touch "$BATS_TEST_TMPDIR/release"
    scancel -u "$(id -un)" 2>/dev/null || true
    local p pids=()
    for p in slurmd slurmctld munge; do
        [ -s "$SLURM_DIR/$p.pid" ] && pids+=("$(cat "$SLURM_DIR/$p.pid")")
    done
    [ "${#pids[@]}" -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
    for p in $(seq 100); do
        kill -0 "${pids[@]}" 2>/dev/null || break
        sleep 0.1
    done
    rm -rf "$SLURM_DIR"
}

@test "a one-node Slurm cluster runs the survey as a job array: same outputs as serial runs, resubmits what failed" {
    start_slurm
    make_survey
    # the same command every time; on the first array f1 waits for ./release, then fails
    cat > holddd <<'EOF'
#!/bin/bash
if [ -n "${HOLD_ON:-}" ] && [[ " $* " == *"/$HOLD_ON "* ]]; then
    touch "$HOLD_DIR/held"
    while [ ! -e "$HOLD_DIR/release" ]; do sleep 0.1; done
    echo "holddd: released to fail" >&2
    exit 1
fi
exec "$@"
EOF
    chmod +x holddd
    # sbatch passes this environment to the array's tasks
    HOLD_ON=f1.fil HOLD_DIR=$PWD run ddsurvey --out "$PWD/out" --slurm --group 2 --jobs 2 \
        --retries 0 -- ./holddd "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ] && [[ "$output" == *"submitted job "* ]] || { echo "$output"; return 1; }
    local i id
    id=$(cat out/journal/jobid)
    for i in $(seq 200); do [ -e held ] && break; sleep 0.1; done
    [ -e held ]
    # while the array runs, a rerun submits nothing
    run ddsurvey --out "$PWD/out" --slurm --group 2 -- ./holddd "${DD[@]}" -- in/*.fil
    [ "$status" -eq 1 ] && [[ "$output" == *"job $id is still queued or running"* ]]
    touch release
    for i in $(seq 200); do [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] && break; sleep 0.1; done
    [ -z "$(squeue -h -j "$id" 2>/dev/null)" ]
    # three tasks, each with its own journal and Slurm output; f1 failed
    [ "$(ls out/journal/joblog.* | wc -l)" -eq 3 ]
    [ "$(ls out/logs/slurm-"$id"_*.out | wc -l)" -eq 3 ]
    grep -q "holddd: released to fail" out/logs/f1.log

    # the rerun resubmits task 0 alone; its journal skips f2
    run ddsurvey --out "$PWD/out" --slurm --group 2 --wait -- ./holddd "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ] || { echo "$output"; tail -n 5 "$SLURM_DIR"/*.log out/logs/*; return 1; }
    [ "$(grep -c '^#SBATCH --array=0$' out/journal/ddsurvey.sbatch)" -eq 1 ]
    [[ "$output" == *"6 files: 6 done (1 in this run), 0 failed, 0 not run; 30 DMs"* ]]
    same_as_ref out
    [ "$(grep -c '^# ddsurvey ' out/logs/f1.log)" -eq 2 ]
    [ "$(grep -c '^# ddsurvey ' out/logs/f2.log)" -eq 1 ]
}

@test "two ddsurvey runs on one fresh --out: each runs its own command on its own file, or is refused (issue 32.3)" {
    need_parallel
    make_survey
    local t
    for t in 1 2 3 4 5; do
        cp in/f1.fil "in/beam 1.fil" && cp in/f2.fil "in/beam 2.fil"
        ddsurvey --out race$t -- dd_direct --backend cpu --dm 10 -- "in/beam 1.fil" > a.log 2>&1 & a=$!
        ddsurvey --out race$t -- dd_direct --backend cpu --dm 20 -- "in/beam 2.fil" > b.log 2>&1 & b=$!
        sa=0 sb=0
        wait $a || sa=$?
        wait $b || sb=$?
        # one wins the directory; the other is told so and leaves it alone
        [ $((sa == 0)) -ne $((sb == 0)) ] || { cat a.log b.log; return 1; }
        if [ "$sa" -eq 0 ]; then win=1 dm=10 lose=b.log; else win=2 dm=20 lose=a.log; fi
        grep -Eq "another ddsurvey is running there|holds another survey" "$lose" || { cat "$lose"; return 1; }
        [ "$(ls "race$t" | grep -v '^journal$\|^logs$')" = "beam ${win}_DM$dm.00.tim" ]
        dd_direct -q --backend cpu --dm $dm "in/beam $win.fil" -o want.tim
        cmp want.tim "race$t/beam ${win}_DM$dm.00.tim" && rm want.tim
    done
}

@test "--slurm: every value in the job script is quoted or refused (issue 32.7)" {
    need_parallel
    make_survey
    run_err "newline" ddsurvey --out $'o\ntouch INJECTED #' --slurm --dry-run -- "${DD[@]}" -- in/f1.fil
    [ "$status" -eq 2 ] && [ ! -e o ] && [ ! -e $'o\ntouch INJECTED #' ]
    run_err "--sbatch" ddsurvey --out o --slurm --dry-run --sbatch $'--time=5\ntouch INJECTED' \
        -- "${DD[@]}" -- in/f1.fil
    [ "$status" -eq 2 ]
    # spaces, quotes, '#' and '%' in --out: one #SBATCH --output argument, % doubled
    out="my survey #1 100% 'x'"
    run ddsurvey --out "$out" --slurm --dry-run -- "${DD[@]}" -- in/f1.fil
    [ "$status" -eq 0 ]
    script="$out/journal/ddsurvey.sbatch"
    line=$(grep '^#SBATCH --output=' "$script")
    [ "$line" = "#SBATCH --output=$PWD/my\\ survey\\ \\#1\\ 100%%\\ \\'x\\'/logs/slurm-%A_%a.out" ]
    [ "$(grep -c '^#SBATCH' "$script")" -eq 4 ]
    [ "$(grep -vc '^#' "$script")" -eq 1 ]
    SLURM_ARRAY_TASK_ID=0 bash "$script"
    cmp ref/f1_DM40.00.tim "$out/f1_DM40.00.tim"
    [ ! -e INJECTED ]
}

@test "a damaged journal is named with the command that starts afresh; that command works (issue 32.10)" {
    need_parallel
    make_survey
    ddsurvey --out out -- "${DD[@]}" -- in/f1.fil in/f2.fil in/f3.fil 2> /dev/null
    cp out/journal/joblog good
    for damage in truncate garbage binary; do
        case $damage in
            truncate) head -c -7 good > out/journal/joblog ;;
            garbage) printf 'Seq\tHost\nnot a journal\n' > out/journal/joblog ;;
            binary) head -c 300 /dev/urandom > out/journal/joblog ;;
        esac
        run_err "out/journal/joblog" ddsurvey --out out -- "${DD[@]}" -- in/f1.fil in/f2.fil in/f3.fil
        [ "$status" -eq 1 ]
        [[ "$output" == *"damaged journal"*"to start afresh: rm "*"joblog"* ]]
    done
    fix=$(sed -n 's/.*to start afresh: \(rm .*\)$/\1/p' <<< "$output")
    eval "$fix"
    run ddsurvey --out out -- "${DD[@]}" -- in/f1.fil in/f2.fil in/f3.fil
    [ "$status" -eq 0 ] && [[ "$output" == *"3 files: 3 done (3 in this run)"* ]]
    for f in ref/f[123]_*.tim; do cmp "$f" "out/${f#ref/}"; done
}

@test "ddsurvey: no sbatch (or parallel) on PATH is a system failure, exit 3, one line; bad usage is still exit 2" {
    make_survey
    mkdir bin1
    for t in dd_direct fbinfo bash env dirname readlink realpath mkdir mktemp cat cmp mv rmdir \
             printf awk tr grep seq sort nproc date flock sed; do
        p=$(command -v "$t") && ln -s "$p" bin1/
    done
    run_err "sbatch: not found" env PATH="$PWD/bin1" "$(command -v ddsurvey)" --out out --slurm \
        -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 3 ]
    run_err "parallel: not found" env PATH="$PWD/bin1" "$(command -v ddsurvey)" --out out2 \
        -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 3 ]
    # bad usage is exit 2 whether or not parallel is there (it was exit 3 without)
    run_err "share the name x" env PATH="$PWD/bin1" "$(command -v ddsurvey)" --out out3 \
        -- "${DD[@]}" -- a/x.fil b/x.fil
    [ "$status" -eq 2 ]
}

@test "ddsurvey: -q drops the summary line, -v says how the inputs run" {
    need_parallel
    make_survey
    run ddsurvey -q --out out --jobs 2 -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ] && [ -z "$output" ]
    same_as_ref out
    run ddsurvey -v --out out2 --jobs 2 -- "${DD[@]}" -- in/*.fil
    [ "$status" -eq 0 ]
    [[ "$output" == *"ddsurvey: 6 inputs, 2 at once, GPUs none, "*" threads each"* ]]
    [[ "$output" == *"6 files: 6 done"* ]]
}
