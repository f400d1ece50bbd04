// The data gradient of depthwise deconvolutions (one input and one output channel per group) on
// channels-last data, our own: a strided depthwise convolution of the output gradient, a row of
// results at a time, channels in vectors. Result column ix reads, through kernel column kw, the
// output gradient's column ix * stride - pad + kw * dilate: every result in a row's interior
// reads the same taps, so the forward pass's column kernels (depthwise_columns.hpp) compute them,
// the taps' weights in registers. oneDNN 2.6's jit_dw reads channels-last data a pixel at a
// time (mobile.dw f32 on AVX2: 5.1 ms, on its own channel blocks 2.5) and has no kernel for 3D.
#pragma once

#include "depthwise_forward.hpp" // DepthwiseShape
#include "depthwise_row_staging.hpp"

#include <cstddef>
#include <cstdint>

namespace libdeconv {

class DepthwiseBackwardDataRows {
public:
    explicit DepthwiseBackwardDataRows(const DepthwiseShape &shape);
    // AVX-512 or AVX2 (with FMA), and at most 64 taps per result.
    static bool supports(const DepthwiseShape &shape);

    // A row per thread where a write request's result is large enough to be streamed
    // (depthwise_row_staging.hpp).
    size_t scratch_bytes(int threads) const { return staging_.scratch_bytes(threads); }

    // diff_dst (batch, out..., channels) and diff_src (batch, in..., channels) in T (float or
    // uint16_t bf16), weights f32 (kernel..., channels). `add`: diff_src += the result. Rows are
    // shared out over `threads` OpenMP threads (1: the calling thread alone).
    template <typename T>
    void run(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch, int threads) const;

private:
    template <typename Isa, typename T>
    void run_with(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch, int threads) const;

    DepthwiseShape shape_;
    RowStaging staging_;
    int64_t first_ = 0, last_ = -1; // the result columns all of whose taps are inside the output
};

} // namespace libdeconv
