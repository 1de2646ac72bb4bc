#!/usr/bin/env bash
# Builds and runs the libFuzzer harnesses in Tests/Fuzz.
#
#   Tests/Fuzz/run.sh [seconds-per-target] [target ...]
#
# seconds-per-target defaults to 60; targets default to all (json oracle shape form url filters headers
# redaction response cache multipart).
# Everything goes to /tmp/switchboard-fuzz: binaries, build logs, the growing corpus of each target
# (corpus/<target>, seeded from Tests/Fuzz/corpus/<target>), crash reproducers (artifacts/<target>/)
# and fuzzer logs (<target>.log). Exits non-zero when a target fails to build or the fuzzer reports a
# crash, timeout, leak or out-of-memory.
#
# Environment: FUZZ_RUNS (stop each target after that many executions; with seconds-per-target 0, run
# until then however long it takes: the 10-million-run mark is `FUZZ_RUNS=10000000 run.sh 0`), FUZZ_TIMEOUT
# (default 5: seconds one input may take; the wall clock, so a long run that is paused now and then
# needs more),
# FUZZ_OUT (default /tmp/switchboard-fuzz: where everything goes), FUZZ_SANITIZERS (default fuzzer,address; `fuzzer` alone runs several times faster, for the long
# runs of targets that are all safe Swift), FUZZ_JOBS_NICE (default 15), FUZZ_IGNORE (comma-separated invariant names to skip,
# see support/FuzzSupport.swift), SWIFTC (default swiftc).
set -u

seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(json oracle shape form url filters headers redaction response cache multipart)

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${FUZZ_OUT:-/tmp/switchboard-fuzz}
swiftc=${SWIFTC:-swiftc}
nice_level=${FUZZ_JOBS_NICE:-15}
sanitizers=${FUZZ_SANITIZERS:-fuzzer,address}
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:symbolize=1}

mkdir -p "$out"
# Snapshot the sources: swiftc refuses to finish when an input changes during the build, and the
# tree may be edited while the fuzzers are built.
src=$out/src
rm -rf "$src"
mkdir -p "$src"
cp -R "$root/Sources/Switchboard/." "$src/"

# The library sources each harness is compiled with (all in module SwitchboardFuzz).
sources_for() {
    local json=("$src"/Core/JSON/*.swift)
    local errors=("${json[@]}" "$src/Core/NetworkError.swift" "$src/Core/HTTPHeaders.swift"
        "$src/Rules/Validation/JSONShape.swift" "$src/Transfers/Downloads/DownloadError.swift" "$src/Transport/Trust/TrustFailure.swift"
        "$here/support/APIErrorStub.swift"
        "$src"/Observing/Logging/Redaction*.swift)
    case $1 in
        json|oracle) echo "${json[@]}" ;;
        shape) echo "${errors[@]}" ;;
        form) echo "${json[@]}" "$src"/Core/Coding/ParameterEncoding*.swift "$src/Core/Coding/URLEncodedForm.swift" ;;
        headers) echo "$src/Core/HTTPHeaders.swift" "$src/Core/HTTPMethod.swift" ;;
        url) echo "${errors[@]}" "$src/Pipeline/Building/URLResolver.swift" "$src/Core/Internal/Locked.swift" ;;
        redaction) echo "${errors[@]}" ;;
        response|cache|filters) find "$src" -name '*.swift' | sort | tr '\n' ' ' ;;
        multipart) find "$src" -name '*.swift' | sort | tr '\n' ' '; echo "$root/Sources/LoopbackServer/MultipartParser.swift" ;;
        *) return 1 ;;
    esac
}

status=0
for target in "${targets[@]}"; do
    harness=$here/fuzz_$target.swift
    binary=$out/fuzz_$target
    if [ ! -f "$harness" ] || ! files=$(sources_for "$target"); then
        echo "unknown target: $target" >&2
        status=1
        continue
    fi
    echo "== $target: building"
    # shellcheck disable=SC2086
    if ! nice -n "$nice_level" "$swiftc" -sanitize="$sanitizers" -parse-as-library -O -g \
        -module-name SwitchboardFuzz -package-name switchboard -I "$root/Sources/CSwitchboardAtomics/include" \
        "$harness" "$here/support/FuzzSupport.swift" $files -o "$binary" >"$out/$target.build.log" 2>&1; then
        grep -v 'Cannot export local symbol' "$out/$target.build.log" | tail -40 >&2
        echo "== $target: BUILD FAILED (log: $out/$target.build.log)" >&2
        status=1
        continue
    fi

    corpus=$out/corpus/$target
    artifacts=$out/artifacts/$target/
    mkdir -p "$corpus" "$artifacts"
    seeds=()
    [ -d "$here/corpus/$target" ] && seeds=("$here/corpus/$target")
    dict=()
    [ -f "$here/dict/$target.dict" ] && dict=("-dict=$here/dict/$target.dict")

    # The reproducers of fixed findings must stay fixed.
    for repro in "$here/repro/$target"-*; do
        [ -f "$repro" ] || continue
        if ! "$binary" "$repro" >"$out/$target.repro.log" 2>&1; then
            echo "== $target: $(basename "$repro") fails again:" >&2
            grep -m1 -E 'ERROR: (libFuzzer|AddressSanitizer)|Fatal error|SUMMARY' "$out/$target.repro.log" >&2
            status=1
        fi
    done

    echo "== $target: fuzzing for ${seconds}s (corpus $corpus, log $out/$target.log)"
    runs=()
    [ -n "${FUZZ_RUNS:-}" ] && runs=("-runs=$FUZZ_RUNS")
    nice -n "$nice_level" "$binary" -max_total_time="$seconds" "${runs[@]}" -timeout="${FUZZ_TIMEOUT:-5}" -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts" "${dict[@]}" \
        "$corpus" "${seeds[@]}" >"$out/$target.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "== $target: FAILED (exit $rc); reproducer(s):" >&2
        ls -1 "$artifacts" >&2
        grep -m1 -E 'ERROR: (libFuzzer|AddressSanitizer)|Fatal error|SUMMARY' "$out/$target.log" >&2
        status=1
    else
        grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec|^Done' "$out/$target.log"
    fi
done
exit $status
