#include "patch_gather.hpp"

#include "commit_elements.hpp"
#include "threads.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using commit_kernels::load;
using commit_kernels::store;

// Sums of one output row (image n, depth d, height h), kPixels pixels and kChannels channels at a
// time, in the stack: a tap's channels are contiguous in the patch matrix (taps first), so the
// sums run over them as vectors; then stored channels-last, or a run of kPixels per
// channel-first plane.
template <typename Out>
void gather_row(const PatchGather &g, const float *patches, int64_t n, int64_t d, int64_t h, Out *user,
        const float *bias, bool add) {
    constexpr int64_t kPixels = 8, kChannels = 128;
    float sums[kPixels][kChannels];
    const int64_t row = (d * g.out[1] + h) * g.out[2]; // the row's first pixel in the image
    for (int64_t w0 = 0; w0 < g.out[2]; w0 += kPixels)
        for (int64_t c0 = 0; c0 < g.channels; c0 += kChannels) {
            const int64_t pixels = std::min(kPixels, g.out[2] - w0), channels = std::min(kChannels, g.channels - c0);
            for (int64_t p = 0; p < pixels; ++p) {
                float *s = sums[p];
                for (int64_t c = 0; c < channels; ++c) s[c] = bias ? bias[c0 + c] : 0.f;
                const int64_t w = w0 + p;
                for (int64_t a = g.start[0][d]; a < g.start[0][d + 1]; ++a)
                    for (int64_t b = g.start[1][h]; b < g.start[1][h + 1]; ++b)
                        for (int64_t e = g.start[2][w]; e < g.start[2][w + 1]; ++e) {
                            const float *values = patches + g.offset[0][a] + g.offset[1][b] + g.offset[2][e] + c0;
                            for (int64_t c = 0; c < channels; ++c) s[c] += values[c];
                        }
            }
            if (g.channels_last) {
                for (int64_t p = 0; p < pixels; ++p) {
                    Out *pixel = user + ((n * g.out_pixels) + row + w0 + p) * g.channels + c0;
                    for (int64_t c = 0; c < channels; ++c)
                        store(pixel, c, add ? load(pixel, c) + sums[p][c] : sums[p][c]);
                }
                continue;
            }
            for (int64_t c = 0; c < channels; ++c) {
                Out *run = user + (n * g.channels + c0 + c) * g.out_pixels + row + w0;
                for (int64_t p = 0; p < pixels; ++p) store(run, p, add ? load(run, p) + sums[p][c] : sums[p][c]);
            }
        }
}

template <typename Out>
void gather(const PatchGather &g, const float *patches, Out *user, const float *bias, bool add) {
    const int64_t image = g.in_pixels * g.channels * g.taps; // patch values per image
    const int64_t rows = g.out[0] * g.out[1];
    in_parallel(g.batch * g.channels * g.out_pixels >= (int64_t(1) << 14), [&] {
#pragma omp for schedule(static) nowait
        for (int64_t job = 0; job < g.batch * rows; ++job) {
            const int64_t n = job / rows, r = job % rows;
            gather_row(g, patches + n * image, n, r / g.out[1], r % g.out[1], user, bias, add);
        }
    });
}

} // namespace

PatchGather make_patch_gather(const Problem &problem) {
    const Spec &s = problem.spec();
    PatchGather g;
    g.batch = s.batch;
    g.channels = s.out_channels;
    g.channels_last = s.layout == Layout::channels_last;
    g.user_type = s.dtype == DataType::bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
    const SpatialDims sp = spatial_dims(problem);
    g.out = sp.out;
    g.in_pixels = sp.in[0] * sp.in[1] * sp.in[2];
    g.out_pixels = g.out[0] * g.out[1] * g.out[2];
    g.taps = sp.kernel[0] * sp.kernel[1] * sp.kernel[2];
    int64_t in_step = g.channels * g.taps, tap_step = g.channels; // of the innermost dim, then outwards
    for (int d = 2; d >= 0; --d) {
        // Output position o = i * stride - pad + k * dilate: counted per position, then placed
        // (one array, however long the dim: dilations reach millions).
        auto each = [&](auto visit) {
            for (int64_t i = 0; i < sp.in[d]; ++i)
                for (int64_t k = 0; k < sp.kernel[d]; ++k) {
                    const int64_t o = i * sp.stride[d] - sp.pad[d] + k * sp.dilate[d];
                    if (o >= 0 && o < g.out[d]) visit(o, i * in_step + k * tap_step);
                }
        };
        std::vector<int64_t> &start = g.start[d];
        start.assign(static_cast<size_t>(g.out[d]) + 1, 0);
        each([&](int64_t o, int64_t) { ++start[static_cast<size_t>(o) + 1]; });
        for (size_t o = 1; o < start.size(); ++o) start[o] += start[o - 1];
        g.offset[d].resize(static_cast<size_t>(start.back()));
        std::vector<int64_t> next(start.begin(), start.end() - 1);
        each([&](int64_t o, int64_t offset) { g.offset[d][static_cast<size_t>(next[static_cast<size_t>(o)]++)] = offset; });
        in_step *= sp.in[d];
        tap_step *= sp.kernel[d];
    }
    return g;
}

void gather_patches(const PatchGather &g, const float *patches, void *user, const float *bias, bool add) {
    if (g.user_type == dnnl::memory::data_type::bf16)
        gather(g, patches, static_cast<uint16_t *>(user), bias, add);
    else
        gather(g, patches, static_cast<float *>(user), bias, add);
}

} // namespace libdeconv
