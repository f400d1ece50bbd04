// oneDNN descriptors and primitives for one pass of a problem: memory descriptors with
// format_tag::any, the weights' IO swap, implementation selection, and the reorders between the
// caller's plain buffers and the layouts the chosen implementation wants.
#pragma once

#include "problem.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <string>

namespace libdeconv {

// Moves a tensor between the caller's plain layout and the primitive's layout.
struct Conversion {
    dnnl::memory::desc user, internal;
    bool identical = false; // the primitive uses the caller's layout: no copy at all
    dnnl::reorder to_internal, to_user, add_to_user; // as applicable to the tensor's role
    size_t scratchpad_bytes = 0;                      // the largest of its reorders' needs
};

// One pass, ready to run. Roles are named for the forward problem: `data` is src (forward,
// backward weights) or diff_src (backward data), `output` is dst or diff_dst, `weights` and `bias`
// are the weights/bias or their gradients.
struct Plan {
    Pass pass = Pass::forward;
    dnnl::primitive primitive;
    std::string impl;
    size_t scratchpad_bytes = 0; // for the primitive and every conversion (they run in turn)
    bool zero_scratchpad = false; // the kernel reads parts of its scratchpad it never wrote
    Conversion data, weights, output;
    dnnl::memory::desc bias; // f32 `a`, or zero-size without bias
    Conversion bias_out;     // backward weights: the f32 diff_bias into the caller's dtype
};

Plan make_plan(const Problem &problem, Pass pass);

// The caller's plain descriptors (shared with the weight packing).
dnnl::memory::desc user_data_desc(const Problem &problem, bool output);
dnnl::memory::desc user_weights_desc(const Problem &problem, dnnl::memory::data_type type);

} // namespace libdeconv
