#include "bias_gradient.hpp"

#include "bf16.hpp"
#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>

#include <omp.h>

namespace libdeconv {
namespace {

float value_at(const float *v, int64_t i) { return v[i]; }
float value_at(const uint16_t *v, int64_t i) { return bf16_to_f32(v[i]); }

// f32 over runs of at most kRun terms, in independent lanes that the compiler vectorizes, and
// double across runs, so the error stays that of a short f32 sum.
constexpr int64_t kRun = 1024, kLanes = 16;
// Below this many elements one thread is faster than a fork and join.
constexpr int64_t kParallelElems = int64_t(1) << 15;

template <typename T>
double run_sum_portable(const T *v, int64_t count) {
    float lanes[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes)
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += value_at(v, i + l);
    double sum = 0;
    for (; i < count; ++i) sum += value_at(v, i);
    for (float l : lanes) sum += l;
    return sum;
}

// The same in AVX2 vectors (dcgan.l1's bias gradient, planes of 16 pixels, took 8-10% of its
// backward-weights call; with these and partial_sums' whole planes the call is 25% faster).
template <typename T>
LIBDECONV_AVX2 double run_sum_avx2(const T *v, int64_t count) {
    using commit_kernels::load8;
    __m256 even = _mm256_setzero_ps(), odd = even;
    int64_t i = 0;
    for (; i + 16 <= count; i += 16) {
        even = _mm256_add_ps(even, load8(v + i, 8));
        odd = _mm256_add_ps(odd, load8(v + i + 8, 8));
    }
    for (; i < count; i += 8) even = _mm256_add_ps(even, load8(v + i, count - i));
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(even, odd));
    double sum = 0;
    for (float l : lanes) sum += l;
    return sum;
}

template <typename T>
double run_sum(const T *v, int64_t count) {
    return has_avx2() ? run_sum_avx2(v, count) : run_sum_portable(v, count);
}

// Channels-last pixels with fewer than kLanes channels into sums[channel]: kLanes pixels at a
// time are one contiguous vector of kLanes * channels terms (term j of channel j % channels),
// which the compiler vectorizes; a loop over so few channels it does not (dcgan.l5's 3 output
// channels: the bias gradient took 36% of a 4.3 ms backward-weights call, which now takes 2.0).
template <typename T>
void sum_few_channels(const T *v, int64_t pixels, int64_t channels, float *sums) {
    float slots[kLanes * kLanes] = {};
    const int64_t period = kLanes * channels, count = pixels * channels;
    int64_t i = 0;
    for (; i + period <= count; i += period)
        for (int64_t j = 0; j < period; ++j) slots[j] += value_at(v, i + j);
    for (int64_t j = 0; i + j < count; ++j) slots[j] += value_at(v, i + j);
    for (int64_t c = 0; c < channels; ++c) {
        float sum = 0;
        for (int64_t j = c; j < period; j += channels) sum += slots[j];
        sums[c] = sum;
    }
}

// Channels-last pixels with kLanes channels or more into sums[channel]: the channels in vectors
// held in registers over the pixels, 64 channels at a time. The portable loop below keeps its
// sums in memory, one store-to-load chain per pixel, and ran at 9 GB/s (adj.s2's 16 channels:
// 0.34 ms of a 0.8 ms backward-weights call).
template <typename T>
LIBDECONV_AVX512 void sum_many_channels_avx512(const T *v, int64_t pixels, int64_t channels, float *sums) {
    using commit_kernels::load_masked;
    using commit_kernels::store_masked;
    int64_t c0 = 0;
    for (; c0 + 64 <= channels; c0 += 64) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t p = 0; p < pixels; ++p) {
            const T *row = v + p * channels + c0;
            a0 = _mm512_add_ps(a0, load_masked(row, 0xffff));
            a1 = _mm512_add_ps(a1, load_masked(row + 16, 0xffff));
            a2 = _mm512_add_ps(a2, load_masked(row + 32, 0xffff));
            a3 = _mm512_add_ps(a3, load_masked(row + 48, 0xffff));
        }
        store_masked(sums + c0, 0xffff, a0);
        store_masked(sums + c0 + 16, 0xffff, a1);
        store_masked(sums + c0 + 32, 0xffff, a2);
        store_masked(sums + c0 + 48, 0xffff, a3);
    }
    for (; c0 < channels; c0 += 16) {
        const int64_t lanes = std::min<int64_t>(16, channels - c0);
        const __mmask16 m = lanes == 16 ? 0xffff : static_cast<__mmask16>((1u << lanes) - 1);
        __m512 even = _mm512_setzero_ps(), odd = even; // two chains: an add's latency per pixel otherwise
        int64_t p = 0;
        for (; p + 2 <= pixels; p += 2) {
            even = _mm512_add_ps(even, load_masked(v + p * channels + c0, m));
            odd = _mm512_add_ps(odd, load_masked(v + (p + 1) * channels + c0, m));
        }
        if (p < pixels) even = _mm512_add_ps(even, load_masked(v + p * channels + c0, m));
        store_masked(sums + c0, m, _mm512_add_ps(even, odd));
    }
}

// The same in 8-lane vectors where AVX2 is the widest (the portable loop: adj.s2's 16 channels
// on AVX2, see below).
template <typename T>
LIBDECONV_AVX2 void sum_many_channels_avx2(const T *v, int64_t pixels, int64_t channels, float *sums) {
    using commit_kernels::load8;
    using commit_kernels::store8;
    int64_t c0 = 0;
    for (; c0 + 32 <= channels; c0 += 32) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t p = 0; p < pixels; ++p) {
            const T *row = v + p * channels + c0;
            a0 = _mm256_add_ps(a0, load8(row, 8));
            a1 = _mm256_add_ps(a1, load8(row + 8, 8));
            a2 = _mm256_add_ps(a2, load8(row + 16, 8));
            a3 = _mm256_add_ps(a3, load8(row + 24, 8));
        }
        store8(sums + c0, 8, a0);
        store8(sums + c0 + 8, 8, a1);
        store8(sums + c0 + 16, 8, a2);
        store8(sums + c0 + 24, 8, a3);
    }
    for (; c0 < channels; c0 += 8) {
        const int64_t lanes = std::min<int64_t>(8, channels - c0);
        __m256 even = _mm256_setzero_ps(), odd = even;
        int64_t p = 0;
        for (; p + 2 <= pixels; p += 2) {
            even = _mm256_add_ps(even, load8(v + p * channels + c0, lanes));
            odd = _mm256_add_ps(odd, load8(v + (p + 1) * channels + c0, lanes));
        }
        if (p < pixels) even = _mm256_add_ps(even, load8(v + p * channels + c0, lanes));
        store8(sums + c0, lanes, _mm256_add_ps(even, odd));
    }
}

// Work items: runs of one channel plane (channels-first) or runs of pixels with all channels
// (channels-last), split statically over the team; each thread sums into its own row of
// `partial`, so the result depends only on the thread count.
template <typename T>
void partial_sums(const Spec &s, int64_t pixels, const T *dd, BiasGradientScratch &w, int &team) {
    const int64_t channels = s.out_channels, runs = (pixels + kRun - 1) / kRun;
    const bool first = s.layout == Layout::channels_first;
    const int64_t items = s.batch * runs * (first ? channels : 1);
    const bool parallel = s.batch * channels * pixels >= kParallelElems && w.threads > 1;
    team = 1;
    in_parallel(parallel, [&] {
        const int tid = omp_get_thread_num(), size = omp_get_num_threads();
        if (tid == 0) team = size;
        double *mine = w.partial.data() + tid * channels;
        float *run = w.run.data() + tid * channels;
        std::fill_n(mine, channels, 0.0);
        const int64_t begin = items * tid / size, end = items * (tid + 1) / size;
        if (first && runs == 1) { // whole planes, their channel counted along (small planes: dcgan.l1's 16 pixels)
            for (int64_t plane = begin, c = begin % channels; plane < end; ++plane, c = c + 1 == channels ? 0 : c + 1)
                mine[c] += run_sum(dd + plane * pixels, pixels);
            return;
        }
        for (int64_t item = begin; item < end; ++item) {
            const int64_t r = item % runs, p0 = r * kRun, p1 = std::min(pixels, p0 + kRun);
            if (first) {
                const int64_t plane = item / runs, c = plane % channels;
                mine[c] += run_sum(dd + plane * pixels + p0, p1 - p0);
            } else if (channels < kLanes) {
                sum_few_channels(dd + ((item / runs) * pixels + p0) * channels, p1 - p0, channels, run);
                for (int64_t c = 0; c < channels; ++c) mine[c] += run[c];
            } else if (has_avx512()) {
                sum_many_channels_avx512(dd + ((item / runs) * pixels + p0) * channels, p1 - p0, channels, run);
                for (int64_t c = 0; c < channels; ++c) mine[c] += run[c];
            } else if (has_avx2()) {
                sum_many_channels_avx2(dd + ((item / runs) * pixels + p0) * channels, p1 - p0, channels, run);
                for (int64_t c = 0; c < channels; ++c) mine[c] += run[c];
            } else {
                const T *base = dd + (item / runs) * pixels * channels;
                std::fill_n(run, channels, 0.f);
                for (int64_t p = p0; p < p1; ++p) {
                    const T *row = base + p * channels;
                    for (int64_t c = 0; c < channels; ++c) run[c] += value_at(row, c);
                }
                for (int64_t c = 0; c < channels; ++c) mine[c] += run[c];
            }
        }
    }, w.threads);
}

} // namespace

BiasGradientScratch &bias_gradient_scratch(const Spec &spec) {
    thread_local BiasGradientScratch scratch;
    scratch.threads = std::max(1, omp_get_max_threads());
    const size_t size = size_t(scratch.threads) * size_t(spec.out_channels);
    if (scratch.partial.size() < size) {
        scratch.partial.resize(size);
        scratch.run.resize(size);
    }
    return scratch;
}

void reduce_bias_gradient(const Spec &s, int64_t pixels, const void *diff_dst, void *diff_bias, Req req,
        BiasGradientScratch &w) {
    const bool bf16 = s.dtype == DataType::bf16;
    int team = 1;
    if (bf16)
        partial_sums(s, pixels, static_cast<const uint16_t *>(diff_dst), w, team);
    else
        partial_sums(s, pixels, static_cast<const float *>(diff_dst), w, team);
    for (int64_t c = 0; c < s.out_channels; ++c) {
        double sum = 0;
        for (int t = 0; t < team; ++t) sum += w.partial[size_t(t * s.out_channels + c)];
        if (bf16) {
            uint16_t *out = static_cast<uint16_t *>(diff_bias);
            const double prior = req == Req::add ? double(bf16_to_f32(out[c])) : 0.0;
            out[c] = f32_to_bf16(static_cast<float>(prior + sum));
        } else {
            float *out = static_cast<float *>(diff_bias);
            out[c] = static_cast<float>((req == Req::add ? double(out[c]) : 0.0) + sum);
        }
    }
}

} // namespace libdeconv
