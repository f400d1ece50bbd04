#pragma once
// oneDNN 2.6 kernels that crash, or take minutes, for some geometries. Implementation selection
// refuses a problem whose pass would reach one (bf16 problems then compute that pass in f32);
// each case has a regression test in tests/cpp/test_onednn_workarounds.cpp.

#include "problem.hpp"

#include <string>

namespace libdeconv {

// True when `impl` (oneDNN's implementation name) must not run `pass` of this problem.
bool known_defective(const std::string &impl, Pass pass, const Spec &spec);

// oneDNN 2.6's bf16 deconvolution reads past the top of the stack (a hash loop over an array of
// some wrong length, by the look of the code) while describing a problem with a dilation, in 2
// or 3 spatial dims, whose output in 16-channel blocks takes 2^31 bytes or more: found by the
// fuzzer, a crash in about half the runs. 1D and undilated problems go past 10 GB unharmed.
// Such problems compute in f32. The margin to 2^30 bytes is ours.
bool bf16_dilated_output_too_large(const Problem &problem);

// The innermost spatial extent past which brgconv kernels are refused (known_defective). Their
// descriptor alone costs that memory and time, before the refusal: 1.5 GB and 2 s for a 1D f32
// problem 2^20 wide. Channels-last data, which makes oneDNN 2.6 pick brgconv, is then not asked
// for at all (make_plan).
bool too_wide_for_brgconv(const Spec &spec);

// oneDNN 2.6's brgemm AMX convolution, which its bf16 deconvolution backward data wraps for most
// problems, reads the 8 bytes past the end of a heap array (the AMX ukernel's skipped-bd-mask
// buffer, at index M) whenever it generates its kernel. glibc malloc always has mapped memory
// there; AddressSanitizer's allocator may end the block at an unmapped page (a CI crash). Avoiding
// the kernel costs 10-20x in bf16 backward data (measured on dcgan layers), so only sanitizer
// builds do (or builds with -DDECONV_AVOID_OVERREADING_KERNEL, for other guard-page allocators):
// that kernel takes channels-last data only, and the iterator offers no other (the wrapped
// convolution is fixed inside), so they ask for the 16-channel blocked layout instead; the
// subpixel formulation, which would run that kernel itself, is not offered there.
#if defined(__SANITIZE_ADDRESS__) && !defined(DECONV_AVOID_OVERREADING_KERNEL) // gcc
#define DECONV_AVOID_OVERREADING_KERNEL
#endif
#if defined(__has_feature) && !defined(DECONV_AVOID_OVERREADING_KERNEL) // clang
#if __has_feature(address_sanitizer)
#define DECONV_AVOID_OVERREADING_KERNEL
#endif
#endif
#ifdef DECONV_AVOID_OVERREADING_KERNEL
inline constexpr bool kAvoidOverreadingKernel = true;
#else
inline constexpr bool kAvoidOverreadingKernel = false;
#endif
inline constexpr const char *kOverreadingKernel = "brgconv:avx512_core_amx_bf16";

} // namespace libdeconv
