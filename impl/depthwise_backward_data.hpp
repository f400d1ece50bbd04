// The data gradient of depthwise deconvolutions (one input and one output channel per group) on
// the caller's channels-first data, our own: per image and channel a strided convolution of the
// output gradient's plane with the channel's taps. oneDNN 2.6's kernels for it read channel
// blocks (nChw16c) or channels-last data, so a channels-first caller pays a conversion of the
// output gradient, stride^2 times the size of the result (bilinear.dw f32: 1.2 of 1.9 ms, the
// kernel 0.7). Here each plane is read once, in place, sorted by phase into a buffer of the
// thread's (depthwise_phase_planes.hpp), where every tap of 16 adjacent results is 16 adjacent
// values; the results go straight to the caller's data, an add request adding them there.
#pragma once

#include "depthwise_phase_planes.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace libdeconv {

class DepthwiseBackwardData {
public:
    explicit DepthwiseBackwardData(const DepthwiseShape &shape);
    // AVX-512 or AVX2 (with FMA), and planes of modest size (PhasePlanes::fits).
    static bool supports(const DepthwiseShape &shape);

    // Bytes of the buffers of a run on `threads` threads.
    size_t scratch_bytes(int threads) const;

    // diff_dst (batch, channels, out...) and diff_src (batch, channels, in...) in T (float or
    // uint16_t bf16), weights f32 (channels, kernel...). `add`: diff_src += the result. Planes
    // are shared out over `threads` OpenMP threads (1: the calling thread alone).
    template <typename T>
    void run(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch, int threads) const;

private:
    template <typename Isa, typename T>
    void run_with(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch, int threads) const;

    DepthwiseShape shape_;
    PhasePlanes planes_;
};

} // namespace libdeconv
