#include "depthwise_backward_data.hpp"

#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using commit_kernels::first_lanes;
using commit_kernels::load8;
using commit_kernels::load_masked;
using commit_kernels::store8;
using commit_kernels::store_masked;

constexpr int64_t kPrefetchBytes = 128 << 10; // of the next plane; the prefetchers take the rest

// A kernel row that reaches a result row: the output-gradient row's phases in the buffer, and
// the row's weights (one per kernel column).
struct RowTap {
    const float *phases;
    const float *weights;
};

// Results [j0, j0 + kLanes V) of a row, the last vector's lanes `last` only (Tail: a mask, or a
// count of lanes): per kernel row and column, V fused multiply-adds of the weight with adjacent
// values of a phase; at most kVectors (64 results) at a time.
struct Avx512 {
    static constexpr int kLanes = 16, kVectors = 4;
    using Tail = __mmask16;
    static Tail tail(int64_t lanes) { return first_lanes(lanes); }

    template <int V, bool Add, typename T>
    LIBDECONV_AVX512 static void results(const RowTap *rows, int nr, const int64_t *positions, int64_t kw_count,
            T *out, int64_t j0, Tail last) {
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
};

// AVX2: 8 lanes, so 8 vectors make the 64 results.
struct Avx2 {
    static constexpr int kLanes = 8, kVectors = 8;
    using Tail = int64_t;
    static Tail tail(int64_t lanes) { return lanes; }

    template <int V, bool Add, typename T>
    LIBDECONV_AVX2 static void results(const RowTap *rows, int nr, const int64_t *positions, int64_t kw_count,
            T *out, int64_t j0, Tail last) {
        __m256 acc[V];
        for (int v = 0; v < V; ++v) acc[v] = Add ? load8(out + j0 + 8 * v, v == V - 1 ? last : 8) : _mm256_setzero_ps();
        for (int i = 0; i < nr; ++i)
            for (int64_t kw = 0; kw < kw_count; ++kw) {
                const __m256 w = _mm256_set1_ps(rows[i].weights[kw]);
                const float *values = rows[i].phases + positions[kw] + j0;
                for (int v = 0; v < V; ++v) acc[v] = _mm256_fmadd_ps(_mm256_loadu_ps(values + 8 * v), w, acc[v]);
            }
        for (int v = 0; v < V; ++v) store8(out + j0 + 8 * v, v == V - 1 ? last : 8, acc[v]);
    }
};

// The last results of a row, `vectors` (at most kVectors, the last one partial) of them, by the
// kernel for exactly that many.
template <typename Isa, bool Add, typename T, int V = Isa::kVectors>
void last_results(const RowTap *rows, int nr, const int64_t *positions, int64_t kw_count, T *out, int64_t j0,
        int64_t vectors, typename Isa::Tail last) {
    if constexpr (V > 0) {
        if (vectors == V) return Isa::template results<V, Add>(rows, nr, positions, kw_count, out, j0, last);
        last_results<Isa, Add, T, V - 1>(rows, nr, positions, kw_count, out, j0, vectors, last);
    }
}

// A whole result row of `width` values, 64 at a time.
template <typename Isa, bool Add, typename T>
void result_row(const RowTap *rows, int nr, const int64_t *positions, int64_t kw_count, T *out, int64_t width) {
    constexpr int64_t L = Isa::kLanes, kAtOnce = L * Isa::kVectors;
    int64_t j0 = 0;
    for (; j0 + kAtOnce <= width; j0 += kAtOnce)
        Isa::template results<Isa::kVectors, Add>(rows, nr, positions, kw_count, out, j0, Isa::tail(L));
    const int64_t rest = width - j0;
    if (rest > 0)
        last_results<Isa, Add>(rows, nr, positions, kw_count, out, j0, (rest + L - 1) / L,
                Isa::tail(rest - (rest - 1) / L * L));
}

} // namespace

DepthwiseBackwardData::DepthwiseBackwardData(const DepthwiseShape &shape) : shape_(shape), planes_(shape) {}

bool DepthwiseBackwardData::supports(const DepthwiseShape &shape) {
    return (has_avx512() || has_avx2()) && PhasePlanes(shape).fits();
}

size_t DepthwiseBackwardData::scratch_bytes(int threads) const {
    return static_cast<size_t>(threads) * planes_.buffer_bytes();
}

template <typename T>
void DepthwiseBackwardData::run(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch,
        int threads) const {
    if (has_avx512())
        run_with<Avx512>(diff_dst, weights, diff_src, add, scratch, threads);
    else
        run_with<Avx2>(diff_dst, weights, diff_src, add, scratch, threads);
}

template <typename Isa, typename T>
void DepthwiseBackwardData::run_with(const T *diff_dst, const float *weights, T *diff_src, bool add, void *scratch,
        int threads) const {
    const DepthwiseShape &d = shape_;
    const int64_t KW = d.kernel[2];
    const int64_t in_rows = d.in[0] * d.in[1], out_plane = d.out[0] * d.out[1] * d.out[2], in_plane = in_rows * d.in[2];
    const int64_t taps = d.kernel[0] * d.kernel[1] * KW, planes = d.batch * d.channels;
    const size_t per_thread = scratch_bytes(1);
    const auto row = add ? &result_row<Isa, true, T> : &result_row<Isa, false, T>;
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
