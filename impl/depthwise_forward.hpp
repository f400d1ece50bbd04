// A forward pass of our own for depthwise deconvolutions (one input and one output channel per
// group) on channels-last data: oneDNN 2.6 runs these as a convolution's backward data, which
// takes no bias and no sum, so its deconvolution adds either in a pass of its own over the
// whole output (bilinear.dw bf16: 1.6-2x the time without a bias). Here the bias is where the
// accumulators start, and an add request where they start from the output.
#pragma once

#include "depthwise_row_staging.hpp"
#include "problem.hpp" // SpatialDims

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace libdeconv {

// Spatial sizes as (depth, height, width); a 1D or 2D problem has size 1, stride 1 and pad 0 in
// the leading dims.
struct DepthwiseShape : SpatialDims { // dilate 1 = none
    int64_t batch = 1, channels = 1;
};

class DepthwiseForward {
public:
    explicit DepthwiseForward(const DepthwiseShape &shape);
    // AVX-512 or AVX2 (with FMA), no more kernel rows (depth x height) than one column's taps
    // take, and a width stride of at most 64 (one phase of output columns each).
    static bool supports(const DepthwiseShape &shape);

    // A row per thread where a write request's output is large enough to be streamed
    // (depthwise_row_staging.hpp).
    size_t scratch_bytes(int threads) const;

    // src (batch, in..., channels) and dst (batch, out..., channels) in T (float or uint16_t
    // bf16); weights f32 (kernel..., channels); bias f32 (channels) or nullptr. `add`: dst +=
    // the result. Rows are shared out over `threads` OpenMP threads (1: the calling thread).
    template <typename T>
    void run(const T *src, const float *weights, const float *bias, T *dst, bool add, void *scratch,
            int threads) const;

    const DepthwiseShape &shape() const { return shape_; }

    // One kernel tap along the width, for the output columns of one phase (ox % stride).
    struct ColumnTap {
        int64_t kw;     // the tap
        int64_t offset; // ix = ox / stride + offset
    };
    struct Phase {
        std::vector<ColumnTap> taps;  // by offset
        bool consecutive = false;     // the taps' offsets are a run of integers
        int64_t first = 0, last = -1; // the phase's ox / stride range where every tap is inside
    };

private:
    template <typename Isa, typename T>
    void run_with(const T *src, const float *weights, const float *bias, T *dst, bool add, void *scratch,
            int threads) const;

    DepthwiseShape shape_;
    RowStaging staging_;
    std::vector<Phase> phases_; // one per residue of ox modulo the width's stride
};

} // namespace libdeconv
