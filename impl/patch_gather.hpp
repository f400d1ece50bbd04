// The output of the patches formulation (gemm_formulation.hpp): a matmul gives every input
// pixel's patch, its out_channels x taps contributions to the output, and where the stride is
// smaller than the (dilated) kernel the patches overlap. Each output element is then the sum of
// the patch values that land on it (col2im), gathered rather than scattered: every element is
// written once, in the caller's type and layout, with the bias and an add request on the way,
// and threads never write the same element.
#pragma once

#include "problem.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <vector>

namespace libdeconv {

struct PatchGather {
    int64_t batch = 1, channels = 1, in_pixels = 1, out_pixels = 1, taps = 1;
    Dims3 out{1, 1, 1}; // spatial dims as 3 (depth, height, width), leading 1s for rank < 3
    bool channels_last = false; // the caller's output
    dnnl::memory::data_type user_type = dnnl::memory::data_type::f32;
    // Per dim d and output position o: the patch values landing there in that dim are at
    // offset[d][start[d][o] .. start[d][o + 1]) (elements of the patch matrix, the input
    // position's row and the tap's column together; the three dims' offsets add up).
    std::vector<int64_t> start[3], offset[3];
};

// The gather for `problem` (groups 1) from a patch matrix whose rows are the input pixels
// (batch, spatial...) and whose columns are the taps, then the output channels: a tap's channels
// are contiguous, and gathered as vectors.
PatchGather make_patch_gather(const Problem &problem);

// user (=|+=) the gathered sums + bias[channel] (f32; nullptr for none).
void gather_patches(const PatchGather &gather, const float *patches, void *user, const float *bias, bool add);

} // namespace libdeconv
