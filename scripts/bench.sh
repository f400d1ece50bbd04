#!/usr/bin/env bash
# Installs what is missing, builds the library and deconv-bench, and runs the benchmark on its
# built-in workloads. Arguments go to deconv-bench (try --help).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$top/scripts/install-deps.sh"
build=${BUILD_DIR:-$top/build}
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$build" -j"$(nproc)" --target deconv-bench >&2
exec "$build/bench/deconv-bench" "$@"
