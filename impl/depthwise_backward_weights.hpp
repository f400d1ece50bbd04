// The weight gradient of depthwise deconvolutions (one input and one output channel per group)
// on channels-last data, our own: oneDNN 2.6 has no depthwise kernel for it and runs it as a
// grouped convolution's or a gemm's (bilinear.dw f32: 9-13 ms and 28 ms, where reading the
// tensors once takes about 0.5 ms). Per channel and tap a dot product of the input with the
// output gradient over batch and space.
#pragma once

#include "depthwise_forward.hpp" // DepthwiseShape

#include <cstdint>
#include <vector>

namespace libdeconv {

class DepthwiseBackwardWeights {
public:
    explicit DepthwiseBackwardWeights(const DepthwiseShape &shape);
    // AVX-512.
    static bool supports(const DepthwiseShape &shape);

    // src (batch, in..., channels) and diff_dst (batch, out..., channels) in T (float or
    // uint16_t bf16); diff_weights f32 (kernel..., channels). `add`: diff_weights += the
    // result. `parallel`: input rows shared out over OpenMP threads, each summing into a partial
    // gradient of its own (a buffer of the calling thread, grown once), added up at the end.
    template <typename T>
    void run(const T *src, const T *diff_dst, float *diff_weights, bool add, bool parallel) const;

private:
    DepthwiseShape shape_;
    // Per kernel column kw, the input columns whose output column ix * stride - pad + kw *
    // dilate is inside the output: [first, last].
    std::vector<int64_t> first_column_, last_column_;
};

} // namespace libdeconv
