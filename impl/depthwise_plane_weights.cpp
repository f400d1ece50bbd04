#include "depthwise_plane_weights.hpp"

#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using commit_kernels::first_lanes;
using commit_kernels::load_masked;

constexpr int64_t kPrefetchBytes = 128 << 10; // of each of the next image's planes
constexpr int64_t kRowsPerFlush = 16;         // input rows summed in f32 lanes before the doubles take them

size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

// sums[kw] (16 lanes each) += the products of an input row (`width` values) with kernel column
// kw's values in an output row's phases, for every kernel column: K columns at once, each input
// vector loaded once for all of them, K independent chains of multiply-adds (one column at a
// time, a chain of a few multiply-adds per row waited on its latency: mobile.dw f32 3.0 ms).
template <int K, typename T>
LIBDECONV_AVX512 void row_products(const T *src, int64_t width, const float *phases, const int64_t *positions,
        float *sums) {
    __m512 acc[K];
    for (int k = 0; k < K; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t j = 0; j < width; j += 16) {
        const __m512 s = load_masked(src + j, first_lanes(width - j));
        for (int k = 0; k < K; ++k) acc[k] = _mm512_fmadd_ps(s, _mm512_loadu_ps(phases + positions[k] + j), acc[k]);
    }
    for (int k = 0; k < K; ++k) _mm512_store_ps(sums + 16 * k, _mm512_add_ps(_mm512_load_ps(sums + 16 * k), acc[k]));
}

constexpr int kColumnsAtOnce = 8;

template <typename T>
LIBDECONV_AVX512 void row_products(const T *src, int64_t width, const float *phases, const int64_t *positions,
        int64_t columns, float *sums) {
    int64_t kw = 0;
    for (; kw + kColumnsAtOnce <= columns; kw += kColumnsAtOnce)
        row_products<kColumnsAtOnce>(src, width, phases, positions + kw, sums + 16 * kw);
    switch (columns - kw) {
    case 7: return row_products<7>(src, width, phases, positions + kw, sums + 16 * kw);
    case 6: return row_products<6>(src, width, phases, positions + kw, sums + 16 * kw);
    case 5: return row_products<5>(src, width, phases, positions + kw, sums + 16 * kw);
    case 4: return row_products<4>(src, width, phases, positions + kw, sums + 16 * kw);
    case 3: return row_products<3>(src, width, phases, positions + kw, sums + 16 * kw);
    case 2: return row_products<2>(src, width, phases, positions + kw, sums + 16 * kw);
    case 1: return row_products<1>(src, width, phases, positions + kw, sums + 16 * kw);
    default: return;
    }
}

// The 16 lanes added up in double.
double lanes_sum(const float *lanes) {
    double total = 0;
    for (int i = 0; i < 16; ++i) total += lanes[i];
    return total;
}

// totals[t] += the 16 lanes of sums[t], which start again from zero.
void flush(float *sums, int64_t taps, double *totals) {
    for (int64_t t = 0; t < taps; ++t) {
        totals[t] += lanes_sum(sums + 16 * t);
        std::fill_n(sums + 16 * t, 16, 0.f);
    }
}

// lanes (16) += the sum of `count` floats (a multiple of 16) by lane.
LIBDECONV_AVX512 void add_lanes(const float *values, int64_t count, float *lanes) {
    __m512 acc = _mm512_load_ps(lanes);
    for (int64_t i = 0; i < count; i += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(values + i));
    _mm512_store_ps(lanes, acc);
}

} // namespace

DepthwisePlaneWeights::DepthwisePlaneWeights(const DepthwiseShape &shape) : shape_(shape), planes_(shape) {}

bool DepthwisePlaneWeights::supports(const DepthwiseShape &shape) {
    return has_avx512() && PhasePlanes(shape).fits();
}

size_t DepthwisePlaneWeights::scratch_bytes(int threads) const {
    const size_t taps = static_cast<size_t>(shape_.kernel[0] * shape_.kernel[1] * shape_.kernel[2]);
    // The sums of the taps and the bias: 16 f32 lanes each, and a double.
    const size_t per_thread = planes_.buffer_bytes() + aligned((taps + 1) * 16 * sizeof(float))
            + aligned((taps + 1) * sizeof(double));
    return static_cast<size_t>(threads) * per_thread;
}

template <typename T>
void DepthwisePlaneWeights::run(const T *src, const T *diff_dst, const DepthwiseBackwardWeights::Gradients &out,
        void *scratch, int threads) const {
    const DepthwiseShape &d = shape_;
    const int64_t C = d.channels, KW = d.kernel[2], taps = d.kernel[0] * d.kernel[1] * KW;
    const int64_t in_rows = d.in[0] * d.in[1], out_rows = d.out[0] * d.out[1];
    const int64_t in_plane = in_rows * d.in[2], out_plane = out_rows * d.out[2];
    const size_t per_thread = scratch_bytes(1), sums_offset = planes_.buffer_bytes();
    const size_t totals_offset = sums_offset + aligned(static_cast<size_t>(taps + 1) * 16 * sizeof(float));
    const int64_t fetched_dd = std::min<int64_t>(out_plane * sizeof(T), kPrefetchBytes);
    const int64_t fetched_src = std::min<int64_t>(in_plane * sizeof(T), kPrefetchBytes);
    in_parallel(threads > 1, [&] {
        char *mine = static_cast<char *>(scratch) + omp_get_thread_num() * per_thread;
        float *buffer = reinterpret_cast<float *>(mine), *sums = reinterpret_cast<float *>(mine + sums_offset);
        double *totals = reinterpret_cast<double *>(mine + totals_offset);
        planes_.clear(buffer);
#pragma omp for schedule(static)
        for (int64_t c = 0; c < C; ++c) {
            std::fill_n(sums, (taps + 1) * 16, 0.f);
            std::fill_n(totals, taps + 1, 0.0);
            for (int64_t n = 0; n < d.batch; ++n) {
                const T *dd = diff_dst + (n * C + c) * out_plane, *image = src + (n * C + c) * in_plane;
                const bool next = n + 1 < d.batch;
                planes_.split(dd, buffer);
                if (out.bias) // the bias's sums after the taps'; an output row's phases: its values and zeros
                    for (int64_t r = 0; r < out_rows; ++r) {
                        add_lanes(planes_.row(buffer, r), planes_.row_floats(), sums + taps * 16);
                        if ((r + 1) % kRowsPerFlush == 0) flush(sums + taps * 16, 1, totals + taps);
                    }
                for (int64_t ir = 0; ir < in_rows; ++ir) {
                    if (next) {
                        prefetch_part(dd + C * out_plane, fetched_dd, ir, in_rows);
                        prefetch_part(image + C * in_plane, fetched_src, ir, in_rows);
                    }
                    PhasePlanes::RowTap found[PhasePlanes::kMaxRowTaps];
                    const int nr = planes_.row_taps(buffer, ir / d.in[1], ir % d.in[1], found);
                    for (int i = 0; i < nr; ++i)
                        row_products(image + ir * d.in[2], d.in[2], found[i].phases, planes_.tap_positions(), KW,
                                sums + found[i].kernel_row * KW * 16);
                    if ((ir + 1) % kRowsPerFlush == 0) flush(sums, taps, totals);
                }
                flush(sums, taps + 1, totals);
            }
            float *w = out.weights + c * taps;
            for (int64_t t = 0; t < taps; ++t) w[t] = static_cast<float>((out.add_weights ? w[t] : 0.0) + totals[t]);
            if (out.bias) out.bias[c] = static_cast<float>((out.add_bias ? out.bias[c] : 0.0) + totals[taps]);
        }
    }, threads);
}

template void DepthwisePlaneWeights::run(const float *, const float *, const DepthwiseBackwardWeights::Gradients &,
        void *, int) const;
template void DepthwisePlaneWeights::run(const uint16_t *, const uint16_t *,
        const DepthwiseBackwardWeights::Gradients &, void *, int) const;

} // namespace libdeconv
