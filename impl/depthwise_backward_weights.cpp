#include "depthwise_backward_weights.hpp"

#include "commit_kernels.hpp"
#include "depthwise_rows.hpp"
#include "integer_math.hpp"
#include "threads.hpp"

#include <algorithm>
#include <utility>

namespace libdeconv {
namespace {

using commit_kernels::first_lanes;
using commit_kernels::load8;
using commit_kernels::load_masked;
using commit_kernels::store8;
using commit_kernels::store_masked;

// One input row against one output row (a kernel row apart), for kernel columns [kw0, kw0 + K)
// and G vectors of channels from `c`: K x G sums over the input columns, in registers, added
// into `partial` (kernel columns x channels from that row's first tap). Columns where every one
// of the K taps lands inside the output run without checks, each input vector loaded once for
// all K. The G vectors of a pixel are read together: a vector at a time over a whole row
// strides by the pixel, several cache lines, and the prefetchers lose it at every page
// (bilinear.dw f32, 64 channels, one vector at a time: 4.4 ms a call on one thread).
struct RowPair {
    int64_t channels, stride, dilate, pad;
    int64_t interior_first, interior_end;      // [first, end): every tap inside
    const int64_t *first_column, *last_column; // per tap (from kw0)
    int64_t kw0;
};

// The vector kernels of one instruction set, by the same algorithm: kLanes channels a vector,
// up to kMaxColumns kernel columns and kMaxSums sums in registers at once (with room for the
// loads). `valid` is the number of channels of the last, partial vector (G == 1 only; whole
// vectors otherwise).
struct Avx512 {
    static constexpr int kLanes = 16, kMaxColumns = 16, kMaxSums = 24;

    template <int K, int G, typename T>
    LIBDECONV_AVX512 static void row_pair(const RowPair &r, const T *src_row, const T *dd_row, float *partial,
            int64_t c, int64_t valid) {
        const int64_t C = r.channels;
        const __mmask16 m = G == 1 ? first_lanes(valid) : 0xffff;
        __m512 acc[G][K];
        for (int g = 0; g < G; ++g)
            for (int k = 0; k < K; ++k) acc[g][k] = _mm512_setzero_ps();
        const int64_t tap_step = r.dilate * C;
        const T *src = src_row + r.interior_first * C + c;
        const T *dd = dd_row + (r.interior_first * r.stride - r.pad + r.kw0 * r.dilate) * C + c;
        for (int64_t ix = r.interior_first; ix < r.interior_end; ++ix, src += C, dd += r.stride * C)
            for (int g = 0; g < G; ++g) {
                const __m512 s = load_masked(src + 16 * g, m);
                for (int k = 0; k < K; ++k)
                    acc[g][k] = _mm512_fmadd_ps(s, load_masked(dd + k * tap_step + 16 * g, m), acc[g][k]);
            }
        for (int k = 0; k < K; ++k) {
            const int64_t kw = r.kw0 + k, first = r.first_column[k], end = r.last_column[k] + 1;
            const int64_t edges[2][2] = {{first, std::min(r.interior_first, end)}, {std::max(r.interior_end, first), end}};
            for (const auto &edge : edges)
                for (int64_t ix = edge[0]; ix < edge[1]; ++ix)
                    for (int g = 0; g < G; ++g)
                        acc[g][k] = _mm512_fmadd_ps(load_masked(src_row + ix * C + c + 16 * g, m),
                                load_masked(dd_row + (ix * r.stride - r.pad + kw * r.dilate) * C + c + 16 * g, m),
                                acc[g][k]);
            for (int g = 0; g < G; ++g) {
                float *to = partial + k * C + c + 16 * g;
                store_masked(to, m, _mm512_add_ps(load_masked(to, m), acc[g][k]));
            }
        }
    }

    // `partial` (channels, double) += the sums over an output row's pixels of G vectors of
    // channels from `c`: per row in f32 (a few hundred terms), across rows in double, as
    // bias_gradient.cpp does.
    template <int G, typename T>
    LIBDECONV_AVX512 static void sum_row(const T *dd_row, int64_t pixels, int64_t C, int64_t c, int64_t valid,
            double *partial) {
        const __mmask16 m = G == 1 ? first_lanes(valid) : 0xffff;
        __m512 acc[G];
        for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
        for (int64_t x = 0; x < pixels; ++x)
            for (int g = 0; g < G; ++g) acc[g] = _mm512_add_ps(acc[g], load_masked(dd_row + x * C + c + 16 * g, m));
        for (int g = 0; g < G; ++g) {
            alignas(64) float v[16];
            _mm512_store_ps(v, acc[g]);
            for (int i = 0; i < (G == 1 ? valid : 16); ++i) partial[c + 16 * g + i] += v[i];
        }
    }
};

// AVX2 (with FMA): 16 registers, so fewer sums at once.
struct Avx2 {
    static constexpr int kLanes = 8, kMaxColumns = 8, kMaxSums = 12;

    template <int K, int G, typename T>
    LIBDECONV_AVX2 static void row_pair(const RowPair &r, const T *src_row, const T *dd_row, float *partial,
            int64_t c, int64_t valid) {
        const int64_t C = r.channels, n = G == 1 ? valid : 8;
        __m256 acc[G][K];
        for (int g = 0; g < G; ++g)
            for (int k = 0; k < K; ++k) acc[g][k] = _mm256_setzero_ps();
        const int64_t tap_step = r.dilate * C;
        const T *src = src_row + r.interior_first * C + c;
        const T *dd = dd_row + (r.interior_first * r.stride - r.pad + r.kw0 * r.dilate) * C + c;
        for (int64_t ix = r.interior_first; ix < r.interior_end; ++ix, src += C, dd += r.stride * C)
            for (int g = 0; g < G; ++g) {
                const __m256 s = load8(src + 8 * g, n);
                for (int k = 0; k < K; ++k)
                    acc[g][k] = _mm256_fmadd_ps(s, load8(dd + k * tap_step + 8 * g, n), acc[g][k]);
            }
        for (int k = 0; k < K; ++k) {
            const int64_t kw = r.kw0 + k, first = r.first_column[k], end = r.last_column[k] + 1;
            const int64_t edges[2][2] = {{first, std::min(r.interior_first, end)}, {std::max(r.interior_end, first), end}};
            for (const auto &edge : edges)
                for (int64_t ix = edge[0]; ix < edge[1]; ++ix)
                    for (int g = 0; g < G; ++g)
                        acc[g][k] = _mm256_fmadd_ps(load8(src_row + ix * C + c + 8 * g, n),
                                load8(dd_row + (ix * r.stride - r.pad + kw * r.dilate) * C + c + 8 * g, n), acc[g][k]);
            for (int g = 0; g < G; ++g) {
                float *to = partial + k * C + c + 8 * g;
                store8(to, n, _mm256_add_ps(load8(to, n), acc[g][k]));
            }
        }
    }

    template <int G, typename T>
    LIBDECONV_AVX2 static void sum_row(const T *dd_row, int64_t pixels, int64_t C, int64_t c, int64_t valid,
            double *partial) {
        const int64_t n = G == 1 ? valid : 8;
        __m256 acc[G];
        for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
        for (int64_t x = 0; x < pixels; ++x)
            for (int g = 0; g < G; ++g) acc[g] = _mm256_add_ps(acc[g], load8(dd_row + x * C + c + 8 * g, n));
        for (int g = 0; g < G; ++g) {
            alignas(32) float v[8];
            _mm256_store_ps(v, acc[g]);
            for (int i = 0; i < n; ++i) partial[c + 8 * g + i] += v[i];
        }
    }
};

template <typename T>
using RowPairKernel = void (*)(const RowPair &, const T *, const T *, float *, int64_t, int64_t);

// Kernels by kernel columns (1..Isa::kMaxColumns) and vectors at once (1, 2, 4, 8; those with
// more than Isa::kMaxSums sums are never taken).
template <typename Isa, typename T>
struct RowPairKernels {
    RowPairKernel<T> by[Isa::kMaxColumns][4];
    RowPairKernels() { fill(std::make_integer_sequence<int, Isa::kMaxColumns>{}); }
    // The kernel for K columns and the most vectors, up to `vectors`, that keep the sums in
    // registers; `taken` is set to that number.
    RowPairKernel<T> widest(int k, int64_t vectors, int &taken) const {
        for (int i = 3; i > 0; --i)
            if (vectors >= (1 << i) && k << i <= Isa::kMaxSums) {
                taken = 1 << i;
                return by[k - 1][i];
            }
        taken = 1;
        return by[k - 1][0];
    }

private:
    template <int K, int G>
    static RowPairKernel<T> kernel() {
        if constexpr (G == 1 || K * G <= Isa::kMaxSums)
            return &Isa::template row_pair<K, G, T>;
        else
            return nullptr;
    }
    template <int... N>
    void fill(std::integer_sequence<int, N...>) {
        const RowPairKernel<T> kernels[][4] = {
                {kernel<N + 1, 1>(), kernel<N + 1, 2>(), kernel<N + 1, 4>(), kernel<N + 1, 8>()}...};
        std::copy(&kernels[0][0], &kernels[0][0] + Isa::kMaxColumns * 4, &by[0][0]);
    }
};

// The bias sums of an output row, four vectors at a time where there are as many.
template <typename Isa, typename T>
void sum_row(const T *dd_row, int64_t pixels, int64_t C, double *partial) {
    constexpr int64_t L = Isa::kLanes;
    int64_t c = 0;
    for (; c + 4 * L <= C; c += 4 * L) Isa::template sum_row<4>(dd_row, pixels, C, c, L, partial);
    for (; c < C; c += L) Isa::template sum_row<1>(dd_row, pixels, C, c, std::min(L, C - c), partial);
}

size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

} // namespace

DepthwiseBackwardWeights::DepthwiseBackwardWeights(const DepthwiseShape &shape) : shape_(shape) {
    const int64_t S = shape.stride[2], P = shape.pad[2], D = shape.dilate[2];
    for (int64_t kw = 0; kw < shape.kernel[2]; ++kw) {
        // 0 <= ix * S - P + kw * D <= OW - 1, 0 <= ix <= IW - 1
        first_column_.push_back(std::max<int64_t>(0, floor_div(P - kw * D + S - 1, S)));
        last_column_.push_back(std::min(shape.in[2] - 1, floor_div(shape.out[2] - 1 + P - kw * D, S)));
    }
    // Output row o goes with the input row whose taps start near it, i = (o + pad) / stride,
    // the first and last input rows taking those beyond.
    for (int d = 0; d < 2; ++d) {
        const int64_t in = shape.in[d], out = shape.out[d];
        for (int64_t i = 0; i <= in; ++i)
            owned_[d].push_back(i == 0 ? 0 : i == in ? out : std::clamp(i * shape.stride[d] - shape.pad[d], int64_t(0), out));
    }
}

size_t DepthwiseBackwardWeights::scratch_bytes(int threads) const {
    const DepthwiseShape &d = shape_;
    const size_t taps = static_cast<size_t>(d.kernel[0] * d.kernel[1] * d.kernel[2]), C = static_cast<size_t>(d.channels);
    return static_cast<size_t>(threads) * (aligned(taps * C * sizeof(float)) + aligned(C * sizeof(double)));
}

bool DepthwiseBackwardWeights::supports() { return has_avx512() || has_avx2(); }

template <typename T>
void DepthwiseBackwardWeights::run(const T *src, const T *diff_dst, const Gradients &out, void *scratch,
        int threads) const {
    if (has_avx512())
        run_with<Avx512>(src, diff_dst, out, scratch, threads);
    else
        run_with<Avx2>(src, diff_dst, out, scratch, threads);
}

template <typename Isa, typename T>
void DepthwiseBackwardWeights::run_with(const T *src, const T *diff_dst, const Gradients &out, void *scratch,
        int threads) const {
    const DepthwiseShape &d = shape_;
    const int64_t C = d.channels, KW = d.kernel[2];
    const int64_t taps = d.kernel[0] * d.kernel[1] * KW, size = taps * C;
    const int64_t rows = d.batch * d.in[0] * d.in[1];
    const size_t per_thread = scratch_bytes(1), bias_offset = aligned(static_cast<size_t>(size) * sizeof(float));
    const int64_t out_rows = d.out[0] * d.out[1];
    const RowPairKernels<Isa, T> kernels;
    constexpr int64_t L = Isa::kLanes;
    in_parallel(threads > 1, [&] {
        const int team = omp_get_num_threads(), me = omp_get_thread_num();
        char *mine = static_cast<char *>(scratch) + me * per_thread;
        float *weights = reinterpret_cast<float *>(mine);
        double *bias = reinterpret_cast<double *>(mine + bias_offset);
        std::fill_n(weights, size, 0.f);
        if (out.bias) std::fill_n(bias, C, 0.0);
#pragma omp for schedule(static)
        for (int64_t row = 0; row < rows; ++row) {
            const int64_t iy = row % d.in[1], iz = row / d.in[1] % d.in[0], n = row / (d.in[1] * d.in[0]);
            const T *src_row = src + row * d.in[2] * C;
            auto dd_row = [&](int64_t oz, int64_t oy) { return diff_dst + (n * out_rows + oz * d.out[1] + oy) * d.out[2] * C; };
            for_each_output_row(d, iz, iy, [&](int64_t kd, int64_t kh, int64_t oz, int64_t oy) {
                float *row_taps = weights + (kd * d.kernel[1] + kh) * KW * C;
                const T *dd = dd_row(oz, oy);
                for (int64_t kw0 = 0; kw0 < KW; kw0 += Isa::kMaxColumns) {
                    const int k = static_cast<int>(std::min<int64_t>(Isa::kMaxColumns, KW - kw0));
                    const int64_t first = first_column_[kw0], end = last_column_[kw0 + k - 1] + 1;
                    const RowPair pair{C, d.stride[2], d.dilate[2], d.pad[2], first, std::max(first, end),
                            first_column_.data() + kw0, last_column_.data() + kw0, kw0};
                    int64_t c = 0;
                    while (c + L <= C) {
                        int taken = 1;
                        const RowPairKernel<T> kernel = kernels.widest(k, (C - c) / L, taken);
                        kernel(pair, src_row, dd, row_taps + kw0 * C, c, L);
                        c += L * taken;
                    }
                    if (c < C) kernels.by[k - 1][0](pair, src_row, dd, row_taps + kw0 * C, c, C - c);
                }
            });
            if (!out.bias) continue;
            for (int64_t oz = owned_[0][iz]; oz < owned_[0][iz + 1]; ++oz)
                for (int64_t oy = owned_[1][iy]; oy < owned_[1][iy + 1]; ++oy) sum_row<Isa>(dd_row(oz, oy), d.out[2], C, bias);
        }
        // The partial gradients added up, in the order of the threads whatever their timing.
        auto partial = [&](int t) { return static_cast<const char *>(scratch) + t * per_thread; };
#pragma omp for schedule(static)
        for (int64_t i = 0; i < size; ++i) {
            float sum = out.add_weights ? out.weights[i] : 0.f;
            for (int t = 0; t < team; ++t) sum += reinterpret_cast<const float *>(partial(t))[i];
            out.weights[i] = sum;
        }
        if (!out.bias) return;
#pragma omp for schedule(static)
        for (int64_t c = 0; c < C; ++c) {
            double sum = out.add_bias ? out.bias[c] : 0.0;
            for (int t = 0; t < team; ++t) sum += reinterpret_cast<const double *>(partial(t) + bias_offset)[c];
            out.bias[c] = static_cast<float>(sum);
        }
    }, threads);
}

template void DepthwiseBackwardWeights::run(const float *, const float *, const Gradients &, void *, int) const;
template void DepthwiseBackwardWeights::run(const uint16_t *, const uint16_t *, const Gradients &, void *, int) const;

} // namespace libdeconv
