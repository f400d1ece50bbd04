#include "descriptors.hpp"

#include "engine.hpp"
#include "error.hpp"

#include <algorithm>

namespace libdeconv {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dt onednn_type(DataType type) { return type == DataType::f32 ? dt::f32 : dt::bf16; }

struct Geometry {
    memory::dims src, weights, bias, dst, strides, dilation, pad_l, pad_r;
};

Geometry geometry(const Problem &p) {
    const Spec &s = p.spec();
    Geometry g;
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
        g.strides.push_back(s.stride[i]);
        g.dilation.push_back(s.dilate[i] - 1);
        g.pad_l.push_back(p.pad()[i]);
        // adj extends the high end; oneDNN accepts the resulting negative right padding.
        g.pad_r.push_back(p.pad()[i] - p.adj()[i]);
    }
    return g;
}

memory::desc any_desc(const memory::dims &dims, dt type) { return memory::desc(dims, type, tag::any); }

bool is_reference(const std::string &impl) { return impl.rfind("ref", 0) == 0; }

dnnl::primitive_attr user_scratchpad() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

// The first implementation oneDNN offers that is not a reference kernel; with format any the
// list is already ordered by expected speed. Only when every entry is a reference kernel is the
// first one kept (make_pd() builds it again, since next_impl() consumed the iterator).
template <typename PD, typename MakePD>
PD choose_implementation(MakePD make_pd) {
    PD pd = make_pd();
    do {
        if (!is_reference(pd.impl_info_str())) return pd;
    } while (pd.next_impl());
    return make_pd();
}

dnnl::reorder make_reorder(const memory::desc &from, const memory::desc &to, bool accumulate, size_t &scratch) {
    dnnl::primitive_attr attr = user_scratchpad();
    if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.f);
        attr.set_post_ops(ops);
    }
    const auto &eng = cpu_engine();
    dnnl::reorder::primitive_desc pd(eng, from, eng, to, attr);
    scratch = std::max(scratch, pd.scratchpad_desc().get_size());
    return dnnl::reorder(pd);
}

Conversion input_conversion(const memory::desc &user, const memory::desc &internal) {
    Conversion c{user, internal, user == internal, {}, {}, {}, 0};
    if (!c.identical) c.to_internal = make_reorder(user, internal, false, c.scratchpad_bytes);
    return c;
}

Conversion output_conversion(const memory::desc &user, const memory::desc &internal) {
    Conversion c{user, internal, user == internal, {}, {}, {}, 0};
    if (!c.identical) c.to_user = make_reorder(internal, user, false, c.scratchpad_bytes);
    c.add_to_user = make_reorder(internal, user, true, c.scratchpad_bytes);
    return c;
}

size_t scratchpad_size(const dnnl::primitive_desc_base &pd) { return pd.scratchpad_desc().get_size(); }

dnnl::deconvolution_forward::primitive_desc forward_pd(const Problem &p, const Geometry &g, dnnl::prop_kind kind) {
    const dt type = onednn_type(p.spec().dtype);
    const memory::desc bias = p.spec().bias ? memory::desc(g.bias, dt::f32, tag::a) : memory::desc();
    return choose_implementation<dnnl::deconvolution_forward::primitive_desc>([&] {
        dnnl::deconvolution_forward::desc d(kind, dnnl::algorithm::deconvolution_direct, any_desc(g.src, type),
                any_desc(g.weights, type), bias, any_desc(g.dst, type), g.strides, g.dilation, g.pad_l, g.pad_r);
        return dnnl::deconvolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
    });
}

} // namespace

memory::desc user_data_desc(const Problem &p, bool output) {
    const Spec &s = p.spec();
    memory::dims dims{s.batch, output ? s.out_channels : s.in_channels};
    for (int i = 0; i < s.rank; ++i) dims.push_back(output ? p.out_size()[i] : s.in_size[i]);
    static const tag first[] = {tag::abc, tag::abcd, tag::abcde};
    static const tag last[] = {tag::acb, tag::acdb, tag::acdeb};
    const tag t = s.layout == Layout::channels_first ? first[s.rank - 1] : last[s.rank - 1];
    return memory::desc(dims, onednn_type(s.dtype), t);
}

memory::desc user_weights_desc(const Problem &p, dt type) {
    // The caller's (IC, OC/G, k...) is physically (G, IC/G, OC/G, k...): the logical OC/IC axes of
    // oneDNN's descriptor are swapped by the format tag, no data moves.
    const Spec &s = p.spec();
    static const tag plain[] = {tag::bac, tag::bacd, tag::bacde};
    static const tag grouped[] = {tag::acbd, tag::acbde, tag::acbdef};
    const tag t = s.groups > 1 ? grouped[s.rank - 1] : plain[s.rank - 1];
    return memory::desc(geometry(p).weights, type, t);
}

namespace {
Plan make_plan_unsized(const Problem &p, Pass pass);
}

Plan make_plan(const Problem &p, Pass pass) {
    Plan plan = make_plan_unsized(p, pass);
    for (const Conversion *c : {&plan.data, &plan.weights, &plan.output, &plan.bias_out})
        plan.scratchpad_bytes = std::max(plan.scratchpad_bytes, c->scratchpad_bytes);
    return plan;
}

namespace {
Plan make_plan_unsized(const Problem &p, Pass pass) {
    const Geometry g = geometry(p);
    const Spec &s = p.spec();
    const dt type = onednn_type(s.dtype);
    const memory::desc user_src = user_data_desc(p, false), user_dst = user_data_desc(p, true);
    Plan plan;
    plan.pass = pass;
    if (pass == Pass::forward) {
        const auto kind = s.mode == Mode::training ? dnnl::prop_kind::forward_training
                                                   : dnnl::prop_kind::forward_inference;
        auto pd = forward_pd(p, g, kind);
        plan.primitive = dnnl::deconvolution_forward(pd);
        plan.impl = pd.impl_info_str();
        plan.scratchpad_bytes = scratchpad_size(pd);
        plan.data = input_conversion(user_src, pd.src_desc());
        plan.weights = input_conversion(user_weights_desc(p, type), pd.weights_desc());
        plan.output = output_conversion(user_dst, pd.dst_desc());
        if (s.bias) plan.bias = pd.bias_desc();
        return plan;
    }
    const auto hint = forward_pd(p, g, dnnl::prop_kind::forward_training);
    if (pass == Pass::backward_data) {
        auto pd = choose_implementation<dnnl::deconvolution_backward_data::primitive_desc>([&] {
            dnnl::deconvolution_backward_data::desc d(dnnl::algorithm::deconvolution_direct, any_desc(g.src, type),
                    any_desc(g.weights, type), any_desc(g.dst, type), g.strides, g.dilation, g.pad_l, g.pad_r);
            return dnnl::deconvolution_backward_data::primitive_desc(d, user_scratchpad(), cpu_engine(), hint);
        });
        plan.primitive = dnnl::deconvolution_backward_data(pd);
        plan.impl = pd.impl_info_str();
        plan.scratchpad_bytes = scratchpad_size(pd);
        plan.output = input_conversion(user_dst, pd.diff_dst_desc());
        plan.weights = input_conversion(user_weights_desc(p, type), pd.weights_desc());
        plan.data = output_conversion(user_src, pd.diff_src_desc());
        return plan;
    }
    // Weight gradients are produced in f32 even for bf16 problems, so that accumulation into the
    // caller's bf16 buffer rounds once.
    const memory::desc bias = s.bias ? memory::desc(g.bias, dt::f32, tag::a) : memory::desc();
    auto pd = choose_implementation<dnnl::deconvolution_backward_weights::primitive_desc>([&] {
        dnnl::deconvolution_backward_weights::desc d(dnnl::algorithm::deconvolution_direct, any_desc(g.src, type),
                any_desc(g.weights, dt::f32), bias, any_desc(g.dst, type), g.strides, g.dilation, g.pad_l, g.pad_r);
        return dnnl::deconvolution_backward_weights::primitive_desc(d, user_scratchpad(), cpu_engine(), hint);
    });
    plan.primitive = dnnl::deconvolution_backward_weights(pd);
    plan.impl = pd.impl_info_str();
    // oneDNN 2.6's AMX bf16 weight gradient leaves the partial sums of kernel taps that meet no
    // output unwritten in its scratchpad and then reduces them: garbage unless the scratchpad
    // starts zeroed. Only such degenerate geometries pay for clearing it.
    plan.zero_scratchpad = p.has_dead_taps() && plan.impl.find("amx") != std::string::npos;
    plan.scratchpad_bytes = scratchpad_size(pd);
    plan.data = input_conversion(user_src, pd.src_desc());
    plan.output = input_conversion(user_dst, pd.diff_dst_desc());
    plan.weights = output_conversion(user_weights_desc(p, type), pd.diff_weights_desc());
    if (s.bias) {
        plan.bias = pd.diff_bias_desc();
        plan.bias_out = output_conversion(memory::desc(g.bias, type, tag::a), plan.bias);
    }
    return plan;
}

} // namespace

} // namespace libdeconv
