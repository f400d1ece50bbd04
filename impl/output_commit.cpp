#include "output_commit.hpp"

#include "bf16.hpp"

#include <algorithm>

#include <immintrin.h>

// GCC 12 flags the "undefined" vectors inside its own AVX-512 intrinsics (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

// The same, 16 pixels at a time with AVX-512 gathers; returns where it stopped (the rest is the
// scalar loop's). A bf16 gather reads the 2 bytes after the last element: the commit's input is
// in the workspace, which always has 64 bytes more than its regions.
__attribute__((target("avx512f"))) inline __m512 load16(const float *from, __m512i index) {
    return _mm512_i32gather_ps(index, from, 4);
}
__attribute__((target("avx512f"))) inline __m512 load16(const uint16_t *from, __m512i index) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_i32gather_epi32(index, from, 2), 16));
}
__attribute__((target("avx512f"))) inline __m512 load_row(const float *row) { return _mm512_loadu_ps(row); }
__attribute__((target("avx512f"))) inline __m512 load_row(const uint16_t *row) {
    const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(words), 16));
}
__attribute__((target("avx512f"))) inline void store_row(float *row, __m512 v) { _mm512_storeu_ps(row, v); }
__attribute__((target("avx512f"))) inline void store_row(uint16_t *row, __m512 v) {
    // Round to nearest even; NaN stays NaN (quiet), as f32_to_bf16.
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
            _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd)), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i words = _mm512_mask_blend_epi32(nan, rounded, quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(row), _mm512_cvtepi32_epi16(words));
}

template <bool Add, typename In, typename Out>
__attribute__((target("avx512f"))) int64_t commit_tile_avx512(
        const In *from, Out *row, int64_t block, int64_t k, float beta, int64_t p0, int64_t p1) {
    const __m512i lanes = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(int(block)));
    const __m512 b = _mm512_set1_ps(beta);
    int64_t p = p0;
    for (; p + 16 <= p1; p += 16) {
        __m512 v = _mm512_add_ps(load16(from + p * block + k, lanes), b);
        if (Add) v = _mm512_add_ps(v, load_row(row + p));
        store_row(row + p, v);
    }
    return p;
}

bool has_avx512() {
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}

template <bool Add, typename In, typename Out>
void commit_row(const In *from, Out *row, int64_t block, int64_t k, float beta, int64_t p0, int64_t p1) {
    // Indices of one gather stay far inside int (block is at most the channel count).
    if (has_avx512() && block <= (int64_t(1) << 26)) p0 = commit_tile_avx512<Add>(from, row, block, k, beta, p0, p1);
    commit_tile<Add>(from, row, block, k, beta, p0, p1);
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
                        commit_row<true>(from, to + k * b.stride_block, a.block, k, beta, p0, p1);
                    else
                        commit_row<false>(from, to + k * b.stride_block, a.block, k, beta, p0, p1);
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
