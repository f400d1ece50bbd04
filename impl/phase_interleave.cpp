#include "phase_interleave.hpp"

#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>
#include <cstring>

namespace libdeconv {
namespace {

using namespace commit_kernels;
using dt = dnnl::memory::data_type;

int64_t product(const Dims3 &d, int rank, int from = 0) {
    int64_t n = 1;
    for (int i = from; i < rank; ++i) n *= d[i];
    return n;
}

// Where output row `row` (the output position in every dim but the last, row-major) starts in
// the convolution's output: its positions' and phases' offsets.
int64_t row_offset(const PhaseSplit &s, int64_t row) {
    int64_t offset = 0;
    for (int d = s.rank - 2; d >= 0; --d) {
        offset += s.offset[d][row % s.out[d]];
        row /= s.out[d];
    }
    return offset;
}

constexpr int64_t kTile = 128; // pixels

// f(n, p0, p1, at) for every tile of pixels [p0, p1) of the output planes of every image (the
// rows of a plane one run), over all threads when `parallel`; at[p - p0] is where pixel p is in
// an image of the convolution's output, past its channel. Tiles start at pixel `first` and every
// kTile pixels from it, the first at 0 (LineTiles): streamed, no two tiles share a cache line,
// however short the rows (unet.up1 bf16, rows of 128 bytes 16 past a line: two in three lines
// were shared by the tiles of two rows). `streamed`: f streams its stores (end_streaming).
template <typename F>
void for_each_plane_tile(const PhaseSplit &s, int64_t first, bool parallel, bool streamed, F f) {
    const int64_t width = s.out[s.rank - 1];
    const int64_t *last = s.offset[s.rank - 1].data();
    const LineTiles tiles(product(s.out, s.rank), kTile, first);
    in_parallel(parallel, [&] {
#pragma omp for collapse(2) schedule(static) nowait
        for (int64_t n = 0; n < s.batch; ++n)
            for (int64_t t = 0; t < tiles.count; ++t) {
                const int64_t p0 = tiles.begin(t), p1 = tiles.end(t);
                int64_t at[kTile];
                int64_t row = p0 / width, o = p0 % width, row_start = row_offset(s, row);
                for (int64_t p = p0; p < p1; ++p) {
                    at[p - p0] = row_start + last[o];
                    if (++o == width && p + 1 < p1) {
                        o = 0;
                        row_start = row_offset(s, ++row);
                    }
                }
                f(n, p0, p1, static_cast<const int64_t *>(at));
            }
        end_streaming(streamed);
    });
}

template <typename T>
void split_typed(const PhaseSplit &s, const T *weights, T *conv) {
    const int64_t kernel_taps = product(s.kernel, s.rank), icg = s.in_per_group, ocg = s.out_per_group;
    const int64_t rows = s.groups * s.phases * ocg;
    in_parallel(rows * icg * s.taps >= (int64_t(1) << 16), [&] {
#pragma omp for schedule(static) nowait
        for (int64_t row = 0; row < rows; ++row) { // (g, phase, oc)
            const int64_t g = row / (s.phases * ocg), phase = row / ocg % s.phases, oc = row % ocg;
            const int64_t *taps = s.tap_of.data() + phase * s.taps;
            T *to = conv + row * icg * s.taps;
            for (int64_t ic = 0; ic < icg; ++ic) {
                const T *from = weights + ((g * icg + ic) * ocg + oc) * kernel_taps;
                for (int64_t j = 0; j < s.taps; ++j) to[ic * s.taps + j] = taps[j] < 0 ? T(0) : from[taps[j]];
            }
        }
    });
}

// Stream: non-temporal stores where the commit writes runs of the caller's buffer (channels-last
// convolution output); the gathers of channels-first output store plainly.
template <bool Add, bool Stream, typename In, typename Out>
void commit_typed(const PhaseSplit &s, const In *conv, Out *user, const float *bias) {
    const int r = s.rank;
    const int64_t out_pixels = product(s.out, r), channels = s.groups * s.out_per_group;
    const int64_t conv_image = s.conv_channels() * product(s.conv_out, r), user_image = channels * out_pixels;
    const int64_t ocg = s.out_per_group, group_step = s.phases * ocg * s.channel_stride;
    const bool parallel = s.batch * user_image >= kParallelElements;
    const int64_t width = s.out[r - 1], rows = out_pixels / width;
    const int64_t *last = s.offset[r - 1].data();
    if (!s.conv_channels_last) {
        // Channels-first convolution output: every value gathered, along the pixels of a row
        // (channels-first caller) or along the channels of a pixel (channels-last caller).
        const bool indexed = !s.last_index.empty();
        in_parallel(parallel, [&] {
#pragma omp for collapse(2) schedule(static) nowait
            for (int64_t n = 0; n < s.batch; ++n)
                for (int64_t row = 0; row < rows; ++row) {
                    const In *from = conv + n * conv_image + row_offset(s, row);
                    Out *to = user + n * user_image + row * width * (s.user_channels_last ? channels : 1);
                    for (int64_t g = 0; g < s.groups; ++g) {
                        const In *group = from + g * group_step;
                        if (indexed && s.user_channels_last) {
                            for (int64_t o = 0; o < width; ++o)
                                commit_gathered<Add>(group + last[o], s.channel_index.data(),
                                        to + o * channels + g * ocg, ocg, bias ? bias + g * ocg : nullptr, 1);
                        } else if (indexed) {
                            for (int64_t k = 0; k < ocg; ++k)
                                commit_gathered<Add>(group + k * s.channel_stride, s.last_index.data(),
                                        to + (g * ocg + k) * out_pixels, width,
                                        bias ? bias + g * ocg + k : nullptr, 0);
                        } else { // offsets past 32 bits
                            for (int64_t k = 0; k < ocg; ++k)
                                for (int64_t o = 0; o < width; ++o) {
                                    const int64_t c = g * ocg + k;
                                    const int64_t at = s.user_channels_last ? o * channels + c : c * out_pixels + o;
                                    const float v =
                                            load(group, k * s.channel_stride + last[o]) + (bias ? bias[c] : 0.f);
                                    store(to, at, Add ? load(to, at) + v : v);
                                }
                        }
                    }
                }
        });
        return;
    }
    if (s.user_channels_last) {
        // Every output pixel: one run of out_per_group contiguous channels per group. An add of
        // runs that end in a partial vector goes a group at a time, reading each pixel's
        // destination before the previous pixel's store, which its full width overlaps (dcgan.l5
        // bf16 channels-last forward, 3 channels: the add took 2.2 ms, the write 1.5).
        const bool read_ahead = Add && ocg % 16 != 0;
        if (Stream && has_avx512() && channels <= LineStager<Out>::kMaxPiece) {
            // Streamed through a stager: the pixels of consecutive rows (and images) follow each
            // other, so each thread's share of them is one run of the caller's buffer.
            in_parallel(parallel, [&] {
                const int64_t parts = omp_get_num_threads(), pairs = s.batch * rows;
#pragma omp for schedule(static) nowait
                for (int64_t part = 0; part < parts; ++part) {
                    const int64_t begin = pairs * part / parts, end = pairs * (part + 1) / parts;
                    LineStager<Out> stager(user + begin * width * channels);
                    for (int64_t i = begin; i < end; ++i) {
                        const In *from = conv + i / rows * conv_image + row_offset(s, i % rows);
                        for (int64_t o = 0; o < width; ++o)
                            for (int64_t g = 0; g < s.groups; ++g)
                                commit_run<false>(from + last[o] + g * group_step, stager.take(ocg), ocg,
                                        bias ? bias + g * ocg : nullptr, 1);
                    }
                    stager.finish();
                }
                end_streaming(true);
            });
            return;
        }
        in_parallel(parallel, [&] {
#pragma omp for collapse(2) schedule(static) nowait
            for (int64_t n = 0; n < s.batch; ++n)
                for (int64_t row = 0; row < rows; ++row) {
                    const In *from = conv + n * conv_image + row_offset(s, row);
                    Out *to = user + n * user_image + row * width * channels;
                    if (read_ahead) {
                        for (int64_t g = 0; g < s.groups; ++g)
                            copy_channel_run<true>(from + g * group_step, [last](int64_t o) { return last[o]; },
                                    to + g * ocg, channels, ocg, ocg, bias ? bias + g * ocg : nullptr, 0, width);
                        continue;
                    }
                    for (int64_t o = 0; o < width; ++o)
                        for (int64_t g = 0; g < s.groups; ++g)
                            commit_run<Add, Stream>(from + last[o] + g * group_step,
                                    to + o * channels + g * ocg, ocg, bias ? bias + g * ocg : nullptr, 1);
                }
            end_streaming(Stream);
        });
        return;
    }
    // Channels-first: the planes in tiles of pixels, transposed from pixel-major. Every plane
    // starts at the same place within a line where streamed (commit_dispatch).
    const int64_t first = Stream ? line_boundary(user, sizeof(Out)) : 0;
    for_each_plane_tile(s, first, parallel, Stream, [&](int64_t n, int64_t p0, int64_t p1, const int64_t *at) {
        const auto place = [at, p0](int64_t p) { return at[p - p0]; };
        for (int64_t g = 0; g < s.groups; ++g) {
            const In *group = conv + n * conv_image + g * group_step;
            Out *planes = user + n * user_image + g * ocg * out_pixels;
            if (has_avx512()) {
                commit_tile_avx512<Add, Stream>(group, place, planes, out_pixels, 0, ocg,
                        bias ? bias + g * ocg : nullptr, p0, p1);
                continue;
            }
            if (has_avx2()) {
                commit_tile_avx2<Add>(group, place, planes, out_pixels, 0, ocg, bias ? bias + g * ocg : nullptr, p0, p1);
                continue;
            }
            for (int64_t k = 0; k < ocg; ++k)
                for (int64_t p = p0; p < p1; ++p) {
                    const float v = load(group, place(p) + k) + (bias ? bias[g * ocg + k] : 0.f);
                    Out *o = planes + k * out_pixels;
                    store(o, p, Add ? load(o, p) + v : v);
                }
        }
    });
}

template <typename In, typename Out>
void split_gradient_typed(const PhaseSplit &s, const In *dd, Out *conv) {
    const int r = s.rank;
    const int64_t out_pixels = product(s.out, r), channels = s.groups * s.out_per_group;
    const int64_t conv_pixels = product(s.conv_out, r), conv_channels = s.conv_channels();
    const int64_t conv_image = conv_channels * conv_pixels, user_image = channels * out_pixels;
    const int64_t ocg = s.out_per_group, group_step = s.phases * ocg;
    const bool parallel = s.batch * user_image >= kParallelElements;
    // Zeros where the convolution's value is no output position (the padding cut it off).
    in_parallel(parallel, [&] {
#pragma omp for collapse(2) schedule(static) nowait
        for (int64_t n = 0; n < s.batch; ++n)
            for (int64_t u = 0; u < conv_pixels; ++u) {
                int64_t at[3] = {0, 0, 0};
                for (int64_t d = r - 1, rest = u; d >= 0; --d) {
                    at[d] = rest % s.conv_out[d];
                    rest /= s.conv_out[d];
                }
                for (int64_t phase = 0; phase < s.phases; ++phase) {
                    bool used = true;
                    for (int64_t d = r - 1, rest = phase; d >= 0; --d) {
                        used &= s.used[d][at[d] * s.stride[d] + rest % s.stride[d]] != 0;
                        rest /= s.stride[d];
                    }
                    if (used) continue;
                    Out *zeros = conv + n * conv_image + u * conv_channels + phase * ocg;
                    for (int64_t g = 0; g < s.groups; ++g) std::fill_n(zeros + g * group_step, ocg, Out(0));
                }
            }
    });
    const int64_t width = s.out[r - 1], rows = out_pixels / width;
    const int64_t *last = s.offset[r - 1].data();
    if (s.user_channels_last) {
        in_parallel(parallel, [&] {
#pragma omp for collapse(2) schedule(static) nowait
            for (int64_t n = 0; n < s.batch; ++n)
                for (int64_t row = 0; row < rows; ++row) {
                    const In *from = dd + n * user_image + row * width * channels;
                    Out *to = conv + n * conv_image + row_offset(s, row);
                    for (int64_t o = 0; o < width; ++o)
                        for (int64_t g = 0; g < s.groups; ++g)
                            commit_run<false>(from + o * channels + g * ocg, to + last[o] + g * group_step, ocg,
                                    nullptr, 0);
                }
        });
        return;
    }
    for_each_plane_tile(s, 0, parallel, false, [&](int64_t n, int64_t p0, int64_t p1, const int64_t *at) {
        const auto place = [at, p0](int64_t p) { return at[p - p0]; };
        for (int64_t g = 0; g < s.groups; ++g) {
            const In *planes = dd + n * user_image + g * ocg * out_pixels;
            Out *group = conv + n * conv_image + g * group_step;
            if (has_avx512()) {
                uncommit_tile_avx512<false>(planes, out_pixels, group, place, ocg, ocg, p0, p1);
                continue;
            }
            if (has_avx2()) {
                uncommit_tile_avx2(planes, out_pixels, group, place, ocg, ocg, p0, p1);
                continue;
            }
            for (int64_t k = 0; k < ocg; ++k)
                for (int64_t p = p0; p < p1; ++p) store(group, place(p) + k, load(planes, k * out_pixels + p));
        }
    });
}

template <typename Out>
void merge_weight_gradient_typed(const PhaseSplit &s, const float *conv, Out *user, bool add) {
    const int64_t kernel_taps = product(s.kernel, s.rank), icg = s.in_per_group, ocg = s.out_per_group;
    const int64_t group_step = s.phases * ocg * icg * s.taps;
    in_parallel(s.groups * icg * ocg * kernel_taps >= kParallelElements, [&] {
#pragma omp for schedule(static) nowait
        for (int64_t row = 0; row < s.groups * icg; ++row) { // (g, ic): the caller's layout
            const int64_t g = row / icg, ic = row % icg;
            const float *from = conv + g * group_step + ic * s.taps;
            Out *to = user + row * ocg * kernel_taps;
            for (int64_t oc = 0; oc < ocg; ++oc)
                for (int64_t t = 0; t < kernel_taps; ++t) {
                    const float v = from[oc * icg * s.taps + s.conv_tap_of[t]];
                    const int64_t at = oc * kernel_taps + t;
                    store(to, at, add ? load(to, at) + v : v);
                }
        }
    });
}

template <typename In, typename Out>
void commit_dispatch(const PhaseSplit &s, const void *conv, void *user, const float *bias, bool add) {
    const int64_t elements = s.batch * s.groups * s.out_per_group * product(s.out, s.rank);
    // Streamed only where every row (channels-first) or run of a group's channels (channels-last)
    // starts at the same place within a cache line, as in output_commit.cpp.
    const int64_t run = s.user_channels_last ? s.out_per_group : s.out[s.rank - 1];
    const int64_t step = s.user_channels_last ? s.groups * s.out_per_group : run;
    const bool uniform = (run * int64_t(sizeof(Out))) % 64 == 0 && (step * int64_t(sizeof(Out))) % 64 == 0;
    if (add)
        commit_typed<true, false>(s, static_cast<const In *>(conv), static_cast<Out *>(user), bias);
    else if (uniform && s.conv_channels_last && worth_streaming(elements * s.batch_chunks * int64_t(sizeof(Out))))
        commit_typed<false, true>(s, static_cast<const In *>(conv), static_cast<Out *>(user), bias);
    else
        commit_typed<false, false>(s, static_cast<const In *>(conv), static_cast<Out *>(user), bias);
}

} // namespace

PhaseSplit split_phases(const Problem &problem, dt conv_type, bool conv_channels_last) {
    const Spec &spec = problem.spec();
    PhaseSplit s;
    s.rank = spec.rank;
    s.batch = spec.batch;
    s.groups = spec.groups;
    s.in_per_group = spec.in_channels / spec.groups;
    s.out_per_group = spec.out_channels / spec.groups;
    s.weights_type = s.user_type = spec.dtype == DataType::f32 ? dt::f32 : dt::bf16;
    s.conv_type = conv_type;
    s.user_channels_last = spec.layout == Layout::channels_last;
    for (int d = 0; d < s.rank; ++d) {
        // Where in_size is 1 any stride gives the same output: the smallest (fewest phases).
        const int64_t st = problem.kernel_stride()[d], k = spec.kernel[d], pad = problem.pad()[d];
        s.stride[d] = st;
        s.kernel[d] = k;
        s.phase_taps[d] = (k + st - 1) / st;
        s.in[d] = spec.in_size[d];
        s.out[d] = problem.out_size()[d];
        // Output o needs position (o + pad) div s. Beyond those, the convolution also computes
        // the positions (never read) that keep its padding non-negative: where the pad exceeds
        // the phase's taps, or the output ends before the input's last position.
        const int64_t needed_first = pad / st, needed_last = (s.out[d] - 1 + pad) / st;
        s.first[d] = std::min(needed_first, s.phase_taps[d] - 1);
        const int64_t last = std::max(needed_last, s.in[d] - 1);
        s.conv_out[d] = last - s.first[d] + 1;
        s.pad_left[d] = s.phase_taps[d] - 1 - s.first[d];
        s.pad_right[d] = last - (s.in[d] - 1);
    }
    s.phases = product(s.stride, s.rank);
    s.taps = product(s.phase_taps, s.rank);
    // Offsets in the convolution's output: position strides, and phase strides within a group.
    s.conv_channels_last = conv_channels_last;
    const int64_t plane = product(s.conv_out, s.rank);
    s.channel_stride = conv_channels_last ? 1 : plane;
    for (int d = 0; d < s.rank; ++d) {
        const int64_t position_stride = (conv_channels_last ? s.conv_channels() : 1) * product(s.conv_out, s.rank, d + 1);
        const int64_t phase_stride = s.out_per_group * product(s.stride, s.rank, d + 1) * s.channel_stride;
        const int64_t pad = problem.pad()[d];
        s.offset[d].resize(s.out[d]);
        for (int64_t o = 0; o < s.out[d]; ++o)
            s.offset[d][o] = ((o + pad) / s.stride[d] - s.first[d]) * position_stride
                           + (o + pad) % s.stride[d] * phase_stride;
    }
    // The gathers' 32-bit indices, where the offsets fit (scaled by 4 bytes, with a margin).
    constexpr int64_t kMaxIndex = int64_t(1) << 28;
    const auto &last = s.offset[s.rank - 1];
    if (!conv_channels_last && *std::max_element(last.begin(), last.end()) < kMaxIndex &&
        (s.out_per_group - 1) * s.channel_stride < kMaxIndex) {
        s.last_index.assign(last.begin(), last.end());
        for (int64_t k = 0; k < s.out_per_group; ++k) s.channel_index.push_back(static_cast<int32_t>(k * s.channel_stride));
    }
    // Tap j of phase q in dim d is the caller's tap s * (M - 1 - j) + q (flipped).
    s.tap_of.assign(s.phases * s.taps, -1);
    for (int64_t phase = 0; phase < s.phases; ++phase)
        for (int64_t j = 0; j < s.taps; ++j) {
            int64_t q = phase, jj = j, tap = 0, scale = 1;
            bool inside = true;
            for (int d = s.rank - 1; d >= 0; --d) {
                const int64_t qd = q % s.stride[d], jd = jj % s.phase_taps[d];
                q /= s.stride[d];
                jj /= s.phase_taps[d];
                const int64_t t = s.stride[d] * (s.phase_taps[d] - 1 - jd) + qd;
                inside &= t < s.kernel[d];
                tap += t * scale;
                scale *= s.kernel[d];
            }
            if (inside) s.tap_of[phase * s.taps + j] = tap;
        }
    s.conv_tap_of.assign(product(s.kernel, s.rank), 0);
    for (int64_t phase = 0; phase < s.phases; ++phase)
        for (int64_t j = 0; j < s.taps; ++j)
            if (s.tap_of[phase * s.taps + j] >= 0)
                s.conv_tap_of[s.tap_of[phase * s.taps + j]] = phase * s.out_per_group * s.in_per_group * s.taps + j;
    for (int d = 0; d < s.rank; ++d) {
        const int64_t pad = problem.pad()[d];
        s.used[d].resize(s.conv_out[d] * s.stride[d]);
        for (int64_t u = 0; u < s.conv_out[d]; ++u)
            for (int64_t q = 0; q < s.stride[d]; ++q) {
                const int64_t o = (u + s.first[d]) * s.stride[d] + q - pad;
                s.used[d][u * s.stride[d] + q] = o >= 0 && o < s.out[d];
            }
        // Tap j reads input u - pad_left + j for u in [0, conv_out).
        for (int64_t j = 0; j < s.phase_taps[d]; ++j) {
            const int64_t lo = j - s.pad_left[d], hi = s.conv_out[d] - 1 + j - s.pad_left[d];
            s.dead_taps |= hi < 0 || lo >= s.in[d];
        }
    }
    return s;
}

void split_weights(const PhaseSplit &s, const void *weights, void *conv_weights) {
    if (s.weights_type == dt::f32)
        split_typed(s, static_cast<const uint32_t *>(weights), static_cast<uint32_t *>(conv_weights));
    else
        split_typed(s, static_cast<const uint16_t *>(weights), static_cast<uint16_t *>(conv_weights));
}

void split_output_gradient(const PhaseSplit &s, const void *dd, void *conv) {
    const bool in_f32 = s.user_type == dt::f32, out_f32 = s.conv_type == dt::f32;
    if (in_f32 && out_f32)
        split_gradient_typed(s, static_cast<const float *>(dd), static_cast<float *>(conv));
    else if (in_f32)
        split_gradient_typed(s, static_cast<const float *>(dd), static_cast<uint16_t *>(conv));
    else if (out_f32)
        split_gradient_typed(s, static_cast<const uint16_t *>(dd), static_cast<float *>(conv));
    else
        split_gradient_typed(s, static_cast<const uint16_t *>(dd), static_cast<uint16_t *>(conv));
}

void merge_weight_gradient(const PhaseSplit &s, const void *conv, void *user, const float *, bool add) {
    if (s.weights_type == dt::f32)
        merge_weight_gradient_typed(s, static_cast<const float *>(conv), static_cast<float *>(user), add);
    else
        merge_weight_gradient_typed(s, static_cast<const float *>(conv), static_cast<uint16_t *>(user), add);
}

void split_bias(const PhaseSplit &s, const void *bias, void *conv) {
    const size_t element = s.user_type == dt::f32 ? 4 : 2, run = s.out_per_group * element;
    const char *from = static_cast<const char *>(bias);
    char *to = static_cast<char *>(conv);
    for (int64_t g = 0; g < s.groups; ++g)
        for (int64_t phase = 0; phase < s.phases; ++phase, to += run) std::memcpy(to, from + g * run, run);
}

void commit_phases(const PhaseSplit &s, const void *conv, void *user, const float *bias, bool add) {
    const bool in_f32 = s.conv_type == dt::f32, out_f32 = s.user_type == dt::f32;
    if (in_f32 && out_f32)
        commit_dispatch<float, float>(s, conv, user, bias, add);
    else if (in_f32)
        commit_dispatch<float, uint16_t>(s, conv, user, bias, add);
    else if (out_f32)
        commit_dispatch<uint16_t, float>(s, conv, user, bias, add);
    else
        commit_dispatch<uint16_t, uint16_t>(s, conv, user, bias, add);
}

} // namespace libdeconv
