#include "subpixel_formulation.hpp"

#include "engine.hpp"
#include "integer_math.hpp"
#include "phase_interleave.hpp"
#include "plan_building.hpp"

#include <algorithm>
#include <memory>

namespace libdeconv {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

memory::desc plain_desc(const memory::dims &dims, dt type, bool channels_last) {
    return memory::desc(dims, type, plain_data_tag(dims.size(), channels_last));
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

// The convolution's descriptors' dims, padding and (oneDNN's, 0-based) dilation.
struct Convolution {
    memory::dims src, dst, strides, dilation, pad_l, pad_r;
};

// A single phase (is_single_phase) computes exactly the output's positions, output o from the
// inputs o + pad - dilate * j for the flipped taps j: padding dilate * (kernel - 1) - pad each side.
Convolution convolution_of(const Problem &p, const PhaseSplit &s) {
    const Spec &spec = p.spec();
    const bool single = is_single_phase(p);
    Convolution c{{s.batch, spec.in_channels}, {s.batch, s.conv_channels()}, {}, {}, {}, {}};
    for (int d = 0; d < s.rank; ++d) {
        const int64_t reach = spec.dilate[d] * (spec.kernel[d] - 1);
        c.src.push_back(s.in[d]);
        c.dst.push_back(single ? p.out_size()[d] : s.conv_out[d]);
        c.strides.push_back(1);
        c.dilation.push_back(spec.dilate[d] - 1);
        c.pad_l.push_back(single ? reach - p.pad()[d] : s.pad_left[d]);
        c.pad_r.push_back(single ? reach - p.pad()[d] : s.pad_right[d]);
    }
    return c;
}

// The chosen convolution as the plan's primitive; a reference kernel makes no route.
template <typename PD, typename Prim>
void adopt(Plan &plan, const Chosen<PD, Prim> &chosen) {
    const std::string impl = chosen.pd.impl_info_str();
    if (is_reference(impl)) throw Error(Status::unsupported, "oneDNN has only a reference convolution for the phases");
    plan.primitive = chosen.primitive;
    plan.impl = "subpixel:" + impl;
    plan.scratchpad_bytes = chosen.pd.scratchpad_desc().get_size();
}

// Before its primitive is built: building it is what reads out of bounds.
template <typename PD>
PD refusing_overreading(PD pd) {
    if (kAvoidOverreadingKernel && pd.impl_info_str() == std::string(kOverreadingKernel))
        throw Error(Status::unsupported, std::string("oneDNN 2.6's ") + kOverreadingKernel + " reads out of bounds");
    return pd;
}

// Whether every output position of a single phase receives some tap: output o reads input
// o + pad - dilate * t for taps t in [0, kernel).
bool every_output_has_a_tap(const Problem &p) {
    const Spec &spec = p.spec();
    for (int d = 0; d < p.rank(); ++d) {
        const int64_t dil = spec.dilate[d], pad = p.pad()[d], in = spec.in_size[d];
        for (int64_t o = 0; o < p.out_size()[d]; ++o) {
            const int64_t last = std::min(spec.kernel[d] - 1, floor_div(o + pad, dil));
            const int64_t first = std::max<int64_t>(0, -floor_div(in - 1 - o - pad, dil));
            if (first > last) return false;
        }
    }
    return true;
}

// The convolution adding into the caller's buffer (a sum post-op), where oneDNN runs that with
// the same kernel and it adds faster there than a pass over the output would. Not where some
// output reads only padding: oneDNN 2.6's brgconv then writes its bias and drops the sum.
void add_accumulating(Plan &plan, const dnnl::convolution_forward::primitive_desc &pd, const Convolution &c,
        dnnl::prop_kind kind, const Problem &p, dt type) {
    if (!adds_faster_in_kernel(pd.impl_info_str(), type, p.dst_elems(), p.src_elems())) return;
    if (!every_output_has_a_tap(p)) return;
    try {
        const dnnl::convolution_forward::desc d(kind, dnnl::algorithm::convolution_direct, pd.src_desc(),
                pd.weights_desc(), pd.bias_desc(), pd.dst_desc(), c.strides, c.dilation, c.pad_l, c.pad_r);
        const dnnl::convolution_forward::primitive_desc summing(d, summing_into_output(), cpu_engine());
        if (std::string(summing.impl_info_str()) != pd.impl_info_str()) return;
        plan.accumulating = dnnl::convolution_forward(summing);
        plan.scratchpad_bytes = std::max(plan.scratchpad_bytes, summing.scratchpad_desc().get_size());
    } catch (const dnnl::error &e) {
        if (e.status == dnnl_out_of_memory) throw;
    }
}

void make_forward(Plan &plan, const Problem &p, dt type, bool channels_first) {
    const Spec &spec = p.spec();
    auto split = std::make_shared<PhaseSplit>(split_phases(p, type, !channels_first));
    const PhaseSplit &s = *split;
    const Convolution c = convolution_of(p, s);
    const bool single = is_single_phase(p);
    const auto kind = spec.mode == Mode::training ? dnnl::prop_kind::forward_training
                                                  : dnnl::prop_kind::forward_inference;
    // Its output channels-last (brgconv's fastest layout), or channels-first with the input as
    // the caller's (x64:gemm:jit, no copy of a channels-first input). Only oneDNN's first
    // implementation: its 2.6 iterator crashes stepping over such descriptors.
    const memory::desc conv_src = channels_first ? plain_desc(c.src, type, false) : memory::desc(c.src, type, tag::any);
    const memory::desc conv_dst = plain_desc(c.dst, type, !channels_first);
    // A bf16 convolution adds the bias in its epilogue, on its f32 sums: one rounding, and no
    // work in the commit (fcn8s.upscore8 bf16: +9% added there, +1% here). An f32 one leaves it
    // to the commit, the same f32 add on a pass over the output anyway (unet.up1 f32:
    // brgconv_1x1's epilogue made the call 9-15% slower), unless a single phase needs no
    // interleave: there the epilogue saves a pass.
    const bool bias_in_commit = spec.bias && type == dt::f32 && !single;
    const memory::dims bias_dims{s.conv_channels()};
    const memory::desc conv_bias =
            spec.bias && !bias_in_commit ? memory::desc(bias_dims, dt::f32, tag::a) : memory::desc();
    auto chosen = choose_implementation<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(
            Pass::forward, spec, [&] {
                dnnl::convolution_forward::desc d(kind, dnnl::algorithm::convolution_direct, conv_src,
                        with_format_any(conv_weights_desc(s, type)), conv_bias, conv_dst, c.strides, c.dilation,
                        c.pad_l, c.pad_r);
                return refusing_overreading(dnnl::convolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine()));
            }, false);
    adopt(plan, chosen);
    if (single) plan.impl += " (one phase)";
    const auto &pd = chosen.pd;
    add_role(plan, role::fwd_src, DNNL_ARG_SRC, false, user_data_desc(p, false), pd.src_desc());
    // The caller's weights are split by phase into the staged layout first, then converted.
    add_role(plan, role::fwd_weights, DNNL_ARG_WEIGHTS, false, conv_weights_desc(s, s.weights_type), pd.weights_desc());
    plan.roles[role::fwd_weights].phases = split;
    plan.roles[role::fwd_weights].split = split_weights;
    if (bias_in_commit) { // the caller's, as f32: arg 0 makes it the commit's (execution.cpp)
        const memory::dims channels{spec.out_channels};
        add_role(plan, role::fwd_bias, 0, false, memory::desc(channels, s.user_type, tag::a),
                memory::desc(channels, dt::f32, tag::a));
    } else if (spec.bias) {
        add_role(plan, role::fwd_bias, DNNL_ARG_BIAS, false, memory::desc(bias_dims, s.user_type, tag::a), conv_bias);
        plan.roles[role::fwd_bias].phases = split;
        plan.roles[role::fwd_bias].split = split_bias;
    }
    if (single) { // the output as any other: in the caller's buffer where the layouts agree
        add_role(plan, role::fwd_dst, DNNL_ARG_DST, true, user_data_desc(p, true), pd.dst_desc());
        if (plan.roles[role::fwd_dst].conversion.identical) add_accumulating(plan, pd, c, kind, p, type);
        return;
    }
    // No reorder can interleave: the phase commit writes and adds.
    Role &out = plan.roles[role::fwd_dst];
    out.present = out.output = true;
    out.arg = DNNL_ARG_DST;
    out.conversion.user = user_data_desc(p, true);
    out.conversion.internal = pd.dst_desc();
    out.phases = split;
    out.merge = commit_phases;
}

// The weight gradient of the same convolution: its diff_dst is the caller's split by phase
// (channels-last), its f32 weight gradient reordered to plain and merged back into the caller's
// layout. oneDNN 2.6's AMX kernel takes channels-last; its f32 kernels want channel blocks
// (else a reference kernel), so in f32 the split is reordered into those.
void make_backward_weights(Plan &plan, const Problem &p, dt type) {
    const Spec &spec = p.spec();
    auto split = std::make_shared<PhaseSplit>(split_phases(p, type, true));
    const PhaseSplit &s = *split;
    const Convolution c = convolution_of(p, s);
    const memory::desc staged_dst = plain_desc(c.dst, type, true);
    const memory::desc conv_src(c.src, type, tag::any);
    const memory::desc conv_dst = type == dt::f32 ? memory::desc(c.dst, type, tag::any) : staged_dst;
    const memory::desc weights = conv_weights_desc(s, type);
    const dnnl::convolution_forward::primitive_desc hint(
            dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                    conv_src, with_format_any(weights), memory::desc(), conv_dst, c.strides, c.pad_l, c.pad_r),
            cpu_engine());
    auto chosen = choose_implementation<dnnl::convolution_backward_weights::primitive_desc,
            dnnl::convolution_backward_weights>(Pass::backward_weights, spec, [&] {
        dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, conv_src,
                memory::desc(weights.dims(), dt::f32, tag::any), conv_dst, c.strides, c.pad_l, c.pad_r);
        return refusing_overreading(
                dnnl::convolution_backward_weights::primitive_desc(d, user_scratchpad(), cpu_engine(), hint));
    }, false);
    adopt(plan, chosen);
    const auto &pd = chosen.pd;
    // As oneDNN's deconvolution (descriptors.cpp): its bf16 kernels leave taps that read only
    // padding unwritten in a scratchpad they then reduce.
    plan.zero_scratchpad = s.dead_taps;
    add_role(plan, role::bwd_weights_src, DNNL_ARG_SRC, false, user_data_desc(p, false), pd.src_desc());
    add_role(plan, role::bwd_weights_diff_dst, DNNL_ARG_DIFF_DST, false, staged_dst, pd.diff_dst_desc());
    Role &diff_dst = plan.roles[role::bwd_weights_diff_dst];
    diff_dst.phases = split;
    diff_dst.split = split_output_gradient;
    add_role(plan, role::bwd_weights_diff_weights, DNNL_ARG_DIFF_WEIGHTS, true, conv_weights_desc(s, dt::f32),
            pd.diff_weights_desc());
    Role &out = plan.roles[role::bwd_weights_diff_weights];
    out.phases = split;
    out.merge = merge_weight_gradient;
    out.staged = !out.conversion.identical;
}

} // namespace

bool is_single_phase(const Problem &p) {
    // A dilated reach of millions made oneDNN's convolution take gigabytes (found by the fuzzer);
    // oneDNN's deconvolution handles those (onednn_defects.hpp).
    constexpr int64_t kMaxDilatedReach = 64;
    const Spec &spec = p.spec();
    for (int d = 0; d < p.rank(); ++d) {
        const int64_t reach = spec.dilate[d] * (spec.kernel[d] - 1);
        if (p.kernel_stride()[d] != 1 || p.adj()[d] != 0 || p.pad()[d] > reach) return false;
        if (spec.dilate[d] != 1 && reach > kMaxDilatedReach) return false;
    }
    return true;
}

bool is_subpixel_candidate(const Problem &p) {
    if (is_single_phase(p)) return true;
    const Spec &spec = p.spec();
    double inflation = 1; // the convolution's taps over the deconvolution's
    for (int d = 0; d < p.rank(); ++d) {
        if (spec.dilate[d] != 1) return false;
        const int64_t k = spec.kernel[d], s = spec.stride[d];
        inflation *= double((k + s - 1) / s * s) / double(k);
    }
    return inflation <= 4;
}

void make_subpixel(Plan &plan, const Problem &p, Pass pass, dt type, bool channels_first) {
    if (pass == Pass::backward_data || (pass == Pass::backward_weights && channels_first))
        throw Error(Status::unsupported, "the subpixel formulation computes the forward pass and, channels-last, the "
                                         "weight gradient");
    const Spec &spec = p.spec();
    if (pass == Pass::backward_weights && std::any_of(spec.dilate.begin(), spec.dilate.begin() + spec.rank,
                                                  [](int64_t d) { return d != 1; }))
        throw Error(Status::unsupported, "the subpixel formulation's weight gradient takes no dilation");
    // A descriptor oneDNN cannot make (unlikely: it has reference convolutions) is no route.
    try {
        if (pass == Pass::forward)
            make_forward(plan, p, type, channels_first);
        else
            make_backward_weights(plan, p, type);
    } catch (const dnnl::error &e) {
        if (e.status == dnnl_out_of_memory) throw;
        throw Error(Status::unsupported, std::string("oneDNN cannot make the phase convolution: ") + e.what());
    }
}

} // namespace libdeconv
