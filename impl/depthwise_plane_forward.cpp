#include "depthwise_plane_forward.hpp"

#include "commit_kernels.hpp"
#include "integer_math.hpp"
#include "threads.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace libdeconv {
namespace {

using commit_kernels::first_lanes;
using commit_kernels::load_masked;
using commit_kernels::store_masked;
using Tap = DepthwisePlaneForward::Tap;

constexpr size_t kMaxBufferBytes = size_t(16) << 20; // a padded input plane; larger ones stay with the copies
constexpr int kMaxRowTaps = 256;                     // kernel rows (depth x height) reaching an output row

// An input row that reaches an output row: its padded copy, and the kernel row's weights.
struct RowTap {
    const float *row;
    const float *weights;
};

// Phase columns [q0, q0 + 16 N) of an output row, N vectors: `start` plus, per input row and
// kernel column of the phase, the weight times 16 adjacent inputs. N > 1 keeps N sums in flight
// (a chain of one vector's fused multiply-adds waits on their latency).
template <int N>
LIBDECONV_AVX512 inline void phase_sums(const RowTap *rows, int nr, const std::vector<Tap> &taps, int64_t q0,
        __m512 start, __m512 (&acc)[N]) {
    for (int n = 0; n < N; ++n) acc[n] = start;
    for (int i = 0; i < nr; ++i)
        for (const Tap &t : taps) {
            const __m512 w = _mm512_set1_ps(rows[i].weights[t.kw]);
            const float *in = rows[i].row + t.position + q0;
            for (int n = 0; n < N; ++n) acc[n] = _mm512_fmadd_ps(_mm512_loadu_ps(in + 16 * n), w, acc[n]);
        }
}
LIBDECONV_AVX512 inline __m512 phase_sums(const RowTap *rows, int nr, const std::vector<Tap> &taps, int64_t q0,
        __m512 start) {
    __m512 acc[1];
    phase_sums<1>(rows, nr, taps, q0, start, acc);
    return acc[0];
}

// 16 outputs stored; Stream: non-temporally where they are a whole aligned vector (a large
// output written, not read: without, each line of it was read before it was overwritten, and
// bilinear.dw f32 took 2.35 ms against 1.99 on channels-last copies whose commit streams).
template <bool Stream, bool Native>
LIBDECONV_AVX512 inline void put(float *p, __mmask16 m, __m512 v) {
    if (Stream && m == 0xffff && reinterpret_cast<uintptr_t>(p) % 64 == 0)
        _mm512_stream_ps(p, v);
    else
        store_masked(p, m, v);
}
// bf16 by the CPU's conversion where it has one (commit_kernels::bf16_words_by).
template <bool Stream, bool Native>
LIBDECONV_AVX512 inline void put(uint16_t *p, __mmask16 m, __m512 v) {
    const __m256i words = commit_kernels::bf16_words_by<Native>(v);
    if (Stream && m == 0xffff && reinterpret_cast<uintptr_t>(p) % 32 == 0)
        _mm256_stream_si256(reinterpret_cast<__m256i *>(p), words);
    else
        commit_kernels::store_words(p, m, words);
}

// Outputs [2 q0, 2 q0 + 32) of a row of `width` from a vector of each of two phases, interleaved.
template <bool Add, bool Stream, bool Native, typename T>
LIBDECONV_AVX512 inline void store_pair(T *out, int64_t width, int64_t q0, __m512 even, __m512 odd) {
    const __m512i low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i high = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    T *at = out + 2 * q0;
    const __mmask16 m0 = first_lanes(width - 2 * q0), m1 = first_lanes(width - 2 * q0 - 16);
    __m512 lo = _mm512_permutex2var_ps(even, low, odd), hi = _mm512_permutex2var_ps(even, high, odd);
    if (Add) {
        lo = _mm512_add_ps(lo, load_masked(at, m0));
        hi = _mm512_add_ps(hi, load_masked(at + 16, m1));
    }
    put<Stream, Native>(at, m0, lo);
    if (m1) put<Stream, Native>(at + 16, m1, hi);
}

// One output row of `width` columns. Stride 1: the phase is the row; stride 2: the two phases'
// vectors interleaved by two permutations into 32 adjacent outputs; wider: value by value.
template <bool Add, bool Stream, bool Native, typename T>
LIBDECONV_AVX512 void output_row(const std::vector<std::vector<Tap>> &phases, const RowTap *rows, int nr,
        float bias, T *out, int64_t width) {
    const __m512 start = _mm512_set1_ps(bias);
    const int64_t S = static_cast<int64_t>(phases.size());
    if (S == 1) {
        auto store = [out, width](int64_t q0, __m512 v) LIBDECONV_AVX512 {
            const __mmask16 m = first_lanes(width - q0);
            if (Add) v = _mm512_add_ps(v, load_masked(out + q0, m));
            put<Stream, Native>(out + q0, m, v);
        };
        int64_t q0 = 0;
        for (; q0 + 48 < width; q0 += 64) { // four vectors at once while the last holds outputs
            __m512 v[4];
            phase_sums<4>(rows, nr, phases[0], q0, start, v);
            for (int n = 0; n < 4; ++n) store(q0 + 16 * n, v[n]);
        }
        for (; q0 < width; q0 += 16) store(q0, phase_sums(rows, nr, phases[0], q0, start));
    } else if (S == 2) {
        int64_t q0 = 0;
        // Four vectors of each phase at once while the last holds outputs (its loads stay
        // within the padded row: DepthwisePlaneForward's row_width_).
        for (; 2 * (q0 + 48) < width; q0 += 64) {
            __m512 even[4], odd[4];
            phase_sums<4>(rows, nr, phases[0], q0, start, even);
            phase_sums<4>(rows, nr, phases[1], q0, start, odd);
            for (int n = 0; n < 4; ++n) store_pair<Add, Stream, Native>(out, width, q0 + 16 * n, even[n], odd[n]);
        }
        for (; 2 * (q0 + 16) < width; q0 += 32) {
            __m512 even[2], odd[2];
            phase_sums<2>(rows, nr, phases[0], q0, start, even);
            phase_sums<2>(rows, nr, phases[1], q0, start, odd);
            store_pair<Add, Stream, Native>(out, width, q0, even[0], odd[0]);
            store_pair<Add, Stream, Native>(out, width, q0 + 16, even[1], odd[1]);
        }
        if (2 * q0 < width)
            store_pair<Add, Stream, Native>(out, width, q0, phase_sums(rows, nr, phases[0], q0, start),
                    phase_sums(rows, nr, phases[1], q0, start));
    } else {
        for (int64_t r = 0; r < S && r < width; ++r)
            for (int64_t q0 = 0; q0 * S + r < width; q0 += 16) {
                alignas(64) float v[16];
                _mm512_store_ps(v, phase_sums(rows, nr, phases[r], q0, start));
                for (int64_t i = 0; i < 16 && (q0 + i) * S + r < width; ++i) {
                    const int64_t ox = (q0 + i) * S + r;
                    commit_kernels::store(out, ox, (Add ? commit_kernels::load(out, ox) : 0.f) + v[i]);
                }
            }
    }
}

// An input row into its padded copy (the zeros around it stay from the buffer's clearing).
template <typename T>
LIBDECONV_AVX512 void pad_row(const T *row, int64_t width, float *to) {
    for (int64_t x = 0; x < width; x += 16) {
        const __mmask16 m = first_lanes(width - x);
        store_masked(to + x, m, load_masked(row + x, m));
    }
}

} // namespace

DepthwisePlaneForward::DepthwisePlaneForward(const DepthwiseShape &shape) : shape_(shape) {
    const int64_t S = shape.stride[2], P = shape.pad[2], D = shape.dilate[2], K = shape.kernel[2];
    std::vector<std::vector<std::pair<int64_t, int64_t>>> offsets(static_cast<size_t>(S)); // (kw, offset)
    int64_t lowest = 0, highest = 0;
    for (int64_t r = 0; r < S; ++r)
        for (int64_t kw = 0; kw < K; ++kw) {
            const int64_t t = r + P - kw * D; // ox + pad - kw * dilate, less ox's multiple of S
            if (floor_mod(t, S) != 0) continue;
            const int64_t offset = (t - floor_mod(t, S)) / S;
            lowest = std::min(lowest, offset);
            highest = std::max(highest, offset);
            offsets[static_cast<size_t>(r)].push_back({kw, offset});
        }
    lead_ = -lowest;
    columns_ = (shape.out[2] + S - 1) / S;
    // Room for the row and for the vector loads of a phase's last columns at the highest offset.
    row_width_ = round_up(lead_ + std::max(shape.in[2], highest + round_up(columns_, 16)), 16);
    for (const auto &phase : offsets) {
        phases_.emplace_back();
        for (const auto &tap : phase) phases_.back().push_back({tap.first, lead_ + tap.second});
    }
}

bool DepthwisePlaneForward::supports(const DepthwiseShape &shape) {
    return commit_kernels::has_avx512() && shape.kernel[0] * shape.kernel[1] <= kMaxRowTaps
            && DepthwisePlaneForward(shape).scratch_bytes(1) <= kMaxBufferBytes;
}

size_t DepthwisePlaneForward::scratch_bytes(int threads) const {
    const size_t floats = static_cast<size_t>(shape_.in[0] * shape_.in[1] * row_width_);
    return static_cast<size_t>(threads) * ((floats * sizeof(float) + 63) / 64 * 64);
}

template <typename T>
void DepthwisePlaneForward::run(const T *src, const float *weights, const float *bias, T *dst, bool add, void *scratch,
        int threads) const {
    const DepthwiseShape &d = shape_;
    const int64_t KH = d.kernel[1], KW = d.kernel[2], taps = d.kernel[0] * KH * KW;
    const int64_t in_rows = d.in[0] * d.in[1], out_rows = d.out[0] * d.out[1];
    const int64_t in_plane = in_rows * d.in[2], out_plane = out_rows * d.out[2], planes = d.batch * d.channels;
    const size_t per_thread = scratch_bytes(1);
    const bool stream = !add && commit_kernels::worth_streaming(d.batch * d.channels * out_plane * sizeof(T));
    auto pick = [&](auto native) {
        constexpr bool Native = decltype(native)::value;
        return add ? &output_row<true, false, Native, T>
                   : stream ? &output_row<false, true, Native, T> : &output_row<false, false, Native, T>;
    };
    const bool native = std::is_same_v<T, uint16_t> && commit_kernels::has_avx512_bf16();
    const auto row = native ? pick(std::true_type{}) : pick(std::false_type{});
    in_parallel(threads > 1, [&] {
        float *buffer = reinterpret_cast<float *>(static_cast<char *>(scratch) + omp_get_thread_num() * per_thread);
        std::memset(buffer, 0, per_thread);
#pragma omp for schedule(static)
        for (int64_t plane = 0; plane < planes; ++plane) {
            const int64_t c = plane % d.channels;
            for (int64_t ir = 0; ir < in_rows; ++ir)
                pad_row(src + plane * in_plane + ir * d.in[2], d.in[2], buffer + ir * row_width_ + lead_);
            const float *w = weights + c * taps;
            T *out = dst + plane * out_plane;
            for (int64_t orow = 0; orow < out_rows; ++orow) {
                const int64_t oh = orow % d.out[1], od = orow / d.out[1];
                RowTap rows[kMaxRowTaps];
                int nr = 0;
                for (int64_t kd = 0; kd < d.kernel[0]; ++kd) {
                    const int64_t tz = od + d.pad[0] - kd * d.dilate[0];
                    if (tz < 0 || tz % d.stride[0] != 0 || tz / d.stride[0] >= d.in[0]) continue;
                    for (int64_t kh = 0; kh < KH; ++kh) {
                        const int64_t ty = oh + d.pad[1] - kh * d.dilate[1];
                        if (ty < 0 || ty % d.stride[1] != 0 || ty / d.stride[1] >= d.in[1]) continue;
                        rows[nr++] = {buffer + (tz / d.stride[0] * d.in[1] + ty / d.stride[1]) * row_width_,
                                w + (kd * KH + kh) * KW};
                    }
                }
                row(phases_, rows, nr, bias ? bias[c] : 0.f, out + orow * d.out[2], d.out[2]);
            }
        }
        commit_kernels::end_streaming(stream);
    }, threads);
}

template void DepthwisePlaneForward::run(const float *, const float *, const float *, float *, bool, void *, int) const;
template void DepthwisePlaneForward::run(const uint16_t *, const float *, const float *, uint16_t *, bool, void *,
        int) const;

} // namespace libdeconv
