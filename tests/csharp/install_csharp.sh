#!/usr/bin/env bash
# Installs the build into a temporary prefix, then compiles and runs against the INSTALLED
# Deconv.dll (nothing from the build tree on any path): the NUnit suite, the README example,
# and the loader errors when the glue is missing or cannot find libdeconv.so.0.
# Usage: install_csharp.sh BUILD_DIR TESTS_SOURCE_DIR NUNIT_FRAMEWORK_DLL
set -euo pipefail
build=$1 here=$2 nunit=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
unset LD_LIBRARY_PATH MONO_PATH
dll=$(find "$prefix" -name Deconv.dll | head -n 1)
libdir=$(dirname "$dll")
[ -f "$libdir/libdeconv_csharp.so" ] || { echo "libdeconv_csharp.so not installed next to $dll" >&2; exit 1; }

# The suite, placed beside the installed assembly so Mono resolves Deconv.dll and its glue there.
mcs -nologo -target:library -unsafe -r:"$dll" -r:"$nunit" -out:"$libdir/DeconvTests.dll" \
    "$here"/Reference.cs "$here"/Problems.cs "$here"/ComputeTests.cs "$here"/ErrorTests.cs \
    "$here"/LifetimeTests.cs "$here"/ParamsTests.cs
(cd "$prefix" && HOME="$prefix" nunit-console -nologo -noshadow -noresult "$libdir/DeconvTests.dll")

# The README example, compiled and run as the README says (MONO_PATH names the install folder).
mkdir "$prefix/example"
mcs -nologo -r:"$dll" -out:"$prefix/example/Example.exe" "$here/example/Example.cs"
out=$(MONO_PATH="$libdir" mono "$prefix/example/Example.exe")
echo "$out"
case "$out" in "output 9x9, dst[0] = 1.5, center = 4.5, impl "*) ;; *) echo "unexpected example output" >&2; exit 1 ;; esac

# The installed glue finds libdeconv.so.0 through $ORIGIN/..; moved elsewhere it cannot, and
# the message carries dlopen's reason.
mkdir -p "$prefix/moved/deconv"
cp "$dll" "$libdir/libdeconv_csharp.so" "$prefix/moved/deconv/"
mcs -nologo -r:"$dll" -out:"$prefix/moved/deconv/MissingNative.exe" "$here/MissingNative.cs"
mono "$prefix/moved/deconv/MissingNative.exe" "exists but does not load: libdeconv.so.0"
echo "install: NUnit suite, README example and loader errors work against the installed assembly"
