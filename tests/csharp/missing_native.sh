#!/usr/bin/env bash
# Deconv.dll without a loadable libdeconv_csharp.so must raise the loader's DeconvException
# (MissingNative.exe checks every entry point). Usage: missing_native.sh DECONV_DLL MISSING_EXE
set -euo pipefail
dll=$1 exe=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$dll" "$exe" "$dir/"
unset LD_LIBRARY_PATH MONO_PATH # nothing but the folder and the system may provide the glue
msg="Deconv: cannot load the native library libdeconv_csharp.so"

# Nowhere to be found.
mono "$dir/$(basename "$exe")" "$msg" "Tried" "$dir/libdeconv_csharp.so (not found)" "LD_LIBRARY_PATH=unset"

# Present next to the assembly but not a shared library: the message says why dlopen refused it.
head -c 4096 /dev/zero >"$dir/libdeconv_csharp.so"
mono "$dir/$(basename "$exe")" "$msg" "$dir/libdeconv_csharp.so (exists but does not load: " "invalid ELF header"
echo "missing native library: clear DeconvException in both cases"
