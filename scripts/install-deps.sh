#!/usr/bin/env bash
# Installs the Debian 12 packages the build and tests need, when any is missing.
# As root it uses apt-get directly, otherwise sudo.
set -euo pipefail
# clang and libclang-rt-14-dev: the libFuzzer build of scripts/test.sh (clang's ASan runtime and
# libFuzzer are in libclang-rt-14-dev, which clang does not pull in without recommends).
# ocl-icd-opencl-dev: Debian's dnnl-config.cmake calls find_package(OpenCL REQUIRED) (its build
# has the OpenCL GPU runtime), but libdnnl-dev only recommends it.
packages=(cmake make g++ pkg-config libdnnl-dev ocl-icd-opencl-dev libcmocka-dev libgtest-dev valgrind clang libclang-rt-14-dev
          swig default-jdk-headless junit5 mono-devel mono-mcs nunit-console libnunit-cil-dev)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
