#include "depthwise_plane_forward.hpp"

#include "commit_kernels.hpp"
#include "depthwise_rows.hpp"
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
constexpr int64_t kMaxStride = 16;                   // along rows; larger ones stay with the copies

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

// Outputs [x, x + 16) of a row of `width` (those past its end not written).
template <bool Add, bool Stream, bool Native, typename T>
LIBDECONV_AVX512 inline void store_outputs(T *out, int64_t width, int64_t x, __m512 v) {
    const __mmask16 m = first_lanes(width - x);
    if (Add) v = _mm512_add_ps(v, load_masked(out + x, m));
    put<Stream, Native>(out + x, m, v);
}

// a[0], b[0], a[1], b[1], ...: the first 16 in lo, the next in hi.
LIBDECONV_AVX512 inline void interleave(__m512 a, __m512 b, __m512 &lo, __m512 &hi) {
    const __m512i low = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i high = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    lo = _mm512_permutex2var_ps(a, low, b);
    hi = _mm512_permutex2var_ps(a, high, b);
}

// Outputs [2 q0, 2 q0 + 32) of a row from a vector of each of two phases.
template <bool Add, bool Stream, bool Native, typename T>
LIBDECONV_AVX512 inline void store_pair(T *out, int64_t width, int64_t q0, __m512 even, __m512 odd) {
    __m512 lo, hi;
    interleave(even, odd, lo, hi);
    store_outputs<Add, Stream, Native>(out, width, 2 * q0, lo);
    if (2 * q0 + 16 < width) store_outputs<Add, Stream, Native>(out, width, 2 * q0 + 16, hi);
}

// One output row of `width` columns. Stride 1: the phase is the row; strides 2 and 4: the
// phases' vectors interleaved by permutations (for 4, phases 0 and 2 and phases 1 and 3, then
// the two results); others through a buffer.
template <bool Add, bool Stream, bool Native, typename T>
LIBDECONV_AVX512 void output_row(const std::vector<std::vector<Tap>> &phases, const RowTap *rows, int nr,
        float bias, T *out, int64_t width) {
    const __m512 start = _mm512_set1_ps(bias);
    const int64_t S = static_cast<int64_t>(phases.size());
    if (S == 1) {
        int64_t q0 = 0;
        for (; q0 + 48 < width; q0 += 64) { // four vectors at once while the last holds outputs
            __m512 v[4];
            phase_sums<4>(rows, nr, phases[0], q0, start, v);
            for (int n = 0; n < 4; ++n) store_outputs<Add, Stream, Native>(out, width, q0 + 16 * n, v[n]);
        }
        for (; q0 < width; q0 += 16)
            store_outputs<Add, Stream, Native>(out, width, q0, phase_sums(rows, nr, phases[0], q0, start));
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
    } else if (S == 4) {
        auto store_quad = [out, width](int64_t q0, const __m512 (&v)[4]) LIBDECONV_AVX512 {
            __m512 a[2], b[2], o[4];
            interleave(v[0], v[2], a[0], a[1]);
            interleave(v[1], v[3], b[0], b[1]);
            interleave(a[0], b[0], o[0], o[1]);
            interleave(a[1], b[1], o[2], o[3]);
            for (int n = 0; n < 4 && 4 * q0 + 16 * n < width; ++n)
                store_outputs<Add, Stream, Native>(out, width, 4 * q0 + 16 * n, o[n]);
        };
        int64_t q0 = 0;
        for (; 4 * (q0 + 16) < width; q0 += 32) { // two vectors of each phase while the second holds outputs
            __m512 v0[2], v1[2], v2[2], v3[2]; // apart, not an array by phase: kept in registers
            phase_sums<2>(rows, nr, phases[0], q0, start, v0);
            phase_sums<2>(rows, nr, phases[1], q0, start, v1);
            phase_sums<2>(rows, nr, phases[2], q0, start, v2);
            phase_sums<2>(rows, nr, phases[3], q0, start, v3);
            store_quad(q0, {v0[0], v1[0], v2[0], v3[0]});
            store_quad(q0 + 16, {v0[1], v1[1], v2[1], v3[1]});
        }
        if (4 * q0 < width) {
            __m512 v[4];
            for (int r = 0; r < 4; ++r) v[r] = phase_sums(rows, nr, phases[r], q0, start);
            store_quad(q0, v);
        }
    } else {
        // Each phase's vector scattered into the 16 S adjacent outputs it is part of, in a
        // buffer stored by vectors (value by value, bilinear x4 upsampling took 4.2 ms in f32
        // and 9.4 in bf16, channels-last copies 2.4 and 1.7; scatters cost more than the
        // permutations of strides 2 and 4).
        alignas(64) float interleaved[16 * kMaxStride];
        const __m512i at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                _mm512_set1_epi32(static_cast<int>(S)));
        for (int64_t q0 = 0; q0 * S < width; q0 += 16) {
            for (int64_t r = 0; r < S; ++r)
                _mm512_i32scatter_ps(interleaved + r, at, phase_sums(rows, nr, phases[r], q0, start), 4);
            for (int64_t j = 0; j < 16 * S && q0 * S + j < width; j += 16)
                store_outputs<Add, Stream, Native>(out, width, q0 * S + j, _mm512_load_ps(interleaved + j));
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
    return has_avx512() && shape.kernel[0] * shape.kernel[1] <= kMaxRowTaps && shape.stride[2] <= kMaxStride
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
                for_each_input_row(d, od, oh, [&](int64_t kd, int64_t kh, int64_t iz, int64_t iy) {
                    rows[nr++] = {buffer + (iz * d.in[1] + iy) * row_width_, w + (kd * KH + kh) * KW};
                });
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
