# common.bash - shared setup for the bats suites: tool paths, a scratch
# directory per test, and helpers that check numbers.
BIN=${DDTK_BIN:-$BATS_TEST_DIRNAME/../bin}
TBIN=${DDTK_TEST_BIN:-$BATS_TEST_DIRNAME/../build/test}
PATH="$BIN:$TBIN:$PATH"
# No user's wisdom file in the tests (a test that wants one names it).
export DDTK_WISDOM=/nonexistent/ddtk-test-wisdom
# A python3 with NumPy (scripts/find-python: Debian's, or a GPU machine's own),
# for the tests that compute with it.
PYTHON=$("$BATS_TEST_DIRNAME/../scripts/find-python" numpy 2>/dev/null)

setup() {
    cd "$BATS_TEST_TMPDIR" || return 1
}

# approx A B TOL: |A - B| <= TOL
approx() {
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'
}

# one_line: the command failed with exactly one line on stderr naming $1
# usage: run_err FILE_OR_WORD cmd...  (sets status, output holds stderr)
run_err() {
    local name=$1; shift
    run bash -c '"$@" 2>&1 >/dev/null' _ "$@"
    [ "$status" -ne 0 ] || { echo "expected failure, got 0"; return 1; }
    [ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ] || { echo "not one line: $output"; return 1; }
    [[ "$output" == *"$name"* ]] || { echo "message does not name $name: $output"; return 1; }
}

# Whether a GPU is usable here (dd_direct --list-gpus finds one), and the
# GPU tests' skip when none is, with the reason the tools give.
gpu_usable() {
    dd_direct --list-gpus 2>/dev/null | grep -q "compute capability"
}

need_gpu() {
    gpu_usable || skip "no GPU: $(dd_direct --list-gpus 2>&1 | head -1)"
}
