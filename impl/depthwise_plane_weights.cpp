#include "depthwise_plane_weights.hpp"

#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using commit_kernels::first_lanes;
using commit_kernels::load8;
using commit_kernels::load_masked;

constexpr int64_t kPrefetchBytes = 128 << 10; // of each of the next image's planes
constexpr int64_t kRowsPerFlush = 16;         // input rows summed in f32 lanes before the doubles take them

size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

// sums[kw] (16 lanes each) += the products of an input row (`width` values) with kernel column
// kw's values in an output row's phases, for every kernel column: K columns at once, each input
// vector loaded once for all of them, K independent chains of multiply-adds (one column at a
// time, a chain of a few multiply-adds per row waited on its latency: mobile.dw f32 3.0 ms).
// Per instruction set, kColumnsAtOnce columns at most (their sums and the loads in registers).
struct Avx512 {
    static constexpr int kColumnsAtOnce = 8;

    template <int K, typename T>
    LIBDECONV_AVX512 static void row_products(const T *src, int64_t width, const float *phases,
            const int64_t *positions, float *sums) {
        __m512 acc[K];
        for (int k = 0; k < K; ++k) acc[k] = _mm512_setzero_ps();
        for (int64_t j = 0; j < width; j += 16) {
            const __m512 s = load_masked(src + j, first_lanes(width - j));
            for (int k = 0; k < K; ++k) acc[k] = _mm512_fmadd_ps(s, _mm512_loadu_ps(phases + positions[k] + j), acc[k]);
        }
        for (int k = 0; k < K; ++k) _mm512_store_ps(sums + 16 * k, _mm512_add_ps(_mm512_load_ps(sums + 16 * k), acc[k]));
    }

    // lanes (16) += the sum of `count` floats (a multiple of 16) by lane.
    LIBDECONV_AVX512 static void add_lanes(const float *values, int64_t count, float *lanes) {
        __m512 acc = _mm512_load_ps(lanes);
        for (int64_t i = 0; i < count; i += 16) acc = _mm512_add_ps(acc, _mm512_loadu_ps(values + i));
        _mm512_store_ps(lanes, acc);
    }
};

// AVX2: each 16 lanes as two vectors of 8, so half as many columns at once in 16 registers.
struct Avx2 {
    static constexpr int kColumnsAtOnce = 6;

    template <int K, typename T>
    LIBDECONV_AVX2 static void row_products(const T *src, int64_t width, const float *phases,
            const int64_t *positions, float *sums) {
        __m256 acc[K][2];
        for (int k = 0; k < K; ++k) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
        for (int64_t j = 0; j < width; j += 16) {
            const __m256 s0 = load8(src + j, width - j), s1 = load8(src + j + 8, width - j - 8);
            for (int k = 0; k < K; ++k) {
                acc[k][0] = _mm256_fmadd_ps(s0, _mm256_loadu_ps(phases + positions[k] + j), acc[k][0]);
                acc[k][1] = _mm256_fmadd_ps(s1, _mm256_loadu_ps(phases + positions[k] + j + 8), acc[k][1]);
            }
        }
        for (int k = 0; k < K; ++k)
            for (int h = 0; h < 2; ++h)
                _mm256_store_ps(sums + 16 * k + 8 * h, _mm256_add_ps(_mm256_load_ps(sums + 16 * k + 8 * h), acc[k][h]));
    }

    LIBDECONV_AVX2 static void add_lanes(const float *values, int64_t count, float *lanes) {
        __m256 lo = _mm256_load_ps(lanes), hi = _mm256_load_ps(lanes + 8);
        for (int64_t i = 0; i < count; i += 16) {
            lo = _mm256_add_ps(lo, _mm256_loadu_ps(values + i));
            hi = _mm256_add_ps(hi, _mm256_loadu_ps(values + i + 8));
        }
        _mm256_store_ps(lanes, lo);
        _mm256_store_ps(lanes + 8, hi);
    }
};

// The last `columns` (fewer than kColumnsAtOnce) by the kernel for exactly that many.
template <typename Isa, typename T, int K = Isa::kColumnsAtOnce - 1>
void rest_of_row_products(const T *src, int64_t width, const float *phases, const int64_t *positions,
        int64_t columns, float *sums) {
    if constexpr (K > 0) {
        if (columns == K) return Isa::template row_products<K>(src, width, phases, positions, sums);
        rest_of_row_products<Isa, T, K - 1>(src, width, phases, positions, columns, sums);
    }
}

// Every kernel column: kColumnsAtOnce at a time, then the rest.
template <typename Isa, typename T>
void row_products(const T *src, int64_t width, const float *phases, const int64_t *positions, int64_t columns,
        float *sums) {
    constexpr int kAtOnce = Isa::kColumnsAtOnce;
    int64_t kw = 0;
    for (; kw + kAtOnce <= columns; kw += kAtOnce)
        Isa::template row_products<kAtOnce>(src, width, phases, positions + kw, sums + 16 * kw);
    rest_of_row_products<Isa>(src, width, phases, positions + kw, columns - kw, sums + 16 * kw);
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

} // namespace

DepthwisePlaneWeights::DepthwisePlaneWeights(const DepthwiseShape &shape) : shape_(shape), planes_(shape) {}

bool DepthwisePlaneWeights::supports(const DepthwiseShape &shape) {
    return (has_avx512() || has_avx2()) && PhasePlanes(shape).fits();
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
    if (has_avx512())
        run_with<Avx512>(src, diff_dst, out, scratch, threads);
    else
        run_with<Avx2>(src, diff_dst, out, scratch, threads);
}

template <typename Isa, typename T>
void DepthwisePlaneWeights::run_with(const T *src, const T *diff_dst, const DepthwiseBackwardWeights::Gradients &out,
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
                        Isa::add_lanes(planes_.row(buffer, r), planes_.row_floats(), sums + taps * 16);
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
                        row_products<Isa>(image + ir * d.in[2], d.in[2], found[i].phases, planes_.tap_positions(),
                                KW, sums + found[i].kernel_row * KW * 16);
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
