// The weight gradient of depthwise deconvolutions (one input and one output channel per group)
// on channels-last data, our own: oneDNN 2.6 has no depthwise kernel for it and runs it as a
// grouped convolution's or a gemm's (bilinear.dw f32: 9-13 ms and 28 ms, where reading the
// tensors once takes about 0.8 ms). Per channel and tap a dot product of the input with the
// output gradient over batch and space; the bias gradient, the output gradient's sums per
// channel, taken on the way from the rows the dot products have just read (as a pass of its
// own it reads the output gradient again: bilinear.dw f32, 26 MB).
#pragma once

#include "depthwise_forward.hpp" // DepthwiseShape

#include <cstddef>
#include <cstdint>
#include <vector>

namespace libdeconv {

class DepthwiseBackwardWeights {
public:
    // Channels-first data: depthwise_plane_weights.hpp.
    explicit DepthwiseBackwardWeights(const DepthwiseShape &shape);
    // AVX-512, or AVX2 with FMA (the same algorithm on 8 lanes; oneDNN 2.6 there runs bilinear.dw
    // f32 as a gemm or a grouped convolution in 17-43 ms).
    static bool supports();

    // Bytes of the partial gradients a run on `threads` threads sums into.
    size_t scratch_bytes(int threads) const;

    // The outputs, f32, and whether each adds into what it holds.
    struct Gradients {
        float *weights;    // (kernel..., channels); DepthwisePlaneWeights's (channels, kernel...)
        bool add_weights;
        float *bias;       // (channels), or nullptr: none
        bool add_bias;
    };
    // src (batch, in..., channels) and diff_dst (batch, out..., channels) in T (float or
    // uint16_t bf16). Input rows are shared out over `threads` OpenMP threads (1: the calling
    // thread alone), each summing into partial gradients of its own in `scratch`
    // (scratch_bytes), added up at the end in the order of the threads.
    template <typename T>
    void run(const T *src, const T *diff_dst, const Gradients &out, void *scratch, int threads) const;

private:
    template <typename Isa, typename T>
    void run_with(const T *src, const T *diff_dst, const Gradients &out, void *scratch, int threads) const;

    DepthwiseShape shape_;
    // Per kernel column kw, the input columns whose output column ix * stride - pad + kw *
    // dilate is inside the output: [first, last].
    std::vector<int64_t> first_column_, last_column_;
    // The output rows whose bias sums an input row takes, per spatial dim (depth, height): those
    // from owned_[d][i] to owned_[d][i + 1], every output row once.
    std::vector<int64_t> owned_[2];
};

} // namespace libdeconv
