#!/usr/bin/env bash
# Installs the build into a temporary prefix, compiles the JUnit tests and the README example
# against the INSTALLED deconv.jar and runs them with only that jar on the class path and no
# deconv.library.path: the loader must find libdeconv_java.so next to the jar, and the glue its
# libdeconv.so.0 in the prefix.
# Usage: install_java.sh BUILD_DIR TESTS_SOURCE_DIR JAVA JAVAC JUNIT_CONSOLE_JAR JUNIT_COMPILE_CLASSPATH
set -euo pipefail
build=$1 here=$2 java=$3 javac=$4 junit=$5 junit_cp=$6
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
jar=$(find "$prefix" -name deconv.jar | head -n 1)
[ -n "$jar" ] || { echo "deconv.jar is not installed" >&2; exit 1; }
libdir=$(dirname "$jar")
[ -f "$libdir/libdeconv_java.so" ] || { echo "libdeconv_java.so is not next to $jar" >&2; exit 1; }
resolved=$(ldd "$libdir/libdeconv_java.so" | awk '$1 == "libdeconv.so.0" {print $3}')
case "$resolved" in
    "$prefix"/*) ;;
    *) echo "libdeconv_java.so resolves libdeconv.so.0 to '$resolved', not inside $prefix" >&2; exit 1 ;;
esac
mkdir "$prefix/empty" "$prefix/tests" "$prefix/example"

"$javac" --release 11 -encoding UTF-8 -cp "$jar:$junit_cp" -d "$prefix/tests" "$here"/src/deconv/*.java \
    "$here"/src/deconv/tests/*.java
"$java" -Djava.library.path="$prefix/empty" -jar "$junit" --disable-banner --fail-if-no-tests --details=summary \
    --class-path "$jar:$prefix/tests" --scan-class-path "$prefix/tests" --include-package deconv.tests

"$javac" -cp "$jar" -d "$prefix/example" "$here/example/Example.java"
"$java" -Djava.library.path="$prefix/empty" -cp "$jar:$prefix/example" Example
echo "install: the Java tests and example pass against $jar"
