// The weight and bias gradients of depthwise deconvolutions on the caller's channels-first data
// as it is, our own. Per channel, over the batch: each image's input plane against its
// output-gradient plane sorted by phase (depthwise_phase_planes.hpp), where a kernel column's
// products with 16 adjacent input columns are 16 adjacent values; the bias gradient sums the
// sorted plane on the way. Nothing is converted: reading the channels-first rows into
// channels-last buffers, or channels-last copies of both tensors, cost more than the products
// (mobile.dw f32, 8 x 96 x 56^2 -> 112^2: 3.0-4.7 ms against the 1.3 of one pass over the data).
#pragma once

#include "depthwise_backward_weights.hpp" // DepthwiseBackwardWeights::Gradients
#include "depthwise_phase_planes.hpp"

#include <cstddef>

namespace libdeconv {

class DepthwisePlaneWeights {
public:
    explicit DepthwisePlaneWeights(const DepthwiseShape &shape);
    // AVX-512 or AVX2 (with FMA), and planes of modest size (PhasePlanes::fits).
    static bool supports(const DepthwiseShape &shape);

    // Bytes of the buffers and sums of a run on `threads` threads.
    size_t scratch_bytes(int threads) const;

    // src (batch, channels, in...) and diff_dst (batch, channels, out...) in T (float or uint16_t
    // bf16); the gradients f32, the weights' laid out (channels, kernel...). Channels are shared
    // out over `threads` OpenMP threads (1: the calling thread alone), each summing its own
    // channels over the batch in a fixed order: the result does not depend on the thread count.
    template <typename T>
    void run(const T *src, const T *diff_dst, const DepthwiseBackwardWeights::Gradients &out, void *scratch,
            int threads) const;

private:
    template <typename Isa, typename T>
    void run_with(const T *src, const T *diff_dst, const DepthwiseBackwardWeights::Gradients &out, void *scratch,
            int threads) const;

    DepthwiseShape shape_;
    PhasePlanes planes_;
};

} // namespace libdeconv
