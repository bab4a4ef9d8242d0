# gpu_common.bash - what the GPU suites (gpu*.bats) share: a simulated input and
# the CPU/GPU comparison of every series a run writes.

# same_output TOL FILE DM-OPTIONS...: CPU and GPU runs, every series compared
# (TOL "exact" for bit-identical).
same_output() {
    local tol=$1 file=$2; shift 2
    mkdir -p cpu gpu
    dd_direct "$file" --backend cpu --prefix cpu/x -q "$@"
    dd_direct "$file" --backend gpu --prefix gpu/x -q "$@"
    local n=0 f
    for f in cpu/*.tim; do
        if [ "$tol" = exact ]; then
            timcmp "$f" "gpu/${f#cpu/}"
        else
            timcmp --tol "$tol" "$f" "gpu/${f#cpu/}"
        fi
        n=$((n + 1))
    done
    [ "$n" -gt 0 ]
    [ "$(ls gpu | wc -l)" -eq "$n" ]
}

sim() {
    fbsim -q --force -o in.fil --tsamp 64e-6 --nsamples 5000 --pulse 0.1,60,0.002,20 "$@"
}
