#include "depthwise_backward_data.hpp"

#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using commit_kernels::first_lanes;
using commit_kernels::load_masked;
using commit_kernels::store_masked;

constexpr int64_t kPrefetchBytes = 128 << 10; // of the next plane; the prefetchers take the rest

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

DepthwiseBackwardData::DepthwiseBackwardData(const DepthwiseShape &shape) : shape_(shape), planes_(shape) {}

bool DepthwiseBackwardData::supports(const DepthwiseShape &shape) {
    return has_avx512() && PhasePlanes(shape).fits();
}

size_t DepthwiseBackwardData::scratch_bytes(int threads) const {
    return static_cast<size_t>(threads) * planes_.buffer_bytes();
}

template <typename T>
void DepthwiseBackwardData::run(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch,
        int threads) const {
    const DepthwiseShape &d = shape_;
    const int64_t KW = d.kernel[2];
    const int64_t in_rows = d.in[0] * d.in[1], out_plane = d.out[0] * d.out[1] * d.out[2], in_plane = in_rows * d.in[2];
    const int64_t taps = d.kernel[0] * d.kernel[1] * KW, planes = d.batch * d.channels;
    const size_t per_thread = scratch_bytes(1);
    const auto row = add ? &result_row<true, T> : &result_row<false, T>;
    // The start of the next plane is fetched while this one's results are computed (mobile.dw
    // f32: 3 ms without, where reading the output gradient once takes 0.7).
    const int64_t fetched = std::min<int64_t>(out_plane * sizeof(T), kPrefetchBytes);
    in_parallel(threads > 1, [&] {
        float *buffer = reinterpret_cast<float *>(static_cast<char *>(scratch) + omp_get_thread_num() * per_thread);
        planes_.clear(buffer);
#pragma omp for schedule(static)
        for (int64_t plane = 0; plane < planes; ++plane) {
            const T *dd = diff_dst + plane * out_plane;
            planes_.split(dd, buffer);
            const float *w = weights + plane % d.channels * taps;
            T *ds = diff_src + plane * in_plane;
            for (int64_t ir = 0; ir < in_rows; ++ir) {
                if (plane + 1 < planes) prefetch_part(dd + out_plane, fetched, ir, in_rows);
                PhasePlanes::RowTap found[PhasePlanes::kMaxRowTaps];
                const int nr = planes_.row_taps(buffer, ir / d.in[1], ir % d.in[1], found);
                RowTap rows[PhasePlanes::kMaxRowTaps];
                for (int i = 0; i < nr; ++i) rows[i] = {found[i].phases, w + found[i].kernel_row * KW};
                row(rows, nr, planes_.tap_positions(), KW, ds + ir * d.in[2], d.in[2]);
            }
        }
    }, threads);
}

template void DepthwiseBackwardData::run(const float *, const float *, float *, bool, void *, int) const;
template void DepthwiseBackwardData::run(const uint16_t *, const float *, uint16_t *, bool, void *, int) const;

} // namespace libdeconv
