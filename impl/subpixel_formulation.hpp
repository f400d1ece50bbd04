// The forward pass of a deconvolution without dilation as one stride-1 convolution that computes
// every output phase as channels ("subpixel", phase_interleave.hpp), bias included, interleaved
// back by the output commit; and its weight gradient as that convolution's. oneDNN 2.6's
// convolution kernels run strided problems several times faster than its deconvolution (2
// threads, the convolution alone: fcn8s.upscore8 f32 3.0 ms against 17 ms, bf16 on AMX 0.45 ms
// against 25 ms; dcgan.l2 bf16 1.7 against 10 ms).
#pragma once

#include "descriptors.hpp"

namespace libdeconv {

// No dilation (every phase would need its own convolution otherwise), and strides not far wider
// than the kernel: the convolution's weights hold stride * ceil(kernel / stride) taps per dim,
// zeros past the kernel's, and past 4 times the kernel's taps it computes mostly zeros (a stride
// of 2^22 over a kernel of 1 took 1.4 s and 400 MB just to build).
// Stride 1 in every dim, dilation allowed, is a single phase: see is_single_phase.
bool is_subpixel_candidate(const Problem &problem);

// Stride 1 (or an input of 1) and no adj in every dim, and no more padding than the taps reach
// (pad <= dilate * (kernel - 1), and with dilation a reach of at most 64): the convolution, dilated as the deconvolution, computes exactly
// the output's positions. Its output then needs no interleave: it is written (and, with a sum,
// added into) in the caller's buffer where the layouts agree, bias included, with no pass of
// the commit over it (deconv_impl_name ends in "(one phase)").
bool is_single_phase(const Problem &problem);

// Makes `pass` of such a problem the convolution computing in `type`: forward with its output
// channels-last or (`channels_first`) its input and output channels-first; backward weights
// channels-last. Throws Error(unsupported) for backward data, or when oneDNN has no real kernel.
void make_subpixel(Plan &plan, const Problem &problem, Pass pass, dnnl::memory::data_type type, bool channels_first);

} // namespace libdeconv
