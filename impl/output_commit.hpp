// The output commit that adds the bias on the way: internal result (+ bias) written or added
// into the caller's buffer in one pass. oneDNN 2.6's deconvolution adds a bias in a pass of its
// own and its reorders cannot add one, so this is the place where the bias costs nothing.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>

namespace libdeconv {

// A data layout seen as (n, channel block, spatial..., channel within block).
struct ChannelBlocked {
    bool usable = false;
    int rank = 0; // spatial dims
    int64_t batch = 0, channels = 0, block = 1;
    int64_t spatial[3] = {1, 1, 1};
    int64_t stride_n = 0, stride_block = 0, stride_spatial[3] = {0, 0, 0}, stride_channel = 1;
    dnnl::memory::data_type type = dnnl::memory::data_type::f32;
};

// Plain strides, or one inner block on the channel axis; anything else is not usable.
ChannelBlocked describe(const dnnl::memory::desc &desc);

// Named for outputs (internal copy -> caller's buffer). An input's commit (Role::commit) runs
// the other way: there `internal` describes the caller's buffer, the source, and `user` the
// internal copy, the destination.
struct OutputCommit {
    ChannelBlocked internal, user;
    // The tensors are one of this many equal parts of the caller's (Plan::batch_chunks): a
    // write streams by the size of the whole, which leaves the cache anyway.
    int64_t batch_chunks = 1;
    bool usable() const { return internal.usable && user.usable; }
    // Channel blocks (or channels-last) into channels-first planes: a tiled transpose, faster
    // than oneDNN 2.6's reorders when it also adds into the caller's buffer.
    bool tiled() const;
    // The same dense layout on both sides (the data types may differ): an element-wise copy,
    // which also converts an input (no oneDNN call: a fraction of a microsecond on tiny tensors).
    bool elementwise() const;
    // Channels-first planes into channel blocks or channels-last (the way in, no bias or add):
    // the transpose the other way.
    bool tiled_into_blocks() const;
    // Channel blocks <-> channels-last (either way, bias and add included): vectors of a pixel's
    // channels, no transpose. Measured against oneDNN 2.6's reorders (2 threads): bf16 at par to
    // 3.7x faster, f32 from 0.7x to 1.8x as fast; and it adds the bias and accumulates.
    bool channel_runs() const;
    // An output's commit by vectors (any of the above but tiled_into_blocks, which neither adds
    // nor takes a bias); other usable pairs of layouts run a scalar loop.
    bool vectorized() const { return tiled() || elementwise() || channel_runs(); }
    // f32 channel blocks of 16 into f32 planes, too small to stream but not tiny: written (no
    // bias, no add), oneDNN 2.6's reorder (jit:blk, 8x8 transposes) is about twice as fast as the tiled commit
    // on AMD Zen 4 (16 x 16 x 3136: 0.062 against 0.13-0.16 ms from cache, 0.20 against 0.38
    // from memory), whose 16x16 transposes in 512-bit registers cost more there.
    bool reorder_writes_faster() const;
    // The same the way in (an input's commit, tiled_into_blocks): f32 planes into f32 channel
    // blocks of 16, too small to stream, go through oneDNN's reorder too (16 x 16 x 3136: 0.05
    // against 0.068 ms from cache, 0.19 against 0.23 from memory).
    bool reorder_reads_faster() const;
    // Either way, channels-last with fewer than 16 channels (not tiny) goes through oneDNN's
    // reorder too, on AMX measured: dcgan.l5 bf16 backward data (diff_dst of 3 channels into
    // nhwc) 1.44-1.47 -> 1.26-1.32 ms, a 3 -> 5 channels one 0.34-0.35 -> 0.29-0.31 ms.

private:
    int64_t elements() const;
    bool small_f32_with_blocks_of_16(const ChannelBlocked &blocks) const;
    bool few_channels_last(const ChannelBlocked &pixels) const;
};

// user (=|+=) internal + bias[channel]; bias is f32, or NULL for none. A large write streams
// past the caches (commit_kernels.hpp: worth_streaming).
void commit_output(const OutputCommit &commit, const void *internal, void *user, const float *bias, bool add);

} // namespace libdeconv
