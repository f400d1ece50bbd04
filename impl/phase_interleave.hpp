// The data movement of the subpixel formulation (subpixel_formulation.hpp). Output position o of
// a deconvolution with stride s and pad p (no dilation) receives the taps t = s * m + phase,
// phase = (o + p) mod s, of the inputs at (o + p) div s - m: per phase, a stride-1 convolution
// of the input with that phase's taps, flipped. One convolution computes every phase as a
// channel, phase-major within each group:
//   convolution channel   g * phases * OCg + phase * OCg + oc   (phases = s_1 * ... * s_r,
//                                                               phase index row-major)
//   convolution position  (o + p) div s - first                  (per spatial dim)
// (for o + p: the position in the output before the padding is cut off).
// Its weights and bias are the caller's, rearranged (split_weights, split_bias); its output,
// channels-last or channels-first, is interleaved back into the caller's buffer, with an add
// request (and in f32 the bias) on the way (commit_phases).
#pragma once

#include "problem.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <vector>

namespace libdeconv {

struct PhaseSplit {
    int rank = 1;
    int64_t batch_chunks = 1; // as OutputCommit::batch_chunks, for the merge
    int64_t batch = 1, groups = 1, in_per_group = 1, out_per_group = 1;
    int64_t phases = 1;   // s_1 * ... * s_r
    int64_t taps = 1;     // M_1 * ... * M_r
    Dims3 stride{1, 1, 1}, kernel{1, 1, 1}, phase_taps{1, 1, 1}; // M = ceil(k / s): taps per phase
    Dims3 in{1, 1, 1}, out{1, 1, 1};
    Dims3 first{0, 0, 0};    // the convolution's first position, at most p div s
    Dims3 conv_out{1, 1, 1}; // positions the convolution computes
    Dims3 pad_left{0, 0, 0}, pad_right{0, 0, 0}; // its padding (never negative)
    // The convolution's output: channels-last (channel_stride 1) or channels-first (then
    // channel_stride is its plane).
    bool conv_channels_last = true;
    int64_t channel_stride = 1;
    // Per spatial dim and output position o: where o's phase and position start in the
    // convolution's output (elements, batch and channel excluded).
    std::vector<int64_t> offset[3];
    // Channels-first output, as 32-bit gather indices where they fit (else empty): offset of
    // the last dim, and k * channel_stride for k < out_per_group.
    std::vector<int32_t> last_index, channel_index;
    // Per phase and convolution tap (row-major): the caller's tap it holds (row-major), or -1.
    std::vector<int64_t> tap_of;
    // Per caller tap: phase * out_per_group * in_per_group * taps + convolution tap (the inverse).
    std::vector<int64_t> conv_tap_of;
    // Per spatial dim, convolution position u and phase q (u * stride + q): whether that value
    // of the convolution's output is an output position (not one cut off by the padding).
    std::vector<char> used[3];
    // Some convolution tap reads only padding in some dim (its weight gradient is an empty sum).
    bool dead_taps = false;
    dnnl::memory::data_type weights_type = dnnl::memory::data_type::f32; // the caller's
    dnnl::memory::data_type conv_type = dnnl::memory::data_type::f32;    // the convolution's
    dnnl::memory::data_type user_type = dnnl::memory::data_type::f32;
    bool user_channels_last = false;

    int64_t conv_channels() const { return groups * phases * out_per_group; }
};

// The split of a problem without dilation; `conv_type` is the convolution's data type, and its
// output channels-last or channels-first.
PhaseSplit split_phases(const Problem &problem, dnnl::memory::data_type conv_type, bool conv_channels_last);

// The caller's weights (G, ICg, OCg, k...) as the convolution's, plain (G, phases * OCg, ICg,
// M...) in the caller's data type; taps past the kernel are zeros.
void split_weights(const PhaseSplit &split, const void *weights, void *conv_weights);

// The caller's bias (G * OCg) as the convolution's: each group's repeated for every phase.
void split_bias(const PhaseSplit &split, const void *bias, void *conv_bias);

// user (=|+=) the convolution's output (conv_type), interleaved, + bias[channel] (f32, one per
// caller channel) unless bias is nullptr (no bias, or the convolution added it).
void commit_phases(const PhaseSplit &split, const void *conv_output, void *user, const float *bias, bool add);

// The backward-weights pass through the same convolution (channels-last only): the caller's
// diff_dst as the convolution's (conv_type, zeros where no output position is), and the
// convolution's weight gradient (plain f32, the layout of split_weights) back to the caller's
// (=|+=).
void split_output_gradient(const PhaseSplit &split, const void *diff_dst, void *conv_diff_dst);
// (`no_bias`: a weight gradient has none; the parameter makes it a Role::merge.)
void merge_weight_gradient(const PhaseSplit &split, const void *conv_diff_weights, void *diff_weights,
        const float *no_bias, bool add);

} // namespace libdeconv
