// oneDNN descriptors and primitives for one pass of a problem: memory descriptors with
// format_tag::any, the weights' IO swap, implementation selection, the reorders between the
// caller's plain buffers and the layouts the chosen implementation wants, and the workspace
// layout a call needs.
#pragma once

#include "output_commit.hpp"
#include "patch_gather.hpp"
#include "phase_interleave.hpp"
#include "problem.hpp"
#include "reorder.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

namespace libdeconv {

class DepthwiseKernel;

// Moves a tensor between the caller's plain layout and the primitive's layout.
struct Conversion {
    dnnl::memory::desc user, internal;
    bool identical = false; // the primitive uses the caller's layout: no copy at all
    int64_t repeat = 0;     // > 0: internal = each user element `repeat` times, in f32 (no reorder)
    bool repeat_whole = false; // ... or the whole user tensor `repeat` times in a row
    Reorder to_internal, to_user, add_to_user; // as applicable to the tensor's role
};

// One tensor of a pass.
struct Role {
    bool present = false;
    bool output = false;
    int arg = 0; // DNNL_ARG_*, or 0 when only the output commit uses it (a bias added there)
    // The DNNL_ARG_* under which Plan::accumulating takes the tensor where that is another: a
    // backward data pass adds as the forward convolution it is (diff_dst its src, diff_src its dst).
    int accumulating_arg = 0;
    Conversion conversion;
    size_t internal_offset = 0; // in the workspace, when the tensor needs an internal copy
    bool has_internal = false;
    // How the primitive sees the internal copy when that differs from conversion.internal
    // (a matmul's matrix over a permuted copy of an N-d tensor); empty otherwise.
    dnnl::memory::desc primitive_view;
    // Outputs whose layouts the commit handles (tiled or element-wise) go through it instead of
    // oneDNN 2.6's reorders: as fast for f32, faster for bf16 (unet.up2's output nhwc -> nchw
    // 1.4 vs 2.7 ms), several times faster when adding, and no oneDNN call on tiny tensors
    // (2.9 us for 1.3K weight gradients). Inputs too, when the copy is element-wise (a type
    // conversion), from channels-first planes into blocks or channels-last (bf16 1.4-2.5x
    // faster than oneDNN's reorder, f32 at parity), or between channels-last and blocks; their
    // commit goes from the caller's buffer to the internal copy.
    bool by_commit = false;
    OutputCommit commit;
    // The subpixel formulation's (phase_interleave.hpp). An input is rearranged by `split` into
    // a staged copy (conversion.user is its layout), converted from there as any input. An
    // output is moved into the caller's buffer by `merge`: from the internal copy, or with
    // `staged` from the internal copy reordered into the staged one (conversion.user); with the
    // plan's f32 commit bias (a role of arg 0), or nullptr.
    std::shared_ptr<const PhaseSplit> phases;
    void (*split)(const PhaseSplit &, const void *user, void *staged) = nullptr;
    void (*merge)(const PhaseSplit &, const void *result, void *user, const float *bias, bool add) = nullptr;
    bool staged = false;
    size_t staged_offset = 0;
    // The patches formulation's output (patch_gather.hpp): the internal copy is the f32 patch
    // matrix, gathered into the caller's buffer with the plan's f32 commit bias (a role of arg 0).
    std::shared_ptr<const PatchGather> gather;
    // Bytes of the caller's buffer per batch chunk (Plan::batch_chunks): a data tensor steps by
    // it from chunk to chunk; 0 for weights and bias, the same in every chunk.
    size_t chunk_bytes = 0;
};

// Role indices per pass.
namespace role {
constexpr int fwd_src = 0, fwd_weights = 1, fwd_bias = 2, fwd_dst = 3;
constexpr int bwd_data_diff_dst = 0, bwd_data_weights = 1, bwd_data_diff_src = 2;
// The bias gradient is a role only of the plans that compute it (the depthwise kernel); the
// others leave it to a reduction apart (bias_gradient.hpp).
constexpr int bwd_weights_src = 0, bwd_weights_diff_dst = 1, bwd_weights_diff_weights = 2, bwd_weights_diff_bias = 3;
} // namespace role

constexpr int kMaxRoles = 4;

// One pass, ready to run; immutable once made, shared through the primitive cache.
struct Plan {
    uint64_t id = 0; // unique for the process lifetime (per-thread bindings key on it)
    Pass pass = Pass::forward;
    DataType compute = DataType::f32; // the primitive's data type (bf16 problems may run in f32)
    dnnl::primitive primitive;
    std::string impl;
    std::array<Role, kMaxRoles> roles;
    size_t scratchpad_bytes = 0;  // shared by the primitive and the reorders (they run in turn)
    bool zero_scratchpad = false; // the kernel reads parts of its scratchpad it never wrote
    size_t workspace_bytes = 0;   // scratchpad first, then the internal copies
    size_t input_shift = 0;       // bytes past a cache line where the inputs' internal copies start
    // Forward only: the bias is added while the output is committed (Role::commit), not by the
    // primitive.
    bool bias_in_commit = false;
    bool single_threaded = false; // built, and to be run, under SingleThreaded (threads.hpp)
    // The same computation adding into its output (a sum post-op), for an add request on an
    // output the primitive writes in the caller's layout: no copy and no extra pass. Plans
    // with one output only; empty when oneDNN has no such kernel.
    dnnl::primitive accumulating;
    // The plan computes batch / batch_chunks images and is run once per chunk (execution.cpp):
    // the internal copy of a large output then stays in cache between the kernel and the commit
    // that reads it back (an add request's copy and add pass).
    int64_t batch_chunks = 1;
    // Our own kernel instead of `primitive` (depthwise_formulation.hpp); it adds into its output
    // itself, so it also stands for `accumulating`.
    std::shared_ptr<const DepthwiseKernel> depthwise;
};

// Bytes of the caller's buffer for role `index` over the whole batch.
size_t caller_bytes(const Plan &plan, int index);

// How a pass is computed: oneDNN's deconvolution primitive, a matmul where the problem is a
// matrix product (gemm_formulation.hpp), for the forward and weight-gradient passes a
// convolution over the output's phases (subpixel_formulation.hpp), for the forward pass of a
// depthwise problem our own kernel (depthwise_formulation.hpp), or for the forward pass a
// matmul giving every input pixel's patch, gathered into the output (patches: gemm_formulation.hpp).
enum class Formulation { deconvolution, matrix_product, subpixel, depthwise, patches };

// The data layout a deconvolution primitive is asked for: whatever it likes best (format any),
// or a plain one. Format any is not always fastest: for 3 output channels it picks blocks of 16
// (dcgan.l5 forward f32 9.1 ms) where channels-first takes x64:gemm:jit (3.3 ms, and no copy).
// The subpixel convolution's output is channels-last (any), or with channels_first its input
// and output are.
enum class DataLayout { any, channels_first, channels_last };

// Throws Error(unsupported) when this compute type or formulation cannot run the problem.
Plan make_plan(const Problem &problem, Pass pass, DataType compute, Formulation formulation,
        DataLayout data_layout = DataLayout::any);

// oneDNN 2.6's AVX2 sgemm (x64:gemm:jit, matmul's gemm:jit) reads some matrices 1.3-1.7x
// slower when they start on a 32-byte boundary than 16 bytes past it, as malloc's large blocks
// start: dcgan.l5 forward f32 on the caller's buffers 10 against 7 ms, dcgan.l1's weight
// gradient 1.7 against 1.1 ms; others, unet.up2's, run 3-10% faster aligned. So a plan whose
// gemm reads internal copies is a route twice (route.cpp), with its copies on cache lines and
// `input_shift` bytes past them, and timing picks. Offered on AVX2 only, where it was measured.
bool may_shift_inputs(const Plan &plan);
// `plan` (which make_plan laid out on cache lines) with its inputs' internal copies
// `input_shift` bytes past a line; deconv_impl_name says so.
Plan with_input_shift(const Plan &plan, size_t input_shift);

// The caller's plain descriptors (shared with the weight packing).
dnnl::memory::desc user_data_desc(const Problem &problem, bool output);
dnnl::memory::desc user_weights_desc(const Problem &problem);
dnnl::memory::data_type onednn_type(DataType type);
// Plain (batch, channels, spatial...) data of `ndims` dims: channels-first or channels-last.
dnnl::memory::format_tag plain_data_tag(size_t ndims, bool channels_last);

} // namespace libdeconv
