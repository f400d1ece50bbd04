#include "depthwise_forward.hpp"

#include "depthwise_columns.hpp"
#include "depthwise_rows.hpp"
#include "integer_math.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using namespace depthwise_columns;

// One output row (n, od, oh), phase by phase: the columns in the input's interior in one call
// of depthwise_columns.hpp's kernels, each edge column in one call with the taps inside the input.
template <typename Isa, typename T>
void output_row(const DepthwiseShape &d, const std::vector<DepthwiseForward::Phase> &phases, const RowTap *rows,
        int nr, const T *src, const float *weights, const Start &s, T *out_row, const ColumnKernels<Isa, T> &kernels) {
    constexpr int64_t L = Isa::kLanes;
    const int64_t C = d.channels, S = d.stride[2], OW = d.out[2];
    int64_t offsets[kMaxTaps];
    const float *tap_weights[kMaxTaps];
    for (int64_t r = 0; r < S && r < OW; ++r) {
        const DepthwiseForward::Phase &phase = phases[r];
        const int64_t columns = (OW - 1 - r) / S + 1;
        if (nr * static_cast<int64_t>(phase.taps.size()) > kMaxTaps) {
            const TapByTap<T> k{d, phase, rows, nr, src, weights, s, out_row};
            for (int64_t q = 0; q < columns; ++q)
                for (int64_t c = 0; c < C; c += L) Isa::column_tap_by_tap(k, c, std::min(L, C - c), q, r);
            continue;
        }
        // Columns [from, to) with the taps inside the input at column `from` (all of them in
        // the interior).
        auto compute = [&](int64_t from, int64_t to) {
            int nt = 0;
            for (int j = 0; j < nr; ++j)
                for (const auto &tap : phase.taps) {
                    const int64_t ix = from + tap.offset;
                    if (ix < 0 || ix >= d.in[2]) continue;
                    offsets[nt] = rows[j].src_row + ix * C;
                    tap_weights[nt++] = weights + (rows[j].weights + tap.kw) * C;
                }
            all_channels(kernels, Columns<T>{src, offsets, tap_weights, nt, out_row + (from * S + r) * C, S * C, C, to - from},
                    C, s.bias);
        };
        const int64_t first = std::min(std::max<int64_t>(phase.first, 0), columns);
        const int64_t end = std::max(std::min(phase.last + 1, columns), first);
        for (int64_t q = 0; q < first; ++q) compute(q, q + 1);
        if (end > first) compute(first, end);
        for (int64_t q = end; q < columns; ++q) compute(q, q + 1);
    }
}

} // namespace

DepthwiseForward::DepthwiseForward(const DepthwiseShape &shape)
    : shape_(shape), staging_(shape.batch * shape.out[0] * shape.out[1], shape.out[2] * shape.channels) {
    const int64_t S = shape.stride[2], P = shape.pad[2], D = shape.dilate[2], K = shape.kernel[2];
    const int64_t IW = shape.in[2];
    phases_.resize(static_cast<size_t>(S));
    for (int64_t r = 0; r < S; ++r) {
        Phase &phase = phases_[static_cast<size_t>(r)];
        int64_t lowest = 0, highest = 0;
        for (int64_t kw = 0; kw < K; ++kw) {
            const int64_t t = r + P - kw * D; // ox + pad - kw * dilate, less ox's multiple of S
            if (floor_mod(t, S) != 0) continue;
            const int64_t offset = (t - floor_mod(t, S)) / S;
            if (phase.taps.empty() || offset < lowest) lowest = offset;
            if (phase.taps.empty() || offset > highest) highest = offset;
            phase.taps.push_back({kw, offset});
        }
        phase.first = -lowest;
        phase.last = IW - 1 - highest;
    }
}

bool DepthwiseForward::supports(const DepthwiseShape &shape) {
    return (has_avx512() || has_avx2()) && shape.kernel[0] * shape.kernel[1] <= kMaxTaps && shape.stride[2] <= 64;
}

template <typename T>
void DepthwiseForward::run(const T *src, const float *weights, const float *bias, T *dst, bool add, void *scratch,
        int threads) const {
    if (has_avx512())
        run_with<Avx512>(src, weights, bias, dst, add, scratch, threads);
    else
        run_with<Avx2>(src, weights, bias, dst, add, scratch, threads);
}

size_t DepthwiseForward::scratch_bytes(int threads) const { return staging_.scratch_bytes(threads); }

template <typename Isa, typename T>
void DepthwiseForward::run_with(const T *src, const float *weights, const float *bias, T *dst, bool add, void *scratch,
        int threads) const {
    const DepthwiseShape &d = shape_;
    const int64_t C = d.channels, row_elements = d.out[2] * C;
    const int64_t rows = d.batch * d.out[0] * d.out[1];
    const bool stream = staging_.stages(add, sizeof(T));
    const Start s{bias, add};
    const ColumnKernels<Isa, T> kernels(add);
    in_parallel(threads > 1, [&] {
        T *staged = stream ? static_cast<T *>(staging_.row(scratch)) : nullptr;
#pragma omp for schedule(static) nowait
        for (int64_t row = 0; row < rows; ++row) {
            const int64_t oh = row % d.out[1], od = row / d.out[1] % d.out[0], n = row / (d.out[1] * d.out[0]);
            RowTap taps[kMaxTaps];
            int nr = 0;
            for_each_input_row(d, od, oh, [&](int64_t kd, int64_t kh, int64_t iz, int64_t iy) {
                taps[nr++] = {((n * d.in[0] + iz) * d.in[1] + iy) * d.in[2] * C, (kd * d.kernel[1] + kh) * d.kernel[2]};
            });
            // An add reads the output it adds into, a phase of a row at a time (pixels `stride`
            // apart): the loads waited for memory. The next row is asked for while this one is
            // computed (bilinear.dw channels-last ADD/WRITE, alternating builds: f32 1.15-1.32 ->
            // 1.07-1.12, bf16 1.32-1.34 -> 1.23-1.28), into L2: a row of mobile.dw f32 (43 KB)
            // asked into L1 pushed out the row being added to (ADD on AVX2 5.9-6.4 ms, into L2
            // 4.6-5.1).
            if (add && row + 1 < rows) prefetch_row(dst + (row + 1) * row_elements, row_elements);
            T *out_row = dst + row * row_elements;
            output_row(d, phases_, taps, nr, src, weights, s, staged ? staged : out_row, kernels);
            if (staged) Isa::stream_row(out_row, staged, row_elements);
        }
        commit_kernels::end_streaming(stream);
    }, threads);
}

template void DepthwiseForward::run(const float *, const float *, const float *, float *, bool, void *, int) const;
template void DepthwiseForward::run(const uint16_t *, const float *, const float *, uint16_t *, bool, void *,
        int) const;

} // namespace libdeconv
