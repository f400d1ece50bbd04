#include "output_commit.hpp"

#include "bf16.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using dt = dnnl::memory::data_type;

inline float load(const float *p, int64_t i) { return p[i]; }
inline float load(const uint16_t *p, int64_t i) { return bf16_to_f32(p[i]); }
inline void store(float *p, int64_t i, float v) { p[i] = v; }
inline void store(uint16_t *p, int64_t i, float v) { p[i] = f32_to_bf16(v); }

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

template <typename In, typename Out>
void commit_blocked_to_planes(const OutputCommit &c, const In *in, Out *out, const float *bias, bool add) {
    const ChannelBlocked &a = c.internal, &b = c.user;
    const int64_t blocks = (a.channels + a.block - 1) / a.block;
    const int64_t pixels = a.spatial[0] * a.spatial[1] * a.spatial[2];
    constexpr int64_t kTile = 64;
    const int64_t tiles = (pixels + kTile - 1) / kTile;
    // Tiles are independent too: a single image with a single block (channels-last) still
    // spreads over every thread.
#pragma omp parallel for collapse(3) schedule(static)
    for (int64_t n = 0; n < a.batch; ++n) {
        for (int64_t cb = 0; cb < blocks; ++cb) {
            for (int64_t t = 0; t < tiles; ++t) {
                const int64_t c0 = cb * a.block, width = std::min(a.block, a.channels - c0);
                const In *from = in + n * a.stride_n + cb * a.stride_block;
                Out *to = out + n * b.stride_n + c0 * b.stride_block;
                const int64_t p0 = t * kTile, p1 = std::min(pixels, p0 + kTile);
                for (int64_t k = 0; k < width; ++k) {
                    const float beta = bias ? bias[c0 + k] : 0.f;
                    if (add)
                        commit_tile<true>(from, to + k * b.stride_block, a.block, k, beta, p0, p1);
                    else
                        commit_tile<false>(from, to + k * b.stride_block, a.block, k, beta, p0, p1);
                }
            }
        }
    }
}

// Channels innermost and pixels dense (nwc, nhwc, ndhwc): one block of all channels.
bool as_one_block(ChannelBlocked &d) {
    if (d.block != 1 || d.stride_block != 1 || !dense_spatial(d, d.channels)) return false;
    d.block = d.channels;
    d.stride_block = 0;
    return true;
}

template <typename In, typename Out>
void commit_typed(const OutputCommit &c, const In *in, Out *out, const float *bias, bool add) {
    const ChannelBlocked &a = c.internal, &b = c.user;
    if (a.block > 1 && b.block == 1 && dense_spatial(a, a.block) && dense_spatial(b, 1))
        return commit_blocked_to_planes(c, in, out, bias, add);
    OutputCommit transposed = c;
    if (b.block == 1 && dense_spatial(b, 1) && as_one_block(transposed.internal))
        return commit_blocked_to_planes(transposed, in, out, bias, add);
    const int64_t blocks = (a.channels + a.block - 1) / a.block;
    const int64_t s0 = a.spatial[0], s1 = a.spatial[1], s2 = a.spatial[2];
#pragma omp parallel for collapse(2) schedule(static)
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
