#include "depthwise_forward.hpp"

#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using commit_kernels::load_masked;
using commit_kernels::store_masked;

int64_t floor_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

// What the accumulators start from: the bias (or zero), and for an add request the output too.
struct Start {
    const float *bias; // of all channels; nullptr: zero
    bool add;
};

LIBDECONV_AVX512 inline __m512 bias16(const float *bias, __mmask16 m) {
    return bias ? load_masked(bias, m) : _mm512_setzero_ps();
}
template <typename T>
LIBDECONV_AVX512 inline __m512 start16(bool add, const T *out, __m512 bias, __mmask16 m) {
    return add ? _mm512_add_ps(load_masked(out, m), bias) : bias;
}

// The interior columns of one phase, for 16 channels: every tap inside the input, the taps'
// weights held in registers (NT of them, known at compile time) across the columns. A full
// vector of channels (Full), the add request and the bf16 conversion (Native, as
// commit_kernels::store_by) are constants here, not branches at every column.
template <int NT, bool Full, bool Add, bool Native, typename T>
LIBDECONV_AVX512 void interior(const T *src, const int64_t *src_offsets, const float *const *weights, T *out,
        int64_t out_step, int64_t src_step, int64_t count, const float *bias, __mmask16 mask) {
    const __mmask16 m = Full ? 0xffff : mask;
    __m512 w[NT > 0 ? NT : 1];
    int64_t off[NT > 0 ? NT : 1];
    for (int t = 0; t < NT; ++t) {
        w[t] = load_masked(weights[t], m);
        off[t] = src_offsets[t];
    }
    const __m512 b = bias16(bias, m);
    for (int64_t q = 0; q < count; ++q, src += src_step, out += out_step) {
        __m512 acc = start16(Add, out, b, m);
        for (int t = 0; t < NT; ++t) acc = _mm512_fmadd_ps(load_masked(src + off[t], m), w[t], acc);
        commit_kernels::store_by<Native>(out, m, acc);
    }
}

// The same for any number of taps, the weights read from memory at every column.
template <typename T>
LIBDECONV_AVX512 void interior_any(int nt, const T *src, const int64_t *src_offsets, const float *const *weights,
        T *out, int64_t out_step, int64_t src_step, int64_t count, const Start &s, const float *bias, __mmask16 m) {
    const __m512 b = bias16(bias, m);
    for (int64_t q = 0; q < count; ++q, src += src_step, out += out_step) {
        __m512 acc = start16(s.add, out, b, m);
        for (int t = 0; t < nt; ++t)
            acc = _mm512_fmadd_ps(load_masked(src + src_offsets[t], m), load_masked(weights[t], m), acc);
        store_masked(out, m, acc);
    }
}

template <typename T>
using InteriorKernel = void (*)(const T *, const int64_t *, const float *const *, T *, int64_t, int64_t, int64_t,
        const float *, __mmask16);

// Taps of one output column handled in one piece (DepthwiseForward::supports bounds the
// kernel's rows by it; columns beyond it are computed tap by tap).
constexpr int kMaxTaps = 64;
constexpr int kMaxRegisterTaps = 16; // weights in registers, with room for the accumulator and a load

template <typename T, bool Full, bool Add, bool Native, int... N>
InteriorKernel<T> pick(int nt, std::integer_sequence<int, N...>) {
    InteriorKernel<T> kernels[] = {&interior<N, Full, Add, Native, T>...};
    return nt < static_cast<int>(sizeof...(N)) ? kernels[nt] : nullptr;
}

template <typename T, bool Full, bool Add>
InteriorKernel<T> interior_kernel(int nt) {
    constexpr auto taps = std::make_integer_sequence<int, kMaxRegisterTaps + 1>{};
    if constexpr (std::is_same_v<T, uint16_t>)
        if (commit_kernels::has_avx512_bf16()) return pick<T, Full, Add, true>(nt, taps);
    return pick<T, Full, Add, false>(nt, taps);
}

template <typename T>
InteriorKernel<T> interior_kernel(int nt, bool full, bool add) {
    if (full) return add ? interior_kernel<T, true, true>(nt) : interior_kernel<T, true, false>(nt);
    return add ? interior_kernel<T, false, true>(nt) : interior_kernel<T, false, false>(nt);
}

struct RowTap {
    int64_t src_row; // element offset of the input row (n, iz, iy, 0, 0)
    int64_t weights; // tap index of (kd, kh, 0)
};

// A column near the edges (ox = q * stride + r): each tap checked against the input's width.
template <typename T>
LIBDECONV_AVX512 void border(const DepthwiseShape &d, const DepthwiseForward::Phase &phase, const RowTap *rows,
        int nr, const T *src, const float *weights, const Start &s, const float *bias, T *out_row, int64_t c,
        int64_t q, int64_t r, __mmask16 m) {
    const int64_t C = d.channels;
    T *out = out_row + (q * d.stride[2] + r) * C + c;
    __m512 acc = start16(s.add, out, bias16(bias, m), m);
    for (int j = 0; j < nr; ++j)
        for (const auto &tap : phase.taps) {
            const int64_t ix = q + tap.offset;
            if (ix < 0 || ix >= d.in[2]) continue;
            acc = _mm512_fmadd_ps(load_masked(src + rows[j].src_row + ix * C + c, m),
                    load_masked(weights + (rows[j].weights + tap.kw) * C + c, m), acc);
        }
    store_masked(out, m, acc);
}

// Columns [from, to) of phase r, 16 channels from `c`, tap by tap.
template <typename T>
LIBDECONV_AVX512 void borders(const DepthwiseShape &d, const DepthwiseForward::Phase &phase, const RowTap *rows,
        int nr, const T *src, const float *weights, const Start &s, T *out_row, int64_t c, int64_t r, int64_t from,
        int64_t to, __mmask16 m) {
    const float *bias = s.bias ? s.bias + c : nullptr;
    for (int64_t q = from; q < to; ++q) border(d, phase, rows, nr, src, weights, s, bias, out_row, c, q, r, m);
}

// One output row (n, od, oh): phase by phase and 16 channels at a time, the columns in the
// input's interior by the kernels above, the others tap by tap.
template <typename T>
LIBDECONV_AVX512 void output_row(const DepthwiseShape &d, const std::vector<DepthwiseForward::Phase> &phases,
        const RowTap *rows, int nr, const T *src, const float *weights, const Start &s, T *out_row, int64_t c,
        __mmask16 m) {
    const int64_t C = d.channels, S = d.stride[2], OW = d.out[2];
    const float *bias = s.bias ? s.bias + c : nullptr;
    int64_t offsets[kMaxTaps];
    const float *tap_weights[kMaxTaps];
    for (int64_t r = 0; r < S && r < OW; ++r) {
        const DepthwiseForward::Phase &phase = phases[r];
        const int64_t columns = (OW - 1 - r) / S + 1;
        const int64_t first = std::min(std::max<int64_t>(phase.first, 0), columns);
        const int64_t last = std::min(phase.last, columns - 1);
        const int nt = nr * static_cast<int>(phase.taps.size());
        if (last < first || nt > kMaxTaps) {
            borders(d, phase, rows, nr, src, weights, s, out_row, c, r, 0, columns, m);
            continue;
        }
        borders(d, phase, rows, nr, src, weights, s, out_row, c, r, 0, first, m);
        int t = 0;
        for (int j = 0; j < nr; ++j)
            for (const auto &tap : phase.taps) {
                offsets[t] = rows[j].src_row + (first + tap.offset) * C + c;
                tap_weights[t++] = weights + (rows[j].weights + tap.kw) * C + c;
            }
        T *out = out_row + (first * S + r) * C + c;
        const int64_t count = last - first + 1;
        if (const auto kernel = interior_kernel<T>(nt, m == 0xffff, s.add))
            kernel(src, offsets, tap_weights, out, S * C, C, count, bias, m);
        else
            interior_any(nt, src, offsets, tap_weights, out, S * C, C, count, s, bias, m);
        borders(d, phase, rows, nr, src, weights, s, out_row, c, r, last + 1, columns, m);
    }
}

} // namespace

DepthwiseForward::DepthwiseForward(const DepthwiseShape &shape) : shape_(shape) {
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
    return commit_kernels::has_avx512() && shape.kernel[0] * shape.kernel[1] <= kMaxTaps && shape.stride[2] <= 64;
}

template <typename T>
void DepthwiseForward::run(const T *src, const float *weights, const float *bias, T *dst, bool add,
        bool parallel) const {
    const DepthwiseShape &d = shape_;
    const int64_t C = d.channels;
    const int64_t rows = d.batch * d.out[0] * d.out[1];
    const Start s{bias, add};
    in_parallel(parallel, [&] {
#pragma omp for schedule(static)
        for (int64_t row = 0; row < rows; ++row) {
            const int64_t oh = row % d.out[1], od = row / d.out[1] % d.out[0], n = row / (d.out[1] * d.out[0]);
            RowTap taps[kMaxTaps];
            int nr = 0;
            for (int64_t kd = 0; kd < d.kernel[0]; ++kd) {
                const int64_t tz = od + d.pad[0] - kd * d.dilate[0];
                if (tz < 0 || tz % d.stride[0] != 0 || tz / d.stride[0] >= d.in[0]) continue;
                for (int64_t kh = 0; kh < d.kernel[1]; ++kh) {
                    const int64_t ty = oh + d.pad[1] - kh * d.dilate[1];
                    if (ty < 0 || ty % d.stride[1] != 0 || ty / d.stride[1] >= d.in[1]) continue;
                    const int64_t iz = tz / d.stride[0], iy = ty / d.stride[1];
                    taps[nr++] = {((n * d.in[0] + iz) * d.in[1] + iy) * d.in[2] * C,
                            (kd * d.kernel[1] + kh) * d.kernel[2]};
                }
            }
            T *out_row = dst + row * d.out[2] * C;
            int64_t c = 0;
            for (; c + 16 <= C; c += 16) output_row(d, phases_, taps, nr, src, weights, s, out_row, c, 0xffff);
            if (c < C)
                output_row(d, phases_, taps, nr, src, weights, s, out_row, c,
                        static_cast<__mmask16>((1u << (C - c)) - 1));
        }
    });
}

template void DepthwiseForward::run(const float *, const float *, const float *, float *, bool, bool) const;
template void DepthwiseForward::run(const uint16_t *, const float *, const float *, uint16_t *, bool, bool) const;

} // namespace libdeconv
