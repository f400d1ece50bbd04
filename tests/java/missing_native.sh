#!/usr/bin/env bash
# Runs deconv.missing.MissingNativeTest with deconv.jar copied alone into an empty folder, the
# system property naming a missing file and an empty java.library.path.
# Usage: missing_native.sh JAVA JUNIT_CONSOLE_JAR DECONV_JAR TESTS_JAR
set -euo pipefail
java=$1 junit=$2 deconv_jar=$3 tests_jar=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/jar" "$tmp/empty"
cp "$deconv_jar" "$tmp/jar/deconv.jar"
"$java" -Ddeconv.library.path="$tmp/missing/libdeconv_java.so" -Djava.library.path="$tmp/empty" \
    -Ddeconv.test.jar.folder="$tmp/jar" \
    -jar "$junit" --disable-banner --fail-if-no-tests --details=tree \
    --class-path "$tmp/jar/deconv.jar:$tests_jar" --select-class deconv.missing.MissingNativeTest
