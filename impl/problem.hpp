// A deconvolution problem: the user's parameters, validated and normalized (output size,
// target_shape -> pad/adj as MXNet's InferPad, oneDNN's padding and dilation conventions).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace libdeconv {

enum class DataType { f32, bf16 };
enum class Layout { channels_first, channels_last };
enum class Mode { inference, training };
enum class Pass { forward = 0, backward_data = 1, backward_weights = 2 };

using Dims3 = std::array<int64_t, 3>;

// What the caller asked for, in the caller's terms (MXNet's DeconvolutionParam plus tensors).
struct Spec {
    int rank = 2;
    int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
    Dims3 in_size{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilate{1, 1, 1},
            adj{0, 0, 0}, target_shape{0, 0, 0};
    bool bias = true;
    DataType dtype = DataType::f32;
    Layout layout = Layout::channels_first;
    Mode mode = Mode::inference;
};

// Tensors larger than this are refused before anything is allocated.
constexpr int64_t kMaxTensorBytes = int64_t(1) << 40;
// The largest batch or channel count: oneDNN's int.
constexpr int64_t kMaxDim = 2147483647;
// The largest spatial value (size, kernel, stride, dilate, pad, adj, target, full output extent):
// oneDNN 2.6 overflows its stack creating some kernels for longer dimensions (seen at 2^24+2^16).
constexpr int64_t kMaxSpatial = int64_t(1) << 24;

class Problem {
public:
    // Validates `spec`; throws Error(invalid_argument) with a message naming field and value.
    explicit Problem(const Spec &spec);

    const Spec &spec() const { return spec_; }
    int rank() const { return spec_.rank; }
    const Dims3 &out_size() const { return out_size_; }
    const Dims3 &pad() const { return pad_; } // effective, after target_shape inference
    const Dims3 &adj() const { return adj_; }
    // The stride oneDNN is given: where in_size is 1 the stride multiplies nothing, yet some
    // kernels spend time and memory proportional to it, so the smallest valid one (adj + 1).
    const Dims3 &kernel_stride() const { return kernel_stride_; }

    int64_t src_elems() const { return src_elems_; }
    int64_t weights_elems() const { return weights_elems_; }
    int64_t bias_elems() const { return spec_.bias ? spec_.out_channels : 0; }
    int64_t dst_elems() const { return dst_elems_; }
    size_t element_bytes() const { return spec_.dtype == DataType::f32 ? 4 : 2; }

    // Multiply-adds times two of one pass (the three passes do the same number).
    double flops() const;

    // Whether some kernel tap meets no output position (its weight gradient is an empty sum).
    bool has_dead_taps() const;

    // Everything that determines the primitives; equal keys mean interchangeable primitives.
    std::vector<int64_t> signature() const;

private:
    Spec spec_;
    Dims3 out_size_{1, 1, 1}, pad_{0, 0, 0}, adj_{0, 0, 0}, kernel_stride_{1, 1, 1};
    int64_t src_elems_ = 0, weights_elems_ = 0, dst_elems_ = 0;
};

// The spatial geometry as three dims (depth, height, width): 1D and 2D problems in the trailing
// ones, the leading ones of size 1; pad is the effective one (after target_shape).
struct SpatialDims {
    Dims3 in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilate{1, 1, 1};
};
SpatialDims spatial_dims(const Problem &problem);

// "DECONV_F32" style names for messages.
const char *dtype_name(DataType dtype);

} // namespace libdeconv
