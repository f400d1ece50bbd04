#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds the consumer against it twice: with
# pkg-config and with CMake's find_package(deconv). Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 here=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libdeconv.so' | head -n 1)")

PKG_CONFIG_PATH="$libdir/pkgconfig" cc "$here/consumer/consumer.c" -o "$prefix/consumer-pc" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs deconv) -Wl,-rpath,"$libdir"
"$prefix/consumer-pc"

cmake -S "$here/consumer" -B "$prefix/consumer-build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$prefix/consumer-build" >/dev/null
"$prefix/consumer-build/consumer"

# Only deconv_* symbols are exported.
others=$(nm -D --defined-only "$libdir/libdeconv.so" | awk '{print $3}' | grep -v '^deconv_' || true)
[ -z "$others" ] || { echo "exported symbols other than deconv_*: $others" >&2; exit 1; }
echo "install: pkg-config and find_package consumers work; only deconv_* exported"
