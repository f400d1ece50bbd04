// The vector kernels of the commits (output_commit.hpp, phase_interleave.hpp): masked AVX-512
// loads and stores of f32 and bf16, 16x16 register transposes, gathers, and element runs with a
// bias and an add; each with an AVX2 version (commit_kernels_avx2.hpp) and a portable fallback.
#pragma once

#include "bf16.hpp"
#include "commit_elements.hpp"
#include "commit_kernels_avx2.hpp"
#include "cpu_features.hpp"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

// GCC 12 flags the "undefined" vectors inside its own AVX-512 intrinsics (a false positive; as
// maybe or as certainly uninitialized, depending on what it inlines where). Clang does not.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace libdeconv {
namespace commit_kernels {

// AVX-512: 16 pixels x 16 channels at a time, loaded as 16 pixel rows, transposed
// in registers into 16 channel rows and stored with masks at the channel and pixel edges.
#define LIBDECONV_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// Masked loads and stores only where the mask is partial: on AMD Zen 4 a masked load with
// every lane set made the f32 commit run at a third of its speed (stores alike, to be safe).
// The first n of 16 lanes (none for n <= 0).
inline __mmask16 first_lanes(int64_t n) {
    return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : static_cast<__mmask16>((1u << n) - 1);
}

LIBDECONV_AVX512 inline __m512 load_masked(const float *p, __mmask16 m) {
    return m == 0xffff ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}
LIBDECONV_AVX512 inline __m512 load_masked(const uint16_t *p, __mmask16 m) {
    const __m256i words = m == 0xffff ? _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))
                                      : _mm256_maskz_loadu_epi16(m, p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(words), 16));
}
LIBDECONV_AVX512 inline void store_masked(float *p, __mmask16 m, __m512 v) {
    if (m == 0xffff)
        _mm512_storeu_ps(p, v);
    else
        _mm512_mask_storeu_ps(p, m, v);
}
LIBDECONV_AVX512 inline void store_words(uint16_t *p, __mmask16 m, __m256i words) {
    if (m == 0xffff)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), words);
    else
        _mm256_mask_storeu_epi16(p, m, words);
}

inline bool has_avx512_bf16() {
    static const bool has = has_avx512() && __builtin_cpu_supports("avx512bf16");
    return has;
}

// 16 f32 values as bf16 words, by the CPU's instruction (Native: AVX512_BF16) or in integers.
template <bool Native>
LIBDECONV_AVX512 inline __m256i bf16_words_by(__m512 v) {
    if constexpr (Native) {
        // One instruction instead of ten, as inline assembly so that no function needs an
        // AVX512_BF16 target: rounds to nearest even, NaN stays NaN, and f32 denormals become
        // zero, as in oneDNN's own bf16 kernels on such CPUs.
        __m256i words;
        __asm__("vcvtneps2bf16 %1, %0" : "=v"(words) : "v"(v));
        return words;
    }
    // Round to nearest even; NaN stays NaN (quiet), as f32_to_bf16.
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
            _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd)), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, quiet));
}
LIBDECONV_AVX512 inline __m256i bf16_words(__m512 v) {
    return has_avx512_bf16() ? bf16_words_by<true>(v) : bf16_words_by<false>(v);
}

LIBDECONV_AVX512 inline void store_masked(uint16_t *p, __mmask16 m, __m512 v) {
    store_words(p, m, bf16_words(v));
}

// A value that came from bf16 unchanged needs no rounding on the way back.
template <typename In, typename Out>
LIBDECONV_AVX512 inline void store_unchanged(Out *p, __mmask16 m, __m512 v) {
    if constexpr (std::is_same_v<In, uint16_t> && std::is_same_v<Out, uint16_t>)
        store_words(p, m, _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16)));
    else
        store_masked(p, m, v);
}

// Non-temporal stores for large commits: they skip reading every destination line before
// writing it, which made the f32 commit 2-3x slower than oneDNN's reorder on AMD Zen 4 (16 MB:
// 1.7 ms with plain stores, 0.5 ms streamed, 0.8 ms oneDNN), and an input's copy 1.2-1.4x. Smaller
// tensors keep plain stores: whoever reads them next (the next layer, the kernel) likely finds
// them in cache (streaming a 3 MB input made a warm adj.s2 backward data 20% slower).
constexpr int64_t kStreamBytes = int64_t(4) << 20;
inline bool worth_streaming(int64_t bytes) { return bytes >= kStreamBytes; }

// Rows of `pixels` cut into tiles of `tile` whose bounds, but a row's first and last, fall on
// the destination's cache lines: its first line boundary is `first` pixels into the row
// (line_boundary). A tile that streams then shares no line with another tile; tiles cut
// from a row's start shared one line at each end with a neighbour once the destination
// was not on a line (fcn8s.upscore8 bf16 forward, dst 16 bytes past a line: 2.0 against 1.5 ms).
struct LineTiles {
    int64_t pixels, tile, back, count;
    LineTiles(int64_t row_pixels, int64_t tile_pixels, int64_t first)
        : pixels(row_pixels), tile(tile_pixels), back((tile_pixels - first % tile_pixels) % tile_pixels),
          count((row_pixels + back + tile_pixels - 1) / tile_pixels) {}
    int64_t begin(int64_t t) const { return std::max<int64_t>(0, t * tile - back); }
    int64_t end(int64_t t) const { return std::min(pixels, (t + 1) * tile - back); }
};

// Elements of `element` bytes from `p` to its next cache line (0 on one, or where elements
// cannot reach a line).
inline int64_t line_boundary(const void *p, size_t element) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(p);
    return address % element ? 0 : static_cast<int64_t>((64 - address % 64) % 64 / element);
}

// to[0, n) = from[0, n) for n elements within one cache line, with plain stores.
template <typename T>
LIBDECONV_AVX512 inline void copy_within_line(T *to, const T *from, int64_t n) {
    const __mmask64 m = n * int64_t(sizeof(T)) >= 64 ? ~__mmask64(0) : (__mmask64(1) << (n * sizeof(T))) - 1;
    _mm512_mask_storeu_epi8(to, m, _mm512_maskz_loadu_epi8(m, from));
}

// row[0, count) = values[0, count): whole cache lines of row non-temporally, the partial lines
// at either end (where row does not start or end on a line) with plain stores.
template <typename T>
LIBDECONV_AVX512 void stream_row(T *row, const T *values, int64_t count) {
    constexpr int64_t kLine = 64 / sizeof(T);
    const uintptr_t address = reinterpret_cast<uintptr_t>(row);
    int64_t i = address % sizeof(T) ? count : std::min<int64_t>(count, (64 - address % 64) % 64 / sizeof(T));
    for (int64_t j = 0; j < i; j += kLine) copy_within_line(row + j, values + j, std::min(kLine, i - j));
    for (; i + kLine <= count; i += kLine)
        _mm512_stream_si512(reinterpret_cast<__m512i *>(row + i), _mm512_loadu_si512(values + i));
    if (i < count) copy_within_line(row + i, values + i, count - i);
}

// 16 values to an aligned place (64 bytes for f32, 32 for bf16), non-temporally.
LIBDECONV_AVX512 inline void stream_full(float *p, __m512 v) { _mm512_stream_ps(p, v); }
LIBDECONV_AVX512 inline void stream_full(uint16_t *p, __m512 v) {
    _mm256_stream_si256(reinterpret_cast<__m256i *>(p), bf16_words(v));
}
// The same for a value that came from bf16 unchanged (store_unchanged).
template <typename In, typename Out>
LIBDECONV_AVX512 inline void stream_unchanged(Out *p, __m512 v) {
    if constexpr (std::is_same_v<In, uint16_t> && std::is_same_v<Out, uint16_t>)
        _mm256_stream_si256(reinterpret_cast<__m256i *>(p),
                _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16)));
    else
        stream_full(p, v);
}

// Streamed stores are weakly ordered: each thread that made them fences once at the end of its
// share of a loop, before the loop's join makes the output the caller's (a fence per tile
// halved the speed gained).
inline void end_streaming(bool streamed) {
    if (streamed) _mm_sfence();
}

// Tiles of at most this many pixels per channel are staged for stream_row.
constexpr int64_t kStreamTile = 128;

// A contiguous destination written piece by piece (take(n), then the n values written there)
// through a buffer in L1 that streams whole lines of it: pieces shorter than a line, or that
// start off one, would each share a line with their neighbours (channels-last pixels of 3 or 64
// bf16 channels into a buffer 16 bytes past a line). Only the destination's first and last lines
// take plain stores. finish() writes what is left; see end_streaming.
template <typename Out>
class LineStager {
public:
    static constexpr int64_t kCapacity = 4096 / sizeof(Out);
    static constexpr int64_t kMaxPiece = kCapacity / 2; // a piece fits after a flush

    explicit LineStager(Out *to) : to_(to) {}
    Out *take(int64_t n) {
        if (pending_ + n > kCapacity) flush(false);
        Out *piece = staged_ + pending_;
        pending_ += n;
        return piece;
    }
    void finish() { flush(true); }

private:
    // Every whole line staged (all: everything), the rest moved to the front.
    LIBDECONV_AVX512 void flush(bool all) {
        const uintptr_t end = reinterpret_cast<uintptr_t>(to_ + pending_);
        const int64_t kept = all || end % sizeof(Out) ? 0 : std::min<int64_t>(pending_, end % 64 / sizeof(Out));
        const int64_t written = pending_ - kept;
        stream_row(to_, staged_, written);
        std::copy(staged_ + written, staged_ + pending_, staged_);
        to_ += written;
        pending_ = kept;
    }

    Out *to_;
    int64_t pending_ = 0;
    alignas(64) Out staged_[kCapacity];
};

// r[i] row i of a 16x16 matrix -> r[i] column i.
LIBDECONV_AVX512 inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4)
        for (int j = 0; j < 2; ++j) {
            const __m512d a = _mm512_castps_pd(t[i + j]), b = _mm512_castps_pd(t[i + j + 2]);
            r[i + 2 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
            r[i + 2 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        }
    for (int i = 0; i < 16; i += 8)
        for (int j = 0; j < 4; ++j) {
            t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
            t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
        }
    for (int j = 0; j < 8; ++j) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
    }
}

// The same transpose of 16 rows of 16 f32 values (row i at m + i * stride) done half by the loads:
// 128-bit pieces of rows i, i + 4, i + 8, i + 12 loaded into the four lanes of one vector, then
// a 4x4 transpose within the lanes; half the shuffles of transpose16, which on AMD Zen 4 made
// the transposing copy of 16 planes into channel blocks twice as slow as oneDNN's reorder
// (16 x 16 x 3136 f32: 0.093 -> 0.058 ms from cache, 0.25 -> 0.16 from memory).
LIBDECONV_AVX512 inline void load_transposed16(const float *m, int64_t stride, __m512 out[16]) {
    for (int b = 0; b < 4; ++b) {
        __m512 t[4];
        for (int i = 0; i < 4; ++i) {
            __m512 v = _mm512_castps128_ps512(_mm_loadu_ps(m + i * stride + 4 * b));
            v = _mm512_insertf32x4(v, _mm_loadu_ps(m + (i + 4) * stride + 4 * b), 1);
            v = _mm512_insertf32x4(v, _mm_loadu_ps(m + (i + 8) * stride + 4 * b), 2);
            t[i] = _mm512_insertf32x4(v, _mm_loadu_ps(m + (i + 12) * stride + 4 * b), 3);
        }
        const __m512d u0 = _mm512_castps_pd(_mm512_unpacklo_ps(t[0], t[1]));
        const __m512d u1 = _mm512_castps_pd(_mm512_unpackhi_ps(t[0], t[1]));
        const __m512d u2 = _mm512_castps_pd(_mm512_unpacklo_ps(t[2], t[3]));
        const __m512d u3 = _mm512_castps_pd(_mm512_unpackhi_ps(t[2], t[3]));
        out[4 * b] = _mm512_castpd_ps(_mm512_unpacklo_pd(u0, u2));
        out[4 * b + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(u0, u2));
        out[4 * b + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(u1, u3));
        out[4 * b + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(u1, u3));
    }
}

// One channel of 16 pixels `block` elements apart. A bf16 gather reads the 2 bytes after each
// element: the commit's input is in the workspace, which has 64 bytes more than its regions.
LIBDECONV_AVX512 inline __m512 gather16(const float *from, __m512i index, __mmask16 m) {
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, index, from, 4);
}
LIBDECONV_AVX512 inline __m512 gather16(const uint16_t *from, __m512i index, __mmask16 m) {
    const __m512i words = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, index, from, 2);
    return _mm512_castsi512_ps(_mm512_slli_epi32(words, 16));
}

// Up to this many channels are gathered instead of transposed (measured: 3 channels of nhwc
// bf16, dcgan.l5's output, 0.24 ms transposed, 0.14 ms gathered).
constexpr int64_t kGatheredChannels = 4;

// An add reads 16 rows of the caller's output at once, more streams than the hardware
// prefetcher follows: asking for each row 512 bytes ahead made a cold DECONV_REQ_ADD commit
// 7-25% faster on AMD Zen 4 (dcgan.l5 backward data). A prefetch never faults past the end.
template <typename T>
inline void prefetch_ahead(const T *row) {
    constexpr int64_t kAheadBytes = 512;
    _mm_prefetch(reinterpret_cast<const char *>(reinterpret_cast<uintptr_t>(row) + kAheadBytes), _MM_HINT_T0);
}

// 32 bf16 words of a row: rows of bf16 are written 32 pixels (a cache line) at a time, with half
// the loads, stores and conversions of 16 at a time (4 MB nChw16c -> nchw on AMD Zen 4, best of
// 201: with an add 0.30-0.33 -> 0.17-0.18 ms, with a bias 0.23-0.25 -> 0.16-0.18 ms).
LIBDECONV_AVX512 inline __m512i load_words(const uint16_t *p, __mmask32 m) {
    return m == 0xffffffffu ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(m, p);
}
LIBDECONV_AVX512 inline void store_words(uint16_t *p, __mmask32 m, __m512i words) {
    if (m == 0xffffffffu)
        _mm512_storeu_si512(p, words);
    else
        _mm512_mask_storeu_epi16(p, m, words);
}
// Words [0, 16) and [16, 32) as f32.
LIBDECONV_AVX512 inline __m512 low_half(__m512i words) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(words)), 16));
}
LIBDECONV_AVX512 inline __m512 high_half(__m512i words) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(words, 1)), 16));
}
// lo, hi rounded to bf16: words [0, 16) and [16, 32).
LIBDECONV_AVX512 inline __m512i bf16_words(__m512 lo, __m512 hi) {
    if (has_avx512_bf16()) {
        __m512i words; // as bf16_words(__m512)
        __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(words) : "v"(hi), "v"(lo));
        return words;
    }
    return _mm512_inserti64x4(_mm512_castsi256_si512(bf16_words(lo)), bf16_words(hi), 1);
}
// The same for values that came from bf16 unchanged (store_unchanged): their high words.
LIBDECONV_AVX512 inline __m512i unchanged_words(__m512 lo, __m512 hi) {
    const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31,
            29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    return _mm512_permutex2var_epi16(_mm512_castps_si512(lo), odd, _mm512_castps_si512(hi));
}

// r[k] = channel c0 + k (k < channels) of the 16 pixels from p, [p, p + pixels) of them, 0
// beyond; pixel p's channels start at from[at(p)].
template <typename In, typename At>
LIBDECONV_AVX512 inline void transposed16(const In *from, At at, int64_t c0, int64_t channels, int64_t p,
        int64_t pixels, __m512 r[16]) {
    const __mmask16 pixel_mask = static_cast<__mmask16>((1u << pixels) - 1);
    const __mmask16 channel_mask = static_cast<__mmask16>((1u << channels) - 1);
    const int64_t first = at(p);
    // A transpose would be mostly empty: gather, where 32-bit indices reach the pixels.
    bool gather = channels <= kGatheredChannels;
    alignas(64) int32_t offsets[16] = {};
    for (int i = 0; gather && i < pixels; ++i) {
        const int64_t offset = at(p + i) - first;
        gather = offset >= 0 && offset < (int64_t(1) << 28);
        offsets[i] = static_cast<int32_t>(offset);
    }
    if (gather) {
        const __m512i index = _mm512_load_si512(offsets);
        for (int k = 0; k < channels; ++k) r[k] = gather16(from + first + c0 + k, index, pixel_mask);
        return;
    }
    for (int i = 0; i < 16; ++i)
        r[i] = i < pixels ? load_masked(from + at(p + i) + c0, channel_mask) : _mm512_setzero_ps();
    transpose16(r);
}

// Channels [k0, width) of pixels [p0, p1): pixel p, channel k is from[at(p) + k]; channel k goes
// to rows[k * row_stride + p]. `at` gives each pixel's place: p * block for channel blocks, a
// table for the phases of a subpixel convolution (phase_interleave.hpp). Stream: each channel's
// pixels are staged (kStreamTile at a time) and written by stream_row; see end_streaming.
template <bool Add, bool Stream, typename In, typename Out, typename At>
LIBDECONV_AVX512 void commit_tile_avx512(const In *from, At at, Out *rows, int64_t row_stride, int64_t k0,
        int64_t width, const float *bias, int64_t p0, int64_t p1) {
    static_assert(!(Add && Stream), "an add reads the destination anyway");
    constexpr bool kWords = std::is_same_v<Out, uint16_t>;
    constexpr int64_t kStep = kWords ? 32 : 16; // pixels per row store
    for (int64_t c0 = k0; c0 < width; c0 += 16) {
        const int64_t channels = std::min<int64_t>(16, width - c0);
        for (int64_t s0 = p0; s0 < p1; s0 += Stream ? kStreamTile : p1 - p0) {
            const int64_t s1 = Stream ? std::min(p1, s0 + kStreamTile) : p1;
            alignas(64) Out staged[Stream ? 16 : 1][Stream ? kStreamTile : 1];
            for (int64_t p = s0; p < s1; p += kStep) {
                const int64_t pixels = std::min<int64_t>(kStep, s1 - p);
                __m512 r[16], h[16]; // pixels [p, p + 16), and [p + 16, p + 32) for bf16 rows
                transposed16(from, at, c0, channels, p, std::min<int64_t>(16, pixels), r);
                if constexpr (kWords) {
                    if (pixels > 16) transposed16(from, at, c0, channels, p + 16, pixels - 16, h);
                    else
                        for (int k = 0; k < channels; ++k) h[k] = _mm512_setzero_ps();
                }
                for (int k = 0; k < channels; ++k) {
                    Out *row = Stream ? staged[k] + (p - s0) : rows + (c0 + k) * row_stride + p;
                    const __m512 beta = bias ? _mm512_set1_ps(bias[c0 + k]) : _mm512_setzero_ps();
                    if constexpr (kWords) {
                        const __mmask32 mask = pixels == 32 ? 0xffffffffu : (1u << pixels) - 1;
                        if (!bias && !Add && std::is_same_v<In, uint16_t>) {
                            store_words(row, mask, unchanged_words(r[k], h[k]));
                            continue;
                        }
                        __m512 lo = bias ? _mm512_add_ps(r[k], beta) : r[k];
                        __m512 hi = bias ? _mm512_add_ps(h[k], beta) : h[k];
                        if (Add) {
                            prefetch_ahead(row);
                            const __m512i old = load_words(row, mask);
                            lo = _mm512_add_ps(lo, low_half(old));
                            hi = _mm512_add_ps(hi, high_half(old));
                        }
                        store_words(row, mask, bf16_words(lo, hi));
                    } else {
                        const __mmask16 mask = static_cast<__mmask16>((1u << pixels) - 1);
                        if (!bias && !Add) {
                            store_unchanged<In>(row, mask, r[k]);
                            continue;
                        }
                        __m512 v = bias ? _mm512_add_ps(r[k], beta) : r[k];
                        if (Add) {
                            prefetch_ahead(row);
                            v = _mm512_add_ps(v, load_masked(row, mask));
                        }
                        store_masked(row, mask, v);
                    }
                }
            }
            if (Stream)
                for (int k = 0; k < channels; ++k) stream_row(rows + (c0 + k) * row_stride + s0, staged[k], s1 - s0);
        }
    }
}

// Below this many elements a commit runs on the calling thread: a fork and join costs more.
constexpr int64_t kParallelElements = int64_t(1) << 14;

// A run's stores with the bf16 conversion chosen once (bf16_words_by).
template <bool Native>
LIBDECONV_AVX512 inline void store_by(float *p, __mmask16 m, __m512 v) { store_masked(p, m, v); }
template <bool Native>
LIBDECONV_AVX512 inline void store_by(uint16_t *p, __mmask16 m, __m512 v) { store_words(p, m, bf16_words_by<Native>(v)); }
template <bool Native>
LIBDECONV_AVX512 inline void stream_by(float *p, __m512 v) { _mm512_stream_ps(p, v); }
template <bool Native>
LIBDECONV_AVX512 inline void stream_by(uint16_t *p, __m512 v) {
    _mm256_stream_si256(reinterpret_cast<__m256i *>(p), bf16_words_by<Native>(v));
}

enum class RunBias { none, one, vector, periodic };

// Elements [i, i + n) of a run (commit_run_avx512), under mask m.
template <bool Add, bool Stream, RunBias B, bool Native, typename In, typename Out>
LIBDECONV_AVX512 inline void commit_vector(const In *in, Out *out, int64_t i, int64_t n, __mmask16 m, const float *bias,
        __m512 one_bias, int64_t &at, int64_t bias_period) {
    __m512 v = load_masked(in + i, m);
    if constexpr (B == RunBias::one) v = _mm512_add_ps(v, one_bias);
    if constexpr (B == RunBias::vector) v = _mm512_add_ps(v, load_masked(bias + i, m));
    if constexpr (B == RunBias::periodic) {
        v = _mm512_add_ps(v, load_masked(bias + at, m));
        if ((at += 16) == bias_period) at = 0;
    }
    if constexpr (Add) v = _mm512_add_ps(v, load_masked(out + i, m));
    if (Stream && n == 16 && reinterpret_cast<uintptr_t>(out + i) % (16 * sizeof(Out)) == 0)
        stream_by<Native>(out + i, v);
    else
        store_by<Native>(out + i, m, v);
}

// Every choice made before the loop (bias, conversion) and whole vectors unmasked: with them
// taken per vector, an in-place bias ran at 7 cycles a vector, 2-3x the time of this loop on
// tensors in cache.
template <bool Add, bool Stream, RunBias B, bool Native, typename In, typename Out>
LIBDECONV_AVX512 void commit_run_by(const In *in, Out *out, int64_t count, const float *bias, int64_t bias_period) {
    const __m512 one_bias = B == RunBias::one ? _mm512_set1_ps(*bias) : _mm512_setzero_ps();
    int64_t at = 0; // in the bias period
    int64_t i = 0;
    // Streamed: whole vectors on their alignment, but none whose cache line also takes the plain
    // stores of the run's partial first or last vector (a neighbouring run writes the rest of
    // those lines): a line that takes plain and streamed stores both costs more than streaming
    // saves. bf16 vectors are half a line (unet.up1 bf16 channels-last forward, runs of 256
    // channels into a buffer 48 bytes past a line: 6.9 ms mixed, 1.9-2.0 ms aligned or not mixed).
    const uintptr_t address = reinterpret_cast<uintptr_t>(out);
    if constexpr (Stream) {
        if (address % sizeof(Out) != 0) return commit_run_by<Add, false, B, Native>(in, out, count, bias, bias_period);
        const auto starts_line = [address](int64_t e) { return (address + e * sizeof(Out)) % 64 == 0; };
        const int64_t head = std::min<int64_t>(count, (64 - address % 64) % 64 / sizeof(Out) % 16);
        const int64_t whole_end = head + (count - head) / 16 * 16;
        const int64_t from = std::min(whole_end, head + (head > 0 && !starts_line(head) ? 16 : 0));
        const int64_t to = whole_end - (whole_end < count && !starts_line(whole_end) ? 16 : 0);
        if (head > 0)
            commit_vector<Add, false, B, Native>(in, out, 0, head, static_cast<__mmask16>((1u << head) - 1), bias,
                    one_bias, at, bias_period);
        for (i = head; i < from; i += 16)
            commit_vector<Add, false, B, Native>(in, out, i, 16, 0xffff, bias, one_bias, at, bias_period);
        for (; i < to; i += 16)
            commit_vector<Add, true, B, Native>(in, out, i, 16, 0xffff, bias, one_bias, at, bias_period);
    }
    for (; i + 16 <= count; i += 16)
        commit_vector<Add, false, B, Native>(in, out, i, 16, 0xffff, bias, one_bias, at, bias_period);
    if (i < count)
        commit_vector<Add, false, B, Native>(in, out, i, count - i, static_cast<__mmask16>((1u << (count - i)) - 1),
                bias, one_bias, at, bias_period);
}

template <bool Add, bool Stream, bool Native, typename In, typename Out>
LIBDECONV_AVX512 void commit_run_native(const In *in, Out *out, int64_t count, const float *bias, int64_t bias_step,
        int64_t bias_period) {
    if (!bias) return commit_run_by<Add, Stream, RunBias::none, Native>(in, out, count, bias, bias_period);
    if (!bias_step) return commit_run_by<Add, Stream, RunBias::one, Native>(in, out, count, bias, bias_period);
    if (!bias_period) return commit_run_by<Add, Stream, RunBias::vector, Native>(in, out, count, bias, bias_period);
    commit_run_by<Add, Stream, RunBias::periodic, Native>(in, out, count, bias, bias_period);
}

// out[i] (=|+=) in[i] + bias over `count` elements; bias is one value (step 0) or a vector,
// with bias_period > 0 one of that many elements repeated (a multiple of 16: channels-last
// pixels, which a run then holds many of). Stream: non-temporal stores from the first cache
// line of out on (the part before it plain); see end_streaming. Not with a bias period.
template <bool Add, bool Stream, typename In, typename Out>
LIBDECONV_AVX512 void commit_run_avx512(const In *in, Out *out, int64_t count, const float *bias, int64_t bias_step,
        int64_t bias_period) {
    static_assert(!(Add && Stream), "an add reads the destination anyway");
    if constexpr (std::is_same_v<Out, uint16_t>)
        if (has_avx512_bf16()) return commit_run_native<Add, Stream, true>(in, out, count, bias, bias_step, bias_period);
    commit_run_native<Add, Stream, false>(in, out, count, bias, bias_step, bias_period);
}

template <bool Add, bool Stream = false, typename In, typename Out>
void commit_run(const In *in, Out *out, int64_t count, const float *bias, int64_t bias_step, int64_t bias_period = 0) {
    if (has_avx512()) return commit_run_avx512<Add, Stream>(in, out, count, bias, bias_step, bias_period);
    if (has_avx2()) return commit_run_avx2<Add>(in, out, count, bias, bias_step, bias_period);
    for (int64_t i = 0; i < count; ++i) {
        const float v = load(in, i) + (bias ? bias[(bias_period ? i % bias_period : i) * bias_step] : 0.f);
        store(out, i, Add ? load(out, i) + v : v);
    }
}

// The way in: channels-first planes (channel k of pixel p at planes[k * plane_stride + p]) into
// pixel-major rows: `lanes` channels of pixel p at to[at(p)], those from `width` on written as
// zeros (a channel block's padding). Stream: pixels of 16 lanes that start on a vector's
// alignment are stored non-temporally; see end_streaming.
constexpr int64_t kPlanePrefetch = 64; // pixels ahead in each plane

template <bool Stream, typename In, typename Out, typename At>
LIBDECONV_AVX512 void uncommit_tile_avx512(const In *planes, int64_t plane_stride, Out *to, At at, int64_t lanes,
        int64_t width, int64_t p0, int64_t p1) {
    for (int64_t k0 = 0; k0 < lanes; k0 += 16) {
        const int64_t channels = std::max<int64_t>(0, std::min<int64_t>(16, width - k0));
        const __mmask16 lane_mask = static_cast<__mmask16>((1u << std::min<int64_t>(16, lanes - k0)) - 1);
        for (int64_t p = p0; p < p1; p += 16) {
            const int64_t pixels = std::min<int64_t>(16, p1 - p);
            const __mmask16 pixel_mask = static_cast<__mmask16>((1u << pixels) - 1);
            __m512 r[16];
            const In *first = planes + k0 * plane_stride + p;
            if (std::is_same_v<In, float> && channels == 16 && pixels == 16) {
                load_transposed16(reinterpret_cast<const float *>(first), plane_stride, r);
            } else {
                for (int i = 0; i < 16; ++i)
                    r[i] = i < channels ? load_masked(first + i * plane_stride, pixel_mask) : _mm512_setzero_ps();
                transpose16(r);
            }
            // 16 planes read side by side are more streams than the prefetchers follow: from
            // memory the loads waited (16 x 3136 f32 pixels into nChw16c, cold: 0.26 -> 0.22 ms).
            if (p + kPlanePrefetch < p1)
                for (int i = 0; i < channels; ++i)
                    _mm_prefetch(reinterpret_cast<const char *>(first + i * plane_stride + kPlanePrefetch), _MM_HINT_T0);
            for (int j = 0; j < pixels; ++j) {
                Out *pixel = to + at(p + j) + k0;
                if (Stream && lane_mask == 0xffff && reinterpret_cast<uintptr_t>(pixel) % (16 * sizeof(Out)) == 0)
                    stream_unchanged<In>(pixel, r[j]);
                else
                    store_unchanged<In>(pixel, lane_mask, r[j]);
            }
        }
    }
}

// A vector of up to 16 elements moved unchanged (same type, no bias, no add).
LIBDECONV_AVX512 inline void move16(const float *from, float *to, __mmask16 m) {
    if (m == 0xffff)
        _mm512_storeu_ps(to, _mm512_loadu_ps(from));
    else
        _mm512_mask_storeu_ps(to, m, _mm512_maskz_loadu_ps(m, from));
}
LIBDECONV_AVX512 inline void move16(const uint16_t *from, uint16_t *to, __mmask16 m) {
    if (m == 0xffff)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(to), _mm256_loadu_si256(reinterpret_cast<const __m256i *>(from)));
    else
        _mm256_mask_storeu_epi16(to, m, _mm256_maskz_loadu_epi16(m, from));
}

// The pixels of one vector of channels, every choice made before the loop (commit_run_by).
template <bool Add, bool Biased, bool Native, typename In, typename Out, typename At>
LIBDECONV_AVX512 void copy_channel_vector(const In *from, At from_at, Out *to, int64_t to_step,
        __mmask16 read_mask, __mmask16 store_mask, __m512 beta, int64_t p0, int64_t p1) {
    // An add reads the next pixel's destination before this pixel's store: a masked store
    // of fewer lanes than the vector (8 f32 channels) overlaps that read in its full width,
    // which then waits for the store (tiny.latency channels-last backward data: the add took
    // 0.45 us more than the write of a 2.2 us call).
    __m512 ahead = Add ? load_masked(to + p0 * to_step, store_mask) : _mm512_setzero_ps();
    for (int64_t p = p0; p < p1; ++p) {
        const __m512 v = load_masked(from + from_at(p), read_mask); // zeros past `valid`
        Out *at = to + p * to_step;
        if constexpr (!Biased && !Add) {
            store_unchanged<In>(at, store_mask, v);
            continue;
        }
        __m512 x = Biased ? _mm512_add_ps(v, beta) : v;
        if constexpr (Add) {
            x = _mm512_add_ps(x, ahead);
            if (p + 1 < p1) ahead = load_masked(at + to_step, store_mask);
        }
        store_by<Native>(at, store_mask, x);
    }
}

template <bool Add, bool Native, typename In, typename Out, typename At>
LIBDECONV_AVX512 void copy_channel_run_by(const In *from, At from_at, Out *to, int64_t to_step,
        int64_t valid, int64_t width, const float *bias, int64_t p0, int64_t p1) {
    for (int64_t k0 = 0; k0 < width; k0 += 16) {
        const int64_t lanes = std::min<int64_t>(16, width - k0), read = std::clamp<int64_t>(valid - k0, 0, 16);
        const __mmask16 store_mask = static_cast<__mmask16>((1u << lanes) - 1);
        const __mmask16 read_mask = static_cast<__mmask16>((1u << read) - 1);
        if constexpr (std::is_same_v<In, Out> && !Add) {
            if (!bias && read == lanes) {
                for (int64_t p = p0; p < p1; ++p) move16(from + from_at(p) + k0, to + p * to_step + k0, store_mask);
                continue;
            }
        }
        const __m512 beta = bias && read ? load_masked(bias + k0, read_mask) : _mm512_setzero_ps();
        if (bias)
            copy_channel_vector<Add, true, Native>(from + k0, from_at, to + k0, to_step, read_mask, store_mask, beta,
                    p0, p1);
        else
            copy_channel_vector<Add, false, Native>(from + k0, from_at, to + k0, to_step, read_mask, store_mask, beta,
                    p0, p1);
    }
}

// Pixels [p0, p1) of a run of channels that is contiguous on both sides: pixel p's first
// channel at from[from_at(p)] and to[p * to_step]. `valid` channels are read (and get the
// bias); the destination's `width` >= valid are written, zeros past `valid` (a channel block's
// padding).
template <bool Add, typename In, typename Out, typename At>
LIBDECONV_AVX512 void copy_channel_run_avx512(const In *from, At from_at, Out *to, int64_t to_step,
        int64_t valid, int64_t width, const float *bias, int64_t p0, int64_t p1) {
    if constexpr (std::is_same_v<Out, uint16_t>)
        if (has_avx512_bf16())
            return copy_channel_run_by<Add, true>(from, from_at, to, to_step, valid, width, bias, p0, p1);
    copy_channel_run_by<Add, false>(from, from_at, to, to_step, valid, width, bias, p0, p1);
}

template <bool Add, typename In, typename Out, typename At>
void copy_channel_run(const In *from, At from_at, Out *to, int64_t to_step, int64_t valid, int64_t width,
        const float *bias, int64_t p0, int64_t p1) {
    if (has_avx512()) return copy_channel_run_avx512<Add>(from, from_at, to, to_step, valid, width, bias, p0, p1);
    if (has_avx2()) return copy_channel_run_avx2<Add>(from, from_at, to, to_step, valid, width, bias, p0, p1);
    for (int64_t p = p0; p < p1; ++p)
        for (int64_t k = 0; k < width; ++k) {
            const float v = k < valid ? load(from, from_at(p) + k) + (bias ? bias[k] : 0.f) : 0.f;
            store(to, p * to_step + k, Add ? load(to, p * to_step + k) + v : v);
        }
}

// out[i] (=|+=) from[index[i]] + bias over `count` elements (32-bit indices >= 0); bias is one
// value (step 0) or a vector. bf16 gathers read the 2 bytes after each element (workspace only).
template <bool Add, typename In, typename Out>
LIBDECONV_AVX512 void commit_gathered_avx512(const In *from, const int32_t *index, Out *out, int64_t count,
        const float *bias, int64_t bias_step) {
    for (int64_t i = 0; i < count; i += 16) {
        const __mmask16 m = static_cast<__mmask16>((1u << std::min<int64_t>(16, count - i)) - 1);
        const __m512i at = m == 0xffff ? _mm512_loadu_si512(index + i) : _mm512_maskz_loadu_epi32(m, index + i);
        __m512 v = gather16(from, at, m);
        if (!bias && !Add) {
            store_unchanged<In>(out + i, m, v);
            continue;
        }
        if (bias) v = _mm512_add_ps(v, bias_step ? load_masked(bias + i, m) : _mm512_set1_ps(*bias));
        if (Add) v = _mm512_add_ps(v, load_masked(out + i, m));
        store_masked(out + i, m, v);
    }
}

template <bool Add, typename In, typename Out>
void commit_gathered(const In *from, const int32_t *index, Out *out, int64_t count, const float *bias,
        int64_t bias_step) {
    if (has_avx512()) return commit_gathered_avx512<Add>(from, index, out, count, bias, bias_step);
    if (has_avx2()) return commit_gathered_avx2<Add>(from, index, out, count, bias, bias_step);
    for (int64_t i = 0; i < count; ++i) {
        const float v = load(from, index[i]) + (bias ? bias[i * bias_step] : 0.f);
        store(out, i, Add ? load(out, i) + v : v);
    }
}

} // namespace commit_kernels
} // namespace libdeconv
