// The commits' vector kernels for CPUs whose widest vectors are AVX2 (commit_kernels.hpp has the
// AVX-512 ones, which these follow): 8 lanes of f32, 8x8 register transposes, bf16 rounded in
// integers. Without them the commits ran scalar loops on AVX2 (dcgan.l3's channels-last weight
// gradient on oneDNN's deconvolution: 1.12-1.24x plain oneDNN, which reorders; with them 1.01).
#pragma once

#include "commit_elements.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <immintrin.h>

namespace libdeconv {
namespace commit_kernels {

#define LIBDECONV_AVX2 __attribute__((target("avx2,fma")))

// Lanes [0, n) of 8 (none for n <= 0).
LIBDECONV_AVX2 inline __m256i first8(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(n, 0, 8))),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// n of 8 elements as f32, zeros past n; never reads past element n.
LIBDECONV_AVX2 inline __m256 load8(const float *p, int64_t n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, first8(n));
}
LIBDECONV_AVX2 inline __m256 widen8(__m128i words) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(words), 16));
}
LIBDECONV_AVX2 inline __m256 load8(const uint16_t *p, int64_t n) {
    if (n >= 8) return widen8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    alignas(16) uint16_t words[8] = {};
    if (n > 0) std::memcpy(words, p, n * sizeof(uint16_t));
    return widen8(_mm_load_si128(reinterpret_cast<const __m128i *>(words)));
}

// The low 16 bits of 8 lanes as 8 words.
LIBDECONV_AVX2 inline __m128i pack8(__m256i lanes) {
    const __m256i packed = _mm256_packus_epi32(lanes, lanes); // words 0-3 in the low half, 4-7 in the high
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}
// Round to nearest even, NaN stays NaN (quiet): f32_to_bf16 on 8 lanes.
LIBDECONV_AVX2 inline __m128i bf16_words8(__m256 v) {
    const __m256i bits = _mm256_castps_si256(v), high = _mm256_srli_epi32(bits, 16);
    const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
    const __m256i rounded =
            _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd)), 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)),
            _mm256_set1_epi32(0x7f800000));
    const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    return pack8(_mm256_blendv_epi8(rounded, quiet, nan));
}

LIBDECONV_AVX2 inline void store_words8(uint16_t *p, int64_t n, __m128i words) {
    if (n >= 8) return _mm_storeu_si128(reinterpret_cast<__m128i *>(p), words);
    alignas(16) uint16_t staged[8];
    _mm_store_si128(reinterpret_cast<__m128i *>(staged), words);
    if (n > 0) std::memcpy(p, staged, n * sizeof(uint16_t));
}
// n of 8 lanes stored; never writes past element n.
LIBDECONV_AVX2 inline void store8(float *p, int64_t n, __m256 v) {
    if (n >= 8) return _mm256_storeu_ps(p, v);
    _mm256_maskstore_ps(p, first8(n), v);
}
LIBDECONV_AVX2 inline void store8(uint16_t *p, int64_t n, __m256 v) { store_words8(p, n, bf16_words8(v)); }
// Values that came from bf16 unchanged go back without rounding (bit for bit, NaNs included).
template <typename In, typename Out>
LIBDECONV_AVX2 inline void store8_unchanged(Out *p, int64_t n, __m256 v) {
    if constexpr (std::is_same_v<In, uint16_t> && std::is_same_v<Out, uint16_t>)
        store_words8(p, n, pack8(_mm256_srli_epi32(_mm256_castps_si256(v), 16)));
    else
        store8(p, n, v);
}

// row[0, count) = values[0, count): whole cache lines of row non-temporally, the partial lines
// at either end with plain stores (commit_kernels.hpp's stream_row on AVX2); see end_streaming.
template <typename T>
LIBDECONV_AVX2 void stream_row_avx2(T *row, const T *values, int64_t count) {
    constexpr int64_t kLine = 64 / sizeof(T);
    const uintptr_t address = reinterpret_cast<uintptr_t>(row);
    int64_t i = address % sizeof(T) ? count : std::min<int64_t>(count, (64 - address % 64) % 64 / sizeof(T));
    std::memcpy(row, values, i * sizeof(T));
    for (; i + kLine <= count; i += kLine) {
        auto *to = reinterpret_cast<__m256i *>(row + i);
        const auto *from = reinterpret_cast<const __m256i *>(values + i);
        _mm256_stream_si256(to, _mm256_loadu_si256(from));
        _mm256_stream_si256(to + 1, _mm256_loadu_si256(from + 1));
    }
    std::memcpy(row + i, values + i, (count - i) * sizeof(T));
}

// r[i] row i of an 8x8 matrix -> r[i] column i.
LIBDECONV_AVX2 inline void transpose8(__m256 r[8]) {
    __m256 t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);     // r[i][0] r[i+1][0] r[i][1] r[i+1][1] | [4], [5]
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]); // [2], [3] | [6], [7]
    }
    for (int i = 0; i < 8; i += 4)
        for (int j = 0; j < 2; ++j) {
            s[i + 2 * j] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], 0x44);
            s[i + 2 * j + 1] = _mm256_shuffle_ps(t[i + j], t[i + j + 2], 0xee);
        }
    for (int j = 0; j < 4; ++j) {
        r[j] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x20);
        r[j + 4] = _mm256_permute2f128_ps(s[j], s[j + 4], 0x31);
    }
}

// out[i] (=|+=) in[i] + bias[k] over k < n: plain loops, which the compiler vectorizes. In place
// (in == out) through one pointer: with two, its check for overlap takes the scalar loop.
template <bool Add, typename In, typename Out>
inline void commit_span(const In *in, Out *out, int64_t n, const float *bias, float one_bias) {
    if constexpr (std::is_same_v<In, Out>) {
        if (in == out) {
            for (int64_t k = 0; k < n; ++k) store(out, k, (Add ? 2 * load(out, k) : load(out, k)) + (bias ? bias[k] : one_bias));
            return;
        }
    }
    if (bias)
        for (int64_t k = 0; k < n; ++k) store(out, k, (Add ? load(out, k) : 0.f) + load(in, k) + bias[k]);
    else
        for (int64_t k = 0; k < n; ++k) store(out, k, (Add ? load(out, k) : 0.f) + load(in, k) + one_bias);
}

// commit_run: the same sums in spans the compiler vectorizes for AVX2 (on AVX2 the scalar loop,
// a modulo per element, made a 25 MB channels-last bias pass take 2.6x the deconvolution).
template <bool Add, typename In, typename Out>
LIBDECONV_AVX2 void commit_run_avx2(const In *in, Out *out, int64_t count, const float *bias, int64_t bias_step,
        int64_t bias_period) {
    if (!bias || !bias_step) return commit_span<Add>(in, out, count, nullptr, bias ? bias[0] : 0.f);
    if (!bias_period) return commit_span<Add>(in, out, count, bias, 0.f);
    for (int64_t i = 0; i < count; i += bias_period)
        commit_span<Add>(in + i, out + i, std::min(bias_period, count - i), bias, 0.f);
}

// commit_tile_avx512 in 8x8 tiles: channels [k0, width) of pixels [p0, p1), pixel p's channel k
// at from[at(p) + k], to rows[k * row_stride + p], plus bias[k] (bias may be null).
template <bool Add, typename In, typename Out, typename At>
LIBDECONV_AVX2 void commit_tile_avx2(const In *from, At at, Out *rows, int64_t row_stride, int64_t k0, int64_t width,
        const float *bias, int64_t p0, int64_t p1) {
    for (int64_t c0 = k0; c0 < width; c0 += 8) {
        const int64_t channels = std::min<int64_t>(8, width - c0);
        for (int64_t p = p0; p < p1; p += 8) {
            const int64_t pixels = std::min<int64_t>(8, p1 - p);
            __m256 r[8];
            for (int i = 0; i < 8; ++i) r[i] = i < pixels ? load8(from + at(p + i) + c0, channels) : _mm256_setzero_ps();
            transpose8(r);
            for (int k = 0; k < channels; ++k) {
                Out *row = rows + (c0 + k) * row_stride + p;
                if (!bias && !Add) {
                    store8_unchanged<In>(row, pixels, r[k]);
                    continue;
                }
                __m256 v = bias ? _mm256_add_ps(r[k], _mm256_set1_ps(bias[c0 + k])) : r[k];
                if (Add) v = _mm256_add_ps(v, load8(row, pixels));
                store8(row, pixels, v);
            }
        }
    }
}

// uncommit_tile_avx512 in 8x8 tiles: channel k of pixel p from planes[k * plane_stride + p] to
// to[at(p) + k] for k < lanes, zeros from channel `width` on.
template <typename In, typename Out, typename At>
LIBDECONV_AVX2 void uncommit_tile_avx2(const In *planes, int64_t plane_stride, Out *to, At at, int64_t lanes,
        int64_t width, int64_t p0, int64_t p1) {
    for (int64_t k0 = 0; k0 < lanes; k0 += 8) {
        const int64_t channels = std::clamp<int64_t>(width - k0, 0, 8), stored = std::min<int64_t>(8, lanes - k0);
        for (int64_t p = p0; p < p1; p += 8) {
            const int64_t pixels = std::min<int64_t>(8, p1 - p);
            __m256 r[8];
            for (int i = 0; i < 8; ++i)
                r[i] = i < channels ? load8(planes + (k0 + i) * plane_stride + p, pixels) : _mm256_setzero_ps();
            transpose8(r);
            for (int j = 0; j < pixels; ++j) store8_unchanged<In>(to + at(p + j) + k0, stored, r[j]);
        }
    }
}

// copy_channel_run_avx512 by 8 channels: pixel p's channels from[from_at(p) + k] to
// to[p * to_step + k], `valid` of them read (with bias[k]), zeros up to `width`.
template <bool Add, typename In, typename Out, typename At>
LIBDECONV_AVX2 void copy_channel_run_avx2(const In *from, At from_at, Out *to, int64_t to_step, int64_t valid,
        int64_t width, const float *bias, int64_t p0, int64_t p1) {
    for (int64_t k0 = 0; k0 < width; k0 += 8) {
        const int64_t lanes = std::min<int64_t>(8, width - k0), read = std::clamp<int64_t>(valid - k0, 0, 8);
        const __m256 beta = bias && read ? load8(bias + k0, read) : _mm256_setzero_ps();
        for (int64_t p = p0; p < p1; ++p) {
            const __m256 v = load8(from + from_at(p) + k0, read);
            Out *at = to + p * to_step + k0;
            if (!bias && !Add) {
                store8_unchanged<In>(at, lanes, v);
                continue;
            }
            __m256 x = bias ? _mm256_add_ps(v, beta) : v;
            if (Add) x = _mm256_add_ps(x, load8(at, lanes));
            store8(at, lanes, x);
        }
    }
}

// commit_gathered_avx512 by 8: out[i] (=|+=) from[index[i]] + bias. A bf16 gather reads the 2
// bytes after each element (the commit's input is in the workspace, which has them).
template <bool Add, typename In, typename Out>
LIBDECONV_AVX2 void commit_gathered_avx2(const In *from, const int32_t *index, Out *out, int64_t count,
        const float *bias, int64_t bias_step) {
    for (int64_t i = 0; i < count; i += 8) {
        const int64_t n = std::min<int64_t>(8, count - i);
        const __m256i m = first8(n);
        const __m256i at = n == 8 ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(index + i))
                                  : _mm256_maskload_epi32(index + i, m);
        __m256 v;
        if constexpr (std::is_same_v<In, float>) {
            v = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), from, at, _mm256_castsi256_ps(m), 4);
        } else {
            const __m256i words = _mm256_mask_i32gather_epi32(_mm256_setzero_si256(),
                    reinterpret_cast<const int *>(from), at, m, 2);
            v = _mm256_castsi256_ps(_mm256_slli_epi32(words, 16));
        }
        if (!bias && !Add) {
            store8_unchanged<In>(out + i, n, v);
            continue;
        }
        if (bias) v = _mm256_add_ps(v, bias_step ? load8(bias + i, n) : _mm256_set1_ps(*bias));
        if (Add) v = _mm256_add_ps(v, load8(out + i, n));
        store8(out + i, n, v);
    }
}

} // namespace commit_kernels
} // namespace libdeconv
