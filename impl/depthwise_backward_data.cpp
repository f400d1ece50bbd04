#include "depthwise_backward_data.hpp"

#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>
#include <cstring>

namespace libdeconv {
namespace {

using commit_kernels::load_masked;
using commit_kernels::store_masked;

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }
size_t aligned(size_t bytes) { return (bytes + 63) / 64 * 64; }

constexpr size_t kMaxBufferBytes = size_t(16) << 20; // a plane's phases; larger planes stay with oneDNN
constexpr int kMaxRowTaps = 256;                     // kernel rows (depth x height) of a result row
constexpr int64_t kPrefetchBytes = 128 << 10;        // of the next plane; the prefetchers take the rest

// The first n of 16 lanes (none for n <= 0).
inline __mmask16 first_lanes(int64_t n) {
    return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : static_cast<__mmask16>((1u << n) - 1);
}

// An output-gradient row of `width` values sorted into its `stride` phases in `to` (each
// `row_width` floats: columns r, r + stride, ... from `lead`, zeros around them, which the
// buffer was cleared to and only vectors of zeros are written over). Stride 2 by two vector loads
// and a permutation per 16 values of each phase (the loads' masks leave zeros past the row's
// end); wider ones value by value.
template <typename T>
LIBDECONV_AVX512 void split_row(const T *row, int64_t width, int64_t stride, int64_t lead, int64_t row_width,
        float *to) {
    if (stride == 1) {
        for (int64_t x = 0; x < width; x += 16) _mm512_storeu_ps(to + lead + x, load_masked(row + x, first_lanes(width - x)));
    } else if (stride == 2) {
        const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        for (int64_t m = 0; 2 * m < width; m += 16) {
            const __m512 lo = load_masked(row + 2 * m, first_lanes(width - 2 * m));
            const __m512 hi = load_masked(row + 2 * m + 16, first_lanes(width - 2 * m - 16));
            _mm512_storeu_ps(to + lead + m, _mm512_permutex2var_ps(lo, even, hi));
            _mm512_storeu_ps(to + row_width + lead + m, _mm512_permutex2var_ps(lo, odd, hi));
        }
    } else {
        for (int64_t r = 0; r < stride; ++r) {
            float *phase = to + r * row_width + lead;
            int64_t m = 0;
            for (int64_t x = r; x < width; x += stride) phase[m++] = commit_kernels::load(row, x);
        }
    }
}

// A kernel row that reaches a result row: the output-gradient row's phases in the buffer, and
// the row's weights (one per kernel column).
struct RowTap {
    const float *phases;
    const float *weights;
};

// Results [j0, j0 + 16 V) of a row, the last vector's lanes masked by `last`: per kernel row and
// column, V fused multiply-adds of the weight with 16 adjacent values of a phase.
template <int V, bool Add, typename T>
LIBDECONV_AVX512 void results(const RowTap *rows, int nr, const int64_t *positions, int64_t kw_count, T *out,
        int64_t j0, __mmask16 last) {
    __m512 acc[V];
    for (int v = 0; v < V; ++v)
        acc[v] = Add ? load_masked(out + j0 + 16 * v, v == V - 1 ? last : 0xffff) : _mm512_setzero_ps();
    for (int i = 0; i < nr; ++i)
        for (int64_t kw = 0; kw < kw_count; ++kw) {
            const __m512 w = _mm512_set1_ps(rows[i].weights[kw]);
            const float *values = rows[i].phases + positions[kw] + j0;
            for (int v = 0; v < V; ++v) acc[v] = _mm512_fmadd_ps(_mm512_loadu_ps(values + 16 * v), w, acc[v]);
        }
    for (int v = 0; v < V; ++v) store_masked(out + j0 + 16 * v, v == V - 1 ? last : 0xffff, acc[v]);
}

// A whole result row of `width` values, 64 at a time.
template <bool Add, typename T>
LIBDECONV_AVX512 void result_row(const RowTap *rows, int nr, const int64_t *positions, int64_t kw_count, T *out,
        int64_t width) {
    int64_t j0 = 0;
    for (; j0 + 64 <= width; j0 += 64) results<4, Add>(rows, nr, positions, kw_count, out, j0, 0xffff);
    const int64_t rest = width - j0;
    const __mmask16 last = first_lanes(rest - (rest - 1) / 16 * 16);
    switch ((rest + 15) / 16) {
    case 3: results<3, Add>(rows, nr, positions, kw_count, out, j0, last); break;
    case 2: results<2, Add>(rows, nr, positions, kw_count, out, j0, last); break;
    case 1: results<1, Add>(rows, nr, positions, kw_count, out, j0, last); break;
    default: break;
    }
}

} // namespace

DepthwiseBackwardData::DepthwiseBackwardData(const DepthwiseShape &shape) : shape_(shape) {
    const int64_t S = shape.stride[2], P = shape.pad[2], D = shape.dilate[2], K = shape.kernel[2];
    // Kernel column kw reads output column j * S + kw * D - P for result column j: phase t mod S,
    // j + floor(t / S) within it.
    std::vector<int64_t> phase, offset;
    for (int64_t kw = 0; kw < K; ++kw) {
        const int64_t t = kw * D - P;
        offset.push_back(floor_div(t, S));
        phase.push_back(t - offset.back() * S);
    }
    lead_ = std::max<int64_t>(0, -*std::min_element(offset.begin(), offset.end()));
    const int64_t highest = std::max<int64_t>(0, *std::max_element(offset.begin(), offset.end()));
    // Room for the phase with the most columns, written 16 at a time, and for the vector loads
    // of the last results at the highest offset.
    const int64_t columns = (shape.out[2] + S - 1) / S;
    row_width_ = round_up(lead_ + std::max(round_up(columns, 16), highest + round_up(shape.in[2], 16)), 16);
    for (int64_t kw = 0; kw < K; ++kw) tap_position_.push_back(phase[kw] * row_width_ + lead_ + offset[kw]);
}

bool DepthwiseBackwardData::supports(const DepthwiseShape &shape) {
    return commit_kernels::has_avx512() && shape.kernel[0] * shape.kernel[1] <= kMaxRowTaps
            && DepthwiseBackwardData(shape).scratch_bytes(1) <= kMaxBufferBytes;
}

size_t DepthwiseBackwardData::scratch_bytes(int threads) const {
    const DepthwiseShape &d = shape_;
    const size_t floats = static_cast<size_t>(d.out[0] * d.out[1] * d.stride[2] * row_width_);
    return static_cast<size_t>(threads) * aligned(floats * sizeof(float));
}

template <typename T>
void DepthwiseBackwardData::run(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch,
        int threads) const {
    const DepthwiseShape &d = shape_;
    const int64_t S = d.stride[2], KH = d.kernel[1], KW = d.kernel[2];
    const int64_t out_rows = d.out[0] * d.out[1], in_rows = d.in[0] * d.in[1];
    const int64_t out_plane = out_rows * d.out[2], in_plane = in_rows * d.in[2];
    const int64_t taps = d.kernel[0] * KH * KW, planes = d.batch * d.channels, phases = S * row_width_;
    const size_t per_thread = scratch_bytes(1);
    const auto row = add ? &result_row<true, T> : &result_row<false, T>;
    // The start of the next plane is fetched while this one's results are computed: read plane
    // by plane, the stream restarts after each and the loads wait for memory (mobile.dw f32:
    // 3 ms, where reading the output gradient once takes 0.7).
    const int64_t plane_lines = (out_plane * static_cast<int64_t>(sizeof(T)) + 63) / 64;
    const int64_t fetched_lines = std::min(plane_lines, kPrefetchBytes / 64);
    in_parallel(threads > 1, [&] {
        char *mine = static_cast<char *>(scratch) + omp_get_thread_num() * per_thread;
        std::memset(mine, 0, per_thread);
        float *buffer = reinterpret_cast<float *>(mine);
#pragma omp for schedule(static)
        for (int64_t plane = 0; plane < planes; ++plane) {
            const T *dd = diff_dst + plane * out_plane;
            for (int64_t r = 0; r < out_rows; ++r)
                split_row(dd + r * d.out[2], d.out[2], S, lead_, row_width_, buffer + r * phases);
            const float *w = weights + plane % d.channels * taps;
            T *ds = diff_src + plane * in_plane;
            const char *next = plane + 1 < planes ? reinterpret_cast<const char *>(dd + out_plane) : nullptr;
            for (int64_t ir = 0; ir < in_rows; ++ir) {
                if (next)
                    for (int64_t l = ir * fetched_lines / in_rows; l < (ir + 1) * fetched_lines / in_rows; ++l)
                        _mm_prefetch(next + 64 * l, _MM_HINT_T1);
                const int64_t iy = ir % d.in[1], iz = ir / d.in[1];
                RowTap rows[kMaxRowTaps];
                int nr = 0;
                for (int64_t kd = 0; kd < d.kernel[0]; ++kd) {
                    const int64_t oz = iz * d.stride[0] - d.pad[0] + kd * d.dilate[0];
                    if (oz < 0 || oz >= d.out[0]) continue;
                    for (int64_t kh = 0; kh < KH; ++kh) {
                        const int64_t oy = iy * d.stride[1] - d.pad[1] + kh * d.dilate[1];
                        if (oy < 0 || oy >= d.out[1]) continue;
                        rows[nr++] = {buffer + (oz * d.out[1] + oy) * phases, w + (kd * KH + kh) * KW};
                    }
                }
                row(rows, nr, tap_position_.data(), KW, ds + ir * d.in[2], d.in[2]);
            }
        }
    }, threads);
}

template void DepthwiseBackwardData::run(const float *, const float *, float *, bool, void *, int) const;
template void DepthwiseBackwardData::run(const uint16_t *, const float *, uint16_t *, bool, void *, int) const;

} // namespace libdeconv
