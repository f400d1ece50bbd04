#include "descriptors.hpp"

#include "cpu_features.hpp"
#include "depthwise_formulation.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "gemm_formulation.hpp"
#include "layout_name.hpp"
#include "plan_building.hpp"
#include "subpixel_formulation.hpp"
#include "threads.hpp"

#include <algorithm>
#include <atomic>
#include <vector>

namespace libdeconv {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Geometry {
    memory::dims src, weights, bias, dst, strides, dilation, pad_l, pad_r;
    DataLayout data_layout = DataLayout::any;
};

Geometry geometry(const Problem &p, DataLayout data_layout = DataLayout::any) {
    const Spec &s = p.spec();
    Geometry g;
    g.data_layout = data_layout;
    g.src = {s.batch, s.in_channels};
    g.dst = {s.batch, s.out_channels};
    // oneDNN wants deconvolution weights as ([G,] OC/G, IC/G, k...).
    if (s.groups > 1)
        g.weights = {s.groups, s.out_channels / s.groups, s.in_channels / s.groups};
    else
        g.weights = {s.out_channels, s.in_channels};
    g.bias = {s.out_channels};
    for (int i = 0; i < s.rank; ++i) {
        g.src.push_back(s.in_size[i]);
        g.dst.push_back(p.out_size()[i]);
        g.weights.push_back(s.kernel[i]);
        g.strides.push_back(p.kernel_stride()[i]);
        g.dilation.push_back(s.dilate[i] - 1);
        g.pad_l.push_back(p.pad()[i]);
        // adj extends the high end; oneDNN accepts the resulting negative right padding.
        g.pad_r.push_back(p.pad()[i] - p.adj()[i]);
    }
    return g;
}

memory::desc any_desc(const memory::dims &dims, dt type) { return memory::desc(dims, type, tag::any); }

// src or dst (or their gradients) as the route asks: any layout oneDNN likes, or a plain one.
memory::desc data_desc(const Geometry &g, const memory::dims &dims, dt type) {
    if (g.data_layout == DataLayout::any) return any_desc(dims, type);
    return memory::desc(dims, type, plain_data_tag(dims.size(), g.data_layout == DataLayout::channels_last));
}

// Unique for the process lifetime: the threads' bindings of plans to the workspace key on it.
uint64_t new_plan_id() {
    static std::atomic<uint64_t> next_id{1};
    return next_id++;
}

// Scratchpad first, then an internal copy for every converted input and every output (an
// output in the caller's layout still needs one for an add request); the inputs' copies
// `input_shift` bytes past a cache line, the rest on lines.
void lay_out_workspace(Plan &plan, size_t input_shift) {
    constexpr size_t kAlign = 64;
    auto aligned = [](size_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
    size_t offset = aligned(plan.scratchpad_bytes);
    for (Role &r : plan.roles) {
        if (!r.present) continue;
        if (r.split || r.staged) { // the subpixel formulation's staged copy
            r.staged_offset = offset;
            offset += aligned(r.conversion.user.get_size());
        }
        r.has_internal = r.output || !r.conversion.identical;
        if (!r.has_internal) continue;
        const size_t shift = r.output ? 0 : input_shift;
        r.internal_offset = offset + shift;
        offset += aligned(shift + r.conversion.internal.get_size());
    }
    plan.workspace_bytes = offset;
    plan.input_shift = input_shift;
}

} // namespace

bool may_shift_inputs(const Plan &plan) {
    if (has_avx512() || plan.impl.find("gemm") == std::string::npos) return false;
    for (const Role &r : plan.roles)
        if (r.present && !r.output && !r.conversion.identical) return true;
    return false;
}

Plan with_input_shift(const Plan &plan, size_t input_shift) {
    Plan shifted = plan;
    shifted.id = new_plan_id();
    lay_out_workspace(shifted, input_shift);
    shifted.impl += " (inputs " + std::to_string(input_shift) + " B past a line)";
    return shifted;
}

namespace {

size_t scratchpad_size(const dnnl::primitive_desc_base &pd) { return pd.scratchpad_desc().get_size(); }

using ForwardChoice = Chosen<dnnl::deconvolution_forward::primitive_desc, dnnl::deconvolution_forward>;

ForwardChoice forward_pd(const Spec &spec, const Geometry &g, dt type, bool bias, dnnl::prop_kind kind) {
    const memory::desc bias_desc = bias ? memory::desc(g.bias, dt::f32, tag::a) : memory::desc();
    return choose_implementation<dnnl::deconvolution_forward::primitive_desc, dnnl::deconvolution_forward>(
            Pass::forward, spec, [&] {
        dnnl::deconvolution_forward::desc d(kind, dnnl::algorithm::deconvolution_direct, data_desc(g, g.src, type),
                any_desc(g.weights, type), bias_desc, data_desc(g, g.dst, type), g.strides, g.dilation, g.pad_l,
                g.pad_r);
        return dnnl::deconvolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
    }, g.data_layout == DataLayout::any);
}

// oneDNN's native deconvolution kernels add the bias inside; those built on a convolution
// backward-data kernel add it in a pass of their own (measured: +23-40% on dcgan-size layers),
// which the output commit does for free.
bool bias_is_free_in(const std::string &impl) { return impl.rfind("jit_deconvolution", 0) == 0; }

void make_forward(Plan &plan, const Problem &p, const Geometry &g, dt type) {
    const Spec &s = p.spec();
    const auto kind = s.mode == Mode::training ? dnnl::prop_kind::forward_training
                                               : dnnl::prop_kind::forward_inference;
    ForwardChoice chosen = forward_pd(p.spec(), g, type, s.bias, kind);
    const memory::desc user_dst = user_data_desc(p, true);
    // The commit adds the bias: on an output it copies anyway (a tiled commit), or in place
    // where the kernel writes the caller's layout (hifigan.up1 f32: oneDNN's bias pass costs
    // 1.1 ms, this one 0.06 ms with the output in cache). Native kernels keep their own
    // otherwise (nearly free, and no extra pass over the output).
    const OutputCommit biased_output{describe(chosen.pd.dst_desc()), describe(user_dst)};
    const bool copied_anyway = chosen.pd.dst_desc() != user_dst && biased_output.vectorized();
    if (s.bias && (!bias_is_free_in(chosen.pd.impl_info_str()) || copied_anyway)) {
        ForwardChoice unbiased = forward_pd(p.spec(), g, type, false, kind);
        OutputCommit commit{describe(unbiased.pd.dst_desc()), describe(user_dst)};
        // Only when the same kernel runs without the bias and the layouts suit the commit (other
        // pairs of layouts would take its scalar loop).
        if (commit.vectorized() && std::string(unbiased.pd.impl_info_str()) == chosen.pd.impl_info_str()) {
            chosen = unbiased;
            plan.bias_in_commit = true;
        }
    }
    const auto &pd = chosen.pd;
    plan.primitive = chosen.primitive;
    plan.impl = pd.impl_info_str();
    plan.scratchpad_bytes = scratchpad_size(pd);
    add_role(plan, role::fwd_src, DNNL_ARG_SRC, false, user_data_desc(p, false), pd.src_desc());
    add_role(plan, role::fwd_weights, DNNL_ARG_WEIGHTS, false, user_weights_desc(p), pd.weights_desc());
    if (s.bias)
        add_role(plan, role::fwd_bias, plan.bias_in_commit ? 0 : DNNL_ARG_BIAS, false,
                memory::desc(g.bias, onednn_type(s.dtype), tag::a), memory::desc(g.bias, dt::f32, tag::a));
    add_role(plan, role::fwd_dst, DNNL_ARG_DST, true, user_dst, pd.dst_desc());
    // The same kernel adding into the caller's buffer, for add requests (zero copy): only oneDNN's
    // native deconvolution kernels fuse the sum; those built on other kernels run it as passes of
    // their own (x64:gemm:jit: 2.3x the write).
    if (plan.roles[role::fwd_dst].conversion.identical && !plan.bias_in_commit && bias_is_free_in(plan.impl)) {
        const dnnl::primitive_attr attr = summing_into_output();
        try {
            dnnl::deconvolution_forward::desc d(kind, dnnl::algorithm::deconvolution_direct, pd.src_desc(),
                    pd.weights_desc(), pd.bias_desc(), pd.dst_desc(), g.strides, g.dilation, g.pad_l, g.pad_r);
            dnnl::deconvolution_forward::primitive_desc summing(d, attr, cpu_engine());
            if (std::string(summing.impl_info_str()) == plan.impl) {
                plan.accumulating = dnnl::deconvolution_forward(summing);
                plan.scratchpad_bytes = std::max(plan.scratchpad_bytes, scratchpad_size(summing));
            }
        } catch (const dnnl::error &e) {
            if (e.status == dnnl_out_of_memory) throw;
        }
    }
}


memory::desc blocked16_desc(const memory::dims &dims, dt type) {
    static const tag blocked[] = {tag::aBc16b, tag::aBcd16b, tag::aBcde16b};
    return memory::desc(dims, type, blocked[dims.size() - 3]);
}

// A deconvolution's backward data is a forward convolution of diff_dst (oneDNN 2.6 runs it as
// one), whose weights are the deconvolution's with input and output channels swapped. oneDNN's
// backward primitives take no post-ops, its forward convolutions a sum: for an add request on a
// diff_src written in the caller's layout, the same kernel as that convolution adds into the
// caller's buffer instead of writing a copy that a pass of its own then adds (channels-last
// dcgan.l5 backward data bf16 in the bench: ADD 1.73x the write).
void add_accumulating_convolution(Plan &plan, const dnnl::deconvolution_backward_data::primitive_desc &pd,
        const Geometry &g) {
    const memory::desc weights = pd.weights_desc();
    const int first = weights.data.ndims > static_cast<int>(g.src.size()) ? 1 : 0; // after the groups
    std::vector<int> swapped(weights.data.ndims);
    for (int i = 0; i < weights.data.ndims; ++i) swapped[i] = i;
    std::swap(swapped[first], swapped[first + 1]);
    const dnnl::primitive_attr attr = summing_into_output();
    try {
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                pd.diff_dst_desc(), weights.permute_axes(swapped), pd.diff_src_desc(), g.strides, g.dilation,
                g.pad_l, g.pad_r);
        dnnl::convolution_forward::primitive_desc summing(d, attr, cpu_engine());
        if (std::string(summing.impl_info_str()) != plan.impl) return;
        plan.accumulating = dnnl::convolution_forward(summing);
        plan.scratchpad_bytes = std::max(plan.scratchpad_bytes, scratchpad_size(summing));
        plan.roles[role::bwd_data_diff_dst].accumulating_arg = DNNL_ARG_SRC;
        plan.roles[role::bwd_data_diff_src].accumulating_arg = DNNL_ARG_DST;
    } catch (const dnnl::error &e) {
        if (e.status == dnnl_out_of_memory) throw;
    }
}

void make_backward_data(Plan &plan, const Problem &p, const Geometry &g, dt type) {
    const auto hint = forward_pd(p.spec(), g, type, false, dnnl::prop_kind::forward_training).pd;
    auto make_pd = [&](const memory::desc &diff_src, const memory::desc &diff_dst) {
        dnnl::deconvolution_backward_data::desc d(dnnl::algorithm::deconvolution_direct, diff_src,
                any_desc(g.weights, type), diff_dst, g.strides, g.dilation, g.pad_l, g.pad_r);
        return dnnl::deconvolution_backward_data::primitive_desc(d, user_scratchpad(), cpu_engine(), hint);
    };
    auto chosen = choose_implementation<dnnl::deconvolution_backward_data::primitive_desc,
            dnnl::deconvolution_backward_data>(Pass::backward_data, p.spec(), [&] {
        auto pd = make_pd(data_desc(g, g.src, type), data_desc(g, g.dst, type));
        if (!kAvoidOverreadingKernel || pd.impl_info_str() != std::string(kOverreadingKernel)) return pd;
        auto blocked = make_pd(blocked16_desc(g.src, type), blocked16_desc(g.dst, type));
        // Small channel counts get only the reference kernel there, and stepping an iterator past
        // that crashes oneDNN 2.6: unsupported instead, route.cpp computes in f32.
        if (is_reference(blocked.impl_info_str()))
            throw Error(Status::unsupported, std::string("oneDNN 2.6's ") + kOverreadingKernel
                    + " reads out of bounds and no other bf16 kernel takes the problem");
        return blocked;
    }, g.data_layout == DataLayout::any);
    const auto &pd = chosen.pd;
    plan.primitive = chosen.primitive;
    plan.impl = pd.impl_info_str();
    plan.scratchpad_bytes = scratchpad_size(pd);
    add_role(plan, role::bwd_data_diff_dst, DNNL_ARG_DIFF_DST, false, user_data_desc(p, true), pd.diff_dst_desc());
    add_role(plan, role::bwd_data_weights, DNNL_ARG_WEIGHTS, false, user_weights_desc(p), pd.weights_desc());
    add_role(plan, role::bwd_data_diff_src, DNNL_ARG_DIFF_SRC, true, user_data_desc(p, false), pd.diff_src_desc());
    if (plan.roles[role::bwd_data_diff_src].conversion.identical && adds_faster_in_kernel(plan.impl, type, p.src_elems(), p.dst_elems()))
        add_accumulating_convolution(plan, pd, g);
}

void make_backward_weights(Plan &plan, const Problem &p, const Geometry &g, dt type) {
    const Spec &s = p.spec();
    // No bias: its gradient is reduced apart (bias_gradient.hpp).
    const auto hint = forward_pd(p.spec(), g, type, false, dnnl::prop_kind::forward_training).pd;
    // Weight gradients are produced in f32 even for bf16 problems, so that accumulation into the
    // caller's bf16 buffer rounds once.
    auto chosen = choose_implementation<dnnl::deconvolution_backward_weights::primitive_desc,
            dnnl::deconvolution_backward_weights>(Pass::backward_weights, s, [&] {
        dnnl::deconvolution_backward_weights::desc d(dnnl::algorithm::deconvolution_direct,
                data_desc(g, g.src, type), any_desc(g.weights, dt::f32), data_desc(g, g.dst, type), g.strides,
                g.dilation, g.pad_l, g.pad_r);
        return dnnl::deconvolution_backward_weights::primitive_desc(d, user_scratchpad(), cpu_engine(), hint);
    }, g.data_layout == DataLayout::any);
    const auto &pd = chosen.pd;
    plan.primitive = chosen.primitive;
    plan.impl = pd.impl_info_str();
    // oneDNN 2.6's bf16 weight gradients (AMX, and avx512_core_bf16 on AMD Zen 4) leave the
    // partial sums of kernel taps that meet no output unwritten in their scratchpad and then
    // reduce them: garbage unless the scratchpad starts zeroed. Only such degenerate geometries
    // pay for clearing it, whatever the kernel.
    plan.zero_scratchpad = p.has_dead_taps();
    plan.scratchpad_bytes = scratchpad_size(pd);
    add_role(plan, role::bwd_weights_src, DNNL_ARG_SRC, false, user_data_desc(p, false), pd.src_desc());
    add_role(plan, role::bwd_weights_diff_dst, DNNL_ARG_DIFF_DST, false, user_data_desc(p, true), pd.diff_dst_desc());
    add_role(plan, role::bwd_weights_diff_weights, DNNL_ARG_DIFF_WEIGHTS, true, user_weights_desc(p),
            pd.diff_weights_desc());
}

} // namespace

dt onednn_type(DataType type) { return type == DataType::f32 ? dt::f32 : dt::bf16; }

tag plain_data_tag(size_t ndims, bool channels_last) {
    static const tag first[] = {tag::abc, tag::abcd, tag::abcde};
    static const tag last[] = {tag::acb, tag::acdb, tag::acdeb};
    return (channels_last ? last : first)[ndims - 3];
}

memory::desc user_data_desc(const Problem &p, bool output) {
    const Spec &s = p.spec();
    memory::dims dims{s.batch, output ? s.out_channels : s.in_channels};
    for (int i = 0; i < s.rank; ++i) dims.push_back(output ? p.out_size()[i] : s.in_size[i]);
    return memory::desc(dims, onednn_type(s.dtype), plain_data_tag(dims.size(), s.layout == Layout::channels_last));
}

memory::desc user_weights_desc(const Problem &p) {
    // The caller's (IC, OC/G, k...) is physically (G, IC/G, OC/G, k...): the logical OC/IC axes of
    // oneDNN's descriptor are swapped by the format tag, no data moves.
    const Spec &s = p.spec();
    static const tag plain[] = {tag::bac, tag::bacd, tag::bacde};
    static const tag grouped[] = {tag::acbd, tag::acbde, tag::acbdef};
    const tag t = s.groups > 1 ? grouped[s.rank - 1] : plain[s.rank - 1];
    return memory::desc(geometry(p).weights, onednn_type(s.dtype), t);
}

Plan make_plan(const Problem &p, Pass pass, DataType compute, Formulation formulation, DataLayout data_layout) {
    const Geometry g = geometry(p, data_layout);
    const bool deconvolution = formulation == Formulation::deconvolution;
    const bool subpixel = formulation == Formulation::subpixel;
    // oneDNN 2.6's bf16 deconvolution (jit_deconvolution:avx512_core_amx_bf16, first in its list)
    // crashes, in its kernel or when its descriptor iterator moves past it, once the innermost
    // stride reaches 48 (plain oneDNN alike); every bf16 pass needs that descriptor (backward
    // passes as a hint), so such problems compute in f32. The margin to 32 is ours.
    if (deconvolution && compute == DataType::bf16 && g.strides.back() > 32)
        throw Error(Status::unsupported, "bf16 kernels of oneDNN 2.6 crash for an innermost stride above 32 (stride = "
                + std::to_string(g.strides.back()) + ")");
    if (deconvolution && compute == DataType::bf16 && bf16_dilated_output_too_large(p))
        throw Error(Status::unsupported, "oneDNN 2.6's bf16 deconvolution crashes describing a dilated problem whose "
                                         "output takes 2 GiB or more (refused from 1 GiB)");
    if (deconvolution && data_layout == DataLayout::channels_last && too_wide_for_brgconv(p.spec()))
        throw Error(Status::unsupported, "oneDNN 2.6's brgconv kernels, which channels-last data would get, take "
                                         "memory per position of the innermost dim when they are built");
    if (formulation == Formulation::matrix_product && !is_matrix_product(p))
        throw Error(Status::unsupported, "the problem is not a matrix product");
    if (subpixel && (pass == Pass::backward_data || !is_subpixel_candidate(p)))
        throw Error(Status::unsupported, "the subpixel formulation computes forward and weight-gradient passes "
                                         "without dilation");
    if (formulation == Formulation::patches && (!is_patches_candidate(p, pass) || compute != DataType::f32))
        throw Error(Status::unsupported, "the patches formulation computes forward passes of groups 1 in f32, where "
                                         "the patches hold at most 4 values per output element");
    if ((formulation == Formulation::matrix_product || formulation == Formulation::patches)
            && data_layout != DataLayout::any)
        throw Error(Status::unsupported, "the matmul formulation lays out its matrices itself");
    if (formulation == Formulation::depthwise && data_layout != DataLayout::any
            && !(data_layout == DataLayout::channels_first
                    && (p.spec().layout == Layout::channels_first || pass == Pass::backward_data)))
        throw Error(Status::unsupported, "the depthwise kernels take channels-last data (copies of channels-first "
                                         "data) or the caller's channels-first data (the data gradient copies too)");
    const dt type = onednn_type(compute);
    Plan plan;
    plan.id = new_plan_id();
    plan.pass = pass;
    plan.compute = compute;
    plan.single_threaded = runs_single_threaded(p);
    SingleThreaded scope(plan.single_threaded);
    if (formulation == Formulation::depthwise) {
        make_depthwise(plan, p, pass, compute, data_layout == DataLayout::channels_first);
    } else if (subpixel) {
        make_subpixel(plan, p, pass, type, data_layout == DataLayout::channels_first);
    } else if (formulation == Formulation::patches) {
        if (!make_patches_product(plan, p))
            throw Error(Status::unsupported, "oneDNN has only a reference matmul for this problem");
    } else if (!deconvolution) {
        if (!make_matrix_product(plan, p, pass, type))
            throw Error(Status::unsupported, "oneDNN has only a reference matmul for this problem");
    } else {
        switch (pass) {
        case Pass::forward: make_forward(plan, p, g, type); break;
        case Pass::backward_data: make_backward_data(plan, p, g, type); break;
        case Pass::backward_weights: make_backward_weights(plan, p, g, type); break;
        }
        // Which of the layouts a route may ask for the kernel got (role 0 is the data it reads in
        // every pass): kernels of one name run several times faster in one than in another.
        plan.impl += " on " + layout_name(plan.roles[0].conversion.internal);
    }
    lay_out_workspace(plan, 0);
    return plan;
}

size_t caller_bytes(const Plan &plan, int index) {
    const Role &r = plan.roles[index];
    return r.chunk_bytes ? r.chunk_bytes * static_cast<size_t>(plan.batch_chunks) : r.conversion.user.get_size();
}

} // namespace libdeconv
