#include "subpixel_formulation.hpp"

#include "engine.hpp"
#include "phase_interleave.hpp"
#include "plan_building.hpp"

#include <memory>

namespace libdeconv {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

memory::desc plain_desc(const memory::dims &dims, dt type, bool channels_last) {
    static const tag first[] = {tag::abc, tag::abcd, tag::abcde};
    static const tag last[] = {tag::acb, tag::acdb, tag::acdeb};
    return memory::desc(dims, type, (channels_last ? last : first)[dims.size() - 3]);
}

// (G, phases * OCg, ICg, M...) row-major, or without the group dim when there is one group.
memory::desc conv_weights_desc(const PhaseSplit &s, dt type) {
    memory::dims dims;
    if (s.groups > 1) dims.push_back(s.groups);
    dims.push_back(s.phases * s.out_per_group);
    dims.push_back(s.in_per_group);
    for (int d = 0; d < s.rank; ++d) dims.push_back(s.phase_taps[d]);
    static const tag plain[] = {tag::abc, tag::abcd, tag::abcde, tag::abcdef};
    return memory::desc(dims, type, plain[dims.size() - 3]);
}

memory::desc with_format_any(const memory::desc &d) { return memory::desc(d.dims(), d.data_type(), tag::any); }

} // namespace

bool is_subpixel_candidate(const Problem &p) {
    for (int d = 0; d < p.rank(); ++d)
        if (p.spec().dilate[d] != 1) return false;
    return true;
}

void make_subpixel(Plan &plan, const Problem &p, dt type, bool channels_first) {
    const Spec &spec = p.spec();
    auto split = std::make_shared<PhaseSplit>(split_phases(p, type, !channels_first));
    const PhaseSplit &s = *split;
    memory::dims src{s.batch, spec.in_channels}, dst{s.batch, s.conv_channels()}, strides, pad_l, pad_r;
    for (int d = 0; d < s.rank; ++d) {
        src.push_back(s.in[d]);
        dst.push_back(s.conv_out[d]);
        strides.push_back(1);
        pad_l.push_back(s.pad_left[d]);
        pad_r.push_back(s.pad_right[d]);
    }
    const memory::desc staged_weights = conv_weights_desc(s, s.weights_type);
    const auto kind = spec.mode == Mode::training ? dnnl::prop_kind::forward_training
                                                  : dnnl::prop_kind::forward_inference;
    // Its output channels-last (brgconv's fastest layout), or channels-first with the input as
    // the caller's (x64:gemm:jit, no copy of a channels-first input). Only oneDNN's first
    // implementation: its 2.6 iterator crashes stepping over such descriptors.
    const memory::desc conv_src = channels_first ? plain_desc(src, type, false) : memory::desc(src, type, tag::any);
    const memory::desc conv_dst = plain_desc(dst, type, !channels_first);
    auto chosen = choose_implementation<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(
            Pass::forward, spec, [&] {
                dnnl::convolution_forward::desc d(kind, dnnl::algorithm::convolution_direct, conv_src,
                        with_format_any(conv_weights_desc(s, type)), memory::desc(), conv_dst, strides, pad_l, pad_r);
                return dnnl::convolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
            }, false);
    const auto &pd = chosen.pd;
    const std::string impl = pd.impl_info_str();
    if (is_reference(impl)) throw Error(Status::unsupported, "oneDNN has only a reference convolution for the phases");
    if (kAvoidOverreadingKernel && impl == kOverreadingKernel)
        throw Error(Status::unsupported, std::string("oneDNN 2.6's ") + kOverreadingKernel + " reads out of bounds");
    plan.primitive = chosen.primitive;
    plan.impl = "subpixel:" + impl;
    plan.scratchpad_bytes = pd.scratchpad_desc().get_size();
    add_role(plan, role::fwd_src, DNNL_ARG_SRC, false, user_data_desc(p, false), pd.src_desc());
    // The caller's weights are split by phase into the staged layout first, then converted.
    add_role(plan, role::fwd_weights, DNNL_ARG_WEIGHTS, false, staged_weights, pd.weights_desc());
    plan.roles[role::fwd_weights].phases = split;
    if (spec.bias) {
        const memory::dims bias{spec.out_channels};
        add_role(plan, role::fwd_bias, 0, false, memory::desc(bias, s.user_type, tag::a), memory::desc(bias, dt::f32, tag::a));
        plan.bias_in_commit = true;
    }
    // No reorder can interleave: the phase commit writes and adds.
    Role &out = plan.roles[role::fwd_dst];
    out.present = out.output = true;
    out.arg = DNNL_ARG_DST;
    out.conversion.user = user_data_desc(p, true);
    out.conversion.internal = pd.dst_desc();
    out.phases = split;
}

} // namespace libdeconv
