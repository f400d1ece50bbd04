// The forward pass of a depthwise deconvolution (groups = in_channels = out_channels) as our own
// kernel on channels-last data (depthwise_forward.hpp), bias and add requests inside it; the
// caller's channels-first data converted by the plan's roles as for any primitive.
#pragma once

#include "descriptors.hpp"

#include <oneapi/dnnl/dnnl.h>

namespace libdeconv {

bool is_depthwise_candidate(const Problem &problem);

// Makes the forward pass of such a problem the kernel, computing in the problem's own type.
// Throws Error(unsupported) for other passes, compute types or problems.
void make_depthwise(Plan &plan, const Problem &problem, Pass pass, DataType compute);

// Runs the plan's kernel on the tensors in `args` (DNNL_ARG_SRC, _WEIGHTS, _BIAS, _DST), adding
// into the output with `accumulate`.
void run_depthwise(const Plan &plan, const dnnl_exec_arg_t *args, int count, bool accumulate);

} // namespace libdeconv
