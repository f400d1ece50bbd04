// The vector kernels of the depthwise kernels on channels-last data (depthwise_forward.cpp,
// depthwise_backward_data_rows.cpp): runs of pixels ("columns") of one row, each the sum over the
// same taps of a weight vector times a vector of input channels, from the bias or, for an add
// request, from the output; the taps' weights in registers where they fit.
#pragma once

#include "commit_kernels.hpp"
#include "depthwise_forward.hpp" // DepthwiseShape, DepthwiseForward::Phase

#include <cstdint>

namespace libdeconv {
namespace depthwise_columns {

using commit_kernels::first_lanes;
using commit_kernels::load8;
using commit_kernels::load_masked;
using commit_kernels::store8;
using commit_kernels::store_masked;

// What the accumulators start from: the bias (or zero), and for an add request the output too.
struct Start {
    const float *bias; // of all channels; nullptr: zero
    bool add;
};

// Columns of one output row (of one phase of it, in the forward pass) that read the same taps
// (all of them in the interior; an edge column the taps inside the input), as offsets from
// channel 0.
template <typename T>
struct Columns {
    const T *src;
    const int64_t *src_offsets;   // per tap: element offset of the first column's input pixel
    const float *const *weights;  // per tap
    int nt;                       // taps
    T *out;                       // the first column's output pixel
    int64_t out_step, src_step, count;
};

// A column whose taps do not fit the arrays of output_row (kernels of more than kMaxTaps taps
// per column): each tap checked against the input's width.
struct RowTap {
    int64_t src_row; // element offset of the input row (n, iz, iy, 0, 0)
    int64_t weights; // tap index of (kd, kh, 0)
};
template <typename T>
struct TapByTap {
    const DepthwiseShape &d;
    const DepthwiseForward::Phase &phase;
    const RowTap *rows;
    int nr;
    const T *src;
    const float *weights;
    const Start &s;
    T *out_row;
};

// The vector kernels of one instruction set: kLanes channels a vector, the taps' weights in
// registers for up to kMaxRegisterTaps taps (kMaxPairedTaps with two vectors of channels at a
// time: twice the weights), with room for the accumulators and a load. `valid` is the number of
// channels of the last, partial vector (whole vectors where Full).
//
// columns: the columns for `groups` vectors of channels from `first_channel`, G of them at a
// time: the taps' weights held in registers (NT x G of them, known at compile time) across the
// columns. A full vector of channels (Full), the add request and the bf16 conversion (Native,
// as commit_kernels::store_by) are constants here, not branches at every column. The channel
// groups run inside, so the per-row work (taps, edges) is done once for all of them: with a
// call per 16 channels, mobile.dw's 144 channels spent more time there than in the arithmetic.
// Two groups at a time write two vectors of a pixel together (a whole cache line in bf16 on
// AVX-512, in f32 on AVX2).
// columns_any: the same for more taps than registers hold, the weights read from memory, once
// for a block of columns summed side by side (one sum at a time waited on every FMA's latency:
// bilinear.dw's 16-tap data gradient on AVX2 took 6-7 ms, now 4). column_tap_by_tap: one column
// of TapByTap, channels [c, c + valid).
struct Avx512 {
    static constexpr int kLanes = 16, kMaxRegisterTaps = 16, kMaxPairedTaps = 8;
    static bool native_bf16() { return commit_kernels::has_avx512_bf16(); }
    template <typename T>
    LIBDECONV_AVX512 static void stream_row(T *row, const T *values, int64_t count) {
        commit_kernels::stream_row(row, values, count);
    }

    LIBDECONV_AVX512 static __m512 bias_vector(const float *bias, __mmask16 m) {
        return bias ? load_masked(bias, m) : _mm512_setzero_ps();
    }
    template <typename T>
    LIBDECONV_AVX512 static __m512 start(bool add, const T *out, __m512 bias, __mmask16 m) {
        return add ? _mm512_add_ps(load_masked(out, m), bias) : bias;
    }

    template <int NT, int G, bool Full, bool Add, bool Native, typename T>
    LIBDECONV_AVX512 static void columns(const Columns<T> &j, const float *bias, int64_t first_channel, int64_t groups,
            int64_t valid) {
        static_assert(G == 1 || Full, "vectors of channels in pairs are whole");
        const __mmask16 m = Full ? 0xffff : first_lanes(valid);
        for (int64_t g = 0; g + G <= groups; g += G) {
            const int64_t c = first_channel + 16 * g;
            __m512 w[G][NT > 0 ? NT : 1], b[G];
            int64_t off[NT > 0 ? NT : 1];
            for (int t = 0; t < NT; ++t) off[t] = j.src_offsets[t] + c;
            for (int h = 0; h < G; ++h) {
                for (int t = 0; t < NT; ++t) w[h][t] = load_masked(j.weights[t] + c + 16 * h, m);
                b[h] = bias_vector(bias ? bias + c + 16 * h : nullptr, m);
            }
            const T *src = j.src;
            T *out = j.out + c;
            for (int64_t q = 0; q < j.count; ++q, src += j.src_step, out += j.out_step) {
                __m512 acc[G];
                for (int h = 0; h < G; ++h) {
                    acc[h] = start(Add, out + 16 * h, b[h], m);
                    for (int t = 0; t < NT; ++t)
                        acc[h] = _mm512_fmadd_ps(load_masked(src + off[t] + 16 * h, m), w[h][t], acc[h]);
                }
                for (int h = 0; h < G; ++h) commit_kernels::store_by<Native>(out + 16 * h, m, acc[h]);
            }
        }
    }

    template <bool Add, typename T>
    LIBDECONV_AVX512 static void columns_any(const Columns<T> &j, const float *bias, int64_t first_channel,
            int64_t groups, int64_t valid) {
        const __mmask16 m = first_lanes(valid);
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t c = first_channel + 16 * g;
            const __m512 b = bias_vector(bias ? bias + c : nullptr, m);
            int64_t q = 0;
            for (; q + kAnyBlock <= j.count; q += kAnyBlock) any_block<kAnyBlock, Add>(j, c, q, b, m);
            for (; q < j.count; ++q) any_block<1, Add>(j, c, q, b, m);
        }
    }
    // B columns from column q: B independent sums, each tap's weights read once for all of them.
    static constexpr int kAnyBlock = 8;
    template <int B, bool Add, typename T>
    LIBDECONV_AVX512 static void any_block(const Columns<T> &j, int64_t c, int64_t q, __m512 b, __mmask16 m) {
        const T *src = j.src + c + q * j.src_step;
        T *out = j.out + c + q * j.out_step;
        __m512 acc[B];
        for (int i = 0; i < B; ++i) acc[i] = start(Add, out + i * j.out_step, b, m);
        for (int t = 0; t < j.nt; ++t) {
            const __m512 w = load_masked(j.weights[t] + c, m);
            const T *s = src + j.src_offsets[t];
            for (int i = 0; i < B; ++i) acc[i] = _mm512_fmadd_ps(load_masked(s + i * j.src_step, m), w, acc[i]);
        }
        for (int i = 0; i < B; ++i) store_masked(out + i * j.out_step, m, acc[i]);
    }

    template <typename T>
    LIBDECONV_AVX512 static void column_tap_by_tap(const TapByTap<T> &k, int64_t c, int64_t valid, int64_t q, int64_t r) {
        const DepthwiseShape &d = k.d;
        const int64_t C = d.channels;
        const __mmask16 m = first_lanes(valid);
        T *out = k.out_row + (q * d.stride[2] + r) * C + c;
        __m512 acc = start(k.s.add, out, bias_vector(k.s.bias ? k.s.bias + c : nullptr, m), m);
        for (int j = 0; j < k.nr; ++j)
            for (const auto &tap : k.phase.taps) {
                const int64_t ix = q + tap.offset;
                if (ix < 0 || ix >= d.in[2]) continue;
                acc = _mm512_fmadd_ps(load_masked(k.src + k.rows[j].src_row + ix * C + c, m),
                        load_masked(k.weights + (k.rows[j].weights + tap.kw) * C + c, m), acc);
            }
        store_masked(out, m, acc);
    }
};

// AVX2 (with FMA): 16 registers, so fewer taps in them; bf16 rounded in integers.
struct Avx2 {
    static constexpr int kLanes = 8, kMaxRegisterTaps = 12, kMaxPairedTaps = 6;
    static bool native_bf16() { return false; }
    template <typename T>
    LIBDECONV_AVX2 static void stream_row(T *row, const T *values, int64_t count) {
        commit_kernels::stream_row_avx2(row, values, count);
    }

    LIBDECONV_AVX2 static __m256 bias_vector(const float *bias, int64_t n) {
        return bias ? load8(bias, n) : _mm256_setzero_ps();
    }
    template <typename T>
    LIBDECONV_AVX2 static __m256 start(bool add, const T *out, __m256 bias, int64_t n) {
        return add ? _mm256_add_ps(load8(out, n), bias) : bias;
    }

    template <int NT, int G, bool Full, bool Add, bool Native, typename T>
    LIBDECONV_AVX2 static void columns(const Columns<T> &j, const float *bias, int64_t first_channel, int64_t groups,
            int64_t valid) {
        static_assert(G == 1 || Full, "vectors of channels in pairs are whole");
        const int64_t n = Full ? 8 : valid;
        for (int64_t g = 0; g + G <= groups; g += G) {
            const int64_t c = first_channel + 8 * g;
            __m256 w[G][NT > 0 ? NT : 1], b[G];
            int64_t off[NT > 0 ? NT : 1];
            for (int t = 0; t < NT; ++t) off[t] = j.src_offsets[t] + c;
            for (int h = 0; h < G; ++h) {
                for (int t = 0; t < NT; ++t) w[h][t] = load8(j.weights[t] + c + 8 * h, n);
                b[h] = bias_vector(bias ? bias + c + 8 * h : nullptr, n);
            }
            const T *src = j.src;
            T *out = j.out + c;
            for (int64_t q = 0; q < j.count; ++q, src += j.src_step, out += j.out_step) {
                __m256 acc[G];
                for (int h = 0; h < G; ++h) {
                    acc[h] = start(Add, out + 8 * h, b[h], n);
                    for (int t = 0; t < NT; ++t) acc[h] = _mm256_fmadd_ps(load8(src + off[t] + 8 * h, n), w[h][t], acc[h]);
                }
                for (int h = 0; h < G; ++h) store8(out + 8 * h, n, acc[h]);
            }
        }
    }

    template <bool Add, typename T>
    LIBDECONV_AVX2 static void columns_any(const Columns<T> &j, const float *bias, int64_t first_channel,
            int64_t groups, int64_t valid) {
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t c = first_channel + 8 * g;
            const __m256 b = bias_vector(bias ? bias + c : nullptr, valid);
            int64_t q = 0;
            for (; q + kAnyBlock <= j.count; q += kAnyBlock) any_block<kAnyBlock, Add>(j, c, q, b, valid);
            for (; q < j.count; ++q) any_block<1, Add>(j, c, q, b, valid);
        }
    }
    // As Avx512::any_block, in 16 registers.
    static constexpr int kAnyBlock = 6;
    template <int B, bool Add, typename T>
    LIBDECONV_AVX2 static void any_block(const Columns<T> &j, int64_t c, int64_t q, __m256 b, int64_t n) {
        const T *src = j.src + c + q * j.src_step;
        T *out = j.out + c + q * j.out_step;
        __m256 acc[B];
        for (int i = 0; i < B; ++i) acc[i] = start(Add, out + i * j.out_step, b, n);
        for (int t = 0; t < j.nt; ++t) {
            const __m256 w = load8(j.weights[t] + c, n);
            const T *s = src + j.src_offsets[t];
            for (int i = 0; i < B; ++i) acc[i] = _mm256_fmadd_ps(load8(s + i * j.src_step, n), w, acc[i]);
        }
        for (int i = 0; i < B; ++i) store8(out + i * j.out_step, n, acc[i]);
    }

    template <typename T>
    LIBDECONV_AVX2 static void column_tap_by_tap(const TapByTap<T> &k, int64_t c, int64_t valid, int64_t q, int64_t r) {
        const DepthwiseShape &d = k.d;
        const int64_t C = d.channels;
        T *out = k.out_row + (q * d.stride[2] + r) * C + c;
        __m256 acc = start(k.s.add, out, bias_vector(k.s.bias ? k.s.bias + c : nullptr, valid), valid);
        for (int j = 0; j < k.nr; ++j)
            for (const auto &tap : k.phase.taps) {
                const int64_t ix = q + tap.offset;
                if (ix < 0 || ix >= d.in[2]) continue;
                acc = _mm256_fmadd_ps(load8(k.src + k.rows[j].src_row + ix * C + c, valid),
                        load8(k.weights + (k.rows[j].weights + tap.kw) * C + c, valid), acc);
            }
        store8(out, valid, acc);
    }
};

template <typename T>
using ColumnKernel = void (*)(const Columns<T> &, const float *, int64_t, int64_t, int64_t);

// Taps of one output column handled in one piece (DepthwiseForward::supports bounds the
// kernel's rows by it; columns beyond it are computed tap by tap).
constexpr int kMaxTaps = 64;

// The kernels of one run (data type and add request), by number of taps, for pairs of whole
// vectors of channels, single ones and the last, partial one. Built in depthwise_columns.cpp,
// which alone instantiates the kernels (every tap count, channel grouping, request and data type
// of both instruction sets): in each kernel's file they took 20 s of its compilation.
template <typename Isa, typename T>
struct ColumnKernels {
    ColumnKernel<T> pairs[Isa::kMaxPairedTaps + 1], full[Isa::kMaxRegisterTaps + 1],
            partial[Isa::kMaxRegisterTaps + 1];
    ColumnKernel<T> any; // more taps

    explicit ColumnKernels(bool add);
};
extern template struct ColumnKernels<Avx512, float>;
extern template struct ColumnKernels<Avx512, uint16_t>;
extern template struct ColumnKernels<Avx2, float>;
extern template struct ColumnKernels<Avx2, uint16_t>;

// Every channel of the columns `j`.
template <typename Isa, typename T>
void all_channels(const ColumnKernels<Isa, T> &k, const Columns<T> &j, int64_t C, const float *bias) {
    constexpr int64_t L = Isa::kLanes;
    int64_t groups = C / L, first = 0;
    const int64_t rest = C % L;
    const bool in_registers = j.nt <= Isa::kMaxRegisterTaps;
    if (j.nt <= Isa::kMaxPairedTaps && groups >= 2) {
        k.pairs[j.nt](j, bias, 0, groups, L);
        first = groups / 2 * 2 * L;
        groups %= 2;
    }
    if (groups > 0) (in_registers ? k.full[j.nt] : k.any)(j, bias, first, groups, L);
    if (rest > 0) (in_registers ? k.partial[j.nt] : k.any)(j, bias, C - rest, 1, rest);
}

// `elements` from `row` asked for into L2 (the next row's data while this one is computed).
template <typename T>
void prefetch_row(const T *row, int64_t elements) {
    const char *bytes = reinterpret_cast<const char *>(row);
    for (int64_t at = 0; at < elements * static_cast<int64_t>(sizeof(T)); at += 64) _mm_prefetch(bytes + at, _MM_HINT_T1);
}

} // namespace depthwise_columns
} // namespace libdeconv
