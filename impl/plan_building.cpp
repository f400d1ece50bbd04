#include "plan_building.hpp"

#include "engine.hpp"

#include <algorithm>

namespace libdeconv {

bool is_reference(const std::string &impl) { return impl.rfind("ref", 0) == 0; }

dnnl::memory::desc with_type(const dnnl::memory::desc &d, dnnl::memory::data_type type) {
    dnnl::memory::desc typed = d;
    typed.data.data_type = static_cast<dnnl_data_type_t>(type);
    return typed;
}

// Where a convolution's sum beats the commit's add pass over a copy (channels-last backward
// data, ADD over WRITE, pass -> sum, medians of 1.5 s loops): bf16 kernels (dcgan.l5 1.89 ->
// 1.15, bilinear.dw 1.74 -> 1.02, adj.s2 1.24 -> 0.87, unet.up2 1.13 -> 0.96) and f32 depthwise
// ones (brdgmm_dw: 3x3 stride 1 2.4 -> 1.1-1.2, bilinear.dw 1.1-1.5 -> 1.0-1.3), and f32 brgconv
// kernels whose output is not much larger than their input (alternating runs: dil.1d 1.10 ->
// 1.01-1.02, small.k1 1.14-1.15 -> 1.04-1.12, a 1x1 64 -> 64 channels 1.26 -> 1.07). Where the
// output is several times the input, f32 brgconv adds slower in place than the pass (dcgan.l5,
// 5x: 1.6-1.8 -> 1.9-2.5; a 1x1 64 -> 512 channels, 8x: 1.30-1.39 -> 1.61), and so does
// x64:gemm:jit on channels-first data (1.01 -> 1.21).
bool adds_faster_in_kernel(const std::string &impl, dnnl::memory::data_type type, int64_t output_elems,
        int64_t input_elems) {
    if (type == dnnl::memory::data_type::bf16 || impl.find("_dw:") != std::string::npos) return true;
    return impl.find("brgconv") != std::string::npos && output_elems <= 2 * input_elems;
}

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

dnnl::primitive_attr summing_into_output() {
    dnnl::primitive_attr attr = user_scratchpad();
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    attr.set_post_ops(ops);
    return attr;
}

void add_role(Plan &plan, int index, int arg, bool output, const dnnl::memory::desc &user,
        const dnnl::memory::desc &internal, int64_t repeat) {
    Role &r = plan.roles[index];
    r.present = true;
    r.output = output;
    r.arg = arg;
    Conversion &c = r.conversion;
    c.user = user;
    c.internal = internal;
    c.repeat = repeat;
    c.identical = repeat == 0 && user == internal;
    if (repeat > 0) return;
    if (!output && !c.identical) {
        r.commit = OutputCommit{describe(user), describe(internal)};
        r.by_commit = r.commit.elementwise() || (r.commit.tiled_into_blocks() && !r.commit.reorder_reads_faster())
                || r.commit.channel_runs();
        if (!r.by_commit) c.to_internal = make_reorder(user, internal, false, plan.scratchpad_bytes);
    }
    if (output) {
        // A layout equal to the caller's (oneDNN ignores the strides of dims of size 1: one
        // channel in nhwc is nchw) is described as the caller's, so that the commit of a kernel
        // that wrote the caller's buffer is element-wise in place: a transposing one read bf16
        // past the end of the buffer (found by the fuzzer).
        r.commit = OutputCommit{describe(c.identical ? user : internal), describe(user)};
        // Identical: the commit adds the kernel's result in the workspace to the caller's buffer
        // (oneDNN 2.6 ran that as a scalar reorder with a sum, simple:any, on AVX2: dcgan.l5
        // channels-last backward data took 1.22-1.29x the write).
        r.by_commit = c.identical ? r.commit.elementwise() : r.commit.vectorized();
        if (r.by_commit) { // the commit adds (and adds the bias); a plain write may go to oneDNN
            if (r.commit.reorder_writes_faster()) c.to_user = make_reorder(internal, user, false, plan.scratchpad_bytes);
            return;
        }
        if (!c.identical) c.to_user = make_reorder(internal, user, false, plan.scratchpad_bytes);
        c.add_to_user = make_reorder(internal, user, true, plan.scratchpad_bytes);
    }
}

} // namespace libdeconv
