// The forward pass of depthwise deconvolutions on the caller's channels-first data as it is, our
// own. Output column ox = q * stride + r (phase r) takes the kernel columns kw with
// r + pad - kw * dilate a multiple of the stride, from input column q + (r + pad - kw * dilate) /
// stride: per phase, 16 adjacent outputs read 16 adjacent inputs, from a copy of the input
// plane with zeros around its rows; the phases are interleaved as they are stored. The bias is
// where the sums start, and an add request adds the output in before the store. Channels-last
// copies of the input and output (depthwise_forward.hpp) cost more than the kernel on
// channels-first data (mobile.dw f32: 4.3 ms against 2.2 on channels-last data).
#pragma once

#include "depthwise_forward.hpp" // DepthwiseShape

#include <cstddef>
#include <cstdint>
#include <vector>

namespace libdeconv {

class DepthwisePlaneForward {
public:
    explicit DepthwisePlaneForward(const DepthwiseShape &shape);
    // AVX-512, and padded input planes of modest size.
    static bool supports(const DepthwiseShape &shape);

    // Bytes of the padded planes of a run on `threads` threads.
    size_t scratch_bytes(int threads) const;

    // src (batch, channels, in...) and dst (batch, channels, out...) in T (float or uint16_t
    // bf16); weights f32 (channels, kernel...); bias f32 (channels) or nullptr. `add`: dst +=
    // the result. Planes are shared out over `threads` OpenMP threads (1: the calling thread).
    template <typename T>
    void run(const T *src, const float *weights, const float *bias, T *dst, bool add, void *scratch,
            int threads) const;

    // A kernel column of an output phase: the weight's column and where the input of the
    // phase's column 0 is in a padded row.
    struct Tap {
        int64_t kw, position;
    };

private:
    DepthwiseShape shape_;
    int64_t lead_ = 0, row_width_ = 0; // a padded input row: zeros, the row from lead_, zeros
    std::vector<std::vector<Tap>> phases_; // per output phase (ox mod stride)
    int64_t columns_ = 0;                  // of phase 0, the most
};

} // namespace libdeconv
