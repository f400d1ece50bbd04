#!/usr/bin/env bash
# Installs what is missing, then builds and runs every test through CTest in four build folders
# (BUILD_DIR overrides the first, default build/ in the checkout; the others are named after it):
#   $BUILD_DIR        Release: every suite
#   $BUILD_DIR-asan   AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer), gcc:
#                     the C, C++, fault-injection and stress suites and the example, without
#                     the full-size C++ families
#   $BUILD_DIR-tsan   ThreadSanitizer, gcc: the concurrency tests (CTest label tsan)
#   $BUILD_DIR-fuzz   clang + libFuzzer: fuzz_bounded, a minute of fuzzing from tests/fuzz/corpus,
#                     and fuzz_slow_seeds (tests/fuzz/slow_seeds, each run once)
# Each folder is built and tested even when an earlier one failed; a summary of every folder
# closes the output, and the exit status is non-zero when anything failed.
# DECONV_TEST_BUILDS picks folders (default "release asan tsan fuzz").
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$top/scripts/install-deps.sh" || exit 1
build=${BUILD_DIR:-$top/build}
jobs=$(nproc)
builds=${DECONV_TEST_BUILDS:-release asan tsan fuzz}

failed=0
summary=()

# suite NAME DIR: configure with ${configure[@]}, build ${targets[@]} (all when empty), then
# ctest with ${select[@]}; the environment for the tests comes from the caller.
suite() {
    local name=$1 dir=$2 start=$SECONDS
    echo "==== $name: $dir"
    if ! cmake -S "$top" -B "$dir" -DCMAKE_BUILD_TYPE=Release "${configure[@]}"; then
        summary+=("$name: configure FAILED"); failed=1; return
    fi
    local target_args=()
    [ ${#targets[@]} -gt 0 ] && target_args=(--target "${targets[@]}")
    if ! cmake --build "$dir" -j"$jobs" "${target_args[@]}"; then
        summary+=("$name: build FAILED"); failed=1; return
    fi
    local log="$dir/ctest-output.log"
    # Two tests at a time on two cores: the GoogleTest, fault and fuzz entries wait passively
    # (OMP_WAIT_POLICY=PASSIVE, see tests/cpp/CMakeLists.txt), and the test that times threads
    # is RUN_SERIAL.
    ctest --test-dir "$dir" --output-on-failure --no-tests=error -j"$jobs" "${select[@]}" 2>&1 | tee "$log"
    local rc=${PIPESTATUS[0]}
    local line
    line=$(grep -E 'tests passed|No tests were found' "$log" | tail -1)
    summary+=("$name: ${line:-ctest exit status $rc} ($((SECONDS - start)) s)")
    [ "$rc" -eq 0 ] || failed=1
}

for b in $builds; do
    case $b in
    release)
        configure=(); targets=(); select=()
        suite release "$build"
        ;;
    asan)
        # Leak checking is on (LSan, at exit of every test process). abort_on_error: a report
        # ends the test with a signal, which CTest counts as a failure whatever the test's own
        # exit code; -fno-sanitize-recover=all does the same for UBSan.
        # The full-size families (the standard workloads' routes, the 256-filter cross-framework
        # grid) run the code paths the small cases run, at sizes where ASan's slowdown cost ~5 of
        # the CI's minutes: they run in the release folder only. So do the streamed-output cases
        # with the route left to timing (90 s under ASan): their entries pinned to each of the
        # two formulations timing can pick for them (cpp_streamed_formulation_*) run here.
        configure=(-DDECONV_SANITIZE=ON -DDECONV_BUILD_BENCH=OFF -DDECONV_BUILD_BINDINGS=OFF); targets=()
        select=(-E '^(Standard/Workloads|Grid/CrossFrameworkGrid|Cases/StreamedOutputs)[.]')
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
            suite asan "$build-asan"
        ;;
    tsan)
        # Only what the tsan entries need; their options (OMP_NUM_THREADS=1, TSAN_OPTIONS) are
        # in cmake/sanitizers.cmake with the reason.
        configure=(-DDECONV_SANITIZE_THREAD=ON -DDECONV_BUILD_BENCH=OFF -DDECONV_BUILD_BINDINGS=OFF); targets=(deconv_tsan_tests)
        select=(-L tsan)
        suite tsan "$build-tsan"
        ;;
    fuzz)
        configure=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DDECONV_FUZZ=ON -DDECONV_BUILD_BENCH=OFF -DDECONV_BUILD_BINDINGS=OFF)
        targets=(deconv_fuzz); select=(-L fuzz)
        suite fuzz "$build-fuzz"
        ;;
    *)
        echo "unknown build '$b' in DECONV_TEST_BUILDS (release asan tsan fuzz)" >&2
        failed=1
        ;;
    esac
done

echo "==== summary"
printf '%s\n' "${summary[@]}"
exit $failed
