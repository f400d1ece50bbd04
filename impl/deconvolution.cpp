#include "deconvolution.hpp"

#include "bf16.hpp"
#include "engine.hpp"
#include "error.hpp"
#include "primitive_cache.hpp"
#include "route.hpp"

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
    if (spec.dtype == DataType::bf16 && !cpu_has_bf16())
        throw Error(Status::unsupported, "dtype = DECONV_BF16 needs a CPU with AVX-512 (oneDNN's effective ISA here "
                                         "has none); use DECONV_F32");
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

    if (req_src != Req::null && req_weights != Req::null) prepare({plans_[1].get(), plans_[2].get()});
    // The bias gradient comes from a reduction of its own when no weight gradient is asked for,
    // or when the weight-gradient primitive does not give it.
    const bool bias_apart = req_bias != Req::null && (req_weights == Req::null || plans_[2]->bias_gradient_apart);
    BiasSums bias_sums; // allocated before any output is written
    if (bias_apart) {
        bias_sums.sums.resize(size_t(problem_.spec().out_channels));
        bias_sums.run.resize(size_t(problem_.spec().out_channels));
    }
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
        if (!bias_apart) t[role::bwd_weights_diff_bias] = {diff_bias, nullptr, req_bias};
        execute(*plans_[2], t);
    }
    if (bias_apart) backward_bias_only(diff_dst, diff_bias, req_bias, bias_sums);
}

namespace {

float value_at(const float *v, int64_t i) { return v[i]; }
float value_at(const uint16_t *v, int64_t i) { return bf16_to_f32(v[i]); }

// Sums of diff_dst per channel: f32 over runs of at most kRun terms, in independent lanes that
// the compiler vectorizes, and double across runs, so the error stays that of a short f32 sum.
constexpr int64_t kRun = 1024, kLanes = 16;

template <typename T>
void add_channel_sums(const Spec &s, int64_t pixels, const T *dd, BiasSums &b) {
    std::vector<double> &sums = b.sums;
    const int64_t channels = s.out_channels;
    for (int64_t n = 0; n < s.batch; ++n) {
        const T *base = dd + n * channels * pixels;
        if (s.layout == Layout::channels_first) {
            for (int64_t c = 0; c < channels; ++c) {
                const T *plane = base + c * pixels;
                for (int64_t p0 = 0; p0 < pixels; p0 += kRun) {
                    const int64_t p1 = std::min(pixels, p0 + kRun);
                    float lanes[kLanes] = {};
                    int64_t p = p0;
                    for (; p + kLanes <= p1; p += kLanes)
                        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += value_at(plane, p + l);
                    double run = 0;
                    for (; p < p1; ++p) run += value_at(plane, p);
                    for (float l : lanes) run += l;
                    sums[c] += run;
                }
            }
        } else {
            std::vector<float> &run = b.run;
            for (int64_t p0 = 0; p0 < pixels; p0 += kRun) {
                const int64_t p1 = std::min(pixels, p0 + kRun);
                std::fill(run.begin(), run.end(), 0.f);
                for (int64_t p = p0; p < p1; ++p) {
                    const T *row = base + p * channels;
                    for (int64_t c = 0; c < channels; ++c) run[c] += value_at(row, c);
                }
                for (int64_t c = 0; c < channels; ++c) sums[c] += run[c];
            }
        }
    }
}

} // namespace

// diff_bias by a reduction of diff_dst over batch and space: when the weight-gradient primitive
// is not run (it would need src and compute a gradient nobody asked for), or gives no bias.
void Deconvolution::backward_bias_only(const void *diff_dst, void *diff_bias, Req req, BiasSums &b) const {
    const Spec &s = problem_.spec();
    const int64_t channels = s.out_channels;
    const int64_t pixels = problem_.dst_elems() / (s.batch * channels);
    const bool bf16 = s.dtype == DataType::bf16;
    if (bf16)
        add_channel_sums(s, pixels, static_cast<const uint16_t *>(diff_dst), b);
    else
        add_channel_sums(s, pixels, static_cast<const float *>(diff_dst), b);
    const std::vector<double> &sums = b.sums;
    for (int64_t c = 0; c < channels; ++c) {
        if (bf16) {
            uint16_t *out = static_cast<uint16_t *>(diff_bias);
            const double prior = req == Req::add ? double(bf16_to_f32(out[c])) : 0.0;
            out[c] = f32_to_bf16(static_cast<float>(prior + sums[c]));
        } else {
            float *out = static_cast<float *>(diff_bias);
            out[c] = static_cast<float>((req == Req::add ? double(out[c]) : 0.0) + sums[c]);
        }
    }
}

} // namespace libdeconv
