#include "depthwise_backward_data_rows.hpp"

#include "cpu_features.hpp"
#include "depthwise_columns.hpp"
#include "depthwise_rows.hpp"
#include "integer_math.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using namespace depthwise_columns;

// One row of results (n, iz, iy): the interior columns in one call of the column kernels, each
// edge column in one call with the taps inside the output gradient.
template <typename Isa, typename T>
void result_row(const DepthwiseShape &d, int64_t first, int64_t last, const RowTap *rows, int nr, const T *diff_dst,
        const float *weights, T *out_row, const ColumnKernels<Isa, T> &kernels) {
    const int64_t C = d.channels, S = d.stride[2], P = d.pad[2], D = d.dilate[2], K = d.kernel[2];
    const int64_t IW = d.in[2], OW = d.out[2];
    int64_t offsets[kMaxTaps];
    const float *tap_weights[kMaxTaps];
    // Columns [from, to) with the taps inside the output gradient at column `from`.
    auto compute = [&](int64_t from, int64_t to) {
        int nt = 0;
        for (int j = 0; j < nr; ++j)
            for (int64_t kw = 0; kw < K; ++kw) {
                const int64_t ox = from * S - P + kw * D;
                if (ox < 0 || ox >= OW) continue;
                offsets[nt] = rows[j].src_row + ox * C;
                tap_weights[nt++] = weights + (rows[j].weights + kw) * C;
            }
        all_channels(kernels, Columns<T>{diff_dst, offsets, tap_weights, nt, out_row + from * C, C, S * C, to - from}, C,
                nullptr);
    };
    const int64_t begin = std::min(first, IW), end = std::max(std::min(last + 1, IW), begin);
    for (int64_t ix = 0; ix < begin; ++ix) compute(ix, ix + 1);
    if (end > begin) compute(begin, end);
    for (int64_t ix = end; ix < IW; ++ix) compute(ix, ix + 1);
}

} // namespace

DepthwiseBackwardDataRows::DepthwiseBackwardDataRows(const DepthwiseShape &shape)
    : shape_(shape), staging_(shape.batch * shape.in[0] * shape.in[1], shape.in[2] * shape.channels) {
    const int64_t S = shape.stride[2], P = shape.pad[2], D = shape.dilate[2], K = shape.kernel[2];
    // ix * S - P >= 0 for the first tap and ix * S - P + (K - 1) * D < out for the last.
    first_ = (P + S - 1) / S;
    last_ = floor_div(shape.out[2] - 1 + P - (K - 1) * D, S);
}

bool DepthwiseBackwardDataRows::supports(const DepthwiseShape &shape) {
    return (has_avx512() || has_avx2()) && shape.kernel[0] * shape.kernel[1] * shape.kernel[2] <= kMaxTaps;
}

template <typename T>
void DepthwiseBackwardDataRows::run(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch,
        int threads) const {
    if (has_avx512())
        run_with<Avx512>(diff_dst, weights, diff_src, add, scratch, threads);
    else
        run_with<Avx2>(diff_dst, weights, diff_src, add, scratch, threads);
}

template <typename Isa, typename T>
void DepthwiseBackwardDataRows::run_with(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch,
        int threads) const {
    const DepthwiseShape &d = shape_;
    const int64_t row_elements = d.in[2] * d.channels, out_row_elements = d.out[2] * d.channels;
    const int64_t rows = d.batch * d.in[0] * d.in[1];
    const ColumnKernels<Isa, T> kernels(add);
    const bool stream = staging_.stages(add, sizeof(T));
    in_parallel(threads > 1, [&] {
        T *staged = stream ? static_cast<T *>(staging_.row(scratch)) : nullptr;
#pragma omp for schedule(static) nowait
        for (int64_t row = 0; row < rows; ++row) {
            const int64_t iy = row % d.in[1], iz = row / d.in[1] % d.in[0], n = row / (d.in[1] * d.in[0]);
            RowTap taps[kMaxTaps];
            int nr = 0;
            for_each_output_row(d, iz, iy, [&](int64_t kd, int64_t kh, int64_t oz, int64_t oy) {
                taps[nr++] = {((n * d.out[0] + oz) * d.out[1] + oy) * out_row_elements,
                        (kd * d.kernel[1] + kh) * d.kernel[2]};
            });
            // The output gradient's rows of the next row of results, asked for into L2 while
            // this one is computed (mobile.dw f32 on AVX2: 3.9-5.1 -> 3.7 ms).
            if (row + 1 < rows) {
                const int64_t next_y = (row + 1) % d.in[1], next_z = (row + 1) / d.in[1] % d.in[0],
                              next_n = (row + 1) / (d.in[1] * d.in[0]);
                for_each_output_row(d, next_z, next_y, [&](int64_t, int64_t, int64_t oz, int64_t oy) {
                    prefetch_row(diff_dst + ((next_n * d.out[0] + oz) * d.out[1] + oy) * out_row_elements, out_row_elements);
                });
            }
            T *out_row = diff_src + row * row_elements;
            result_row(d, first_, last_, taps, nr, diff_dst, weights, staged ? staged : out_row, kernels);
            if (staged) Isa::stream_row(out_row, staged, row_elements);
        }
        commit_kernels::end_streaming(stream);
    }, threads);
}

template void DepthwiseBackwardDataRows::run(const float *, const float *, float *, bool, void *, int) const;
template void DepthwiseBackwardDataRows::run(const uint16_t *, const float *, uint16_t *, bool, void *, int) const;

} // namespace libdeconv
