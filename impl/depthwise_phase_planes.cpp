#include "depthwise_phase_planes.hpp"

#include "commit_kernels.hpp"
#include "depthwise_rows.hpp"
#include "integer_math.hpp"

#include <algorithm>
#include <cstring>

namespace libdeconv {
namespace {

using commit_kernels::first_lanes;
using commit_kernels::load_masked;

// An output-gradient row of `width` values into its `stride` phases in `to` (each `row_width`
// floats, values from `lead`). Stride 1 by vectors, 2 by two vector loads and a permutation per
// 16 values of each phase, 4 by four loads and two rounds of those permutations (the loads'
// masks leave zeros past the row's end, so the vectors write zeros past each phase's values);
// others value by value.
template <typename T>
LIBDECONV_AVX512 void split_row_avx512(const T *row, int64_t width, int64_t stride, int64_t lead, int64_t row_width,
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
    } else if (stride == 4) { // the same twice: even and odd values, then each of those split again
        const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        for (int64_t m = 0; 4 * m < width; m += 16) {
            __m512 v[4];
            for (int k = 0; k < 4; ++k) v[k] = load_masked(row + 4 * m + 16 * k, first_lanes(width - 4 * m - 16 * k));
            const __m512 e01 = _mm512_permutex2var_ps(v[0], even, v[1]), o01 = _mm512_permutex2var_ps(v[0], odd, v[1]);
            const __m512 e23 = _mm512_permutex2var_ps(v[2], even, v[3]), o23 = _mm512_permutex2var_ps(v[2], odd, v[3]);
            _mm512_storeu_ps(to + lead + m, _mm512_permutex2var_ps(e01, even, e23));
            _mm512_storeu_ps(to + row_width + lead + m, _mm512_permutex2var_ps(o01, even, o23));
            _mm512_storeu_ps(to + 2 * row_width + lead + m, _mm512_permutex2var_ps(e01, odd, e23));
            _mm512_storeu_ps(to + 3 * row_width + lead + m, _mm512_permutex2var_ps(o01, odd, o23));
        }
    } else {
        for (int64_t r = 0; r < stride; ++r) {
            float *phase = to + r * row_width + lead;
            int64_t m = 0;
            for (int64_t x = r; x < width; x += stride) phase[m++] = commit_kernels::load(row, x);
        }
    }
}

// The same on AVX2: stride 1 by vectors of 8, stride 2 by two loads, a shuffle and a
// permutation per 8 values of each phase, others value by value.
template <typename T>
LIBDECONV_AVX2 void split_row_avx2(const T *row, int64_t width, int64_t stride, int64_t lead, int64_t row_width,
        float *to) {
    using commit_kernels::load8;
    if (stride == 1) {
        for (int64_t x = 0; x < width; x += 8) _mm256_storeu_ps(to + lead + x, load8(row + x, width - x));
    } else if (stride == 2) {
        for (int64_t m = 0; 2 * m < width; m += 8) {
            const __m256 lo = load8(row + 2 * m, width - 2 * m), hi = load8(row + 2 * m + 8, width - 2 * m - 8);
            // (lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6) -> (lo0 lo2 lo4 lo6 hi0 hi2 hi4 hi6), odd alike
            const __m256 even = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
            const __m256 odd = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1));
            _mm256_storeu_ps(to + lead + m, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(even), 0xd8)));
            _mm256_storeu_ps(to + row_width + lead + m,
                    _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(odd), 0xd8)));
        }
    } else {
        for (int64_t r = 0; r < stride; ++r) {
            float *phase = to + r * row_width + lead;
            int64_t m = 0;
            for (int64_t x = r; x < width; x += stride) phase[m++] = commit_kernels::load(row, x);
        }
    }
}

} // namespace

PhasePlanes::PhasePlanes(const DepthwiseShape &shape) : shape_(shape) {
    const int64_t S = shape.stride[2], P = shape.pad[2], D = shape.dilate[2], K = shape.kernel[2];
    // Kernel column kw reads output column j * S + kw * D - P for input column j: phase t mod S,
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
    // of the last input columns at the highest offset.
    const int64_t columns = (shape.out[2] + S - 1) / S;
    row_width_ = round_up(lead_ + std::max(round_up(columns, 16), highest + round_up(shape.in[2], 16)), 16);
    for (int64_t kw = 0; kw < K; ++kw) tap_position_.push_back(phase[kw] * row_width_ + lead_ + offset[kw]);
}

bool PhasePlanes::fits() const {
    return shape_.kernel[0] * shape_.kernel[1] <= kMaxRowTaps && buffer_bytes() <= kMaxBufferBytes;
}

size_t PhasePlanes::buffer_bytes() const {
    const DepthwiseShape &d = shape_;
    const size_t floats = static_cast<size_t>(d.out[0] * d.out[1] * d.stride[2] * row_width_);
    return (floats * sizeof(float) + 63) / 64 * 64;
}

void PhasePlanes::clear(float *buffer) const { std::memset(buffer, 0, buffer_bytes()); }

template <typename T>
void PhasePlanes::split(const T *plane, float *buffer) const {
    const DepthwiseShape &d = shape_;
    const int64_t rows = d.out[0] * d.out[1];
    const bool avx512 = has_avx512();
    for (int64_t r = 0; r < rows; ++r) {
        if (avx512)
            split_row_avx512(plane + r * d.out[2], d.out[2], d.stride[2], lead_, row_width_, buffer + r * row_floats());
        else
            split_row_avx2(plane + r * d.out[2], d.out[2], d.stride[2], lead_, row_width_, buffer + r * row_floats());
    }
}

int PhasePlanes::row_taps(const float *buffer, int64_t iz, int64_t iy, RowTap *taps) const {
    const DepthwiseShape &d = shape_;
    int n = 0;
    for_each_output_row(d, iz, iy, [&](int64_t kd, int64_t kh, int64_t oz, int64_t oy) {
        taps[n++] = {row(buffer, oz * d.out[1] + oy), kd * d.kernel[1] + kh};
    });
    return n;
}

void prefetch_part(const void *data, int64_t bytes, int64_t part, int64_t parts) {
    const int64_t lines = (bytes + 63) / 64;
    const char *at = static_cast<const char *>(data);
    for (int64_t l = part * lines / parts; l < (part + 1) * lines / parts; ++l) _mm_prefetch(at + 64 * l, _MM_HINT_T1);
}

template void PhasePlanes::split(const float *, float *) const;
template void PhasePlanes::split(const uint16_t *, float *) const;

} // namespace libdeconv
