// Problems whose every input pixel is the only one writing its output patch are matrix
// products: dst (batch x out_channels*taps) = src (batch x in_channels) * weights
// (in_channels x out_channels*taps) when in_size is 1 everywhere, with no pad, adj, dilation or
// groups, channels-first (the caller's buffers are then those matrices as they are). oneDNN's
// matmul runs them 4-40x faster than its deconvolution kernels (dcgan's first layer, one thread).
#pragma once

#include "descriptors.hpp"

namespace libdeconv {

bool is_matrix_product(const Problem &problem);

// Makes `pass` of such a problem a matmul computing in `type`; false (plan untouched) when oneDNN
// has only a reference matmul for it.
bool make_matrix_product(Plan &plan, const Problem &problem, Pass pass, dnnl::memory::data_type type);

} // namespace libdeconv
