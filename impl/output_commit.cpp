#include "output_commit.hpp"

#include "commit_kernels.hpp"
#include "threads.hpp"

#include <algorithm>
#include <array>
#include <numeric>

namespace libdeconv {
namespace {

using namespace commit_kernels;
using dt = dnnl::memory::data_type;

// Spatial positions laid out densely in row-major order, `step` elements apart.
bool dense_spatial(const ChannelBlocked &d, int64_t step) {
    int64_t expected = step;
    for (int i = d.rank - 1; i >= 0; --i) {
        if (d.stride_spatial[i] != expected) return false;
        expected *= d.spatial[i];
    }
    return true;
}

// Blocked internal layout into a channels-first buffer: a transpose per channel block, done in
// tiles of pixels so that reads stay in L1 and writes are contiguous rows.
template <bool Add, typename In, typename Out>
void commit_tile(const In *from, Out *row, int64_t block, int64_t k, float beta, int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
        const float v = load(from, p * block + k) + beta;
        store(row, p, Add ? load(row, p) + v : v);
    }
}

template <bool Add, bool Stream, typename In, typename Out>
void commit_channels(const In *from, Out *rows, int64_t row_stride, int64_t block, int64_t width, const float *bias,
        int64_t p0, int64_t p1) {
    if (has_avx512())
        return commit_tile_avx512<Add, Stream>(from, [block](int64_t p) { return p * block; }, rows, row_stride, 0,
                width, bias, p0, p1);
    if (has_avx2())
        return commit_tile_avx2<Add>(from, [block](int64_t p) { return p * block; }, rows, row_stride, 0, width, bias,
                p0, p1);
    for (int64_t k = 0; k < width; ++k)
        commit_tile<Add>(from, rows + k * row_stride, block, k, bias ? bias[k] : 0.f, p0, p1);
}

// f(n, cb, c0, width, p0, p1) for every tile of pixels [p0, p1) of channel block cb (channels
// [c0, c0 + width)) of image n, over all threads. Tiles are independent too: a single image with
// a single block (channels-last) still spreads over every thread. Tiles start at pixel `first`
// (< kTile) and every kTile pixels from it, the first tile at 0 (LineTiles). `streamed`: f
// streams its stores (end_streaming).
constexpr int64_t kTile = 128; // pixels (64 was 5-15% slower on f32)
template <typename F>
void for_each_tile(int64_t batch, int64_t channels, int64_t block, int64_t pixels, int64_t first, bool streamed, F f) {
    const LineTiles tiles(pixels, kTile, first);
    const int64_t blocks = (channels + block - 1) / block;
    in_parallel(batch * channels * pixels >= kParallelElements, [&] {
#pragma omp for collapse(3) schedule(static) nowait
        for (int64_t n = 0; n < batch; ++n)
            for (int64_t cb = 0; cb < blocks; ++cb)
                for (int64_t t = 0; t < tiles.count; ++t) {
                    const int64_t c0 = cb * block;
                    f(n, cb, c0, std::min(block, channels - c0), tiles.begin(t), tiles.end(t));
                }
        end_streaming(streamed);
    });
}

// Streamed: where every plane starts at the same place within a cache line, tiles start on the
// planes' line boundaries, so that every line but a plane's first and last is streamed whole
// (with planes that start anywhere, lines shared by plain and streamed stores cost more than
// the streaming saves).
template <typename In, typename Out>
void commit_blocked_to_planes(const OutputCommit &c, const In *in, Out *out, const float *bias, bool add, bool stream) {
    const ChannelBlocked &a = c.internal, &b = c.user;
    const int64_t pixels = a.spatial[0] * a.spatial[1] * a.spatial[2];
    stream &= reinterpret_cast<uintptr_t>(out) % sizeof(Out) == 0 && b.stride_block * sizeof(Out) % 64 == 0
            && b.stride_n * sizeof(Out) % 64 == 0;
    const int64_t first = stream ? line_boundary(out, sizeof(Out)) : 0;
    for_each_tile(a.batch, a.channels, a.block, pixels, first, stream,
            [&](int64_t n, int64_t cb, int64_t c0, int64_t width, int64_t p0, int64_t p1) {
                const In *from = in + n * a.stride_n + cb * a.stride_block;
                Out *to = out + n * b.stride_n + c0 * b.stride_block;
                const float *channel_bias = bias ? bias + c0 : nullptr;
                if (add)
                    commit_channels<true, false>(from, to, b.stride_block, a.block, width, channel_bias, p0, p1);
                else if (stream)
                    commit_channels<false, true>(from, to, b.stride_block, a.block, width, channel_bias, p0, p1);
                else
                    commit_channels<false, false>(from, to, b.stride_block, a.block, width, channel_bias, p0, p1);
            });
}

// The way in, the transpose the other way: channels-first planes into channel blocks (or
// channels-last). Channels of the last block past the tensor's are written as zeros, as
// oneDNN's layouts require. `to` is the block of one image; pixel p, channel k is
// to[p * block + k]; channel k of `planes` starts at planes[k * plane_stride].
template <bool Stream, typename In, typename Out>
void uncommit_tile(const In *planes, int64_t plane_stride, Out *to, int64_t block, int64_t width, int64_t p0,
        int64_t p1) {
    if (has_avx512())
        return uncommit_tile_avx512<Stream>(planes, plane_stride, to, [block](int64_t p) { return p * block; }, block,
                width, p0, p1);
    if (has_avx2())
        return uncommit_tile_avx2(planes, plane_stride, to, [block](int64_t p) { return p * block; }, block, width, p0,
                p1);
    for (int64_t p = p0; p < p1; ++p)
        for (int64_t k = 0; k < block; ++k) store(to, p * block + k, k < width ? load(planes, k * plane_stride + p) : 0.f);
}

// Channels innermost and pixels dense (nwc, nhwc, ndhwc): one block of all channels.
bool as_one_block(ChannelBlocked &d) {
    if (d.block != 1 || d.stride_block != 1 || !dense_spatial(d, d.channels)) return false;
    d.block = d.channels;
    d.stride_block = 0;
    return true;
}

bool same_layout(const ChannelBlocked &a, const ChannelBlocked &b) {
    bool same = a.rank == b.rank && a.batch == b.batch && a.channels == b.channels && a.block == b.block &&
                a.stride_n == b.stride_n && a.stride_block == b.stride_block && a.stride_channel == b.stride_channel;
    for (int i = 0; i < a.rank; ++i)
        same &= a.spatial[i] == b.spatial[i] && a.stride_spatial[i] == b.stride_spatial[i];
    return same;
}

// Internal and caller's layout the same plain one (ncx or nxc): element-wise, in place when
// in == out (the bias of a kernel that wrote the caller's buffer).
template <typename In, typename Out>
void commit_same_plain_layout(const ChannelBlocked &d, const In *in, Out *out, const float *bias, bool add,
        bool stream) {
    const int64_t pixels = d.spatial[0] * d.spatial[1] * d.spatial[2];
    const bool channels_last = d.block > 1; // as_one_block
    // Planes: a channel's pixels (ncx) or an image (nxc), in runs of about kChunk elements; on
    // channels-last data whole pixels, many of them: the bias then repeats within a run with a
    // period of whole vectors, the channels or, where they do not fill vectors, the bias laid out
    // lcm(channels, 16) long. One pixel a run cost bilinear.dw's 64 channels 2.07 ms in bf16 with
    // its bias against 1.2 without, and tiny.latency's 8 channels (64 runs of 8) 0.4-0.5 us of
    // its 2 us call.
    constexpr int64_t kChunk = 4096, kMaxRepeatedBias = 1024;
    const int64_t period = channels_last ? std::lcm<int64_t>(d.channels, 16) : 0;
    const bool periodic = channels_last && (period == d.channels || period <= kMaxRepeatedBias);
    float repeated_bias[kMaxRepeatedBias]; // on the caller's stack: no allocation in a commit
    if (bias && periodic && period != d.channels) {
        for (int64_t i = 0; i < period; ++i) repeated_bias[i] = bias[i % d.channels];
        bias = repeated_bias;
    }
    // Without a bias, channels-first data is one plane: tiny.latency's bf16 diff_dst (8 x 64)
    // took 8 runs to convert.
    const bool one_plane = !bias && !channels_last;
    const int64_t plane_size = one_plane ? d.batch * d.channels * pixels : channels_last ? pixels * d.channels : pixels;
    const int64_t run = !channels_last ? std::min(plane_size, kChunk)
                        : periodic     ? std::max<int64_t>(1, kChunk / period) * period
                                       : d.channels;
    // Streamed only where every run starts at the same place within a cache line (see
    // commit_blocked_to_planes), and never channels-last: bilinear.dw's 25 MB f32 output (64
    // channels) took 4.2-6.2 ms streamed one pixel a run, 1.7-1.8 ms with plain stores.
    stream &= !channels_last && (one_plane || pixels * int64_t(sizeof(Out)) % 64 == 0);
    const int64_t runs_per_plane = (plane_size + run - 1) / run;
    const int64_t planes = one_plane ? 1 : d.batch * (channels_last ? 1 : d.channels);
    const int64_t bias_step = channels_last ? 1 : 0, bias_period = periodic ? period : 0;
    in_parallel(d.batch * d.channels * pixels >= kParallelElements, [&] {
#pragma omp for schedule(static) nowait
        for (int64_t job = 0; job < planes * runs_per_plane; ++job) {
            const int64_t plane = job / runs_per_plane, first = (job % runs_per_plane) * run;
            const int64_t count = std::min(run, plane_size - first);
            const int64_t offset = plane * plane_size + first;
            const float *b = !bias ? nullptr : channels_last ? bias : bias + plane % d.channels;
            if (add)
                commit_run<true>(in + offset, out + offset, count, b, bias_step, bias_period);
            else if (stream)
                commit_run<false, true>(in + offset, out + offset, count, b, bias_step, bias_period);
            else
                commit_run<false>(in + offset, out + offset, count, b, bias_step, bias_period);
        }
        end_streaming(stream);
    });
}

// Unblocked, and its elements fill [0, count) without gaps (any order of the dims). Allocates
// nothing: a commit runs after other outputs of the call may have been written, and must not
// fail then (tests/faults).
bool dense_unblocked(const ChannelBlocked &d) {
    if (d.block != 1) return false;
    // (stride, size) of every dim, by stride: unused entries are of size 1, which is skipped.
    std::array<std::pair<int64_t, int64_t>, 5> dims{{{d.stride_n, d.batch}, {d.stride_block, d.channels},
            {0, 1}, {0, 1}, {0, 1}}};
    for (int i = 0; i < d.rank; ++i) dims[2 + i] = {d.stride_spatial[i], d.spatial[i]};
    for (size_t i = 1; i < dims.size(); ++i) // insertion sort (std::sort of 5 trips GCC's -Warray-bounds)
        for (size_t j = i; j > 0 && dims[j] < dims[j - 1]; --j) std::swap(dims[j], dims[j - 1]);
    int64_t expected = 1;
    for (const auto &dim : dims) {
        if (dim.second == 1) continue;
        if (dim.first != expected) return false;
        expected *= dim.second;
    }
    return true;
}

// a and b both the same dense ncx or nxc layout; `plain` is a as commit_same_plain_layout sees it.
bool same_plain_layout(const ChannelBlocked &a, const ChannelBlocked &b, ChannelBlocked &plain) {
    plain = a;
    const int64_t pixels = a.spatial[0] * a.spatial[1] * a.spatial[2];
    const bool ncx = a.block == 1 && dense_spatial(a, 1) && a.stride_block == pixels;
    return same_layout(a, b) && a.stride_n == a.channels * pixels && (ncx || as_one_block(plain));
}

// Planes (a) into blocks or channels-last (b); see uncommit_tile. Streamed only where every
// store is a whole aligned line: with pixels of 21 channels most lines took plain and streamed
// stores both (fcn8s.upscore8 bf16 backward data on AMX, the copy of diff_dst into nhwc: lib/plain
// 1.76-1.85x streamed, 0.89-0.90x not), and bf16 vectors stream half a line each, the other
// half a whole tile later (dcgan.l3 bf16 backward data: 1.33-1.42x, 0.98-1.04x not).
template <typename In, typename Out>
void commit_planes_to_blocked(const ChannelBlocked &a, const ChannelBlocked &b, const In *in, Out *out, bool stream) {
    stream &= sizeof(Out) == 4 && b.block % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 64 == 0;
    const int64_t pixels = a.spatial[0] * a.spatial[1] * a.spatial[2];
    for_each_tile(a.batch, a.channels, b.block, pixels, 0, stream,
            [&](int64_t n, int64_t cb, int64_t c0, int64_t width, int64_t p0, int64_t p1) {
                const In *from = in + n * a.stride_n + c0 * a.stride_block;
                Out *to = out + n * b.stride_n + cb * b.stride_block;
                if (stream)
                    uncommit_tile<true>(from, a.stride_block, to, b.block, width, p0, p1);
                else
                    uncommit_tile<false>(from, a.stride_block, to, b.block, width, p0, p1);
            });
}

// a is channels-first planes, b channel blocks or channels-last (then `blocked` is b as one block).
bool planes_to_blocked(const ChannelBlocked &a, const ChannelBlocked &b, ChannelBlocked &blocked) {
    blocked = b;
    if (a.block != 1 || !dense_spatial(a, 1) || a.batch != b.batch || a.channels != b.channels) return false;
    return (b.block > 1 && dense_spatial(b, b.block)) || as_one_block(blocked);
}

// Channel blocks and channels-last, or blocks of two sizes: on both sides a pixel's channels lie
// in runs of contiguous elements, so the copy moves vectors of channels pixel by pixel (no
// transpose). `ra`, `rb`: a and b with channels-last seen as one block.
bool as_channel_runs(const ChannelBlocked &a, const ChannelBlocked &b, ChannelBlocked &ra, ChannelBlocked &rb) {
    ra = a;
    rb = b;
    const auto runs = [](ChannelBlocked &d) { return (d.block > 1 && dense_spatial(d, d.block)) || as_one_block(d); };
    if (a.rank != b.rank || a.batch != b.batch || a.channels != b.channels || !runs(ra) || !runs(rb)) return false;
    for (int i = 0; i < a.rank; ++i)
        if (a.spatial[i] != b.spatial[i]) return false;
    // Runs of the shorter block never cross a block of the other side.
    const int64_t run = std::min(ra.block, rb.block);
    const auto whole_runs = [&](const ChannelBlocked &d) { return d.block % run == 0 || d.block >= a.channels; };
    return whole_runs(ra) && whole_runs(rb);
}

// Tiles of pixels, and within a tile every run of channels: the reads of a run are contiguous,
// and a tile's writes fill whole lines of channels-last pixels before they leave the cache.
template <typename In, typename Out>
void commit_channel_runs(const ChannelBlocked &a, const ChannelBlocked &b, const In *in, Out *out, const float *bias,
        bool add) {
    const int64_t pixels = a.spatial[0] * a.spatial[1] * a.spatial[2];
    const int64_t run = std::min(a.block, b.block);
    // A blocked destination (an input's internal copy) gets its last block's padding as zeros,
    // written with the last run.
    const bool padded = b.stride_block != 0 && a.channels % b.block != 0;
    const int64_t padded_channels = padded ? (a.channels + b.block - 1) / b.block * b.block : a.channels;
    constexpr int64_t kPixels = 256; // per tile (64: the same or up to 2x slower on bf16)
    const int64_t tiles = (pixels + kPixels - 1) / kPixels;
    in_parallel(a.batch * a.channels * pixels >= kParallelElements, [&] {
#pragma omp for collapse(2) schedule(static) nowait
        for (int64_t n = 0; n < a.batch; ++n)
            for (int64_t t = 0; t < tiles; ++t) {
                const int64_t p0 = t * kPixels, p1 = std::min(pixels, p0 + kPixels);
                for (int64_t c0 = 0; c0 < a.channels; c0 += run) {
                    const int64_t valid = std::min(run, a.channels - c0);
                    const int64_t width = c0 + valid == a.channels ? padded_channels - c0 : valid;
                    const In *from = in + n * a.stride_n + (c0 / a.block) * a.stride_block + c0 % a.block;
                    Out *to = out + n * b.stride_n + (c0 / b.block) * b.stride_block + c0 % b.block;
                    const float *run_bias = bias ? bias + c0 : nullptr;
                    const auto from_at = [step = a.block](int64_t p) { return p * step; };
                    if (add)
                        copy_channel_run<true>(from, from_at, to, b.block, valid, width, run_bias, p0, p1);
                    else
                        copy_channel_run<false>(from, from_at, to, b.block, valid, width, run_bias, p0, p1);
                }
            }
    });
}

template <typename In, typename Out>
void commit_typed(const OutputCommit &c, const In *in, Out *out, const float *bias, bool add) {
    const ChannelBlocked &a = c.internal, &b = c.user;
    const int64_t elements = a.batch * a.channels * a.spatial[0] * a.spatial[1] * a.spatial[2];
    const bool stream = !add && static_cast<const void *>(in) != static_cast<const void *>(out) &&
                        worth_streaming(elements * c.batch_chunks * int64_t(sizeof(Out)));
    // First, so that an in-place commit (same layout) is always element-wise.
    ChannelBlocked plain;
    if (same_plain_layout(a, b, plain)) return commit_same_plain_layout(plain, in, out, bias, add, stream);
    if (!bias && same_layout(a, b) && dense_unblocked(a)) { // e.g. weight gradients: one flat array
        constexpr int64_t kChunk = 4096;
        const int64_t count = elements;
        in_parallel(count >= kParallelElements, [&] {
#pragma omp for schedule(static) nowait
            for (int64_t first = 0; first < count; first += kChunk) {
                if (add)
                    commit_run<true>(in + first, out + first, std::min(kChunk, count - first), nullptr, 0);
                else if (stream)
                    commit_run<false, true>(in + first, out + first, std::min(kChunk, count - first), nullptr, 0);
                else
                    commit_run<false>(in + first, out + first, std::min(kChunk, count - first), nullptr, 0);
            }
            end_streaming(stream);
        });
        return;
    }
    // Before the ways out: an input commit reads the caller's buffer, which the bf16 gathers of
    // commit_tile_avx512 must not (they read 2 bytes past their last element).
    ChannelBlocked blocked;
    if (!bias && !add && planes_to_blocked(a, b, blocked)) return commit_planes_to_blocked(a, blocked, in, out, stream);
    if (a.block > 1 && b.block == 1 && dense_spatial(a, a.block) && dense_spatial(b, 1))
        return commit_blocked_to_planes(c, in, out, bias, add, stream);
    OutputCommit transposed = c;
    if (b.block == 1 && dense_spatial(b, 1) && as_one_block(transposed.internal))
        return commit_blocked_to_planes(transposed, in, out, bias, add, stream);
    ChannelBlocked ra, rb;
    if (as_channel_runs(a, b, ra, rb)) return commit_channel_runs(ra, rb, in, out, bias, add);
    const int64_t blocks = (a.channels + a.block - 1) / a.block;
    const int64_t s0 = a.spatial[0], s1 = a.spatial[1], s2 = a.spatial[2];
    in_parallel(a.batch * a.channels * s0 * s1 * s2 >= kParallelElements, [&] {
#pragma omp for collapse(2) schedule(static) nowait
        for (int64_t n = 0; n < a.batch; ++n) {
            for (int64_t cb = 0; cb < blocks; ++cb) {
                const int64_t c0 = cb * a.block, width = std::min(a.block, a.channels - c0);
                for (int64_t i0 = 0; i0 < s0; ++i0)
                    for (int64_t i1 = 0; i1 < s1; ++i1)
                        for (int64_t i2 = 0; i2 < s2; ++i2) {
                            const int64_t from = n * a.stride_n + cb * a.stride_block + i0 * a.stride_spatial[0]
                                    + i1 * a.stride_spatial[1] + i2 * a.stride_spatial[2];
                            const int64_t to = n * b.stride_n + c0 * b.stride_block + i0 * b.stride_spatial[0]
                                    + i1 * b.stride_spatial[1] + i2 * b.stride_spatial[2];
                            for (int64_t k = 0; k < width; ++k) {
                                const int64_t o = to + k * b.stride_block;
                                const float v = load(in, from + k) + (bias ? bias[c0 + k] : 0.f);
                                store(out, o, add ? load(out, o) + v : v);
                            }
                        }
            }
        }
    });
}

} // namespace

ChannelBlocked describe(const dnnl::memory::desc &desc) {
    ChannelBlocked d;
    const dnnl_memory_desc_t &md = desc.data;
    if (md.format_kind != dnnl_blocked || md.ndims < 3 || md.ndims > 5 || md.offset0 != 0) return d;
    const auto &blk = md.format_desc.blocking;
    if (blk.inner_nblks > 1 || (blk.inner_nblks == 1 && blk.inner_idxs[0] != 1)) return d;
    d.block = blk.inner_nblks == 1 ? blk.inner_blks[0] : 1;
    d.rank = md.ndims - 2;
    d.batch = md.dims[0];
    d.channels = md.dims[1];
    d.stride_n = blk.strides[0];
    d.stride_block = blk.strides[1];
    for (int i = 0; i < d.rank; ++i) {
        d.spatial[i] = md.dims[2 + i];
        d.stride_spatial[i] = blk.strides[2 + i];
    }
    d.type = static_cast<dt>(md.data_type);
    d.usable = d.type == dt::f32 || d.type == dt::bf16;
    return d;
}

bool OutputCommit::tiled() const {
    if (!usable() || user.block != 1 || !dense_spatial(user, 1)) return false;
    ChannelBlocked a = internal;
    return (a.block > 1 && dense_spatial(a, a.block)) || as_one_block(a);
}

int64_t OutputCommit::elements() const {
    return internal.batch * internal.channels * internal.spatial[0] * internal.spatial[1] * internal.spatial[2];
}

// f32 on both sides, `blocks` in channel blocks of 16, too small to stream, and large enough
// for the copy to take every thread (oneDNN's reorder always enters an OpenMP region, which a
// copy below kParallelElements skips).
bool OutputCommit::small_f32_with_blocks_of_16(const ChannelBlocked &blocks) const {
    using dt = dnnl::memory::data_type;
    return internal.type == dt::f32 && user.type == dt::f32 && blocks.block == 16 && elements() >= kParallelElements
            && !worth_streaming(elements() * batch_chunks * int64_t(sizeof(float)));
}

// Below 16 channels a tile's 16x16 transposes move mostly padding.
bool OutputCommit::few_channels_last(const ChannelBlocked &pixels) const {
    ChannelBlocked one = pixels;
    return as_one_block(one) && pixels.channels < 16 && elements() >= kParallelElements;
}

bool OutputCommit::reorder_writes_faster() const {
    return tiled() && (small_f32_with_blocks_of_16(internal) || few_channels_last(internal));
}

bool OutputCommit::reorder_reads_faster() const {
    return tiled_into_blocks() && (small_f32_with_blocks_of_16(user) || few_channels_last(user));
}

bool OutputCommit::tiled_into_blocks() const {
    ChannelBlocked blocked;
    return usable() && planes_to_blocked(internal, user, blocked);
}

bool OutputCommit::channel_runs() const {
    ChannelBlocked a, b;
    return usable() && as_channel_runs(internal, user, a, b);
}

bool OutputCommit::elementwise() const {
    ChannelBlocked plain;
    return usable() && (same_plain_layout(internal, user, plain) || (same_layout(internal, user) && dense_unblocked(internal)));
}

void commit_output(const OutputCommit &c, const void *internal, void *user, const float *bias, bool add) {
    const bool in_f32 = c.internal.type == dt::f32, out_f32 = c.user.type == dt::f32;
    if (in_f32 && out_f32)
        commit_typed(c, static_cast<const float *>(internal), static_cast<float *>(user), bias, add);
    else if (in_f32)
        commit_typed(c, static_cast<const float *>(internal), static_cast<uint16_t *>(user), bias, add);
    else if (out_f32)
        commit_typed(c, static_cast<const uint16_t *>(internal), static_cast<float *>(user), bias, add);
    else
        commit_typed(c, static_cast<const uint16_t *>(internal), static_cast<uint16_t *>(user), bias, add);
}

} // namespace libdeconv
