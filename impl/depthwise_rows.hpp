// Which rows of a depthwise deconvolution meet through which kernel rows (depth x height), for
// the kernels that work a row at a time: output row (od, oh) reads input row (iz, iy) through
// kernel row (kd, kh) where od = iz * stride - pad + kd * dilate (and the same for heights).
#pragma once

#include "depthwise_forward.hpp" // DepthwiseShape

#include <cstdint>

namespace libdeconv {

// f(kd, kh, iz, iy) for every kernel row through which output row (od, oh) reads an input row.
template <typename F>
inline void for_each_input_row(const DepthwiseShape &d, int64_t od, int64_t oh, F f) {
    for (int64_t kd = 0; kd < d.kernel[0]; ++kd) {
        const int64_t tz = od + d.pad[0] - kd * d.dilate[0];
        if (tz < 0 || tz % d.stride[0] != 0 || tz / d.stride[0] >= d.in[0]) continue;
        for (int64_t kh = 0; kh < d.kernel[1]; ++kh) {
            const int64_t ty = oh + d.pad[1] - kh * d.dilate[1];
            if (ty < 0 || ty % d.stride[1] != 0 || ty / d.stride[1] >= d.in[1]) continue;
            f(kd, kh, tz / d.stride[0], ty / d.stride[1]);
        }
    }
}

// f(kd, kh, oz, oy) for every kernel row through which input row (iz, iy) reaches an output row.
template <typename F>
inline void for_each_output_row(const DepthwiseShape &d, int64_t iz, int64_t iy, F f) {
    for (int64_t kd = 0; kd < d.kernel[0]; ++kd) {
        const int64_t oz = iz * d.stride[0] - d.pad[0] + kd * d.dilate[0];
        if (oz < 0 || oz >= d.out[0]) continue;
        for (int64_t kh = 0; kh < d.kernel[1]; ++kh) {
            const int64_t oy = iy * d.stride[1] - d.pad[1] + kh * d.dilate[1];
            if (oy < 0 || oy >= d.out[1]) continue;
            f(kd, kh, oz, oy);
        }
    }
}

} // namespace libdeconv
