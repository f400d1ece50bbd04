// Output-gradient planes (one image and channel of channels-first data) of a depthwise
// deconvolution sorted by phase, for the gradient kernels that read the caller's channels-first
// data as it is (depthwise_backward_data.hpp, depthwise_plane_weights.hpp). Kernel column kw
// meets input column j at output column j * stride + kw * dilate - pad; with the plane's
// columns sorted by their phase (column mod stride) into a buffer of the thread's, the 16 of
// input columns j..j+15 are 16 adjacent values, and the zeros around each phase stand for the
// columns outside the output.
#pragma once

#include "depthwise_forward.hpp" // DepthwiseShape

#include <cstddef>
#include <cstdint>
#include <vector>

namespace libdeconv {

class PhasePlanes {
public:
    explicit PhasePlanes(const DepthwiseShape &shape);

    // Kernel rows (depth x height) of an input row at most; and a plane's buffer of at most
    // kMaxBufferBytes (larger planes stay with oneDNN).
    static constexpr int kMaxRowTaps = 256;
    static constexpr size_t kMaxBufferBytes = size_t(16) << 20;
    bool fits() const;

    size_t buffer_bytes() const; // a multiple of 64
    // The zeros around the phases: once per buffer, before its first split (a split writes only
    // values, and zeros where it wrote them before).
    void clear(float *buffer) const;
    // The plane (out..., T: float or uint16_t bf16) into `buffer`, f32.
    template <typename T>
    void split(const T *plane, float *buffer) const;

    // Output row r's phases in `buffer`: row_floats() floats, a multiple of 16.
    int64_t row_floats() const { return shape_.stride[2] * row_width_; }
    const float *row(const float *buffer, int64_t r) const { return buffer + r * row_floats(); }

    // The kernel rows that meet input row (iz, iy): per row, the output row's phases in
    // `buffer` and the kernel row (kd * kernel height + kh). Returns how many.
    struct RowTap {
        const float *phases;
        int64_t kernel_row;
    };
    int row_taps(const float *buffer, int64_t iz, int64_t iy, RowTap *taps) const;

    // Per kernel column kw: where its value for input column 0 is in an output row's phases.
    const int64_t *tap_positions() const { return tap_position_.data(); }

private:
    DepthwiseShape shape_;
    // Per output row, `stride` phases of row_width_ floats each, phase r holding the row's
    // columns r, r + stride, ... from `lead_`.
    int64_t lead_ = 0, row_width_ = 0;
    std::vector<int64_t> tap_position_;
};

// Asks for part `part` of `parts` of `bytes` from `data` (the next plane, while this one is
// computed: read plane by plane, the stream restarts after each and the loads wait for memory).
void prefetch_part(const void *data, int64_t bytes, int64_t part, int64_t parts);

} // namespace libdeconv
