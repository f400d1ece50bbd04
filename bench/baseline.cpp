// The plain oneDNN baseline: onednn_kernel and onednn_plain of shared/peers/onednn_raw.cpp, on the
// library's own buffers (see Baseline in bench.h).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>

#include "bench.h"
#include "layout_name.hpp"

namespace bench {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using mdt = memory::data_type;
using dnnl::prop_kind;

struct Engine {
    dnnl::engine eng{dnnl::engine::kind::cpu, 0};
    dnnl::stream strm{eng};
};
Engine &E() {
    static Engine e;
    return e;
}

// oneDNN's view of a workload: logical dims ([g,] oc/g, ic/g, k...) for the weights,
// pad_r = pad - adj, 0-based dilation; the user's tags for data and (MXNet-order) weights.
struct Geometry {
    memory::dims src, wei, bias, dst, strides, dil, pad_l, pad_r;
    tag data_tag, wei_tag;
    mdt dt;

    Geometry(const Workload &w, deconv_dtype t, deconv_layout layout) {
        const bool g = w.groups > 1;
        src = {w.mb, w.ic};
        dst = {w.mb, w.oc};
        wei = g ? memory::dims{w.groups, w.oc / w.groups, w.ic / w.groups} : memory::dims{w.oc, w.ic};
        bias = {w.oc};
        for (int i = 0; i < w.rank; i++) {
            src.push_back(w.in[i]);
            dst.push_back(w.out(i));
            wei.push_back(w.k[i]);
            strides.push_back(w.s[i]);
            dil.push_back(w.d[i] - 1);
            pad_l.push_back(w.p[i]);
            pad_r.push_back(w.p[i] - w.adj[i]);
        }
        const tag cf[] = {tag::abc, tag::abcd, tag::abcde}, cl[] = {tag::acb, tag::acdb, tag::acdeb};
        data_tag = (layout == DECONV_CHANNELS_LAST ? cl : cf)[w.rank - 1];
        // MXNet weights (ic, oc/g, k...) expressed on oneDNN's logical weight dims.
        const tag wt[] = {tag::bac, tag::bacd, tag::bacde}, wgt[] = {tag::acbd, tag::acbde, tag::acbdef};
        wei_tag = (g ? wgt : wt)[w.rank - 1];
        dt = t == DECONV_F32 ? mdt::f32 : mdt::bf16;
    }
    memory::desc any(const memory::dims &d, mdt t) const { return {d, t, tag::any}; }
    memory::desc bias_md() const { return {bias, mdt::f32, tag::a}; }
    memory user(const memory::dims &d, tag t, void *ptr, mdt type) const {
        return memory({d, type, t}, E().eng, ptr);
    }
    memory user_data(const memory::dims &d, void *ptr) const { return user(d, data_tag, ptr, dt); }
    dnnl::deconvolution_forward::primitive_desc fwd_pd(prop_kind pk, bool with_bias) const {
        using D = dnnl::deconvolution_forward::desc;
        const auto alg = dnnl::algorithm::deconvolution_direct;
        D d = with_bias ? D(pk, alg, any(src, dt), any(wei, dt), bias_md(), any(dst, dt), strides, dil, pad_l, pad_r)
                        : D(pk, alg, any(src, dt), any(wei, dt), any(dst, dt), strides, dil, pad_l, pad_r);
        return {d, E().eng};
    }
};

// A user buffer and its counterpart in the primitive's layout (the same memory when the layouts
// agree), with the reorder between them.
struct Staged {
    memory user, inner;
    dnnl::reorder r;
    bool needed = false;
    void to(const memory &u, const memory::desc &md) {  // user -> primitive
        user = u;
        needed = !(u.get_desc() == md);
        inner = needed ? memory(md, E().eng) : u;
        if (needed) r = dnnl::reorder(user, inner);
    }
    void from(const memory::desc &md, const memory &u) {  // primitive -> user
        user = u;
        needed = !(u.get_desc() == md);
        inner = needed ? memory(md, E().eng) : u;
        if (needed) r = dnnl::reorder(inner, user);
    }
    void run_to() {
        if (needed) r.execute(E().strm, user, inner);
    }
    void run_from() {
        if (needed) r.execute(E().strm, inner, user);
    }
};

// The user's data converted once into the layout md (onednn_kernel's inputs, packed weights).
memory packed(const memory &user, const memory::desc &md) {
    if (user.get_desc() == md) return user;
    memory m(md, E().eng);
    dnnl::reorder(user, m).execute(E().strm, const_cast<memory &>(user), m);
    E().strm.wait();
    return m;
}

// oneDNN-style name of a data layout: dims outermost first, blocked dims in capitals, then the
// inner blocks ("nchw", "nhwc", "nChw16c", "NCdhw16n16c").
std::string join(const std::vector<std::pair<const char *, bool>> &v) {
    std::string s;
    for (const auto &e : v)
        if (e.second) s += (s.empty() ? "" : ",") + std::string(e.first);
    return s;
}

class FwdBaseline : public Baseline {
public:
    FwdBaseline(const Geometry &g, Buffers &b, bool bias)
        : pd_(g.fwd_pd(prop_kind::forward_inference, bias)), prim_(pd_) {
        const memory src = g.user_data(g.src, b.src.data()), dst = g.user_data(g.dst, b.dst.data());
        src_.to(src, pd_.src_desc());
        dst_.from(pd_.dst_desc(), dst);
        wei_ = packed(g.user(g.wei, g.wei_tag, b.wei.data(), g.dt), pd_.weights_desc());  // deconv_set_weights
        if (bias) bias_ = g.user(g.bias, tag::a, b.bias_f32.data(), mdt::f32);
        src_k_ = packed(src, pd_.src_desc());
        dst_k_ = memory(pd_.dst_desc(), E().eng);
        impl = pd_.impl_info_str();
        reorders = join({{"src", src_.needed}, {"dst", dst_.needed}});
        src_fmt = libdeconv::layout_name(pd_.src_desc());
        dst_fmt = libdeconv::layout_name(pd_.dst_desc());
        data_layouts_match = !src_.needed && !dst_.needed;
    }
    void kernel() override {
        run(src_k_, dst_k_);
        E().strm.wait();
    }
    void plain() override {
        src_.run_to();
        run(src_.inner, dst_.inner);
        dst_.run_from();
        E().strm.wait();
    }

private:
    void run(memory &src, memory &dst) {
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei_}, {DNNL_ARG_DST, dst}};
        if (bias_) args[DNNL_ARG_BIAS] = bias_;
        prim_.execute(E().strm, args);
    }
    dnnl::deconvolution_forward::primitive_desc pd_;
    dnnl::deconvolution_forward prim_;
    Staged src_, dst_;
    memory wei_, bias_, src_k_, dst_k_;
};

class BwdDataBaseline : public Baseline {
public:
    BwdDataBaseline(const Geometry &g, Buffers &b) {
        const auto fpd = g.fwd_pd(prop_kind::forward_training, true);
        dnnl::deconvolution_backward_data::desc d(dnnl::algorithm::deconvolution_direct, g.any(g.src, g.dt),
                                                  g.any(g.wei, g.dt), g.any(g.dst, g.dt), g.strides, g.dil,
                                                  g.pad_l, g.pad_r);
        pd_ = {d, E().eng, fpd};
        prim_ = dnnl::deconvolution_backward_data(pd_);
        const memory ddst = g.user_data(g.dst, b.diff_dst.data()), dsrc = g.user_data(g.src, b.diff_src.data());
        const memory wei = g.user(g.wei, g.wei_tag, b.wei.data(), g.dt);
        ddst_.to(ddst, pd_.diff_dst_desc());
        wei_.to(wei, pd_.weights_desc());  // per call: in training the weights change every step
        dsrc_.from(pd_.diff_src_desc(), dsrc);
        ddst_k_ = packed(ddst, pd_.diff_dst_desc());
        wei_k_ = packed(wei, pd_.weights_desc());
        dsrc_k_ = memory(pd_.diff_src_desc(), E().eng);
        impl = pd_.impl_info_str();
        reorders = join({{"diff_dst", ddst_.needed}, {"weights", wei_.needed}, {"diff_src", dsrc_.needed}});
        src_fmt = libdeconv::layout_name(pd_.diff_src_desc());
        dst_fmt = libdeconv::layout_name(pd_.diff_dst_desc());
        data_layouts_match = !ddst_.needed && !dsrc_.needed;
    }
    void kernel() override {
        run(ddst_k_, wei_k_, dsrc_k_);
        E().strm.wait();
    }
    void plain() override {
        ddst_.run_to();
        wei_.run_to();
        run(ddst_.inner, wei_.inner, dsrc_.inner);
        dsrc_.run_from();
        E().strm.wait();
    }

private:
    void run(memory &ddst, memory &wei, memory &dsrc) {
        prim_.execute(E().strm, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, dsrc}});
    }
    dnnl::deconvolution_backward_data::primitive_desc pd_;
    dnnl::deconvolution_backward_data prim_;
    Staged ddst_, wei_, dsrc_;
    memory ddst_k_, wei_k_, dsrc_k_;
};

class BwdWeightsBaseline : public Baseline {
public:
    BwdWeightsBaseline(const Geometry &g, Buffers &b, bool bias) {
        const auto fpd = g.fwd_pd(prop_kind::forward_training, bias);
        auto make = [&](mdt dwt) {
            using D = dnnl::deconvolution_backward_weights::desc;
            const auto alg = dnnl::algorithm::deconvolution_direct;
            D d = bias ? D(alg, g.any(g.src, g.dt), g.any(g.wei, dwt), g.bias_md(), g.any(g.dst, g.dt), g.strides,
                           g.dil, g.pad_l, g.pad_r)
                       : D(alg, g.any(g.src, g.dt), g.any(g.wei, dwt), g.any(g.dst, g.dt), g.strides, g.dil,
                           g.pad_l, g.pad_r);
            return dnnl::deconvolution_backward_weights::primitive_desc(d, E().eng, fpd);
        };
        // bf16 diff_weights for bf16, like the library; f32 should oneDNN refuse them.
        mdt dwt = g.dt;
        try {
            pd_ = make(dwt);
        } catch (const dnnl::error &) {
            if (dwt == mdt::f32) throw;
            dwt = mdt::f32;
            pd_ = make(dwt);
        }
        prim_ = dnnl::deconvolution_backward_weights(pd_);
        void *dw_ptr = b.diff_wei.data();
        if (dwt != g.dt) {
            b.diff_wei_f32.assign(b.diff_wei.size(), 0.f);
            dw_ptr = b.diff_wei_f32.data();
        }
        const memory src = g.user_data(g.src, b.src.data()), ddst = g.user_data(g.dst, b.diff_dst.data());
        src_.to(src, pd_.src_desc());
        ddst_.to(ddst, pd_.diff_dst_desc());
        dwei_.from(pd_.diff_weights_desc(), g.user(g.wei, g.wei_tag, dw_ptr, dwt));
        if (bias) dbias_ = g.user(g.bias, tag::a, b.diff_bias_f32.data(), mdt::f32);
        src_k_ = packed(src, pd_.src_desc());
        ddst_k_ = packed(ddst, pd_.diff_dst_desc());
        dwei_k_ = memory(pd_.diff_weights_desc(), E().eng);
        impl = pd_.impl_info_str();
        reorders = join({{"src", src_.needed}, {"diff_dst", ddst_.needed}, {"diff_weights", dwei_.needed}});
        src_fmt = libdeconv::layout_name(pd_.src_desc());
        dst_fmt = libdeconv::layout_name(pd_.diff_dst_desc());
        data_layouts_match = !src_.needed && !ddst_.needed;
    }
    void kernel() override {
        run(src_k_, ddst_k_, dwei_k_);
        E().strm.wait();
    }
    void plain() override {
        src_.run_to();
        ddst_.run_to();
        run(src_.inner, ddst_.inner, dwei_.inner);
        dwei_.run_from();
        E().strm.wait();
    }

private:
    void run(memory &src, memory &ddst, memory &dwei) {
        std::unordered_map<int, memory> args{
            {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei}};
        if (dbias_) args[DNNL_ARG_DIFF_BIAS] = dbias_;
        prim_.execute(E().strm, args);
    }
    dnnl::deconvolution_backward_weights::primitive_desc pd_;
    dnnl::deconvolution_backward_weights prim_;
    Staged src_, ddst_, dwei_;
    memory dbias_, src_k_, ddst_k_, dwei_k_;
};

}  // namespace

std::unique_ptr<Baseline> make_baseline(Pass pass, const Workload &w, deconv_dtype dt, deconv_layout layout,
                                        Buffers &b, bool bias) {
    const Geometry g(w, dt, layout);
    if (pass == FWD) return std::make_unique<FwdBaseline>(g, b, bias);
    if (pass == BWD_DATA) return std::make_unique<BwdDataBaseline>(g, b);
    return std::make_unique<BwdWeightsBaseline>(g, b, bias);
}

Call baseline_call(Baseline &b, bool kernel) {
    Baseline *p = &b;
    return [p, kernel] {
        try {
            if (kernel) p->kernel();
            else p->plain();
            return std::string();
        } catch (const dnnl::error &e) {
            return std::string("oneDNN: ") + e.what();
        }
    };
}

}  // namespace bench
