#include "deconvolution.hpp"

#include "bias_gradient.hpp"
#include "error.hpp"
#include "primitive_cache.hpp"
#include "route.hpp"
#include "threads.hpp"

#include <algorithm>
#include <vector>

namespace libdeconv {
namespace {

std::shared_ptr<const Plan> cached_plan(const Problem &problem, Pass pass) {
    std::vector<int64_t> key = problem.signature();
    key.push_back(static_cast<int64_t>(pass));
    return PrimitiveCache::instance().get_or_create(key, [&] { return make_fastest_plan(problem, pass); });
}

void require(const void *pointer, const char *name, const char *why) {
    if (!pointer) fail_invalid(std::string(name) + " is NULL; " + why);
}

} // namespace

Deconvolution::Deconvolution(const Spec &spec) : problem_(spec) {
    refuse_inside_callers_region(problem_, "deconv_create");
    plans_[0] = cached_plan(problem_, Pass::forward);
    if (spec.mode == Mode::training) {
        plans_[1] = cached_plan(problem_, Pass::backward_data);
        plans_[2] = cached_plan(problem_, Pass::backward_weights);
    }
}

const char *Deconvolution::impl_name(Pass pass) const {
    const auto &plan = plans_[static_cast<int>(pass)];
    return plan ? plan->impl.c_str() : nullptr;
}

void Deconvolution::set_weights(const void *weights, const void *bias) {
    require(weights, "weights", "deconv_set_weights needs the weights to pack");
    if (problem_.spec().bias)
        require(bias, "bias", "the problem has a bias (no_bias = 0)");
    else if (bias)
        fail_invalid("bias is not NULL but the problem has no bias (no_bias = 1)");
    refuse_inside_callers_region(problem_, "deconv_set_weights");
    auto packed = pack_weights(*plans_[0], weights, bias);
    std::lock_guard<std::mutex> lock(packed_mutex_);
    packed_ = std::move(packed);
}

void Deconvolution::forward(const void *src, const void *weights, const void *bias, void *dst, Req req) const {
    const bool has_bias = problem_.spec().bias;
    std::shared_ptr<const PackedWeights> packed;
    if (!weights) {
        std::lock_guard<std::mutex> lock(packed_mutex_);
        packed = packed_;
        if (!packed) fail_invalid("weights is NULL and deconv_set_weights was not called on this handle");
        if (bias) fail_invalid("bias is not NULL while weights is NULL; the bias of deconv_set_weights is used");
    } else if (has_bias) {
        require(bias, "bias", "the problem has a bias (no_bias = 0)");
    } else if (bias) {
        fail_invalid("bias is not NULL but the problem has no bias (no_bias = 1)");
    }
    require(src, "src", "deconv_forward needs the input");
    if (req == Req::null) return;
    require(dst, "dst", "a write or add request needs the output buffer");
    refuse_inside_callers_region(problem_, "deconv_forward");

    Tensors t;
    t[role::fwd_src].user = src;
    t[role::fwd_weights] = packed ? Tensor{nullptr, &packed->weights} : Tensor{weights};
    if (has_bias) t[role::fwd_bias] = packed ? Tensor{nullptr, &packed->bias} : Tensor{bias};
    t[role::fwd_dst] = {dst, nullptr, req};
    execute(*plans_[0], t);
}

void Deconvolution::backward(const void *src, const void *weights, const void *diff_dst, void *diff_src, Req req_src,
        void *diff_weights, Req req_weights, void *diff_bias, Req req_bias) const {
    if (problem_.spec().mode != Mode::training)
        fail_invalid("backward passes need a handle created with mode = DECONV_TRAINING; this one has mode = "
                     "DECONV_INFERENCE");
    if (!problem_.spec().bias && req_bias != Req::null)
        fail_invalid("req_bias = " + std::to_string(static_cast<int>(req_bias))
                + " but the problem has no bias (no_bias = 1); use DECONV_REQ_NULL");
    if (req_src == Req::null && req_weights == Req::null && req_bias == Req::null) return;
    require(diff_dst, "diff_dst", "every backward output needs it");
    if (req_src != Req::null) {
        require(weights, "weights", "req_src asks for diff_src, which needs the weights");
        require(diff_src, "diff_src", "req_src is not DECONV_REQ_NULL");
    }
    if (req_weights != Req::null) {
        require(src, "src", "req_weights asks for diff_weights, which needs the forward input");
        require(diff_weights, "diff_weights", "req_weights is not DECONV_REQ_NULL");
    }
    if (req_bias != Req::null) require(diff_bias, "diff_bias", "req_bias is not DECONV_REQ_NULL");
    refuse_inside_callers_region(problem_, "deconv_backward");

    if (req_src != Req::null && req_weights != Req::null) prepare({plans_[1].get(), plans_[2].get()});
    // The weight gradient's plan may take the bias gradient too (the depthwise kernel reads
    // diff_dst for both); else it is reduced apart, its scratch reserved before any output is
    // written.
    const bool bias_with_weights = req_weights != Req::null && plans_[2]->roles[role::bwd_weights_diff_bias].present;
    BiasGradientScratch *bias_scratch =
            req_bias != Req::null && !bias_with_weights ? &bias_gradient_scratch(problem_.spec()) : nullptr;
    if (req_src != Req::null) {
        Tensors t;
        t[role::bwd_data_diff_dst].user = diff_dst;
        t[role::bwd_data_weights].user = weights;
        t[role::bwd_data_diff_src] = {diff_src, nullptr, req_src};
        execute(*plans_[1], t);
    }
    if (req_weights != Req::null) {
        Tensors t;
        t[role::bwd_weights_src].user = src;
        t[role::bwd_weights_diff_dst].user = diff_dst;
        t[role::bwd_weights_diff_weights] = {diff_weights, nullptr, req_weights};
        if (bias_with_weights) t[role::bwd_weights_diff_bias] = {diff_bias, nullptr, req_bias};
        execute(*plans_[2], t);
    }
    if (bias_scratch) backward_bias_only(diff_dst, diff_bias, req_bias, *bias_scratch);
}

// diff_bias by a reduction of diff_dst over batch and space (bias_gradient.hpp).
void Deconvolution::backward_bias_only(const void *diff_dst, void *diff_bias, Req req,
        BiasGradientScratch &scratch) const {
    const Spec &s = problem_.spec();
    const int64_t pixels = problem_.dst_elems() / (s.batch * s.out_channels);
    reduce_bias_gradient(s, pixels, diff_dst, diff_bias, req, scratch);
}

} // namespace libdeconv
