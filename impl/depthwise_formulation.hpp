// The passes of a depthwise deconvolution (groups = in_channels = out_channels) as our own
// kernels: forward and weight gradient on channels-last data (depthwise_forward.hpp, bias and add
// requests inside it; depthwise_backward_weights.hpp), the caller's channels-first data
// converted by the plan's roles as for any primitive; or on channels-first planes as they are
// (depthwise_plane_forward.hpp, depthwise_backward_data.hpp, depthwise_plane_weights.hpp), the
// data gradient of channels-last data on channels-first copies.
#pragma once

#include "descriptors.hpp"

#include <oneapi/dnnl/dnnl.h>

namespace libdeconv {

// AVX-512 or AVX2 (with FMA) and kernels of modest size.
bool is_depthwise_candidate(const Problem &problem, Pass pass);

// Makes a pass of such a problem a kernel, computing in the problem's own type, on channels-last
// copies of the caller's data or (`channels_first`; the data gradient only so) on channels-first
// planes: the caller's as they are, or copies of channels-last data. Throws Error(unsupported)
// for other compute types or problems.
void make_depthwise(Plan &plan, const Problem &problem, Pass pass, DataType compute, bool channels_first);

// Runs the plan's kernel on the tensors in `args` (forward: DNNL_ARG_SRC, _WEIGHTS, _BIAS, _DST;
// data gradient: _DIFF_DST, _WEIGHTS, _DIFF_SRC, _SCRATCHPAD; weight gradient: _SRC, _DIFF_DST,
// _DIFF_WEIGHTS, _DIFF_BIAS, _SCRATCHPAD), adding into the outputs of the roles `adding` marks.
void run_depthwise(const Plan &plan, const dnnl_exec_arg_t *args, int count, const std::array<bool, kMaxRoles> &adding);

} // namespace libdeconv
