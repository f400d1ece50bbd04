// The object behind a deconv handle: a validated problem, the cached plans of its passes and,
// for inference, the weights packed once.
#pragma once

#include "bias_gradient.hpp"
#include "execution.hpp"
#include "problem.hpp"
#include "weights.hpp"

#include <memory>
#include <mutex>
#include <vector>

namespace libdeconv {

class Deconvolution {
public:
    explicit Deconvolution(const Spec &spec);

    const Problem &problem() const { return problem_; }

    void set_weights(const void *weights, const void *bias);
    void forward(const void *src, const void *weights, const void *bias, void *dst, Req req) const;
    void backward(const void *src, const void *weights, const void *diff_dst, void *diff_src, Req req_src,
            void *diff_weights, Req req_weights, void *diff_bias, Req req_bias) const;

    // nullptr when the handle has no such pass (backward passes of inference handles).
    const char *impl_name(Pass pass) const;

private:
    // `scratch` was reserved before anything was written.
    void backward_bias_only(const void *diff_dst, void *diff_bias, Req req, BiasGradientScratch &scratch) const;

    Problem problem_;
    std::shared_ptr<const Plan> plans_[3];
    mutable std::mutex packed_mutex_; // set_weights may race a forward on another thread
    std::shared_ptr<const PackedWeights> packed_;
};

} // namespace libdeconv
